"""Every operation of a plan against a real index with the real models (bundled MiniLM, the
bundled GGUF, real Chroma): the seed corpus for most, the accepted ICLR 2026 list (shared data,
slow) for surveys of an aspect. Expected values are computed here from the paper list or the
stored vectors, never taken from the code under test."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag.evaluate.checks import bibtex_ids
from rag.understand.history import turn_after
from tests.conftest import SEED

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ask(real_index, real_settings, real_generator):
    from rag.chat.answer import answer

    def run(question, history=()):
        ans = answer(question, retriever=real_index, generator=real_generator,
                     settings=real_settings, history=list(history), mode="extractive")
        return ans, list(history) + [turn_after(ans)]

    return run


def _seed() -> list[dict]:
    return [json.loads(line) for line in SEED.read_text().splitlines() if line.strip()]


def _mean(p: dict) -> float:
    r = p.get("ratings_2025_11_22") or p.get("ratings") or []
    if isinstance(r, str):
        r = json.loads(r)
    return round(sum(r) / len(r), 2) if r else -1.0


def test_which_of_these_keeps_the_previous_papers_that_pass(ask):
    first, history = ask("Which papers are about optimization or learning theory?")
    ans, _ = ask("which of those are in the learning theory area?", history)
    before = {h.id for h in first.hits}
    assert ans.hits and {h.id for h in ans.hits} <= before
    assert all(h.paper.primary_area == "learning theory" for h in ans.hits)
    want = [h.id for h in first.hits if h.paper.primary_area == "learning theory"]
    assert sorted(h.id for h in ans.hits) == sorted(want)
    assert "primary_area=learning theory" in ans.filters_applied and ans.kind == "list"


def test_a_count_from_the_catalog(ask):
    n = sum(1 for p in _seed() if p["primary_area"] == "learning theory")
    ans, _ = ask("how many papers are there in the learning theory area?")
    assert ans.kind == "count" and ans.text.startswith(f"{n} of the 19 papers")


@pytest.mark.parametrize("follow_up", ["how many such papers are there in total?",
                                       "how many papers on this are there overall?"])
def test_how_many_such_papers_after_a_search_counts_its_topic_in_the_whole_list(ask, follow_up):
    import re

    first, history = ask("Which papers are about optimization?")
    ans, _ = ask(follow_up, history)
    topic = ans.plan["topic"]
    assert ans.kind == "count" and ans.plan["papers"] == "search" and topic.strip()
    # the rule the answer states: the phrase in the title, keywords or abstract (computed here)
    # (each word with an optional plural "s", as the rule says)
    phrase = re.compile(r"(?<!\w)" + r"[\s-]+".join(re.escape(w) + "(?:e?s)?"
                                                     for w in re.findall(r"[\w+]+", topic.lower()))
                        + r"(?!\w)")
    n = sum(1 for p in _seed() if phrase.search(" ".join(
        [p["title"], " ".join(p.get("keywords") or []), p["abstract"]]).lower()))
    # counted by meaning (rag.retrieve.membership), the phrase count stated beside it
    assert re.match(r"About \d+ of the 19 papers in this index are about “optimization”",
                    ans.text), ans.text[:200]
    assert f"By the words alone, {n} contain the phrase" in ans.text
    assert f"The previous answer showed {len(first.hits)} papers" in ans.text


def test_papers_by_an_author_the_list_cannot_name_lists_none_and_cite_them_cites_none(ask):
    assert not any(p.get("authors") for p in _seed())  # (anonymous, as ICLR 2026's list)
    ans, history = ask("papers by Yoshua Bengio")
    assert not ans.hits and "no author names" in ans.text
    cited, _ = ask("cite all of them", history)
    assert not cited.hits and "@inproceedings" not in cited.text
    assert "No earlier answer in this conversation showed papers" in cited.text


def test_bibtex_of_the_second_one(ask):
    first, history = ask("Which papers are about optimization?")
    ans, _ = ask("Give me the BibTeX of the second one", history)
    assert ans.kind == "cite" and bibtex_ids(ans.text) == [first.hits[1].id]
    assert ans.hits[0].id == first.hits[1].id and "```bibtex" in ans.text


def test_cite_it_after_a_list_is_its_first_paper_and_says_so(ask):
    """"cite it" after several papers: one entry, the first's, and the reading is stated."""
    first, history = ask("Which papers are about optimization?")
    assert len(first.hits) > 1
    ans, _ = ask("cite it (bibtex)", history)
    assert ans.kind == "cite" and bibtex_ids(ans.text) == [first.hits[0].id]
    assert ans.plan["unsure"] and "Reading this as" in ans.text


def test_papers_similar_to_a_named_paper_by_paper_vectors(ask, real_index):
    target = "aITKXFeivk"  # RFTHGS
    vecs = real_index.store.paper_vectors(sorted(real_index.papers), real_index.n_chunks)
    cents = {pid: v.mean(0) / np.linalg.norm(v.mean(0)) for pid, v in vecs.items()}
    ranked = sorted((p for p in cents if p != target),
                    key=lambda p: -float(cents[p] @ cents[target]))
    ans, _ = ask("Which papers are similar to RFTHGS?")
    assert ans.kind == "similar" and target not in [h.id for h in ans.hits]
    assert [h.id for h in ans.hits[:3]] == ranked[:3]


def test_more_like_that_one_after_a_best_match(ask, real_index):
    first, history = ask("Which paper proposes StepORLM?")
    assert first.hits[0].id == "ZrgxU8WMmG"
    ans, _ = ask("anything similar to that one?", history)
    assert ans.kind == "similar"
    assert [h.id for h in ans.hits] == [h.id for h in real_index.similar("ZrgxU8WMmG",
                                                                          k=len(ans.hits))]


def test_compare_the_first_two(ask):
    first, history = ask("Which papers are about optimization?")
    ans, _ = ask("compare the first two", history)
    assert ans.kind == "compare"
    assert sorted(ans.comparison_ids) == sorted(h.id for h in first.hits[:2])


def test_a_follow_up_describes_the_paper_under_discussion(ask):
    _, history = ask("Which paper proposes StepORLM?")
    ans, _ = ask("What results does it report?", history)
    # a description of the paper under discussion is of kind "describe", like a searched one
    assert ans.hits[0].id == "ZrgxU8WMmG" and ans.kind == "describe"
    assert ans.about_ids == ["ZrgxU8WMmG"]
    assert "StepORLM" in ans.standalone_question and not ans.refused


def test_the_plan_is_in_the_json(ask):
    from rag.compose.rendering import answer_json

    first, history = ask("Which papers are about optimization?")
    ans, _ = ask("which of them are in the learning theory area?", history)
    plan = answer_json(ans)["plan"]
    assert plan["papers"] == "previous" and plan["op"] == "list"
    assert plan["filters"] == ["primary_area=learning theory"]
    assert plan["summary"].startswith(f"{len(first.hits)} papers from the previous answer")


# --- the accepted list (slow) -------------------------------------------------------------------
@pytest.fixture(scope="module")
def accepted_ask(accepted_index, real_embedder, real_generator):
    from rag.chat.answer import answer
    from rag.chat.pipeline import Pipeline

    settings, _, _ = accepted_index
    pipe = Pipeline(settings, embedder=real_embedder, generator=real_generator)

    def run(question, history=()):
        ans = answer(question, retriever=pipe.retriever, generator=pipe.generator,
                     settings=settings, history=list(history), mode="extractive")
        return ans, list(history) + [turn_after(ans)]

    def best_cosine(text):
        return max(pipe.retriever.search(text, k=50, evidence=False).dense.scores[:1],
                   default=0.0)

    run.best_cosine = best_cosine
    return run


def _accepted() -> list[dict]:
    from tests.conftest import SHARED_DATA

    path = SHARED_DATA / "iclr2026_accepted.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_sort_them_by_rating(accepted_ask):
    first, history = accepted_ask("Which papers study KV cache compression?")
    ans, _ = accepted_ask("sort them by reviewer rating", history)
    means = [(h.paper.rating or {}).get("mean", -1) for h in ans.hits]
    assert sorted(h.id for h in ans.hits) == sorted(h.id for h in first.hits)
    assert means == sorted(means, reverse=True) and ans.kind == "rated"


@pytest.mark.slow
def test_the_best_rated_paper_overall_is_exact(accepted_ask):
    papers = _accepted()
    best = max(_mean(p) for p in papers)
    ans, _ = accepted_ask("Which paper has the highest rating overall?")
    assert ans.kind == "extreme" and ans.hits[0].paper.rating["mean"] == best
    tied = {p["id"] for p in papers if _mean(p) == best}
    assert ans.hits[0].id in tied and str(best) in ans.text


@pytest.mark.slow
def test_which_of_these_are_orals(accepted_ask):
    first, history = accepted_ask("Which papers study KV cache compression?")
    ans, _ = accepted_ask("which of these got an oral?", history)
    before = [h.id for h in first.hits]
    orals = [h.id for h in first.hits if "oral" in h.paper.status.lower()]
    if orals:
        assert sorted(h.id for h in ans.hits) == sorted(orals)
    else:  # none of them: a new search under the filter, said so
        assert "None of" in ans.text and all("oral" in h.paper.status.lower() for h in ans.hits)
    assert "status=oral" in ans.filters_applied and ans.kind == "list"


@pytest.mark.slow
def test_a_survey_of_datasets_names_them(accepted_ask):
    ans, _ = accepted_ask("What datasets are used to evaluate long-context language models?")
    assert ans.kind == "survey"
    named = [s for s in ans.sentences if s.kind == "metadata" and s.text.startswith("Named")]
    assert named, ans.text[:400]
    from rag.compose.quotes import quotable

    # each line quotes a sentence of the paper it cites, and names what it found in it
    items = [s for s in ans.sentences if s.kind == "item"]
    assert 4 <= len(items) <= 15
    for s in items:
        assert s.quote in quotable(ans.hits[s.citations[0] - 1].paper)
    # every name in "Named most: X [1] [3]; Y [2]." occurs in the abstracts it cites
    import re

    for name, marks in re.findall(r"([^;:]+?) ((?:\[\d+\] ?)+)[;.]", named[0].text[len("Named most:"):]):
        for n in re.findall(r"\d+", marks):
            assert name.strip() in ans.hits[int(n) - 1].paper.abstract, (name, n)


@pytest.mark.slow
def test_a_survey_of_approaches_quotes_method_sentences(accepted_ask):
    from rag.compose.roles import role_score

    ans, _ = accepted_ask("What are the main approaches to reducing hallucination in "
                          "vision-language models?")
    assert ans.kind == "survey"
    items = [s for s in ans.sentences if s.kind == "item" and s.quote]
    assert len(items) >= 6
    assert all(role_score("approaches", s.quote, 0.5) >= 0.9 for s in items)
    assert any(s.kind == "heading" for s in ans.sentences)  # grouped into themes


@pytest.mark.slow
def test_a_named_paper_that_is_not_in_the_index_is_refused(accepted_ask):
    """'Atari-57' names a real paper of the list, 'GlimmerPilot' none: the turn is about the
    GlimmerPilot paper, which is not there, so nothing is answered from the Atari paper."""
    papers = _accepted()
    assert not any("glimmerpilot" in (p["title"] + p["abstract"]).lower() for p in papers)
    assert any("Atari-57" in p["abstract"] for p in papers)
    ans, _ = accepted_ask("What human-normalized score did the GlimmerPilot agent reach on "
                          "Atari-57 in its ICLR 2026 paper?")
    assert ans.refused and "GlimmerPilot" in ans.text


@pytest.mark.slow
def test_an_off_domain_count_question_is_refused(accepted_ask):
    ans, _ = accepted_ask("When should I prune tomato plants, and how many suckers should I "
                          "leave?")
    assert ans.refused, ans.text[:300]


def test_after_an_answer_with_no_papers_them_is_the_answer_before(ask):
    """"compare them" after a filter that matched nothing compares the papers shown before."""
    first, history = ask("Which papers study combinatorial optimization with learning?")
    empty, history = ask("which of these were rejected?", history)
    assert not empty.hits or all("reject" in h.paper.status.lower() for h in empty.hits)
    assert not history[-1].papers  # the empty answer is the last turn
    ans, _ = ask("compare the first two of them", history)
    shown = [h.id for h in first.hits]
    assert ans.kind == "compare" and [h.id for h in ans.hits[:2]] == shown[:2]


def test_how_does_it_compare_to_a_named_paper_keeps_the_paper_under_discussion(ask):
    first, history = ask("Which paper proposes StepORLM?")
    assert first.hits[0].id == "ZrgxU8WMmG"
    ans, _ = ask("how does it compare to the Never Saddle paper?", history)
    assert ans.kind == "compare"
    assert [h.id for h in ans.hits[:2]] == ["ZrgxU8WMmG", "YgudIlQ9nC"], ans.plan


@pytest.mark.slow
def test_how_many_of_those_counts_every_paper_a_catalog_answer_matched(accepted_ask):
    """A catalog answer shows its first 20 papers; "how many of those are orals?" counts over
    all it matched (the area's papers), not over the 20 shown."""
    papers = _accepted()
    area = "applications to neuroscience & cognitive science"
    inside = [p for p in papers if p["primary_area"] == area]
    orals = [p for p in inside if "oral" in p["status"].lower()]
    first, history = accepted_ask("list the papers in the neuroscience and cog sci area")
    assert "primary_area=" + area in first.filters_applied and len(first.hits) < len(inside)
    ans, _ = accepted_ask("and how many of those are orals", history)
    assert ans.kind == "count" and ans.text.startswith(f"{len(orals)} of the {len(inside)} ")
    assert sorted(h.id for h in ans.hits) == sorted(p["id"] for p in orals)


@pytest.mark.slow
def test_was_it_an_oral_states_the_decision_of_the_paper_under_discussion(accepted_ask):
    papers = _accepted()
    best = max(papers, key=_mean)
    first, history = accepted_ask("which paper has the highest mean rating of all?")
    ans, _ = accepted_ask("was it an oral?", history)
    tier = "an oral" if "oral" in best["status"].lower() else "a poster"
    assert ans.hits[0].id == first.hits[0].id and ans.plan["facts"] == ["status"]
    assert f"[1] was accepted as {tier} ({best['status']}" in ans.text
    assert not ans.filters_applied  # a question about the paper, not a filter


@pytest.mark.slow
def test_a_count_of_nothing_states_zero(accepted_ask):
    ans, _ = accepted_ask("how many spotlights are in RL?")
    assert ans.kind == "count" and ans.text.startswith("0 papers.")


@pytest.mark.slow
def test_compare_it_to_two_named_papers_is_a_three_column_table(accepted_ask):
    by_title = {p["title"].split(":")[0]: p["id"] for p in _accepted()}
    _, history = accepted_ask("what's StreamingVLM")
    ans, _ = accepted_ask("compare it to VideoZoomer and VideoMind", history)
    assert ans.kind == "compare" and sorted(ans.comparison_ids) == sorted(
        by_title[t] for t in ("StreamingVLM", "VideoZoomer", "VideoMind"))


@pytest.mark.slow
def test_which_datasets_is_it_evaluated_on_quotes_the_sentence_naming_them(accepted_ask):
    ans, _ = accepted_ask("AutoDrive-R2 — which driving datasets is it evaluated on?")
    assert ans.hits[0].paper.title.startswith("AutoDrive-R") and "nuScenes and Waymo" in ans.text


@pytest.mark.slow
def test_bibtex_for_a_named_paper(accepted_ask):
    ans, _ = accepted_ask("BibTeX for StepORLM please")
    assert ans.kind == "cite" and bibtex_ids(ans.text) == ["ZrgxU8WMmG"]


@pytest.mark.slow
def test_two_turns_about_one_paper_each_are_the_pair_of_both_and_the_two(accepted_ask):
    ids = {p["title"].split(":")[0]: p["id"] for p in _accepted()}
    first, history = accepted_ask("Tell me about the Gaia2 benchmark")
    second, history = accepted_ask("and RealPDEBench?", history)
    assert second.hits[0].id == ids["RealPDEBench"]  # a refine that names a paper describes it
    cited, _ = accepted_ask("bibtex for both please", history)
    assert sorted(bibtex_ids(cited.text)) == sorted([ids["Gaia2"], ids["RealPDEBench"]])
    compared, _ = accepted_ask("How do they differ? Put them side by side.", history)
    assert compared.kind == "compare" and sorted(compared.comparison_ids) == sorted(
        [ids["Gaia2"], ids["RealPDEBench"]])
    plain, _ = accepted_ask("compare them", history)  # read as the previous papers: still the two
    assert plain.kind == "compare" and sorted(plain.comparison_ids) == sorted(
        [ids["Gaia2"], ids["RealPDEBench"]])


@pytest.mark.slow
def test_the_latter_after_a_comparison_is_its_second_paper(accepted_ask):
    ids = {p["title"].split(":")[0]: p["id"] for p in _accepted()}
    _, history = accepted_ask("Compare dParallel and ES-dLLM")
    ans, _ = accepted_ask("now give me the bib entry of the latter only", history)
    assert bibtex_ids(ans.text) == [ids["ES-dLLM"]]


@pytest.mark.slow
def test_in_that_area_takes_the_area_of_the_previous_answer(accepted_ask):
    papers = _accepted()
    rl = [p for p in papers if p["primary_area"] == "reinforcement learning"]
    best = max(_mean(p) for p in rl)
    _, history = accepted_ask("show me some papers from the reinforcement learning area")
    ans, _ = accepted_ask("What's the top-rated paper in that area overall?", history)
    assert "primary_area=reinforcement learning" in ans.filters_applied
    assert ans.kind == "extreme" and ans.hits[0].paper.rating["mean"] == best


@pytest.mark.slow
def test_which_of_these_does_x_picks_the_previous_papers_that_say_it(accepted_ask):
    first, history = accepted_ask("kv cache compression")
    ans, _ = accepted_ask("which of these use quantization?", history)
    before = {h.id for h in first.hits}
    said = [h for h in first.hits if "quantiz" in f"{h.paper.title} {h.paper.abstract}".lower()]
    assert ans.kind == "lookup" and {h.id for h in ans.hits} <= before
    assert 0 < len(said) < len(first.hits)
    assert ans.text.startswith(f"{len(said)} of the {len(first.hits)} papers")
    assert {h.id for h in ans.hits[:len(said)]} == {h.id for h in said}


@pytest.mark.slow
def test_of_these_is_never_a_new_search(accepted_ask):
    first, history = accepted_ask("jailbreak attacks on LLMs")
    ans, _ = accepted_ask("Of these, which target multimodal or vision-language models rather "
                          "than text-only LLMs?", history)
    assert ans.plan["papers"] in ("previous", "focus")
    assert {h.id for h in ans.hits} <= {h.id for h in first.hits}


@pytest.mark.slow
def test_narrowing_the_papers_in_hand_in_other_words_picks_among_them(accepted_ask):
    """"narrow it down to the ones about X", "only the ones on X", "which ones focus on X": a
    pick among the survey's papers (in fresh conversations they were new searches for the words
    "narrow it down to ...", a list of all 15, or a description of all 15)."""
    from rag.evaluate.topics import first_number

    first, history = accepted_ask("papers on parameter-efficient fine-tuning")
    before = {h.id for h in first.hits}

    def says(h, stem):
        return stem in f"{h.paper.title} {h.paper.abstract}".lower()

    quant, _ = accepted_ask("narrow it down to the ones about quantization", history)
    n = first_number(quant.text)
    assert quant.plan["papers"] == "previous" and quant.plan["op"] == "lookup"
    assert {h.id for h in quant.hits} <= before and "new search" not in quant.text
    assert n is not None and 0 < n < sum(says(h, "quantiz") for h in first.hits) + 1
    assert all(says(h, "quantiz") for h in quant.hits[:n])
    # none of the 15 is on diffusion models (none says "diffusion"): said, none picked
    assert not any(says(h, "diffusion") for h in first.hits)
    diff, _ = accepted_ask("only the ones on diffusion models", history)
    assert diff.plan["papers"] == "previous" and diff.text.startswith("None of the")
    assert "[1]" in diff.text  # (the closest ones shown after it)
    vision, _ = accepted_ask("which ones focus on vision models?", history)
    assert vision.plan["papers"] == "previous" and vision.kind == "lookup"
    assert {h.id for h in vision.hits} <= before
    # a second batch of fresh conversations, read in the browser: "only 6+" listed all 15;
    # "ones that handle X" searched anew; "filter to ones doing X" listed neighbours of [1]
    rated, _ = accepted_ask("only 6+", history)
    assert rated.filters_applied == ["rating>=6"] and {h.id for h in rated.hits} == {
        h.id for h in first.hits if (h.paper.rating or {}).get("mean", 0) >= 6}
    for turn in ("ones that handle irregular geometries or meshes",
                 "filter to ones doing sim-to-real"):
        ans, _ = accepted_ask(turn, history)
        assert ans.plan["papers"] == "previous" and ans.kind == "lookup", turn
        assert {h.id for h in ans.hits} <= before
        # (no PEFT paper says "mesh" or "sim"; the closest are shown after saying so)
        assert ans.text.startswith("None of the"), turn
    # ... and the 15 stay the papers in hand (it had taken the closest one alone)
    _, after = accepted_ask("filter to ones doing sim-to-real", history)
    tiers, _ = accepted_ask("hw many r posters vs orals", after)
    assert f"of the {len(first.hits)} papers" in tiers.text


@pytest.mark.slow
def test_a_new_topic_under_a_kept_filter_lists_its_papers_not_the_filters(accepted_ask):
    """Read in the browser: "what about X, anything there?" after "only the orals pls" listed
    the 20 orals nearest the words, most on other topics (their titles said "diffusion", one
    of the topic's words split off at "w/"); the papers on the topic come first and the rest
    are left out, saying so. Expected papers are the orals whose titles say the topic."""
    orals = [p for p in _accepted() if "oral" in p["status"].lower()]
    dlm = {p["id"] for p in orals if "diffusion language model" in p["title"].lower()}
    assert len(dlm) >= 3
    ans, _ = accepted_ask("list the orals on diffusion language models")
    assert ans.filters_applied == ["status=oral"]
    assert dlm <= {h.id for h in ans.hits} and len(ans.hits) <= len(dlm) + 4
    assert "on this topic by the relevance model" in ans.text
    first, history = accepted_ask("flow matching or diffusion for protein backbone design")
    _, history = accepted_ask("only the orals pls", history)
    ans, _ = accepted_ask("what about small-molecule conformer generation w/ diffusion, "
                          "anything there?", history)
    assert ans.filters_applied == ["status=oral"] and len(ans.hits) < 10
    titles = " ".join(h.paper.title.lower() for h in ans.hits)
    assert "diffusion language model" not in titles  # (diffusion LMs make no molecules)


@pytest.mark.slow
def test_positions_and_plural_questions_read_in_the_browser(accepted_ask):
    """"give me the bibtex for the first two" after a pick cited all five; "summarize the
    main result of the second paper in two sentences" searched "summarize ..." anew; "which
    ICLR 2026 papers study X?" looked up one paper."""
    first, history = accepted_ask("Which papers give convergence theory for Adam-type "
                                  "optimizers under heavy-tailed gradient noise?")
    second, _ = accepted_ask("summarize the main result of the second paper in two sentences",
                             history)
    assert [h.id for h in second.hits[:1]] == [first.hits[1].id]
    assert second.plan["positions"] == [2]
    _, history = accepted_ask("which of these use momentum?", history)
    cited, _ = accepted_ask("give me the bibtex for the first two", history)
    assert cited.plan["positions"] == [1, 2] and cited.text.count("@inproceedings") == 2
    tts, _ = accepted_ask("which ICLR 2026 papers study test-time scaling for code generation?")
    assert tts.plan["op"] == "survey" and len(tts.hits) > 5


@pytest.mark.slow
def test_the_list_before_one_paper_and_a_new_subject_after_a_comparison(accepted_ask):
    """Read in ten later conversations: "sort them by rating" after "what does the second one
    propose?" sorted that one paper; "how many papers on X overall?" after a pick counted the
    three picked; "what about X, anything there?" after "compare the 1st and 3rd" compared the
    first two papers a search for X found."""
    first, history = accepted_ask("conformal prediction for LLM outputs with factuality or "
                                  "coverage guarantees")
    _, history2 = accepted_ask("what does the second one propose?", history)
    ranked, _ = accepted_ask("sort them by rating", history2)
    assert {h.id for h in ranked.hits} == {h.id for h in first.hits}
    means = [(h.paper.rating or {}).get("mean", 0) for h in ranked.hits]
    assert means == sorted(means, reverse=True)
    _, history = accepted_ask("which of these use conformal risk control?", history)
    counted, _ = accepted_ask("how many papers on catastrophic forgetting overall?", history)
    assert counted.plan["papers"] == "search" and counted.plan["op"] == "count"
    assert "catastrophic forgetting" in counted.text.split("\n")[0]
    _, history = accepted_ask("neural operators pde uncertainty quantification")
    _, history = accepted_ask("compare the 1st and 3rd", history)
    mesh, _ = accepted_ask("ok and what about operators on irregular meshes or complex "
                           "geometries, anything there?", history)
    assert mesh.plan["op"] == "survey" and len(mesh.hits) > 2


@pytest.mark.slow
def test_the_best_rated_paper_of_an_area_says_which_part_it_is_the_best_of(accepted_ask):
    area = "reinforcement learning"
    papers = [p for p in _accepted() if p["primary_area"] == area]
    best = max(_mean(p) for p in papers)
    ans, _ = accepted_ask("Who has the top average rating in reinforcement learning?")
    assert ans.kind == "extreme" and ans.hits[0].paper.rating["mean"] == best
    assert ans.hits[0].paper.primary_area == area
    head = ans.text.split("\n")[0]
    assert f"{len(papers):,} papers" in head and area in head and "whole list" not in head


@pytest.mark.slow
def test_the_worst_of_them_is_one_paper_and_drop_below_keeps_the_rest(accepted_ask):
    first, history = accepted_ask("papers on federated learning privacy")
    kept, _ = accepted_ask("drop anything below 5", history)
    want = [h.id for h in first.hits if (h.paper.rating or {}).get("mean", -1) >= 5]
    assert "rating>=5" in kept.filters_applied and sorted(h.id for h in kept.hits) == sorted(want)
    worst, _ = accepted_ask("the worst of them?", history)
    low = min(h.paper.rating["mean"] for h in first.hits if h.paper.rating)
    assert worst.kind == "extreme" and worst.hits[0].paper.rating["mean"] == low
    assert worst.hits[0].id in {h.id for h in first.hits}


@pytest.mark.slow
def test_a_question_in_words_no_abstract_uses_is_refused_and_a_typo_is_not(accepted_ask):
    from rag.compose.refusal import MIN_DENSE, MIN_DENSE_UNSEEN

    for question in ("any good sourdough starter hydration tips?",
                     "papers on astrology based prediction of election outcomes?"):
        ans, _ = accepted_ask(question)
        # the search's best chunk cosine (a survey shows only the papers on its topic, so the
        # best shown card may be under it)
        top = accepted_ask.best_cosine(ans.standalone_question) if ans.hits else 0.0
        assert ans.refused, (question, top)
        assert top >= MIN_DENSE or not ans.hits  # refused by the unseen word, not the old rule
    ans, _ = accepted_ask("mitigating halucination in vision language models")  # a typo
    assert not ans.refused and ans.hits and MIN_DENSE_UNSEEN > MIN_DENSE


@pytest.mark.slow
def test_a_paper_named_after_a_topic_that_no_abstract_mentions_is_refused(accepted_ask):
    first, history = accepted_ask("optimizers for LLM pretraining")
    ans, _ = accepted_ask("what lr schedule did the Krakatoa optimizer paper use?", history)
    assert ans.refused and "Krakatoa" in ans.text and not ans.hits
    kept, _ = accepted_ask("which of these use Adam?", history)  # a name the index knows
    assert not kept.refused and kept.hits


@pytest.mark.slow
def test_more_papers_like_a_named_one_and_a_survey_asked_for_with_sides(accepted_ask):
    ids = {p["title"].split(":")[0]: p["id"] for p in _accepted()}
    like, _ = accepted_ask("find me more papers like TangoFlux — text-to-audio generation, "
                           "ideally with flow matching or preference optimization")
    assert like.kind == "similar" and ids["TangoFlux"] not in [h.id for h in like.hits]
    assert len(like.hits) >= 3
    survey, _ = accepted_ask("survey of methods for protein generation - diffusion vs flow "
                             "matching vs autoregressive")
    assert survey.kind == "survey" and len(survey.hits) >= 8


@pytest.mark.slow
def test_a_track_said_of_oneself_lists_it_and_it_then_means_the_track(accepted_ask):
    """"I'm mostly interested in the X track" lists the area (no search on "I'm mostly"); then
    "how many orals does it have?" counts the area's orals, not the 20 cards shown."""
    area = "applications to neuroscience & cognitive science"
    inside = [p for p in _accepted() if p["primary_area"] == area]
    orals = [p for p in inside if "oral" in p["status"].lower()]
    first, history = accepted_ask("I'm mostly interested in the neuroscience & cognitive science "
                                  "track")
    assert first.filters_applied == ["primary_area=" + area] and not first.refused
    assert first.kind == "list" and len(first.hits) < len(inside)
    ans, _ = accepted_ask("how many orals does it have?", history)
    assert ans.kind == "count" and ans.text.startswith(f"{len(orals)} of the {len(inside)} ")


@pytest.mark.slow
def test_and_the_lowest_after_the_best_is_the_other_end_of_the_same_part(accepted_ask):
    area = "infrastructure, software libraries, hardware, systems, etc."
    inside = [p for p in _accepted() if p["primary_area"] == area and _mean(p) >= 0]
    best, history = accepted_ask("what's the top rated paper in the infrastructure, software "
                                 "libraries, hardware, systems area?")
    assert best.kind == "extreme" and best.hits[0].paper.rating["mean"] == max(map(_mean, inside))
    low, _ = accepted_ask("and the lowest?", history)
    assert low.kind == "extreme" and "primary_area=" + area in low.filters_applied
    assert low.hits[0].paper.rating["mean"] == min(map(_mean, inside))
    assert low.hits[0].paper.primary_area == area


@pytest.mark.slow
def test_a_count_after_a_listing_is_of_its_set_and_the_whole_index_is_the_whole_list(accepted_ask):
    """After a listing, "how many r there total" counts what it matched (also after a summary
    of its cards); "how many papers are in the whole index?" after a topic is the whole list."""
    papers = _accepted()
    gen_orals = [p for p in papers if p["primary_area"] == "generative models"
                 and "oral" in p["status"].lower()]
    causal = [p for p in papers if p["primary_area"] == "causal reasoning"]
    _, history = accepted_ask("list the generative models orals")
    ans, _ = accepted_ask("how many r there total", history)
    assert ans.kind == "count" and ans.text.startswith(f"{len(gen_orals)} of the {len(gen_orals)}")
    _, history = accepted_ask("Tell me about the causal reasoning area")
    _, history = accepted_ask("what are typical topics there?", history)
    ans, _ = accepted_ask("how many papers does it have in total?", history)
    assert ans.kind == "count" and ans.text.startswith(f"{len(causal)} of the {len(causal)}")
    _, history = accepted_ask("papers on protein design")
    ans, _ = accepted_ask("how many papers are in the whole index?", history)
    assert ans.kind == "count" and f"holds {len(papers):,} papers" in ans.text


@pytest.mark.slow
def test_an_area_after_an_answer_about_nothing_in_it_lists_the_area(accepted_ask):
    """None of the previous papers is in the area and the earlier words find nothing there: the
    area's papers are listed (it was refused), and "just the oral ones" then filters all of them."""
    area = "probabilistic methods (Bayesian methods, variational inference, sampling, UQ, etc.)"
    inside = [p for p in _accepted() if p["primary_area"] == area]
    orals = [p for p in inside if "oral" in p["status"].lower()]
    _, history = accepted_ask("I'm putting together stats for a blog post")
    ans, history = accepted_ask("probabilistic methods area, please", history)
    assert not ans.refused and ans.hits and all(h.paper.primary_area == area for h in ans.hits)
    assert f"{len(inside):,} of the" in ans.text
    ans, _ = accepted_ask("just the oral ones", history)
    assert sorted(h.id for h in ans.hits) == sorted(p["id"] for p in orals)


@pytest.mark.slow
def test_an_aspect_of_the_previous_papers_looks_at_every_one_of_them(accepted_ask):
    """"which benchmarks do they evaluate on?" after a topic: the previous answer's papers are
    the ones asked about, all of them, whatever the aspect question's own words match (it kept
    the 8 its words were nearest to)."""
    first, history = accepted_ask("papers about machine unlearning")
    ans, _ = accepted_ask("which benchmarks do they evaluate on", history)
    assert ans.kind == "survey" and ans.text.startswith("Datasets and benchmarks")
    assert sorted(h.id for h in ans.hits) == sorted(h.id for h in first.hits)


@pytest.mark.slow
def test_its_rating_is_stated_from_the_catalog(accepted_ask):
    """"what's its rating?" after a lookup states the paper's mean reviewer rating and its
    reviews (it quoted the abstract's results), and nothing else."""
    want = next(p for p in _accepted() if p["id"] == "ZrgxU8WMmG")
    first, history = accepted_ask("Which paper proposes StepORLM?")
    assert first.hits[0].id == "ZrgxU8WMmG"
    ans, _ = accepted_ask("what's its rating?", history)
    assert ans.hits[0].id == "ZrgxU8WMmG" and ans.plan["facts"] == ["rating"]
    head = ans.text.strip().split("\n")[0]
    assert f"has a mean reviewer rating of {_mean(want):g}" in head
    assert f"{len(want['ratings_2025_11_22'])} reviews" in head and "“" not in ans.text


@pytest.mark.slow
def test_the_best_one_of_a_list_shown_worst_first_is_its_last(accepted_ask):
    first, history = accepted_ask("RLHF reward hacking")
    ranked, history = accepted_ask("rank these from worst to best", history)
    assert ranked.plan["order"] == "rating_asc"
    ans, _ = accepted_ask("the best one, describe it", history)
    best = max((h.paper.rating or {}).get("mean", -1) for h in first.hits)
    assert ans.hits and ans.hits[0].paper.rating["mean"] == best
    assert ans.plan["positions"] in ([], [len(ranked.hits)])


def test_a_question_the_list_cannot_answer_says_so_and_the_part_can_be_removed(real_index,
                                                                               real_settings,
                                                                               real_generator):
    """"when's the camera-ready deadline?" is read as outside the list (the scope head): the
    answer says what the list holds and lists no papers; removing that part searches."""
    from rag.chat.answer import answer

    def run(question, **kw):
        return answer(question, retriever=real_index, generator=real_generator,
                      settings=real_settings, mode="extractive", **kw)

    ans = run("when's the camera-ready deadline for ICLR 2026?")
    assert ans.refused and ans.hits == [] and ans.plan["outside"]
    assert "does not say" in ans.text and "nearest papers" not in ans.text
    searched = run("when's the camera-ready deadline for ICLR 2026?", drop=["outside"])
    assert not searched.plan["outside"] and searched.plan["papers"] == "search"
    kept = run("Which paper proposes StepORLM?")
    assert not kept.refused and kept.hits[0].id == "ZrgxU8WMmG" and not kept.plan["outside"]


@pytest.mark.slow
def test_which_of_these_after_the_top_five_picks_among_those_five(accepted_ask):
    """After "top 5 papers in an area by rating" (ties at the cut included), "which of these
    are orals" keeps the orals among those, not among every paper of the area."""
    area = "learning on graphs and other geometries & topologies"
    rated = sorted(((_mean(p), p) for p in _accepted() if p["primary_area"] == area
                    and _mean(p) >= 0), key=lambda x: -x[0])
    cut = rated[4][0]
    top = {p["id"] for m, p in rated if m >= cut}
    want = {p["id"] for m, p in rated if m >= cut and p["status"] == "Accept (Oral)"}
    first, history = accepted_ask(f"top 5 papers in the {area} area by rating")
    assert {h.id for h in first.hits[:len(top)]} == top
    ans, _ = accepted_ask("which of these are orals", history)
    assert {h.id for h in ans.hits} == want and ans.kind == "list"


def test_how_many_of_them_when_none_is_counts_zero_of_them(ask):
    """No seed paper is an oral: "how many of them are orals?" after a topic is 0 of the
    papers shown (it counted a search for the words "how many of them" among every oral)."""
    assert not any("Oral" in p["status"] for p in _seed())
    first, history = ask("Which papers are about combinatorial optimization?")
    ans, _ = ask("how many of them are orals", history)
    assert ans.kind == "count" and not ans.refused and ans.hits == []
    assert ans.text.startswith(f"0 of the {len(first.hits)} papers of the previous answer")


def test_a_position_the_previous_answer_did_not_show_is_said_and_nothing_else(ask):
    first, history = ask("Which papers are about combinatorial optimization?")
    assert len(first.hits) < 40
    ans, _ = ask("tell me about the 40th one", history)
    assert ans.refused and ans.hits == [] and ans.plan["positions"] == [40]
    assert ans.text.strip() == (f"The previous answer showed {len(first.hits)} papers, so [40] "
                                "is not among them.")


def test_tell_me_more_about_a_paper_gives_its_approach_and_results(ask):
    """"tell me more about the second one" asks about nothing in particular: the paper's
    approach and results sentences (from its own abstract), not "does not say this directly"."""
    from rag.compose.roles import MIN_ROLE, role_score

    first, history = ask("Which papers are about combinatorial optimization?")
    ans, _ = ask("tell me more about the second one", history)
    want = next(p for p in _seed() if p["id"] == first.hits[1].id)
    assert ans.hits[0].id == want["id"] and "does not say" not in ans.text
    quotes = [s.quote for s in ans.sentences if s.kind == "quote"]
    assert quotes and all(q in want["abstract"] or q.replace("(", "[").replace(")", "]")
                          in want["abstract"] for q in quotes)
    assert any(role_score("approaches", q, 0.3) >= MIN_ROLE for q in quotes)


def test_the_nth_paper_in_your_list_is_that_position(ask):
    # (of the seed corpus's 19 papers, 4 are on gradient-based optimization; 2 on combinatorial
    # optimization since the MaxSim features, where a third, off-topic one was shown before)
    first, history = ask("Which papers are about gradient-based optimization?")
    ans, _ = ask("the third paper in your list - what is it about?", history)
    assert ans.plan["papers"] == "positions" and ans.plan["positions"] == [3]
    assert ans.hits[0].id == first.hits[2].id


def test_a_survey_asked_for_n_papers_shows_n(ask):
    ans, _ = ask("show me 3 papers on gradient-based optimization")
    assert ans.kind == "survey" and ans.plan["n"] == 3 and len(ans.hits) == 3
    assert "3" not in ans.plan["query"]


@pytest.mark.slow
def test_the_same_but_for_another_area_after_a_pick_is_that_area(accepted_ask):
    """"now the same but for the learning theory area" after "the worst rated among them" (a
    pick from the answer before) is the worst-rated paper of that area, not a search for the
    words "the worst rated among them" (refused)."""
    lt = [p for p in _accepted() if p["primary_area"] == "learning theory" and _mean(p) >= 0]
    worst = min(_mean(p) for p in lt)
    _, history = accepted_ask("causal reasoning area rated above 6")
    pick, history = accepted_ask("whats the worst rated among them", history)
    assert pick.kind == "extreme"
    ans, _ = accepted_ask("now the same but for the learning theory area", history)
    assert not ans.refused and ans.plan["papers"] == "catalog"
    assert "primary_area=learning theory" in ans.plan["filters"]
    assert ans.hits[0].paper.rating["mean"] == worst


@pytest.mark.slow
def test_how_many_of_those_after_a_topic_count_counts_all_it_counted(accepted_ask):
    """"how many of those are orals?" after "how many papers about X?" counts among every
    paper the first count counted, not the 10 it showed. The first count is by meaning
    (rag.retrieve.membership); the phrase count it states beside it comes from the data file
    with a plain regex of the phrase (singular or plural), and the orals from the file's status
    of the papers counted."""
    import re

    phrase = re.compile(r"(?<!\w)diffusion[\s-]+language[\s-]+model(?:e?s)?(?!\w)", re.I)
    texts = {p["id"]: " ".join([p["title"], *(p.get("keywords") or []), p["abstract"]])
             for p in _accepted()}
    by_phrase = [p for p in _accepted() if phrase.search(texts[p["id"]])]
    first, history = accepted_ask("how many papers about diffusion language models?")
    m = re.match(r"About (\d+) of the ", first.text)
    assert first.kind == "count" and m, first.text[:200]
    counted = int(m.group(1))
    assert f"By the words alone, {len(by_phrase)} contain the phrase" in first.text
    assert len(first.hits) < counted
    status = {p["id"]: p["status"] for p in _accepted()}
    ans, _ = accepted_ask("how many of those are orals", history)
    assert ans.kind == "count"
    orals = [h.id for h in ans.hits]
    assert all("oral" in status[i].lower() for i in orals)
    assert ans.text.startswith(f"{len(orals)} of the {counted} papers"), ans.text[:200]


@pytest.mark.slow
def test_the_best_one_shows_one_and_the_worst_is_of_the_same_set(accepted_ask):
    """"best one?" after a search answers with its best-rated paper only (ties included), and
    "and the worst?" then picks from the same papers, not from the one shown."""
    first, history = accepted_ask("protein design with generative models")
    means = [h.paper.rating["mean"] for h in first.hits if h.paper.rating]
    best, history = accepted_ask("best one?", history)
    assert best.kind == "extreme" and best.hits
    assert len(best.hits) == means.count(max(means))
    assert all(h.paper.rating["mean"] == max(means) for h in best.hits)
    worst, _ = accepted_ask("and the worst?", history)
    assert worst.kind == "extreme" and worst.hits
    assert all(h.paper.rating["mean"] == min(means) for h in worst.hits)


@pytest.mark.slow
def test_compare_them_after_a_few_papers_compares_all_of_them(accepted_ask):
    """"compare them" after the 4 orals of an area: a table of all 4 (at most 5 fit one)."""
    area = "applications to neuroscience & cognitive science"
    orals = {p["id"] for p in _accepted() if p["primary_area"] == area
             and "oral" in p["status"].lower()}
    assert 2 <= len(orals) <= 5
    listed, history = accepted_ask("orals in neuroscience & cog sci")
    assert {h.id for h in listed.hits} == orals
    ans, _ = accepted_ask("compare them", history)
    assert ans.kind == "compare" and set(ans.comparison_ids) == orals


@pytest.mark.slow
def test_who_wrote_it_in_an_anonymous_list_says_so_and_the_paper_stays(accepted_ask):
    """ICLR 2026's list names no authors: "who wrote X?" says so of the paper it found (not a
    refusal: tests/data/dev_conference.jsonl), and the next turn is still about that paper."""
    ans, history = accepted_ask("who wrote 'LLMs Get Lost In Multi-Turn Conversation'?")
    assert not ans.refused and ans.kind == "authors" and ans.hits[0].id == "VKGTGGcwl6"
    assert "no author names" in ans.text
    assert ans.plan["names"] == ["LLMs Get Lost In Multi-Turn Conversation"]
    nxt, _ = accepted_ask("what does it find?", history)
    assert nxt.hits[0].id == "VKGTGGcwl6" and not nxt.refused
