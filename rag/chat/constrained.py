"""Constrained mode: the model picks and orders quoted sentences under a GBNF grammar.

The candidates are the sentences the extractive composition considers (:func:`pool`); the
grammar's only strings are those sentences, each quoted with its marker (``“...” [n]``), one to
:data:`MAX_PICKS` of them separated by a space. The model can choose and order, but cannot write
a word of its own, so every sentence it returns is an exact quote, cited to its own paper.
(llama.cpp grammars: ``LlamaGrammar.from_string``; an OpenAI-compatible server gets the grammar
in the request, see :mod:`rag.backends.llm_server`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rag.compose import prompts
from rag.compose.extractive import relevant_others
from rag.compose.quotes import Candidate, best_quotes
from rag.compose.templates import quote
from rag.types import AnswerSentence, Hit

if TYPE_CHECKING:
    from rag.backends.generator import Generator
    from rag.settings import Settings

#: Most sentences the model may pick.
MAX_PICKS = 3
#: Candidates offered: the best paper's top sentences and the others' best ones.
TOP_PAPER_CANDIDATES = 3
MAX_CANDIDATES = 9


def pool(kind: str, hits: Sequence[Hit], cands: dict[int, list[Candidate]], *,
         focus: Sequence[int] = (1,), comparison=None, min_dense: float = 0.30
         ) -> list[Candidate]:
    """The candidate sentences for a question of type ``kind`` (at most :data:`MAX_CANDIDATES`),
    best paper first: for follow-ups each discussed paper's top sentences; for comparisons each
    column's approach and distinctive cells; else the top paper's best sentences and one per
    other relevant paper."""
    from rag.compose.compare import ROWS

    if kind == "compare" and comparison is not None:
        out = []
        for col in comparison.columns:
            for role in (ROWS[3], ROWS[1]):
                cell = col.cells.get(role)
                if cell and cell not in {c.text for c in out}:
                    out.append(Candidate(col.n, cell, 0, 1.0))
        return out[:MAX_CANDIDATES]
    if kind == "followup":
        per = max(1, MAX_CANDIDATES // max(1, len(focus)))
        return [c for n in focus for c in best_quotes(cands.get(n, []), min(per, 3))][:MAX_CANDIDATES]
    out = list(cands.get(1, [])[:TOP_PAPER_CANDIDATES])
    for n in relevant_others(hits, cands, {1}, min_dense):
        out += cands.get(n, [])[:1]
    return out[:MAX_CANDIDATES]


def literal(c: Candidate) -> str:
    """The string the grammar allows for a candidate: ``“sentence” [n]``."""
    return f"“{c.text}” [{c.n}]"


def grammar(pool_: Sequence[Candidate]) -> str:
    """GBNF whose sentences are one to :data:`MAX_PICKS` candidates separated by a space."""
    from rag.backends.generator import gbnf_literal

    alts = " | ".join(gbnf_literal(literal(c)) for c in pool_)
    optional = "".join(f' (" " pick' for _ in range(MAX_PICKS - 1)) + ")?" * (MAX_PICKS - 1)
    return f"root ::= pick{optional}\npick ::= {alts}\n"


def messages(question: str, pool_: Sequence[Candidate]) -> list[dict]:
    """Chat messages offering the candidates (``prompts/system_pick.txt``, ``prompts/pick.txt``)."""
    listing = "\n".join(literal(c) for c in pool_)
    return [{"role": "system", "content": prompts.render("system_pick")},
            {"role": "user", "content": prompts.render("pick", candidates=listing,
                                                       question=question)}]


def parse(text: str, pool_: Sequence[Candidate]) -> list[Candidate]:
    """The candidates ``text`` holds, in the order it holds them, each once (text outside the
    candidates, which the grammar rules out, is ignored)."""
    found: list[tuple[int, int]] = []
    for i, c in enumerate(pool_):
        at = text.find(literal(c))
        if at >= 0:
            found.append((at, i))
    return [pool_[i] for _, i in sorted(found)]


def max_tokens(pool_: Sequence[Candidate], generator: Generator) -> int:
    """Tokens enough for the :data:`MAX_PICKS` longest candidates and their separators."""
    lengths = sorted((generator.count_tokens(literal(c)) for c in pool_), reverse=True)
    return sum(lengths[:MAX_PICKS]) + MAX_PICKS + 4


def pick(question: str, pool_: Sequence[Candidate], generator: Generator,
         settings: Settings) -> list[AnswerSentence]:
    """Let the model pick from ``pool_`` under the grammar; the picks as quote sentences.

    Raises:
        BackendUnavailableError: from an LLM server; GrammarError for a grammar llama.cpp cannot
            parse (see :mod:`rag.backends.llama_cpp`).
    """
    pool_ = fitting(question, list(pool_), generator)
    if not pool_:
        return []
    if len(pool_) == 1:
        return [quote(pool_[0])]
    text = "".join(generator.stream(messages(question, pool_), max_tokens=max_tokens(pool_, generator),
                                    temperature=0.0, grammar=grammar(pool_)))
    return [quote(c) for c in parse(text, pool_)]


def fitting(question: str, pool_: list[Candidate], generator: Generator,
            margin: int = 64) -> list[Candidate]:
    """The longest prefix of ``pool_`` whose prompt plus :func:`max_tokens` fits the model's
    context window less ``margin`` tokens (for the chat template); the last candidates (the least
    relevant papers') are dropped first."""
    while pool_:
        prompt = sum(generator.count_tokens(m["content"]) for m in messages(question, pool_))
        if prompt + max_tokens(pool_, generator) + margin <= generator.context_window:
            return pool_
        pool_ = pool_[:-1]
    return pool_
