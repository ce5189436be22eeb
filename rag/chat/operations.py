"""Execute a :class:`rag.understand.plan.Plan`: choose its papers (:func:`select`), then run its operation
on them (:func:`run`) into the answer's sentences. Nothing here reads the turn's words: what to
search is the plan's ``query`` / ``topic``, what to do its ``op``, ``aspect``, ``filters``,
``order`` and ``n``.

Which papers:

* ``search``: hybrid retrieval (:meth:`rag.retrieve.retriever.Retriever.search`) of the plan's query under
  its filters, ``k`` papers (more for operations over many papers: :data:`POOL`), refused when
  no paper is relevant (:mod:`rag.compose.refusal`); comparison sides are searched one by one;
* ``previous``: the previous answer's numbered papers, in its order; ``focus``: the papers it was
  about (a follow-up also gets the previous answer's paper its own search ranks above the
  focus, within :data:`FOLLOWUP_RUNNER_UP_RANK`); ``positions``: its papers [n];
* ``named``: the papers whose names the turn used (resolved by :mod:`rag.understand.names`), else a search
  for the names (an unknown name is refused);
* ``catalog``: every paper the filters admit.

Filters act on every source: on the previous answer's papers exactly, and when none of them
passes, the previous search is run again under the filters (the answer says so). Counts,
extremes and sorts are exact over the chosen papers and come from the catalog, never from a
model; ties are stated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

from rag.compose import extractive as compose
from rag.conference import facets
from rag.compose.extractive import direct, heading, item, note
from rag.filters import FilterError, Filters
from rag.understand.plan import Plan
from rag.understand.names import fold
from rag.understand.slots import has_topic, names_only_an_aspect
from rag.text import normalise
from rag.types import AnswerSentence, Hit, Paper

if TYPE_CHECKING:
    from rag.understand.history import Turn
    from rag.backends.seams import Retriever
    from rag.settings import Settings

#: Papers a search fetches for operations over many papers (a survey draws on 8-15 relevant
#: papers, a sort or an extreme on the 20 most relevant); others fetch ``k``.
POOL = {"survey": 15, "sort": facets.RATED_POOL, "extreme": facets.RATED_POOL,
        "count": facets.LISTED, "list": facets.RATED_POOL, "cite": 5}
#: Papers a survey of one aspect searches, to find 8-15 whose abstracts state it.
ASPECT_POOL = 30
#: A follow-up after a single best match is also about a paper of the previous answer that its
#: own search ranks above that match, within this many hits (the user's "they" may mean it).
FOLLOWUP_RUNNER_UP_RANK = 3
#: Neighbours a "similar papers" answer lists.
SIMILAR_K = 8
#: Papers a comparison of "the previous answer's papers" takes when the turn names no number
#: and they are more than :data:`COMPARE_MAX` (all of them when they are fewer).
COMPARE_DEFAULT = 3
#: Most papers one table compares.
COMPARE_MAX = 5
#: Papers of a catalog reading that become hits (cards), best rated first.
CATALOG_SHOWN = 20


@dataclass
class Selection:
    """The papers a plan chose. ``hits`` are the answer's papers ([1], [2] ...), ``refused``
    says that none fits, ``standalone`` is what the answer says it searched for, ``focus`` the
    hit numbers under discussion, ``columns`` how many of the first hits a comparison compares,
    ``filters`` every filter applied (the caller's and the plan's), ``scope`` the chosen set in
    words ("the 8 papers of the previous answer"), ``total`` how many papers were in it before
    the filters, and ``notes`` statements for the answer's top (another language, no authors in
    the list, a filter that left nothing)."""

    hits: list[Hit]
    refused: bool = False
    standalone: str = ""
    focus: list[int] = field(default_factory=lambda: [1])
    columns: int = 0
    filters: Filters = field(default_factory=Filters)
    scope: str = ""
    total: int = 0
    notes: list[AnswerSentence] = field(default_factory=list)
    top_dense: float = 0.0
    searched: bool = False
    #: Every paper chosen when there may be thousands (a catalog reading): counts, sorts and
    #: extremes run over these; ``hits`` then holds only the first :data:`CATALOG_SHOWN`.
    every: list[Paper] | None = None
    #: The filters whose every match this selection holds when it is a whole catalog set
    #: without ``every`` ("the orals among the 114 papers the previous answer found"), else None.
    matched: list[str] | None = None
    #: No paper is an answer ("how many of them are orals?": 0 of the 15), not a refusal.
    exact: bool = False
    #: The notes say why nothing is selected ("[40] is not among them"): the answer is them,
    #: without the refusal sentence.
    explained: bool = False


# --- a refine is the previous plan with one change -------------------------------------------
def resolve_refine(plan: Plan, history: Sequence[Turn], areas: Sequence[str] = ()) -> Plan:
    """A ``refine`` plan made concrete: the previous turn's plan with the new subject
    (``plan.topic``: "Which papers study KV cache compression?" then "And for vision
    transformers?" searches "Which papers study KV cache compression for vision transformers?";
    a previous change of subject is replaced, not stacked) and the new filters, which replace
    the previous filters on the same field ("how many orals in RL?" then "and in
    optimization?": the area changes, the decision stays). A new subject that is exactly one of
    ``areas`` (the index's primary areas) is that area's filter. Other plans are returned as
    they are."""
    from rag.understand.slots import ascending, match_area

    if plan.op != "refine":
        return plan
    prev = history[-1] if history else None
    if prev is None:
        return replace(plan, op="survey")
    base = Plan.from_json(prev.plan) if prev.plan else \
        Plan(op="survey", query=prev.standalone or prev.question)
    if base.op == "refine":
        base = replace(base, op="survey")
    if plan.ids and (base.papers in ("named", "focus", "positions") or
                     base.op in _NAMED_REFINE_OPS):
        # "tell me about Gaia2" then "and RealPDEBench?": the same question of the paper named
        op = base.op if base.op in _NAMED_REFINE_OPS else "describe"
        return replace(plan, papers="named", op=op, aspect=base.aspect, topic="",
                       query=plan.query, facts=base.facts)
    query = base.query or prev.standalone or prev.question
    earlier = base.subject
    subject = plan.topic if plan.topic and plan.topic != plan.query else ""
    if plan.aspect and base.aspect and plan.aspect != base.aspect and \
            names_only_an_aspect(plan.topic or plan.query):
        # "and what metrics?" after "what datasets are used to evaluate X?": the same papers'
        # other aspect, not a search for the words "what metrics"
        return replace(base, aspect=plan.aspect, positions=list(base.positions),
                       confidence=plan.confidence, said=plan.said, notes=plan.notes,
                       dropped=plan.dropped)
    if subject and _ORDER_ONLY.fullmatch(subject) and base.op in ("sort", "extreme"):
        # "and the lowest?" after the best-rated paper: the same papers, the other end
        return replace(base, order="rating_asc" if ascending(subject) else "rating_desc",
                       positions=[], ids=[], confidence=plan.confidence, said=plan.said,
                       notes=plan.notes, dropped=plan.dropped)
    said = list(plan.filters)
    area = match_area(subject, areas, exact=True) if subject and areas else None
    if area:
        said, subject = said + [f"primary_area={area}"], ""
    if not subject and not said:  # no new subject, no new filter: a question of its own
        return replace(plan, op=base.op if base.op not in ("refine", "count") else "survey",
                       papers="search", topic=plan.query)
    if subject:
        stem = query.rstrip(" ?.!")
        if earlier and stem.endswith(f" for {earlier}"):
            stem = stem[: -len(f" for {earlier}")]
        swapped = _swap_subject(stem, subject)
        query = f"{swapped}?" if swapped else f"{stem} for {subject}?"
    if base.papers in ("previous", "focus", "positions"):
        # "now the same but for the learning theory area" after "the worst rated among them":
        # the same operation on the part of the list the new filter names (or on the new
        # subject), not a search for the words "the worst rated among them"
        papers, query = ("search", subject) if subject else ("catalog", "")
    else:
        papers = base.papers if base.papers in ("search", "catalog") else "search"
    fields = {re.split(r"[=<>]", f)[0] for f in said}
    filters = list(dict.fromkeys([f for f in base.filters
                                  if re.split(r"[=<>]", f)[0] not in fields] + said))
    return replace(base, papers=papers, query=query, topic=subject or base.topic,
                   subject=subject or earlier, filters=filters, positions=[], ids=[],
                   confidence=plan.confidence, said=plan.said, notes=plan.notes,
                   dropped=plan.dropped)


#: A new subject that only names an end of the rating order ("the lowest", "worst one").
_ORDER_ONLY = re.compile(r"(?:the\s+)?(?:very\s+)?(?:best|worst|top|highest|lowest|bottom|least|"
                         r"weakest|strongest)(?:[-\s]+(?:rated|scored|scoring|reviewed|one|ones|"
                         r"paper|papers))*", re.I)
#: Operations a refine that names a paper asks again of that paper.
_NAMED_REFINE_OPS = ("describe", "lookup", "authors", "number", "cite", "similar")


_SUBJECT_STOP = frozenset("for on of in the a an to do does with about by from and or is are "
                          "what which how use used papers paper".split())


def _swap_subject(query: str, subject: str) -> str:
    """``query`` with the phrase that plays the new subject's part replaced by it: the words
    before a word of the query with the subject's head (its last word, plural or not), as many
    as the subject has, not crossing a function word ("... evaluating code agents" and "web
    agents" -> "... evaluating web agents"). ``""`` when no word of the query has that head
    ("KV cache compression" and "vision transformers": the caller adds "for vision
    transformers")."""
    words = query.split()
    new = subject.split()
    if not words or not new:
        return ""

    def head(w: str) -> str:
        w = re.sub(r"[^\w-]", "", w.lower())
        return w[:-1] if w.endswith("s") and len(w) > 3 else w

    want = head(new[-1])
    for j in range(len(words) - 1, -1, -1):
        if head(words[j]) != want or want in _SUBJECT_STOP:
            continue
        i = j
        while i > 0 and j - i + 1 < len(new) and words[i - 1].lower() not in _SUBJECT_STOP:
            i -= 1
        if " ".join(words[i:j + 1]).lower() == subject.lower():
            return ""  # the same subject: nothing to swap
        return " ".join(words[:i] + new + words[j + 1:])
    return ""


# --- notes about the list itself ---------------------------------------------------------
def list_notes(plan: Plan, filters: Filters, retriever: Retriever) -> tuple[Filters, list]:
    """The filters a list can apply, and notes for the ones it cannot: author names where the
    list has none (ICLR 2026 was anonymous), a year every paper has (dropped: it filters
    nothing) or none has."""
    notes = [note(n) for n in plan.notes if n]
    authors = filters.values.get("author", [])
    if authors and not any(p.authors for p in retriever.papers.values()):
        notes.append(note(f"This paper list has no author names (ICLR 2026 submissions were "
                          f"anonymous when it was made), so papers by {', '.join(authors)} "
                          "cannot be picked out."))
        filters = filters.without([f"author={a}" for a in authors])
    said_years = filters.values.get("year", [])
    if said_years:
        years = {p.year for p in retriever.papers.values() if p.year}
        missing = [y for y in said_years if int(y) not in years] if years else said_years
        if years and missing:
            notes.append(note(f"This index holds papers from {', '.join(map(str, sorted(years)))}"
                              f" only; {', '.join(missing)} cannot be filtered on."))
        if not years or set(int(y) for y in said_years) >= years:
            filters = filters.without([f"year={y}" for y in said_years])
    return filters, notes


# --- choosing the papers ---------------------------------------------------------------------
def _as_hits(papers: Sequence[Paper], score: float = 1.0) -> list[Hit]:
    return [Hit(p, score - i / 1000) for i, p in enumerate(papers)]


#: Operations that act on papers already shown ("cite them", "sort those"): with no earlier
#: answer that showed papers there is nothing for them to act on.
_ON_PAPERS_IN_HAND = ("cite", "sort", "extreme", "compare", "list", "similar")
NOTHING_BEFORE_NOTE = ("No earlier answer in this conversation showed papers, so there are none "
                       "to refer to here. Ask about a topic or name a paper.")


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
    if plan.op == "count" and source == "previous" and not said and prev.kind != "count" and \
            prev.matched_filters is None and (searched := _searched_topic(prev)):
        # "how many such papers in total?" after a search on X: the papers on X in the whole
        # index (a topic count, with the search's filters), not the 15 the answer showed
        notes.append(note(f"{_showed(prev)}; this counts every paper of the index on its "
                          "topic."))
        topic, before = searched
        plan.papers, plan.query, plan.topic = "search", topic, topic
        if before:
            plan.filters = list(dict.fromkeys(before.as_strings() + plan.filters))
            used = used.merged(before)
        source = "search"
    if source == "search" and not has_topic(plan.query) and (plan.op in (
            "count", "list", "sort", "extreme") or plan.op == "survey" and used):
        source = "catalog"  # "How many oral papers are there?": nothing left to search
    if plan.said and not any(ch.isalnum() for ch in plan.said) and not used:
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
    elif source == "catalog" and not used and any(f.startswith("author=") for f in plan.filters):
        # "papers by Yoshua Bengio" where the list has no author names (said in a note): no
        # paper is picked out, so none is listed (it listed all 5,358, and "cite all of them"
        # then gave 5,358 BibTeX entries)
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
        paired = _paired(plan, source, prev, history)
        if paired is not prev:
            source = "focus"  # the two papers of the last two turns, not the cards shown
        elif source == "positions":
            paired = _list_with(plan.positions, prev, history, notes)
        sel = _from_previous(plan, source, paired, used, retriever, settings, k, notes)
    elif source == "named" and not plan.ids and not plan.sides and prev is not None and \
            _described(plan, prev, retriever):
        sel = _named(plan, used, retriever, settings, k, notes)
    elif source == "named" and (plan.ids or plan.sides):
        sel = _named(plan, used, retriever, settings, k, notes)
    else:
        sel = _search(plan, history, used, retriever, settings, k, notes,
                      first_turn=not history)
    if plan.op == "compare" and source in ("named", "search") and prev is not None and \
            prev.papers and _REFERS_BACK.search(plan.said) and sel.hits and not sel.refused:
        _compare_with_discussed(plan, sel, prev)
    if evidence and sel.hits and not sel.refused:
        retriever.attach_evidence(plan.query or sel.standalone, sel.hits)
    return sel


def _catalog(plan: Plan, used: Filters, retriever: Retriever, notes: list) -> Selection:
    """Every paper of the index that ``used`` admits (``every``), the first
    :data:`CATALOG_SHOWN` by rating as the hits (lowest first for ``rating_asc``)."""
    chosen = facets.matching(retriever.papers, used or None)
    shown = facets.by_rating(chosen, descending=plan.order != "rating_asc")[:CATALOG_SHOWN]
    # "the 318 papers that match primary_area=reinforcement learning": an extreme or a sort
    # of a filtered part says which part (it said "the whole list" for the best RL paper)
    scope = (f"the {len(chosen):,} papers that match {facets.describe(used)}" if used
             else "the whole list")
    return Selection(_as_hits(shown), filters=used, scope=scope, total=len(retriever.papers),
                     notes=notes, standalone=plan.said, every=chosen)


#: A turn that compares something with the paper under discussion ("how does it compare to
#: Newton-Schulz?", "is this better than DPO").
_REFERS_BACK = re.compile(r"\b(?:it|its|this|that)\b(?!\s+(?:papers|ones|works)\b)", re.I)


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


#: What a turn read as outside the list (:attr:`rag.understand.plan.Plan.outside`) is told.
OUTSIDE_NOTE = ("This asks something the papers' list does not say: it holds each paper's "
                "title, abstract, keywords, area, decision and reviewer ratings, not the "
                "conference's dates, venue or awards, the reviews' text or other venues. "
                "(To search the papers anyway, remove \u201coutside what the papers' list "
                "says\u201d from the reading above the answer, or rephrase.)")


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
    """Every paper a previous count of a topic counted (:func:`rag.conference.facets.topic_matches`: "34
    papers contain the phrase ..."), best rated first; ``[]`` when it was no such count."""
    searched = _searched_topic(prev)
    if prev.kind != "count" or searched is None:
        return []
    topic, used = searched
    return facets.by_rating(facets.topic_matches(topic, retriever.papers,
                                                 retriever.search_texts(), used))


def _from_previous(plan: Plan, source: str, prev: Turn, used: Filters, retriever: Retriever,
                   settings: Settings, k: int, notes: list) -> Selection:
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
    if used and not kept and plan.op == "count":
        # "how many of them are orals?" and none is: 0 of them, not a count of another set
        return Selection([], standalone=_about(plan.said, papers), filters=used, scope=scope,
                         total=total, notes=notes, focus=[], exact=True)
    if used and not kept:
        what = facets.describe(used)
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


#: Most papers whose titles a standalone question lists ("... (about: A; B)"); more are counted.
ABOUT_TITLES = 2


def _about(said: str, papers: Sequence[Paper]) -> str:
    """The standalone question of a turn about given papers: ``"<turn> (about: <title>; ...)"``."""
    if not papers:
        return said
    if len(papers) > ABOUT_TITLES:
        return f"{said.rstrip()} (about: {len(papers)} papers of the previous answer)"
    return f"{said.rstrip()} (about: {'; '.join(p.title for p in papers)})"


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


def _missing_names(said: str, retriever: Retriever) -> list[str]:
    """Names in ``said`` that no indexed paper mentions (:func:`rag.compose.refusal.unknown_names`)."""
    from rag.compose.refusal import unknown_names

    return unknown_names(said, retriever)


def _named(plan: Plan, used: Filters, retriever: Retriever, settings: Settings, k: int,
           notes: list) -> Selection:
    if plan.sides and plan.op == "compare":
        return _search(plan, [], used, retriever, settings, k, notes)
    from rag.compose.refusal import unknown_names

    missing = unknown_names(plan.said, retriever)
    if missing:  # "the GlimmerPilot agent on Atari-57": the paper meant is not in this index
        notes.append(note(f"No paper in this index mentions {', '.join(missing)}."))
        return Selection([], refused=True, standalone=plan.said, filters=used, notes=notes)
    papers = [retriever.papers[i] for i in plan.ids if i in retriever.papers]
    kept = [p for p in papers if not used or used.matches(p)]
    if not kept:
        notes.append(note(f"{', '.join(plan.names)}: no such paper matches "
                          f"{facets.describe(used)}."))
        return Selection([], refused=True, standalone=plan.said, filters=used, notes=notes)
    hits = _as_hits(kept)
    # the cards after the named papers: what a search of the turn finds
    res = retriever.search(plan.query or " ".join(plan.names), k=k, filters=used or None,
                           evidence=False)
    ids = {h.id for h in hits}
    hits += [h for h in res.hits if h.id not in ids][:max(0, k - len(hits))]
    return Selection(hits, standalone=_about(plan.said, kept), filters=used,
                     scope=", ".join(plan.names), total=len(kept), notes=notes,
                     focus=list(range(1, len(kept) + 1)),
                     top_dense=max(res.dense.scores[:1], default=0.0), searched=True)


def _search(plan: Plan, history: Sequence[Turn], used: Filters, retriever: Retriever,
            settings: Settings, k: int, notes: list, first_turn: bool = False) -> Selection:
    from rag.compose.refusal import is_out_of_corpus

    query = plan.query or plan.said
    k = max(k, POOL.get(plan.op, 0), plan.n or 0)
    if plan.aspect and plan.op in ("survey", "lookup"):
        k = max(k, ASPECT_POOL)
    sides = plan.sides if plan.op == "compare" else []
    if len(sides) >= 2:
        side_res = [retriever.search(s, k=k, filters=used or None, evidence=False) for s in sides]
        merged = retriever.search(query, k=k, filters=used or None, evidence=False)
        hits: list[Hit] = []
        heads = retriever.name_index().heads
        for side, res in zip(sides, side_res):  # each side's best paper, then the fused list
            titled = heads.get(fold(side), []) if len(side.split()) == 1 else []
            if len(titled) == 1 and titled[0] in retriever.papers:  # "Cactus: ..." for "Cactus"
                best = next((h for h in res.hits if h.id == titled[0]),
                            Hit(retriever.papers[titled[0]], res.hits[0].score if res.hits
                                else 1.0))
                if best.id not in {h.id for h in hits}:
                    hits.append(best)
            elif res.hits and res.hits[0].id not in {h.id for h in hits}:
                hits.append(res.hits[0])
        columns = len(hits)
        for h in merged.hits + [h for r in side_res for h in r.hits[1:]]:
            if len(hits) >= k:
                break
            if h.id not in {x.id for x in hits}:
                hits.append(h)
        top = max(max(r.dense.scores[:1], default=0.0) for r in side_res + [merged])
    else:
        res = retriever.search(query, k=k, filters=used or None, evidence=False)
        hits, columns, top = res.hits, 0, max(res.dense.scores[:1], default=0.0)
    if first_turn and plan.said and plan.said != query and not sides:
        top = min(top, _said_top(plan.said, used, retriever))
    refused = is_out_of_corpus(query, hits, retriever, top_dense=top)
    if plan.op == "compare" and not columns:
        columns = min(len(hits), plan.n or COMPARE_DEFAULT, COMPARE_MAX)
    return Selection(hits, refused=refused, standalone=query, filters=used,
                     scope=f"the papers most relevant to “{query}”", total=len(hits),
                     notes=notes, columns=columns, top_dense=top, searched=True,
                     focus=list(range(1, columns + 1)) if columns else [1])


def _said_top(said: str, used: Filters, retriever: Retriever) -> float:
    """The best chunk cosine similarity of the turn as the user said it (a first turn): the
    quantity :data:`rag.compose.refusal.MIN_DENSE` was calibrated on (``shared/eval`` questions as
    asked). The search itself runs on the plan's topic, which drops the question's frame ("how
    many ...", "?"), and a topic can sit a hair above the threshold where the question does not
    (dev-078, tomato pruning: 0.302 against 0.299)."""
    import numpy as np

    vec = np.asarray(retriever.embedder.embed([said])[0], dtype=np.float32)
    return max(retriever.dense(vec, used or None).scores[:1], default=0.0)


# --- running the operation -------------------------------------------------------------------
@dataclass
class Outcome:
    """What an operation produced: the answer's sentences (the direct line first), its
    ``kind`` (:attr:`rag.types.Answer.kind`), the hits in the order the sentences number them,
    a comparison table when there is one, the hit numbers the answer is about (``about``) and
    whether a model may rewrite the body (``prose``: lookups, descriptions, surveys, follow-ups
    and comparisons; counts, lists, ratings, BibTeX and neighbours are exact and stay as
    composed)."""

    sentences: list[AnswerSentence]
    kind: str
    hits: list[Hit]
    table: object = None
    about: list[int] = field(default_factory=lambda: [1])
    prose: bool = False
    #: Composed about the papers ``about`` names, from the conversation (a follow-up on them, or
    #: a description of "the third one": kind ``describe``), not about the best match.
    focused: bool = False


def run(plan: Plan, sel: Selection, retriever: Retriever, settings: Settings) -> Outcome:
    """Run ``plan.op`` on the selected papers (:func:`select`); the catalog facts the plan asks
    for (:attr:`rag.understand.plan.Plan.facts`: "was it an oral?") come first."""
    out = _run(plan, sel, retriever, settings)
    if not out.hits or not {"status", "rating"} & set(plan.facts):
        return out
    about = [n for n in (out.about or [1]) if 1 <= n <= len(out.hits)][:COMPARE_MAX]
    if "status" in plan.facts:
        out.sentences = [direct(" ".join(_decision(out.hits[n - 1], n) for n in about),
                                about)] + out.sentences
    else:
        from rag.understand.slots import asks_only_rating

        fact = direct(" ".join(_rating_fact(out.hits[n - 1], n) for n in about), about)
        # "what's its rating?" asks nothing else: the abstract's sentences would answer nothing
        out.sentences = [fact] + ([] if asks_only_rating(plan.said) else out.sentences)
    return out


def _rating_fact(hit: Hit, n: int) -> str:
    """"GEPA: ... [1] has a mean reviewer rating of 6.5 (4 reviews, 4–8)."; the catalog's
    ratings (:meth:`rag.types.Paper.rating_text`)."""
    p = hit.paper
    said = p.rating_text()
    if not said:
        return f"{p.title} [{n}] has no reviewer ratings in this list."
    mean, _, rest = said.removeprefix("rating ").partition(" · ")
    return f"{p.title} [{n}] has a mean reviewer rating of {mean} ({rest})."


def _decision(hit: Hit, n: int) -> str:
    """"StepORLM: ... [1] was accepted as a poster (Accept (Poster); rating 6.5 · 4 reviews)."."""
    from rag.types import status_tier

    p = hit.paper
    tier = status_tier(p.status or "")
    said = {"oral": "was accepted as an oral", "spotlight": "was accepted as a spotlight",
            "poster": "was accepted as a poster"}.get(tier, f"has the decision {p.status!r}"
                                                      if p.status else "has no decision listed")
    extra = "; ".join(x for x in (p.status, p.rating_text()) if x)
    return f"{p.title} [{n}] {said}{f' ({extra})' if extra else ''}."


def _run(plan: Plan, sel: Selection, retriever: Retriever, settings: Settings) -> Outcome:
    from rag.compose.refusal import MIN_DENSE

    op, hits = plan.op, sel.hits
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
            body = compose.compose("compare", plan.query, hits, embedder, comparison=table,
                                   min_dense=MIN_DENSE)
            return Outcome(body, "compare", hits, table, list(range(1, cols + 1)), True)
        op = "describe"
    if plan.aspect and op in ("survey", "lookup") and (sel.searched or len(hits) > 1):
        from rag.compose.aspects import aspect_survey

        sentences, papers = aspect_survey(plan.aspect, plan.query, hits, embedder, MIN_DENSE,
                                          chosen=not sel.searched)
        return Outcome(sentences, "survey", papers, prose=False,
                       about=list(range(1, len(papers) + 1)))
    if op == "survey" and sel.searched:
        shown = hits[:plan.n] if plan.n else hits  # "show me 5 oral papers on X": five
        return Outcome(compose.compose("survey", plan.query, shown, embedder,
                                       min_dense=MIN_DENSE), "survey", shown, prose=True)
    if op == "authors":
        return Outcome(compose.compose("authors", plan.query, hits, embedder), "authors", hits)
    if op == "number" and sel.searched and plan.papers == "search":
        return Outcome(compose.compose("number", plan.query, hits, embedder), "number", hits)
    if op == "lookup" and plan.papers in ("previous", "focus") and len(hits) > 1 and \
            len(sel.focus) > 1:
        return _pick_among(plan, sel, retriever)
    discussed = plan.papers in ("previous", "focus", "positions", "named") or op == "number"
    if discussed:
        focus = sel.focus or [1]
        body = compose.compose("followup", plan.query, hits, embedder, focus=focus,
                               aspect=plan.aspect or ("results" if op == "number" else ""),
                               figures=op == "number")
        return Outcome(body, "describe" if op == "describe" else "followup", hits, about=focus,
                       prose=True, focused=True)
    kind = "describe" if op == "describe" else "lookup"
    return Outcome(compose.compose(kind, plan.query, hits, embedder, aspect=plan.aspect,
                                   min_dense=MIN_DENSE), kind, hits, prose=True)


#: A term of the turn picks among the previous answer's papers when at most this share of them
#: has it (a term all of them have, "LLM" after a search on LLMs, picks none).
PICK_MAX_SHARE = 0.6


def _pick_among(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    """"Which of these use quantization?": the previous answer's papers whose title or abstract
    has a term of the turn that not most of them have (:data:`PICK_MAX_SHARE`), each with its
    best sentence for the turn, then the others; with no such term, the papers whose best
    sentence is within :data:`rag.compose.extractive.QUOTE_RELATIVE` of the best one's relevance."""
    from rag.compose.extractive import QUOTE_RELATIVE, question_terms
    from rag.backends.lexical import query_terms

    hits = sel.hits
    asked = re.split(r"\b(?:rather\s+than|instead\s+of|but\s+not|except|excluding|other\s+than)\b",
                     plan.query, maxsplit=1, flags=re.I)[0]  # "VLMs rather than text-only LLMs"
    wanted = question_terms(asked) - compose.GENERIC_TERMS
    terms = {h.id: set(query_terms(f"{h.paper.title} {h.paper.abstract}")) for h in hits}
    picking = {t for t in wanted
               if 0 < sum(t in terms[h.id] for h in hits) <= PICK_MAX_SHARE * len(hits)}
    cands = compose.candidates(plan.query, hits, retriever.embedder)
    best = {n: (cands[n] or [None])[0] for n in range(1, len(hits) + 1)}
    score = {n: c.score if c else -1.0 for n, c in best.items()}
    if picking:
        chosen = [n for n in range(1, len(hits) + 1) if picking & terms[hits[n - 1].id]]
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
    how = "say so in their abstracts" if picking else "come closest, by their abstracts"
    if chosen:
        out = [direct(f"{len(chosen)} of {scope} {how}:", list(range(1, len(chosen) + 1)))]
        out += [item(new_hits[i - 1], i, quotes[i]) for i in range(1, len(chosen) + 1)]
        if rest and picking:
            out.append(note(f"The other {len(rest)} do not say it in their abstracts."))
    else:
        out = [note(f"None of {scope} says this in its abstract; the closest:")]
        out += [item(new_hits[i - 1], i, quotes[i]) for i in range(1, min(3, len(new_hits)) + 1)]
    return Outcome(out, "lookup", new_hits, about=list(range(1, max(1, len(chosen)) + 1)),
                   prose=False)


def _scope_head(plan: Plan, sel: Selection, n: int) -> str:
    """"3 of the 8 papers of the previous answer match status=oral" and the like."""
    what = facets.describe(sel.filters)
    if sel.every is not None:
        base = f"{n:,} of the {sel.total:,} papers in this index"
    else:
        base = f"{n:,} of {sel.scope}"
    return f"{base} match {what}." if what else f"{base}."


def _count(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    from rag.compose.refusal import MIN_DENSE

    hits = sel.hits
    if sel.searched and has_topic(plan.query):
        topic = plan.topic or plan.query
        n = facets.topic_count(topic, retriever.papers, retriever.search_texts(), sel.filters)
        total = len(facets.matching(retriever.papers, sel.filters or None))
        cands = compose.candidates(plan.query, hits, retriever.embedder)
        numbers = [1] + compose.relevant_others(hits, cands, {1}, MIN_DENSE)
        body = [facets.topic_count_head(topic, n, sel.filters or None, total),
                heading("The most relevant papers found:")]
        body += [facets.rated_item(hits[i - 1], i, (cands[i] or [None])[0]) for i in numbers]
        return Outcome(body, "count", hits)
    if sel.every is not None:
        sentences, listed = facets.facet_answer(retriever.papers, sel.filters or None,
                                                facets.LISTED)
        return Outcome(sentences, "count", listed)
    listed = facets.by_rating([h.paper for h in hits])
    out = [direct(_scope_head(plan, sel, len(hits)), [])]
    new_hits = _as_hits(listed[:CATALOG_SHOWN])
    out += [facets.rated_item(h, i, None) for i, h in enumerate(new_hits, start=1)]
    if len(listed) > len(new_hits):
        out.append(heading(f"… and {len(listed) - len(new_hits):,} more."))
    return Outcome(out, "count", new_hits)


def _rated(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    """``list``, ``sort`` and ``extreme`` over the chosen papers, by mean reviewer rating."""
    hits = sel.hits
    papers = sel.every if sel.every is not None else [h.paper for h in hits]
    if not papers:
        return Outcome([note(f"No paper matches {facets.describe(sel.filters)}.")],
                       plan.op if plan.op != "sort" else "rated", [])
    desc = plan.order != "rating_asc"
    ordered = facets.by_rating(papers, descending=desc)
    if plan.op == "list" and not plan.order and sel.searched:
        ordered = [h.paper for h in hits]  # a search's papers keep their relevance order
    rule = "" if not sel.searched else (f" (the {len(hits)} papers most relevant to the "
                                        "search; a paper about it in other words may be missing)")
    if plan.op == "extreme":
        n = max(1, plan.n or 1)
        rated = [p for p in ordered if p.rating]
        if not rated:
            return Outcome([note(f"None of {sel.scope} has reviewer ratings in this list.")],
                           "extreme", _as_hits(ordered))
        cut = rated[min(n, len(rated)) - 1].rating["mean"]
        chosen = [p for p in rated if (p.rating["mean"] >= cut if desc else
                                       p.rating["mean"] <= cut)]
        ties = len(chosen) > n
        word = "highest" if desc else "lowest"
        if n == 1:
            head = (f"The {word} mean reviewer rating among {sel.scope}{rule} is "
                    f"{chosen[0].rating['mean']}")
            head += (f", shared by {len(chosen)} papers (a tie):" if ties else ":")
        else:
            head = (f"The {len(chosen)} {word}-rated of {sel.scope}{rule}"
                    f"{' (ties at the cut included)' if ties else ''}:")
        # the papers asked for (and those tied with them), not the rest of the order: "best
        # one?" shows one paper
        chosen = chosen[:CATALOG_SHOWN]
        new_hits = _as_hits(chosen)
        out = [direct(head, list(range(1, len(chosen) + 1)))]
        out += [facets.rated_item(h, i, None) for i, h in enumerate(new_hits[:len(chosen)], 1)]
        return Outcome(out, "extreme", new_hits, about=list(range(1, len(chosen) + 1)))
    new_hits = _as_hits(ordered[:max(CATALOG_SHOWN, plan.n or 0)])
    if plan.op == "sort" or plan.order:
        unrated = sum(1 for p in ordered if not p.rating)
        head = (f"{sel.scope[0].upper() + sel.scope[1:]}{rule}, sorted by mean reviewer rating "
                f"({'highest' if desc else 'lowest'} first"
                f"{'; unrated papers last' if unrated else ''}):")
        tied = _ties(ordered)
        out = [direct(head, list(range(1, len(new_hits) + 1)))]
        if tied:
            out.append(note(tied))
        kind = "rated"
    else:
        out = [direct(_scope_head(plan, sel, len(papers)), [])]
        kind = "list"
    shown = new_hits[:max(facets.LISTED, plan.n or 0)] if sel.every is not None else new_hits
    out += [facets.rated_item(h, i, None) for i, h in enumerate(shown, start=1)]
    if len(shown) < len(papers):
        out.append(heading(f"… and {len(papers) - len(shown):,} more."))
    return Outcome(out, kind, new_hits, about=list(range(1, len(shown) + 1)))


def _ties(papers: Sequence[Paper]) -> str:
    """A statement of the rating ties among ``papers`` ("[2] and [3] are tied at 6.5"), or ""."""
    groups: dict[float, list[int]] = {}
    for i, p in enumerate(papers, start=1):
        if p.rating:
            groups.setdefault(p.rating["mean"], []).append(i)
    tied = [(m, ns) for m, ns in groups.items() if len(ns) > 1]
    if not tied:
        return ""
    parts = [f"{compose._and([f'[{n}]' for n in ns])} are tied at {m}" for m, ns in tied[:4]]
    return "Ties: " + "; ".join(parts) + " (ordered by number of reviews)."


def _cite(plan: Plan, sel: Selection) -> Outcome:
    from rag.conference.export import bibtex

    hits = sel.hits
    if plan.papers == "search" and sel.searched:
        chosen = hits[:plan.n or (1 if len(hits) and sel.refused is False and
                                  plan.n is None and False else len(hits))]
    else:
        chosen = hits[:len(sel.focus)] if plan.papers == "named" else hits
    if plan.n and plan.papers in ("previous", "search"):
        chosen = chosen[:plan.n]
    numbers = list(range(1, len(chosen) + 1))
    entries = bibtex([h.paper for h in chosen])
    what = "this paper" if len(chosen) == 1 else f"these {len(chosen)} papers"
    out = [direct(f"BibTeX for {what} ({compose._and([f'[{n}]' for n in numbers])}), "
                  "entries only, ready to import (Zotero, JabRef, a .bib file):", numbers),
           AnswerSentence(entries.strip(), numbers, kind="bibtex", support=1.0)]
    return Outcome(out, "cite", hits, about=numbers)


def _similar(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    if not sel.hits:
        return Outcome([note("There is no paper to compare with.")], "similar", [])
    target = sel.hits[0]
    near = retriever.similar(target.id, k=max(SIMILAR_K, plan.n or 0),
                             filters=sel.filters or None)
    if not near:
        return Outcome([note(f"{compose.title(target)} has no paper vector yet (it is not "
                             "embedded), so its neighbours cannot be found.")], "similar",
                       [target])
    title = compose.title(target)
    out = [direct(f"The papers closest to {title} (cosine similarity of the papers' mean "
                  "abstract embeddings, highest first):", list(range(1, len(near) + 1)))]
    for i, h in enumerate(near, start=1):
        c = compose.Candidate(i, h.evidence[0], 0, 1.0) if h.evidence else None
        s = item(h, i, c)
        s.text = s.text.replace(f"[{i}]", f"[{i}] ({h.score:.2f})", 1)
        out.append(s)
    return Outcome(out, "similar", near, about=list(range(1, len(near) + 1)))
