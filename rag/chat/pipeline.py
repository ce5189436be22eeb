"""Build the real backends once from settings (ARCHITECTURE.md, habit 4): used by the CLI and
the UI."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from index import manifest
from rag.paths import IndexPaths
from rag.settings import DEFAULT_INDEX, SEED_CORPUS, Settings

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.backends.generator import Generator
    from rag.backends.seams import Retriever

log = logging.getLogger(__name__)


def require_index(settings: Settings, name: str | None = None) -> None:
    """Fail at once when ``name`` (default ``settings.index``) is another index than the
    default one (built on first use) and does not exist yet: ``paperchat ask`` checks this before
    loading any model, so asking an index whose first build has not written its catalog and
    BM25 yet costs a fraction of a second instead of a model load.

    Raises:
        IndexNotFoundError: with the command that builds it.
    """
    from index.reader import index_exists
    from rag.errors import IndexNotFoundError

    name = name or settings.index
    if name != DEFAULT_INDEX and not index_exists(settings, name):
        raise IndexNotFoundError(f"no index named {name!r} under {settings.home}; build it with: "
                                 f"paperchat index PATH --name {name}")


def ensure_index(settings: Settings, embedder: Embedder, name: str | None = None,
                 log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> None:
    """Build the default index from the bundled corpus if it does not exist yet.

    Raises:
        IndexNotFoundError: ``name`` is another index that does not exist (with the command that
            builds it).
    """
    from index.build import build_index, delete_index
    from index.reader import index_exists
    from rag.understand.names import write_names

    name = name or settings.index
    if index_exists(settings, name):
        recorded = manifest.read(settings.index_dir(name)) or {}
        wanted = manifest.build_keys(settings, embedder.dim, getattr(embedder, "variant", None))
        stale = manifest.differences(recorded, wanted)
        if not stale or name != DEFAULT_INDEX:
            return  # a user's own index: Retriever.open explains a mismatch
        # the default index is ours, built from the bundled corpus: rebuild it rather than fail
        log(f"the default index was built with other settings ({', '.join(stale)}); rebuilding it")
        delete_index(settings, name)
    require_index(settings, name)
    log(f"building the default index from the bundled corpus {SEED_CORPUS.name} (first use) ...")
    summary = build_index(SEED_CORPUS, settings=settings, embedder=embedder, name=name,
                          progress=sys.stderr.isatty(), log=log, names=write_names)
    log(summary.line())


#: After a reopen failed, the same manifest is tried again after this many seconds (a Chroma
#: server that was briefly down), or at once when the manifest changes again.
RETRY_REOPEN_S = 60.0


def _forget_embedded_chroma(chroma_dir: Path) -> list:
    """Make the next embedded Chroma client of ``chroma_dir`` a new one.

    chromadb keeps one ``System`` per persist directory per process and a ``System`` keeps the
    HNSW index it loaded: vectors another process (``paperchat index``) added later are in the
    store's SQLite (``count()`` sees them) but never in a query's results. Dropping the cache
    entry (only this directory's) makes the next client load the index from disk again; clients
    already open keep their own ``System``, so a search in flight finishes on the old one.
    Returns the dropped ``System``s: the caller stops them once nothing uses them.
    """
    try:
        from chromadb.api.shared_system_client import SharedSystemClient
    except ImportError:  # pragma: no cover - other chromadb layout: nothing cached to drop
        return []
    target = os.path.realpath(chroma_dir)
    dropped = []
    with SharedSystemClient._refcount_lock:
        for ident in list(SharedSystemClient._identifier_to_system):
            if os.path.realpath(ident) == target:
                dropped.append(SharedSystemClient._identifier_to_system.pop(ident))
                SharedSystemClient._identifier_to_refcount.pop(ident, None)
    return dropped


def _stop_systems(systems: list) -> None:
    """Stop chromadb ``System``s no retriever uses any more (frees their HNSW index and SQLite
    connections: without this each reopen kept about 1.3 MB at 19 papers)."""
    for system in systems:
        try:
            system.stop()
        except Exception as exc:  # noqa: BLE001 - a leak at worst
            log.debug("stopping an old Chroma system: %s", exc)


class Pipeline:
    """Settings + embedder + retriever + generator, built once and shared (thread-safe).

    A served app lives longer than an index version: :meth:`current_retriever` (what every
    question goes through) reopens the retriever when ``paperchat index`` has changed the index
    on disk since it was opened (see there). :attr:`retriever` is the one currently open, without
    that check.
    """

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None,
                 generator: Generator | None = None, retriever: Retriever | None = None):
        from rag.backends.embedder import make_embedder

        self.settings = settings
        self.embedder = embedder or make_embedder(settings)
        self._generator = generator
        self._retriever = retriever
        self._lock = threading.Lock()
        self._reload_lock = threading.Lock()
        #: (stat key, index stamp) of the manifest the open retriever was read from
        self._seen: tuple | None = None
        self._stamp: tuple | None = None
        self._failed: tuple[tuple, float] | None = None  # (stat key, time) of a failed reopen
        self._manifest: Path | None = None  # the watched manifest.json
        self._dropped: list = []  # chromadb Systems of the open retriever, out of chromadb's cache
        self.reloads = 0  # times the retriever was reopened (for tests and logs)
        if retriever is not None:
            self._seen, self._stamp = self._watch()

    @property
    def retriever(self):
        """The retriever currently open (opened on first use; not checked for a newer index:
        questions go through :meth:`current_retriever`)."""
        from rag.retrieve.retriever import Retriever

        if self._retriever is None:
            with self._lock:
                if self._retriever is None:
                    ensure_index(self.settings, self.embedder)
                    seen, stamp = self._watch()  # before opening: a build ending meanwhile shows
                    self._retriever = Retriever.open(self.settings, self.embedder)
                    self._seen, self._stamp = seen, stamp
        return self._retriever

    @property
    def generator(self):
        from rag.backends.generator import make_generator

        if self._generator is None:
            with self._lock:
                if self._generator is None:
                    self._generator = make_generator(self.settings)
        return self._generator

    @property
    def reader(self):
        """The turn reader (:class:`rag.understand.turn_reader.TurnReader`) over this pipeline's embedder
        when it is the bundled all-MiniLM-L6-v2 (:func:`rag.chat.answer.default_reader`), loaded once."""
        from rag.chat.answer import default_reader

        return default_reader(self.retriever, self.settings)

    # -- picking up a re-indexed index ---------------------------------------------------------
    def _manifest_path(self) -> Path:
        if self._manifest is None:  # the index's name never changes: built once
            name = getattr(self._retriever, "name", None) or self.settings.index
            self._manifest = IndexPaths(self.settings.index_dir(name)).manifest
        return self._manifest

    def _watch(self) -> tuple[tuple | None, tuple | None]:
        """``(stat key, stamp)`` of the index on disk now, either None when unreadable.

        The stat key is the manifest's ``(mtime_ns, size, inode)``: every manifest write replaces
        the file, so any build changes it. The stamp is ``(catalog_fingerprint, inode of
        papers.sqlite, dense fill complete)``: the fingerprint changes when a build added, changed
        or removed a paper (:func:`index.catalog.catalog_fingerprint`), the inode when the index
        was deleted and built again (``--rebuild``), the last part when a build's catalog and BM25
        are written (its dense fill begins: the index answers, :mod:`index.dense`) and when its
        fill is done. A manifest without a fingerprint is a build that has not written its
        catalog yet and gives stamp None.
        """
        path = self._manifest_path()
        try:
            st = os.stat(path)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            data = json.loads(path.read_text(encoding="utf-8"))
            fingerprint = data.get("catalog_fingerprint") if isinstance(data, dict) else None
            catalog = os.stat(IndexPaths(path.parent).catalog).st_ino
        except (OSError, ValueError):
            return None, None
        if not fingerprint:
            return key, None
        return key, (fingerprint, catalog, manifest.dense_complete(data))

    def current_retriever(self):
        """The retriever for the next question: the open one, or a new one when the index was
        rebuilt on disk since (``paperchat index`` in another process while ``paperchat serve``
        runs).

        What is checked, per call: one ``os.stat`` of the index's ``manifest.json`` compared
        with the last one seen (mtime, size, inode): 1.2 µs per call on this machine (median
        of 100,000 calls, ext4, 2 busy cores). Only when the manifest was written again is it
        read, with one more ``stat`` of the catalog (45 µs): the retriever is reopened when the
        catalog fingerprint or the catalog file differ from those the open retriever was read
        from (see :meth:`_watch`); an unchanged re-index reopens nothing.

        A build writes the manifest first with the old fingerprint, then with the new one once
        the catalog and BM25 hold every paper (its dense fill begins), and last when the fill is
        done (:func:`index.build.build_index`), so a half-written catalog is never opened: the
        old retriever keeps answering until the new catalog is whole. Then a
        :class:`rag.retrieve.retriever.PartialRetriever` answers, which picks up the batches of vectors the
        fill commits by itself, without a reopen; the last manifest reopens the index once more,
        on Chroma. Reopening (catalog, BM25, a fresh Chroma client) happens once, under a lock, in
        the question that noticed the change: 32 ms at 3 papers in ``paperchat serve``, about
        0.2-0.35 s at 5,358 papers (fake 64-d vectors) including the first search. The new
        retriever is swapped in whole, so a question already searching finishes on the old one,
        which stays usable (its Chroma ``System`` is stopped once the old retriever is
        garbage). If reopening fails, the old retriever stays, a warning is logged, and the
        same manifest is tried again after :data:`RETRY_REOPEN_S` seconds.
        """
        current = self._retriever or self.retriever
        try:
            st = os.stat(self._manifest or self._manifest_path())
        except OSError:  # deleted for a rebuild: keep answering from what is open
            return current
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if key == self._seen:
            return self._retriever  # read after the key: a reload swaps it before the key
        with self._reload_lock:
            if key == self._seen:
                return self._retriever
            if self._failed and self._failed[0] == key and \
                    time.monotonic() - self._failed[1] < RETRY_REOPEN_S:
                return self._retriever
            return self._reload(key)

    def _reload(self, key: tuple):
        """Reopen when the stamp changed (under ``_reload_lock``); returns the retriever to use."""
        from rag.retrieve.retriever import Retriever

        old = self._retriever
        seen, stamp = self._watch()
        if seen is None or stamp is None or stamp == self._stamp:
            self._seen = seen or key  # unchanged content, or a build in progress
            return old
        name = getattr(old, "name", None) or self.settings.index
        try:
            # an index still being embedded is read from its batch files, not from Chroma
            # (index.dense): its Chroma client is renewed when the fill is done
            if not self.settings.chroma_url and stamp[2]:
                self._dropped += _forget_embedded_chroma(
                    IndexPaths(self.settings.index_dir(name)).chroma)
            t0 = time.perf_counter()
            new = Retriever.open(self.settings, self.embedder, name)
        except Exception as exc:  # noqa: BLE001 - any failure: the old index still answers
            self._failed = (key, time.monotonic())
            log.warning("index %r changed on disk but could not be reopened (%s); still "
                        "answering from the one opened before", name, exc)
            return old
        after, _ = self._watch()
        self._retriever = new  # before the key: whoever sees the new key gets the new one
        self._stamp, self._failed = stamp, None
        # a build that started while this one opened: check again at the next question
        self._seen = seen if after == seen else None
        self.reloads += 1
        if self._dropped and old is not None:
            # the old store's System is stopped when the last question using it lets go of it
            try:
                weakref.finalize(old, _stop_systems, self._dropped)
            except TypeError:  # pragma: no cover - a retriever without weak references
                pass
        self._dropped = []
        log.info("index %r changed on disk: reopened in %.0f ms (%d papers, was %d)", name,
                 (time.perf_counter() - t0) * 1000, len(new), len(old) if old is not None else 0)
        return new

    def warm_up(self, system_prompt: str | None = None) -> dict[str, float]:
        """Open the index, run the embedder once and load a local model: what the first question
        would otherwise wait for (measured on the seed index: embedder 0.9 s, GGUF 0.16 s). With
        ``system_prompt``, a local model also evaluates that system message once
        (``LlamaCppGenerator.warm``), so the first question processes only its own part.
        Returns ms per part: ``{"index", "embedder", "model"}``.

        Raises:
            IndexNotFoundError, IndexMismatchError, ModelLoadError: as the first question would.
        """
        t0 = time.perf_counter()
        ms = {}
        _ = self.retriever
        ms["index"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        self.embedder.embed(["warm-up"])
        ms["embedder"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        load = getattr(self.generator, "load", None)  # a server-backed model has nothing to load
        if callable(load):
            load()
        warm = getattr(self.generator, "warm", None)
        if system_prompt and callable(warm):
            warm(system_prompt)
        ms["model"] = (time.perf_counter() - t0) * 1000
        return ms
