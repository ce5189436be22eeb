"""The ``paperchat`` command's argument parser: every command, option and help text, and the
:class:`rag.settings.Settings` the options select (``--index``, ``--model``, ``--k``, ...).
Nothing heavy is imported here, so ``--help`` is fast."""

from __future__ import annotations

import argparse
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
    ix.add_argument("path", nargs="+", help="paper list(s): JSONL, Paper Copilot JSON, OpenReview "
                    "v2 JSON or CSV; several lists go into one index, each paper keeping its "
                    "venue and year")
    ix.add_argument("--venue", default=None, help="the venue of the papers whose list names none "
                    "(by a field or its file name), e.g. 'ICLR 2018'")
    ix.add_argument("--year", type=int, default=None, help="the year of the papers whose list "
                    "names none")
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
    ev.add_argument("--topics", action="store_true",
                    help="the file holds topics with their papers read by hand "
                    "(tests/data/topics/): survey, terse and count questions through the whole "
                    "answer path, and each retrieval channel alone")
    ev.add_argument("--late-interaction", action="store_true",
                    help="with --topics: also rerank each survey's fused 50 by MaxSim over the "
                    "bundled encoder's token vectors (alone and fused with the fused order)")
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
    bn.add_argument("what", choices=["index", "query", "answer", "layout", "survey", "trend"])
    bn.add_argument("--json", action="store_true")
    bn.add_argument("--index", default=None)
    bn.add_argument("--papers", type=int, default=None, metavar="N",
                    help="bench index: papers in the sample (default 500)")
    bn.add_argument("--rounds", type=int, default=None, metavar="R",
                    help="bench index: interleaved rounds (default 4)")
    return p
