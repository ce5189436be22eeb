"""How an index was built, recorded beside it (STYLE.md 8), and the check that settings match.

``manifest.json`` in the index directory holds the embedding model, its dimension, the embedding
backend, the chunking parameters and the normaliser version, plus counts and the build time. The
same build keys are stored in the Chroma collection's metadata. Vectors from another model or
chunking are not comparable, so a mismatch raises :class:`IndexMismatchError` telling the user to
rebuild.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from index.text import NORMALISER_VERSION
from rag.errors import IndexMismatchError

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
#: Keys whose values must match between the index and the settings in use.
BUILD_KEYS = ("format_version", "embedder", "dim", "embed_backend", "chunk_tokens",
              "chunk_overlap", "normaliser_version")


def build_keys(settings, dim: int) -> dict[str, Any]:
    """The build-defining values for ``settings`` and an embedder of dimension ``dim``."""
    return {"format_version": FORMAT_VERSION, "embedder": settings.embedder, "dim": int(dim),
            "embed_backend": settings.embed_backend, "chunk_tokens": settings.chunk_tokens,
            "chunk_overlap": settings.chunk_overlap, "normaliser_version": NORMALISER_VERSION}


def read(index_dir: Path) -> dict[str, Any] | None:
    """The manifest of ``index_dir``, or None when there is none."""
    path = Path(index_dir) / MANIFEST
    if not path.exists():
        return None
    return json.loads(path.read_text())


def write(index_dir: Path, data: dict[str, Any]) -> None:
    """Write atomically (tmp file + rename)."""
    path = Path(index_dir) / MANIFEST
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**data, "written_at": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=2))
    os.replace(tmp, path)


def check(recorded: dict[str, Any], wanted: dict[str, Any], name: str) -> None:
    """Raise IndexMismatchError naming every differing key and the rebuild command."""
    diffs = [f"{k}: index has {recorded.get(k)!r}, settings say {wanted[k]!r}"
             for k in BUILD_KEYS if recorded.get(k) != wanted[k]]
    if diffs:
        raise IndexMismatchError(
            f"index {name!r} was built with other settings ({'; '.join(diffs)}). Rebuild it: "
            f"delete it (paperchat index PATH --name {name} --rebuild) or restore the settings.")
