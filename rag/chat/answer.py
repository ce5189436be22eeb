"""Answer a turn: read it into a plan -> choose its papers -> run its operation -> direct line ->
body by mode -> check.

:func:`answer_stream` yields events so the UI can show the sources, then the one-line direct
answer (from retrieval alone, before any model call), then the rest; :func:`answer` runs it to
the end and returns the :class:`Answer`. The body comes from the answer mode (:data:`MODES`):
evidence-first composition (:mod:`rag.compose.extractive`), the model picking quotes under a grammar
(:mod:`rag.chat.constrained`), or the model writing with every sentence checked
(:mod:`rag.compose.grounding`; unsupported sentences leave the body). Backends are passed in: tests give
a fake embedder and a ``ScriptedGenerator`` (``tests/conftest.py``).
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Sequence

from rag.compose import citations as cit
from rag.compose import prompts
from rag.compose.grounding import ground
from rag.errors import InvalidQuestionError
from rag.filters import Filters
from rag.text import normalise, split_sentences
from rag.types import Answer, AnswerSentence, Citation, Hit
from rag.understand.history import Turn
from rag.understand.plan import Plan

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.backends.generator import Generator
    from rag.backends.seams import Retriever
    from rag.settings import Settings
    from rag.understand.turn_reader import TurnReader

#: Terminal colour/cursor escape sequences (ECMA-48 CSI), stripped from questions.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
#: Tokens kept free besides the answer for the chat template's own tokens.
TEMPLATE_MARGIN = 64
#: Context windows up to this (tokens) get evidence sentences; larger ones get whole abstracts.
SMALL_CONTEXT = 4096
#: The answer modes (``settings.answer_mode`` also takes ``auto``; see :func:`resolve_mode`):
#: ``extractive`` quotes the abstract sentences the evidence scores choose (:mod:`rag.compose.extractive`);
#: ``constrained`` lets the model pick and order them under a grammar (:mod:`rag.chat.constrained`);
#: ``generative`` lets the model write, then keeps only the sentences the cited abstracts support.
MODES = ("extractive", "constrained", "generative")
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
    order) or, with ``None``, its whole abstract; only sentences that may be quoted
    (:func:`rag.compose.quotes.quotable`: no instruction-like sentence, no prompt scaffolding)."""
    from rag.compose.quotes import quotable

    allowed = quotable(hit.paper)
    if sentences is None or not hit.evidence:
        return " ".join(allowed)
    chosen = {cit.defuse(e) for e in hit.evidence[:sentences]}
    return " ".join(s for s in allowed if s in chosen) or " ".join(allowed[:1])


def build_messages(question: str, hits: Sequence[Hit], generator: Generator,
                   settings: Settings) -> tuple[list[dict], int]:
    """Chat messages for ``question`` with as many of ``hits`` as fit the model's context window.

    Budget (tokens) = context window - ``max_answer_tokens`` - :data:`TEMPLATE_MARGIN`. Papers are
    added best first; with a small window (<= :data:`SMALL_CONTEXT` tokens) hit ``n`` contributes
    its ``max(1, evidence_sentences - (n - 1))`` best evidence sentences (3, 2, 1, 1, 1 with the
    default 3: the prompt stays short, so the first token comes early), otherwise its whole
    abstract. A paper that does not fit is shortened to its best sentence, and dropped if even that
    does not fit; the lowest-ranked go first. Bracketed numbers in titles and abstracts are
    defused (:func:`rag.compose.citations.defuse`); the layout has no labels or quotes a model could
    echo (``prompts/paper.txt``).

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
            block = prompts.render("paper", n=n, title=cit.defuse(normalise(hit.paper.title)),
                                   text=paper_text(hit, variant))
            cost = generator.count_tokens(block) + 1
            if used + cost <= budget:
                blocks.append(block)
                used += cost
                break
        else:
            break  # this paper does not fit even shortened; lower-ranked ones are dropped too
    user = prompts.render("answer", papers="\n\n".join(blocks), question=question)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], len(blocks)


def retrieve_for(question: str, retriever: Retriever, settings: Settings, *, k: int,
                 filters: Filters | None, history: list[Turn], evidence: bool = True,
                 reader: TurnReader | None = None) -> tuple[str, list[Hit], bool]:
    """Standalone question, hits and refusal for one turn (read into a plan, its papers
    chosen): what ``paperchat eval`` scores as retrieval."""
    from rag.chat.operations import select
    from rag.chat.refine import resolve_refine
    from rag.understand.conversation import understand

    reader = reader or default_reader(retriever, settings)
    plan = resolve_refine(understand(question, history, retriever, reader), history,
                          retriever.area_names(), _index_years(retriever))
    sel = select(plan, history, retriever, settings, k=k, filters=filters, evidence=evidence)
    return sel.standalone or question, sel.hits[:max(k, len(sel.focus))], sel.refused


#: Loaded readers by the id of their embedder (0: the bundled model), with the embedder.
_READERS: dict[int, tuple] = {}


def default_reader(retriever: Retriever, settings: Settings) -> TurnReader:
    """The turn reader (:class:`rag.understand.turn_reader.TurnReader`) over the retriever's embedder when
    that is the bundled all-MiniLM-L6-v2 (384-d), else over the bundled model itself (an index
    built with another embedder, or a test's fake one); loaded once per process."""
    from rag.understand.turn_reader import TurnReader

    embedder = retriever.embedder
    if getattr(embedder, "dim", None) != 384 or "MiniLM" not in str(getattr(embedder, "name",
                                                                          "")):
        if 0 not in _READERS:
            from rag.backends.embedder import make_embedder
            from rag.settings import Settings as _Settings

            bundled = make_embedder(_Settings(home=settings.home))
            _READERS[0] = (bundled, TurnReader.load(bundled))
        return _READERS[0][1]
    key = id(embedder)
    if key not in _READERS or _READERS[key][0] is not embedder:
        _READERS[key] = (embedder, TurnReader.load(embedder))
    return _READERS[key][1]


def check_mode(name: str) -> str:
    """``name`` if it is ``auto`` or one of :data:`MODES`.

    Raises:
        InvalidQuestionError: any other name (the message lists the modes).
    """
    if name not in MODES + ("auto",):
        raise InvalidQuestionError(f"unknown answer mode {str(name)[:40]!r}; use one of auto, "
                                   + ", ".join(MODES))
    return name


def resolve_mode(requested: str, generator: Generator, settings: Settings) -> str:
    """The answer mode to use: ``requested`` unless it is ``auto``, which picks
    ``settings.small_model_mode`` for a model with fewer than ``settings.small_model_params``
    parameters (read from the GGUF: ``generator.n_params``) and ``generative`` for bigger models
    and for LLM servers (whose size is unknown).

    Raises:
        InvalidQuestionError: an unknown mode name.
    """
    check_mode(requested)
    if requested != "auto":
        return requested
    n_params = getattr(generator, "n_params", None)
    if isinstance(n_params, int) and n_params < settings.small_model_params:
        return settings.small_model_mode
    return "generative"


def answer_stream(question: str, *, retriever: Retriever, generator: Generator,
                  settings: Settings, k: int | None = None, filters: Filters | None = None,
                  history: list[Turn] | None = None, mode: str | None = None,
                  drop: Sequence[str] = (), plan: Plan | None = None,
                  reader: TurnReader | None = None, drop_filters: Sequence[str] = ()
                  ) -> Iterator[HitsEvent | TokenEvent | DoneEvent]:
    """Answer ``question`` as a stream of events: one :class:`HitsEvent`, one or more
    :class:`TokenEvent` (the first is the one-line direct answer, made from retrieval before
    any model call), one :class:`DoneEvent` with the checked :class:`Answer`.

    The turn is read once into a :class:`rag.understand.plan.Plan` (:func:`rag.understand.conversation.understand`,
    or ``plan`` when the caller has it: the UI re-asks a turn with one part of its plan
    removed), whose parts named in ``drop`` (:meth:`rag.understand.plan.Plan.parts` keys) are removed
    (``drop_filters``: filter strings such as ``status=oral``, the same as ``filter:`` keys);
    :mod:`rag.chat.operations` chooses its papers and runs its operation. ``mode`` (default
    ``settings.answer_mode``): see :data:`MODES` and :func:`resolve_mode`; only lookups,
    descriptions, surveys, follow-ups and comparisons are written by a model in the
    constrained and generative modes: counts, lists, ratings, BibTeX, neighbours, authors and
    figures the abstracts do not give are stated by code in every mode. ``filters`` are the
    caller's (dropdowns, ``--filter``); the plan's are added.

    Raises:
        InvalidQuestionError: before any retrieval or model call (see :func:`check_question`),
            or an unknown mode.
        BackendUnavailableError, GrammarError: from the model.
    """
    from rag.chat import constrained
    from rag.chat.operations import run, select
    from rag.chat.refine import resolve_refine
    from rag.compose import extractive
    from rag.compose import quotes, templates
    from rag.compose.refusal import MIN_DENSE
    from rag.understand.conversation import understand

    t0 = time.perf_counter()
    ms = lambda: (time.perf_counter() - t0) * 1000  # noqa: E731
    question = check_question(question, settings.max_question_chars)
    requested = check_mode(mode or settings.answer_mode)  # before any work
    k = k or settings.k
    history = list(history or [])
    if plan is None:
        plan = understand(question, history, retriever,
                          reader or default_reader(retriever, settings))
    timings = {"understand": ms()}
    for key in list(drop) + [f"filter:{f}" for f in drop_filters]:
        plan = plan.without(key)
    plan = resolve_refine(plan, history, retriever.area_names(), _index_years(retriever))
    sel = select(plan, history, retriever, settings, k=k, filters=filters)
    applied = sel.filters.as_strings() if sel.filters else []
    notes = list(sel.notes)
    if plan.unsure:
        notes.insert(0, templates.note(f"Reading this as: {plan.summary(len(sel.hits))}. (Remove "
                                     "a part above the answer, or rephrase, if that is not "
                                     "what you meant.)"))
    timings["retrieve"] = ms()
    standalone = sel.standalone or question
    yield HitsEvent(standalone, sel.hits, sel.refused)
    exact = plan.op in ("count", "list") and sel.every is not None or sel.exact
    if sel.refused or (not sel.hits and not exact):  # ("none match" above is an answer)
        timings["first_token"] = timings["total"] = ms()
        text = cit.no_match(applied) if applied and not sel.hits else \
            cit.REFUSAL if sel.hits else cit.REFUSAL_NONE
        sentences = notes + [templates.note(text)] if notes else []
        if sel.explained and notes:  # its notes say why; no nearest papers are listed
            sentences = notes
            text = extractive.render(notes)
        yield DoneEvent(Answer(question, standalone, extractive.render(sentences) if sentences
                               else text, [], sel.hits, refused=True, sentences=sentences,
                               timings_ms=timings, mode="extractive", kind=_kind_of(plan),
                               filters_applied=applied, plan=plan.to_json()))
        return
    done = run(plan, sel, retriever, settings)
    hits, kind, table = done.hits, done.kind, done.table
    extract = done.sentences[:1] + notes + done.sentences[1:]
    embedder = retriever.embedder
    table_md = table.markdown if table is not None else ""
    head = extractive.render(extract[:1], table_md)
    timings["first_token"] = ms()
    yield TokenEvent(head)
    used = resolve_mode(requested, generator, settings) if done.prose else "extractive"
    body, unsupported, model = extract[1:], [], ""
    if used == "constrained":
        focus = done.about if done.focused else None
        cands = quotes.candidates(plan.query, hits, embedder, focus)
        pool = constrained.pool("followup" if done.focused else kind, hits, cands,
                                focus=done.about, comparison=table,
                                min_dense=MIN_DENSE)
        picks = constrained.pick(plan.query or question, pool, generator, settings)
        model = generator.name
        body = notes + picks if picks else body
    elif used == "generative":
        model = generator.name
        generated = yield from _generate(standalone, hits, table, generator, settings, embedder,
                                         timings, ms)
        body = extractive.without_repeats(extract[:1] + [s for s in generated if s.supported])[1:]
        unsupported = [s for s in generated if not s.supported]
        if not body:
            body = [templates.note("The model wrote nothing the cited abstracts support; what they "
                                 "say instead:")] + extract[1:]
        else:
            body = notes + body
    sentences = extractive.check(extract[:1] + body, hits, embedder, settings.support_threshold)
    text = extractive.render(sentences, table_md)
    if used != "generative":
        yield TokenEvent(text[len(head):])
    timings["total"] = ms()
    yield DoneEvent(Answer(
        question, standalone, text, citations_for(sentences, hits), hits,
        sentences=sentences, comparison=table.rows if table is not None else None,
        timings_ms=timings, mode=used, kind=kind,
        comparison_ids=[c.hit.id for c in table.columns] if table is not None else [],
        unsupported=unsupported, model=model, filters_applied=applied,
        about_ids=[hits[n - 1].id for n in done.about if 1 <= n <= len(hits)],
        plan=plan.to_json(), matched_filters=applied if sel.every is not None else sel.matched,
        trend=done.trend.to_json() if done.trend is not None else None))


def _index_years(retriever) -> list[int]:
    """The years the index's papers have, ascending."""
    from rag.conference.trends import index_year_totals

    return list(index_year_totals(retriever))


def _kind_of(plan: Plan) -> str:
    """The answer kind a refused plan would have had."""
    return {"sort": "rated", "refine": "survey"}.get(plan.op, plan.op)


def _generate(standalone: str, hits: list[Hit], table, generator: Generator,
              settings: Settings, embedder: Embedder, timings: dict[str, float], clock):
    """Generative mode: stream the model's text, stopped by the repetition guard, and show only
    what is checked: each sentence, once complete, is grounded on its own and yielded as a
    :class:`TokenEvent` when the cited abstracts support it and it is no prompt leak (unchecked
    text never reaches the screen). At the end the whole text, chat-template tokens removed, is
    grounded once more (context helps a sentence without a marker) and leaking sentences
    dropped. Returns those sentences (kind ``claim``), supported or not. Records ``timings["model_first_token"]`` (ms from the start of
    the question, ``clock()``) when the model's first piece arrives."""
    from rag.compose.grounding import answer_sentences
    from rag.compose.guards import TEMPLATE_TOKENS, RepeatGuard, leak_reason

    if table is not None:
        from rag.compose.compare import SYNTHESIS_MAX_TOKENS, synthesis_messages

        messages = synthesis_messages(standalone, table, generator, settings)
        max_tokens = min(settings.max_answer_tokens, SYNTHESIS_MAX_TOKENS)
        support_hits = hits[:len(table.columns)]
    else:
        messages, n_used = build_messages(standalone, hits, generator, settings)
        max_tokens = settings.max_answer_tokens
        support_hits = hits[:n_used] if n_used else hits
    threshold = settings.support_threshold
    titles = [h.paper.title for h in hits]  # a quoted title is no leak ("...: the Answer: ...")
    guard = RepeatGuard(settings.repeat_ngram)
    stream = generator.stream(messages, max_tokens=max_tokens, temperature=settings.temperature)
    judged, shown = 0, 0

    def checked(sentences: list[str]):
        nonlocal shown
        for sentence in sentences:
            if leak_reason(sentence, titles):
                continue
            g = ground(sentence, support_hits, embedder, threshold=threshold)
            if g.sentences and all(x.supported for x in g.sentences):
                yield TokenEvent(("\n\n" if not shown else " ") + g.text)
                shown += 1

    try:
        for piece in stream:
            timings.setdefault("model_first_token", clock())
            tripped = guard.feed(piece)
            done = [x for line in answer_sentences(guard.text) for x in line][:-1]
            yield from checked(done[judged:])
            judged = max(judged, len(done))
            if tripped:
                break
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()
    text = guard.text[:guard.safe_length] if guard.tripped else guard.text
    if not guard.tripped:
        rest = [x for line in answer_sentences(text) for x in line][judged:]
        yield from checked(rest)
    grounded = ground(TEMPLATE_TOKENS.sub(" ", text), support_hits, embedder, threshold=threshold)
    out = []
    for s in grounded.sentences:
        if leak_reason(s.text, titles) or re.search(r":\s*(?:\[\d+\]\s*)*$", s.text):
            continue  # a leak, or a lead-in ("... reports on the following topics: [1]")
        s.kind = "claim"
        out.append(s)
    return out


def citations_for(sentences: Sequence[AnswerSentence], hits: Sequence[Hit]) -> list[Citation]:
    """One :class:`Citation` per cited hit, in order of first citation: ``support`` the best
    support of a claim citing it (1.0 when only notes cite it), ``evidence`` the first sentence
    quoted from it (else empty: the card shows the paper's best evidence)."""
    by_n: dict[int, Citation] = {}
    for s in sentences:
        for n in s.citations:
            if not 1 <= n <= len(hits):
                continue
            c = by_n.setdefault(n, Citation(n, hits[n - 1].paper, False, 0.0, ""))
            score = s.support if s.is_claim else 1.0
            if score > c.support:
                c.support = round(float(score), 4)
            if s.quote and not c.evidence and n == s.citations[0]:
                c.evidence = s.quote
    for c in by_n.values():
        c.supported = any(s.supported for s in sentences if c.n in s.citations)
    return list(by_n.values())


def answer(question: str, **kwargs) -> Answer:
    """Run :func:`answer_stream` to the end and return its :class:`Answer`."""
    result = None
    for event in answer_stream(question, **kwargs):
        if isinstance(event, DoneEvent):
            result = event.answer
    assert result is not None
    return result
