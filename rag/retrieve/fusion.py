"""Fusion that adapts to the query (issue 21): a small learned linear model over per-candidate
and per-question features, in place of the fixed ``z(dense) + 0.8 z(bm25)``.

**Inputs** (:class:`Channels`, one question): the candidate papers (every paper a channel ranks)
and each channel's scores for them, with the population the channel's z-scores are taken over:

* ``dense``: the best chunk's cosine similarity to the question (Chroma, :mod:`rag.retrieve.retriever`);
* ``prf``: the same after pseudo-relevance feedback (the query moved towards the first pass's
  top papers; equal to ``dense`` when there is no feedback);
* ``bm25``: the exact BM25 score; its population is BM25's own top papers;
* ``paper``: the cosine similarity of the paper's vector (:mod:`index.vectors`, the mean of its
  chunk vectors, shared with "similar papers") to the question, exact over every paper;
* the question's BM25 terms with their document frequencies and which candidates have them.

**Features** (:data:`CANDIDATE` per candidate, :data:`QUERY` per question; ``"a*b*c"`` is a
candidate feature times question features, which is how the question changes the fusion):
channel z-scores, whether a candidate is a channel's top paper, the share of the question's
(rare) terms a candidate has; score margins between a channel's first two papers, channel
agreement, the question's length and rare terms, and whether it is on topic at all. Which of
them the shipped model uses, and why, is in ``bench/train_fusion.py`` and the README ("Retrieve").

**Model**: ``score = features @ weights`` (:class:`FusionModel`, ``rag/retrieve/fusion_weights.json``).
:func:`fit` learns the weights with the pairwise transform of Herbrich, Graepel & Obermayer
(2000, "Large margin rank boundaries for ordinal regression"): for every training question, the
difference between the gold paper's features and each hard negative's (the top ``negatives``
papers of each channel) is an example of class 1, its negation of class 0, and an L2-regularised
logistic regression without intercept (scikit-learn, lbfgs) separates them, so the weights rank
gold papers first. Scoring needs numpy only; scikit-learn is imported by :func:`fit` alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

#: The shipped weights, written by ``bench/train_fusion.py``.
WEIGHTS_FILE = Path(__file__).resolve().parent / "fusion_weights.json"
#: Version of the weights file's layout.
FORMAT_VERSION = 1
#: A question term that at most this many papers have is rare (a name, a dataset, a symbol).
RARE_DF = 20
#: Best-chunk cosine under which a question is off-topic: rag.compose.refusal.MIN_DENSE (not imported,
#: which would close an import cycle; tests/test_fusion.py checks they agree).
ON_TOPIC_COSINE = 0.30
#: Caps of the gap features, in standard deviations (a gap above it says the same).
GAP_CAP = 4.0

#: Per-candidate features: name -> what it is.
CANDIDATE = {
    "dense": "z-score of the best chunk's cosine to the question among the dense candidates "
             "(papers outside them get the lowest candidate's cosine)",
    "prf": "z-score of the best chunk's cosine to the feedback query (as 'dense')",
    "bm25": "z-score of the BM25 score among BM25's own top papers",
    "paper": "z-score of the paper vector's cosine to the question among the top paper vectors",
    "coverage": "share of the question's BM25 terms the paper has, weighted by idf",
    "rare_coverage": f"share of the question's rare terms (document frequency <= {RARE_DF}) "
                     "the paper has (0 without rare terms)",
    "bm25_top": "1 for BM25's top paper",
    "prf_top": "1 for the feedback dense channel's top paper",
    "paper_top": "1 for the paper-vector channel's top paper",
}
#: Per-question features: name -> what it is.
QUERY = {
    "one": "1",
    "bm25_margin": "BM25's first score minus its second, in standard deviations of its top papers",
    "bm25_margin_over1": "bm25_margin - 1, clipped to [0, 3]: BM25's top stands out",
    "bm25_margin_over2": "bm25_margin - 2, clipped to [0, 2]: BM25's top stands out clearly",
    "prf_margin": "the same for the feedback dense channel",
    "dense_margin": "the same for the dense channel",
    "paper_margin": "the same for the paper-vector channel",
    "terms": "log(1 + number of the question's BM25 terms)",
    "rare_terms": "log(1 + number of its rare terms)",
    "agree": "1 when BM25's top paper is the feedback dense channel's top paper",
    "paper_agree": "1 when BM25's top paper is the paper-vector channel's top paper",
    "bm25_top_prf_gap": f"how far BM25's top paper is below the feedback dense channel's top, "
                        f"in its z-scores, capped at {GAP_CAP}",
    "bm25_top_paper_gap": f"the same in the paper-vector channel, capped at {GAP_CAP}",
    "top_cosine": "the best chunk cosine of the question",
    "on_topic": "1 when the best chunk cosine is at least ON_TOPIC_COSINE (every training "
                "question is: below it the question is off-topic, and a learned bonus is not "
                "extrapolated there)",
}
#: Inputs a feature needs beyond the dense and BM25 channels.
_NEEDS = {"paper": "paper", "paper_top": "paper", "paper_margin": "paper",
          "paper_agree": "paper", "bm25_top_paper_gap": "paper",
          "coverage": "terms", "rare_coverage": "terms", "rare_terms": "terms",
          "terms": "terms"}


@dataclass
class Channels:
    """One question's channel scores over its candidates (module doc).

    ``ids``: candidate paper ids; ``dense``, ``prf``, ``bm25``, ``paper``: shape (len(ids),)
    float64, NaN where a candidate has no score in that channel; ``*_pool``: the scores the
    channel's z-scores are taken over (its own ranked papers). ``term_df``: shape (n_terms,),
    each question term's document frequency; ``term_present``: shape (n_terms, len(ids)) bool;
    ``n_docs``: papers in the index (for idf).
    """

    ids: list[str]
    dense: np.ndarray
    dense_pool: np.ndarray
    prf: np.ndarray
    prf_pool: np.ndarray
    bm25: np.ndarray
    bm25_pool: np.ndarray
    paper: np.ndarray | None = None
    paper_pool: np.ndarray | None = None
    term_df: np.ndarray | None = None
    term_present: np.ndarray | None = None
    n_docs: int = 0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)


def _zscores(values: np.ndarray | None, pool: np.ndarray | None, n: int) -> np.ndarray:
    """z-scores of ``values`` over ``pool`` (mean and standard deviation); a NaN value gets the
    pool's lowest score first; zeros without a pool."""
    if values is None or pool is None or not len(pool):
        return np.zeros(n)
    pool = np.asarray(pool, dtype=np.float64)
    mu, sd = float(pool.mean()), float(pool.std())
    sd = sd if sd > 1e-9 else 1.0
    v = np.where(np.isnan(values), float(pool.min()), values)
    return (v - mu) / sd


def _margin(pool: np.ndarray | None) -> float:
    """(first - second) / standard deviation of a channel's ranked scores; 0 under two."""
    if pool is None or len(pool) < 2:
        return 0.0
    top = np.sort(np.asarray(pool, dtype=np.float64))[::-1]
    sd = float(top.std())
    return float((top[0] - top[1]) / sd) if sd > 1e-9 else 0.0


def _base(ch: Channels) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Every candidate and question feature of ``ch`` that its inputs allow (cached on it)."""
    if "base" in ch._cache:
        return ch._cache["base"]
    n = len(ch)
    c: dict[str, np.ndarray] = {
        "dense": _zscores(ch.dense, ch.dense_pool, n),
        "prf": _zscores(ch.prf, ch.prf_pool, n),
        "bm25": _zscores(ch.bm25, ch.bm25_pool, n),
        "paper": _zscores(ch.paper, ch.paper_pool, n),
    }

    def top(key: str) -> int:
        return int(np.argmax(c[key])) if n else 0

    for key in ("bm25", "prf", "paper"):
        ind = np.zeros(n)
        if n:
            ind[top(key)] = 1.0
        c[f"{key}_top"] = ind
    rare = np.zeros(0)
    if ch.term_df is not None and len(ch.term_df) and n:
        idf = np.log((ch.n_docs + 1) / (ch.term_df + 0.5))
        present = np.asarray(ch.term_present, dtype=np.float64)
        c["coverage"] = (idf[:, None] * present).sum(0) / max(float(idf.sum()), 1e-9)
        rare = ch.term_df <= RARE_DF
        c["rare_coverage"] = present[rare].mean(0) if rare.any() else np.zeros(n)
    else:
        c["coverage"] = np.zeros(n)
        c["rare_coverage"] = np.zeros(n)
    b, d, p = (top("bm25"), top("prf"), top("paper")) if n else (0, 0, 0)
    mb = _margin(ch.bm25_pool)
    q = {
        "one": 1.0,
        "bm25_margin": mb,
        "bm25_margin_over1": float(np.clip(mb - 1.0, 0.0, 3.0)),
        "bm25_margin_over2": float(np.clip(mb - 2.0, 0.0, 2.0)),
        "prf_margin": _margin(ch.prf_pool),
        "dense_margin": _margin(ch.dense_pool),
        "paper_margin": _margin(ch.paper_pool),
        "terms": float(np.log1p(len(ch.term_df))) if ch.term_df is not None else 0.0,
        "rare_terms": float(np.log1p(int(np.sum(rare)))),
        "agree": float(n > 0 and b == d),
        "paper_agree": float(n > 0 and b == p),
        "bm25_top_prf_gap": min(float(c["prf"][d] - c["prf"][b]), GAP_CAP) if n else 0.0,
        "bm25_top_paper_gap": min(float(c["paper"][p] - c["paper"][b]), GAP_CAP) if n else 0.0,
        "top_cosine": float(np.max(ch.dense_pool)) if ch.dense_pool is not None
        and len(ch.dense_pool) else 0.0,
    }
    q["on_topic"] = float(q["top_cosine"] >= ON_TOPIC_COSINE)
    ch._cache["base"] = (c, q)
    return c, q


def check_features(names: Sequence[str]) -> None:
    """Raise ValueError naming a feature that is not a candidate feature times zero or more
    question features (``"bm25"``, ``"bm25_top*agree"``, ``"bm25_top*bm25_margin*on_topic"``)."""
    for name in names:
        a, *qs = name.split("*")
        if a not in CANDIDATE or any(b not in QUERY for b in qs):
            raise ValueError(f"unknown fusion feature {name!r}: use one of {sorted(CANDIDATE)}, "
                             f"optionally times any of {sorted(QUERY)} ('bm25_top*agree')")


def needs(names: Sequence[str]) -> set[str]:
    """The extra inputs (``"paper"``, ``"terms"``) the features ``names`` read."""
    out = set()
    for name in names:
        for part in name.split("*"):
            if part in _NEEDS:
                out.add(_NEEDS[part])
    return out


def feature_matrix(ch: Channels, names: Sequence[str]) -> np.ndarray:
    """Shape (len(ch), len(names)) float64: the features ``names`` of every candidate."""
    c, q = _base(ch)
    cols = []
    for name in names:
        a, *qs = name.split("*")
        cols.append(c[a] * float(np.prod([q[b] for b in qs])))
    return np.stack(cols, axis=1) if cols else np.zeros((len(ch), 0))


@dataclass
class FusionModel:
    """A linear fusion: ``score = feature_matrix(channels, features) @ weights`` (higher is
    better, comparable within one question only). ``meta`` records how it was fitted."""

    features: list[str]
    weights: list[float]
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_features(self.features)
        if len(self.features) != len(self.weights):
            raise ValueError("a fusion model needs one weight per feature")
        self._w = np.asarray(self.weights, dtype=np.float64)

    @property
    def needs(self) -> set[str]:
        """Extra inputs its features read (:func:`needs`)."""
        return needs([f for f, w in zip(self.features, self.weights) if w != 0.0])

    def scores(self, ch: Channels) -> np.ndarray:
        """Fused score of every candidate of ``ch``, shape (len(ch),)."""
        return feature_matrix(ch, self.features) @ self._w

    def to_json(self) -> str:
        return json.dumps({"format_version": FORMAT_VERSION, "features": self.features,
                           "weights": self.weights, "meta": self.meta}, indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path = WEIGHTS_FILE) -> "FusionModel":
        """Read a weights file. Raises ValueError for another format version or an unknown
        feature, OSError when it cannot be read."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{path}: fusion weights of format {data.get('format_version')!r}, "
                             f"expected {FORMAT_VERSION}; rerun bench/train_fusion.py")
        return cls(list(data["features"]), [float(w) for w in data["weights"]],
                   dict(data.get("meta") or {}))


@lru_cache(maxsize=4)
def shipped(path: str = str(WEIGHTS_FILE)) -> FusionModel:
    """The weights file at ``path`` (default the shipped one), read once per process."""
    return FusionModel.load(path)


def hard_negatives(ch: Channels, gold: int, n: int) -> list[int]:
    """Candidate rows other than ``gold`` among the top ``n`` of each channel (dense, feedback
    dense, BM25, and paper vectors when present), ascending."""
    c, _ = _base(ch)
    keys = ["dense", "prf", "bm25"] + (["paper"] if ch.paper is not None else [])
    rows: set[int] = set()
    for key in keys:
        rows.update(int(i) for i in np.argsort(-c[key], kind="stable")[:n])
    rows.discard(gold)
    return sorted(rows)


def fit(groups: Sequence[tuple[Channels, int, float]], features: Sequence[str], *,
        C: float = 0.1, negatives: int = 10, meta: dict | None = None) -> FusionModel:
    """Weights for ``features`` from training questions (module doc, the pairwise transform).

    ``groups``: ``(channels, row of the gold paper, question weight)``; a question's pairs share
    its weight equally. ``C``: inverse L2 strength of scikit-learn's LogisticRegression
    (lbfgs, no intercept, tolerance 1e-10 so a refit lands on the same optimum); weights are
    rounded to 6 decimals so that a refit on the same inputs writes the same file.

    Raises:
        ValueError: no question has a negative (nothing to learn from).
    """
    from sklearn.linear_model import LogisticRegression

    check_features(features)
    xs, ys, ws = [], [], []
    for ch, gold, weight in groups:
        negs = hard_negatives(ch, gold, negatives)
        if not negs:
            continue
        f = feature_matrix(ch, features)
        diff = f[gold][None, :] - f[negs]
        xs += [diff, -diff]
        ys += [np.ones(len(negs)), np.zeros(len(negs))]
        ws += [np.full(2 * len(negs), weight / len(negs))]
    if not xs:
        raise ValueError("no training question has a paper to rank below its gold paper")
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    lr = LogisticRegression(C=C, fit_intercept=False, max_iter=10000, tol=1e-10)
    lr.fit(x, y, sample_weight=w)
    weights = [round(float(v), 6) + 0.0 for v in lr.coef_[0]]
    info = {"C": C, "negatives": negatives, "questions": len(groups), "pairs": int(len(y) // 2)}
    return FusionModel(list(features), weights, {**info, **(meta or {})})
