"""How follow-up turns that narrow a survey's papers are handled, on two-turn exchanges written
by a helper who had not read the code (``tests/data/topics/narrowing.jsonl``: a survey question,
then a turn labelled ``narrow_topic``, ``narrow_term``, ``new_search`` or ``filter_meta``)::

    .venv/bin/python bench/narrowing.py            # both halves (odd lines: read and fixed)
    .venv/bin/python bench/narrowing.py --part even

A turn is handled as its label says when: a narrowing (by topic or term) answers with a pick
among the survey's papers (papers "previous", a lookup); a new search searches; a metadata filter
applies a filter to them. Needs the ``accepted`` index (``bench/train_membership.py`` builds it).
Prints one JSON line per turn, then ``part handled n share`` and the counts per label.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
FILE = ROOT / "tests" / "data" / "topics" / "narrowing.jsonl"


def handled_as(plan: dict, kind: str) -> str:
    """The label an answer's ``plan`` and ``kind`` handle a turn as (module docstring)."""
    if plan["filters"] and plan["papers"] != "search":
        return "filter_meta"
    if plan["papers"] in ("search", "catalog"):
        return "new_search"
    if plan["papers"] in ("previous", "focus") and kind == "lookup":
        return "narrow"
    return f"other:{plan['papers']}/{plan['op']}/{kind}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("odd", "even", "both"), default="both")
    ap.add_argument("--index", default="accepted")
    args = ap.parse_args(argv)

    from rag.chat.answer import answer
    from rag.chat.pipeline import Pipeline
    from rag.settings import Settings
    from rag.understand.history import turn_after

    settings = Settings(index=args.index)
    pipe = Pipeline(settings)
    rows = [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    firsts: dict[str, tuple] = {}
    for part in (("odd", "even") if args.part == "both" else (args.part,)):
        done, per = [], defaultdict(lambda: [0, 0])
        for i, row in enumerate(rows, start=1):
            if (i % 2 == 1) != (part == "odd"):
                continue
            if row["first"] not in firsts:
                a = answer(row["first"], retriever=pipe.retriever, generator=pipe.generator,
                           settings=settings, history=[], mode="extractive")
                firsts[row["first"]] = (a, [turn_after(a)])
            _, history = firsts[row["first"]]
            b = answer(row["turn"], retriever=pipe.retriever, generator=pipe.generator,
                       settings=settings, history=history, mode="extractive")
            gold = "narrow" if row["label"].startswith("narrow") else row["label"]
            ok = handled_as(b.plan, b.kind) == gold
            done.append(ok)
            per[row["label"]][0] += ok
            per[row["label"]][1] += 1
            print(json.dumps({"line": i, "ok": ok, "label": row["label"],
                              "handled_as": handled_as(b.plan, b.kind)}), flush=True)
        print(part, sum(done), len(done), round(sum(done) / max(1, len(done)), 3), dict(per))
    return 0


if __name__ == "__main__":
    sys.exit(main())
