"""Paper-level vectors (index.vectors) and "similar papers" (Retriever.similar), on fake-embedder
indexes of the seed corpus; the real-model neighbours are checked in tests/test_plan_real.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.conftest import SEED

from index import vectors as iv
from index.build import build_index
from index.sources import load_papers
from rag.filters import Filters
from rag.paths import IndexPaths
from rag.retrieve.retriever import Retriever

QUIET = {"progress": False, "log": lambda m: None}


def _centroids(retriever: Retriever) -> dict[str, np.ndarray]:
    """Each paper's normalised mean chunk vector, straight from the store."""
    out = {}
    for pid, vecs in retriever.store.paper_vectors(sorted(retriever.papers),
                                                   retriever.n_chunks).items():
        c = vecs.mean(axis=0)
        out[pid] = c / np.linalg.norm(c)
    return out


def test_a_build_writes_one_unit_vector_per_paper(fake_index):
    settings, retriever = fake_index
    saved = iv.load_vectors(settings.index_dir())
    assert saved is not None and saved.ids == sorted(retriever.papers)
    assert saved.vectors.dtype == np.float32 and saved.vectors.shape == (19, 64)
    np.testing.assert_allclose(np.linalg.norm(saved.vectors, axis=1), 1.0, atol=1e-5)
    for pid, c in _centroids(retriever).items():
        np.testing.assert_allclose(saved.vectors[saved.row(pid)], c, atol=1e-5)
    assert retriever.paper_vectors().fingerprint == saved.fingerprint


def test_similar_ranks_by_the_cosine_of_paper_vectors(fake_index):
    _, retriever = fake_index
    cents = _centroids(retriever)
    target = "aITKXFeivk"
    hits = retriever.similar(target, k=5)
    assert [h.id for h in hits] == sorted((p for p in cents if p != target),
                                          key=lambda p: -float(cents[p] @ cents[target]))[:5]
    assert target not in [h.id for h in hits]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(h.dense == h.score for h in hits)
    np.testing.assert_allclose(scores[0], float(cents[hits[0].id] @ cents[target]), atol=1e-5)
    assert retriever.similar("no-such-paper") == []
    skipped = retriever.similar(target, k=3, exclude=[hits[0].id])
    assert hits[0].id not in [h.id for h in skipped]


def test_similar_respects_filters(fake_index):
    _, retriever = fake_index
    theory = Filters.parse(["primary_area=learning theory"])  # 3 of the 19 seed papers
    hits = retriever.similar("aITKXFeivk", k=10, filters=theory)
    assert len(hits) == 3 and all(h.paper.primary_area == "learning theory" for h in hits)
    assert retriever.similar("aITKXFeivk", k=10, filters=Filters.parse(["status=oral"])) == []


def test_an_index_without_the_file_gets_it_on_first_use(fake_index, fake_embedder):
    settings, _ = fake_index
    path = IndexPaths(settings.index_dir()).vectors
    saved = iv.load_vectors(settings.index_dir())
    path.unlink()
    again = Retriever.open(settings, fake_embedder).paper_vectors()
    assert path.exists() and again.ids == saved.ids
    np.testing.assert_allclose(again.vectors, saved.vectors, atol=1e-6)


def test_an_update_reads_only_the_changed_papers(fake_index, fake_embedder, monkeypatch):
    settings, _ = fake_index
    before = iv.load_vectors(settings.index_dir())
    papers = load_papers(SEED).papers
    changed = papers[3].id
    papers[3] = dataclasses.replace(papers[3], abstract=papers[3].abstract + " Graph kernels.")
    asked: list[str] = []
    real = iv.from_store

    def counting(store, ids, n_chunks, batch=iv.VECTOR_BATCH):
        asked.extend(ids)
        return real(store, ids, n_chunks, batch)

    monkeypatch.setattr(iv, "from_store", counting)
    from index.source_records import LoadResult

    build_index(LoadResult(papers=papers), settings=settings, embedder=fake_embedder, **QUIET)
    after = iv.load_vectors(settings.index_dir())
    assert asked == [changed]
    assert after.fingerprint != before.fingerprint
    for pid in after.ids:
        same = np.allclose(after.vectors[after.row(pid)], before.vectors[before.row(pid)])
        assert same == (pid != changed), pid


@pytest.mark.parametrize("damage", [b"", b"not an npz file"])
def test_an_unreadable_file_is_recomputed(fake_index, fake_embedder, damage):
    settings, _ = fake_index
    IndexPaths(settings.index_dir()).vectors.write_bytes(damage)
    assert iv.load_vectors(settings.index_dir()) is None
    assert len(Retriever.open(settings, fake_embedder).paper_vectors()) == 19
