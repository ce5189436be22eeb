"""The rating histogram of a conference (:func:`rating_histogram`), for the UI's Map view and
``paperchat map``: the papers' mean reviewer ratings in bins, the answer's papers marked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag.conference.plotting import (HIGHLIGHT_COLOR, HIGHLIGHT_ROLE, _base_layout, _paper_list,
                                     esc, hover_title, mean_rating)
from rag.types import Paper

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

#: Histogram bin width, on the rating scale (ICLR: 0-10).
BIN_WIDTH = 0.25


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
