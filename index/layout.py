"""A 2-D map of every paper of an index, computed at index time and stored beside the manifest.

Paper vectors: each paper's L2-normalised mean of its stored chunk vectors (:mod:`index.vectors`,
the centroid that :meth:`rag.retrieve.retriever.Retriever.feedback_query` uses), taken from the index's
``paper_vectors.npz`` when the build has just refreshed it, else read from the store by chunk id
in batches of :data:`VECTOR_BATCH` papers; shape (n_papers, dim) float32.

2-D method: t-SNE by openTSNE on those vectors, seeded; PCA for a handful of papers
(:mod:`index.layout_2d`, which also measures how well a map keeps each paper's neighbours).

Topic labels: density clusters of the 2-D map, each labelled by its most distinctive keywords and
placed at the cluster's median point (:mod:`index.layout_labels`).

Storage: ``layout.npz`` in the index directory (:data:`rag.paths.LAYOUT_FILE`), written
atomically: ids, xy (float32), the labels, the method and its parameters, each paper's text hash
and the catalog fingerprint it was computed for (:func:`index.catalog.catalog_fingerprint`).
:func:`ensure_layout` loads it when that fingerprint is the manifest's and otherwise computes and
saves it, so an index built before maps existed gets one on first use.

Updates: a build that changed papers calls :func:`refresh_layout` before writing the manifest.
When at most :data:`INCREMENTAL_SHARE` of the papers are new or have new text (counted since the
last full fit), the old positions stay and each new paper is placed beside its most similar old
paper (:func:`index.layout_2d.place_new`: better and faster here than openTSNE's ``transform``,
measured); otherwise the map is fitted again. Metadata-only changes keep every position and only
redo the labels.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from index.layout_2d import embed_2d, place_new
from index.layout_labels import Label, cluster_labels, min_cluster_size
from index.vectors import VECTOR_BATCH, PaperVectors, from_store
from rag.paths import LAYOUT_FILE, IndexPaths
from rag.types import Paper

if TYPE_CHECKING:
    from rag.backends.store import ChromaStore
    from rag.settings import Settings


#: Version of the file's layout; another version is recomputed.
FORMAT_VERSION = 1
#: New or re-embedded papers, as a share of the index, up to which a build places them into the
#: old map instead of fitting a new one (counted since the last full fit).
INCREMENTAL_SHARE = 0.05
#: Smallest index that is updated incrementally (below it a full fit is cheap).
MIN_INCREMENTAL = 1000


Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


@dataclass
class Layout:
    """Map positions of an index's papers.

    ``ids``: paper ids, the row order of ``xy``; ``xy``: shape (n, 2) float32, map units
    (arbitrary; only distances between points mean anything); ``labels``: topic labels;
    ``method``: how it was made (library, version, parameters); ``fingerprint``: the catalog
    fingerprint it was computed for. ``text_hashes`` (each paper's title+abstract hash, same
    order as ``ids``) and ``params`` let a later build place only new papers.
    """

    ids: list[str]
    xy: np.ndarray
    labels: list[Label]
    method: str
    fingerprint: str
    text_hashes: list[str] = field(default_factory=list)
    params: dict = field(default_factory=dict)


# --- paper vectors ---------------------------------------------------------------------------


def paper_vectors(store: ChromaStore, ids: Sequence[str], n_chunks: Mapping[str, int],
                  batch: int = VECTOR_BATCH, saved: PaperVectors | None = None
                  ) -> tuple[list[str], np.ndarray]:
    """Each paper's vector (:mod:`index.vectors`): from ``saved`` when it holds them all, else
    read from ``store``. Returns ``(ids found, vectors (found, dim) float32)``, rows in the order
    of ``ids``."""
    if saved is not None:
        found, vectors = saved.take(ids)
        if len(found) == len(ids):
            return found, vectors
    return from_store(store, ids, n_chunks, batch)


# --- compute, save, load -----------------------------------------------------------------------


def compute_layout(store: ChromaStore, catalog_papers: dict[str, Paper],
                   n_chunks: dict[str, int], *, seed: int = 0, log: Log = _stderr,
                   fingerprint: str = "",
                   text_hashes: Mapping[str, str] | None = None,
                   vectors: PaperVectors | None = None) -> Layout:
    """A fresh map of every paper in ``catalog_papers`` that has stored vectors (ids sorted).

    Args:
        store: the index's :class:`rag.backends.store.ChromaStore`.
        catalog_papers: paper id -> Paper (keywords and titles make the labels).
        n_chunks: paper id -> chunk count, from the catalog (names the chunk ids to fetch).
        seed: random seed of t-SNE (same vectors and seed: same map).
        fingerprint, text_hashes: recorded in the layout (the catalog's fingerprint and each
            paper's title+abstract hash), so a later build can tell what changed; by default
            derived from the papers (:func:`index.catalog.content_hash`, as the catalog does).
        vectors: the index's paper vectors when already at hand (else read from ``store``).
    """
    if not fingerprint or text_hashes is None:
        from index.catalog import catalog_fingerprint, content_hash

        full = {pid: content_hash(p) for pid, p in catalog_papers.items()}
        fingerprint = fingerprint or catalog_fingerprint(full)
        text_hashes = {pid: h.split(":")[0] for pid, h in full.items()} \
            if text_hashes is None else text_hashes
    t0 = time.perf_counter()
    ids, vectors = paper_vectors(store, sorted(catalog_papers), n_chunks, saved=vectors)
    t1 = time.perf_counter()
    missing = len(catalog_papers) - len(ids)
    if missing:
        log(f"map layout: {missing} papers have no stored vectors and are left off the map")
    if not ids:
        return Layout([], np.zeros((0, 2), np.float32), [], "empty", fingerprint, [],
                      {"seed": seed, "n": 0})
    xy, method, params = embed_2d(vectors, seed)
    t2 = time.perf_counter()
    labels = cluster_labels(xy, [catalog_papers[i] for i in ids])
    t3 = time.perf_counter()
    params = {**params, "n": len(ids), "fit_papers": len(ids), "placed_since_fit": 0,
              "min_cluster_size": min_cluster_size(len(ids)),
              "seconds": {"vectors": round(t1 - t0, 2), "fit": round(t2 - t1, 2),
                          "labels": round(t3 - t2, 2)}}
    if len(ids) >= 200:
        log(f"map layout: {len(ids)} papers, {method}, {len(labels)} labels; vectors "
            f"{t1 - t0:.1f} s, map {t2 - t1:.1f} s, labels {t3 - t2:.1f} s")
    hashes = text_hashes or {}
    return Layout(ids, xy, labels, method, fingerprint, [hashes.get(i, "") for i in ids], params)


def save_layout(index_dir: Path, layout: Layout) -> None:
    """Write ``layout.npz`` in ``index_dir`` atomically (temporary file, then rename)."""
    path = IndexPaths(index_dir).layout
    meta = {"format_version": FORMAT_VERSION, "method": layout.method,
            "fingerprint": layout.fingerprint, "params": layout.params,
            "labels": [[lb.text, lb.x, lb.y, lb.size] for lb in layout.labels]}
    fd, tmp = tempfile.mkstemp(prefix=f".{LAYOUT_FILE}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, ids=np.asarray(layout.ids, dtype=str),
                     xy=np.asarray(layout.xy, dtype=np.float32).reshape(-1, 2),
                     text_hashes=np.asarray(layout.text_hashes, dtype=str),
                     meta=np.asarray(json.dumps(meta, ensure_ascii=False)))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_layout(index_dir: Path) -> Layout | None:
    """The saved layout of ``index_dir``; None when absent, unreadable or of another format."""
    path = IndexPaths(index_dir).layout
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("format_version") != FORMAT_VERSION:
                return None
            ids = [str(i) for i in data["ids"]]
            xy = np.asarray(data["xy"], dtype=np.float32).reshape(-1, 2)
            hashes = [str(h) for h in data["text_hashes"]]
        if len(xy) != len(ids):
            return None
        labels = [Label(str(t), float(x), float(y), int(s)) for t, x, y, s in meta["labels"]]
        return Layout(ids, xy, labels, str(meta["method"]), str(meta["fingerprint"]),
                      hashes if len(hashes) == len(ids) else [], dict(meta.get("params") or {}))
    except Exception:  # noqa: BLE001 - OSError, ValueError, KeyError, zipfile.BadZipFile ...
        return None


# --- keeping it current --------------------------------------------------------------------------


def _incremental(old: Layout, store: ChromaStore, papers: dict[str, Paper],
                 n_chunks: dict[str, int], hashes: dict[str, str], fingerprint: str,
                 log: Log, vectors: PaperVectors | None = None) -> Layout | None:
    """The old map with removed papers dropped and new or re-embedded ones placed into it, or
    None when a full fit is due (see the module docstring)."""
    text = {pid: h.split(":")[0] for pid, h in hashes.items()}
    old_text = dict(zip(old.ids, old.text_hashes)) if old.text_hashes else {}
    if not old.method.startswith("openTSNE") or not old_text:
        return None
    keep = [i for i, pid in enumerate(old.ids) if pid in papers and old_text[pid] == text[pid]]
    kept_ids = [old.ids[i] for i in keep]
    new_ids = sorted(set(papers) - set(kept_ids))
    fit_papers = int(old.params.get("fit_papers", len(old.ids)))
    placed = int(old.params.get("placed_since_fit", 0)) + len(new_ids)
    n = len(papers)
    if n < MIN_INCREMENTAL or len(kept_ids) < MIN_INCREMENTAL or \
            placed > INCREMENTAL_SHARE * max(n, fit_papers):
        return None
    t0 = time.perf_counter()
    xy = old.xy[keep]
    if new_ids:
        ids_kept, old_vectors = paper_vectors(store, kept_ids, n_chunks, saved=vectors)
        found, new_vectors = paper_vectors(store, new_ids, n_chunks, saved=vectors)
        if ids_kept != kept_ids:
            return None
        new_ids = found
        if new_ids:
            xy = np.concatenate([xy, place_new(old_vectors, xy, new_vectors)])
    ids = kept_ids + new_ids
    order = np.argsort(ids, kind="stable")
    ids = [ids[i] for i in order]
    xy = np.asarray(xy[order], dtype=np.float32)
    labels = cluster_labels(xy, [papers[i] for i in ids])
    params = {**old.params, "n": len(ids), "fit_papers": fit_papers,
              "placed_since_fit": int(old.params.get("placed_since_fit", 0)) + len(new_ids)}
    log(f"map layout: kept {len(kept_ids)} positions, placed {len(new_ids)} papers into the map "
        f"({time.perf_counter() - t0:.1f} s)")
    return Layout(ids, xy, labels, old.method, fingerprint, [text[i] for i in ids], params)


def refresh_layout(index_dir: Path, store: ChromaStore, catalog, fingerprint: str, *,
                   seed: int = 0, log: Log = _stderr,
                   vectors: PaperVectors | None = None) -> Layout:
    """Bring ``index_dir``'s layout up to the catalog (fingerprint ``fingerprint``): incremental
    when few papers are new (see the module docstring), else a full fit; saved, then returned.
    ``catalog`` is an :class:`index.catalog.Catalog`; ``vectors`` its paper vectors when at hand
    (:func:`index.vectors.refresh_vectors`), else they are read from ``store``."""
    hashes = catalog.hashes()
    papers = {p.id: p for p, _ in catalog.papers()}
    n_chunks = catalog.chunk_counts()
    old = load_layout(index_dir)
    if old is not None and old.fingerprint == fingerprint:
        return old  # (a build killed after writing it, before its manifest)
    layout = None
    if old is not None:
        layout = _incremental(old, store, papers, n_chunks, hashes, fingerprint, log, vectors)
    if layout is None:
        text = {pid: h.split(":")[0] for pid, h in hashes.items()}
        layout = compute_layout(store, papers, n_chunks, seed=seed, log=log,
                                fingerprint=fingerprint, text_hashes=text, vectors=vectors)
    save_layout(index_dir, layout)
    return layout


def ensure_layout(settings: Settings, name: str, *, log: Log = _stderr) -> Layout:
    """The map of index ``name``: the saved one when it was computed for the catalog the manifest
    names (its ``catalog_fingerprint``), else computed now and saved (an index built before maps
    existed, or with ``map_layout`` off, gets one on first use: about a minute at 20,000 papers).

    While a build is writing the index (its catalog differs from the manifest, or its dense fill
    is not done), the layout of the papers embedded so far is returned without being saved.

    Raises:
        IndexNotFoundError: no such index.
    """
    from index import manifest
    from index.catalog import catalog_fingerprint
    from index.reader import index_exists, open_catalog, open_chunks
    from rag.errors import IndexNotFoundError

    index_dir = settings.index_dir(name)
    if not index_exists(settings, name):
        raise IndexNotFoundError(f"no index named {name!r} under {settings.home}; build it "
                                 f"with: paperchat index PATH --name {name}")
    catalog = open_catalog(index_dir)
    hashes = catalog.hashes()
    now = catalog_fingerprint(hashes)
    recorded = manifest.read(index_dir) or {}
    wanted = recorded.get("catalog_fingerprint") or now
    saved = load_layout(index_dir)
    if saved is not None and saved.fingerprint in (wanted, now):
        return saved  # (== now: written by a build that has not yet written its manifest)
    papers = {p.id: p for p, _ in catalog.papers()}
    # while the dense fill runs: the papers embedded so far, from its batches (index.dense)
    store = open_chunks(index_dir, settings, name, catalog, papers, recorded)
    if now == wanted and not getattr(store, "building", False):
        return refresh_layout(index_dir, store, catalog, now, log=log)
    log("map layout: the index is being written; this map of it as it is now is not saved")
    return compute_layout(store, papers, catalog.chunk_counts(), log=log, fingerprint=now,
                          text_hashes={pid: h.split(":")[0] for pid, h in hashes.items()})
