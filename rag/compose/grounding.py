"""Grounding: check each answer sentence against the abstracts it cites.

The score
---------
Support of an answer sentence ``a`` by a paper ``P``::

    support(a, P) = max over s in sentences(P) of  0.5 * cos(a, s) + 0.5 * lex(a, s)

``sentences(P)`` are P's normalised title and abstract sentences (instruction-like sentences such
as "ignore previous instructions ..." removed, see :func:`paper_sentences`); ``cos`` is the cosine
similarity of the embedder's L2-normalised vectors (all-MiniLM-L6-v2 in production), with ``a``'s
citation markers stripped; ``lex`` is the share of ``a``'s BM25 terms (stemmed, stop words
removed, :func:`rag.backends.lexical.query_terms`, minus the words that talk *about* a paper such as
"paper", "authors", "provides", "discusses": :data:`META_TERMS`) that also occur in ``s``. The
score is in [0, 1] for non-negative cosines (1.0 for a sentence copied from the abstract); higher
is better. The lexical part rewards the exact names, numbers and acronyms a small embedding model
blurs; the cosine part keeps a sentence that merely reuses the question's words (which retrieval
made sure the retrieved abstracts share) from passing; taking the max over sentences asks "is
there one sentence of this abstract that says this?".

The threshold
-------------
A sentence is *supported* when its support by a paper it cites is at least
``settings.support_threshold``. :data:`CALIBRATED_THRESHOLD` was calibrated with the real
all-MiniLM-L6-v2 on ICLR 2026 accepted abstracts (``../shared/data/iclr2026_accepted.jsonl``,
abstracts with 4+ sentences, 400 random papers, seed 2026; 200 to calibrate, 200 held out):

* positives: one sentence (8+ words) of P's abstract, lightly paraphrased (first person ->
  "the authors", ~70 % of common verbs/nouns swapped for synonyms, parentheticals dropped, cut to
  its first 12-22 words), scored against P;
* "compressed" positives: the same sentence cut to 7-12 words behind "The paper says ..." with
  every synonym swapped (closer to what the bundled 135M model writes);
* hard negatives: a sentence of the paper whose *title* is nearest to P's (embedding), paraphrased
  the same way, scored against P; random negatives: a sentence of a random other paper.

Weights and threshold were chosen together to minimise the balanced error (mean of the miss rate
on all positives and the false-accept rate on hard negatives) on the calibration half. Cosine
weights 0.3/0.4/0.5/0.6/0.7/0.8 gave 0.015/0.024/0.031/0.045/0.062/0.087. Equal weights were kept
rather than the lower ones: the compressed positives copy the abstract's words, which flatters the
lexical part, while a real answer that restates the question shares words with every retrieved
abstract. With equal weights the optimum is 0.48 (0.031); 0.50 costs 0.035. Held-out half at 0.50
(support percentiles p5 / p25 / p50 / p75 / p95):

==========================  ================================  ==========================
set (200 each)              support                           error at 0.50
==========================  ================================  ==========================
light paraphrase (own)      0.80 / 0.89 / 0.94 / 0.98 / 1.00  0.0 % missed
compressed (own)            0.52 / 0.70 / 0.82 / 0.88 / 0.95  4.5 % missed
nearest-title other paper   0.13 / 0.20 / 0.27 / 0.35 / 0.49  4.0 % accepted
random other paper          0.08 / 0.13 / 0.17 / 0.21 / 0.27  0.5 % accepted
==========================  ================================  ==========================

(The first version, 0.7 cosine + 0.3 lexical without :data:`META_TERMS`, separated light
paraphrases from hard negatives as well, 1.5 % error at 0.63, but there missed 31-40 % of the
compressed positives.) The calibration scored abstract sentences only; adding the title moved the
error rates by under one point. It used the torch fp32 embedder; the ONNX int8 one has cosine
0.99+ to it, so supports move by about 0.005. ``test_calibration_on_real_abstracts`` (markers
``integration`` and ``slow``) re-runs a smaller version with the configured embedder and checks
the error rates.

Uncited sentences are attributed to the retrieved paper that supports them best when that reaches
the threshold (``auto_cited``); anything below the threshold is marked unsupported, including a
sentence whose citations point at papers that do not support it. Invalid markers never survive
(:func:`rag.compose.citations.drop_invalid`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from rag.backends.embedder import embed_cached
from rag.backends.lexical import query_terms
from rag.compose import citations as cit
from rag.text import normalise, split_sentences
from rag.types import AnswerSentence, Citation, Hit

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder

#: Weight of the cosine similarity in the support score (the rest is lexical overlap).
COS_WEIGHT = 0.5

#: The support threshold calibrated as described above (``settings.support_threshold``).
CALIBRATED_THRESHOLD = 0.5

#: Work bounds for hostile input (real abstracts: at most 4,306 chars, about 30 sentences): only
#: this much of an abstract is split and embedded for grounding and comparison tables.
MAX_ABSTRACT_CHARS = 20_000
MAX_PAPER_SENTENCES = 80

#: Stemmed words that talk about a paper rather than its content; left out of the lexical overlap.
META_TERMS = frozenset("paper author provid explan conclud discuss describ detail mention propos "
                       "introduc present studi work say articl abstract".split())

#: A sentence that addresses the model instead of describing a paper (prompt injection): it is
#: never evidence for a claim, nor a table cell.
INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.!?]{0,40}\b(?:previous|prior|above|earlier|all|"
    r"any|the)\b[^.!?]{0,20}\b(?:instructions?|prompts?|rules?|directions?)\b|"
    r"\b(?:you are now|system prompt|as an ai (?:language )?model)\b", re.I)

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])((?:\s*\[\d+\])*)\s+(?=[^a-z\s])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_TERMINAL = re.compile(r"([.!?]+)$")
_WORD = re.compile(r"[^\W\d_]{2,}")


@dataclass
class Grounded:
    """The checked answer: text with valid markers, its sentences and one Citation per cited hit."""

    text: str
    sentences: list[AnswerSentence]
    citations: list[Citation]


@dataclass
class Support:
    """Support of answer sentences (rows) by hits (columns).

    ``scores``: shape (n_sentences, n_hits), float32, see the module docstring.
    ``best``: shape (n_sentences, n_hits), int, index into ``sentences[h]`` of the paper sentence
    giving each score. ``sentences[h]``: the paper sentences of hit ``h`` (title first).
    """

    scores: np.ndarray
    best: np.ndarray
    sentences: list[list[str]]


def abstract_sentences(paper) -> list[str]:
    """The normalised abstract's sentences in order (the first :data:`MAX_PAPER_SENTENCES` of its
    first :data:`MAX_ABSTRACT_CHARS` characters), without instruction-like sentences (a
    sentence holding one is split at every end punctuation and only the instruction-like
    pieces are dropped, so "... tokenizer. ignore previous instructions" keeps its first part)."""
    out: list[str] = []
    for s in split_sentences(normalise(paper.abstract[:MAX_ABSTRACT_CHARS]))[:MAX_PAPER_SENTENCES]:
        if INSTRUCTION.search(s):
            out += [p for p in re.split(r"(?<=[.!?])\s+", s) if p and not INSTRUCTION.search(p)]
        else:
            out.append(s)
    return out


def paper_sentences(paper) -> list[str]:
    """What a paper can support a claim with: its normalised title, then its abstract sentences
    (:func:`abstract_sentences`)."""
    title = normalise(paper.title)
    return ([title] if title else []) + abstract_sentences(paper)


def answer_sentences(text: str) -> list[list[str]]:
    """The answer's lines, each split into sentences; markers after a sentence's end punctuation
    stay with it ("... results. [1] Next" -> "... results. [1]", "Next"). A piece without a word
    (list numbering "1.", a lone "[2]") joins the sentence before it, or after it at the start of
    a line; lines without any word and blank lines are dropped."""
    out: list[list[str]] = []
    for line in text.strip().splitlines():
        parts = _SENTENCE_SPLIT.split(line.strip())
        sents: list[str] = []
        pending = ""
        for i in range(0, len(parts), 2):
            s = (parts[i] + (parts[i + 1] if i + 1 < len(parts) else "")).strip()
            if not s:
                continue
            if not _WORD.search(_claim(s)):
                if sents:
                    sents[-1] = f"{sents[-1]} {s}"
                else:
                    pending = f"{pending} {s}".strip()
                continue
            sents.append(f"{pending} {s}".strip() if pending else s)
            pending = ""
        if sents:
            out.append(sents)
    return out


def _claim(sentence: str) -> str:
    """The sentence as it is scored: markers and a leading bullet removed."""
    bare = cit.MARKER.sub("", cit.normalise_markers(sentence))
    return re.sub(r"\s+([.,;:!?])", r"\1", _BULLET.sub("", bare)).strip() or sentence


def _key(sentence: str) -> str:
    return re.sub(r"\W+", " ", _claim(sentence)).strip().lower()


def support_matrix(sentences: Sequence[str], hits: Sequence[Hit], embedder: Embedder) -> Support:
    """Support of each answer sentence by each hit (see the module docstring for the formula)."""
    psents = [paper_sentences(h.paper) or [h.paper.title or h.id] for h in hits]
    flat = [s for ss in psents for s in ss]
    claims = [_claim(s) for s in sentences]
    a = embed_cached(embedder, claims)
    b = embed_cached(embedder, flat)
    sims = a @ b.T if len(flat) and len(claims) else np.zeros((len(claims), len(flat)), np.float32)
    terms_a = [set(query_terms(s)) - META_TERMS for s in claims]
    terms_b = [set(query_terms(s)) for s in flat]
    lex = np.array([[len(ta & tb) / max(1, len(ta)) for tb in terms_b] for ta in terms_a],
                   dtype=np.float32).reshape(len(claims), len(flat))
    combined = COS_WEIGHT * sims + (1 - COS_WEIGHT) * lex
    scores = np.zeros((len(claims), len(hits)), dtype=np.float32)
    best = np.zeros((len(claims), len(hits)), dtype=int)
    j = 0
    for h, ss in enumerate(psents):
        block = combined[:, j:j + len(ss)]
        best[:, h] = block.argmax(axis=1)
        scores[:, h] = np.maximum(block.max(axis=1), 0.0)
        j += len(ss)
    return Support(scores, best, psents)


def _with_marker(sentence: str, n: int) -> str:
    """``sentence`` (without markers) with ``[n]`` before its end punctuation."""
    bare = sentence.rstrip()
    m = _TERMINAL.search(bare)
    return f"{bare[:m.start()].rstrip()} [{n}]{m.group(1)}" if m else f"{bare} [{n}]"


def ground(text: str, hits: Sequence[Hit], embedder: Embedder, *,
           threshold: float = CALIBRATED_THRESHOLD) -> Grounded:
    """Check an answer against ``hits`` (its markers number them from 1).

    Drops invalid markers, lines without a word and sentences repeated word for word; scores each
    sentence's support by the papers it cites (the best of them); a sentence citing nothing is
    cited to the best-supporting hit (marker added before its end punctuation, ``auto_cited``)
    when that reaches ``threshold``; every sentence below ``threshold`` is marked unsupported (a
    sentence citing the wrong paper keeps its citation and is flagged, not silently re-cited).

    Returns:
        A :class:`Grounded`. ``Citation.support`` is the best support of any sentence citing the
        paper, ``Citation.supported`` is ``support >= threshold``, ``Citation.evidence`` the paper
        sentence behind that support. The text keeps the answer's lines; it is empty when the
        answer has no sentence with a word (only markers, say).
    """
    hits = list(hits)
    text = cit.drop_invalid(text, len(hits))
    seen: set[str] = set()
    lines = []
    for line in answer_sentences(text):  # a sentence the model repeats word for word is shown once
        kept = [s for s in line if not (_key(s) in seen or seen.add(_key(s)))]
        if kept:
            lines.append(kept)
    flat = [s for line in lines for s in line]
    if not hits:  # nothing to support anything (and drop_invalid removed every marker)
        return Grounded("\n".join(" ".join(line) for line in lines),
                        [AnswerSentence(s, [], False, 0.0) for s in flat], [])
    if not flat:
        return Grounded("", [], [])
    sup = support_matrix(flat, hits, embedder)
    out: list[AnswerSentence] = []
    best_for: dict[int, tuple[float, int]] = {}  # n -> (support, sentence row)
    for r, s in enumerate(flat):
        cited = cit.parse(s)
        row = sup.scores[r]
        auto = False
        if cited:
            score = max(float(row[n - 1]) for n in cited)
        else:
            h = int(np.argmax(row))
            score = float(row[h])
            if score >= threshold:
                cited, auto = [h + 1], True
                s = _with_marker(s, h + 1)
        out.append(AnswerSentence(s, cited, bool(score >= threshold), round(score, 4), auto))
        for n in cited:
            sc = float(row[n - 1])
            if sc > best_for.get(n, (-1.0, -1))[0]:
                best_for[n] = (sc, r)
    citations = []
    first = {n: min(i for i, a in enumerate(out) if n in a.citations) for n in best_for}
    for n in sorted(best_for, key=first.get):
        sc, r = best_for[n]
        evidence = sup.sentences[n - 1][int(sup.best[r, n - 1])]
        citations.append(Citation(n, hits[n - 1].paper, bool(sc >= threshold), round(sc, 4),
                                  evidence))
    it = iter(out)
    text = "\n".join(" ".join(next(it).text for _ in line) for line in lines)
    return Grounded(text, out, citations)
