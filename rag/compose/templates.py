"""The template sentences an extractive answer is joined from (:mod:`rag.compose.extractive`,
and the catalog's answers in :mod:`rag.conference.facets` and :mod:`rag.chat.operations`): the
one-line direct answer, a quoted sentence, a list line, a heading and a note, each an
:class:`rag.types.AnswerSentence` of its kind, and a paper's title as answers show it.
"""

from __future__ import annotations

from typing import Sequence

from rag.compose import citations as cit
from rag.compose.quotes import Candidate
from rag.text import normalise
from rag.types import AnswerSentence, Hit


def title(hit: Hit) -> str:
    """The paper's title as shown in answers: normalised (LaTeX -> Unicode), brackets defused."""
    return cit.defuse(normalise(hit.paper.title)) or hit.id


# -- sentences ------------------------------------------------------------------------------------
def direct(text: str, numbers: Sequence[int]) -> AnswerSentence:
    """The one-line direct answer (template text around titles, citing ``numbers``)."""
    return AnswerSentence(text, list(numbers), kind="direct")


def quote(c: Candidate) -> AnswerSentence:
    """A quoted abstract sentence: ``“sentence” [n]``."""
    return AnswerSentence(f"“{c.text}” [{c.n}]", [c.n], kind="quote", quote=c.text)


def item(hit: Hit, n: int, c: Candidate | None, *, with_title: bool = True) -> AnswerSentence:
    """A list line: the paper's title (unless ``with_title`` is False: the line names the paper
    by its marker alone), its marker and (when given) one quoted sentence."""
    text = (f"{title(hit)} [{n}]" if with_title else f"[{n}]") + (f": “{c.text}”" if c else "")
    return AnswerSentence(text, [n], kind="item", quote=c.text if c else "")


def heading(text: str) -> AnswerSentence:
    """Template text that makes no claim ("Also relevant:")."""
    return AnswerSentence(text, [], kind="heading", support=1.0)


def note(text: str, numbers: Sequence[int] = ()) -> AnswerSentence:
    """A plain statement of what the abstracts cannot say (no claim about a paper's content)."""
    return AnswerSentence(text, list(numbers), kind="note", support=1.0)


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
