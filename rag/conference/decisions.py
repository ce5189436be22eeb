"""Counts per decision ("break 2018 down by decision", "orals, posters, rejects and withdrawn
per year?": :attr:`rag.understand.plan.Plan.by_decision`), from the catalog.

Decisions are the tiers of :func:`rag.types.status_tier`, so that one table holds lists that
write them differently (ICLR 2018's "Oral" and "Invite to Workshop Track", ICLR 2026's "Accept
(Oral)" and "Not accepted (Reject, or withdrawn after 2025-11-22)"); the answer states each
list's own words for a tier whenever they differ from the tier's name.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from rag.compose.templates import direct, note
from rag.types import AnswerSentence, Paper, status_tier

#: Tiers in the order a table lists them (accepted tiers first), with the words for each.
TIERS = ("oral", "spotlight", "poster", "accept", "workshop", "reject", "withdrawn", "")
TIER_NAMES = {"oral": "oral", "spotlight": "spotlight", "poster": "poster",
              "accept": "accepted (no tier given)", "workshop": "invited to the workshop track",
              "reject": "rejected", "withdrawn": "withdrawn", "": "no decision listed"}
_ACCEPTED = ("oral", "spotlight", "poster", "accept")


def tier_counts(papers: Iterable[Paper]) -> Counter:
    """Papers per decision tier (:func:`rag.types.status_tier`; ``""`` for none listed)."""
    return Counter(status_tier(p.status or "") for p in papers)


def _share(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "–"


def _said_as(papers: Sequence[Paper]) -> str:
    """The list's own decision strings that say more than their tier's name ("“Not accepted
    (Reject, or withdrawn after 2025-11-22)” as rejected", "“Accept (Conditional Oral)” as
    oral"), as one sentence, or ""."""
    raw: dict[str, set[str]] = {}
    for p in papers:
        tier = status_tier(p.status or "")
        plain = (tier, TIER_NAMES[tier], f"accept ({tier})", "invite to workshop track")
        if p.status and p.status.strip().lower() not in plain:
            raw.setdefault(tier, set()).add(p.status.strip())
    parts = [f"{' and '.join(f'“{s}”' for s in sorted(raw[t]))} as {TIER_NAMES[t]}"
             for t in TIERS if t in raw]
    return f"Counted by tier: {'; '.join(parts)}." if parts else ""


def breakdown(groups: dict[str, Sequence[Paper]], what: str) -> list[AnswerSentence]:
    """The sentences of a count per decision of each group of papers (one group: a scope,
    several: its years, ``{"2018": papers, "2026": papers}``): a line per group with its total
    and each decision's count and share, a Markdown table (decision by group, with the
    accepted total), and the list's words for its tiers. ``what`` names the papers ("papers
    that match year=2018", "papers per year")."""
    counts = {g: tier_counts(ps) for g, ps in groups.items()}
    present = [t for t in TIERS if any(c[t] for c in counts.values())]
    out = []
    lines = []
    for g, ps in groups.items():
        c = counts[g]
        parts = ", ".join(f"{c[t]:,} {TIER_NAMES[t]} ({_share(c[t], len(ps))})"
                          for t in present if c[t])
        lines.append(f"{g}: {len(ps):,} papers: {parts}" if len(groups) > 1 else
                     f"{len(ps):,} {what}: {parts}")
    head = "; ".join(lines) + "."
    out.append(direct(head if len(groups) == 1 else f"{what[0].upper()}{what[1:]} by decision: "
                      f"{head}", []))
    cols = list(groups)
    rows = [f"| decision | {' | '.join(cols) if len(cols) > 1 else 'papers'} |", "|---|" + "---:|" * len(cols)]
    for t in present:
        rows.append(f"| {TIER_NAMES[t]} | " + " | ".join(
            f"{counts[g][t]:,} ({_share(counts[g][t], len(groups[g]))})" for g in cols) + " |")
    if any(counts[g][t] for g in cols for t in _ACCEPTED):
        rows.append("| **accepted** | " + " | ".join(
            f"{sum(counts[g][t] for t in _ACCEPTED):,} "
            f"({_share(sum(counts[g][t] for t in _ACCEPTED), len(groups[g]))})"
            for g in cols) + " |")
    rows.append("| **all** | " + " | ".join(f"{len(groups[g]):,}" for g in cols) + " |")
    out.append(note("\n".join(rows)))
    said = _said_as([p for ps in groups.values() for p in ps])
    if said:
        out.append(note(said))
    return out
