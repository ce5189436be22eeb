"""Comparison answers: an extractive side-by-side table, then a short cited synthesis.

For "how does A differ from B?" or "compare these three papers"
(:func:`rag.understand.mentions.comparison_sides`) the answer starts with a table built by code from the
papers' own abstract sentences, so it is right even when the model is weak: one column per paper,
one row per :data:`ROWS` entry, each cell one sentence of that paper's abstract (citation-like
brackets defused, instruction-like sentences never used). Sentences are assigned by cue words and
position:

* **Problem**: motivation/gap cues ("challenge", "problem", "however", "existing", "limitation",
  "remains unclear", "struggle", a question ...), early in the abstract; left empty when no
  sentence has a cue and the first sentence is taken;
* **Approach**: contribution cues ("we propose/introduce/present", "our method", "in this paper",
  "to address" ...), in the first half;
* **Evidence / results**: evaluation cues ("experiments", "results", "outperform", "achieve",
  "%", "state-of-the-art", "we prove" ...), late;
* **What sets it apart**: of the sentences left from the approach sentence on, the one least
  similar (max cosine of the embedder's vectors) to any sentence of the other compared papers.

Each sentence fills at most one of the first three rows: the (row, sentence) pairs are taken best
score first (a greedy assignment), so "Experiments show our method outperforms ..." lands in the
results row, not the approach row. The model then writes a synthesis from a compact prompt
(``prompts/compare.txt``: per paper its approach, results and distinctive sentences), which is
grounded like any answer (:func:`rag.compose.grounding.ground`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from rag.compose import citations as cit
from rag.compose import prompts
from rag.compose.grounding import abstract_sentences, embed_cached
from rag.compose.rendering import EMPTY, to_markdown
from rag.text import normalise
from rag.types import Citation, Hit

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.backends.generator import Generator
    from rag.settings import Settings

#: Row labels, in table order.
ROWS = ("Problem", "Approach", "Evidence / results", "What sets it apart")
#: Header of the row-label column.
ASPECT = "Aspect"
#: Most tokens the model may write for the synthesis (the table already answers).
SYNTHESIS_MAX_TOKENS = 160
#: Longest cell, in characters (cut at a word boundary with "…").
MAX_CELL_CHARS = 320

def _cue(*alternatives: str, tail: str = "") -> re.Pattern:
    """A case-insensitive pattern matching any of ``alternatives`` as whole words (or ``tail``)."""
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b" + (f"|{tail}" if tail else ""),
                      re.I)


#: Per row: (pattern, weight) pairs; a sentence scores the weights of the patterns it matches.
_CUES: dict[str, list[tuple[re.Pattern, float]]] = {
    "Problem": [
        (_cue(r"challeng\w*", "however", "existing", "limitations?", "limited",
              r"remains? (?:\w+ly )?(?:unclear|open|challenging|difficult|limited|under\w+|unknown"
              r"|elusive|unsolved|poorly|an? (?:open|challenge|bottleneck|problem))",
              r"struggl\w*", r"fail\w*", "lacks?", "lacking", r"suffer\w*", "bottlenecks?",
              r"difficult\w*", "despite", "although", "gaps?", "unclear",
              "open (?:question|problem)", "drawbacks?", r"hinder\w*", r"imped\w*", r"hamper\w*",
              "obstacles?", "costly", "expensive", "prohibitive", r"inefficien\w*",
              "(?:not well|poorly) understood", tail=r"\?\s*$"), 1.0),
        (_cue("crucial", "important", "critical", "fundamental", "key", "essential", "widely",
              "often", "typically", "increasingly", "recent(?:ly)?", "prior", "previous",
              "conventional", r"motivat\w*", "problems?", "issues?"), 0.4),
    ],
    "Approach": [
        (_cue("we (?:propose|introduce|present|develop|design|devise|formulate|put forward|adapt"
              "|build|construct|reformulate|cast|frame|revisit|study|investigate|explore|extend"
              "|refine|generali[sz]e)",
              r"(?:this|the present) (?:paper|work|study) (?!is\b|was\b|has\b)[a-z]+s",
              "our (?:method|approach|framework|model|algorithm|technique|system|solution|key idea"
              "|design)",
              "in this (?:paper|work)",
              "to (?:address|tackle|overcome|bridge|close|solve) (?:this|these|the)",
              "to this end", "called", "named", "dubbed", "termed"), 1.0),
        (_cue("novel", "framework", "architecture", "algorithm", "method", "approach", "mechanism",
              "we (?:use|employ|leverage|combine|train|learn|model|study|analy[sz]e|derive)"), 0.4),
    ],
    "Evidence / results": [
        (_cue(r"experiments?", r"experimental(?:ly)?", "results?", r"outperform\w*", r"achiev\w*",
              "state[- ]of[- ]the[- ]art", "sota", r"surpass\w*", "empirical(?:ly)?",
              "evaluations?", "benchmarks?", "speed-?ups?",
              "we (?:prove|establish|show|demonstrate|obtain|confirm|find|observe)",
              "(?:lower|upper|tight|regret) bounds?", "tighter",
              "than (?:the )?(?:existing|prior|previous|current|baseline)", r"demonstrat\w*",
              "improves? (?:by|over|upon)", "matches", r"validat\w*",
              tail=r"%|\b\d+(?:\.\d+)?\s?[x×]\b"), 1.0),
        (_cue("accuracy", "faster", "better", "lower", "higher", "bounds?", "rates?",
              "guarantees?", "competitive", "consistently", "significant(?:ly)?", "datasets?",
              "tasks?"), 0.4),
    ],
}
#: Verbs of a remedy: a sentence using them describes the approach, not the problem.
_SOLVES = re.compile(r"\b(?:mitigat|alleviat|overcom|resolv|eliminat|circumvent|sidestep)\w*", re.I)
#: Where in the abstract each row's sentence tends to be (0 = first sentence, 1 = last).
_POSITION = {"Problem": lambda p: 0.6 * (1 - p),
             "Approach": lambda p: 0.4 * (1 - abs(p - 0.3)),
             "Evidence / results": lambda p: 0.6 * p}
#: The least score a sentence needs to fill a row (the position prior alone reaches 0.5 only
#: for the first sentence as "Problem" and the last ones as results); "Approach" is always filled.
_MIN_SCORE = {"Problem": 0.5, "Approach": float("-inf"), "Evidence / results": 0.5}
#: Sentences about code release and links, which say nothing about the paper's content: never
#: "what sets it apart", and quoted by :mod:`rag.compose.extractive` only when nothing else is left.
BOILERPLATE = re.compile(r"https?://|github|\bcode (?:is|and|will be)\b|\bavailable at\b|"
                         r"\bopen[- ]source\b|\bwe release\b|\b(?:implementation|code|models?|"
                         r"data(?:set)?s?|weights) (?:is |are )?(?:publicly )?available\b|"
                         r"\bmade (?:\w+ ){1,4}(?:publicly )?available\b", re.I)


@dataclass
class Column:
    """One compared paper: its hit number ``n`` (1-based), its hit and the sentence per row."""

    n: int
    hit: Hit
    cells: dict[str, str] = field(default_factory=dict)


@dataclass
class Comparison:
    """The table: ``rows`` (header first: ``[ASPECT, "<title> [n]", ...]``, then one row per
    :data:`ROWS` entry, label first) and the same as Markdown."""

    columns: list[Column]
    rows: list[list[str]]
    markdown: str

    def with_synthesis(self, synthesis: str, citations: list[Citation]
                       ) -> tuple[str, list[Citation]]:
        """The comparison answer's text (the Markdown table, a blank line, the grounded synthesis)
        and its citations: the synthesis's, then one per compared paper it does not cite, which the
        table quotes verbatim (``support`` 1.0, ``evidence`` its approach cell)."""
        cited = {c.n for c in citations}
        extra = [Citation(col.n, col.hit.paper, True, 1.0, col.cells.get(ROWS[1], ""))
                 for col in self.columns if col.n not in cited]
        text = self.markdown + ("\n\n" + synthesis.strip() if synthesis.strip() else "")
        return text, list(citations) + extra


def cue_score(role: str, sentence: str, position: float) -> float:
    """How much ``sentence`` (at relative ``position`` in [0, 1]) looks like ``role``'s sentence:
    the weights of the cue patterns it matches plus a position prior. Higher is better."""
    score = sum(w for pattern, w in _CUES[role] if pattern.search(sentence))
    if role == "Problem" and _CUES["Approach"][0][0].search(sentence):
        score -= 1.0  # "we propose X to address the problem of Y" is an approach sentence
    if role == "Problem" and position >= 0.3 and _CUES["Evidence / results"][0][0].search(sentence):
        score -= 0.5  # "... outperforms existing methods" is a result
    if role == "Problem" and _SOLVES.search(sentence):
        score -= 0.8  # "... mitigates the bottleneck" describes the remedy
    if len(sentence.split()) < 6:
        score -= 1.0  # "Our contributions are twofold." fills no row
    return score + _POSITION[role](position)


def classify(sentences: Sequence[str]) -> dict[str, int]:
    """Index of the sentence chosen for each of the first three :data:`ROWS`; each sentence is
    used at most once. A row is missing when no sentence is left for it, or when none reaches its
    least score (:data:`_MIN_SCORE`): an abstract that states no problem gets no "Problem" cell
    rather than a wrong one."""
    m = len(sentences)
    roles = ROWS[:3]
    scored = []
    for i, s in enumerate(sentences):
        pos = i / (m - 1) if m > 1 else 0.0
        for r, role in enumerate(roles):
            scored.append((cue_score(role, s, pos), -r, -i, role, i))
    chosen: dict[str, int] = {}
    used: set[int] = set()
    for score, _, _, role, i in sorted(scored, reverse=True):
        if role not in chosen and i not in used and score >= _MIN_SCORE[role]:
            chosen[role] = i
            used.add(i)
    return chosen


def _cell(sentence: str) -> str:
    text = cit.defuse(sentence).strip()
    if len(text) > MAX_CELL_CHARS:
        text = text[:MAX_CELL_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return text


def distinctive(own: np.ndarray, others: np.ndarray, sentences: Sequence[str],
                exclude: set[int], start: int = 0) -> int | None:
    """Index of the sentence least like the other papers: the smallest max-cosine of ``own``
    (one row per sentence) to ``others`` (the other papers' sentence vectors). Only sentences
    from ``start`` on (the approach sentence: what sets a paper apart is what it does, not its
    motivation) outside ``exclude`` (already in the table), without boilerplate ("code is
    available at ...") and of 5+ words compete, while any is left. None without sentences."""
    usable = [i for i, s in enumerate(sentences) if not BOILERPLATE.search(s)]
    cands = ([i for i in usable if i >= start and i not in exclude
              and len(sentences[i].split()) >= 5]
             or [i for i in usable if i not in exclude] or usable or list(range(len(sentences))))
    if not cands:
        return None
    if not len(others):
        return cands[0]
    closeness = (own[cands] @ others.T).max(axis=1)
    return cands[int(np.argmin(closeness))]


def build_comparison(hits: Sequence[Hit], embedder: Embedder, first: str = "",
                     scorer: Callable[[str, float], float] | None = None,
                     min_score: float = 0.0) -> Comparison:
    """The extractive table for ``hits`` (compared papers, numbered 1..len(hits) in that order).

    ``embedder`` picks the "what sets it apart" sentence (:func:`distinctive`); everything else is
    cue words and position (:func:`classify`), so the table does not depend on the language model.
    ``first`` names the row to put first (a comparison asked about one aspect:
    :func:`rag.compose.roles.aspect_row`): one of :data:`ROWS`, moved up, or a row of its own whose
    cells are each paper's sentence with the best ``scorer(sentence, position in [0, 1])`` of
    at least ``min_score`` (empty where none reaches it).
    """

    sents = [abstract_sentences(h.paper) for h in hits]
    columns = [Column(n, h) for n, h in enumerate(hits, start=1)]
    vecs = embed_cached(embedder, [s for ss in sents for s in ss])
    bounds = np.cumsum([0] + [len(ss) for ss in sents])
    for c, (col, ss) in enumerate(zip(columns, sents)):
        chosen = classify(ss)
        col.cells = {role: ss[i] for role, i in chosen.items()}
        own = vecs[bounds[c]:bounds[c + 1]]
        others = np.concatenate([vecs[:bounds[c]], vecs[bounds[c + 1]:]])
        i = distinctive(own, others, ss, set(chosen.values()), chosen.get(ROWS[1], 0))
        if i is not None:
            col.cells[ROWS[3]] = ss[i]
    order = list(ROWS)
    if first in order:
        order.remove(first)
    elif first and scorer is not None:
        for col, ss in zip(columns, sents):
            m = len(ss)
            scored = [(scorer(x, i / (m - 1) if m > 1 else 0.0), -i, x) for i, x in enumerate(ss)]
            best = max(scored, default=None)
            if best is not None and best[0] >= min_score:
                col.cells[first] = best[2]
    if first:
        order.insert(0, first)
    header = [ASPECT] + [f"{cit.defuse(normalise(col.hit.paper.title))} [{col.n}]"
                         for col in columns]
    rows = [header] + [[role] + [_cell(col.cells[role]) if col.cells.get(role) else EMPTY
                                 for col in columns] for role in order]
    return Comparison(columns, rows, to_markdown(rows))


def synthesis_messages(question: str, comparison: Comparison, generator: Generator,
                       settings: Settings, max_sentences: int = 3) -> list[dict]:
    """Chat messages asking for a short cited synthesis of the table (``prompts/compare.txt``).

    Each paper is quoted with its approach, results and distinctive sentences; if that does not fit
    the context window (minus ``settings.max_answer_tokens``), with its approach sentence only.
    """
    system = prompts.render("system", max_sentences=max_sentences)
    budget = generator.context_window - settings.max_answer_tokens - 64
    for roles in ((ROWS[1], ROWS[2], ROWS[3]), (ROWS[1],)):
        blocks = []
        for col in comparison.columns:
            picked = list(dict.fromkeys(col.cells[r] for r in roles if col.cells.get(r)))
            title = cit.quote(normalise(col.hit.paper.title))
            blocks.append(prompts.render("paper", n=col.n, title=title,
                                         text=cit.quote(" ".join(picked))))
        user = prompts.render("compare", papers="\n\n".join(blocks), question=question)
        if generator.count_tokens(system) + generator.count_tokens(user) <= budget:
            break
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]

