"""Evidence-first answers: sentences of the cited abstracts, quoted exactly, joined by templates.

The bundled 135M model cannot write a faithful answer (it echoes its prompt and cites the wrong
paper), so the answer a researcher reads first is built from what retrieval found. Every answer
opens with a one-line **direct answer** made from retrieval alone (so it is on screen before any
model call), then a body per answer kind (the plan's operation, :mod:`rag.chat.operations`):

* ``lookup`` ("which paper ...", a name, a description): the best paper, why (its sentences that
  best match the question), then the other relevant papers, one line each;
* ``describe`` ("what does X propose / how does X work / what results"): the 2-3 sentences of the
  paper that answer the question, in abstract order;
* ``survey`` ("which papers / methods on X", "summarize"): one line per relevant paper, grouped
  when papers share a keyword (else an area);
* ``compare``: the extractive table (:mod:`rag.compose.extractive` builds on :mod:`rag.compose.compare`), then the
  differences quoted from the table's "what sets it apart" cells;
* ``followup``: the sentences of the paper(s) under discussion that answer the new question
  (after a comparison, both papers);
* ``count`` ("how many papers ..."), ``authors`` (when the list has none), ``number`` (a figure
  the abstract does not give): a plain statement that the abstracts cannot answer, never a guess.

Sentence relevance to the question (used to pick quotes)::

    relevance(q, s) = 0.5 * cos(q, s) + 0.5 * |terms(q) & terms(s)| / |terms(q)|

with the embedder's cosine and the question's BM25 terms minus words that talk about papers
(:data:`rag.compose.grounding.META_TERMS`): the same two signals, weighted the same way, as the grounding
score (:mod:`rag.compose.grounding`), pointed from the question to the sentence.

Quotes are exact: the sentence as :func:`rag.compose.grounding.abstract_sentences` cut it from the
normalised abstract, with citation-like brackets defused (``[9]`` -> ``(9)``) so they cannot be
read as our markers. Instruction-like sentences and sentences holding prompt scaffolding are
never quoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from rag.compose import citations as cit
from rag.compose.compare import BOILERPLATE
from rag.compose.grounding import META_TERMS, abstract_sentences, embed_cached, support_matrix
from rag.compose.guards import leak_reason
from rag.backends.lexical import query_terms
from rag.text import normalise
from rag.types import AnswerSentence, Hit

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder

#: Answer kinds composed here (:func:`compose`).
KINDS = ("compare", "followup", "count", "authors", "number", "survey", "describe", "lookup")

#: Weight of the cosine in :func:`relevance` (the rest is the question-term overlap).
COS_WEIGHT = 0.5
#: Quotes of the best paper (lookup), of a described paper, and of each paper under discussion.
LOOKUP_QUOTES, DESCRIBE_QUOTES, FOLLOWUP_QUOTES = 2, 3, 2
#: A second or third quote of a paper must reach this share of the paper's best relevance.
QUOTE_RELATIVE = 0.8
#: Added to the relevance of a sentence that states the paper's contribution ("we propose",
#: "our method", "in this paper": the strong cues of the table's Approach row, rag.compose.compare) when
#: picking quotes for lookups and descriptions: "the best paper and why, in its own words" should
#: say what the paper does, not only its motivation. 0.15 is about the gap between a paper's
#: motivation sentence and its approach sentence on the seed questions.
APPROACH_BONUS = 0.15
#: Taken off a background sentence (the abstract's first sentence, or one with the table's
#: strong Problem cues: "however", "existing", "challenge" ...) that states no contribution, in
#: the same lookups and descriptions: it says what others do, not why this paper matches.
BACKGROUND_PENALTY = 0.1
#: An "also relevant" paper needs a best sentence of at least this relevance, or a best-chunk
#: cosine (``Hit.dense``) of at least :data:`rag.compose.refusal.MIN_DENSE`.
MIN_ITEM_RELEVANCE = 0.35

#: Stemmed question words too generic to expect in the answering sentence ("what results does it
#: report?" is answered by a results sentence that need not say "result" or "report").
GENERIC_TERMS = frozenset("result report show find work method approach perform achiev contribut "
                          "use evalu experi propos introduc main key idea".split())
#: A figure as results state them: a percentage, a factor (3x, 2.5×), points, or a decimal.
_FIGURE = re.compile(r"\d+(?:\.\d+)?\s?(?:%|x\b|×|-?fold\b|points?\b|pp\b)|\d+\.\d+|"
                     r"\b\d+\s?(?:ms|s|seconds|hours|GB|MB|tokens)\b")
#: Relevance taken off a boilerplate sentence (:data:`rag.compose.compare.BOILERPLATE`: code release,
#: links), so it is quoted only when nothing else is left.
BOILERPLATE_PENALTY = 0.3
_QUESTION_WORDS = frozenset("which what how does do did papers paper work works method methods "
                            "approach approaches propos who whom whose index corpus list".split())


@dataclass
class Candidate:
    """An abstract sentence that may be quoted: hit number ``n`` (1-based), the exact sentence
    (``text``, brackets defused), its position in the abstract (``pos``) and its relevance to
    the question (``score``, see the module docstring)."""

    n: int
    text: str
    pos: int
    score: float


def question_terms(question: str) -> set[str]:
    """The question's stemmed BM25 terms without words about papers or questions."""
    return set(query_terms(question)) - META_TERMS - _QUESTION_WORDS


def quotable(paper) -> list[str]:
    """The paper's abstract sentences that may be quoted, in abstract order, brackets defused
    (instruction-like sentences and prompt scaffolding left out)."""
    return [cit.defuse(s) for s in abstract_sentences(paper) if not leak_reason(s)]


def candidates(question: str, hits: Sequence[Hit], embedder: Embedder,
               numbers: Sequence[int] | None = None, *, approach_bonus: float = 0.0,
               background_penalty: float = 0.0, results_bonus: float = 0.0,
               aspect: str = "") -> dict[int, list[Candidate]]:
    """Every quotable sentence of the hits numbered ``numbers`` (default all), scored by
    :func:`relevance` (plus ``approach_bonus`` for contribution sentences, minus
    ``background_penalty`` for background ones: :data:`APPROACH_BONUS`,
    :data:`BACKGROUND_PENALTY`; ``results_bonus`` for sentences with the table's strong results
    cues, when a follow-up asks for results; :data:`APPROACH_BONUS` for sentences that play the
    part of ``aspect`` limitations, datasets or metrics, :func:`rag.compose.aspects.role_score`), best
    first per paper. Keys are hit numbers (1-based)."""
    from rag.compose.compare import _CUES

    numbers = list(numbers) if numbers is not None else list(range(1, len(hits) + 1))
    per = {n: quotable(hits[n - 1].paper) for n in numbers}
    flat = [s for n in numbers for s in per[n]]
    scores = relevance(question, flat, embedder)
    scores = scores - np.array([BOILERPLATE_PENALTY if BOILERPLATE.search(s) else 0.0
                                for s in flat], dtype=np.float32)
    strong = _CUES["Approach"][0][0]
    if approach_bonus:
        scores = scores + np.array([approach_bonus if strong.search(s) else 0.0 for s in flat],
                                   dtype=np.float32)
    if results_bonus:
        results = _CUES["Evidence / results"][0][0]
        scores = scores + np.array([results_bonus if results.search(s) else 0.0 for s in flat],
                                   dtype=np.float32)
    if aspect in ("limitations", "datasets", "metrics"):
        from rag.compose.roles import MIN_ROLE, role_score

        scores = scores + np.array([APPROACH_BONUS if role_score(aspect, s, 0.5) >= MIN_ROLE
                                    else 0.0 for s in flat], dtype=np.float32)
    if background_penalty:
        problem = _CUES["Problem"][0][0]
        first = {sum(len(per[m]) for m in numbers[:i]) for i in range(len(numbers))}
        scores = scores - np.array([background_penalty if (j in first or problem.search(s))
                                    and not strong.search(s) else 0.0
                                    for j, s in enumerate(flat)], dtype=np.float32)
    out: dict[int, list[Candidate]] = {}
    i = 0
    for n in numbers:
        ss = per[n]
        cands = [Candidate(n, s, p, float(scores[i + p])) for p, s in enumerate(ss)]
        out[n] = sorted(cands, key=lambda c: (-c.score, c.pos))
        i += len(ss)
    return out


def relevance(question: str, sentences: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Relevance of each sentence to the question, shape (len(sentences),), float32 in [0, 1]
    for non-negative cosines (formula in the module docstring)."""
    if not sentences:
        return np.zeros(0, dtype=np.float32)
    q = embed_cached(embedder, [normalise(question)])[0]
    vecs = embed_cached(embedder, list(sentences))
    cos = vecs @ q
    qt = question_terms(question)
    lex = np.array([len(qt & set(query_terms(s))) / max(1, len(qt)) for s in sentences],
                   dtype=np.float32)
    return np.maximum(COS_WEIGHT * cos + (1 - COS_WEIGHT) * lex, 0.0).astype(np.float32)


def best_quotes(cands: Sequence[Candidate], k: int) -> list[Candidate]:
    """Up to ``k`` of a paper's candidates: its best, then others reaching
    :data:`QUOTE_RELATIVE` of the best score; returned in abstract order."""
    if not cands:
        return []
    top = cands[0].score
    chosen = [cands[0]] + [c for c in cands[1:k] if c.score >= QUOTE_RELATIVE * top]
    return sorted(chosen, key=lambda c: c.pos)


def title(hit: Hit) -> str:
    """The paper's title as shown in answers: normalised (LaTeX -> Unicode), brackets defused."""
    return cit.defuse(normalise(hit.paper.title)) or hit.id


# -- sentences ------------------------------------------------------------------------------------
def direct(text: str, numbers: Sequence[int]) -> AnswerSentence:
    """The one-line direct answer (template text around titles, citing ``numbers``)."""
    return AnswerSentence(text, list(numbers), kind="direct")


def quote(c: Candidate) -> AnswerSentence:
    """A quoted abstract sentence: ``“sentence” [n]``."""
    return AnswerSentence(f"“{c.text}” [{c.n}]", [c.n], kind="quote", quote=c.text)


def item(hit: Hit, n: int, c: Candidate | None, *, with_title: bool = True) -> AnswerSentence:
    """A list line: the paper's title (unless ``with_title`` is False: the line names the paper
    by its marker alone), its marker and (when given) one quoted sentence."""
    text = (f"{title(hit)} [{n}]" if with_title else f"[{n}]") + (f": “{c.text}”" if c else "")
    return AnswerSentence(text, [n], kind="item", quote=c.text if c else "")


def heading(text: str) -> AnswerSentence:
    """Template text that makes no claim ("Also relevant:")."""
    return AnswerSentence(text, [], kind="heading", support=1.0)


def note(text: str, numbers: Sequence[int] = ()) -> AnswerSentence:
    """A plain statement of what the abstracts cannot say (no claim about a paper's content)."""
    return AnswerSentence(text, list(numbers), kind="note", support=1.0)


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def relevant_others(hits: Sequence[Hit], cands: dict[int, list[Candidate]],
                    skip: set[int], min_dense: float) -> list[int]:
    """Hit numbers (not in ``skip``) worth listing as "also relevant": a best sentence of
    relevance >= :data:`MIN_ITEM_RELEVANCE` or a best-chunk cosine >= ``min_dense``."""
    out = []
    for n, hit in enumerate(hits, start=1):
        if n in skip:
            continue
        best = cands.get(n, [])
        if (best and best[0].score >= MIN_ITEM_RELEVANCE) or hit.dense >= min_dense:
            out.append(n)
    return out


def group_items(hits: Sequence[Hit], numbers: Sequence[int]) -> list[tuple[str, list[int]]]:
    """Hit numbers grouped by a shared keyword (the most shared first), then by a shared primary
    area; groups in the order of their best paper, the rest last under ``""``. Groups keep
    retrieval order inside; a group needs 2+ papers."""
    left = list(numbers)
    groups: list[tuple[str, list[int]]] = []
    for field in ("keywords", "primary_area"):
        while True:
            counts: dict[str, list[int]] = {}
            for n in left:
                p = hits[n - 1].paper
                labels = p.keywords if field == "keywords" else [p.primary_area]
                for label in dict.fromkeys(normalise(x).lower() for x in labels if x and x.strip()):
                    counts.setdefault(label, []).append(n)
            best = max(counts.items(), key=lambda kv: (len(kv[1]), -min(kv[1])), default=None)
            if not best or len(best[1]) < 2:
                break
            same = next((g for g in groups if g[0] == best[0]), None)
            if same is not None:  # a keyword that is also an area's name: one group
                same[1].extend(best[1])
            else:
                groups.append((best[0], list(best[1])))
            left = [n for n in left if n not in best[1]]
    groups.sort(key=lambda g: min(g[1]))
    return groups + ([("", left)] if left else [])


def compose(kind: str, question: str, hits: Sequence[Hit], embedder: Embedder, *,
            focus: Sequence[int] = (1,), comparison=None, min_dense: float = 0.30,
            aspect: str = "", figures: bool = False) -> list[AnswerSentence]:
    """The extractive answer's sentences for an answer of type ``kind`` (see :data:`KINDS`).

    Args:
        question: the plan's query (:attr:`rag.understand.plan.Plan.query`: the turn's own words less its
            filter words, not a standalone rewrite: a follow-up's added titles would make every
            sentence of the discussed papers look relevant); it ranks the sentences.
        hits: the answer's papers; markers number them from 1.
        focus: hit numbers of the papers under discussion (follow-ups; compared columns).
        comparison: a :class:`rag.compose.compare.Comparison` for ``compare``.
        min_dense: best-chunk cosine that makes a paper "also relevant" on its own
            (:data:`rag.compose.refusal.MIN_DENSE`).
        aspect: the part of the papers asked about (:data:`rag.understand.plan.ASPECTS`): its sentences
            are preferred (an approach, results, limitation, dataset or metric sentence).
        figures: the turn asks for a figure (a follow-up quotes sentences with numbers).
    Returns:
        Sentences, the direct answer first. Supports are not filled in (:func:`check` does).
    """
    return without_repeats(_compose(kind, question, hits, embedder, focus=focus,
                                    comparison=comparison, min_dense=min_dense, aspect=aspect,
                                    figures=figures))


def without_repeats(sentences: list[AnswerSentence], n: int = 4, max_count: int = 2
                    ) -> list[AnswerSentence]:
    """``sentences`` without the quotes and list lines that would make a word ``n``-gram occur
    more than ``max_count`` times in the answer (an abstract repeating a formula or a phrase);
    the direct line, notes and headings always stay, and so does a paper's only quote. A model's
    sentence (``claim``) that repeats what the answer already says is dropped."""
    from rag.compose.guards import answer_max_repeat

    kept: list[AnswerSentence] = []
    for s in sentences:
        if s.kind in ("quote", "item", "claim"):
            if answer_max_repeat(kept + [s], n) > max_count and s.kind == "item" and s.quote:
                # another paper's line: keep its title and marker, without the repeating quote
                s = AnswerSentence(s.text.split(": “")[0], list(s.citations), kind="item")
            if answer_max_repeat(kept + [s], n) > max_count and (s.kind == "claim" or any(
                    x.citations == s.citations and x.kind == s.kind for x in kept)):
                continue
        kept.append(s)
    return kept


def _compose(kind, question, hits, embedder: Embedder, *, focus, comparison, min_dense,
             aspect: str = "", figures: bool = False):
    if not hits:
        return []
    if kind == "compare" and comparison is not None:
        out = _compare(comparison)
        cols = {c.n for c in comparison.columns}
        cands = candidates(question, hits, embedder,
                           [n for n in range(1, len(hits) + 1) if n not in cols])
        others = relevant_others(hits, cands, cols, min_dense)
        if others:  # a side's description may fit another paper as well: show them apart
            out.append(heading("Other papers the search found:"))
            out += [item(hits[n - 1], n, (cands[n] or [None])[0]) for n in others]
        return out
    if kind == "followup":
        numbers = [n for n in focus if 1 <= n <= len(hits)] or [1]
        cands = candidates(question, hits, embedder, numbers,
                           approach_bonus=APPROACH_BONUS if aspect == "approaches" else 0.0,
                           results_bonus=APPROACH_BONUS if aspect == "results" else 0.0,
                           aspect=aspect)
        return _followup(question, hits, numbers, cands, figures, aspect)
    # a description of the contribution is wanted for "which paper ..." and "what does X
    # propose"; "what is the update time of X" wants the sentence that says it
    pointed = kind == "lookup" or aspect == "approaches"
    cands = candidates(question, hits, embedder,
                       approach_bonus=APPROACH_BONUS if pointed else 0.0,
                       background_penalty=BACKGROUND_PENALTY if pointed else 0.0,
                       results_bonus=APPROACH_BONUS if aspect == "results" else 0.0,
                       aspect=aspect)
    top = hits[0]
    if kind == "count":
        return _count(hits, cands, min_dense)
    if kind == "authors":
        return _authors(hits)
    if kind == "number":
        return _number(hits, cands)
    if kind == "survey":
        return _survey(hits, cands, min_dense)
    if kind == "describe":
        quotes = best_quotes(cands[1], DESCRIBE_QUOTES)
        return [direct(f"From the abstract of {title(top)} [1]:", [1])] + [quote(c) for c in quotes]
    # lookup
    out = [direct(f"The closest match is {title(top)} [1].", [1])]
    out += [quote(c) for c in best_quotes(cands[1], LOOKUP_QUOTES)]
    others = relevant_others(hits, cands, {1}, min_dense)
    if others:
        out.append(heading("Also relevant:"))
        out += [item(hits[n - 1], n, (cands[n] or [None])[0]) for n in others]
    return out


def _survey(hits, cands, min_dense) -> list[AnswerSentence]:
    numbers = [1] + relevant_others(hits, cands, {1}, min_dense)
    groups = group_items(hits, numbers)
    grouped = len(groups) > 1 or groups[0][0] != ""
    out = [direct("The most relevant papers found, " +
                  ("grouped by a keyword or area they share:" if grouped else "best first:"),
                  numbers)]
    for label, ns in groups:
        if grouped:
            out.append(heading(f"{label}:" if label else "Other papers:"))
        out += [item(hits[n - 1], n, (cands[n] or [None])[0]) for n in ns]
    return out


#: Stemmed words that ask for a paper to be described, or point at it, without asking about
#: anything in it ("tell me more about the fourth one", "what is it about?", "explain [2]").
_DESCRIBE_ONLY = frozenset("tell me more about explain describ summar summari summaris overview "
                           "tldr tl dr gist idea say elabor detail deeper expand go dig one your "
                           "list ok okai pleas pl thank first second third fourth fifth sixth "
                           "seventh eighth ninth tenth last latter former top bottom".split())


def summary_quotes(cands: Sequence[Candidate]) -> list[Candidate]:
    """A paper described when nothing in particular is asked: its approach sentence and its
    results sentence (:func:`rag.compose.roles.role_score`, the comparison table's cues), in abstract
    order; its best quotes when it has neither."""
    from rag.compose.roles import MIN_ROLE, role_score

    k = max(1, len(cands) - 1)
    picked = []
    for aspect in ("approaches", "results"):
        scored = [(role_score(aspect, c.text, c.pos / k), -c.pos, c) for c in cands
                  if c not in picked]
        best = max(scored, key=lambda x: x[:2], default=None)
        if best is not None and best[0] >= MIN_ROLE:
            picked.append(best[2])
        elif aspect == "approaches":  # no method cue ("We address this question by studying
            # ..." in a theory paper): the authors' first own sentence says what they did
            own = [c for c in cands if _OWN_WORK.match(c.text)]
            if own:
                picked.append(own[0])
    return sorted(picked, key=lambda c: c.pos) or best_quotes(cands, FOLLOWUP_QUOTES)


#: A sentence in which the authors speak of their own work ("We study ...", "In this paper, ...").
_OWN_WORK = re.compile(r"^\W*(?:(?:here|in\s+this\s+(?:paper|work)|to\s+this\s+end|in\s+"
                       r"response|therefore|thus|instead)\s*,?\s*)?(?:we|our|this\s+(?:paper|"
                       r"work))\b", re.I)


def _followup(question, hits, numbers, cands, wants_number: bool,
              aspect: str = "") -> list[AnswerSentence]:
    """What the abstracts of the papers under discussion say about ``question``: their best
    quotes, or, for an aspect with a role (datasets, metrics, limitations:
    :func:`rag.compose.roles.role_score`), the sentences that play it first ("which datasets is it
    evaluated on?" quotes the sentence naming nuScenes and Waymo); when the question asks
    about nothing in particular ("tell me more about the fourth one"), each paper's approach
    and results (:func:`summary_quotes`)."""
    from rag.compose.roles import MIN_ROLE, role_score

    if aspect in ("limitations", "datasets", "metrics"):
        cands = dict(cands)
        for n in numbers:
            k = max(1, len(cands[n]) - 1)
            playing = [c for c in cands[n] if role_score(aspect, c.text, c.pos / k) >= MIN_ROLE]
            cands[n] = playing + [c for c in cands[n] if c not in playing]
    names = [f"{title(hits[n - 1])} [{n}]" for n in numbers]
    whose = "abstract of " if len(numbers) == 1 else "abstracts of "
    qt = question_terms(question) - GENERIC_TERMS
    generic = not aspect and not wants_number and not (qt - _DESCRIBE_ONLY)
    out = [direct(f"What {_and(names)} {'does' if len(numbers) == 1 else 'do'}, from "
                  f"{'its abstract' if len(numbers) == 1 else 'their abstracts'}:" if generic
                  else f"What the {whose}{_and(names)} {'says' if len(numbers) == 1 else 'say'} "
                  "about this:", numbers)]
    for n in numbers:
        quotes = summary_quotes(cands[n]) if generic else best_quotes(cands[n], FOLLOWUP_QUOTES)
        if not quotes:
            out.append(note(f"The abstract of [{n}] has no sentence to quote.", [n]))
            continue
        figures = [c for c in cands[n] if _FIGURE.search(c.text)]
        if wants_number and figures:
            out += [quote(c) for c in best_quotes(figures, FOLLOWUP_QUOTES)]
            continue
        if wants_number:
            out.append(note(f"The abstract of [{n}] gives no figure for this; the closest it "
                            "says:", [n]))
        elif qt and not generic and not any(qt & set(query_terms(c.text)) for c in quotes):
            out.append(note(f"The abstract of [{n}] does not say this directly; the closest it "
                            "says:", [n]))
        out += [quote(c) for c in quotes]
    return out


def _count(hits, cands, min_dense) -> list[AnswerSentence]:
    numbers = [1] + relevant_others(hits, cands, {1}, min_dense)
    out = [note("Counting papers is not something the abstracts can answer, so no number is "
                "given here."),
           heading("The most relevant papers found:")]
    return out + [item(hits[n - 1], n, None) for n in numbers]


def _authors(hits) -> list[AnswerSentence]:
    top = hits[0]
    if top.paper.authors:
        names = _and([normalise(a) for a in top.paper.authors])
        return [AnswerSentence(f"The authors of {title(top)} [1] are {names}.", [1],
                               kind="metadata", support=1.0)]
    return [note("This paper list has no author names (ICLR 2026 submissions were anonymous when "
                 "the list was made), so the authors cannot be given."),
            direct(f"The closest match is {title(top)} [1].", [1])]


def _number(hits, cands) -> list[AnswerSentence]:
    top = hits[0]
    with_digits = [c for c in cands[1] if _FIGURE.search(c.text)]
    best = cands[1][0] if cands[1] else None
    if with_digits and best is not None and with_digits[0].score >= QUOTE_RELATIVE * best.score:
        return [direct(f"From the abstract of {title(top)} [1]:", [1])] + \
            [quote(c) for c in best_quotes(with_digits, 2)]
    out = [note(f"The abstract of {title(top)} [1] gives no figure for this; the closest it "
                "says:", [1])]
    return out + ([quote(best)] if best else [])


def _compare(table) -> list[AnswerSentence]:
    from rag.compose.compare import ROWS

    cols = table.columns
    names = [f"{title(c.hit)} [{c.n}]" for c in cols]
    out = [direct(f"{_and(names)}, side by side from their abstracts (table below); where they "
                  "differ:", [c.n for c in cols])]
    for c in cols:
        cell = c.cells.get(ROWS[3]) or c.cells.get(ROWS[1])
        if cell:
            cand = Candidate(c.n, cit.defuse(cell), 0, 1.0)
            out.append(item(c.hit, c.n, cand, with_title=False))
    return out


# -- checking and rendering -------------------------------------------------------------------------
def claim_text(s: AnswerSentence, hits: Sequence[Hit]) -> str:
    """What a sentence claims about its papers, as grounding scores it: the quoted sentence for
    quotes and items, a title for a direct line naming one paper, else the sentence."""
    if s.quote:
        return s.quote
    if s.kind == "direct" and len(s.citations) == 1:
        return title(hits[s.citations[0] - 1])
    return cit.MARKER.sub("", s.text).strip()


def check(sentences: list[AnswerSentence], hits: Sequence[Hit], embedder: Embedder,
          threshold: float) -> list[AnswerSentence]:
    """Fill ``support`` / ``supported`` of every claim with :func:`rag.compose.grounding.support_matrix`
    (the best support among the papers it cites). A direct line citing several papers is scored
    per paper title and gets the lowest. Headings, notes and metadata keep support 1.0; a model's
    sentences (``claim``) keep the support :func:`rag.compose.grounding.ground` gave them."""
    rows: list[tuple[int, str, list[int]]] = []
    for i, s in enumerate(sentences):
        if s.kind in ("heading", "note", "metadata", "claim", "bibtex") or not s.citations:
            continue  # claims were scored by rag.compose.grounding.ground, in their own context
        if s.kind == "direct" and len(s.citations) > 1:
            for n in s.citations:
                rows.append((i, title(hits[n - 1]), [n]))
        else:
            rows.append((i, claim_text(s, hits), s.citations))
    if not rows:
        return sentences
    sup = support_matrix([r[1] for r in rows], hits, embedder)
    per: dict[int, list[float]] = {}
    for r, (i, _, cited) in enumerate(rows):
        per.setdefault(i, []).append(max(float(sup.scores[r, n - 1]) for n in cited))
    for i, scores in per.items():
        score = min(scores)
        sentences[i].support = round(score, 4)
        sentences[i].supported = score >= threshold
    return sentences


def render(sentences: Sequence[AnswerSentence], table_markdown: str = "") -> str:
    """The answer text (Markdown): the direct line, the table if any, then quotes as ``>``
    blockquotes, items as ``-`` list lines, headings and notes as their own paragraphs."""
    blocks: list[str] = []
    for i, s in enumerate(sentences):
        if s.kind == "quote":
            blocks.append(f"> {s.text}")
        elif s.kind == "bibtex":
            blocks.append(f"```bibtex\n{s.text.strip()}\n```")
        elif s.kind == "item":
            blocks.append(f"- {s.text}")
        else:
            blocks.append(s.text)
        if i == 0 and table_markdown:
            blocks.append(table_markdown)
    out = ""
    for prev, block in zip([None] + blocks[:-1], blocks):
        if prev is None:
            out = block
        elif block.startswith("- ") and prev.startswith("- "):
            out += "\n" + block
        else:
            out += "\n\n" + block
    return out
