"""`paperchat serve --mcp`: the app really served on loopback (fake embedder, scripted model),
driven by the official MCP Python SDK client over streamable HTTP: initialize, list_tools, a call
of every tool, errors, and --auth on the MCP endpoint."""

from __future__ import annotations

import asyncio
import base64
import json
import socket

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP tests need the mcp package (pip install "
                          "'gradio[mcp]')")
bibtexparser = pytest.importorskip("bibtexparser")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamablehttp_client  # noqa: E402

from tests.conftest import ScriptedGenerator  # noqa: E402

VRP = "aITKXFeivk"  # the seed's vehicle-routing paper
#: A description of it, not its title: what a user of an assistant would type.
VRP_DESCRIPTION = ("a language model trained with reinforcement learning to write crossover "
                   "operators for a genetic search solver of vehicle routing problems")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(pipeline, auth=None):
    from ui import app as ui_app
    from ui.mcp import add_tools

    demo = ui_app.build_app(pipeline)
    add_tools(demo)
    _, url, _ = ui_app.launch(demo, port=free_port(), block=False, quiet=True, auth=auth,
                              mcp=True)
    return demo, url.rstrip("/") + "/gradio_api/mcp/"


@pytest.fixture
def served(fake_index, fake_embedder):
    from rag.chat.pipeline import Pipeline

    settings, retriever = fake_index
    demo, url = serve(Pipeline(settings, embedder=fake_embedder, generator=ScriptedGenerator(),
                               retriever=retriever))
    yield url, retriever
    demo.close()


def session_run(url: str, work, headers: dict | None = None):
    """Open an MCP session to ``url``, run ``await work(session)``, return its result."""

    async def main():
        async with streamablehttp_client(url, headers=headers) as (read, write, _):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                return init, await work(session)

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


def payload(result):
    """A tool result's JSON (Gradio sends it as one text content)."""
    assert not result.isError, result.content
    (item,) = result.content
    return json.loads(item.text)


def test_initialize_and_list_tools(served):
    url, _ = served

    async def work(session):
        return (await session.list_tools()).tools

    init, tools = session_run(url, work)
    assert init.serverInfo.name == "paperchat"
    by_name = {t.name: t for t in tools}
    assert sorted(by_name) == sorted(["search", "ask", "similar", "bibtex", "facets"])
    search = by_name["search"]
    assert search.description.startswith("Search the conference's papers")
    props = search.inputSchema["properties"]
    assert props["question"]["type"] == "string" and props["k"]["type"] == "integer"
    assert "decision filter" in props["status"]["description"]
    assert search.inputSchema["required"] == ["question"]
    assert by_name["bibtex"].inputSchema["properties"]["paper_ids"]["type"] == "array"
    for tool in tools:  # every parameter is described
        assert tool.description and all(p.get("description") for p in
                                        tool.inputSchema["properties"].values()), tool.name


def test_every_tool_answers(served):
    url, retriever = served

    async def work(session):
        calls = {
            "search": await session.call_tool("search", {"question": VRP_DESCRIPTION, "k": 5}),
            "ask": await session.call_tool("ask", {"question": "Which paper fine-tunes an LLM "
                                                   "to write crossover operators for a "
                                                   "vehicle-routing solver?"}),
            "bibtex": await session.call_tool("bibtex", {"paper_ids": [VRP, VRP]}),
            "ris": await session.call_tool("bibtex", {"paper_ids": [VRP], "format": "ris"}),
            "facets": await session.call_tool("facets", {}),
            "oral_facets": await session.call_tool("facets", {"status": "oral"}),
        }
        return calls

    _, calls = session_run(url, work)
    hits = payload(calls["search"])
    assert hits[0]["id"] == VRP and hits[0]["rank"] == 1
    assert [h["rank"] for h in hits] == [1, 2, 3, 4, 5]
    assert all(hits[i]["score"] >= hits[i + 1]["score"] for i in range(4))
    assert {"id", "title", "status", "decision", "primary_area", "rating", "score", "url",
            "evidence"} <= set(hits[0])
    assert hits[0]["decision"] in ("oral", "spotlight", "poster")

    answer = payload(calls["ask"])
    assert not answer["refused"] and "[1]" in answer["answer"]
    assert answer["citations"][0]["id"] == VRP and answer["citations"][0]["n"] == 1
    lib = bibtexparser.parse_string(answer["bibtex"])
    assert not lib.failed_blocks and lib.entries[0].fields_dict["url"].value.endswith(VRP)

    (bib,) = calls["bibtex"].content
    lib = bibtexparser.parse_string(bib.text)
    assert not lib.failed_blocks and len(lib.entries) == 1
    entry = lib.entries[0]
    assert entry.entry_type == "inproceedings"
    assert entry.fields_dict["booktitle"].value == "ICLR 2026"
    assert entry.fields_dict["year"].value == "2026"
    (ris,) = calls["ris"].content
    assert ris.text.startswith("TY  - CPAPER") and f"id={VRP}" in ris.text

    facets = payload(calls["facets"])
    assert facets["papers"] == len(retriever.papers) == 19
    assert sum(facets["by_status"].values()) == 19 == sum(facets["by_primary_area"].values())
    assert facets["by_year"] == {"2026": 19}  # the seed list is ICLR 2026's
    assert facets["by_venue"] == {"ICLR 2026": 19}
    expected = sum(1 for p in retriever.papers.values() if "oral" in p.status.lower())
    assert payload(calls["oral_facets"])["papers"] == expected
    assert facets["by_decision"].get("oral", 0) == expected


def test_similar_papers_leave_the_paper_out(served):
    url, retriever = served
    expected = [h.paper.id for h in retriever.similar(VRP, k=5)]

    async def work(session):
        return (await session.call_tool("similar", {"paper_id": VRP, "k": 5}),
                await session.call_tool("similar", {"paper_id": VRP, "k": 18}),
                await session.call_tool("similar", {"paper_id": VRP, "k": 18,
                                                    "primary_area": "learning theory"}))

    _, (five, everything, theory) = session_run(url, work)
    papers = payload(five)
    assert [p["id"] for p in papers] == expected and len(papers) == 5
    assert [p["rank"] for p in papers] == [1, 2, 3, 4, 5]
    assert all(papers[i]["score"] >= papers[i + 1]["score"] for i in range(4))
    others = payload(everything)  # the other 18 papers of the seed, the paper itself left out
    assert len(others) == 18 and VRP not in {p["id"] for p in others}
    in_theory = payload(theory)
    wanted = {p.id for p in retriever.papers.values() if p.primary_area == "learning theory"}
    assert {p["id"] for p in in_theory} == wanted and wanted


#: (tool, arguments, what the error says); "" = not an error (the check is in the test).
BAD_INPUT = [
    ("bibtex", {"paper_ids": ["nope"]}, "not in index 'default': nope"),
    ("bibtex", {"paper_ids": []}, "paper_ids is empty"),
    ("bibtex", {"paper_ids": [VRP], "format": "csl"}, "format must be bibtex or ris"),
    ("search", {"question": "   "}, "empty"),
    ("search", {"question": "x", "k": 500}, "k must be a whole number from 1 to 50"),
    ("search", {"question": "x", "filters": ["colour=red"]}, "unknown filter field"),
    ("search", {"question": "x", "min_rating": 5, "filters": ["rating~6"]}, "needs a comparison"),
    ("ask", {"question": "x", "status": "maybe"}, "unknown status filter 'maybe'"),
    ("similar", {"paper_id": "nope"}, "no paper with id 'nope'"),
]


def test_bad_input_is_an_error_result_with_a_message(served):
    url, _ = served

    async def work(session):
        results = [await session.call_tool(tool, args) for tool, args, _ in BAD_INPUT]
        # an exact status that no paper has is a count of zero, not an error
        results.append(await session.call_tool("facets", {"status": "Accept (Nothing)"}))
        return results

    _, results = session_run(url, work)
    for (tool, args, message), result in zip(BAD_INPUT, results):
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert result.isError and message in text, (tool, args, text)
    assert payload(results[-1])["papers"] == 0


def test_auth_protects_the_mcp_endpoint(fake_index, fake_embedder):
    import httpx

    from rag.chat.pipeline import Pipeline

    settings, retriever = fake_index
    demo, url = serve(Pipeline(settings, embedder=fake_embedder, generator=ScriptedGenerator(),
                               retriever=retriever), auth=("ann", "s3cret"))
    try:
        bare = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream"})
        assert bare.status_code == 401 and "Basic" in bare.headers["www-authenticate"]
        wrong = base64.b64encode(b"ann:wrong").decode()
        assert httpx.post(url, json={}, headers={"Authorization": f"Basic {wrong}"}) \
            .status_code == 401
        good = {"Authorization": "Basic " + base64.b64encode(b"ann:s3cret").decode()}

        async def work(session):
            return (await session.list_tools()).tools

        _, tools = session_run(url, work, headers=good)
        assert len(tools) == 5
        # the UI itself still asks for Gradio's login
        assert httpx.get(url.replace("/gradio_api/mcp/", "/config")).status_code == 401
    finally:
        demo.close()


def test_the_ui_endpoints_stay_callable_but_are_not_tools(served):
    from gradio_client import Client

    url, _ = served
    client = Client(url.replace("/gradio_api/mcp/", "/"), verbose=False, download_files=False)
    out = client.predict("Which paper fine-tunes an LLM to write crossover operators for a "
                         "vehicle-routing solver?", api_name="/ask")
    assert out["citations"][0]["id"] == VRP


def test_client_config_and_serve_note():
    from ui.mcp import client_config, serve_note

    cfg = client_config("http://127.0.0.1:7860/gradio_api/mcp/", ("u", "p"))
    args = cfg["mcpServers"]["paperchat"]["args"]
    assert args[:2] == ["mcp-remote", "http://127.0.0.1:7860/gradio_api/mcp/"]
    assert args[2:] == ["--header", "Authorization: Basic " + base64.b64encode(b"u:p").decode()]
    note = serve_note("0.0.0.0", 7861, with_auth=True)
    assert "http://127.0.0.1:7861/gradio_api/mcp/" in note and "Basic" in note
    printed = json.loads(note.split("client configuration: ", 1)[1])
    assert printed["mcpServers"]["paperchat"]["args"] == [  # no password on the terminal
        "mcp-remote", "http://127.0.0.1:7861/gradio_api/mcp/"]


@pytest.mark.integration
def test_search_finds_the_vehicle_routing_paper_from_a_paraphrase_real_embedder(
        real_settings, real_embedder, real_index):
    """With the real embedder, a description that shares almost no word with the paper's title
    or abstract (trucks, recombination, language model) still finds it first."""
    from rag.chat.pipeline import Pipeline

    demo, url = serve(Pipeline(real_settings, embedder=real_embedder,
                               generator=ScriptedGenerator(), retriever=real_index))
    try:
        async def work(session):
            return await session.call_tool("search", {
                "question": "an evolutionary heuristic for delivery trucks whose recombination "
                            "step is written by a fine-tuned language model", "k": 3})

        _, result = session_run(url, work)
    finally:
        demo.close()
    hits = payload(result)
    assert hits[0]["id"] == VRP
    assert hits[0]["score"] > hits[1]["score"] + 1.0  # first by a clear margin, not a tie


def test_serve_mcp_flag_reaches_launch_and_prints_the_endpoint(monkeypatch, capsys, settings):
    """`paperchat serve --mcp` (the CLI's flag) adds the tools, launches with the MCP server on
    and prints the endpoint and a client configuration; without the flag, neither happens."""
    from rag import cli
    from ui import app as ui_app
    from ui import mcp as ui_mcp

    launched, added = [], []

    class FakePipeline:
        def __init__(self, s):
            self.settings = s

        retriever = type("R", (), {"name": "default", "__len__": lambda s: 0})()
        generator = type("G", (), {"name": "g"})()

        def warm_up(self, system_prompt=None):
            return {"index": 1.0}

    monkeypatch.setattr("rag.chat.pipeline.Pipeline", FakePipeline)
    monkeypatch.setattr(ui_app, "build_app", lambda p: "demo")
    monkeypatch.setattr(ui_app, "launch", lambda demo, **kw: launched.append(kw))
    monkeypatch.setattr(ui_mcp, "add_tools", lambda demo: added.append(demo))
    assert cli.main(["serve", "--mcp", "--port", "7999"]) == 0
    assert added == ["demo"] and launched[-1]["mcp"] is True and launched[-1]["port"] == 7999
    err = capsys.readouterr().err
    assert "MCP server at http://127.0.0.1:7999/gradio_api/mcp/" in err
    assert "search, ask, similar, bibtex, facets" in err
    assert cli.main(["serve", "--port", "7999"]) == 0
    assert added == ["demo"] and launched[-1]["mcp"] is False
    assert "MCP" not in capsys.readouterr().err
