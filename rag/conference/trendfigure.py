"""A topic's (or a filter's) papers per year as a small plotly bar chart (:func:`trend_figure`),
for the UI's Trends tab and a chat answer per year: one bar per year, its height the share of
that year's papers, labelled with the count ("61 of 995").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.conference.plotting import _base_layout, esc
from rag.conference.trends import Trend, share_text

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

#: The bars' role (their trace's ``meta``, which the browser keeps in ``gd.data``).
BARS_ROLE = "pc-trend-bars"


def trend_title(trend: Trend) -> str:
    """The chart's title: "Papers about “GANs”, share of each year's papers" and the like."""
    from rag.conference.facets import describe_plural

    what = describe_plural(trend.filters) if trend.filters else "papers"
    if trend.topic:
        return f"{what.capitalize()} about “{trend.topic}”, share of each year's {what}"
    return f"{what.capitalize()}, share of each year's papers"


def _wrapped(title: str, width: int = 48) -> str:
    """``title`` escaped for plotly (:func:`rag.conference.plotting.esc`) in lines of at most
    about ``width`` characters joined by ``<br>`` (a narrow column cuts one long line off)."""
    lines, line = [], ""
    for word in title.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "<br>".join(esc(x) for x in lines)


def trend_figure(trend: Trend, height: int = 260) -> "go.Figure":
    """One bar per year of ``trend`` (x: the year, as a category; y: the share in percent),
    each labelled "n of total"; the layout's ``meta`` holds the numbers (``years``, ``n``,
    ``total``, ``topic``, ``rule``) for tools and tests. A trend without rows gives an empty
    chart that says so."""
    import plotly.graph_objects as go

    fig = go.Figure()
    layout = _base_layout(height)
    meta = {"years": [r.year for r in trend.rows], "n": [r.n for r in trend.rows],
            "total": [r.total for r in trend.rows], "topic": trend.topic, "rule": trend.rule}
    if not trend.rows:
        fig.update_layout(**layout, title=dict(text="No year to show", font=dict(size=13)),
                          xaxis=dict(visible=False), yaxis=dict(visible=False), meta=meta)
        return fig
    fig.add_trace(go.Bar(
        x=[str(r.year) for r in trend.rows], y=[100 * r.share for r in trend.rows],
        text=[f"{r.n:,} of {r.total:,}" for r in trend.rows], textposition="outside",
        cliponaxis=False, meta=BARS_ROLE, marker=dict(color="#6b8cc7"),
        customdata=[[r.n, r.total] for r in trend.rows],
        hovertext=[esc(share_text(r)) for r in trend.rows],
        hovertemplate="%{x}: %{hovertext}<extra></extra>"))
    top = max(100 * r.share for r in trend.rows) or 1.0
    layout.update(margin=dict(l=48, r=12, t=56, b=32),
                  title=dict(text=_wrapped(trend_title(trend)), font=dict(size=12), x=0.01),
                  xaxis=dict(type="category", title=None),
                  yaxis=dict(title="% of the year's papers", rangemode="tozero",
                             range=[0, top * 1.25]),
                  showlegend=False, meta=meta)
    fig.update_layout(**layout)
    return fig
