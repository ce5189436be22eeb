"""The Gradio chat: streamed answers beside the cards of the papers they cite.

:func:`build_app` turns a :class:`rag.chat.pipeline.Pipeline` (real backends, or fakes in tests)
into a ``gr.Blocks`` assembled from its tabs and panels: the chat column (:mod:`ui.chat_tab`)
with the Export panel below it (:mod:`ui.export_panel`), and beside them the Sources and Map tabs
(:mod:`ui.sources_tab`, :mod:`ui.map_tab`); :class:`ChatApp` holds their handlers, and the
controls they share are :mod:`ui.controls`. :func:`launch` starts it; :func:`serve` is
``paperchat serve``. Privacy defaults: no analytics, no share link, bound to 127.0.0.1, no extra
``allowed_paths``, system fonts only (the default theme would fetch Google Fonts), and a warning
on stderr when binding another address without ``--auth``.

Per browser session (``gr.State``, never global): the list of :class:`rag.understand.history.Turn`
that follow-ups are resolved against, the session's answers (for export), and the filters the
user removed from the last question. Generation is serialised (one event at a time in the
``generate`` concurrency group) because the in-process model is.

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

import ipaddress
import logging
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from rag.errors import PaperchatError
from ui import cards, map_view, render, styles
from ui.chat_tab import ChatHandlers, chat_listeners, chat_panel
from ui.controls import ANY, MAX_FILTER_CHARS, _gr_error
from ui.export_panel import ExportHandlers, export_panel
from ui.map_tab import MapHandlers, map_listeners, map_panel
from ui.sources_tab import SourcesHandlers, sources_panel
from ui.trends_tab import TrendsHandlers, trends_listeners, trends_panel

if TYPE_CHECKING:
    from rag.settings import Settings

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class UIConfigError(PaperchatError):
    """``--auth`` is neither ``USER:PASS`` nor a file holding it."""


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


# --- the app --------------------------------------------------------------------------------------
class ChatApp(ChatHandlers, SourcesHandlers, MapHandlers, ExportHandlers, TrendsHandlers):
    """The event handlers, bound to one pipeline. Holds no per-user state. The handlers are the
    tabs' (:class:`ui.chat_tab.ChatHandlers`, :class:`ui.sources_tab.SourcesHandlers`,
    :class:`ui.map_tab.MapHandlers`, :class:`ui.export_panel.ExportHandlers`,
    :class:`ui.trends_tab.TrendsHandlers`); what they share
    is here: the pipeline, its settings and model, and the paper a click names."""

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


def build_app(pipeline) -> gr.Blocks:
    """The chat UI over ``pipeline`` (its retriever is opened and its model loaded now).

    The Blocks has no queue set up yet: :func:`launch` does that (concurrency 1 for generation).
    """
    app = ChatApp(pipeline)
    settings, retriever, generator = app.settings, app.retriever, app.generator
    idle_sources = cards.sources_html([])

    with gr.Blocks(analytics_enabled=False, title="paperchat",
                   delete_cache=(3600, 3600)) as demo:
        demo.paperchat = app  # for tests and tools
        turns = gr.State([])
        answers = gr.State([])
        last_question = gr.State("")
        drops = gr.State([])  # keys of the plan parts the user removed from the last question
        last_plan = gr.State(None)  # the last question's plan when the app made it (JSON)

        from rag.chat.answer import resolve_mode
        from rag.conference.trends import index_year_totals
        from rag.retrieve.coverage import HEADER_EVERY_S, progress_of

        auto_mode = resolve_mode("auto", generator, settings)
        def header() -> str:  # and, while the index is being embedded, how far (every 5 s)
            return (render.header_html(retriever.name, len(retriever), generator.name, auto_mode,
                                       index_year_totals(retriever))
                    + render.coverage_html(progress_of(app.pipeline.current_retriever())))

        gr.HTML(header, every=HEADER_EVERY_S if progress_of(retriever) else None,
                elem_id="pc-header")
        with gr.Row(equal_height=False, elem_id="pc-main"):
            with gr.Column(scale=3, min_width=420, elem_id="pc-chat-col"):
                (chatbot, plan_events, question, send, status, area, mode, stop, regen, clear,
                 model_writes) = chat_panel(retriever, settings, auto_mode)
                dl_cited, dl_all, dl_md, bib = export_panel()
            with gr.Column(scale=2, min_width=340, elem_id="pc-sources-col"):
                with gr.Tabs(elem_id="pc-side-tabs") as side_tabs:
                    sources = sources_panel(idle_sources)
                    map_tab, map_status, color_by, map_plot, hist_plot, area_table = map_panel()
                    _, trend_topic, trend_show, trend_plot, trend_table = trends_panel()
        map_on = gr.State(False)  # this session's map is drawn: keep it up to date
        map_drawn = gr.State(None)  # map_key() of what the map shows

        outputs = [chatbot, question, sources, turns, answers, last_question, bib, dl_cited,
                   dl_all, dl_md, plan_events, drops, last_plan]

        chat, more_like, regenerate, let_model_write, remove_part, stopped, reset = \
            chat_listeners(app, outputs, status, area, idle_sources)

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

        open_map, redraw_map, ask_about = map_listeners(app, map_status, map_plot, hist_plot,
                                                        area_table, map_on, map_drawn)

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
        # -- the Trends view: a topic typed in, or the last answer's numbers per year
        show_trend, answer_trend = trends_listeners(app, side_tabs, trend_topic, trend_plot,
                                                    trend_table)
        trend_common = dict(concurrency_limit=1, concurrency_id="trend",
                            api_visibility="private")
        for ev in (trend_show.click, trend_topic.submit):
            ev(show_trend, [trend_topic, status, area], [trend_plot, trend_table],
               show_progress="minimal", **trend_common)
        for ev in (ev_submit, ev_send, ev_regen, ev_part, ev_map_answer):
            ev.success(answer_trend, [answers], [side_tabs, trend_plot, trend_table,
                                                  trend_topic], show_progress="hidden",
                       **trend_common)

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
        css=styles.CSS + styles.PLAN_CSS + map_view.MAP_CSS)


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
