"""Counts per year over an index of several lists: the papers each year has (the catalog's
per-year totals), the papers a filter admits per year ("how many orals in 2018 vs 2026?"), and a
topic's papers per year with their share of that year's papers ("how did interest in GANs
change since 2018?").

A paper counts for a topic in a year when the relevance model (:mod:`rag.retrieve.membership`)
says it is about the topic, or its title or keywords contain the topic's phrase, or its abstract
says it at least twice (:func:`rag.conference.facets.phrase_pattern`; each alternative of "X / Y" and a field acronym's
spelled-out form: :func:`rag.understand.years.topic_alternatives`). The model is run once per
year, its search restricted to that year's papers the filters admit, so that a small year's
papers (or a year's few orals) are not crowded out of its candidates by the rest; it scores only
the few hundred papers nearest the topic, so a broad topic ("reinforcement learning": 2,827
papers of 2026 say it) is counted mostly by its words. Measured on the cross-year check set's
tune half, either rule alone missed: the model alone counted 49 GAN papers in 2018 where about
100 are, the phrase alone 9 graph-neural-network papers of 2018 where about 25 are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from rag.backends.seams import per_retriever
from rag.conference import facets
from rag.filters import Filters
from rag.types import Paper


def year_totals(papers: Iterable[Paper]) -> dict[int, int]:
    """Papers per year, years ascending (papers without a year are left out)."""
    counts = Counter(p.year for p in papers if p.year)
    return dict(sorted(counts.items()))


def index_year_totals(retriever) -> dict[int, int]:
    """:func:`year_totals` of ``retriever``'s papers, counted once per retriever (an index
    re-indexed on disk is reopened as a new retriever); every turn asks it."""
    return per_retriever(retriever, "_year_totals",
                         lambda: year_totals(getattr(retriever, "papers", {}).values()))


@dataclass
class YearRow:
    """One year of a :class:`Trend`: ``n`` papers counted out of ``total`` (the year's papers the
    filters admit: its submissions, or its accepted papers when the filter says so)."""

    year: int
    n: int
    total: int
    #: Mean of the counted papers' mean reviewer ratings (those with ratings), or None.
    mean_rating: float | None = None

    @property
    def share(self) -> float:
        """``n / total`` in [0, 1] (0 for a year with no papers)."""
        return self.n / self.total if self.total else 0.0


@dataclass
class Trend:
    """Papers per year: ``rows`` ascending by year. ``topic`` is ``""`` for a count of the
    catalog alone; ``rule`` says how a topic's papers were counted (``"catalog"``,
    ``"membership+phrase"``, or ``"phrase"`` where no relevance model applies: a fake retriever); ``filters`` are the filters every count is under;
    ``ids`` the counted papers of each year, most likely first (a topic's), for the answer's
    examples."""

    topic: str
    rule: str
    filters: list[str]
    rows: list[YearRow]
    ids: dict[int, list[str]] = field(default_factory=dict)
    threshold: float | None = None
    #: The phrases a paper's words are matched against (a topic's; :func:`topic_trend`).
    phrases: list[str] = field(default_factory=list)

    def direction(self) -> tuple[str, float | None]:
        """``(word, ratio)`` of the last year's share against the first's: ``"up"`` or
        ``"down"`` when the share changed by more than 10% either way (``ratio`` last / first,
        None when the first share is 0), else ``"flat"``; ``("", None)`` with fewer than two
        years."""
        if len(self.rows) < 2:
            return "", None
        first, last = self.rows[0].share, self.rows[-1].share
        if first == 0:
            return ("up" if last > 0 else "flat"), None
        ratio = last / first
        if ratio > 1.1:
            return "up", ratio
        if ratio < 1 / 1.1:
            return "down", ratio
        return "flat", ratio

    def to_json(self) -> dict:
        """``{"topic", "rule", "filters", "threshold", "direction", "ratio", "years": [{"year",
        "n", "total", "share"}]}``: the ``trend`` object of ``ask --json``."""
        word, ratio = self.direction()
        return {"topic": self.topic, "rule": self.rule, "filters": list(self.filters),
                "threshold": self.threshold, "phrases": list(self.phrases), "direction": word,
                "ratio": round(ratio, 4) if ratio is not None else None,
                "years": [{"year": r.year, "n": r.n, "total": r.total,
                           "share": round(r.share, 6), "mean_rating": r.mean_rating}
                          for r in self.rows]}

    @classmethod
    def from_json(cls, d: dict) -> "Trend":
        """The trend :meth:`to_json` gave."""
        return cls(d.get("topic", ""), d.get("rule", "catalog"), list(d.get("filters") or []),
                   [YearRow(int(r["year"]), int(r["n"]), int(r["total"]), r.get("mean_rating"))
                    for r in d.get("years") or []], threshold=d.get("threshold"),
                   phrases=list(d.get("phrases") or []))


def mean_rating(papers: Iterable[Paper]) -> float | None:
    """The mean of ``papers``' mean reviewer ratings (unrated papers left out), 2 decimals; None
    when none is rated."""
    means = [p.rating["mean"] for p in papers if p.rating]
    return round(sum(means) / len(means), 2) if means else None


def rating_scales(papers: Iterable[Paper]) -> dict[int, list[float]]:
    """The distinct reviewer scores each year's papers were given, ascending (ICLR 2018: 1-10;
    ICLR 2026: 0, 2, 4, 6, 8, 10), years ascending."""
    scales: dict[int, set[float]] = {}
    for p in papers:
        if p.year and p.ratings:
            scales.setdefault(p.year, set()).update(float(r) for r in p.ratings)
    return {y: sorted(v) for y, v in sorted(scales.items())}


def scale_note(papers: Iterable[Paper], years: Iterable[int]) -> str:
    """A sentence when ``years`` were rated on different scales ("ICLR 2018 reviewers gave 1 to
    10, ICLR 2026 reviewers 0, 2, 4, 6, 8 or 10: ratings of different years are not on one
    scale"), else ``""``."""
    scales = {y: v for y, v in rating_scales(papers).items() if y in set(years)}
    if len(scales) < 2 or len({tuple(v) for v in scales.values()}) == 1:
        return ""

    def said(v: list[float]) -> str:
        nums = [f"{x:g}" for x in v]
        steps = {b - a for a, b in zip(v, v[1:])}
        if steps == {1.0}:
            return f"{nums[0]} to {nums[-1]}"
        return ", ".join(nums[:-1]) + f" or {nums[-1]}"

    parts = [f"{y} reviewers gave {said(v)}" for y, v in scales.items()]
    return ("The years' reviewers used different scales (" + "; ".join(parts) +
            "), so their ratings are not directly comparable.")


def _in_year(filters: Filters | None, year: int) -> Filters:
    return Filters.parse([f"year={year}"]).merged(filters) if filters else \
        Filters.parse([f"year={year}"])


def catalog_trend(papers: dict[str, Paper], filters: Filters | None,
                  years: Iterable[int]) -> Trend:
    """Papers the ``filters`` admit in each of ``years``, out of the year's papers in the same
    part of the list: the filters other than a decision or a rating (an area, a keyword, an
    author) make the total too ("the acceptance rate of the datasets and benchmarks area": its
    accepted papers out of the area's, not out of every paper of the year).

    Raises:
        ValueError: ``filters`` hold a year (the years are the rows here).
    """
    if filters and "year" in filters.values:
        raise ValueError("a per-year count takes its years apart from its filters")
    scope = Filters({k: v for k, v in filters.values.items() if k not in ("status", "rating")}) \
        if filters else Filters()
    rows, ids = [], {}
    for y in sorted(set(years)):
        every = facets.matching(papers, _in_year(scope or None, y))
        chosen = [p for p in every if not filters or filters.matches(p)]
        rows.append(YearRow(y, len(chosen), len(every), mean_rating(chosen)))
        ids[y] = [p.id for p in facets.by_rating(chosen)]
    return Trend("", "catalog", filters.as_strings() if filters else [], rows, ids)


def _lowered(retriever, texts: dict[str, str]) -> dict[str, str]:
    """Each paper's search text in lower case, computed once per retriever."""
    cached = getattr(retriever, "_lowered_texts", None)
    if cached is None or len(cached) != len(texts):
        cached = {pid: t.lower() for pid, t in texts.items()}
        try:
            retriever._lowered_texts = cached
        except AttributeError:
            pass
    return cached


def said_of(paper: Paper, pattern, text: str) -> bool:
    """True when the phrase ``pattern`` is in ``paper``'s title or keywords, or at least twice
    in its search text (``text``: title, keywords and abstract): a paper that names the topic
    once in passing ("unlike GANs, ...") is not counted by its words."""
    from rag.text import normalise

    head = normalise(paper.title) + " " + " ".join(normalise(k) for k in paper.keywords)
    return bool(pattern.search(head)) or len(pattern.findall(text)) >= 2


def topic_trend(retriever, topic: str, filters: Filters | None, years: Iterable[int]) -> Trend:
    """Papers on ``topic`` in each of ``years`` among those ``filters`` admit, out of the year's
    papers the filters admit (see the module docstring for the rule).

    Raises:
        ValueError: ``filters`` hold a year.
    """
    from rag.understand.years import topic_alternatives

    if filters and "year" in filters.values:
        raise ValueError("a per-year count takes its years apart from its filters")
    texts = retriever.search_texts()
    lowered = _lowered(retriever, texts)
    phrases = topic_alternatives(topic)
    inputs = getattr(retriever, "fusion_inputs", None)
    reference = inputs(topic) if inputs is not None else None  # the whole index's channels
    rows: list[YearRow] = []
    ids: dict[int, list[str]] = {}
    threshold = None
    for y in sorted(set(years)):
        scope = _in_year(filters, y)
        in_scope = [p for p in retriever.papers.values() if scope.matches(p)]
        total = len(in_scope)
        found = facets.topic_members(retriever, topic, scope, within=scope, phrase=False,
                                     reference=reference)
        members = [p.id for p in found.papers] if found is not None else []
        if found is not None:
            threshold = found.threshold
        seen = set(members)
        worded = []
        for phrase in phrases:
            pattern = facets.phrase_pattern(phrase)
            first = facets.phrase_stem(phrase)
            for p in in_scope:
                # (a substring test first: the pattern's first word, lower case, must be there)
                if p.id not in seen and first in lowered.get(p.id, "") and \
                        pattern.search(texts.get(p.id, "")) and \
                        said_of(p, pattern, texts.get(p.id, "")):
                    seen.add(p.id)
                    worded.append(p.id)
        rows.append(YearRow(y, len(members) + len(worded), total,
                            mean_rating(retriever.papers[i] for i in members + worded)))
        ids[y] = members + worded
    return Trend(topic, "membership+phrase" if threshold is not None else "phrase",
                 filters.as_strings() if filters else [], rows, ids, threshold, phrases)


def topic_papers(retriever, topic: str, filters: Filters | None) -> tuple[list[Paper], Trend]:
    """``(papers, trend)``: the papers on ``topic`` among those ``filters`` admit, counted with
    :func:`topic_trend`'s rule in each year the filters name (every year of the index when they
    name none), most likely first within each year, years ascending."""
    years = [int(y) for y in filters.values.get("year", [])] if filters else []
    rest = filters.without([f"year={y}" for y in years]) if years else filters
    trend = topic_trend(retriever, topic, rest or None,
                        years or list(index_year_totals(retriever)) or [0])
    return [retriever.papers[i] for y in sorted(trend.ids) for i in trend.ids[y]
            if i in retriever.papers], trend


def share_text(row: YearRow) -> str:
    """"61 of 995 (6.1%)"."""
    pct = 100 * row.share
    digits = 1 if pct >= 1 or pct == 0 else 2
    return f"{row.n:,} of {row.total:,} ({pct:.{digits}f}%)"


def table_markdown(trend: Trend, counted: str, base: str) -> str:
    """The per-year counts as a Markdown table (the terminal's and the chat's compact view):
    columns year, ``counted`` (what was counted), ``base`` (what it is a share of), share, and
    the counted papers' mean rating when any is rated."""
    rated = any(r.mean_rating is not None for r in trend.rows)
    lines = [f"| year | {counted} | {base} | share |" + (" mean rating |" if rated else ""),
             "|---:|---:|---:|---:|" + ("---:|" if rated else "")]
    for r in trend.rows:
        pct = share_text(r).split("(")[1].rstrip(")")
        mean = "" if not rated else (f" {r.mean_rating:.2f} |" if r.mean_rating is not None
                                     else " – |")
        lines.append(f"| {r.year} | {r.n:,} | {r.total:,} | {pct} |{mean}")
    return "\n".join(lines)


def count_change_text(trend: Trend, noun: str) -> str:
    """The change in counts from the first year to the last ("2026 had 201 more orals than 2018
    (9.7x as many)."); "" with fewer than two years, none in the first or the same count."""
    if len(trend.rows) < 2:
        return ""
    a, b = trend.rows[0], trend.rows[-1]
    if not a.n or a.n == b.n:
        return ""
    more = "more" if b.n > a.n else "fewer"
    return f"{b.year} had {abs(b.n - a.n):,} {more} {noun} than {a.year} ({b.n / a.n:.1f}x as many)."


def direction_text(trend: Trend) -> str:
    """The change in one sentence: "The share rose from 0.5% in 2018 to 3.2% in 2026, about
    6.4x." / "... fell ..., to about a seventh of its 2018 share." / "... about the same"; for
    every paper of each year, the difference in size ("2026 had 18,635 more papers than 2018
    (19.7x as many).")."""
    word, ratio = trend.direction()
    if len(trend.rows) >= 2 and all(r.n == r.total for r in trend.rows):
        # every paper of each year: no share to compare, but the sizes ("how many more
        # submissions in 2026 than in 2018?", "how many times bigger?")
        a, b = trend.rows[0], trend.rows[-1]
        if not a.n or a.n == b.n:
            return ""
        more = "more" if b.n > a.n else "fewer"
        return (f"{b.year} had {abs(b.n - a.n):,} {more} paper{'s' if abs(b.n - a.n) > 1 else ''}"
                f" than {a.year} "
                f"({b.n / a.n:.1f}x as many).")
    if not word:
        return ""
    a, b = trend.rows[0], trend.rows[-1]
    pa, pb = share_text(a).split("(")[1].rstrip(")"), share_text(b).split("(")[1].rstrip(")")
    what = "share" if trend.topic else "share of the year's papers"
    if word == "flat":
        return f"The {what} stayed about the same: {pa} in {a.year}, {pb} in {b.year}."
    if ratio is None:
        return f"The {what} rose from none in {a.year} to {pb} in {b.year}."
    if word == "up":
        return (f"The {what} rose from {pa} in {a.year} to {pb} in {b.year}, about "
                f"{ratio:.1f}x.")
    inverse = 1 / ratio if ratio else 0
    return (f"The {what} fell from {pa} in {a.year} to {pb} in {b.year}, about 1/{inverse:.0f}"
            f" of its {a.year} share." if inverse >= 2 else
            f"The {what} fell from {pa} in {a.year} to {pb} in {b.year} ({ratio:.2f}x).")


def rule_text(trend: Trend) -> str:
    """How a topic's papers were counted, in one sentence (:func:`topic_trend`)."""
    phrases = " or ".join(f"“{p}”" for p in trend.phrases) or f"“{trend.topic}”"
    if trend.rule == "membership+phrase":
        return (f"A paper counts when the relevance model gives it a probability of at least "
                f"{trend.threshold:.2f} of being about the topic (searched within each year's "
                f"papers), or its title or keywords say {phrases}, or its abstract says it "
                f"at least twice.")
    return (f"A paper counts when its title or keywords say {phrases}, or its abstract says it "
            f"at least twice.")
