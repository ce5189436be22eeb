"""The dense fill's batches: an index's chunk vectors, one file per committed batch, and the view
of them that a reader searches while the index is still being embedded.

A build (:func:`index.build.build_index`) writes the catalog and BM25 of every paper first, then
embeds the papers in batches of :data:`index.dense_fill.PAPERS_PER_STEP`. Each batch is committed in
three steps, in this order:

1. its file ``dense/batch-NNNNNN.npz`` (chunk ids, vectors float32 unit rows), written to a
   temporary name, flushed to disk and renamed (:func:`write_batch`);
2. its chunks in Chroma (:mod:`rag.backends.store`; a changed paper's old chunks deleted first);
3. one SQLite transaction in the catalog: the batch's ``dense_batches`` row and a ``dense`` row
   per paper (:meth:`index.catalog.Catalog.commit_dense`).

A reader sees a batch only through step 3, so it never sees half of one: a killed build leaves
at most a file that no row names (overwritten or removed by the next build) and chunks with no
``dense`` row (deleted by the next build before it embeds those papers again).

While the dense fill runs, readers do not touch Chroma (an embedded Chroma store is not made for
two processes, and a second process's queries lag behind the writer's HNSW index): they open a
:class:`DenseView`, which loads the committed batch files and searches them exactly (a matrix
product, ~5 ms for 33,000 chunks of 384 dimensions) and loads new batches as they are committed.
Once the manifest says the fill is complete (:func:`index.manifest.dense_complete`), readers open
Chroma again. Old indexes (built before the fill existed) have their vectors copied from Chroma
into batch files by their next build (:func:`backfill`).

:class:`DenseProgress` is what an index under construction says about itself: papers embedded,
the rate of the current build and the time left ("dense 41% · about 9 min left").
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from rag.backends.store import ChunkMatch
from rag.paths import IndexPaths
from rag.types import chunk_id, chunk_number, paper_of

if TYPE_CHECKING:
    from index.catalog import Catalog
    from rag.backends.store import ChromaStore
    from rag.types import Paper

_BATCH_FILE = re.compile(r"^batch-(\d+)\.npz$")
#: Papers whose vectors are copied from Chroma per batch file by :func:`backfill`.
BACKFILL_PAPERS = 500
#: Seconds between a view's checks for newly committed batches (one indexed SQLite query).
REFRESH_S = 1.0
#: A build that committed nothing for this long (seconds; or 20 batch intervals, if longer) is
#: taken as stopped: killed, or interrupted before it finished.
STALLED_S = 120.0


def batch_path(index_dir: Path, batch: int) -> Path:
    """``dense/batch-NNNNNN.npz`` of batch number ``batch`` (from 1)."""
    return IndexPaths(index_dir).dense / f"batch-{batch:06d}.npz"


def write_batch(index_dir: Path, batch: int, ids: Sequence[str], vectors: np.ndarray) -> None:
    """Write batch ``batch``'s file: chunk ``ids`` and their ``vectors`` (shape (len(ids), dim)
    float32), to a temporary file flushed to disk, then renamed over the final name."""
    path = batch_path(index_dir, batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, ids=np.asarray(list(ids), dtype=str),
                     vectors=np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_batch(index_dir: Path, batch: int) -> tuple[list[str], np.ndarray]:
    """Chunk ids and vectors (float32) of batch ``batch``'s file.

    Raises:
        OSError, ValueError: the file is missing or unreadable.
    """
    with np.load(batch_path(index_dir, batch), allow_pickle=False) as data:
        ids = [str(i) for i in data["ids"]]
        vectors = np.asarray(data["vectors"], dtype=np.float32)
    if len(vectors) != len(ids):
        raise ValueError(f"batch {batch}: {len(ids)} ids but {len(vectors)} vectors")
    return ids, vectors


def backfill(index_dir: Path, store: ChromaStore, catalog: Catalog,
             log: Callable[[str], None] = lambda m: None) -> int:
    """Copy the vectors of embedded papers that have no batch file (an index built before the
    dense fill existed) from ``store`` into new batch files, :data:`BACKFILL_PAPERS` papers per
    file, committed like the fill's own. Returns the number of papers copied."""
    todo = sorted(pid for pid, (_, batch) in catalog.embedded().items() if batch is None)
    if not todo:
        return 0
    hashes = catalog.hashes()
    counts = catalog.chunk_counts()
    batch = catalog.last_batch()
    for start in range(0, len(todo), BACKFILL_PAPERS):
        part = todo[start:start + BACKFILL_PAPERS]
        wanted = [chunk_id(pid, i) for pid in part for i in range(counts.get(pid, 0))]
        got = store.get_embeddings(wanted)
        ids = [cid for cid in wanted if cid in got]
        have = {paper_of(cid) for cid in ids}
        batch += 1
        write_batch(index_dir, batch, ids, np.stack([got[c] for c in ids]) if ids else
                    np.zeros((0, 0), np.float32))
        rows = [(pid, hashes[pid].split(":")[0], counts[pid]) for pid in part if pid in have]
        catalog.commit_dense(batch, rows, time.time())
        lost = [pid for pid in part if pid not in have]
        if lost:  # a row without chunks: embedded again by this build
            catalog.drop_dense(lost)
    log(f"copied the vectors of {len(todo)} papers from Chroma into {IndexPaths(index_dir).dense} "
        "(once, for an index built before the dense fill)")
    return len(todo)


def collect_garbage(index_dir: Path, catalog: Catalog) -> int:
    """Delete batch files (and their ``dense_batches`` rows) that no ``dense`` row points at any
    more (every paper in them was embedded again, or pruned), and leftover files of batches that
    were never committed. Returns the number of files deleted."""
    refs = catalog.batch_refs()
    committed = {b for b, *_ in catalog.batches()}
    unused = sorted(committed - set(refs))
    catalog.forget_batches(unused)
    gone = 0
    folder = IndexPaths(index_dir).dense
    for path in sorted(folder.glob("*")) if folder.is_dir() else []:
        m = _BATCH_FILE.match(path.name)
        if (m and int(m.group(1)) not in refs) or path.name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                path.unlink()
                gone += 1
    return gone


# --- progress -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DenseProgress:
    """How far an index's dense fill is.

    ``papers``: papers in the catalog; ``embedded``: those with their chunk vectors stored;
    ``rate``: papers per second of the build running now (None before its first batch);
    ``eta_s``: seconds left at that rate (None when unknown); ``running``: False when the build
    committed nothing for a long time (:data:`STALLED_S`): it was stopped and must be run again.
    """

    papers: int
    embedded: int
    rate: float | None = None
    eta_s: float | None = None
    running: bool = True

    @property
    def fraction(self) -> float:
        """Share of papers embedded, in [0, 1] (1.0 for an empty index)."""
        return self.embedded / self.papers if self.papers else 1.0

    @property
    def complete(self) -> bool:
        return self.embedded >= self.papers

    def line(self) -> str:
        """``dense 41% · about 9 min left`` (``dense 41% · estimating the time left`` before the
        first batch; ``dense 41% · paused: run paperchat index again to finish`` when stopped).
        The percentage is floored, so 100% means every paper."""
        pct = f"dense {math.floor(100 * self.fraction):.0f}%"
        if self.complete:
            return pct
        if not self.running:
            return f"{pct} · paused: run paperchat index again to finish"
        if self.eta_s is None:
            return f"{pct} · estimating the time left"
        return f"{pct} · about {_duration(self.eta_s)} left"


def _duration(seconds: float) -> str:
    """``40 s``, ``9 min``, ``1 h 20 min``."""
    if seconds < 60:
        return f"{max(5, round(seconds / 5) * 5):.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def progress(catalog: Catalog, state: Mapping[str, Any] | None,
             now: float | None = None) -> DenseProgress:
    """The :class:`DenseProgress` of an index from its catalog and the ``dense`` part of its
    manifest (``started_at``: Unix time the running build began its fill). The rate counts the
    papers committed since then: over the whole fill so far, so one slow batch does not make the
    estimate jump."""
    now = time.time() if now is None else now
    papers, embedded = catalog.coverage_counts()
    started = float((state or {}).get("started_at") or 0.0)
    mine = [(t, p) for _, p, _, t in catalog.batches() if t >= started] if started else []
    rate = eta = None
    last = max([t for t, _ in mine] + [started])
    if mine and last > started:
        rate = sum(p for _, p in mine) / (last - started)
        eta = (papers - embedded) / rate if rate > 0 else None
    interval = (last - started) / len(mine) if mine else 0.0
    running = bool(started) and now - last < max(STALLED_S, 20 * interval)
    return DenseProgress(papers, embedded, rate, eta, running)


# --- the view a reader searches -------------------------------------------------------------------
def _compare(op: str, have, want) -> bool:
    if op == "$eq":
        return have == want
    if op == "$ne":
        return have != want
    if op == "$in":
        return have in want
    if op == "$nin":
        return have not in want
    try:
        return {"$gt": have > want, "$gte": have >= want, "$lt": have < want,
                "$lte": have <= want}[op]
    except TypeError:
        return False


def matches_where(meta: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """True when chunk metadata ``meta`` satisfies a Chroma ``where`` filter: ``$and``, ``$or``,
    ``{field: value}`` and ``{field: {op: value}}`` with ``$eq $ne $gt $gte $lt $lte $in $nin``
    (what :meth:`rag.filters.Filters.where` writes). A field the metadata lacks matches nothing,
    as in Chroma."""
    if not where:
        return True
    for key, cond in where.items():
        if key == "$and":
            if not all(matches_where(meta, c) for c in cond):
                return False
        elif key == "$or":
            if not any(matches_where(meta, c) for c in cond):
                return False
        elif key not in meta:
            return False
        elif isinstance(cond, Mapping):
            if not all(_compare(op, meta[key], set(v) if op in ("$in", "$nin") else v)
                       for op, v in cond.items()):
                return False
        elif meta[key] != cond:
            return False
    return True


class DenseView:
    """The committed batches of an index as a read-only store (the read methods of
    :class:`rag.backends.store.ChromaStore` a retriever uses): exact cosine search over every chunk of
    every embedded paper, refreshed with new batches as the build commits them (checked at most
    every :data:`REFRESH_S` seconds, on use). Thread-safe.

    Args:
        index_dir: the index directory.
        catalog: its :class:`index.catalog.Catalog`.
        papers: paper id -> Paper, for ``where`` filters on paper fields (the chunk metadata of
            :func:`index.chunking.chunk_metadata`); papers not in it are never returned.
        state: the ``dense`` part of the manifest (for :meth:`progress`).
    """

    #: Readers tell this store from Chroma by it: paper vectors are not saved from it.
    building = True
    #: ``paper ids -> {paper id: chunk vectors}`` for papers without vectors, used by
    #: :meth:`best_similarity` (None: they have no similarity).
    compute_missing: Callable[[Sequence[str]], dict[str, np.ndarray]] | None = None

    def __init__(self, index_dir: Path, catalog: Catalog, papers: Mapping[str, Paper],
                 state: Mapping[str, Any] | None = None):
        self.index_dir = Path(index_dir)
        self.catalog = catalog
        self.papers = papers
        self.state = dict(state or {})
        self._lock = threading.RLock()
        self._checked = 0.0
        self._seen: tuple = ()
        self._files: dict[tuple[int, float], tuple[list[str], np.ndarray]] = {}
        self._ids: list[str] = []           # chunk ids, row order of _matrix
        self._pids = np.zeros(0, dtype=np.int64)  # paper number of each row
        self._papers: list[str] = []        # paper number -> paper id
        self._rows: dict[str, np.ndarray] = {}   # paper id -> its rows, chunk order
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._meta: dict[str, dict] = {}
        self._masks: dict[str, np.ndarray] = {}
        self._extra: dict[str, np.ndarray] = {}  # vectors computed at query time (not embedded)
        self.refresh(force=True)

    # -- loading ------------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> bool:
        """Load batches committed since the last look; True when the view changed."""
        now = time.monotonic()
        if not force and now - self._checked < REFRESH_S:
            return False
        with self._lock:
            self._checked = now
            batches = tuple((b, t) for b, _, _, t in self.catalog.batches())
            if batches == self._seen and not force:
                return False
            for attempt in range(3):
                try:
                    self._load(batches)
                    break
                except (OSError, ValueError):  # a file removed by a build's clean-up: look again
                    batches = tuple((b, t) for b, _, _, t in self.catalog.batches())
            self._seen = batches
            return True

    def _load(self, batches: tuple) -> None:
        embedded = self.catalog.embedded()
        keep = {}
        for key in batches:
            if key not in self._files:
                self._files[key] = read_batch(self.index_dir, key[0])
            keep[key] = self._files[key]
        self._files = keep
        ids: list[str] = []
        blocks: list[np.ndarray] = []
        for (batch, _), (bids, vecs) in sorted(keep.items()):
            take = [i for i, cid in enumerate(bids)
                    if embedded.get(paper_of(cid), (0, None))[1] == batch
                    and paper_of(cid) in self.papers]
            if take:
                ids += [bids[i] for i in take]
                blocks.append(vecs[take])
        papers = sorted({paper_of(c) for c in ids})
        number = {pid: i for i, pid in enumerate(papers)}
        pids = np.asarray([number[paper_of(c)] for c in ids], dtype=np.int64)
        matrix = np.concatenate(blocks) if blocks else np.zeros((0, 0), dtype=np.float32)
        rows: dict[str, list[int]] = {}
        for r, cid in enumerate(ids):
            rows.setdefault(paper_of(cid), []).append(r)
        ordered = {pid: np.asarray(sorted(r, key=lambda i: chunk_number(ids[i])))
                   for pid, r in rows.items()}
        # swapped in whole: a search in flight keeps the arrays it took
        self._ids, self._pids, self._papers, self._matrix = ids, pids, papers, matrix
        self._rows = ordered
        self._masks = {}

    # -- the store's read methods -----------------------------------------------------------------
    def embedded_ids(self) -> set[str]:
        """Ids of the papers whose vectors the view holds (embedded and in ``papers``)."""
        self.refresh()
        return set(self._rows)

    def count(self) -> int:
        """Chunks the view holds."""
        self.refresh()
        return len(self._ids)

    def progress(self) -> DenseProgress:
        """:func:`progress` of the index now."""
        return progress(self.catalog, self.state)

    def _mask(self, where: Mapping[str, Any] | None, papers: list[str]) -> np.ndarray | None:
        """Per paper number: does it match ``where`` (None: no filter)."""
        if not where:
            return None
        import json

        key = json.dumps(where, sort_keys=True, default=str)
        masks = self._masks
        if key not in masks:
            from index.chunking import chunk_metadata
            from rag.types import Chunk

            out = np.zeros(len(papers), dtype=bool)
            for i, pid in enumerate(papers):
                meta = self._meta.get(pid)
                if meta is None:
                    meta = self._meta[pid] = chunk_metadata(self.papers[pid],
                                                            Chunk(f"{pid}#0", pid, 0, "", 0), 1)
                out[i] = matches_where(meta, where)
            if len(masks) > 16:
                masks.clear()
            masks[key] = out
        return masks[key]

    def query(self, embedding: np.ndarray, n: int, where: Mapping[str, Any] | None = None
              ) -> list[ChunkMatch]:
        """The ``n`` chunks nearest to ``embedding`` (shape (dim,)), best first, by exact cosine
        similarity, among the chunks whose paper matches ``where``."""
        self.refresh()
        ids, pids, papers, matrix = self._ids, self._pids, self._papers, self._matrix
        if not ids or n <= 0:
            return []
        sims = matrix @ np.asarray(embedding, dtype=np.float32)
        mask = self._mask(where, papers)
        if mask is not None:
            sims = np.where(mask[pids], sims, -np.inf)
        n = min(n, int(np.isfinite(sims).sum()))
        if n <= 0:
            return []
        top = np.argpartition(-sims, n - 1)[:n]
        top = top[np.lexsort((top, -sims[top]))]
        return [ChunkMatch(ids[i], papers[pids[i]], float(sims[i])) for i in top]

    def paper_vectors(self, paper_ids: Sequence[str], n_chunks: Mapping[str, int] | None = None
                      ) -> dict[str, np.ndarray]:
        """Chunk vectors of each given paper, shape (chunks, dim) float32 in chunk order: from
        the committed batches, else from :meth:`remember` (papers with neither are absent).
        ``n_chunks`` is not needed (the view knows its chunks): it is accepted for
        :class:`rag.backends.store.ChromaStore`'s signature."""
        self.refresh()
        rows, matrix = self._rows, self._matrix
        out = {}
        for pid in paper_ids:
            if pid in rows:
                out[pid] = matrix[rows[pid]]
            elif pid in self._extra:
                out[pid] = self._extra[pid]
        return out

    def best_similarity(self, embedding: np.ndarray, paper_ids: Sequence[str],
                        n_chunks: Mapping[str, int] | None = None) -> dict[str, float]:
        """Best chunk cosine similarity of each given paper that has vectors (see
        :meth:`paper_vectors`; papers without are given to :attr:`compute_missing` when a
        reader set it, e.g. :class:`rag.retrieve.coverage.OnDemand`)."""
        q = np.asarray(embedding, dtype=np.float32)
        vecs = self.paper_vectors(paper_ids)
        missing = [pid for pid in paper_ids if pid not in vecs]
        if missing and self.compute_missing is not None:
            vecs.update(self.compute_missing(missing))
        return {pid: float((v @ q).max()) for pid, v in vecs.items() if len(v)}

    def version(self) -> tuple:
        """Changes whenever the vectors the view holds do (batches loaded, vectors remembered)."""
        self.refresh()
        return (self._seen, len(self._extra))

    def remember(self, paper_id: str, vectors: np.ndarray) -> None:
        """Keep vectors a reader computed itself for a paper not embedded yet (the same model,
        the same chunks: the vectors the build will store), for :meth:`paper_vectors`; at most
        4,096 papers are kept."""
        with self._lock:
            if len(self._extra) >= 4096:
                self._extra.clear()
            self._extra[paper_id] = np.asarray(vectors, dtype=np.float32)

    def remembered(self, paper_ids: Iterable[str]) -> set[str]:
        """Which of ``paper_ids`` have vectors from :meth:`remember`."""
        return {pid for pid in paper_ids if pid in self._extra}
