"""``paperchat bench layout``: 2-D map methods (PCA, openTSNE, UMAP, PaCMAP) compared on an
index's paper vectors, each run in a fresh Python process (:func:`bench_layout`), plus the
index-time path and the placement of new papers into an existing map.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from rag.evaluate.bench import _peak_rss_mb

if TYPE_CHECKING:
    from rag.settings import Settings

#: 2-D methods ``paperchat bench layout`` compares, each run in a fresh process (imports and
#: numba JIT compilation included). A library that is not installed is reported as skipped.
LAYOUT_METHODS = ("pca", "opentsne", "umap", "pacmap")


def _own_peak_rss_mb() -> float:
    """Peak RSS of this process's own memory, MB: ``VmHWM`` of /proc/self/status on Linux.
    ``ru_maxrss`` is not used in the benchmark's child processes: Linux carries it over from the
    parent through fork and exec, so every child would report at least the parent's size."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return _peak_rss_mb()


def _layout_child(method: str, vectors_path: str, out_path: str, seed: int) -> None:
    """Run one 2-D method in this (fresh) process on the vectors at ``vectors_path``; save the
    map to ``out_path`` and print one JSON line: import and fit seconds, threads, peak RSS."""
    import numpy as np

    x = np.load(vectors_path)
    t0 = time.perf_counter()
    if method == "pca":
        from sklearn.decomposition import PCA

        t1 = time.perf_counter()
        xy, threads = PCA(n_components=2, random_state=seed).fit_transform(x), "BLAS default"
        params = "sklearn PCA n_components=2"
    elif method == "opentsne":
        import openTSNE  # noqa: F401 - imported before the clock, as the others

        from index.layout_2d import N_JOBS, tsne_2d

        t1 = time.perf_counter()
        xy, params, _ = tsne_2d(x, seed)
        threads = str(N_JOBS)
    elif method == "umap":
        import umap

        t1 = time.perf_counter()
        model = umap.UMAP(n_neighbors=15, min_dist=0.1, metric="cosine", random_state=seed)
        xy = model.fit_transform(x)
        params = f"umap-learn {umap.__version__ if hasattr(umap, '__version__') else ''} " \
                 "n_neighbors=15 min_dist=0.1 metric=cosine"
        threads = "1 (random_state set: umap-learn runs single-threaded)"
    elif method == "pacmap":
        import pacmap

        t1 = time.perf_counter()
        xy = pacmap.PaCMAP(n_components=2, n_neighbors=10, random_state=seed
                           ).fit_transform(x, init="pca")
        params = f"PaCMAP {getattr(pacmap, '__version__', '')} n_neighbors=10 init=pca"
        threads = f"numba default ({os.cpu_count()})"
    else:
        raise ValueError(method)
    t2 = time.perf_counter()
    np.save(out_path, np.asarray(xy, dtype=np.float32))
    print(json.dumps({"import_s": t1 - t0, "fit_s": t2 - t1, "method": params, "threads": threads,
                      "peak_rss_mb": _own_peak_rss_mb()}))


def _layout_index_child(home: str, name: str, out_path: str) -> None:
    """The index-time path in this (fresh) process: paper vectors from the store, t-SNE and
    labels (:func:`index.layout.compute_layout`), nothing saved."""
    import numpy as np

    from index.layout import compute_layout
    from index.reader import open_catalog, open_store
    from rag.settings import Settings

    settings = Settings(home=Path(home))
    index_dir = settings.index_dir(name)
    catalog = open_catalog(index_dir)
    store = open_store(index_dir, settings, name, create=False)
    layout = compute_layout(store, {p.id: p for p, _ in catalog.papers()}, catalog.chunk_counts(),
                            log=lambda m: None)
    np.save(out_path, layout.xy)
    print(json.dumps({"method": layout.method, "labels": len(layout.labels),
                      "phases_s": layout.params.get("seconds", {}),
                      "peak_rss_mb": _own_peak_rss_mb()}))


def _run_child(code: str, timeout_s: float = 1800) -> tuple[dict[str, Any], float]:
    import subprocess

    root = str(Path(__file__).resolve().parents[2])
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {root!r}); "
                           + code], capture_output=True, text=True, timeout=timeout_s, cwd=root)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else
                           f"exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def bench_layout(settings: Settings, *, methods: Sequence[str] = LAYOUT_METHODS, rounds: int = 3,
                 seed: int = 0, incremental: bool = True,
                 log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)
                 ) -> dict[str, Any]:
    """Compare 2-D map methods on the paper vectors of index ``settings.index``.

    Each method runs ``rounds`` times, each in a fresh Python process (``python -c``), so its
    time includes importing the library and numba's JIT compilation (UMAP, PaCMAP); figures are
    medians over the rounds (``peak_rss_mb``: the largest). Quality is
    :func:`index.layout_2d.knn_preservation`: the share of papers whose nearest neighbour on the map
    is among their 10 nearest in embedding space (cosine), higher is better; a random map scores
    about 10 / n. Peak RSS is each child's own (``VmHWM``). ``index_time`` runs what a build
    runs (vectors from the store, t-SNE, labels) in a fresh process. ``incremental`` fits t-SNE
    on 95% of the papers (every 20th left out) in this process and places the other 5% into that
    map, with :func:`index.layout_2d.place_new` and with openTSNE's ``transform``.

    Raises:
        IndexNotFoundError: the index does not exist.
    """
    import importlib.util

    import numpy as np

    from index.layout import paper_vectors
    from index.layout_2d import knn_preservation
    from index.reader import open_catalog, open_store
    from rag.errors import IndexNotFoundError
    from rag.paths import IndexPaths

    name = settings.index
    index_dir = settings.index_dir(name)
    if not IndexPaths(index_dir).catalog.exists():
        raise IndexNotFoundError(f"no index named {name!r} under {settings.home}; build it with: "
                                 f"paperchat index PATH --name {name}")
    catalog = open_catalog(index_dir)
    store = open_store(index_dir, settings, name, create=False)
    t0 = time.perf_counter()
    ids, vectors = paper_vectors(store, sorted(catalog.chunk_counts()), catalog.chunk_counts())
    read_s = time.perf_counter() - t0
    n = len(ids)
    log(f"bench layout: index {name!r}, {n} papers, vectors {vectors.shape} read in {read_s:.1f} s")
    result: dict[str, Any] = {"benchmark": "layout", "index": name, "papers": n,
                              "dim": int(vectors.shape[1]) if n else 0,
                              "vectors_read_s": round(read_s, 2), "rounds": rounds,
                              "cpus": os.cpu_count(), "methods": {}}
    modules = {"pca": "sklearn", "opentsne": "openTSNE", "umap": "umap", "pacmap": "pacmap"}
    with tempfile.TemporaryDirectory(prefix="paperchat-layout-") as tmp:
        vec_path = str(Path(tmp) / "vectors.npy")
        np.save(vec_path, vectors)
        for method in methods:
            module = modules.get(method, method)
            if importlib.util.find_spec(module) is None:
                result["methods"][method] = {"skipped": f"{module} is not installed"}
                continue
            runs = []
            for r in range(rounds):
                out = str(Path(tmp) / f"{method}.npy")
                got, wall = _run_child(f"from rag.evaluate.bench_layout import _layout_child; "
                                       f"_layout_child({method!r}, {vec_path!r}, {out!r}, {seed})")
                runs.append({**got, "wall_s": wall, "quality": knn_preservation(vectors,
                                                                                 np.load(out))})
                log(f"  {method} round {r + 1}: {wall:.1f} s wall (import {got['import_s']:.1f}, "
                    f"fit {got['fit_s']:.1f}), {got['peak_rss_mb']:.0f} MB, kNN@10 "
                    f"{runs[-1]['quality']:.3f}")
            result["methods"][method] = {
                "method": runs[0]["method"], "threads": runs[0]["threads"],
                "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
                "import_s": round(statistics.median(r["import_s"] for r in runs), 2),
                "fit_s": round(statistics.median(r["fit_s"] for r in runs), 2),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
                "knn10_nn1": round(statistics.median(r["quality"] for r in runs), 4),
                "wall_s_rounds": [round(r["wall_s"], 1) for r in runs]}
        runs = []
        for r in range(rounds):
            out = str(Path(tmp) / "index.npy")
            got, wall = _run_child(f"from rag.evaluate.bench_layout import _layout_index_child; "
                                   f"_layout_index_child({str(settings.home)!r}, {name!r}, "
                                   f"{out!r})")
            runs.append({**got, "wall_s": wall})
            log(f"  index-time path round {r + 1}: {wall:.1f} s wall, phases {got['phases_s']}, "
                f"{got['peak_rss_mb']:.0f} MB")
        result["index_time"] = {
            "method": runs[0]["method"], "labels": runs[0]["labels"],
            "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
            "phases_s": runs[len(runs) // 2]["phases_s"],
            "wall_s_rounds": [round(r["wall_s"], 1) for r in runs]}
    if incremental and n >= 40:
        result["incremental"] = _bench_placement(vectors, seed, result, log)
    result["peak_rss_mb_parent"] = _peak_rss_mb()
    result["note"] = ("cold processes, medians of rounds; the machine may be shared: compare "
                      "methods within one run")
    return result


def _bench_placement(vectors, seed: int, result: dict[str, Any], log) -> dict[str, Any]:
    """Every 20th paper (5%) placed into a t-SNE map of the others, by
    :func:`index.layout_2d.place_new` and by openTSNE's ``transform``; kNN preservation of all
    papers and of the placed ones, against the full fit's."""
    import numpy as np
    from openTSNE import TSNEEmbedding
    from openTSNE.affinity import PerplexityBasedNN

    from index.layout_2d import N_JOBS, PERPLEXITY, knn_preservation, place_new, tsne_2d

    n = len(vectors)
    new = np.arange(n) % 20 == 0
    rows = np.flatnonzero(new)
    t0 = time.perf_counter()
    xy_old, _, _ = tsne_2d(vectors[~new], seed)
    fit_s = time.perf_counter() - t0
    out: dict[str, Any] = {"placed": int(new.sum()), "fit_of_the_other_95pct_s": round(fit_s, 2),
                           "full_fit_knn10_nn1": result["methods"].get("opentsne", {})
                           .get("knn10_nn1")}

    def score(xy_new, seconds):
        xy = np.zeros((n, 2), np.float32)
        xy[~new], xy[new] = xy_old, xy_new
        return {"seconds": round(seconds, 2), "knn10_nn1_all": round(knn_preservation(vectors, xy),
                                                                     4),
                "knn10_nn1_placed": round(knn_preservation(vectors, xy, rows=rows), 4)}

    t0 = time.perf_counter()
    ours = place_new(vectors[~new], xy_old, vectors[new])
    out["place_new"] = score(ours, time.perf_counter() - t0)
    t0 = time.perf_counter()
    affinities = PerplexityBasedNN(vectors[~new], perplexity=PERPLEXITY, metric="euclidean",
                                   n_jobs=N_JOBS, random_state=seed)
    embedding = TSNEEmbedding(np.asarray(xy_old, np.float64), affinities, n_jobs=N_JOBS,
                              random_state=seed)
    theirs = np.asarray(embedding.transform(vectors[new]), np.float32)
    out["opentsne_transform"] = score(theirs, time.perf_counter() - t0)
    log(f"  placement of {int(new.sum())} papers: place_new {out['place_new']}, openTSNE "
        f"transform {out['opentsne_transform']} (fit of the other 95%: {fit_s:.1f} s)")
    return out
