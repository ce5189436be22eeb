"""Answers per year over an index of several lists (:attr:`rag.understand.plan.Plan.per_year`):
a count per year with its share of the year's papers ("how many orals in 2018 vs 2026?"), a
topic's papers per year and the direction of its share ("how did interest in GANs change since
2018?", :mod:`rag.conference.trends`), and the best- or worst-rated papers of each year. Every
number comes from the catalog or the stated counting rule, never from a model's text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.chat.exact import Outcome
from rag.chat.selection import Selection, _as_hits
from rag.compose.templates import direct, heading, note
from rag.conference import facets, trends
from rag.conference.trends import rule_text
from rag.filters import Filters
from rag.understand.plan import Plan, one_year_only
from rag.understand.topics import has_topic

if TYPE_CHECKING:
    from rag.backends.seams import Retriever

#: Example papers an answer per year shows for each year (the rest are counted, not shown).
SHOWN_PER_YEAR = 5


def compared_years(plan: Plan, totals: dict[int, int]) -> list[int]:
    """The index years a per-year answer covers: the years said when two or more are in the
    index, the index years from the one year said on ("since 2018"), the one year said alone
    when nothing says "since" ("the acceptance rate at ICLR 2018"), else every index year."""
    said = [y for y in plan.years if y in totals]
    if len(said) >= 2:
        return sorted(said)
    if len(said) == 1 and one_year_only(plan.said):
        return said
    if len(plan.years) == 1:
        later = [y for y in totals if y >= plan.years[0]]
        if len(later) >= 2:
            return later
    return list(totals)


def one_year_note(totals: dict[int, int]) -> str:
    """What a per-year question is told on an index of one year (or none)."""
    held = ", ".join(map(str, totals)) or "no year"
    return (f"This index holds papers of {held} only, so there is nothing to compare across "
            "years; index several lists into one (paperchat index A.jsonl B.jsonl --name "
            "NAME) to compare them. Counted over this index instead:")


def _tier_share(trend, retriever) -> str:
    """For a count per year of one accepted tier (orals, spotlights, posters), its share of each
    year's accepted papers ("Of the accepted papers: 6.8% in 2018 (23 of 337), 4.2% in 2026 (224
    of 5,358)."); "" otherwise."""
    from rag.types import is_accepted

    f = Filters.parse(trend.filters) if trend.filters else None
    tiers = [v.lower() for v in (f.values.get("status", []) if f else [])]
    if not f or not tiers or set(f.values) != {"status"} or not all(
            t.rstrip("s") in ("oral", "spotlight", "poster") for t in tiers):
        return ""
    parts = []
    for r in trend.rows:
        accepted = sum(1 for p in retriever.papers.values()
                       if p.year == r.year and is_accepted(p.status))
        if accepted:
            parts.append(f"{100 * r.n / accepted:.1f}% in {r.year} ({r.n:,} of {accepted:,})")
    return f"Of the accepted papers: {', '.join(parts)}." if parts else ""


def run(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome | None:
    """The answer per year of ``plan`` on ``sel`` (its filters, less any year), or None when
    the index holds fewer than two years (the caller then answers over the whole index and says
    so: :func:`one_year_note`)."""
    totals = trends.index_year_totals(retriever)
    if len(totals) < 2:
        return None
    years = compared_years(plan, totals)
    filters = sel.filters.without([f"year={y}" for y in sel.filters.values.get("year", [])]) \
        if sel.filters else sel.filters
    if plan.op == "extreme":
        return _extremes(plan, filters, years, retriever)
    if plan.by_decision:
        return _by_decision(filters, years, retriever)
    topic = plan.topic if sel.searched and has_topic(plan.topic or "") else ""
    trend = trends.topic_trend(retriever, topic, filters or None, years) if topic else \
        trends.catalog_trend(retriever.papers, filters or None, years)
    return outcome(trend, retriever, means=plan.mean_rating)


def _by_decision(filters, years: list[int], retriever: Retriever) -> Outcome:
    """A count per decision in each of ``years`` among the papers ``filters`` admit (a table
    of decision by year, :func:`rag.conference.breakdowns.by_decision`), the best-rated papers of
    each year as the hits."""
    from rag.conference import breakdowns

    groups = {str(y): facets.matching(retriever.papers, Filters.parse([f"year={y}"])
                                      .merged(filters or None)) for y in years}
    what = facets.describe_plural(filters.as_strings()) if filters else "papers"
    out = breakdowns.by_decision(groups, what)
    hits = []
    for y in reversed(years):
        chosen = facets.by_rating(groups[str(y)])[:SHOWN_PER_YEAR]
        if not chosen:
            continue
        start = len(hits) + 1
        hits += _as_hits(chosen, 1.0 - len(hits) / 100)
        out.append(heading(f"{y}, the {len(chosen)} best rated:"))
        out += [facets.rated_item(h, n, None) for n, h in enumerate(hits[start - 1:], start)]
    return Outcome(out, "count", hits, about=list(range(1, len(hits) + 1)))


def _what(trend: trends.Trend) -> str:
    what = facets.describe_plural(trend.filters) if trend.filters else "papers"
    return f"{what} about “{trend.topic}”" if trend.topic else what


def outcome(trend: trends.Trend, retriever: Retriever, means: bool = False) -> Outcome:
    """The sentences of ``trend``: the per-year lines (the terminal's table), the direction,
    the rule, then up to :data:`SHOWN_PER_YEAR` example papers of each year as the hits; with
    ``means`` (a mean rating asked for) the first line gives each year's mean rating."""
    what = _what(trend)
    noun = facets.describe_plural(trend.filters) if trend.filters and trend.topic else \
        facets.describe_plural([f for f in trend.filters if not f.startswith(("status=", "rating"))])
    first = ", ".join(f"{trends.share_text(r)} in {r.year}" for r in trend.rows)
    if means:
        first = ", ".join(f"{r.mean_rating:.2f} in {r.year} ({r.n:,} papers)"
                          if r.mean_rating is not None else f"no ratings in {r.year}"
                          for r in trend.rows)
        what = f"mean reviewer rating of the {what}"
    out = [direct(f"{what[0].upper()}{what[1:]} per year: {first}.", []),
           note(trends.table_markdown(trend, f"on “{trend.topic}”" if trend.topic else
                                      facets.describe_plural(trend.filters),
                                      f"{noun} that year"))]
    line = trends.direction_text(trend)
    if line:
        out.append(note(line))
    counts = trends.count_change_text(trend, facets.describe_plural(trend.filters)
                                      if not trend.topic else f"papers on “{trend.topic}”")
    if counts and line and "as many" not in line:
        out.append(note(counts))
    tiers = _tier_share(trend, retriever) if not trend.topic else ""
    if tiers:
        out.append(note(tiers))
    scales = trends.scale_note(retriever.papers.values(), [r.year for r in trend.rows])
    if scales and (means or any(r.mean_rating is not None for r in trend.rows)):
        out.append(note(scales))
    if trend.topic:
        out.append(note(rule_text(trend)))
    hits = []
    for r in reversed(trend.rows):
        ids = trend.ids.get(r.year, [])[:SHOWN_PER_YEAR]
        if not ids:
            continue
        papers = [retriever.papers[i] for i in ids if i in retriever.papers]
        start = len(hits) + 1
        hits += _as_hits(papers, 1.0 - len(hits) / 100)
        label = "most likely on the topic" if trend.topic else "best rated"
        out.append(heading(f"{r.year}, the {len(papers)} {label}:" if r.n > len(papers) else
                           f"{r.year}, all {len(papers)}:"))
        out += [facets.rated_item(h, n, None) for n, h in enumerate(hits[start - 1:], start)]
    return Outcome(out, "count", hits, about=list(range(1, len(hits) + 1)), trend=trend)


def _extremes(plan: Plan, filters, years: list[int], retriever: Retriever) -> Outcome:
    """The best- (or worst-) rated ``plan.n`` papers of each year among those ``filters`` admit
    (ties at the cut stated)."""
    from rag.filters import Filters

    desc = plan.order != "rating_asc"
    n = max(1, plan.n or 1)
    word = "highest" if desc else "lowest"
    what = facets.describe_plural(filters.as_strings()) if filters else "papers"
    out = [direct(f"The {word}-rated {what} of each year (by mean reviewer rating):", [])]
    scales = trends.scale_note(retriever.papers.values(), years)
    if scales:
        out.append(note(scales))
    hits = []
    for y in reversed(years):
        scope = Filters.parse([f"year={y}"]).merged(filters or None)
        rated = [p for p in facets.by_rating(facets.matching(retriever.papers, scope), desc)
                 if p.rating]
        if not rated:
            out.append(note(f"{y}: no paper has reviewer ratings in this list."))
            continue
        cut = rated[min(n, len(rated)) - 1].rating["mean"]
        tied = [p for p in rated[n:] if p.rating["mean"] == cut]
        chosen = rated[:n]
        start = len(hits) + 1
        hits += _as_hits(chosen, 1.0 - len(hits) / 100)
        out.append(heading(f"{y} ({len(rated):,} rated papers):"))
        out += [facets.rated_item(h, i, None) for i, h in enumerate(hits[start - 1:], start)]
        if tied:
            out.append(note(f"{len(tied)} more {y} paper{'s are' if len(tied) > 1 else ' is'} "
                            f"tied at {cut}."))
    return Outcome(out, "extreme", hits, about=list(range(1, len(hits) + 1)))


def counted_before(history, retriever: Retriever):
    """``(topic, papers)``: every paper the last topic count of the conversation counted (the
    same count again: per year, :func:`rag.conference.trends.topic_trend`; of one set, the
    relevance model's or the phrase's, as :mod:`rag.chat.exact` counts), for a filter asked next
    ("which of the 2018 ones were orals?", then "and in 2026?"); None when the last answers
    are no such count and filters of it."""
    from rag.filters import FilterError, Filters

    plan: dict = {}
    for turn in reversed(list(history)):
        plan = getattr(turn, "plan", None) or {}
        if plan.get("per_year") or plan.get("op") == "count" and plan.get("papers") == "search":
            break
        if plan.get("papers") not in ("catalog", "previous", "focus") or \
                plan.get("op") not in ("list", "count", "sort", "extreme") or plan.get("topic"):
            return None
    topic = plan.get("topic") or ""
    if not has_topic(topic) or plan.get("op") != "count" or plan.get("mean_rating") or \
            plan.get("by_area") or plan.get("by_decision"):
        return None
    try:
        filters = Filters.parse(plan.get("filters") or [])
    except FilterError:
        return None
    if not plan.get("per_year"):
        # "which of the 2026 ones got an oral?" after "how many 2026 papers on X?": the papers
        # that count counted (rag.chat.exact: the relevance model's, or the phrase's for a
        # broad topic)
        found = facets.topic_members(retriever, topic, filters or None)
        if facets.by_meaning(found):
            return topic, list(found.papers)
        return topic, facets.topic_matches(topic, retriever.papers, retriever.search_texts(),
                                           filters or None)
    totals = trends.index_year_totals(retriever)
    if len(totals) < 2:
        return None
    years = compared_years(Plan.from_json(plan), totals)
    trend = trends.topic_trend(retriever, topic, filters or None, years)
    ids = [pid for y in sorted(trend.ids) for pid in trend.ids[y]]
    return topic, [retriever.papers[i] for i in ids if i in retriever.papers]
