"""The commands that answer: ``paperchat ask`` (one turn), ``paperchat chat`` (a conversation in
the terminal, kept between sessions) and ``paperchat serve`` (the chat UI in the browser), and the
terminal rendering of an answer they share (:func:`format_answer`)."""

from __future__ import annotations

import json
import sys

from rag.cli.parser import _settings


def format_answer(ans) -> str:
    """Terminal rendering after streaming: unsupported sentences marked, then the references
    (:func:`rag.compose.rendering.references`: ``[n] Title. Venue Status. rating 6.0 · 4 reviews, 4–8.
    URL``; the rating only when the paper has one)."""
    from rag.compose.rendering import references

    lines = []
    if ans.unsupported:
        lines += ["", "Not supported by the cited abstracts (left out of the answer):"]
        lines += [f"  (?) {s.text}" for s in ans.unsupported]
    lines += ["", ""]  # end the streamed answer's line, then one blank line
    if ans.refused and not ans.hits:
        return "\n".join(lines).rstrip()
    lines.append("Nearest papers (none answers the question):" if ans.refused else "References:")
    return "\n".join(lines + references(ans))


def _answer_here(question: str, pipe, settings, *, filters=None, history=(), as_json=False):
    """Answer one turn in the terminal as the browser does (same plan, same answer): the plan's
    line, then the streamed answer and its references (first, on an index still being
    embedded, how far it is: ``dense 41% · about 9 min left``); with ``as_json`` the ``ask
    --json`` object only (with ``dense_coverage`` on such an index). Returns the
    :class:`rag.types.Answer`."""
    from rag.chat.answer import DoneEvent, HitsEvent, TokenEvent, answer_stream
    from rag.compose.rendering import answer_json
    from rag.retrieve.coverage import annotate, coverage_line, progress_of

    final = None
    retriever = pipe.current_retriever()
    progress = progress_of(retriever)  # an index still being embedded says how far it is
    if progress is not None and not as_json:
        print(f"(index {retriever.name!r} is being embedded: {coverage_line(progress)})")
    for ev in answer_stream(question, retriever=retriever,
                            generator=pipe.generator, settings=settings, filters=filters,
                            history=list(history), mode=settings.answer_mode, reader=pipe.reader):
        if isinstance(ev, HitsEvent) and not as_json and ev.standalone_question != question:
            print(f"(searching for: {ev.standalone_question})", file=sys.stderr)
        elif isinstance(ev, TokenEvent) and not as_json:
            print(ev.text, end="", flush=True)
        elif isinstance(ev, DoneEvent):
            final = ev.answer
    annotate(final, retriever)
    if as_json:
        print(json.dumps(answer_json(final, filters), ensure_ascii=False, indent=2))
    else:
        if final.refused:
            print(final.text)
        print(format_answer(final))
    return final


def cmd_ask(args) -> int:
    """``paperchat ask``: one turn. It starts a new conversation (kept under
    ``$PAPERCHAT_HOME/conversations/``), or with ``--continue`` it is the next turn of the
    last one (the same one ``paperchat chat`` keeps)."""
    from rag.chat.answer import check_question
    from rag.chat.pipeline import Pipeline, require_index
    from rag.filters import Filters
    from rag.understand import history as hist

    settings = _settings(args)
    question = check_question(args.question, settings.max_question_chars)
    filters = Filters.parse(args.filter)
    require_index(settings)  # before any model is loaded: an index not built yet fails at once
    pipe = Pipeline(settings)
    pipe.generator  # validates --model before any retrieval work
    path = hist.conversation_path(settings.home, settings.index)
    turns = hist.load(path, pipe.current_retriever().papers, settings.index) \
        if args.continue_ else []
    if args.continue_ and not turns and not args.json:
        print("(no earlier conversation with this index: a new one starts)", file=sys.stderr)
    final = _answer_here(question, pipe, settings, filters=filters, history=turns,
                         as_json=args.json)
    hist.save(path, (turns + [hist.turn_after(final)])[-hist.MAX_TURNS:], settings.index)
    return 0


#: What ``paperchat chat`` says at its start and for ``/help``.
CHAT_HELP = ("Ask about the papers; follow up on the answer (\"the second one\", \"which of these are "
             "orals?\"). Commands: /reset starts a new conversation, /bib prints the BibTeX of "
             "every paper cited so far, /help, /quit (or Ctrl-D). The conversation is kept for "
             "the next session.")


def cmd_chat(args) -> int:
    """``paperchat chat``: a conversation in the terminal, the same plans and answers as the
    browser, kept between sessions in ``$PAPERCHAT_HOME/conversations/<index>.json`` (``--new``
    starts over). Ctrl-C stops the answer being written, Ctrl-D or ``/quit`` ends the session."""
    from rag.chat.answer import check_question
    from rag.chat.pipeline import Pipeline
    from rag.conference.export import bibtex
    from rag.errors import PaperchatError
    from rag.understand import history as hist

    settings = _settings(args)
    pipe = Pipeline(settings)
    pipe.generator
    path = hist.conversation_path(settings.home, settings.index)
    turns = [] if args.new else hist.load(path, pipe.current_retriever().papers, settings.index)
    print(f"paperchat on index {settings.index!r} ({len(pipe.current_retriever()):,} papers). "
          + CHAT_HELP)
    if turns:
        print(f"(continuing a conversation of {len(turns)} turns; /reset starts a new one)")
    while True:
        try:
            line = input("\nyou> ").strip()
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            continue
        if not line:
            continue
        if line in ("/quit", "/exit"):
            return 0
        if line == "/help":
            print(CHAT_HELP)
            continue
        if line == "/reset":
            turns = []
            hist.save(path, turns, settings.index)
            print("(a new conversation)")
            continue
        if line == "/bib":
            cited = list({p.id: p for t in turns for p in t.papers}.values())
            print(bibtex(cited).strip() if cited else "(no paper cited yet)")
            continue
        if line.startswith("/"):
            print(f"unknown command {line.split()[0]!r}; " + CHAT_HELP)
            continue
        try:
            question = check_question(line, settings.max_question_chars)
            final = _answer_here(question, pipe, settings, history=turns)
        except KeyboardInterrupt:
            print("\n(stopped)")
            continue
        except PaperchatError as exc:
            print(f"paperchat: error: {exc}", file=sys.stderr)
            continue
        turns = (turns + [hist.turn_after(final)])[-hist.MAX_TURNS:]
        hist.save(path, turns, settings.index)


def cmd_serve(args) -> int:
    from ui.app import serve

    return serve(_settings(args), host=args.host, port=args.port, auth=args.auth,
                 mcp=args.mcp)
