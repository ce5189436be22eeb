"""An index that answers while it builds (issue 22): the catalog and BM25 first, then the dense
vectors in committed batches (index.build, index.dense); retrieval over a partly embedded index
(rag.retrieve.coverage, rag.retrieve.retriever.PartialRetriever); the coverage that answers, ``--json`` and the UI
header state; kill -9 at random points of the dense fill; the finished index equal to an
uninterrupted build.

All with the deterministic fake embedder, on real on-disk indexes in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from index import manifest
from index.build import build_index
from index.catalog import Catalog
from index.dense import DenseProgress, DenseView, batch_path, matches_where, progress, read_batch
from index.dense_fill import PAPERS_PER_STEP
from index.reader import open_store
from index.source_records import LoadResult
from index.sources import load_papers
from rag.backends.lexical import LexicalIndex
from rag.compose.rendering import answer_json
from rag.retrieve.combine import zfusion
from rag.retrieve.coverage import coverage_line, fuse_unscored, merge_scores, score_unembedded
from rag.retrieve.retriever import PartialRetriever, Ranking, Retriever
from tests.conftest import ROOT, SEED, SHARED_DATA, FakeEmbedder, ScriptedGenerator

QUIET = {"progress": False, "log": lambda m: None}
CVRP = "aITKXFeivk"
CVRP_QUESTION = "crossover operators for CVRP hybrid genetic search"
ROUTING = ["crossover operators for vehicle routing with hybrid genetic search",
           "language models that write heuristics for routing problems",
           "genetic search for routing"]
OFF_TOPIC = ["What is a good recipe for banana bread?", "How do I file my taxes in Norway?",
             "Which hiking trails near Lisbon have ocean views?"]


def build(papers, settings, embedder=None, **kw):
    return build_index(LoadResult(papers=list(papers)), settings=settings,
                       embedder=embedder or FakeEmbedder(), **{**QUIET, **kw})


def catalog_of(settings, name="default") -> Catalog:
    return Catalog(settings.index_dir(name) / "papers.sqlite")


def as_if_building(settings, embedded: set[str], name="default") -> None:
    """Make a whole index look like one whose dense fill has committed only ``embedded``: the
    other papers' ``dense`` rows dropped, the manifest saying the fill began just now."""
    index_dir = settings.index_dir(name)
    catalog = Catalog(index_dir / "papers.sqlite")
    catalog.drop_dense([pid for pid in catalog.hashes() if pid not in embedded])
    recorded = manifest.read(index_dir)
    manifest.write(index_dir, {**recorded, "dense": {"complete": False,
                                                     "started_at": time.time()}})


@pytest.fixture
def seed(seed_papers):
    return list(seed_papers)


# --- fusion of what exists ------------------------------------------------------------------------
def test_zscore_fusion_would_rank_a_paper_without_a_vector_down_and_fuse_unscored_does_not():
    """Five embedded papers and X, which has the best BM25 score and no vector. zfusion gives X
    the lowest candidate cosine (an upper bound for an embedded paper outside the candidates, but
    X's cosine is unknown, not low): X falls below papers with far weaker words. Fused on BM25
    alone, on the same scale, X is first, and an embedded paper's score is unchanged."""
    dense = Ranking(["a", "b", "c", "d", "e"], [0.62, 0.55, 0.50, 0.45, 0.40])
    lexical = Ranking(["x", "a", "b", "c", "d", "e"], [30.0, 6.0, 5.0, 4.0, 3.0, 2.0])
    bm25 = dict(zip(lexical.ids, lexical.scores))
    floor = zfusion(dense, lexical, 0.8)
    assert sorted(floor, key=floor.get, reverse=True).index("x") >= 1  # ranked down
    fused = fuse_unscored(dict(floor), lexical.scores, bm25.get, 0.8, known=set(dense.ids))
    assert max(fused, key=fused.get) == "x"
    assert {k: v for k, v in fused.items() if k != "x"} == \
        {k: v for k, v in floor.items() if k != "x"}
    mu, sd = np.mean(lexical.scores), np.std(lexical.scores)
    assert fused["x"] == pytest.approx(1.8 * (30.0 - mu) / sd)


@pytest.mark.parametrize("how, scale", [("lexical", 1.8), ("neutral", 0.8)])
def test_a_paper_without_a_vector_ranks_as_its_words_do(how, scale):
    """With no cosine, the fused score is a function of BM25 alone: two such papers keep their
    BM25 order, and one with the pool's mean BM25 score is fused to 0 (the dense channel's mean
    never counts against it)."""
    lexical = Ranking(["p", "q", "r"], [9.0, 6.0, 3.0])
    fused = fuse_unscored({"p": -5.0, "q": -5.0, "r": -5.0}, lexical.scores,
                          dict(zip(lexical.ids, lexical.scores)).get, 0.8, set(), how)
    assert fused["p"] > fused["q"] > fused["r"]
    assert fused["q"] == pytest.approx(0.0)
    assert fused["p"] == pytest.approx(scale * (9.0 - 6.0) / np.std([9.0, 6.0, 3.0]))


@pytest.mark.parametrize("extra, expected", [
    ({}, ["a", "b"]),
    ({"x": 0.9}, ["x", "a", "b"]),     # more similar than the candidates: one of them
    ({"x": 0.5}, ["a", "x", "b"]),
    ({"x": 0.1}, ["a", "b"]),          # below the last candidate: a whole index would not have it
    ({"a": 0.1}, ["a", "b"]),          # a candidate keeps its own score
])
def test_scores_computed_on_demand_join_the_dense_candidates_as_a_whole_index_would(extra,
                                                                                    expected):
    ids, scores = merge_scores(["a", "b"], [0.8, 0.3], extra)
    assert ids == expected and scores == sorted(scores, reverse=True)


def test_the_best_bm25_papers_without_vectors_are_the_ones_scored_on_demand():
    full = np.array([0.0, 5.0, 9.0, 7.0, 1.0, 8.0], dtype=np.float32)
    ids = ["z", "a", "b", "c", "d", "e"]
    assert score_unembedded(full, ids, embedded={"b"}, m=3) == ["e", "c", "a"]
    assert score_unembedded(full, ids, embedded=set(), m=10) == ["b", "e", "c", "a", "d"]


# --- retrieval over a partly embedded index -------------------------------------------------------
@pytest.fixture
def partial(settings, seed):
    """The seed corpus built, then shown as if only 3 of its 19 papers were embedded yet
    (CVRP not among them); returns (settings, whole retriever, partial retriever, embedded)."""
    build(seed, settings)
    whole = Retriever.open(settings, FakeEmbedder())
    embedded = {p.id for p in seed[5:8]}
    as_if_building(settings, embedded)
    part = Retriever.open(settings, FakeEmbedder())
    assert isinstance(part, PartialRetriever)
    return settings, whole, part, embedded


def test_a_partly_embedded_index_searches_every_paper_by_its_words(partial, seed):
    settings, whole, part, embedded = partial
    assert part.store.embedded_ids() == embedded and len(part) == 19
    assert part.store.count() == sum(n for pid, (n, _) in catalog_of(settings).embedded().items())
    for paper in seed:  # each title finds its paper first, embedded or not
        assert part.search(paper.title, k=3).hits[0].id == paper.id, paper.title
    res = part.search(CVRP_QUESTION, k=5)
    assert res.hits[0].id == CVRP == whole.search(CVRP_QUESTION, k=5).hits[0].id
    # scored on demand: the same best-chunk cosine as the whole index, in the hit and in the
    # dense ranking refusal reads (rag.compose.refusal)
    cvrp = whole.store.best_similarity(FakeEmbedder().embed([CVRP_QUESTION])[0], [CVRP],
                                       whole.n_chunks)[CVRP]
    assert res.hits[0].dense == pytest.approx(cvrp, abs=1e-5)
    assert res.dense.ids[0] == CVRP and res.dense.scores[0] == pytest.approx(cvrp, abs=1e-5)
    assert CVRP not in part.store.embedded_ids()  # remembered, not embedded


@pytest.mark.parametrize("fusion", ["learned", "fixed"])
@pytest.mark.parametrize("question", ROUTING)
def test_without_on_demand_scores_a_paper_without_a_vector_still_ranks_by_its_words(
        settings, seed, monkeypatch, question, fusion):
    """Every paper embedded but CVRP, none scored on demand, questions without a name in them:
    CVRP is first, as in the whole index, with the learned fusion (the default, issue 21) and
    the fixed one; fused with the floor (no vector counted as the least similar candidate:
    plain z-score fusion, or the learned fusion's own NaN rule), it fell to 4th-11th place
    with either fusion (3rd once with the learned one: BM25's top paper has a bonus of its own)."""
    import rag.retrieve.coverage as coverage

    settings = settings.model_copy(update={"fusion": fusion})
    build(seed, settings)
    whole = Retriever.open(settings, FakeEmbedder())
    as_if_building(settings, {p.id for p in seed if p.id != CVRP})
    part = Retriever.open(settings, FakeEmbedder())
    assert (part.fusion_model() is None) == (fusion == "fixed")
    monkeypatch.setattr(coverage.score_unembedded, "__defaults__", (0,))  # no on-demand scores
    assert not part.named(question)
    assert [h.id for h in whole.search(question, k=3).hits][0] == CVRP
    assert [h.id for h in part.search(question, k=3).hits][0] == CVRP
    monkeypatch.setattr(coverage.fuse_unscored, "__defaults__", ("floor",))
    monkeypatch.setattr(coverage.impute_unscored, "__defaults__", ("floor",))
    assert [h.id for h in part.search(question, k=19).hits].index(CVRP) >= \
        (3 if fusion == "fixed" else 1)


def test_the_learned_fusion_gives_a_paper_without_a_vector_its_bm25_z_score():
    """impute_unscored: an unknown paper's missing cosines become the ones whose z-score over
    each vector channel's pool is its BM25 z-score (so the shipped weights fuse it as
    (w_prf + w_bm25) z(bm25) plus its BM25 bonus); a known paper keeps NaN (the floor: it is
    not among the nearest chunks), a real score is never replaced; "neutral" gives the mean."""
    from rag.retrieve.coverage import impute_unscored
    from rag.retrieve.fusion import Channels, FusionModel, _zscores

    def channels():
        return Channels(
            ids=["x", "a", "b", "k"],
            dense=np.array([np.nan, 0.6, 0.5, np.nan]), dense_pool=np.array([0.6, 0.5, 0.4]),
            prf=np.array([np.nan, 0.7, 0.5, np.nan]), prf_pool=np.array([0.7, 0.5, 0.3]),
            bm25=np.array([30.0, 6.0, 5.0, 4.0]), bm25_pool=np.array([30.0, 6.0, 5.0, 4.0]),
            paper=np.array([np.nan, 0.4, 0.3, 0.2]), paper_pool=np.array([0.4, 0.3, 0.2]))

    ch = channels()
    model = FusionModel(["prf", "bm25", "paper"], [0.85, 0.65, 0.1])
    floor = model.scores(ch)
    assert int(np.argmax(floor)) != 0  # x, with by far the best words, is not first
    zb = _zscores(ch.bm25, ch.bm25_pool, 4)
    impute_unscored(ch, known={"a", "b", "k"})
    got = model.scores(ch)
    assert int(np.argmax(got)) == 0
    assert got[0] == pytest.approx((0.85 + 0.65 + 0.1) * zb[0])
    assert np.allclose(got[1:], floor[1:])  # known papers as before
    assert np.isnan(ch.dense[3]) and ch.paper[3] == 0.2
    neutral = impute_unscored(channels(), known={"a", "b", "k"}, how="neutral")
    assert neutral.prf[0] == pytest.approx(0.5) and neutral.dense[0] == pytest.approx(0.5)
    same = channels()
    impute_unscored(same, known={"a", "b", "k"}, how="floor")
    assert np.isnan(same.prf[0])


def test_refusal_stays_calibrated_on_a_partly_embedded_index(partial, seed):
    """3 of 19 papers embedded: questions about the others are answered (their best cosine comes
    from the papers scored on demand, and it is the whole index's), questions about nothing in
    the corpus are refused."""
    from rag.compose.refusal import is_out_of_corpus

    settings, whole, part, embedded = partial

    def refused(retriever, question):
        res = retriever.search(question, k=5)
        return is_out_of_corpus(question, res.hits, retriever,
                                top_dense=max(res.dense.scores[:1], default=0.0))

    questions = [p.title for p in seed] + [CVRP_QUESTION] + ROUTING
    assert [refused(part, q) for q in questions] == [False] * len(questions)
    assert [refused(whole, q) for q in questions] == [False] * len(questions)
    assert [refused(part, q) for q in OFF_TOPIC] == [True] * len(OFF_TOPIC)
    # the paper a title names has, in the dense ranking refusal reads, the whole index's cosine
    for paper in seed:
        res_part, res_whole = part.search(paper.title, k=5), whole.search(paper.title, k=5)
        cosine = dict(zip(res_part.dense.ids, res_part.dense.scores))[paper.id]
        assert cosine == pytest.approx(dict(zip(res_whole.dense.ids, res_whole.dense.scores))
                                       [paper.id], abs=1e-5)


def test_an_answer_on_a_partly_embedded_index_states_its_coverage(partial, capsys):
    from rag.chat.pipeline import Pipeline
    from rag.cli.chat import _answer_here

    settings, whole, part, embedded = partial
    pipe = Pipeline(settings, embedder=FakeEmbedder(), generator=ScriptedGenerator())
    final = _answer_here(CVRP_QUESTION, pipe, settings, as_json=True)
    out = json.loads(capsys.readouterr().out)
    assert out["dense_coverage"] == pytest.approx(3 / 19, abs=1e-4)
    assert final.dense_coverage == pytest.approx(3 / 19)
    assert out["hits"][0]["id"] == CVRP and not out["refused"]
    # one key added; every other key as for a whole index
    assert set(out) - {"dense_coverage"} == set(answer_json(replace(final, dense_coverage=None)))
    _answer_here(CVRP_QUESTION, pipe, settings)
    text = capsys.readouterr().out
    assert text.startswith("(index 'default' is being embedded: dense 15% · estimating the "
                           "time left (papers not embedded yet are found by their words))\n")


def test_a_whole_index_has_no_coverage_key(fake_index, capsys):
    from rag.chat.pipeline import Pipeline
    from rag.cli.chat import _answer_here

    settings, retriever = fake_index
    pipe = Pipeline(settings, embedder=FakeEmbedder(), generator=ScriptedGenerator())
    _answer_here(CVRP_QUESTION, pipe, settings, as_json=True)
    out = json.loads(capsys.readouterr().out)
    assert "dense_coverage" not in out and retriever.coverage() is None


@pytest.mark.parametrize("where", [
    None, {"tier": "oral"}, {"accepted": True}, {"$or": [{"tier": "oral"}, {"tier": "poster"}]},
    {"year": {"$in": [2026, 2025]}}, {"$and": [{"accepted": True}, {"year": 2026}]},
    {"paper_id": {"$in": [CVRP, "bbuxDoRD2D"]}}, {"rating": {"$gte": 5.0}}, {"tier": "reject"},
])
def test_the_view_filters_as_chroma_does(fake_index, where):
    settings, retriever = fake_index
    index_dir = settings.index_dir()
    catalog = catalog_of(settings)
    view = DenseView(index_dir, catalog, retriever.papers)
    q = FakeEmbedder().embed([CVRP_QUESTION])[0]
    chroma = retriever.store.query(q, 200, where)
    mine = view.query(q, 200, where)
    assert [m.chunk_id for m in mine] == [m.chunk_id for m in chroma]
    assert [m.similarity for m in mine] == pytest.approx([m.similarity for m in chroma], abs=1e-5)


def test_matches_where_reads_missing_fields_as_no_match():
    assert not matches_where({"tier": "oral"}, {"rating": {"$gte": 5}})
    assert matches_where({"rating": 6.0}, {"rating": {"$gte": 5}})
    assert not matches_where({"year": 2026}, {"year": {"$nin": [2026]}})


# --- coverage: what an index under construction says ----------------------------------------------
@pytest.mark.parametrize("p, line", [
    (DenseProgress(19630, 8049, 15.0, 772.0), "dense 41% · about 13 min left"),
    (DenseProgress(19630, 19000, 15.0, 42.0), "dense 96% · about 40 s left"),
    (DenseProgress(19630, 0, None, None), "dense 0% · estimating the time left"),
    (DenseProgress(100, 99, 1.0, 4000.0), "dense 99% · about 1 h 07 min left"),
    (DenseProgress(100, 41, 1.0, 59.0, running=False),
     "dense 41% · paused: run paperchat index again to finish"),
    (DenseProgress(100, 100), "dense 100%"),
])
def test_the_coverage_line(p, line):
    assert p.line() == line
    assert coverage_line(p) == ("" if p.complete else
                                f"{line} (papers not embedded yet are found by their words)")


def test_progress_counts_the_running_builds_batches(tmp_path, seed):
    catalog = Catalog(tmp_path / "papers.sqlite")
    from index.catalog import content_hash

    catalog.put([(p, content_hash(p), 0, p.title) for p in seed[:10]])
    t0 = 1_000_000.0
    catalog.commit_dense(1, [(seed[0].id, content_hash(seed[0]).split(":")[0], 1)], t0 - 50)
    for i, t in ((2, 10.0), (3, 20.0)):  # this build: 2 papers each, every 10 s
        rows = [(p.id, content_hash(p).split(":")[0], 1) for p in seed[2 * i - 3:2 * i - 1]]
        catalog.commit_dense(i, rows, t0 + t)
    state = {"started_at": t0}
    got = progress(catalog, state, now=t0 + 21)
    assert (got.papers, got.embedded) == (10, 5)
    assert got.rate == pytest.approx(4 / 20) and got.eta_s == pytest.approx(5 / 0.2)
    assert got.running and not progress(catalog, state, now=t0 + 500).running
    assert progress(catalog, {"started_at": t0 + 100}, now=t0 + 101).eta_s is None


def test_the_ui_header_says_how_far_the_index_is():
    from ui.render import coverage_html

    assert coverage_html(None) == ""
    assert coverage_html(DenseProgress(10, 10)) == ""
    html = coverage_html(DenseProgress(19630, 8049, 15.0, 540.0))
    assert "dense 41% · about 9 min left" in html and 'class="pc-info pc-coverage"' in html


def test_the_ui_header_is_live_while_the_index_is_embedded(partial):
    import gradio as gr

    from rag.chat.pipeline import Pipeline
    from ui.app import build_app

    settings, whole, part, embedded = partial
    pipe = Pipeline(settings, embedder=FakeEmbedder(), generator=ScriptedGenerator())
    demo = build_app(pipe)
    header = next(b for b in demo.blocks.values()
                  if isinstance(b, gr.HTML) and b.elem_id == "pc-header")
    assert "index still being embedded: dense 15%" in header.value
    timers = [b for b in demo.blocks.values() if isinstance(b, gr.Timer)]
    assert timers and timers[0].value == 5.0


# --- the build: phases, kill -9, equality with an uninterrupted build -----------------------------
def test_phase_one_answers_before_anything_is_embedded(settings, seed, monkeypatch):
    """What the index holds when its fill begins: every catalog row and BM25 row, a manifest
    that names the catalog and says the fill has begun, no vector."""
    import index.build as build_mod

    seen = {}

    def look(store, catalog, papers, *args, **kwargs):
        index_dir = settings.index_dir()
        seen["manifest"] = manifest.read(index_dir)
        seen["bm25"] = LexicalIndex.load(index_dir / "bm25").ids
        seen["catalog"] = catalog.count()
        seen["embedded"] = len(catalog.embedded())
        retriever = Retriever.open(settings, FakeEmbedder())
        seen["coverage"] = retriever.coverage()
        seen["hit"] = retriever.search(CVRP_QUESTION, k=3).hits[0].id
        return real(store, catalog, papers, *args, **kwargs)

    real = build_mod._embed_papers
    monkeypatch.setattr(build_mod, "_embed_papers", look)
    summary = build(seed, settings)
    assert seen["catalog"] == len(seen["bm25"]) == 19 and seen["embedded"] == 0
    assert seen["manifest"]["dense"]["complete"] is False
    assert seen["manifest"]["catalog_fingerprint"] == \
        manifest.read(settings.index_dir())["catalog_fingerprint"]
    assert (seen["coverage"].papers, seen["coverage"].embedded) == (19, 0)
    assert seen["hit"] == CVRP
    assert manifest.read(settings.index_dir())["dense"]["complete"] is True
    assert 0 < summary.ready_seconds < summary.seconds


def test_a_reader_never_waits_on_the_build_and_never_sees_a_half_written_batch(settings,
                                                                               seed,
                                                                               monkeypatch):
    """A build parked inside its second commit (the batch's file and Chroma chunks written, its
    dense rows not), holding the build lock, with a write transaction open on the catalog: a
    reader opens the index and searches at once and sees exactly the first batch."""
    import index.catalog as catalog_mod
    import index.dense_fill as fill_mod
    from filelock import FileLock, Timeout

    monkeypatch.setattr(fill_mod, "PAPERS_PER_STEP", 5)
    parked, release = threading.Event(), threading.Event()
    real_commit, calls = catalog_mod.Catalog.commit_dense, []

    def commit(self, *args):
        calls.append(args[0])
        if len(calls) == 2:
            parked.set()
            release.wait(60)
        real_commit(self, *args)

    monkeypatch.setattr(catalog_mod.Catalog, "commit_dense", commit)
    builder = threading.Thread(target=build, args=(seed, settings))
    builder.start()
    try:
        assert parked.wait(60)
        index_dir = settings.index_dir()
        with pytest.raises(Timeout):  # the builder holds the build lock
            FileLock(str(index_dir / ".lock")).acquire(timeout=0)
        writer = sqlite3.connect(index_dir / "papers.sqlite", timeout=1)
        writer.execute("BEGIN IMMEDIATE")  # a write in progress
        t0 = time.perf_counter()
        retriever = Retriever.open(settings, FakeEmbedder())
        hits = retriever.search(CVRP_QUESTION, k=5).hits
        seconds = time.perf_counter() - t0
        writer.rollback()
        assert seconds < 5 and hits[0].id == CVRP
        first = {p.id for p in seed[:5]}
        assert retriever.store.embedded_ids() == first
        assert batch_path(index_dir, 2).exists()  # written, not committed: not seen
        assert retriever.coverage().embedded == 5
    finally:
        release.set()
        builder.join(60)
    assert retriever.coverage().embedded == 19  # the same retriever sees the rest as it comes
    monkeypatch.setattr("index.dense.REFRESH_S", 0.0)  # (it looks at most once a second)
    assert retriever.store.embedded_ids() == {p.id for p in seed}


def test_a_running_app_picks_up_new_vectors_without_reopening(settings, seed, monkeypatch):
    import index.catalog as catalog_mod
    import index.dense_fill as fill_mod
    from rag.chat.pipeline import Pipeline

    monkeypatch.setattr(fill_mod, "PAPERS_PER_STEP", 4)
    target = seed[-1]  # in the last batch
    q = FakeEmbedder().embed([target.title])[0]
    seen = []
    real_commit = catalog_mod.Catalog.commit_dense
    pipe = None

    def commit(self, *args):
        real_commit(self, *args)
        if pipe is not None:
            retriever = pipe.current_retriever()
            seen.append((retriever, target.id in retriever.dense(q).ids))

    monkeypatch.setattr("index.dense.REFRESH_S", 0.0)  # a view looks for new batches at once
    build(seed[:1], settings)
    pipe = Pipeline(settings, embedder=FakeEmbedder(), generator=ScriptedGenerator())
    pipe.current_retriever()
    monkeypatch.setattr(catalog_mod.Catalog, "commit_dense", commit)
    build(seed, settings)
    retrievers = {id(r) for r, _ in seen}
    assert len(retrievers) == 1 and isinstance(seen[0][0], PartialRetriever)
    assert [found for _, found in seen] == [False] * (len(seen) - 1) + [True]
    assert pipe.reloads == 1  # opened once when the catalog was whole
    assert not isinstance(pipe.current_retriever(), PartialRetriever) and pipe.reloads == 2


def snapshot(settings, name="default") -> dict:
    """Everything a build leaves, in comparable form: chunks (ids, vectors, documents,
    metadata), catalog rows, dense rows, batch files, BM25 (ids and scores of a few queries),
    paper vectors and the manifest's counts."""
    from index.vectors import load_vectors

    index_dir = settings.index_dir(name)
    store = open_store(index_dir, settings, name, create=False)
    chunks = {}
    for page in store.pages(["embeddings", "documents", "metadatas"]):
        for cid, e, d, m in zip(page["ids"], page["embeddings"], page["documents"],
                                page["metadatas"]):
            assert cid not in chunks, f"duplicate chunk {cid}"
            chunks[cid] = (np.asarray(e, dtype=np.float32).tobytes(), d, m)
    con = sqlite3.connect(index_dir / "papers.sqlite")
    papers = sorted(con.execute("SELECT id, hash, n_chunks, record, search_text FROM papers"))
    dense = sorted(con.execute("SELECT id, text_hash, n_chunks FROM dense"))
    batches = {}
    for (b,) in con.execute("SELECT batch FROM dense_batches"):
        ids, vecs = read_batch(index_dir, b)
        batches.update({cid: vecs[i].tobytes() for i, cid in enumerate(ids)})
    con.close()
    lexical = LexicalIndex.load(index_dir / "bm25")
    queries = ["hybrid genetic search", "diffusion models", "reinforcement learning agents"]
    pv = load_vectors(index_dir)
    recorded = manifest.read(index_dir)
    return {"chunks": chunks, "papers": papers, "dense": dense, "batch_vectors": batches,
            "bm25_ids": lexical.ids,
            "bm25_scores": [lexical.scores(q).tobytes() for q in queries],
            "paper_vectors": (pv.ids, pv.vectors.tobytes(), pv.text_hashes, pv.fingerprint),
            "manifest": {k: recorded[k] for k in ("papers", "chunks", "catalog_fingerprint",
                                                  "dense")}}


def test_an_interrupted_and_resumed_build_equals_an_uninterrupted_one(tmp_path, seed,
                                                                      monkeypatch):
    """Stopped (an exception) inside the dense fill three times, at three stages of a step
    (after the batch file, after Chroma, after the commit), then run to the end: the same index,
    to the byte, as one build that was never stopped."""
    import index.build as build_mod
    import index.catalog as catalog_mod
    import index.dense_fill as fill_mod
    import rag.backends.store as store_mod
    from rag.settings import Settings

    monkeypatch.setattr(fill_mod, "PAPERS_PER_STEP", 3)
    make = lambda home: Settings(home=home, embedder="fake-bow", embed_backend="torch",  # noqa
                                 map_layout=False)
    one_shot, resumed = make(tmp_path / "one"), make(tmp_path / "resumed")
    build(seed[:6], one_shot)
    build(seed, one_shot)  # an update that embeds 13 papers: steps of 3
    build(seed[:6], resumed)

    class Stop(Exception):
        pass

    for where, after in (("file", 1), ("chroma", 2), ("commit", 3)):
        hits = []

        def stop_on(n, real):
            def wrapped(*args, **kwargs):
                real(*args, **kwargs)
                hits.append(1)
                if len(hits) == n:
                    raise Stop(where)
            return wrapped

        with monkeypatch.context() as m:
            if where == "file":
                m.setattr(build_mod.dense_batches, "write_batch",
                          stop_on(after, build_mod.dense_batches.write_batch))
            elif where == "chroma":
                m.setattr(store_mod.ChromaStore, "upsert",
                          stop_on(after, store_mod.ChromaStore.upsert))
            else:
                m.setattr(catalog_mod.Catalog, "commit_dense",
                          stop_on(after, catalog_mod.Catalog.commit_dense))
            with pytest.raises(Stop):
                build(seed, resumed)
    summary = build(seed, resumed)
    # stopped after step 1's file (nothing committed), after step 1's upsert and step 2's (step
    # 1 committed), after 3 more commits (12 papers): the last paper is left
    assert summary.embedded == 13 - 3 - 9
    a, b = snapshot(one_shot), snapshot(resumed)
    for key in a:
        assert a[key] == b[key], key
    assert set(a["chunks"]) == set(a["batch_vectors"])


#: A build in its own process, with an embedder slow enough to be killed at any point of a step.
BUILD_SCRIPT = r"""
import sys, time
sys.path.insert(0, {root!r})
from tests.conftest import FakeEmbedder
from index.build import build_index
import index.dense_fill
from rag.settings import Settings

home, source = sys.argv[1:]
index.dense_fill.PAPERS_PER_STEP = 16

class SlowFake(FakeEmbedder):
    def embed(self, texts):
        time.sleep(0.05)
        return super().embed(texts)

settings = Settings(home=home, embedder="fake-bow", embed_backend="torch", map_layout=False)
build_index(source, settings=settings, embedder=SlowFake(), progress=False, log=lambda m: None)
print("finished")
"""


def dense_rows(db: Path) -> int:
    try:
        con = sqlite3.connect(db, timeout=1)
        try:
            return int(con.execute("SELECT COUNT(*) FROM dense").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@pytest.mark.timeout(300)
def test_kill_9_at_random_points_of_the_dense_fill_loses_and_duplicates_nothing(tmp_path,
                                                                                settings):
    """The first 200 ICLR 2018 papers (13 steps of 16), killed with SIGKILL four times at
    seeded random moments of the fill (inside embedding, the batch file, Chroma's upsert or the
    commit), each time resumed by a new process; after each kill a reader sees exactly the
    committed batches, and the finished index holds every chunk once."""
    path = SHARED_DATA / "iclr2018.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is absent (shared paper data beside the repo)")
    source = tmp_path / "part.jsonl"
    with path.open() as fh:
        source.write_text("".join(next(fh) for _ in range(200)))
    papers = load_papers(source).papers
    script = tmp_path / "build.py"
    script.write_text(BUILD_SCRIPT.format(root=str(ROOT)))
    db = settings.index_dir() / "papers.sqlite"
    rng = random.Random(22)
    kills = []
    for attempt in range(4):
        before = dense_rows(db) if db.exists() else 0
        proc = subprocess.Popen([sys.executable, str(script), str(settings.home), str(source)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while dense_rows(db) <= before and proc.poll() is None:  # the fill is under way
            assert time.monotonic() < deadline, "the build made no progress"
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        if proc.returncode == 0:  # finished before the kill: the last attempts are not needed
            break
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read()[-2000:]
        rows = dense_rows(db)
        kills.append(rows)
        # what a reader sees now: the committed batches, each whole, vectors intact
        catalog = Catalog(db)
        embedded = catalog.embedded()
        view = DenseView(settings.index_dir(), catalog, {p.id: p for p in papers})
        assert view.embedded_ids() == set(embedded)
        assert view.count() == sum(n for n, _ in embedded.values())
        ids = sorted(view.embedded_ids())
        vecs = view.paper_vectors(ids)
        assert all(len(vecs[pid]) == embedded[pid][0] for pid in ids)
    # (a kill after the last batch's commit, before the process exits, is a point of the fill
    # too: seen on a CI machine, the 4th kill at 200 of 200)
    assert kills == sorted(kills) and 0 < kills[0] and kills[-1] <= len(papers)
    assert len(set(kills)) > 1  # different points
    embedder = FakeEmbedder()
    summary = build_index(source, settings=settings, embedder=embedder, **QUIET)
    assert summary.embedded == len(papers) - kills[-1]
    from tests.test_build import assert_index_exact

    assert_index_exact(settings, papers, embedder)
    catalog = Catalog(db)
    assert set(catalog.embedded()) == {p.id for p in papers}
    view = DenseView(settings.index_dir(), catalog, {p.id: p for p in papers})
    store = open_store(settings.index_dir(), settings, "default", create=False)
    assert view.count() == store.count() == catalog.total_chunks()
    # every stored vector is the embedder's for its chunk's text, once
    got = store.pages(["embeddings", "documents"])
    for page in got:
        expect = embedder.embed(page["documents"])
        assert np.allclose(np.asarray(page["embeddings"]), expect, atol=1e-6)
    assert not [p for p in (settings.index_dir() / "dense").iterdir()
                if p.suffix == ".tmp"]


def test_an_index_from_before_the_dense_fill_is_updated_without_embedding_it_again(
        settings, seed):
    """A catalog without ``dense`` tables (user_version 0), no batch files, a manifest without
    ``dense``: it is whole. Its next build copies its vectors from Chroma into batch files and
    embeds only what changed."""
    import shutil

    build(seed[:10], settings)
    index_dir = settings.index_dir()
    con = sqlite3.connect(index_dir / "papers.sqlite")
    con.execute("DROP TABLE dense")
    con.execute("DROP TABLE dense_batches")
    con.execute("PRAGMA user_version = 0")
    con.commit()
    con.close()
    shutil.rmtree(index_dir / "dense")
    recorded = manifest.read(index_dir)
    del recorded["dense"]
    manifest.write(index_dir, recorded)
    assert not isinstance(Retriever.open(settings, FakeEmbedder()), PartialRetriever)
    embedder = FakeEmbedder()
    summary = build(seed, settings, embedder)
    assert (summary.embedded, summary.unchanged) == (9, 10)
    assert len(embedder.calls) == 1  # the 9 new papers, one step
    catalog = catalog_of(settings)
    assert all(batch is not None for _, batch in catalog.embedded().values())
    from tests.test_build import assert_index_exact

    assert_index_exact(settings, seed, FakeEmbedder())


# --- the fill yields the CPU (index.dense_fill.lower_priority) --------------------------------
_LOWER = """
import json, os, threading, time
from pathlib import Path
from index.dense_fill import lower_priority
stop = threading.Event()
before = threading.Thread(target=stop.wait)
before.start()
group = Path("/proc/self/autogroup")
start = (group.read_text().strip() or None) if group.is_file() else None
lowered = lower_priority(3)
after = threading.Thread(target=stop.wait)
after.start()
tasks = Path("/proc/self/task")
nice = sorted({os.getpriority(os.PRIO_PROCESS, int(t.name)) for t in tasks.iterdir()})
stop.set()
print(json.dumps({"lowered": lowered, "nice": nice, "own": os.getsid(0) == os.getpid(),
                  "group": [start, group.read_text() if start else None]}))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="per-thread nice values: Linux")
@pytest.mark.parametrize("own_session", [False, True])
def test_lower_priority_lowers_every_thread_and_a_session_of_its_own(own_session):
    """Threads running before the call and started after it are all 3 nice levels lower; the
    autogroup is lowered too only when the process leads its session. A process outside any
    autogroup (in a cgroup of its own, as in CI) reads an empty ``/proc/self/autogroup``; then
    there is no group nice to compare."""
    out = subprocess.run([sys.executable, "-c", _LOWER], cwd=ROOT, check=True, text=True,
                         capture_output=True, start_new_session=own_session,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    got = json.loads(out.stdout)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert got["lowered"] >= 2 and got["nice"] == [min(19, base + 3)]
    assert got["own"] is own_session
    start, end = got["group"]
    if start is not None:
        def nice(text):
            return int(text.split("nice")[-1])
        assert nice(end) == (min(19, nice(start) + 3) if own_session else nice(start))


def test_paperchat_index_passes_the_fill_nice_setting(monkeypatch, tmp_path):
    """cmd_index lowers the fill by settings.fill_nice (PAPERCHAT_FILL_NICE); build_index on its
    own (the app's default index, the tests) keeps the priority (0)."""
    import inspect

    from index import build
    from rag import cli

    assert inspect.signature(build.build_index).parameters["fill_nice"].default == 0
    seen = {}

    def fake_build(*args, **kwargs):
        seen.update(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr(build, "build_index", fake_build)
    monkeypatch.setenv("PAPERCHAT_HOME", str(tmp_path))
    monkeypatch.setenv("PAPERCHAT_FILL_NICE", "7")
    with pytest.raises(SystemExit):
        cli.main(["index", str(SEED), "--name", "x", "--quiet"])
    assert seen["fill_nice"] == 7


def test_a_build_prepares_the_embedder_when_it_has_papers_to_embed(settings):
    """build_index calls the embedder's prepare() (the ONNX export in a process of its own,
    rag.backends.onnx_embedder.OnnxEmbedder.prepare) when phase 1 begins, only if there is a fill."""

    class Preparing(FakeEmbedder):
        def __init__(self):
            super().__init__()
            self.prepared = 0

        def prepare(self):
            self.prepared += 1

    embedder = Preparing()
    build_index(SEED, settings=settings, embedder=embedder, **QUIET)
    assert embedder.prepared == 1
    build_index(SEED, settings=settings, embedder=embedder, **QUIET)  # nothing to embed
    assert embedder.prepared == 1
