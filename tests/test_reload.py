"""A served app picks up a re-indexed index without a restart (:meth:`Pipeline.current_retriever`).

Unit tests with the fake embedder over real on-disk indexes in ``tmp_path`` (Chroma embedded, as
``paperchat index`` writes them): a build that adds papers is picked up by the next question,
dense side included (chromadb caches the HNSW index per directory and process); an unchanged
re-index, a build in progress and a failed reopen keep the retriever that is open. Then the app
served in-process with fakes, and ``paperchat serve`` as a real process with the real embedder
while ``paperchat index`` adds two papers from another process.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import SEED, ScriptedGenerator

CVRP = "aITKXFeivk"        # the second paper of the seed list
CVRP_QUESTION = ("Which paper fine-tunes an LLM to write crossover operators for a "
                 "vehicle-routing solver?")
FAKE_CVRP_QUESTION = "crossover operators for CVRP hybrid genetic search"
PAPERCHAT = str(Path(sys.executable).parent / "paperchat")


def run(*args, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    """``paperchat ARGS`` as a user runs it, in another process."""
    return subprocess.run([PAPERCHAT, *args], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout)


def build(settings, embedder, papers, name="default"):
    from index.build import build_index
    from index.source_records import LoadResult

    return build_index(LoadResult(papers=list(papers), fmt="jsonl", path="test"),
                       settings=settings, embedder=embedder, name=name, progress=False,
                       log=lambda m: None)


#: ``build`` in another process, as ``paperchat index`` runs beside ``paperchat serve``.
BUILD_ELSEWHERE = """
import sys
sys.path[:0] = [{tests!r}, {root!r}]
from conftest import FakeEmbedder
from index.build import build_index
from index.source_records import LoadResult
from index.sources import load_papers
from rag.settings import Settings

papers = load_papers({seed!r}).papers[:{n}]
settings = Settings(home={home!r}, embedder={embedder!r}, embed_backend={backend!r})
build_index(LoadResult(papers=papers, fmt="jsonl", path="test"), settings=settings,
            embedder=FakeEmbedder(), name="default", progress=False, log=lambda m: None)
"""


def build_in_another_process(settings, n: int) -> None:
    """The first ``n`` seed papers indexed with the fake embedder by another Python process."""
    tests = Path(__file__).resolve().parent
    code = BUILD_ELSEWHERE.format(tests=str(tests), root=str(tests.parent), seed=str(SEED), n=n,
                                  home=str(settings.home), embedder=settings.embedder,
                                  backend=settings.embed_backend)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr


@pytest.fixture
def one_paper(settings, fake_embedder, seed_papers):
    """A pipeline over a 1-paper index (the first seed paper), retriever open."""
    from rag.chat.pipeline import Pipeline

    build(settings, fake_embedder, seed_papers[:1])
    pipe = Pipeline(settings, embedder=fake_embedder, generator=ScriptedGenerator())
    assert len(pipe.current_retriever()) == 1
    return pipe


def test_a_build_by_another_process_is_used_by_the_next_question(one_paper, settings,
                                                                 fake_embedder, seed_papers):
    pipe = one_paper
    old = pipe.current_retriever()
    assert pipe.current_retriever() is old and pipe.reloads == 0  # nothing changed: same one
    build_in_another_process(settings, 3)
    new = pipe.current_retriever()
    assert new is not old and len(new) == 3 and pipe.reloads == 1
    assert pipe.retriever is new and pipe.current_retriever() is new  # swapped once
    hits = new.search(FAKE_CVRP_QUESTION, k=3).hits
    assert hits[0].id == CVRP
    qvec = fake_embedder.embed([FAKE_CVRP_QUESTION])[0]
    assert CVRP in new.dense(qvec).ids  # the other process's vectors, not a cached HNSW index
    # a question that started on the old retriever finishes on it
    assert [h.id for h in old.search(FAKE_CVRP_QUESTION, k=3).hits] == [seed_papers[0].id]


def test_an_unchanged_reindex_keeps_the_open_retriever(one_paper, settings, fake_embedder,
                                                       seed_papers):
    pipe = one_paper
    old = pipe.current_retriever()
    summary = build(settings, fake_embedder, seed_papers[:1])  # rewrites the manifest twice
    assert summary.unchanged == 1
    assert pipe.current_retriever() is old and pipe.reloads == 0


def test_a_build_is_opened_once_its_catalog_is_whole_and_again_when_embedded(
        one_paper, settings, fake_embedder, seed_papers, monkeypatch):
    """Before the build's catalog and BM25 hold every paper (its first manifest has the old
    fingerprint) the open retriever stays; once they do, the next question opens the index as it
    is being embedded (a PartialRetriever, every paper in BM25); when the fill is done, the
    whole index again."""
    import index.build as build_mod
    from rag.retrieve.retriever import PartialRetriever

    pipe = one_paper
    old = pipe.current_retriever()
    seen: dict[str, object] = {}
    real_lexical, real_embed = build_mod.lexical_from_catalog, build_mod._embed_papers

    def lexical_then_ask(catalog, *args, **kwargs):  # the catalog has the new rows, BM25 is next
        seen["catalog"] = pipe.current_retriever()
        return real_lexical(catalog, *args, **kwargs)

    def ask_then_embed(*args, **kwargs):  # phase 1 done, nothing embedded yet
        retriever = seen["answering"] = pipe.current_retriever()
        seen["coverage"] = retriever.coverage()
        seen["hits"] = [h.id for h in retriever.search(FAKE_CVRP_QUESTION, k=3).hits]
        real_embed(*args, **kwargs)

    monkeypatch.setattr(build_mod, "lexical_from_catalog", lexical_then_ask)
    monkeypatch.setattr(build_mod, "_embed_papers", ask_then_embed)
    build(settings, fake_embedder, seed_papers[:3])
    assert seen["catalog"] is old
    partial = seen["answering"]
    assert isinstance(partial, PartialRetriever) and len(partial) == 3
    assert (seen["coverage"].papers, seen["coverage"].embedded) == (3, 1)  # the build before's
    assert seen["hits"][0] == CVRP  # not embedded yet: found by BM25, scored on demand
    assert partial.coverage().embedded == 3  # the open one saw the fill's batches
    whole = pipe.current_retriever()
    assert not isinstance(whole, PartialRetriever) and len(whole) == 3 and pipe.reloads == 2
    assert whole.coverage() is None


def test_a_manifest_without_fingerprint_is_a_build_in_progress(one_paper, settings):
    from index import manifest

    pipe = one_paper
    old = pipe.current_retriever()
    index_dir = settings.index_dir()
    recorded = manifest.read(index_dir)
    manifest.write(index_dir, {k: v for k, v in recorded.items()
                               if k != "catalog_fingerprint"})  # as --rebuild's first write
    assert pipe.current_retriever() is old
    manifest.write(index_dir, recorded)  # the same fingerprint again
    assert pipe.current_retriever() is old and pipe.reloads == 0


def test_a_rebuild_from_scratch_with_the_same_papers_is_reopened(one_paper, settings,
                                                                fake_embedder, seed_papers):
    """``paperchat index --rebuild``: same fingerprint, but a new catalog and Chroma store."""
    from index.build import delete_index

    pipe = one_paper
    old = pipe.current_retriever()
    delete_index(settings, "default")
    assert pipe.current_retriever() is old  # no manifest (being rebuilt): keep answering
    build(settings, fake_embedder, seed_papers[:1])
    new = pipe.current_retriever()
    assert new is not old and pipe.reloads == 1
    assert new.search(seed_papers[0].title, k=1).hits[0].id == seed_papers[0].id


def test_a_failed_reopen_keeps_the_old_retriever_and_warns(one_paper, settings, fake_embedder,
                                                           seed_papers, monkeypatch, caplog):
    import rag.chat.pipeline as pipeline_mod
    from rag.retrieve.retriever import Retriever

    pipe = one_paper
    old = pipe.current_retriever()
    calls = []

    def broken(*args, **kwargs):
        calls.append(args)
        raise OSError("bm25 unreadable")

    monkeypatch.setattr(Retriever, "open", broken)
    build(settings, fake_embedder, seed_papers[:3])
    with caplog.at_level(logging.WARNING, logger="rag.chat.pipeline"):
        assert pipe.current_retriever() is old
    assert "could not be reopened (bm25 unreadable)" in caplog.text
    assert pipe.current_retriever() is old and len(calls) == 1  # not retried per question
    monkeypatch.undo()
    monkeypatch.setattr(pipeline_mod, "RETRY_REOPEN_S", 0.0)
    new = pipe.current_retriever()
    assert len(new) == 3 and pipe.reloads == 1


def test_concurrent_questions_reopen_once(one_paper, settings, fake_embedder, seed_papers):
    pipe = one_paper
    build(settings, fake_embedder, seed_papers[:3])
    got = []
    start = threading.Barrier(8)

    def ask():
        start.wait(30)
        got.append(pipe.current_retriever())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(got) == 8 and len({id(r) for r in got}) == 1 and len(got[0]) == 3
    assert pipe.reloads == 1


def test_a_passed_in_retriever_is_watched_too(settings, fake_embedder, seed_papers):
    from rag.chat.pipeline import Pipeline
    from rag.retrieve.retriever import Retriever

    build(settings, fake_embedder, seed_papers[:1])
    given = Retriever.open(settings, fake_embedder)
    pipe = Pipeline(settings, embedder=fake_embedder, generator=ScriptedGenerator(),
                    retriever=given)
    assert pipe.current_retriever() is given
    build(settings, fake_embedder, seed_papers[:3])
    assert len(pipe.current_retriever()) == 3


# --- the app, served in this process with fakes -------------------------------------------------
def test_served_app_answers_from_the_rebuilt_index(one_paper, settings, fake_embedder,
                                                   seed_papers):
    import gradio_client

    from bench.load import free_port
    from ui import app as ui_app

    demo = ui_app.build_app(one_paper)
    _, url, _ = ui_app.launch(demo, port=free_port(), block=False, quiet=True)
    try:
        c = gradio_client.Client(url, verbose=False, download_files=False)
        before = c.predict(FAKE_CVRP_QUESTION, "any", "any", "extractive", api_name="/ask")
        assert [h["id"] for h in before["hits"]] == [seed_papers[0].id]
        build(settings, fake_embedder, seed_papers[:3])
        after = c.predict(FAKE_CVRP_QUESTION, "any", "any", "extractive", api_name="/ask")
        assert after["hits"][0]["id"] == CVRP and not after["refused"]
        chat, _, sources, *_ = c.predict(FAKE_CVRP_QUESTION, "any", "any", "extractive",
                                         api_name="/chat")
        assert CVRP in sources.split('id="card-2"')[0]
    finally:
        demo.close()


# --- paperchat serve, a real process, real embedder ---------------------------------------------
@pytest.mark.integration
def test_paperchat_serve_uses_the_index_rebuilt_by_paperchat_index(tmp_path):
    """The user's steps: index 1 paper, serve it, index 3 papers (the same one plus 2) from
    another process, ask /ask about a new paper: found as hit 1 and answered."""
    import gradio_client

    from bench.load import start_paperchat

    lines = [ln for ln in SEED.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert json.loads(lines[1])["id"] == CVRP
    one, three = tmp_path / "one.jsonl", tmp_path / "three.jsonl"
    one.write_text(lines[0] + "\n", encoding="utf-8")
    three.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    home = tmp_path / "home"
    env = {"PAPERCHAT_HOME": str(home)}
    first = run("index", str(one), "--name", "tiny", "--quiet", env=env)
    assert first.returncode == 0 and "1 papers" in first.stdout, first.stderr
    # extractive: the answer needs no model call (the model still loads at start)
    with start_paperchat(home, index="tiny", log_dir=tmp_path,
                         env={"PAPERCHAT_ANSWER_MODE": "extractive"}) as serve:
        client = gradio_client.Client(serve.url, verbose=False, download_files=False)
        before = client.predict(CVRP_QUESTION, "any", "any", api_name="/ask")
        assert [h["id"] for h in before["hits"]] == [json.loads(lines[0])["id"]]
        assert before["refused"]
        again = run("index", str(three), "--name", "tiny", "--quiet", env=env)
        assert again.returncode == 0 and "3 papers" in again.stdout, again.stderr
        assert "embedded 2, unchanged 1" in again.stdout
        after = client.predict(CVRP_QUESTION, "any", "any", api_name="/ask")
        assert after["hits"][0]["id"] == CVRP, after["hits"]
        assert not after["refused"] and CVRP in [c["id"] for c in after["citations"]]
        assert "changed on disk: reopened" in serve.log_text()
