"""``paperchat bench index``: papers per second of :func:`index.build.build_index` against a naive
sentence-transformers + Chroma baseline on the same sample of the ICLR 2026 list, measured
interleaved in one process (:func:`bench_index`), with the sampling it uses
(:func:`sample_papers`).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from rag.errors import PaperchatError
from rag.evaluate.bench import _peak_rss_mb

if TYPE_CHECKING:
    from rag.settings import Settings

#: The ICLR 2026 submission list (19,630 papers) beside the project: ``../shared/data``.
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "iclr2026_all.jsonl"


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
        build's wall seconds per :data:`index.build_summary.STAGES` stage, summed over rounds),
        ``tokens_per_paper`` (embedded, special tokens included) against ``own_tokens_per_paper``
        (the paper's ``title. abstract`` with [CLS]/[SEP], uncut) and their ratio), ``ratio``
        (ours / baseline papers/s over the whole run), ``round_ratios`` and their median,
        ``export_seconds`` and ``peak_rss_mb``.
    Raises:
        PaperchatError: the paper list is missing.
    """
    from index.build import build_index
    from index.source_records import LoadResult
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
    from index.build import search_text
    from index.build_summary import STAGES

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
