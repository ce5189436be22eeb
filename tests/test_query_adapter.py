"""The linear query adapter (rag/retrieve/query_adapter.py): the map, which embedders it fits,
the shipped file, and where the retriever uses it (topic searches only).

Expected values are written by hand from the module docstring's formula."""

from __future__ import annotations

import json
import numpy as np
import pytest

from tests.conftest import SEED


def test_adapt_is_q_plus_qW_normalised():
    from rag.retrieve.query_adapter import QueryAdapter

    W = np.array([[0.0, 1.0], [0.0, 0.0]], np.float32)  # moves x towards y
    a = QueryAdapter(W, "m")
    # q = (1, 0): q + qW = (1, 1) -> (0.7071, 0.7071); q = (0, 1): qW = 0, unchanged
    assert np.allclose(a.adapt(np.array([1.0, 0.0])), [2 ** -0.5, 2 ** -0.5], atol=1e-6)
    assert np.allclose(a.adapt(np.array([[0.0, 1.0], [1.0, 0.0]])),
                       [[0.0, 1.0], [2 ** -0.5, 2 ** -0.5]], atol=1e-6)
    assert a.adapt(np.array([1.0, 0.0])).dtype == np.float32
    # W = 0 is the identity
    assert np.allclose(QueryAdapter(np.zeros((2, 2)), "m").adapt(np.array([0.6, 0.8])), [0.6, 0.8])


def test_an_adapter_fits_only_the_embedder_it_was_trained_for():
    from rag.retrieve.query_adapter import QueryAdapter

    class E:
        def __init__(self, name, dim):
            self.name, self.dim = name, dim

    a = QueryAdapter(np.zeros((4, 4)), "all-MiniLM-L6-v2")
    assert a.fits(E("all-MiniLM-L6-v2", 4))
    assert not a.fits(E("fake-bow", 4))
    assert not a.fits(E("all-MiniLM-L6-v2", 64))
    assert not a.fits(object())


def test_save_writes_float16_weights_and_the_embedder_name(tmp_path):
    from rag.retrieve.query_adapter import QueryAdapter

    W = np.array([[0.5, -0.25], [0.125, 0.0]], np.float32)
    QueryAdapter(W, "emb").save(tmp_path / "a.npz")
    with np.load(tmp_path / "a.npz") as z:
        assert z["W"].dtype == np.float16
        assert np.array_equal(z["W"].astype(np.float32), W)  # these values are exact in fp16
        assert str(z["embedder"]) == "emb"


def test_the_shipped_adapter_is_small_and_for_the_bundled_embedder():
    from rag.retrieve.query_adapter import WEIGHTS, shipped

    assert WEIGHTS.is_file() and WEIGHTS.stat().st_size < 25 * 2 ** 20
    a = shipped()
    assert a.embedder == "all-MiniLM-L6-v2" and a.W.shape == (384, 384)
    assert np.isfinite(a.W).all() and 0 < np.abs(a.W).max() < 10


def _swap_adapter(dim: int, name: str) -> "object":
    """An adapter that swaps each pair of coordinates (q W = q permuted, times 3): far from the
    identity, so a search with it ranks otherwise."""
    from rag.retrieve.query_adapter import QueryAdapter

    P = np.zeros((dim, dim), np.float32)
    for i in range(0, dim - 1, 2):
        P[i, i + 1] = P[i + 1, i] = 3.0
    return QueryAdapter(P, name)


def test_only_topic_searches_use_the_adapter(fake_index, monkeypatch):
    import rag.retrieve.query_adapter as qa

    settings, retriever = fake_index
    adapter = _swap_adapter(retriever.embedder.dim, retriever.embedder.name)
    monkeypatch.setattr(qa, "shipped", lambda: adapter)
    seen = []
    real_dense = retriever.dense

    def dense(vec, *a, **kw):
        seen.append(np.asarray(vec, np.float32).copy())
        return real_dense(vec, *a, **kw)

    monkeypatch.setattr(retriever, "dense", dense)
    q = "large language models for vehicle routing heuristics"
    from rag.text import normalise

    plain = retriever.embedder.embed([normalise(q)])[0]
    moved = adapter.adapt(plain)
    retriever.search(q, evidence=False, feedback=False)
    assert len(seen) == 1 and np.allclose(seen[0], plain)  # one search, the plain vector
    seen.clear()
    res = retriever.search(q, evidence=False, feedback=False, topical=True)
    # the question's own ranking (refusal's) with the plain vector, then the adapted one
    assert len(seen) == 2 and np.allclose(seen[0], plain) and np.allclose(seen[1], moved)
    assert res.dense.scores[0] == pytest.approx(float(max(
        retriever.store.best_similarity(plain, [res.dense.ids[0]],
                                        retriever.n_chunks).values())), abs=1e-5)
    # off in the settings: the plain vector only
    monkeypatch.setattr(settings, "query_adapter", False)
    seen.clear()
    retriever.search(q, evidence=False, feedback=False, topical=True)
    assert len(seen) == 1 and np.allclose(seen[0], plain)


def test_an_adapter_for_another_embedder_is_not_applied(fake_index, monkeypatch):
    import rag.retrieve.query_adapter as qa

    _, retriever = fake_index
    monkeypatch.setattr(qa, "shipped", lambda: _swap_adapter(retriever.embedder.dim, "other"))
    v = retriever.embedder.embed(["graph neural networks"])[0]
    assert retriever.adapted(v) is v


def test_real_adapter_moves_keyword_queries_to_their_papers(real_index):
    """On the seed corpus with the real embedder: each paper's own keywords, as a query,
    find the paper by paper vector at least as often with the adapter as without, and the
    adapter moves the query (it is not the identity) without turning it around."""
    from rag.retrieve.query_adapter import shipped
    from rag.text import normalise

    retriever = real_index
    a = shipped()
    assert a.fits(retriever.embedder)
    pv = retriever.paper_vectors()
    lines = [json.loads(x) for x in SEED.read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = [(p["id"], ", ".join(p["keywords"][:6])) for p in lines
            if p.get("keywords") and pv.row(p["id"]) is not None]
    assert len(rows) >= 15
    q = retriever.embedder.embed([normalise(t) for _, t in rows])
    moved = a.adapt(q)
    cos = np.sum(q * moved, axis=1)
    assert (cos < 0.999).all() and (cos > 0.5).all()
    hits = []
    for vecs in (q, moved):
        best = np.argmax(vecs @ pv.vectors.T, axis=1)
        hits.append(sum(pv.ids[b] == pid for b, (pid, _) in zip(best, rows)))
    assert hits[1] >= hits[0] and hits[1] >= len(rows) - 2
