"""Execute a :class:`rag.understand.plan.Plan`: choose its papers (:func:`select`), then run its operation
on them (:func:`run`) into the answer's sentences. Nothing here reads the turn's words: what to
search is the plan's ``query`` / ``topic``, what to do its ``op``, ``aspect``, ``filters``,
``order`` and ``n``.

Which papers:

* ``search``: hybrid retrieval (:meth:`rag.retrieve.retriever.Retriever.search`) of the plan's query under
  its filters, ``k`` papers (more for operations over many papers: :data:`rag.chat.selection.POOL`), refused when
  no paper is relevant (:mod:`rag.compose.refusal`); comparison sides are searched one by one;
* ``previous``: the previous answer's numbered papers, in its order; ``focus``: the papers it was
  about (a follow-up also gets the previous answer's paper its own search ranks above the
  focus, within :data:`rag.chat.previous.FOLLOWUP_RUNNER_UP_RANK`); ``positions``: its papers [n];
* ``named``: the papers whose names the turn used (resolved by :mod:`rag.understand.names`), else a search
  for the names (an unknown name is refused);
* ``catalog``: every paper the filters admit.

Filters act on every source: on the previous answer's papers exactly, and when none of them
passes, the previous search is run again under the filters (the answer says so). Counts,
extremes and sorts are exact over the chosen papers and come from the catalog, never from a
model; ties are stated.

:func:`select` decides the source; the fresh sources and :class:`rag.chat.selection.Selection`
are :mod:`rag.chat.selection`, the conversation's papers :mod:`rag.chat.previous`. :func:`run`
composes surveys, lookups, descriptions, follow-ups and comparisons here; the exact operations
(count, list, sort, extreme, cite, similar) and :class:`rag.chat.exact.Outcome` are
:mod:`rag.chat.exact`. A ``refine`` plan is made concrete first, by :mod:`rag.chat.refine`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

from rag.chat.exact import Outcome, _cite, _count, _rated, _similar
from rag.chat.previous import (_area_before, _compare_with_discussed, _described, _from_previous,
                               _list_asked, _list_with, _paired, _searched_topic, _showed)
from rag.chat.selection import (COMPARE_DEFAULT, COMPARE_MAX, Selection, _as_hits, _catalog,
                                _missing_names, _named, _search)
from rag.chat.term_pick import pick_by_terms
from rag.compose import extractive
from rag.compose.quotes import candidates
from rag.compose.templates import direct, item, note, title
from rag.conference import facets
from rag.conference.trends import index_year_totals
from rag.filters import Filters
from rag.types import Hit
from rag.understand.narrowing import about_topic, narrowed, narrows
from rag.understand.plan import Plan
from rag.understand.topics import has_topic, survey_topic

if TYPE_CHECKING:
    from rag.backends.seams import Retriever
    from rag.settings import Settings
    from rag.understand.history import Turn


# --- notes about the list itself ---------------------------------------------------------
def list_notes(plan: Plan, filters: Filters, retriever: Retriever) -> tuple[Filters, list]:
    """The filters a list can apply, and notes for the ones it cannot: author names where the
    list (or every year asked) has none (ICLR 2026 was anonymous), a primary area where the
    years asked have none (ICLR 2018), a year every paper has (dropped: it filters nothing) or
    none has."""
    notes = [note(n) for n in plan.notes if n]
    authors = filters.values.get("author", [])
    if authors and not any(p.authors for p in retriever.papers.values()):
        notes.append(note(f"This paper list has no author names (ICLR 2026 submissions were "
                          f"anonymous when it was made), so papers by {', '.join(authors)} "
                          "cannot be picked out."))
        filters = filters.without([f"author={a}" for a in authors])
    elif authors and filters.values.get("year"):
        anonymous = [y for y in filters.values["year"] if not any(
            p.authors for p in retriever.papers.values() if str(p.year) == y)]
        if anonymous and len(anonymous) == len(filters.values["year"]):
            # "What did Yoshua Bengio submit to ICLR 2026?": that year's list has no authors
            notes.append(note(f"The {' and '.join(anonymous)} list has no author names (its "
                              "submissions were anonymous when it was made), so papers by "
                              f"{', '.join(authors)} cannot be picked out of it."))
            filters = filters.without([f"author={a}" for a in authors])
    areas, years_said = filters.values.get("primary_area", []), filters.values.get("year", [])
    bare = [y for y in years_said if not any(p.primary_area for p in retriever.papers.values()
                                             if str(p.year) == y)] if areas else []
    if areas and years_said and len(bare) == len(years_said):
        # "how many 2018 submissions were in the optimization primary area?": none had one
        notes.append(note(f"The {' and '.join(bare)} list has no primary areas, so its papers "
                          f"in “{'”, “'.join(areas)}” cannot be picked out."))
        filters = filters.without([f"primary_area={a}" for a in areas])
    said_years = filters.values.get("year", [])
    if said_years:
        years = set(index_year_totals(retriever))
        missing = [y for y in said_years if int(y) not in years] if years else said_years
        if years and missing:
            notes.append(note(f"This index holds papers from {', '.join(map(str, sorted(years)))}"
                              f" only; {', '.join(missing)} cannot be filtered on."))
        if not years or set(int(y) for y in said_years) >= years and plan.op != "similar":
            # (a similar plan's two years are the paper's and its neighbours': kept)
            filters = filters.without([f"year={y}" for y in said_years])
    return filters, notes


# --- choosing the papers ---------------------------------------------------------------------
#: Operations that act on papers already shown ("cite them", "sort those"): with no earlier
#: answer that showed papers there is nothing for them to act on.
_ON_PAPERS_IN_HAND = ("cite", "sort", "extreme", "compare", "list", "similar")
NOTHING_BEFORE_NOTE = ("No earlier answer in this conversation showed papers, so there are none "
                       "to refer to here. Ask about a topic or name a paper.")


def _topic_to_count(plan: Plan, source: str, prev, history: Sequence[Turn]):
    """(topic, filters) a count of the previous answer's papers should count over the whole
    index instead: the previous answer's searched topic ("how many such papers in total?"), or,
    when the turn points at the topic in so many words ("on this topic", "such"), the last
    searched topic of the conversation; None when the count is of the papers in hand."""
    from rag.understand.position_words import points_at_topic

    if prev is None:
        return None
    if source == "previous" and prev.kind != "count" and prev.matched_filters is None:
        found = _searched_topic(prev)
        if found is not None:
            return found
    if points_at_topic(plan.said or ""):
        for turn in reversed(history):
            found = _searched_topic(turn)
            if found is not None:
                return found
    return None


def select(plan: Plan, history: Sequence[Turn], retriever: Retriever, settings: Settings, *,
           k: int, filters: Filters | None = None, evidence: bool = True) -> Selection:
    """The papers ``plan`` is about (see the module docstring). ``filters`` are the caller's
    (dropdowns, ``--filter``); the plan's are added. With ``evidence`` the hits get their best
    evidence sentences for the plan's query (:meth:`rag.retrieve.retriever.Retriever.attach_evidence`)."""
    from rag.understand.history import last_with_papers

    prev = last_with_papers(history)
    if "primary_area" in plan.inherit and prev is not None and plan.papers in ("catalog",
                                                                             "search"):
        area = _area_before(prev)
        if area and f"primary_area={area}" not in plan.filters:
            plan.filters = plan.filters + [f"primary_area={area}"]
    said = Filters.parse(plan.filters) if plan.filters else Filters()
    said, notes = list_notes(plan, said, retriever)
    used = (filters or Filters()).merged(said) if said else (filters or Filters())
    source = plan.papers
    pointless = source in ("previous", "focus", "positions") and (
        prev is None or not prev.numbered and not prev.papers)
    if pointless:
        source = "search"  # nothing to refer back to: the turn's own words are the search
    if plan.op == "count" and source in ("previous", "focus") and not said and \
            (searched := _topic_to_count(plan, source, prev, history)):
        # "how many such papers in total?" after a search on X: the papers on X in the whole
        # index (a topic count, with the search's filters), not the 15 the answer showed; "how
        # many papers on this topic are there?" after "compare the first two" of that search
        # counts the topic too, not the two papers
        notes.append(note(f"{_showed(prev)}; this counts every paper of the index on its "
                          "topic."))
        topic, before = searched
        topic = survey_topic(topic) or topic
        plan.papers, plan.query, plan.topic = "search", topic, topic
        if before:
            plan.filters = list(dict.fromkeys(before.as_strings() + plan.filters))
            used = used.merged(before)
        source = "search"
    if source == "search" and not has_topic(plan.query) and (plan.op in (
            "count", "list", "sort", "extreme") or plan.op == "survey" and used):
        source = "catalog"  # "How many oral papers are there?": nothing left to search
    counted = None
    if prev is not None and not plan.per_year and said and source in ("catalog", "previous",
                                                                      "focus") and \
            plan.op in ("list", "count", "sort", "extreme") and \
            not has_topic(_POINTING.sub(" ", plan.query)) and not _WHOLE.search(plan.said or ""):
        from rag.chat.yearly import counted_before

        counted = counted_before(history, retriever)
    if counted is not None:
        # "which of the 2018 ones were orals?" after "how did interest in X change since
        # 2018?": among the papers that answer counted on X, not every oral of 2018
        topic, papers = counted
        kept = facets.by_rating([p for p in papers if used.matches(p)],
                                descending=plan.order != "rating_asc")
        scope = f"the {len(papers):,} papers the previous answer counted on “{topic}”"
        if not kept:
            notes.append(note(f"None of {scope} matches {facets.describe(used)}."))
        sel = Selection(_as_hits(kept), standalone=f"{plan.said} (of {scope})", filters=used,
                        scope=scope, total=len(papers), notes=notes,
                        focus=list(range(1, len(kept) + 1)), exact=True)
    elif plan.per_year and source in ("search", "catalog") and _years_held(retriever) >= 2:
        # a count per year (or each year's best-rated) counts every year itself
        # (rag.chat.yearly): no search to refuse, and none of its hits would be shown
        sel = Selection([], standalone=plan.topic or plan.said, filters=used, notes=notes,
                        searched=source == "search" and has_topic(plan.topic), exact=True)
    elif plan.said and not any(ch.isalnum() for ch in plan.said) and not used:
        # "🚀🔥🤖🎉": no word to search or to read a list operation from: refused, not guessed
        sel = Selection([], refused=True, standalone=plan.said, notes=notes)
    elif plan.outside:
        # "when's the camera-ready deadline?", "hotel near the venue?": nothing a paper's
        # record holds, so the papers that share its words (camera, weather) are no answer
        notes.append(note(OUTSIDE_NOTE))
        sel = Selection([], refused=True, standalone=plan.said, notes=notes, explained=True)
    elif plan.notes and not has_topic(plan.query) and not used:
        # another language with nothing to search in Latin script: said, not guessed
        sel = Selection([], refused=True, standalone=plan.said, notes=notes)
    elif pointless and plan.op in _ON_PAPERS_IN_HAND:
        # "cite all of them" when no answer of the conversation showed a paper: none to act
        # on (a search of the words "cite all" gave five unrelated entries)
        notes.append(note(NOTHING_BEFORE_NOTE))
        sel = Selection([], refused=True, standalone=plan.said, notes=notes, explained=True)
    elif source == "catalog" and any(f.split("=")[0] in ("author", "primary_area") and
                                     f.split("=")[0] not in said.values for f in plan.filters):
        # "papers by Yoshua Bengio" where the list (or the year asked) has no author names, an
        # area of 2018 (said in a note): no paper is picked out, so none is listed (it listed
        # all 5,358, and "cite all of them" then gave 5,358 BibTeX entries)
        sel = Selection([], refused=True, standalone=plan.said, notes=notes, explained=True)
    elif source == "catalog":
        sel = _catalog(plan, used, retriever, notes)
    elif source in ("previous", "focus") and plan.op in ("lookup", "describe", "survey") and \
            (missing := _missing_names(plan.said, retriever)):
        # "what lr schedule did the Krakatoa optimizer paper use?" after a topic: the paper
        # asked about is in no abstract, so the previous papers cannot say (it quoted three)
        notes.append(note(f"No paper in this index mentions {', '.join(missing)}."))
        sel = Selection([], refused=True, standalone=plan.said, filters=used, notes=notes)
    elif source in ("previous", "focus", "positions"):
        if source == "focus" and plan.op in ("count", "list", "sort", "extreme") and \
                len(prev.discussed) > 1 and prev.matched_filters is not None:
            # "how many orals does it have?" after a listing of a track: the set the listing
            # matched, not the cards it showed
            source = "previous"
        if (listed := _list_asked(plan, source, prev, history)) is not None:
            source, prev = "previous", listed
        paired = _paired(plan, source, prev, history)
        if paired is not prev:
            source = "focus"  # the two papers of the last two turns, not the cards shown
        elif source == "positions":
            paired = _list_with(plan.positions, prev, history, notes)
        sel = _from_previous(plan, source, paired, used, retriever, settings, k, notes, history)
    elif source == "named" and not plan.ids and not plan.sides and prev is not None and \
            _described(plan, prev, retriever):
        sel = _named(plan, _target_filters(plan, used), retriever, settings, k, notes)
    elif source == "named" and (plan.ids or plan.sides):
        sel = _named(plan, _target_filters(plan, used), retriever, settings, k, notes)
    else:
        sel = _search(plan, history, _target_filters(plan, used), retriever, settings, k, notes,
                      first_turn=not history)
    if plan.op == "similar" and sel.filters is not used and "year" in used.values:
        sel.filters = used  # the neighbours' years (rag.chat.exact._similar)
    if plan.op == "compare" and source in ("named", "search") and prev is not None and \
            prev.papers and _REFERS_BACK.search(plan.said) and sel.hits and not sel.refused:
        _compare_with_discussed(plan, sel, prev)
    if evidence and sel.hits and not sel.refused:
        retriever.attach_evidence(plan.query or sel.standalone, sel.hits)
    return sel


#: Words that point at papers already in hand without describing them ("which of the ones").
_POINTING = re.compile(r"\b(?:which|what|of|the|ones?|those|these|them|they|were|was|are|is|"
                       r"any|among|just|only|and|in|for|about|now|so|ok|papers?|(?:19|20)\d\d)"
                       r"\b", re.I)
#: Words that ask about the whole index, not the papers an answer counted.
_WHOLE = re.compile(r"\b(?:whole|entire|index|overall|in\s+total|all\s+(?:the\s+)?papers|"
                    r"conference)\b", re.I)


def _target_filters(plan: Plan, used: Filters) -> Filters:
    """The filters the papers a plan names or searches for must pass: ``used``, less the years
    of a "similar" plan, whose years are the neighbours' ("which 2018 papers are closest to
    StepORLM?": StepORLM is a 2026 paper)."""
    if plan.op == "similar" and "year" in used.values:
        kept = used.without([f"year={y}" for y in used.values["year"]])
        m = _TARGET_YEAR.search(plan.said or "")
        if m and len(used.values["year"]) > 1 and m.group(1) in used.values["year"]:
            # "2026 papers similar to Graph Attention Networks from 2018": that paper is of 2018
            return Filters.parse([f"year={m.group(1)}"]).merged(kept or None)
        return kept
    return used


#: The year of the paper a "similar" turn names, said after it ("... similar to Graph Attention
#: Networks from 2018", "... like X (ICLR 2018)"): group 1.
_TARGET_YEAR = re.compile(r"(?:\b(?:similar|closest|close|nearest|related|akin)\s+to|\blike|"
                          r"\bresembling)\s+\S.*?(?:\b(?:from|in|at|of)\s+(?:iclr\s*)?|"
                          r"\(\s*(?:iclr\s*)?)((?:19|20)\d\d)\b", re.I)


def _years_held(retriever: Retriever) -> int:
    """How many years the index's papers have."""
    return len(index_year_totals(retriever))


#: A turn that compares something with the paper under discussion ("how does it compare to
#: Newton-Schulz?", "is this better than DPO").
_REFERS_BACK = re.compile(r"\b(?:it|its|this|that)\b(?!\s+(?:papers|ones|works)\b)", re.I)


#: What a turn read as outside the list (:attr:`rag.understand.plan.Plan.outside`) is told.
OUTSIDE_NOTE = ("This asks something the papers' list does not say: it holds each paper's "
                "title, abstract, keywords, area, decision and reviewer ratings, not the "
                "conference's dates, venue or awards, the reviews' text or other venues. "
                "(To search the papers anyway, remove \u201coutside what the papers' list "
                "says\u201d from the reading above the answer, or rephrase.)")


# --- running the operation -------------------------------------------------------------------
def run(plan: Plan, sel: Selection, retriever: Retriever, settings: Settings) -> Outcome:
    """Run ``plan.op`` on the selected papers (:func:`select`); the catalog facts the plan asks
    for (:attr:`rag.understand.plan.Plan.facts`: "was it an oral?", "what area is it in?") come
    first (:func:`rag.chat.facts.with_facts`)."""
    from rag.chat.facts import with_facts

    return with_facts(plan, _run(plan, sel, retriever, settings))


def _one_to_compare(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    """"compare them" when the papers in hand are one ("which of these are orals?" left one):
    said, and that paper's nearest papers offered instead (:func:`rag.chat.exact._similar`,
    without the filters that left one)."""
    from dataclasses import replace

    out = _similar(plan, replace(sel, filters=Filters()), retriever)
    head = note(f"There is only one paper here ({title(sel.hits[0])}), so there is nothing to "
                "compare it with; these are the papers nearest to it.")
    return Outcome([head] + out.sentences, "similar", out.hits, about=out.about)


def _run(plan: Plan, sel: Selection, retriever: Retriever, settings: Settings) -> Outcome:
    from rag.compose.refusal import MIN_DENSE

    op, hits = plan.op, sel.hits
    if plan.per_year:
        from rag.chat import yearly

        out = yearly.run(plan, sel, retriever)
        if out is not None:
            return out
        plan.per_year = False
        out = _run(plan, sel, retriever, settings)
        totals = yearly.trends.index_year_totals(retriever)
        out.sentences.insert(1, note(yearly.one_year_note(totals)))
        return out
    if op == "count":
        return _count(plan, sel, retriever)
    if op in ("list", "sort", "extreme"):
        return _rated(plan, sel, retriever)
    if op == "cite":
        return _cite(plan, sel)
    if op == "similar":
        return _similar(plan, sel, retriever)
    embedder = retriever.embedder
    if op == "compare":
        cols = sel.columns or (len(sel.focus) if len(sel.focus) >= 2 else
                               min(len(hits), plan.n or COMPARE_DEFAULT, COMPARE_MAX))
        if cols >= 2 and len(hits) >= 2:
            from rag.compose.compare import build_comparison
            from rag.compose.roles import MIN_ROLE, aspect_row

            first, scorer = aspect_row(plan.aspect)
            table = build_comparison(hits[:cols], embedder, first, scorer, MIN_ROLE)
            body = extractive.compose("compare", plan.query, hits, embedder, comparison=table,
                                   min_dense=MIN_DENSE)
            return Outcome(body, "compare", hits, table, list(range(1, cols + 1)), True)
        if len(hits) == 1 and not sel.searched:
            return _one_to_compare(plan, sel, retriever)
        op = "describe"
    if plan.aspect and op in ("survey", "lookup") and (sel.searched or len(hits) > 1):
        from rag.compose.aspects import aspect_survey

        sentences, papers = aspect_survey(plan.aspect, plan.query, hits, embedder, MIN_DENSE,
                                          chosen=not sel.searched)
        return Outcome(sentences, "survey", papers, prose=False,
                       about=list(range(1, len(papers) + 1)))
    if op == "survey" and sel.searched:
        shown = hits[:plan.n] if plan.n else hits  # "show me 5 oral papers on X": five
        return Outcome(extractive.compose("survey", plan.query, shown, embedder,
                                       min_dense=MIN_DENSE), "survey", shown, prose=True)
    if op == "authors":
        return Outcome(extractive.compose("authors", plan.query, hits, embedder), "authors", hits)
    if op == "number" and sel.searched and plan.papers == "search":
        return Outcome(extractive.compose("number", plan.query, hits, embedder), "number", hits)
    if op == "lookup" and plan.papers in ("previous", "focus") and len(hits) > 1 and \
            len(sel.focus) > 1:
        return _pick_among(plan, sel, retriever)
    discussed = plan.papers in ("previous", "focus", "positions", "named") or op == "number"
    if discussed:
        focus = sel.focus or [1]
        body = extractive.compose("followup", plan.query, hits, embedder, focus=focus,
                               aspect=plan.aspect or ("results" if op == "number" else ""),
                               figures=op == "number")
        return Outcome(body, "describe" if op == "describe" else "followup", hits, about=focus,
                       prose=True, focused=True)
    kind = "describe" if op == "describe" else "lookup"
    on_topic = None
    if kind == "lookup" and sel.searched and len(hits) > 1:
        from rag.retrieve.membership import membership

        m = membership(retriever, plan.query)
        if m is not None:  # "Also relevant:" lists only papers on the question's topic
            on_topic = lambda h: m.prob(h.id) >= m.show  # noqa: E731
    return Outcome(extractive.compose(kind, plan.query, hits, embedder, aspect=plan.aspect,
                                   min_dense=MIN_DENSE, on_topic=on_topic), kind, hits,
                   prose=True)


class _Members(list):
    """Hit numbers on a topic (a list), with the threshold of the rule that chose them."""

    threshold: float = 0.0


def _members_among(topic: str, hits: Sequence[Hit], retriever: Retriever) -> _Members | None:
    """The numbers (1-based) of ``hits`` the relevance model counts as about ``topic``
    (:mod:`rag.retrieve.membership`: the topic's candidates and these papers, scored alike),
    most likely first (empty when none of them is); None when no model applies (a fake): the
    caller then picks by the turn's terms."""
    from rag.retrieve.membership import membership

    ids = [h.id for h in hits]
    m = membership(retriever, topic, extra=ids)
    if m is None:
        return None
    on = {pid for pid in m.members(set(ids))}
    out = _Members(sorted((n for n, pid in enumerate(ids, start=1) if pid in on),
                          key=lambda n: -m.prob(ids[n - 1])))
    out.threshold = m.threshold
    return out


def _pick_among(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    """"Which of these use quantization?": the previous answer's papers whose title or abstract
    has the turn's terms (:func:`rag.chat.term_pick.pick_by_terms`), each with its best
    sentence for the turn, then the others; with no such term, the papers whose best sentence
    is within :data:`rag.compose.quotes.QUOTE_RELATIVE` of the best one's relevance (none for a
    turn that narrows in so many words, "only the ones doing X")."""
    from rag.backends.lexical import query_terms
    from rag.compose.quotes import QUOTE_RELATIVE

    hits = sel.hits
    asked = re.split(r"\b(?:rather\s+than|instead\s+of|but\s+not|except|excluding|other\s+than)\b",
                     plan.query, maxsplit=1, flags=re.I)[0]  # "VLMs rather than text-only LLMs"
    about = about_topic(asked)
    # (the topic's terms: not "narrow", nor "target" of "the ones that target X")
    by_terms, picking = pick_by_terms(about or narrowed(asked), hits, extractive.GENERIC_TERMS)
    cands = candidates(narrowed(plan.query), hits, retriever.embedder)
    best = {n: (cands[n] or [None])[0] for n in range(1, len(hits) + 1)}
    score = {n: c.score if c else -1.0 for n, c in best.items()}
    members = _members_among(about, hits, retriever) if about else None
    if members:  # "which of these are about LLMs?": by meaning, not by the string "LLM"
        chosen = members
        picking = set()
    elif picking:
        chosen = by_terms
    elif members is not None or narrows(asked):  # "only the ones on diffusion models": none is,
        chosen = []                               # nor says it
    else:
        top = max(score.values(), default=0.0)
        chosen = [n for n in score if top > 0 and score[n] >= QUOTE_RELATIVE * top]
    chosen.sort(key=lambda n: -score[n])
    rest = [n for n in range(1, len(hits) + 1) if n not in chosen]
    order = chosen + rest
    new_hits = [hits[n - 1] for n in order]
    quotes = {}
    for i, n in enumerate(order, start=1):
        ok = [c for c in cands[n] if picking & set(query_terms(c.text))] if picking else []
        quotes[i] = ok[0] if ok else best[n]
    scope = sel.scope or f"the {len(hits)} papers of the previous answer"
    one = len(chosen) == 1  # "1 of the 15 papers ... is about"
    if members:
        how = f"{'is' if one else 'are'} about “{about}”"
    elif picking:
        how = "says so in its abstract" if one else "say so in their abstracts"
    else:
        how = "comes closest, by its abstract" if one else "come closest, by their abstracts"
    if chosen:
        out = [direct(f"{len(chosen)} of {scope} {how}:", list(range(1, len(chosen) + 1)))]
        out += [item(new_hits[i - 1], i, quotes[i]) for i in range(1, len(chosen) + 1)]
        if members:
            out.append(note(f"By the relevance model: a paper counts when its probability of "
                            f"being about the topic is at least {members.threshold:.2f}"
                            + (f"; the other {len(rest)} are under it." if rest else ".")))
        elif rest and picking:
            out.append(note(f"The other {len(rest)} do not say it in their abstracts."))
    elif members is not None:
        out = [note(f"None of {scope} is about “{about}”: the relevance model gives none of them "
                    f"a probability of at least {members.threshold:.2f}, and none says it in "
                    f"its abstract; the closest:")]
    else:
        out = [note(f"None of {scope} says this in its abstract; the closest:")]
    if not chosen:
        out += [item(new_hits[i - 1], i, quotes[i]) for i in range(1, min(3, len(new_hits)) + 1)]
    # (none chosen: the papers in hand stay the ones under discussion, not the closest one)
    shown = len(chosen) or len(new_hits)
    return Outcome(out, "lookup", new_hits, about=list(range(1, shown + 1)), prose=False)
