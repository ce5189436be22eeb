"""How an index was built, recorded beside it (ARCHITECTURE.md, habit 8), and the check that
settings match.

``manifest.json`` in the index directory holds the embedding model, its dimension, the embedding
backend and its variant (the quantisation recipe, :data:`rag.backends.onnx_embedder.VARIANTS`), the
chunking parameters and the normaliser version, plus counts and the build time. The same build
keys are stored in the Chroma collection's metadata. Vectors from another model are not
comparable, so a mismatch raises :class:`IndexMismatchError` telling the user to rebuild.

A build writes the manifest three times: at its start (the build keys), once the catalog and BM25
hold every paper (``catalog_fingerprint``, counts and ``dense``: ``{"complete": false, "papers",
"embedded", "started_at"}``: the index answers from then on, :mod:`index.dense`), and last, when
every paper is embedded and the paper vectors and the map are written (``dense.complete`` true).
A manifest without ``dense`` (an index from before the dense fill) is complete.

Querying needs only the :data:`QUERY_KEYS` to match (chunking shapes the stored vectors, not the
query's), and both querying and updating an index use the variant it was built with
(:func:`variant_of`), so an index built on a VNNI machine is usable on an AVX2 one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.errors import IndexMismatchError
from rag.paths import IndexPaths
from rag.paths import MANIFEST_FILE as MANIFEST  # noqa: F401 - manifest.MANIFEST, the file name
from rag.text import NORMALISER_VERSION

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.settings import Settings

FORMAT_VERSION = 1
#: Keys whose values must match between the index and the settings in use.
BUILD_KEYS = ("format_version", "embedder", "dim", "embed_backend", "embed_variant",
              "chunk_tokens", "chunk_overlap", "normaliser_version")
#: Chunking keys: an existing index keeps its own when it is updated (index.build).
CHUNK_KEYS = ("chunk_tokens", "chunk_overlap")
#: The build keys a query depends on (the query is embedded and normalised, never chunked).
QUERY_KEYS = tuple(k for k in BUILD_KEYS if k not in CHUNK_KEYS)
#: The variant of indexes written before variants were recorded, by backend.
_DEFAULT_VARIANT = {"onnx-int8": "int8", "onnx-fp32": "fp32", "torch": "fp32"}


def build_keys(settings: Settings, dim: int, variant: str | None = None) -> dict[str, Any]:
    """The build-defining values for ``settings`` and an embedder of dimension ``dim`` whose
    ``variant`` attribute is ``variant`` (None: the backend's default)."""
    return {"format_version": FORMAT_VERSION, "embedder": settings.embedder, "dim": int(dim),
            "embed_backend": settings.embed_backend,
            "embed_variant": variant or _DEFAULT_VARIANT.get(settings.embed_backend, "fp32"),
            "chunk_tokens": settings.chunk_tokens, "chunk_overlap": settings.chunk_overlap,
            "normaliser_version": NORMALISER_VERSION}


def variant_of(recorded: dict[str, Any]) -> str | None:
    """The embedder variant an index was built with (``int8`` for an ``onnx-int8`` index from
    before variants were recorded); None when nothing is recorded."""
    if not recorded:
        return None
    return recorded.get("embed_variant") or _DEFAULT_VARIANT.get(recorded.get("embed_backend"))


def embedder_for(recorded: dict[str, Any], settings: Settings, embedder: Embedder) -> Embedder:
    """``embedder`` with the variant index ``recorded`` was built with, when it has variants
    (:meth:`rag.backends.onnx_embedder.OnnxEmbedder.with_variant`) and the index used the same backend;
    otherwise ``embedder`` itself (another backend is left for :func:`check` to refuse)."""
    variant = variant_of(recorded)
    mine = getattr(embedder, "variant", None)
    if (mine is not None and variant and variant != mine and hasattr(embedder, "with_variant")
            and recorded.get("embed_backend") == settings.embed_backend):
        return embedder.with_variant(variant)
    return embedder


def dense_complete(recorded: dict[str, Any] | None) -> bool:
    """True when manifest ``recorded`` says every paper's chunks are embedded and stored (no
    ``dense`` part: an index written before the dense fill, complete when it has a manifest)."""
    if not recorded:
        return False
    return bool((recorded.get("dense") or {}).get("complete", True))


def read(index_dir: Path) -> dict[str, Any] | None:
    """The manifest of ``index_dir``, or None when there is none."""
    path = IndexPaths(index_dir).manifest
    if not path.exists():
        return None
    return json.loads(path.read_text())


def write(index_dir: Path, data: dict[str, Any]) -> None:
    """Write atomically (tmp file + rename)."""
    path = IndexPaths(index_dir).manifest
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**data, "written_at": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=2))
    os.replace(tmp, path)


def differences(recorded: dict[str, Any], wanted: dict[str, Any],
                keys: tuple[str, ...] = BUILD_KEYS) -> list[str]:
    """The keys of ``keys`` whose recorded value differs from ``wanted``'s, in ``keys`` order.
    A recorded manifest without ``embed_variant`` has its backend's default (:func:`variant_of`)."""
    recorded = {**recorded, "embed_variant": variant_of(recorded)}
    return [k for k in keys if recorded.get(k) != wanted[k]]


def check(recorded: dict[str, Any], wanted: dict[str, Any], name: str,
          keys: tuple[str, ...] = BUILD_KEYS) -> None:
    """Raise IndexMismatchError naming every key of ``keys`` that differs (:func:`differences`),
    both values, and the rebuild command."""
    shown = {**recorded, "embed_variant": variant_of(recorded)}
    diffs = [f"{k}: index has {shown.get(k)!r}, settings say {wanted[k]!r}"
             for k in differences(recorded, wanted, keys)]
    if diffs:
        raise IndexMismatchError(
            f"index {name!r} was built with other settings ({'; '.join(diffs)}). Rebuild it: "
            f"delete it (paperchat index PATH --name {name} --rebuild) or restore the settings.")
