"""Evidence-first composition, answer modes, guards and the answer eval, with the fakes."""

from __future__ import annotations

import pytest

from rag.chat import constrained
from rag.chat.answer import answer, resolve_mode
from rag.compose import extractive
from rag.compose.guards import RepeatGuard, answer_max_repeat, count_leaks, leak_reason, max_repeat
from rag.compose.quotes import Candidate, candidates
from rag.errors import InvalidQuestionError
from rag.evaluate.answers import summarise
from rag.types import AnswerSentence, Hit, Paper
from tests.conftest import ScriptedGenerator

ROUTE = Paper("r1", "Learned Routing for Delivery Fleets",
              "Vehicle routing is hard at scale. We propose FleetNet, a graph transformer that "
              "builds routes for delivery fleets. FleetNet cuts route length by 7% on CVRP "
              "benchmarks. Code is available at https://github.com/x/fleetnet.",
              keywords=["vehicle routing", "graph neural networks"], primary_area="optimization")
BOUND = Paper("b1", "Lower Bounds for Routing Heuristics",
              "We prove a lower bound for local search heuristics on vehicle routing. The bound "
              "is tight for two-opt moves.", keywords=["vehicle routing"],
              primary_area="learning theory")
OTHER = Paper("o1", "Protein Folding with Diffusion",
              "We fold proteins with a diffusion model. It beats AlphaFold on loops.",
              keywords=["proteins"], primary_area="applications")


def hits():
    return [Hit(ROUTE, 3.0, dense=0.6), Hit(BOUND, 2.0, dense=0.45), Hit(OTHER, 0.1, dense=0.05)]


def test_lookup_quotes_the_best_paper_and_lists_the_relevant_others(fake_embedder):
    out = extractive.compose("lookup", "graph transformer that builds routes for delivery fleets",
                          hits(), fake_embedder)
    assert out[0].kind == "direct" and out[0].citations == [1]
    assert out[0].text == "The closest match is Learned Routing for Delivery Fleets [1]."
    quotes = [s for s in out if s.kind == "quote"]
    assert quotes and all(s.citations == [1] for s in quotes)
    assert all(s.quote in ROUTE.abstract for s in quotes)  # exact sentences
    assert not any("github" in s.text for s in quotes)  # boilerplate is not a reason
    items = [s for s in out if s.kind == "item"]
    assert [s.citations for s in items] == [[2]]  # the protein paper is not relevant


def test_describe_quotes_in_abstract_order(fake_embedder):
    out = extractive.compose("describe", "What does FleetNet propose?", hits(), fake_embedder)
    quotes = [s.quote for s in out if s.kind == "quote"]
    positions = [ROUTE.abstract.index(q) for q in quotes]
    assert positions == sorted(positions) and len(quotes) >= 1


def test_count_and_authors_give_plain_statements(fake_embedder):
    count = extractive.compose("count", "How many papers are about routing?", hits(), fake_embedder)
    assert count[0].kind == "note" and "no number" in count[0].text
    assert all(s.kind in ("note", "heading", "item") and not s.quote for s in count)
    authors = extractive.compose("authors", "Who wrote FleetNet?", hits(), fake_embedder)
    assert authors[0].kind == "note" and "no author names" in authors[0].text
    named = [Hit(Paper("a", "T", "We do X.", authors=["Ada Lovelace", "Alan Turing"]), 1.0)]
    out = extractive.compose("authors", "Who wrote it?", named, fake_embedder)
    assert out[0].kind == "metadata" and "Ada Lovelace and Alan Turing" in out[0].text


def test_number_without_a_figure_says_so(fake_embedder):
    out = extractive.compose("number", "What accuracy does the bound reach?",
                          [Hit(BOUND, 1.0, dense=0.5)], fake_embedder)
    assert out[0].kind == "note" and "gives no figure" in out[0].text
    with_figure = extractive.compose("number", "By how much does FleetNet cut route length?",
                                  hits(), fake_embedder)
    assert any("7%" in s.text for s in with_figure if s.kind == "quote")


def test_followup_quotes_each_discussed_paper(fake_embedder):
    out = extractive.compose("followup", "What do they prove?", hits(), fake_embedder, focus=[1, 2])
    assert out[0].citations == [1, 2] and "abstracts of" in out[0].text
    cited = {n for s in out if s.kind == "quote" for n in s.citations}
    assert cited == {1, 2}


def test_survey_groups_by_a_shared_keyword(fake_embedder):
    out = extractive.compose("survey", "Which papers study vehicle routing?", hits(), fake_embedder)
    headings = [s.text for s in out if s.kind == "heading"]
    assert headings == ["vehicle routing:"]
    assert [s.citations for s in out if s.kind == "item"] == [[1], [2]]


def test_render_and_check(fake_embedder):
    out = extractive.compose("lookup", "graph transformer routes delivery fleets", hits(),
                          fake_embedder)
    checked = extractive.check(out, hits(), fake_embedder, threshold=0.5)
    assert all(s.supported for s in checked)  # quotes and titles are their papers' own words
    text = extractive.render(checked)
    assert text.splitlines()[0] == checked[0].text
    assert "> “" in text and "\n- Lower Bounds" in text


def test_check_flags_a_quote_cited_to_the_wrong_paper(fake_embedder):
    wrong = AnswerSentence("“We fold proteins with a diffusion model.” [1]", [1], kind="quote",
                           quote="We fold proteins with a diffusion model.")
    [s] = extractive.check([wrong], hits(), fake_embedder, threshold=0.5)
    assert not s.supported


def test_without_repeats_drops_a_repeating_quote_but_keeps_the_direct_line():
    a = AnswerSentence("“alpha beta gamma delta one” [1]", [1], kind="quote", quote="x")
    b = AnswerSentence("“alpha beta gamma delta two” [1]", [1], kind="quote", quote="y")
    c = AnswerSentence("“alpha beta gamma delta three” [1]", [1], kind="quote", quote="z")
    d = AnswerSentence("Direct alpha beta gamma delta", [1], kind="direct")
    kept = extractive.without_repeats([d, a, b, c])
    assert kept == [d, a]  # b and c would make the 4-gram occur a third time


# -- constrained -------------------------------------------------------------------------------
def test_grammar_offers_only_the_candidates_and_parse_reads_them_back():
    pool = [Candidate(1, 'We say "x" \\ y.', 0, 0.9), Candidate(2, "Other — ε.", 0, 0.5)]
    gbnf = constrained.grammar(pool)
    assert gbnf.startswith("root ::= pick") and gbnf.count("“") == 2
    text = f"{constrained.literal(pool[1])} {constrained.literal(pool[0])}"
    assert constrained.parse(text, pool) == [pool[1], pool[0]]
    assert constrained.parse("something else", pool) == []


def test_constrained_pool_is_cut_to_the_context_window():
    long = [Candidate(n, "word " * 300, 0, 1.0) for n in (1, 2, 3)]
    small = ScriptedGenerator(context_window=1200)
    kept = constrained.fitting("q?", long, small)
    assert 0 < len(kept) < 3 and kept == long[:len(kept)]
    assert constrained.fitting("q?", long, ScriptedGenerator(context_window=100)) == []


def test_constrained_mode_uses_the_models_picks(fake_index):
    settings, retriever = fake_index
    gen = ScriptedGenerator(n_params=100_000_000)
    q = "crossover operators for CVRP hybrid genetic search"
    probe = answer(q, retriever=retriever, generator=gen, settings=settings, mode="extractive")
    cands = candidates(q, probe.hits, retriever.embedder)
    pool = constrained.pool("lookup", probe.hits, cands)
    gen.enqueue(constrained.literal(pool[-1]))  # the model picks the last candidate only
    ans = answer(q, retriever=retriever, generator=gen, settings=settings, mode="constrained")
    assert ans.mode == "constrained" and gen.grammars and gen.grammars[-1].startswith("root ::=")
    quotes = [s for s in ans.sentences if s.kind == "quote"]
    assert [s.quote for s in quotes] == [pool[-1].text]


def test_auto_mode_follows_the_model_size(settings):
    assert resolve_mode("auto", ScriptedGenerator(n_params=135_000_000), settings) == "extractive"
    assert resolve_mode("auto", ScriptedGenerator(n_params=3_000_000_000), settings) == "generative"
    assert resolve_mode("auto", ScriptedGenerator(), settings) == "generative"  # a server
    assert resolve_mode("constrained", ScriptedGenerator(), settings) == "constrained"
    with pytest.raises(InvalidQuestionError, match="unknown answer mode"):
        resolve_mode("poetic", ScriptedGenerator(), settings)


def test_extractive_answer_needs_no_model_call(fake_index):
    settings, retriever = fake_index
    gen = ScriptedGenerator(n_params=100_000_000)
    ans = answer("crossover operators for CVRP hybrid genetic search", retriever=retriever,
                 generator=gen, settings=settings)
    assert ans.mode == "extractive" and gen.history == [] and ans.model == ""
    assert ans.timings_ms["first_token"] <= ans.timings_ms["total"]


def test_generative_mode_sets_unsupported_sentences_apart(fake_index):
    settings, retriever = fake_index
    gen = ScriptedGenerator(["Title: leaked. The moon is made of cheese [1]. "
                             "<|im_end|> Use only facts the abstracts state."])
    ans = answer("crossover operators for CVRP hybrid genetic search", retriever=retriever,
                 generator=gen, settings=settings, mode="generative")
    assert "cheese" not in ans.text and any("cheese" in s.text for s in ans.unsupported)
    shown = ans.text + " ".join(s.text for s in ans.unsupported)
    assert "Title:" not in shown and "<|im_end|>" not in shown and "Use only" not in shown


# -- guards --------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,leak", [
    ('Title: StepORLM Abstract: """We', True), ("<|im_start|>assistant", True),
    ("PLAINFORMAT", True), ("Use only facts the abstracts state.", True),
    ("If they do not answer the question, say so.", True),
    ("We propose FleetNet for routing.", False), ("Output quality improves by 3%.", False),
])
def test_leak_reason(text, leak):
    assert (leak_reason(text) is not None) is leak
    assert (count_leaks(text) == 1) is leak


def test_repeat_guard_trips_on_the_third_occurrence_and_cuts_at_a_sentence():
    guard = RepeatGuard(4, 2)
    pieces = ["The model is good. ", "The model is good. ", "Then again: ", "the model is good."]
    tripped = [guard.feed(p) for p in pieces]
    assert tripped == [False, False, False, True]
    assert guard.text[:guard.safe_length] == "The model is good. The model is good. "
    assert max_repeat("a b c d a b c d a b c d", 4) == 3


def test_answer_max_repeat_counts_a_quote_once():
    q = AnswerSentence("“x y z w x y z w x y z w” [1]", [1], kind="quote", quote="x")
    c = AnswerSentence("x y z w x y z w x y z w", [1], kind="claim")
    assert answer_max_repeat([q], 4) == 1 and answer_max_repeat([c], 4) == 3


# -- eval summary ----------------------------------------------------------------------------
def test_summarise_scores_citations_against_gold():
    base = {"hits": ["a", "b"], "first_text_ms": 10.0, "total_ms": 20.0, "leaks": 0,
            "max_repeat_4gram": 1, "claims": 2, "claims_supported": 2, "refused": False,
            "discussed": []}
    records = [
        {**base, "type": "specific", "gold": ["a"], "cited": ["a", "b"]},
        {**base, "type": "specific", "gold": ["b"], "cited": ["a"], "claims_supported": 1},
        {**base, "type": "specific", "gold": ["z"], "cited": ["a"], "leaks": 1},
    ]
    m = summarise(records)["specific"]
    assert m["gold_in_hits"] == 2 and m["gold_cited"] == 0.5
    assert m["first_citation_gold"] == round(1 / 3, 4) and m["hit1_gold"] == round(1 / 3, 4)
    assert m["supported"] == round(5 / 6, 4) and m["leaks"] == 1


def test_older_answers_chips_do_not_link_to_the_current_cards():
    from ui import render

    html = ('x <a class="pc-cite" href="#card-1" title="First">[1]</a> y '
            '<a class="pc-cite" href="#card-2">[2]</a>')
    out = render.unlink_markers(html)
    assert "href" not in out and 'title="First">[1]</span>' in out and ">[2]</span>" in out


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", "", "x" * 101])
def test_index_names_cannot_leave_the_indexes_directory(settings, name):
    from rag.errors import PaperchatError

    with pytest.raises(PaperchatError, match="not a usable index name"):
        settings.index_dir(name or "/")


def test_names_paper_rescues_a_short_question_naming_the_top_paper():
    from rag.compose.refusal import names_paper

    assert names_paper("What is FleetNet?", Hit(ROUTE, 1.0))
    assert names_paper("Which paper gives lower bounds for routing heuristics?", Hit(BOUND, 1.0))
    assert not names_paper("recipes for sourdough bread", Hit(ROUTE, 1.0))
    assert not names_paper("What is GlimmerRoute?", Hit(ROUTE, 1.0))


def test_a_theory_paper_is_described_by_what_the_authors_did_and_found():
    """No sentence has a method cue ("we propose"): the authors' first own sentence stands
    for the approach, beside the results sentence (the abstract of 'Computational
    Bottlenecks for Denoising Diffusions', shortened)."""
    texts = ["Denoising diffusions sample from a probability distribution by constructing a "
             "stochastic process.",
             "Is every distribution for which sampling is tractable also amenable to sampling "
             "via diffusions?",
             "We address this question by studying its relation to information-computation gaps "
             "in statistical estimation.",
             "We prove that this implies a failure of sampling via diffusions."]
    cands = [Candidate(1, t, i, 0.5) for i, t in enumerate(texts)]
    picked = [c.text for c in extractive.summary_quotes(cands)]
    assert picked[0] == texts[2] and texts[0] not in picked and texts[1] not in picked
