"""Plan accuracy: how the reading of labelled turns (``tests/data/turns``) fares, field by
field (:func:`plan_accuracy`), and how the scope head's "outside" reading fares on the labelled
scope turns (:func:`scope_accuracy`). ``python -m rag.understand.train_reader`` reports both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rag.understand.plan import Plan
from rag.understand.read import read_turn

if TYPE_CHECKING:
    from rag.understand.names import NameIndex
    from rag.understand.turn_reader import TurnReader


#: Plan fields a reading must get right to count as correct (plan accuracy).
SCORED = ("papers", "op", "aspect", "positions", "filters", "order")


def _gold(row: dict) -> dict:
    g = row["plan"]
    return {"papers": g["papers"], "op": g["op"], "aspect": g.get("aspect") or "",
            "positions": list(g.get("positions") or []) if g["papers"] == "positions" else [],
            "filters": sorted(g.get("filters") or []),
            "order": (g.get("order") or "") if g["op"] in ("sort", "extreme") else ""}


def _mine(plan: Plan) -> dict:
    return {"papers": plan.papers, "op": plan.op,  # (the schema gives a refine no aspect)
            "aspect": plan.aspect if plan.op != "refine" else "",
            "positions": plan.positions if plan.papers == "positions" else [],
            "filters": sorted(plan.filters),
            "order": plan.order if plan.op in ("sort", "extreme") else ""}


def scope_accuracy(scope_rows: Sequence[dict], plan_rows: Sequence[dict], reader: TurnReader,
                   areas: Sequence[str], names: NameIndex) -> dict:
    """How the scope head's reading (:attr:`rag.understand.plan.Plan.outside`, :func:`read_turn`) fares:
    ``out_recall``, the share of out-of-scope turns of ``scope_rows`` read as outside;
    ``in_refused``, the share of their in-scope turns read as outside; ``plan_refused``, the
    same over the plan-labelled ``plan_rows`` (all in scope)."""
    from rag.understand.turn_reader import context_of

    def outside(row: dict) -> bool:
        return read_turn(row["turn"], context_of(row), reader, areas=areas, names=names).outside

    outs = [r for r in scope_rows if r["scope"] == "out"]
    ins = [r for r in scope_rows if r["scope"] == "in"]
    share = lambda rows: round(sum(map(outside, rows)) / max(1, len(rows)), 3)  # noqa: E731
    return {"out": len(outs), "in": len(ins), "out_recall": share(outs),
            "in_refused": share(ins), "plan_refused": share(plan_rows)}


def plan_accuracy(rows: Sequence[dict], reader: TurnReader, areas: Sequence[str],
                  names: NameIndex, errors: list | None = None) -> dict:
    """Share of labelled turns (``tests/data/turns`` format) whose reading gets every
    :data:`SCORED` field right (``plan``), and the share right per field. Wrong readings are
    appended to ``errors`` as ``(row, gold, mine)`` when it is given."""
    from rag.understand.turn_reader import context_of

    right = {k: 0 for k in SCORED}
    whole = 0
    for row in rows:
        plan = read_turn(row["turn"], context_of(row), reader, areas=areas, names=names)
        gold, mine = _gold(row), _mine(plan)
        ok = True
        for k in SCORED:
            if gold[k] == mine[k]:
                right[k] += 1
            else:
                ok = False
        whole += ok
        if not ok and errors is not None:
            errors.append((row, gold, mine))
    n = max(1, len(rows))
    return {"n": len(rows), "plan": round(whole / n, 3),
            **{k: round(v / n, 3) for k, v in right.items()}}
