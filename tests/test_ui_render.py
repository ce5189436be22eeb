"""The UI's render helpers for issue 20 (no server): the plan line above an answer, the cards'
"More like this" button, BibTeX as a code block, and the map's region-label names; then the
app's "More like this" turn run in process over the fake index.
"""

from __future__ import annotations

import re

import pytest

from rag.types import Answer, AnswerSentence, Citation, Hit, Paper
from rag.understand.plan import Plan

gr = pytest.importorskip("gradio")

from ui import app as ui_app  # noqa: E402
from ui import cards, chat_tab, map_tab  # noqa: E402
from ui import render  # noqa: E402

CVRP = "aITKXFeivk"  # Refining Hybrid Genetic Search for CVRP via RL-Finetuned LLM


def paper(pid="p1", title="A Paper", **kw) -> Paper:
    return Paper(pid, title, "An abstract. It has two sentences.", **kw)


def plan_json(**kw) -> dict:
    return Plan(**kw).to_json()


# --- the plan line ------------------------------------------------------------------------------
def test_plan_parts_add_the_dropdowns_filters_after_the_plans_own():
    plan = plan_json(papers="previous", op="sort", order="rating_desc", filters=["status=oral"],
                     ids=["a", "b"])
    assert render.plan_parts(plan, ["status=oral", "primary_area=optimization"]) == [
        ("papers", "2 papers from the previous answer"), ("filter:status=oral", "orals only"),
        ("filter:primary_area=optimization", "area: optimization"),
        ("order", "sorted by rating")]
    # a filter the plan has in another case is not added twice
    assert [k for k, _ in render.plan_parts(plan, ["status=Oral"])] == \
        ["papers", "filter:status=oral", "order"]
    # no plan (an answer from before plans): its filters only
    assert render.plan_parts({}, ["status=poster"]) == [("filter:status=poster",
                                                         "posters only")]
    assert render.plan_parts(None) == []


@pytest.mark.parametrize("key, papers, expected", [
    ("filter:status=oral", "search", True), ("order", "search", True),
    ("aspect", "search", True), ("papers", "previous", True), ("papers", "positions", True),
    ("papers", "focus", True), ("papers", "search", False), ("papers", "named", False),
    ("papers", "catalog", False), ("op", "previous", False),
])
def test_only_parts_whose_removal_changes_the_plan_are_removable(key, papers, expected):
    assert render.removable(key, {"papers": papers}) is expected


def test_removable_parts_match_what_plan_without_changes():
    """A part is removable exactly when Plan.without(key) gives another plan (bar ``dropped``)."""
    plan = Plan(papers="previous", op="sort", order="rating_desc", aspect="datasets",
                filters=["status=oral"], ids=["a"], query="q")
    outside = Plan(papers="search", op="lookup", query="q", outside=True)
    for p in (plan, outside):
        for key, _ in p.parts():
            changed = p.without(key).to_json() | {"dropped": []} != p.to_json()
            assert render.removable(key, p.to_json()) is changed, key
    assert [k for k, _ in outside.parts()] == ["outside"]


def test_plan_line_escapes_the_users_words_and_puts_the_key_in_the_buttons_value():
    hostile = 'x" onmouseover="alert(1)'
    plan = plan_json(papers="search", op="survey",
                     topic="<img src=x onerror=alert(1)> https://e.vil",
                     filters=[f"author={hostile}"])
    out = render.plan_line_html(plan)
    assert "<img" not in out and 'onmouseover="' not in out and "https://" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out and "https&#58;//e.vil" in out
    assert out.count('<button type="button" class="pc-part-x"') == 1  # the filter only
    assert f'value="filter:author={render.esc(hostile)}"' in out
    assert "\n" not in out  # one line: a blank line would end the chat's HTML block
    assert out.startswith('<div class="pc-plan" role="group"><span class="pc-plan-label">'
                          'Read as:</span> ')
    assert '<span class="pc-plan-dot"> · </span>' in out  # the parts read as the summary


def test_plan_line_parts_read_as_the_plans_summary():
    plan = plan_json(papers="previous", op="list", filters=["status=oral"], ids=list("abcdefgh"))
    line = render.plan_line_html(plan)
    texts = re.findall(r'<span class="pc-part-text">([^<]*)</span>', line)
    assert " · ".join(texts) == plan["summary"] == \
        "8 papers from the previous answer · orals only · listed"
    keys = re.findall(r'class="pc-part-x" value="([^"]*)"', line)
    assert keys == ["papers", "filter:status=oral"]  # "listed" (op) has no ×
    assert 'title="Ask again without “orals only”"' in line
    assert '<span class="pc-sr">Remove “orals only” and ask again</span>' in line


def test_an_unsure_reading_says_reading_this_as_and_old_answers_have_no_buttons():
    plan = plan_json(papers="positions", positions=[2], op="describe", confidence=0.4)
    line = render.plan_line_html(plan)
    assert plan["unsure"] and line.startswith('<div class="pc-plan pc-plan-unsure" role="group">'
                                              '<span class="pc-plan-label">Reading this as:')
    old = render.plan_line_html(plan, active=False)
    assert "button" not in old and "paper [2] of the previous answer" in old
    assert render.plan_line_html({}, []) == ""


def test_assistant_message_puts_the_plan_line_on_top_and_only_the_last_is_live():
    hits = [Hit(paper("a", "First"), 0.3)]
    ans = Answer("q", "q", "First [1].", [Citation(1, hits[0].paper)], hits,
                 sentences=[AnswerSentence("First [1].", [1], True, 0.9, kind="direct")],
                 plan=plan_json(filters=["status=oral"]), filters_applied=["status=oral"])
    live = render.assistant_markdown(ans)
    line, body = live.split("\n\n", 1)
    assert line == render.plan_line_html(ans.plan, ans.filters_applied)
    assert 'value="filter:status=oral"' in line and 'href="#card-1"' in body
    old = render.assistant_markdown(ans, last=False)
    assert "pc-part-x" not in old and 'href="#card-1"' not in old and "pc-stale" in old
    # an answer without plan or filters has no line
    bare = Answer("q", "q", "First [1].", [], hits)
    assert not render.assistant_markdown(bare).startswith("<div class=\"pc-plan")


def test_chat_messages_make_only_the_last_answers_parts_removable():
    hits = [Hit(paper("a", "First"), 0.3)]
    answers = [Answer(f"q{i}", f"q{i}", "First [1].", [], hits, filters_applied=["status=oral"])
               for i in range(3)]
    msgs = chat_tab.chat_messages(answers, 0.5)
    assert [m["content"].count("pc-part-x") for m in msgs[1::2]] == [0, 0, 1]
    streaming = chat_tab.chat_messages(answers, 0.5, live=False)  # a new answer below them
    assert all("pc-part-x" not in m["content"] for m in streaming)


# --- "More like this" on a card -------------------------------------------------------------------
def test_every_card_has_a_more_like_this_button_with_its_paper_id_escaped():
    hit = Hit(paper('p"1<x>', 'Title <b>bold</b> "q"'), 0.5)
    out = cards.card_html(3, hit)
    assert ('<button type="button" class="pc-more-like" data-paper="p&quot;1&lt;x&gt;" '
            'aria-label="More like this: papers similar to Title &lt;b&gt;bold&lt;/b&gt; '
            '&quot;q&quot;"') in out
    assert out.count("<button") == 1 and "<b>" not in out
    html = cards.sources_html([Hit(paper("a"), 0.3), Hit(paper("b"), 0.2)])
    assert re.findall(r'data-paper="([^"]*)"', html) == ["a", "b"]
    assert "pc-more-like" not in cards.card_html(1, hit, more=False)


# --- BibTeX in the chat ---------------------------------------------------------------------------
ENTRIES = ("@inproceedings{doe2026sparse,\n  title = {{Sparse $\\ell_1$ <script>x</script> "
           "\\& ```code```}},\n  year = {2026},\n  url = {https://openreview.net/forum?id=a}\n}"
           "\n\n@misc{b2026c,\n  title = {{B}}\n}")


def test_bibtex_block_fences_the_entries_verbatim_with_a_longer_fence():
    block = render.bibtex_block(ENTRIES + "\n")
    assert block == "````bibtex\n" + ENTRIES + "\n````"
    assert render.bibtex_block("@misc{a,\n  title = {{A}}\n}").startswith("```bibtex\n")


def test_a_cite_answer_shows_its_entries_as_a_code_block_not_escaped_nor_folded():
    hits = [Hit(paper("a", "Sparse"), 0.3), Hit(paper("b", "B"), 0.2)]
    ans = Answer("bibtex of both", "bibtex of both", "t", [], hits, kind="cite", sentences=[
        AnswerSentence("BibTeX for these 2 papers ([1] and [2]), entries only:", [1, 2], True,
                       1.0, kind="direct"),
        AnswerSentence(ENTRIES, [1, 2], True, 1.0, kind="bibtex")])
    out = render.answer_markdown(ans)
    assert "\n\n" + render.bibtex_block(ENTRIES) + "\n\n" in out
    assert "&lt;script&gt;" not in out and "&#58;//" not in out  # Gradio escapes code itself
    assert out.count("````") == 2
    # the stream shows the same block (compose.render's fence, re-fenced)
    streamed = render.streaming_markdown(
        "BibTeX for these 2 papers ([1] and [2]), entries only:\n\n```bibtex\n" + ENTRIES +
        "\n```", hits)
    assert render.bibtex_block(ENTRIES) in streamed
    assert streamed.endswith(render.CURSOR) and '<a class="pc-cite" href="#card-2"' in streamed


def test_a_count_per_years_table_is_a_markdown_block_of_its_own_between_its_notes():
    hits = [Hit(paper("a", "Sparse"), 0.3)]
    table = ("| year | orals | papers that year | share |\n|---:|---:|---:|---:|\n"
             "| 2018 | 23 | 995 | 2.3% |\n| 2026 | 224 | 19,630 | 1.1% |")
    ans = Answer("orals per year", "orals per year", "t", [], hits, kind="count", sentences=[
        AnswerSentence("Orals per year: 23 of 995 in 2018, 224 of 19,630 in 2026.", [],
                       kind="direct"),
        AnswerSentence("Before the table.", [], kind="note", support=1.0),
        AnswerSentence(table, [], kind="note", support=1.0),
        AnswerSentence("The share fell.", [], kind="note", support=1.0)])
    out = render.answer_markdown(ans)
    assert "\n\n" + table + "\n\n" in out  # its lines kept, a block of its own
    assert '<p class="pc-note-line">| year' not in out
    assert out.index("Before the table.") < out.index(table) < out.index("The share fell.")
    assert render.is_markdown_table(table)
    assert not render.is_markdown_table("| a | b |")  # one row: no table
    assert not render.is_markdown_table("| year | n |\nplain text")


# --- the map's region labels ------------------------------------------------------------------
def test_region_labels_are_named_by_their_size_for_the_browsers_placement():
    import numpy as np

    from index.layout import Layout
    from index.layout_labels import Label
    from rag.conference.mapfigure import map_figure

    papers = {f"p{i}": paper(f"p{i}", f"T{i}", primary_area="a") for i in range(6)}
    labels = [Label("big · <b>topic</b>", 0.0, 0.0, 40), Label("small", 1.0, 1.0, 7)]
    layout = Layout(list(papers), np.arange(12, dtype=np.float32).reshape(6, 2), labels,
                    "test", "f")
    fig = map_figure(layout, papers, highlight=[(1, "p2")])
    assert map_tab.name_region_labels(fig, labels) == 2
    names = [a.name for a in fig.layout.annotations]
    assert names == ["pc-region:40", "pc-region:7", "pc-highlight"]  # the [1] mark untouched
    # labels that do not match the figure's annotations are left alone
    other = map_figure(layout, papers)
    assert map_tab.name_region_labels(other, [Label("else", 0, 0, 3)]) == 0


# --- the "More like this" turn, in process ------------------------------------------------------
@pytest.fixture
def chat_app(fake_index, fake_embedder):
    from conftest import ScriptedGenerator
    from rag.chat.pipeline import Pipeline

    settings, retriever = fake_index
    return ui_app.ChatApp(Pipeline(settings, embedder=fake_embedder,
                                   generator=ScriptedGenerator(), retriever=retriever))


def test_more_like_this_asks_the_similar_operation_with_an_explicit_plan(chat_app):
    question, plan = chat_app.similar_turn(CVRP)
    title = chat_app.retriever.papers[CVRP].title
    assert question == f"Papers similar to “{' '.join(title.split())}”"
    assert (plan["papers"], plan["op"], plan["ids"]) == ("named", "similar", [CVRP])
    *_, last = chat_app.stream(question, "any", "any", [], [], plan=plan, mode="extractive")
    final = last["final"]
    assert final.kind == "similar" and final.hits and CVRP not in [h.id for h in final.hits]
    near = [h.id for h in chat_app.retriever.similar(CVRP, k=len(final.hits))]
    assert [h.id for h in final.hits] == near
    assert last["chat"][-2]["content"] == render.user_markdown(question)
    assert "papers similar to it" in last["plan_line"]
    with pytest.raises(gr.Error):
        chat_app.similar_turn("no-such-paper")
