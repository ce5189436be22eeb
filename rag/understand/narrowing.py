"""A turn that narrows the papers in hand in so many words: "narrow it
down to the ones about X", "only the ones on X", "which ones focus on X?" (:func:`narrows`,
:func:`about_topic`): a pick among the previous answer's papers, the topic decided by meaning in
:mod:`rag.chat.operations`; :func:`reread` applies it to a reading
(:func:`rag.understand.read.assemble`).
"""

from __future__ import annotations

import re

from rag.understand import topics
from rag.understand.plan import UNSURE_BELOW


#: "narrow it down to the ones about X", "only the ones on diffusion models", "keep just those
#: that use LoRA", "filter them to papers proposing a benchmark": the papers in hand narrowed,
#: said without "of these" (in fresh conversations these were read as new searches for the
#: words "narrow it down to ..." or as a plain list of every paper).
_NARROW = re.compile(
    r"^\W*(?:(?:so|and|ok(?:ay)?|now|then|please|pls|can\s+you|could\s+you)\W+)*"
    r"(?:(?:narrow(?:\s+(?:it|them|this|these|those|that|the\s+(?:list|results?|set)))?"
    r"(?:\s+down(?:\s+to)?|\s+to)|(?:keep|show(?:\s+me)?|give\s+me|list|leave(?:\s+me)?)"
    r"\s+(?:only|just)|(?:only|just)(?:\s+(?:keep|show(?:\s+me)?|list))?|"
    r"filter(?:\s+(?:it|them|this|these|those|the\s+(?:list|results?)))?(?:\s+down)?\s+(?:to|for))"
    r"\s+(?:the\s+|those\s+)?(?:ones|one|papers?|works?|those)|"
    # "keep the ones that ...", "show me those on ..." (not "give me papers similar to X")
    r"(?:keep|show(?:\s+me)?|give\s+me|list|leave(?:\s+me)?)\s+(?:the\s+ones|ones|those)|"
    # "ones that handle meshes", "those on robotics" (not "the ones like X": its neighbours)
    r"(?:the\s+)?ones(?!\s+(?:like|similar))|those(?=\s+(?:that|which|about|on|using|with)\b))\b"
    r"(?:\s+(?:that|which|who)\b)?(?:\s+(?:are|is|were|was|r)\b)?\s*", re.I)
_SET = r"(?:these|those|them|the\s+\w+)"
#: "which of these", "which ones", "which are", "any of them": the opening of a question asked
#: of the papers in hand ("what about X?" asks X instead; "which papers are about X?" and "any
#: papers on X?" may ask the whole list).
_WHICH_OF = re.compile(rf"^\W*(?:(?:so|and|ok|okay|now)\W+)?(?:(?:which|what(?!\s+about\b))\s+"
                       rf"(?:ones?\s+(?:of\s+{_SET}\s+)?|(?:papers?\s+)?of\s+{_SET}\s+|"
                       rf"(?=(?:are|is|were|was|r)\s))|any\s+(?:(?:ones?|papers?)\s+)?of\s+"
                       rf"{_SET}\s+|any\s+ones?\s+)(?:(?:are|is|were|was|r)\s+)?", re.I)
#: "which" (not "what are typical topics there?", a question about the papers in hand).
_WHICH_WORD = re.compile(r"\bwhich\b", re.I)
#: Words that ask what a paper is about (the topic then decided by meaning:
#: :mod:`rag.retrieve.membership`); "use", "propose" ask for a term instead.
_ABOUT = re.compile(r"(?:really\s+|actually\s+|mainly\s+|mostly\s+|specifically\s+)?"
                    r"(?:about|on|in\s+(?:the\s+)?|related\s+to|concerned\s+with|"
                    r"deal(?:s|ing)?\s+with|focus(?:ed|es|ing)?\s+on|cent(?:er|re)d\s+on|"
                    r"address(?:es|ing)?|tackl(?:e|es|ing)|target(?:s|ing)?|regarding)\s*"
                    r"(?<=\s)(?P<topic>.+?)\W*$", re.I)


def narrows(text: str) -> bool:
    """True when ``text`` narrows the papers in hand in so many words ("narrow it down to the
    ones about X", "only the ones on X", "keep just those that use Y")."""
    m = _NARROW.match(text)
    return bool(m) and bool(text[m.end():].strip(" ?.!"))


def narrowed(text: str) -> str:
    """``text`` less its narrowing words (:func:`narrows`): "narrow it down to ones proposing a
    benchmark" -> "proposing a benchmark"; ``text`` itself when it has none."""
    m = _NARROW.match(text)
    rest = text[m.end():].strip() if m else ""
    return rest or text


def about_topic(text: str) -> str:
    """The topic a turn asks of the papers in hand by meaning ("which of these are about X?",
    "which ones focus on X?", "only the ones on X"), or ``""`` (a term asked, "which use X?",
    or no such turn)."""
    m = _NARROW.match(text) or _WHICH_OF.match(text)
    if not m:
        return ""
    a = _ABOUT.match(text, m.end())
    if not a:
        return ""
    topic = a.group("topic").strip()
    return topic if topics.has_topic(topic) else ""


#: Operations a narrowing turn keeps ("how many of them are about X" counts).
_KEPT_OPS = ("count", "sort", "extreme", "compare", "cite", "authors", "number")


def reread(text: str, papers: str, op: str, aspect: str, confidence: float, has_previous: bool,
           has_filters: bool, asks_rating: bool, positions: bool = False
           ) -> tuple[str, str, str, float]:
    """``(papers, op, aspect, confidence)`` of a reading of ``text`` once a narrowing said in
    so many words is applied: a pick among the papers in hand (fresh conversations had read
    these as new searches for the words "narrow it down to ...", a list of every paper or a
    description of them all). Also, from fresh conversations read in the browser: positions
    said (``positions``: "give me the bibtex for the first two") pick among the papers under
    discussion, which had been cited all five; "which papers study X?" and "I'm looking for
    work on X" ask for a topic's papers (:func:`rag.understand.topics.asks_for_papers`), where
    the reading had looked up one paper."""
    if positions and has_previous and papers == "focus" and op in ("cite", "describe", "compare"):
        return "positions", op, aspect, confidence
    if papers == "search" and op == "lookup" and topics.asks_for_papers(text):
        return papers, "survey", aspect, confidence
    if has_previous and not has_filters and op not in _KEPT_OPS and not asks_rating and \
            (narrows(text) or about_topic(text)):
        return "previous", "lookup", "", max(confidence, UNSURE_BELOW)
    if papers == "previous" and op in ("survey", "describe") and not aspect and \
            (m := _WHICH_OF.match(text)) and _WHICH_WORD.search(m.group(0)) and \
            not has_filters and not asks_rating:
        # "which ones prove lower bounds and not just upper bounds?": which of them say so, not
        # what each abstract says (read as a survey of the 15, it quoted every one)
        return papers, "lookup", aspect, confidence
    return papers, op, aspect, confidence
