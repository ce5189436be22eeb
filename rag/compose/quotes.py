"""Picking the abstract sentences an extractive answer quotes (:mod:`rag.compose.extractive`):
the sentences of a paper that may be quoted (:func:`quotable`), each scored by its relevance to
the question (:func:`relevance`, :func:`candidates`), and the best few of a paper
(:func:`best_quotes`).

Sentence relevance to the question (used to pick quotes)::

    relevance(q, s) = 0.5 * cos(q, s) + 0.5 * |terms(q) & terms(s)| / |terms(q)|

with the embedder's cosine and the question's BM25 terms minus words that talk about papers
(:data:`rag.compose.grounding.META_TERMS`): the same two signals, weighted the same way, as the grounding
score (:mod:`rag.compose.grounding`), pointed from the question to the sentence.

Quotes are exact: the sentence as :func:`rag.compose.grounding.abstract_sentences` cut it from the
normalised abstract, with citation-like brackets defused (``[9]`` -> ``(9)``) so they cannot be
read as our markers. Instruction-like sentences and sentences holding prompt scaffolding are
never quoted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from rag.backends.lexical import query_terms
from rag.compose import citations as cit
from rag.compose.compare import BOILERPLATE
from rag.compose.grounding import META_TERMS, abstract_sentences, embed_cached
from rag.compose.guards import leak_reason
from rag.text import normalise
from rag.types import Hit

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder

#: Weight of the cosine in :func:`relevance` (the rest is the question-term overlap).
COS_WEIGHT = 0.5
#: A second or third quote of a paper must reach this share of the paper's best relevance.
QUOTE_RELATIVE = 0.8
#: Added to the relevance of a sentence that states the paper's contribution ("we propose",
#: "our method", "in this paper": the strong cues of the table's Approach row, rag.compose.compare) when
#: picking quotes for lookups and descriptions: "the best paper and why, in its own words" should
#: say what the paper does, not only its motivation. 0.15 is about the gap between a paper's
#: motivation sentence and its approach sentence on the seed questions.
APPROACH_BONUS = 0.15
#: Taken off a background sentence (the abstract's first sentence, or one with the table's
#: strong Problem cues: "however", "existing", "challenge" ...) that states no contribution, in
#: the same lookups and descriptions: it says what others do, not why this paper matches.
BACKGROUND_PENALTY = 0.1
#: Relevance taken off a boilerplate sentence (:data:`rag.compose.compare.BOILERPLATE`: code release,
#: links), so it is quoted only when nothing else is left.
BOILERPLATE_PENALTY = 0.3
_QUESTION_WORDS = frozenset("which what how does do did papers paper work works method methods "
                            "approach approaches propos who whom whose index corpus list".split())


@dataclass
class Candidate:
    """An abstract sentence that may be quoted: hit number ``n`` (1-based), the exact sentence
    (``text``, brackets defused), its position in the abstract (``pos``) and its relevance to
    the question (``score``, see the module docstring)."""

    n: int
    text: str
    pos: int
    score: float


def question_terms(question: str) -> set[str]:
    """The question's stemmed BM25 terms without words about papers or questions."""
    return set(query_terms(question)) - META_TERMS - _QUESTION_WORDS


def quotable(paper) -> list[str]:
    """The paper's abstract sentences that may be quoted, in abstract order, brackets defused
    (instruction-like sentences and prompt scaffolding left out)."""
    return [cit.defuse(s) for s in abstract_sentences(paper) if not leak_reason(s)]


def candidates(question: str, hits: Sequence[Hit], embedder: Embedder,
               numbers: Sequence[int] | None = None, *, approach_bonus: float = 0.0,
               background_penalty: float = 0.0, results_bonus: float = 0.0,
               aspect: str = "") -> dict[int, list[Candidate]]:
    """Every quotable sentence of the hits numbered ``numbers`` (default all), scored by
    :func:`relevance` (plus ``approach_bonus`` for contribution sentences, minus
    ``background_penalty`` for background ones: :data:`APPROACH_BONUS`,
    :data:`BACKGROUND_PENALTY`; ``results_bonus`` for sentences with the table's strong results
    cues, when a follow-up asks for results; :data:`APPROACH_BONUS` for sentences that play the
    part of ``aspect`` limitations, datasets or metrics, :func:`rag.compose.aspects.role_score`), best
    first per paper. Keys are hit numbers (1-based)."""
    from rag.compose.compare import _CUES

    numbers = list(numbers) if numbers is not None else list(range(1, len(hits) + 1))
    per = {n: quotable(hits[n - 1].paper) for n in numbers}
    flat = [s for n in numbers for s in per[n]]
    scores = relevance(question, flat, embedder)
    scores = scores - np.array([BOILERPLATE_PENALTY if BOILERPLATE.search(s) else 0.0
                                for s in flat], dtype=np.float32)
    strong = _CUES["Approach"][0][0]
    if approach_bonus:
        scores = scores + np.array([approach_bonus if strong.search(s) else 0.0 for s in flat],
                                   dtype=np.float32)
    if results_bonus:
        results = _CUES["Evidence / results"][0][0]
        scores = scores + np.array([results_bonus if results.search(s) else 0.0 for s in flat],
                                   dtype=np.float32)
    if aspect in ("limitations", "datasets", "metrics"):
        from rag.compose.roles import MIN_ROLE, role_score

        scores = scores + np.array([APPROACH_BONUS if role_score(aspect, s, 0.5) >= MIN_ROLE
                                    else 0.0 for s in flat], dtype=np.float32)
    if background_penalty:
        problem = _CUES["Problem"][0][0]
        first = {sum(len(per[m]) for m in numbers[:i]) for i in range(len(numbers))}
        scores = scores - np.array([background_penalty if (j in first or problem.search(s))
                                    and not strong.search(s) else 0.0
                                    for j, s in enumerate(flat)], dtype=np.float32)
    out: dict[int, list[Candidate]] = {}
    i = 0
    for n in numbers:
        ss = per[n]
        cands = [Candidate(n, s, p, float(scores[i + p])) for p, s in enumerate(ss)]
        out[n] = sorted(cands, key=lambda c: (-c.score, c.pos))
        i += len(ss)
    return out


def relevance(question: str, sentences: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Relevance of each sentence to the question, shape (len(sentences),), float32 in [0, 1]
    for non-negative cosines (formula in the module docstring)."""
    if not sentences:
        return np.zeros(0, dtype=np.float32)
    q = embed_cached(embedder, [normalise(question)])[0]
    vecs = embed_cached(embedder, list(sentences))
    cos = vecs @ q
    qt = question_terms(question)
    lex = np.array([len(qt & set(query_terms(s))) / max(1, len(qt)) for s in sentences],
                   dtype=np.float32)
    return np.maximum(COS_WEIGHT * cos + (1 - COS_WEIGHT) * lex, 0.0).astype(np.float32)


def best_quotes(cands: Sequence[Candidate], k: int) -> list[Candidate]:
    """Up to ``k`` of a paper's candidates: its best, then others reaching
    :data:`QUOTE_RELATIVE` of the best score; returned in abstract order."""
    if not cands:
        return []
    top = cands[0].score
    chosen = [cands[0]] + [c for c in cands[1:k] if c.score >= QUOTE_RELATIVE * top]
    return sorted(chosen, key=lambda c: c.pos)
