"""Answer a question: retrieve -> prompt within the token budget -> stream -> check citations.

:func:`answer_stream` yields events so the UI can show the sources before the first token and
stream the rest; :func:`answer` runs it to the end and returns the :class:`Answer`. Backends are
passed in (STYLE.md 4): tests give a fake embedder and a :class:`ScriptedGenerator`.
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass
from typing import Iterator, Sequence

from index.text import normalise, split_sentences
from rag import citations as cit
from rag import prompts
from rag.conversation import (Turn, previous_papers_to_compare, retrieval_query, split_comparison,
                              standalone_question)
from rag.errors import InvalidQuestionError
from rag.filters import Filters
from rag.grounding import ground
from rag.types import Answer, Hit

#: Terminal colour/cursor escape sequences (ECMA-48 CSI), stripped from questions.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
#: Tokens kept free besides the answer for the chat template's own tokens.
TEMPLATE_MARGIN = 64
#: Context windows up to this (tokens) get evidence sentences; larger ones get whole abstracts.
SMALL_CONTEXT = 4096


@dataclass
class HitsEvent:
    """Retrieval is done: ``hits`` will be the answer's sources, ``refused`` tells if none fits."""

    standalone_question: str
    hits: list[Hit]
    refused: bool


@dataclass
class TokenEvent:
    """A piece of the answer text as the model produced it (not yet checked)."""

    text: str


@dataclass
class DoneEvent:
    answer: Answer


def check_question(question, max_chars: int = 4000) -> str:
    """The question cleaned of control characters and surrounding space.

    Raises:
        InvalidQuestionError: not a string, blank, or longer than ``max_chars`` characters.
    """
    if not isinstance(question, str):
        raise InvalidQuestionError("the question must be text")
    question = _ANSI.sub("", question)
    cleaned = "".join(ch for ch in question if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    cleaned = cleaned.strip()
    if not cleaned:
        raise InvalidQuestionError("the question is empty: type a question about the papers")
    if len(cleaned) > max_chars:
        raise InvalidQuestionError(f"the question is {len(cleaned):,} characters long; the limit "
                                   f"is {max_chars:,} characters")
    return cleaned


def paper_text(hit: Hit, sentences: int | None) -> str:
    """What the prompt quotes of a paper: its ``sentences`` best evidence sentences (in abstract
    order) or, with ``None``, the whole normalised abstract."""
    abstract = normalise(hit.paper.abstract)
    if sentences is None or not hit.evidence:
        return abstract
    chosen = set(hit.evidence[:sentences])
    return " ".join(s for s in split_sentences(abstract) if s in chosen) or " ".join(hit.evidence[:sentences])


def build_messages(question: str, hits: Sequence[Hit], generator, settings) -> tuple[list[dict], int]:
    """Chat messages for ``question`` with as many of ``hits`` as fit the model's context window.

    Budget (tokens) = context window - ``max_answer_tokens`` - :data:`TEMPLATE_MARGIN`. Papers are
    added best first; with a small window (<= :data:`SMALL_CONTEXT` tokens) hit ``n`` contributes
    its ``max(1, evidence_sentences - (n - 1))`` best evidence sentences (3, 2, 1, 1, 1 with the
    default 3: the prompt stays short, so the first token comes early), otherwise its whole
    abstract. A paper that does not fit is shortened to its best sentence, and dropped if even that
    does not fit; the lowest-ranked go first. Titles and abstracts are quoted as data
    (:func:`rag.citations.quote`: no ``"`` inside, bracketed numbers defused).

    Returns:
        (messages, number of papers included). Papers keep their hit numbers [1..n].
    """
    budget = generator.context_window - settings.max_answer_tokens - TEMPLATE_MARGIN
    small = generator.context_window <= SMALL_CONTEXT
    system = prompts.render("system", max_sentences=5)
    base = prompts.render("answer", papers="", question=question)
    used = generator.count_tokens(system) + generator.count_tokens(base)
    blocks: list[str] = []
    for n, hit in enumerate(hits, start=1):
        sentences = max(1, settings.evidence_sentences - (n - 1)) if small else None
        for variant in dict.fromkeys((sentences, 1)):
            block = prompts.render("paper", n=n, title=cit.quote(normalise(hit.paper.title)),
                                   text=cit.quote(paper_text(hit, variant)))
            cost = generator.count_tokens(block) + 1
            if used + cost <= budget:
                blocks.append(block)
                used += cost
                break
        else:
            break  # this paper does not fit even shortened; lower-ranked ones are dropped too
    user = prompts.render("answer", papers="\n\n".join(blocks), question=question)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], len(blocks)


def retrieve_for(question: str, retriever, settings, *, k: int, filters: Filters | None,
                 history: list[Turn], evidence: bool = True) -> tuple[str, list[Hit], bool]:
    """Standalone question, hits and refusal for one turn (follow-ups and comparisons handled)."""
    from rag.refusal import is_out_of_corpus, unknown_names

    previous = previous_papers_to_compare(question, history)
    if previous:  # "compare these three papers": the papers of the previous answer, in order
        titles = [normalise(p.title) for p in previous]
        standalone = f"Compare {', '.join(titles[:-1])} with {titles[-1]}"
        hits = [Hit(p, 1.0 - i / 100) for i, p in enumerate(previous)]
        if evidence:
            retriever.attach_evidence(question, hits)
        return standalone, hits, False
    standalone, about = standalone_question(question, history)
    query = retrieval_query(question, history)
    sides = split_comparison(question)
    if sides:
        side_res = [retriever.search(s, k=k, filters=filters, evidence=False) for s in sides]
        merged_res = retriever.search(query, k=k, filters=filters, evidence=False)
        per_side = [r.hits for r in side_res]
        hits: list[Hit] = []
        for side in per_side:  # each side's best paper first, then the fused list
            if side and side[0].id not in {h.id for h in hits}:
                hits.append(side[0])
        for h in merged_res.hits + [h for side in per_side for h in side[1:]]:
            if len(hits) >= k:
                break
            if h.id not in {x.id for x in hits}:
                hits.append(h)
        top_dense = max(max(r.dense.scores[:1], default=0.0) for r in side_res + [merged_res])
    else:
        res = retriever.search(query, k=k, filters=filters, evidence=False, feedback=about is None)
        hits = res.hits
        top_dense = max(res.dense.scores[:1], default=0.0)
    if about is None:
        refused = is_out_of_corpus(question, hits, retriever, top_dense=top_dense)
    else:  # a follow-up: its own words are thin, so only a name unknown to the index refuses
        refused = bool(unknown_names(question, retriever))
    if evidence:
        retriever.attach_evidence(standalone, hits)
    return standalone, hits, refused


def answer_stream(question: str, *, retriever, generator, settings, k: int | None = None,
                  filters: Filters | None = None, history: list[Turn] | None = None
                  ) -> Iterator[HitsEvent | TokenEvent | DoneEvent]:
    """Answer ``question`` as a stream of events: one :class:`HitsEvent`, zero or more
    :class:`TokenEvent`, one :class:`DoneEvent` with the checked :class:`Answer`.

    Raises:
        InvalidQuestionError: before any retrieval or model call (see :func:`check_question`).
    """
    t0 = time.perf_counter()
    ms = lambda: (time.perf_counter() - t0) * 1000  # noqa: E731
    question = check_question(question, settings.max_question_chars)
    k = k or settings.k
    standalone, hits, refused = retrieve_for(question, retriever, settings, k=k, filters=filters,
                                             history=history or [])
    timings = {"retrieve": ms()}
    yield HitsEvent(standalone, hits, refused)
    if refused or not hits:
        timings["first_token"] = timings["total"] = ms()
        text = cit.no_match(filters.as_strings()) if filters and not hits else cit.REFUSAL
        yield DoneEvent(Answer(question, standalone, text, [], hits, refused=True,
                               timings_ms=timings))
        return
    sides = split_comparison(standalone)
    table = None
    if sides and len(hits) >= 2:
        # A comparison: the extractive table (rag.compare) is the answer's first text (and marks
        # first_token), then the model's short synthesis, grounded against the compared papers.
        from rag.compare import SYNTHESIS_MAX_TOKENS, build_comparison, synthesis_messages

        support_hits = hits[:max(2, min(len(sides), len(hits)))]
        table = build_comparison(support_hits, retriever.embedder)
        timings["first_token"] = ms()
        yield TokenEvent(table.markdown + "\n\n")
        messages = synthesis_messages(standalone, table, generator, settings)
        max_tokens = min(settings.max_answer_tokens, SYNTHESIS_MAX_TOKENS)
    else:
        messages, used = build_messages(standalone, hits, generator, settings)
        support_hits = hits[:used] if used else hits
        max_tokens = settings.max_answer_tokens
    pieces: list[str] = []
    for piece in generator.stream(messages, max_tokens=max_tokens,
                                  temperature=settings.temperature):
        if not pieces:
            timings.setdefault("first_token", ms())
        pieces.append(piece)
        yield TokenEvent(piece)
    timings.setdefault("first_token", ms())
    grounded = ground("".join(pieces), support_hits, retriever.embedder,
                      threshold=settings.support_threshold)
    if not grounded.sentences and table is None and support_hits[0].evidence:
        # the model wrote no sentence (nothing, or only markers): answer with the top paper's
        # best evidence sentence, quoted from its abstract (and so cited to it)
        grounded = ground(support_hits[0].evidence[0], support_hits, retriever.embedder,
                          threshold=settings.support_threshold)
    text, citations = grounded.text, grounded.citations
    if table is not None:
        text, citations = table.with_synthesis(text, citations)
    timings["total"] = ms()
    yield DoneEvent(Answer(question, standalone, text, citations, hits, sentences=grounded.sentences,
                           comparison=table.rows if table is not None else None, timings_ms=timings))


def answer(question: str, **kwargs) -> Answer:
    """Run :func:`answer_stream` to the end and return its :class:`Answer`."""
    result = None
    for event in answer_stream(question, **kwargs):
        if isinstance(event, DoneEvent):
            result = event.answer
    assert result is not None
    return result
