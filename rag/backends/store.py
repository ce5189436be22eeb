"""The vector store: a thin wrapper over one Chroma collection of chunks that owns the
collection's whole lifecycle (ARCHITECTURE.md, Seams and habit 14).

Embedded (``chromadb.PersistentClient`` under the index directory) by default, or a Chroma server
(``chromadb.HttpClient``) when ``settings.chroma_url`` is set. In server mode only the chunks live
on the server (collection ``paperchat-<index name>``); the catalog, the BM25 index and the manifest
stay in the local index directory.

Server timeouts: chromadb's HTTP client has none (``httpx.Client(timeout=None)``, chromadb 1.5), so
a server that accepts connections but never answers would hang every call. Before creating the
client, a ``GET /api/v2/heartbeat`` with :data:`CONNECT_TIMEOUT_S` checks the server; then the
client's session gets :data:`CONNECT_TIMEOUT_S` to connect and ``timeout_s`` (default
:data:`REQUEST_TIMEOUT_S`) per request. A server that is down, hung, or goes away mid-session
raises :class:`BackendUnavailableError` within those bounds, never a hang or a raw httpx error.

The store owns the collection's lifecycle: opening or creating it, writing, updating metadata,
deleting papers, paging through it (:meth:`ChromaStore.pages`) and dropping it all go through
:class:`ChromaStore`'s methods; no other module reaches its Chroma client or collection. The
directory and collection name of an index come from :mod:`rag.paths` (opened by
:mod:`index.reader`).

The collection uses cosine space,
so Chroma's distance ``d`` is ``1 - cosine similarity``; :meth:`ChromaStore.query` returns the
similarity. Chunk ids are ``<paper id>#<n>``; each chunk's metadata holds ``paper_id``, ``n``
and the filterable paper fields (``status``, ``primary_area``, ``venue``, ``year``, ``accepted``,
``oral``, ``kw_<keyword>`` flags).
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from rag import offline
from rag.errors import BackendUnavailableError, IndexNotFoundError
from rag.paths import EMBEDDED_COLLECTION as COLLECTION
from rag.types import chunk_id, chunk_number, paper_of

log = logging.getLogger(__name__)

#: Seconds to open a connection to a Chroma server (and for the startup heartbeat).
CONNECT_TIMEOUT_S = 5.0
#: Seconds one request to a Chroma server may take (a 5,000-chunk upsert takes ~1 s here).
REQUEST_TIMEOUT_S = 30.0


class CollectionMissingError(IndexNotFoundError, KeyError):
    """The index's collection is not in the store (``create=False``). Also a ``KeyError``."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


#: HNSW candidate list size at query time (Chroma's default: 100; hnswlib uses max(ef, n)).
#: Measured against exact search on the 19,630-paper index (33,214 chunks), 154 dev questions
#: (``paperchat bench query`` prints it as ``ann_recall``): recall of the 200 nearest chunks
#: 0.905 at the default, 0.962 at 400, 0.988 at 800, 0.997 at 1,600; of the 20 nearest papers
#: 0.975 (worst question 0.55) at the default and 0.997 (worst 0.80) at 800. A bare 200-chunk
#: query then costs about 7 ms instead of 5; ``paperchat bench query`` median 23 ms instead of 19.
EF_SEARCH = 800


@dataclass
class ChunkMatch:
    """One chunk returned by a query; ``similarity`` is the cosine similarity in [-1, 1]."""

    chunk_id: str
    paper_id: str
    similarity: float


def _server_down(url: str, exc: BaseException | str, timeout_s: float) -> BackendUnavailableError:
    reason = exc if isinstance(exc, str) else (f"{type(exc).__name__}: {exc}" if str(exc)
                                                else type(exc).__name__)
    return BackendUnavailableError(
        f"the Chroma server at {url} did not answer within {timeout_s:g} s ({reason}); start it "
        "(chroma run --path DIR --port PORT) or unset PAPERCHAT_CHROMA_URL to use the embedded "
        "store")


def heartbeat(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Check that a Chroma server answers ``GET /api/v2/heartbeat`` within ``timeout_s`` seconds
    (standard library, no proxy).

    Raises:
        BackendUnavailableError: refused, silent past the timeout, or not a Chroma server.
    """
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise BackendUnavailableError(f"PAPERCHAT_CHROMA_URL must look like http://host:port, "
                                      f"got {url!r}")
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = cls(u.hostname, u.port or (443 if u.scheme == "https" else 8000), timeout=timeout_s)
    try:
        conn.request("GET", u.path.rstrip("/") + "/api/v2/heartbeat")
        resp = conn.getresponse()
        body = resp.read(1000)
    except (OSError, http.client.HTTPException) as exc:
        raise _server_down(url, exc, timeout_s) from None
    finally:
        conn.close()
    try:
        ok = resp.status == 200 and "nanosecond heartbeat" in json.loads(body)
    except (ValueError, TypeError):
        ok = False
    if not ok:
        raise _server_down(url, f"HTTP {resp.status} without a Chroma heartbeat: is this a "
                                "Chroma server?", timeout_s)


def _client(path: Path | None, url: str | None, timeout_s: float = REQUEST_TIMEOUT_S):
    offline.enforce()
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if url:
        from urllib.parse import urlparse

        heartbeat(url, min(CONNECT_TIMEOUT_S, timeout_s))
        u = urlparse(url)
        with _guard(url, timeout_s):
            client = chromadb.HttpClient(host=u.hostname or "127.0.0.1", port=u.port or 8000,
                                         ssl=u.scheme == "https", settings=chroma_settings)
        _set_timeouts(client, timeout_s)
        return client
    assert path is not None
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings)


def _set_timeouts(client, timeout_s: float) -> None:
    """Give the HTTP client's httpx session finite timeouts (chromadb leaves them at None).

    Reaches into ``client._server._session`` (chromadb 1.x); if a later chromadb moves it, only
    the startup heartbeat bounds the wait, which a test notices (tests/test_faults.py).
    """
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))


@contextlib.contextmanager
def _guard(url: str | None, timeout_s: float):
    """Turn a Chroma server's transport failures into :class:`BackendUnavailableError`
    (embedded mode: no-op)."""
    if not url:
        yield
        return
    import httpx

    try:
        yield
    except httpx.TransportError as exc:  # connect/read timeouts, refused, reset, protocol
        raise _server_down(url, exc, timeout_s) from None
    except ValueError as exc:
        # chromadb: "Could not connect to a Chroma server. Are you sure it is running?"
        if "connect" in str(exc).lower():
            raise _server_down(url, exc, timeout_s) from None
        raise


class ChromaStore:
    """Chunks of one index in a Chroma collection.

    Args:
        path: directory for the embedded store (ignored when ``url`` is given).
        url: Chroma server URL; the collection is then named ``<collection>`` on that server.
        collection: collection name (one per index when sharing a server).
        create: create the collection when missing (index builds) or not (queries).
        timeout_s: seconds per request to a Chroma server (connecting: at most
            :data:`CONNECT_TIMEOUT_S`).
    Raises:
        BackendUnavailableError: the Chroma server does not answer within the timeouts (here or
            from any later method).
        CollectionMissingError: ``create`` is False and the collection does not exist (a
            ``KeyError`` and an ``IndexNotFoundError``).
    """

    def __init__(self, path: Path | None, *, url: str | None = None, collection: str = COLLECTION,
                 create: bool = True, metadata: dict[str, Any] | None = None,
                 timeout_s: float = REQUEST_TIMEOUT_S):
        self._url = url
        self._timeout_s = timeout_s
        self._collection = collection
        self._client = _client(path, url, timeout_s)
        if create:
            with self._guarded():
                self._col = self._client.get_or_create_collection(
                    collection, configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}},
                    metadata=metadata or None, embedding_function=None)
        else:
            try:
                with self._guarded():
                    self._col = self._client.get_collection(collection, embedding_function=None)
            except BackendUnavailableError:
                raise
            except Exception as exc:
                where = f"on the Chroma server at {url}" if url else f"in {path}"
                hint = ("was it built embedded (without --chroma-url)? Otherwise rebuild it "
                        "with paperchat index PATH --name NAME --chroma-url URL" if url else
                        "was it built on a Chroma server? Then pass the same --chroma-url (or "
                        "PAPERCHAT_CHROMA_URL); otherwise rebuild it with paperchat index PATH "
                        "--name NAME")
                raise CollectionMissingError(
                    f"the index's chunks (collection {collection!r}) are not {where}; {hint}"
                ) from exc
        self._raise_ef_search()

    def _raise_ef_search(self) -> None:
        """Give a collection made before :data:`EF_SEARCH` existed (Chroma's default is 100) the
        wider search. ``ef_search`` is one of the settings Chroma lets a collection change; the
        change applies from the next query. A store that cannot be written (read-only index
        directory) keeps its old value, with a warning."""
        try:
            current = ((self._col.configuration_json or {}).get("hnsw") or {}).get("ef_search")
            if current is not None and current < EF_SEARCH:
                with self._guarded():
                    self._col.modify(configuration={"hnsw": {"ef_search": EF_SEARCH}})
        except BackendUnavailableError:
            raise
        except Exception as exc:  # noqa: BLE001 - a narrower search is still a search
            log.warning("could not raise the collection's HNSW ef_search to %d: %s", EF_SEARCH, exc)

    def _guarded(self):
        return _guard(self._url, self._timeout_s)

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self._col.metadata or {})

    def count(self) -> int:
        """Number of chunks stored."""
        with self._guarded():
            return int(self._col.count())

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]]) -> None:
        """Insert or replace chunks; ``embeddings`` shape (len(ids), dim) float32."""
        if len(ids):
            with self._guarded():
                self._col.upsert(ids=list(ids), embeddings=np.asarray(embeddings, dtype=np.float32),
                                 documents=list(documents), metadatas=list(metadatas))

    def delete_papers(self, paper_ids: Sequence[str]) -> None:
        """Delete every chunk of the given papers (whatever their count)."""
        ids = list(paper_ids)
        for i in range(0, len(ids), 500):
            with self._guarded():
                self._col.delete(where={"paper_id": {"$in": ids[i:i + 500]}})

    def paper_chunk_ids(self, paper_ids: Sequence[str]) -> list[str]:
        """Ids of every stored chunk of the given papers (one ``get`` on the ``paper_id``
        metadata; in no particular order)."""
        with self._guarded():
            return list(self._col.get(where={"paper_id": {"$in": list(paper_ids)}},
                                      include=[])["ids"])

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Replace metadata keys of stored chunks (vectors and texts unchanged). Chroma merges
        the new metadata into the old: a key given as None is deleted."""
        if len(ids):
            with self._guarded():
                self._col.update(ids=list(ids), metadatas=list(metadatas))

    def drop(self) -> None:
        """Delete this store's collection and every chunk in it. An embedded store's Chroma
        systems are then forgotten (chromadb caches one per path in-process and would otherwise
        keep serving the deleted collection). The store is unusable afterwards."""
        with self._guarded():
            self._client.delete_collection(self._collection)
        if not self._url:
            try:
                from chromadb.api.client import SharedSystemClient

                SharedSystemClient.clear_system_cache()
            except ImportError:  # pragma: no cover - older chromadb
                pass

    def pages(self, include: list[str], page: int = 5000) -> Iterator[dict[str, Any]]:
        """The whole collection, ``page`` chunks per ``get``: dicts with ``ids`` plus the
        ``include`` fields (``embeddings``, ``documents``, ``metadatas``), as Chroma returns
        them; the last page may be empty."""
        offset = 0
        while True:
            with self._guarded():
                got = self._col.get(include=include, limit=page, offset=offset)
            yield got
            if len(got["ids"]) < page:
                return
            offset += page

    def chunk_counts(self) -> dict[str, int]:
        """Chunks stored per paper id (reads metadata only)."""
        counts: dict[str, int] = {}
        for got in self.pages(["metadatas"]):
            for m in got["metadatas"] or []:
                pid = m["paper_id"]
                counts[pid] = counts.get(pid, 0) + 1
        return counts

    def query(self, embedding: np.ndarray, n: int, where: dict[str, Any] | None = None
              ) -> list[ChunkMatch]:
        """The ``n`` chunks nearest to ``embedding`` (shape (dim,)), best first, restricted by a
        Chroma ``where`` filter on chunk metadata."""
        n = min(n, self.count())
        if n <= 0:
            return []
        with self._guarded():  # no metadata: the paper id is in the chunk id, and fetching
            # 200 chunks' metadata tripled the query's time (17 vs 6 ms at 33k chunks)
            res = self._col.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)],
                                  n_results=n, where=where or None, include=["distances"])
        return [ChunkMatch(cid, paper_of(cid), 1.0 - float(dist))
                for cid, dist in zip(res["ids"][0], res["distances"][0])]

    def all_embeddings(self) -> tuple[list[str], np.ndarray]:
        """Every chunk id and vector, shape (n_chunks, dim) float32 (for exact-search checks)."""
        ids: list[str] = []
        rows: list[np.ndarray] = []
        for got in self.pages(["embeddings"]):
            ids += got["ids"]
            if len(got["ids"]):
                rows.append(np.asarray(got["embeddings"], dtype=np.float32))
        return ids, (np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32))

    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk id (missing ids are absent from the result)."""
        if not ids:
            return {}
        with self._guarded():
            got = self._col.get(ids=list(ids), include=["embeddings"])
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(got["ids"], got["embeddings"])}

    def paper_vectors(self, paper_ids: Sequence[str], n_chunks: Mapping[str, int]
                      ) -> dict[str, np.ndarray]:
        """Stored chunk vectors of each given paper: shape (n_chunks, dim) float32, rows in chunk
        order (papers without chunks are absent). ``n_chunks`` (paper id -> chunk count, from the
        catalog) names the chunk ids, so they are fetched by id: about 2x faster than a
        ``paper_id`` filter."""
        ids = [chunk_id(pid, i) for pid in paper_ids for i in range(n_chunks.get(pid, 0))]
        if not ids:
            return {}
        with self._guarded():
            got = self._col.get(ids=ids, include=["embeddings"])
        rows: dict[str, list[tuple[int, np.ndarray]]] = {}
        for cid, emb in zip(got["ids"], got["embeddings"]):
            rows.setdefault(paper_of(cid), []).append((chunk_number(cid),
                                                       np.asarray(emb, dtype=np.float32)))
        # in chunk order, as index.dense.DenseView gives them: means agree to the bit
        return {pid: np.stack([e for _, e in sorted(v, key=lambda x: x[0])])
                for pid, v in rows.items()}

    def best_similarity(self, embedding: np.ndarray, paper_ids: Sequence[str],
                        n_chunks: Mapping[str, int]) -> dict[str, float]:
        """Best chunk cosine similarity of each given paper to ``embedding`` (shape (dim,)),
        computed from the stored vectors (for papers a dense query did not return)."""
        q = np.asarray(embedding, dtype=np.float32)
        return {pid: float((vecs @ q).max())
                for pid, vecs in self.paper_vectors(paper_ids, n_chunks).items()}
