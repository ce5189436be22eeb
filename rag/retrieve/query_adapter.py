"""A linear query adapter: the question's embedding moved into the space of the lists' papers.

``q' = normalise(q + q W)``, with ``W`` (dim x dim, float32) trained by
``bench/train_query_adapter.py`` on queries written from the lists themselves (each paper's
keywords, the dev-train authors' TL;DRs with coined names masked, the labelled ``topics_a``
survey and terse questions) against the papers' vectors, with an in-batch-free softmax over
every paper of the index (InfoNCE, van den Oord et al. 2018, temperature 0.05) and an L2
penalty that keeps ``W`` near 0 (the identity map). The documents' vectors are untouched, so an
index needs no re-embedding: the adapter is the query side of "Embedding Adapters" (Chroma
technical report, 2024), which trains such a map from relevance judgements.

Only a *topic* search uses it (``topical=True``: a survey's search and the pool the relevance
model orders; the relevance model's own features, and so counts, filters and trends, keep the
plain query), and there only the dense search that feeds the fusion (the feedback query of :meth:`rag.retrieve.retriever.Retriever._rankings`); the
question's own cosine, on which refusal is calibrated, stays the embedder's. A search for one
paper from its description keeps the plain query: on ``shared/eval/dev_hard.jsonl`` the adapter
moved 3 of 45 specific questions' papers from first to second (r@1 0.867 -> 0.800) and one
follow-up's out of the top 5, as it pulls a query towards its topic and away from its details. It is applied only to an embedder whose ``name`` and
``dim`` the weights were trained for (``all-MiniLM-L6-v2``, 384); any other (the tests' fakes)
gets its own vector back.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

#: The shipped weights (``W`` float16, ``embedder`` name), written by bench/train_query_adapter.py.
WEIGHTS = Path(__file__).with_name("query_adapter.npz")


class QueryAdapter:
    """``W`` of shape (dim, dim) for the embedder called ``embedder``; see the module docstring."""

    def __init__(self, W: np.ndarray, embedder: str):
        self.W = np.asarray(W, dtype=np.float32)
        self.embedder = embedder
        self.dim = self.W.shape[0]

    def fits(self, embedder) -> bool:
        """Whether ``embedder`` (anything with ``name`` and ``dim``) is the one trained for."""
        return getattr(embedder, "name", None) == self.embedder and getattr(embedder, "dim", None) == self.dim

    def adapt(self, qvec: np.ndarray) -> np.ndarray:
        """``normalise(q + q W)`` for one vector (dim,) or rows (n, dim); float32, unit rows."""
        q = np.asarray(qvec, dtype=np.float32)
        y = q + q @ self.W
        n = np.linalg.norm(y, axis=-1, keepdims=True)
        return (y / np.where(n > 0, n, 1.0)).astype(np.float32)

    def save(self, path: Path = WEIGHTS) -> None:
        """Write ``W`` as float16 and the embedder's name (about 0.3 MB for dim 384)."""
        np.savez_compressed(path, W=self.W.astype(np.float16), embedder=np.array(self.embedder))


@lru_cache(maxsize=1)
def shipped() -> QueryAdapter | None:
    """The adapter of :data:`WEIGHTS`, or None when the file is absent."""
    if not WEIGHTS.exists():
        return None
    with np.load(WEIGHTS) as z:
        return QueryAdapter(z["W"], str(z["embedder"]))
