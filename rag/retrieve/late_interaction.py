"""Late interaction over the bundled encoder's token vectors: a reranking candidate measured beside
fusion (``paperchat eval FILE --topics``), not yet on the answer path.

**Score.** MaxSim (Khattab & Zaharia, SIGIR 2020, "ColBERT"): for each content token of the
question (its word pieces less English stopwords and the words that frame a question about papers,
:data:`SKIPPED`), the highest cosine to any token of the paper's title and abstract; the score is
their mean, in [-1, 1]. The token vectors are all-MiniLM-L6-v2's last layer (the bundled
sentence-transformers model, no training), each L2-normalised, special tokens dropped, at most
:data:`MAX_TOKENS` word pieces of the paper. A compositional topic ("scaling laws for data
mixtures") needs every concept matched somewhere in the abstract, which one pooled vector does
not ask.

**Use.** The fused top 50 reordered by reciprocal rank fusion of the fused order and the MaxSim
order (:func:`rag.retrieve.combine.rrf`, k=60, equal weights). Measured when it was written,
retrieval alone on the survey questions of the hand-read topics: recall@15 0.736 -> 0.784
(``topics_a``, where the skipped words were chosen) and 0.835 -> 0.879 (``topics_b``, run once
after); on ``../shared/eval/dev_hard.jsonl`` r@1 0.790 -> 0.758, r@5 0.855 -> 0.871 (62
questions). It runs the encoder over 50 abstracts per question (torch fp32 here), seconds per
question on 2 cores: too slow for every turn until it runs on the int8 ONNX path.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Sequence

import numpy as np

#: Word pieces of a paper read at most (the encoder reads 256 with its special tokens).
MAX_TOKENS = 254
#: Question words that carry no topic: bm25s' English stopwords and the frame of a question about
#: papers ("Which papers propose ways to ...").
FRAME_WORDS = frozenset("which what papers paper propose proposes proposed study studies ways way "
                        "use using do does about are is".split())


def skipped_words() -> frozenset[str]:
    """:data:`FRAME_WORDS` and bm25s' English stopword list (``bm25s.stopwords.STOPWORDS_EN``)."""
    from bm25s.stopwords import STOPWORDS_EN

    return FRAME_WORDS | frozenset(STOPWORDS_EN)


class LateInteraction:
    """MaxSim scores of papers for a question (see the module docstring).

    ``model_dir``: a sentence-transformers model directory (default: the bundled
    all-MiniLM-L6-v2, :func:`rag.offline.bundled_embedder_dir`); loaded on first use, on the CPU.
    Papers' token vectors are kept for the last ``cache_size`` texts."""

    def __init__(self, model_dir: str | None = None, cache_size: int = 4096):
        self.model_dir = model_dir
        self.cache_size = cache_size
        self._model = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._skipped = skipped_words()

    def _load(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            from rag import offline

            offline.enforce()
            self._model = SentenceTransformer(
                str(self.model_dir or offline.bundled_embedder_dir()), device="cpu")
            self._model.max_seq_length = MAX_TOKENS + 2
        return self._model

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One array per text, shape (word pieces, 384) float32, rows L2-normalised, the
        special tokens ([CLS], [SEP]) dropped."""
        model = self._load()
        outs = model.encode(list(texts), output_value="token_embeddings", batch_size=16,
                            show_progress_bar=False)
        vecs = []
        for o in outs:
            v = np.asarray(o.cpu().numpy() if hasattr(o, "cpu") else o, dtype=np.float32)
            v = v[1:-1] if len(v) > 2 else v
            vecs.append(v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-9))
        return vecs

    def _question(self, question: str) -> np.ndarray:
        """The question's content-token vectors (every token when none is content)."""
        vec = self.token_vectors([question])[0]
        pieces = self._load().tokenizer.tokenize(question)[:len(vec)]
        keep, word = [], ""
        for j, piece in enumerate(pieces):  # a word's pieces follow its first ("##...")
            if not piece.startswith("##"):
                word = piece.lower()
            if re.fullmatch(r"[#\w]+", piece) and word not in self._skipped:
                keep.append(j)
        return vec[keep] if keep else vec

    def _papers(self, texts: Sequence[str]) -> list[np.ndarray]:
        need = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for t, v in zip(need, self.token_vectors(need) if need else []):
            self._cache[t] = v
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return [self._cache[t] for t in texts]

    def scores(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """MaxSim of each of ``texts`` (a paper's title and abstract) for ``question``: shape
        (len(texts),) float64, each the mean over the question's content tokens of the best
        cosine to the text's tokens."""
        if not texts:
            return np.zeros(0)
        q = self._question(question)
        return np.array([float((q @ d.T).max(axis=1).mean()) for d in self._papers(texts)])


def rerank(question: str, ids: Sequence[str], texts: Sequence[str],
           late: LateInteraction, k: float = 60.0) -> tuple[list[str], list[str]]:
    """``(late, fused)``: ``ids`` (a fused ranking, best first; ``texts`` their papers' title and
    abstract) ordered by MaxSim alone, and by reciprocal rank fusion of their own order and the
    MaxSim order (:func:`rag.retrieve.combine.rrf`, equal weights, ties kept in fused order)."""
    scores = late.scores(question, texts)
    order = [ids[j] for j in np.argsort(-scores, kind="stable")]
    return order, fuse_orders(ids, order, k)


def fuse_orders(ids: Sequence[str], order: Sequence[str], k: float = 60.0) -> list[str]:
    """``ids`` (a fused ranking, best first) reordered by reciprocal rank fusion of their own
    order and ``order`` (the same ids ranked otherwise; :func:`rag.retrieve.combine.rrf`, equal
    weights, ties kept in fused order)."""
    from rag.retrieve.combine import rrf
    from rag.types import Ranking

    fused = rrf([Ranking(list(ids), []), Ranking(list(order), [])], [1.0, 1.0], k)
    place = {p: i for i, p in enumerate(ids)}
    return sorted(ids, key=lambda p: (-fused[p], place[p]))
