"""Grounding: check each answer sentence against the abstracts it cites.

Support of a sentence by a paper = max over the paper's abstract sentences of
``0.7 * cosine(sentence, abstract sentence) + 0.3 * lexical overlap`` where lexical overlap is the
share of the answer sentence's BM25 terms (stemmed, stop words removed) found in that abstract
sentence. In [0, 1] for non-negative cosines; higher is better.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from index.text import normalise, split_sentences
from rag import citations as cit
from rag.lexical import query_terms
from rag.types import AnswerSentence, Citation, Hit


@dataclass
class Grounded:
    """The checked answer: text with valid markers, its sentences and one Citation per cited hit."""

    text: str
    sentences: list[AnswerSentence]
    citations: list[Citation]


def _answer_sentences(text: str) -> list[str]:
    # split after the end punctuation *and* any markers that follow it: "... results. [1] Next"
    parts = re.split(r"(?<=[.!?])((?:\s*\[\d+\])*)\s+", text.strip())
    out, i = [], 0
    while i < len(parts):
        s = parts[i] + (parts[i + 1] if i + 1 < len(parts) else "")
        if s.strip():
            out.append(s.strip())
        i += 2
    return out


def support_matrix(sentences: list[str], hits: list[Hit], embedder) -> tuple[np.ndarray, list[list[str]]]:
    """Support of each answer sentence (rows) by each hit (columns), shape (len(sentences),
    len(hits)) float32, and the abstract sentences of each hit."""
    abstract_sents = [split_sentences(normalise(h.paper.abstract)) or [h.paper.title] for h in hits]
    flat = [s for ss in abstract_sents for s in ss]
    clean = [cit.MARKER.sub("", s).strip() or s for s in sentences]
    vecs = embedder.embed(clean + flat)
    a, b = vecs[: len(clean)], vecs[len(clean):]
    sims = a @ b.T
    terms_a = [set(query_terms(s)) for s in clean]
    terms_b = [set(query_terms(s)) for s in flat]
    out = np.zeros((len(clean), len(hits)), dtype=np.float32)
    j = 0
    for h, ss in enumerate(abstract_sents):
        for r in range(len(clean)):
            best = 0.0
            for c in range(j, j + len(ss)):
                lex = len(terms_a[r] & terms_b[c]) / max(1, len(terms_a[r]))
                best = max(best, 0.7 * float(sims[r, c]) + 0.3 * lex)
            out[r, h] = best
        j += len(ss)
    return out, abstract_sents


def ground(text: str, hits: list[Hit], embedder, *, threshold: float = 0.5) -> Grounded:
    """Check an answer: drop invalid markers, score each sentence's support by the papers it cites,
    cite the best-supporting hit for uncited sentences whose support reaches ``threshold``.

    Returns a :class:`Grounded`; ``Citation.support`` is the best support of any sentence citing it.
    """
    text = cit.drop_invalid(text, len(hits))
    sentences = _answer_sentences(text)
    if not sentences or not hits:
        return Grounded(text, [AnswerSentence(s) for s in sentences], [])
    matrix, abstract_sents = support_matrix(sentences, hits, embedder)
    out: list[AnswerSentence] = []
    best_support: dict[int, tuple[float, str]] = {}
    for r, s in enumerate(sentences):
        cited = [n for n in cit.parse(s) if 1 <= n <= len(hits)]
        auto = False
        if not cited:
            h = int(np.argmax(matrix[r]))
            if matrix[r, h] >= threshold:
                cited, auto = [h + 1], True
                s = s.rstrip() + f" [{h + 1}]"
        support = max((float(matrix[r, n - 1]) for n in cited), default=float(matrix[r].max()))
        out.append(AnswerSentence(s, cited, support >= threshold, support, auto))
        for n in cited:
            sc = float(matrix[r, n - 1])
            if sc > best_support.get(n, (-1.0, ""))[0]:
                best_support[n] = (sc, s)
    citations = []
    for n in sorted(best_support, key=lambda n: min(i for i, a in enumerate(out) if n in a.citations)):
        sc, _ = best_support[n]
        hit = hits[n - 1]
        ss = abstract_sents[n - 1]
        evidence = hit.evidence[0] if hit.evidence else (ss[0] if ss else "")
        citations.append(Citation(n, hit.paper, sc >= threshold, round(sc, 4), evidence))
    return Grounded(" ".join(a.text for a in out), out, citations)
