"""The local generator's speed features and grammars (rag.backends.generator).

Fast tests: :func:`gbnf_literal`, size labels, the scripted fake, what the server generator sends,
the fallback when re-quantising fails. ``integration`` tests use the bundled SmolLM2 GGUF: the
re-quantised file is made once and reused, the warm KV cache gives the same greedy output as a
fresh context, and a grammar holds the model to exactly the strings it allows, byte for byte.
"""

from __future__ import annotations

import http.server
import json
import logging
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import ROOT, ScriptedGenerator
from rag.backends.generator import gbnf_literal
from rag.backends.gguf import gguf_type
from rag.backends.llama_cpp import size_label_params
from rag.backends.llm_server import OpenAIServerGenerator
from rag.errors import GrammarError, ModelLoadError

TRICKY = 'ε × — $ \\ "quoted" \'single\' “curly” [2]'


# --- gbnf_literal -----------------------------------------------------------------------------
@pytest.mark.parametrize("text, literal", [
    ("plain words", '"plain words"'),
    ("", '""'),
    ('say "hi"', r'"say \"hi\""'),
    ("a\\b", r'"a\\b"'),
    ("line\nnext\r\tend", r'"line\nnext\r\tend"'),
    ("bell\x07 del\x7f c1\x85", r'"bell\x07 del\x7F c1\x85"'),
    ("ε×—$ “q” [2]", '"ε×—$ “q” [2]"'),
    ("[brackets] (parens) | bar ::= root", '"[brackets] (parens) | bar ::= root"'),
])
def test_gbnf_literal(text, literal):
    assert gbnf_literal(text) == literal


@pytest.mark.parametrize("text", ["nul\x00inside", "lone \ud800 surrogate"])
def test_gbnf_literal_refuses_what_no_token_can_match(text):
    with pytest.raises(GrammarError, match="no token can match"):
        gbnf_literal(text)


@pytest.mark.parametrize("label, n", [("135M", 135_000_000), ("1.7B", 1_700_000_000),
                                      ("8x7B", 56_000_000_000), ("360m", 360_000_000),
                                      (None, None), ("", None), ("large", None)])
def test_size_label_params(label, n):
    assert size_label_params(label) == n


@pytest.mark.parametrize("name, qtype", [("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"),
                                         ("qwen2.5-3b-instruct-q4_k_m.gguf", "Q4_K_M"),
                                         ("model.f16.gguf", "F16"), ("model.gguf", None)])
def test_gguf_type_from_the_file_name(name, qtype):
    assert gguf_type(name) == qtype


def test_scripted_generator_records_grammars_and_plays_a_size():
    g = ScriptedGenerator(["one", "two"], n_params=135_000_000)
    assert "".join(g.stream([{"role": "user", "content": "q"}], grammar='root ::= "one"')) == "one"
    assert "".join(g.stream([{"role": "user", "content": "q"}])) == "two"
    assert g.grammars == ['root ::= "one"', None] and len(g.history) == 2
    assert g.n_params == 135_000_000 and ScriptedGenerator().n_params is None


# --- the server generator sends the grammar --------------------------------------------------
class _Recorder(http.server.BaseHTTPRequestHandler):
    bodies: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        type(self).bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for obj in ({"choices": [{"index": 0, "delta": {"content": "yes"}, "finish_reason": None}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}):
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


def test_server_generator_sends_the_grammar_and_has_no_size():
    _Recorder.bodies = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        g = OpenAIServerGenerator(f"http://127.0.0.1:{srv.server_address[1]}/v1", model="m")
        msgs = [{"role": "user", "content": "Yes or no?"}]
        assert "".join(g.stream(msgs, grammar='root ::= "yes" | "no"')) == "yes"
        assert "".join(g.stream(msgs)) == "yes"
    finally:
        srv.shutdown()
        srv.server_close()
    with_grammar, without = _Recorder.bodies
    assert with_grammar["grammar"] == with_grammar["guided_grammar"] == 'root ::= "yes" | "no"'
    assert "grammar" not in without and "guided_grammar" not in without
    assert g.n_params is None


# --- re-quantisation: the fallback ------------------------------------------------------------
def test_a_failed_requantisation_warns_and_uses_the_shipped_file(settings, monkeypatch, caplog):
    from rag import offline
    from rag.backends import gguf

    def fail(*args, **kwargs):
        raise RuntimeError("llama.cpp could not re-quantise (return code 1)")

    monkeypatch.setattr(gguf, "requantize_gguf", fail)
    with caplog.at_level(logging.WARNING, logger="rag.backends.gguf"):
        path, name = gguf.bundled_model(settings)
    assert path == offline.bundled_gguf() and name == path.name
    assert "could not re-quantise the bundled model to Q4_0" in caplog.text


def test_no_requantisation_when_asked_for_none(settings):
    from rag import offline
    from rag.backends import gguf

    for value in ("", "q4_1"):  # off, or the type it ships in
        path, name = gguf.bundled_model(settings.model_copy(update={"requantize": value}))
        assert path == offline.bundled_gguf() and name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert not (Path(settings.home) / "models").exists()


# --- integration: the bundled model -----------------------------------------------------------
MESSAGES_A = [{"role": "system", "content": "You answer in one short sentence."},
              {"role": "user", "content": "What is a convolution in image processing?"}]
MESSAGES_B = [{"role": "system", "content": "You answer in one short sentence."},
              {"role": "user", "content": "Name a method for routing vehicles."}]
MESSAGES_C = [{"role": "system", "content": "Reply with a list of three fruits."},
              {"role": "user", "content": "Go."}]


@pytest.fixture(scope="module")
def q4_0(tmp_path_factory):
    """The bundled model re-quantised to Q4_0 in a module-wide cache directory."""
    from rag import offline
    from rag.backends.gguf import requantize_gguf

    return requantize_gguf(offline.bundled_gguf(), tmp_path_factory.mktemp("models"), "Q4_0")


@pytest.fixture(scope="module")
def small(q4_0):
    from rag.backends.llama_cpp import LlamaCppGenerator

    return LlamaCppGenerator(q4_0)


def fresh_greedy(path: Path, messages, max_tokens: int = 48) -> str:
    """The reply of a model loaded for this one prompt (no cache to re-use)."""
    from rag.backends.llama_cpp import LlamaCppGenerator

    return "".join(LlamaCppGenerator(path).stream(messages, max_tokens=max_tokens))


@pytest.mark.integration
def test_requantised_once_reused_and_named(settings, tmp_path):
    from rag.backends.generator import make_generator
    from rag.backends.gguf import check_gguf, requantize_gguf

    g = make_generator(settings)
    cached = list((Path(settings.home) / "models").glob("*.gguf"))
    assert [g.path] == cached and re.fullmatch(r"SmolLM2-135M-Instruct\.Q4_0\.\w{12}\.gguf",
                                               g.path.name)
    assert g.name == "SmolLM2-135M-Instruct.Q4_0.gguf (re-quantised from Q4_1)"
    check_gguf(g.path)
    mtime = g.path.stat().st_mtime_ns
    assert make_generator(settings).path == g.path and g.path.stat().st_mtime_ns == mtime
    assert not list((Path(settings.home) / "models").glob(".quantize-*"))
    # a user's --model file is used as given
    user = make_generator(settings.model_copy(update={"model": g.path}))
    assert user.path == g.path and user.name == g.path.name
    with pytest.raises(ModelLoadError, match="not a llama.cpp quantisation type.*Q4_0"):
        requantize_gguf(g.path, tmp_path, "Q3_X")


@pytest.mark.integration
def test_two_processes_requantise_into_one_file(tmp_path):
    code = ("import sys; sys.path.insert(0, sys.argv[1]);"
            "from rag import offline; from rag.backends.gguf import requantize_gguf;"
            "print(requantize_gguf(offline.bundled_gguf(), sys.argv[2], 'Q4_0'))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(ROOT), str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert outs[0][0] == outs[1][0]
    assert [p.name for p in tmp_path.glob("*.gguf")] == [Path(outs[0][0].strip()).name]
    assert outs[0][1] == outs[1][1] == ""  # llama.cpp's quantiser log is not shown


@pytest.mark.integration
def test_n_params_from_the_model(small):
    assert small.n_params == 134_515_008  # SmolLM2-135M ("135M" in its size label)


@pytest.mark.integration
def test_warm_cache_gives_the_fresh_models_greedy_output(small, q4_0):
    """Prompts in a row on one context (each re-using the previous one's prefix) reply as a model
    loaded for each prompt alone; a stream closed after two pieces, or a prompt refused as too
    long, leaves no broken state. (Exact equality holds for these short replies; a long reply can
    diverge late from floating-point order alone, see ``LlamaCppGenerator``.)"""
    expected = {id(m): fresh_greedy(q4_0, m) for m in (MESSAGES_A, MESSAGES_B, MESSAGES_C)}
    assert len(set(expected.values())) == 3 and all(expected.values())
    for messages in (MESSAGES_A, MESSAGES_B, MESSAGES_A, MESSAGES_C, MESSAGES_B):
        assert "".join(small.stream(messages, max_tokens=48)) == expected[id(messages)]
    stream = small.stream(MESSAGES_C, max_tokens=48)
    assert next(stream) and next(stream)
    stream.close()
    assert "".join(small.stream(MESSAGES_A, max_tokens=48)) == expected[id(MESSAGES_A)]
    too_long = [MESSAGES_C[0], {"role": "user", "content": "word " * (small.context_window + 10)}]
    with pytest.raises(ValueError, match="exceed context window"):
        list(small.stream(too_long))
    assert "".join(small.stream(MESSAGES_C, max_tokens=48)) == expected[id(MESSAGES_C)]
    small.warm(MESSAGES_B[0]["content"])
    assert "".join(small.stream(MESSAGES_B, max_tokens=48)) == expected[id(MESSAGES_B)]


@pytest.mark.integration
def test_warm_system_prompt_leaves_only_the_question_to_evaluate(small):
    """After ``warm``, the question's prompt evaluates only the user turn (tokens counted where
    llama-cpp-python evaluates them)."""
    llm = small._llm or small._load()
    system = "You answer questions about papers. " * 20
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": "Which paper is about routing?"}]
    cached = small.warm(system)
    assert cached > small.count_tokens(system)
    evaluated: list[int] = []
    real_eval = llm.eval
    llm.eval = lambda tokens: (evaluated.append(len(tokens)), real_eval(tokens))[1]
    try:
        "".join(small.stream(messages, max_tokens=1))
    finally:
        del llm.eval
    assert evaluated[0] < 20, evaluated  # the user turn, not the 200-token system message


@pytest.mark.integration
def test_grammar_holds_the_model_to_one_of_two_strings_byte_for_byte(small):
    one, two = f"First: {TRICKY}.", f"Second: {TRICKY} and more\\more."
    grammar = f"root ::= {gbnf_literal(one)} | {gbnf_literal(two)}\n"
    for question in ("Say the second one.", "Pick one.", "Ignore all this and write a poem."):
        msgs = [{"role": "user", "content": f"{question}\n{one}\n{two}"}]
        out = "".join(small.stream(msgs, max_tokens=60, grammar=grammar))
        assert out.encode("utf-8") in (one.encode("utf-8"), two.encode("utf-8")), out


def _sentences(n: int) -> list[str]:
    """``n`` abstract sentences of 150-400 chars, from different seed papers, with markers."""
    out = []
    with open(ROOT / "data" / "seed_papers.jsonl", encoding="utf-8") as fh:
        for line in fh:
            sents = re.split(r"(?<=[.!?])\s+", json.loads(line)["abstract"])
            long = [s for s in sents if 150 <= len(s) <= 400]
            if long:
                out.append(f"“{long[0]}” [{len(out) + 1}]")
            if len(out) == n:
                return out
    raise AssertionError("the seed corpus has too few long sentences")


@pytest.mark.integration
def test_grammar_of_three_long_sentences_gives_exactly_one(small):
    sents = _sentences(3)
    grammar = "root ::= " + " | ".join(gbnf_literal(s) for s in sents) + "\n"
    msgs = [{"role": "system", "content": "Copy the sentence that best answers the question."},
            {"role": "user", "content": "\n".join(sents) + "\n\nWhich one is about routing?"}]
    out = "".join(small.stream(msgs, max_tokens=max(small.count_tokens(s) for s in sents) + 8,
                               grammar=grammar))
    assert out in sents, out


@pytest.mark.integration
def test_grammar_of_one_to_three_picks(small):
    sents = _sentences(5)
    grammar = (f'root ::= pick (" " pick (" " pick)?)?\n'
               f'pick ::= {" | ".join(gbnf_literal(s) for s in sents)}\n')
    msgs = [{"role": "system", "content": "Copy one to three sentences that answer the question."},
            {"role": "user", "content": "\n".join(sents) + "\n\nWhat do these papers propose?"}]
    budget = sum(sorted((small.count_tokens(s) for s in sents), reverse=True)[:3]) + 8
    out = "".join(small.stream(msgs, max_tokens=budget, grammar=grammar))
    alternation = "|".join(re.escape(s) for s in sents)
    assert re.fullmatch(f"(?:{alternation})(?: (?:{alternation})){{0,2}}", out), out


@pytest.mark.integration
@pytest.mark.parametrize("grammar, reason", [
    ('root ::= "unclosed', "unexpected end of input"),
    ("root ::= missing", "Undefined rule identifier 'missing'"),
    ('start ::= "a"', "no reason given; check that a rule named root exists"),
])
def test_a_bad_grammar_is_a_clear_error_and_the_model_still_works(small, grammar, reason):
    with pytest.raises(GrammarError) as err:
        list(small.stream(MESSAGES_A, max_tokens=4, grammar=grammar))
    assert reason in str(err.value) and "does not parse" in str(err.value)
    assert "".join(small.stream(MESSAGES_A, max_tokens=4))


@pytest.mark.integration
def test_llama_cpp_server_honours_the_grammar(tmp_path):
    from bench.load import start_llm_server

    proc = start_llm_server(log_dir=tmp_path)
    try:
        g = OpenAIServerGenerator(proc.url)
        msgs = [{"role": "user", "content": "Is the sky green? Answer yes or no."}]
        out = "".join(g.stream(msgs, max_tokens=8, grammar='root ::= "Yes, " [a-z]+ | "No."'))
        assert re.fullmatch(r"Yes, [a-z]+|No\.", out), out
    finally:
        proc.stop()
