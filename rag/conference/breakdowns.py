"""Counts broken down, from the catalog: per decision ("break 2018 down by decision", "orals,
posters, rejects and withdrawn per year?": :attr:`rag.understand.plan.Plan.by_decision`) and per
primary area ("which primary area had the most orals in 2026?", "what areas are there?":
:attr:`rag.understand.plan.Plan.by_area`).

Decisions are the tiers of :func:`rag.types.status_tier`, so that one table holds lists that
write them differently (ICLR 2018's "Oral" and "Invite to Workshop Track", ICLR 2026's "Accept
(Oral)" and "Not accepted (Reject, or withdrawn after 2025-11-22)"); the answer states each
list's own words for a tier whenever they differ from the tier's name.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from rag.compose.templates import direct, note
from rag.conference.trends import mean_rating
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


def by_decision(groups: dict[str, Sequence[Paper]], what: str) -> list[AnswerSentence]:
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
    means = {g: {t: mean_rating(p for p in groups[g] if status_tier(p.status or "") == t)
                 for t in present} for g in cols}
    # each decision's mean reviewer rating, per group, beside the counts (when any is rated)
    rated = any(m is not None for g in cols for m in means[g].values())
    rows = [f"| decision | {' | '.join(cols) if len(cols) > 1 else 'papers'} |" +
            ("".join(f" mean rating{f' {g}' if len(cols) > 1 else ''} |" for g in cols)
             if rated else ""),
            "|---|" + "---:|" * len(cols) * (2 if rated else 1)]
    for t in present:
        rows.append(f"| {TIER_NAMES[t]} | " + " | ".join(
            f"{counts[g][t]:,} ({_share(counts[g][t], len(groups[g]))})" for g in cols) + " |" +
            ("".join(f" {means[g][t]:.2f} |" if means[g][t] is not None else " – |"
                     for g in cols) if rated else ""))
    if any(counts[g][t] for g in cols for t in _ACCEPTED):
        rows.append("| **accepted** | " + " | ".join(
            f"{sum(counts[g][t] for t in _ACCEPTED):,} "
            f"({_share(sum(counts[g][t] for t in _ACCEPTED), len(groups[g]))})"
            for g in cols) + " |")
    rows.append("| **all** | " + " | ".join(f"{len(groups[g]):,}" for g in cols) + " |")
    width = rows[0].count("|") - 1
    rows[2:] = [r + " |" * (width - (r.count("|") - 1)) for r in rows[2:]]  # (blank cells)
    out.append(note("\n".join(rows)))
    said = _said_as([p for ps in groups.values() for p in ps])
    if said:
        out.append(note(said))
    return out


#: Areas a per-area table lists (the rest are summed in one line).
AREAS_LISTED = 40


#: Papers an area needs for its rate to be ranked ("the best acceptance rate").
MIN_RATED_AREA = 20


def by_area(chosen: Sequence[Paper], scope: Sequence[Paper], what: str,
            scope_what: str, by_rate: bool = False) -> list[AnswerSentence]:
    """The sentences of a count per primary area of ``chosen`` (the papers the filters admit),
    most first: the area with the most, then a Markdown table of every area (at most
    :data:`AREAS_LISTED`) with its count, its share of ``chosen`` and, when ``chosen`` is a
    part of ``scope`` (a decision or rating filter: the same filters less those), the area's
    papers in ``scope`` and the share of them chosen. ``what`` names ``chosen`` ("orals
    matching year=2026"), ``scope_what`` the scope's papers ("papers of 2026")."""
    counts = Counter(p.primary_area or "no area listed" for p in chosen)
    if not counts:
        return [note(f"0 {what}.")]
    if set(counts) == {"no area listed"}:
        return [direct(f"{len(chosen):,} {what}; the list gives none of them a primary area, so "
                       "they cannot be counted per area.", [])]
    part = len(scope) != len(chosen)
    totals = Counter(p.primary_area or "no area listed" for p in scope) if part else counts
    by_count = sorted(counts, key=lambda a: (-counts[a], a))
    ranked = by_count
    if by_rate and part:
        # "which area had the best acceptance rate?": ranked by the share of the area's papers
        ranked = sorted(counts, key=lambda a: (-(counts[a] / totals[a]) if totals[a] >=
                                               MIN_RATED_AREA else 1.0, a))
    if ranked is not by_count and totals[ranked[0]] >= MIN_RATED_AREA:
        top, low = ranked[0], ranked[-1] if totals[ranked[-1]] >= MIN_RATED_AREA else None
        head = (f"By rate, among the areas with at least {MIN_RATED_AREA} papers: "
                f"“{top}” has the highest ({counts[top]:,} of {totals[top]:,}, "
                f"{_share(counts[top], totals[top])})" + (
                    f", “{low}” the lowest ({counts[low]:,} of {totals[low]:,}, "
                    f"{_share(counts[low], totals[low])})" if low and low != top else "") +
                f"; {len(chosen):,} {what} in all.")
    else:
        top = by_count[0]
        ties = [a for a in by_count if counts[a] == counts[top]]
        where = (" and ".join(f"“{a}”" for a in ties) +
                 f" ({counts[top]:,} each, {_share(counts[top], len(chosen))})" if len(ties) > 1
                 else f"“{top}” ({counts[top]:,}, {_share(counts[top], len(chosen))})")
        # (the area first: "which area had the most submissions, and how many?" is answered
        # by the first number said)
        head = f"The most are in {where}, of the {len(chosen):,} {what} in " \
               f"{len(counts)} primary areas."
    rows = ["| primary area | " + ("count | share | " + f"{scope_what} | rate |" if part else
                                  "papers | share |"),
            "|---|" + "---:|" * (4 if part else 2)]
    for a in ranked[:AREAS_LISTED]:
        cells = f"{counts[a]:,} | {_share(counts[a], len(chosen))}"
        if part:
            cells += f" | {totals[a]:,} | {_share(counts[a], totals[a])}"
        rows.append(f"| {a} | {cells} |")
    rest = ranked[AREAS_LISTED:]
    if rest:
        rows.append(f"| ({len(rest)} more areas) | {sum(counts[a] for a in rest):,} |" +
                    (" | | |" if part else " |"))
    out = [direct(head, []), note("\n".join(rows))]
    if part and ranked is by_count:
        best = max(counts, key=lambda a: (counts[a] / totals[a] if totals[a] >= MIN_RATED_AREA
                                          else -1, a))
        if totals[best] >= MIN_RATED_AREA:
            out.append(note(f"By rate, among areas of at least {MIN_RATED_AREA} papers: “{best}” "
                            f"({counts[best]:,} of {totals[best]:,}, "
                            f"{_share(counts[best], totals[best])})."))
    return out
