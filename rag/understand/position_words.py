"""Positions and numbers in a turn: the previous answer's papers named by number
(:func:`positions`: "the second one", "[3]", "#2", "paper 4", "the last one", "the first two",
"the latter"), a number of papers asked for (:func:`count_asked`: "top three", "the 5 best"),
papers in the plural or singular, and words that point back at what came before ("both",
"of these", "in that area", "such papers": :func:`pair`, :func:`of_these`, :func:`same_area`,
:func:`refers_back`, :func:`points_at_topic`).
"""

from __future__ import annotations

import re


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


_PLURAL = re.compile(r"\b(?:papers|works|ones|submissions|articles|studies|entries)\b", re.I)
_SINGULAR = re.compile(r"\b(?:paper|work|one|submission|article|study|entry)\b(?!\s*s\b)", re.I)


def plural(text: str) -> bool:
    """True when ``text`` asks for papers in the plural ("the best-rated papers") and names no
    single one ("the best paper", "which one")."""
    return bool(_PLURAL.search(text)) and not _SINGULAR.search(text)


def singular(text: str) -> bool:
    """True when ``text`` names a single paper ("a paper", "which one", "the work")."""
    return bool(_SINGULAR.search(text))
