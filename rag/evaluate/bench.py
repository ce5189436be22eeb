"""Benchmarks behind ``paperchat bench {index,query,answer,layout} [--json]``: they print figures
and never pass or fail on time.

Each ``bench_<what>(settings) -> dict`` returns plain JSON-able values (rates per second, times in
seconds, memory in MB); :func:`format_result` prints any such dict as indented ``key: value``
lines. CPU figures on a shared machine are noisy: compare the rates of one run (measured
interleaved in one process), not runs on different days.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from rag.errors import PaperchatError

if TYPE_CHECKING:
    from rag.settings import Settings

#: The ICLR 2026 submission list (19,630 papers) beside the project: ``../shared/data``.
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "iclr2026_all.jsonl"


def _peak_rss_mb() -> float:
    """Peak resident set size of this process so far, MB (``ru_maxrss`` is in KB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


class _TimedEmbedder:
    """Wraps an embedder and adds up the seconds spent in ``embed`` (the embed-only split)."""

    def __init__(self, inner):
        self.inner = inner
        self.name, self.dim, self.max_tokens = inner.name, inner.dim, inner.max_tokens
        self.seconds = 0.0

    @property
    def tokenizer(self):
        return self.inner.tokenizer

    def embed(self, texts: Sequence[str]):
        t0 = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t0


def sample_papers(path: Path, n: int) -> tuple[list, str]:
    """Every k-th valid paper of the list at ``path`` (k = valid papers // n), the first ``n``
    of them: deterministic, spread over the whole file. Returns (papers, description)."""
    from index.sources import load_papers

    if not Path(path).exists():
        raise PaperchatError(f"benchmark data {path} is missing: 'paperchat bench index' reads "
                             "the ICLR 2026 list from ../shared/data/iclr2026_all.jsonl beside "
                             "the project; put it there")
    papers = load_papers(path).papers
    step = max(1, len(papers) // n)
    chosen = papers[::step][:n]
    return chosen, (f"{len(chosen)} papers: 1 in {step} (positions 0, {step}, {2 * step}, ...) of "
                    f"the {len(papers)} valid papers of {Path(path).name}")


def bench_index(settings: Settings, *, n_papers: int = 500, rounds: int = 4,
                data: Path | None = None,
                log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict[str, Any]:
    """Index the same sample of papers two ways in one process and compare papers/s.

    - baseline: sentence-transformers (torch fp32) ``encode`` of each ``title. abstract`` in one
      piece (batch 32, cut at 256 tokens: the rest of a long abstract is lost), then
      ``collection.add`` of 256 vectors at a time into a fresh embedded Chroma collection.
    - ours: :func:`index.build.build_index` with ``settings.embed_backend``: normalisation,
      chunking so that every token is embedded, Chroma upserts, the paper catalog and BM25.

    The sample is cut into ``rounds`` consecutive parts; each round indexes its part both ways
    (alternating which goes first) into the same two growing indexes, so load changes on a shared
    machine hit both. Models are loaded (and the ONNX model exported, if not cached) before the
    clock starts; indexes go to a temporary directory; the ONNX model cache is the user's
    (``settings.home/models``).

    Returns:
        A dict: ``cpu`` (:func:`rag.cpu.cpu_features`), ``papers``, ``sample``, ``baseline`` and
        ``ours``
        (``papers_per_s``, ``seconds``, ``embed_seconds``, ``chunks``, ``stages_seconds`` (our
        build's wall seconds per :data:`index.build.STAGES` stage, summed over rounds),
        ``tokens_per_paper`` (embedded, special tokens included) against ``own_tokens_per_paper``
        (the paper's ``title. abstract`` with [CLS]/[SEP], uncut) and their ratio), ``ratio``
        (ours / baseline papers/s over the whole run), ``round_ratios`` and their median,
        ``export_seconds`` and ``peak_rss_mb``.
    Raises:
        PaperchatError: the paper list is missing.
    """
    from index.build import build_index
    from index.sources import LoadResult
    from rag import offline
    from rag.backends.embedder import SentenceTransformerEmbedder, make_embedder
    from rag.understand.names import write_names

    offline.enforce()
    papers, sample = sample_papers(Path(data or DEFAULT_DATA), n_papers)
    n = len(papers)
    rounds = max(1, min(rounds, n))
    rss = {"start": _peak_rss_mb()}

    log(f"bench index: {sample}; loading models")
    ours_embedder = make_embedder(settings)
    ours_embedder.embed(["warm-up"])
    _ = ours_embedder.tokenizer
    export_seconds = float(getattr(ours_embedder, "export_seconds", 0.0))
    rss["after_loading_ours"] = _peak_rss_mb()
    baseline_embedder = SentenceTransformerEmbedder(name=settings.embedder, batch_size=32)
    baseline_embedder.embed(["warm-up"])
    rss["after_loading_baseline"] = _peak_rss_mb()
    timed = _TimedEmbedder(ours_embedder)

    import chromadb
    from chromadb.config import Settings as ChromaSettings

    base = {"seconds": 0.0, "embed_seconds": 0.0, "write_seconds": 0.0}
    ours = {"seconds": 0.0, "tokens": 0}
    stages: dict[str, float] = {}
    round_ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="paperchat-bench-") as tmp:
        client = chromadb.PersistentClient(path=str(Path(tmp) / "baseline"),
                                           settings=ChromaSettings(anonymized_telemetry=False))
        collection = client.get_or_create_collection(
            "baseline", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None)
        bench_settings = settings.model_copy(update={"home": Path(tmp) / "home", "chroma_url": None})

        def run_baseline(part) -> float:
            t0 = time.perf_counter()
            texts = [f"{p.title}. {p.abstract}" for p in part]
            vectors = baseline_embedder.embed(texts)
            t1 = time.perf_counter()
            for s in range(0, len(part), 256):
                collection.add(ids=[p.id for p in part[s:s + 256]], embeddings=vectors[s:s + 256],
                               documents=texts[s:s + 256],
                               metadatas=[{"paper_id": p.id, "title": p.title}
                                          for p in part[s:s + 256]])
            t2 = time.perf_counter()
            base["embed_seconds"] += t1 - t0
            base["write_seconds"] += t2 - t1
            base["seconds"] += t2 - t0
            return t2 - t0

        summary = None

        def run_ours(part) -> float:
            nonlocal summary
            t0 = time.perf_counter()
            summary = build_index(LoadResult(papers=list(part)), settings=bench_settings,
                                  embedder=timed, name="bench", progress=False, log=lambda m: None,
                                  names=write_names)
            elapsed = time.perf_counter() - t0
            ours["seconds"] += elapsed
            ours["tokens"] += summary.tokens_embedded
            for stage, seconds in summary.stages.items():
                stages[stage] = stages.get(stage, 0.0) + seconds
            return elapsed

        bounds = [round(i * n / rounds) for i in range(rounds + 1)]
        for r in range(rounds):
            part = papers[bounds[r]:bounds[r + 1]]
            if r % 2 == 0:
                tb, to = run_baseline(part), run_ours(part)
            else:
                to, tb = run_ours(part), run_baseline(part)
            round_ratios.append(round(tb / to, 3))
            log(f"round {r + 1}/{rounds}: {len(part)} papers; baseline {len(part) / tb:.1f} "
                f"papers/s, ours {len(part) / to:.1f} papers/s ({tb / to:.2f}x)")
        baseline_count = collection.count()

    chunks = summary.chunks if summary else 0
    from index.build import STAGES, search_text

    tokenizer = ours_embedder.tokenizer
    own = sum(len(ids) for ids in tokenizer(
        [". ".join(search_text(p)[:2]) for p in papers], add_special_tokens=True)["input_ids"])
    from rag.cpu import cpu_features

    result = {
        "benchmark": "index",
        "cpu": cpu_features(),
        "papers": n,
        "sample": sample,
        "rounds": rounds,
        "embed_backend": settings.embed_backend,
        "embed_variant": getattr(ours_embedder, "variant", None),
        "baseline": {
            "method": "sentence-transformers torch fp32, title+abstract in one piece (batch 32, "
                      "cut at 256 tokens) + Chroma add",
            "papers_per_s": round(n / base["seconds"], 2),
            "seconds": round(base["seconds"], 2),
            "embed_seconds": round(base["embed_seconds"], 2),
            "write_seconds": round(base["write_seconds"], 2),
            "chunks": baseline_count,
        },
        "ours": {
            "method": f"index.build.build_index, {settings.embed_backend} embedder, every token "
                      "embedded (chunks), Chroma + catalog + BM25",
            "papers_per_s": round(n / ours["seconds"], 2),
            "seconds": round(ours["seconds"], 2),
            "embed_seconds": round(timed.seconds, 2),
            "other_seconds": round(ours["seconds"] - timed.seconds, 2),
            "chunks": chunks,
            "chunks_per_paper": round(chunks / n, 3) if n else 0.0,
            "chunks_per_s": round(chunks / ours["seconds"], 2),
            "stages_seconds": {k: round(stages[k], 2) for k in STAGES if k in stages},
            "tokens_per_paper": round(ours["tokens"] / n, 1) if n else 0.0,
            "own_tokens_per_paper": round(own / n, 1) if n else 0.0,
            "tokens_embedded_over_own": round(ours["tokens"] / own, 3) if own else 0.0,
        },
        "ratio": round(base["seconds"] / ours["seconds"], 3),
        "round_ratios": round_ratios,
        "ratio_median_of_rounds": round(statistics.median(round_ratios), 3),
        "export_seconds": round(export_seconds, 2),
        "peak_rss_mb": {**rss, "end": _peak_rss_mb()},
    }
    return result


def _format_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "null"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, dict):  # inside a list
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def format_result(result: dict[str, Any], indent: int = 0) -> str:
    """Any benchmark dict as indented ``key: value`` lines (nested dicts indented by two spaces;
    floats to 4 significant digits)."""
    lines = []
    pad = " " * indent
    for key, value in result.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            if value:
                lines.append(format_result(value, indent + 2))
        else:
            lines.append(f"{pad}{key}: {_format_value(value)}")
    return "\n".join(lines)


def __getattr__(name: str):
    """``bench_query`` and ``bench_answer`` live in :mod:`rag.evaluate.bench_query` (imported on use)."""
    if name in ("bench_query", "bench_answer"):
        try:
            module = importlib.import_module("rag.evaluate.bench_query")
        except ModuleNotFoundError as exc:
            if exc.name != "rag.evaluate.bench_query":
                raise
            raise AttributeError(f"paperchat bench {name[6:]} is not available") from None
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- layout ---------------------------------------------------------------------------------------

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

        from index.layout import N_JOBS, tsne_2d

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
    :func:`index.layout.knn_preservation`: the share of papers whose nearest neighbour on the map
    is among their 10 nearest in embedding space (cosine), higher is better; a random map scores
    about 10 / n. Peak RSS is each child's own (``VmHWM``). ``index_time`` runs what a build
    runs (vectors from the store, t-SNE, labels) in a fresh process. ``incremental`` fits t-SNE
    on 95% of the papers (every 20th left out) in this process and places the other 5% into that
    map, with :func:`index.layout.place_new` and with openTSNE's ``transform``.

    Raises:
        IndexNotFoundError: the index does not exist.
    """
    import importlib.util

    import numpy as np

    from index.layout import knn_preservation, paper_vectors
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
                got, wall = _run_child(f"from rag.evaluate.bench import _layout_child; _layout_child("
                                       f"{method!r}, {vec_path!r}, {out!r}, {seed})")
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
            got, wall = _run_child(f"from rag.evaluate.bench import _layout_index_child; "
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
    :func:`index.layout.place_new` and by openTSNE's ``transform``; kNN preservation of all
    papers and of the placed ones, against the full fit's."""
    import numpy as np
    from openTSNE import TSNEEmbedding
    from openTSNE.affinity import PerplexityBasedNN

    from index.layout import N_JOBS, PERPLEXITY, knn_preservation, place_new, tsne_2d

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

