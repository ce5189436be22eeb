"""Figures of a conference: the paper map, the rating histogram and the per-area table, for the
UI's Map view and ``paperchat map``.

Pure functions over a layout and the papers; nothing here reads an index or the network. A layout
is :class:`index.layout.Layout` (or anything with its fields): ``ids`` (paper ids), ``xy``
(shape (n, 2), float32, row ``i`` is ``ids[i]``), ``labels`` (region labels with ``text``,
``x``, ``y`` and ``size``, the number of papers of the region: bigger regions get bigger
labels, :func:`label_font`), ``method`` and ``fingerprint``.

The map (:func:`map_figure`):

- one WebGL point (``go.Scattergl``) per paper that is both in the layout and in ``papers``,
  one trace per colour: a primary area, or a decision (:data:`DECISIONS`, from
  :func:`rag.types.status_tier`);
- papers that do not pass ``filters`` (:meth:`rag.filters.Filters.matches`) are **dimmed, not
  hidden**: they move to one grey trace drawn underneath (:data:`DIMMED_ROLE`), so the filtered
  papers stay in their place among the rest of the conference;
- the answer's papers (``highlight``: ``(n, paper id)``) are drawn last, on top, larger
  (trace :data:`HIGHLIGHT_ROLE`, its ``text`` the ``[n]``), each pointed at by an ``[n]``
  annotation;
- every point's ``customdata`` is its paper id, so a click maps back to the paper;
- hover text is the title (escaped: plotly renders hover text as HTML; long titles are cut at
  :data:`HOVER_LINES` lines of :data:`HOVER_WIDTH` characters), the decision and the mean
  rating; the trace's name (area or decision) shows beside it.

Payload, measured on this machine (2 cores) at 19,630 papers (``iclr2026_all.jsonl``, random
xy): see :func:`map_figure`'s docstring. The per-point payload is the coordinates (float32,
base64), the id and the hover text; colours are per trace, not per point.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.types import Paper, is_accepted, status_tier

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

    from rag.filters import Filters
    from rag.types import Answer

#: Decisions the map colours by, drawn in this order (the many rejected papers underneath).
DECISIONS = ("rejected", "withdrawn", "other", "accepted", "poster", "spotlight", "oral")
#: Legend order of the decisions (oral first).
DECISION_LEGEND = ("oral", "spotlight", "poster", "accepted", "rejected", "withdrawn", "other")
DECISION_COLORS = {"oral": "#7b2cbf", "spotlight": "#e85d04", "poster": "#1f6fd1",
                   "accepted": "#2a9d8f", "rejected": "#c9a9a6", "withdrawn": "#b8b8b8",
                   "other": "#8d99ae"}
#: Colours of the primary areas, most common area first (24 distinct colours, then repeated).
AREA_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
               "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#fd8d3c",
               "#74c476", "#9e9ac8", "#d6616b")
NO_AREA = "(no primary area)"
COLOR_BY = ("primary_area", "decision")
DIMMED_COLOR = "#d4d4d4"
HIGHLIGHT_COLOR = "#ffd400"
#: Each trace's role is its ``meta`` (plotly.py drops ``uid`` from the JSON it sends; ``meta``
#: stays in the browser's ``gd.data``): the dimmed papers, the answer's papers, and
#: ``pc-<color_by>-<rank>`` for a colour.
DIMMED_ROLE = "pc-dimmed"
HIGHLIGHT_ROLE = "pc-highlight"
#: Hover label of a map point: the title (``hovertext``) in bold, then decision and rating
#: (``text``), and beside it its area or decision in full (each trace's template puts its own
#: name in place of ``%{fullData.name}``). Markup per trace, not per point.
HOVER_TEMPLATE = "<b>%{hovertext}</b><br>%{text}<extra>%{fullData.name}</extra>"
#: Hover titles: at most this many lines of this many characters, then "…".
HOVER_WIDTH = 60
HOVER_LINES = 2
#: Legend entries are cut to this many characters (beside the map; under it, in two columns),
#: the hover shows the same name.
LEGEND_CHARS = 40
LEGEND_CHARS_NARROW = 24
#: plotly config for every figure: no logo, no cloud link, scroll zoom on the map.
CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": True}
#: Histogram bin width, on the rating scale (ICLR: 0-10).
BIN_WIDTH = 0.25
FONT = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"


# --- small helpers ---------------------------------------------------------------------------
def esc(text: Any) -> str:
    """Text for plotly's hover, legend and annotation strings, which plotly reads as a small
    HTML subset: ``&``, ``<`` and ``>`` become entities plotly decodes back (it knows ``&amp;``,
    ``&lt;``, ``&gt;`` but not ``&quot;``, so quotes stay as they are: they are harmless in
    text), so ``<script>`` or ``<br>`` in a title shows as text."""
    return html.escape(str(text if text is not None else ""), quote=False)


def decision(paper: Paper) -> str:
    """The paper's decision as the map colours it: oral, spotlight, poster, accepted (accepted
    without a tier), rejected, withdrawn or other (unknown, workshop)."""
    tier = status_tier(paper.status or "")
    return {"oral": "oral", "spotlight": "spotlight", "poster": "poster", "accept": "accepted",
            "reject": "rejected", "withdrawn": "withdrawn"}.get(tier, "other")


def area_of(paper: Paper) -> str:
    return paper.primary_area.strip() or NO_AREA


def mean_rating(paper: Paper) -> float | None:
    """The mean reviewer rating as shown everywhere (:attr:`Paper.rating`, 2 decimals)."""
    r = paper.rating
    return None if r is None else float(r["mean"])


def hover_title(title: str, width: int = HOVER_WIDTH, lines: int = HOVER_LINES) -> list[str]:
    """The title as at most ``lines`` lines of at most ``width`` characters, broken at spaces
    where there is one (plain text; the last line ends with "…" when the title was cut).
    ``textwrap`` does the same 10x slower, which shows at 19,630 titles."""
    rest = " ".join(str(title or "").split()) or "(untitled)"
    out: list[str] = []
    while rest and len(out) < lines:
        if len(rest) <= width:
            out.append(rest)
            rest = ""
            break
        cut = rest.rfind(" ", 0, width + 1)
        cut = cut if cut > width // 2 else width
        out.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        out[-1] = out[-1][: width - 1].rstrip() + "…"
    return out


def hover_text(paper: Paper, n: int | None = None) -> str:
    """The title for the hover label: ``[n] `` (when given) and :func:`hover_title`'s lines
    joined by ``<br>``, escaped (plotly's HTML subset)."""
    lines = [esc(line) for line in hover_title(paper.title)]
    if n is not None:
        lines[0] = f"[{n}] {lines[0]}"
    return "<br>".join(lines)


def hover_facts(paper: Paper) -> str:
    """``rejected, rating 4.5`` (or ``poster, unrated``): the second line of the hover label."""
    rating = mean_rating(paper)
    return f"{decision(paper)}, " + (f"rating {rating:g}" if rating is not None else "unrated")


def label_font(size: int, biggest: int) -> int:
    """Font size (px) of a region label whose cluster has ``size`` papers, the largest cluster
    having ``biggest``: 10 px to 16 px by the square root of the share."""
    return 10 + round(6 * math.sqrt(max(0, int(size)) / max(1, biggest)))


def _short(name: str, chars: int = LEGEND_CHARS) -> str:
    return name if len(name) <= chars else name[: chars - 1].rstrip() + "…"


def _paper_list(papers: Mapping[str, Paper] | Iterable[Paper]) -> list[Paper]:
    return list(papers.values()) if isinstance(papers, Mapping) else list(papers)


def answer_highlight(answer: "Answer | None") -> list[tuple[int, str]]:
    """The papers an answer points at, as ``(n, paper id)``: its citations (``[n]`` as in the
    answer and the Sources cards), or its hits numbered from 1 when it cites none; nothing for a
    refused answer or None."""
    if answer is None or answer.refused:
        return []
    if answer.citations:
        seen: dict[int, str] = {}
        for c in answer.citations:
            seen.setdefault(c.n, c.paper.id)
        return sorted(seen.items())
    return [(n, h.id) for n, h in enumerate(answer.hits, start=1)]


def _base_layout(height: int) -> dict:
    return dict(template="none", height=height, autosize=True, paper_bgcolor="white",
                plot_bgcolor="white", font=dict(family=FONT, size=12, color="#222"),
                hoverlabel=dict(align="left", namelength=-1, font=dict(family=FONT, size=12)),
                hovermode="closest")


# --- the map -------------------------------------------------------------------------------------
def map_figure(layout, papers: Mapping[str, Paper], *, color_by: str = "primary_area",
               highlight: Sequence[tuple[int, str]] = (), filters: "Filters | None" = None,
               height: int = 640, legend: str = "bottom") -> "go.Figure":
    """The conference map: one point per paper of ``layout`` that ``papers`` has (see the module
    docstring for the traces, dimming and hover).

    Args:
        layout: an :class:`index.layout.Layout` (``ids``, ``xy``, ``labels``).
        papers: paper id -> :class:`Paper` (a retriever's ``papers``).
        color_by: ``"primary_area"`` (also ``"area"``) or ``"decision"``.
        highlight: ``(n, paper id)`` of the answer's papers, drawn on top labelled ``[n]``; ids
            not on the map are skipped.
        filters: papers that do not match are dimmed (one grey trace underneath); None or empty:
            nothing dimmed.
        height: figure height in px.
        legend: ``"bottom"`` (two columns under the map, scrolling: a narrow column) or
            ``"right"`` (one column beside it: a page of its own).

    Measured at 19,630 papers (all of ICLR 2026, random xy), 2 cores: building the figure takes
    about 0.3 s and its JSON (:meth:`go.Figure.to_json`, what ``gr.Plot`` sends) is about
    2.7 MB, of which the hover text is about three quarters.

    Raises:
        ValueError: an unknown ``color_by``, or ``xy`` whose shape is not ``(len(ids), 2)``.
    """
    import plotly.graph_objects as go

    color_by = "primary_area" if color_by == "area" else color_by
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {', '.join(COLOR_BY)}, not {color_by!r}")
    xy = np.asarray(layout.xy, dtype=np.float32)
    ids = list(layout.ids)
    if xy.shape != (len(ids), 2):
        raise ValueError(f"layout.xy has shape {xy.shape}, expected ({len(ids)}, 2)")

    rows = [i for i, pid in enumerate(ids) if pid in papers]
    n_points = len(rows)
    size = 9 if n_points < 300 else 6 if n_points < 3000 else 4
    dimmed: list[int] = []
    groups: dict[str, list[int]] = {}
    for i in rows:
        paper = papers[ids[i]]
        if filters and not filters.matches(paper):
            dimmed.append(i)
            continue
        key = area_of(paper) if color_by == "primary_area" else decision(paper)
        groups.setdefault(key, []).append(i)

    def points(idx: list[int], **kw) -> "go.Scattergl":
        sel = np.asarray(idx, dtype=np.intp)
        return go.Scattergl(x=xy[sel, 0], y=xy[sel, 1], mode="markers", **kw)

    def hoverable(idx: list[int], group: str) -> dict:
        # the group's full name beside the label ("%" as an entity: no "%{...}" in a name is
        # read as a template field)
        extra = esc(group).replace("%", "&#37;")
        return dict(customdata=[ids[i] for i in idx],
                    hovertext=[hover_text(papers[ids[i]]) for i in idx],
                    text=[hover_facts(papers[ids[i]]) for i in idx],
                    hovertemplate=HOVER_TEMPLATE.replace("%{fullData.name}", extra))

    chars = LEGEND_CHARS if legend == "right" else LEGEND_CHARS_NARROW
    traces = []
    if dimmed:  # context only: no hover, no click, and no per-point text to send
        traces.append(points(dimmed, name=f"not matching the filters ({len(dimmed):,})",
                             meta=DIMMED_ROLE, legendrank=2000, hoverinfo="skip",
                             marker=dict(color=DIMMED_COLOR, size=max(3, size - 1),
                                         opacity=0.6)))
    if color_by == "primary_area":
        order = sorted(groups, key=lambda a: (-len(groups[a]), a))
        colors = {a: AREA_COLORS[k % len(AREA_COLORS)] for k, a in enumerate(order)}
        rank = {a: k for k, a in enumerate(order)}
    else:
        order = [d for d in DECISIONS if d in groups]
        colors = DECISION_COLORS
        rank = {d: k for k, d in enumerate(DECISION_LEGEND)}
    for key in order:
        idx = groups[key]
        traces.append(points(idx, name=esc(f"{_short(key, chars)} ({len(idx):,})"),
                             meta=f"pc-{color_by}-{rank[key]}", legendrank=1000 + rank[key],
                             marker=dict(color=colors[key], size=size, opacity=0.8),
                             **hoverable(idx, key)))

    at = {pid: i for i, pid in enumerate(ids)}
    marked = [(n, pid) for n, pid in highlight if pid in at and pid in papers]
    if marked:
        hx = [float(xy[at[pid], 0]) for _, pid in marked]
        hy = [float(xy[at[pid], 1]) for _, pid in marked]
        # WebGL like the rest: an SVG trace would be drawn under the WebGL canvas, hidden at
        # 19,630 points. The [n] labels are annotations (SVG, above the canvas) with an arrow.
        traces.append(go.Scattergl(
            x=hx, y=hy, mode="markers", name="this answer's papers", meta=HIGHLIGHT_ROLE,
            text=[f"[{n}]" for n, _ in marked], customdata=[pid for _, pid in marked],
            hovertext=[f"<b>{hover_text(papers[pid], n)}</b><br>{hover_facts(papers[pid])}"
                       for n, pid in marked],
            hovertemplate="%{hovertext}<extra>this answer</extra>", legendrank=1,
            marker=dict(color=HIGHLIGHT_COLOR, size=max(14, size + 8), opacity=1.0,
                        line=dict(color="#111", width=2))))

    fig = go.Figure(data=traces)
    labels = list(getattr(layout, "labels", None) or ())
    biggest = max((max(1, int(lab.size)) for lab in labels), default=1)
    annotations = [dict(x=float(lab.x), y=float(lab.y), text=esc(lab.text), showarrow=False,
                        font=dict(size=label_font(lab.size, biggest), color="#333", family=FONT),
                        bgcolor="rgba(255,255,255,0.6)", borderpad=1, captureevents=False)
                   for lab in labels]
    # arrows of three lengths and alternating sides, so the labels of close papers stay apart
    annotations += [dict(x=x, y=y, text=f"<b>[{n}]</b>", showarrow=True, arrowhead=0,
                         arrowwidth=1.5, arrowcolor="#111", ax=(-1) ** k * 10 * (k % 3 > 0),
                         ay=-22 - 16 * (k % 3), bgcolor="white", bordercolor="#111",
                         borderwidth=1, borderpad=2, name=HIGHLIGHT_ROLE,
                         font=dict(size=12, color="#111", family=FONT))
                    for k, ((n, _), x, y) in enumerate(zip(marked, hx, hy))] if marked else []
    if legend == "right":
        legend_layout = dict(orientation="v", yanchor="top", y=1, xanchor="left", x=1.01,
                             font=dict(size=11), itemsizing="constant")
    else:  # two columns under the map, scrolling past a quarter of the figure's height
        legend_layout = dict(orientation="h", yanchor="top", y=-0.01, xanchor="left", x=0,
                             font=dict(size=10), itemsizing="constant", entrywidth=0.5,
                             entrywidthmode="fraction", maxheight=0.25)
    fig.update_layout(
        **_base_layout(height), annotations=annotations, dragmode="pan",
        margin=dict(l=4, r=4, t=8, b=4),
        xaxis=dict(visible=False, showgrid=False, zeroline=False),
        yaxis=dict(visible=False, showgrid=False, zeroline=False),
        legend=legend_layout,
        meta=dict(points=n_points, dimmed=len(dimmed), color_by=color_by,
                  method=str(getattr(layout, "method", "")),
                  fingerprint=str(getattr(layout, "fingerprint", ""))))
    return fig


# --- the rating histogram ----------------------------------------------------------------------
def rating_histogram(papers: Mapping[str, Paper] | Iterable[Paper], *,
                     highlight: Sequence[tuple[int, str]] = (), bin_width: float = BIN_WIDTH,
                     height: int = 300) -> "go.Figure":
    """Histogram of the papers' mean reviewer ratings (:attr:`Paper.rating`; bins of
    ``bin_width`` on the conference's scale, left edge included). Unrated papers are left out
    and the title says how many are shown and how many are unrated. The answer's papers
    (``highlight``: ``(n, paper id)``) are marked by a dotted line at their mean rating and a
    marker on their bin labelled ``[n]`` (papers in one bin share a marker: ``[1] [3]``);
    unrated or unknown ones are skipped. Bars are counted here (``go.Bar``), so the figure
    carries one number per bin, not one per paper."""
    import plotly.graph_objects as go

    plist = _paper_list(papers)
    by_id = {p.id: p for p in plist}
    means = np.array([m for p in plist if (m := mean_rating(p)) is not None], dtype=float)
    unrated = len(plist) - len(means)
    fig = go.Figure()
    layout = _base_layout(height)
    if not len(means):
        fig.update_layout(**layout, margin=dict(l=40, r=10, t=36, b=36),
                          title=dict(text="No paper in this list has reviewer ratings",
                                     font=dict(size=13), x=0.01),
                          xaxis=dict(visible=False), yaxis=dict(visible=False),
                          meta=dict(rated=0, unrated=unrated))
        return fig
    lo = math.floor(means.min() / bin_width) * bin_width
    hi = math.floor(means.max() / bin_width) * bin_width + bin_width
    n_bins = max(1, int(round((hi - lo) / bin_width)))
    edges = lo + bin_width * np.arange(n_bins + 1)
    bins = np.clip(np.floor((means - lo) / bin_width + 1e-9).astype(int), 0, n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins)
    centers = edges[:-1] + bin_width / 2
    fig.add_trace(go.Bar(
        x=centers, y=counts, width=bin_width * 0.95, name="papers", meta="pc-hist-bars",
        marker=dict(color="#8aa4c8"), customdata=np.stack([edges[:-1], edges[1:]], axis=1),
        hovertemplate="mean rating %{customdata[0]:g}–%{customdata[1]:g}: %{y} papers"
                      "<extra></extra>"))

    marks: dict[int, list[tuple[int, str]]] = {}
    shapes = []
    for n, pid in highlight:
        paper = by_id.get(pid)
        m = mean_rating(paper) if paper is not None else None
        if m is None:
            continue
        b = int(np.clip(math.floor((m - lo) / bin_width + 1e-9), 0, n_bins - 1))
        marks.setdefault(b, []).append((n, pid))
        shapes.append(dict(type="line", x0=m, x1=m, y0=0, y1=1, yref="paper",
                           line=dict(color="#111", width=1, dash="dot")))
    if marks:
        order = sorted(marks)
        top = float(counts.max())
        fig.add_trace(go.Scatter(
            x=[float(centers[b]) for b in order],
            y=[float(counts[b]) + 0.04 * top for b in order],
            mode="markers+text", name="this answer's papers", meta=HIGHLIGHT_ROLE,
            text=[" ".join(f"[{n}]" for n, _ in marks[b]) for b in order],
            textposition="top center", textfont=dict(size=12, color="#111"),
            customdata=[" ".join(pid for _, pid in marks[b]) for b in order],
            hovertext=["<br>".join(f"[{n}] {esc(hover_title(by_id[pid].title, 50, 1)[0])}: "
                                   f"{mean_rating(by_id[pid]):g}" for n, pid in marks[b])
                       for b in order],
            hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(color=HIGHLIGHT_COLOR, size=11, symbol="triangle-down",
                        line=dict(color="#111", width=1.5))))
    title = f"Mean reviewer rating: {len(means):,} rated papers"
    if unrated:
        title += f" ({unrated:,} unrated, not shown)"
    fig.update_layout(
        **layout, shapes=shapes, showlegend=False, bargap=0.02,
        margin=dict(l=48, r=10, t=36, b=40),
        title=dict(text=esc(title), font=dict(size=13), x=0.01, y=0.97),
        xaxis=dict(title=dict(text="mean rating", font=dict(size=11)), showgrid=False,
                   zeroline=False,
                   range=[float(edges[0]) - bin_width, float(edges[-1]) + bin_width]),
        yaxis=dict(title=dict(text="papers", font=dict(size=11)), gridcolor="#eee",
                   zeroline=False, range=[0, float(counts.max()) * (1.25 if marks else 1.08)]),
        meta=dict(rated=int(len(means)), unrated=int(unrated)))
    return fig


# --- the per-area table -------------------------------------------------------------------------
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
    papers without an area are grouped under :data:`NO_AREA`."""
    plist = _paper_list(papers)
    groups: dict[str, list[Paper]] = {}
    for p in plist:
        groups.setdefault(area_of(p), []).append(p)
    rows = [_row(a, ps) for a, ps in groups.items()]
    rows.sort(key=lambda r: (-r.papers, r.area))
    return AreaTable(rows, _row("all areas", plist))


# --- one offline HTML file ------------------------------------------------------------------------
STANDALONE_CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif;
       margin: 1.2rem auto; max-width: 1200px; padding: 0 1rem; color: #222; }
h1 { font-size: 1.4rem; } p.pc-sub { color: #555; }
table.pc-areas { border-collapse: collapse; font-size: 0.85rem; width: 100%; }
table.pc-areas th, table.pc-areas td { padding: 3px 8px; border-bottom: 1px solid #eee;
                                       text-align: right; }
table.pc-areas th:first-child, table.pc-areas td:first-child { text-align: left; }
tr.pc-area-total td { font-weight: 600; border-top: 1px solid #999; }
.pc-area-note { background: #fff6d6; padding: 6px 10px; border-radius: 4px; }
.pc-area-caption { color: #666; font-size: 0.8rem; }
"""


def standalone_html(figures: Sequence["go.Figure"], title: str, *, subtitle: str = "",
                    tables: Sequence[str] = ()) -> str:
    """One self-contained HTML page: ``title`` (escaped), ``subtitle`` (escaped), the figures,
    then ``tables`` (HTML fragments, already escaped, such as :meth:`AreaTable.html`).

    plotly.js is embedded inline once (``include_plotlyjs=True``: the copy inside the ``plotly``
    package, about 4.8 MB), MathJax is not included and nothing is loaded from a CDN, so the
    file opens offline. The figures' JSON escapes ``<``, ``>`` and ``/``, so no data string can
    close its ``<script>``."""
    parts = []
    for k, fig in enumerate(figures):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(k == 0),
                                 include_mathjax=False, config=CONFIG, div_id=f"pc-figure-{k}",
                                 default_height=f"{fig.layout.height or 500}px",
                                 default_width="100%"))
    sub = f'<p class="pc-sub">{html.escape(subtitle)}</p>' if subtitle else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<style>{STANDALONE_CSS}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>{sub}"
            + "".join(f'<section class="pc-figure">{p}</section>' for p in parts)
            + "".join(f'<section class="pc-table">{t}</section>' for t in tables)
            + "</body></html>\n")


def conference_html(layout, papers: Mapping[str, Paper], *, title: str,
                    color_by: str = "primary_area") -> str:
    """``paperchat map``'s page: the map coloured by ``color_by``, the rating histogram and the
    per-area table, as :func:`standalone_html`."""
    fig = map_figure(layout, papers, color_by=color_by, height=760, legend="right")
    on_map = sum(1 for pid in layout.ids if pid in papers)
    subtitle = (f"{on_map:,} papers; layout: {getattr(layout, 'method', '') or 'unknown'}. "
                "Hover a point for its title, decision and mean rating; drag to pan, scroll to "
                "zoom; click a legend entry to hide it.")
    return standalone_html([fig, rating_histogram(papers, height=340)], title,
                           subtitle=subtitle, tables=[area_table(papers).html()])


def conference_title(papers: Mapping[str, Paper] | Iterable[Paper], index: str) -> str:
    """``ICLR 2026: 19,630 papers`` (the most common venue, else ``index NAME``)."""
    plist = _paper_list(papers)
    venues: dict[str, int] = {}
    for p in plist:
        v = (p.venue or "").strip() or (f"{p.year}" if p.year else "")
        if v:
            venues[v] = venues.get(v, 0) + 1
    name = max(venues, key=lambda v: venues[v]) if venues else f"index {index}"
    return f"{name}: {len(plist):,} papers"
