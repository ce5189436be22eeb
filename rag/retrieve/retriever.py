"""Hybrid retrieval: dense chunks (Chroma) + BM25 papers -> fusion -> per-paper scores -> filters.

Dense side: the question's embedding against every chunk; a paper's dense score is the cosine
similarity of its best chunk. Lexical side: BM25 over each paper's title, keywords and abstract.
Fusion: a learned linear model over z-scored channel scores and per-question features
(:mod:`rag.retrieve.fusion`, issue 21), or with ``settings.fusion = "fixed"`` a convex combination of
the z-scores (:func:`rag.retrieve.combine.zfusion`); plain reciprocal rank fusion
(:func:`rag.retrieve.combine.rrf`) is kept for comparison: measured on dev_hard it lost to dense
alone. Filters are applied inside both searches (Chroma ``where`` and a mask on the BM25 scores),
so ``k`` results come back whenever ``k`` papers match. Chunks of one paper are merged before
ranking, so one paper never takes several places.

This module holds :class:`Retriever` (opening an index, the dense and BM25 channels, the hybrid
search) and :class:`PartialRetriever`, its variant over an index still being embedded. The
retriever's other parts are mixins beside it: the name channel (:mod:`rag.retrieve.named`), the
learned fusion's inputs and the paper-vector channel (:mod:`rag.retrieve.channels`) and the
evidence sentences of its hits (:mod:`rag.retrieve.evidence`); the fixed score combinations are
:mod:`rag.retrieve.combine`.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from index import manifest
from index.catalog import Catalog
from index.reader import index_exists, lexical_from_catalog, open_catalog, open_chunks
from rag.backends.lexical import LexicalIndex
from rag.errors import IndexNotFoundError
from rag.filters import Filters
from rag.paths import IndexPaths
from rag.retrieve.channels import FusionChannels
from rag.retrieve.combine import put_named_first, zfusion
from rag.retrieve.evidence import EvidenceSentences
from rag.retrieve.named import NamedPapers
from rag.text import normalise
from rag.types import Hit, Paper, Ranking, Retrieval

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.backends.store import ChromaStore
    from rag.settings import Settings


log = logging.getLogger(__name__)

#: The dense side fetches more chunks until its candidates hold this many papers (the z-scores of
#: fusion need a population, and ``k`` is at most 50) ...
MIN_DENSE_PAPERS = 50
#: ... or it has fetched this many chunks (bounds the cost of a pathological corpus).
MAX_DENSE_CHUNKS = 12800


def _open_lexical(directory: Path, catalog: Catalog) -> LexicalIndex:
    """Load the BM25 index; one built by an older version with other BM25 parameters is rebuilt
    from the catalog and saved over (kept in memory only when the index is read-only)."""
    if LexicalIndex.is_current(directory):
        return LexicalIndex.load(directory)
    lexical = lexical_from_catalog(catalog)
    try:
        lexical.save(directory)
    except OSError as exc:
        log.warning("BM25 index rebuilt in memory, not saved (%s)", exc)
    return lexical


class Retriever(NamedPapers, FusionChannels, EvidenceSentences):
    """Searches one index. Build with :meth:`open`; thread-safe for concurrent searches.

    Args:
        store: the index's :class:`rag.backends.store.ChromaStore`.
        lexical: its :class:`rag.backends.lexical.LexicalIndex`.
        papers: every indexed paper by id.
        embedder: the same embedder the index was built with (checked by :meth:`open`).
        n_chunks: chunks per paper id (from the catalog), to fetch a paper's vectors by chunk id.
    """

    def __init__(self, store: ChromaStore, lexical: LexicalIndex, papers: dict[str, Paper],
                 embedder: Embedder, settings: Settings, name: str, n_chunks: dict[str, int]):
        self.store = store
        self.n_chunks = n_chunks
        self.lexical = lexical
        self.papers = papers
        self.embedder = embedder
        self.settings = settings
        self.name = name
        self._paper_rows = np.array([pid in papers for pid in lexical.ids])
        self._title_names: dict[str, list[str]] | None = None
        self._area_names: list[str] | None = None
        self._paper_vectors = None

    @classmethod
    def open(cls, settings: Settings, embedder: Embedder, name: str | None = None) -> "Retriever":
        """Open index ``name`` (default ``settings.index``).

        Raises:
            IndexNotFoundError: no such index; the message gives the command that builds it.
            IndexMismatchError: the index was built with another embedding model or backend
                (its chunking and embedder variant are taken from the index).
        """
        name = name or settings.index
        index_dir = settings.index_dir(name)
        if not index_exists(settings, name):
            raise IndexNotFoundError(f"no index named {name!r} under {settings.home}; build it "
                                     f"with: paperchat index PATH --name {name}")
        recorded = manifest.read(index_dir) or {}
        # Queries are embedded with the variant the index was built with (rag.backends.onnx_embedder).
        embedder = manifest.embedder_for(recorded, settings, embedder)
        manifest.check(recorded, manifest.build_keys(settings, embedder.dim,
                                                     getattr(embedder, "variant", None)),
                       name, keys=manifest.QUERY_KEYS)
        catalog = open_catalog(index_dir)
        lexical = _open_lexical(IndexPaths(index_dir).bm25, catalog)
        papers = {p.id: p for p, _ in catalog.papers()}
        store = open_chunks(index_dir, settings, name, catalog, papers, recorded)
        if getattr(store, "building", False):  # still being embedded: see PartialRetriever
            return PartialRetriever(store, lexical, papers, embedder, settings, name,
                                    catalog.chunk_counts(), recorded=recorded)
        return cls(store, lexical, papers, embedder, settings, name, catalog.chunk_counts())

    def __len__(self) -> int:
        return len(self.papers)

    def coverage(self):
        """How far the index's dense fill is (:class:`index.dense.DenseProgress`), or None when
        every paper is embedded (:class:`PartialRetriever` is the other case)."""
        return None

    # -- channels ------------------------------------------------------------------------------------
    def _allowed(self, filters: Filters | None) -> set[str] | None:
        if not filters:
            return None
        return {pid for pid, p in self.papers.items() if filters.matches(p)}

    def dense(self, query_vec: np.ndarray, filters: Filters | None = None,
              allowed: set[str] | None = None, n_chunks: int | None = None) -> Ranking:
        """Papers ranked by their best chunk's cosine similarity to ``query_vec`` (shape (dim,)).

        The ``n_chunks`` nearest chunks (default ``settings.dense_candidates``) are fetched; when
        they hold fewer than :data:`MIN_DENSE_PAPERS` papers (one paper with thousands of chunks,
        such as a 1 MB abstract, crowding out the rest) and more chunks match, 4x as many are
        fetched, up to :data:`MAX_DENSE_CHUNKS`. Real abstracts never trigger it: 200 chunks of
        the ICLR 2026 index hold about 150 papers.
        """
        where = filters.where(allowed) if filters else None
        n = n_chunks or self.settings.dense_candidates
        while True:
            matches = self.store.query(query_vec, n, where)
            best: dict[str, float] = {}
            for m in matches:
                if m.paper_id in self.papers and m.similarity > best.get(m.paper_id, -2.0):
                    best[m.paper_id] = m.similarity
            if len(best) >= MIN_DENSE_PAPERS or len(matches) < n or n >= MAX_DENSE_CHUNKS:
                break
            n = min(4 * n, MAX_DENSE_CHUNKS)
        ids = sorted(best, key=best.get, reverse=True)
        return Ranking(ids, [best[i] for i in ids])

    def bm25_scores(self, question: str, allowed: set[str] | None = None) -> np.ndarray:
        """BM25 score of every paper (row order of ``self.lexical.ids``), 0 outside ``allowed``."""
        scores = self.lexical.scores(normalise(question))
        if allowed is not None:
            mask = np.array([pid in allowed for pid in self.lexical.ids])
            scores = np.where(mask, scores, 0.0)
        return scores

    def bm25(self, question: str, allowed: set[str] | None = None,
             n: int | None = None, scores: np.ndarray | None = None) -> Ranking:
        """Papers ranked by BM25 (only those with a positive score)."""
        if scores is None:
            scores = self.bm25_scores(question, allowed)
        n = n or self.settings.lexical_candidates
        top = np.argsort(-scores)[:n]
        ids = [self.lexical.ids[i] for i in top if scores[i] > 0]
        return Ranking(ids, [float(scores[self.lexical.row[i]]) for i in ids])

    def search_texts(self) -> dict[str, str]:
        """Each paper's normalised BM25 text (title, keywords, abstract, as the build stored it
        in the catalog's ``search_text``), read once from the catalog (about 30 MB for 20k
        papers)."""
        if getattr(self, "_search_texts", None) is None:
            catalog = open_catalog(self.settings.index_dir(self.name))
            self._search_texts = {p.id: text for p, text in catalog.papers() if p.id in self.papers}
        return self._search_texts

    def vocabulary(self) -> set[str]:
        """Every stemmed BM25 term of the indexed papers (of :attr:`lexical`)."""
        return self.lexical.vocabulary()

    def area_names(self) -> list[str]:
        """The distinct primary areas of the indexed papers, sorted (computed once)."""
        if self._area_names is None:
            self._area_names = sorted({p.primary_area for p in self.papers.values()
                                       if p.primary_area})
        return self._area_names

    # -- the hybrid search ------------------------------------------------------------------------
    def search(self, question: str, k: int | None = None, filters: Filters | None = None,
               evidence: bool = True, feedback: bool = True, topical: bool = False) -> Retrieval:
        """Top-``k`` papers for ``question``, best first, as :class:`Hit`s.

        Fusion is a convex combination of z-scored channel scores (Bruch, Gai & Ingber 2023, "An
        Analysis of Fusion Functions for Hybrid Retrieval", found it beats RRF when tuned):
        ``score = z(dense) + lexical_weight * z(bm25)``, each z-score taken over that channel's
        top ``dense_candidates`` / ``lexical_candidates`` papers. A paper missing from the dense
        candidates gets the lowest candidate's similarity (an upper bound of its own). The weight
        (0.8) was chosen on ``shared/eval/dev_hard.jsonl`` from a plateau (0.8-0.9 over candidate
        pools of 100-200 give the same recall@5), not a single best point. That fixed fusion
        seeds the feedback below; the final ranking is the learned fusion (``settings.fusion``
        "learned", :mod:`rag.retrieve.fusion`): weights for the same two z-scores plus a bonus for
        BM25's top paper that grows with BM25's margin over its second paper, learned from dev
        questions by ``bench/train_fusion.py`` (README, "Retrieve"); "fixed" keeps the convex
        combination.

        With ``feedback`` (and ``settings.feedback_papers`` > 0) the dense side is searched a
        second time with a Rocchio query (Rocchio 1971; for dense retrievers Li et al. 2022,
        "Pseudo Relevance Feedback with Deep Language Models and Dense Retrievers"):
        ``q' = q + feedback_weight * mean(v_p)`` over the top ``feedback_papers`` fused papers,
        ``v_p`` the L2-normalised mean of paper p's chunk vectors, ``q'`` re-normalised; then
        fused again with the same BM25 scores. It pulls in papers worded unlike the question but
        like its best matches. On dev_hard (``paperchat eval``, 5,358 papers) it gave specific
        recall@1 0.822 -> 0.844 and recall@5 0.933 -> 0.956 on the int8 index, but recall@1
        0.800 -> 0.822 and recall@10 0.978 -> 0.956 on an fp32 one: one or two questions each
        way, kept for the default int8 backend (m=2 with beta 0.25-0.5 is a plateau). Callers
        turn it off for follow-ups, whose query already carries the previous turn.

        With ``topical`` (a topic survey: "which papers study X?") the feedback dense channel
        is searched from the question's vector moved by the trained query adapter
        (:meth:`adapted`) and fused in place of the plain one, except that the plain fusion's
        first paper stays first: the adapter pulls a query towards its topic and away from its
        details, which cost the descriptions of one paper in ``shared/eval/dev_hard.jsonl`` that
        the answer path reads as surveys 2 of 45 at recall@1 (0.867 -> 0.822) without it.

        Papers the question names (:meth:`named`) then go first (:func:`put_named_first`).

        ``Hit.score`` is the fused score (higher is better; comparable within one question only);
        ``Hit.dense`` the best chunk's cosine similarity to the question itself (not the
        feedback query), ``Hit.lexical`` the BM25 score. ``Retrieval.dense`` is the ranking
        of the question itself too, so refusal thresholds keep their calibration.
        """
        t0 = time.perf_counter()
        k = k or self.settings.k
        allowed = self._allowed(filters)
        qvec, dense, prf, lexical, full, meta = self._rankings(question, filters, allowed, feedback,
                                                               topical)
        model = self.fusion_model()
        plain_prf = meta.pop("plain_prf", None)

        def fuse(prf: Ranking) -> dict[str, float]:
            if model is None:
                return self._fuse(prf, lexical, full)
            ch = self.channels(question, qvec, dense, prf, lexical, full, allowed, model.needs)
            return dict(zip(ch.ids, model.scores(ch).tolist()))

        fused = fuse(prf)
        if model is not None:
            meta["fusion"] = "learned"
        if plain_prf is not None and fused:  # the plain query's first paper stays first
            plain = fuse(plain_prf)
            lead = max(plain, key=plain.get) if plain else None
            if lead is not None:
                fused[lead] = max(fused.values()) + 1e-6
                meta["adapted"] = True
        fused, named_meta = put_named_first(fused, self.named(question, allowed),
                                            lexical.ids[:1], prf.ids[:1])
        meta.update(named_meta)
        order = sorted(fused, key=lambda pid: fused[pid], reverse=True)[:k]
        d = dict(zip(dense.ids, dense.scores))
        missing = [pid for pid in order if pid not in d]
        if missing:  # not among the question's own dense candidates: cosine from stored vectors
            d.update(self.store.best_similarity(qvec, missing, self.n_chunks))
        row = self.lexical.row
        hits = [Hit(self.papers[pid], fused[pid], d.get(pid, 0.0),
                    float(full[row[pid]]) if pid in row else 0.0) for pid in order]
        if evidence:
            self.attach_evidence(question, hits, qvec)
        return Retrieval(hits, dense, lexical, (time.perf_counter() - t0) * 1000, meta)

    def _rankings(self, question: str, filters: Filters | None, allowed: set[str] | None,
                  feedback: bool, topical: bool = False):
        """The channel rankings of one search: ``(question vector, the question's dense
        ranking, the feedback dense ranking (the same object without feedback), BM25 ranking,
        every paper's BM25 score, meta)``. The feedback query moves towards the top papers of
        the fixed fusion (:func:`zfusion`) of the first two; with ``topical`` it starts from the
        adapted question vector (:meth:`adapted`)."""
        qvec = self.embedder.embed([normalise(question)])[0]
        dense = self.dense(qvec, filters, allowed)
        full = self.bm25_scores(question, allowed)
        lexical = self.bm25(question, allowed, scores=full)
        meta: dict = {}
        prf = dense
        top: list[str] = []
        m = self.settings.feedback_papers if feedback else 0
        if m:
            first = self._fuse(dense, lexical, full)
            top = sorted(first, key=lambda pid: first[pid], reverse=True)[:m]

        def moved(vec: np.ndarray) -> np.ndarray:
            q2 = self.feedback_query(vec, top) if top else None
            return vec if q2 is None else q2

        q2 = moved(qvec)
        if q2 is not qvec:
            prf = self.dense(q2, filters, allowed)
            meta["feedback_papers"] = top
        adapted = self.adapted(qvec) if topical else qvec
        if adapted is not qvec:
            meta["plain_prf"] = prf  # (search keeps its first paper first; popped there)
            prf = self.dense(moved(adapted), filters, allowed)
        return qvec, dense, prf, lexical, full, meta

    def adapted(self, qvec: np.ndarray) -> np.ndarray:
        """``qvec`` moved by the shipped query adapter (:mod:`rag.retrieve.query_adapter`) when
        ``settings.query_adapter`` is on and the adapter was trained for this index's embedder;
        else ``qvec`` itself (the same object)."""
        if not getattr(self.settings, "query_adapter", False):
            return qvec
        from rag.retrieve.query_adapter import shipped

        adapter = shipped()
        return adapter.adapt(qvec) if adapter is not None and adapter.fits(self.embedder) else qvec

    def fusion_inputs(self, question: str,
                      needs: set[str] | frozenset = frozenset({"paper", "terms"}),
                      feedback: bool = True, filters: Filters | None = None,
                      extra: Sequence[str] = ()):
        """The :class:`rag.retrieve.fusion.Channels` that :meth:`search` fuses for ``question``
        (under ``filters``, none by default), with every input by default: what
        ``bench/train_fusion.py`` learns from and :mod:`rag.retrieve.membership` scores.
        ``extra`` paper ids are candidates too, with their best chunk's cosine from the stored
        vectors when the question's dense ranking does not have them ("which of these are
        about X?" scores the papers in hand, ranked or not). The plain query's channels: the
        relevance model was fitted on them (the query adapter is a survey search's only)."""
        allowed = self._allowed(filters)
        qvec, dense, prf, lexical, full, _ = self._rankings(question, filters, allowed, feedback)
        missing = [pid for pid in dict.fromkeys(extra) if pid in self.papers
                   and pid not in set(dense.ids) and (allowed is None or pid in allowed)]
        if missing:
            found = self.store.best_similarity(qvec, missing, self.n_chunks)
            dense = Ranking(dense.ids + list(found), dense.scores + list(found.values()))
        return self.channels(question, qvec, dense, prf, lexical, full, allowed, needs)

    def fusion_model(self):
        """The learned :class:`rag.retrieve.fusion.FusionModel` (``settings.fusion == "learned"``, the
        shipped ``rag/retrieve/fusion_weights.json``), or None for the fixed :func:`zfusion`."""
        if getattr(self.settings, "fusion", "learned") != "learned":
            return None
        from rag.retrieve.fusion import shipped

        return shipped()

    def _fuse(self, dense: Ranking, lexical: Ranking, full: np.ndarray) -> dict[str, float]:
        """:func:`zfusion` of the two channels, with exact BM25 scores for the dense candidates
        (``full``: every paper's BM25 score, row order of ``self.lexical.ids``)."""
        lx = {pid: float(full[self.lexical.row[pid]]) for pid in dense.ids if pid in self.lexical.row}
        lx.update(zip(lexical.ids, lexical.scores))
        return zfusion(dense, lexical, self.settings.lexical_weight, lexical_all=lx)

    def feedback_query(self, qvec: np.ndarray, paper_ids: list[str]) -> np.ndarray | None:
        """Rocchio query ``normalise(q + feedback_weight * mean_p normalise(mean of p's chunk
        vectors))``, shape (dim,) float32; None when no paper has stored vectors."""
        vecs = self.store.paper_vectors(paper_ids, self.n_chunks)
        if not vecs:
            return None
        centroids = []
        for v in vecs.values():
            c = v.mean(axis=0)
            centroids.append(c / (np.linalg.norm(c) or 1.0))
        q2 = np.asarray(qvec, dtype=np.float32) + self.settings.feedback_weight * np.mean(centroids, axis=0)
        return (q2 / (np.linalg.norm(q2) or 1.0)).astype(np.float32)


# --- an index still being embedded (rag.retrieve.coverage) -------------------------------------------------
class _QueryRanking(Ranking):
    """A dense :class:`Ranking` that knows its query vector (shape (dim,)), for the papers
    :class:`PartialRetriever` scores on demand."""

    query: np.ndarray | None = None


class PartialRetriever(Retriever):
    """A :class:`Retriever` over an index whose dense fill has not finished
    (:meth:`Retriever.open` returns one): its ``store`` is the :class:`index.dense.DenseView`
    of the committed batches, which loads new ones as they come, so an open retriever (a running
    app) searches the vectors the build adds without reopening. Fusion and the dense scores are
    those of :mod:`rag.retrieve.coverage`: the best BM25 papers without vectors are embedded on demand,
    and a paper whose cosine is unknown is fused on its BM25 evidence alone, never as the least
    similar paper; everything else is the whole index's search."""

    def __init__(self, *args, recorded: dict | None = None, **kwargs):
        from index.reader import paper_chunks
        from rag.retrieve.coverage import OnDemand

        super().__init__(*args, **kwargs)
        recorded = recorded or {}
        chunking = (int(recorded.get("chunk_tokens", self.settings.chunk_tokens)),
                    int(recorded.get("chunk_overlap", self.settings.chunk_overlap)))
        self.ondemand = OnDemand(self.store, self.embedder, self.papers, chunking, paper_chunks)
        self.store.compute_missing = self.ondemand.vectors  # a hit's cosine, embedded or not
        self._live_vectors: tuple | None = None

    def coverage(self):
        return self.store.progress()

    def dense(self, query_vec: np.ndarray, filters: Filters | None = None,
              allowed: set[str] | None = None, n_chunks: int | None = None) -> Ranking:
        """:meth:`Retriever.dense` over the embedded papers, remembering ``query_vec``."""
        found = super().dense(query_vec, filters, allowed, n_chunks)
        out = _QueryRanking(found.ids, found.scores)
        out.query = np.asarray(query_vec, dtype=np.float32)
        return out

    def _score_ondemand(self, ranking: Ranking, full: np.ndarray) -> set[str]:
        """Merge into ``ranking`` (in place, a :class:`_QueryRanking`) the cosines of the best
        BM25 papers without vectors (:func:`rag.retrieve.coverage.score_unembedded`, embedded on demand
        and remembered, so a second ranking of the same search reuses them); returns the ids of
        the papers whose cosine is known (embedded, or scored here)."""
        from rag.retrieve.coverage import merge_scores, score_unembedded

        embedded = self.store.embedded_ids()
        known = set(embedded)
        query = getattr(ranking, "query", None)
        if query is not None:
            todo = score_unembedded(full, self.lexical.ids, embedded)
            cosines = {pid: float((v @ query).max())
                       for pid, v in self.ondemand.vectors(todo).items() if len(v)}
            known.update(cosines)
            ranking.ids, ranking.scores = merge_scores(ranking.ids, ranking.scores, cosines)
        return known

    def _fuse(self, dense: Ranking, lexical: Ranking, full: np.ndarray) -> dict[str, float]:
        """The whole index's fusion after the best BM25 papers without vectors got their cosine
        (merged into ``dense`` in place, so :attr:`Retrieval.dense` has them too: refusal reads
        its best cosine there), then every paper whose cosine is still unknown fused on BM25
        alone (:func:`rag.retrieve.coverage.fuse_unscored`)."""
        from rag.retrieve.coverage import fuse_unscored

        known = self._score_ondemand(dense, full)
        fused = super()._fuse(dense, lexical, full)
        row = self.lexical.row
        return fuse_unscored(fused, lexical.scores,
                             lambda pid: float(full[row[pid]]) if pid in row else 0.0,
                             self.settings.lexical_weight, known)

    def channels(self, question: str, qvec: np.ndarray, dense: Ranking, prf: Ranking,
                 lexical: Ranking, full: np.ndarray, allowed: set[str] | None = None,
                 needs: set[str] | frozenset = frozenset()):
        """The learned fusion's inputs (:meth:`Retriever.channels`) after the papers scored on
        demand got their cosines in the question's and the feedback query's rankings, with
        every paper whose cosine is still unknown given its BM25 evidence in the vector
        channels (:func:`rag.retrieve.coverage.impute_unscored`), so it is not ranked down."""
        from rag.retrieve.coverage import impute_unscored

        known = self._score_ondemand(dense, full)
        if prf is not dense:
            known |= self._score_ondemand(prf, full)
        ch = super().channels(question, qvec, dense, prf, lexical, full, allowed, needs)
        return impute_unscored(ch, known)

    def paper_vectors(self):
        """The paper vectors of the papers embedded so far and of those scored on demand
        (never saved: :func:`index.reader.open_paper_vectors`), recomputed when the view
        changed."""
        from index.reader import open_paper_vectors

        key = self.store.version()
        if self._live_vectors is None or self._live_vectors[0] != key:
            index_dir = self.settings.index_dir(self.name)
            pv = open_paper_vectors(index_dir, self.store, open_catalog(index_dir), None)
            self._live_vectors = (key, pv)
        return self._live_vectors[1]
