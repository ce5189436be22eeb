"""Rating words that are no filter: the direction of a rating order (:func:`ascending`: "lowest
rated", "worst"; "from best to worst" starts at the top), one paper at an end of it
(:func:`one_superlative`: "the worst of them?"), whether a turn has a word that can ask for a
rating order at all (:func:`orders_by_rating`), and questions about the ratings or the decision
of papers already in hand (:func:`asks_rating`: "what's its rating?"; :func:`asks_status`: "was
it an oral?").
"""

from __future__ import annotations

import re

from rag.understand.filter_words import _STATUS_ASKED
from rag.understand.topics import has_topic


#: Words that turn a rating order around: "lowest rated", "worst", "least".
_ASCENDING = re.compile(r"\b(?:lowest|worst|bottom|least|weakest|poorest|lower|ascending|"
                        r"increasing)\b", re.I)


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


# "what area is StepORLM in?", "which primary area does it belong to?", "area of [2]?": the
# primary area of papers in hand asked
_AREA_ASKED = re.compile(
    r"\b(?:what|which)(?:['’]?s|\s+is|\s+was)?\s+(?:the\s+)?(?:primary\s+)?(?:area|track|"
    r"category)\s+(?:(?:is|was|does|did)\s+)?(?:it|this|that|they|those|these|[\w.+-]+|"
    r"(?:the\s+)?[\w\s.+-]{1,60}?\s+paper)\s+(?:in|under|filed\s+(?:in|under)|belong\s+to|"
    r"submitted\s+(?:to|in|under)|from)\s*(?:[?.!]|$)|"
    r"\b(?:primary\s+)?(?:area|track)\s+(?:of|for)\s+(?:it|this|that|them|\[\d{1,2}\]|#\d{1,2}|"
    r"[\w.+-]+)\s*(?:[?.!]|$)|"
    r"\b(?:its|their|[\w.+-]+['’]s)\s+(?:primary\s+)?area\s*(?:[?.!]|$)|"
    r"\bwhat(?:['’]s|\s+is|\s+was)\s+the\s+(?:primary\s+)?area\s+of\s+(?!papers\b)"
    r"[^?.!]{1,90}[?.!]*\s*$", re.I)


def asks_area(text: str) -> bool:
    """True when ``text`` asks for the primary area of papers it points at or names ("what area
    is StepORLM in?", "its primary area?"), not for papers of an area."""
    return bool(_AREA_ASKED.search(text))


def asks_status(text: str) -> bool:
    """True when ``text`` asks for the decision of papers it points at ("was it an oral?",
    "2 and 4 are both orals?"), not for papers with that decision."""
    return bool(_STATUS_ASKED.search(text))


#: "from best to worst", "top to bottom", "highest first": the order named first is the start.
_DESCENDING_FIRST = re.compile(r"\b(?:best|highest|top|most|strongest|greatest|descending|"
                               r"decreasing)\b(?:[-\s]+\w+){0,2}?\s*(?:\bto\b|\bdown\s+to\b|-+>|→|=>|"
                               r"\bfirst\b)", re.I)
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
