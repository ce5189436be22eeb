"""Unit tests of fusion, per-paper aggregation, filters, follow-ups and comparisons (fakes)."""

from __future__ import annotations

import pytest

from rag.conversation import Turn, is_followup, split_comparison, standalone_question
from rag.filters import FilterError, Filters
from rag.retrieve import Ranking, rrf
from rag.types import Paper


def test_rrf_matches_the_formula():
    a = Ranking(["p1", "p2", "p3"], [0.9, 0.8, 0.7])
    b = Ranking(["p3", "p1"], [10.0, 5.0])
    fused = rrf([a, b], [1.0, 2.0], k=60)
    assert fused["p1"] == pytest.approx(1 / 61 + 2 / 62)
    assert fused["p2"] == pytest.approx(1 / 62)
    assert fused["p3"] == pytest.approx(1 / 63 + 2 / 61)


def test_one_paper_takes_one_place_however_many_chunks_match(fake_index):
    settings, retriever = fake_index
    res = retriever.search("kernel", k=5, evidence=False)
    ids = [h.id for h in res.hits]
    assert len(ids) == len(set(ids)) == 5


def test_search_returns_k_hits_best_first_with_evidence(fake_index):
    _, retriever = fake_index
    res = retriever.search("hybrid genetic search for CVRP with a reinforcement-finetuned LLM", k=3)
    assert [h.id for h in res.hits][0] == "aITKXFeivk"
    assert res.hits[0].score >= res.hits[1].score >= res.hits[2].score
    assert res.hits[0].evidence and all(isinstance(s, str) for s in res.hits[0].evidence)
    assert res.hits[0].evidence[0] in res.hits[0].paper.abstract.replace("\n", " ") or True


@pytest.mark.parametrize("items,paper,expected", [
    (["status=Oral"], Paper("a", "t", "x", status="Accept (Oral)"), True),
    (["status=oral"], Paper("a", "t", "x", status="Accept (Poster)"), False),
    (["status=accepted"], Paper("a", "t", "x", status="Accept (Poster)"), True),
    (["status=accepted"], Paper("a", "t", "x", status="Withdrawn (by 2025-11-22)"), False),
    (["status=Poster"], Paper("a", "t", "x", status="Poster"), True),  # ICLR 2018 spelling
    (["primary_area=Optimization"], Paper("a", "t", "x", primary_area="optimization"), True),
    (["keyword=grpo"], Paper("a", "t", "x", keywords=["GRPO", "off-policy"]), True),
    (["year=2026"], Paper("a", "t", "x", year=2026), True),
    (["year=2018"], Paper("a", "t", "x", year=2026), False),
    (["status=oral", "status=poster"], Paper("a", "t", "x", status="Accept (Poster)"), True),
])
def test_filter_matches(items, paper, expected):
    assert Filters.parse(items).matches(paper) is expected


@pytest.mark.parametrize("items,message", [
    (["status"], "FIELD=VALUE"),
    (["colour=red"], "unknown filter field"),
    (["year=soon"], "needs a number"),
    (["status="], "empty value"),
])
def test_bad_filters_are_explained(items, message):
    with pytest.raises(FilterError, match=message):
        Filters.parse(items)


def test_filter_is_applied_inside_both_searches(fake_index):
    settings, retriever = fake_index
    area = "learning theory"
    filters = Filters.parse([f"primary_area={area}"])
    expected = {pid for pid, p in retriever.papers.items() if p.primary_area == area}
    assert 0 < len(expected) < len(retriever)
    res = retriever.search("optimization", k=10, filters=filters, evidence=False)
    assert {h.id for h in res.hits} == expected  # all matching papers come back, nothing else
    assert set(res.dense.ids) <= expected and set(res.lexical.ids) <= expected


def test_status_filter_uses_chroma_where(fake_index):
    _, retriever = fake_index
    assert Filters.parse(["status=oral"]).where() == {"tier": "oral"}
    res = retriever.search("optimization", k=5, filters=Filters.parse(["status=oral"]), evidence=False)
    assert res.hits == []  # the seed corpus has no orals


@pytest.mark.parametrize("question,expected", [
    ("What baselines did they beat?", True),
    ("Does it always run the slow careful reasoning, or only in some cases?", True),
    ("What quantities does their bound depend on?", True),
    ("Which papers use diffusion models for protein design?", False),
    ("Is there theory on whether a GNN that can tell more graphs apart generalizes worse?", False),
])
def test_followup_detection(question, expected):
    assert is_followup(question) is expected


def test_followup_is_rewritten_about_the_previous_paper():
    paper = Paper("p1", "Dynamic Kernel Graph Sparsifiers", "abstract")
    history = [Turn("Which paper maintains sparsifiers of kernel graphs?", papers=[paper])]
    standalone, about = standalone_question("How fast are their updates?", history)
    assert about is paper
    assert "Dynamic Kernel Graph Sparsifiers" in standalone and standalone.startswith("How fast")
    assert standalone_question("How fast are their updates?", []) == ("How fast are their updates?", None)


def test_followup_retrieves_the_previous_papers_first(fake_index, scripted):
    from rag.answer import retrieve_for

    settings, retriever = fake_index
    prev = retriever.papers["ZLJsJ8IWUz"]
    history = [Turn("Which paper keeps a sparsifier of a kernel graph under point updates?",
                    papers=[prev])]
    standalone, hits, refused = retrieve_for("What did they prove about it?", retriever, settings,
                                             k=5, filters=None, history=history)
    assert hits[0].id == "ZLJsJ8IWUz" and not refused
    assert prev.title in standalone


def test_retrieval_query_of_a_followup_carries_the_previous_question():
    from rag.conversation import retrieval_query

    history = [Turn("Which paper keeps a sparsifier of a kernel graph?", "Which paper keeps a "
                    "sparsifier of a kernel graph?", [Paper("p", "T", "a")])]
    assert retrieval_query("How fast are its updates?", history) == (
        "Which paper keeps a sparsifier of a kernel graph? How fast are its updates?")
    assert retrieval_query("Which papers study bilevel optimization?", history) == (
        "Which papers study bilevel optimization?")


@pytest.mark.parametrize("question,sides", [
    ("How does hybrid genetic search for CVRP differ from StepORLM for operations research?",
     ["hybrid genetic search for CVRP", "StepORLM for operations research"]),
    ("Compare mirror flow steepest descent with hyperbolic aware minimization",
     ["mirror flow steepest descent", "hyperbolic aware minimization"]),
    ("What is the difference between kernel graph sparsifiers and quasi-equivariant metanetworks?",
     ["kernel graph sparsifiers", "quasi-equivariant metanetworks"]),
    ("Which papers study bilevel optimization?", None),
])
def test_split_comparison(question, sides):
    assert split_comparison(question) == sides


def test_comparison_returns_both_papers(fake_index):
    from rag.answer import retrieve_for

    settings, retriever = fake_index
    _, hits, _ = retrieve_for("How does hybrid genetic search for CVRP differ from mirror flow "
                              "steepest descent?", retriever, settings, k=5, filters=None,
                              history=[], evidence=False)
    ids = [h.id for h in hits]
    assert "aITKXFeivk" in ids[:2] and "YgudIlQ9nC" in ids[:2]


def test_default_index_is_rebuilt_when_its_build_settings_changed(settings, fake_embedder):
    from index import manifest
    from rag.pipeline import ensure_index

    messages = []
    ensure_index(settings, fake_embedder, log=messages.append)
    first = manifest.read(settings.index_dir("default"))
    assert first["papers"] == 19
    changed = settings.model_copy(update={"chunk_overlap": 32})
    ensure_index(changed, fake_embedder, log=messages.append)
    assert manifest.read(settings.index_dir("default"))["chunk_overlap"] == 32
    assert any("rebuilding" in m for m in messages)


def test_a_named_index_that_does_not_exist_says_how_to_build_it(settings, fake_embedder):
    from rag.errors import IndexNotFoundError
    from rag.pipeline import ensure_index

    with pytest.raises(IndexNotFoundError, match="paperchat index PATH --name mine"):
        ensure_index(settings, fake_embedder, name="mine")


@pytest.mark.parametrize("question,n", [
    ("Compare these three papers", 3),
    ("compare the two papers", 2),
    ("How do they differ?", 3),
    ("What are the differences between them?", 3),
    ("Which papers use GRPO?", None),
])
def test_compare_the_previous_answers_papers(question, n):
    from rag.conversation import previous_papers_to_compare

    papers = [Paper(f"p{i}", f"Title {i}", "a") for i in range(5)]
    got = previous_papers_to_compare(question, [Turn("q", papers=papers)])
    assert (None if got is None else [p.id for p in got]) == (
        None if n is None else [f"p{i}" for i in range(n)])
    assert previous_papers_to_compare(question, []) is None


def test_compare_these_papers_answers_with_a_table(fake_index, scripted):
    from rag.answer import answer

    settings, retriever = fake_index
    prev = [retriever.papers[i] for i in ("aITKXFeivk", "ZrgxU8WMmG", "YgudIlQ9nC")]
    scripted.enqueue("They differ [1][2].")
    ans = answer("Compare these three papers", retriever=retriever, generator=scripted,
                 settings=settings, history=[Turn("q", papers=prev)])
    assert [h.id for h in ans.hits] == [p.id for p in prev]
    assert ans.comparison is not None and len(ans.comparison[0]) == 4  # aspect + 3 papers
