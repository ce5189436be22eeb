"""The vector store: a thin wrapper over one Chroma collection of chunks (STYLE.md 1).

Embedded (``chromadb.PersistentClient`` under the index directory) by default, or a Chroma server
(``chromadb.HttpClient``) when ``settings.chroma_url`` is set. The collection uses cosine space,
so Chroma's distance ``d`` is ``1 - cosine similarity``; :meth:`ChromaStore.query` returns the
similarity. Chunk ids are ``<paper id>#<n>``; each chunk's metadata holds ``paper_id``, ``n``
and the filterable paper fields (``status``, ``primary_area``, ``venue``, ``year``, ``accepted``,
``oral``, ``kw_<keyword>`` flags).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rag import offline
from rag.errors import BackendUnavailableError

COLLECTION = "chunks"


@dataclass
class ChunkMatch:
    """One chunk returned by a query; ``similarity`` is the cosine similarity in [-1, 1]."""

    chunk_id: str
    paper_id: str
    similarity: float


def _client(path: Path | None, url: str | None):
    offline.enforce()
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if url:
        from urllib.parse import urlparse

        u = urlparse(url)
        try:
            return chromadb.HttpClient(host=u.hostname or "127.0.0.1", port=u.port or 8000,
                                       ssl=u.scheme == "https", settings=chroma_settings)
        except Exception as exc:  # chromadb raises ValueError/ConnectionError variants
            raise BackendUnavailableError(f"the Chroma server at {url} did not answer ({exc}); "
                                          "start it or unset PAPERCHAT_CHROMA_URL") from None
    assert path is not None
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings)


class ChromaStore:
    """Chunks of one index in a Chroma collection.

    Args:
        path: directory for the embedded store (ignored when ``url`` is given).
        url: Chroma server URL; the collection is then named ``<collection>`` on that server.
        collection: collection name (one per index when sharing a server).
        create: create the collection when missing (index builds) or not (queries).
    Raises:
        BackendUnavailableError: the Chroma server does not answer.
        KeyError: ``create`` is False and the collection does not exist.
    """

    def __init__(self, path: Path | None, *, url: str | None = None, collection: str = COLLECTION,
                 create: bool = True, metadata: dict[str, Any] | None = None):
        self._client = _client(path, url)
        if create:
            self._col = self._client.get_or_create_collection(
                collection, configuration={"hnsw": {"space": "cosine"}},
                metadata=metadata or None, embedding_function=None)
        else:
            try:
                self._col = self._client.get_collection(collection, embedding_function=None)
            except Exception as exc:
                raise KeyError(collection) from exc

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self._col.metadata or {})

    def count(self) -> int:
        """Number of chunks stored."""
        return int(self._col.count())

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]]) -> None:
        """Insert or replace chunks; ``embeddings`` shape (len(ids), dim) float32."""
        if len(ids):
            self._col.upsert(ids=list(ids), embeddings=np.asarray(embeddings, dtype=np.float32),
                             documents=list(documents), metadatas=list(metadatas))

    def delete_papers(self, paper_ids: Sequence[str]) -> None:
        """Delete every chunk of the given papers (whatever their count)."""
        ids = list(paper_ids)
        for i in range(0, len(ids), 500):
            self._col.delete(where={"paper_id": {"$in": ids[i:i + 500]}})

    def chunk_counts(self) -> dict[str, int]:
        """Chunks stored per paper id (reads metadata only)."""
        counts: dict[str, int] = {}
        offset, page = 0, 5000
        while True:
            got = self._col.get(include=["metadatas"], limit=page, offset=offset)
            metas = got["metadatas"] or []
            for m in metas:
                pid = m["paper_id"]
                counts[pid] = counts.get(pid, 0) + 1
            if len(metas) < page:
                return counts
            offset += page

    def query(self, embedding: np.ndarray, n: int, where: dict[str, Any] | None = None
              ) -> list[ChunkMatch]:
        """The ``n`` chunks nearest to ``embedding`` (shape (dim,)), best first, restricted by a
        Chroma ``where`` filter on chunk metadata."""
        n = min(n, self.count())
        if n <= 0:
            return []
        res = self._col.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)],
                              n_results=n, where=where or None, include=["metadatas", "distances"])
        out = []
        for cid, meta, dist in zip(res["ids"][0], res["metadatas"][0], res["distances"][0]):
            out.append(ChunkMatch(cid, meta["paper_id"], 1.0 - float(dist)))
        return out

    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk id (missing ids are absent from the result)."""
        if not ids:
            return {}
        got = self._col.get(ids=list(ids), include=["embeddings"])
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(got["ids"], got["embeddings"])}
