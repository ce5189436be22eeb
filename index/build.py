"""Build or update an index from a paper list: load -> normalise -> chunk -> embed -> Chroma +
catalog -> BM25.

Incremental by content hash: a paper whose title and abstract are unchanged is not re-embedded
(a metadata-only change updates metadata in place); a changed paper has its old chunks deleted
before the new ones are written; ``prune`` removes papers no longer in the list. A build killed at
any point (Ctrl-C, ``kill -9``) and run again ends with exactly the right chunks: see
:mod:`index.catalog` for why. One build per index at a time (a file lock). It opens the store
and the catalog with :mod:`index.reader`, as the query side does; file names come from
:mod:`rag.paths`.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from index import manifest
from index.catalog import Catalog, catalog_fingerprint, content_hash
from index.chunking import chunk_paper
from index.reader import lexical_from_catalog, open_catalog, open_store
from index.sources import LoadResult, Problem, load_papers
from index.vectors import load_vectors, refresh_vectors
from rag.errors import IndexLockedError, PaperchatError
from rag.lexical import LexicalIndex
from rag.paths import IndexPaths
from rag.text import normalise
from rag.types import Chunk, Paper, chunk_number, is_accepted, paper_of, status_tier

if TYPE_CHECKING:
    from rag.embedder import Embedder
    from rag.settings import Settings
    from rag.store import ChromaStore

#: Papers embedded and written per step; a kill loses at most one step's work.
PAPERS_PER_STEP = 64
#: The stages a build's time is split into (``BuildSummary.stages``, ``paperchat bench index``):
#: reading the list, text normalisation, tokenising into chunks, embedding, Chroma writes and
#: deletes, catalog writes, the BM25 index, the paper vectors and the map layout. Normalise and chunk run in a helper
#: thread and store and catalog in a writer thread, beside embedding (:func:`_embed_papers`), so
#: their seconds overlap the embedder's; ``wait`` is the embedding loop's own time spent waiting
#: for them (the part that was not hidden).
STAGES = ("load", "normalise", "chunk", "embed", "store", "catalog", "wait", "bm25", "vectors",
          "layout")


@dataclass
class BuildSummary:
    """What a build did. Times in seconds."""

    name: str
    papers: int = 0            # papers in the index after the build
    chunks: int = 0            # chunks in the index after the build
    embedded: int = 0          # papers (re-)embedded by this build
    updated_metadata: int = 0  # papers whose metadata changed but text did not
    unchanged: int = 0
    pruned: int = 0
    skipped: int = 0           # malformed records skipped
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0
    #: Wall seconds per stage (:data:`STAGES`); stages that did not run are absent.
    stages: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    #: Tokens given to the embedder, special tokens included (sum of chunk ``n_tokens``).
    tokens_embedded: int = 0

    @contextmanager
    def timed(self, stage: str):
        """Add the wall time of the ``with`` body to ``stages[stage]`` (perf_counter seconds)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stages[stage] += time.perf_counter() - t0

    def stages_line(self) -> str:
        """``time by stage: embed 301.2 s (78%), store 40.3 s (10%), ...``, slowest first, as
        shares of the build's wall time. Normalise, chunk, store and catalog run beside embedding
        (:data:`STAGES`), so the shares add up to more than 100%."""
        total = self.seconds or sum(self.stages.values()) or 1.0
        parts = [f"{k} {v:.1f} s ({v / total:.0%})"
                 for k, v in sorted(self.stages.items(), key=lambda kv: -kv[1]) if v >= 0.05]
        return ("time by stage (normalise, chunk, store and catalog overlap embed): "
                + (", ".join(parts) or "nothing to do"))

    def line(self) -> str:
        return (f"index {self.name!r}: {self.papers} papers, {self.chunks} chunks; "
                f"embedded {self.embedded}, unchanged {self.unchanged}, metadata updated "
                f"{self.updated_metadata}, pruned {self.pruned}, skipped {self.skipped}; "
                f"{self.seconds:.1f} s")


def search_text(paper: Paper) -> tuple[str, str, str]:
    """Normalised (title, abstract, BM25 text) of a paper."""
    title = normalise(paper.title)
    abstract = normalise(paper.abstract)
    keywords = "; ".join(normalise(k) for k in paper.keywords)
    return title, abstract, f"{title}. {keywords}. {abstract}" if keywords else f"{title}. {abstract}"


def chunk_metadata(paper: Paper, chunk: Chunk, n_chunks: int) -> dict:
    """Chroma metadata of a chunk: ids and the filterable paper fields (no None values).

    ``rating`` is the paper's mean reviewer rating (float, rounded to 2 decimals, the
    conference's scale; :attr:`rag.types.Paper.rating`) and is absent when the paper is unrated,
    since Chroma metadata cannot hold None; ``n_ratings`` is the number of reviews (0 when
    unrated). ``year`` is -1 when unknown."""
    meta = {"paper_id": paper.id, "n": chunk.n, "n_chunks": n_chunks, "title": paper.title,
            "status": paper.status, "tier": status_tier(paper.status),
            "accepted": is_accepted(paper.status), "primary_area": paper.primary_area,
            "venue": paper.venue, "year": paper.year if paper.year is not None else -1,
            "n_ratings": len(paper.ratings)}
    rating = paper.rating
    if rating is not None:
        meta["rating"] = float(rating["mean"])
    return meta


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
                log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> BuildSummary:
    """Build or update index ``name`` (default ``settings.index``) from a paper list.

    Args:
        source: a path (read with :func:`index.sources.load_papers`) or an already loaded list.
        embedder: an :class:`rag.embedder.Embedder`; its ``name``/``dim`` go into the manifest.
        prune: delete indexed papers that are not in ``source``.
        progress: show a tqdm bar (papers/s, ETA) on a terminal.
        log: where problem lines and notes go (stderr by default).
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
        manifest.write(index_dir, {**wanted, **(recorded or {}), **wanted, "name": name})
        catalog = open_catalog(index_dir)
        summary = BuildSummary(name=name, skipped=loaded.skipped, problems=loaded.problems)
        summary.stages["load"] += load_seconds

        existing = catalog.hashes()
        # After an interrupted build, Chroma may hold chunks of papers with no catalog row (or
        # an old row): find them once, so they are deleted before being rewritten.
        # A catalog row whose chunks were deleted (killed between deleting a changed paper's old
        # chunks and writing its new ones) is dropped, so the paper is redone even when the list
        # has reverted to the text of that row.
        stray: set[str] = set()
        if store.count() != catalog.total_chunks():
            counts = store.chunk_counts()
            stray = {pid for pid in counts if pid not in existing}
            if stray:
                store.delete_papers(sorted(stray))
            hollow = sorted(pid for pid in existing if not counts.get(pid))
            if hollow:
                catalog.delete(hollow)
                for pid in hollow:
                    del existing[pid]
                stray.update(hollow)

        to_embed: list[Paper] = []
        meta_only: list[Paper] = []
        for paper in loaded.papers:
            old = existing.get(paper.id)
            new = content_hash(paper)
            if old == new:
                summary.unchanged += 1
            elif old is not None and old.split(":")[0] == new.split(":")[0]:
                meta_only.append(paper)
            else:
                to_embed.append(paper)

        if meta_only:
            _update_metadata(store, catalog, meta_only, embedder)
            summary.updated_metadata = len(meta_only)

        if to_embed:
            _embed_papers(store, catalog, to_embed, existing, embedder, settings, progress,
                          summary)
            summary.embedded = len(to_embed)

        if prune:
            keep = {p.id for p in loaded.papers}
            gone = sorted(set(existing) - keep)
            if gone:
                store.delete_papers(gone)
                catalog.delete(gone)
                summary.pruned = len(gone)

        # BM25 is rebuilt when this build changed the catalog, or when the catalog differs from
        # the one the last BM25 index was built from (a build killed before reaching this point).
        lexical_dir = IndexPaths(index_dir).bm25
        fingerprint = catalog_fingerprint(catalog.hashes())
        changed = summary.embedded or summary.updated_metadata or summary.pruned or stray
        # It is also rebuilt when it was made with other BM25 parameters (an older version).
        if changed or not LexicalIndex.is_current(lexical_dir) or \
                (recorded or {}).get("catalog_fingerprint") != fingerprint:
            with summary.timed("bm25"):
                lexical_from_catalog(catalog).save(lexical_dir)

        # Paper vectors (index.vectors) and the map (index.layout) before the manifest, which
        # tells a served app to reopen.
        stale = changed or (recorded or {}).get("catalog_fingerprint") != fingerprint
        vectors = None
        if stale or load_vectors(index_dir) is None:
            with summary.timed("vectors"):
                vectors = refresh_vectors(index_dir, store, catalog, fingerprint, log=log)
        if settings.map_layout and stale:
            with summary.timed("layout"):
                _map_layout(index_dir, store, catalog, fingerprint, log, vectors)

        summary.papers = catalog.count()
        summary.chunks = store.count()
        summary.seconds = time.perf_counter() - t0
        manifest.write(index_dir, {**wanted, "name": name, "papers": summary.papers,
                                   "chunks": summary.chunks, "source": label,
                                   "catalog_fingerprint": fingerprint})
        return summary


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


def _embed_papers(store: ChromaStore, catalog, papers: list[Paper], existing: dict[str, str],
                  embedder: Embedder, settings: Settings, progress: bool,
                  summary: BuildSummary) -> None:
    """Embed and write ``papers`` in steps of :data:`PAPERS_PER_STEP`, as a three-stage pipeline:
    a helper thread normalises and chunks step k+1 and a writer thread stores step k-1 (deletes
    the old chunks of changed papers, upserts the new ones, then writes the catalog rows) while
    the embedder works on step k. The embedder's ONNX Runtime threads release the GIL, so the
    Python and Chroma work of the other two stages fills the CPU time that a sequential loop
    left idle (measured in ``paperchat bench index``; see the README's performance notes).

    Writes keep the sequential order (one writer, steps in order, each step's chunks before its
    catalog rows), so a killed build resumes exactly as before (:mod:`index.catalog`).

    Chunking uses its own copy of the embedder's tokenizer: a Hugging Face fast tokenizer keeps
    its truncation setting as state that each call sets (the embedder truncates at 256 tokens,
    chunking must not truncate), and the Rust encoder runs without the GIL, so one shared
    tokenizer could cut an abstract being chunked while the embedder encodes.
    """
    import copy
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    tokenizer = copy.deepcopy(embedder.tokenizer)
    steps = [papers[s:s + PAPERS_PER_STEP] for s in range(0, len(papers), PAPERS_PER_STEP)]

    def prepare(step: list[Paper]):
        ids, docs, metas, rows = [], [], [], []
        tokens = 0
        for paper in step:
            with summary.timed("normalise"):
                title, abstract, text = search_text(paper)
            with summary.timed("chunk"):
                chunks = chunk_paper(paper.id, title, abstract, tokenizer,
                                     max_tokens=settings.chunk_tokens,
                                     overlap=settings.chunk_overlap)
            for c in chunks:
                ids.append(c.id)
                docs.append(c.text)
                metas.append(chunk_metadata(paper, c, len(chunks)))
                tokens += c.n_tokens
            rows.append((paper, content_hash(paper), len(chunks), text))
        return ids, docs, metas, rows, tokens

    def write(step: list[Paper], ids, vectors, docs, metas, rows) -> None:
        stale = [p.id for p in step if p.id in existing]
        with summary.timed("store"):
            if stale:
                store.delete_papers(stale)
            store.upsert(ids, vectors, docs, metas)
        with summary.timed("catalog"):
            catalog.put(rows)  # only after the chunks are stored: see index.catalog

    bar = tqdm(total=len(papers), unit="paper", disable=not progress or None, file=sys.stderr,
               desc="embedding", dynamic_ncols=True)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="index-prepare") as preparer, \
                ThreadPoolExecutor(1, thread_name_prefix="index-write") as writer:
            ahead = preparer.submit(prepare, steps[0]) if steps else None
            written = None  # (future, papers) of the step being written
            for k, step in enumerate(steps):
                with summary.timed("wait"):
                    ids, docs, metas, rows, tokens = ahead.result()
                ahead = preparer.submit(prepare, steps[k + 1]) if k + 1 < len(steps) else None
                with summary.timed("embed"):
                    vectors = embedder.embed(docs)
                summary.tokens_embedded += tokens
                if written is not None:
                    with summary.timed("wait"):
                        written[0].result()
                    bar.update(len(written[1]))
                written = (writer.submit(write, step, ids, vectors, docs, metas, rows), step)
            if written is not None:
                with summary.timed("wait"):
                    written[0].result()
                bar.update(len(written[1]))
    finally:
        bar.close()


#: Papers per request when only metadata changes (one Chroma get and one update per batch).
METADATA_BATCH = 256


def _update_metadata(store: ChromaStore, catalog, papers: list[Paper],
                     embedder: Embedder) -> None:
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
            rows.append((paper, content_hash(paper), len(mine), search_text(paper)[2]))
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
