"""Answer a question: retrieve -> plan (question type) -> direct line -> body by mode -> check.

:func:`answer_stream` yields events so the UI can show the sources, then the one-line direct
answer (from retrieval alone, before any model call), then the rest; :func:`answer` runs it to
the end and returns the :class:`Answer`. The body comes from the answer mode (:data:`MODES`):
evidence-first composition (:mod:`rag.compose`), the model picking quotes under a grammar
(:mod:`rag.constrained`), or the model writing with every sentence checked
(:mod:`rag.grounding`; unsupported sentences leave the body). Backends are passed in: tests give
a fake embedder and a ``ScriptedGenerator`` (``tests/conftest.py``).
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Sequence

from rag import citations as cit
from rag import prompts
from rag.conversation import (Turn, discussed_papers, follows, previous_papers_to_compare,
                              refers_back, retrieval_query, split_comparison, standalone_question,
                              with_new_subject)
from rag.errors import InvalidQuestionError
from rag.filters import Filters
from rag.grounding import ground
from rag.text import normalise, split_sentences
from rag.types import Answer, AnswerSentence, Citation, Hit

if TYPE_CHECKING:
    from rag.embedder import Embedder
    from rag.generator import Generator
    from rag.seams import Retriever
    from rag.settings import Settings

#: Terminal colour/cursor escape sequences (ECMA-48 CSI), stripped from questions.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
#: Tokens kept free besides the answer for the chat template's own tokens.
TEMPLATE_MARGIN = 64
#: Context windows up to this (tokens) get evidence sentences; larger ones get whole abstracts.
SMALL_CONTEXT = 4096
#: The answer modes (``settings.answer_mode`` also takes ``auto``; see :func:`resolve_mode`):
#: ``extractive`` quotes the abstract sentences the evidence scores choose (:mod:`rag.compose`);
#: ``constrained`` lets the model pick and order them under a grammar (:mod:`rag.constrained`);
#: ``generative`` lets the model write, then keeps only the sentences the cited abstracts support.
MODES = ("extractive", "constrained", "generative")
#: A follow-up after a single best match is also about a paper of the previous answer that its
#: own search ranks above that match, within this many hits (the user's "they" may mean it).
FOLLOWUP_RUNNER_UP_RANK = 3
#: A short question without an anaphor is a new topic when its own search's best chunk has at
#: least this cosine. Measured on the accepted index: dev_hard/dev_easy follow-up turns searched
#: alone reach 0.28-0.64 (all of them refer back, so this rule does not see them), short new
#: topics ("speculative decoding", "protein folding", "KV cache compression", "Summarize work on
#: speculative decoding") 0.60-0.72; acronyms alone ("GRPO" 0.44) are caught by their name.
NEW_TOPIC_DENSE = 0.55


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
    (:func:`rag.compose.quotable`: no instruction-like sentence, no prompt scaffolding)."""
    from rag.compose import quotable

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
    defused (:func:`rag.citations.defuse`); the layout has no labels or quotes a model could
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


@dataclass
class Plan:
    """What one turn is, before any model call: the standalone question, the hits (numbered from
    1), refusal, the question type (:data:`rag.compose.KINDS`), the hit numbers of the papers
    under discussion (``focus``) and the number of compared papers (``columns``, 0 when not a
    comparison). ``rewritten``: the turn changed the subject of the previous question ("And for
    vision transformers?"), and ``standalone`` is the question it stands for."""

    standalone: str
    hits: list[Hit]
    refused: bool
    kind: str = "lookup"
    focus: list[int] = field(default_factory=lambda: [1])
    columns: int = 0
    rewritten: bool = False


def retrieve_for(question: str, retriever: Retriever, settings: Settings, *, k: int,
                 filters: Filters | None, history: list[Turn], evidence: bool = True
                 ) -> tuple[str, list[Hit], bool]:
    """Standalone question, hits and refusal for one turn (follow-ups and comparisons handled):
    what ``paperchat eval`` scores as retrieval."""
    plan = plan_turn(question, retriever, settings, k=k, filters=filters, history=history,
                     evidence=evidence, discussed_first=False)
    return plan.standalone, plan.hits, plan.refused


def plan_turn(question: str, retriever: Retriever, settings: Settings, *, k: int,
              filters: Filters | None, history: list[Turn], evidence: bool = True,
              discussed_first: bool = True) -> Plan:
    """Retrieve for one turn and decide its question type.

    With ``discussed_first`` (the answer path), a follow-up's papers under discussion are put
    first among the hits (added when the search did not return them; the list stays at ``k``),
    so the answer quotes them as [1], [2] ...
    """
    from rag.compose import classify
    from rag.refusal import MIN_DENSE, is_out_of_corpus, unknown_names

    previous = previous_papers_to_compare(question, history)
    if previous:  # "compare these three papers": the papers of the previous answer, in order
        titles = [normalise(p.title) for p in previous]
        standalone = f"Compare {', '.join(titles[:-1])} with {titles[-1]}"
        hits = [Hit(p, 1.0 - i / 100) for i, p in enumerate(previous)]
        if evidence:
            retriever.attach_evidence(question, hits)
        return Plan(standalone, hits, False, "compare", list(range(1, len(hits) + 1)), len(hits))
    rewritten = with_new_subject(question, history)
    if rewritten:  # the previous topic, asked of a new subject: a new search, not a follow-up
        question, history = rewritten, []
    if classify(question) == "count":
        history = []  # "how many papers ..." is about the corpus, never about the last answer
    elif history and follows(question, history[-1]) and not refers_back(question):
        # short and without an anaphor ("speculative decoding", "recipes for sourdough bread"):
        # a new topic when its own search is confident, or finds nothing on its own
        own = retriever.search(question, k=k, filters=filters, evidence=False, feedback=False)
        top = max(own.dense.scores[:1], default=0.0)
        if top >= NEW_TOPIC_DENSE or top < MIN_DENSE:
            history = []
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
        columns = len(hits)
        for h in merged_res.hits + [h for side in per_side for h in side[1:]]:
            if len(hits) >= k:
                break
            if h.id not in {x.id for x in hits}:
                hits.append(h)
        top_dense = max(max(r.dense.scores[:1], default=0.0) for r in side_res + [merged_res])
    else:
        res = retriever.search(query, k=k, filters=filters, evidence=False, feedback=about is None)
        hits = res.hits
        columns = 0
        top_dense = max(res.dense.scores[:1], default=0.0)
    if about is None:
        refused = is_out_of_corpus(question, hits, retriever, top_dense=top_dense)
    else:  # a follow-up: its own words are thin, so only a name unknown to the index refuses
        refused = bool(unknown_names(question, retriever))
    focus = [1]
    if about is not None and discussed_first:
        papers = discussed_papers(question, history)
        if len(papers) == 1:  # a single best match: add the last answer's paper that the
            known = {p.id: p for p in history[-1].papers}  # follow-up's search ranks above it
            ranked = [h.id for h in hits[:FOLLOWUP_RUNNER_UP_RANK]]
            mine = ranked.index(papers[0].id) if papers[0].id in ranked else len(ranked)
            extra = next((known[i] for i in ranked[:mine] if i in known), None)
            papers = papers + ([extra] if extra is not None else [])
        found = {h.id: h for h in hits}
        top_score = hits[0].score if hits else 1.0
        first = [found.get(p.id) or Hit(p, top_score) for p in papers]
        ids = {h.id for h in first}
        hits = (first + [h for h in hits if h.id not in ids])[:max(k, len(first))]
        focus = list(range(1, len(first) + 1))
    if evidence:
        retriever.attach_evidence(standalone, hits)
    comparison = columns >= 2 and len(hits) >= 2
    kind = classify(question, followup=about is not None, comparison=comparison)
    if kind == "compare":
        focus = list(range(1, columns + 1))
    return Plan(standalone, hits, refused, kind, focus, columns if comparison else 0,
                rewritten=bool(rewritten))


@dataclass
class Reading:
    """A question as :func:`understand` reads it: the text to search (``query``), every filter
    to apply (the caller's and those said in words), notes to put in the answer (another
    language, no authors in the list), ``sort`` ("rating" or ""), and ``direct``: when the
    catalog answers the question by itself (a count or list with no topic, or nothing left to
    search), ``(sentences, hits, kind, refused)``."""

    query: str
    filters: Filters
    notes: list[AnswerSentence] = field(default_factory=list)
    sort: str = ""
    direct: tuple | None = None
    count_topic: str = ""
    said: list[str] = field(default_factory=list)


def understand(question: str, retriever: Retriever, filters: Filters | None,
               drop_filters: Sequence[str] = ()) -> Reading:
    """Read filters, a rating order and the language from ``question`` (:mod:`rag.intent`)
    and decide whether the catalog answers it alone (:mod:`rag.facets`)."""
    from rag import facets
    from rag.compose import classify, note
    from rag.intent import has_topic
    from rag.intent import read as read_intent

    intent = read_intent(question, areas=retriever.area_names())
    words = intent.filters.without(list(drop_filters)) if intent.filters else Filters()
    notes: list[AnswerSentence] = []
    authors = words.values.get("author", [])
    if authors and not any(p.authors for p in retriever.papers.values()):
        notes.append(note(f"This paper list has no author names (ICLR 2026 submissions were "
                          f"anonymous when it was made), so papers by {', '.join(authors)} "
                          "cannot be picked out."))
        words = words.without([f"author={a}" for a in authors])
    said_years = words.values.get("year", [])
    if said_years:  # "ICLR 2026" in a question about a 2026-only list filters nothing: drop it
        years = {str(p.year) for p in retriever.papers.values() if p.year is not None}
        if not years:
            notes.append(note(f"This paper list has no years, so {', '.join(said_years)} cannot "
                              "be filtered on."))
        if not years or set(said_years) >= years:
            words = words.without([f"year={y}" for y in said_years])
    used = (filters or Filters()).merged(words) if words else (filters or Filters())
    if intent.foreign:
        notes.append(note(intent.language_note))
    changed = bool(intent.phrases or intent.sort or intent.foreign)
    query = intent.query if changed else question
    counting = classify(question) == "count"
    catalog_only = not has_topic(query) and (counting or bool(used) and changed)
    if words and not catalog_only:  # a catalog answer states its filters in its first line
        notes.append(note(f"Searched only papers matching {', '.join(words.as_strings())}, as "
                          "the question asks."))
    reading = Reading(query, used, notes, intent.sort, said=words.as_strings())
    if counting and has_topic(query):
        reading.count_topic = reading.query = facets.topic_of(query)
    if intent.foreign and not has_topic(intent.query) and not intent.filters:
        reading.direct = ([], [], "lookup", True)
    elif authors and not used and not has_topic(intent.query):
        reading.direct = ([], [], "list", True)
    elif catalog_only:
        sentences, hits = facets.facet_answer(question, retriever.papers, used or None,
                                              facets.LISTED)
        reading.direct = (sentences, hits, "count" if counting else "list", False)
    return reading


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
                  drop_filters: Sequence[str] = ()
                  ) -> Iterator[HitsEvent | TokenEvent | DoneEvent]:
    """Answer ``question`` as a stream of events: one :class:`HitsEvent`, one or more
    :class:`TokenEvent` (the first is the one-line direct answer, made from retrieval before
    any model call), one :class:`DoneEvent` with the checked :class:`Answer`.

    ``mode`` (default ``settings.answer_mode``): see :data:`MODES` and :func:`resolve_mode`.
    ``filters`` are the caller's (dropdowns, ``--filter``); filters read from the question's
    words (:mod:`rag.intent`) are added unless listed in ``drop_filters`` (strings as in
    :attr:`Answer.filters_applied`: the UI's chip that removes one re-asks with it here).
    Counts, authors and figures the abstracts do not give are answered by the composition in
    every mode (a plain statement, never the model's guess).

    Raises:
        InvalidQuestionError: before any retrieval or model call (see :func:`check_question`),
            or an unknown mode.
        BackendUnavailableError, GrammarError: from the model.
    """
    from rag import compose, constrained, facets
    from rag.refusal import MIN_DENSE

    t0 = time.perf_counter()
    ms = lambda: (time.perf_counter() - t0) * 1000  # noqa: E731
    question = check_question(question, settings.max_question_chars)
    requested = check_mode(mode or settings.answer_mode)  # before any work
    k = k or settings.k
    read = understand(question, retriever, filters, drop_filters)
    applied = read.filters.as_strings()
    if read.direct is not None:  # a count or list from the catalog, or nothing to search
        sentences, hits, kind, refused = read.direct
        timings = {"retrieve": ms()}
        yield HitsEvent(question, hits, refused)
        sentences = sentences[:1] + read.notes + sentences[1:]
        text = compose.render(sentences)
        timings["first_token"] = timings["total"] = ms()
        yield TokenEvent(text)
        yield DoneEvent(Answer(question, question, text, citations_for(sentences, hits), hits,
                               refused=refused, sentences=sentences, timings_ms=timings,
                               mode="extractive", kind=kind, filters_applied=applied,
                               about_ids=[h.id for h in hits[:1]]))
        return
    search_k = max(k, facets.RATED_POOL) if read.sort == "rating" else k
    # filters or an order said in words ask for a set of papers: a new search, never a
    # follow-up of the last answer ("oral papers on diffusion" after "What results ...?")
    fresh = bool(read.said or read.sort or read.count_topic)
    plan = plan_turn(read.query, retriever, settings, k=search_k, filters=read.filters or None,
                     history=[] if fresh else history or [])
    standalone, hits = plan.standalone, plan.hits
    timings = {"retrieve": ms()}
    yield HitsEvent(standalone, hits, plan.refused)
    if plan.refused or not hits:
        timings["first_token"] = timings["total"] = ms()
        text = cit.no_match(applied) if applied and not hits else cit.REFUSAL
        sentences = read.notes + [compose.note(text)] if read.notes else []
        yield DoneEvent(Answer(question, standalone, compose.render(sentences) if sentences
                               else text, [], hits, refused=True, sentences=sentences,
                               timings_ms=timings, mode="extractive", kind=plan.kind,
                               filters_applied=applied))
        return
    if read.sort == "rating" or read.count_topic:
        cands = compose.candidates(read.query, hits, retriever.embedder)
        if read.sort == "rating":
            body, hits = facets.rated_answer(hits, cands)
            kind = "rated"
        else:
            topic = read.count_topic
            n = facets.topic_count(topic, retriever.papers, retriever.search_texts(), read.filters)
            total = len(facets.matching(retriever.papers, read.filters))
            numbers = [1] + compose.relevant_others(hits, cands, {1}, MIN_DENSE)
            body = [facets.topic_count_head(topic, n, read.filters, total),
                    compose.heading("The most relevant papers found:")]
            body += [facets.rated_item(hits[i - 1], i, (cands[i] or [None])[0]) for i in numbers]
            kind = "count"
        sentences = compose.check(body[:1] + read.notes + body[1:], hits, retriever.embedder,
                                  settings.support_threshold)
        text = compose.render(sentences)
        timings["first_token"] = timings["total"] = ms()
        yield TokenEvent(text)
        yield DoneEvent(Answer(question, standalone, text, citations_for(sentences, hits), hits,
                               sentences=sentences, timings_ms=timings, mode="extractive",
                               kind=kind, filters_applied=applied,
                               about_ids=[h.id for h in hits[:1]]))
        return
    embedder = retriever.embedder
    kind = plan.kind
    table = None
    if kind == "compare":
        from rag.compare import build_comparison

        table = build_comparison(hits[:plan.columns or len(hits)], embedder)
    extract = compose.compose(kind, standalone if plan.rewritten else read.query, hits, embedder, focus=plan.focus,
                              comparison=table, min_dense=MIN_DENSE)
    if read.notes:
        extract = extract[:1] + read.notes + extract[1:]
    table_md = table.markdown if table is not None else ""
    head = compose.render(extract[:1], table_md)
    timings["first_token"] = ms()
    yield TokenEvent(head)
    used = resolve_mode(requested, generator, settings)
    if kind in ("count", "authors", "number"):
        used = "extractive"  # what the abstracts cannot say is stated, never generated
    body, unsupported, model = extract[1:], [], ""
    if used == "constrained":
        cands = compose.candidates(question, hits, embedder,
                                   plan.focus if kind == "followup" else None)
        pool = constrained.pool(kind, hits, cands, focus=plan.focus, comparison=table,
                                min_dense=MIN_DENSE)
        picks = constrained.pick(question, pool, generator, settings)
        model = generator.name
        body = picks or body
    elif used == "generative":
        model = generator.name
        generated = yield from _generate(standalone, hits, table, generator, settings, embedder,
                                         timings, ms)
        body = compose.without_repeats(extract[:1] + [s for s in generated if s.supported])[1:]
        unsupported = [s for s in generated if not s.supported]
        if not body:
            body = [compose.note("The model wrote nothing the cited abstracts support; what they "
                                 "say instead:")] + extract[1:]
    sentences = compose.check(extract[:1] + body, hits, embedder, settings.support_threshold)
    text = compose.render(sentences, table_md)
    if used != "generative":
        yield TokenEvent(text[len(head):])
    timings["total"] = ms()
    about = plan.focus if kind in ("compare", "followup") else [1]
    yield DoneEvent(Answer(
        question, standalone, text, citations_for(sentences, hits), hits,
        sentences=sentences, comparison=table.rows if table is not None else None,
        timings_ms=timings, mode=used, kind=kind,
        comparison_ids=[c.hit.id for c in table.columns] if table is not None else [],
        unsupported=unsupported, model=model, filters_applied=applied,
        about_ids=[hits[n - 1].id for n in about if 1 <= n <= len(hits)]))


def _generate(standalone: str, hits: list[Hit], table, generator: Generator,
              settings: Settings, embedder: Embedder, timings: dict[str, float], clock):
    """Generative mode: stream the model's text, stopped by the repetition guard, and show only
    what is checked: each sentence, once complete, is grounded on its own and yielded as a
    :class:`TokenEvent` when the cited abstracts support it and it is no prompt leak (unchecked
    text never reaches the screen). At the end the whole text, chat-template tokens removed, is
    grounded once more (context helps a sentence without a marker) and leaking sentences
    dropped. Returns those sentences (kind ``claim``), supported or not. Records ``timings["model_first_token"]`` (ms from the start of
    the question, ``clock()``) when the model's first piece arrives."""
    from rag.grounding import answer_sentences
    from rag.guards import TEMPLATE_TOKENS, RepeatGuard, leak_reason

    if table is not None:
        from rag.compare import SYNTHESIS_MAX_TOKENS, synthesis_messages

        messages = synthesis_messages(standalone, table, generator, settings)
        max_tokens = min(settings.max_answer_tokens, SYNTHESIS_MAX_TOKENS)
        support_hits = hits[:len(table.columns)]
    else:
        messages, n_used = build_messages(standalone, hits, generator, settings)
        max_tokens = settings.max_answer_tokens
        support_hits = hits[:n_used] if n_used else hits
    threshold = settings.support_threshold
    guard = RepeatGuard(settings.repeat_ngram)
    stream = generator.stream(messages, max_tokens=max_tokens, temperature=settings.temperature)
    judged, shown = 0, 0

    def checked(sentences: list[str]):
        nonlocal shown
        for sentence in sentences:
            if leak_reason(sentence):
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
        if leak_reason(s.text) or re.search(r":\s*(?:\[\d+\]\s*)*$", s.text):
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
