"""The commands that measure and report: ``paperchat eval`` (retrieval and answer metrics on a
query file), ``paperchat map`` (the conference map as one offline HTML file) and ``paperchat
bench`` (benchmarks that print figures)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rag.cli.parser import _settings


def cmd_eval(args) -> int:
    from rag.evaluate.retrieval import format_report, run_eval

    settings = _settings(args)
    if args.checks:
        from rag.evaluate.checks import format_checks, run_checks

        report = run_checks(args.queries, settings)
        print(json.dumps(report, indent=2, ensure_ascii=False) if args.json
              else format_checks(report))
        return 0
    if getattr(args, "topics", False):
        from rag.evaluate.topics import format_topics, run_topic_eval

        report = run_topic_eval(args.queries, settings, log=lambda m: print(m, file=sys.stderr),
                                late_interaction=getattr(args, "late_interaction", False))
        print(json.dumps(report, indent=2, ensure_ascii=False) if args.json
              else format_topics(report))
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


#: The module of each ``paperchat bench`` benchmark (imported when that one runs).
BENCH_MODULES = {"index": "bench_index", "layout": "bench_layout", "query": "bench_query",
                 "answer": "bench_query", "survey": "bench_query", "trend": "bench_query"}


def cmd_bench(args) -> int:
    import importlib

    from rag.errors import PaperchatError
    from rag.evaluate import bench

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
    module = importlib.import_module(f"rag.evaluate.{BENCH_MODULES[args.what]}")
    result = getattr(module, f"bench_{args.what}")(settings, **options)
    print(json.dumps(result, indent=2) if args.json else bench.format_result(result))
    return 0
