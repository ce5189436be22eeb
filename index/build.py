"""Build or update an index from a paper list, in two phases: first what is cheap, then the
dense vectors.

1. **Catalog and BM25** (seconds): the list is read and normalised, every paper's catalog row is
   written (record, ratings, decisions, areas, search text), and BM25 is built over every paper;
   then the manifest records the new catalog and says the dense fill has begun. From here on the
   index answers: ``ask``, ``chat`` and the UI search BM25 over every paper and the dense vectors
   of the papers embedded so far (:mod:`index.dense`, :mod:`rag.retrieve.coverage`).
2. **Dense fill** (minutes): the papers that have no vectors yet are chunked and embedded in steps
   of :data:`index.dense_fill.PAPERS_PER_STEP`, each step committed as it finishes (its batch
   file, its Chroma chunks, then its ``dense`` rows in the catalog: :mod:`index.dense`); then the
   paper vectors, the map, and the manifest that says the index is complete.

Incremental by content hash: a paper whose title and abstract are unchanged is not re-embedded
(a metadata-only change updates metadata in place); a changed paper has its old chunks deleted
before the new ones are written; ``prune`` removes papers no longer in the list. A build killed at
any point (Ctrl-C, ``kill -9``) and run again ends with exactly the right chunks and the same
index as a build that was never interrupted: see :mod:`index.catalog` for why. One build per
index at a time (a file lock); readers never take it. It opens the store and the catalog with
:mod:`index.reader`, as the query side does; file names come from :mod:`rag.paths`.

This module runs the build (:func:`build_index`: its lock, its phase 1 steps) and removes an
index (:func:`delete_index`); the dense fill is in :mod:`index.dense_fill`, the work phase 1 hands
to other processes in :mod:`index.build_workers`, and what a build reports
(:class:`~index.build_summary.BuildSummary`, the timed stages) in :mod:`index.build_summary`.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from index import dense as dense_batches
from index import manifest
from index.build_summary import BuildSummary
from index.build_workers import _normalise, _start_names
from index.catalog import Catalog, catalog_fingerprint, content_hash
from index.chunking import chunk_metadata, chunk_paper, search_text  # noqa: F401 - re-exported
from index.dense_fill import _embed_papers, lower_priority
from index.reader import lexical_from_catalog, open_catalog, open_store
from index.source_records import LoadResult
from index.sources import load_papers
from index.vectors import load_vectors, refresh_vectors, text_hash
from rag.backends.lexical import LexicalIndex
from rag.errors import IndexLockedError, PaperchatError
from rag.paths import IndexPaths
from rag.types import Chunk, Paper, chunk_number, paper_of

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.backends.store import ChromaStore
    from rag.settings import Settings


class _Lock:
    def __init__(self, path: Path):
        from filelock import FileLock, Timeout

        self._lock = FileLock(str(path))
        self._timeout = Timeout

    def __enter__(self):
        try:
            self._lock.acquire(timeout=0)
        except self._timeout:
            raise IndexLockedError(f"another 'paperchat index' is writing this index (lock "
                                   f"{self._lock.lock_file}); wait for it to finish") from None
        return self

    def __exit__(self, *exc):
        self._lock.release()


def build_index(source: str | Path | LoadResult, *, settings: Settings, embedder: Embedder,
                name: str | None = None, fmt: str = "auto", prune: bool = False,
                progress: bool = True,
                log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
                names: Callable[[Path, str], object] | None = None,
                fill_nice: int = 0) -> BuildSummary:
    """Build or update index ``name`` (default ``settings.index``) from a paper list, in the two
    phases of the module docstring: the index answers once the first is done
    (:attr:`BuildSummary.ready_seconds`) and is complete when this returns.

    Args:
        source: a path (read with :func:`index.sources.load_papers`) or an already loaded list.
        embedder: an :class:`rag.backends.embedder.Embedder`; its ``name``/``dim`` go into the manifest.
        prune: delete indexed papers that are not in ``source``.
        progress: show a tqdm bar (papers/s, ETA) on a terminal.
        log: where problem lines and notes go (stderr by default).
        names: ``names(index_dir, catalog fingerprint)`` writes the index's paper names
            (:func:`rag.understand.names.write_names`, passed in by the front doors: the write side does
            not import the query side); run in phase 1 beside BM25, so the first question
            reads them instead of building them. None: the first reader builds and saves them.
        fill_nice: lower this process's priority by that many nice levels once phase 1 is
            done (:func:`index.dense_fill.lower_priority`; ``settings.fill_nice`` from
            ``paperchat index``): a question asked beside the dense fill is then not starved of
            the CPU. For a process of its own only: the priority is never raised back (0, the
            default, keeps it).
    Returns:
        A :class:`BuildSummary`.
    Raises:
        IndexMismatchError: the index exists with other build settings.
        IndexLockedError: another build holds the lock.
        SourceFormatError: the list cannot be read at all.
    """
    t0 = time.perf_counter()
    name = name or settings.index
    index_dir = settings.index_dir(name)
    # Read the list first: a mistyped path must not leave an empty index directory behind.
    load_t0 = time.perf_counter()
    loaded = source if isinstance(source, LoadResult) else load_papers(source, fmt)
    load_seconds = time.perf_counter() - load_t0
    label = loaded.path or "(papers passed in)" if isinstance(source, LoadResult) else str(source)
    index_dir.mkdir(parents=True, exist_ok=True)
    with _Lock(IndexPaths(index_dir).lock):
        for problem in loaded.problems:
            log(f"{label}: {problem}")
        recorded = manifest.read(index_dir)
        if recorded is not None:
            settings, embedder = _keep_recorded(recorded, settings, embedder, name, log)
        wanted = manifest.build_keys(settings, embedder.dim, getattr(embedder, "variant", None))
        if recorded is not None:
            manifest.check(recorded, wanted, name)
        store = open_store(index_dir, settings, name, create=True,
                           metadata={k: v for k, v in wanted.items()})
        if store.metadata:
            manifest.check({**wanted, **store.metadata}, wanted, name)
        # a new index is not complete until its last manifest (readers wait for its BM25)
        manifest.write(index_dir, {**wanted, **(recorded or {"dense": {"complete": False}}),
                                   **wanted, "name": name})
        catalog = open_catalog(index_dir)
        summary = BuildSummary(name=name, skipped=loaded.skipped, problems=loaded.problems)
        summary.stages["load"] += load_seconds

        with summary.timed("check"):
            # an index from before the dense fill: its vectors into batch files, once
            dense_batches.backfill(index_dir, store, catalog, log)
            repaired = _repair(store, catalog)

        # -- phase 1: the catalog, BM25 and a manifest: the index answers from here on --------
        existing = catalog.hashes()
        embedded = catalog.embedded()
        new_rows: list[Paper] = []    # new papers and papers with a new title or abstract
        meta_only: list[Paper] = []   # same text, other metadata
        fill: list[Paper] = []        # papers to embed, in list order
        hashes: dict[str, str] = {}   # content hash of each listed paper
        for paper in loaded.papers:
            old = existing.get(paper.id)
            new = hashes[paper.id] = content_hash(paper)
            done = paper.id in embedded and old is not None and \
                text_hash(old) == text_hash(new)
            if old == new:
                if done:
                    summary.unchanged += 1
            elif old is not None and text_hash(old) == text_hash(new):
                meta_only.append(paper)
            else:
                new_rows.append(paper)
            if not done:
                fill.append(paper)
        prepare = getattr(embedder, "prepare", None)  # the ONNX export, beside phase 1
        if fill and callable(prepare):
            prepare()
        if not prune:  # papers of an earlier list that a stopped build did not embed
            listed = {p.id for p in loaded.papers}
            left = sorted(pid for pid in existing if pid not in listed and pid not in embedded)
            found = catalog.get(left)
            fill += [found[pid] for pid in left if pid in found]

        normalised, prepared = _normalise(new_rows + meta_only, summary)
        if new_rows:
            with summary.timed("catalog"):
                for start in range(0, len(new_rows), 2000):
                    catalog.put([(p, hashes[p.id], 0, normalised[p.id][2])
                                 for p in new_rows[start:start + 2000]])
        if meta_only:
            stored = [p for p in meta_only if p.id in embedded]
            if stored:
                _update_metadata(store, catalog, stored, embedder, normalised)
            waiting = [p for p in meta_only if p.id not in embedded]
            if waiting:
                catalog.put([(p, hashes[p.id], 0, normalised[p.id][2]) for p in waiting])
            summary.updated_metadata = len(meta_only)

        if prune:
            keep = {p.id for p in loaded.papers}
            gone = sorted(set(existing) - keep)
            if gone:
                catalog.drop_dense(gone)  # before their chunks go (index.catalog)
                store.delete_papers(gone)
                catalog.delete(gone)
                summary.pruned = len(gone)

        # BM25 is rebuilt when this build changed the catalog, or when the catalog differs from
        # the one the last BM25 index was built from (a build killed before reaching this point).
        lexical_dir = IndexPaths(index_dir).bm25
        fingerprint = catalog_fingerprint(catalog.hashes())
        changed = bool(new_rows or meta_only or summary.pruned)
        # It is also rebuilt when it was made with other BM25 parameters (an older version).
        # The paper names are written meanwhile, in a child process (they skip themselves when
        # current).
        # BM25 is saved once they are written: a first build's index exists for readers from
        # then on (index.reader.index_exists), so the first question reads the names too.
        wait_names = _start_names(names, index_dir, fingerprint, log) if names else None
        lexical = None
        if changed or not LexicalIndex.is_current(lexical_dir) or \
                (recorded or {}).get("catalog_fingerprint") != fingerprint:
            with summary.timed("bm25"):
                lexical = lexical_from_catalog(catalog, prepared)
        if wait_names is not None:
            with summary.timed("names"):
                wait_names()
        if lexical is not None:
            with summary.timed("bm25"):
                lexical.save(lexical_dir)

        n_papers = catalog.count()
        progress_state = {"complete": False, "papers": n_papers,
                          "embedded": n_papers - len(fill), "started_at": time.time()}
        if fill or not manifest.dense_complete(recorded):
            manifest.write(index_dir, {**wanted, "name": name, "papers": n_papers,
                                       "chunks": store.count(), "source": label,
                                       "catalog_fingerprint": fingerprint,
                                       "dense": progress_state})
        summary.ready_seconds = time.perf_counter() - t0
        if fill and progress:
            so_far = ", ".join(f"{k} {v:.1f}" for k, v in summary.stages.items() if v >= 0.05)
            log(f"index {name!r} answers now ({summary.ready_seconds:.1f} s: {so_far} s): catalog "
                f"and BM25 over {n_papers:,} papers; embedding {len(fill):,} papers next")

        # -- phase 2: the dense fill --------------------------------------------------------
        fill_t0 = time.perf_counter()
        if fill and fill_nice:
            lower_priority(fill_nice)
        if fill:
            _embed_papers(store, catalog, fill, normalised, embedder, settings, progress,
                          summary, index_dir)
            summary.embedded = len(fill)
        with summary.timed("check"):
            dense_batches.collect_garbage(index_dir, catalog)

        # Paper vectors (index.vectors) and the map (index.layout) before the manifest, which
        # tells a served app to reopen. They are due when papers changed, and after a build that
        # stopped before its last manifest.
        stale = changed or bool(fill) or repaired or \
            (recorded or {}).get("catalog_fingerprint") != fingerprint or \
            not manifest.dense_complete(recorded)
        vectors = None
        if stale or load_vectors(index_dir) is None:
            with summary.timed("vectors"):
                vectors = refresh_vectors(index_dir, store, catalog, fingerprint, log=log)
        if settings.map_layout and stale:
            with summary.timed("layout"):
                _map_layout(index_dir, store, catalog, fingerprint, log, vectors)
        summary.dense_seconds = time.perf_counter() - fill_t0

        summary.papers = catalog.count()
        summary.years = catalog.year_totals()
        summary.chunks = store.count()
        summary.seconds = time.perf_counter() - t0
        manifest.write(index_dir, {**wanted, "name": name, "papers": summary.papers,
                                   "chunks": summary.chunks, "source": label,
                                   "catalog_fingerprint": fingerprint,
                                   "dense": {"complete": True, "papers": summary.papers,
                                             "embedded": summary.papers}})
        return summary


def _repair(store: ChromaStore, catalog: Catalog) -> bool:
    """After an interrupted build, make Chroma and the ``dense`` rows agree: a paper whose stored
    chunk count differs from its current ``dense`` row's (stray chunks of a batch that was never
    committed, the old chunks of a paper whose text changed, chunks deleted by hand) has its
    chunks deleted and its row dropped, so that the fill embeds it again. One count when they
    agree (every build), a metadata scan of the store when they do not. True when it repaired
    anything."""
    embedded = catalog.embedded()
    if store.count() == sum(n for n, _ in embedded.values()):
        return False
    counts = store.chunk_counts()
    redo = sorted({pid for pid, n in counts.items() if n != embedded.get(pid, (0, None))[0]}
                  | {pid for pid, (n, _) in embedded.items() if counts.get(pid, 0) != n})
    if redo:
        catalog.drop_dense(redo)
        store.delete_papers([pid for pid in redo if pid in counts])
    return bool(redo)


def _keep_recorded(recorded: dict, settings: Settings, embedder: Embedder, name: str,
                   log) -> tuple:
    """The settings and embedder that update an existing index: its own chunking
    (:data:`index.manifest.CHUNK_KEYS`) and its own embedder variant, with a note when they differ
    from what a new index would get, so that one index never mixes two kinds of chunk or vector.
    Other differences (model, backend) are left for :func:`index.manifest.check` to refuse."""
    chunking = {k: recorded[k] for k in manifest.CHUNK_KEYS
                if k in recorded and recorded[k] != getattr(settings, k)}
    if chunking:
        log(f"index {name!r} keeps its chunking ("
            + ", ".join(f"{k} {v}" for k, v in chunking.items())
            + f"); rebuild it (--rebuild) to use the settings' ("
            + ", ".join(f"{k} {getattr(settings, k)}" for k in chunking) + ")")
        settings = settings.model_copy(update=chunking)
    kept = manifest.embedder_for(recorded, settings, embedder)
    if kept is not embedder:
        log(f"index {name!r} keeps the {kept.variant!r} embedder it was built with (new indexes "
            f"on this CPU get {embedder.variant!r}; --rebuild to switch)")
    return settings, kept


def _map_layout(index_dir: Path, store: ChromaStore, catalog: Catalog, fingerprint: str,
                log, vectors=None) -> None:
    """Bring the index's map up to date (:func:`index.layout.refresh_layout`). A failure does not
    fail the build: the index is usable without a map, which is then computed on first use."""
    try:
        from index.layout import refresh_layout

        refresh_layout(index_dir, store, catalog, fingerprint, log=log, vectors=vectors)
    except Exception as exc:  # noqa: BLE001 - the map is an extra; searching works without it
        log(f"map layout not computed ({type(exc).__name__}: {exc}); it will be computed when "
            "the map is first shown")


#: Papers per request when only metadata changes (one Chroma get and one update per batch).
METADATA_BATCH = 256


def _update_metadata(store: ChromaStore, catalog, papers: list[Paper],
                     embedder: Embedder,
                     normalised: dict[str, tuple[str, str, str]] | None = None) -> None:
    """Rewrite chunk metadata and catalog rows of papers whose text is unchanged, in batches of
    :data:`METADATA_BATCH` papers: the chunk ids come from Chroma itself (authoritative after a
    repaired kill), and a batch's catalog rows are written after its chunks (see index.catalog).
    One request per paper took 108 s for 5,358 papers (a decision-day status change); batched,
    a few seconds. Chroma merges updated metadata into the old, so a key that
    :func:`chunk_metadata` omits (``rating`` of an unrated paper) is sent as None, which deletes
    it."""
    for start in range(0, len(papers), METADATA_BATCH):
        batch = papers[start:start + METADATA_BATCH]
        found = store.paper_chunk_ids([p.id for p in batch])
        by_paper: dict[str, list[str]] = {}
        for cid in found:
            by_paper.setdefault(paper_of(cid), []).append(cid)
        ids, metas, rows = [], [], []
        for paper in batch:
            mine = sorted(by_paper.get(paper.id, []), key=chunk_number)
            ids += mine
            for cid in mine:
                chunk = Chunk(cid, paper.id, chunk_number(cid), "", 0)
                meta = chunk_metadata(paper, chunk, len(mine))
                # Chroma's update merges keys: None deletes the rating of a paper that lost it
                meta.setdefault("rating", None)
                metas.append(meta)
            text = (normalised or {}).get(paper.id) or search_text(paper)
            rows.append((paper, content_hash(paper), len(mine), text[2]))
        store.update_metadata(ids, metas)
        catalog.put(rows)


def delete_index(settings: Settings, name: str) -> None:
    """Remove index ``name`` entirely (its directory; its server collection in server mode)."""
    index_dir = settings.index_dir(name)
    if settings.chroma_url or IndexPaths(index_dir).chroma.exists():
        # drop the collection through Chroma first: an embedded client caches its system per
        # path in-process and would otherwise keep serving the deleted collection
        open_store(index_dir, settings, name, create=True).drop()
    shutil.rmtree(index_dir, ignore_errors=True)
