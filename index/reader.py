"""Open an existing index for reading: its Chroma store (or, while the dense fill runs, the view
of its committed batches), its catalog, its BM25 index and its paper vectors.

The query side (:mod:`rag.retrieve.retriever`, :mod:`rag.chat.pipeline`, the UI, the map and the benchmarks)
reads indexes through this module, never through :mod:`index.build`, which uses the same
functions to write one. File names come from :mod:`rag.paths`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from index import manifest
from index.catalog import Catalog
from index.chunking import paper_chunks  # noqa: F401 - the chunks of a paper, for readers
from index.dense import DenseProgress, DenseView  # noqa: F401 - DenseProgress for readers
from index.vectors import PaperVectors, load_vectors, refresh_vectors
from rag.backends.lexical import LexicalIndex
from rag.backends.store import ChromaStore
from rag.paths import IndexPaths, collection_name

if TYPE_CHECKING:
    from rag.settings import Settings


def open_store(index_dir: Path, settings: Settings, name: str, *, create: bool,
               metadata=None) -> ChromaStore:
    """The Chroma collection of an index (embedded under ``index_dir/chroma``, or on the server)."""
    return ChromaStore(IndexPaths(index_dir).chroma, url=settings.chroma_url,
                       collection=collection_name(name, server=bool(settings.chroma_url)),
                       create=create, metadata=metadata)


def open_chunks(index_dir: Path, settings: Settings, name: str, catalog: Catalog,
                papers, recorded: dict | None = None) -> ChromaStore | DenseView:
    """What a reader searches for the chunk vectors of an index: its Chroma store when the
    manifest (``recorded``, read when None) says every paper is embedded, else a
    :class:`index.dense.DenseView` of the batches committed so far (``papers``: paper id ->
    Paper of the catalog). The view never touches Chroma, the builder's lock or an
    uncommitted batch."""
    recorded = manifest.read(index_dir) if recorded is None else recorded
    if manifest.dense_complete(recorded):
        return open_store(index_dir, settings, name, create=False)
    return DenseView(index_dir, catalog, papers, state=recorded.get("dense"))


def open_catalog(index_dir: Path) -> Catalog:
    """The paper catalog of an index (``index_dir/papers.sqlite``; created empty when missing)."""
    return Catalog(IndexPaths(index_dir).catalog)


def index_exists(settings: Settings, name: str) -> bool:
    """True when index ``name`` has a manifest and a BM25 index (a first build writes its
    manifest at the start and its BM25 index near the end)."""
    paths = IndexPaths(settings.index_dir(name))
    return paths.manifest.exists() and paths.bm25.exists()


def lexical_from_catalog(catalog: Catalog, prepared: dict[str, str] | None = None) -> LexicalIndex:
    """A BM25 index over every paper of ``catalog`` (its stored search texts; ``prepared``:
    :func:`rag.backends.lexical.bm25_text` of some of them, already computed)."""
    rows = catalog.search_texts()
    return LexicalIndex.build([pid for pid, _ in rows], [t for _, t in rows], prepared)


def open_paper_vectors(index_dir: Path, store: ChromaStore, catalog: Catalog,
                       manifest_fingerprint: str | None) -> PaperVectors:
    """The index's paper vectors (:mod:`index.vectors`): the saved file when it was computed for
    the catalog as it is now, else computed from the store (reusing unchanged rows) and saved,
    unless a build is still writing the index (its catalog differs from the manifest's
    ``manifest_fingerprint``, or it is a :class:`index.dense.DenseView` of an index still being
    embedded): then they are returned without being saved."""
    from index.catalog import catalog_fingerprint

    now = catalog_fingerprint(catalog.hashes())
    saved = load_vectors(index_dir)
    building = getattr(store, "building", False)  # a DenseView: some papers have no vectors
    if saved is not None and saved.fingerprint == now and not building:
        return saved
    return refresh_vectors(index_dir, store, catalog, now,
                           save=manifest_fingerprint in (None, now) and not building)
