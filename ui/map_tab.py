"""The Map tab beside the chat: its components (:func:`map_panel`), its handlers
(:class:`MapHandlers`, part of :class:`ui.app.ChatApp`: the index's layout, the view as plain
dicts, the question a click on a point asks) and the functions its events run
(:func:`map_listeners`), which :func:`ui.app.build_app` registers. What it sends the browser
besides the figures is :mod:`ui.map_view`.

Beside the Sources, a Map tab (:mod:`rag.conference.mapfigure`), as wide as the window while it is open
(:data:`ui.map_view.MAP_CSS`): every paper of the index as a point of its layout
(:func:`index.layout.ensure_layout`, computed the first time in the tab's own event and
concurrency group, so the chat never waits for it), coloured by primary area or decision, the
papers outside the Status and Primary area filters dimmed, and the last answer's papers marked
``[n]``; region labels placed in the browser so that none overlaps another or a mark
(:data:`ui.map_view.MAP_LABELS_JS`); the rating histogram and the per-area table below. A click
on a point asks "Tell me about “<title>”". The figures are drawn by ``gr.Plot``, whose plotly.js
is part of Gradio's own front end (served by this app, nothing from a CDN).
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import TYPE_CHECKING, Iterator

import gradio as gr

from rag.errors import PaperchatError
from ui import map_view
from ui.controls import LOG, filters_for
from ui.map_view import MAP_CLICK_JS

if TYPE_CHECKING:
    from rag.backends.seams import Retriever


#: Seconds the Map view waits for its layout before saying "computing the map…", and between
#: updates of that line.
MAP_WAIT_S = 0.4
MAP_TICK_S = 2.0
#: Height of the map in the Map tab, px (the histogram and the area table follow below it).
MAP_HEIGHT = 600
#: "Colour by" choices (label, :func:`rag.conference.mapfigure.map_figure` ``color_by``).
COLOR_CHOICES = [("colour by primary area", "primary_area"), ("colour by decision", "decision"),
                 ("colour by year", "year")]
#: The question a click on a map point asks (the title in curly quotes).
ASK_ABOUT = "Tell me about \u201c{title}\u201d"


def map_key(color_by, status, area, answers) -> list:
    """What the Map tab shows, for telling whether a redraw is due: the colour, the two
    dropdowns and the last answer (its question, its cited or listed papers and when it ended;
    answers pass through ``gr.State`` as copies, so identity cannot tell)."""
    from rag.conference.mapfigure import answer_highlight

    last = list(answers or [])[-1:]
    answer = [len(answers or []), last[0].question, answer_highlight(last[0]),
              last[0].timings_ms.get("total")] if last else []
    return [color_by, status, area, answer]


def name_region_labels(fig, labels) -> int:
    """Name the map's region-label annotations ``pc-region:<papers in the region>`` (from
    ``labels``, :attr:`index.layout.Layout.labels`, which :func:`rag.conference.mapfigure.map_figure` draws
    first and in order, as plain text annotations), so that the browser's label placement
    (:data:`ui.map_view.MAP_LABELS_JS`) keeps the largest regions' labels first. Annotations that
    do not match a label's text are left alone. Returns how many were named."""
    from rag.conference.plotting import esc as map_esc

    named = 0
    anns = list(fig.layout.annotations or ())
    for ann, lab in zip(anns, labels or ()):
        if ann.text != map_esc(lab.text) or ann.showarrow:
            break
        ann.name = f"pc-region:{max(0, int(lab.size))}"
        named += 1
    return named


class MapHandlers:
    """The Map tab's handlers of :class:`ui.app.ChatApp`: the layout of the index open now
    (:meth:`layout_for`), the view as plain dicts (:meth:`map_parts`) and the question a click on
    a point asks (:meth:`question_about`)."""

    def cached_layout(self, retriever: Retriever):
        """The layout already loaded for ``retriever``, or None (nothing is read or computed)."""
        cached = self._layout
        return cached[1] if cached is not None and cached[0]() is retriever else None

    def layout_for(self, retriever: Retriever):
        """The map layout of ``retriever``'s index (:func:`index.layout.ensure_layout`: loaded,
        or computed and saved the first time), kept for as long as
        :meth:`rag.chat.pipeline.Pipeline.current_retriever` gives the same retriever; a reopened
        index (re-indexed on disk) asks ``ensure_layout`` again, and a layout of the same
        fingerprint as the one held keeps the one held. One computation at a time.

        Raises:
            PaperchatError: from ``ensure_layout`` (no such index, ...).
        """
        layout = self.cached_layout(retriever)
        if layout is not None:
            return layout
        with self._layout_lock:
            layout = self.cached_layout(retriever)
            if layout is not None:
                return layout
            from index.layout import ensure_layout

            old = self._layout[1] if self._layout is not None else None
            layout = ensure_layout(self.settings, retriever.name, log=LOG.info)
            if old is not None and old.fingerprint == layout.fingerprint:
                layout = old
            self._layout = (weakref.ref(retriever), layout)
            return layout

    def map_parts(self, color_by, status, area, answers, *, hist: bool = True,
                  table: bool = True) -> Iterator[dict[str, object]]:
        """The Map view as plain dicts. When the layout is not loaded and takes longer than
        :data:`MAP_WAIT_S` (computed the first time: about a minute at 20,000 papers), first
        ``{"status"}`` saying "computing the map (N papers)…" every :data:`MAP_TICK_S`; then
        ``status``, ``map`` (the answer's papers, :func:`rag.conference.mapfigure.answer_highlight` of the
        last of ``answers``, marked; papers outside the Status and Primary area dropdowns'
        filters dimmed) and, with ``hist`` and ``table``, the rating histogram and the per-area
        table's HTML. A failure is a ``status`` saying so (the chat is not affected)."""
        from rag.conference import area_table, histogram, mapfigure

        retriever = self.pipeline.current_retriever()
        n = len(retriever)
        layout = self.cached_layout(retriever)
        if layout is None:
            box: dict = {}

            def work():
                try:
                    box["layout"] = self.layout_for(retriever)
                except Exception as exc:  # noqa: BLE001 - shown in the status line
                    box["error"] = exc

            worker = threading.Thread(target=work, name="paperchat-map-layout", daemon=True)
            t0 = time.monotonic()
            worker.start()  # goes on if the view is closed: its layout is kept for next time
            worker.join(MAP_WAIT_S)
            while worker.is_alive():
                yield {"status": map_view.map_status_html(n, state="computing",
                                                          seconds=time.monotonic() - t0)}
                worker.join(MAP_TICK_S)
            if "error" in box:
                exc = box["error"]
                if not isinstance(exc, PaperchatError):
                    LOG.error("map layout of %r failed", retriever.name, exc_info=exc)
                    exc = RuntimeError("internal error; the server log has the details")
                yield {"status": map_view.map_status_html(state="error", error=str(exc))}
                return
            layout = box["layout"]
        try:
            filters = filters_for(status, area)
        except PaperchatError as exc:
            yield {"status": map_view.map_status_html(state="error", error=str(exc))}
            return
        answers = list(answers or [])
        marked = mapfigure.answer_highlight(answers[-1] if answers else None)
        papers = retriever.papers
        out: dict[str, object] = {
            "status": map_view.map_status_html(sum(1 for i in layout.ids if i in papers),
                                               state="ready", method=layout.method),
            "map": mapfigure.map_figure(layout, papers, color_by=color_by or "primary_area",
                                        highlight=marked, filters=filters, height=MAP_HEIGHT)}
        name_region_labels(out["map"], layout.labels)
        if hist:
            out["hist"] = histogram.rating_histogram(papers, highlight=marked)
        if table:
            out["table"] = area_table.area_table(papers).html()
        yield out

    def question_about(self, paper_id) -> str:
        """The question a click on map point ``paper_id`` asks: ``Tell me about “<title>”``.

        Raises:
            gr.Error: not a paper of the index open now (a stale map or a forged click).
        """
        paper = self._clicked_paper(paper_id, "open the Map tab again to redraw it")
        return ASK_ABOUT.format(title=self._fitted_title(paper, ASK_ABOUT))


def map_panel() -> tuple:
    """The Map tab, made in the side column's Tabs open now: the status line (which also carries
    clicks on map points), the colour choice, the map, the rating histogram and the per-area
    table. Returns ``(map_tab, map_status, color_by, map_plot, hist_plot, area_table)``."""
    with gr.Tab("Map", id="map", elem_id="pc-tab-map") as map_tab:
        # the status line also carries clicks on map points (MAP_CLICK_JS)
        map_status = gr.HTML(map_view.map_status_html(), elem_id="pc-map-status",
                             js_on_load=MAP_CLICK_JS)
        color_by = gr.Radio(COLOR_CHOICES, value="primary_area",
                            label="Colour by", elem_id="pc-map-color",
                            container=False)
        map_plot = gr.Plot(elem_id="pc-map", show_label=False)
        hist_plot = gr.Plot(elem_id="pc-hist", show_label=False)
        area_table = gr.HTML("", elem_id="pc-areas", js_on_load=None)
    return map_tab, map_status, color_by, map_plot, hist_plot, area_table


def map_listeners(app, map_status, map_plot, hist_plot, area_table, map_on, map_drawn) -> tuple:
    """The functions the Map tab's events run, for :func:`ui.app.build_app` to register, bound to
    ``app`` (a :class:`ui.app.ChatApp`), the tab's components and the session's ``map_on`` and
    ``map_drawn`` states. Returns ``(open_map, redraw_map, ask_about)``."""
    def map_updates(part: dict) -> dict:
        upd: dict = {map_status: part["status"]}
        for key, comp in (("map", map_plot), ("hist", hist_plot), ("table", area_table)):
            if key in part:
                upd[comp] = part[key]
        return upd

    def open_map(cb, st, ar, an, on):
        """The Map tab opened: draw everything the first time (the layout is computed then
        if the index has none); later openings keep what is drawn."""
        if on:
            yield gr.skip()  # (a generator that yields nothing blanks every output)
            return
        for part in app.map_parts(cb, st, ar, an):
            done = "map" in part
            yield map_updates(part) | {map_on: done,
                                       map_drawn: map_key(cb, st, ar, an) if done else None}

    def redraw_map(cb, st, ar, an, on, drawn):
        """Colour, filters or the last answer changed since the map was drawn: redraw it
        (and the histogram's marks). Nothing before the session's map is drawn; after the
        first drawing (which can take a minute), whatever changed meanwhile is drawn."""
        key = map_key(cb, st, ar, an)
        if not on or key == drawn:
            yield gr.skip()  # (a generator that yields nothing blanks every output)
            return
        for part in app.map_parts(cb, st, ar, an, hist=True, table=False):
            yield map_updates(part) | ({map_drawn: key} if "map" in part else {})

    def ask_about(evt: gr.EventData):
        return app.question_about((getattr(evt, "_data", None) or {}).get("paper"))

    return open_map, redraw_map, ask_about
