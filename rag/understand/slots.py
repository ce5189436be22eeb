"""Slots of a turn: the parts of its words that name values, read by patterns over closed word
classes (decisions, rating comparisons, years, area names, ordinals, numbers, paper names) and
never deciding what the turn asks: that is :mod:`rag.understand.turn_reader`'s job (a model learned from
labelled turns), and :mod:`rag.understand.read` puts both into a :class:`rag.understand.plan.Plan`.

* **Filters said in words** (:func:`read_filters`): "oral papers on diffusion", "rejected papers
  about X", "withdrawn", "accepted", "in the optimization area", "rated 6 or higher", "in 2018",
  "papers by NAME" become :class:`Filters` (the same as ``--filter`` or the UI's dropdowns), and
  the words that said them are taken out of the search query (the word "oral" would otherwise
  pull papers about oral speech). A word that is only a topic ("poster generation",
  "reinforcement learning" without "area") is never read as a filter.
* **Positions** (:func:`positions`): "the second one", "[3]", "#2", "paper 4", "the last one",
  "the first two", "the top three".
* **A number of papers** (:func:`count_asked`): "top three", "the 5 best".
* **Names** (:func:`name_words`): CamelCase, acronyms and names with digits ("StepORLM",
  "RFTHGS", "Llama3"); the retriever resolves them to papers.
* **Comparison sides** (:func:`comparison_sides`): "how does A differ from B", "compare A with
  B", "A vs B".
* **A new subject** (:func:`new_subject`): "And for vision transformers?".
* **Direction** (:func:`ascending`): "lowest rated", "worst".
* **Another language** (:func:`foreign_share`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

from rag.filters import FilterError, Filters
from rag.filters import fold as fold_text
from rag.types import Paper

_PAPERS = r"(?:papers?|submissions?|works?|ones|articles)"
# "oral papers", "rejected submissions", "spotlight works"
_TIER_BEFORE = re.compile(rf"\b(orals?|spotlights?|posters?|rejected|withdrawn|accepted)\s+{_PAPERS}\b",
                          re.I)
# "papers that were rejected", "submissions withdrawn", "how many papers got accepted as orals"
_TIER_AFTER = re.compile(rf"\b{_PAPERS}\s+(?:(?:that|which)\s+)?(?:(?:were|was|got|are|is|have been|"
                         r"has been)\s+)?(rejected|withdrawn|accepted)(?:\s+as\s+(?:an?\s+)?"
                         r"(orals?|spotlights?|posters?))?\b", re.I)
# "How many papers by X were rejected?": the decision said at the end, after other words
_TIER_PASSIVE = re.compile(r"\b(?:were|was|got|have been|has been)\s+(rejected|withdrawn|accepted)"
                           r"\s*[?.!]*\s*$", re.I)
# "among the orals", "accepted as an oral", "oral presentations", "the orals"
_TIER_ALONE = re.compile(r"\b(?:(?:among|in|from|of)\s+(?:the\s+)?(orals|spotlights|posters)|"
                         r"accepted\s+as\s+(?:an?\s+)?(orals?|spotlights?|posters?)|"
                         r"(oral|spotlight)\s+presentations?|(?:the\s+)?(orals|spotlights)\b|"
                         # "got an oral", "were given a spotlight", "are posters"
                         r"(?:got|get|gets|received?|given|awarded|as|were|are|be|been)\s+"
                         r"(?:an?\s+)?(orals?|spotlights?|posters?)\b(?!\s+(?!only|papers?|ones?"
                         r"|too|and|or)[a-z])|"
                         # "every spotlight in optimization", "any oral on X"
                         r"(?:every|each|any|one)\s+(oral|spotlight|poster)\b|"
                         # "posters?", "orals only?": the whole turn
                         r"^\s*(?:and\s+|what\s+about\s+|now\s+)?(?:the\s+)?"
                         r"(orals?|spotlights?|posters?|rejected|withdrawn)\s*(?:ones\s*)?[?.!]*\s*$|"
                         # "count withdrawn", "list the rejected ones"
                         r"\b(?:count|list|show)\s+(?:me\s+)?(?:all\s+)?(?:the\s+)?"
                         r"(withdrawn|rejected|orals|posters|spotlights)\b|"
                         # "which ones are plain posters"
                         r"(?:are|were)\s+(?:plain|just|only|all|also|regular)\s+(orals?|spotlights?|"
                         r"posters?)\b|"
                         # "only orals", "just the posters", "posters only"
                         r"(?:only|just)\s+(?:the\s+)?(orals?|spotlights?|posters?)\b|"
                         r"(orals?|spotlights?|posters?)\s+only\b|"
                         # "were any of them rejected?", "which of those got accepted"
                         r"(?:them|these|those)\s+(?:\w+\s+)?(?:ultimately\s+|eventually\s+|finally\s+)?"
                         r"(rejected|withdrawn|accepted)\b|"
                         # "filter to posters", "restrict it to the orals"
                         r"(?:filter|restrict|limit|narrow)\w*\s+(?:it\s+|them\s+|this\s+|down\s+)?"
                         r"to\s+(?:the\s+)?(orals?|spotlights?|posters?)\b|"
                         # "the lowest-rated poster", "best reviewed orals"
                         r"(?:rated|scored|reviewed|ranked)\s+(orals?|spotlights?|posters?)\b|"
                         # "posters about X", "orals in RL", "the poster with the best rating"
                         r"(orals|posters|spotlights)(?=\s+(?:are|were|about|on|in|with|that|which|"
                         r"from|sorted|by|ranked|ordered|best|worst|highest|lowest|first|among|"
                         r"amongst|rated|scored|then|count|w/?)(?!\w))|"
                         # "same but posters", "and then the posters?": the tier ends the turn
                         r"\b(?:but|and|then|now|just|only|the)\s+(posters)\s*[?.!]*\s*$|"
                         # "spotlight count?", "oral total": the tier counted; "which learning
                         # theory oral has the lowest rating": the tier, then what it has
                         r"\b(oral|spotlight|poster)\s+(?:count|total|number)\b|"
                         r"\b(oral|spotlight)(?=\s+(?:has|had|is|was|got|gets|received|with)\b)|"
                         r"(?<=\bthe\s)(oral|poster|spotlight)(?=\s+(?:with|that|which|among)\b)|"
                         # "oral?" "the spotlight ones"
                         r"(oral|spotlight)\b(?=\s*(?:[?.!,;]|$|ones?\b))|"
                         # "which oral has the lowest rating", "got an oral slot", "the least liked
                         # oral at the conference": the tier word as a noun after a determiner,
                         # unless it qualifies a topic ("the oral health of ...", "an oral exam")
                         r"\b(?:which|what|the|an|any|this|that|liked|rated|reviewed|scored)\s+"
                         r"(oral|spotlight)\b(?![\w-])(?!\s*(?:/|or\b|and\b))(?!\s+(?:health|"
                         r"cavit|cancer|lesion|disease|hygiene|microbio|dental|care|exam|histor|"
                         r"language|speech|reading|communication|tradition|proficien|mucos|surg|"
                         r"drug|vaccin|admin|dos|tablet|squamous|image|scan|presentations?\s+"
                         r"generat)))",
                         re.I)
# "is it an oral?", "[3] is an oral, right?", "2 and 4 are both orals?": a question about the
# decision of papers already named, not a filter on them
_STATUS_ASKED = re.compile(r"(?<!\w)(?:(?:is|was|are|were)\s+(?:it|that|this|they|those\s+two|"
                           r"both|(?:that|this|the\s+\w+)\s+(?:one|paper))|"
                           r"(?:it|that\s+one|this\s+one|that\s+paper|this\s+paper|one|"
                           r"\[\d{1,2}\]|#\d{1,2}|\d{1,2})\s+(?:is|was|are|were|got|get))"
                           r"\s+(?:both\s+|all\s+|also\s+|really\s+|even\s+)?(?:an?\s+)?"
                           r"(?:orals?|spotlights?|posters?)\b", re.I)
_TIER_WORD = {"oral": "oral", "orals": "oral", "spotlight": "spotlight", "spotlights": "spotlight",
              "poster": "poster", "posters": "poster", "rejected": "rejected",
              "withdrawn": "withdrawn", "accepted": "accepted"}
# "rated 6 or higher", "rating >= 6", "with a mean rating above 5.5", "scored at least 8"
_RATING = re.compile(
    r"\b(?:(?:with\s+)?(?:an?\s+)?(?:(?:mean|average|avg|reviewer|review|overall)\s+){0,2}"
    r"(?:rating|score)s?|rated|scored)(?:\s*,?\s*(?:like|um|uh|say)\s*,)?"
    r"\s*(?:(?:is|are|was|were|of)\s+)?(>=|<=|>|<|=|≥|≤|at least|at most|at or above|at or below|above|over|below|under|greater than|"
    r"more than|higher than|less than|lower than|of at least|no less than|no more than)?\s*"
    r"(\d{1,2}(?:\.\d{1,2})?)(?!\d|\.\d)(?!\s+(?:papers?|pprs?|works?|ones|orals|posters|submissions)\b)"
    r"(?:\s*(?:/|out of)\s*10)?(\s+(?:or|and)\s+(?:higher|more|above|better|"
    r"greater|over|up|lower|less|below|worse|under|down))?", re.I)
_OPS = {">=": ">=", "≥": ">=", "at least": ">=", "at or above": ">=", "at or below": "<=", "of at least": ">=", "no less than": ">=",
        "<=": "<=", "≤": "<=", "at most": "<=", "no more than": "<=", ">": ">", "above": ">",
        "over": ">", "greater than": ">", "more than": ">", "higher than": ">", "<": "<",
        "below": "<", "under": "<", "less than": "<", "lower than": "<", "=": "="}
# "in 2018", "from ICLR 2018", "ICLR 2018 papers"
_YEAR = re.compile(r"(?<![\w.@/-])((?:19|20)\d\d)(?![\w.@/-]*\d)(?!\s*(?:tokens?|"
                   r"samples?|images?|examples?|problems?)\b)(?<!\b(?:19\d\d|200\d)(?=\s+papers))",
                   re.I)
# "papers by Yoshua Bengio", "work from Sergey Levine", "authored by Chelsea Finn"
_AUTHOR = re.compile(rf"\b(?i:(?:{_PAPERS}|anything|everything|something|stuff|these|those|them|"
                     r"any)\s+(?:written\s+|authored\s+)?(?:by|from)|authored\s+by|written\s+by)"
                     r"\s+((?:[A-Z][\w'.\-]*\.?\s+){0,3}[A-Z][\w'\-]+)", re.U)
#: Words after "by" that say an order, not an author ("sorted by rating", "by reviewer score").
_ORDER_WORDS = (r"(?:rat\w*|scor\w*|review\w*|relevan\w*|mean|average|avg|date|year|area|topic|"
                r"how|their|its|the|a|him|her|them|me|us|you|it|this|that|these|those)\b")
# "papers by yoshua bengio" (in lower case: the two words after "papers by"), "Sergey Levine's
# papers"
_AUTHOR_LOWER = re.compile(rf"\b{_PAPERS}\s+(?:written\s+|authored\s+)?by\s+(?!{_ORDER_WORDS})"
                           r"([a-z][\w'\-]+\s+"
                           r"[a-z][\w'\-]+)\b(?<!\bet al)")
_AUTHOR_OWNER = re.compile(r"\b((?:[A-Z][\w'.\-]*\.?\s+){0,2}[A-Z][\w'\-]+)['’]s\s+(?:\d{4}\s+)?"
                           rf"{_PAPERS}\b")
# "highest-rated papers on X", "top rated", "best-scored", "sorted by rating"
_SORT = re.compile(r"\b(?:(?:highest|best|top|most\s+highly)[-\s]+"
                   r"(?:rated|scored|scoring|reviewed)|"
                   r"highest\s+(?:mean\s+|average\s+)?(?:ratings?|scores?)|"
                   r"(?:sorted|ranked|ordered)\s+by\s+(?:(?:mean|average|reviewer)\s+)?"
                   r"(?:ratings?|scores?))\b", re.I)
# "in the optimization area", "area: learning theory", "primary area reinforcement learning"
_AREA = re.compile(r"\b(?:(?:in|from|of|within)\s+(?:the\s+)?)?(?:(?:primary\s+)?area\s*"
                   r"(?:[:=]|\s(?:is|was)\s)?\s*"
                   r"(?P<after>[\w ,&()./-]{3,80}?)(?=[?.!;]|$|\s+(?:area|with|that|which|rated|"
                   r"and\s+(?:rated|with)))|(?P<before>[\w ,&()./-]{2,80}?)[\s(-]+(?:primary\s+)?"
                   r"(?:area|track|category)\b)", re.I)
# "whose primary area is applications to physical sciences (physics, ..., etc.)": a name after
# "area" that may hold full stops of its own, when the words before "area" named none
_AREA_NAMED = re.compile(r"\b(?:primary\s+)?area\s*(?:[:=]|\s(?:is|was)\s)?\s*"
                         r"(?P<after>[\w ,&()./-]{3,80}?)(?=[?!;,]|\.(?:\s|$)|$|\s+(?:with|that|"
                         r"which|rated|and\s+(?:rat|with|score|only)))", re.I)
# "orals in causal reasoning", "within the learning theory ...": an area named exactly after "in"
_IN_AREA = re.compile(r"\b(?:in|within|from)\s+(?:the\s+)?(?=\w)", re.I)
# "the optimization papers", "learning theory orals": an area named exactly before the noun
_AREA_PAPERS = re.compile(r"(?<=\w)\s+(?:papers?|submissions?|works|orals?|posters?|"
                          r"spotlights?)\b", re.I)
# ... and ends the phrase there ("in learning theory?", not "in learning-theory proof sketches")
_AREA_END = re.compile(r"\s*(?:[^\w\s]|$|(?:and|or|with|that|which|rated|about|on|papers?|"
                       r"area|track|from|in|by|are|is|were|was|sorted|ordered|having|where|"
                       r"whose|only|pls|please|ranked|published)\b)", re.I)
#: After a number: it counts something else ("above 6%", "over 7 layers", "under 8B"), so it is no
#: rating threshold.
_NOT_A_RATING = r"(?![\d.]*\s*(?:%|x\b|times|points|pp|layers|billion|[bBmMkK]\b))"
#: "+", "or more", "or lower", ...: the side of a threshold said after its number.
_OR_SIDE = (r"(\+|or\s+(?:more|higher|above|better|over|less|lower|below|worse|under)|"
            r"and\s+(?:up|above|higher|over|below|under|lower|down))")
# "7+", "(6.5+)": a rating threshold when the turn talks about ratings
# "which ones are above 6", "the ones averaging above 6": a threshold said of the papers
_BARE_RATING = re.compile(r"\b(?:ones|papers|those|these|them|they|are|averag\w*|anything|everything|any|all)\s+(?:that\s+are\s+)?"
                          r"(above|over|below|under|at least|at most)\s+(\d(?:\.\d{1,2})?)"
                          + _NOT_A_RATING, re.I)
# "6 or more on average", "7+ on average", "5.5 or lower on average"
_RATING_AVERAGE = re.compile(r"(?<![\w.])(\d(?:\.\d{1,2})?)\s*" + _OR_SIDE
                             + r"\s+(?:on\s+)?(?:average|avg|mean)\b", re.I)
# "drop anything below 5", "remove those under 6", "get rid of the ones above 7", "nothing
# under 5.5 please": a threshold said of what to leave out, so the filter keeps the other side
_DROP_RATING = re.compile(r"\b(?:drop|remove|exclude|filter\s+out|get\s+rid\s+of|cut|skip|hide|"
                          r"lose|throw\s+out|ignore|leave\s+out|discard|no|nothing|none|without)"
                          r"\b(?:\s+(?:\w+|[\w-]+)){0,4}?\s+(below|under|less\s+than|"
                          r"lower\s+than|above|over|more\s+than|higher\s+than)\s+"
                          r"(\d(?:\.\d{1,2})?|10)" + _NOT_A_RATING, re.I)
_DROP_OPS = {"below": ">=", "under": ">=", "less than": ">=", "lower than": ">=", "above": "<=",
             "over": "<=", "more than": "<=", "higher than": "<="}
# "got 6+", "how many of these got 6 or more", "scoring 7 or above": a threshold a paper got
_GOT_RATING = re.compile(r"\b(?:got|get|getting|gets|scoring|averaging|averaged|with|w/?|are|were|is)\s+"
                         r"(?:a\s+|an\s+|rated\s+)?"
                         r"(\d(?:\.\d{1,2})?)\s*" + _OR_SIDE + r"(?![\w%])", re.I)
# "and above 6 only", "above 6 pls", "only under 5": a threshold that is the whole request
_ONLY_RATING = re.compile(r"^\W*(?:(?:and|but|ok|okay|now|only|just)\W+){0,2}(above|over|below|under|"
                          r"at least|at most)\s+(\d(?:\.\d{1,2})?)\W*(?:(?:only|pls|please|then)"
                          r"\W*)*$", re.I)
#: Words that may follow a bare threshold ("got 6+ only", "6+ ones"): any other word is what
#: was counted ("7 or more GPUs"), not a rating.
_AFTER_THRESHOLD = re.compile(r"\s*(?:[^\w\s]|$|(?:only|pls|please|ones?|papers?|pprs?|works?|"
                              r"submissions?|on|average|avg|mean|and|or|rating|ratings|score|"
                              r"scores|then|just|in|from|at|sorted|ranked|first|right)\b)", re.I)


def _side(tail: str) -> str:
    """The comparison of an :data:`_OR_SIDE` tail: ``"<="`` for "or less/lower/below/worse/under",
    ``">="`` for "+" and "or more/higher/above/better/over"."""
    return "<=" if re.search(r"less|lower|below|worse|under|down", tail, re.I) else ">="


#: A threshold with its side said after it ("6 and up", "5.5 or lower"): a rating threshold
#: when the turn talks about ratings (see read_filters).
_SIDED = re.compile(r"(?<![\w.])(\d{1,2}(?:\.\d{1,2})?)\s*" + _OR_SIDE + r"(?![\w%])", re.I)
_PLUS = re.compile(r"(?<![\w.])(\d{1,2}(?:\.\d{1,2})?)\s?\+(?!\w)")
_RATING_WORD = re.compile(r"\b(?:rat\w*|scor\w*|review\w*|average|mean)\b", re.I)
#: Longest author name read from a question (the longest in ICLR 2018's list is 31 chars).
MAX_AUTHOR_CHARS = 80
#: Share of a question's letters outside the Latin script above which it is read as written in
#: another language (a Chinese question with "GRPO" in it is 4 Latin letters of 10).
FOREIGN_SHARE = 0.3
LANGUAGE_NOTE = ("This index's models read English: a question in another language is matched "
                 "only by its Latin-script words{terms}. Ask in English for a full search.")


@dataclass
class FilterSlots:
    """The filters a turn says in words. ``filters`` were read from its words (``phrases`` are
    those words, as typed, ``spans`` their character ranges); ``query`` is the turn without them
    and without a rating order ("highest-rated"), which :mod:`rag.understand.turn_reader` reads as an
    operation; ``query`` may hold no topic at all ("How many oral papers are there?" -> "How many
    papers?"; "papers by Yoshua Bengio" -> ""): see :func:`has_topic`. ``sort_phrase`` is the
    words that asked for a rating order, if any. ``foreign`` is True for a turn in another
    language, ``query`` then holding only its Latin-script words (may be empty)."""

    question: str
    query: str
    filters: Filters = field(default_factory=Filters)
    phrases: list[str] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    sort_phrase: str = ""
    foreign: bool = False
    #: Every span cut from ``question`` to make ``query`` (the filters' and the order's).
    cut: list[tuple[int, int]] = field(default_factory=list)

    def without(self, spans: list[tuple[int, int]]) -> str:
        """``query`` with more spans of ``question`` cut too (a count, positions: "show me 5
        oral papers on X"), as :func:`read_filters` makes it; ``query`` itself for a turn in
        another language or without such spans."""
        if not spans or self.foreign:
            return self.query
        return _searched(self.question, self.cut + list(spans))

    @property
    def language_note(self) -> str:
        """The note a turn in another language gets ("" for English)."""
        if not self.foreign:
            return ""
        terms = f" (here: {', '.join(self.query.split())})" if self.query else ""
        return LANGUAGE_NOTE.format(terms=terms)


#: Words that ask for papers or counts without naming a topic (stemmed, as BM25 sees them).
_NO_TOPIC = frozenset("some few sever coupl pl pleas thank good interest cool nice "
                      "how mani number count total paper work submiss articl studi list show "
                      "give find tell me all ani there which what are were is was the in of "
                      "accept conferenc index corpus iclr year public entri lol haha thx ok okai "
                      "um uh hmm".split())


#: Stemmed words that name an aspect (:data:`rag.understand.plan.ASPECTS`) or point at what has one
#: ("metrics", "limitations", "datasets they use"), as BM25 sees them.
_ASPECT_ONLY = frozenset("metric measur dataset benchmark data limit weak drawback result find "
                         "approach method techniqu evalu use about it its they them their those "
                         "these".split())


def names_only_an_aspect(text: str) -> bool:
    """True when ``text`` asks for an aspect and names nothing else ("and what metrics?";
    not "metrics for speech models"): :func:`has_topic`'s words, less the aspects'."""
    from rag.backends.lexical import query_terms

    return not set(query_terms(text)) - _NO_TOPIC - _ASPECT_ONLY


def has_topic(query: str) -> bool:
    """True when ``query`` (an :attr:`Intent.query`) names something to search for beyond
    "how many papers" / "list the papers"."""
    from rag.backends.lexical import query_terms

    return bool(set(query_terms(query)) - _NO_TOPIC)


def fold(text: str) -> str:
    """:func:`rag.filters.fold` without punctuation: lower-case words without accents,
    single-spaced (for matching area names)."""
    return " ".join(re.findall(r"[a-z0-9]+", fold_text(text.replace("&", " and "))))


def foreign_share(question: str) -> float:
    """Share of the question's letters that are not Latin script (0.0 for no letters)."""
    letters = [c for c in question if c.isalpha()]
    if not letters:
        return 0.0
    other = sum(1 for c in letters if not unicodedata.name(c, "LATIN").startswith("LATIN"))
    return other / len(letters)


_AREA_STOP = frozenset("and or of the to a an in on for other etc i e none above including "
                       "applications models learning methods".split())


@lru_cache(maxsize=8)
def area_aliases(areas: tuple[str, ...]) -> dict[str, str]:
    """Short names of ``areas``, derived from the names themselves (folded, :func:`fold`): the
    first word of a name (after "applications to"), when it has 6+ letters and no other area's
    name uses it ("interpretability", "robotics", "neuroscience", "optimization"), and the
    initials of a two- or three-word name before its first comma ("rl" for "reinforcement
    learning", "lt" for "learning theory")."""
    words = {a: set(fold(a).replace("-", " ").split()) for a in areas}
    out: dict[str, str] = {}
    for a in areas:
        head = fold(re.split(r"[,(]", a)[0]).replace("-", " ")
        head = re.sub(r"^applications to ", "", head).split()
        others = set().union(*(v for b, v in words.items() if b != a)) if len(words) > 1 else set()
        if head and len(head[0]) >= 6 and head[0] not in others and head[0] not in _AREA_STOP:
            out.setdefault(head[0], a)
        if 2 <= len(head) <= 3 and not re.split(r"[,(]", a)[0].lower().startswith("applications"):
            out.setdefault("".join(x[0] for x in head), a)
    return out


def match_area(text: str, areas: Sequence[str], exact: bool = False) -> str | None:
    """The area of ``areas`` that ``text`` names: equal after :func:`fold` (British "-isation"
    read as "-ization"), or the area's name up to its first comma or bracket ("applications to
    robotics" for "applications to robotics, autonomy, planning"), or up to its bracket of
    examples without "applications to" ("physical sciences" for "applications to physical
    sciences (physics, chemistry, biology, etc.)"), or (unless ``exact``) the area
    contains ``text`` as whole words ("computer vision", "physical sciences") when only one area
    does."""
    want = re.sub(r"isation\b", "ization", fold(text))
    if len(want) < 2 or (len(want) < 3 and not exact and not text.strip().isupper()):
        return None
    want = re.sub(r"^(?:the|a|an)\s+", "", want)
    want = re.sub(r"\s+(?:area|track|category)$", "", want)
    if not _content_words(want):
        return None  # "the", "in the": no word of it can name an area ("the above" is not one)
    for area in areas:
        head = fold(re.split(r"[,(]", area)[0])
        if fold(area) == want or head == want or \
                re.sub(r"^applications to ", "", fold(area.split("(")[0])) == want:
            return area
    alias = area_aliases(tuple(areas)).get(want)
    if alias and (len(want) > 3 or text.strip().isupper()):  # "RL", not "rl" or "Lt"
        return alias
    if exact:
        return None
    inside = [a for a in areas if re.search(rf"\b{re.escape(want)}\b", fold(a))]
    return inside[0] if len(inside) == 1 else _fuzzy_area(want, tuple(areas))


def _content_words(text: str) -> list[str]:
    """The words of ``text`` that are not English function words (scikit-learn's
    ``ENGLISH_STOP_WORDS``, the Glasgow stop list)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in ENGLISH_STOP_WORDS]


#: Least :func:`difflib.SequenceMatcher` ratio for a misspelt area word ("aligment").
AREA_WORD_RATIO = 0.85


@lru_cache(maxsize=4096)
def _fuzzy_area(want: str, areas: tuple[str, ...]) -> str | None:
    """The one area whose own words cover every content word of ``want`` (folded), each word
    matching an area word in the singular ("graph" for "graphs", "geometry" for
    "geometries") or by a :data:`AREA_WORD_RATIO` spelling ratio ("aligment"; not "general"
    for "generative"): "the graph learning
    area", "graphs and geometry", "aligment". Words in three or more areas' names ("learning",
    "methods") are no evidence; any other word must fit, so "spotlight papers in the graph
    learning" fits no area (the caller tries shorter tails). ``None`` when no area or more than
    one fits."""
    from collections import Counter
    from difflib import SequenceMatcher

    def words(text: str) -> list[str]:
        return [w for w in text.split() if w not in _AREA_STOP and len(w) >= 3]

    own = {a: set(words(fold(a))) for a in areas}
    common = {w for w, c in Counter(w for ws in own.values() for w in ws).items() if c >= 3}
    asked = [w for w in words(want) if w not in common]
    if not asked:
        return None

    def one(w: str) -> str:  # "geometries" -> "geometry", "graphs" -> "graph"
        return re.sub(r"ies$", "y", w) if len(w) > 4 else w

    def close(w: str, x: str) -> bool:
        w, x = one(w).rstrip("s"), one(x).rstrip("s")
        return w == x or (len(w) >= 6 and SequenceMatcher(None, w, x).ratio() >= AREA_WORD_RATIO) \
            or (len(w) >= 3 and len(x) >= len(w) + 3 and x.startswith(w))  # "cog sci"

    fits = [a for a in areas if all(any(close(w, x) for x in own[a] - common) for w in asked)]
    return fits[0] if len(fits) == 1 else None


#: Words after an area's name that say nothing about a topic: an order, fillers, "this year".
_FILLER = frozenset("worst best first last top bottom highest lowest sorted ranked ordered by "
                    "rated liked reviewed scored "
                    "rating ratings score scores um uh like pls please this year lately recently "
                    "overall now only so far at all conference iclr".split())


#: An end of the rating order named ("best first", "the worst 3"): with it a short area name
#: before "papers" / "orals" is read as the area (see read_filters).
_END_WORD = re.compile(r"\b(?:best|worst|top|lowest|highest|bottom)\b", re.I)


def _catalog_words(question: str, values: dict) -> bool:
    """True when ``question`` selects part of the list by more than a topic: a status or
    rating filter read so far (``values``), an order ("sorted by rating") or an end of it
    ("best", "top"), or a count ("how many")."""
    return bool("status" in values or "rating" in values or _SORT.search(question) or
                _END_WORD.search(question) or _HOW_MANY.search(question))


_HOW_MANY = re.compile(r"\bhow\s+many\b|\bnumber\s+of\b|\bcount\b", re.I)


def _clause(text: str) -> str:
    """``text`` up to the end of its clause (the first of ``.;?!`` or a comma), without the
    :data:`_FILLER` words."""
    head = re.split(r"[.;?!,]", text, maxsplit=1)[0]
    return " ".join(w for w in head.split() if w.lower() not in _FILLER)


#: Capitalised words a year after them still filters by: the venue, and a sentence's first word
#: ("In 2018", "From 2018 on").
_YEAR_OWNERS = frozenset("iclr in from since of for at before after during and or the year "
                         "published accepted submitted only just papers".split())


#: Number words a rating threshold may be written in ("at least six", "above seven").
_NUMBER_WORDS = {"two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
                 "seven": "7", "eight": "8", "nine": "9", "ten": "10"}
_WORD_THRESHOLD = re.compile(r"(\b(?:above|over|below|under|least|most|than|(?:rating|score)\s+"
                             r"of)\s+)(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)


def _digits(question: str) -> str:
    """``question`` with a threshold's number word as digits, right-aligned in the word's
    place ("above six" -> "above   6"), so that every span found in it is a span of
    ``question`` too."""
    return _WORD_THRESHOLD.sub(
        lambda m: m.group(1) + _NUMBER_WORDS[m.group(2).lower()].rjust(len(m.group(2))),
        question)


def read_filters(question: str, *, areas: Sequence[str] = ()) -> FilterSlots:
    """The :class:`FilterSlots` of ``question``; ``areas`` are the index's primary areas (an
    area is a filter only when the question says "area"/"track"/"category" next to its name).
    Number words of a threshold are read as digits ("at least six": :func:`_digits`)."""
    as_typed, question = question, _digits(question)
    values: dict[str, list[str]] = {}
    phrases: list[str] = []
    spans: list[tuple[int, int]] = []

    asked = [m.span() for m in _STATUS_ASKED.finditer(question)]

    def take(m: re.Match, key: str, value: str, start: int | None = None, end: int | None = None):
        a, b = (m.start() if start is None else start), (m.end() if end is None else end)
        if key == "status" and any(a < e and s < b for s, e in asked):
            return  # "is it an oral?": asked about, not a filter
        if key == "status" and value in ("accepted", "rejected", "withdrawn") and \
                _OTHER_VENUE.match(question, b):
            return  # "also accepted at CVPR?": another venue's decision, not this list's
        if value not in values.setdefault(key, []):
            values[key].append(value)
        spans.append((a, b))
        phrases.append(question[a:b].strip())

    for m in _TIER_BEFORE.finditer(question):
        # keep the noun ("oral papers on X" searches "papers on X")
        take(m, "status", _TIER_WORD[m.group(1).lower()], m.start(1), m.end(1))
    for m in _TIER_AFTER.finditer(question):
        take(m, "status", _TIER_WORD[(m.group(2) or m.group(1)).lower()], m.start(1), m.end())
    if not _TIER_AFTER.search(question):
        for m in _TIER_PASSIVE.finditer(question):
            take(m, "status", _TIER_WORD[m.group(1).lower()], m.start(), m.start(1) + len(m.group(1)))
    for m in _TIER_ALONE.finditer(question):
        word = next(g for g in m.groups() if g)
        take(m, "status", _TIER_WORD[word.lower()])
    if "accepted" in values.get("status", []) and len(values["status"]) > 1:
        values["status"].remove("accepted")  # "accepted as an oral": the tier says more
    for m in _DROP_RATING.finditer(question):  # before "rated under 5" is read as the filter
        word = re.sub(r"\s+", " ", m.group(1).lower())
        take(m, "rating", f"{_DROP_OPS[word]}{m.group(2)}")
    for m in _RATING.finditer(question):
        if "rating" in values and any(a <= m.start() < b for a, b in spans):
            continue  # "drop anything rated under 5": read above
        op = _OPS.get((m.group(1) or "").lower(), "")
        tail = (m.group(3) or "").lower()
        if not op:
            op = ">=" if any(w in tail for w in ("higher", "more", "above", "better", "greater",
                                                 "over", "up")) \
                else "<=" if tail else ">="
        take(m, "rating", f"{op}{m.group(2)}")
    if "rating" not in values:
        for m in _RATING_AVERAGE.finditer(question):
            take(m, "rating", f"{_side(m.group(2))}{m.group(1)}")
    if "rating" not in values:
        for m in (*_GOT_RATING.finditer(question), *_ONLY_RATING.finditer(question)):
            if m.re is _GOT_RATING and not _AFTER_THRESHOLD.match(question[m.end():]):
                continue  # "with 7 or more GPUs"
            if m.re is _GOT_RATING:
                take(m, "rating", f"{_side(m.group(2))}{m.group(1)}", m.start(1), m.end())
            else:
                take(m, "rating", f"{_OPS[m.group(1).lower()]}{m.group(2)}")
            break
    if "rating" not in values:
        for m in _BARE_RATING.finditer(question):
            take(m, "rating", f"{_OPS[m.group(1).lower()]}{m.group(2)}", m.start(1), m.end())
    if "rating" not in values and _RATING_WORD.search(question):
        for m in _SIDED.finditer(question):  # "the highly rated ones, 6 and up"
            if float(m.group(1)) <= 10 and _AFTER_THRESHOLD.match(question[m.end():]):
                take(m, "rating", f"{_side(m.group(2))}{m.group(1)}")
                break
    for m in _PLUS.finditer(question):
        # "7+" with a rating word in the turn, or said of the papers ("6+ ones only")
        if float(m.group(1)) <= 10 and not any(a <= m.start() < b for a, b in spans) and (
                _RATING_WORD.search(question) or re.match(r"\s*(?:ones?|papers?|pprs?|only)\b",
                                                          question[m.end():], re.I)):
            take(m, "rating", f">={m.group(1)}")
    for m in _YEAR.finditer(question):
        before = re.search(r"([A-Za-z][\w-]*)\s*$", question[:m.start()])
        if before and before.group(1)[0].isupper() and \
                before.group(1).lower() not in _YEAR_OWNERS:
            continue  # "the Algonauts 2025 challenge", "AIME 2025": part of a name
        after = re.match(r"\s+([A-Z][\w-]*)", question[m.end():])
        if after and after.group(1).lower() not in _YEAR_OWNERS and \
                not re.fullmatch(r"(?i:papers?|pprs?|works?|submissions?|orals?|posters?|"
                                 r"spotlights?|accepted|rejected|list|conference)", after.group(1)):
            continue  # "the 2019 Nobel", "2024 Olympiad problems": part of a name
        take(m, "year", m.group(1))
    for pattern in (_AUTHOR, _AUTHOR_LOWER, _AUTHOR_OWNER):
        for m in pattern.finditer(question):
            name = m.group(1).strip()
            if len(name) <= MAX_AUTHOR_CHARS and "author" not in values:
                take(m, "author", name if pattern is not _AUTHOR_LOWER else name.title(),
                     m.start(), m.end())
    if areas:
        for m in _AREA.finditer(question):
            text = m.group("after") or m.group("before") or ""
            words = text.split()
            for i in range(len(words)):  # the longest tail of the words before "area" that names one
                tail = " ".join(words[i:])
                if m.group("before"):  # "RL as their primary area", "RL (primary area)"
                    tail = re.sub(r"(?:[\s(]+|\b(?:as|is|its|their|the|an?|of)\b)*$", "", tail)
                area = match_area(tail, areas) or (
                    match_area(tail.upper(), areas) if m.group("before") and len(tail) <= 3
                    and i == len(words) - 1 else None)  # "rl area spotlights"
                if area:
                    start = m.start("before") + text.index(words[i]) if m.group("before") else m.start()
                    lead = re.search(r"\b(?:in|from|of|within)\s+(?:the\s+)?$", question[:start], re.I)
                    start = lead.start() if lead else start
                    take(m, "primary_area", area, start, m.end())
                    break
    if areas and "primary_area" not in values:
        for m in _AREA_NAMED.finditer(question):
            area = match_area(m.group("after"), areas)
            if area:
                end = m.end()  # "of alignment, fairness and safety": the name's later parts too
                own = re.findall(r"[a-z]+", area.lower())
                for c in re.finditer(r",[\w ,&()/-]*?(?=[?!;,]|\.(?:\s|$)|$)", question[m.end():]):
                    if not all(any(o.startswith(w[:5]) for o in own)
                               for w in _content_words(c.group())):
                        break  # ", sorted by rating": not a word of the area's name
                    end = m.end() + c.end()
                take(m, "primary_area", area, None, end)
                break
    if areas and "primary_area" not in values:
        for m in _IN_AREA.finditer(question):
            words = list(re.finditer(r"[\w&'-]+(?:,)?", question[m.end():]))
            for j in range(min(len(words), 14), 0, -1):  # the longest run of words naming one
                end = m.end() + words[j - 1].end()
                said = question[m.end():end].rstrip(",")
                area = match_area(said, areas, exact=True)
                if not area and j <= 6 and not has_topic(_clause(question[end:])) and \
                        _catalog_words(question, values):
                    # "orals in time series, best first", "how many posters in vision": a
                    # short name that fits one area, with nothing topical after it
                    area = match_area(said, areas)
                if area and (_AREA_END.match(question[end:]) or words[j - 1].group(0)
                             .endswith(",") or not has_topic(_clause(question[end:]))):
                    take(m, "primary_area", area, m.start(), m.start() + len(
                        question[:end].rstrip(",")) - m.start())
                    break
            if "primary_area" in values:
                break
    if areas and "primary_area" not in values:
        for m in _AREA_PAPERS.finditer(question):
            words = list(re.finditer(r"[\w&'-]+,?", question[:m.start()]))
            for j in range(max(0, len(words) - 14), len(words)):  # the longest run naming one
                start = words[j].start()
                area = match_area(question[start:m.start()], areas, exact=True)
                if area:
                    take(m, "primary_area", area, start, m.start())
                    break
            if "primary_area" in values:
                break
    sort = ""
    filter_spans = list(spans)
    for m in _SORT.finditer(question):
        sort = m.group(0)
        spans.append((m.start(), m.end()))
    question = as_typed  # (the same length: the spans hold)
    query = _searched(question, spans)
    filters = Filters()
    for key, vs in values.items():
        for v in vs:
            try:  # parsed like --filter, so as_strings() gives the canonical form (rating>=6)
                filters = filters.merged(Filters.parse([f"{key}{v}" if key == "rating"
                                                        else f"{key}={v}"]))
            except FilterError:
                pass  # words that looked like a filter but are not one: searched as words
    read = FilterSlots(question, query, filters, phrases, filter_spans, sort, cut=list(spans))
    if foreign_share(question) > FOREIGN_SHARE:
        read.foreign = True
        read.query = " ".join(re.findall(r"[A-Za-z][A-Za-z0-9.+-]*[A-Za-z0-9+]|[A-Za-z]{2,}",
                                         read.query))
    return read


#: "I've been browsing", "I'm mostly interested in", "we're looking at": the speaker, not the
#: topic (what follows it is: "I'm working on protein folding" -> "protein folding").
_SELF_ADVERBS = r"(?:\s+(?:been|just|mostly|really|currently|now|also|still|kinda|only|primarily|" \
                r"mainly|personally))*"
_SELF_VERB = r"\s+(?:\w+ing|interested|curious|keen)"
_SELF_LEAD = re.compile(r"^\W*(?:(?:so|ok(?:ay)?|well|hi|hey|hello)\W+)*(?:i|we)(?:(?:\s*['’]\s*"
                        r"(?:m|ve|re|d|ll)|(?<=i)(?:m|ve)|\s+(?:am|are|have|had|was|were|would|will))"
                        + _SELF_ADVERBS + f"(?:{_SELF_VERB})?|" + _SELF_ADVERBS + _SELF_VERB +
                        r")(?:\s+(?:in|at|into|on|about|through|over|around|for))?"
                        r"(?=[\s,.!?;:]|$)\s*", re.I)
#: After a decision word: another venue ("accepted at CVPR or NeurIPS", "rejected from
#: NeurIPS"), so the word is no filter of this list (ICLR and "this conference" are this one).
_OTHER_VENUE = re.compile(r"\s+(?:also\s+)?(?:at|to|in|by|from)\s+(?!ICLR\b|this\b|the\s+"
                          r"conference\b)(?:[A-Z][A-Za-z]+|[A-Z]{2,})\b")
#: "Hi! Could you please tell me", "hey, can u show me", "pls": a greeting or a request's
#: politeness before what is asked, not part of it (the search text and the plan's topic).
_REQUEST_LEAD = re.compile(r"^\W*(?:(?:hi|hey|hello|ok(?:ay)?|so|well|thanks?|thank\s+you)\b\W*)*"
                           r"(?:(?:(?:could|can|would|will)\s+(?:you|u)\s+(?:please\s+|pls\s+|"
                           r"kindly\s+)?(?:tell|show|give|find|list|get)\s+me\b|please\b|pls\b|"
                           r"kindly\b)\W*)?", re.I)
_DANGLING = re.compile(r"(?:\s+|^)(?:and|or|with|that|which|are|were|was|is|in|from|of|within|the|"
                       r"by|at|among|as|an?|got|been|have|has)\s*([?.!]?)$", re.I)


def _searched(question: str, spans: list[tuple[int, int]]) -> str:
    """The words of ``question`` that are searched: without ``spans`` (:func:`_without`), a
    first-person lead (:data:`_SELF_LEAD`, anchored at the start: only a lead goes) or a
    greeting and politeness (:data:`_REQUEST_LEAD`, unless nothing else is left)."""
    query = _SELF_LEAD.sub("", _without(question, spans) if spans else question, count=1)
    return _REQUEST_LEAD.sub("", query, count=1) or query


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the character ``spans`` removed, spaces tidied and words left dangling at
    the end dropped ("papers on LLM agents were?" -> "papers on LLM agents?")."""
    keep = [True] * len(text)
    for a, b in spans:
        for i in range(a, b):
            keep[i] = False
    out = "".join(c if k else " " for c, k in zip(text, keep))
    out = re.sub(r"\(\s*\)", " ", out)
    if out.count(")") > out.count("("):  # "RL (primary area) papers": the bracket's other half
        out = re.sub(r"(?:(?<=\s)|^)\)", " ", out)
    out = re.sub(r"\s+([?.!,;:])", r"\1", re.sub(r"\s{2,}", " ", out)).strip()
    out = re.sub(r"^[,;:]\s*", "", out)
    while _DANGLING.search(out):
        out = _DANGLING.sub(r"\1", out).strip()
    return out


# --- positions and numbers -------------------------------------------------------------------
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
            "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "1st": 1, "2nd": 2, "3rd": 3,
            "4th": 4, "5th": 5, "6th": 6, "7th": 7, "8th": 8, "9th": 9, "10th": 10}
_CARDINAL = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
             "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a pair of": 2}
_ORD = "|".join(sorted(_ORDINAL, key=len, reverse=True))
_CARD = "|".join(sorted(_CARDINAL, key=len, reverse=True)) + r"|\d{1,2}"
_NOUN = r"(?:ones?|papers?|works?|methods?|approach(?:es)?|models?|entr(?:y|ies)|items?|results?)"
#: "the second one", "2nd paper", "the third" (not followed by another noun), "2nd" alone; not
#: "the first paper to/that/on ..." (a question of its own: "the first paper to propose X").
_BY_ORDINAL = re.compile(
    rf"\b(?:the\s+)?({_ORD})\s+{_NOUN}\b(?!\s+(?:to|that|which|who|on|with|using)\b)"
    rf"(?!\s+about\s+(?!it\b|them\b)[a-z])"  # "the first paper about X" is a description
    rf"(?!\s+in\s+(?!(?:your|the|this|that|my)\s+(?:list|answer|results?|table|reply)\b))"
    rf"|\bthe\s+({_ORD})\b(?!\s+(?:{_NOUN}|{_CARD}|times?|place|steps?|half|authors?|years?|days?|"
    rf"stages?|layers?|tokens?|few|couple|order|round|part|phase|version|sentence|line|"
    rf"word)\b)(?!-)"
    rf"|(?<![/.\d])\b(\d{{1,2}}(?:st|nd|rd|th))\b", re.I)
#: "[3]", "#2", "paper 4", "no. 3", "number 5", "item 2", "(2)".
_BY_NUMBER = re.compile(r"\[(\d{1,2})\]|#\s?(\d{1,2})\b|\b(?:paper|no\.?|number|nr\.?|item|"
                        r"entry|ref(?:erence)?)\s+(\d{1,2})\b|\((\d{1,2})\)", re.I)
_LAST = re.compile(rf"\b(?:the\s+)?(?:very\s+)?(?:last|final|bottom)(?:\s+({_CARD}))?"
                   rf"(?:\s+{_NOUN})?\b(?!\s+(?:years?|times?|decades?|months?|layers?|tokens?|"
                   rf"steps?))", re.I)
#: "top three", "first two", "the 5 best", "two best", "3 papers", "top-3".
_COUNT = re.compile(rf"\b(?:top|first|best|leading|highest)[-\s]+({_CARD})\b"
                    rf"|\b(?:the\s+)?({_CARD})\s+(?:best|top|highest|most|lowest|worst|first|"
                    rf"leading|strongest)\b"
                    rf"|\b({_CARD})\s+(?:\w+[-\s]){{0,2}}?(?:papers|ones|works|methods)\b", re.I)


#: Two or more bare numbers joined by commas, "and", "&" or "vs": the previous answer's
#: papers by number ("2, 5 and 6", "1 & 3", "3 vs 7"); not sizes, scores or years (a unit,
#: a decimal point or a third digit next to them).
_BARE_LIST = re.compile(r"(?<![\w.$€£#\[(-])\d{1,2}(?:\s*(?:,|and|&|vs\.?|or)\s*\d{1,2}){1,5}"
                        r"(?![\w.%]|\s*(?:%|x\b|times|points?|pp|percent|[bBmMkK]\b|layers|"
                        r"tokens|steps|epochs|GB|hours|minutes|seconds|ms|years))", re.I)


def _number(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _CARDINAL.get(word, _ORDINAL.get(word, 0))


_LATTER = re.compile(r"\bthe\s+(latter|former)(?:\s+(?:one|paper|work))?\b", re.I)
#: "both", "the two", "these two": two papers, when one is under discussion the one before too.
_BOTH = re.compile(r"\b(?:both|(?:the|these|those)\s+two|(?:each|either)\s+of\s+(?:them|"
                   r"these|those)|(?:one|it)\s+(?:and|with|against|vs\.?)\s+the\s+"
                   r"(?:previous|other|earlier|last)\s+one)\b", re.I)


_SAME_AREA = re.compile(r"\b(?:in|from|of|within|to)\s+(?:that|this|the\s+same|their|its|his|"
                        r"her)\s+(?:whole\s+|entire\s+)?(?:primary\s+)?(?:area|track|category|"
                        r"field|subfield)\b"
                        r"|\bsame\s+(?:primary\s+)?(?:area|track|category)\s+as\b"
                        # "the lowest rated one there", "which oral there", "the ones in there"
                        r"|\b(?:ones?|orals?|papers?|posters?|works?)\s+(?:in\s+)?there\b"
                        r"(?!\s+(?:is|are|was|were)\b)", re.I)
#: "how many is that", "count them": a turn about what was just shown.
_REFERS_BACK = re.compile(r"\b(?:that|those|these|them|they|it)\b", re.I)


#: Words that point at the topic just searched ("how many such papers overall?", "on this").
_POINTS_AT_TOPIC = re.compile(r"\bsuch\b|\b(?:on|about)\s+(?:this|that)\b|"
                              r"\b(?:this|that)\s+topic\b", re.I)


def points_at_topic(text: str) -> bool:
    """True when ``text`` points at the topic searched before ("how many such papers
    overall?", "papers on this in RL", "this topic")."""
    return bool(_POINTS_AT_TOPIC.search(text))


def refers_back(text: str) -> bool:
    """True when ``text`` points at something said before ("how many is that in total?")."""
    return bool(_REFERS_BACK.search(text))


#: "of these", "among those", "from the ones above": the previous answer's papers, by name of
#: the set (in the tune part's labelled turns with a previous answer: 191 of 192 such turns are
#: about the previous answer's papers; the other says "not merely among those").
_OF_THESE = re.compile(r"(?<!not\s)(?<!not merely\s)(?<!not only\s)(?<!not just\s)\b(?:of|among|"
                       r"from|in|between)\s+(?:these|those|them|the\s+above|that\s+list|this\s+"
                       r"list|the\s+(?:ones|papers|list)\s+(?:above|you\s+(?:just\s+)?(?:listed|"
                       r"showed|gave|mentioned)))\b", re.I)


def of_these(text: str) -> bool:
    """True when ``text`` picks among the previous answer's papers by naming that set ("Of
    these, which ...", "among those above")."""
    return bool(_OF_THESE.search(text))


def same_area(text: str) -> bool:
    """True when ``text`` restricts to the area of what came before ("the best-rated paper in
    that area overall", "orals in the same area as this one")."""
    return bool(_SAME_AREA.search(text))


def pair(text: str) -> bool:
    """True when ``text`` speaks of two papers together ("bibtex for both", "compare the
    two", "these two"): after two turns about one paper each, those two."""
    return bool(_BOTH.search(text))


#: Two ordinals said together ("the first and third", "second vs 4th"): when one of them names
#: a position, so does the other.
_ORDINAL_PAIR = re.compile(rf"\b({_ORD}|\d{{1,2}}(?:st|nd|rd|th))\s+(?:and|&|or|vs\.?|versus|"
                           rf"with)\s+(?:the\s+)?({_ORD}|\d{{1,2}}(?:st|nd|rd|th))\b(?!-)"
                           r"(?!\s+(?:order|half|halves|place|times?|authors?|stages?|steps?|"
                           r"rounds?|phases?|parts?|versions?|layers?|years?)\b)", re.I)


def _ordinal_number(word: str) -> int:
    """The number an ordinal says: "third" -> 3, "12th" -> 12 ("12th" is not in _ORDINAL: its
    digits say the number; "1/50th" is no position, see _BY_ORDINAL)."""
    return _ORDINAL.get(word.lower()) or int(re.match(r"\d+", word).group())


def positions(text: str, n_previous: int = 0) -> tuple[list[int], list[tuple[int, int]]]:
    """Papers of the previous answer named by number in ``text``, in the turn's order without
    repeats, and the character spans that named them: "[3]", "#2", "paper 4", "the second one",
    "2nd", "the last one" (``n_previous``, the previous answer's number of papers), "the last
    two", "the latter" ([2]) and "the former" ([1]). Numbers above ``n_previous`` are kept (the answer says the previous answer did not
    show them)."""
    found: list[tuple[int, int]] = []  # (start, number)
    spans: list[tuple[int, int]] = []
    for m in _BY_NUMBER.finditer(text):
        n = int(next(g for g in m.groups() if g))
        found.append((m.start(), n))
        spans.append(m.span())
    for m in _BY_ORDINAL.finditer(text):
        found.append((m.start(), _ordinal_number(next(g for g in m.groups() if g))))
        spans.append(m.span())
    for m in _ORDINAL_PAIR.finditer(text):  # "the first and third", "first and 3rd"
        if any(a < m.end() and m.start() < b for a, b in spans):
            found += [(m.start(1), _ordinal_number(m.group(1))),
                      (m.start(2), _ordinal_number(m.group(2)))]
            spans.append(m.span())
    if n_previous:
        for m in _BARE_LIST.finditer(text):  # "2, 5 and 6", "1 and 3 bibtex pls"
            numbers = [int(x) for x in re.findall(r"\d{1,2}", m.group(0))]
            if all(1 <= n <= n_previous for n in numbers) and \
                    not any(a <= m.start() < b for a, b in spans):
                found += [(m.start() + i, n) for i, n in enumerate(numbers)]
                spans.append(m.span())
        for m in _LATTER.finditer(text):  # after a comparison of two: [1] and [2]
            if n_previous >= 2:
                found.append((m.start(), 2 if m.group(1).lower() == "latter" else 1))
                spans.append(m.span())
        for m in _LAST.finditer(text):
            many = _number(m.group(1)) if m.group(1) else 1
            for i, n in enumerate(range(max(1, n_previous - many + 1), n_previous + 1)):
                found.append((m.start() + i, n))
            spans.append(m.span())
    out: list[int] = []
    for _, n in sorted(found):
        if 1 <= n <= 99 and n not in out:
            out.append(n)
    return out, spans


def count_asked(text: str) -> tuple[int | None, list[tuple[int, int]]]:
    """How many papers ``text`` asks for ("top three" -> 3, "the 5 best" -> 5, "first two" -> 2,
    "two papers" -> 2), with the span that said it; ``(None, [])`` when it names no number.
    Numbers above 50 are not counts of papers (years, sizes)."""
    for m in _COUNT.finditer(text):
        n = _number(next(g for g in m.groups() if g))
        if 1 <= n <= 50:
            return n, [m.span()]
    return None, []


#: Words that turn a rating order around: "lowest rated", "worst", "least".
_ASCENDING = re.compile(r"\b(?:lowest|worst|bottom|least|weakest|poorest|lower|ascending|"
                        r"increasing)\b", re.I)


_PLURAL = re.compile(r"\b(?:papers|works|ones|submissions|articles|studies|entries)\b", re.I)
_SINGULAR = re.compile(r"\b(?:paper|work|one|submission|article|study|entry)\b(?!\s*s\b)", re.I)


# "what's its rating?", "what did reviewers give it", "how was it rated", "rating of [2]?":
# a question about the reviewer ratings of papers already in hand, not a filter or an order
_RATING_ASKED = re.compile(
    r"\b(?:what|how)(?:['’]?s|\s+is|\s+was|\s+are|\s+were)?\s+(?:its|their|the|this|that|"
    r"(?:(?:the\s+)?(?:first|second|third|last)(?:\s+one)?|[\w.+-]+)['’]s)\s+(?:mean\s+|average\s+|"
    r"reviewer\s+|review\s+|overall\s+)?(?:ratings?|scores?)\s*(?:[?.!]|$|of\s+(?:it|that|this|"
    r"them|those|these|\[\d|#\d|the\s+(?:first|second|third|last)))|"
    r"\bwhat\s+(?:did|do)\s+(?:the\s+)?reviewers?\s+(?:give|rate|score)\b|"
    r"\bwhat\s+(?:mean\s+|average\s+|reviewer\s+)?(?:ratings?|scores?)\s+(?:did|does|do)\s+|"
    r"\bhow\s+(?:well\s+|highly\s+|badly\s+)?(?:was|is|were|are)\s+(?:it|that|this|they|"
    r"those|these|that\s+one|this\s+one|that\s+paper|this\s+paper)\s+(?:rated|reviewed|"
    r"scored)\b|\b(?:ratings?|scores?)\s+(?:of|for)\s+(?:it|that|this|them|those|these|"
    r"\[\d{1,2}\]|#\d{1,2}|(?:the\s+)?(?:first|second|third|last)(?:\s+one)?)\s*(?:[?.!]|$)",
    re.I)


def asks_rating(text: str) -> bool:
    """True when ``text`` asks for the reviewer ratings of papers it points at ("what's its
    rating?", "how was it rated?"), not for papers with a rating ("rated 6+", "best rated")."""
    return bool(_RATING_ASKED.search(text))


def asks_only_rating(text: str) -> bool:
    """True when ``text`` asks for the ratings of papers it points at and nothing else
    ("what's its rating?"; not "what's its rating and which datasets does it use?")."""
    return asks_rating(text) and not has_topic(_RATING_ASKED.sub(" ", text))


def asks_status(text: str) -> bool:
    """True when ``text`` asks for the decision of papers it points at ("was it an oral?",
    "2 and 4 are both orals?"), not for papers with that decision."""
    return bool(_STATUS_ASKED.search(text))


def plural(text: str) -> bool:
    """True when ``text`` asks for papers in the plural ("the best-rated papers") and names no
    single one ("the best paper", "which one")."""
    return bool(_PLURAL.search(text)) and not _SINGULAR.search(text)


def singular(text: str) -> bool:
    """True when ``text`` names a single paper ("a paper", "which one", "the work")."""
    return bool(_SINGULAR.search(text))


#: "from best to worst", "top to bottom", "highest first": the order named first is the start.
_DESCENDING_FIRST = re.compile(r"\b(?:best|highest|top|most|strongest|greatest|descending|"
                               r"decreasing)\b(?:[-\s]+\w+){0,2}?\s+(?:to|down\s+to|->|→|"
                               r"first)\b", re.I)
#: "most low rated", "wrost", "least liked": low-end words, misspellings included.
_ASCENDING_MORE = re.compile(r"\b(?:most\s+low|wo?rst|wrost|worse|lest|lowes)\b", re.I)


#: "the worst of them?", "which is the best one", "the top-rated among these": one paper at an
#: end of the rating order, not an ordering ("sort them best first", "best to worst").
_ONE_SUPERLATIVE = re.compile(r"\bthe\s+(?:single\s+|very\s+)?(?:best|worst|top|highest|lowest|"
                              r"least|most)(?:[-\s]+(?:rated|scored|liked|reviewed))?"
                              r"(?:\s+(?:one|paper|work|entry))?\s*(?:[?.!]|$|of\b|among\b|"
                              r"in\s+(?:them|these|those|that|this)\b|there\b|here\b)", re.I)
_ORDER_CUE = re.compile(r"\b(?:sort\w*|rank\w*|order\w*|first|to)\b", re.I)


def one_superlative(text: str) -> bool:
    """True when ``text`` asks for the one paper at an end of the rating order ("the worst of
    them?", "which is the best one?"), with no ordering word ("sort", "rank", "first", "to")."""
    return bool(_ONE_SUPERLATIVE.search(text)) and not _ORDER_CUE.search(text)


def ascending(text: str) -> bool:
    """True when ``text`` asks for the low end of an order ("lowest rated", "worst scores",
    "most low rated"); "from best to worst" and "highest first" start at the top."""
    first = _DESCENDING_FIRST.search(text)
    low = _ASCENDING.search(text) or _ASCENDING_MORE.search(text)
    if first and (not low or first.start() < low.start()):
        return False
    return bool(low)


#: Compounds that hold an order word but name a method or a property, not a rating order:
#: "best-of-N sampling", "worst-case robustness", "top-k routing", "lower bounds".
_ORDER_COMPOUND = re.compile(r"\b(?:best|worst)-(?:of-\w+|case)\b|\btop-(?:[kpn]|down|\d+)\b|"
                             r"\bbottom-up\b|\b(?:higher|lower)-(?:order|level|bound\w*)\b|"
                             r"\blower\s+bound\w*\b", re.I)
#: Words a turn that sorts or picks by rating uses ("best-rated", "rank them", "lowest first",
#: "which scored higher", misspellings of _ASCENDING_MORE included). Every sort and extreme turn
#: of the labelled tune part (506 of 4,103) has one.
_RATING_ORDER_WORD = re.compile(r"\b(?:best|worst|wrost|wors|highest|lowest|lowes|top|bottom|"
                                r"strongest|weakest|greatest|poorest|rank\w*|sort\w*|order\w*|"
                                r"reorder\w*|rat(?:e|es|ed|ing|ings)|scor(?:e|es|ed|ing)|"
                                r"review\w*|most|least|lest|ascending|descending|asc|desc)\b",
                                re.I)


def orders_by_rating(text: str) -> bool:
    """True when ``text`` has a word that can ask for a rating order or its end ("best-rated",
    "sort them", "the lowest"); "best-of-N gets worse with more samples" has none once its
    method compounds are set aside (:data:`_ORDER_COMPOUND`), so it is no sort or extreme."""
    return bool(_RATING_ORDER_WORD.search(_ORDER_COMPOUND.sub(" ", text)))


# --- names ----------------------------------------------------------------------------------
#: A name in a turn: CamelCase (StepORLM), an acronym of 3+ capitals (GRPO, RFTHGS), or a word
#: with letters and digits (Llama3, F2SA).
NAME = re.compile(r"\b(?:[A-Za-z]*[a-z][A-Z][A-Za-z0-9-]*|[A-Z][A-Z0-9-]{2,}[a-z]*|"
                  r"[A-Za-z]+[0-9][A-Za-z0-9-]*)\b")


def fold_name(text: str) -> str:
    """``text`` lower-cased without anything but letters and digits, so that names compare
    regardless of case, hyphens and spacing ("Part-X-MLLM" and "part x mllm" -> "partxmllm")."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def name_words(text: str) -> list[str]:
    """The name-like words of ``text`` (:data:`NAME`), in order."""
    return NAME.findall(text)


def new_names(text: str, papers: Sequence[Paper]) -> list[str]:
    """Names in ``text`` that occur in none of ``papers``' titles and abstracts (case and hyphens
    ignored): a turn naming something else is not about them."""
    corpus = fold_name(" ".join(f"{p.title} {p.abstract}" for p in papers))
    return [n for n in NAME.findall(text) if fold_name(n) and fold_name(n) not in corpus]


_QUOTED = re.compile(r"[\"“'‘]([^\"”'’]{12,200})[\"”'’]")


def quoted(text: str) -> list[str]:
    """Quoted phrases of 12-200 characters ("'Generating Natural Adversarial Examples'"): a
    title, usually."""
    return [m.group(1).strip() for m in _QUOTED.finditer(text)]


# --- comparison sides -------------------------------------------------------------------------
_COMPARE = [
    re.compile(r"^\s*(?:how|in what ways?|where)\s+(?P<v>does|do|did|is|are)\s+(?P<a>.+?)\s+"
               r"(?:differ|compare|contrast|relate)\w*\s+(?:from|with|to|against|and)\s+(?P<b>.+?)"
               r"\s*[?.!]*\s*$", re.I),
    re.compile(r"^\s*(?:compare|contrast)\s+(?P<a>.+?)\s+(?:with|to|and|against|versus|vs\.?)\s+"
               r"(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    re.compile(r"^\s*(?:what(?:'s| is| are) the differences?\s+between)\s+(?P<a>.+?)\s+and\s+"
               r"(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    re.compile(r"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    # "Which is better: the paper that does A, or the one that does B?" (sides described, not
    # named: each must be a clause of OR_SIDE_WORDS words or more)
    re.compile(r"^\s*(?:which\s+(?:one\s+|paper\s+|method\s+|approach\s+)?(?:is|works|"
               r"performs|should I (?:use|pick|read))\s+(?:better|best|stronger|faster|more \w+)?"
               r"\s*[:,-]?\s*)?(?P<a>(?:the|a)\s+.+?),?\s+or\s+(?P<b>(?:the|a)\s+.+?)"
               r"\s*[?.!]*\s*$", re.I),
]
#: Words each side of an "A or B" comparison needs (shorter "X or Y" is a topic: "papers on
#: pruning or quantization").
OR_SIDE_WORDS = 6


def comparison_sides(text: str) -> list[str] | None:
    """The sides of a comparison (2 or more), or None when the words name no sides.

    "How does A differ from B?" -> [A, B]; "Compare A, B and C" -> [A, B, C]. A side must be two
    words or more, or one name-like word such as ``StepORLM`` (else it is likely not a comparison
    of papers: "how does it compare to this?").
    """
    for pattern in _COMPARE:
        m = pattern.match(text)
        if not m:
            continue
        a, b = m.group("a"), m.group("b")
        if pattern is _COMPARE[3] and len(a.split()) > 3 * len(b.split()):
            continue  # "teaching X ... with RL versus plain SFT": one topic, two settings
        if pattern is _COMPARE[-1] and min(len(a.split()), len(b.split())) < OR_SIDE_WORDS:
            continue
        # "A, B and C" lists several papers on the first side; "on- and off-policy" (a hyphen
        # before "and") and a first side without a comma ("the paper on X and Y") are one paper
        plural = (m.groupdict().get("v") or "do").lower() in ("do", "are", "did")
        listed = "," in a and plural
        sides = ([s.strip(" ,;") for s in re.split(r",\s*(?:and\s+)?|(?<!-)\s+and\s+", a)]
                 if listed else [a]) + [b]
        if len(sides) > 2 and not all(_side_ok(s) for s in sides):
            sides = [a, b]
        sides = [re.sub(r"^(?:the|a|an)\s+(?:paper|work|method|approach|one|model|technique|"
                        r"framework|system|study|algorithm)\s+(?:on|about|that|which|where|"
                        r"proposing)?\s*", "", s, flags=re.I) or s for s in sides]
        if all(_side_ok(s) for s in sides):
            return sides
    return None


def _side_ok(side: str) -> bool:
    """A comparison side names a paper: two words or more, or one word written as a name
    (StepORLM, GRPO, F2SA, Cactus: a capital or a digit; not "it" or "this")."""
    words = side.split()
    if len(words) >= 2:
        return True
    return len(words) == 1 and len(words[0]) >= 3 and bool(re.search(r"[A-Z0-9]", words[0]))


# --- a new subject ----------------------------------------------------------------------------
# "And for vision transformers?", "What about diffusion models?", "How about in robotics?",
# "Same for GNNs?": the previous question's topic, asked of another subject.
_NEW_SUBJECT = re.compile(
    r"^\s*(?:(?:and|but|ok(?:ay)?|now|then|so),?\s+)?(?:(?:what|how)\s+about\s+(?:for\s+|in\s+|"
    r"on\s+|with\s+)?|(?:and|but|now|then)\s+(?:for|in|on|with|among)\s+|(?:the\s+)?same\s+"
    r"(?:\w+\s+)?(?:for|in|on|with)\s+|(?:and|now)\s+)(?P<s>[^?.!]{3,80}?)\s*[?.!]*\s*$", re.I)
#: Pronouns that make a subject point back rather than name a new one ("what about its results?").
_POINTS_BACK = re.compile(r"\b(?:it|its|they|them|their|this|that|these|those|the same)\b", re.I)


def new_subject(text: str) -> str | None:
    """The new subject of a turn that keeps the previous question and changes what it is asked
    of ("And for vision transformers?" -> ``vision transformers``), or None. A subject that
    points back ("what about its results?", "and for that paper?") is none."""
    m = _NEW_SUBJECT.match(text)
    if not m:
        return None
    subject = m.group("s").strip()
    if _POINTS_BACK.search(subject):
        return None
    return subject


# --- the topic of a count ----------------------------------------------------------------------
# What a count question says before its topic: "how many papers are about", "number of works on"
_COUNT_LEAD = re.compile(
    r"^\s*(?:[\w',]+\s+){0,3}?(?:how many|the number of|number of|count(?: of)?|total of)\s+"
    r"(?P<pre>(?:[\w'-]+\s+){0,4}?)"
    r"(?:(?:papers?|works?|submissions?|articles?|studies|entries|publications)\b\s*|"
    r"(?<=many\s)(?=(?:are\s+there\s+)?(?:about|on|regarding|concerning)\s))"
    r"(?:(?:are|were|is|was|did|do|have|has)\s+)?(?:there\s+)?(?:(?:in|at|from)\s+(?:this|the)\s+"
    r"(?:index|list|corpus|conference)\s+)?(?:(?:that\s+)?(?:are\s+|were\s+)?(?:about|on|"
    r"studying|study|use|using|propose|proposing|address|addressing|mention|mentioning|"
    r"concerning|regarding|related to|deal(?:ing)? with|focus(?:ing)? on|in)\s+)?", re.I)
_TRAILER = re.compile(r"\s*(?:(?:in|at|from)?\s*(?:this|the)\s+(?:index|list|corpus|conference)|"
                      r"(?:got|get|were|was|are|have\s+been|has\s+been)\s+(?:in|accepted)|"
                      r"(?:at|in)\s+ICLR(?:\s+\d{4})?|(?:(?:are|were|is|was)\s+)?there(?:\s+are)?)?"
                      r"\s*[?.!]*\s*$", re.I)
#: A preposition a topic was said with ("orals on diffusion language models" less its filter
#: leaves "on diffusion language models"): not part of the topic's phrase.
_TOPIC_LEAD = re.compile(r"^(?:about|on|regarding|concerning)\s+(?=\w)", re.I)
#: Words before the noun that point at the set, not at a topic ("of the papers", "these").
_COUNT_SET = re.compile(r"^(?:(?:of|among)\s+)?(?:the|these|those|all|all\s+the)\s+", re.I)


def topic_phrase(query: str) -> str:
    """``query`` without a leading preposition (:data:`_TOPIC_LEAD`): "on diffusion language
    models" -> "diffusion language models"."""
    return _TOPIC_LEAD.sub("", query)


def count_topic(question: str) -> str:
    """The topic of a count question: its words between "how many" and "papers" and after
    "papers are about", before "in this index?" ("How many papers are about reinforcement
    learning?" and "roughly how many machine unlearning papers got in?" -> "reinforcement
    learning", "machine unlearning"); ``""`` when there is none. A question without a count
    lead is returned without its trailer."""
    m = _COUNT_LEAD.match(question)
    if not m:
        return topic_phrase(_TRAILER.sub("", question).strip(" ,;:"))
    pre = _COUNT_SET.sub("", m.group("pre")).strip()
    rest = _TRAILER.sub("", question[m.end():]).strip(" ,;:")
    return " ".join(x for x in (pre, rest) if x)


