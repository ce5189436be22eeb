"""``paperchat eval FILE --topics``: which papers come back for a topic, scored against papers
read by hand (``tests/data/topics/``, written by helpers who had not read the code).

Line format: ``{"topic_id", "topic", "definition", "survey", "terse", "count", "on_topic": [ids],
"borderline": [ids]}``. Borderline papers are neither right nor wrong: they are left out of
every denominator below and count as neither hit nor miss.

Through the whole answer path (:func:`rag.chat.answer.answer`, a fresh conversation each):

* ``survey_recall@15``: the survey question's shown papers (the answer's hits) that are on topic,
  over ``min(len(on_topic), 15)``; ``terse_recall@15`` the same for the terse question;
* ``shown_on_topic``: on-topic shown papers over all shown papers that are not borderline
  (pooled over topics: papers, not topics, are averaged), and ``prec@5`` the same over the
  first five shown (averaged over topics);
* ``count_within``: share of topics whose count answer's first number is within
  [0.67, 1.5] x ``len(on_topic)`` (the issue's tolerance); ``count_ratio`` their median ratio.

Retrieval alone (the survey question, no plan): recall@15 and recall@50 of the fused ranking
(:meth:`rag.retrieve.retriever.Retriever.search`), of BM25 alone and of the dense channel alone
(best chunk cosine), so the whole path can be read against each channel; and the fused 50
reordered by MaxSim over the word-piece table (``table``, :mod:`rag.retrieve.token_table`) and by
its reciprocal rank fusion with the fused order (``fused+table``).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from statistics import mean, median
from typing import TYPE_CHECKING

import numpy as np

from rag.text import normalise

if TYPE_CHECKING:
    from rag.settings import Settings

#: Papers a survey shows at most, the recall@k of the issue.
SHOWN = 15
#: A count is right when within this factor of the true number (both ways).
COUNT_TOLERANCE = (0.67, 1.5)


def load_topics(path: str | Path) -> list[dict]:
    """Read a topic file. Raises PaperchatError naming the line of a malformed topic."""
    from rag.evaluate.retrieval import read_objects

    return read_objects(path, lambda t: isinstance(t["topic"], str)
                        and isinstance(t["on_topic"], list) and bool(t["on_topic"]),
                        "a topic object with 'topic' and a non-empty 'on_topic'")


def recall_at(ranked: list[str], on: set[str], k: int) -> float:
    """Share of the on-topic papers in ``ranked[:k]``, over ``min(len(on), k)`` (so a topic with
    40 papers is not capped at 15/40)."""
    return len(on & set(ranked[:k])) / min(len(on), k) if on else 0.0


def precision(ranked: list[str], on: set[str], borderline: set[str]) -> tuple[int, int]:
    """(on-topic papers, judged papers) of ``ranked``: borderline ones are not judged."""
    judged = [pid for pid in ranked if pid not in borderline]
    return sum(pid in on for pid in judged), len(judged)


def first_number(text: str) -> int | None:
    """The first whole number in ``text`` ("About 34 of the 5,358 ..." -> 34), or None."""
    m = re.search(r"\b(\d[\d,]*)\b", text)
    return int(m.group(1).replace(",", "")) if m else None


def run_topic_eval(path: str | Path, settings: Settings, *, pipeline=None,
                   log=lambda m: None, retrieval: bool = True,
                   late_interaction: bool = False) -> dict:
    """Score every topic of the file (see the module docstring for the metrics);
    ``late_interaction`` adds the MaxSim reranking of the fused 50
    (:mod:`rag.retrieve.late_interaction`) to the retrieval channels, with its median seconds
    per question (``retrieval_seconds``: the channels' search and the reranking together).

    Returns ``{"n": topics, "answer": {metric: value}, "retrieval": {channel: {metric: value}},
    "topics": [{"topic_id", "topic", "n_on", "survey_recall", "terse_recall", "shown",
    "shown_on", "prec5", "count", "count_ratio"}]}``.
    """
    from rag.chat.answer import answer
    from rag.chat.pipeline import Pipeline

    rows = load_topics(path)
    pipe = pipeline or Pipeline(settings)
    ret = pipe.retriever
    per, pooled_on, pooled_judged = [], 0, 0
    chans: dict[str, dict[str, list[float]]] = {}
    seconds: list[float] = []
    late = None
    if late_interaction and retrieval:
        from rag.retrieve.late_interaction import LateInteraction

        late = LateInteraction()
    for t in rows:
        on, border = set(t["on_topic"]), set(t.get("borderline") or [])
        row = {"topic_id": t.get("topic_id", ""), "topic": t["topic"], "n_on": len(on)}
        if t.get("survey"):
            ans = answer(t["survey"], retriever=ret, generator=pipe.generator, settings=settings)
            ids = [h.id for h in ans.hits]
            row["survey_recall"] = recall_at(ids, on, SHOWN)
            good, judged = precision(ids[:SHOWN], on, border)
            pooled_on, pooled_judged = pooled_on + good, pooled_judged + judged
            row["shown"], row["shown_on"] = len(ids), good
            g5, j5 = precision(ids[:5], on, border)
            row["prec5"] = g5 / j5 if j5 else 0.0
        if t.get("terse"):
            ans = answer(t["terse"], retriever=ret, generator=pipe.generator, settings=settings)
            row["terse_recall"] = recall_at([h.id for h in ans.hits], on, SHOWN)
        if t.get("count"):
            ans = answer(t["count"], retriever=ret, generator=pipe.generator, settings=settings)
            n = first_number(ans.text)
            row["count"] = n
            row["count_ratio"] = (n / len(on)) if n is not None else None
        if retrieval and t.get("survey"):
            start = time.perf_counter()
            ranked_by = _channels(ret, t["survey"], late)
            seconds.append(time.perf_counter() - start)
            for name, ranked in ranked_by.items():
                c = chans.setdefault(name, {"recall@15": [], "recall@50": []})
                c["recall@15"].append(recall_at(ranked, on, 15))
                c["recall@50"].append(recall_at(ranked, on, 50))
        per.append(row)
        log(f"{row['topic_id']}: {row}")

    def avg(key):
        vals = [r[key] for r in per if r.get(key) is not None]
        return round(mean(vals), 3) if vals else None

    ratios = [r.get("count_ratio") for r in per if "count" in r]
    lo, hi = COUNT_TOLERANCE
    within = [x is not None and lo <= x <= hi for x in ratios]
    out = {
        "n": len(per),
        "answer": {
            "survey_recall@15": avg("survey_recall"),
            "terse_recall@15": avg("terse_recall"),
            "shown_on_topic": round(pooled_on / pooled_judged, 3) if pooled_judged else None,
            "prec@5": avg("prec5"),
            "count_within": round(mean(within), 3) if within else None,
            "count_ratio_median": round(median([x or 0.0 for x in ratios]), 3) if ratios else None,
        },
        "retrieval": {name: {m: round(mean(v), 3) for m, v in c.items()}
                      for name, c in chans.items()},
        "retrieval_seconds": round(median(seconds), 2) if seconds else None,
        "topics": per,
    }
    return out


def _channels(ret, question: str, late=None) -> dict[str, list[str]]:
    """Paper ids ranked by the fused search (a survey's: ``topical``, the query adapter on), by
    the same search with the plain query (``fused-plain``), by BM25 alone, by the dense channel
    alone (the question's best-chunk cosine) and by it with the adapted query (``dense-adapt``,
    :mod:`rag.retrieve.query_adapter`, when one fits the index's embedder), 50 each; the fused 50 reordered by MaxSim over the word-piece
    table (:mod:`rag.retrieve.token_table`) alone (``table``) and by its reciprocal rank fusion with
    the fused order (``fused+table``) when a table is shipped; with ``late`` (a
    :class:`rag.retrieve.late_interaction.LateInteraction`) the fused 50 reordered by MaxSim
    alone (``late``) and by its reciprocal rank fusion with the fused order (``fused+late``)."""
    fused = ret.search(question, k=50, evidence=False, topical=True)
    ids = [h.id for h in fused.hits]
    out = {"fused": ids,
           "fused-plain": [h.id for h in ret.search(question, k=50, evidence=False).hits],
           "bm25": list(fused.lexical.ids[:50]), "dense": list(fused.dense.ids[:50])}
    if hasattr(ret, "adapted"):  # (a retriever with a query adapter seam)
        qvec = ret.embedder.embed([normalise(question)])[0]
        adapted = ret.adapted(qvec)
        if adapted is not qvec:
            out["dense-adapt"] = list(ret.dense(adapted).ids[:50])
    from rag.retrieve.token_table import shipped

    table = shipped()
    texts = {i: f"{ret.papers[i].title}. {ret.papers[i].abstract}" for i in ids}
    if table is not None:
        from rag.retrieve.late_interaction import fuse_orders

        scores = table.scores(question, ids, texts)
        out["table"] = [ids[j] for j in np.argsort(-scores, kind="stable")]
        out["fused+table"] = fuse_orders(ids, out["table"])
    if late is not None:
        from rag.retrieve.late_interaction import rerank

        out["late"], out["fused+late"] = rerank(question, ids, [texts[i] for i in ids], late)
    return out


def format_topics(report: dict) -> str:
    """The report as two small tables and one line per topic."""
    lines = [f"{report['n']} topics, whole answer path:"]
    for k, v in report["answer"].items():
        lines.append(f"  {k:20} {v if v is not None else '-'}")
    if report["retrieval"]:
        lines.append("retrieval alone (survey question):")
        lines.append(f"  {'channel':12} {'recall@15':>9} {'recall@50':>9}")
        for name, m in report["retrieval"].items():
            lines.append(f"  {name:12} {m['recall@15']:9.3f} {m['recall@50']:9.3f}")
        if report.get("retrieval_seconds") is not None:
            lines.append(f"  median {report['retrieval_seconds']} s per question")
    for r in report["topics"]:
        lines.append(f"  {r['topic_id']:6} on={r['n_on']:3d} survey={r.get('survey_recall', 0):.2f} "
                     f"terse={r.get('terse_recall', 0):.2f} prec5={r.get('prec5', 0):.2f} "
                     f"shown={r.get('shown_on', 0)}/{r.get('shown', 0)} count={r.get('count')} "
                     f" {r['topic'][:50]}")
    return "\n".join(lines)
