"""``python -m rag.understand.train_reader [--train]``: fit the turn reader (:mod:`rag.understand.turn_reader`) on the
tune part of the labelled turns (``tests/data/turns``), save ``rag/understand/turn_reader.npz``, and print
the plan accuracy (:func:`rag.understand.accuracy.plan_accuracy`) on the tune and measure parts.

The title-name features need the paper lists the labelled turns talk about
(``../shared/data/iclr2026_accepted.jsonl`` and ``iclr2018.jsonl``). Fitting is deterministic for
one embedder variant (lbfgs; the embeddings of the int8 and int8-avx2 variants differ slightly).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Sequence

from rag.understand.turn_reader import (TURNS_DIR, TurnReader, catalog_names, labelled_turns, measured,
                                        scope_turns)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rag.understand.train_reader [--train]``: (fit on the tune part and save,) then report the
    plan accuracy of the saved weights on both parts."""
    import argparse

    from rag.backends.embedder import make_embedder
    from rag.settings import Settings

    ap = argparse.ArgumentParser(prog="python -m rag.understand.train_reader")
    ap.add_argument("--train", action="store_true", help="fit and save rag/understand/turn_reader.npz")
    ap.add_argument("--data", default=str(TURNS_DIR.parents[3] / "shared" / "data"),
                    help="the shared paper lists (the title-name features)")
    args = ap.parse_args(argv)
    data = Path(args.data)
    lists = [p for p in (data / "iclr2026_accepted.jsonl", data / "iclr2018.jsonl") if p.exists()]
    if not lists:
        print(f"no paper lists under {data}: the title-name features need them", file=sys.stderr)
        return 2
    areas, names = catalog_names(lists)
    rows = labelled_turns()
    tune = [r for r in rows if not measured(r["id"], r["file"])]
    scoped = scope_turns()
    scope_tune = [r for r in scoped if not measured(r["id"], r["file"])]
    embedder = make_embedder(Settings())
    if args.train:
        reader = TurnReader.fit(tune, embedder, areas, names, scope_rows=scope_tune)
        reader.save(meta={"tune_turns": len(tune), "scope_turns": len(scope_tune),
                          "lists": [p.name for p in lists]})
    reader = TurnReader.load(embedder)
    from rag.understand.accuracy import plan_accuracy, scope_accuracy

    for part, chosen, scope in (("tune", tune, scope_tune),
                                ("measure", [r for r in rows if r not in tune],
                                 [r for r in scoped if r not in scope_tune])):
        print(part, json.dumps(plan_accuracy(chosen, reader, areas, names)))
        print(part, "scope", json.dumps(scope_accuracy(scope, chosen, reader, areas, names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
