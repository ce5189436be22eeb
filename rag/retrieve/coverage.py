"""Retrieval over an index whose dense vectors are still being filled in.

``paperchat index`` writes the catalog and BM25 of every paper first and embeds the papers
afterwards, in batches (:mod:`index.build`, :mod:`index.dense`). Until the fill ends, the dense
channel covers the embedded papers only (an :class:`index.dense.DenseView`, refreshed as
batches are committed) while BM25 covers them all. :class:`rag.retrieve.retriever.PartialRetriever` fuses
what exists with the two parts of this module:

- **On-demand scores** (:class:`OnDemand`, :func:`score_unembedded`): the
  :data:`ONDEMAND_PAPERS` best BM25 papers that have no vector yet are chunked and embedded at
  query time, exactly as the build will embed them (the same chunks, the same model and
  variant; the embedder runs each text alone, so the vectors are the ones the build stores),
  and cached. Those papers, the ones most likely to be shown, get their real best-chunk cosine:
  in the fusion, in ``Hit.dense`` and in the best cosine that refusal is decided on
  (:mod:`rag.compose.refusal`: "not in this corpus" needs the best cosine under 0.30), which so keeps its
  calibration at any coverage instead of refusing whatever the first batches do not hold.
- **Fusion of the unscored** (:func:`fuse_unscored`): z-score fusion
  (:func:`rag.retrieve.combine.zfusion`) gives a paper missing from the dense candidates the lowest
  candidate's cosine. For an embedded paper that is right (it is not among the nearest chunks,
  so it is at most that similar), but for a paper with no vector its cosine is unknown, not
  low, and the floor (about two standard deviations below the candidates' mean) would rank it
  under embedded papers with far weaker BM25 evidence. A paper whose cosine is unknown is fused
  on its BM25 evidence alone, on the same scale: ``(1 + w) * z(bm25)`` (:data:`IMPUTE`; the
  weights renormalised over the channels that exist, as in a convex combination with a missing
  channel), so its rank is what its words earn. The learned fusion (:mod:`rag.retrieve.fusion`, the
  default) gets the same through its inputs (:func:`impute_unscored`): such a paper's missing
  cosines are set to the ones whose z-scores equal its BM25 z-score.

:func:`coverage_line` is what answers say about it ("dense 41% · about 9 min left").
"""

from __future__ import annotations

import copy
import threading
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from index.dense import DenseProgress, DenseView
    from rag.backends.embedder import Embedder
    from rag.types import Paper

#: Papers without vectors embedded at query time per search: the best BM25 papers among them.
#: 10 papers are ~17 chunks: about 0.2 s on 2 cores with VNNI, 0.4 s on the AVX2 path.
ONDEMAND_PAPERS = 10
#: Seconds between refreshes of the UI header's coverage line while the index is embedded.
HEADER_EVERY_S = 5.0
#: How a paper whose cosine is unknown (no vector, not scored on demand) is fused: "lexical"
#: ``(1 + w) z_bm25`` (chosen, see the module doc), "neutral" ``w z_bm25`` (the dense channel at
#: its mean), "floor" (what zfusion gives a paper outside the dense candidates).
IMPUTE = "lexical"


class OnDemand:
    """Chunk vectors computed at query time for papers not embedded yet, kept in the view
    (:meth:`index.dense.DenseView.remember`).

    Args:
        view: the index's :class:`index.dense.DenseView`.
        embedder: the index's embedder (its own variant).
        papers: paper id -> Paper of the catalog.
        chunking: ``(chunk_tokens, chunk_overlap)`` the index was built with.
        chunker: :func:`index.chunking.paper_chunks` (passed in: the query side reads the
            index through :mod:`index.reader`).
    """

    def __init__(self, view: DenseView, embedder: Embedder, papers: Mapping[str, Paper],
                 chunking: tuple[int, int], chunker: Callable):
        self.view = view
        self.embedder = embedder
        self.papers = papers
        self.chunking = chunking
        self.chunker = chunker
        self._tokenizer = None
        self._lock = threading.Lock()

    def vectors(self, paper_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Chunk vectors (shape (chunks, dim) float32) of each given paper: the view's, else
        computed now (one embedder call for all of them) and remembered."""
        have = self.view.paper_vectors(paper_ids)
        need = [pid for pid in dict.fromkeys(paper_ids) if pid not in have and pid in self.papers]
        if not need:
            return have
        with self._lock:  # a fast tokenizer's truncation is state: one copy, one user at a time
            if self._tokenizer is None:
                self._tokenizer = copy.deepcopy(self.embedder.tokenizer)
            tokens, overlap = self.chunking
            chunks = {pid: self.chunker(self.papers[pid], self._tokenizer, max_tokens=tokens,
                                        overlap=overlap) for pid in need}
        texts = [c.text for pid in need for c in chunks[pid]]
        vecs = self.embedder.embed(texts)
        i = 0
        for pid in need:
            n = len(chunks[pid])
            if n:
                have[pid] = vecs[i:i + n]
                self.view.remember(pid, have[pid])
            i += n
        return have


def score_unembedded(full: np.ndarray, ids: Sequence[str], embedded: set[str],
                     m: int = ONDEMAND_PAPERS) -> list[str]:
    """The ``m`` papers with the highest positive BM25 score (``full``: every paper's, row order
    ``ids``; 0 outside the filters) that are not in ``embedded``, best first."""
    out: list[str] = []
    for i in np.argsort(-full, kind="stable"):
        if full[i] <= 0 or len(out) >= m:
            break
        if ids[i] not in embedded:
            out.append(ids[i])
    return out


def merge_scores(ids: list[str], scores: list[float], extra: Mapping[str, float]
                 ) -> tuple[list[str], list[float]]:
    """A dense ranking (``ids`` best first with their ``scores``) with the cosines ``extra`` of
    papers scored on demand: those at least as similar as the ranking's last paper join it (a
    whole index would have had them among its candidates); the others stay out, as they would
    have. Returns the new ``(ids, scores)``, best first."""
    floor = min(scores) if scores else -np.inf
    merged = dict(zip(ids, scores))
    for pid, s in extra.items():
        if pid not in merged and s >= floor:
            merged[pid] = s
    order = sorted(merged, key=lambda pid: (-merged[pid], pid))
    return order, [merged[pid] for pid in order]


def fuse_unscored(fused: dict[str, float], lexical_scores: Sequence[float],
                  bm25_of: Callable[[str], float], weight: float, known: set[str],
                  how: str = IMPUTE) -> dict[str, float]:
    """``fused`` (:func:`rag.retrieve.combine.zfusion` scores) with every paper whose cosine is not
    ``known`` fused on BM25 alone (:data:`IMPUTE`, see the module doc); ``lexical_scores`` are
    the BM25 pool's scores (the z-score's population, as in zfusion) and ``bm25_of`` a paper's
    exact BM25 score. Changed in place and returned."""
    if how == "floor":
        return fused
    arr = np.asarray(lexical_scores, dtype=np.float64)
    mu = float(arr.mean()) if arr.size else 0.0
    sd = float(arr.std()) if arr.size else 1.0
    sd = sd if sd > 1e-9 else 1.0
    scale = (1.0 + weight) if how == "lexical" else weight
    for pid in fused:
        if pid not in known:
            fused[pid] = scale * (bm25_of(pid) - mu) / sd
    return fused


def impute_unscored(ch, known: set[str], how: str = IMPUTE):
    """The learned fusion's inputs (:class:`rag.retrieve.fusion.Channels`, issue 21) with every candidate
    whose cosine is not ``known`` (no vector, not scored on demand) given, in each vector channel
    (``dense``, ``prf``, ``paper``), the raw score whose z-score over that channel's pool equals
    its BM25 z-score (:data:`IMPUTE` "lexical"), or the pool's mean ("neutral"): as
    :func:`fuse_unscored` does for the fixed fusion, its vector channels then say what its words
    say, where :func:`rag.retrieve.fusion._zscores` would give it the pool's lowest cosine ("floor",
    unchanged). A real score is never replaced: only NaN entries of unknown papers. Changed in
    place (its feature cache cleared) and returned."""
    if how == "floor" or not len(ch):
        return ch
    unknown = np.array([pid not in known for pid in ch.ids], dtype=bool)
    if not unknown.any():
        return ch
    from rag.retrieve.fusion import _zscores

    zb = _zscores(ch.bm25, ch.bm25_pool, len(ch)) if how == "lexical" else np.zeros(len(ch))
    for name in ("dense", "prf", "paper"):
        values, pool = getattr(ch, name), getattr(ch, f"{name}_pool")
        if values is None or pool is None or not len(pool):
            continue
        pool = np.asarray(pool, dtype=np.float64)
        mu, sd = float(pool.mean()), float(pool.std())
        sd = sd if sd > 1e-9 else 1.0
        values = np.array(values, dtype=np.float64)
        fill = unknown & np.isnan(values)
        values[fill] = mu + sd * zb[fill]
        setattr(ch, name, values)
    ch._cache.clear()
    return ch


def coverage_line(progress: DenseProgress | None) -> str:
    """What an answer says about an index still being embedded: ``dense 41% · about 9 min
    left (papers not embedded yet are found by their words)``; ``""`` for a whole index."""
    if progress is None or progress.complete:
        return ""
    return f"{progress.line()} (papers not embedded yet are found by their words)"


def progress_of(retriever) -> DenseProgress | None:
    """``retriever.coverage()``: None for a whole index (or a retriever that cannot tell)."""
    coverage = getattr(retriever, "coverage", None)
    return coverage() if callable(coverage) else None


def annotate(answer, retriever) -> None:
    """Record on ``answer`` (a :class:`rag.types.Answer`) how far the dense fill of the index
    it was answered from is: :attr:`Answer.dense_coverage` (the ``ask --json`` key) and
    :attr:`Answer.coverage` (its line); nothing for a whole index."""
    progress = progress_of(retriever)
    if progress is not None:
        answer.dense_coverage = progress.fraction
        answer.coverage = coverage_line(progress)
