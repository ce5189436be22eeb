"""``paperchat eval``: retrieval quality on a query file, ours against two baselines in one run.

Query lines: ``{"qid", "type", "question", "gold": [ids], "turns": null | [str]}`` with types
specific, seed, comparative, followup, out_of_corpus (ARCHITECTURE.md). Metrics per type, over the
top 10 papers returned:

* recall@k: share of a query's gold papers in the top k, averaged over queries;
* MRR: mean of 1 / rank of the first gold paper (0 when none is in the top 10);
* all_gold@10: share of queries whose every gold paper is in the top 10;
* refusal: share of out_of_corpus queries refused, and share of in-corpus queries refused.

Follow-ups are run as conversations: the first turn is retrieved, its hits become the history of
the last turn. Baselines: ``bm25`` (BM25 alone) and ``dense`` (best chunk's cosine alone); their
follow-ups get the previous turn's text prepended, and they refuse when their top score is under
the same kind of threshold as ours (see rag.compose.refusal). Added later (keys are only ever added):

* ``baselines.paper_vectors``: papers ranked by their paper vector's cosine to the question
  (:mod:`index.vectors`, the third signal fusion may use), refusing under the dense threshold;
* ``oracle``: per query, the better of the ``bm25`` and ``dense`` baselines on each metric
  (the best single channel chosen per query with the answer known), so the distance between
  the fusion and what choosing a channel per query could reach is visible;
* ``gap``: ours minus the oracle, per type and metric (negative: below the oracle).

Types: specific, seed, tldr (author TL;DRs, :mod:`rag.evaluate.tldr`), comparative, followup,
out_of_corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING

from rag.errors import PaperchatError
from rag.understand.history import Turn

if TYPE_CHECKING:
    from rag.retrieve.retriever import Retriever  # the real one: its two channels are the baselines
    from rag.settings import Settings

K = 10
TYPES = ("specific", "seed", "tldr", "comparative", "followup", "out_of_corpus")


def read_objects(path: str | Path, valid, what: str) -> list[dict]:
    """The JSON objects of a JSONL file (blank lines skipped) for which ``valid(obj)`` is true.

    Raises:
        PaperchatError: naming the line of one that is not JSON or not ``valid`` (``what``
            says what the line should have been).
    """
    rows = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
            assert valid(q)
            rows.append(q)
        except (ValueError, KeyError, AssertionError, TypeError):
            raise PaperchatError(f"{path}: line {i}: not {what}") from None
    return rows


def load_queries(path: str | Path) -> list[dict]:
    """Read a query file. Raises PaperchatError naming the line of a malformed query."""
    rows = read_objects(path, lambda q: isinstance(q["question"], str)
                        and isinstance(q.get("gold", []), list),
                        "a query object with 'question' and 'gold'")
    for q in rows:
        q.setdefault("type", "specific")
    return rows


def _metrics(ranked: list[str], gold: list[str]) -> dict[str, float]:
    ranked = ranked[:K]
    g = set(gold)
    out = {f"recall@{k}": len(g & set(ranked[:k])) / len(g) for k in (1, 5, 10)}
    first = next((r for r, pid in enumerate(ranked, 1) if pid in g), None)
    out["mrr"] = 1.0 / first if first else 0.0
    out["all_gold@10"] = float(g <= set(ranked))
    return out


def _summarise(per_query: list[tuple[dict, list[str], bool]]) -> dict:
    by_type: dict[str, dict] = {}
    for t in TYPES[:-1]:
        rows = [(q, r) for q, r, _ in per_query if q["type"] == t and q.get("gold")]
        if not rows:
            continue
        ms = [_metrics(r, q["gold"]) for q, r in rows]
        by_type[t] = {"n": len(rows), **{k: round(mean(m[k] for m in ms), 4) for k in ms[0]}}
    ooc = [refused for q, _, refused in per_query if q["type"] == "out_of_corpus"]
    inc = [refused for q, _, refused in per_query if q["type"] != "out_of_corpus"]
    refusal = {"out_of_corpus_refused": round(mean(ooc), 4) if ooc else 0.0,
               "in_corpus_refused": round(mean(inc), 4) if inc else 0.0}
    return {"by_type": by_type, "refusal": refusal}


def _oracle(*systems: list[tuple[dict, list[str], bool]]) -> dict:
    """Per type, the mean over queries of the best of ``systems`` (same queries, same order) on
    each metric; out_of_corpus queries have no gold and no oracle."""
    by_type: dict[str, dict] = {}
    for t in TYPES[:-1]:
        best = []
        for rows in zip(*systems):
            q = rows[0][0]
            if q["type"] != t or not q.get("gold"):
                continue
            ms = [_metrics(ranked, q["gold"]) for _, ranked, _ in rows]
            best.append({k: max(m[k] for m in ms) for k in ms[0]})
        if best:
            by_type[t] = {"n": len(best),
                          **{k: round(mean(m[k] for m in best), 4) for k in best[0]}}
    return {"by_type": by_type, "channels": ["bm25", "dense"]}


def _gap(ours: dict, oracle: dict) -> dict:
    """``ours - oracle`` per type and metric (rounded to 4 decimals)."""
    return {"by_type": {t: {k: round(ours[t][k] - o[k], 4) for k in o if k != "n"}
                        for t, o in oracle["by_type"].items() if t in ours}}


def _paper_vector_ranking(retriever: Retriever, qvec, k: int) -> tuple[list[str], list[float]]:
    """The ``k`` papers whose paper vector is nearest to ``qvec`` (ids, cosines), best first."""
    import numpy as np

    pv = retriever.paper_vectors()
    if not len(pv):
        return [], []
    sims = pv.vectors @ np.asarray(qvec, dtype=np.float32)
    order = [i for i in np.argsort(-sims, kind="stable") if pv.ids[i] in retriever.papers][:k]
    return [pv.ids[i] for i in order], [float(sims[i]) for i in order]


def run_queries(queries: list[dict], retriever: Retriever, settings: Settings) -> dict:
    """Ours, the baselines and the oracle over ``queries``; returns the eval object
    (ARCHITECTURE.md, Contracts; module doc)."""
    from rag.chat.answer import retrieve_for
    from rag.compose.refusal import baseline_refuses
    from rag.text import normalise

    ours, bm25, dense, paper = [], [], [], []
    for q in queries:
        turns = q.get("turns") or [q["question"]]
        history: list[Turn] = []
        for turn in turns[:-1]:
            standalone, hits, _ = retrieve_for(turn, retriever, settings, k=K, filters=None,
                                               history=history, evidence=False)
            history.append(Turn(turn, standalone, [h.paper for h in hits]))
        _, hits, refused = retrieve_for(turns[-1], retriever, settings, k=K, filters=None,
                                        history=history, evidence=False)
        ours.append((q, [h.id for h in hits], refused))
        text = " ".join(turns)
        lex = retriever.bm25(text, n=K)
        bm25.append((q, lex.ids, baseline_refuses("bm25", lex.scores)))
        qvec = retriever.embedder.embed([normalise(text)])[0]
        den = retriever.dense(qvec)
        dense.append((q, den.ids[:K], baseline_refuses("dense", den.scores)))
        ids, sims = _paper_vector_ranking(retriever, qvec, K)
        paper.append((q, ids, baseline_refuses("dense", sims)))
    report = {"n": len(queries), **_summarise(ours)}
    report["baselines"] = {"bm25": _summarise(bm25), "dense": _summarise(dense),
                           "paper_vectors": _summarise(paper)}
    report["oracle"] = _oracle(bm25, dense)
    report["gap"] = _gap(report["by_type"], report["oracle"])
    return report


def run_eval(path: str | Path, settings: Settings) -> dict:
    """Open the index named by ``settings`` and evaluate the query file at ``path``."""
    from rag.chat.pipeline import Pipeline

    queries = load_queries(path)
    pipe = Pipeline(settings)
    return run_queries(queries, pipe.retriever, settings)


def format_report(report: dict) -> str:
    """A plain-text table: one line per system and query type (ours, the baselines, the oracle),
    then ours minus the oracle ("gap")."""
    lines = [f"{report['n']} queries"]
    head = f"{'system':8} {'type':12} {'n':>3} {'r@1':>6} {'r@5':>6} {'r@10':>6} {'mrr':>6} {'all@10':>6}"
    lines.append(head)
    systems = [("ours", report)] + list(report["baselines"].items())
    if "oracle" in report:
        systems.append(("oracle", report["oracle"]))
    for name, rep in systems:
        name = {"paper_vectors": "papervec"}.get(name, name)
        for t, m in rep["by_type"].items():
            lines.append(f"{name:8} {t:12} {m['n']:>3} {m['recall@1']:>6.3f} {m['recall@5']:>6.3f} "
                         f"{m['recall@10']:>6.3f} {m['mrr']:>6.3f} {m['all_gold@10']:>6.3f}")
        r = rep.get("refusal")
        if r:
            lines.append(f"{name:8} refusal: out_of_corpus {r['out_of_corpus_refused']:.3f}, "
                         f"in_corpus {r['in_corpus_refused']:.3f}")
    for t, g in report.get("gap", {}).get("by_type", {}).items():
        lines.append(f"{'gap':8} {t:12} {'':>3} {g['recall@1']:>+6.3f} {g['recall@5']:>+6.3f} "
                     f"{g['recall@10']:>+6.3f} {g['mrr']:>+6.3f} {g['all_gold@10']:>+6.3f}")
    return "\n".join(lines)
