"""Faults: servers that die, hang or refuse; a full or unwritable PAPERCHAT_HOME; two index runs.

Each test says what fails, how, and what the user must see. The fast ones use stand-ins that
fail on cue: a tiny OpenAI-style SSE server in a thread (:class:`FakeLLM`), a socket that accepts
connections and never answers (:func:`silent_port`), a port with nothing listening. The
``integration`` ones kill or stop the real servers (``python -m llama_cpp.server``, ``chroma run``)
and run the real ``paperchat`` command twice at once.

"Read-only" and "disk full" as root: chmod does not stop root from writing and the tests cannot
mount a small tmpfs, so they make the failure happen for real where they can (``PAPERCHAT_HOME``
is a regular file where a directory is expected; the manifest's temporary file is blocked by a
directory of the same name, so the write fails with ``IsADirectoryError``) and otherwise raise
``OSError(ENOSPC)`` from the write at the store's or the BM25 index's edge with ``monkeypatch``
(the exception a full disk gives).
"""

from __future__ import annotations

import errno
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.load import free_port, start_chroma, start_llm_server
from rag.backends.llm_server import OpenAIServerGenerator
from rag.errors import BackendUnavailableError
from conftest import SEED, SHARED_DATA, FakeEmbedder

CVRP = "aITKXFeivk"
CVRP_QUESTION = "crossover operators for CVRP hybrid genetic search"
MESSAGES = [{"role": "user", "content": "Say something."}]


# --- a fake OpenAI-compatible server that fails on cue --------------------------------------------
def _chunk(text=None, finish=None) -> bytes:
    delta = {"content": text} if text is not None else {}
    obj = {"id": "x", "object": "chat.completion.chunk",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(obj)}\n\n".encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    """Path ``/<mode>/v1/...``: ``mode`` says how the reply goes wrong."""

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _json(self, status: int, obj) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._json(200, {"data": [{"id": "fake-model"}]})

    def do_POST(self):
        mode = self.path.strip("/").split("/")[0]
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.endswith("/extras/tokenize"):
            return self._json(200, {"tokens": [1, 2, 3]}) if mode == "ok" else \
                self._json(404, {"detail": "Not Found"})
        if mode == "http500":
            return self._json(500, {"error": {"message": "llama_decode returned -1"}})
        if mode == "http400":
            return self._json(400, {"error": {"message": "Requested tokens (3000) exceed "
                                                         "context window of 2048"}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        w = self.wfile
        w.write(_chunk("Hello "))
        w.write(_chunk("world"))
        w.flush()
        if mode == "ok":
            w.write(_chunk(finish="stop") + b"data: [DONE]\n\n")
        elif mode == "reset":  # the process died: the kernel resets the connection
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       (1).to_bytes(4, "little") + (0).to_bytes(4, "little"))
            self.connection.close()
        elif mode == "eof":  # closed cleanly, but before the answer was done
            pass
        elif mode == "silent":  # hung (a stopped process, a stuck GPU)
            time.sleep(8)
        elif mode == "nodone":  # llama_cpp.server's --interrupt_requests cut
            w.write(b"data: [DONE]\n\n")
        elif mode == "garbage":
            w.write(b"data: {not json\n\n")
        elif mode == "errorchunk":
            w.write(b'data: {"error": {"message": "model crashed"}}\n\n')
        w.flush()


class FakeLLM:
    def __init__(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def fake_llm():
    srv = FakeLLM()
    yield srv
    srv.close()


@pytest.fixture
def silent_port():
    """A port whose socket accepts TCP connections (kernel backlog) but never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    yield s.getsockname()[1]
    s.close()


def drain(gen) -> tuple[list[str], BaseException | None, float]:
    t0 = time.monotonic()
    pieces = []
    try:
        for p in gen:
            pieces.append(p)
    except BaseException as exc:  # noqa: BLE001
        return pieces, exc, time.monotonic() - t0
    return pieces, None, time.monotonic() - t0


# --- the LLM server -------------------------------------------------------------------------------
def test_a_complete_stream_from_a_server(fake_llm):
    g = OpenAIServerGenerator(fake_llm.url("ok"))
    assert "".join(g.stream(MESSAGES)) == "Hello world"
    assert g.model == "fake-model" and g.name == "fake-model @ " + fake_llm.url("ok")
    assert g.count_tokens("anything at all") == 3  # the server's tokenizer, not an estimate


@pytest.mark.parametrize("mode, pieces, message", [
    ("reset", 2, "mid-answer"),
    ("eof", 2, "closed the connection mid-answer after 2 pieces"),
    ("silent", 2, "went silent mid-answer"),
    ("nodone", 2, "ended the answer early"),
    ("garbage", 2, "malformed stream line"),
    ("errorchunk", 2, "failed mid-answer: model crashed"),
    ("http500", 0, r"refused the request .*HTTP 500: llama_decode returned -1"),
    ("http400", 0, "exceed context window"),
])
def test_a_broken_stream_is_an_error_not_a_truncated_answer(fake_llm, mode, pieces, message):
    g = OpenAIServerGenerator(fake_llm.url(mode), read_timeout_s=1.0)
    got, exc, seconds = drain(g.stream(MESSAGES))
    assert isinstance(exc, BackendUnavailableError), exc
    assert len(got) == pieces
    assert re.search(message, str(exc)), str(exc)
    assert fake_llm.url(mode) in str(exc)
    assert seconds < 5  # 'silent' gives up after read_timeout_s


def test_nothing_listening_is_a_quick_clear_error():
    url = f"http://127.0.0.1:{free_port()}/v1"
    g = OpenAIServerGenerator(url)
    got, exc, seconds = drain(g.stream(MESSAGES))
    assert isinstance(exc, BackendUnavailableError) and seconds < 2
    assert "did not accept a connection" in str(exc) and "unset PAPERCHAT_LLM_URL" in str(exc)
    assert g.name == f"default @ {url}"  # no crash when asked for a name while it is down
    assert g.count_tokens("x" * 30) == 10  # estimate: 3 chars per token


def test_a_server_that_never_answers_times_out(silent_port):
    g = OpenAIServerGenerator(f"http://127.0.0.1:{silent_port}/v1", read_timeout_s=1.5)
    got, exc, seconds = drain(g.stream(MESSAGES))
    assert isinstance(exc, BackendUnavailableError) and "did not answer" in str(exc)
    assert 1.0 < seconds < 4


def test_answer_keeps_the_sources_when_the_llm_breaks_off(fake_index, fake_llm):
    """The hits event comes before the failure: the UI has shown the sources by then."""
    from rag.chat.answer import HitsEvent, answer_stream

    settings, retriever = fake_index
    events = []
    with pytest.raises(BackendUnavailableError, match="mid-answer"):
        for ev in answer_stream(CVRP_QUESTION, retriever=retriever,
                                generator=OpenAIServerGenerator(fake_llm.url("reset")),
                                settings=settings):
            events.append(ev)
    assert isinstance(events[0], HitsEvent) and events[0].hits[0].id == CVRP
    texts = [e.text for e in events[1:]]
    # the direct line, before the model (a bare topic reads as a survey: "The most relevant ...")
    assert texts[0].startswith(("The closest match is", "The most relevant papers found"))
    assert not any("Hello" in t for t in texts)  # unchecked model text is never shown


def test_ui_shows_the_error_and_keeps_the_sources_then_serves_again(fake_index, fake_embedder,
                                                                    fake_llm):
    import gradio as gr

    from rag.chat.pipeline import Pipeline
    from ui.app import ChatApp

    settings, retriever = fake_index
    broken = OpenAIServerGenerator(fake_llm.url("reset"))
    app = ChatApp(Pipeline(settings, embedder=fake_embedder, generator=broken,
                           retriever=retriever))
    parts = []
    with pytest.raises(gr.Error) as err:
        for part in app.stream(CVRP_QUESTION, "any", "any", [], []):
            parts.append(part)
    assert "mid-answer" in str(err.value.message)
    assert any(CVRP in p.get("sources", "") for p in parts)  # the cards went out first
    app.generator = OpenAIServerGenerator(fake_llm.url("ok"))  # the server is back
    final = [p for p in app.stream(CVRP_QUESTION, "any", "any", [], []) if "final" in p]
    answer = final[0]["final"] if final else None
    assert answer is not None and answer.model.startswith("fake-model")  # answered by the server
    assert "Hello world" in " ".join(s.text for s in answer.unsupported)  # and checked


@pytest.fixture
def llm_server(tmp_path):
    proc = start_llm_server(log_dir=tmp_path)
    yield proc
    proc.stop()


@pytest.mark.integration
def test_real_llm_server_killed_mid_answer(llm_server, tmp_path):
    """kill -9 of llama_cpp.server after the first streamed piece: a clear error, then the same
    generator works again once a server is back on that port."""
    g = OpenAIServerGenerator(llm_server.url)
    long_answer = [{"role": "user", "content": "Write a long story about a robot, at least "
                                               "three paragraphs."}]
    pieces: list[str] = []
    stream = g.stream(long_answer, max_tokens=256, temperature=0.0)
    with pytest.raises(BackendUnavailableError) as err:
        for p in stream:
            pieces.append(p)
            if len(pieces) == 1:
                llm_server.kill()
    t_msg = str(err.value)
    assert pieces and "mid-answer" in t_msg and llm_server.url in t_msg, t_msg
    with pytest.raises(BackendUnavailableError, match="did not accept a connection"):
        list(g.stream(MESSAGES))
    back = start_llm_server(port=llm_server.port, log_dir=tmp_path)
    try:
        assert "".join(g.stream(MESSAGES, max_tokens=8)).strip()
    finally:
        back.stop()


# --- the Chroma server ----------------------------------------------------------------------------
def test_chroma_down_at_start_is_a_clear_error():
    from rag.backends.store import ChromaStore

    url = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailableError) as err:
        ChromaStore(None, url=url, collection="paperchat-x")
    assert time.monotonic() - t0 < 2
    assert url in str(err.value) and "chroma run" in str(err.value)


def test_chroma_hung_at_start_gives_up_within_the_connect_timeout(silent_port):
    from rag.backends.store import CONNECT_TIMEOUT_S, ChromaStore

    t0 = time.monotonic()
    with pytest.raises(BackendUnavailableError, match=r"within 5 s"):
        ChromaStore(None, url=f"http://127.0.0.1:{silent_port}", collection="paperchat-x")
    assert CONNECT_TIMEOUT_S - 0.5 < time.monotonic() - t0 < CONNECT_TIMEOUT_S + 3


def test_not_a_chroma_server_is_said_so(fake_llm):
    from rag.backends.store import ChromaStore

    with pytest.raises(BackendUnavailableError, match="is this a Chroma server"):
        ChromaStore(None, url=f"http://127.0.0.1:{fake_llm.port}", collection="paperchat-x")


def test_cli_with_chroma_down_prints_one_line_and_exits_2(settings, monkeypatch, capsys):
    from rag.cli import main

    monkeypatch.setattr("rag.backends.embedder.make_embedder", lambda s: FakeEmbedder())
    url = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    assert main(["index", str(SEED), "--quiet", "--chroma-url", url]) == 2
    assert time.monotonic() - t0 < 10
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("paperchat: error: the Chroma server at " + url)


@pytest.fixture
def chroma_server(tmp_path):
    proc = start_chroma(tmp_path / "chroma-data", log_dir=tmp_path)
    yield proc
    if proc.alive():
        os.kill(proc.pid, signal.SIGCONT)  # in case a test left it stopped
    proc.stop()


@pytest.mark.integration
def test_chroma_gone_or_hung_mid_session(chroma_server, settings, fake_embedder):
    """Server mode with the fake embedder: build, query; then SIGSTOP the server (hung: the
    query gives up after the store's request timeout) and SIGKILL it (gone: at once)."""
    from index.build import build_index
    from rag.backends.store import ChromaStore
    from rag.retrieve.retriever import Retriever

    settings = settings.model_copy(update={"chroma_url": chroma_server.url})
    build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None)
    retriever = Retriever.open(settings, fake_embedder)
    assert retriever.search(CVRP_QUESTION, k=3).hits[0].id == CVRP

    quick = ChromaStore(None, url=chroma_server.url, collection="paperchat-default",
                        create=False, timeout_s=2.0)
    vec = fake_embedder.embed([CVRP_QUESTION])[0]
    assert quick.query(vec, 3)
    os.kill(chroma_server.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(BackendUnavailableError, match="did not answer within 2 s"):
            quick.query(vec, 3)
        assert time.monotonic() - t0 < 6
    finally:
        os.kill(chroma_server.pid, signal.SIGCONT)
    chroma_server.kill()
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailableError, match=chroma_server.url):
        retriever.search("hybrid genetic search", k=3)
    assert time.monotonic() - t0 < 6


# --- PAPERCHAT_HOME unwritable or full ------------------------------------------------------------
def _counts(settings):
    from index.catalog import Catalog
    from index.reader import open_store

    d = settings.index_dir("default")
    return (Catalog(d / "papers.sqlite").count(),
            open_store(d, settings, "default", create=False).count())


def _still_usable(settings, embedder):
    from rag.retrieve.retriever import Retriever

    r = Retriever.open(settings, embedder)
    assert r.search(CVRP_QUESTION, k=3).hits[0].id == CVRP
    return r


@pytest.fixture
def more_papers(tmp_path, seed_papers):
    """The seed list plus 70 new papers (two build steps of PAPERS_PER_STEP)."""
    from dataclasses import replace

    path = tmp_path / "more.jsonl"
    rows = [p.__dict__ for p in seed_papers]
    for i in range(70):
        p = replace(seed_papers[i % len(seed_papers)], id=f"new{i:03d}",
                    title=f"Extra paper {i} on topic {i * 7 % 13}")
        rows.append(p.__dict__)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_home_is_a_file_not_a_directory(tmp_path, fake_embedder):
    """Unwritable PAPERCHAT_HOME that root cannot write either: a regular file."""
    from index.build import build_index
    from rag.settings import Settings

    home = tmp_path / "home"
    home.write_text("not a directory")
    settings = Settings(home=home, embedder="fake-bow")
    with pytest.raises(OSError) as err:
        build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                    log=lambda m: None)
    assert str(home) in str(err.value)  # the message names the path
    assert home.read_text() == "not a directory"


def test_cli_unwritable_home_is_one_clear_line(tmp_path, monkeypatch, capsys):
    from rag.cli import main

    home = tmp_path / "home"
    home.write_text("not a directory")
    monkeypatch.setenv("PAPERCHAT_HOME", str(home))
    monkeypatch.setenv("PAPERCHAT_EMBEDDER", "fake-bow")
    monkeypatch.setattr("rag.backends.embedder.make_embedder", lambda s: FakeEmbedder())
    assert main(["index", str(SEED), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(home) in err[0]


def test_write_refused_in_the_index_directory_leaves_the_index_usable(fake_index, fake_embedder,
                                                                      more_papers):
    """The manifest cannot be written (its temporary file is blocked by a directory: a write
    that fails for root too): the build stops before changing anything."""
    from index.build import build_index

    settings, _ = fake_index
    before = _counts(settings)
    blocker = settings.index_dir("default") / "manifest.tmp"
    blocker.mkdir()
    with pytest.raises(IsADirectoryError):
        build_index(more_papers, settings=settings, embedder=fake_embedder, progress=False,
                    log=lambda m: None)
    assert _counts(settings) == before
    _still_usable(settings, fake_embedder)
    blocker.rmdir()
    summary = build_index(more_papers, settings=settings, embedder=fake_embedder,
                          progress=False, log=lambda m: None)
    assert summary.papers == before[0] + 70


@pytest.mark.parametrize("where", ["chroma", "bm25"])
def test_disk_full_while_indexing_leaves_the_index_usable(fake_index, fake_embedder, more_papers,
                                                          monkeypatch, where):
    """ENOSPC from the second chunk write (after one step of new papers is stored) or from the
    BM25 save at the end: an OSError naming the cause; the old index still answers; the next
    build, with space again, finishes the job."""
    from index.build import build_index
    from rag.backends.lexical import LexicalIndex
    from rag.backends.store import ChromaStore

    settings, _ = fake_index
    before = _counts(settings)
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    if where == "chroma":
        real_upsert, calls = ChromaStore.upsert, []

        def upsert(self, *a, **kw):
            calls.append(1)
            if len(calls) >= 2:
                raise full
            return real_upsert(self, *a, **kw)

        monkeypatch.setattr(ChromaStore, "upsert", upsert)
    else:
        monkeypatch.setattr(LexicalIndex, "save", lambda self, path: (_ for _ in ()).throw(full))
    with pytest.raises(OSError, match="No space left on device"):
        build_index(more_papers, settings=settings, embedder=fake_embedder, progress=False,
                    log=lambda m: None)
    monkeypatch.undo()
    papers, chunks = _counts(settings)
    assert papers >= before[0] and chunks >= before[1]
    _still_usable(settings, fake_embedder)
    summary = build_index(more_papers, settings=settings, embedder=fake_embedder,
                          progress=False, log=lambda m: None)
    assert summary.papers == before[0] + 70
    assert _counts(settings)[0] == before[0] + 70
    r = _still_usable(settings, fake_embedder)
    assert len(r) == before[0] + 70


# --- two index runs at once -----------------------------------------------------------------------
def _flock_held(path: Path) -> bool:
    """True when some process holds a flock on ``path`` (read from /proc/locks, no locking)."""
    try:
        ino = path.stat().st_ino
        locks = Path("/proc/locks").read_text()
    except OSError:
        return False
    return any(line.split()[1] == "FLOCK" and line.split()[5].endswith(f":{ino}")
               for line in locks.splitlines() if len(line.split()) > 5)


@pytest.mark.integration
def test_second_index_run_refuses_while_the_first_writes(tmp_path):
    """Two real ``paperchat index`` processes on one index: the second says the index is locked
    and exits 2 without touching it; the first completes with every paper."""
    src = SHARED_DATA / "iclr2026_accepted.jsonl"
    n = 300  # ~10 s of embedding on an idle machine; the second run needs ~2 s to get there
    if src.exists():
        lines = src.read_text().splitlines()[:n]
    else:  # the seed list, repeated under new ids, is enough to keep the first run busy
        seed = [json.loads(line) for line in SEED.read_text().splitlines() if line.strip()]
        lines = [json.dumps({**seed[i % len(seed)], "id": f"dup{i}"}) for i in range(n)]
    papers = tmp_path / "papers.jsonl"
    papers.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PAPERCHAT_HOME": str(tmp_path / "home")}
    cmd = [str(Path(sys.executable).parent / "paperchat"), "index", str(papers), "--quiet"]
    lock = tmp_path / "home" / "indexes" / "default" / ".lock"
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 240
        while not _flock_held(lock):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run never took the lock"
            time.sleep(0.1)
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
        assert second.returncode == 2, second.stderr
        assert "another 'paperchat index' is writing this index" in second.stderr
        assert "Traceback" not in second.stderr
        assert first.poll() is None, "the first run should still be writing (make n bigger)"
        out, err = first.communicate(timeout=600)
        assert first.returncode == 0, err
        assert f"{n} papers" in out
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    from index.catalog import Catalog
    from index.reader import open_store
    from rag.settings import Settings

    settings = Settings(home=tmp_path / "home")
    d = settings.index_dir("default")
    assert Catalog(d / "papers.sqlite").count() == n
    assert open_store(d, settings, "default", create=False).count() == \
        Catalog(d / "papers.sqlite").total_chunks()
