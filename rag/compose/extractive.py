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
* ``compare``: the extractive table (built on :mod:`rag.compose.compare`), then the
  differences quoted from the table's "what sets it apart" cells;
* ``followup``: the sentences of the paper(s) under discussion that answer the new question
  (after a comparison, both papers);
* ``count`` ("how many papers ..."), ``authors`` (when the list has none), ``number`` (a figure
  the abstract does not give): a plain statement that the abstracts cannot answer, never a guess.

The sentences are picked by their relevance to the question (:mod:`rag.compose.quotes`: every
quotable sentence of the cited abstracts, scored, and the best few of a paper) and joined by the
templates of :mod:`rag.compose.templates` (the direct line, quotes, list lines, headings, notes).
This module holds the composition per answer kind (:func:`compose`), the support check of its
sentences (:func:`check`) and their Markdown (:func:`render`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

from rag.backends.lexical import query_terms
from rag.compose import citations as cit
from rag.compose.grounding import support_matrix
from rag.compose.quotes import (APPROACH_BONUS, BACKGROUND_PENALTY, QUOTE_RELATIVE, Candidate,
                                best_quotes, candidates, question_terms)
from rag.compose.templates import _and, direct, heading, item, note, quote, title
from rag.text import normalise
from rag.types import AnswerSentence, Hit

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder

#: Answer kinds composed here (:func:`compose`).
KINDS = ("compare", "followup", "count", "authors", "number", "survey", "describe", "lookup")

#: Quotes of the best paper (lookup), of a described paper, and of each paper under discussion.
LOOKUP_QUOTES, DESCRIBE_QUOTES, FOLLOWUP_QUOTES = 2, 3, 2
#: An "also relevant" paper needs a best sentence of at least this relevance, or a best-chunk
#: cosine (``Hit.dense``) of at least :data:`rag.compose.refusal.MIN_DENSE`.
MIN_ITEM_RELEVANCE = 0.35

#: Stemmed question words too generic to expect in the answering sentence ("what results does it
#: report?" is answered by a results sentence that need not say "result" or "report").
GENERIC_TERMS = frozenset("result report show find work method approach perform achiev contribut "
                          "use evalu experi propos introduc main key idea "
                          # how a turn is said, not what it asks ("what does it propose exactly?"
                          # quoted "Code ... will be released"), and "-based" of "tree-based"
                          "exact actual precis realli again pleas specif detail base "
                          # ("ones proposing a new benchmark": most abstracts say "new"; "eval"
                          # is "evaluation" said short: "which of these do zero-shot eval")
                          "new novel eval".split())
#: A figure as results state them: a percentage, a factor (3x, 2.5×), points, or a decimal.
_FIGURE = re.compile(r"\d+(?:\.\d+)?\s?(?:%|x\b|×|-?fold\b|points?\b|pp\b)|\d+\.\d+|"
                     r"\b\d+\s?(?:ms|s|seconds|hours|GB|MB|tokens)\b")


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
            aspect: str = "", figures: bool = False,
            on_topic=None) -> list[AnswerSentence]:
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
        on_topic: ``Hit -> bool``, whether a paper is on the question's topic (the relevance
            model, :mod:`rag.retrieve.membership`); a lookup lists as "also relevant" only those
            for which it is true. None: every paper relevant by its sentences or cosine.
    Returns:
        Sentences, the direct answer first. Supports are not filled in (:func:`check` does).
    """
    return without_repeats(_compose(kind, question, hits, embedder, focus=focus,
                                    comparison=comparison, min_dense=min_dense, aspect=aspect,
                                    figures=figures, on_topic=on_topic))


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
             aspect: str = "", figures: bool = False, on_topic=None):
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
    if on_topic is not None:
        others = [n for n in others if on_topic(hits[n - 1])]
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
#: anything in it ("tell me more about the fourth one", "what is it about?", "explain [2]",
#: "what does it propose?": "does" stems to "doe").
_DESCRIBE_ONLY = frozenset("tell me more about explain describ summar summari summaris overview "
                           "tldr tl dr gist idea say elabor detail deeper expand go dig one your "
                           "list ok okai pleas pl thank first second third fourth fifth sixth "
                           "seventh eighth ninth tenth last latter former top bottom doe do did".split())


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
