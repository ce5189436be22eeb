"""The learned fusion's inputs of :class:`rag.retrieve.retriever.Retriever`: the
:class:`rag.retrieve.fusion.Channels` of one search (:meth:`FusionChannels.channels`), with the
paper-vector channel they may include, and the paper vectors themselves
(:meth:`FusionChannels.paper_vectors`, also behind :meth:`FusionChannels.similar`). A mixin: it
uses the retriever's ``papers``, ``lexical``, ``store``, ``settings`` and ``name``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from index import manifest
from index.reader import open_catalog
from rag.filters import Filters
from rag.text import normalise
from rag.types import Hit, Ranking

#: With the paper-vector channel in the fusion, its top this many papers join the candidates.
PAPER_CANDIDATES = 50


class FusionChannels:
    """The fusion inputs and paper vectors of a :class:`rag.retrieve.retriever.Retriever` (see the
    module docstring)."""

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
