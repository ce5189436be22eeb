"""The fixed ways :class:`rag.retrieve.retriever.Retriever` combines its channels' scores: the
convex combination of z-scores (:func:`zfusion`, ``settings.fusion = "fixed"``, and the seed of
the feedback query), weighted reciprocal rank fusion (:func:`rrf`, kept for comparison) and the
papers a question names put above the rest (:func:`put_named_first`). The learned fusion is
:mod:`rag.retrieve.fusion`.
"""

from __future__ import annotations

import numpy as np

from rag.types import Ranking


def rrf(rankings: list[Ranking], weights: list[float], k: float = 60.0) -> dict[str, float]:
    """Weighted reciprocal rank fusion: ``score(d) = sum_i w_i / (k + rank_i(d))`` (ranks from 1;
    papers absent from a ranking get nothing from it). Cormack et al., SIGIR 2009, with k=60."""
    fused: dict[str, float] = {}
    for ranking, w in zip(rankings, weights):
        for r, pid in enumerate(ranking.ids, start=1):
            fused[pid] = fused.get(pid, 0.0) + w / (k + r)
    return fused


def _z(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return 0.0, 1.0
    sd = float(arr.std())
    return float(arr.mean()), sd if sd > 1e-9 else 1.0


def zfusion(dense: Ranking, lexical: Ranking, lexical_weight: float = 0.8,
            lexical_all: dict[str, float] | None = None) -> dict[str, float]:
    """Fused score per candidate paper: ``z_dense + lexical_weight * z_bm25``.

    z-scores use the mean and standard deviation of each channel's candidate scores. A paper
    absent from the dense candidates gets the lowest candidate similarity. ``lexical_all`` gives
    exact BM25 scores of papers outside the BM25 pool (the dense candidates); without it they
    count as 0.
    """
    mu_d, sd_d = _z(dense.scores)
    mu_l, sd_l = _z(lexical.scores)
    d = dict(zip(dense.ids, dense.scores))
    lx = dict(zip(lexical.ids, lexical.scores))
    if lexical_all:
        lx = {**lexical_all, **lx}
    floor = min(dense.scores) if dense.scores else 0.0
    fused = {}
    for pid in set(d) | set(lx):
        fused[pid] = (d.get(pid, floor) - mu_d) / sd_d + lexical_weight * (lx.get(pid, 0.0) - mu_l) / sd_l
    return fused


def put_named_first(fused: dict[str, float], named: list[str], bm25_top: list[str],
                    prf_top: list[str]) -> tuple[dict[str, float], dict]:
    """``fused`` with the papers the question names (:meth:`rag.retrieve.named.NamedPapers.named`) above every other
    paper, in fused order among themselves; returns it and the meta it adds (``named``). Not
    when every channel puts one paper first (the fused top is BM25's top ``bm25_top`` and the
    feedback dense channel's ``prf_top``) and the question does not name it: a name the question
    shares with other papers ("PnP", "GRACE") then loses to the paper it describes (issue 21:
    3 of 1,150 dev questions; then the meta says ``named_overruled``)."""
    if not named:
        return fused, {}
    lead = max(fused, key=fused.get) if fused else None
    if lead is not None and lead not in named and bm25_top == [lead] and prf_top == [lead]:
        return fused, {"named_overruled": named}
    fused = dict(fused)
    top = max(fused.values(), default=0.0)
    low = min(fused.values(), default=0.0) - 1.0
    ranked = sorted(named, key=lambda pid: fused.get(pid, low), reverse=True)
    for r, pid in enumerate(ranked):
        fused[pid] = top + 1.0 + 0.01 * (len(ranked) - r)
    return fused, {"named": ranked}
