"""The paper map of a conference (:func:`map_figure`), for the UI's Map view and ``paperchat map``,
and that command's offline page (:func:`conference_html`: the map, the rating histogram of
:mod:`rag.conference.histogram` and the per-area table of :mod:`rag.conference.area_table`). What the
figures share (escaping, hover titles, a paper's area and mean rating, the base layout) is
:mod:`rag.conference.plotting`.

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
  :data:`rag.conference.plotting.HOVER_LINES` lines of
  :data:`rag.conference.plotting.HOVER_WIDTH` characters), the decision and the mean rating;
  the trace's name (area or decision) shows beside it.

Payload, measured on this machine (2 cores) at 19,630 papers (``iclr2026_all.jsonl``, random
xy): see :func:`map_figure`'s docstring. The per-point payload is the coordinates (float32,
base64), the id and the hover text; colours are per trace, not per point.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag.conference.area_table import area_table
from rag.conference.histogram import rating_histogram
from rag.conference.plotting import (DIMMED_ROLE, FONT, HIGHLIGHT_COLOR, HIGHLIGHT_ROLE,
                                     _base_layout, _paper_list, area_of, esc, hover_title,
                                     mean_rating)
from rag.types import Paper, status_tier

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
COLOR_BY = ("primary_area", "decision", "year")
DIMMED_COLOR = "#d4d4d4"
#: Hover label of a map point: the title (``hovertext``) in bold, then decision and rating
#: (``text``), and beside it its area or decision in full (each trace's template puts its own
#: name in place of ``%{fullData.name}``). Markup per trace, not per point.
HOVER_TEMPLATE = "<b>%{hovertext}</b><br>%{text}<extra>%{fullData.name}</extra>"
#: Legend entries are cut to this many characters (beside the map; under it, in two columns),
#: the hover shows the same name.
LEGEND_CHARS = 40
LEGEND_CHARS_NARROW = 24
#: plotly config for every figure: no logo, no cloud link, scroll zoom on the map.
CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": True}


# --- the map's helpers ----------------------------------------------------------------------------
def decision(paper: Paper) -> str:
    """The paper's decision as the map colours it: oral, spotlight, poster, accepted (accepted
    without a tier), rejected, withdrawn or other (unknown, workshop)."""
    tier = status_tier(paper.status or "")
    return {"oral": "oral", "spotlight": "spotlight", "poster": "poster", "accept": "accepted",
            "reject": "rejected", "withdrawn": "withdrawn"}.get(tier, "other")


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



# --- the map -------------------------------------------------------------------------------------
def map_figure(layout, papers: Mapping[str, Paper], *, color_by: str = "primary_area",
               highlight: Sequence[tuple[int, str]] = (), filters: "Filters | None" = None,
               height: int = 640, legend: str = "bottom") -> "go.Figure":
    """The conference map: one point per paper of ``layout`` that ``papers`` has (see the module
    docstring for the traces, dimming and hover).

    Args:
        layout: an :class:`index.layout.Layout` (``ids``, ``xy``, ``labels``).
        papers: paper id -> :class:`Paper` (a retriever's ``papers``).
        color_by: ``"primary_area"`` (also ``"area"``), ``"decision"`` or ``"year"`` (an
            index of several lists).
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
        key = area_of(paper) if color_by == "primary_area" else decision(paper) \
            if color_by == "decision" else (str(paper.year) if paper.year else "no year")
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
    elif color_by == "year":  # an index of several lists: oldest first
        order = sorted(groups)
        colors = {y: AREA_COLORS[k % len(AREA_COLORS)] for k, y in enumerate(order)}
        rank = {y: k for k, y in enumerate(order)}
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
    then ``tables`` (HTML fragments, already escaped, such as :meth:`rag.conference.area_table.AreaTable.html`).

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
