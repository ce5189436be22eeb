"""``paperchat eval --answers``: the whole answer path scored, the configured mode against the
other modes in the same run.

Every query of the file (``{"qid", "type", "question", "gold", "turns"}``, see
:mod:`rag.evaluate.retrieval`) is answered by :func:`rag.chat.answer.answer` with the real retriever and model;
follow-ups are run as conversations (each earlier turn answered, its answer becoming the
history). Per query type (ARCHITECTURE.md, Contracts):

* ``gold_in_hits``: queries whose gold papers are all among the answer's hits (count);
* ``gold_cited``: among those, the share whose answer cites every gold paper;
* ``first_citation_gold``: share of queries with gold whose first cited paper is a gold paper;
  ``hit1_gold`` is retrieval's recall@1 on the same hits, for comparison;
* ``supported``: share of the answers' claims (:attr:`rag.types.AnswerSentence.is_claim`:
  headings and plain notes make no claim) that the cited abstracts support;
* ``leaks``: answers holding prompt scaffolding or chat-template tokens
  (:func:`rag.compose.guards.count_leaks` on the text and on the set-apart unsupported sentences; the
  hits' titles are left out first, so naming "Distilling the Thought, Watermarking the Answer:
  ..." is no leak, and so are the answer template's own headings and notes, "Other papers:");
* ``max_repeat_4gram``: the most times a word 4-gram occurs in one answer's sentences
  (:func:`rag.compose.guards.answer_max_repeat`: a quoted abstract sentence counts each of its 4-grams
  once; the comparison table, which names each paper in its header by design, is not prose and
  is left out), maximum over answers;
* ``first_text_ms_p50`` / ``total_ms_p50``: medians of the time to the first answer text on
  screen and to the finished answer, ms;
* ``refused``: share refused; for follow-ups also ``discussed_cited``, the share whose answer
  cites every paper under discussion (the previous answer's ``about_ids``).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rag.compose.guards import answer_max_repeat, count_leaks
from rag.evaluate.retrieval import TYPES, load_queries
from rag.understand.history import Turn, turn_after

if TYPE_CHECKING:
    from rag.backends.generator import Generator
    from rag.backends.seams import Retriever
    from rag.settings import Settings


def run_mode(queries: list[dict], mode: str, retriever: Retriever, generator: Generator,
             settings: Settings, log: Callable[[str], None] = lambda m: None) -> list[dict]:
    """Answer every query in ``mode``; one record per query (see :func:`record`)."""
    from rag.chat.answer import answer

    out = []
    for i, q in enumerate(queries, 1):
        turns = q.get("turns") or [q["question"]]
        history: list[Turn] = []
        for turn in turns[:-1]:
            prev = answer(turn, retriever=retriever, generator=generator, settings=settings,
                          history=history, mode=mode)
            history.append(turn_after(prev))
        discussed = [p.id for p in history[-1].discussed] if history else []
        ans = answer(turns[-1], retriever=retriever, generator=generator, settings=settings,
                     history=history, mode=mode)
        out.append(record(q, ans, discussed))
        if i % 10 == 0:
            log(f"  {mode}: {i}/{len(queries)}")
    return out


def hit_titles(ans) -> list[str]:
    """The titles of an answer's hits, as stored and normalised (an answer may name a paper
    either way): what a leak count leaves out (:func:`rag.compose.guards.leak_reason`)."""
    from rag.text import normalise

    titles = [h.paper.title for h in ans.hits]
    return list(dict.fromkeys(titles + [normalise(t) for t in titles]))


def record(q: dict, ans, discussed: list[str]) -> dict:
    """The per-query record (``per_query``, ARCHITECTURE.md Contracts) plus what the summary
    needs."""
    cited = [c.paper.id for c in ans.citations]
    prose = "\n".join(s.text for s in ans.sentences)
    return {
        "qid": q.get("qid", ""), "type": q.get("type", "specific"), "gold": list(q.get("gold") or []),
        "hits": [h.id for h in ans.hits], "cited": cited, "answer": ans.text,
        "mode": ans.mode, "kind": ans.kind, "refused": ans.refused,
        "sentences": [{"text": s.text, "kind": s.kind, "supported": bool(s.supported),
                       "support": float(s.support)} for s in ans.sentences],
        "unsupported": [s.text for s in ans.unsupported],
        "discussed": discussed,
        "leaks": count_leaks(ans.text + "\n" + "\n".join(s.text for s in ans.unsupported),
                             titles=hit_titles(ans),
                             template=[s.text for s in ans.sentences
                                       if s.kind in ("heading", "note")]),
        "max_repeat_4gram": answer_max_repeat(ans.sentences, 4),
        "first_text_ms": round(float(ans.timings_ms.get("first_token", 0.0)), 1),
        "total_ms": round(float(ans.timings_ms.get("total", 0.0)), 1),
        "claims": sum(1 for s in ans.sentences if s.is_claim),
        "claims_supported": sum(1 for s in ans.sentences if s.is_claim and s.supported),
    }


def summarise(records: list[dict]) -> dict:
    """Per-type figures of the module docstring over ``records``."""
    by_type: dict[str, dict] = {}
    for t in TYPES:
        rows = [r for r in records if r["type"] == t]
        if not rows:
            continue
        with_gold = [r for r in rows if r["gold"]]
        in_hits = [r for r in with_gold if set(r["gold"]) <= set(r["hits"])]
        claims = sum(r["claims"] for r in rows)
        m = {
            "n": len(rows),
            "gold_in_hits": len(in_hits),
            "gold_cited": _share(set(r["gold"]) <= set(r["cited"]) for r in in_hits),
            "first_citation_gold": _share(bool(r["cited"]) and r["cited"][0] in r["gold"]
                                          for r in with_gold),
            "hit1_gold": _share(bool(r["hits"]) and r["hits"][0] in r["gold"] for r in with_gold),
            "supported": round(sum(r["claims_supported"] for r in rows) / claims, 4)
            if claims else 1.0,
            "leaks": sum(1 for r in rows if r["leaks"]),
            "max_repeat_4gram": max(r["max_repeat_4gram"] for r in rows),
            "first_text_ms_p50": round(statistics.median(r["first_text_ms"] for r in rows), 1),
            "total_ms_p50": round(statistics.median(r["total_ms"] for r in rows), 1),
            "refused": _share(r["refused"] for r in rows),
        }
        if t == "followup":
            m["discussed_cited"] = _share(set(r["discussed"]) <= set(r["cited"])
                                          for r in rows if r["discussed"])
        by_type[t] = m
    return by_type


def _share(values) -> float:
    values = list(values)
    return round(sum(1 for v in values if v) / len(values), 4) if values else 0.0


def run_answer_eval(path: str | Path, settings: Settings, *, baselines: list[str] | None = None,
                    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict:
    """Evaluate the answers to the query file at ``path``: ``settings.answer_mode`` (``auto``
    resolved for the loaded model), then each baseline mode (default: the other two), all on
    one retriever and one loaded model. Returns the ``eval --answers`` object (ARCHITECTURE.md,
    Contracts).

    Raises:
        PaperchatError: a malformed query file, a missing index or model; InvalidQuestionError
            for an unknown baseline mode.
    """
    from rag.chat.answer import MODES, check_mode, resolve_mode
    from rag.chat.pipeline import Pipeline

    queries = load_queries(path)
    pipe = Pipeline(settings)
    retriever, generator = pipe.retriever, pipe.generator
    mode = resolve_mode(settings.answer_mode, generator, settings)
    others = [m for m in MODES if m != mode] if baselines is None else \
        [m for m in baselines if m != mode]
    for m in others:
        check_mode(m)  # unknown names raise before any work
    log(f"eval --answers: {len(queries)} queries, mode {mode} (answer_mode="
        f"{settings.answer_mode}), model {generator.name}; baselines {', '.join(others) or 'none'}")
    records = run_mode(queries, mode, retriever, generator, settings, log)
    report = {"n": len(queries), "mode": mode, "model": generator.name,
              "by_type": summarise(records), "baselines": {}}
    for m in others:
        log(f"baseline {m} ...")
        report["baselines"][m] = {"by_type": summarise(run_mode(queries, m, retriever, generator,
                                                                settings, log))}
    report["per_query"] = [{k: r[k] for k in ("qid", "type", "gold", "hits", "cited", "answer",
                                                "mode", "sentences", "unsupported", "discussed", "first_text_ms",
                                                "total_ms")} for r in records]
    return report


#: Columns of the plain-text report: (key, header, format).
_COLUMNS = [("n", "n", "{:>3}"), ("gold_in_hits", "inhits", "{:>6}"),
            ("gold_cited", "cited", "{:>6.3f}"), ("first_citation_gold", "first", "{:>6.3f}"),
            ("hit1_gold", "r@1", "{:>6.3f}"), ("supported", "suppd", "{:>6.3f}"),
            ("leaks", "leaks", "{:>5}"), ("max_repeat_4gram", "rep4", "{:>4}"),
            ("first_text_ms_p50", "first_ms", "{:>8.0f}"), ("total_ms_p50", "total_ms", "{:>8.0f}"),
            ("refused", "refus", "{:>6.3f}")]


def format_answer_report(report: dict) -> str:
    """A plain-text table: one line per mode and query type (the scored mode first)."""
    head = f"{'mode':12} {'type':13} " + " ".join(
        h.rjust(len(f.format(0.0 if "f}" in f else 0))) for _, h, f in _COLUMNS)
    lines = [f"{report['n']} queries; model {report.get('model', '')}; scored mode "
             f"{report['mode']}", head]
    systems = [(report["mode"], report["by_type"])] + \
        [(m, b["by_type"]) for m, b in report.get("baselines", {}).items()]
    for name, by_type in systems:
        for t, m in by_type.items():
            cells = " ".join(f.format(m.get(k, 0)) for k, _, f in _COLUMNS)
            extra = (f"  discussed_cited {m['discussed_cited']:.3f}"
                     if "discussed_cited" in m else "")
            lines.append(f"{name:12} {t:13} {cells}{extra}")
    return "\n".join(lines)
