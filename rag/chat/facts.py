"""The catalog facts a turn asks of the papers an answer is about (:attr:`rag.understand.plan.Plan.facts`):
their decision ("was it an oral?"), their reviewer rating ("what's its rating?") and their
primary area ("what area is StepORLM in?"), stated before the answer from the catalog, never
from an abstract (which does not say them).
"""

from __future__ import annotations

from rag.chat.exact import Outcome
from rag.chat.selection import COMPARE_MAX
from rag.compose.templates import direct
from rag.types import Hit
from rag.understand.plan import Plan

def with_facts(plan: Plan, out: Outcome) -> Outcome:
    """``out`` with the facts ``plan`` asks for stated first, one sentence of each kind asked
    (area, then decision or rating), each of the papers the answer is about (at most
    :data:`rag.chat.selection.COMPARE_MAX`); a turn that asks only a paper's rating gets the rating alone."""
    asked = [f for f in ("area", "status", "rating") if f in plan.facts]
    if not out.hits or not asked:
        return out
    from rag.understand.rating_order import asks_only_rating

    about = [n for n in (out.about or [1]) if 1 <= n <= len(out.hits)][:COMPARE_MAX]
    said = {"area": _area_fact, "status": _decision, "rating": _rating_fact}
    if "status" in asked and "rating" in asked:
        asked.remove("rating")  # (a decision's sentence states the rating too)
    head = [direct(" ".join(said[f](out.hits[n - 1], n) for n in about), about) for f in asked]
    # "what's its rating?" asks nothing else: the abstract's sentences would answer nothing
    rest = [] if asked == ["rating"] and asks_only_rating(plan.said) else out.sentences
    out.sentences = head + rest
    return out


def _area_fact(hit: Hit, n: int) -> str:
    """"StepORLM: ... [1] is in the primary area “optimization”."; the catalog's area."""
    p = hit.paper
    if not p.primary_area:
        return f"{p.title} [{n}] has no primary area in this list."
    return f"{p.title} [{n}] is in the primary area “{p.primary_area}”."


def _rating_fact(hit: Hit, n: int) -> str:
    """"GEPA: ... [1] has a mean reviewer rating of 6.5 (4 reviews, 4–8)."; the catalog's
    ratings (:meth:`rag.types.Paper.rating_text`)."""
    p = hit.paper
    said = p.rating_text()
    if not said:
        return f"{p.title} [{n}] has no reviewer ratings in this list."
    mean, _, rest = said.removeprefix("rating ").partition(" · ")
    return f"{p.title} [{n}] has a mean reviewer rating of {mean} ({rest})."


def _decision(hit: Hit, n: int) -> str:
    """"StepORLM: ... [1] was accepted as a poster (Accept (Poster); rating 6.5 · 4 reviews)."."""
    from rag.types import status_tier

    p = hit.paper
    tier = status_tier(p.status or "")
    said = {"oral": "was accepted as an oral", "spotlight": "was accepted as a spotlight",
            "poster": "was accepted as a poster"}.get(tier, f"has the decision {p.status!r}"
                                                      if p.status else "has no decision listed")
    extra = "; ".join(x for x in (p.status, p.rating_text()) if x)
    return f"{p.title} [{n}] {said}{f' ({extra})' if extra else ''}."
