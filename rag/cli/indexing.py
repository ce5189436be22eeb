"""``paperchat index`` and ``paperchat fetch``: build or update an index from a paper list, and
download a public paper list into JSONL (the only command that uses the network), then index it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag.cli.parser import _settings


def cmd_index(args) -> int:
    from index.build import build_index, delete_index
    from rag.backends.embedder import make_embedder
    from rag.understand.names import write_names

    settings = _settings(args)
    name = args.name or settings.index
    if args.rebuild:
        delete_index(settings, name)
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr))
    from index.sources import load_lists

    source = load_lists(args.path, args.fmt, getattr(args, "venue", None),
                        getattr(args, "year", None))
    summary = build_index(source, settings=settings, embedder=make_embedder(settings), name=name,
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
    from index.fetch import PAGE_SIZE, fetch
    from index.fetch_source import parse_source
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
