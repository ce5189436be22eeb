"""The Trends tab beside the chat: a topic typed in, its papers per year as a bar chart of the
share of each year's papers, and a small table with the counting rule (:func:`trends_panel`).
An answer per year in the chat ("how did interest in GANs change since 2018?") opens the tab
with its own numbers (:meth:`TrendsHandlers.answer_trend`).

The numbers are :mod:`rag.conference.trends`' (counted over the open index, under the Status
and Primary area dropdowns); the chart is :func:`rag.conference.trendfigure.trend_figure`.
"""

from __future__ import annotations

import html

import gradio as gr

#: Longest topic the Trends tab takes, in characters.
MAX_TOPIC_CHARS = 200


def table_html(trend) -> str:
    """The per-year numbers of a :class:`rag.conference.trends.Trend` as an HTML table (year,
    papers counted, the year's papers, share), then the direction and the counting rule; all
    text escaped."""
    from rag.conference.trends import direction_text, share_text

    rows = "".join(f"<tr><td>{r.year}</td><td>{r.n:,}</td><td>{r.total:,}</td>"
                   f"<td>{html.escape(share_text(r).split('(')[1].rstrip(')'))}</td></tr>"
                   for r in trend.rows)
    from rag.conference.trends import rule_text

    rule = rule_text(trend) if trend.topic else "Counted from the catalog."
    scope = f" · filters: {', '.join(trend.filters)}" if trend.filters else ""
    return (f'<table class="pc-trend-table"><thead><tr><th>year</th><th>counted</th>'
            f"<th>of the year's papers</th><th>share</th></tr></thead><tbody>{rows}</tbody>"
            f'</table><p class="pc-trend-rule">{html.escape(direction_text(trend))} '
            f"{html.escape(rule + scope)}</p>")


class TrendsHandlers:
    """The Trends tab's handlers of :class:`ui.app.ChatApp`."""

    def trend_parts(self, topic, status, area) -> tuple[object, str]:
        """``(figure, table HTML)`` of ``topic``'s papers per year (every paper per year when
        ``topic`` is blank) under the dropdowns' filters.

        Raises:
            gr.Error: a topic longer than :data:`MAX_TOPIC_CHARS`, a bad filter, or an index of
            fewer than two years (said, with what to do).
        """
        from rag.conference import trends
        from rag.conference.trendfigure import trend_figure
        from rag.filters import FilterError
        from ui.controls import _gr_error, filters_for

        topic = " ".join(str(topic or "").split())
        if len(topic) > MAX_TOPIC_CHARS:
            raise gr.Error(f"A topic is at most {MAX_TOPIC_CHARS} characters.",
                           title="Cannot show that")
        try:
            filters = filters_for(status, area)
        except FilterError as exc:
            raise _gr_error(exc, "Cannot show that") from exc
        retriever = self.pipeline.current_retriever()
        totals = trends.index_year_totals(retriever)
        if len(totals) < 2:
            held = ", ".join(map(str, totals)) or "no year"
            raise gr.Error(f"This index holds papers of {held} only. Index lists of several "
                           "years into one (paperchat index A.jsonl B.jsonl --name NAME) to "
                           "see a topic per year.", title="One year only")
        trend = trends.topic_trend(retriever, topic, filters or None, totals) if topic else \
            trends.catalog_trend(retriever.papers, filters or None, totals)
        return trend_figure(trend), table_html(trend)

    def answer_trend(self, answers) -> tuple[object, str, str] | None:
        """``(figure, table HTML, topic)`` of the last answer's papers per year, or None when it
        has none."""
        from rag.conference.trendfigure import trend_figure
        from rag.conference.trends import Trend

        last = answers[-1] if answers else None
        data = getattr(last, "trend", None)
        if not data:
            return None
        trend = Trend.from_json(data)
        return trend_figure(trend), table_html(trend), trend.topic


def trends_panel() -> tuple:
    """The Trends tab, made in the side column's Tabs open now: the topic box, its button, the
    chart and the table. Returns ``(tab, topic, show, plot, table)``."""
    with gr.Tab("Trends", id="trends", elem_id="pc-tab-trends") as tab:
        with gr.Row():
            topic = gr.Textbox(placeholder="a topic, e.g. generative adversarial networks "
                                           "(blank: every paper)", show_label=False,
                               container=False, scale=4, elem_id="pc-trend-topic",
                               max_length=MAX_TOPIC_CHARS)
            show = gr.Button("Per year", scale=1, min_width=90, elem_id="pc-trend-show")
        plot = gr.Plot(elem_id="pc-trend", show_label=False)
        table = gr.HTML("", elem_id="pc-trend-numbers")
    return tab, topic, show, plot, table


def trends_listeners(app, side_tabs, topic, plot, table) -> tuple:
    """The functions the Trends tab's events run, bound to ``app`` (a :class:`ui.app.ChatApp`)
    and the components. Returns ``(show, from_answer)``: ``show(topic, status, area)`` draws a
    topic; ``from_answer(answers)`` opens the tab on the last answer's numbers (nothing when it
    has none)."""
    def show(t, st, ar):
        fig, numbers = app.trend_parts(t, st, ar)
        return {plot: fig, table: numbers}

    def from_answer(answers):
        got = app.answer_trend(answers)
        if got is None:
            return gr.skip()
        fig, numbers, said = got
        return {side_tabs: gr.Tabs(selected="trends"), plot: fig, table: numbers, topic: said}

    return show, from_answer
