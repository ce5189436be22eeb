"""The ``paperchat`` command (also ``python -m rag``): index, ask, serve, eval, map, bench,
fetch (the only one that uses the network).

Expected failures (:class:`rag.errors.PaperchatError`) print one line ``paperchat: error: ...``
and exit 2; no traceback. Heavy libraries are imported inside the commands, so ``--help`` is fast.
This module holds :func:`main` (dispatch and the error lines); the parser is in
:mod:`rag.cli.parser`, the commands in :mod:`rag.cli.indexing` (index, fetch), :mod:`rag.cli.chat`
(ask, chat, serve) and :mod:`rag.cli.reports` (eval, map, bench).
"""

from __future__ import annotations

import sys

from rag.cli.chat import cmd_ask, cmd_chat, cmd_serve
from rag.cli.indexing import cmd_fetch, cmd_index
from rag.cli.parser import _parser
from rag.cli.reports import cmd_bench, cmd_eval, cmd_map


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
