"""`paperchat fetch` against the loopback stand-in (../shared/tools/openreview_replay.py), started
here on a free port: the 300-note OpenReview sample, the Paper Copilot 2018 list, 429s with
Retry-After, a dropped connection, a resumed download and an unreachable server. Nothing here
reaches the network: every URL is 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED, shared

REPLAY = SHARED / "tools" / "openreview_replay.py"
VENUE = "ICLR.cc/2026/Conference"


def _replay(*args: str):
    """Start the replay server; yield its base URL; stop it."""
    if not REPLAY.is_file():
        pytest.skip(f"{REPLAY} is absent (the loopback stand-in lives beside the repo in "
                    "../shared/tools)")
    shared("openreview_v2_sample.json")
    proc = subprocess.Popen([sys.executable, str(REPLAY), "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), (line, proc.stderr.read())
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def replay():
    yield from _replay()


@pytest.fixture
def throttled():
    yield from _replay("--throttle-every", "4")


@pytest.fixture
def dying():
    yield from _replay("--die-after", "3")


def run(*args: str, home: Path) -> subprocess.CompletedProcess:
    """``python -m rag ARGS`` in a fresh process (as a user runs it), PAPERCHAT_HOME=home."""
    import os

    env = dict(os.environ, PAPERCHAT_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "rag", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def sample_ids() -> list[str]:
    notes = json.loads(shared("openreview_v2_sample.json").read_text(encoding="utf-8"))
    return sorted(n["id"] for n in notes)


def check_sample(path: Path) -> None:
    """The 300 accepted papers of the sample, each once, with 10 orals and the README schema
    (164 of the sample's notes have a TL;DR; the rest an empty one, written as null)."""
    got = rows(path)
    assert sorted(r["id"] for r in got) == sample_ids()
    assert sum(1 for r in got if r["tldr"]) == 164
    assert Counter(r["status"] for r in got) == {"Accept (Poster)": 290, "Accept (Oral)": 10}
    for r in got:
        assert r["title"].strip() and r["abstract"].strip()
        assert r["url"] == f"https://openreview.net/forum?id={r['id']}"
        assert r["pdf"].startswith("https://openreview.net/pdf/")
        assert r["venue"] == "ICLR 2026" and r["year"] == 2026
        assert r["keywords"] and r["primary_area"]
        assert r["tldr"] is None or r["tldr"].strip()
        assert r["authors"] is None  # ICLR 2026 is anonymous, as in the data README


def test_the_sample_gives_exactly_its_300_papers_and_10_orals(replay, tmp_path):
    out = tmp_path / "iclr2026.jsonl"
    res = run("fetch", f"openreview:{VENUE}", "--api", replay, "--out", str(out), home=tmp_path)
    assert res.returncode == 0, res.stderr
    check_sample(out)
    assert "fetched 300 papers (290 poster, 10 oral)" in res.stdout
    assert "paper/s" in res.stderr  # tqdm's progress bar, on stderr
    assert not list(tmp_path.glob("*.partial*"))  # nothing left to resume


def test_a_fetched_record_keeps_every_field_of_its_note(replay, tmp_path):
    note = next(n for n in json.loads(shared("openreview_v2_sample.json").read_text())
                if n["content"]["venue"]["value"] == "ICLR 2026 Oral")
    out = tmp_path / "x.jsonl"
    assert run("fetch", f"openreview:{VENUE}", "--api", replay, "--out", str(out), "--quiet",
               home=tmp_path).returncode == 0
    row = next(r for r in rows(out) if r["id"] == note["id"])
    c = {k: v["value"] for k, v in note["content"].items()}
    assert (row["title"], row["abstract"], row["keywords"], row["primary_area"], row["tldr"]) == \
        (c["title"], c["abstract"], c["keywords"], c["primary_area"], c["TLDR"] or None)
    assert row["status"] == "Accept (Oral)" and row["venueid"] == VENUE
    assert row["pdf"] == "https://openreview.net" + c["pdf"] and row["number"] == note["number"]


def test_all_submissions_are_read_by_invitation(replay, tmp_path):
    out = tmp_path / "all.jsonl"
    res = run("fetch", f"openreview:{VENUE}", "--all", "--api", replay, "--out", str(out),
              "--page-size", "120", "--quiet", home=tmp_path)
    assert res.returncode == 0, res.stderr
    check_sample(out)  # the sample holds accepted papers only, all under the Submission invitation


def test_429_with_retry_after_is_waited_out(throttled, tmp_path):
    out = tmp_path / "t.jsonl"
    t0 = time.monotonic()
    res = run("fetch", f"openreview:{VENUE}", "--api", throttled, "--out", str(out),
              "--page-size", "50", "--quiet", home=tmp_path)
    assert res.returncode == 0, res.stderr
    check_sample(out)
    # 7 pages + retries: every 4th request is a 429 with Retry-After: 1, which is honoured
    assert res.stderr.count("RateLimitError") >= 2
    assert time.monotonic() - t0 >= 2.0


def test_a_dropped_connection_is_retried_by_the_client(dying, tmp_path):
    out = tmp_path / "d.jsonl"
    res = run("fetch", f"openreview:{VENUE}", "--api", dying, "--out", str(out),
              "--page-size", "50", "--quiet", home=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Remote end closed connection" in res.stderr  # it happened, and was retried
    check_sample(out)


def test_an_interrupted_download_resumes_after_its_cursor(dying, tmp_path):
    out = tmp_path / "r.jsonl"
    args = ("fetch", f"openreview:{VENUE}", "--api", dying, "--out", str(out),
            "--page-size", "50", "--retries", "0", "--quiet")
    first = run(*args, home=tmp_path)
    assert first.returncode == 2
    err = first.stderr.strip().splitlines()[-1]
    assert err.startswith("paperchat: error: cannot fetch") and "connection dropped" in err
    assert "150 papers are saved" in err and "run the same command again to resume" in err
    assert "Traceback" not in first.stderr and not out.exists()
    partial = out.with_name(out.name + ".partial")
    assert len(rows(partial)) == 150
    state = json.loads(out.with_name(out.name + ".partial.json").read_text())
    assert state["after"] == sample_ids()[149] and state["papers"] == 150

    second = run(*args, home=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "resuming" in second.stderr and "resumed after 150" in second.stdout
    assert "(4 requests;" in second.stdout  # pages 4-6 and the empty end, not the first three
    check_sample(out)
    assert not partial.exists()


def test_a_half_written_page_is_dropped_on_resume(replay, tmp_path):
    from index.fetch import fetch_openreview
    from index.fetch_source import Source

    out = tmp_path / "h.jsonl"
    source = Source("openreview", VENUE, replay)
    partial = out.with_name(out.name + ".partial")
    state = out.with_name(out.name + ".partial.json")
    first = rows_of_sample()[:50]
    body = "".join(json.dumps(r) + "\n" for r in first).encode()
    partial.write_bytes(body + b'{"id": "half a line')  # killed while writing the next page
    state.write_text(json.dumps({"source": source.key, "bytes": len(body), "after": first[-1]["id"],
                                 "papers": 50, "total": 300, "statuses": {"poster": 50}}))
    res = fetch_openreview(source, out, progress=False, page_size=100)
    assert res.resumed_from == 50 and res.papers == 300
    check_sample(out)


def rows_of_sample() -> list[dict]:
    from index.fetch import note_row

    notes = json.loads(shared("openreview_v2_sample.json").read_text(encoding="utf-8"))
    return [note_row(n) for n in sorted(notes, key=lambda n: n["id"])]


def test_a_partial_file_of_another_source_is_not_resumed(replay, tmp_path):
    from index.fetch import fetch_openreview
    from index.fetch_source import Source

    out = tmp_path / "o.jsonl"
    out.with_name(out.name + ".partial").write_text('{"id": "zzz"}\n')
    out.with_name(out.name + ".partial.json").write_text(json.dumps(
        {"source": "openreview:Other/2020/Conference|all=False|x", "bytes": 14, "after": "zzz",
         "papers": 1, "total": 1}))
    res = fetch_openreview(Source("openreview", VENUE, replay), out, progress=False)
    assert res.resumed_from == 0
    check_sample(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("source, flag", [(f"openreview:{VENUE}", "--api"),
                                          ("papercopilot:iclr/iclr2018", "--base")])
def test_unreachable_is_one_clear_line(tmp_path, source, flag):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    res = run("fetch", source, flag, url, "--out", str(tmp_path / "x.jsonl"), "--quiet",
              home=tmp_path)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"paperchat: error: cannot fetch {source} from {url}")
    assert "connection refused" in last and "needs the network" in last
    assert "nothing was saved" in last


def test_papercopilot_2018_list_with_ratings(replay, tmp_path):
    shared("iclr2018_papercopilot.json")
    res = run("fetch", "papercopilot:iclr/iclr2018", "--base", f"{replay}/paperlists",
              home=tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "lists" / "papercopilot-iclr-iclr2018.jsonl"  # the default --out
    got = rows(out)
    raw = json.loads(shared("iclr2018_papercopilot.json").read_text(encoding="utf-8"))
    assert [r["id"] for r in got] == [r["id"] for r in raw]
    assert Counter(r["status"] for r in got) == Counter(r["status"] for r in raw)
    assert sum(1 for r in got if r.get("ratings")) == sum(1 for r in raw if r["rating"]) == 972
    first = next(r for r in raw if r["rating"])
    mine = next(r for r in got if r["id"] == first["id"])
    assert mine["ratings"] == [float(x) for x in first["rating"].split(";")]
    assert mine["authors"] == first["author"].split(";")
    assert {(r["venue"], r["year"]) for r in got} == {("ICLR 2018", 2018)}
    assert "B/s" in res.stderr  # the download's progress bar


def test_papercopilot_unknown_list_says_how_lists_are_named(replay, tmp_path):
    res = run("fetch", "papercopilot:iclr/iclr1999", "--base", f"{replay}/paperlists",
              "--quiet", home=tmp_path)
    assert res.returncode == 2
    assert "Paper Copilot has no list 'iclr/iclr1999'" in res.stderr
    assert "Traceback" not in res.stderr


def test_an_unknown_venue_id_suggests_the_spelling_and_all(replay, tmp_path):
    res = run("fetch", "openreview:ICLR.cc/2031/Conference", "--api", replay, "--quiet",
              home=tmp_path)
    assert res.returncode == 2
    assert "no accepted papers for venue id 'ICLR.cc/2031/Conference'" in res.stderr
    assert "--all" in res.stderr


@pytest.mark.parametrize("args, message", [
    (["iclr2026"], "unknown source 'iclr2026'"),
    (["openreview:"], "empty or malformed name"),
    (["papercopilot:iclr"], "a Paper Copilot list is <conf>/<file>"),
    (["papercopilot:iclr/iclr2018", "--all"], "--all is for openreview: sources"),
    (["papercopilot:iclr/iclr2018", "--api", "http://127.0.0.1:1"], "--api is for openreview"),
    (["openreview:X/2026/Conference", "--base", "http://127.0.0.1:1"], "--base is for papercopilot"),
    (["openreview:X/2026/Conference", "--api", "ftp://x"], "is not an http:// or https:// URL"),
    (["openreview:X/2026/Conference", "--page-size", "5000"], "--page-size must be 1..1000"),
    (["openreview:X/2026/Conference", "--retries", "-1"], "--retries must be 0 or more"),
])
def test_bad_input_is_refused_before_any_request(tmp_path, args, message, capsys):
    from rag.cli import main

    # no server anywhere: each of these fails in argument checks, before a connection is tried
    assert main(["fetch", *args, "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("paperchat: error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1


def test_help_says_it_is_the_only_command_that_uses_the_network():
    res = subprocess.run([sys.executable, "-m", "rag", "fetch", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0
    flat = " ".join(res.stdout.split())
    assert "only paperchat command that uses the network" in flat
    top = subprocess.run([sys.executable, "-m", "rag", "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60).stdout
    assert "the only command that uses the network" in " ".join(top.split())


def test_fetch_then_index_indexes_what_it_fetched(replay, tmp_path, monkeypatch):
    """--index NAME builds the index from the fetched file (the fake embedder stands in for the
    real model at its constructor, so this stays a unit test)."""
    from rag import cli
    from rag.backends import embedder
    from rag.retrieve.retriever import Retriever
    from tests.conftest import FakeEmbedder

    home = tmp_path / "home"
    for key, value in {"PAPERCHAT_HOME": str(home), "PAPERCHAT_EMBEDDER": "fake-bow",
                       "PAPERCHAT_EMBED_BACKEND": "torch", "PAPERCHAT_MAP_LAYOUT": "0"}.items():
        monkeypatch.setenv(key, value)
    fake = FakeEmbedder()
    monkeypatch.setattr(embedder, "make_embedder", lambda settings: fake)
    assert cli.main(["fetch", f"openreview:{VENUE}", "--api", replay, "--index", "sample",
                     "--quiet"]) == 0
    listed = home / "lists" / "openreview-iclr.cc-2026-conference.jsonl"
    check_sample(listed)
    from rag.settings import Settings

    retriever = Retriever.open(Settings(index="sample"), fake, "sample")
    assert len(retriever) == 300
    assert sorted(retriever.papers) == sample_ids()
    oral = next(r for r in rows(listed) if r["status"] == "Accept (Oral)")
    hits = retriever.search(oral["title"], k=3, feedback=False).hits
    assert hits[0].paper.id == oral["id"] and hits[0].paper.status == "Accept (Oral)"



@pytest.mark.parametrize("venue, venueid, status, conference", [
    ("ICLR 2026 Oral", VENUE, "Accept (Oral)", "ICLR 2026"),
    ("ICLR 2026 Poster", VENUE, "Accept (Poster)", "ICLR 2026"),
    ("Submitted to ICLR 2025", "ICLR.cc/2025/Conference/Rejected_Submission", "Reject",
     "ICLR 2025"),
    ("ICLR 2026 Conference Withdrawn Submission",
     "ICLR.cc/2026/Conference/Withdrawn_Submission", "Withdrawn", "ICLR 2026"),
    ("ICLR 2026 Conference Desk Rejected Submission",
     "ICLR.cc/2026/Conference/Desk_Rejected_Submission", "Desk Rejected", "ICLR 2026"),
    ("ICLR 2026 Conference Submission", "ICLR.cc/2026/Conference/Submission", "Submitted",
     "ICLR 2026"),
])
def test_decision_from_venue_and_venueid(venue, venueid, status, conference):
    from index.fetch import note_row

    note = {"id": "abc", "forum": "abc", "content": {
        "title": {"value": "T"}, "abstract": {"value": "A"}, "venue": {"value": venue},
        "venueid": {"value": venueid}, "pdf": {"value": "/pdf/1.pdf"}}}
    row = note_row(note)
    assert (row["status"], row["venue"], row["year"]) == (status, conference,
                                                          int(conference[-4:]))
    assert row["pdf"] == "https://openreview.net/pdf/1.pdf"


def test_note_without_abstract_is_skipped_with_its_reason(tmp_path):
    from index.fetch import note_row

    with pytest.raises(ValueError, match="abstract"):
        note_row({"id": "x", "content": {"title": {"value": "T"}}})


def test_a_list_without_venue_takes_it_from_its_dated_openreview_venue(tmp_path):
    from index.sources import load_papers

    path = tmp_path / "papers.jsonl"  # a name that says nothing about the conference
    path.write_text(json.dumps({"id": "a", "title": "T", "abstract": "A", "status":
                                "Accept (Poster)", "venue_2025_11_22":
                                "ICLR 2026 Conference Submission"}) + "\n" +
                    json.dumps({"id": "b", "title": "T", "abstract": "A"}) + "\n")
    a, b = load_papers(path).papers
    assert (a.venue, a.year) == ("ICLR 2026", 2026)
    assert (b.venue, b.year) == ("", None)


def test_a_server_that_pages_smaller_than_asked_is_read_to_the_end(replay, tmp_path,
                                                                    monkeypatch):
    """An API that caps ``limit`` below what was asked (here 70 of 100) gives short pages before
    the end: the fetch goes on until the count is reached, losing nothing."""
    from index import fetch as fetch_mod
    from index import fetch_source

    real = fetch_mod.openreview_client

    class Capped:
        def __init__(self, client):
            self.client, self.limits = client, []

        def get_notes(self, **kw):
            self.limits.append(kw["limit"])
            return self.client.get_notes(**dict(kw, limit=min(kw["limit"], 70)))

    made = []
    monkeypatch.setattr(fetch_mod, "openreview_client",
                        lambda api, retries=None: made.append(Capped(real(api, retries)))
                        or made[-1])
    res = fetch_mod.fetch_openreview(fetch_source.Source("openreview", VENUE, replay),
                                     tmp_path / "c.jsonl", progress=False, page_size=100)
    assert res.papers == 300 and res.requests == 5  # 70 * 4 + 20
    check_sample(tmp_path / "c.jsonl")
