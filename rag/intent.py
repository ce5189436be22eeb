"""Read what a question asks of the paper list itself, before searching: filters said in words,
an order by reviewer rating, and a question in another language.

"oral papers on diffusion", "rejected papers about X", "withdrawn", "accepted", "in the
optimization area", "rated 6 or higher", "in 2018", "papers by NAME" become :class:`Filters`
applied inside the search (the same as ``--filter`` or the UI's dropdowns), and the words that
said them are taken out of the search query (the word "oral" would otherwise pull papers about
oral speech). "highest-rated papers on X" asks for the relevant papers sorted by mean reviewer
rating. The rules are patterns over the question's words, written for the phrasings researchers
use (``tests/data/dev_conference.jsonl`` holds them); a word that is only a topic ("poster
generation", "reinforcement learning" without "area") is never read as a filter.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from rag.filters import FilterError, Filters
from rag.filters import fold as fold_text

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
                         r"(oral|spotlight)\s+presentations?|(?:the\s+)?(orals|spotlights)\b)",
                         re.I)
_TIER_WORD = {"oral": "oral", "orals": "oral", "spotlight": "spotlight", "spotlights": "spotlight",
              "poster": "poster", "posters": "poster", "rejected": "rejected",
              "withdrawn": "withdrawn", "accepted": "accepted"}
# "rated 6 or higher", "rating >= 6", "with a mean rating above 5.5", "scored at least 8"
_RATING = re.compile(
    r"\b(?:(?:with\s+)?(?:an?\s+)?(?:mean\s+|average\s+|reviewer\s+)?(?:rating|score)s?|rated|scored)"
    r"\s*(?:of\s+)?(>=|<=|>|<|=|≥|≤|at least|at most|above|over|below|under|greater than|"
    r"more than|higher than|less than|lower than|of at least|no less than|no more than)?\s*"
    r"(\d{1,2}(?:\.\d{1,2})?)(?![\d.])(?:\s*(?:/|out of)\s*10)?(\s+or\s+(?:higher|more|above|better|greater|"
    r"lower|less|below|worse))?(?:\s+and\s+(?:up|above))?", re.I)
_OPS = {">=": ">=", "≥": ">=", "at least": ">=", "of at least": ">=", "no less than": ">=",
        "<=": "<=", "≤": "<=", "at most": "<=", "no more than": "<=", ">": ">", "above": ">",
        "over": ">", "greater than": ">", "more than": ">", "higher than": ">", "<": "<",
        "below": "<", "under": "<", "less than": "<", "lower than": "<", "=": "="}
# "in 2018", "from ICLR 2018", "ICLR 2018 papers"
_YEAR = re.compile(r"\b(?:(?:in|from|at|of|during)\s+(?:ICLR\s+)?|ICLR\s+)((?:19|20)\d\d)\b", re.I)
# "papers by Yoshua Bengio", "work from Sergey Levine", "authored by Chelsea Finn"
_AUTHOR = re.compile(rf"\b(?:{_PAPERS}\s+(?:written\s+|authored\s+)?(?:by|from)|authored\s+by|"
                     r"written\s+by)\s+((?:[A-Z][\w'.\-]*\.?\s+){0,3}[A-Z][\w'\-]+)", re.U)
# "highest-rated papers on X", "top rated", "best-scored", "sorted by rating"
_SORT = re.compile(r"\b(?:(?:highest|best|top|most\s+highly)[-\s]+(?:rated|scored|reviewed)|"
                   r"highest\s+(?:mean\s+|average\s+)?(?:ratings?|scores?)|"
                   r"(?:sorted|ranked|ordered)\s+by\s+(?:(?:mean|average|reviewer)\s+)?"
                   r"(?:ratings?|scores?))\b", re.I)
# "in the optimization area", "area: learning theory", "primary area reinforcement learning"
_AREA = re.compile(r"\b(?:(?:in|from|of|within)\s+(?:the\s+)?)?(?:(?:primary\s+)?area\s*[:=]?\s*"
                   r"(?P<after>[\w ,&()./-]{3,80}?)(?=[?.!;]|$|\s+(?:area|with|that|which|rated|"
                   r"and\s+(?:rated|with)))|(?P<before>[\w ,&()./-]{3,80}?)\s+(?:primary\s+)?"
                   r"(?:area|track|category)\b)", re.I)
#: Longest author name read from a question (the longest in ICLR 2018's list is 31 chars).
MAX_AUTHOR_CHARS = 80
#: Share of a question's letters outside the Latin script above which it is read as written in
#: another language (a Chinese question with "GRPO" in it is 4 Latin letters of 10).
FOREIGN_SHARE = 0.3
LANGUAGE_NOTE = ("This index's models read English: a question in another language is matched "
                 "only by its Latin-script words{terms}. Ask in English for a full search.")


@dataclass
class Intent:
    """What a question asks of the list. ``filters`` were read from its words (``phrases``
    are those words, as typed); ``query`` is the question without them (what to search);
    ``query`` may hold no topic at all ("How many oral papers are there?" -> "How many
    papers?"; "papers by Yoshua Bengio" -> ""): see :func:`has_topic`.
    ``sort`` is ``"rating"`` for "highest-rated ..." questions, else ``""``; ``foreign`` is
    True for a question in another language, ``query`` then holding only its Latin-script
    words (may be empty)."""

    question: str
    query: str
    filters: Filters = field(default_factory=Filters)
    phrases: list[str] = field(default_factory=list)
    sort: str = ""
    foreign: bool = False

    @property
    def language_note(self) -> str:
        """The note a question in another language gets ("" for English)."""
        if not self.foreign:
            return ""
        terms = f" (here: {', '.join(self.query.split())})" if self.query else ""
        return LANGUAGE_NOTE.format(terms=terms)


#: Words that ask for papers or counts without naming a topic (stemmed, as BM25 sees them).
_NO_TOPIC = frozenset("how mani number count total paper work submiss articl studi list show "
                      "give find tell me all ani there which what are were is was the in of "
                      "accept conferenc index corpus iclr year public entri".split())


def has_topic(query: str) -> bool:
    """True when ``query`` (an :attr:`Intent.query`) names something to search for beyond
    "how many papers" / "list the papers"."""
    from rag.lexical import query_terms

    return bool(set(query_terms(query)) - _NO_TOPIC)


def fold(text: str) -> str:
    """:func:`rag.filters.fold` without punctuation: lower-case words without accents,
    single-spaced (for matching area names)."""
    return " ".join(re.findall(r"[a-z0-9]+", fold_text(text)))


def foreign_share(question: str) -> float:
    """Share of the question's letters that are not Latin script (0.0 for no letters)."""
    letters = [c for c in question if c.isalpha()]
    if not letters:
        return 0.0
    other = sum(1 for c in letters if not unicodedata.name(c, "LATIN").startswith("LATIN"))
    return other / len(letters)


def match_area(text: str, areas: list[str]) -> str | None:
    """The area of ``areas`` that ``text`` names: equal after :func:`fold`, or the area's name
    up to its first comma or bracket ("applications to robotics" for "applications to robotics,
    autonomy, planning"), or the area contains ``text`` as whole words ("computer vision",
    "physical sciences") when only one area does."""
    want = fold(text)
    if len(want) < 3:
        return None
    want = re.sub(r"^(?:the|a|an)\s+", "", want)
    for area in areas:
        if fold(area) == want or fold(re.split(r"[,(]", area)[0]) == want:
            return area
    inside = [a for a in areas if re.search(rf"\b{re.escape(want)}\b", fold(a))]
    return inside[0] if len(inside) == 1 else None


def read(question: str, *, areas: list[str] = ()) -> Intent:
    """The :class:`Intent` of ``question``; ``areas`` are the index's primary areas (an area
    is a filter only when the question says "area"/"track"/"category" next to its name)."""
    values: dict[str, list[str]] = {}
    phrases: list[str] = []
    spans: list[tuple[int, int]] = []

    def take(m: re.Match, key: str, value: str, start: int | None = None, end: int | None = None):
        if value not in values.setdefault(key, []):
            values[key].append(value)
        a, b = (m.start() if start is None else start), (m.end() if end is None else end)
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
    for m in _RATING.finditer(question):
        op = _OPS.get((m.group(1) or "").lower(), "")
        tail = (m.group(3) or "").lower()
        if not op:
            op = ">=" if any(w in tail for w in ("higher", "more", "above", "better", "greater")) \
                else "<=" if tail else ">="
        take(m, "rating", f"{op}{m.group(2)}")
    for m in _YEAR.finditer(question):
        take(m, "year", m.group(1))
    for m in _AUTHOR.finditer(question):
        if len(m.group(1)) <= MAX_AUTHOR_CHARS:
            take(m, "author", m.group(1).strip(), m.start(), m.end())
    if areas:
        for m in _AREA.finditer(question):
            text = m.group("after") or m.group("before") or ""
            words = text.split()
            for i in range(len(words)):  # the longest tail of the words before "area" that names one
                area = match_area(" ".join(words[i:]), areas)
                if area:
                    start = m.start("before") + text.index(words[i]) if m.group("before") else m.start()
                    lead = re.search(r"\b(?:in|from|of|within)\s+(?:the\s+)?$", question[:start], re.I)
                    start = lead.start() if lead else start
                    take(m, "primary_area", area, start, m.end())
                    break
    sort = ""
    for m in _SORT.finditer(question):
        sort = "rating"
        spans.append((m.start(), m.end()))
    query = _without(question, spans) if spans else question
    filters = Filters()
    for key, vs in values.items():
        for v in vs:
            try:  # parsed like --filter, so as_strings() gives the canonical form (rating>=6)
                filters = filters.merged(Filters.parse([f"{key}{v}" if key == "rating"
                                                        else f"{key}={v}"]))
            except FilterError:
                pass  # words that looked like a filter but are not one: searched as words
    intent = Intent(question, query, filters, phrases, sort)
    if foreign_share(question) > FOREIGN_SHARE:
        intent.foreign = True
        intent.query = " ".join(re.findall(r"[A-Za-z][A-Za-z0-9.+-]*[A-Za-z0-9+]|[A-Za-z]{2,}",
                                           intent.query))
    return intent


_DANGLING = re.compile(r"(?:\s+|^)(?:and|or|with|that|which|are|were|was|is|in|from|of|within|the|"
                       r"by|at|among|as|an?|got|been|have|has)\s*([?.!]?)$", re.I)


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the character ``spans`` removed, spaces tidied and words left dangling at
    the end dropped ("papers on LLM agents were?" -> "papers on LLM agents?")."""
    keep = [True] * len(text)
    for a, b in spans:
        for i in range(a, b):
            keep[i] = False
    out = "".join(c if k else " " for c, k in zip(text, keep))
    out = re.sub(r"\s+([?.!,;:])", r"\1", re.sub(r"\s{2,}", " ", out)).strip()
    out = re.sub(r"^[,;:]\s*", "", out)
    while _DANGLING.search(out):
        out = _DANGLING.sub(r"\1", out).strip()
    return out
