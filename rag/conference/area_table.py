"""The per-area table of a conference (:func:`area_table`), for the UI's Map view and
``paperchat map``: papers, accepted share, mean rating and rating spread per primary area, as
HTML or records (:class:`AreaTable`).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from rag.conference.plotting import _paper_list, area_of, mean_rating
from rag.types import Paper, is_accepted


@dataclass
class AreaRow:
    """One primary area. ``accepted`` counts papers whose status is an acceptance
    (:func:`rag.types.is_accepted`) among all ``papers`` listed in the area (withdrawn and
    rejected included); ``mean_rating`` is the mean of the ``rated`` papers' mean ratings (each
    paper weighs the same); ``q1``/``q3`` the quartiles of those means (linear interpolation,
    as ``numpy.percentile``); all three None when no paper of the area is rated."""

    area: str
    papers: int
    accepted: int
    rated: int
    mean_rating: float | None
    q1: float | None
    q3: float | None

    @property
    def accepted_share(self) -> float:
        return self.accepted / self.papers if self.papers else 0.0


def _row(area: str, plist: list[Paper]) -> AreaRow:
    means = np.array([m for p in plist if (m := mean_rating(p)) is not None], dtype=float)
    stats: tuple[float | None, ...] = (None, None, None)
    if len(means):
        q1, q3 = np.percentile(means, [25, 75])
        stats = (float(means.mean()), float(q1), float(q3))
    return AreaRow(area, len(plist), sum(is_accepted(p.status or "") for p in plist),
                   int(len(means)), *stats)


@dataclass
class AreaTable:
    """Per primary area (most papers first) and ``total`` (every paper). Renders itself:
    :meth:`html`, :meth:`records`, :attr:`note`."""

    rows: list[AreaRow] = field(default_factory=list)
    total: AreaRow | None = None

    @property
    def all_accepted(self) -> bool:
        """True when every paper of the list is accepted: the accepted share is then 100%
        everywhere and says nothing about an area."""
        return bool(self.total and self.total.papers and self.total.accepted == self.total.papers)

    @property
    def note(self) -> str:
        """A plain-text caveat for the table, or ``""``."""
        notes = []
        if self.all_accepted:
            notes.append("Every paper in this list is accepted, so the accepted share is 100% "
                         "in every area and says nothing about acceptance rates; a list that "
                         "includes the rejected papers (such as all of ICLR 2026) gives them.")
        if self.total and self.total.papers and not self.total.rated:
            notes.append("No paper in this list has reviewer ratings.")
        return " ".join(notes)

    def records(self) -> list[dict]:
        """The rows (then the total) as dicts: area, papers, accepted, accepted_share, rated,
        mean_rating, q1, q3 (ratings None when unrated)."""
        rows = self.rows + ([self.total] if self.total else [])
        return [dict(area=r.area, papers=r.papers, accepted=r.accepted,
                     accepted_share=r.accepted_share, rated=r.rated, mean_rating=r.mean_rating,
                     q1=r.q1, q3=r.q3) for r in rows]

    def html(self) -> str:
        """An HTML table (class ``pc-areas``; every text escaped) with the note under it."""
        def num(x: float | None, fmt: str = ".2f") -> str:
            return "–" if x is None else format(x, fmt)

        def tr(r: AreaRow, cls: str = "") -> str:
            share = "–" if self.all_accepted else f"{r.accepted_share:.0%}"
            spread = "–" if r.q1 is None else f"{r.q1:.2f}–{r.q3:.2f}"
            return (f'<tr{cls}><td class="pc-area-name">{html.escape(r.area)}</td>'
                    f"<td>{r.papers:,}</td><td>{share}</td><td>{num(r.mean_rating)}</td>"
                    f"<td>{spread}</td><td>{r.rated:,}</td></tr>")

        head = ("<thead><tr><th>Primary area</th><th>Papers</th><th>Accepted</th>"
                "<th>Mean rating</th><th>Rating IQR</th><th>Rated</th></tr></thead>")
        body = "".join(tr(r) for r in self.rows)
        foot = tr(self.total, ' class="pc-area-total"') if self.total else ""
        caption = ("Mean rating: mean of the papers' mean reviewer ratings; Rating IQR: middle "
                   "half of those means; Accepted: share of all listed papers (withdrawn "
                   "included).")
        note = f'<p class="pc-area-note">{html.escape(self.note)}</p>' if self.note else ""
        return (f'<div class="pc-areas">{note}<table class="pc-areas">{head}<tbody>{body}'
                f'</tbody><tfoot>{foot}</tfoot></table>'
                f'<p class="pc-area-caption">{html.escape(caption)}</p></div>')


def area_table(papers: Mapping[str, Paper] | Iterable[Paper]) -> AreaTable:
    """Papers, accepted share, mean rating and rating spread per primary area (:class:`AreaRow`);
    papers without an area are grouped under :data:`rag.conference.plotting.NO_AREA`."""
    plist = _paper_list(papers)
    groups: dict[str, list[Paper]] = {}
    for p in plist:
        groups.setdefault(area_of(p), []).append(p)
    rows = [_row(a, ps) for a, ps in groups.items()]
    rows.sort(key=lambda r: (-r.papers, r.area))
    return AreaTable(rows, _row("all areas", plist))
