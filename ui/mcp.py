"""paperchat as an MCP server: ``paperchat serve --mcp`` (Gradio's MCP support, ``gradio[mcp]``).

Five tools, each a typed function whose docstring Gradio turns into the tool's description and
its parameters' descriptions (``Args:`` lines, one per parameter); each returns JSON text (the
``Returns:`` line gives its shape), BibTeX for ``bibtex``:

``search``   question + filters -> papers (id, title, decision, area, rating, score, url)
``ask``      question -> the answer text with ``[n]`` markers, the cited papers, their BibTeX
``similar``  paper id -> the papers nearest to it (``Retriever.similar``)
``bibtex``   paper ids -> BibTeX entries (or RIS)
``facets``   counts of the index's papers by status, decision and primary area

They are added to the chat UI's Blocks as API endpoints (``gr.api``, ``mcp_<tool>``) that skip
the queue, so a tool call runs in process (Gradio's fast path: no HTTP loopback, which ``--auth``
would block); the UI's own endpoints (``/chat``, ``/ask``, ...) are kept out of the MCP tool
list (:func:`_keep_out_of_mcp`) and stay callable with gradio_client, as the README says.

The MCP endpoint is ``http://HOST:PORT/gradio_api/mcp/`` (streamable HTTP; ``.../mcp/sse`` for
SSE clients). Gradio mounts it outside its login, so with ``--auth`` :class:`McpAuth` asks every
MCP request for HTTP Basic credentials (``Authorization: Basic base64(user:pass)``), the same
pair as the UI's login; without them it answers 401.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import html
import warnings
from collections import Counter
from typing import Any

#: The tools, in the order MCP clients list them.
TOOLS = ("search", "ask", "similar", "bibtex", "facets")
#: The path Gradio mounts its MCP server on.
MCP_PATH = "/gradio_api/mcp"
#: Largest ``k`` a tool accepts (papers per call).
MAX_K = 50
#: Largest number of paper ids one ``bibtex`` call takes.
MAX_IDS = 200


def paper_json(paper, *, score: float | None = None, rank: int | None = None,
               evidence: list[str] | None = None) -> dict[str, Any]:
    """One paper as the tools return it: ``id``, ``title``, ``status`` (as the list says, e.g.
    ``Accept (Oral)``), ``decision`` (its tier: oral, spotlight, poster, accept, reject,
    withdrawn, workshop or ""), ``primary_area``, ``keywords``, ``venue``, ``year``, ``url``,
    ``rating`` (None or ``{"mean", "n", "min", "max"}`` on the conference's scale, ICLR 0-10),
    and when given ``rank`` (1 = best), ``score`` (the fused retrieval score, higher is better,
    comparable within one call only) and ``evidence`` (the abstract's best-matching
    sentences)."""
    from rag.types import status_tier

    out: dict[str, Any] = {}
    if rank is not None:
        out["rank"] = rank
    out.update(id=paper.id, title=paper.title, status=paper.status,
               decision=status_tier(paper.status), primary_area=paper.primary_area,
               keywords=list(paper.keywords), venue=paper.venue, year=paper.year,
               url=paper.openreview_url, rating=paper.rating)
    if score is not None:
        out["score"] = round(float(score), 4)
    if evidence is not None:
        out["evidence"] = list(evidence)
    return out


def _filters(status: str = "", primary_area: str = "", min_rating: float = 0.0,
             filters: list[str] | None = None):
    """:class:`rag.filters.Filters` from the tools' filter parameters.

    Raises:
        rag.filters.FilterError: a filter string it cannot read (the message lists the fields).
    """
    from rag.filters import Filters

    items = [str(f) for f in (filters or [])]
    if status and status.strip().lower() not in ("any", ""):
        items.append(f"status={status.strip()}")
    if primary_area and primary_area.strip().lower() not in ("any", ""):
        items.append(f"primary_area={primary_area.strip()}")
    if min_rating:
        items.append(f"rating>={min_rating:g}")
    return Filters.parse(items)


def as_json(value: Any) -> str:
    """What a tool returns: JSON text (Gradio's MCP server sends a tool's value as text, and
    would write a dict as a Python repr)."""
    import json

    return json.dumps(value, ensure_ascii=False)


def _k(k: int) -> int:
    from rag.errors import PaperchatError

    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise PaperchatError(f"k must be a whole number from 1 to {MAX_K}, not {k!r}")
    return k


def make_tools(app) -> dict[str, Any]:
    """The five tool functions bound to ``app`` (a :class:`ui.app.ChatApp`), by name. Each
    reads the index open now (``app.pipeline.current_retriever()``, so a re-indexed index is
    picked up) and raises ``gr.Error`` with a message that says what to do on bad input."""
    import gradio as gr

    from rag.errors import PaperchatError

    def fail(exc: Exception) -> gr.Error:
        return gr.Error(str(exc), title="paperchat")

    def retriever():
        return app.pipeline.current_retriever()

    def search(question: str, status: str = "any", primary_area: str = "any",
               min_rating: float = 0.0, filters: list[str] | None = None,
               k: int = 10) -> str:
        """Search the conference's papers (titles and abstracts) for a question or a description of a paper; hybrid dense + BM25 retrieval, best first.

        Args:
            question: what to look for, in English: a topic, a method, or a description of the paper you have in mind.
            status: decision filter: any, accepted, oral, spotlight, poster, rejected, withdrawn, or an exact status such as "Accept (Oral)".
            primary_area: OpenReview primary area to keep (exact name as the facets tool lists it), or any.
            min_rating: keep papers whose mean reviewer rating is at least this (conference scale, ICLR 0-10); 0 for no rating filter.
            filters: more filters as FIELD=VALUE strings, as `paperchat ask --filter` reads them: keyword=..., year=2026, venue=..., author=..., rating>=6.
            k: how many papers to return, 1-50.
        Returns:
            JSON list of papers, best first: rank, id (OpenReview forum id), title, status, decision, primary_area, keywords, venue, year, url, rating (null or mean/n/min/max), score (higher is better), evidence (best-matching abstract sentences).
        """
        from rag.chat.answer import check_question

        try:
            question = check_question(question, app.settings.max_question_chars)
            found = retriever().search(question, k=_k(k), filters=_filters(
                status, primary_area, min_rating, filters))
        except PaperchatError as exc:
            raise fail(exc) from None
        return as_json([paper_json(h.paper, score=h.score, rank=n,
                                   evidence=list(h.evidence)[:2])
                        for n, h in enumerate(found.hits, start=1)])

    def ask(question: str, status: str = "any", primary_area: str = "any") -> str:
        """Answer a question about the conference's papers from their abstracts, citing them as [n]; says so when no paper answers it (refused).

        Args:
            question: the question, in English, e.g. "Which papers fine-tune an LLM to write heuristics for a solver?"
            status: decision filter: any, accepted, oral, spotlight or poster.
            primary_area: OpenReview primary area to keep, or any.
        Returns:
            JSON object: answer (text with [n] markers), refused (true when no paper answers it), citations (n, id, title, url, status, decision, rating, supported), filters_applied, bibtex (entries of the cited papers), mode.
        """
        try:
            out = app.ask(question, status, primary_area)
        except gr.Error as exc:  # the UI escapes its messages for HTML; an MCP client reads text
            raise gr.Error(html.unescape(str(exc.message)), title="paperchat") from None
        papers = retriever().papers
        citations = []
        for c in out["citations"]:
            paper = papers.get(c["id"])
            item = {"n": c["n"]} | (paper_json(paper) if paper else {"id": c["id"],
                                                                      "title": c["title"],
                                                                      "url": c["url"]})
            item["supported"] = c["supported"]
            citations.append(item)
        from rag.conference.export import bibtex as to_bibtex

        cited = [papers[c["id"]] for c in out["citations"] if c["id"] in papers]
        return as_json({"answer": out["answer"], "refused": out["refused"],
                        "citations": citations, "filters_applied": out["filters_applied"],
                        "bibtex": to_bibtex(cited), "mode": out["mode"]})

    def similar(paper_id: str, k: int = 10, status: str = "any",
                primary_area: str = "any") -> str:
        """Papers most similar to one paper of the index (nearest by their paper-level embedding vectors), the paper itself left out.

        Args:
            paper_id: the paper's id (OpenReview forum id, as search returns it), e.g. aITKXFeivk.
            k: how many papers to return, 1-50.
            status: decision filter for the similar papers: any, accepted, oral, spotlight, poster, rejected, withdrawn.
            primary_area: OpenReview primary area the similar papers must be in, or any.
        Returns:
            JSON list of papers, most similar first: rank, id, title, status, decision, primary_area, keywords, venue, year, url, rating, score (similarity, higher is more similar).
        """
        r = retriever()
        try:
            pid = (paper_id or "").strip()
            if pid not in r.papers:
                raise PaperchatError(f"no paper with id {paper_id!r} in index {r.name!r}; "
                                     "search for it first to get its id")
            hits = r.similar(pid, k=_k(k), filters=_filters(status, primary_area) or None)
        except PaperchatError as exc:
            raise fail(exc) from None
        return as_json([paper_json(h.paper, score=h.score, rank=n)
                        for n, h in enumerate(hits, start=1)])

    def bibtex(paper_ids: list[str], format: str = "bibtex") -> str:
        """BibTeX entries (or RIS records) for papers of the index, ready to import into Zotero, BibDesk or a .bib file: entries only, stable keys, @inproceedings with booktitle and year when the venue is known.

        Args:
            paper_ids: the papers' ids (OpenReview forum ids, as search returns them), 1-200; repeats are written once.
            format: bibtex (default) or ris.
        Returns:
            the entries as one text, in the order of paper_ids.
        """
        from rag.conference.export import bibtex as to_bibtex
        from rag.conference.export import ris

        r = retriever()
        try:
            ids = [str(i).strip() for i in (paper_ids or []) if str(i).strip()]
            if not ids:
                raise PaperchatError("paper_ids is empty: give the ids search returned")
            if len(ids) > MAX_IDS:
                raise PaperchatError(f"at most {MAX_IDS} paper ids per call, not {len(ids)}")
            missing = [i for i in ids if i not in r.papers]
            if missing:
                raise PaperchatError(f"not in index {r.name!r}: {', '.join(missing[:10])}; use "
                                     "the ids search returns")
            fmt = (format or "bibtex").strip().lower()
            if fmt not in ("bibtex", "ris"):
                raise PaperchatError(f"format must be bibtex or ris, not {format!r}")
        except PaperchatError as exc:
            raise fail(exc) from None
        papers = [r.papers[i] for i in ids]
        return to_bibtex(papers) if fmt == "bibtex" else ris(papers)

    def facets(status: str = "any", primary_area: str = "any",
               filters: list[str] | None = None) -> str:
        """Counts of the index's papers by status, by decision and by primary area, from the catalog (exact, no model involved).

        Args:
            status: count only papers with this decision: any, accepted, oral, spotlight, poster, rejected, withdrawn.
            primary_area: count only papers in this primary area, or any.
            filters: more filters as FIELD=VALUE strings (keyword=..., year=..., author=..., rating>=6).
        Returns:
            JSON object: index (name), papers (how many match), by_status (exact status strings), by_decision (oral, spotlight, poster, accept, reject, withdrawn, workshop), by_primary_area, by_year (papers per year, years ascending, as strings), by_venue, rated (papers with reviewer ratings), filters_applied; each other count most common first.
        """
        r = retriever()
        try:
            chosen = _filters(status, primary_area, 0.0, filters)
        except PaperchatError as exc:
            raise fail(exc) from None
        papers = [p for p in r.papers.values() if not chosen or chosen.matches(p)]
        from rag.types import status_tier

        def counts(values) -> dict[str, int]:
            return dict(Counter(values).most_common())

        return as_json({
            "index": r.name, "papers": len(papers),
            "by_status": counts(p.status or "no status" for p in papers),
            "by_decision": counts(status_tier(p.status) or "unknown" for p in papers),
            "by_primary_area": counts(p.primary_area or "no area" for p in papers),
            "by_year": {str(y): n for y, n in sorted(Counter(
                p.year for p in papers if p.year).items())},
            "by_venue": counts(p.venue or "no venue" for p in papers),
            "rated": sum(1 for p in papers if p.ratings), "filters_applied": chosen.as_strings()})

    tools = {"search": search, "ask": ask, "similar": similar, "bibtex": bibtex,
             "facets": facets}
    assert tuple(tools) == TOOLS
    return tools


def add_tools(demo) -> list[str]:
    """Add the MCP tools to ``demo`` (a Blocks from :func:`ui.app.build_app`, which keeps its
    :class:`ui.app.ChatApp` as ``demo.paperchat``) and keep the UI's own endpoints out of the
    MCP tool list. Returns the tools' API names (``mcp_search``, ...)."""
    import gradio as gr

    for block_fn in demo.fns.values():
        if block_fn.api_visibility == "public" and block_fn.fn is not None:
            _keep_out_of_mcp(block_fn)
    # Gradio warns about tools with gr.State inputs: those are the UI's own, kept out of MCP
    warnings.filterwarnings("ignore", message="This MCP server includes a tool that has a "
                            "gr.State input", category=UserWarning)
    names = []
    with demo:
        for name, fn in make_tools(demo.paperchat).items():
            gr.api(fn, api_name=f"mcp_{name}", queue=False)
            names.append(f"mcp_{name}")
    return names


def _keep_out_of_mcp(block_fn) -> None:
    """Leave one of the chat UI's public endpoints (``/chat``, ``/ask``, ...) out of the MCP
    tool list while it stays in the API page and callable with gradio_client as before.

    Gradio 6's MCP server lists every public endpoint as a tool named after its function, and
    skips a function whose ``_mcp_type`` (set by ``gr.mcp.tool``/``resource``/``prompt``) is not
    ``"tool"``. So the function gets ``_mcp_type = "none"``, and ``ui_`` before its name, so that
    the UI's own ``ask`` does not take the tool name ``ask`` (ours would become ``ask_1``).
    ``api_visibility="undocumented"`` would hide it too, but gradio_client then no longer knows
    its parameters' defaults and every call must pass all of them. tests/test_mcp.py checks both
    sides (five tools; ``/ask`` answers a one-argument call)."""
    fn = block_fn.fn
    fn._mcp_type = "none"
    if not fn.__name__.startswith("ui_"):
        fn.__name__ = f"ui_{fn.__name__}"


class McpAuth:
    """ASGI middleware: requests under :data:`MCP_PATH` need HTTP Basic credentials equal to
    ``credentials`` (``(user, password)``), compared in constant time; everything else passes
    (the UI and its API keep Gradio's own login). 401 with ``WWW-Authenticate: Basic`` when
    missing or wrong."""

    def __init__(self, app, credentials: tuple[str, str]):
        self.app = app
        user, password = credentials
        self._expected = base64.b64encode(f"{user}:{password}".encode()).decode()

    def _ok(self, header: str) -> bool:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            base64.b64decode(token.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(token.strip().encode(), self._expected.encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and (scope.get("path") or "").startswith(MCP_PATH):
            headers = {k.lower(): v for k, v in scope.get("headers") or []}
            header = headers.get(b"authorization", b"").decode("latin-1")
            if not self._ok(header):
                body = (b"paperchat's MCP server needs the --auth credentials: send "
                        b"'Authorization: Basic base64(user:pass)'\n")
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"www-authenticate", b'Basic realm="paperchat MCP"'),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def app_kwargs(credentials: tuple[str, str] | None) -> dict[str, Any]:
    """FastAPI arguments for ``launch(app_kwargs=...)``: :class:`McpAuth` when ``credentials``
    are set (``--auth``), nothing otherwise."""
    if credentials is None:
        return {}
    from starlette.middleware import Middleware

    return {"middleware": [Middleware(McpAuth, credentials=credentials)]}


def client_config(url: str, credentials: tuple[str, str] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` entry an MCP client (Claude Desktop through ``mcp-remote``, Cursor,
    VS Code) needs for ``url`` (the ``.../gradio_api/mcp/`` endpoint), with the Basic header when
    ``credentials`` are set. Printed by ``paperchat serve --mcp``; the README shows it."""
    args = ["mcp-remote", url]
    if credentials is not None:
        token = base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()
        args += ["--header", f"Authorization: Basic {token}"]
    return {"mcpServers": {"paperchat": {"command": "npx", "args": args}}}


def serve_note(host: str, port: int, with_auth: bool) -> str:
    """The line ``paperchat serve --mcp`` prints: the endpoint, the tools and the client
    configuration (without the password: with ``--auth`` it says which header to add)."""
    import json

    shown = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
    url = f"http://{shown}:{port}{MCP_PATH}/"
    auth = ("; MCP requests need 'Authorization: Basic <base64 of the --auth USER:PASS>' "
            "(mcp-remote: --header)") if with_auth else ""
    return (f"paperchat: MCP server at {url} (tools: {', '.join(TOOLS)}){auth}; client "
            f"configuration: {json.dumps(client_config(url))}")
