"""Which of the papers in hand a turn's terms pick ("which of these use quantization?", "keep
the ones using rewiring or virtual nodes"): :func:`pick_by_terms`.
"""

from __future__ import annotations

import re
from typing import Sequence

from rag.types import Hit

#: A term of the turn picks among the papers in hand when at most this share of them has it (a
#: term all of them have, "LLM" after a search on LLMs, picks none).
PICK_MAX_SHARE = 0.6
#: What separates the alternatives of a turn ("rewiring or virtual nodes", "adapters, LoRA").
_ALTERNATIVES = re.compile(r"\bor\b|,|/|\(|\)", re.I)


def pick_by_terms(text: str, hits: Sequence[Hit], generic: frozenset[str] = frozenset()
                  ) -> tuple[list[int], set[str]]:
    """``(chosen, terms)``: the 1-based numbers of ``hits`` whose title or abstract has every
    term of some alternative of ``text`` (its parts between "or", commas, slashes and brackets;
    BM25's stemmed terms less ``generic``), in order, and the terms that picked them. A term
    more than :data:`PICK_MAX_SHARE` of the papers have is dropped from its alternative ("graph"
    after a list on graph transformers); an alternative with a term none has picks none (before,
    any one term picked: "virtual nodes" picked every paper saying "node"). ``([], set())``
    when no alternative picks."""
    from rag.backends.lexical import query_terms
    from rag.compose.quotes import question_terms

    terms = [set(query_terms(f"{h.paper.title} {h.paper.abstract}")) for h in hits]
    share = {}

    def common(t: str) -> bool:
        if t not in share:
            share[t] = sum(t in have for have in terms)
        return share[t] > PICK_MAX_SHARE * len(hits)

    chosen, used = set(), set()
    for part in _ALTERNATIVES.split(text):
        need = {t for t in question_terms(part) - generic if not common(t)}
        if not need:
            continue
        these = {n for n, have in enumerate(terms, start=1) if need <= have}
        if these:
            chosen |= these
            used |= need
    return sorted(chosen), used
