"""Topic membership by meaning: the probability that a paper is *about* a topic, for counts
("how many papers are about X?"), filters ("which of these are about LLMs?") and the cut of a
survey (show fewer than 15 when fewer are on topic).

**Candidates** are the papers some channel of the hybrid search ranks for the topic
(:meth:`rag.retrieve.retriever.Retriever.fusion_inputs`: the feedback dense ranking, BM25's top
``lexical_candidates``, the top paper vectors); a paper none of them ranks is taken as off topic.

**Features** (:data:`FEATURES`) are absolute, so one threshold holds across topics: cosines
(best chunk, feedback query, paper vector), their distance below the topic's best paper, BM25 as
a share of the topic's best BM25 score and as a z-score, and the idf-weighted share of the
topic's BM25 terms the paper has (a compositional topic needs all its concepts).

**Model**: logistic regression on standardised features (scikit-learn, fitted by
``bench/train_membership.py`` on the tune half of ``tests/data/topics/``, papers
read by hand; the measure half is reported). Its output is a probability, calibrated by the fit
itself (logistic loss is a proper scoring rule), so the expected number of on-topic papers is
the sum of the probabilities; the rule a count states is "probability >= threshold", the
threshold chosen on the tune half. Scoring needs numpy only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from rag.retrieve.fusion import Channels

#: The shipped weights, written by ``bench/train_membership.py``.
WEIGHTS_FILE = Path(__file__).resolve().parent / "membership_weights.json"

#: Feature name -> what it is (per candidate paper of one topic).
FEATURES = {
    "dense": "best chunk's cosine to the topic (missing: the lowest dense candidate's)",
    "prf": "best chunk's cosine to the feedback query (missing: the lowest candidate's)",
    "paper": "paper vector's cosine to the topic",
    "dense_gap": "dense minus the topic's best dense cosine",
    "paper_gap": "paper minus the topic's best paper-vector cosine",
    "bm25_share": "BM25 score over the topic's best BM25 score (0 when no paper has a term)",
    "bm25_z": "z-score of the BM25 score over BM25's top papers",
    "coverage": "share of the topic's BM25 terms the paper has, weighted by idf",
    "all_terms": "1 when the paper has every BM25 term of the topic",
    "head_coverage": "share of the topic's BM25 terms in the paper's title and keywords, "
                     "weighted by idf",
    "maxsim": "MaxSim of the topic's word pieces to the paper's over the word-piece table "
              "(rag.retrieve.token_table; 0 without one)",
    "maxsim_gap": "maxsim minus the topic's best maxsim",
}
#: The columns :func:`features` computes from the channels; :func:`candidates` adds the rest.
CHANNEL_FEATURES = 10


def features(ch: Channels, head_present: np.ndarray | None = None,
             reference: Channels | None = None) -> np.ndarray:
    """The first :data:`CHANNEL_FEATURES` of :data:`FEATURES` of every candidate of ``ch``:
    shape (len(ch), CHANNEL_FEATURES)
    float64, columns in :data:`FEATURES` order. ``head_present``: shape (n_terms, len(ch)) bool,
    which of the topic's BM25 terms (``ch.term_df``'s order) each candidate's title or keywords
    have (:func:`head_terms`); zeros when None. ``reference``: the topic's channels over the
    whole index when ``ch`` is a restricted search (one year of several): the gaps, the BM25
    share and z-score are then taken against the whole index's best papers and BM25 pool, so a
    year with no paper on the topic does not make its nearest papers the topic's best."""
    n = len(ch.ids)

    def filled(values, pool):
        if values is None:
            return np.zeros(n)
        low = float(np.nanmin(pool)) if pool is not None and len(pool) else 0.0
        return np.where(np.isnan(values), low, values)

    dense = filled(ch.dense, ch.dense_pool)
    prf = filled(ch.prf, ch.prf_pool)
    paper = filled(ch.paper, ch.paper_pool)
    best_dense = float(np.max(dense)) if n else 0.0
    best_paper = float(np.max(paper)) if n else 0.0
    bm25 = np.asarray(ch.bm25, dtype=np.float64)
    top = float(bm25.max()) if n else 0.0
    pool = np.asarray(ch.bm25_pool, dtype=np.float64)
    if reference is not None and len(reference.ids):
        best_dense = max(best_dense, float(np.nanmax(reference.dense_pool))
                         if len(reference.dense_pool) else best_dense)
        if reference.paper is not None and np.isfinite(reference.paper).any():
            best_paper = max(best_paper, float(np.nanmax(reference.paper)))
        top = max(top, float(np.max(reference.bm25)))
        pool = np.asarray(reference.bm25_pool, dtype=np.float64)
    share = bm25 / top if top > 0 else np.zeros(n)
    if len(pool) > 1 and pool.std() > 1e-9:
        bz = (bm25 - pool.mean()) / pool.std()
    else:
        bz = np.zeros(n)
    head = np.zeros(n)
    if ch.term_df is not None and len(ch.term_df):
        # idf as BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework")
        idf = np.log((ch.n_docs - ch.term_df + 0.5) / (ch.term_df + 0.5) + 1.0)
        total = max(float(idf.sum()), 1e-9)
        cov = (idf[:, None] * ch.term_present).sum(0) / total
        every = ch.term_present.all(0).astype(np.float64)
        if head_present is not None and head_present.shape == ch.term_present.shape:
            head = (idf[:, None] * head_present).sum(0) / total
    else:
        cov, every = np.zeros(n), np.zeros(n)
    return np.stack([dense, prf, paper, dense - best_dense, paper - best_paper, share, bz,
                     cov, every, head], axis=1)


def head_terms(retriever, topic: str, ids: Sequence[str]) -> np.ndarray:
    """Shape (n_terms, len(ids)) bool: which of ``topic``'s BM25 terms (in the order of
    :meth:`rag.backends.lexical.LexicalIndex.term_rows`) each paper's title or keywords have.
    Each paper's title-and-keyword terms are computed once per retriever and kept."""
    from rag.backends.lexical import query_terms
    from rag.text import normalise

    terms = [t for t, _ in retriever.lexical.term_rows(normalise(topic))]
    cache = getattr(retriever, "_head_terms", None)
    if cache is None:
        cache = retriever._head_terms = {}
    out = np.zeros((len(terms), len(ids)), dtype=bool)
    for j, pid in enumerate(ids):
        have = cache.get(pid)
        if have is None:
            p = retriever.papers.get(pid)
            text = f"{p.title} {' '.join(p.keywords)}" if p is not None else ""
            have = cache[pid] = frozenset(query_terms(normalise(text)))
        for i, t in enumerate(terms):
            out[i, j] = t in have
    return out


def candidates(retriever, topic: str, within=None, extra: Sequence[str] = (),
               reference: Channels | None = None):
    """``(ids, features)`` of ``topic``'s candidates (module docstring): the hybrid search's
    channels (:meth:`rag.retrieve.retriever.Retriever.fusion_inputs`, the search restricted to
    the papers the :class:`rag.filters.Filters` ``within`` admit when given; ``extra`` paper
    ids are scored too, ranked or not) and :func:`head_terms`, relative to ``reference`` when
    given (:func:`features`), and the MaxSim columns (:func:`maxsim_columns`); features shape
    (len(ids), len(FEATURES))."""
    kw = {k: v for k, v in (("filters", within), ("extra", tuple(extra))) if v}
    ch = retriever.fusion_inputs(topic, **kw)
    x = features(ch, head_terms(retriever, topic, ch.ids), reference)
    ref_ids = list(reference.ids) if reference is not None else []
    return ch.ids, np.concatenate([x, maxsim_columns(retriever, topic, ch.ids, ref_ids)], axis=1)


class _Texts:
    """A paper's title and abstract by id, read from the retriever's papers when asked."""

    def __init__(self, papers):
        self.papers = papers

    def __getitem__(self, pid: str) -> str:
        p = self.papers[pid]
        return f"{p.title}. {p.abstract}"


def maxsim_columns(retriever, topic: str, ids: Sequence[str],
                   reference_ids: Sequence[str] = ()) -> np.ndarray:
    """Shape (len(ids), 2): each paper's MaxSim for ``topic`` over the shipped word-piece table
    (:func:`rag.retrieve.token_table.shipped`) and its distance below the best MaxSim among
    ``ids`` and ``reference_ids`` (the whole index's candidates of a restricted search); zeros
    when no table is shipped."""
    from rag.retrieve.token_table import shipped as table

    t = table()
    if t is None or not len(ids):
        return np.zeros((len(ids), 2))
    texts = _Texts(retriever.papers)
    s = t.scores(topic, list(ids), texts)
    best = float(s.max())
    extra = [pid for pid in reference_ids if pid in retriever.papers]
    if extra:
        best = max(best, float(t.scores(topic, extra, texts).max()))
    return np.stack([s, s - best], axis=1)


@dataclass
class MembershipModel:
    """A fitted membership model: ``p = sigmoid(((x - mean) / scale) @ coef + intercept)``.

    ``threshold``: the probability at or above which a paper counts as on topic in a count or
    a filter; ``show``: the one at or above which a survey shows a paper; ``blend``: the weight
    of the probability against the fused rank when a survey orders its papers
    (:meth:`Membership.order_key`; all three chosen on the tune half of the labelled topics);
    ``counter``: the model whose probabilities counts and filters compare with ``threshold``,
    fitted on the first :data:`CHANNEL_FEATURES` features only (the MaxSim features ordered
    surveys better and counted no better: README, "Topics by meaning"), None for this one;
    ``figures``: what the fit measured, for the README."""

    names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float = 0.5
    show: float = 0.5
    blend: float = 1.0
    figures: dict | None = None
    counter: "MembershipModel | None" = None

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Probability of being on topic for each row of ``x`` (shape (n, F), F >= len(names):
        the first len(names) columns are read), shape (n,) in [0, 1]."""
        if not len(x):
            return np.zeros(0)
        z = ((x[:, :len(self.names)] - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))

    def count_probabilities(self, x: np.ndarray) -> np.ndarray:
        """The probabilities counts and filters use (``counter``'s, or this model's)."""
        return (self.counter or self).probabilities(x)

    def to_json(self) -> dict:
        out = {"names": self.names, "mean": self.mean.tolist(), "scale": self.scale.tolist(),
               "coef": self.coef.tolist(), "intercept": self.intercept,
               "threshold": self.threshold, "show": self.show, "blend": self.blend,
               "figures": self.figures or {}}
        if self.counter is not None:
            out["counter"] = self.counter.to_json()
        return out

    @classmethod
    def from_json(cls, d: dict, first: bool = False) -> "MembershipModel":
        """Raises ValueError when the file's features are not :data:`FEATURES` (with ``first``,
        as for its counter: the first ones)."""
        names = list(d["names"])
        if names != list(FEATURES)[:len(names) if first else None]:
            raise ValueError(f"membership weights name features {d['names']}, this code has "
                             f"{list(FEATURES)}: refit with bench/train_membership.py")
        counter = cls.from_json(d["counter"], first=True) if d.get("counter") else None
        return cls(names, np.asarray(d["mean"]), np.asarray(d["scale"]),
                   np.asarray(d["coef"]), float(d["intercept"]), float(d["threshold"]),
                   float(d.get("show", d["threshold"])), float(d.get("blend", 1.0)),
                   d.get("figures") or {}, counter)


def fit(rows: Sequence[np.ndarray], labels: Sequence[np.ndarray], c: float = 1.0,
        threshold: float = 0.5, n_features: int | None = None) -> MembershipModel:
    """Fit a :class:`MembershipModel` on candidate feature rows (one (n_i, F) array per topic)
    and their 0/1 labels (one (n_i,) array per topic), on the first ``n_features`` columns (all
    by default). L2-regularised logistic regression (scikit-learn ``LogisticRegression``,
    lbfgs, inverse strength ``c``) on standardised features."""
    from sklearn.linear_model import LogisticRegression

    x = np.concatenate(rows)[:, :n_features]
    y = np.concatenate(labels)
    mean, scale = x.mean(0), x.std(0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    lr = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return MembershipModel(list(FEATURES)[:x.shape[1]], mean, scale,
                           lr.coef_[0].astype(np.float64), float(lr.intercept_[0]), threshold)


@lru_cache(maxsize=1)
def shipped() -> MembershipModel | None:
    """The shipped model (:data:`WEIGHTS_FILE`), or None when there is none."""
    if not WEIGHTS_FILE.is_file():
        return None
    return MembershipModel.from_json(json.loads(WEIGHTS_FILE.read_text(encoding="utf-8")))


@dataclass
class Membership:
    """One topic's candidates with their probability of being on topic, best first.

    ``ids`` and ``probs`` (shape (n,)) are in descending probability; ``threshold`` and
    ``show`` are the model's. :meth:`members` are the papers counted as on topic: those whose
    ``count_probs`` (the model's counter's, aligned with ``ids``; ``probs`` when None) are at or
    above ``threshold``."""

    topic: str
    ids: list[str]
    probs: np.ndarray
    threshold: float
    show: float
    blend: float = 1.0
    count_probs: np.ndarray | None = None

    def _counted(self) -> np.ndarray:
        return self.probs if self.count_probs is None else self.count_probs

    def order_key(self, prob: float, rank: int, n: int) -> float:
        """A survey's sort key for a paper of probability ``prob`` at 0-based ``rank`` of ``n``
        fused papers, higher first: ``blend * prob + (1 - blend) * (1 - rank / n)``."""
        return self.blend * prob + (1.0 - self.blend) * (1.0 - rank / max(n, 1))

    def members(self, allowed: set[str] | None = None) -> list[str]:
        """Ids with count probability >= threshold (among ``allowed`` when given), in
        descending probability."""
        return [pid for pid, p in zip(self.ids, self._counted())
                if p >= self.threshold and (allowed is None or pid in allowed)]

    def expected(self, allowed: set[str] | None = None) -> float:
        """The expected number of on-topic papers: the sum of the count probabilities."""
        return float(sum(p for pid, p in zip(self.ids, self._counted())
                         if allowed is None or pid in allowed))

    def prob(self, paper_id: str) -> float:
        """A paper's probability (0 for a paper no channel ranked)."""
        if not hasattr(self, "_by_id"):
            self._by_id = dict(zip(self.ids, self.probs.tolist()))
        return self._by_id.get(paper_id, 0.0)


def membership(retriever, topic: str, model: MembershipModel | None = None,
               within=None, extra: Sequence[str] = (),
               reference: Channels | None = None) -> Membership | None:
    """Score every candidate of ``topic`` (see the module docstring), the search restricted to
    the papers the :class:`rag.filters.Filters` ``within`` admit when given (one year of an
    index of several: :mod:`rag.conference.trends`; its features then relative to
    ``reference``, the topic's channels over the whole index: :func:`features`), and ``extra``
    papers scored whether the search ranks them or not (the papers in hand); None when no model is shipped, the
    retriever has no fusion inputs (a fake) or its settings turn membership off
    (``topic_membership``)."""
    settings = getattr(retriever, "settings", None)
    if settings is not None and not getattr(settings, "topic_membership", True):
        return None
    model = model or shipped()
    inputs = getattr(retriever, "fusion_inputs", None)
    if model is None or inputs is None:
        return None
    ids, x = candidates(retriever, topic, within, extra, reference)
    probs = model.probabilities(x)
    order = np.argsort(-probs, kind="stable")
    counted = model.count_probabilities(x)[order] if model.counter is not None else None
    return Membership(topic, [ids[i] for i in order], probs[order], model.threshold,
                      model.show, model.blend, counted)
