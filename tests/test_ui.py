"""The Gradio app: pure rendering and settings helpers, then the served app through gradio_client
(fakes: the seed corpus indexed with FakeEmbedder, a scripted model), and one real-model test.

The served tests start the app on a free loopback port in this process (``prevent_thread_lock``)
and talk to it over HTTP like any client, so sessions, the queue and ``gr.State`` are real.
"""

from __future__ import annotations

import socket

import pytest

from conftest import ScriptedGenerator
from rag.types import Answer, AnswerSentence, Citation, Hit, Paper

gr = pytest.importorskip("gradio")
pytestmark = pytest.mark.filterwarnings(  # from gradio's queue internals, not ours
    "ignore:.*(no_silent_downcasting|copy keyword).*")
gradio_client = pytest.importorskip("gradio_client")

from ui import app as ui_app  # noqa: E402
from ui import cards, chat_tab, controls  # noqa: E402
from ui import render  # noqa: E402

CVRP = "aITKXFeivk"        # Refining Hybrid Genetic Search for CVRP via RL-Finetuned LLM
QUANT = "ZXr3Xx7Z1O"       # Training Dynamics Impact Post-Training Quantization Robustness
#: A lookup in words (a bare noun phrase such as "crossover operators for CVRP" is read as a
#: survey of the papers on it, rag.understand.read): the tests that expect "The closest match is ..."
LOOKUP = "Which paper refines hybrid genetic search for CVRP with crossover operators?"
XSS_TITLE = 'Robust <script>alert("x")</script> <img src=x onerror=alert(1)> Sparsifiers'


def paper(pid="p1", title="A Paper", **kw) -> Paper:
    return Paper(pid, title, "An abstract. It has two sentences.", **kw)


# --- rendering (no server) --------------------------------------------------------------------
def test_card_escapes_html_and_unsafe_urls():
    hit = Hit(paper("p1", XSS_TITLE, status="Accept (Oral)<b>", primary_area="<i>area</i>",
                    url="javascript:alert(1)"), 0.5, evidence=["<script>e()</script> evidence"])
    out = cards.card_html(1, hit)
    assert "<script>" not in out and "<img" not in out and "<b>" not in out and "<i>" not in out
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in out
    assert "javascript:" not in out and 'href="https://openreview.net/forum?id=p1"' in out
    assert 'id="card-1"' in out and 'target="_blank"' in out and 'rel="noopener noreferrer"' in out


def test_card_highlights_an_abstract_sentence_not_the_title_grounding_matched():
    from rag.types import Citation

    p = paper("p1", "Sparsifiers of $\\textit{Kernel}$ Graphs")
    hit = Hit(p, 0.5, evidence=["An abstract.", "It has two sentences."])
    by_title = cards.card_html(1, hit, Citation(1, p, evidence="Sparsifiers of Kernel Graphs"))
    assert '<mark class="pc-support">An abstract.</mark>' in by_title
    by_sentence = cards.card_html(1, hit, Citation(1, p, evidence="It has two sentences."))
    assert '<mark class="pc-support">It has two sentences.</mark>' in by_sentence


def test_card_url_cannot_break_out_of_its_attribute():
    hit = Hit(paper("p2", url='https://openreview.net/forum?id=p2" onmouseover="alert(1)'), 0.1)
    out = cards.card_html(2, hit)
    assert 'onmouseover="' not in out and "&quot; onmouseover=&quot;" in out


def evidence_answer(**kw) -> Answer:
    """An extractive answer with a sentence of every kind but ``claim``."""
    hits = [Hit(paper("a", "First"), 0.3), Hit(paper("b", "Second <x>"), 0.2)]
    q1 = "We propose <b>X</b> for [9] *routing*."
    sentences = [
        AnswerSentence("The closest match is First [1].", [1], True, 0.9, kind="direct"),
        AnswerSentence(f"“{q1}” [1]", [1], True, 0.95, kind="quote", quote=q1),
        AnswerSentence("Also relevant:", [], True, 1.0, kind="heading"),
        AnswerSentence("Second <x> [2]: “It <i>also</i> routes.”", [2], True, 0.7, kind="item",
                       quote="It <i>also</i> routes."),
        AnswerSentence("The abstracts cannot say how many <papers> there are.", [], True, 1.0,
                       kind="note"),
    ]
    return Answer("q", "q", "text", [Citation(1, hits[0].paper, True, 0.9, q1)], hits,
                  sentences=sentences, **kw)


def test_answer_renders_sentences_by_kind():
    out = render.answer_markdown(evidence_answer())
    direct, rest = out.split("\n\n", 1)
    assert direct == ('The closest match is First '
                      '<a class="pc-cite" href="#card-1" title="First">[1]</a>.')
    # a quote: a blockquote, its text escaped exactly (no Markdown, no markup), a chip to card 1
    assert ('<blockquote class="pc-quote"><span class="pc-quote-text">'
            '“We propose &lt;b&gt;X&lt;/b&gt; for [9] *routing*.”</span> '
            '<a class="pc-cite" href="#card-1" title="First">[1]</a></blockquote>') in rest
    assert '<p class="pc-heading">Also relevant:</p>' in rest
    assert ('<ul class="pc-items"><li><span class="pc-item-title">Second &lt;x&gt; '
            '<a class="pc-cite" href="#card-2" title="Second &lt;x&gt;">[2]</a></span>: '
            '<q class="pc-item-quote">It &lt;i&gt;also&lt;/i&gt; routes.</q></li></ul>') in rest
    assert ('<p class="pc-note-line">The abstracts cannot say how many &lt;papers&gt; there '
            'are.</p>') in rest
    assert "<b>X" not in out and "<i>also" not in out and "<papers>" not in out
    assert "pc-unsupported-note" not in out  # nothing the model wrote was left out
    assert out.endswith('<div class="pc-mode-line">extractive · sentences quoted from the '
                        'abstracts</div>')
    # HTML blocks must not hold a blank line (Markdown would end the block there)
    assert all("\n" not in block for block in out.split("\n\n"))


def test_consecutive_items_make_one_list_and_claims_one_paragraph():
    ans = evidence_answer(mode="generative", model="SmolLM2 <135M>")
    item = ans.sentences[3]
    ans.sentences[4:4] = [AnswerSentence("[1]: “Again.”", [1], True, 0.8, kind="item",
                                         quote="Again.")]
    ans.sentences += [AnswerSentence("It routes [1].", [1], True, 0.7, kind="claim"),
                      AnswerSentence("It is fast [2].", [2], True, 0.6, kind="claim")]
    out = render.answer_markdown(ans)
    assert out.count("<ul") == 1 and out.count("<li>") == 2 and item.quote not in out
    assert ('It routes <a class="pc-cite" href="#card-1" title="First">[1]</a>. It is fast '
            '<a class="pc-cite" href="#card-2"') in out
    assert ('<div class="pc-mode-line">generative · written by <b>SmolLM2 &lt;135M&gt;</b>, '
            'checked against the abstracts (an automatic check') in out


def test_unsupported_sentences_are_never_in_the_body_but_in_a_collapsed_note():
    hits = [Hit(paper("a", "First"), 0.3), Hit(paper("b", "Second <x>"), 0.2)]
    ans = Answer("q", "q", "Good claim [1].", [Citation(1, hits[0].paper, True, 0.8, "ev a")],
                 hits, mode="generative", model="m",
                 sentences=[AnswerSentence("The closest match is First [1].", [1], True, 0.9,
                                           kind="direct"),
                            AnswerSentence("Good claim [1].", [1], True, 0.8, kind="claim"),
                            AnswerSentence("Flipped <u>claim</u> [2].", [2], False, 0.4,
                                           kind="claim")],
                 unsupported=[AnswerSentence("Weak <i>claim</i> [2].", [2], False, 0.2,
                                             kind="claim")])
    out = render.answer_markdown(ans)
    body, details = out.split('<details class="pc-unsupported-note">')
    assert "Weak" not in body and "Flipped" not in body and "Good claim" in body
    assert details.startswith("<summary>Not supported by the cited abstracts (2)</summary>")
    assert "Weak &lt;i&gt;claim&lt;/i&gt; " in details and "<i>" not in details
    assert "Flipped &lt;u&gt;claim&lt;/u&gt;" in details
    assert "support 0.20" in details and "support 0.20 &lt; 0.50" in details  # shown + tooltip
    assert 'href="#card-2" title="Second &lt;x&gt;"' in details
    assert details.index("</details>") < details.index('class="pc-mode-line"')


def test_comparison_table_comes_from_the_rows_right_after_the_direct_line():
    hits = [Hit(paper("a", "First"), 0.3), Hit(paper("b", "Second"), 0.2)]
    rows = [["Aspect", "First [1]", "Second [2]"], ["Approach", "a <b> | c", "b"]]
    ans = Answer("compare a and b", "compare a and b", "no table in this text", [], hits,
                 comparison=rows, comparison_ids=["a", "b"],
                 sentences=[AnswerSentence("First [1] and Second [2], side by side:", [1, 2],
                                           True, 0.9, kind="direct"),
                            AnswerSentence("[1]: “Distinct.”", [1], True, 0.9, kind="item",
                                           quote="Distinct.")])
    out = render.answer_markdown(ans)
    direct, table, items, mode = out.split("\n\n")
    assert direct.startswith("First <a class=\"pc-cite\" href=\"#card-1\"")
    assert table.startswith('| Aspect | First <a class="pc-cite" href="#card-1"')
    assert "| Approach | a &lt;b&gt; \\| c | b |" in table
    assert items.startswith('<ul class="pc-items">') and "pc-mode-line" in mode
    assert "no table in this text" not in out


def test_answer_without_sentences_shows_its_text():
    hits = [Hit(paper(), 0.3)]
    out = render.answer_markdown(Answer("q", "q", "Plain <b>text</b> [1].", [], hits))
    assert out.startswith('Plain &lt;b&gt;text&lt;/b&gt; <a class="pc-cite" href="#card-1"')


def test_streaming_links_only_markers_that_point_at_hits():
    hits = [Hit(paper(), 0.3)]
    out = render.streaming_markdown("See [1] and [7] and [1, 2].", hits)
    assert out.count('href="#card-1"') == 2 and "[7]" in out and "#card-7" not in out


def test_streaming_shows_quotes_as_markdown_and_keeps_the_cursor_off_a_table_row():
    hits = [Hit(paper(), 0.3)]
    out = render.streaming_markdown("Direct [1].\n\n> “<b>q</b>” [1]\n\n- x", hits)
    assert "\n\n> “&lt;b&gt;q&lt;/b&gt;” <a class=\"pc-cite\"" in out
    assert out.endswith("- x" + render.CURSOR)
    table = render.streaming_markdown("Side by side [1]:\n\n| a | b |\n|---|---|\n| c | d |",
                                      hits)
    assert table.endswith("| c | d |\n\n" + render.CURSOR)
    assert render.stopped_markdown(table).endswith("(stopped; not checked, not remembered)</span>")


def test_refusal_says_so_and_lists_the_nearest_papers():
    hits = [Hit(paper(), 0.01)]
    from rag.compose.citations import REFUSAL

    ans = Answer("q", "q", REFUSAL, [], hits, refused=True)
    out = render.answer_markdown(ans)
    assert "No paper in this index answers this" in out
    assert out.count("No paper in this index") == 1  # said once
    html = cards.sources_html(hits, answer=ans, refused=True, question="q")
    assert "None of these papers appears to answer" in html and 'id="card-1"' in html


def test_searching_for_shown_only_when_the_question_was_rewritten():
    hits = [Hit(paper(), 0.3)]
    assert "Searching for" not in cards.sources_html(hits, question="q", standalone="q")
    out = cards.sources_html(hits, question="what did they beat?",
                             standalone="what did they beat? (about: <A>)")
    assert "Searching for: what did they beat? (about: &lt;A&gt;)" in out


@pytest.mark.parametrize("auth, expected, error", [
    (None, None, None),
    ("", None, None),
    ("alice:s3cret:x", ("alice", "s3cret:x"), None),
    ("alice:", None, "both a user and a password"),
    (":pw", None, "both a user and a password"),
    ("nocolon", None, "USER:PASS or a file"),
])
def test_parse_auth(auth, expected, error):
    if error:
        with pytest.raises(ui_app.UIConfigError, match=error):
            ui_app.parse_auth(auth)
    else:
        assert ui_app.parse_auth(auth) == expected


def test_parse_auth_reads_a_file(tmp_path):
    f = tmp_path / "auth.txt"
    f.write_text("bob:pa:ss\n")
    assert ui_app.parse_auth(str(f)) == ("bob", "pa:ss")


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.3.2.1", True),
                                            ("::1", True), ("localhost", True),
                                            ("0.0.0.0", False), ("192.168.1.4", False),
                                            ("example.org", False)])
def test_is_loopback(host, loopback):
    assert ui_app.is_loopback(host) is loopback


@pytest.mark.parametrize("status, area, expected", [
    ("any", "any", []), (None, None, []), ("Oral", "any", ["status=oral"]),
    ("accepted", "optimization", ["status=accepted", "primary_area=optimization"]),
])
def test_filters_for(status, area, expected):
    assert controls.filters_for(status, area).as_strings() == expected


def test_filters_for_rejects_an_unknown_status():
    from rag.filters import FilterError

    with pytest.raises(FilterError, match="unknown status"):
        controls.filters_for("best", "any")


@pytest.mark.parametrize("key, keys, status, area, drops, expected", [
    # a dropdown's filter: that dropdown goes back to "any"
    ("filter:status=oral", ["filter:status=oral"], "oral", "any", [],
     ("any", "any", ["filter:status=oral"])),
    ("filter:primary_area=learning theory",
     ["filter:status=poster", "filter:primary_area=learning theory"], "poster",
     "learning theory", [], ("poster", "any", ["filter:primary_area=learning theory"])),
    # read from the question's words: the dropdowns stay, the part is dropped
    ("filter:status=oral", ["filter:status=oral", "filter:primary_area=optimization"], "any",
     "optimization", ["order"], ("any", "optimization", ["order", "filter:status=oral"])),
    ("order", ["papers", "order"], None, None, None, ("any", "any", ["order"])),
    ("papers", ["papers", "filter:status=oral"], "oral", "any", [],
     ("oral", "any", ["papers"])),
    # the same filter from both: the dropdown resets and the words' copy is dropped too
    ("filter:status=Oral", ["filter:status=Oral"], "oral", "any", ["filter:status=Oral"],
     ("any", "any", ["filter:status=Oral"])),
])
def test_without_part(key, keys, status, area, drops, expected):
    assert chat_tab.without_part(key, keys, status, area, drops) == expected


@pytest.mark.parametrize("key", ["filter:status=spotlight", "", None, ["filter:status=oral"],
                                 "status=oral"])
def test_without_part_rejects_a_part_the_answer_did_not_have(key):
    from rag.filters import FilterError

    with pytest.raises(FilterError, match="not a part of the last answer's plan"):
        chat_tab.without_part(key, ["papers", "filter:status=oral"], "oral", "any", [])


def test_serve_warns_when_exposed_without_auth(monkeypatch, capsys, settings):
    launched = {}

    class FakePipeline:
        def __init__(self, s):
            self.settings = s

    monkeypatch.setattr("rag.chat.pipeline.Pipeline", FakePipeline)
    monkeypatch.setattr(ui_app, "build_app", lambda p: object())
    monkeypatch.setattr(ui_app, "launch", lambda demo, **kw: launched.update(kw))
    FakePipeline.retriever = type("R", (), {"name": "default", "__len__": lambda s: 0})()
    FakePipeline.generator = type("G", (), {"name": "g"})()
    FakePipeline.warm_up = lambda self, system_prompt=None: {"index": 1.0}

    assert ui_app.serve(settings, host="0.0.0.0", port=1234) == 0
    assert "without --auth" in capsys.readouterr().err
    assert launched["host"] == "0.0.0.0" and launched["auth"] is None
    assert ui_app.serve(settings, host="127.0.0.1", port=1234, auth="u:p") == 0
    assert "warning" not in capsys.readouterr().err and launched["auth"] == ("u", "p")


# --- the served app, with fakes ---------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(pipeline):
    demo = ui_app.build_app(pipeline)
    _, url, _ = ui_app.launch(demo, port=free_port(), block=False, quiet=True)
    return demo, url


@pytest.fixture
def served(fake_index, fake_embedder):
    """(url, generator, embedder) of the app over the fake index; closed after the test."""
    from rag.chat.pipeline import Pipeline

    settings, retriever = fake_index
    generator = ScriptedGenerator()
    demo, url = start(Pipeline(settings, embedder=fake_embedder, generator=generator,
                               retriever=retriever))
    yield url, generator, fake_embedder
    demo.close()


def text(message: dict) -> str:
    """A chat message's text (Gradio 6 sends content as a list of typed parts)."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def client(url):
    return gradio_client.Client(url, verbose=False, download_files=False)


def test_chat_answers_with_sources(served):
    url, generator, _ = served
    generator.enqueue("RFTHGS fine-tunes a small LLM to write crossover operators [1].")
    chat, box, sources, bib, *_ = client(url).predict(
        "crossover operators for CVRP hybrid genetic search", "any", "any", api_name="/chat")
    assert [m["role"] for m in chat] == ["user", "assistant"]
    assert "crossover operators [1]" not in text(chat[1])  # the marker became a link
    assert 'href="#card-1"' in text(chat[1]) and "RFTHGS" in text(chat[1])
    assert 'id="card-1"' in sources and "Refining Hybrid Genetic Search for CVRP" in sources
    assert "openreview.net/forum?id=" + CVRP in sources
    assert "@inproceedings{" in bib and CVRP in bib


def test_ask_endpoint_returns_the_cli_json(served):
    url, generator, _ = served
    generator.enqueue("It refines hybrid genetic search [1].")
    out = client(url).predict(LOOKUP,
                              "accepted", "optimization", api_name="/ask")
    assert out["hits"][0]["id"] == CVRP and out["citations"][0]["id"] == CVRP
    assert out["mode"] == "generative" and out["model"] == "scripted"  # auto: size unknown
    assert out["answer"].startswith("The closest match is Refining Hybrid")
    assert "It refines hybrid genetic search [1]." in out["answer"]
    assert out["filters_applied"] == ["status=accepted", "primary_area=optimization"]
    assert "[1] [Refining Hybrid" in out["markdown"]


def test_ask_endpoint_takes_an_answer_mode(served):
    url, generator, _ = served
    c = client(url)
    out = c.predict(LOOKUP, "any", "any",
                    "extractive", api_name="/ask")
    assert out["mode"] == "extractive" and out["model"] == "" and generator.history == []
    kinds = [s["kind"] for s in out["sentences"]]
    assert kinds[0] == "direct" and "quote" in kinds and out["filters_applied"] == []
    assert "\n\n> “" in out["markdown"]
    with pytest.raises(gradio_client.exceptions.AppError, match="unknown answer mode"):
        c.predict("hybrid genetic search", "any", "any", "<b>poetic</b>", api_name="/ask")
    assert generator.history == []


def test_sessions_keep_separate_histories(served):
    url, generator, _ = served
    for _ in range(4):
        generator.enqueue("This paper is about it [1].")
    a, b = client(url), client(url)
    jobs = [a.submit("crossover operators for CVRP hybrid genetic search", "any", "any",
                     api_name="/chat"),
            b.submit("training dynamics post-training quantization robustness", "any", "any",
                     api_name="/chat")]
    first = [j.result(timeout=60) for j in jobs]  # concurrent sessions, serialised generation
    assert CVRP in first[0][2] and QUANT in first[1][2]
    chat, _, sources, *_ = b.predict("What baselines did they beat?", "any", "any",
                                     api_name="/chat")
    assert "Searching for: What baselines did they beat? (about: " in sources, sources[:300]
    assert "Training Dynamics" in sources.split("id=\"card-2\"")[0]  # B's paper first
    assert CVRP not in sources.split('id="card-2"')[0]  # B's follow-up is not about A's paper
    assert len(chat) == 4  # B's two turns only
    chat_a, *_ = a.predict("What did they propose?", "any", "any", api_name="/chat")
    assert len(chat_a) == 4 and "Refining Hybrid Genetic Search" in text(chat_a[-1])


@pytest.mark.parametrize("question, message", [("   ", "empty"), ("x" * 4001, "limit")])
def test_bad_question_is_an_error_not_a_crash(served, question, message):
    url, generator, embedder = served
    c = client(url)
    calls = len(embedder.calls)
    with pytest.raises(gradio_client.exceptions.AppError, match=message):
        c.predict(question, "any", "any", api_name="/chat")
    assert len(embedder.calls) == calls and generator.history == []  # nothing retrieved
    generator.enqueue("Still fine [1].")
    chat, *_ = c.predict("crossover operators for CVRP hybrid genetic search", "any", "any",
                         api_name="/chat")
    assert "Still fine" in text(chat[-1])


def test_unknown_status_filter_is_an_error(served):
    url, _, _ = served
    with pytest.raises(gradio_client.exceptions.AppError, match="unknown status"):
        client(url).predict("hybrid genetic search", "<b>best</b>", "any", api_name="/ask")


def test_regenerate_and_clear(served):
    url, generator, _ = served
    c = client(url)
    c.predict("any", "any", api_name="/regenerate")  # nothing to redo yet: a warning, no crash
    generator.enqueue("First try [1].")
    generator.enqueue("Second try [1].")
    c.predict("hybrid genetic search for CVRP", "any", "any", api_name="/chat")
    chat, *_ = c.predict("any", "any", api_name="/regenerate")
    assert len(chat) == 2 and "Second try" in text(chat[1])
    chat, *_ = c.predict(api_name="/clear")
    assert chat == []


def test_chat_mode_and_let_the_model_write_it(served):
    url, generator, _ = served
    c = client(url)
    c.predict("any", "any", api_name="/model_writes")  # nothing yet: a warning, no crash
    chat, *_ = c.predict(LOOKUP, "any", "any",
                         "extractive", api_name="/chat")
    assert generator.history == [] and "<blockquote class=\"pc-quote\">" in text(chat[1])
    assert "extractive · sentences quoted from the abstracts" in text(chat[1])
    generator.enqueue("RFTHGS fine-tunes a compact LLM to generate crossover operators [1].")
    chat, *_ = c.predict("any", "any", api_name="/model_writes")
    assert len(chat) == 2 and len(generator.history) == 1  # the answer was replaced
    assert "generative · written by <b>scripted</b>" in text(chat[1])


def test_turn_for_puts_the_papers_the_answer_is_about_first():
    hits = [Hit(paper(i, i.upper()), 1 - n / 10) for n, i in enumerate("abcd")]
    ans = Answer("q", "q", "t", [Citation(1, hits[0].paper), Citation(4, hits[3].paper),
                                 Citation(3, hits[2].paper)], hits, about_ids=["c", "a"])
    turn = chat_tab.turn_for(ans)
    assert [p.id for p in turn.papers] == ["c", "a", "d"] and turn.focus == 2
    assert [p.id for p in turn.discussed] == ["c", "a"]
    plain = chat_tab.turn_for(Answer("q", "q", "t", [], hits))
    assert [p.id for p in plain.papers] == list("abcd") and plain.focus == 1
    assert chat_tab.turn_for(Answer("q", "q", "t", [], hits, refused=True)).papers == []


def test_filters_restrict_the_sources(served):
    url, generator, _ = served
    generator.enqueue("Nothing to see [1].")
    out = client(url).predict("hybrid genetic search", "any", "learning theory", api_name="/ask")
    assert out["hits"] and all(h["primary_area"] == "learning theory" for h in out["hits"])


ORAL_CVRP = "oral papers on crossover operators for CVRP hybrid genetic search"


def test_ask_drops_a_filter_read_from_the_question(served):
    """Every seed paper is a poster: 'oral papers on ...' finds none until status=oral is
    dropped (what a chip's x does for a filter said in words)."""
    url, _, _ = served
    c = client(url)
    oral = c.predict(ORAL_CVRP, "any", "any", "extractive", api_name="/ask")
    assert oral["filters_applied"] == ["status=oral"] and oral["hits"] == []
    dropped = c.predict(ORAL_CVRP, "any", "any", "extractive", ["status=oral"], api_name="/ask")
    assert dropped["filters_applied"] == [] and dropped["hits"][0]["id"] == CVRP
    with pytest.raises(gradio_client.exceptions.AppError, match="drop_filters"):
        c.predict(ORAL_CVRP, "any", "any", "extractive", ["x" * 201], api_name="/ask")


def test_chat_shows_the_plan_line_with_the_filters_as_removable_parts(served):
    """The last output of /chat (where the filter chips were) is the plan line: the dropdowns'
    filters and those read from the words are parts of it, each removable by its key."""
    url, _, _ = served
    c = client(url)
    chat, *_, line = c.predict("crossover operators for CVRP hybrid genetic search",
                               "accepted", "optimization", "extractive", api_name="/chat")
    assert 'value="filter:status=accepted"' in line and "accepted papers only" in line
    assert 'value="filter:primary_area=optimization"' in line and "area: optimization" in line
    assert text(chat[-1]).startswith('<div class="pc-plan"') and line in text(chat[-1])
    chat, *_, line = c.predict(ORAL_CVRP, "any", "any", "extractive", api_name="/chat")
    assert 'value="filter:status=oral"' in line and "primary_area" not in line
    # the older answer keeps its line, without buttons
    assert "accepted papers only" in text(chat[1]) and "pc-part-x" not in text(chat[1])
    chat, *_, line = c.predict("crossover operators for CVRP hybrid genetic search", "any",
                               "any", "extractive", api_name="/chat")
    assert "filter:" not in line and text(chat[-1]).count('class="pc-part-x"') == \
        line.count('class="pc-part-x"')


# --- the real models ------------------------------------------------------------------------
@pytest.mark.integration
def test_real_model_answers_a_seed_question(real_settings, real_index, real_embedder,
                                            real_generator):
    from rag.chat.pipeline import Pipeline

    demo, url = start(Pipeline(real_settings, embedder=real_embedder, generator=real_generator,
                               retriever=real_index))
    try:
        chat, _, sources, *_ = client(url).predict(
            "Which paper fine-tunes a small LLM with reinforcement learning to generate "
            "crossover operators for the CVRP?", "any", "any", api_name="/chat")
    finally:
        demo.close()
    assert chat[-1]["role"] == "assistant" and len(text(chat[-1])) > 20
    assert 'id="card-1"' in sources and CVRP in sources.split('id="card-2"')[0]


#: Run in a fresh process: records the environment at the moment gradio is first imported.
_ENV_AT_GRADIO = """
import importlib.abc, json, os, sys
seen = {}
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "gradio" and not seen:
            seen.update(os.environ)
        return None
sys.meta_path.insert(0, Spy())
import ui.%s
print(json.dumps(seen))
"""


@pytest.mark.parametrize("module", ["app", "chat_tab", "controls", "export_panel", "map_tab",
                                    "sources_tab"])
def test_the_offline_switches_are_set_before_any_ui_module_imports_gradio(module):
    import json
    import os
    import subprocess
    import sys

    from conftest import ROOT
    from rag.offline import OFFLINE_ENV

    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    out = subprocess.run([sys.executable, "-c", _ENV_AT_GRADIO % module], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen, "gradio was never imported"
    assert {k: seen.get(k) for k in OFFLINE_ENV} == OFFLINE_ENV
