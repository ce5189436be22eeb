"""Papers chosen from the conversation: the previous answer's numbered papers (``previous``, in
its order, or every paper a catalog answer matched or a topic count counted), the papers it was
about (``focus``, with a paper of it that the follow-up's own search ranks above them), its
papers [n] (``positions``, from the answer before it when it showed too few), the two papers of
two turns about one paper each ("compare the two"), and the one of its papers a description
names ("the protein one"). Filters act on them exactly; when none passes, the previous search
is run again under the filters (:mod:`rag.chat.selection`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

from rag.chat.selection import (COMPARE_DEFAULT, COMPARE_MAX, Selection, _about, _as_hits,
                                _catalog, _search)
from rag.compose.templates import note
from rag.conference import facets
from rag.filters import FilterError, Filters
from rag.text import normalise
from rag.types import Hit, Paper
from rag.understand.plan import Plan
from rag.understand.topics import has_topic, survey_topic

if TYPE_CHECKING:
    from rag.backends.seams import Retriever
    from rag.settings import Settings
    from rag.understand.history import Turn


#: A follow-up after a single best match is also about a paper of the previous answer that its
#: own search ranks above that match, within this many hits (the user's "they" may mean it).
FOLLOWUP_RUNNER_UP_RANK = 3


def _compare_with_discussed(plan: Plan, sel: Selection, prev: Turn) -> None:
    """Put the paper under discussion first in a comparison whose other side the turn names
    or describes; the columns are that paper and the best of the others."""
    first = prev.discussed[0]
    others = [h for h in sel.hits if h.id != first.id]
    sel.hits = [Hit(first, sel.hits[0].score)] + others
    named = len([i for i in dict.fromkeys(plan.ids) if i != first.id])
    sel.columns = min(COMPARE_MAX, 1 + max(1, named), len(sel.hits))  # "it vs A and B": 3
    sel.focus = list(range(1, sel.columns + 1))
    sel.standalone = _about(plan.said, [h.paper for h in sel.hits[:sel.columns]])


def _area_before(prev: Turn) -> str:
    """The area "that area" means after ``prev``: its filter's (the plan's, or the catalog
    answer's), else the primary area of the paper it was about; ``""`` when it had none."""
    for f in list(prev.plan.get("filters") or []) + list(prev.matched_filters or []):
        if f.startswith("primary_area="):
            return f.split("=", 1)[1]
    return prev.discussed[0].primary_area if prev.papers else ""


#: Answer kinds about one paper: two such turns in a row ("tell me about A", "and B?") are the
#: pair a following "compare the two" or "bibtex for both" means.
_ONE_PAPER_KINDS = ("lookup", "describe", "followup", "authors", "number", "cite")


def _paired(plan: Plan, source: str, prev: Turn, history: Sequence[Turn]) -> Turn:
    """``prev``, or, when the turn asks for two papers (``plan.n`` 2: "both", "the two") or
    compares the paper under discussion or the previous papers ("compare them") with nothing
    named, and the last two turns were each about one paper, a copy of ``prev`` whose papers
    under discussion are those two (the earlier first)."""
    if source not in ("focus", "previous") or len(prev.discussed) != 1 or len(history) < 2 or \
            not (plan.n == 2 or plan.op == "compare" and not plan.sides and not plan.n):
        return prev  # "compare them" after "what is VitaBench?", "and the Tool Decathlon?" too
    earlier = history[-2]
    if earlier.kind not in _ONE_PAPER_KINDS or prev.kind not in _ONE_PAPER_KINDS or \
            not earlier.papers or earlier.papers[0].id == prev.papers[0].id:
        return prev
    first = earlier.papers[0]
    rest = [p for p in prev.papers if p.id != first.id]
    return replace(prev, papers=[first] + rest, focus=2)


#: "any that got 8+", "which of them", "any orals": a filter asked of several papers.
_ANY_OF_SEVERAL = re.compile(r"\b(?:any|which|those|these|them|ones)\b", re.I)


def _list_asked(plan: Plan, source: str, prev: Turn, history: Sequence[Turn]) -> Turn | None:
    """The list before ``prev`` when ``prev`` was about one of its papers by its number ("what
    does the third one propose?") and this turn filters several ("any that got high reviewer
    scores, like 8+?") or sorts them ("sort them by rating", which sorted the one paper): the
    list's papers are meant, not the one paper (whose filter leaves none and searched the
    describing turn's words, off the topic); else None."""
    if source not in ("focus", "previous") or plan.op not in ("count", "list", "sort", "extreme") \
            or not (plan.filters or plan.op == "sort") or len(prev.discussed) != 1 or \
            prev.plan.get("papers") != "positions" or not _ANY_OF_SEVERAL.search(plan.said):
        return None
    return next((t for t in reversed(history) if t is not prev and len(t.shown) > 1), None)


#: Operations that act on every paper a previous catalog answer matched, not only those shown.
_WHOLE_SET_OPS = ("count", "list", "sort", "extreme", "cite")


def _matched_before(prev: Turn, retriever: Retriever) -> list[Paper]:
    """Every paper of the index the previous answer's filters admitted, best rated first, when
    it was a catalog reading (:attr:`rag.understand.history.Turn.matched_filters`), else ``[]``."""
    if prev.matched_filters is None:
        return []
    try:
        wanted = Filters.parse(prev.matched_filters) if prev.matched_filters else None
    except FilterError:
        return []
    return facets.by_rating(facets.matching(retriever.papers, wanted))


def _showed(prev: Turn) -> str:
    """"The previous answer showed 15 papers" (or "1 paper")."""
    n = len(prev.numbered)
    return f"The previous answer showed {n} paper{'s' if n != 1 else ''}"


def _list_with(positions: Sequence[int], prev: Turn, history: Sequence[Turn],
               notes: list) -> Turn:
    """The answer whose numbers ``positions`` are: ``prev``, or, when it showed fewer papers
    and the answer just before it showed enough ("the BibTeX of the second one" after "which of
    these are orals?" found one), that earlier one, said in a note."""
    if not positions or all(n in prev.numbered for n in positions):
        return prev
    earlier = [t for t in history if t.numbered and t is not prev]
    before = earlier[-1] if earlier else None
    if before is None or history[-1] is not prev or not all(n in before.numbered for n in positions):
        return prev
    notes.append(note(f"{_showed(prev)}, so {', '.join(f'[{n}]' for n in positions)} "
                      f"{'is' if len(positions) == 1 else 'are'} taken from the answer before it "
                      f"({len(before.numbered)} papers)."))
    return before


def _searched_topic(prev: Turn) -> tuple[str, Filters | None] | None:
    """(topic, its filters or ``None``) of a previous answer that searched a topic (its plan's
    ``papers`` was "search"), else ``None``."""
    plan = prev.plan or {}
    topic = plan.get("topic") or plan.get("query") or ""
    if plan.get("papers") != "search" or not has_topic(topic):
        return None
    try:
        return topic, Filters.parse(plan["filters"]) if plan.get("filters") else None
    except FilterError:
        return None


def _counted_before(prev: Turn, retriever: Retriever) -> list[Paper]:
    """Every paper a previous count of a topic counted (:func:`rag.conference.facets.topic_members`,
    by meaning, or :func:`rag.conference.facets.topic_matches` by phrase where no membership model
    applies), best rated first; ``[]`` when it was no such count."""
    searched = _searched_topic(prev)
    if prev.kind != "count" or searched is None:
        return []
    topic, used = searched
    found = facets.topic_members(retriever, topic, used)
    if found is not None and found.papers:
        return facets.by_rating(found.papers)
    return facets.by_rating(facets.topic_matches(topic, retriever.papers,
                                                 retriever.search_texts(), used))


def _on_topic_instead(plan: Plan, prev: Turn, used: Filters, scope: str,
                      retriever: Retriever, notes: list) -> Selection | None:
    """"any orals?" when none of the previous answer's papers is one: the papers on its topic
    that match, by the relevance model (:func:`rag.conference.facets.topic_members`: "none of
    the 8 are orals; among the 11 papers on this topic, 2 are"), or that none does, never
    papers off the topic. None when the previous answer was no search of a topic
    (:func:`_searched_topic`) or no membership model applies (the caller then searches the
    previous question again)."""
    searched = _searched_topic(prev)
    topic = survey_topic(searched[0]) if searched else ""
    if not has_topic(topic):
        return None
    every = facets.topic_members(retriever, topic, searched[1])
    if every is None or not every.papers:
        return None
    matching = [p for p in every.papers if used.matches(p)]
    # the model's candidates are the few hundred papers nearest the topic: searched again
    # within the papers the filter admits, it finds those on the topic that ranked lower
    # (on 19,630 papers, the orals on graph neural networks are not among the first 300)
    scope_filters = used.merged(searched[1]) if searched[1] else used
    inputs = getattr(retriever, "fusion_inputs", None)
    inside = facets.topic_members(retriever, topic, scope_filters, within=scope_filters,
                                  reference=inputs(topic) if inputs is not None else None)
    # (judged against the topic's best papers over the whole index: the orals' nearest paper
    # to "grokking" is not about grokking because it is the nearest)
    seen = {p.id for p in matching}
    matching += [p for p in (inside.papers if inside is not None else []) if p.id not in seen]
    what = facets.describe(used)
    rule = (f"by the relevance model, probability of being about “{topic}” at least "
            f"{every.threshold:.2f}")
    if not matching:
        notes.append(note(f"None of {scope} matches {what}, and none of the {len(every.papers)} "
                          f"papers on this topic does either ({rule})."))
        return Selection([], standalone=_about(plan.said, []), filters=used, scope=scope,
                         total=0, notes=notes, focus=[], exact=True, explained=True)
    notes.append(note(f"None of {scope} matches {what}; among the {len(every.papers)} papers on "
                      f"this topic ({rule}), {len(matching)} "
                      f"{'does' if len(matching) == 1 else 'do'}:"))
    hits = _as_hits(matching)
    return Selection(hits, standalone=_about(plan.said, matching), filters=used,
                     scope=f"the {len(every.papers)} papers on this topic", total=len(every.papers),
                     notes=notes, focus=list(range(1, len(hits) + 1)))


#: Where a turn's papers came from when it worked on those of the answer before it.
_IN_HAND = ("previous", "focus", "positions")


def _topic_turn(prev: Turn, history: Sequence[Turn]) -> Turn:
    """The turn whose search gave ``prev``'s papers: ``prev``, or, when ``prev`` worked on the
    papers before it ("only keep the ones rated 6 or more", "now defenses against them"), the
    last earlier turn that searched."""
    if prev.plan.get("papers") not in _IN_HAND:
        return prev
    earlier = [t for t in history if t is not prev and t.plan.get("papers") == "search"]
    return earlier[-1] if earlier else prev


def _from_previous(plan: Plan, source: str, prev: Turn, used: Filters, retriever: Retriever,
                   settings: Settings, k: int, notes: list,
                   history: Sequence[Turn] = ()) -> Selection:
    shown = prev.shown
    whole: list[Paper] = []
    if source == "positions":
        wanted = [n for n in plan.positions if n in prev.numbered]
        missing = [n for n in plan.positions if n not in prev.numbered]
        if missing:
            notes.append(note(f"{_showed(prev)}, so "
                              f"{', '.join(f'[{n}]' for n in missing)} "
                              f"{'is' if len(missing) == 1 else 'are'} not among them."))
        if not wanted:  # "tell me about the 40th one" after 15: said, not another guessed
            return Selection([], refused=True, standalone=plan.said, notes=notes,
                             explained=True)
        papers = [prev.numbered[n] for n in wanted]
        scope = (f"paper{'s' if len(papers) > 1 else ''} "
                 f"{', '.join(f'[{n}]' for n in wanted)} of the previous answer")
    elif source == "focus":
        papers = prev.discussed
        scope = "the paper under discussion" if len(papers) == 1 else \
            f"the {len(papers)} papers under discussion"
    else:
        # after "the top 5 in RL by rating", "which of these are orals" means those five, not
        # the runners-up shown below them nor every RL paper
        picked = prev.plan.get("op") == "extreme" and bool(prev.plan.get("n"))
        papers = prev.discussed if picked else shown
        if prev.plan.get("op") == "extreme" and plan.op in ("extreme", "sort"):
            # "and the worst?" after "best one?": of the set the best was picked from, not
            # of the one paper shown
            over = [retriever.papers[i] for i in prev.plan.get("ids") or []
                    if i in retriever.papers]
            if len(over) > len(papers):
                papers, picked = over, False
        scope = (f"the {len(papers)} papers of the previous answer" if len(papers) != 1
                 else "the one paper of the previous answer")
        whole = _matched_before(prev, retriever) if plan.op in _WHOLE_SET_OPS and \
            not picked else []
        counted = _counted_before(prev, retriever) if plan.op in _WHOLE_SET_OPS and \
            not picked and not whole else []
        if whole and len(whole) >= len(shown):  # all it found, shown or not: a whole set
            papers = whole
            if len(whole) > len(shown):  # "how many of those are orals?" after "the RL orals"
                scope = f"the {len(papers):,} papers the previous answer found"
        elif len(counted) > len(shown):  # "how many of those are orals?" after "how many
            papers = counted  # papers on X?": of the 34 it counted, not the 10 it showed
            scope = f"the {len(papers):,} papers the previous answer counted"
    plan.ids = [p.id for p in papers]
    total = len(papers)
    kept = [p for p in papers if not used or used.matches(p)]

    def none_of_them(explained: bool = False) -> Selection:
        """No paper of those in hand: the answer is that none of them matches."""
        return Selection([], standalone=_about(plan.said, papers), filters=used, scope=scope,
                         total=total, notes=notes, focus=[], exact=True, explained=explained)

    if used and not kept and plan.op == "count":
        # "how many of them are orals?" and none is: 0 of them, not a count of another set
        return none_of_them()
    if used and not kept and whole and len(whole) == len(papers) and prev.plan.get(
            "papers") == "catalog":
        # "which were orals?" after "papers by Sergey Levine": every one of his papers was in
        # hand, so none is the answer, not every oral of the index
        notes.append(note(f"None of {scope} matches {facets.describe(used)}."))
        return none_of_them()
    if used and not kept and not facets.matching(retriever.papers, used):
        # "did any get a spotlight?" where the list has no spotlights at all: said so, with
        # what it has, not a search for the earlier question's papers that match (none)
        notes.append(note(f"None of {scope} matches {facets.describe(used)}, and no paper in "
                          f"this index does (it holds {len(retriever.papers):,} papers: "
                          f"{facets.status_breakdown(list(retriever.papers.values()))})."))
        return none_of_them(explained=True)
    if used and not kept:
        what = facets.describe(used)
        # (the topic of the search the papers came from, when the last turn worked on them)
        on_topic = _on_topic_instead(plan, _topic_turn(prev, history), used, scope, retriever,
                                     notes)
        if on_topic is not None:
            return on_topic
        if prev.plan.get("papers") in _IN_HAND:
            # "and which of those are orals?" after "only keep the ones rated 6 or more" with no
            # topic model: that turn searched nothing, so a new search for its words would find
            # no topic (it listed all 224 orals of the list)
            notes.append(note(f"None of {scope} matches {what}."))
            return none_of_them(explained=True)
        said_at = len(notes)
        # after the direct line ("19 of the most relevant papers on this topic match ..."):
        notes.append(note(f"None of {scope} matches {what}, so these come from a new search "
                          "for the previous question:"))
        from rag.compose.refusal import MIN_DENSE

        fresh = replace(plan, papers="search", query=prev.standalone or prev.question)
        sel = _search(fresh, [], used, retriever, settings, max(k, facets.LISTED), notes)
        if (sel.refused or not sel.hits) and (used.values.get("status") or
                                              used.values.get("primary_area")):
            # "probabilistic methods area, please" after an answer about nothing in it: the
            # area's papers, not a search of the earlier words in it (refused)
            notes[said_at] = note(f"None of {scope} matches {what}, and no paper of it is about "
                             f"the earlier question; every paper that matches instead:")
            return _catalog(replace(plan, order=""), used, retriever, notes)
        relevant = [h for h in sel.hits if h.dense >= MIN_DENSE]  # on the topic, not any oral
        if sel.hits and len(relevant) < len(sel.hits):
            sel.hits = relevant or sel.hits[:1]
            sel.total = len(sel.hits)
        sel.scope = "the most relevant papers on this topic"
        return sel
    hits = _as_hits(kept)
    sel = Selection(hits, standalone=_about(plan.said, kept), filters=used, scope=scope,
                    total=total, notes=notes, focus=list(range(1, len(hits) + 1)))
    if whole and source == "previous":
        sel.matched = list(dict.fromkeys(list(prev.matched_filters or []) +
                                         (used.as_strings() if used else [])))
    elif plan.op == "survey" and not used and prev.matched_filters is not None and \
            source == "previous":
        # "what are typical topics there?" after a listing of an area: a summary of its cards
        # leaves the set as it was, so "how many does it have in total?" still counts the area
        sel.matched = list(prev.matched_filters)
    if plan.op == "compare":
        # "compare them" after 4 papers: all 4; after 15, the first COMPARE_DEFAULT
        few = len(hits) <= COMPARE_MAX
        sel.columns = min(len(hits), COMPARE_MAX) if source != "previous" else \
            min(len(hits), plan.n or (COMPARE_MAX if few else COMPARE_DEFAULT), COMPARE_MAX)
    if source == "focus" and plan.op in ("describe", "number", "authors", "lookup") \
            and len(kept) == 1:
        _add_runner_up(sel, plan, prev, retriever, settings, k, used)
    return sel


def _add_runner_up(sel: Selection, plan: Plan, prev: Turn, retriever: Retriever,
                   settings: Settings, k: int, used: Filters) -> None:
    """A follow-up about one paper: its own search (the previous question and this turn) fills
    the cards after the focus paper, and a paper of the previous answer that this search ranks
    above the focus (within :data:`FOLLOWUP_RUNNER_UP_RANK`) joins the papers under discussion."""
    query = f"{prev.standalone or prev.question} {plan.query}".strip()
    res = retriever.search(query, k=k, filters=used or None, evidence=False, feedback=False)
    focus = sel.hits[0]
    known = {p.id for p in prev.papers}
    ranked = [h.id for h in res.hits[:FOLLOWUP_RUNNER_UP_RANK]]
    mine = ranked.index(focus.id) if focus.id in ranked else len(ranked)
    extra = next((h for h in res.hits[:mine] if h.id in known), None)
    first = [Hit(focus.paper, res.hits[0].score if res.hits else 1.0)]
    if extra is not None:
        first.append(extra)
    ids = {h.id for h in first}
    sel.hits = (first + [h for h in res.hits if h.id not in ids])[:max(k, len(first))]
    sel.focus = list(range(1, len(first) + 1))
    sel.top_dense = max(res.dense.scores[:1], default=0.0)
    sel.standalone = _about(plan.said, [h.paper for h in first])
    plan.ids = [h.id for h in first]


#: A paper of the previous answer is the one a description names ("the protein one") when its
#: paper vector is the most similar to the description by at least this much cosine more than
#: the next paper's (else the description is searched like any topic).
DESCRIBED_MARGIN = 0.03


def _described(plan: Plan, prev: Turn, retriever: Retriever) -> bool:
    """Resolve a description of one of the previous answer's papers ("the one about medical
    segmentation", "the benchmark one") to that paper: the most similar of their paper vectors
    to the description's embedding, by :data:`DESCRIBED_MARGIN` over the next. Sets
    ``plan.ids``; returns whether it did."""
    import numpy as np

    shown = prev.shown
    if not shown:
        return False
    found, vecs = retriever.paper_vectors().take([p.id for p in shown])
    if not found:
        return False
    q = retriever.embedder.embed([normalise(plan.names[0] if plan.names else plan.query)])[0]
    sims = vecs @ np.asarray(q, dtype=np.float32)
    order = np.argsort(-sims)
    if len(order) > 1 and sims[order[0]] - sims[order[1]] < DESCRIBED_MARGIN:
        return False
    plan.ids = [found[int(order[0])]]
    return True
