"""Unit tests of fusion, per-paper aggregation, filters, follow-ups and comparisons (fakes)."""

from __future__ import annotations

import pytest

from rag.filters import FilterError, Filters
from rag.retrieve.combine import rrf
from rag.retrieve.retriever import Ranking
from rag.types import Paper
from rag.understand.history import Turn
from rag.understand.mentions import comparison_sides
from rag.understand.plan import Plan


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
    from rag.text import normalise, split_sentences

    assert res.hits[0].evidence[0] in split_sentences(normalise(res.hits[0].paper.abstract))


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



def test_a_plan_about_the_paper_under_discussion_names_it(fake_index):
    from rag.chat.operations import select

    settings, retriever = fake_index
    paper = retriever.papers["ZLJsJ8IWUz"]
    history = [Turn("Which paper maintains sparsifiers of kernel graphs?", papers=[paper])]
    plan = Plan("focus", "describe", query="How fast are their updates?",
                said="How fast are their updates?")
    sel = select(plan, history, retriever, settings, k=5)
    assert sel.hits[0].id == "ZLJsJ8IWUz" and sel.focus[0] == 1 and not sel.refused
    assert sel.standalone.startswith("How fast") and paper.title in sel.standalone
    assert plan.ids[0] == "ZLJsJ8IWUz"
    # without a previous answer the same plan searches its own words
    alone = select(plan, [], retriever, settings, k=5)
    assert alone.searched and "(about:" not in alone.standalone


def test_followup_retrieves_the_previous_papers_first(fake_index, scripted):
    from rag.chat.answer import retrieve_for

    settings, retriever = fake_index
    prev = retriever.papers["ZLJsJ8IWUz"]
    history = [Turn("Which paper keeps a sparsifier of a kernel graph under point updates?",
                    papers=[prev])]
    standalone, hits, refused = retrieve_for("What did they prove about it?", retriever, settings,
                                             k=5, filters=None, history=history)
    assert hits[0].id == "ZLJsJ8IWUz" and not refused
    assert prev.title in standalone


def test_a_followups_own_search_carries_the_previous_question(fake_index, monkeypatch):
    from rag.chat.operations import select

    settings, retriever = fake_index
    asked = []
    search = retriever.search
    monkeypatch.setattr(retriever, "search", lambda q, **kw: asked.append(q) or search(q, **kw))
    history = [Turn("Which paper keeps a sparsifier of a kernel graph?", "Which paper keeps a "
                    "sparsifier of a kernel graph?", [retriever.papers["ZLJsJ8IWUz"]])]
    select(Plan("focus", "describe", query="How fast are its updates?"), history, retriever,
           settings, k=5)
    assert asked == ["Which paper keeps a sparsifier of a kernel graph? How fast are its updates?"]


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
    assert comparison_sides(question) == sides


def test_comparison_returns_both_papers(fake_index):
    from rag.chat.answer import retrieve_for

    settings, retriever = fake_index
    _, hits, _ = retrieve_for("How does hybrid genetic search for CVRP differ from mirror flow "
                              "steepest descent?", retriever, settings, k=5, filters=None,
                              history=[], evidence=False)
    ids = [h.id for h in hits]
    assert "aITKXFeivk" in ids[:2] and "YgudIlQ9nC" in ids[:2]


def test_default_index_is_rebuilt_when_its_build_settings_changed(settings, fake_embedder):
    from index import manifest
    from rag.chat.pipeline import ensure_index

    messages = []
    ensure_index(settings, fake_embedder, log=messages.append)
    first = manifest.read(settings.index_dir("default"))
    assert first["papers"] == 19
    changed = settings.model_copy(update={"chunk_overlap": 32})
    ensure_index(changed, fake_embedder, log=messages.append)
    assert manifest.read(settings.index_dir("default"))["chunk_overlap"] == 32
    assert any("rebuilding" in m for m in messages)


def test_a_named_index_that_does_not_exist_says_how_to_build_it(settings, fake_embedder):
    from rag.chat.pipeline import ensure_index
    from rag.errors import IndexNotFoundError

    with pytest.raises(IndexNotFoundError, match="paperchat index PATH --name mine"):
        ensure_index(settings, fake_embedder, name="mine")


@pytest.mark.parametrize("plan,compared", [
    (Plan("previous", "compare"), ["p1", "p2", "p3", "p4", "p5"]),  # "compare these" (all 5)
    (Plan("previous", "compare", n=2), ["p1", "p2"]),             # "compare the two papers"
    (Plan("positions", "compare", positions=[1, 3]), ["p1", "p3"]),  # "[1] vs [3]"
    (Plan("positions", "compare", positions=[2, 4]), ["p2", "p4"]),  # "compare paper 2 and 4"
    (Plan("focus", "compare"), ["p1", "p2"]),                     # "how do they differ?"
])
def test_compare_the_previous_answers_papers(fake_index, plan, compared):
    from rag.chat.operations import run, select

    settings, retriever = fake_index
    papers = [Paper(f"p{i}", f"Title {i}", f"Abstract {i} about graphs.") for i in range(1, 6)]
    retriever.papers.update({p.id: p for p in papers})
    turn = Turn("q", papers=papers, focus=2, numbered=dict(enumerate(papers, start=1)))
    sel = select(plan, [turn], retriever, settings, k=5, evidence=False)
    done = run(plan, sel, retriever, settings)
    assert done.kind == "compare" and [c.hit.id for c in done.table.columns] == compared


def test_compare_these_after_more_papers_than_a_table_holds_takes_the_first_three(fake_index):
    from rag.chat.operations import run, select
    from rag.chat.selection import COMPARE_DEFAULT, COMPARE_MAX

    settings, retriever = fake_index
    papers = [Paper(f"q{i}", f"Title {i}", f"Abstract {i} about graphs.")
              for i in range(1, COMPARE_MAX + 3)]
    retriever.papers.update({p.id: p for p in papers})
    turn = Turn("q", papers=papers, focus=1, numbered=dict(enumerate(papers, start=1)))
    plan = Plan("previous", "compare")
    done = run(plan, select(plan, [turn], retriever, settings, k=10, evidence=False), retriever,
               settings)
    assert [c.hit.id for c in done.table.columns] == [p.id for p in papers[:COMPARE_DEFAULT]]


@pytest.mark.parametrize("positions,ids,note", [
    ([2], ["p2"], False), ([3], ["p3"], False), ([2, 9], ["p2"], True),  # [9] was not shown
])
def test_papers_named_by_their_number_in_the_previous_answer(fake_index, positions, ids, note):
    from rag.chat.operations import select

    settings, retriever = fake_index
    papers = [Paper(f"p{i}", f"Title {i}", "a") for i in range(1, 6)]
    turn = Turn("q", papers=papers, numbered={n: p for n, p in enumerate(papers, start=1)})
    sel = select(Plan("positions", "describe", positions=positions), [turn], retriever, settings,
                 k=5, evidence=False)
    assert [h.id for h in sel.hits] == ids
    assert any("[9]" in s.text for s in sel.notes) == note


def test_compare_these_papers_answers_with_a_table(fake_index, scripted):
    from rag.chat.answer import answer

    settings, retriever = fake_index
    prev = [retriever.papers[i] for i in ("aITKXFeivk", "ZrgxU8WMmG", "YgudIlQ9nC")]
    scripted.enqueue("They differ [1][2].")
    ans = answer("Compare these three papers", retriever=retriever, generator=scripted,
                 settings=settings, history=[Turn("q", papers=prev, kind="survey",
                                                  numbered=dict(enumerate(prev, start=1)))])
    assert [h.id for h in ans.hits] == [p.id for p in prev]
    assert ans.comparison is not None and len(ans.comparison[0]) == 4  # aspect + 3 papers


# --- pseudo-relevance feedback (Rocchio on the dense side) --------------------------------------
QUESTION = "hybrid genetic search for CVRP with a reinforcement-finetuned LLM"


def test_feedback_query_is_the_rocchio_formula(fake_index):
    import numpy as np

    settings, retriever = fake_index
    q = retriever.embedder.embed([QUESTION])[0]
    ids = ["aITKXFeivk", "ZLJsJ8IWUz"]
    got = retriever.store._col.get(where={"paper_id": {"$in": ids}},
                                   include=["embeddings", "metadatas"])
    centroids = []
    for pid in ids:
        vecs = np.array([e for e, m in zip(got["embeddings"], got["metadatas"])
                         if m["paper_id"] == pid])
        assert len(vecs) >= 1
        centroids.append(vecs.mean(0) / np.linalg.norm(vecs.mean(0)))
    expected = q + settings.feedback_weight * np.mean(centroids, axis=0)
    expected /= np.linalg.norm(expected)
    assert np.allclose(retriever.feedback_query(q, ids), expected, atol=1e-6)
    assert retriever.feedback_query(q, ["no-such-paper"]) is None


def test_feedback_moves_the_fused_scores_but_not_the_questions_own_dense_ranking(fake_index):
    settings, retriever = fake_index
    plain = retriever.search(QUESTION, k=10, evidence=False, feedback=False)
    fb = retriever.search(QUESTION, k=10, evidence=False, feedback=True)
    assert fb.meta["feedback_papers"] == [h.id for h in plain.hits[:settings.feedback_papers]]
    assert "feedback_papers" not in plain.meta
    # refusal is calibrated on the question's own cosine: that ranking is the same either way
    assert fb.dense.ids == plain.dense.ids and fb.dense.scores == plain.dense.scores
    plain_dense = {h.id: h.dense for h in plain.hits}
    for h in fb.hits:
        if h.id in plain_dense:
            assert h.dense == pytest.approx(plain_dense[h.id], abs=1e-6)
    assert {h.id: h.score for h in fb.hits} != {h.id: h.score for h in plain.hits}


def test_feedback_papers_zero_turns_feedback_off(fake_index):
    settings, retriever = fake_index
    plain = retriever.search(QUESTION, k=10, evidence=False, feedback=False)
    retriever.settings = settings.model_copy(update={"feedback_papers": 0})
    off = retriever.search(QUESTION, k=10, evidence=False)
    assert [(h.id, h.score) for h in off.hits] == [(h.id, h.score) for h in plain.hits]


@pytest.mark.parametrize("with_history,expected", [(False, True), (True, False)])
def test_followups_are_searched_without_feedback(fake_index, monkeypatch, with_history, expected):
    from rag.chat.answer import retrieve_for

    settings, retriever = fake_index
    seen = []
    search = retriever.search
    monkeypatch.setattr(retriever, "search",
                        lambda *a, **kw: seen.append(kw.get("feedback", True)) or search(*a, **kw))
    history = [Turn("Which paper keeps a sparsifier of a kernel graph under point updates?",
                    papers=[retriever.papers["ZLJsJ8IWUz"]])] if with_history else []
    retrieve_for("What did they prove about it?" if with_history else QUESTION, retriever,
                 settings, k=5, filters=None, history=history, evidence=False)
    assert seen == [expected]


# --- BM25 --------------------------------------------------------------------------------------
def test_bm25_scores_follow_the_lucene_formula_with_k1_1_2_and_b_0_75():
    import math

    from rag.backends.lexical import LexicalIndex

    docs = ["graph sparsifier kernel graph", "kernel regression", "protein folding model design"]
    idx = LexicalIndex.build(["a", "b", "c"], docs)
    # stemmed, stop-word-free lengths: 4, 2, 4; avgdl 10/3; "kernel" is in 2 of 3 docs
    k1, b, n, df, avgdl = 1.2, 0.75, 3, 2, 10 / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = [idf * 1 / (1 + k1 * (1 - b + b * dl / avgdl)) for dl in (4, 2)]
    got = idx.scores("kernel")
    assert got[0] == pytest.approx(expected[0], rel=1e-5)
    assert got[1] == pytest.approx(expected[1], rel=1e-5)
    assert got[2] == 0.0


def test_a_bm25_index_built_with_other_parameters_is_rebuilt(fake_index, fake_embedder):
    import json

    import bm25s

    from index.build import build_index
    from index.catalog import Catalog
    from rag.backends.lexical import LexicalIndex, _tokenize
    from rag.retrieve.retriever import Retriever
    from tests.conftest import SEED

    settings, retriever = fake_index
    index_dir = settings.index_dir(settings.index)
    bm25_dir = index_dir / "bm25"
    fresh = retriever.bm25_scores(QUESTION)

    def write_old_index():  # what an older paperchat (bm25s' default k1=1.5) left on disk
        rows = list(Catalog(index_dir / "papers.sqlite").papers())
        old = bm25s.BM25(k1=1.5, b=0.75)
        old.index(_tokenize([t for _, t in rows], return_ids=True), show_progress=False)
        LexicalIndex(old, [p.id for p, _ in rows]).save(bm25_dir)
        assert json.loads((bm25_dir / "params.index.json").read_text())["k1"] == 1.5
        assert not LexicalIndex.is_current(bm25_dir)

    write_old_index()
    reopened = Retriever.open(settings, fake_embedder)
    assert LexicalIndex.is_current(bm25_dir)
    assert list(reopened.bm25_scores(QUESTION)) == pytest.approx(list(fresh))

    write_old_index()
    summary = build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                          log=lambda m: None)
    assert summary.embedded == 0 and LexicalIndex.is_current(bm25_dir)


def test_paper_vectors_by_chunk_id_equal_those_found_by_metadata(fake_index):
    import numpy as np

    from rag.types import chunk_id, paper_of

    _, retriever = fake_index
    ids = list(retriever.papers)[:6] + ["no-such-paper"]
    assert retriever.n_chunks and all(retriever.n_chunks[p] >= 1 for p in ids[:6])
    by_id = retriever.store.paper_vectors(ids, retriever.n_chunks)
    got = retriever.store._col.get(where={"paper_id": {"$in": ids}},
                                   include=["embeddings", "metadatas"])
    by_meta: dict[str, list] = {}
    for emb, meta in zip(got["embeddings"], got["metadatas"]):
        by_meta.setdefault(meta["paper_id"], []).append(emb)
    assert set(by_id) == set(by_meta) == set(ids[:6])
    for pid in by_id:
        assert by_id[pid].shape == (retriever.n_chunks[pid], by_id[pid].shape[1])
        # same rows, whatever order each path returns them in
        assert np.allclose(np.sort(by_id[pid], axis=0), np.sort(np.array(by_meta[pid]), axis=0))
    assert paper_of(chunk_id("a#b", 3)) == "a#b"


def test_dense_matches_name_their_paper_without_metadata(fake_index):
    _, retriever = fake_index
    q = retriever.embedder.embed([QUESTION])[0]
    matches = retriever.store.query(q, 10)
    got = retriever.store._col.get(ids=[m.chunk_id for m in matches], include=["metadatas"])
    meta = dict(zip(got["ids"], got["metadatas"]))
    assert [m.paper_id for m in matches] == [meta[m.chunk_id]["paper_id"] for m in matches]
    assert all(-1.0 <= m.similarity <= 1.0 for m in matches)


def test_collections_search_with_a_wide_hnsw_candidate_list_old_ones_too(fake_index):
    from index.reader import open_store
    from rag.backends.store import EF_SEARCH

    settings, retriever = fake_index
    col = retriever.store._col
    assert col.configuration_json["hnsw"]["ef_search"] == EF_SEARCH > 100
    col.modify(configuration={"hnsw": {"ef_search": 100}})  # what an older paperchat created
    reopened = open_store(settings.index_dir(settings.index), settings, settings.index, create=False)
    assert reopened._col.configuration_json["hnsw"]["ef_search"] == EF_SEARCH


def test_ann_recall_is_complete_on_a_corpus_smaller_than_the_candidate_list(fake_index):
    from rag.evaluate.bench_query import ann_recall

    _, retriever = fake_index
    got = ann_recall(retriever, ["kernel graph sparsifier", QUESTION])
    assert got["chunks@200"] == {"mean": 1.0, "min": 1.0}
    assert got["papers@20"] == {"mean": 1.0, "min": 1.0}


def test_a_filter_that_matches_no_paper_is_named_in_the_answer(fake_index, scripted, capsys):
    from rag.chat.answer import answer_stream
    from rag.cli.chat import format_answer
    from ui.render import answer_markdown

    settings, retriever = fake_index
    filters = Filters.parse(["primary_area=no such area"])
    events = list(answer_stream(QUESTION, retriever=retriever, generator=scripted,
                                settings=settings, filters=filters))
    ans = events[-1].answer
    assert ans.refused and ans.hits == []
    assert "primary_area=no such area" in ans.text and "No paper in this index matches" in ans.text
    assert "Nearest papers" not in format_answer(ans)
    assert "primary_area=no such area" in answer_markdown(ans)
    # a filter that matches papers is searched as usual
    events = list(answer_stream(QUESTION, retriever=retriever, generator=scripted,
                                settings=settings, filters=Filters.parse(["status=poster"])))
    assert "No paper in this index matches" not in events[-1].answer.text
    assert events[-1].answer.hits
