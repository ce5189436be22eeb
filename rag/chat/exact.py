"""What an operation produced (:class:`Outcome`), and the operations whose answers are exact,
from the catalog and never from a model: ``count``, ``list``, ``sort`` and ``extreme`` over the
chosen papers by mean reviewer rating (ties stated), ``cite`` (BibTeX entries) and ``similar``
(the nearest paper vectors). :func:`rag.chat.operations.run` runs them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from rag.chat.selection import CATALOG_SHOWN, Selection, _as_hits
from rag.compose import extractive
from rag.compose import quotes, templates
from rag.compose.templates import direct, heading, item, note
from rag.conference import facets
from rag.filters import Filters
from rag.types import AnswerSentence, Hit, Paper
from rag.understand.plan import Plan
from rag.understand.topics import has_topic

if TYPE_CHECKING:
    from rag.backends.seams import Retriever


#: Neighbours a "similar papers" answer lists.
SIMILAR_K = 8


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
    #: Papers per year (:class:`rag.conference.trends.Trend`) when the answer is a count per
    #: year: the answer's ``trend`` and the browser's chart.
    trend: object = None


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
    if plan.by_decision:
        return _by_decision(plan, sel, retriever)
    if plan.by_area:
        return _by_area(plan, sel, retriever)
    if sel.searched and has_topic(plan.query) and plan.mean_rating:
        return _topic_mean(plan, sel, retriever)
    if sel.searched and has_topic(plan.query):
        topic = plan.topic or plan.query
        total = len(facets.matching(retriever.papers, sel.filters or None))
        found = facets.topic_members(retriever, topic, sel.filters or None)
        if facets.by_meaning(found):
            listed = _as_hits(found.papers[:facets.LISTED])
            cands = quotes.candidates(plan.query, listed, retriever.embedder)
            body = [facets.members_head(found, sel.filters or None, total),
                    heading(f"The {len(listed)} most likely on the topic:"
                            if len(found.papers) > len(listed) else "All of them, most likely "
                            "first:")]
            body += [facets.rated_item(h, i, (cands[i] or [None])[0])
                     for i, h in enumerate(listed, start=1)]
            return Outcome(body, "count", listed, about=list(range(1, len(listed) + 1)))
        n = found.phrase if found is not None else \
            facets.topic_count(topic, retriever.papers, retriever.search_texts(), sel.filters)
        cands = quotes.candidates(plan.query, hits, retriever.embedder)
        numbers = [1] + extractive.relevant_others(hits, cands, {1}, MIN_DENSE)
        body = [facets.topic_count_head(topic, n, sel.filters or None, total)]
        if not n[0] and not (found is not None and found.papers):
            return Outcome(body, "count", [])  # (none on the topic: the nearest are off it)
        if found is not None and found.papers:
            body.append(note(f"The relevance model scores only the few hundred papers nearest "
                             f"the topic and counts {len(found.papers):,} of them as about it; "
                             "for a topic this broad the phrase count is the better estimate."))
        body.append(heading("The most relevant papers found:"))
        body += [facets.rated_item(hits[i - 1], i, (cands[i] or [None])[0]) for i in numbers]
        return Outcome(body, "count", hits)
    if sel.every is not None:
        sentences, listed = facets.facet_answer(retriever.papers, sel.filters or None,
                                                facets.LISTED)
        if plan.mean_rating and listed:
            # "what's the average rating of 2026 orals?": the mean, from the catalog
            rated = [p.rating["mean"] for p in sel.every if p.rating]
            sentences.insert(1, direct(
                f"Their mean reviewer rating is {sum(rated) / len(rated):.2f} (the mean of the "
                f"{len(rated):,} rated papers' mean ratings)." if rated else
                "None of them has reviewer ratings in this list.", []))
        return Outcome(sentences, "count", listed)
    listed = facets.by_rating([h.paper for h in hits])
    out = [direct(_scope_head(plan, sel, len(hits)), [])]
    new_hits = _as_hits(listed[:CATALOG_SHOWN])
    out += [facets.rated_item(h, i, None) for i, h in enumerate(new_hits, start=1)]
    if len(listed) > len(new_hits):
        out.append(heading(f"… and {len(listed) - len(new_hits):,} more."))
    return Outcome(out, "count", new_hits)


def _topic_mean(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    """"what's the average rating of diffusion papers in 2026?", "mean rating of LLM papers vs
    the rest": the mean reviewer rating of the papers on the topic among those the filters
    admit (counted by the trend rule, :func:`rag.conference.trends.topic_papers`, the rule
    stated), beside the mean of the other papers the filters admit; the first by rating as the
    hits."""
    from rag.conference import trends

    topic = plan.topic or plan.query
    f = sel.filters
    chosen, trend = trends.topic_papers(retriever, topic, f or None)
    scope = facets.matching(retriever.papers, f or None)
    ids = {p.id for p in chosen}
    rest = [p for p in scope if p.id not in ids]
    where = f"papers matching {facets.describe(f)}" if f else "papers in this index"
    out = [direct(f"{len(chosen):,} of the {len(scope):,} {where} are on “{topic}”.", [])]
    on, off = trends.mean_rating(chosen), trends.mean_rating(rest)
    if on is None:
        out.append(direct("None of them has reviewer ratings in this list.", []))
    else:
        rated = sum(1 for p in chosen if p.rating)
        line = f"Their mean reviewer rating is {on:.2f} (the mean of the {rated:,} rated " \
               f"papers' mean ratings)"
        if off is not None:
            line += f"; the other {len(rest):,} papers' is {off:.2f} " \
                    f"({on - off:+.2f} for the topic)"
        out.append(direct(line + ".", []))
    scales = trends.scale_note(chosen + rest, {p.year for p in scope if p.year})
    if scales:
        out.append(note(scales))
    out.append(note(trends.rule_text(trend)))
    listed = _as_hits(facets.by_rating(chosen)[:facets.LISTED])
    if listed:
        out.append(heading(f"The first {len(listed)} by mean reviewer rating:"))
        out += [facets.rated_item(h, i, None) for i, h in enumerate(listed, start=1)]
    return Outcome(out, "count", listed)


def _by_decision(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    """A count per decision of the selected papers (every paper the filters admit for a
    catalog reading, else the papers in hand), then the first by rating as the hits."""
    from rag.conference import breakdowns

    if sel.every is not None:
        chosen = facets.matching(retriever.papers, sel.filters or None)
        what = f"papers match {facets.describe(sel.filters)}" if sel.filters else \
            "papers in this index"
    else:
        chosen = [h.paper for h in sel.hits]
        what = f"papers of {sel.scope}" if sel.scope else "papers"
    if not chosen:
        return Outcome([note(f"0 papers. No paper in this index matches "
                             f"{facets.describe(sel.filters)}.")], "count", [])
    out = breakdowns.by_decision({"all": chosen}, what)
    share = facets.year_share(retriever.papers, sel.filters, len(chosen)) \
        if sel.every is not None else ""
    if share:
        out.insert(1, direct(share, []))
    listed = _as_hits(facets.by_rating(chosen)[:facets.LISTED])
    rated = any(h.paper.rating for h in listed)
    out.append(heading(f"The first {len(listed)} by mean reviewer rating:" if rated else
                       f"The first {len(listed)} in list order:"))
    out += [facets.rated_item(h, i, None) for i, h in enumerate(listed, start=1)]
    return Outcome(out, "count", listed)


#: A per-area count asked as a rate ("the best acceptance rate", "highest share of orals").
_BY_RATE = re.compile(r"\b(?:rates?|ratios?|percent\w*|shares?|proportions?|fractions?)\b", re.I)


def _by_area(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    """A count per primary area of the selected papers (every paper the filters admit for a
    catalog reading, else the papers in hand), against the areas' papers under the filters
    other than a decision or a rating; the first by rating as the hits."""
    from rag.conference import breakdowns

    f = sel.filters
    topic = plan.topic or plan.query
    rule = ""
    if sel.searched and has_topic(topic):
        # "which area has the most papers on diffusion?": the papers a trend counts on it
        from rag.conference import trends

        chosen, trend = trends.topic_papers(retriever, topic, f or None)
        scope = facets.matching(retriever.papers, f or None)
        said = [x for x in (f.as_strings() if f else []) if x.startswith(("status=", "rating"))]
        kept = [x for x in (f.as_strings() if f else []) if not x.startswith(("status=", "rating"))]
        what = f"{facets.describe_plural(said)} on “{topic}”" + \
            (f" matching {', '.join(kept)}" if kept else "")
        rule = trends.rule_text(trend)
    elif sel.every is not None:
        chosen = facets.matching(retriever.papers, f or None)
        rest = Filters({k: v for k, v in f.values.items() if k not in ("status", "rating")}) \
            if f else Filters()
        scope = facets.matching(retriever.papers, rest or None)
        what = facets.describe_plural(f.as_strings()) if f else "papers"
    else:
        chosen = scope = [h.paper for h in sel.hits]
        what = f"papers of {sel.scope}" if sel.scope else "papers"
    # (a rate asked in the clause that asks per area: "what's the most common primary area among
    # 2026 orals, and how does its acceptance rate compare?" ranks by count)
    from rag.understand.filter_words import asks_by_area
    from rag.understand.years import clauses

    asking = [c for c in clauses(plan.said or "") if asks_by_area(c)]
    out = breakdowns.by_area(chosen, scope, what, "area's papers",
                             _BY_RATE.search(asking[0] if asking else plan.said or "")
                             is not None)
    if rule:
        out.append(note(rule))
    listed = _as_hits(facets.by_rating(chosen)[:facets.LISTED])
    if listed:
        out.append(heading(f"The first {len(listed)} by mean reviewer rating:"))
        out += [facets.rated_item(h, i, None) for i, h in enumerate(listed, start=1)]
    return Outcome(out, "count", listed)


def _on_topic(plan: Plan, sel: Selection, retriever: Retriever):
    """``(papers, threshold)``: the papers the relevance model counts as on the plan's topic
    among those the selection's filters admit (:func:`rag.conference.facets.topic_members`,
    searched within the filters), or None (no search, no topic, no model)."""
    topic = plan.topic or plan.query
    if not sel.searched or not has_topic(topic):
        return None
    found = facets.topic_members(retriever, topic, sel.filters or None,
                                 within=sel.filters or None, phrase=False)
    if found is None or not found.papers:
        return None
    return found.papers, found.threshold


def _rated(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    """``list``, ``sort`` and ``extreme`` over the chosen papers, by mean reviewer rating."""
    hits = sel.hits
    papers = sel.every if sel.every is not None else [h.paper for h in hits]
    if not papers:  # (of papers in hand, the notes say which: "None of the 5 papers ...")
        return Outcome([note("0 papers." if sel.scope and sel.notes else
                             f"No paper matches {facets.describe(sel.filters)}.")],
                       plan.op if plan.op != "sort" else "rated", [])
    desc = plan.order != "rating_asc"
    rule = "" if not sel.searched else (f" (the {len(hits)} papers most relevant to the "
                                        "search; a paper about it in other words may be missing)")
    on_topic = _on_topic(plan, sel, retriever) if plan.op in ("extreme", "sort") else None
    if on_topic:
        # "the best rated 2026 paper on diffusion models": of the papers on the topic, not only
        # of the 20 the search ranked first (it missed an 8.0 among 5.5s)
        found, threshold = on_topic
        ids = {p.id for p in papers}
        papers = papers + [p for p in found if p.id not in ids]
        rule = (f" (the {len(papers)} papers on the topic: the {len(hits)} most relevant to the "
                f"search and those the relevance model gives a probability of at least "
                f"{threshold:.2f} of being about it)")
    ordered = facets.by_rating(papers, descending=desc)
    if plan.op == "list" and not plan.order and sel.searched:
        ordered = [h.paper for h in hits]  # a search's papers keep their relevance order
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
        elif ties:  # "top 5 highest-rated": five, and the papers tied with the fifth said
            at_cut = [p for p in chosen if p.rating["mean"] == cut]
            inside = sum(1 for p in chosen[:n] if p.rating["mean"] == cut)
            more = len(chosen) - n
            head = (f"The {n} {word}-rated of {sel.scope}{rule} (by mean reviewer rating, ties "
                    f"ordered by number of reviews). At the cut, {len(at_cut)} papers share "
                    f"the rating {cut}: {inside} of them are shown and {more} more are tied "
                    f"with them:")
            chosen = chosen[:n]
        else:
            head = f"The {len(chosen)} {word}-rated of {sel.scope}{rule}:"
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
    parts = [f"{templates._and([f'[{n}]' for n in ns])} are tied at {m}" for m, ns in tied[:4]]
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
    out = [direct(f"BibTeX for {what} ({templates._and([f'[{n}]' for n in numbers])}), "
                  "entries only, ready to import (Zotero, JabRef, a .bib file):", numbers),
           AnswerSentence(entries.strip(), numbers, kind="bibtex", support=1.0)]
    return Outcome(out, "cite", hits, about=numbers)


def _similar(plan: Plan, sel: Selection, retriever: Retriever) -> Outcome:
    if not sel.hits:
        return Outcome([note("There is no paper to compare with.")], "similar", [])
    target = sel.hits[0]
    filters = sel.filters
    years = filters.values.get("year", []) if filters else []
    if len(years) > 1 and str(target.paper.year) in years:
        # "2018 papers similar to the 2026 paper on X": the neighbours are of the other year
        filters = filters.without([f"year={target.paper.year}"])
    authors = filters.values.get("author", []) if filters else []
    if authors and Filters({"author": authors}).matches(target.paper):
        # "closest 2026 papers to Madry et al. "Towards ..."": the authors are the paper's
        filters = filters.without([f"author={a}" for a in authors])
    near = retriever.similar(target.id, k=max(SIMILAR_K, plan.n or 0),
                             filters=filters or None)
    if not near and filters and retriever.similar(target.id, k=1):
        return Outcome([note(f"No paper matching {facets.describe(filters)} is near "
                             f"{templates.title(target)}.")], "similar", [target])
    if not near:
        return Outcome([note(f"{templates.title(target)} has no paper vector yet (it is not "
                             "embedded), so its neighbours cannot be found.")], "similar",
                       [target])
    title = templates.title(target)
    kept = filters.values.get("year", []) if filters else []
    what = f"{' or '.join(kept)} papers" if kept else "papers"
    out = [direct(f"The {what} closest to {title} (cosine similarity of the papers' mean "
                  "abstract embeddings, highest first):", list(range(1, len(near) + 1)))]
    for i, h in enumerate(near, start=1):
        c = quotes.Candidate(i, h.evidence[0], 0, 1.0) if h.evidence else None
        s = item(h, i, c)
        s.text = s.text.replace(f"[{i}]", f"[{i}] ({h.score:.2f})", 1)
        out.append(s)
    return Outcome(out, "similar", near, about=list(range(1, len(near) + 1)))
