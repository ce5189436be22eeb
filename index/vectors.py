"""Paper-level vectors: one unit vector per paper, the L2-normalised mean of its chunk vectors.

A paper's chunks cover its title and its whole abstract (:mod:`index.chunking`: the title on
every chunk, overlapping windows), so their centroid stands for the paper as a whole. The map
(:mod:`index.layout`) lays these vectors out, "similar papers" ranks them by cosine similarity
(:meth:`rag.retrieve.retriever.Retriever.similar`), and retrieval may use them as a channel.

Storage: ``paper_vectors.npz`` in the index directory (:data:`rag.paths.VECTORS_FILE`), written
atomically: ids (sorted), vectors (float32, unit rows), each paper's text hash (the part of
:func:`index.catalog.content_hash` that the chunks depend on) and the catalog fingerprint it was
computed for. A build refreshes it before the map and the manifest, reusing the rows of papers
whose text did not change; an index built before this file existed gets it on first use.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from rag.paths import VECTORS_FILE, IndexPaths

if TYPE_CHECKING:
    from rag.backends.store import ChromaStore

#: Version of the file's layout; another version is recomputed.
FORMAT_VERSION = 1
#: Papers whose chunk vectors are fetched per store request (500 papers ~ 850 chunks).
VECTOR_BATCH = 500


@dataclass
class PaperVectors:
    """Paper vectors of one index.

    ``ids``: paper ids, the row order of ``vectors`` (sorted); ``vectors``: shape (n, dim)
    float32, L2-normalised rows, so a dot product is a cosine similarity; ``text_hashes``: each
    paper's text hash, same order; ``fingerprint``: the catalog fingerprint they were computed for.
    """

    ids: list[str]
    vectors: np.ndarray
    text_hashes: list[str]
    fingerprint: str

    def __post_init__(self) -> None:
        self._rows = {pid: i for i, pid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def row(self, paper_id: str) -> int | None:
        """Row of ``paper_id`` in :attr:`vectors`, or None when it has no vector."""
        return self._rows.get(paper_id)

    def take(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """``(ids that have a vector, their vectors)``, in the order of ``ids``; shape
        (found, dim) float32."""
        found = [pid for pid in ids if pid in self._rows]
        dim = self.vectors.shape[1] if self.vectors.ndim == 2 else 0
        if not found:
            return [], np.zeros((0, dim), dtype=np.float32)
        return found, self.vectors[[self._rows[pid] for pid in found]]


def from_store(store: ChromaStore, ids: Sequence[str], n_chunks: Mapping[str, int],
               batch: int = VECTOR_BATCH) -> tuple[list[str], np.ndarray]:
    """Each paper's L2-normalised mean chunk vector, read from ``store`` (a
    :class:`rag.backends.store.ChromaStore`) ``batch`` papers per request.

    Returns ``(ids found, vectors)``: vectors shape (len(ids found), dim) float32, rows in the
    order of ``ids``; papers with no stored chunk are left out.
    """
    found: list[str] = []
    rows: list[np.ndarray] = []
    for start in range(0, len(ids), batch):
        part = ids[start:start + batch]
        vecs = store.paper_vectors(part, n_chunks)
        for pid in part:
            v = vecs.get(pid)
            if v is None or not len(v):
                continue
            c = v.mean(axis=0)
            rows.append(c / (np.linalg.norm(c) or 1.0))
            found.append(pid)
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    return found, np.asarray(np.stack(rows), dtype=np.float32)


def save_vectors(index_dir: Path, pv: PaperVectors) -> None:
    """Write ``paper_vectors.npz`` in ``index_dir`` atomically (temporary file, then rename)."""
    path = IndexPaths(index_dir).vectors
    meta = {"format_version": FORMAT_VERSION, "fingerprint": pv.fingerprint}
    fd, tmp = tempfile.mkstemp(prefix=f".{VECTORS_FILE}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, ids=np.asarray(pv.ids, dtype=str),
                     vectors=np.asarray(pv.vectors, dtype=np.float32),
                     text_hashes=np.asarray(pv.text_hashes, dtype=str),
                     meta=np.asarray(json.dumps(meta)))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_vectors(index_dir: Path) -> PaperVectors | None:
    """The saved paper vectors of ``index_dir``; None when absent, unreadable or of another
    format."""
    try:
        with np.load(IndexPaths(index_dir).vectors, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("format_version") != FORMAT_VERSION:
                return None
            ids = [str(i) for i in data["ids"]]
            vectors = np.asarray(data["vectors"], dtype=np.float32)
            hashes = [str(h) for h in data["text_hashes"]]
        if len(vectors) != len(ids) or len(hashes) != len(ids):
            return None
        return PaperVectors(ids, vectors, hashes, str(meta["fingerprint"]))
    except Exception:  # noqa: BLE001 - OSError, ValueError, KeyError, zipfile.BadZipFile ...
        return None


def text_hash(content_hash: str) -> str:
    """The part of a catalog content hash (``text:metadata``) that a paper's chunks depend on."""
    return content_hash.split(":")[0]


def compute_vectors(store: ChromaStore, hashes: Mapping[str, str], n_chunks: Mapping[str, int],
                    fingerprint: str, old: PaperVectors | None = None,
                    log: Callable[[str], None] = lambda m: None) -> PaperVectors:
    """Paper vectors for every paper of ``hashes`` (paper id -> catalog content hash) that has
    stored chunks: rows of ``old`` are reused for papers whose text hash is unchanged, the
    others are read from ``store``."""
    ids = sorted(hashes)
    text = {pid: text_hash(h) for pid, h in hashes.items()}
    reuse: dict[str, np.ndarray] = {}
    if old is not None:
        for pid, h in zip(old.ids, old.text_hashes):
            if text.get(pid) == h:
                reuse[pid] = old.vectors[old.row(pid)]
    fetch = [pid for pid in ids if pid not in reuse]
    found, fetched = from_store(store, fetch, n_chunks) if fetch else ([], None)
    new = dict(zip(found, fetched)) if found else {}
    if fetch and len(fetch) != len(found):
        log(f"paper vectors: {len(fetch) - len(found)} papers have no stored chunks yet")
    kept = [pid for pid in ids if pid in reuse or pid in new]
    if not kept:
        return PaperVectors([], np.zeros((0, 0), dtype=np.float32), [], fingerprint)
    vectors = np.stack([reuse[pid] if pid in reuse else new[pid] for pid in kept])
    return PaperVectors(kept, vectors.astype(np.float32), [text[pid] for pid in kept], fingerprint)


def refresh_vectors(index_dir: Path, store: ChromaStore, catalog, fingerprint: str, *,
                    save: bool = True, log: Callable[[str], None] = lambda m: None
                    ) -> PaperVectors:
    """The paper vectors of ``index_dir`` brought up to its catalog (an
    :class:`index.catalog.Catalog` whose fingerprint is ``fingerprint``), saved unless ``save``
    is False (an index still being written), then returned."""
    old = load_vectors(index_dir)
    if old is not None and old.fingerprint == fingerprint:
        return old
    pv = compute_vectors(store, catalog.hashes(), catalog.chunk_counts(), fingerprint, old, log)
    if save:
        save_vectors(index_dir, pv)
    return pv
