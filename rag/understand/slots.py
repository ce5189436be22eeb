"""Slots of a turn: the parts of its words that name values, read by patterns over closed word
classes (decisions, rating comparisons, years, area names, ordinals, numbers, paper names) and
never deciding what the turn asks: that is :mod:`rag.understand.turn_reader`'s job (a model learned from
labelled turns), and :mod:`rag.understand.read` puts both into a :class:`rag.understand.plan.Plan`.

This module reads the filters; the other slot families live beside it:

* **Filters said in words** (:func:`read_filters`): "oral papers on diffusion", "rejected papers
  about X", "withdrawn", "accepted", "in the optimization area", "rated 6 or higher", "in 2018",
  "papers by NAME" become :class:`Filters` (the same as ``--filter`` or the UI's dropdowns), and
  the words that said them are taken out of the search query (the word "oral" would otherwise
  pull papers about oral speech). A word that is only a topic ("poster generation",
  "reinforcement learning" without "area") is never read as a filter. Their word patterns are
  :mod:`rag.understand.filter_words`, the area names :mod:`rag.understand.area_words`.
* **Positions** (:func:`rag.understand.position_words.positions`): "the second one", "[3]", "#2",
  "paper 4", "the last one", "the first two", "the top three".
* **A number of papers** (:func:`rag.understand.position_words.count_asked`): "top three", "the 5 best".
* **Names** (:func:`rag.understand.mentions.name_words`): CamelCase, acronyms and names with
  digits ("StepORLM", "RFTHGS", "Llama3"); the retriever resolves them to papers.
* **Comparison sides** (:func:`rag.understand.mentions.comparison_sides`): "how does A differ
  from B", "compare A with B", "A vs B".
* **A new subject** (:func:`rag.understand.topics.new_subject`): "And for vision transformers?".
* **Direction** (:func:`rag.understand.rating_order.ascending`): "lowest rated", "worst".
* **Another language** (:func:`foreign_share`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Sequence

from rag.filters import FilterError, Filters
from rag.understand.area_words import (SUBFIELD, TRACK_VERB, _AREA, _AREA_END, _AREA_NAMED, _AREA_PAPERS,
                                       _IN_AREA, _content_words, match_area)
from rag.understand.filter_words import (EXCLUDING, MAX_AUTHOR_CHARS, SHORT_YEAR, _AFTER_THRESHOLD,
                                         _AUTHOR,
                                         _AUTHOR_LOWER, _AUTHOR_OWNER, _BARE_RATING, _DROP_OPS,
                                         _DROP_RATING, _GOT_RATING, _ONLY_RATING, _OPS, _PLUS,
                                         _RATING, _RATING_AVERAGE, _RATING_WORD, _SIDED, _SORT,
                                         _STATUS_ASKED, _TIER_AFTER, _TIER_ALONE, _TIER_BEFORE,
                                         _TIER_NOUN, _TIER_PASSIVE, _TIER_WORD, _TIERS_LISTED,
                                         _WORKSHOP, _YEAR,
                                         _side)
from rag.understand.topics import has_topic


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


def foreign_share(question: str) -> float:
    """Share of the question's letters that are not Latin script (0.0 for no letters)."""
    letters = [c for c in question if c.isalpha()]
    if not letters:
        return 0.0
    other = sum(1 for c in letters if not unicodedata.name(c, "LATIN").startswith("LATIN"))
    return other / len(letters)


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


#: A year glued to the conference's name ("iclr2018", "ICLR-2026", "iclr'18" is not read).
_GLUED_YEAR = re.compile(r"\biclr[-_]?((?:19|20)\d\d)\b", re.I)
#: Capitalised words a year after them still filters by: the venue, and a sentence's first word
#: ("In 2018", "From 2018 on").
_YEAR_OWNERS = frozenset("iclr in from since of for at before after during and or the year "
                         "published accepted submitted only just papers which what any all "
                         "list show find give some are were vs versus".split())


#: Decisions said as included in a total, not as a filter ("counting rejected and withdrawn",
#: "including the withdrawn ones").
_COUNTING = re.compile(r"\b(?:counting|including|incl\.?|inclusive\s+of)\s+(?:the\s+|all\s+)?"
                       r"(?:(?:rejected|withdrawn|rejects|accepted|orals?|posters?|spotlights?)"
                       r"(?:\s*,\s*|\s+and\s+|\s+or\s+|\s*&\s*|\s+)?(?:ones\s+)?)+", re.I)


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
    asked += [m.span() for m in _COUNTING.finditer(question)]  # "counting rejected and withdrawn"

    excluding = [m.end() for m in EXCLUDING.finditer(question)]

    def take(m: re.Match, key: str, value: str, start: int | None = None, end: int | None = None):
        a, b = (m.start() if start is None else start), (m.end() if end is None else end)
        if key == "status" and any(a < e and s < b for s, e in asked):
            return  # "is it an oral?": asked about, not a filter
        if key == "status" and any(e <= a and a - e < 60 and not re.search(r"[()?!;.]",
                                                                            question[e:a])
                                   for e in excluding):
            spans.append((a, b))  # "not counting workshop invites": left out, not asked for
            return
        if key == "status" and value in ("accepted", "rejected", "withdrawn") and \
                _OTHER_VENUE.match(question, b):
            return  # "also accepted at CVPR?": another venue's decision, not this list's
        if value not in values.setdefault(key, []):
            values[key].append(value)
        spans.append((a, b))
        phrases.append(question[a:b].strip())

    for m in _TIER_BEFORE.finditer(question):
        # keep the noun ("oral papers on X" searches "papers on X")
        g = 1 if m.group(1) else 2
        take(m, "status", _TIER_WORD[m.group(g).lower()], m.start(g), m.end(g))
    for m in _TIER_AFTER.finditer(question):
        take(m, "status", _TIER_WORD[(m.group(2) or m.group(1)).lower()], m.start(1), m.end())
    if not _TIER_AFTER.search(question):
        for m in _TIER_PASSIVE.finditer(question):
            take(m, "status", _TIER_WORD[m.group(1).lower()], m.start(), m.start(1) + len(m.group(1)))
    for m in _TIER_ALONE.finditer(question):
        word = next(g for g in m.groups() if g)
        take(m, "status", _TIER_WORD[word.lower()])
    for m in _WORKSHOP.finditer(question):
        take(m, "status", "workshop")
    if "status" not in values:
        for m in _TIER_NOUN.finditer(question):
            take(m, "status", _TIER_WORD[m.group(1).lower()], m.start(1), m.end(1))
    for m in _TIERS_LISTED.finditer(question):  # "orals + posters", "orals and spotlights"
        for word in (m.group(1), m.group(2)):
            take(m, "status", _TIER_WORD[word.lower()])
    tiers = [v for v in values.get("status", []) if v in ("oral", "spotlight", "poster")]
    if "accepted" in values.get("status", []) and len(tiers) >= 2:
        # "accepted papers (orals + posters)": the tiers name what accepted means
        values["status"] = [v for v in values["status"] if v not in tiers]
    elif "accepted" in values.get("status", []) and len(values["status"]) > 1:
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
        # "7+" with a rating word in the turn, or said of the papers ("6+ ones only"), or the
        # whole request ("only 6+", "just 7+ pls", "6+?")
        if float(m.group(1)) <= 10 and not any(a <= m.start() < b for a, b in spans) and (
                _RATING_WORD.search(question) or re.match(r"\s*(?:ones?|papers?|pprs?|only)\b",
                                                          question[m.end():], re.I) or
                (re.search(r"(?:^\W*|\b(?:only|just|keep|show)\s+)$", question[:m.start()], re.I)
                 and re.match(r"\s*(?:[^\w\s]|$|(?:only|pls|please)\b)", question[m.end():],
                              re.I))):
            take(m, "rating", f">={m.group(1)}")
    for m in _GLUED_YEAR.finditer(question):  # "iclr2018", "ICLR-2026"
        take(m, "year", m.group(1))
    for m in SHORT_YEAR.finditer(question):  # "orals in '18", "iclr18", "ICLR-26"
        take(m, "year", "20" + (m.group(1) or m.group(2)))
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
            name = re.sub(r"['’]s$", "", m.group(1).strip())  # "Pieter Abbeel's group"
            if len(name) <= MAX_AUTHOR_CHARS and "author" not in values:
                take(m, "author", name if pattern is not _AUTHOR_LOWER else name.title(),
                     m.start(), m.end())
    if areas:
        # (quotes read as spaces, the length kept: "list 'generative models' as their area")
        for m in _AREA.finditer(re.sub(r"(?<!\w)['‘\"“]|['’\"”](?!\w)", " ", question)):
            if TRACK_VERB.search(question[:m.end()]):
                continue  # "how do models represent and track ...": a verb, not a track
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
                if area and SUBFIELD.search(question[:start]):
                    break  # "offline RL papers": a topic within the area, searched as words
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


#: What a filter word cut from the end of a turn leaves of its frame: "among papers only",
#: "(of the) papers only", "only", "at ICLR" (its year cut).
_LEFT_FRAME = re.compile(r"[,;]?\s*(?:\b(?:among|of|from|within|in|for)\s+(?:the\s+|those\s+|all\s+)?"
                         r"(?:papers|submissions|ones)(?:\s+only)?|\bonly|\b(?:at|in|from|for)\s+"
                         r"(?:the\s+)?iclr)\s*([?.!]?)$", re.I)


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
    # "graph neural nets, among accepted papers only" less "accepted": the frame it sat in too
    return _LEFT_FRAME.sub(r"\1", out).strip() or out
