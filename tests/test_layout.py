"""index.layout: the 2-D map of an index's papers (positions, topic labels, storage, keeping it
current at index time) and its quality metric.

With the deterministic fake embedder (conftest's ``settings`` has ``map_layout`` off; these tests
turn it on), except the last test, which maps every accepted ICLR 2026 paper (the session's
``accepted_index``, real embedder) and checks the map keeps neighbours better than PCA.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace

import numpy as np
import pytest

from index import layout as lay
from index import layout_2d, layout_labels, manifest
from index.build import build_index
from index.catalog import Catalog, catalog_fingerprint
from index.layout import Layout, ensure_layout, load_layout, save_layout
from index.layout_2d import knn_preservation
from index.layout_labels import Label
from index.reader import open_store
from index.source_records import LoadResult
from index.sources import load_papers
from rag.types import Paper
from tests.conftest import SEED

QUIET = {"progress": False, "log": lambda m: None}


@pytest.fixture
def on(settings):
    """The test settings with the map computed at index time."""
    return settings.model_copy(update={"map_layout": True})


def build(source, settings, embedder, **kw):
    if isinstance(source, list):
        source = LoadResult(papers=list(source))
    return build_index(source, settings=settings, embedder=embedder, **{**QUIET, **kw})


def layout_path(settings):
    return settings.index_dir() / lay.LAYOUT_FILE


@pytest.fixture
def fits(monkeypatch):
    """Counts the 2-D fits (calls of index.layout.embed_2d)."""
    calls = []
    real = lay.embed_2d

    def counted(vectors, seed=0):
        calls.append(len(vectors))
        return real(vectors, seed)

    monkeypatch.setattr(lay, "embed_2d", counted)
    return calls


def topic_papers(n_per: int = 30) -> list[Paper]:
    """Three topics whose texts share no words across topics (each paper draws 10 of its topic's
    12 words), keywords we control, and one keyword ("deep learning") on every paper that no
    label should carry."""
    topics = {
        "bio": (["Protein Folding", "biology"], "protein folding amino residue structure fold "
                "enzyme ligand peptide helix sheet binding"),
        "robot": (["robot manipulation", "Grasping"], "robot gripper grasp arm manipulator "
                  "torque joint actuator pick place dexterous tactile"),
        "audio": (["speech", "ASR"], "speech audio waveform phoneme acoustic spectrogram "
                  "speaker utterance prosody vocoder pitch transcript"),
    }
    papers = []
    for t, (keywords, words) in topics.items():
        vocab = words.split()
        for i in range(n_per):
            rng = np.random.default_rng(i)
            w = [vocab[j] for j in rng.choice(len(vocab), 10, replace=False)]
            papers.append(Paper(id=f"{t}{i:02d}", title=" ".join(w[:3]), abstract=" ".join(w),
                                keywords=keywords + ["deep learning"]))
    return papers


# --- at index time --------------------------------------------------------------------------------
def test_build_maps_every_paper_once(on, fake_embedder):
    build(SEED, on, fake_embedder)
    layout = load_layout(on.index_dir())
    catalog = Catalog(on.index_dir() / "papers.sqlite")
    assert layout is not None
    assert layout.ids == sorted(catalog.hashes())
    assert len(set(layout.ids)) == len(layout.ids) == 19
    assert layout.xy.shape == (19, 2) and layout.xy.dtype == np.float32
    assert np.isfinite(layout.xy).all()
    assert layout.fingerprint == manifest.read(on.index_dir())["catalog_fingerprint"]
    assert layout.method.startswith("openTSNE ")
    assert ensure_layout(on, on.index).ids == layout.ids


def test_unchanged_reindex_does_not_recompute(on, fake_embedder, fits):
    build(SEED, on, fake_embedder)
    assert fits == [19]
    mtime = layout_path(on).stat().st_mtime_ns
    summary = build(SEED, on, fake_embedder)
    assert summary.unchanged == 19 and fits == [19]
    assert layout_path(on).stat().st_mtime_ns == mtime
    ensure_layout(on, on.index, log=lambda m: None)
    assert fits == [19]  # loaded, not computed


def test_changed_paper_recomputes_for_the_new_fingerprint(on, fake_embedder, fits):
    build(SEED, on, fake_embedder)
    old = load_layout(on.index_dir())
    papers = load_papers(SEED).papers
    papers[3] = replace(papers[3], abstract=papers[3].abstract + " A new closing sentence.")
    build(papers, on, fake_embedder)
    new = load_layout(on.index_dir())
    assert fits == [19, 19]
    assert new.fingerprint != old.fingerprint
    assert new.fingerprint == manifest.read(on.index_dir())["catalog_fingerprint"]


def test_metadata_change_keeps_positions_redoes_labels(on, fake_embedder, fits, monkeypatch):
    """Small indexes are refitted whole; with the incremental threshold lowered, a status
    change keeps every position and fits nothing."""
    monkeypatch.setattr(lay, "MIN_INCREMENTAL", 5)
    build(SEED, on, fake_embedder)
    old = load_layout(on.index_dir())
    papers = [replace(p, status="Accept (Oral)") for p in load_papers(SEED).papers]
    summary = build(papers, on, fake_embedder)
    assert summary.updated_metadata == 19
    new = load_layout(on.index_dir())
    assert fits == [19]
    assert new.ids == old.ids and np.array_equal(new.xy, old.xy)
    assert new.fingerprint != old.fingerprint


def test_few_new_papers_are_placed_into_the_old_map(on, fake_embedder, fits, monkeypatch):
    monkeypatch.setattr(lay, "MIN_INCREMENTAL", 5)
    monkeypatch.setattr(lay, "INCREMENTAL_SHARE", 0.2)
    papers = load_papers(SEED).papers
    build(papers[:-2], on, fake_embedder)
    old = load_layout(on.index_dir())
    build(papers, on, fake_embedder)  # 2 new of 19: 11%
    new = load_layout(on.index_dir())
    assert fits == [17]
    assert sorted(new.ids) == new.ids and len(new.ids) == 19
    rows = {pid: i for i, pid in enumerate(new.ids)}
    kept = np.stack([new.xy[rows[pid]] for pid in old.ids])
    assert np.array_equal(kept, old.xy)
    assert np.isfinite(new.xy).all()
    assert new.params["placed_since_fit"] == 2
    # past the share since the last fit, the map is fitted again
    more = papers + [replace(papers[0], id=f"extra{i}", title=f"Extra {i}") for i in range(3)]
    build(more, on, fake_embedder)
    assert fits == [17, 22]
    assert load_layout(on.index_dir()).params["placed_since_fit"] == 0


def test_off_at_index_time_then_computed_on_first_use(settings, fake_embedder, fits):
    """An index built before maps existed (or with map_layout off) gets one lazily."""
    build(SEED, settings, fake_embedder)
    assert not layout_path(settings).exists() and fits == []
    layout = ensure_layout(settings, settings.index, log=lambda m: None)
    assert len(layout.ids) == 19 and layout_path(settings).exists() and fits == [19]
    assert ensure_layout(settings, settings.index).ids == layout.ids and fits == [19]


def test_a_failing_map_does_not_fail_the_build(on, fake_embedder, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("no map today")

    monkeypatch.setattr(lay, "refresh_layout", boom)
    lines = []
    summary = build(SEED, on, fake_embedder, log=lines.append)
    assert summary.papers == 19
    assert manifest.read(on.index_dir())["papers"] == 19
    assert any("map layout not computed (RuntimeError: no map today)" in m for m in lines)


def test_saved_for_a_building_index_only_when_consistent(settings, fake_embedder):
    """While a build has changed the catalog but not yet the manifest, ensure_layout returns a
    map of the catalog as it is without saving it."""
    build(SEED, settings, fake_embedder)
    m = manifest.read(settings.index_dir())
    manifest.write(settings.index_dir(), {**m, "catalog_fingerprint": "not-yet"})
    lines = []
    layout = ensure_layout(settings, settings.index, log=lines.append)
    assert len(layout.ids) == 19 and not layout_path(settings).exists()
    assert any("not saved" in m for m in lines)


# --- reproducible, tiny, empty --------------------------------------------------------------------
def test_same_seed_same_map(settings, fake_embedder):
    build(SEED, settings, fake_embedder)
    store = open_store(settings.index_dir(), settings, settings.index, create=False)
    catalog = Catalog(settings.index_dir() / "papers.sqlite")
    papers = {p.id: p for p, _ in catalog.papers()}
    a = lay.compute_layout(store, papers, catalog.chunk_counts(), seed=0, log=lambda m: None)
    b = lay.compute_layout(store, papers, catalog.chunk_counts(), seed=0, log=lambda m: None)
    assert a.ids == b.ids and np.array_equal(a.xy, b.xy)
    assert a.labels == b.labels
    # the fingerprint a bare compute_layout records is the catalog's
    assert a.fingerprint == manifest.read(settings.index_dir())["catalog_fingerprint"]
    assert a.text_hashes == [catalog.hashes()[i].split(":")[0] for i in a.ids]


@pytest.mark.parametrize("n, method", [(1, "circle"), (2, "circle"), (3, "PCA"), (4, "PCA"),
                                       (5, "openTSNE")])
def test_tiny_indexes(on, fake_embedder, n, method):
    build(load_papers(SEED).papers[:n], on, fake_embedder)
    layout = load_layout(on.index_dir())
    again = lay.compute_layout(
        open_store(on.index_dir(), on, on.index, create=False),
        {p.id: p for p, _ in Catalog(on.index_dir() / "papers.sqlite").papers()},
        Catalog(on.index_dir() / "papers.sqlite").chunk_counts(), log=lambda m: None)
    assert len(layout.ids) == n and layout.xy.shape == (n, 2)
    assert np.isfinite(layout.xy).all() and layout.method.startswith(method)
    assert np.array_equal(again.xy, layout.xy)
    assert layout.labels == []


def test_no_papers_gives_an_empty_layout(settings, fake_embedder, tmp_path):
    class Empty:
        def paper_vectors(self, ids, n_chunks):
            return {}

    layout = lay.compute_layout(Empty(), {}, {}, log=lambda m: None)
    assert layout.ids == [] and layout.xy.shape == (0, 2) and layout.labels == []
    save_layout(tmp_path, layout)
    back = load_layout(tmp_path)
    assert back.ids == [] and back.xy.shape == (0, 2)


# --- storage --------------------------------------------------------------------------------------
def test_save_load_round_trip(tmp_path):
    layout = Layout(ids=["a", "b", "ç"], xy=np.array([[0, 1], [2.5, -3], [1e-3, 7]], np.float32),
                    labels=[Label("diffusion · 3D · ünïcode", 1.5, -2.0, 42)],
                    method="openTSNE 1.0.4 perplexity=30", fingerprint="abc123",
                    text_hashes=["h1", "h2", "h3"], params={"seed": 0, "n": 3})
    save_layout(tmp_path, layout)
    back = load_layout(tmp_path)
    assert back.ids == layout.ids and np.array_equal(back.xy, layout.xy)
    assert back.xy.dtype == np.float32
    assert back.labels == layout.labels
    assert (back.method, back.fingerprint) == (layout.method, layout.fingerprint)
    assert back.text_hashes == layout.text_hashes and back.params == layout.params
    assert [p.name for p in tmp_path.iterdir()] == [lay.LAYOUT_FILE]  # no temporary left


@pytest.mark.parametrize("content", [b"", b"not a zip", b"PK\x03\x04broken"])
def test_unreadable_layout_is_none(tmp_path, content):
    assert load_layout(tmp_path) is None
    (tmp_path / lay.LAYOUT_FILE).write_bytes(content)
    assert load_layout(tmp_path) is None


def test_unreadable_layout_is_recomputed(settings, fake_embedder):
    build(SEED, settings, fake_embedder)
    layout_path(settings).write_bytes(b"garbage")
    assert len(ensure_layout(settings, settings.index, log=lambda m: None).ids) == 19
    assert load_layout(settings.index_dir()) is not None


# --- labels ---------------------------------------------------------------------------------------
def test_labels_are_each_regions_own_keywords(on, fake_embedder):
    """Three topics with disjoint vocabularies: three regions, each labelled by its keywords
    (never by the keyword every paper has), at its papers' median point."""
    papers = topic_papers()
    build(papers, on, fake_embedder)
    layout = load_layout(on.index_dir())
    assert len(layout.labels) == 3, layout.labels
    texts = sorted(lb.text for lb in layout.labels)
    assert texts == ["ASR · speech", "biology · protein folding",
                     "grasping · robot manipulation"]
    rows = {pid: i for i, pid in enumerate(layout.ids)}
    for lb in layout.labels:
        prefix = {"A": "audio", "b": "bio", "g": "robot"}[lb.text[0]]
        mine = layout.xy[[rows[p.id] for p in papers if p.id.startswith(prefix)]]
        assert lb.size == 30
        assert (lb.x, lb.y) == pytest.approx(tuple(np.median(mine, axis=0)), abs=1e-4)
        assert lb.text.count(" · ") <= 2


def test_labels_fall_back_to_title_words():
    xy = np.concatenate([np.random.default_rng(0).normal(c, 0.3, (20, 2)) for c in (0, 50)])
    papers = ([Paper(id=f"a{i}", title=f"Quantum annealing schedules {i}", abstract="") for i in
               range(20)] +
              [Paper(id=f"b{i}", title=f"Glacier melt forecasting {i}", abstract="",
                     keywords=["climate"]) for i in range(20)])
    labels = {lb.text for lb in layout_labels.cluster_labels(xy.astype(np.float32), papers)}
    assert labels == {"annealing · quantum · schedules", "climate"}


def test_regions_sharing_a_label_are_told_apart():
    """Two regions whose only strong keyword is LLM: the larger keeps "LLM", the other is
    labelled by its own next keyword."""
    rng = np.random.default_rng(0)
    xy = np.concatenate([rng.normal(c, 0.3, (m, 2)) for c, m in ((0, 30), (40, 25), (80, 30))])
    papers = ([Paper(id=f"a{i}", title="", abstract="", keywords=["LLM"] + ["math"] * (i < 4))
               for i in range(30)] +
              [Paper(id=f"b{i}", title="", abstract="", keywords=["LLMs"] + ["safety"] * (i < 3))
               for i in range(25)] +
              [Paper(id=f"c{i}", title="", abstract="", keywords=["robot"]) for i in range(30)])
    labels = layout_labels.cluster_labels(xy.astype(np.float32), papers)
    assert [(lb.text, lb.size) for lb in labels] == [("LLM", 30), ("robot", 30), ("safety", 25)]


@pytest.mark.parametrize("a, b, same", [
    ("LLM", "large language models", True), ("diffusion", "Diffusion Models", True),
    ("time series", "time series forecasting", True), ("Mixture-of-Experts", "mixture of experts",
                                                       True),
    ("RL", "world model", False), ("graph", "graph neural networks", True),
    ("speech", "ASR", False), ("in-context learning", "ICL", True),
])
def test_same_topic(a, b, same):
    assert layout_labels._same_topic(a, b) is same


@pytest.mark.parametrize("terms, text", [
    ([("LLM", 2.0), ("large language models", 1.9), ("reasoning", 1.0)], "LLM · reasoning"),
    ([("diffusion", 2.0), ("diffusion models", 1.5), ("video", 0.5)], "diffusion"),
    ([("a" * 30, 2.0), ("b" * 30, 1.9), ("c", 1.8)], f"{'a' * 30} · c"),
    ([("x", 1.0), ("y", 0.9), ("z", 0.8), ("w", 0.7)], "x · y · z"),
])
def test_label_text(terms, text):
    assert layout_labels._label_text(terms) == text


def test_min_cluster_size_grows_with_the_index():
    assert [layout_labels.min_cluster_size(n) for n in (0, 19, 1000, 5358, 19630, 10 ** 6)] == \
        [5, 5, 7, 36, 131, 200]


# --- the quality metric ---------------------------------------------------------------------------
def test_knn_preservation_known_answers():
    # four unit vectors: 0 and 1 are near each other, 2 and 3 too
    v = np.array([[1, 0, 0], [0.99, 0.14, 0], [0, 0, 1], [0, 0.14, 0.99]], np.float32)
    same = np.array([[0, 0], [1, 0], [10, 0], [11, 0]], np.float32)
    swapped = np.array([[0, 0], [10, 0], [1, 0], [11, 0]], np.float32)  # 0 beside 2, 1 beside 3
    one_lost = np.array([[0, 0], [1, 0], [10, 0], [20, 0]], np.float32)  # 2 is nearer to 1
    two_lost = np.array([[0, 0], [1, 0], [30, 0], [0.2, 5]], np.float32)  # 2 -> 1, 3 -> 0
    assert knn_preservation(v, same, k=1) == 1.0
    assert knn_preservation(v, swapped, k=1) == 0.0
    assert knn_preservation(v, one_lost, k=1) == 0.75
    assert knn_preservation(v, two_lost, k=1) == 0.5
    assert knn_preservation(v, two_lost, k=1, rows=[2, 3]) == 0.0
    assert knn_preservation(v, two_lost, k=1, rows=[0, 1]) == 1.0
    assert knn_preservation(v, swapped, k=3) == 1.0  # every other point is within 3
    assert knn_preservation(v[:1], same[:1]) == 1.0


def test_knn_preservation_of_pca_on_a_line_is_perfect_and_random_is_low():
    t = np.linspace(0, 1, 200)
    vectors = np.stack([np.cos(t), np.sin(t), np.zeros_like(t)], axis=1)
    assert knn_preservation(vectors, layout_2d.pca_2d(vectors)) == 1.0
    rng = np.random.default_rng(0)
    assert knn_preservation(vectors, rng.normal(size=(200, 2))) < 0.2


def test_bench_layout_runs_on_a_small_index(settings, fake_embedder):
    """``paperchat bench layout`` on 40 papers, PCA only, one round: it reports figures (a
    benchmark never fails on time; this only keeps it running)."""
    from rag.evaluate.bench import format_result
    from rag.evaluate.bench_layout import bench_layout

    papers = load_papers(SEED).papers
    build(papers + [replace(p, id=f"{p.id}-copy", title=f"{p.title} (copy)") for p in papers] +
          [replace(papers[0], id=f"extra{i}", title=f"Extra {i}") for i in range(2)], settings,
          fake_embedder)
    result = bench_layout(settings, methods=("pca", "nosuchlib"), rounds=1, log=lambda m: None)
    assert result["papers"] == 40
    assert 0.0 <= result["methods"]["pca"]["knn10_nn1"] <= 1.0
    assert result["methods"]["nosuchlib"] == {"skipped": "nosuchlib is not installed"}
    assert result["index_time"]["method"].startswith("openTSNE")
    for how in ("place_new", "opentsne_transform"):
        assert 0.0 <= result["incremental"][how]["knn10_nn1_placed"] <= 1.0
    assert "index_time:" in format_result(result)


# --- the real accepted list -----------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.slow
def test_accepted_map_keeps_neighbours_better_than_pca(accepted_index):
    """Every accepted ICLR 2026 paper (real embedder, built once per session with the map on):
    the build wrote the map, and a paper's map neighbour is one of its 10 nearest in embedding
    space far more often than on a PCA map."""
    settings, summary, _ = accepted_index
    name = settings.index
    assert (settings.index_dir(name) / lay.LAYOUT_FILE).exists(), "the build writes the map"
    layout = ensure_layout(settings, name, log=lambda m: None)
    assert len(layout.ids) == summary.papers == len(set(layout.ids))
    assert layout.fingerprint == catalog_fingerprint(
        Catalog(settings.index_dir(name) / "papers.sqlite").hashes())
    store = open_store(settings.index_dir(name), settings, name, create=False)
    ids, vectors = lay.paper_vectors(
        store, layout.ids, Catalog(settings.index_dir(name) / "papers.sqlite").chunk_counts())
    assert ids == layout.ids and vectors.shape == (summary.papers, 384)
    ours = knn_preservation(vectors, layout.xy)
    pca = knn_preservation(vectors, layout_2d.pca_2d(vectors))
    assert ours > 0.6 and ours > 5 * pca, (ours, pca)
    assert 10 <= len(layout.labels) <= 60
    assert all(1 <= len(lb.text.split(" · ")) <= 3 and lb.size >= layout_labels.min_cluster_size(
        summary.papers) for lb in layout.labels)
    assert not math.isnan(sum(lb.x + lb.y for lb in layout.labels))
