"""Late interaction (MaxSim over the bundled encoder's token vectors), the reranking candidate that
``paperchat eval --topics --late-interaction`` measures beside fusion."""

from __future__ import annotations

import numpy as np
import pytest


class _Scripted:
    """A stand-in with fixed MaxSim scores per text."""

    def __init__(self, scores: dict[str, float]):
        self.by_text = scores

    def scores(self, question, texts):
        return np.array([self.by_text[t] for t in texts])


def test_rerank_fuses_the_two_orders_by_reciprocal_rank():
    from rag.retrieve.late_interaction import rerank

    # fused a, b, c; MaxSim c, b, a. RRF (k=60, ranks from 1): a = c = 1/61 + 1/63 = 0.032266,
    # b = 2/62 = 0.032258; a and c tie and keep the fused order
    late, fused = rerank("q", ["a", "b", "c"], ["ta", "tb", "tc"],
                         _Scripted({"ta": 0.1, "tb": 0.5, "tc": 0.9}))
    assert late == ["c", "b", "a"]
    assert fused == ["a", "c", "b"]


def test_question_frame_words_are_not_matched():
    from rag.retrieve.late_interaction import LateInteraction

    li = LateInteraction()
    q = li._question("Which papers propose ways to compress the KV cache?")
    every = li.token_vectors(["Which papers propose ways to compress the KV cache?"])[0]
    # the content pieces are those of "compress", "KV" and "cache" (and "?" is no word)
    pieces = li._load().tokenizer.tokenize("compress KV cache")
    assert q.shape == (len(pieces), every.shape[1])
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-4)


def test_maxsim_prefers_the_paper_that_has_every_concept():
    from rag.retrieve.late_interaction import LateInteraction

    texts = [
        "Federated EM for mixture models. We fit Gaussian mixture models across clients with an "
        "expectation-maximisation algorithm and prove convergence.",
        "Scaling laws for data mixtures. We predict a language model's loss from the proportions "
        "of its pretraining data domains and fit a scaling law to choose the mixture.",
        "Scaling laws for model size. Loss falls as a power law in parameters and compute.",
    ]
    scores = LateInteraction().scores("which papers study scaling laws for data mixtures?", texts)
    assert scores.shape == (3,) and int(np.argmax(scores)) == 1
    assert np.all((scores > -1.0) & (scores <= 1.0 + 1e-6))


@pytest.mark.parametrize("word", ["which", "papers", "the", "to"])
def test_skipped_words_hold_the_frame_and_the_stopwords(word):
    from rag.retrieve.late_interaction import skipped_words

    assert word in skipped_words() and "cache" not in skipped_words()


def test_the_topics_eval_ranks_the_fused_50_by_late_interaction_too():
    from types import SimpleNamespace as NS

    from rag.evaluate.topics import _channels
    from rag.types import Ranking

    papers = {i: NS(title=f"T{i}", abstract=f"A{i}") for i in "abc"}
    hits = [NS(id=i) for i in "abc"]
    ret = NS(papers=papers, search=lambda q, k, evidence, topical=False: NS(
        hits=hits, lexical=Ranking(["b", "a"], [2.0, 1.0]), dense=Ranking(["c"], [0.5])))
    out = _channels(ret, "q", _Scripted({"Ta. Aa": 0.1, "Tb. Ab": 0.5, "Tc. Ac": 0.9}))
    assert out["fused"] == ["a", "b", "c"] and out["bm25"] == ["b", "a"]
    assert out["late"] == ["c", "b", "a"] and out["fused+late"] == ["a", "c", "b"]
    assert "late" not in _channels(ret, "q")
