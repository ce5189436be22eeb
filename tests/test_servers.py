"""Server mode: the real Chroma server (``chroma run``) and the real OpenAI-compatible LLM server
(``python -m llama_cpp.server`` with the bundled SmolLM2 GGUF), started on free loopback ports by
module fixtures and always stopped in their teardown.

What runs through them: ``paperchat index`` / ``ask --json`` / ``serve`` as real processes (with
the flags, and with ``PAPERCHAT_CHROMA_URL``/``PAPERCHAT_LLM_URL``), and the in-process API with
the fake embedder against the real Chroma server (two indexes on one server, incremental
rebuilds, deletion). A smoke run of the load test (bench/load.py, 2 users, ~20 s) drives the app
with fakes. In server mode the chunks live on the server; the catalog, the BM25 index and
the manifest stay in the local index directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench.load import start_chroma, start_llm_server, start_paperchat
from conftest import SEED

integration = pytest.mark.integration

CVRP = "aITKXFeivk"
CVRP_QUESTION = ("Which paper fine-tunes an LLM to write crossover operators for a "
                 "vehicle-routing solver?")
PAPERCHAT = str(Path(sys.executable).parent / "paperchat")


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    proc = start_chroma(tmp_path_factory.mktemp("chroma-data"),
                        log_dir=tmp_path_factory.mktemp("logs"))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory):
    proc = start_llm_server(log_dir=tmp_path_factory.mktemp("logs"))
    yield proc
    proc.stop()


def run(*args, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([PAPERCHAT, *args], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def server_home(tmp_path_factory, chroma_server):
    """PAPERCHAT_HOME with the seed corpus indexed into the Chroma server by ``paperchat index``."""
    home = tmp_path_factory.mktemp("server_home")
    out = run("index", str(SEED), "--quiet", "--chroma-url", chroma_server.url,
              env={"PAPERCHAT_HOME": str(home)})
    assert out.returncode == 0, out.stderr
    assert "19 papers" in out.stdout and "embedded 19" in out.stdout
    return home


def _server_client(url: str):
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    host, port = url.removeprefix("http://").split(":")
    return chromadb.HttpClient(host=host, port=int(port),
                               settings=ChromaSettings(anonymized_telemetry=False))


def _server_collection(url: str, name: str):
    return _server_client(url).get_collection(name)


@integration
def test_index_lives_on_the_server_and_locally_only_catalog_bm25_manifest(server_home,
                                                                          chroma_server):
    index_dir = server_home / "indexes" / "default"
    assert {p.name for p in index_dir.iterdir()} >= {"manifest.json", "papers.sqlite", "bm25"}
    assert not (index_dir / "chroma").exists()
    col = _server_collection(chroma_server.url, "paperchat-default")
    manifest = json.loads((index_dir / "manifest.json").read_text())
    assert col.count() == manifest["chunks"] > 0
    assert col.metadata["embedder"] == manifest["embedder"] == "all-MiniLM-L6-v2"
    again = run("index", str(SEED), "--quiet", env={"PAPERCHAT_HOME": str(server_home),
                                                   "PAPERCHAT_CHROMA_URL": chroma_server.url})
    assert again.returncode == 0 and "embedded 0, unchanged 19" in again.stdout, again.stderr


@integration
def test_ask_json_through_both_servers_with_flags(server_home, chroma_server, llm_server):
    out = run("ask", CVRP_QUESTION, "--json", "--chroma-url", chroma_server.url,
              "--llm-url", llm_server.url, env={"PAPERCHAT_HOME": str(server_home)})
    assert out.returncode == 0, out.stderr
    ans = json.loads(out.stdout)
    assert ans["hits"][0]["id"] == CVRP and not ans["refused"]
    assert ans["answer"].strip()
    assert 0 < ans["timings_ms"]["first_token"] <= ans["timings_ms"]["total"]


@integration
def test_ask_through_both_servers_with_environment(server_home, chroma_server, llm_server):
    out = run("ask", CVRP_QUESTION, "--json", "--filter", "primary_area=optimization",
              env={"PAPERCHAT_HOME": str(server_home), "PAPERCHAT_CHROMA_URL": chroma_server.url,
                   "PAPERCHAT_LLM_URL": llm_server.url})
    assert out.returncode == 0, out.stderr
    ans = json.loads(out.stdout)
    assert ans["hits"] and all(h["primary_area"] == "optimization" for h in ans["hits"])


@integration
def test_serve_through_both_servers(server_home, chroma_server, llm_server, tmp_path):
    import gradio_client

    with start_paperchat(server_home, chroma_url=chroma_server.url, llm_url=llm_server.url,
                         log_dir=tmp_path) as serve:
        client = gradio_client.Client(serve.url, verbose=False, download_files=False)
        out = client.predict(CVRP_QUESTION, "any", "any", api_name="/ask")
        assert out["hits"][0]["id"] == CVRP and out["answer"].strip()
        chat, _, sources, *_ = client.predict(CVRP_QUESTION, "any", "any", api_name="/chat")
        assert CVRP in sources and chat[-1]["role"] == "assistant"
        assert "SmolLM2-135M-Instruct.Q4_1.gguf @ " + llm_server.url in serve.log_text()


@integration
def test_server_generator_counts_with_the_servers_tokenizer(llm_server):
    from rag.backends.llama_cpp import LlamaCppGenerator
    from rag.backends.llm_server import OpenAIServerGenerator

    remote = OpenAIServerGenerator(llm_server.url)
    local = LlamaCppGenerator()
    for text in ["Hello world", "Graph neural networks über alles, 𝔼[x] ≤ 1 — 漢字"]:
        assert remote.count_tokens(text) == local.count_tokens(text)
    assert remote.name == f"SmolLM2-135M-Instruct.Q4_1.gguf @ {llm_server.url}"


@integration
def test_concurrent_requests_to_the_llm_server_both_finish(llm_server):
    """The fixture starts llama_cpp.server with --interrupt_requests False: a second request
    waits for the first instead of cutting it short (which the generator would report)."""
    from rag.backends.llm_server import OpenAIServerGenerator

    g = OpenAIServerGenerator(llm_server.url)
    messages = [{"role": "user", "content": "Count from one to twenty in words."}]
    out: list = [None, None]

    def one(i):
        try:
            out[i] = "".join(g.stream(messages, max_tokens=48))
        except Exception as exc:  # noqa: BLE001
            out[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert all(isinstance(o, str) and o.strip() for o in out), out


@integration
def test_two_indexes_share_one_server(chroma_server, tmp_path, fake_embedder, seed_papers):
    """In-process, fake embedder: two named indexes are two collections; incremental rebuild,
    retrieval and deletion work the same as embedded."""
    from index.build import build_index, delete_index
    from index.source_records import LoadResult
    from rag.retrieve.retriever import Retriever
    from rag.settings import Settings

    settings = Settings(home=tmp_path / "home", embedder="fake-bow",
                        chroma_url=chroma_server.url)
    quiet = dict(settings=settings, embedder=fake_embedder, progress=False, log=lambda m: None)
    a = build_index(SEED, name="alpha", **quiet)
    b = build_index(LoadResult(papers=seed_papers[:3], fmt="jsonl", path="three"), name="beta",
                    **quiet)
    assert (a.papers, b.papers) == (19, 3)
    assert _server_collection(chroma_server.url, "paperchat-alpha").count() == a.chunks
    assert _server_collection(chroma_server.url, "paperchat-beta").count() == b.chunks
    assert build_index(SEED, name="alpha", **quiet).unchanged == 19
    hits = Retriever.open(settings, fake_embedder, "alpha").search(
        "crossover operators for CVRP hybrid genetic search", k=3).hits
    assert hits[0].id == CVRP
    delete_index(settings, "beta")
    with pytest.raises(Exception):
        _server_collection(chroma_server.url, "paperchat-beta")
    assert _server_collection(chroma_server.url, "paperchat-alpha").count() == a.chunks


@integration
def test_missing_server_collection_is_a_clear_error(chroma_server, tmp_path, fake_embedder):
    """The local index directory exists but the server lost (or never had) the chunks."""
    from index.build import build_index
    from rag.errors import IndexNotFoundError
    from rag.retrieve.retriever import Retriever
    from rag.settings import Settings

    settings = Settings(home=tmp_path / "home", embedder="fake-bow",
                        chroma_url=chroma_server.url)
    build_index(SEED, name="gone", settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None)
    _server_client(chroma_server.url).delete_collection("paperchat-gone")
    with pytest.raises(IndexNotFoundError, match="not on the Chroma server"):
        Retriever.open(settings, fake_embedder, "gone")


# --- the load test, smoke-run with fakes ----------------------------------------------------------
def test_leak_detector():
    from bench.load import is_leak

    mine = [{"role": "user", "content": [{"type": "text", "text": "first?"}]},
            {"role": "assistant", "content": "answer"},
            {"role": "user", "content": "second?"}, {"role": "assistant", "content": "more"}]
    assert not is_leak(["first?", "second?"], mine)
    assert is_leak(["first?", "other?"], mine)  # another session's question in my history
    assert is_leak(["second?"], mine[2:] + mine[:2])  # an extra turn


def test_load_smoke_two_users(fake_index, fake_embedder):
    """bench/load.py against the app with fakes: 2 users for ~20 s, every request completes,
    no errors, no session sees another's history."""
    from bench.load import format_summary, run_load
    from conftest import ScriptedGenerator
    from rag.chat.pipeline import Pipeline
    from ui import app as ui_app
    from bench.load import free_port

    settings, retriever = fake_index
    demo = ui_app.build_app(Pipeline(settings, embedder=fake_embedder,
                                     generator=ScriptedGenerator(), retriever=retriever))
    _, url, _ = ui_app.launch(demo, port=free_port(), block=False, quiet=True)
    try:
        questions = ["crossover operators for CVRP hybrid genetic search",
                     "training dynamics post-training quantization robustness",
                     "Which paper studies quantum chromodynamics on lattices?"]
        report = run_load(url, users=2, seconds=20, questions=questions, timeout_s=60)
    finally:
        demo.close()
    s = report.summary()
    print(format_summary(s))
    assert s["errors"] == 0, s["error_kinds"]
    assert s["cross_session_leaks"] == 0
    assert s["requests_completed"] >= 4
    assert s["answered_with_tokens"] >= 1 and s["ttft_s"]["median"] is not None
    assert {r.turn for r in report.results} == {1, 2}
