"""The evidence of :class:`rag.retrieve.retriever.Retriever`'s hits: the abstract sentences closest
to the question (:meth:`EvidenceSentences.attach_evidence`), which the paper cards and the
answers quote. A mixin: it uses the retriever's ``embedder``.
"""

from __future__ import annotations

import numpy as np

from rag.backends.embedder import embed_cached
from rag.backends.lexical import query_terms
from rag.text import normalise, split_sentences
from rag.types import Hit

#: Evidence is looked for in the first this many chars / sentences of an abstract (a real
#: abstract has at most ~4,300 chars and ~30 sentences; this bounds the cost of a pathological one).
MAX_EVIDENCE_CHARS = 8000
MAX_EVIDENCE_SENTENCES = 40


class EvidenceSentences:
    """The evidence sentences of a :class:`rag.retrieve.retriever.Retriever`'s hits (see the module
    docstring)."""

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
