"""The Gradio chat: streamed answers beside the cards of the papers they cite.

:func:`build_app` turns a :class:`rag.chat.pipeline.Pipeline` (real backends, or fakes in tests) into a
``gr.Blocks``; :func:`launch` starts it; :func:`serve` is ``paperchat serve``. Privacy defaults:
no analytics, no share link, bound to 127.0.0.1, no extra ``allowed_paths``, system fonts only
(the default theme would fetch Google Fonts), and a warning on stderr when binding another
address without ``--auth``.

Per browser session (``gr.State``, never global): the list of :class:`rag.understand.history.Turn`
that follow-ups are resolved against, the session's answers (for export), and the filters the
user removed from the last question. Generation is serialised (one event at a time in the
``generate`` concurrency group) because the in-process model is.

Above each answer, in its bubble, the turn's plan in one line (:func:`ui.render.plan_line_html`:
"8 papers from the previous answer · orals only · sorted by rating"; "Reading this as: ..." when
the reading is unsure), each part a chip. The filters are parts of it: those read from the
question's words ("oral papers on ..." -> ``status=oral``) and the Status and Primary area
dropdowns'. A part's × asks the last question again without that part
(:func:`rag.chat.answer.answer_stream`'s ``drop``), replacing its answer as Regenerate does and
keeping the conversation before it; a part a dropdown set sends that dropdown back to "any"
(:func:`without_part`).

Every paper card has a "More like this" button: it asks the similar operation for that paper as
a new turn, with an explicit plan (:meth:`ChatApp.similar_turn`), not a reading of words; the
Map tab then marks the neighbours, as it marks any answer's papers. A cite answer's BibTeX shows
in the chat as a code block with a copy button (:func:`ui.render.bibtex_block`).

Beside the Sources, a Map tab (:mod:`rag.conference.mapfigure`), as wide as the window while it is open
(:data:`ui.render.MAP_CSS`): every paper of the index as a point of its layout
(:func:`index.layout.ensure_layout`, computed the first time in the tab's own event and
concurrency group, so the chat never waits for it), coloured by primary area or decision, the
papers outside the Status and Primary area filters dimmed, and the last answer's papers marked
``[n]``; region labels placed in the browser so that none overlaps another or a mark
(:data:`ui.render.MAP_LABELS_JS`); the rating histogram and the per-area table below. A click
on a point asks "Tell me about “<title>”". The figures are drawn by ``gr.Plot``, whose plotly.js
is part of Gradio's own front end (served by this app, nothing from a CDN).

Every question goes through :meth:`rag.chat.pipeline.Pipeline.current_retriever`, so an index
re-built by ``paperchat index`` while the app runs answers from the next question on. The
header's paper count and the Primary area choices stay as they were at start (they are drawn
once; a restart redraws them).

Endpoints for ``gradio_client``: ``/chat`` (the UI's own, stateful per client session: question,
status, primary area, answer mode -> the chat messages, the sources HTML, the BibTeX ..., and
last the plan line's HTML, each removable part's key in its button's ``value``),
``/regenerate`` and ``/model_writes`` (the last question again, in the chosen mode or in
``generative`` mode), and ``/ask`` (stateless: question, status, primary area, answer mode,
optional ``drop_filters`` -> the ``paperchat ask --json`` object plus ``markdown``).
"""

from __future__ import annotations

import html
import ipaddress
import logging
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from rag import offline

offline.enforce()  # before gradio is imported: no analytics, no hub

import gradio as gr  # noqa: E402

from rag.chat.answer import MODES  # noqa: E402
from rag.errors import PaperchatError  # noqa: E402
from ui import render  # noqa: E402

if TYPE_CHECKING:
    from rag.backends.seams import Retriever
    from rag.settings import Settings

LOG = logging.getLogger("paperchat.ui")

#: Status filter choices (label, value); values are ``Filters`` status words.
STATUS_CHOICES = [("Any status", "any"), ("Accepted", "accepted"), ("Oral", "oral"),
                  ("Spotlight", "spotlight"), ("Poster", "poster")]
ANY = "any"
#: Answers kept per session (older ones drop out of memory and exports).
MAX_ANSWERS = 50
#: Seconds between streamed chat updates (tokens arriving faster are batched).
STREAM_EVERY = 0.05
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
#: Answer modes the UI and ``/ask`` take (:data:`rag.chat.answer.MODES` plus ``auto``).
ANSWER_MODES = ("auto",) + MODES


#: Listens (once per page, in the capture phase) for clicks on the ×s of the plan line in the
#: last answer's bubble and sends the part's key (the button's ``value``: the chat's sanitiser
#: keeps no ``data-*`` attribute) as the ``click`` event data (``evt.part``) of the hidden
#: ``#pc-plan-events`` component. The buttons are redrawn with each answer; the listener stays.
PLAN_CLICK_JS = """
window.__pcPlanTrigger = (key) => trigger('click', {part: key});
if (!window.__pcPlanListening) {
  window.__pcPlanListening = true;
  document.addEventListener('click', (e) => {
    const button = e.target.closest && e.target.closest('#pc-chat button.pc-part-x');
    if (!button || !button.value) return;
    e.preventDefault();
    e.stopPropagation();
    window.__pcPlanTrigger(button.value);
  }, true);
}
"""

#: Listens on the Sources panel (its cards are redrawn with each answer) and sends the paper id
#: of a clicked "More like this" button as the ``click`` event data (``evt.paper``).
MORE_LIKE_JS = """
element.addEventListener('click', (e) => {
  const button = e.target.closest('button.pc-more-like[data-paper]');
  if (button) trigger('click', {paper: button.dataset.paper});
});
"""

#: The Map tab: plotly emits ``plotly_click`` on the graph div (its own emitter, not a DOM event)
#: and gr.Plot draws a new div for each new figure, so a MutationObserver gives every map div
#: one handler; a click on a point sends its paper id (``customdata``) as the map status line's
#: ``click`` event data (``evt.paper``), and the app asks about that paper. Also: a click on an
#: answer's ``[n]`` while the Map tab is open brings the Sources tab (and its card) back.
MAP_CLICK_JS = render.MAP_LABELS_JS + """
window.__pcMapTrigger = (id) => trigger('click', {paper: id});
const attach = () => {
  window.__pcMapQueued = false;
  document.querySelectorAll('#pc-map .js-plotly-plot').forEach((gd) => {
    if (gd.__pcClick || typeof gd.on !== 'function') return;
    gd.__pcClick = true;
    gd.on('plotly_click', (ev) => {
      const pt = ev && ev.points && ev.points[0];
      const id = pt && pt.customdata;
      if (typeof id === 'string' && id) window.__pcMapTrigger(id);
    });
    window.pcWatchLabels(gd);
  });
};
if (!window.__pcMapObserver) {
  window.__pcMapObserver = new MutationObserver(() => {
    if (!window.__pcMapQueued) { window.__pcMapQueued = true; requestAnimationFrame(attach); }
  });
  window.__pcMapObserver.observe(document.body, {childList: true, subtree: true});
  document.addEventListener('click', (e) => {
    if (!e.target.closest || !e.target.closest('#pc-chat a.pc-cite')) return;
    const tab = document.querySelector('#pc-side-tabs [role=tab][aria-controls=pc-tab-sources]')
      || [...document.querySelectorAll('#pc-side-tabs [role=tab]')]
           .find((b) => b.textContent.trim() === 'Sources');
    if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
  }, true);
  // the Map tab opened: its figures were last drawn at another width (or hidden), resize them
  document.addEventListener('click', (e) => {
    if (!e.target.closest || !e.target.closest('#pc-tab-map-button')) return;
    const resize = () => document.querySelectorAll('#pc-tab-map .js-plotly-plot')
      .forEach((gd) => { if (window.Plotly && gd.offsetWidth) Plotly.Plots.resize(gd); });
    requestAnimationFrame(() => requestAnimationFrame(resize));
  });
}
attach();
"""
#: Seconds the Map view waits for its layout before saying "computing the map…", and between
#: updates of that line.
MAP_WAIT_S = 0.4
MAP_TICK_S = 2.0
#: Height of the map in the Map tab, px (the histogram and the area table follow below it).
MAP_HEIGHT = 600
#: "Colour by" choices (label, :func:`rag.conference.mapfigure.map_figure` ``color_by``).
COLOR_CHOICES = [("colour by primary area", "primary_area"), ("colour by decision", "decision")]
#: The question a click on a map point asks (the title in curly quotes).
ASK_ABOUT = "Tell me about \u201c{title}\u201d"
#: The question a card's "More like this" shows (it runs with an explicit plan, not this text).
SIMILAR_TO = "Papers similar to \u201c{title}\u201d"


class UIConfigError(PaperchatError):
    """``--auth`` is neither ``USER:PASS`` nor a file holding it."""


# --- small pure helpers -----------------------------------------------------------------------
def filters_for(status: str | None, area: str | None):
    """:class:`rag.filters.Filters` for the two dropdowns (``"any"``/empty means no filter).

    Raises:
        rag.filters.FilterError: a status that is not one of :data:`STATUS_CHOICES`.
    """
    from rag.filters import FilterError, Filters

    items = []
    status = (status or ANY).strip().lower()
    if status != ANY:
        if status not in {v for _, v in STATUS_CHOICES}:
            raise FilterError(f"unknown status filter {status!r}; use one of "
                              f"{', '.join(v for _, v in STATUS_CHOICES)}")
        items.append(f"status={status}")
    area = (area or ANY).strip()
    if area and area.lower() != ANY:
        items.append(f"primary_area={area}")
    return Filters.parse(items)


def without_part(key: str, keys, status: str | None, area: str | None,
                 drops=()) -> tuple[str, str, list[str]]:
    """The controls after the user removes part ``key`` from the plan line of an answer whose
    line shows the parts ``keys`` (:func:`ui.render.plan_parts`' keys): ``(status, area,
    drop)``. A filter the Status or Primary area dropdown set (``filter:status=oral`` while the
    dropdown says oral) sends that dropdown back to ``"any"``; every removed part also joins
    ``drop`` (the part keys :func:`rag.chat.answer.answer_stream` removes from the turn's plan), so
    the same filter read from the question's words is not applied either (a dropdown's filter
    is not in the plan: resetting the dropdown removes it).

    Raises:
        FilterError: ``key`` is not one of ``parts`` (a stale or forged click).
    """
    from rag.filters import FilterError

    if not isinstance(key, str) or key not in list(keys or ()):
        raise FilterError(f"{str(key)[:80]!r} is not a part of the last answer's plan")
    status, area = status or ANY, area or ANY
    flt = key[len("filter:"):] if key.startswith("filter:") else ""
    field = flt.partition("=")[0].strip().lower()
    if field == "status" and flt.lower() == f"status={status}".lower():
        status = ANY
    if field == "primary_area" and flt.lower() == f"primary_area={area}".lower():
        area = ANY
    drops = [d for d in (drops or []) if d != key] + [key]
    return status, area, drops


def area_choices(retriever: Retriever) -> list[tuple[str, str]]:
    """``("Any primary area", "any")`` then each primary area of the index with its paper count,
    most common first (from the index catalog; counted from ``retriever.papers`` if it has none)."""
    counts: list[tuple[str, int]] = []
    try:
        from index.reader import open_catalog
        from rag.paths import IndexPaths

        index_dir = retriever.settings.index_dir(retriever.name)
        if IndexPaths(index_dir).catalog.exists():
            counts = open_catalog(index_dir).facet_values("primary_area")
    except Exception:  # noqa: BLE001 - a missing catalog only loses the counts' source
        LOG.debug("no catalog for facets", exc_info=True)
    if not counts:
        tally: dict[str, int] = {}
        for p in getattr(retriever, "papers", {}).values():
            if p.primary_area:
                tally[p.primary_area] = tally.get(p.primary_area, 0) + 1
        counts = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
    return [("Any primary area", ANY)] + [(f"{a} ({n})", a) for a, n in counts]


def parse_auth(auth: str | None) -> tuple[str, str] | None:
    """``"user:pass"``, or the path of a file whose first line is that, as a pair.

    Raises:
        UIConfigError: anything else (the message says the expected form).
    """
    if not auth:
        return None
    text = auth
    path = Path(auth).expanduser()
    if ":" not in auth or path.is_file():
        try:
            text = path.read_text(encoding="utf-8").strip().splitlines()[0]
        except (OSError, IndexError):
            raise UIConfigError("--auth takes USER:PASS or a file holding USER:PASS; "
                                f"{auth!r} is neither") from None
    user, _, password = text.strip().partition(":")
    if not user or not password:
        raise UIConfigError("--auth needs both a user and a password: USER:PASS")
    return user, password


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and the usual names of this machine's loopback."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def turn_for(answer):
    """The :class:`Turn` an answer leaves for follow-ups (:func:`rag.understand.history.turn_after`)."""
    from rag.understand.history import turn_after

    return turn_after(answer)


def map_key(color_by, status, area, answers) -> list:
    """What the Map tab shows, for telling whether a redraw is due: the colour, the two
    dropdowns and the last answer (its question, its cited or listed papers and when it ended;
    answers pass through ``gr.State`` as copies, so identity cannot tell)."""
    from rag.conference.mapfigure import answer_highlight

    last = list(answers or [])[-1:]
    answer = [len(answers or []), last[0].question, answer_highlight(last[0]),
              last[0].timings_ms.get("total")] if last else []
    return [color_by, status, area, answer]


def mode_choices(auto_mode: str) -> list[tuple[str, str]]:
    """Answer-mode dropdown choices (label, value); ``auto`` says what it picks for this model."""
    return [(f"auto ({auto_mode})", "auto")] + [(m, m) for m in ANSWER_MODES[1:]]


def chat_messages(answers, threshold: float, *, live: bool = True) -> list[dict]:
    """Chatbot messages (Gradio's ``{"role", "content"}`` format) for finished answers, each
    with its plan line on top (:func:`ui.render.assistant_markdown`). Only the last answer's
    ``[n]`` chips link to the cards (the Sources panel shows its papers) and only its plan parts
    can be removed; older answers keep their ``[n]`` as chips naming the paper on hover.
    ``live=False``: the last answer is no longer the last either (a new one is being written
    below it)."""
    out = []
    for i, ans in enumerate(answers):
        body = render.assistant_markdown(ans, threshold, last=live and i == len(answers) - 1)
        out.append({"role": "user", "content": render.user_markdown(ans.question)})
        out.append({"role": "assistant", "content": body})
    return out


def name_region_labels(fig, labels) -> int:
    """Name the map's region-label annotations ``pc-region:<papers in the region>`` (from
    ``labels``, :attr:`index.layout.Layout.labels`, which :func:`rag.conference.mapfigure.map_figure` draws
    first and in order, as plain text annotations), so that the browser's label placement
    (:data:`ui.render.MAP_LABELS_JS`) keeps the largest regions' labels first. Annotations that
    do not match a label's text are left alone. Returns how many were named."""
    from rag.conference.mapfigure import esc as map_esc

    named = 0
    anns = list(fig.layout.annotations or ())
    for ann, lab in zip(anns, labels or ()):
        if ann.text != map_esc(lab.text) or ann.showarrow:
            break
        ann.name = f"pc-region:{max(0, int(lab.size))}"
        named += 1
    return named


#: Most filter strings a request may name in ``drop_filters`` (and chars per string).
MAX_DROP_FILTERS = 20
MAX_FILTER_CHARS = 200


def _filter_list(items) -> list[str]:
    """``drop_filters`` from a client: a list of strings (one string is a list of one).

    Raises:
        FilterError: anything else, more than :data:`MAX_DROP_FILTERS` or a string longer than
            :data:`MAX_FILTER_CHARS`.
    """
    from rag.filters import FilterError

    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise FilterError("drop_filters must be a list of filter strings such as 'status=oral'")
    if len(items) > MAX_DROP_FILTERS or any(len(i) > MAX_FILTER_CHARS for i in items):
        raise FilterError(f"drop_filters takes at most {MAX_DROP_FILTERS} filters of at most "
                          f"{MAX_FILTER_CHARS} characters")
    return [i for i in items if i.strip()]


def _gr_error(exc: Exception, title: str = "paperchat"):
    # gr.Error renders its message as HTML: escape it (filter values come from the client)
    return gr.Error(html.escape(str(exc)), title=title, print_exception=False)


# --- the app --------------------------------------------------------------------------------------
class ChatApp:
    """The event handlers, bound to one pipeline. Holds no per-user state."""

    def __init__(self, pipeline, files_dir: Path | None = None):
        self.pipeline = pipeline
        self.settings = pipeline.settings
        _ = pipeline.retriever  # opened now: a broken index fails the start, not a question
        self.generator = pipeline.generator
        self.files_dir = Path(files_dir or tempfile.mkdtemp(prefix="paperchat-ui-"))
        self._layout: tuple | None = None  # (weakref to the retriever, its Layout)
        self._layout_lock = threading.Lock()

    @property
    def retriever(self):
        """The retriever open now (for names and counts). Answers take
        :meth:`rag.chat.pipeline.Pipeline.current_retriever`, which reopens a re-indexed index."""
        return self.pipeline.retriever

    # -- exports -----------------------------------------------------------------------------
    def write_exports(self, answers, session: str | None) -> dict[str, str]:
        """Write the session's .bib (cited, all retrieved) and .md files; return their paths.

        Files live in ``<files_dir>/<session>/`` (one set per session, overwritten per answer);
        Gradio copies what it serves into its own cache.
        """
        from rag.conference.export import bibtex, cited_papers, conversation_markdown, retrieved_papers

        folder = self.files_dir / (session or "anonymous").replace("/", "_")
        folder.mkdir(parents=True, exist_ok=True)
        cited = bibtex(cited_papers(answers)) or "% no paper cited yet\n"
        paths = {
            "cited": folder / "paperchat-cited.bib",
            "all": folder / "paperchat-retrieved.bib",
            "md": folder / "paperchat-conversation.md",
        }
        paths["cited"].write_text(cited, encoding="utf-8")
        paths["all"].write_text(bibtex(retrieved_papers(answers)) or "% no paper retrieved\n",
                                encoding="utf-8")
        paths["md"].write_text(conversation_markdown(answers, index=self.retriever.name,
                                                     model=self.generator.name), encoding="utf-8")
        return {k: str(v) for k, v in paths.items()} | {"cited_text": cited}

    # -- the Map view ----------------------------------------------------------------------------
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
        from rag.conference import mapfigure

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
                yield {"status": render.map_status_html(n, state="computing",
                                                        seconds=time.monotonic() - t0)}
                worker.join(MAP_TICK_S)
            if "error" in box:
                exc = box["error"]
                if not isinstance(exc, PaperchatError):
                    LOG.error("map layout of %r failed", retriever.name, exc_info=exc)
                    exc = RuntimeError("internal error; the server log has the details")
                yield {"status": render.map_status_html(state="error", error=str(exc))}
                return
            layout = box["layout"]
        try:
            filters = filters_for(status, area)
        except PaperchatError as exc:
            yield {"status": render.map_status_html(state="error", error=str(exc))}
            return
        answers = list(answers or [])
        marked = mapfigure.answer_highlight(answers[-1] if answers else None)
        papers = retriever.papers
        out: dict[str, object] = {
            "status": render.map_status_html(sum(1 for i in layout.ids if i in papers),
                                             state="ready", method=layout.method),
            "map": mapfigure.map_figure(layout, papers, color_by=color_by or "primary_area",
                                        highlight=marked, filters=filters, height=MAP_HEIGHT)}
        name_region_labels(out["map"], layout.labels)
        if hist:
            out["hist"] = mapfigure.rating_histogram(papers, highlight=marked)
        if table:
            out["table"] = mapfigure.area_table(papers).html()
        yield out

    def question_about(self, paper_id) -> str:
        """The question a click on map point ``paper_id`` asks: ``Tell me about “<title>”``.

        Raises:
            gr.Error: not a paper of the index open now (a stale map or a forged click).
        """
        paper = self._clicked_paper(paper_id, "open the Map tab again to redraw it")
        return ASK_ABOUT.format(title=self._fitted_title(paper, ASK_ABOUT))

    def _clicked_paper(self, paper_id, remedy: str):
        """The paper of the open index that a click names by ``paper_id``.

        Raises:
            gr.Error: no such paper (a stale map or card, or a forged click); ``remedy`` says
            what to do.
        """
        paper = None
        if isinstance(paper_id, str) and len(paper_id) <= MAX_FILTER_CHARS:
            paper = self.pipeline.current_retriever().papers.get(paper_id)
        if paper is None:
            raise _gr_error(PaperchatError(f"that paper is not in the index any more; {remedy}"),
                            "Cannot ask that")
        return paper

    def _fitted_title(self, paper, template: str) -> str:
        """``paper``'s title on one line, cut with "…" so that ``template`` filled with it fits
        ``settings.max_question_chars``."""
        title = " ".join(paper.title.split())
        room = self.settings.max_question_chars - len(template.format(title=""))
        return title if len(title) <= room else title[:room - 1] + "…"

    def similar_turn(self, paper_id) -> tuple[str, dict]:
        """The turn a card's "More like this" asks for paper ``paper_id``: the question shown,
        ``Papers similar to “<title>”``, and its plan as JSON (:meth:`rag.understand.plan.Plan.to_json`):
        the similar operation on that paper, given explicitly (``papers="named"``, its id and
        title), so no reading of the words can pick another paper.

        Raises:
            gr.Error: not a paper of the index open now (a stale card or a forged click).
        """
        from rag.understand.plan import Plan

        paper = self._clicked_paper(paper_id, "ask again to get fresh cards")
        title = self._fitted_title(paper, SIMILAR_TO)
        question = SIMILAR_TO.format(title=title)
        plan = Plan(papers="named", op="similar", ids=[paper.id], names=[title], said=question)
        return question, plan.to_json()

    # -- answering -----------------------------------------------------------------------------
    def stream(self, question, status, area, turns, answers, session=None, mode=None,
               drop_filters=(), drop=(), plan=None) -> Iterator[dict[str, object]]:
        """Answer one question, yielding partial UI states as plain dicts:
        ``chat`` (messages), ``sources`` (HTML), ``plan_line`` (the answer's plan line,
        :func:`ui.render.plan_line_html`: empty at the start, the answer's at the end), and at
        the end ``turns``, ``answers``, ``final`` (the :class:`Answer`) and ``exports`` (paths).
        ``mode``: an answer mode (:data:`ANSWER_MODES`; default None: ``settings.answer_mode``);
        ``drop``: keys of plan parts the user removed (:meth:`rag.understand.plan.Plan.parts`);
        ``drop_filters``: filters read from the question's words not to apply (the ``/ask``
        endpoint's argument, the same as ``filter:`` keys in ``drop``); ``plan``: the turn's
        plan as JSON when the app made it (a card's "More like this"), else None (the question
        is read). Raises ``gr.Error`` for bad input, before any retrieval."""
        from rag.chat.answer import (DoneEvent, HitsEvent, TokenEvent, answer_stream, check_mode,
                                check_question)
        from rag.understand.plan import Plan

        try:
            question = check_question(question, self.settings.max_question_chars)
            filters = filters_for(status, area)
            if mode is not None:
                check_mode(mode)
            drop_filters = _filter_list(drop_filters)
            drop = _filter_list(drop)
            given = Plan.from_json(plan) if plan else None
        except (PaperchatError, ValueError, TypeError) as exc:
            raise _gr_error(exc, "Cannot ask that") from None
        turns, answers = list(turns or []), list(answers or [])
        past = chat_messages(answers, self.settings.support_threshold, live=False)
        user = {"role": "user", "content": render.user_markdown(question)}
        yield {"chat": past + [user, {"role": "assistant", "content": "_Searching the papers…_"}],
               "plan_line": ""}

        # checked per question (one stat of the manifest): a re-indexed index is used from the
        # next question on; this one keeps the retriever it started with
        retriever = self.pipeline.current_retriever()
        events = answer_stream(question, retriever=retriever, generator=self.generator,
                               settings=self.settings, filters=filters, history=turns,
                               mode=mode or None, drop_filters=drop_filters, drop=drop,
                               plan=given)
        hits, standalone, text, final, last = [], question, "", None, 0.0
        try:
            for ev in events:
                if isinstance(ev, HitsEvent):
                    hits, standalone = ev.hits, ev.standalone_question
                    bubble = render.streaming_markdown("", hits, standalone, question)
                    yield {"chat": past + [user, {"role": "assistant", "content": bubble}],
                           "sources": render.sources_html(hits, refused=ev.refused,
                                                          question=question, standalone=standalone,
                                                          pending=not ev.refused)}
                elif isinstance(ev, TokenEvent):
                    text += ev.text
                    now = time.monotonic()
                    if now - last >= STREAM_EVERY:
                        last = now
                        bubble = render.streaming_markdown(text, hits, standalone, question)
                        yield {"chat": past + [user, {"role": "assistant", "content": bubble}]}
                elif isinstance(ev, DoneEvent):
                    final = ev.answer
        except PaperchatError as exc:
            raise _gr_error(exc) from None
        except Exception:
            LOG.exception("answering %r failed", question[:200])
            raise _gr_error(RuntimeError("internal error while answering; the server log has "
                                         "the details")) from None
        finally:
            events.close()  # a Stop closes this generator: stop the model too
        answers = (answers + [final])[-MAX_ANSWERS:]
        turns = (turns + [turn_for(final)])[-MAX_ANSWERS:]
        yield {"chat": chat_messages(answers, self.settings.support_threshold),
               "sources": render.sources_html(final.hits, answer=final, refused=final.refused,
                                              question=question,
                                              standalone=final.standalone_question),
               "plan_line": render.plan_line_html(
                   final.plan, list(final.filters_applied) or filters.as_strings()),
               "turns": turns, "answers": answers, "final": final,
               "exports": self.write_exports(answers, session)}

    def ask(self, question: str, status: str = ANY, area: str = ANY,
            answer_mode: str = "auto", drop_filters=None) -> dict:
        """Stateless: the ``paperchat ask --json`` object for one question (``filters_applied``
        included), plus ``markdown`` (the answer and its references, as the conversation export
        writes them). ``drop_filters``: filters read from the question's words not to apply
        (strings as in ``filters_applied``)."""
        from rag.conference.export import conversation_markdown
        from rag.compose.rendering import answer_json

        final = None
        for part in self.stream(question, status, area, [], [], mode=answer_mode or "auto",
                                drop_filters=drop_filters or ()):
            final = part.get("final", final)
        out = answer_json(final, filters_for(status, area))
        out["markdown"] = conversation_markdown([final])
        return out


def build_app(pipeline) -> gr.Blocks:
    """The chat UI over ``pipeline`` (its retriever is opened and its model loaded now).

    The Blocks has no queue set up yet: :func:`launch` does that (concurrency 1 for generation).
    """
    app = ChatApp(pipeline)
    settings, retriever, generator = app.settings, app.retriever, app.generator
    idle_sources = render.sources_html([])

    with gr.Blocks(analytics_enabled=False, title="paperchat",
                   delete_cache=(3600, 3600)) as demo:
        demo.paperchat = app  # for tests and tools
        turns = gr.State([])
        answers = gr.State([])
        last_question = gr.State("")
        drops = gr.State([])  # keys of the plan parts the user removed from the last question
        last_plan = gr.State(None)  # the last question's plan when the app made it (JSON)

        from rag.chat.answer import resolve_mode
        from rag.retrieve.coverage import HEADER_EVERY_S, progress_of

        auto_mode = resolve_mode("auto", generator, settings)
        def header() -> str:  # and, while the index is being embedded, how far (every 5 s)
            return (render.header_html(retriever.name, len(retriever), generator.name, auto_mode)
                    + render.coverage_html(progress_of(app.pipeline.current_retriever())))

        gr.HTML(header, every=HEADER_EVERY_S if progress_of(retriever) else None,
                elem_id="pc-header")
        with gr.Row(equal_height=False, elem_id="pc-main"):
            with gr.Column(scale=3, min_width=420, elem_id="pc-chat-col"):
                chatbot = gr.Chatbot(
                    label="Chat", elem_id="pc-chat", height=540,
                    latex_delimiters=render.LATEX_DELIMITERS, sanitize_html=True,
                    feedback_options=None, buttons=["copy"], allow_file_downloads=False,
                    placeholder=("**Ask about the papers in this index.** Answers cite papers "
                                 "as [n]; click a number to see the paper and its evidence."))
                # hidden: carries clicks on the plan line's × (PLAN_CLICK_JS) and holds the
                # last answer's plan line for API clients (the chat shows it)
                plan_events = gr.HTML("", elem_id="pc-plan-events", js_on_load=PLAN_CLICK_JS)
                with gr.Row(equal_height=True):
                    question = gr.Textbox(placeholder="e.g. Which papers fine-tune an LLM to "
                                          "design heuristics for vehicle routing?",
                                          show_label=False, lines=1, max_lines=6, scale=8,
                                          elem_id="pc-question", autofocus=True, container=False)
                    send = gr.Button("Ask", variant="primary", scale=1, min_width=90,
                                     elem_id="pc-send")
                with gr.Row(equal_height=True, elem_id="pc-controls"):
                    status = gr.Dropdown(STATUS_CHOICES, value=ANY, label="Status",
                                         elem_id="pc-status", scale=2, min_width=120)
                    area = gr.Dropdown(area_choices(retriever), value=ANY, label="Primary area",
                                       elem_id="pc-area", scale=3, min_width=160)
                    mode = gr.Dropdown(mode_choices(auto_mode), value=settings.answer_mode,
                                       label="Answer mode", elem_id="pc-mode", scale=3,
                                       min_width=170)
                    with gr.Column(scale=2, min_width=150, elem_id="pc-actions"):
                        stop = gr.Button("■ Stop", size="sm", elem_id="pc-stop")
                        with gr.Row():
                            regen = gr.Button("Regenerate", size="sm", elem_id="pc-regen",
                                              min_width=60)
                            clear = gr.Button("Clear", size="sm", elem_id="pc-clear",
                                              min_width=60)
                        model_writes = gr.Button("Let the model write it", size="sm",
                                                 elem_id="pc-model-writes")
                with gr.Accordion("Export: BibTeX and Markdown", open=False, elem_id="pc-export"):
                    with gr.Row():
                        dl_cited = gr.DownloadButton("Download .bib (cited)", interactive=False,
                                                     size="sm", elem_id="pc-dl-cited")
                        dl_all = gr.DownloadButton("Download .bib (all retrieved)",
                                                   interactive=False, size="sm",
                                                   elem_id="pc-dl-all")
                        dl_md = gr.DownloadButton("Conversation (.md)", interactive=False,
                                                  size="sm", elem_id="pc-dl-md")
                    bib = gr.Textbox(label="BibTeX of the cited papers", lines=6, max_lines=14,
                                     interactive=False, buttons=["copy"], elem_id="pc-bib")
            with gr.Column(scale=2, min_width=340, elem_id="pc-sources-col"):
                with gr.Tabs(elem_id="pc-side-tabs"):
                    with gr.Tab("Sources", id="sources", elem_id="pc-tab-sources"):
                        # the cards; a card's "More like this" sends its paper id
                        sources = gr.HTML(idle_sources, elem_id="pc-sources",
                                          js_on_load=MORE_LIKE_JS)
                    with gr.Tab("Map", id="map", elem_id="pc-tab-map") as map_tab:
                        # the status line also carries clicks on map points (MAP_CLICK_JS)
                        map_status = gr.HTML(render.map_status_html(), elem_id="pc-map-status",
                                             js_on_load=MAP_CLICK_JS)
                        color_by = gr.Radio(COLOR_CHOICES, value="primary_area",
                                            label="Colour by", elem_id="pc-map-color",
                                            container=False)
                        map_plot = gr.Plot(elem_id="pc-map", show_label=False)
                        hist_plot = gr.Plot(elem_id="pc-hist", show_label=False)
                        area_table = gr.HTML("", elem_id="pc-areas", js_on_load=None)
        map_on = gr.State(False)  # this session's map is drawn: keep it up to date
        map_drawn = gr.State(None)  # map_key() of what the map shows

        outputs = [chatbot, question, sources, turns, answers, last_question, bib, dl_cited,
                   dl_all, dl_md, plan_events, drops, last_plan]

        def to_updates(part: dict, *, first: bool = False) -> dict:
            upd: dict = {chatbot: part["chat"]}
            if first:
                upd[question] = ""
            if "sources" in part:
                upd[sources] = part["sources"]
            if "plan_line" in part:
                upd[plan_events] = part["plan_line"]
            if "exports" in part:
                ex = part["exports"]
                upd.update({turns: part["turns"], answers: part["answers"],
                            bib: ex["cited_text"],
                            dl_cited: gr.DownloadButton(value=ex["cited"], interactive=True),
                            dl_all: gr.DownloadButton(value=ex["all"], interactive=True),
                            dl_md: gr.DownloadButton(value=ex["md"], interactive=True)})
            return upd

        def new_turn(q, st, ar, md, tr, an, request, plan=None):
            """A new turn of the conversation: question ``q`` (read into a plan), or the plan
            the app made for it (``plan``, JSON)."""
            session = getattr(request, "session_hash", None)
            first = True
            for part in app.stream(q, st, ar, tr, an, session, mode=md, plan=plan):
                upd = to_updates(part, first=first)
                if first:
                    upd[last_question] = q
                    upd[drops] = []  # a new question: every part of its plan applies
                    upd[last_plan] = plan
                first = False
                yield upd

        def chat(q, st, ar, md, tr, an, request: gr.Request):
            yield from new_turn(q, st, ar, md, tr, an, request)

        def more_like(st, ar, md, tr, an, evt: gr.EventData, request: gr.Request):
            """A card's "More like this": the similar operation for its paper, a new turn."""
            q, plan = app.similar_turn((getattr(evt, "_data", None) or {}).get("paper"))
            yield from new_turn(q, st, ar, md, tr, an, request, plan=plan)

        def redo(st, ar, md, tr, an, lq, lp, request, what: str, dr=()):
            """Answer the last question again (in mode ``md``, its plan without the parts
            ``dr``; ``lp``: the plan the app gave it, if any), replacing its answer."""
            tr, an = list(tr or []), list(an or [])
            q = lq or (an[-1].question if an else "")
            if not q:
                gr.Warning(f"Nothing to {what} yet: ask a question first.")
                return
            if an and an[-1].question == q:
                an, tr = an[:-1], tr[:-1]
            session = getattr(request, "session_hash", None)
            for part in app.stream(q, st, ar, tr, an, session, mode=md, drop=dr, plan=lp):
                yield to_updates(part)

        def regenerate(st, ar, md, tr, an, lq, dr, lp, request: gr.Request):
            yield from redo(st, ar, md, tr, an, lq, lp, request, "regenerate", dr)

        def let_model_write(st, ar, tr, an, lq, dr, lp, request: gr.Request):
            if an and an[-1].refused:  # nothing to write from: say so instead of a silent redo
                gr.Warning("No paper in this index answers the last question, so there is "
                           "nothing for the model to write from.")
                return
            yield from redo(st, ar, "generative", tr, an, lq, lp, request, "rewrite", dr)

        def remove_part(st, ar, md, tr, an, lq, dr, lp, evt: gr.EventData,
                        request: gr.Request):
            """A plan part's ×: the last question again without that part (a dropdown's filter
            sends the dropdown back to "any"), replacing its answer."""
            key = (getattr(evt, "_data", None) or {}).get("part")
            last = list(an or [])[-1:]
            keys = [k for k, _ in render.plan_parts(last[0].plan, last[0].filters_applied)
                    if render.removable(k, last[0].plan)] if last else []
            if key in (dr or []) and key not in keys:
                return  # a second click on a part already removed (queued behind the first)
            try:
                st, ar, dr = without_part(key, keys, st, ar, dr)
            except PaperchatError as exc:
                gr.Warning(f"Nothing removed: {html.escape(str(exc))}.")
                return
            yield {status: st, area: ar, drops: dr}
            yield from redo(st, ar, md, tr, an, lq, lp, request, "ask again", dr)

        def stopped(messages):
            """Mark a stopped answer as such (it stays on screen, but out of the memory)."""
            messages = list(messages or [])
            if messages and messages[-1].get("role") == "assistant":
                last = dict(messages[-1])
                parts = last.get("content")
                text = (parts if isinstance(parts, str) else
                        "".join(p.get("text", "") for p in parts or [] if isinstance(p, dict)))
                if text.endswith(render.CURSOR):
                    last["content"] = render.stopped_markdown(text)
                    messages[-1] = last
            return messages

        def reset():
            return {chatbot: [], question: "", sources: idle_sources, turns: [], answers: [],
                    last_question: "", bib: "", plan_events: "", drops: [], last_plan: None,
                    dl_cited: gr.DownloadButton(value=None, interactive=False),
                    dl_all: gr.DownloadButton(value=None, interactive=False),
                    dl_md: gr.DownloadButton(value=None, interactive=False)}

        common = dict(outputs=outputs, concurrency_limit=1, concurrency_id="generate",
                      show_progress="minimal")
        ev_submit = question.submit(chat, [question, status, area, mode, turns, answers],
                                    api_name="chat", **common)
        ev_send = send.click(chat, [question, status, area, mode, turns, answers],
                             api_visibility="private", **common)
        ev_regen = regen.click(regenerate,
                               [status, area, mode, turns, answers, last_question, drops,
                                last_plan], api_name="regenerate", **common)
        ev_write = model_writes.click(let_model_write,
                                      [status, area, turns, answers, last_question, drops,
                                       last_plan], api_name="model_writes", **common)
        ev_part = plan_events.click(remove_part,
                                    [status, area, mode, turns, answers, last_question, drops,
                                     last_plan], api_visibility="private",
                                    **(common | {"outputs": outputs + [status, area]}))
        ev_more = sources.click(more_like, [status, area, mode, turns, answers],
                                api_visibility="private", **common)
        # -- the Map view: its own events and concurrency group, so drawing (or computing the
        # layout the first time) never holds up an answer
        map_outputs = [map_status, map_plot, hist_plot, area_table]
        map_common = dict(concurrency_limit=2, concurrency_id="map", show_progress="hidden",
                          api_visibility="private")

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

        map_inputs = [color_by, status, area, answers, map_on, map_drawn]
        map_outputs = map_outputs + [map_drawn]
        map_tab.select(open_map, map_inputs[:-1], map_outputs + [map_on], **map_common) \
            .then(redraw_map, map_inputs, map_outputs, **map_common)
        for control in (color_by, status, area):
            control.change(redraw_map, map_inputs, map_outputs, **map_common)
        ev_map_ask = map_status.click(ask_about, None, question, queue=False,
                                      api_visibility="private")
        ev_map_answer = ev_map_ask.success(chat, [question, status, area, mode, turns, answers],
                                           api_visibility="private", **common)
        for ev in (ev_submit, ev_send, ev_regen, ev_write, ev_part, ev_more, ev_map_answer):
            ev.success(redraw_map, map_inputs, map_outputs, **map_common)

        running = [ev_submit, ev_send, ev_regen, ev_write, ev_part, ev_more, ev_map_answer]
        stop.click(stopped, chatbot, chatbot, cancels=running, queue=False,
                   api_visibility="private")
        clear.click(reset, None, outputs, queue=False, api_name="clear", cancels=running) \
            .then(redraw_map, map_inputs, map_outputs, **map_common)

        def ask(question: str, status: str = ANY, area: str = ANY,
                answer_mode: str = "auto", drop_filters: list[str] | None = None) -> dict:
            """Answer one question (no conversation memory). status: any, accepted, oral,
            spotlight or poster; area: a primary area or any; answer_mode: auto, extractive,
            constrained or generative; drop_filters: filters read from the question's words
            not to apply (as listed in filters_applied, e.g. ["status=oral"]). Returns the
            `paperchat ask --json` object plus `markdown`."""
            return app.ask(question, status, area, answer_mode, drop_filters)

        gr.api(ask, api_name="ask", concurrency_limit=1, concurrency_id="generate")
    return demo


def theme():
    """Gradio's default look with the system's fonts (no font is fetched from the network)."""
    return gr.themes.Default(
        primary_hue="indigo", neutral_hue="slate",
        font=["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica", "Arial",
              "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"])


def launch(demo, *, host: str = "127.0.0.1", port: int = 7860, auth=None, block: bool = True,
           quiet: bool = False, mcp: bool = False):
    """Queue and launch ``demo``; returns Gradio's ``(app, local_url, share_url)``.

    ``block=False`` returns at once with the server running in a thread (tests). ``mcp``: also
    serve Gradio's MCP server at ``/gradio_api/mcp/`` (add the tools first with
    :func:`ui.mcp.add_tools`; with ``auth`` it asks MCP requests for the same credentials).
    """
    extra = {}
    if mcp:
        from ui.mcp import app_kwargs

        extra = {"app_kwargs": app_kwargs(auth)}
    demo.queue(default_concurrency_limit=1, max_size=64)
    return demo.launch(
        server_name=host, server_port=port, share=False, auth=auth, inbrowser=False,
        prevent_thread_lock=not block, show_error=False, allowed_paths=[], quiet=quiet,
        ssr_mode=False, mcp_server=mcp, pwa=False, enable_monitoring=False, **extra,
        max_file_size=1,  # the app takes no uploads: close Gradio's /gradio_api/upload
        footer_links=["api", "settings"], theme=theme(),
        css=render.CSS + render.PLAN_CSS + render.MAP_CSS)


def _say_index_reloads() -> None:
    """Print the pipeline's notes (an index re-indexed on disk reopened, or not) on stderr, as
    ``paperchat: ...`` lines like the rest of ``serve``'s output."""
    logger = logging.getLogger("rag.chat.pipeline")
    if not any(getattr(h, "_paperchat", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("paperchat: %(message)s"))
        handler._paperchat = True
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 7860,
          auth: str | None = None, mcp: bool = False) -> int:
    """``paperchat serve``: load the index and model, then serve until Ctrl-C. Returns 0.
    ``mcp``: also serve the MCP tools of :mod:`ui.mcp` (``paperchat serve --mcp``).

    Raises:
        PaperchatError: a bad ``--auth``, a missing index or model (before anything listens).
    """
    from rag.chat.pipeline import Pipeline

    credentials = parse_auth(auth)
    if credentials is None and not is_loopback(host):
        print(f"paperchat: warning: serving on {host} without --auth: anyone who can reach "
              f"port {port} can use this chat and its model; add --auth USER:PASS or bind "
              "127.0.0.1", file=sys.stderr)
    _say_index_reloads()
    pipeline = Pipeline(settings)
    demo = build_app(pipeline)
    if mcp:
        from ui.mcp import add_tools

        add_tools(demo)
    from rag.compose import prompts

    # before listening: a broken index or model is reported here; the generative mode's system
    # prompt is evaluated once, so its KV state is warm for the first "let the model write it"
    ready = pipeline.warm_up(system_prompt=prompts.render("system", max_sentences=5))
    print(f"paperchat: index {pipeline.retriever.name!r} ({len(pipeline.retriever)} papers), "
          f"model {pipeline.generator.name}; ready in {sum(ready.values()) / 1000:.1f} s",
          file=sys.stderr)
    if mcp:
        from ui.mcp import serve_note

        print(serve_note(host, port, credentials is not None), file=sys.stderr)
    launch(demo, host=host, port=port, auth=credentials, block=True, mcp=mcp)
    return 0
