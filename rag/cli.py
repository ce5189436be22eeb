"""The ``paperchat`` command (also ``python -m rag``): index, ask, serve, eval, map, bench,
fetch (the only one that uses the network).

Expected failures (:class:`rag.errors.PaperchatError`) print one line ``paperchat: error: ...``
and exit 2; no traceback. Heavy libraries are imported inside the commands, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

#: ``--answer-mode`` choices (rag.chat.answer.MODES plus auto; kept here so --help imports nothing).
ANSWER_MODES = ("auto", "extractive", "constrained", "generative")


def _settings(args) -> "Settings":  # noqa: F821
    from rag.settings import Settings

    overrides = {}
    if getattr(args, "index", None):
        overrides["index"] = args.index
    if getattr(args, "model", None):
        overrides["model"] = Path(args.model)
    if getattr(args, "k", None) is not None:
        overrides["k"] = args.k
    if getattr(args, "chroma_url", None):
        overrides["chroma_url"] = args.chroma_url
    if getattr(args, "llm_url", None):
        overrides["llm_url"] = args.llm_url
    if getattr(args, "answer_mode", None):
        overrides["answer_mode"] = args.answer_mode
    return Settings(**overrides)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paperchat", description="Chat with a conference's paper "
                                "abstracts, locally, with cited papers.")
    sub = p.add_subparsers(dest="command", required=True)

    ix = sub.add_parser("index", help="build or update an index from a paper list")
    ix.add_argument("path", help="paper list: JSONL, Paper Copilot JSON, OpenReview v2 JSON or CSV")
    ix.add_argument("--name", default=None, help="index name (default: 'default')")
    from index.sources import FORMATS

    ix.add_argument("--format", default="auto", dest="fmt", choices=list(FORMATS))
    ix.add_argument("--prune", action="store_true", help="remove papers no longer in the list")
    ix.add_argument("--rebuild", action="store_true", help="delete the index first")
    ix.add_argument("--quiet", action="store_true", help="no progress bar, only the summary")
    ix.add_argument("--chroma-url", default=None, help="Chroma server (else embedded)")

    ask = sub.add_parser("ask", help="ask one question")
    ask.add_argument("question")
    ask.add_argument("--index", default=None)
    ask.add_argument("--k", type=int, default=None, help="papers retrieved (default 5)")
    ask.add_argument("--filter", action="append", default=[], metavar="FIELD=VALUE",
                     help="status=Oral, primary_area=..., keyword=..., year=..., venue=...")
    ask.add_argument("--model", default=None, help="GGUF file (default: bundled SmolLM2-135M)")
    ask.add_argument("--llm-url", default=None, help="OpenAI-compatible server …/v1")
    ask.add_argument("--chroma-url", default=None)
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument("--continue", dest="continue_", action="store_true",
                     help="the next turn of the last conversation (kept by ask and chat)")
    ask.add_argument("--answer-mode", default=None, choices=ANSWER_MODES,
                     help="auto (default: by the model's size), extractive (quotes chosen by the "
                     "evidence scores), constrained (the model picks quotes under a grammar), "
                     "generative (the model writes; unsupported sentences are set apart)")

    ch = sub.add_parser("chat", help="a conversation in the terminal, kept between sessions "
                        "(/reset, /bib)")
    ch.add_argument("--index", default=None)
    ch.add_argument("--k", type=int, default=None, help="papers retrieved (default 5)")
    ch.add_argument("--model", default=None, help="GGUF file (default: bundled SmolLM2-135M)")
    ch.add_argument("--llm-url", default=None, help="OpenAI-compatible server …/v1")
    ch.add_argument("--chroma-url", default=None)
    ch.add_argument("--new", action="store_true", help="start a new conversation")
    ch.add_argument("--answer-mode", default=None, choices=ANSWER_MODES)

    sv = sub.add_parser("serve", help="serve the chat UI")
    sv.add_argument("--index", default=None)
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=7860)
    sv.add_argument("--model", default=None)
    sv.add_argument("--llm-url", default=None)
    sv.add_argument("--chroma-url", default=None)
    sv.add_argument("--auth", default=None, help="user:pass (or a file holding it)")
    sv.add_argument("--answer-mode", default=None, choices=ANSWER_MODES,
                    help="the answer mode new chats start with (default auto)")
    sv.add_argument("--mcp", action="store_true",
                    help="also serve the tools search, ask, similar, bibtex and facets to MCP "
                    "clients (Claude Desktop, Cursor, VS Code) at /gradio_api/mcp/; --auth "
                    "applies to them too (HTTP Basic)")

    ev = sub.add_parser("eval", help="retrieval metrics on a query file (--answers: the whole "
                        "answer path)")
    ev.add_argument("queries")
    ev.add_argument("--index", default=None)
    ev.add_argument("--json", action="store_true")
    ev.add_argument("--answers", action="store_true",
                    help="run the real answer path (model, mode) and score the answers; the "
                    "other modes run in the same process as baselines")
    ev.add_argument("--checks", action="store_true",
                    help="the file holds questions with checks (tests/data/dev_conference.jsonl): "
                    "run the answer path and score them")
    ev.add_argument("--answer-mode", default=None, choices=ANSWER_MODES,
                    help="the mode scored with --answers (default: settings, i.e. auto)")
    ev.add_argument("--model", default=None, help="GGUF file (default: bundled SmolLM2-135M)")
    ev.add_argument("--llm-url", default=None, help="OpenAI-compatible server …/v1")
    ev.add_argument("--baselines", default=None,
                    help="with --answers: comma-separated modes run as baselines (default: all "
                    "other modes; 'none' for none)")

    mp = sub.add_parser("map", help="write the conference map, the rating histogram and the "
                        "per-area table as one HTML file that opens offline")
    mp.add_argument("--index", default=None)
    mp.add_argument("--out", required=True, metavar="FILE.html", help="the HTML file to write "
                    "(replaced if it exists)")
    mp.add_argument("--color", default="area", choices=["area", "decision"],
                    help="colour the papers by primary area (default) or by decision")

    fe = sub.add_parser(
        "fetch", help="download a public paper list into JSONL (the only command that uses the "
        "network)", description="Download a public paper list into the project's JSONL "
        "(shared/data/README.md's schema, which 'paperchat index' reads). This is the only "
        "paperchat command that uses the network, and only the URL it is given: OpenReview's "
        "API v2 (default https://api2.openreview.net) or Paper Copilot's lists (default "
        "raw.githubusercontent.com/papercopilot/paperlists). Retries 429 and 5xx with backoff "
        "(Retry-After honoured); an interrupted run resumes where it stopped when run again.")
    fe.add_argument("source", help="openreview:VENUE_ID (e.g. openreview:ICLR.cc/2026/"
                    "Conference: its accepted papers) or papercopilot:CONF/FILE (e.g. "
                    "papercopilot:iclr/iclr2018, with reviewer ratings)")
    fe.add_argument("--all", action="store_true", dest="all_submissions",
                    help="openreview: every submission (also rejected and withdrawn ones)")
    fe.add_argument("--api", default=None, metavar="URL",
                    help="openreview: the API to read (default https://api2.openreview.net)")
    fe.add_argument("--base", default=None, metavar="URL",
                    help="papercopilot: the lists' base URL (default raw.githubusercontent.com/"
                    "papercopilot/paperlists/main)")
    fe.add_argument("--out", default=None, metavar="FILE.jsonl",
                    help="where to write the list (default $PAPERCHAT_HOME/lists/<source>.jsonl)")
    fe.add_argument("--index", default=None, metavar="NAME",
                    help="then build or update index NAME from it (as paperchat index)")
    fe.add_argument("--page-size", type=int, default=None, metavar="N",
                    help="openreview: notes per request, 1..1000 (default 1000)")
    fe.add_argument("--retries", type=int, default=None, metavar="N",
                    help="tries per request on 429/5xx/dropped connections (default 8, "
                    "openreview-py's own)")
    fe.add_argument("--quiet", action="store_true", help="no progress bars, only the summary")

    bn = sub.add_parser("bench", help="benchmarks that print figures")
    bn.add_argument("what", choices=["index", "query", "answer", "layout"])
    bn.add_argument("--json", action="store_true")
    bn.add_argument("--index", default=None)
    bn.add_argument("--papers", type=int, default=None, metavar="N",
                    help="bench index: papers in the sample (default 500)")
    bn.add_argument("--rounds", type=int, default=None, metavar="R",
                    help="bench index: interleaved rounds (default 4)")
    return p


def cmd_index(args) -> int:
    from index.build import build_index, delete_index
    from rag.backends.embedder import make_embedder
    from rag.understand.names import write_names

    settings = _settings(args)
    name = args.name or settings.index
    if args.rebuild:
        delete_index(settings, name)
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr))
    summary = build_index(args.path, settings=settings, embedder=make_embedder(settings), name=name,
                          fmt=args.fmt, prune=args.prune, progress=not args.quiet, log=log,
                          names=write_names, fill_nice=settings.fill_nice)
    if args.quiet and summary.problems:
        print(f"{len(summary.problems)} problem records (run without --quiet to list them)",
              file=sys.stderr)
    print(summary.line())
    log(summary.stages_line())
    return 0


def cmd_fetch(args) -> int:
    """``paperchat fetch``: :func:`index.fetch.fetch` into ``--out`` (default
    ``$PAPERCHAT_HOME/lists/<source slug>.jsonl``), then, with ``--index``, the same build as
    ``paperchat index FILE --name NAME``. The summary line goes to stdout, progress to stderr."""
    from index.fetch import PAGE_SIZE, fetch, parse_source
    from rag.settings import Settings

    source = parse_source(args.source, all_submissions=args.all_submissions, api=args.api,
                          base=args.base)
    settings = Settings()
    out = Path(args.out).expanduser() if args.out else \
        Path(settings.home) / "lists" / f"{source.slug()}.jsonl"
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    result = fetch(source, out, progress=not args.quiet, page_size=args.page_size or PAGE_SIZE,
                   retries=args.retries, log=log)
    print(result.line())
    for problem in result.skipped:
        log(f"  skipped {problem}")
    if result.n_skipped > len(result.skipped):
        log(f"  ... and {result.n_skipped - len(result.skipped)} more")
    if args.index:
        from index.build import build_index
        from rag.backends.embedder import make_embedder
        from rag.understand.names import write_names

        settings = _settings(argparse.Namespace(index=args.index))
        summary = build_index(out, settings=settings, embedder=make_embedder(settings),
                              name=args.index, fmt="jsonl", progress=not args.quiet,
                              log=(lambda m: None) if args.quiet else log, names=write_names,
                              fill_nice=settings.fill_nice)
        print(summary.line())
        if not args.quiet:
            log(summary.stages_line())
    return 0


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
    from rag.retrieve.coverage import annotate, coverage_line, progress_of
    from rag.compose.rendering import answer_json

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
    from rag.understand import history as hist
    from rag.chat.answer import check_question
    from rag.filters import Filters
    from rag.chat.pipeline import Pipeline, require_index

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
    from rag.understand import history as hist
    from rag.chat.answer import check_question
    from rag.errors import PaperchatError
    from rag.conference.export import bibtex
    from rag.chat.pipeline import Pipeline

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


def cmd_eval(args) -> int:
    from rag.evaluate.retrieval import format_report, run_eval

    settings = _settings(args)
    if args.checks:
        from rag.evaluate.checks import format_checks, run_checks

        report = run_checks(args.queries, settings)
        print(json.dumps(report, indent=2, ensure_ascii=False) if args.json
              else format_checks(report))
        return 0
    if args.answers:
        from rag.evaluate.answers import format_answer_report, run_answer_eval

        baselines = None if args.baselines is None else \
            [m for m in args.baselines.split(",") if m and m != "none"]
        report = run_answer_eval(args.queries, settings, baselines=baselines,
                                 log=lambda m: print(m, file=sys.stderr))
        print(json.dumps(report, indent=2, ensure_ascii=False) if args.json
              else format_answer_report(report))
        return 0
    report = run_eval(args.queries, settings)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def cmd_map(args) -> int:
    """``paperchat map``: the output path is checked first (one error line, before any work),
    then the index (the default one is built on first use), its layout
    (:func:`index.layout.ensure_layout`: loaded, or computed and saved) and the page
    (:func:`rag.conference.mapfigure.conference_html`), written to a temporary file beside ``--out`` and
    renamed over it."""
    import os
    import tempfile

    from rag.errors import PaperchatError

    out = Path(args.out).expanduser()
    folder = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise PaperchatError(f"--out {args.out}: is a directory; give a file name such as "
                             f"{out / 'map.html'}")
    if not folder.is_dir():
        raise PaperchatError(f"--out {args.out}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PaperchatError(f"--out {args.out}: cannot write in {folder} (permission denied)")

    from index.reader import index_exists, open_catalog
    from rag.chat.pipeline import ensure_index

    settings = _settings(args)
    name = settings.index
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    if not index_exists(settings, name):  # the default index is built on first use
        from rag.backends.embedder import make_embedder

        ensure_index(settings, make_embedder(settings), name, log=log)
    try:
        from index.layout import ensure_layout
    except ImportError:  # pragma: no cover - a tree without the layout module
        raise PaperchatError("this paperchat has no map layout module (index.layout)") from None
    from rag.conference import mapfigure

    papers = {p.id: p for p, _ in open_catalog(settings.index_dir(name)).papers()}
    layout = ensure_layout(settings, name, log=log)
    page = mapfigure.conference_html(layout, papers, title=mapfigure.conference_title(papers,
                                                                                      name),
                                     color_by=args.color)
    fd, tmp = tempfile.mkstemp(prefix=".paperchat-map-", suffix=".html", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    on_map = sum(1 for pid in layout.ids if pid in papers)
    print(f"wrote {out} ({len(page.encode()) / 1e6:.1f} MB): {on_map} papers of index {name!r}, "
          f"coloured by {args.color}, layout {layout.method}; it opens offline")
    return 0


def cmd_bench(args) -> int:
    from rag.evaluate import bench
    from rag.errors import PaperchatError

    settings = _settings(args)
    if args.what != "index" and (args.papers is not None or args.rounds is not None):
        raise PaperchatError("--papers and --rounds apply to 'paperchat bench index' only")
    options = {}
    if args.papers is not None:
        if args.papers < 1:
            raise PaperchatError(f"--papers must be at least 1, not {args.papers}")
        options["n_papers"] = args.papers
    if args.rounds is not None:
        if args.rounds < 1:
            raise PaperchatError(f"--rounds must be at least 1, not {args.rounds}")
        options["rounds"] = args.rounds
    result = getattr(bench, f"bench_{args.what}")(settings, **options)
    print(json.dumps(result, indent=2) if args.json else bench.format_result(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    from rag import offline
    from rag.errors import PaperchatError

    offline.enforce()
    args = _parser().parse_args(argv)
    try:
        return {"index": cmd_index, "ask": cmd_ask, "chat": cmd_chat, "serve": cmd_serve,
                "eval": cmd_eval,
                "bench": cmd_bench, "map": cmd_map, "fetch": cmd_fetch}[args.command](args)
    except PaperchatError as exc:
        print(f"paperchat: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        from pydantic import ValidationError

        if not isinstance(exc, ValidationError):
            raise
        bad = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'settings'}: {e['msg']}"
                        for e in exc.errors())
        print(f"paperchat: error: bad setting (option or PAPERCHAT_* variable): {bad}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("paperchat: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # unwritable or full PAPERCHAT_HOME, unreadable file
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"paperchat: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except Exception as exc:
        import sqlite3

        if isinstance(exc, sqlite3.Error):  # e.g. "database or disk is full"
            print(f"paperchat: error: index catalog: {exc}", file=sys.stderr)
            return 2
        raise
