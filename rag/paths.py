"""Where an index keeps each file: the on-disk layout, spelled once (imports nothing of ours).

An index directory (``Settings.index_dir(name)``, ``$PAPERCHAT_HOME/indexes/<name>/``) holds:

- ``chroma/``: the embedded Chroma store of the chunks (:mod:`rag.backends.store`; absent in server mode,
  where the chunks live in collection ``paperchat-<name>`` on the server);
- ``papers.sqlite``: the paper catalog (:mod:`index.catalog`);
- ``bm25/``: the BM25 index (:mod:`rag.backends.lexical`);
- ``names.json``: the paper names the index uses (:mod:`rag.understand.names`), written beside BM25;
- ``dense/``: the chunk vectors, one file per batch the dense fill committed
  (:mod:`index.dense`), what a reader searches while the index is still being embedded;
- ``layout.npz``: the 2-D map (:mod:`index.layout`);
- ``paper_vectors.npz``: one vector per paper (:mod:`index.vectors`);
- ``manifest.json``: how the index was built (:mod:`index.manifest`), written last;
- ``.lock``: held by the one build writing the index (:mod:`index.build`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CHROMA_DIR = "chroma"
CATALOG_FILE = "papers.sqlite"
BM25_DIR = "bm25"
NAMES_FILE = "names.json"
DENSE_DIR = "dense"
LAYOUT_FILE = "layout.npz"
VECTORS_FILE = "paper_vectors.npz"
MANIFEST_FILE = "manifest.json"
LOCK_FILE = ".lock"
#: The collection of an embedded store (one store per index directory).
EMBEDDED_COLLECTION = "chunks"


def collection_name(name: str, *, server: bool) -> str:
    """Chroma collection of index ``name``: ``paperchat-<name>`` on a shared Chroma server,
    :data:`EMBEDDED_COLLECTION` in the index's own embedded store."""
    return f"paperchat-{name}" if server else EMBEDDED_COLLECTION


def _under_root(file: str, doc: str) -> property:
    """A read-only attribute ``root / file`` of :class:`IndexPaths`."""
    return property(lambda self: self.root / file, doc=f"``root/{file}``: {doc}")


@dataclass(frozen=True)
class IndexPaths:
    """The files of the index directory ``root`` (nothing is created or checked); each attribute
    is a :class:`pathlib.Path`."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    chroma = _under_root(CHROMA_DIR, "the embedded Chroma store")
    catalog = _under_root(CATALOG_FILE, "the paper catalog")
    bm25 = _under_root(BM25_DIR, "the BM25 index")
    names = _under_root(NAMES_FILE, "the paper names the index uses")
    dense = _under_root(DENSE_DIR, "the chunk vectors, one file per committed batch")
    layout = _under_root(LAYOUT_FILE, "the 2-D map")
    vectors = _under_root(VECTORS_FILE, "one vector per paper")
    manifest = _under_root(MANIFEST_FILE, "how the index was built")
    lock = _under_root(LOCK_FILE, "the build lock")
