"""Decide when the index does not cover a question ("not in this corpus").

Two signals, both measured against the index itself rather than guessed:

1. **Off-topic**: the best chunk's cosine similarity to the question is below :data:`MIN_DENSE`.
   all-MiniLM-L6-v2 gives cooking, tax or travel questions a best-chunk similarity of about
   0.05-0.25 against ML abstracts, and real questions about a paper 0.35 and up (the distributions
   on ``shared/eval`` are printed by ``paperchat eval``'s refusal figures; the threshold sits in the
   gap).
2. **Unknown name**: the question is about a named thing (a CamelCase word such as
   ``GlimmerRoute``, a capitalised model-like name with digits such as ``Morvant-7B``, or a
   capitalised word inside the sentence such as "the Kestrelformer paper") that occurs nowhere in the indexed papers (no BM25 vocabulary entry). Then
   the similar-looking papers are about something else, and answering from them would invent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rag.types import Hit

if TYPE_CHECKING:
    from rag.backends.seams import Retriever

#: Best-chunk cosine similarity below which no indexed paper is about the question.
MIN_DENSE = 0.30
#: Best-chunk cosine similarity below which a question with a word the index has never seen
#: (:func:`unseen_words`) is refused: "any good sourdough starter hydration tips?" reaches 0.313
#: on the accepted ICLR 2026 papers (through "starter" and "tips"), "papers on astrology based
#: prediction of election outcomes" 0.36, while real questions with a word no abstract uses
#: ("wildfire spread prediction") reach 0.42 and up.
MIN_DENSE_UNSEEN = 0.40
#: Shortest stem counted by :func:`unseen_words`; shorter ones are too often a typo's remains
#: or an abbreviation.
UNSEEN_MIN_CHARS = 5
#: Fewest indexed papers for :func:`unseen_words` to count: in a small index (the bundled
#: 19-paper corpus) most words of a real question are in no abstract, so it says nothing there.
UNSEEN_MIN_PAPERS = 1000

# A name: CamelCase (two capitals inside a word), or a capitalised word carrying a digit / a
# hyphenated capitalised part (Morvant-7B, HelioMorph-X, Velkrin-MoE, QuorraFlow-7).
_NAME = re.compile(r"\b(?:[A-Z][a-z]+[A-Z][A-Za-z]*|[A-Z][a-z]{2,}(?:-[A-Z0-9][A-Za-z0-9]*)+|"
                   r"[A-Z][a-z]+\d+[A-Za-z]*)(?:-[A-Za-z0-9]+)*\b")
# A capitalised word of 4+ letters inside a sentence (not after . ? ! or at the start): a proper name.
_PROPER = re.compile(r"(?<![.?!:]\s)(?<!^)(?<=\s)[A-Z][a-z]{3,}\b")


#: Name-like words that ask for an output or name the venue, not a paper ("BibTeX for
#: StepORLM", "the ICLR entry"): never a missing paper's name.
NOT_PAPER_NAMES = frozenset("bibtex biblatex bib latex tex iclr openreview zotero mendeley "
                            "jabref json csv pdf url doi arxiv".split())


def unknown_names(question: str, retriever: Retriever) -> list[str]:
    """Names in ``question`` (see module doc) whose first word stem is absent from the index
    (words of :data:`NOT_PAPER_NAMES` are never one)."""
    from rag.backends.lexical import query_terms

    vocab = retriever.vocabulary()
    missing = []
    for name in _NAME.findall(question) + _PROPER.findall(question.strip()):
        if name.lower().strip(".,;:!?") in NOT_PAPER_NAMES:
            continue
        head = re.split(r"[-\s]", name)[0]
        terms = query_terms(head)
        if terms and all(t not in vocab for t in terms):
            missing.append(name)
    return missing


def unseen_words(question: str, retriever: Retriever) -> list[str]:
    """Stems of ``question`` (BM25 stems, :func:`rag.backends.lexical.query_terms`) of at least
    :data:`UNSEEN_MIN_CHARS` letters that no indexed paper uses, not even as a prefix of 5+
    letters of the stem ("hallucinaton", a typo, keeps "hallucin" and is seen): "sourdough",
    "hydrat". Digits and names (:func:`unknown_names` decides those) are not counted."""
    from rag.backends.lexical import query_terms

    vocab = retriever.vocabulary()
    out = []
    for t in query_terms(question):
        if len(t) < UNSEEN_MIN_CHARS or not t.isalpha() or t in vocab:
            continue
        if any(t[:n] in vocab for n in range(len(t) - 1, UNSEEN_MIN_CHARS - 1, -1)):
            continue
        out.append(t)
    return out


def names_paper(question: str, hit: Hit) -> bool:
    """True when the question names the hit's paper outright: a name-like word of the question
    (StepORLM, RFTHGS, GRPO: :data:`rag.understand.mentions.NAME`, case and hyphens ignored) occurs in
    its title or abstract, or two or more of the question's content terms (stemmed, without
    words about papers) occur in its title ("mode connectivity", "Never Saddle"). A short
    question that names a paper has a low cosine to its chunks (all-MiniLM-L6-v2 gives "What is
    RFTHGS?" 0.21 on the seed index) although it plainly asks about it."""
    from rag.backends.lexical import query_terms
    from rag.compose.quotes import question_terms
    from rag.understand.mentions import NAME as _NAME
    from rag.understand.mentions import fold_name as fold

    paper = hit.paper
    text = fold(f"{paper.title} {paper.abstract}")
    if any(len(fold(n)) >= 3 and fold(n) in text for n in _NAME.findall(question)):
        return True
    return len(question_terms(question) & set(query_terms(paper.title))) >= 2


def is_out_of_corpus(question: str, hits: list[Hit], retriever: Retriever,
                     top_dense: float | None = None) -> bool:
    """True when no hit is relevant enough to answer from (see the module doc).

    ``top_dense`` is the best chunk cosine similarity of the search (default: the best
    ``Hit.dense`` of ``hits``). A best cosine under :data:`MIN_DENSE` refuses unless the
    question names the top paper outright: by its name (:meth:`rag.retrieve.retriever.Retriever.named`,
    a strong lexical match) or :func:`names_paper`; so does one under :data:`MIN_DENSE_UNSEEN`
    when the question has a word the index never uses (:func:`unseen_words`), in an index of
    at least :data:`UNSEEN_MIN_PAPERS` papers.
    """
    if not hits:
        return True
    best = top_dense if top_dense is not None else max(h.dense for h in hits)
    named = getattr(retriever, "named", None)
    strong = bool(named and hits[0].id in named(question))  # a lexical match on its name
    if best < MIN_DENSE and not strong and not names_paper(question, hits[0]):
        return True
    if best < MIN_DENSE_UNSEEN and not strong and len(retriever.papers) >= UNSEEN_MIN_PAPERS \
            and unseen_words(question, retriever) and not names_paper(question, hits[0]):
        return True  # its own words are not the index's, and the nearest chunk is far
    return bool(unknown_names(question, retriever))


#: Baseline refusal thresholds (top BM25 score, top cosine) for ``paperchat eval``'s baselines.
BASELINE_MIN = {"bm25": 5.0, "dense": MIN_DENSE}


def baseline_refuses(system: str, scores: list[float]) -> bool:
    """Refusal rule of a single-channel baseline: its best score under BASELINE_MIN[system]."""
    return not scores or scores[0] < BASELINE_MIN[system]
