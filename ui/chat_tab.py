"""The chat column: the conversation, the question box and the controls under it
(:func:`chat_panel`); answering a question, streamed as partial UI states or at once for ``/ask``
(:class:`ChatHandlers`, part of :class:`ui.app.ChatApp`); and the functions its events run
(:func:`chat_listeners`: ask, More like this, regenerate, let the model write it, remove a plan
part, stop, clear), which :func:`ui.app.build_app` registers.

Above each answer, in its bubble, the turn's plan in one line (:func:`ui.render.plan_line_html`:
"8 papers from the previous answer · orals only · sorted by rating"; "Reading this as: ..." when
the reading is unsure), each part a chip. The filters are parts of it: those read from the
question's words ("oral papers on ..." -> ``status=oral``) and the Status and Primary area
dropdowns'. A part's × asks the last question again without that part
(:func:`rag.chat.answer.answer_stream`'s ``drop``), replacing its answer as Regenerate does and
keeping the conversation before it; a part a dropdown set sends that dropdown back to "any"
(:func:`without_part`). A cite answer's BibTeX shows in the chat as a code block with a copy
button (:func:`ui.render.bibtex_block`).
"""

from __future__ import annotations

import html
import time
from typing import Iterator

import gradio as gr

from rag.errors import PaperchatError
from ui import cards, render
from ui.controls import (ANY, LOG, STATUS_CHOICES, _filter_list, _gr_error,
                         area_choices, filters_for, mode_choices)


#: Answers kept per session (older ones drop out of memory and exports).
MAX_ANSWERS = 50
#: Seconds between streamed chat updates (tokens arriving faster are batched).
STREAM_EVERY = 0.05


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


def turn_for(answer):
    """The :class:`Turn` an answer leaves for follow-ups (:func:`rag.understand.history.turn_after`)."""
    from rag.understand.history import turn_after

    return turn_after(answer)


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


class ChatHandlers:
    """The chat's handlers of :class:`ui.app.ChatApp`: a question answered, streamed
    (:meth:`stream`) or at once (:meth:`ask`, the ``/ask`` endpoint)."""

    def stream(self, question, status, area, turns, answers, session=None, mode=None,
               drop_filters=(), drop=(), plan=None) -> Iterator[dict[str, object]]:
        """Answer one question, yielding partial UI states as plain dicts:
        ``chat`` (messages), ``sources`` (HTML), ``plan_line`` (the answer's plan line,
        :func:`ui.render.plan_line_html`: empty at the start, the answer's at the end), and at
        the end ``turns``, ``answers``, ``final`` (the :class:`Answer`) and ``exports`` (paths).
        ``mode``: an answer mode (:data:`ui.controls.ANSWER_MODES`; default None:
        ``settings.answer_mode``);
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
                           "sources": cards.sources_html(hits, refused=ev.refused,
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
               "sources": cards.sources_html(final.hits, answer=final, refused=final.refused,
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
        from rag.compose.rendering import answer_json
        from rag.conference.export import conversation_markdown

        final = None
        for part in self.stream(question, status, area, [], [], mode=answer_mode or "auto",
                                drop_filters=drop_filters or ()):
            final = part.get("final", final)
        out = answer_json(final, filters_for(status, area))
        out["markdown"] = conversation_markdown([final])
        return out


def chat_panel(retriever, settings, auto_mode: str) -> tuple:
    """The chat column's components, made in the Blocks and column open now: the chatbot, the
    hidden ``#pc-plan-events`` (:data:`PLAN_CLICK_JS`), the question box and its Ask button, the
    Status, Primary area and Answer mode dropdowns, and the Stop, Regenerate, Clear and "Let the
    model write it" buttons, in that order."""
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
    return (chatbot, plan_events, question, send, status, area, mode, stop, regen, clear,
            model_writes)


def chat_listeners(app, outputs, status, area, idle_sources) -> tuple:
    """The functions the chat's events run, for :func:`ui.app.build_app` to register, bound to
    ``app`` (a :class:`ui.app.ChatApp`) and to what they update: ``outputs`` (the chat's outputs,
    in :func:`ui.app.build_app`'s order), the ``status`` and ``area`` dropdowns (a plan part's ×
    may send one back to "any") and ``idle_sources`` (the Sources panel before any answer).
    Returns ``(chat, more_like, regenerate, let_model_write, remove_part, stopped, reset)``."""
    (chatbot, question, sources, turns, answers, last_question, bib, dl_cited, dl_all, dl_md,
     plan_events, drops, last_plan) = outputs

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

    return chat, more_like, regenerate, let_model_write, remove_part, stopped, reset
