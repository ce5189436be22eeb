"""The papers a plan chose (:class:`Selection`) and the ways of choosing them afresh: a search
of the plan's query under its filters (``search``; comparison sides one by one; refused when
no paper is relevant, :mod:`rag.compose.refusal`), the papers whose names the turn used
(``named``, an unknown name refused) and every paper the filters admit (``catalog``).
:func:`rag.chat.operations.select` chooses among these and the conversation's papers
(:mod:`rag.chat.previous`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from rag.compose.templates import note
from rag.conference import facets
from rag.filters import Filters
from rag.types import AnswerSentence, Hit, Paper
from rag.understand.names import fold
from rag.understand.plan import Plan
from rag.understand.topics import has_topic

if TYPE_CHECKING:
    from rag.backends.seams import Retriever
    from rag.settings import Settings
    from rag.understand.history import Turn


#: Papers a search fetches for operations over many papers (a survey draws on 8-15 relevant
#: papers, a sort or an extreme on the 20 most relevant); others fetch ``k``.
POOL = {"survey": 15, "sort": facets.RATED_POOL, "extreme": facets.RATED_POOL,
        "count": facets.LISTED, "list": facets.RATED_POOL, "cite": 5}
#: Papers a survey without an aspect takes from the fused ranking, to order by their probability
#: of being on the topic and cut (:func:`_on_topic_first`).
RERANK_POOL = 50
#: Papers a survey of one aspect searches, to find 8-15 whose abstracts state it.
ASPECT_POOL = 30
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


def _as_hits(papers: Sequence[Paper], score: float = 1.0) -> list[Hit]:
    return [Hit(p, score - i / 1000) for i, p in enumerate(papers)]


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


#: Most papers whose titles a standalone question lists ("... (about: A; B)"); more are counted.
ABOUT_TITLES = 2


def _about(said: str, papers: Sequence[Paper]) -> str:
    """The standalone question of a turn about given papers: ``"<turn> (about: <title>; ...)"``."""
    if not papers:
        return said
    if len(papers) > ABOUT_TITLES:
        return f"{said.rstrip()} (about: {len(papers)} papers of the previous answer)"
    return f"{said.rstrip()} (about: {'; '.join(p.title for p in papers)})"


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
        # (a list of a topic's papers under a filter, "what about X?" after "only the orals":
        # the papers on X, not the filter's papers nearest the words; an author's are all his)
        cut = plan.op == "survey" and not plan.aspect or plan.op == "list" and bool(used) and \
            plan.papers == "search" and has_topic(query) and "author" not in used.values
        res = retriever.search(query, k=max(k, RERANK_POOL) if cut else k,
                               filters=used or None, evidence=False, topical=cut)
        hits, columns, top = res.hits, 0, max(res.dense.scores[:1], default=0.0)
        if cut:
            hits = _on_topic_first(query, hits, retriever, k, notes,
                                   [*((res.meta or {}).get("named") or []), hits[0].id]
                                   if hits else [], filtered=bool(used))
    if first_turn and plan.said and plan.said != query and not sides:
        top = min(top, _said_top(plan.said, used, retriever))
    # (a count under filters is answered even when nothing is near: "what about 2018?" after
    # the diffusion-model orals of 2026 is 0 of 2018's 23 orals, not a refusal)
    refused = is_out_of_corpus(query, hits, retriever, top_dense=top) and not (
        plan.op == "count" and used)
    if plan.op == "compare" and not columns:
        columns = min(len(hits), plan.n or COMPARE_DEFAULT, COMPARE_MAX)
    return Selection(hits, refused=refused, standalone=query, filters=used,
                     scope=f"the papers most relevant to “{query}”", total=len(hits),
                     notes=notes, columns=columns, top_dense=top, searched=True,
                     focus=list(range(1, columns + 1)) if columns else [1])


def _on_topic_first(query: str, hits: list[Hit], retriever: Retriever, k: int,
                    notes: list, pinned: Sequence[str] = (), filtered: bool = False
                    ) -> list[Hit]:
    """A survey's papers: the fused top :data:`RERANK_POOL` ordered by their probability of
    being on the topic blended with their fused rank
    (:meth:`rag.retrieve.membership.Membership.order_key`), those at or above its survey cut
    (:attr:`rag.retrieve.membership.MembershipModel.show`) kept, at most ``k``, at least one;
    when fewer than ``k`` pass, a note says how many and by what rule. ``hits`` unchanged (its
    first ``k``) when no membership model applies (a fake retriever). The papers of
    ``pinned`` (the ones the question names, and the fused first paper: the words themselves
    rank it first) stay first, shown whatever their probability. When the search was
    ``filtered``, every paper of ``hits`` is scored, whether the topic's own (unfiltered)
    search ranks it or not ("2018 orals on reinforcement learning" on an index of 20,000
    papers, whose 23 orals of 2018 the unfiltered search does not reach); unfiltered, the
    papers it does not rank count as off the topic (scoring them too lost 0.002 of papers shown
    on topic on the tuned topic set)."""
    from rag.retrieve.membership import membership

    extra = [h.id for h in hits] if filtered else []
    m = membership(retriever, query, extra=extra) if hits else None
    if m is None:
        return hits[:k]
    pinned = set(pinned)
    worded = _worded(query, hits, retriever) if filtered else set()
    n = len(hits)
    order = sorted(range(n), key=lambda i: (hits[i].id not in pinned,
                                            -m.order_key(m.prob(hits[i].id), i, n), i))
    ranked = [hits[i] for i in order]
    shown = [h for h in ranked if h.id in pinned or m.prob(h.id) >= m.show][:k]
    if worded and len(shown) < k:  # (room left: the papers that name the topic, in rank order)
        extra = [h for h in ranked if h.id in worded and h not in shown][:k - len(shown)]
        keep = {h.id for h in shown + extra}
        shown = [h for h in ranked if h.id in keep]
    shown = shown or ranked[:1]
    if len(shown) < k:
        n = len(shown)
        by_words = " or say it in their title or keywords" if any(
            h.id in worded and m.prob(h.id) < m.show for h in shown) else ""
        notes.append(note(f"{'Only ' if n > 1 else ''}{n} of the {len(hits)} papers the search "
                          f"ranked first {'is' if n == 1 else 'are'} on this topic by the "
                          f"relevance model (probability of being about it at least "
                          f"{m.show:.2f}){by_words}, so {'it is' if n == 1 else 'these are'} "
                          "shown."))
    return shown


def _worded(query: str, hits: list[Hit], retriever: Retriever) -> set[str]:
    """Ids of ``hits`` that say the topic of ``query`` in their title or keywords, or twice in
    the abstract (:func:`rag.conference.trends.said_of`, the rule a topic count adds to the
    relevance model): in a filtered survey they fill the room the model's cut leaves, in the
    order it gives ("2018 orals on reinforcement learning": the four 2018 orals with the
    keyword, scored against a topic whose best papers are 2026's)."""
    from rag.conference import facets
    from rag.conference.trends import said_of
    from rag.understand.topics import topic_phrase
    from rag.understand.years import topic_alternatives

    texts = retriever.search_texts() if hasattr(retriever, "search_texts") else {}
    out: set[str] = set()
    for phrase in topic_alternatives(topic_phrase(query) or query):
        pattern = facets.phrase_pattern(phrase)
        out |= {h.id for h in hits if h.id in retriever.papers and
                said_of(retriever.papers[h.id], pattern, texts.get(h.id, ""))}
    return out


def _said_top(said: str, used: Filters, retriever: Retriever) -> float:
    """The best chunk cosine similarity of the turn as the user said it (a first turn): the
    quantity :data:`rag.compose.refusal.MIN_DENSE` was calibrated on (``shared/eval`` questions as
    asked). The search itself runs on the plan's topic, which drops the question's frame ("how
    many ...", "?"), and a topic can sit a hair above the threshold where the question does not
    (dev-078, tomato pruning: 0.302 against 0.299)."""
    import numpy as np

    vec = np.asarray(retriever.embedder.embed([said])[0], dtype=np.float32)
    return max(retriever.dense(vec, used or None).scores[:1], default=0.0)
