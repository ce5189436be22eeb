"""``paperchat bench query`` and ``paperchat bench answer``: latency figures, never pass/fail.

query: every question of ``shared/eval`` (both dev sets) through the full retrieval path used by
answers (query embedding, Chroma, BM25, fusion, refusal check, comparison handling: question in,
ranked hits out), after 5 warm-up questions. Choosing each hit's evidence sentences (embedding
its abstract's sentences, done before the prompt is built) is timed separately. Baseline in the same run: a bare Chroma
``query`` of the already-embedded question (the floor any dense retrieval pays). Medians and p95
in milliseconds, plus the ratio of medians.

answer: time to first token and total time of ``answer()`` with the configured generator on the
index in use, median of 5 runs of the same question (the model is warmed up once first), and the
understanding step's own cost (reading the turn into a plan: slots, the reader's embedding and
its linear heads; ``understand_ms_median``, part of ``retrieve_ms_median``, which is measured
from the start of the call).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rag.errors import PaperchatError

if TYPE_CHECKING:
    from rag.retrieve.retriever import Retriever  # the real one: its Chroma store is measured
    from rag.settings import Settings

EVAL_DIR = Path(__file__).resolve().parents[3] / "shared" / "eval"


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _questions() -> list[str]:
    files = sorted(EVAL_DIR.glob("dev_*.jsonl"))
    if not files:
        raise PaperchatError(f"no question files in {EVAL_DIR}: bench query needs shared/eval")
    out = []
    for f in files:
        for line in f.read_text().splitlines():
            if line.strip():
                out.append(json.loads(line)["question"])
    return out


def bench_query(settings: Settings) -> dict:
    """Retrieval latency at the size of the index in use (``--index``)."""
    from rag.chat.answer import retrieve_for
    from rag.chat.pipeline import Pipeline
    from rag.text import normalise

    pipe = Pipeline(settings)
    retriever = pipe.retriever
    questions = _questions()
    for q in questions[:5]:
        retrieve_for(q, retriever, settings, k=settings.k, filters=None, history=[])
    ours, bare, evid = [], [], []
    for q in questions:
        t0 = time.perf_counter()
        standalone, hits, _ = retrieve_for(q, retriever, settings, k=settings.k, filters=None,
                                           history=[], evidence=False)
        ours.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        retriever.attach_evidence(standalone, hits)
        evid.append((time.perf_counter() - t0) * 1000)
        vec = retriever.embedder.embed([normalise(q)])[0]
        t0 = time.perf_counter()
        retriever.store.query(vec, settings.k * 4)
        bare.append((time.perf_counter() - t0) * 1000)
    return {
        "bench": "query", "index": retriever.name, "papers": len(retriever),
        "chunks": retriever.store.count(), "questions": len(questions),
        "ours_ms": {"median": round(statistics.median(ours), 2), "p95": round(_pct(ours, 95), 2)},
        "evidence_sentences_ms": {"median": round(statistics.median(evid), 2),
                                  "p95": round(_pct(evid, 95), 2)},
        "baseline_chroma_query_ms": {"median": round(statistics.median(bare), 2),
                                     "p95": round(_pct(bare, 95), 2)},
        "ratio_median_ours_over_baseline": round(statistics.median(ours) / statistics.median(bare), 2),
        "ann_recall": ann_recall(retriever, questions),
    }


def ann_recall(retriever: Retriever, questions: list[str], n: int = 200, papers: int = 20) -> dict:
    """How much of the exact nearest-neighbour answer Chroma's HNSW returns: mean (and worst)
    share of the exact ``n`` nearest chunks among the ``n`` returned, and of the exact nearest
    ``papers`` papers (by best chunk) among the returned chunks' first ``papers`` papers. Exact
    search is a matrix product over every stored vector (cosine similarity)."""
    import numpy as np

    from rag.text import normalise
    from rag.types import paper_of

    ids, vectors = retriever.store.all_embeddings()
    if not ids:
        return {}
    ids = np.asarray(ids)
    chunk_r, paper_r = [], []
    for q in questions:
        vec = retriever.embedder.embed([normalise(q)])[0]
        exact = ids[np.argsort(-(vectors @ vec))[:n]]
        got = [m.chunk_id for m in retriever.store.query(vec, n)]
        chunk_r.append(len(set(exact) & set(got)) / len(exact))
        want = list(dict.fromkeys(paper_of(c) for c in exact))[:papers]
        have = list(dict.fromkeys(paper_of(c) for c in got))[:papers]
        paper_r.append(len(set(want) & set(have)) / len(want))
    return {f"chunks@{n}": {"mean": round(statistics.mean(chunk_r), 4), "min": round(min(chunk_r), 3)},
            f"papers@{papers}": {"mean": round(statistics.mean(paper_r), 4), "min": round(min(paper_r), 3)}}


#: The questions ``bench answer`` asks, one per run (each about another paper of the seed list,
#: so they also work on the bundled index), and the warm-up question.
BENCH_QUESTIONS = (
    "Which paper fine-tunes an LLM to write crossover operators for a vehicle-routing solver?",
    "How does off-policy training change GRPO for language models?",
    "Which paper filters noisy tokens out of LLM fine-tuning data?",
    "What does steepest descent as a mirror flow say about saddle points?",
    "Which paper schedules jobs with unknown processing times using predictions?",
)
WARM_UP_QUESTION = "Which paper builds a self-evolving language model for operations research?"


def bench_answer(settings: Settings, question: str | None = None, runs: int = 5) -> dict:
    """Time to the first answer text on screen and to the finished answer, median of ``runs``,
    in the default mode (``settings.answer_mode``, resolved for the model) and in ``generative``
    mode, where ``model_first_token_ms`` is the model's own first token (prompt processing of the
    evidence prompt). Run ``r`` asks question ``r`` of :data:`BENCH_QUESTIONS` (a different
    question each run: the model keeps the KV state of the common prefix, the system prompt,
    but must process each question's evidence, as in real use). Both modes are run interleaved
    in one process after one warm-up answer each (model load, first context) on another
    question, so load on a shared machine hits both alike. Times in ms.
    """
    from rag.chat.answer import answer, resolve_mode
    from rag.chat.pipeline import Pipeline

    pipe = Pipeline(settings)
    questions = [question] if question else list(BENCH_QUESTIONS)
    kwargs = dict(retriever=pipe.retriever, generator=pipe.generator, settings=settings)
    default = resolve_mode(settings.answer_mode, pipe.generator, settings)
    modes = list(dict.fromkeys([default, "generative"]))
    for mode in modes:
        answer(WARM_UP_QUESTION, mode=mode, **kwargs)
    times: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
    for r in range(runs):
        for mode in modes:
            ans = answer(questions[r % len(questions)], mode=mode, **kwargs)
            for key in ("understand", "retrieve", "first_token", "model_first_token", "total"):
                if key in ans.timings_ms:
                    times[mode].setdefault(key, []).append(ans.timings_ms[key])

    def med(mode: str, key: str):
        values = times[mode].get(key)
        return round(statistics.median(values), 1) if values else None

    result = {
        "bench": "answer", "index": pipe.retriever.name, "model": pipe.generator.name,
        "questions": questions[:runs], "runs": runs, "default_mode": default,
        "understand_ms_median": med(default, "understand"),
        "retrieve_ms_median": med(default, "retrieve"),
    }
    for mode in modes:
        result[mode] = {
            "first_text_ms_median": med(mode, "first_token"),
            "model_first_token_ms_median": med(mode, "model_first_token"),
            "total_ms_median": med(mode, "total"),
            "first_text_ms_all": [round(x, 1) for x in times[mode].get("first_token", [])],
        }
    return result


#: Topic surveys timed by :func:`bench_survey` (compositional topics said as people ask; none is
#: a labelled topic of tests/data/topics/).
SURVEY_QUESTIONS = (
    "Which papers study scaling laws for data mixtures?",
    "papers on 2-bit quantization of LLMs",
    "equivariant networks for molecules",
    "What work is there on federated fine-tuning of foundation models?",
    "papers on watermarking images of diffusion models",
    "reward hacking in RLHF",
    "Which papers use graph neural networks for combinatorial optimization?",
    "differentially private synthetic data",
)


def bench_survey(settings: Settings, runs: int = 3) -> dict:
    """Whole-answer time of a topic survey (extractive mode, the answer the user reads), with
    topic membership (:mod:`rag.retrieve.membership`: ordering the fused top 50 and the cut) and
    without it (the fused top 15: the baseline), and with membership but the query adapter off
    (:mod:`rag.retrieve.query_adapter`: the plain query's search alone), interleaved question by
    question in one process after a warm-up, ``runs`` rounds over :data:`SURVEY_QUESTIONS`.
    Times in ms; the ratios are with / without membership and adapted / plain query, medians."""
    from rag.chat.answer import answer
    from rag.chat.pipeline import Pipeline
    from rag.cpu import cpu_features

    pipe = Pipeline(settings)
    kwargs = dict(retriever=pipe.retriever, generator=pipe.generator, settings=settings,
                  mode="extractive")
    live = pipe.retriever.settings
    adapter = live.query_adapter
    arms = {"with": (True, adapter), "without": (False, adapter), "plain": (True, False)}
    times: dict[str, list[float]] = {a: [] for a in arms}
    for on, adapted in arms.values():
        live.topic_membership, live.query_adapter = on, adapted
        answer(WARM_UP_QUESTION, **kwargs)
    for _ in range(runs):
        for q in SURVEY_QUESTIONS:
            for arm, (on, adapted) in arms.items():
                live.topic_membership, live.query_adapter = on, adapted
                t0 = time.perf_counter()
                answer(q, **kwargs)
                times[arm].append((time.perf_counter() - t0) * 1000)
    live.topic_membership, live.query_adapter = True, adapter
    med = {a: statistics.median(t) for a, t in times.items()}
    with_m, without = med["with"], med["without"]
    return {"bench": "survey", "index": pipe.retriever.name, "papers": len(pipe.retriever),
            "questions": len(SURVEY_QUESTIONS), "runs": runs, "cpu": cpu_features(),
            "with_membership_ms_median": round(with_m, 1),
            "fused_top15_ms_median": round(without, 1),
            "ratio_with_over_without": round(with_m / without, 3) if without else None,
            "with_membership_ms_p90": round(sorted(times["with"])[int(0.9 * len(times["with"]))], 1),
            "plain_query_ms_median": round(med["plain"], 1),
            "ratio_adapted_over_plain": round(with_m / med["plain"], 3) if med["plain"] else None}


#: Topics timed by :func:`bench_trend` (none is asked in the cross-year check sets' words).
TREND_TOPICS = ("GANs", "graph neural networks", "meta-learning", "knowledge distillation",
                "federated learning", "optimal transport")


def bench_trend(settings: Settings, runs: int = 3) -> dict:
    """Whole-answer time of a topic's count per year ("how did interest in X change over the
    years?": the relevance model once per year, and the topic's words, :mod:`rag.conference.trends`)
    against the baseline of one count of the same topic over the whole index ("how many papers
    are about X?"), interleaved topic by topic in one process after a warm-up, ``runs`` rounds
    over :data:`TREND_TOPICS`. Times in ms; the ratio is per year / whole index, medians.

    Raises:
        PaperchatError: the index holds papers of fewer than two years.
    """
    from rag.chat.answer import answer
    from rag.chat.pipeline import Pipeline
    from rag.conference.trends import year_totals
    from rag.cpu import cpu_features
    from rag.errors import PaperchatError

    pipe = Pipeline(settings)
    years = year_totals(pipe.retriever.papers.values())
    if len(years) < 2:
        raise PaperchatError(f"'bench trend' needs an index of several years; index "
                             f"{pipe.retriever.name!r} holds {', '.join(map(str, years)) or 'none'}"
                             " (paperchat index A.jsonl B.jsonl --name NAME)")
    kwargs = dict(retriever=pipe.retriever, generator=pipe.generator, settings=settings,
                  mode="extractive")
    asked = {True: "how did interest in {} change over the years?",
             False: "how many papers are about {}?"}
    for per_year in (True, False):
        answer(asked[per_year].format(TREND_TOPICS[0]), **kwargs)
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(runs):
        for topic in TREND_TOPICS:
            for per_year in (True, False):
                t0 = time.perf_counter()
                answer(asked[per_year].format(topic), **kwargs)
                times[per_year].append((time.perf_counter() - t0) * 1000)
    trend, whole = statistics.median(times[True]), statistics.median(times[False])
    return {"bench": "trend", "index": pipe.retriever.name, "papers": len(pipe.retriever),
            "years": {str(y): n for y, n in years.items()}, "topics": len(TREND_TOPICS),
            "runs": runs, "cpu": cpu_features(),
            "per_year_ms_median": round(trend, 1), "whole_index_count_ms_median": round(whole, 1),
            "ratio_per_year_over_whole": round(trend / whole, 3) if whole else None}
