"""``paperchat chat`` and ``paperchat ask --continue``: a terminal conversation with the same plans
and answers as the browser, kept between sessions (real models, the bundled seed index, run as
the user runs them: subprocesses with their own PAPERCHAT_HOME)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rag.types import Paper
from rag.understand import history as hist
from rag.understand.history import Turn
from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def _run(args, home, stdin=None, timeout=600):
    env = {**os.environ, "PAPERCHAT_HOME": str(home), "PAPERCHAT_ANSWER_MODE": "extractive"}
    return subprocess.run([sys.executable, "-m", "rag", *args], cwd=ROOT, env=env, input=stdin,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def home(tmp_path_factory, real_settings):
    """A PAPERCHAT_HOME holding the seed index (copied from the session's real index)."""
    import shutil

    h = tmp_path_factory.mktemp("chat_home")
    shutil.copytree(real_settings.home / "indexes", h / "indexes")
    if (real_settings.home / "models").exists():
        shutil.copytree(real_settings.home / "models", h / "models")
    return h


def test_a_chat_session_follows_up_prints_bibtex_and_resets(home, real_index):
    out = _run(["chat"], home, stdin="Which paper proposes StepORLM?\nWhat results does it "
                "report?\n/bib\n/reset\n")
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "StepORLM" in text and "References:" in text
    assert "(about: StepORLM" in out.stderr  # the follow-up was read as being about it
    assert "@inproceedings{" in text and "openreview.net/forum?id=ZrgxU8WMmG" in text
    assert "(a new conversation)" in text
    saved = json.loads(hist.conversation_path(home, "default").read_text())
    assert saved["turns"] == [] and saved["index"] == "default"


def test_the_conversation_is_kept_for_the_next_session_and_ask_continue(home, real_index):
    first = _run(["chat"], home, stdin="Which paper proposes StepORLM?\n")
    assert first.returncode == 0, first.stderr[-2000:]
    again = _run(["chat"], home, stdin="/quit\n")
    assert "continuing a conversation of 1 turns" in again.stdout
    cont = _run(["ask", "--continue", "What results does it report?", "--json"], home)
    assert cont.returncode == 0, cont.stderr[-2000:]
    ans = json.loads(cont.stdout)
    assert ans["hits"][0]["id"] == "ZrgxU8WMmG" and ans["plan"]["papers"] == "focus"
    saved = json.loads(hist.conversation_path(home, "default").read_text())
    assert [t["question"] for t in saved["turns"]] == ["Which paper proposes StepORLM?",
                                                       "What results does it report?"]
    fresh = _run(["ask", "What results does it report?", "--json"], home)  # no --continue
    assert json.loads(fresh.stdout)["plan"]["papers"] != "focus"


def test_bad_input_in_the_chat_is_explained_not_a_traceback(home, real_index):
    out = _run(["chat"], home, stdin="/dance\n" + "x" * 5000 + "\n\n")
    assert out.returncode == 0 and "Traceback" not in out.stderr + out.stdout
    assert "unknown command '/dance'" in out.stdout
    assert "limit" in out.stderr  # the question is too long


def test_a_saved_conversation_round_trips_and_skips_papers_no_longer_indexed(tmp_path):
    a, b = Paper("a", "A", "x"), Paper("b", "B", "y")
    turns = [Turn("q1", "q1", [a, b], focus=1, numbered={1: a, 2: b}, kind="survey",
                  plan={"papers": "search", "op": "survey"})]
    path = hist.conversation_path(tmp_path, "idx")
    hist.save(path, turns, "idx")
    assert hist.load(path, {"a": a, "b": b}, "idx") == turns
    assert hist.load(path, {"a": a}, "idx")[0].numbered == {1: a}
    assert hist.load(path, {"a": a}, "other") == []      # kept for another index
    path.write_text("{not json")
    assert hist.load(path, {"a": a}, "idx") == []
