"""Hybrid retrieval: dense chunks (Chroma) + BM25 papers -> fusion -> per-paper scores -> filters.

Dense side: the question's embedding against every chunk; a paper's dense score is the cosine
similarity of its best chunk. Lexical side: BM25 over each paper's title, keywords and abstract.
Fusion: a learned linear model over z-scored channel scores and per-question features
(:mod:`rag.retrieve.fusion`, issue 21), or with ``settings.fusion = "fixed"`` a convex combination of
the z-scores (:func:`zfusion`); plain reciprocal rank fusion (:func:`rrf`) is kept for
comparison: measured on dev_hard it lost to dense alone. Filters are applied inside both searches
(Chroma ``where`` and a mask on the BM25 scores), so ``k`` results come back whenever ``k`` papers
match. Chunks of one paper are merged before ranking, so one paper never takes several places.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from index import manifest
from index.catalog import Catalog
from index.reader import index_exists, lexical_from_catalog, open_catalog, open_chunks
from rag.errors import IndexNotFoundError
from rag.filters import Filters
from rag.backends.embedder import embed_cached
from rag.backends.lexical import LexicalIndex, query_terms
from rag.understand.names import NameIndex, fold, name_like, papers_key, question_names, title_name
from rag.paths import IndexPaths
from rag.text import normalise, split_sentences
from rag.types import Hit, Paper, Ranking, Retrieval

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.settings import Settings
    from rag.backends.store import ChromaStore


log = logging.getLogger(__name__)

#: Evidence is looked for in the first this many chars / sentences of an abstract (a real
#: abstract has at most ~4,300 chars and ~30 sentences; this bounds the cost of a pathological one).
MAX_EVIDENCE_CHARS = 8000
MAX_EVIDENCE_SENTENCES = 40
#: The dense side fetches more chunks until its candidates hold this many papers (the z-scores of
#: fusion need a population, and ``k`` is at most 50) ...
MIN_DENSE_PAPERS = 50
#: ... or it has fetched this many chunks (bounds the cost of a pathological corpus).
MAX_DENSE_CHUNKS = 12800
#: A name in the question (:func:`question_names`) puts first the papers that use it, when at
#: most this many papers do (a name many papers use, such as GRPO or LoRA, is a topic: fusion
#: ranks those).
MAX_NAMED_PAPERS = 3
#: With the paper-vector channel in the fusion, its top this many papers join the candidates.
PAPER_CANDIDATES = 50

from rag.understand.names import WORD as _WORD  # noqa: E402


def rrf(rankings: list[Ranking], weights: list[float], k: float = 60.0) -> dict[str, float]:
    """Weighted reciprocal rank fusion: ``score(d) = sum_i w_i / (k + rank_i(d))`` (ranks from 1;
    papers absent from a ranking get nothing from it). Cormack et al., SIGIR 2009, with k=60."""
    fused: dict[str, float] = {}
    for ranking, w in zip(rankings, weights):
        for r, pid in enumerate(ranking.ids, start=1):
            fused[pid] = fused.get(pid, 0.0) + w / (k + r)
    return fused


def _z(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return 0.0, 1.0
    sd = float(arr.std())
    return float(arr.mean()), sd if sd > 1e-9 else 1.0


def zfusion(dense: Ranking, lexical: Ranking, lexical_weight: float = 0.8,
            lexical_all: dict[str, float] | None = None) -> dict[str, float]:
    """Fused score per candidate paper: ``z_dense + lexical_weight * z_bm25``.

    z-scores use the mean and standard deviation of each channel's candidate scores. A paper
    absent from the dense candidates gets the lowest candidate similarity. ``lexical_all`` gives
    exact BM25 scores of papers outside the BM25 pool (the dense candidates); without it they
    count as 0.
    """
    mu_d, sd_d = _z(dense.scores)
    mu_l, sd_l = _z(lexical.scores)
    d = dict(zip(dense.ids, dense.scores))
    lx = dict(zip(lexical.ids, lexical.scores))
    if lexical_all:
        lx = {**lexical_all, **lx}
    floor = min(dense.scores) if dense.scores else 0.0
    fused = {}
    for pid in set(d) | set(lx):
        fused[pid] = (d.get(pid, floor) - mu_d) / sd_d + lexical_weight * (lx.get(pid, 0.0) - mu_l) / sd_l
    return fused


def put_named_first(fused: dict[str, float], named: list[str], bm25_top: list[str],
                    prf_top: list[str]) -> tuple[dict[str, float], dict]:
    """``fused`` with the papers the question names (:meth:`Retriever.named`) above every other
    paper, in fused order among themselves; returns it and the meta it adds (``named``). Not
    when every channel puts one paper first (the fused top is BM25's top ``bm25_top`` and the
    feedback dense channel's ``prf_top``) and the question does not name it: a name the question
    shares with other papers ("PnP", "GRACE") then loses to the paper it describes (issue 21:
    3 of 1,150 dev questions; then the meta says ``named_overruled``)."""
    if not named:
        return fused, {}
    lead = max(fused, key=fused.get) if fused else None
    if lead is not None and lead not in named and bm25_top == [lead] and prf_top == [lead]:
        return fused, {"named_overruled": named}
    fused = dict(fused)
    top = max(fused.values(), default=0.0)
    low = min(fused.values(), default=0.0) - 1.0
    ranked = sorted(named, key=lambda pid: fused.get(pid, low), reverse=True)
    for r, pid in enumerate(ranked):
        fused[pid] = top + 1.0 + 0.01 * (len(ranked) - r)
    return fused, {"named": ranked}


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


class Retriever:
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

    def name_index(self) -> NameIndex:
        """The :class:`rag.understand.names.NameIndex` of the indexed papers, on first use: read from the
        index's names file when it was made from these papers by this code (the build writes
        it: :func:`rag.understand.names.write_names`; about 0.3 s at 19,630 papers), else built (about
        4 s per 10,000 papers) and saved there for the next reader."""
        if getattr(self, "_name_index", None) is None:
            papers = list(self.papers.values())
            key = papers_key(papers)
            path = IndexPaths(self.settings.index_dir(self.name)).names
            names = NameIndex.load(path, key)
            if names is None:
                names = NameIndex(papers)
                if path.parent.is_dir():
                    try:
                        names.save(path, key)
                    except OSError as exc:  # a read-only index: kept in memory only
                        log.warning("paper names not saved to %s (%s)", path, exc)
            self._name_index = names
        return self._name_index

    def title_names(self) -> dict[str, list[str]]:
        """Folded title name (:func:`title_name`) -> ids of the papers whose title has it."""
        if self._title_names is None:
            names: dict[str, list[str]] = {}
            for pid, paper in self.papers.items():
                name = title_name(paper.title)
                if len(name) >= 3:
                    names.setdefault(name, []).append(pid)
            self._title_names = names
        return self._title_names

    def named(self, question: str, allowed: set[str] | None = None) -> list[str]:
        """Ids of the papers the question names, in question order: a title's name written in
        the question in any case and spacing ("steporlm", "part x mllm": its 1-3 word spans,
        folded; a name in capitals that is also a word, such as SPEED or MIMIC, only when
        written in capitals), and a name-like word (:func:`question_names`) that the lexical
        index finds in at most :data:`MAX_NAMED_PAPERS` papers (same term rule as BM25, so
        ``llama3-8b`` and ``Llama-3-8B`` agree). Only papers in ``allowed`` (when given) count.

        A title's name written as a plain word ("reveal", "mesh" for ReVeal and MeSH; not
        name-like, not in capitals) names the paper only when the word is itself rare (at most
        :data:`MAX_NAMED_PAPERS` papers have it): otherwise it is the field's word, and an author's
        summary "We reveal why audio reasoning fails" is about something else (issue 21: 18 of
        1,516 dev queries were pushed down that way). Words of a span are separated by
        anything but an apostrophe or a punctuation mark between clauses ("LoRA's" is not
        "LoRA-S"; "DA$^{2}$" is DA2)."""
        from rag.backends.lexical import compound_terms

        out: list[str] = []
        found = list(_WORD.finditer(question))
        words = [m.group(0) for m in found]
        titles = self.title_names()
        for size in range(min(3, len(words)), 0, -1):
            for i in range(len(words) - size + 1):
                span = words[i:i + size]
                gaps = [question[a.end():b.start()] for a, b in zip(found[i:i + size - 1],
                                                                  found[i + 1:i + size])]
                if any(re.search(r"['\u2019,;:!?]|\.\s", g) for g in gaps):
                    continue  # "LoRA's" is not the name "LoRA-S"; "DA$^{2}$" is DA2
                name = fold("".join(span))
                ids = titles.get(name, [])
                if not 0 < len(ids) <= MAX_NAMED_PAPERS:
                    continue
                head = self.papers[ids[0]].title.partition(":")[0]
                joined = "".join(span)
                written = joined.isupper() or any(name_like(w) for w in [*span, "-".join(span)])
                if head.isupper() and not written:
                    continue
                if not written and not self._rare_term(name):
                    continue  # "reveal", "mesh": words, although ReVeal and MeSH are names
                out += ids
        for name in question_names(question):
            joined = compound_terms(unicodedata.normalize("NFKC", name).lower())
            terms = query_terms(joined[0]) if joined else query_terms(name)
            if len(terms) != 1:
                continue
            scores = self.lexical.scores(terms[0])
            docs = np.flatnonzero(scores > 0)
            if 0 < len(docs) <= MAX_NAMED_PAPERS:
                out += [self.lexical.ids[i] for i in docs[np.argsort(-scores[docs])]]
        out = [pid for pid in dict.fromkeys(out) if pid in self.papers]
        return [pid for pid in out if allowed is None or pid in allowed]

    def _rare_term(self, term: str) -> bool:
        """True when at most :data:`MAX_NAMED_PAPERS` papers have ``term`` (one folded word) as a
        BM25 term: a coined name rather than a word of the field."""
        terms = query_terms(term)
        if len(terms) != 1:
            return False
        return int((self.lexical.scores(terms[0]) > 0).sum()) <= MAX_NAMED_PAPERS

    def paper_vectors(self):
        """The index's :class:`index.vectors.PaperVectors` (one unit vector per paper, the mean of
        its chunk vectors), loaded on first use; computed from the store and saved for an index
        built before they existed (about 5 s per 10,000 papers)."""
        if self._paper_vectors is None:
            from index.reader import open_paper_vectors

            index_dir = self.settings.index_dir(self.name)
            recorded = (manifest.read(index_dir) or {}).get("catalog_fingerprint")
            self._paper_vectors = open_paper_vectors(index_dir, self.store,
                                                     open_catalog(index_dir), recorded)
        return self._paper_vectors

    def similar(self, paper_id: str, k: int = 10, filters: Filters | None = None,
                exclude: Sequence[str] = ()) -> list[Hit]:
        """The ``k`` papers nearest to paper ``paper_id`` by paper vectors (cosine similarity of
        the mean chunk vectors, :mod:`index.vectors`), best first, the paper itself and
        ``exclude`` left out, only papers ``filters`` admit. ``Hit.score`` and ``Hit.dense`` are
        that cosine (in [-1, 1]); ``Hit.lexical`` is 0. Empty when the paper has no vector (not
        in this index, or not embedded yet)."""
        pv = self.paper_vectors()
        row = pv.row(paper_id)
        if row is None or not len(pv):
            return []
        sims = pv.vectors @ pv.vectors[row]
        allowed = self._allowed(filters)
        skip = {paper_id, *exclude}
        out: list[Hit] = []
        for i in np.argsort(-sims, kind="stable"):
            pid = pv.ids[i]
            if pid in skip or pid not in self.papers or (allowed is not None and pid not in allowed):
                continue
            out.append(Hit(self.papers[pid], float(sims[i]), float(sims[i]), 0.0))
            if len(out) >= k:
                break
        return out

    # -- the hybrid search ------------------------------------------------------------------------
    def search(self, question: str, k: int | None = None, filters: Filters | None = None,
               evidence: bool = True, feedback: bool = True) -> Retrieval:
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

        Papers the question names (:meth:`named`) then go first (:func:`put_named_first`).

        ``Hit.score`` is the fused score (higher is better; comparable within one question only);
        ``Hit.dense`` the best chunk's cosine similarity to the question itself (not the
        feedback query), ``Hit.lexical`` the BM25 score. ``Retrieval.dense`` is the ranking
        of the question itself too, so refusal thresholds keep their calibration.
        """
        t0 = time.perf_counter()
        k = k or self.settings.k
        allowed = self._allowed(filters)
        qvec, dense, prf, lexical, full, meta = self._rankings(question, filters, allowed, feedback)
        model = self.fusion_model()
        if model is not None:
            ch = self.channels(question, qvec, dense, prf, lexical, full, allowed, model.needs)
            fused = dict(zip(ch.ids, model.scores(ch).tolist()))
            meta["fusion"] = "learned"
        else:
            fused = self._fuse(prf, lexical, full)
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
                  feedback: bool):
        """The channel rankings of one search: ``(question vector, the question's dense
        ranking, the feedback dense ranking (the same object without feedback), BM25 ranking,
        every paper's BM25 score, meta)``. The feedback query moves towards the top papers of
        the fixed fusion (:func:`zfusion`) of the first two."""
        qvec = self.embedder.embed([normalise(question)])[0]
        dense = self.dense(qvec, filters, allowed)
        full = self.bm25_scores(question, allowed)
        lexical = self.bm25(question, allowed, scores=full)
        meta: dict = {}
        prf = dense
        m = self.settings.feedback_papers if feedback else 0
        if m:
            first = self._fuse(dense, lexical, full)
            top = sorted(first, key=lambda pid: first[pid], reverse=True)[:m]
            q2 = self.feedback_query(qvec, top) if top else None
            if q2 is not None:
                prf = self.dense(q2, filters, allowed)
                meta["feedback_papers"] = top
        return qvec, dense, prf, lexical, full, meta

    def fusion_inputs(self, question: str,
                      needs: set[str] | frozenset = frozenset({"paper", "terms"}),
                      feedback: bool = True):
        """The :class:`rag.retrieve.fusion.Channels` that :meth:`search` fuses for ``question`` (no
        filters), with every input by default: what ``bench/train_fusion.py`` learns from."""
        qvec, dense, prf, lexical, full, _ = self._rankings(question, None, None, feedback)
        return self.channels(question, qvec, dense, prf, lexical, full, None, needs)

    def fusion_model(self):
        """The learned :class:`rag.retrieve.fusion.FusionModel` (``settings.fusion == "learned"``, the
        shipped ``rag/retrieve/fusion_weights.json``), or None for the fixed :func:`zfusion`."""
        if getattr(self.settings, "fusion", "learned") != "learned":
            return None
        from rag.retrieve.fusion import shipped

        return shipped()

    def channels(self, question: str, qvec: np.ndarray, dense: Ranking, prf: Ranking,
                 lexical: Ranking, full: np.ndarray, allowed: set[str] | None = None,
                 needs: set[str] | frozenset = frozenset()):
        """The :class:`rag.retrieve.fusion.Channels` of one search: candidates are the papers of the
        feedback dense ranking ``prf``, of BM25 (``lexical``) and of the question's own dense
        ranking, plus with ``"paper"`` in ``needs`` the top :data:`PAPER_CANDIDATES` papers by
        paper vector (:meth:`paper_vectors`; cosine to ``qvec`` over every paper ``allowed``
        admits, its top ``lexical_candidates`` the z-score population); with ``"terms"`` the
        question's BM25 terms and which candidates have them. ``full``: every paper's BM25
        score (row order of ``self.lexical.ids``)."""
        from rag.retrieve.fusion import Channels

        ids = list(dict.fromkeys([*prf.ids, *lexical.ids, *dense.ids]))
        paper = paper_pool = None
        if "paper" in needs:
            pv = self.paper_vectors()
            if len(pv):
                sims = pv.vectors @ np.asarray(qvec, dtype=np.float32)
                ok = np.array([pid in self.papers and (allowed is None or pid in allowed)
                               for pid in pv.ids]) if allowed is not None else self._pv_mask(pv)
                sims = np.where(ok, sims, -np.inf)
                n = min(self.settings.lexical_candidates, int(ok.sum()))
                best = np.argpartition(-sims, n - 1)[:n] if n else np.zeros(0, dtype=int)
                best = best[np.argsort(-sims[best], kind="stable")]
                paper_pool = sims[best].astype(np.float64)
                have = set(ids)
                ids += [pv.ids[i] for i in best[:PAPER_CANDIDATES] if pv.ids[i] not in have]
                rows = [pv.row(pid) for pid in ids]
                paper = np.array([float(sims[r]) if r is not None and ok[r] else np.nan
                                  for r in rows])
        d = dict(zip(dense.ids, dense.scores))
        p = dict(zip(prf.ids, prf.scores))
        row = self.lexical.row
        term_df = present = None
        if "terms" in needs:
            cand_rows = np.array([row.get(pid, -1) for pid in ids], dtype=np.int64)
            found = self.lexical.term_rows(normalise(question))
            term_df = np.array([len(r) for _, r in found], dtype=np.float64)
            present = (np.stack([np.isin(cand_rows, r) for _, r in found]) if found
                       else np.zeros((0, len(ids)), dtype=bool))
        return Channels(
            ids=ids,
            dense=np.array([d.get(pid, np.nan) for pid in ids], dtype=np.float64),
            dense_pool=np.asarray(dense.scores, dtype=np.float64),
            prf=np.array([p.get(pid, np.nan) for pid in ids], dtype=np.float64),
            prf_pool=np.asarray(prf.scores, dtype=np.float64),
            bm25=np.array([float(full[row[pid]]) if pid in row else 0.0 for pid in ids]),
            bm25_pool=np.asarray(lexical.scores, dtype=np.float64),
            paper=paper, paper_pool=paper_pool, term_df=term_df, term_present=present,
            n_docs=len(self.lexical.ids))

    def _pv_mask(self, pv) -> np.ndarray:
        """Rows of ``pv`` whose paper is in this index (computed once per vectors object)."""
        if getattr(self, "_pv_mask_for", None) is not pv:
            self._pv_mask_rows = np.array([pid in self.papers for pid in pv.ids], dtype=bool)
            self._pv_mask_for = pv
        return self._pv_mask_rows

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

    def attach_evidence(self, question: str, hits: list[Hit], qvec: np.ndarray | None = None,
                        n: int = 3) -> None:
        """Fill ``hit.evidence`` with the ``n`` abstract sentences most similar to the question
        (cosine similarity of sentence embeddings, ties broken by BM25-term overlap): the best one
        first (the card shows ``evidence[0]``), the others in abstract order so they read
        naturally."""
        if not hits:
            return
        if qvec is None:
            qvec = self.embedder.embed([normalise(question)])[0]
        sents = [(split_sentences(normalise(h.paper.abstract[:MAX_EVIDENCE_CHARS]))
                  or [normalise(h.paper.abstract[:MAX_EVIDENCE_CHARS])])[:MAX_EVIDENCE_SENTENCES]
                 for h in hits]
        flat = [s for ss in sents for s in ss]
        # cached: the answer's composition and grounding embed the same sentences again
        vecs = embed_cached(self.embedder, flat)
        qterms = set(query_terms(question))
        i = 0
        for hit, ss in zip(hits, sents):
            sims = vecs[i:i + len(ss)] @ qvec
            overlap = [len(qterms & set(query_terms(s))) / (1 + len(qterms)) for s in ss]
            score = [float(a) + 0.1 * b for a, b in zip(sims, overlap)]
            best = sorted(range(len(ss)), key=lambda j: score[j], reverse=True)[:n]
            hit.evidence = [ss[best[0]]] + [ss[j] for j in sorted(best[1:])]
            i += len(ss)


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
