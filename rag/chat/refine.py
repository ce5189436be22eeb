"""A ``refine`` plan made concrete (:func:`resolve_refine`): the previous turn's plan with one
change, a new subject put in its query's place ("Which papers study KV cache compression?"
then "And for vision transformers?") or new filters that replace the previous ones on the
same field ("how many orals in RL?" then "and in optimization?").
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

from rag.understand.plan import Plan
from rag.understand.topics import names_only_an_aspect

if TYPE_CHECKING:
    from rag.understand.history import Turn


#: "what about the other year?", "and the other one (year)": the index's other year.
_OTHER_YEAR = re.compile(r"\b(?:the\s+)?other\s+(?:year|edition|conference|list)\b", re.I)


def resolve_refine(plan: Plan, history: Sequence[Turn], areas: Sequence[str] = (),
                   years: Sequence[int] = ()) -> Plan:
    """A ``refine`` plan made concrete: the previous turn's plan with the new subject
    (``plan.topic``: "Which papers study KV cache compression?" then "And for vision
    transformers?" searches "Which papers study KV cache compression for vision transformers?";
    a previous change of subject is replaced, not stacked) and the new filters, which replace
    the previous filters on the same field ("how many orals in RL?" then "and in
    optimization?": the area changes, the decision stays). A new subject that is exactly one of
    ``areas`` (the index's primary areas) is that area's filter; "the other year" is the one
    of the index's two ``years`` the previous plan did not filter on. Other plans are returned
    as they are."""
    from rag.understand.area_words import match_area
    from rag.understand.rating_order import ascending, orders_by_rating

    if plan.op != "refine":
        return _their_author(_that_year(plan, history), history)
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
    before = [f[5:] for f in base.filters if f.startswith("year=")]
    if _OTHER_YEAR.search(plan.said or "") and len(before) == 1 and len(years) == 2 and \
            not any(f.startswith("year=") for f in said):
        # "what about the other year?" after "2026 papers about federated learning"
        said.append(f"year={next(y for y in years if str(y) != before[0])}")
        subject = "" if _OTHER_YEAR.fullmatch(subject.strip(" ?.!")) or \
            not names_only_an_aspect(subject) and _OTHER_YEAR.search(subject) else subject
    area = match_area(subject, areas, exact=True) if subject and areas else None
    if subject and areas and not area and any(f.startswith("primary_area=") for f in base.filters):
        area = match_area(subject, areas)  # "same for learning on graphs" after an area's count
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
    origin, narrowed = None, []
    if base.papers == "previous" and not subject and said and all(
            f.startswith("year=") for f in said):
        # the search the turns since narrowed: "2018 papers on NAS", "just the accepted ones",
        # "sort those by rating" (their filters kept), then "and in 2026?"
        for turn in reversed(list(history)[:-1]):
            earlier = Plan.from_json(turn.plan) if turn.plan else None
            if earlier is None:
                break
            if earlier.papers in ("search", "catalog"):
                origin = earlier
                break
            if earlier.papers != "previous":
                break
            narrowed = [f for f in earlier.filters if not f.startswith("year=")] + narrowed
    if origin is not None:
        # "same for 2026" after "2018 orals on RL" then "sort by rating": the search the sort
        # acted on, in the other year, sorted as the last turn sorted it
        kept = [f for f in origin.filters + narrowed + base.filters if not f.startswith("year=")]
        return replace(origin, op=base.op, order=base.order or origin.order,
                       filters=list(dict.fromkeys(kept + said)), positions=[], ids=[],
                       confidence=plan.confidence, said=plan.said, notes=plan.notes,
                       dropped=plan.dropped)
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
    order = base.order
    if base.op in ("sort", "extreme") and orders_by_rating(plan.said or ""):
        # "and the lowest rated 2026 oral?" after the highest rated 2018 oral: the other end
        order = "rating_asc" if ascending(plan.said) else "rating_desc"
    # "what about X, anything there?" after comparing [1] and [3]: X's papers, not a table of
    # the first two a search for X finds (the places said belonged to the list before)
    op = "survey" if subject and base.papers in ("focus", "positions") and \
        base.op in ("compare", "describe", "cite") else base.op
    return replace(base, op=op, papers=papers, query=query, topic=subject or base.topic,
                   order=order, subject=subject or earlier, filters=filters, positions=[], ids=[],
                   confidence=plan.confidence, said=plan.said, notes=plan.notes,
                   dropped=plan.dropped)


#: "how many were withdrawn that year", "the same year's orals": the previous turn's year.
_THAT_YEAR = re.compile(r"\b(?:that|the\s+same)\s+year\b|\bthat\s+year['’]s\b", re.I)


def _that_year(plan: Plan, history: Sequence[Turn]) -> Plan:
    """``plan`` with the previous turn's year filters when the turn says "that year" and names
    no year of its own ("How many submissions did ICLR 2018 receive?" then "and how many were
    withdrawn that year": of 2018, not of every year)."""
    if not history or not _THAT_YEAR.search(plan.said or "") or \
            any(f.startswith("year=") for f in plan.filters) or not history[-1].plan:
        return plan
    years = [f for f in Plan.from_json(history[-1].plan).filters if f.startswith("year=")]
    return replace(plan, filters=plan.filters + years) if years else plan


#: Words that ask of the whole list, not of the previous answer's author ("in total", "overall").
_WHOLE_LIST = re.compile(r"\b(?:overall|in\s+total|altogether|whole|entire|every|all\s+(?:the\s+)?"
                         r"(?:papers|submissions)|the\s+(?:index|list|conference)|at\s+iclr)\b", re.I)


def _their_author(plan: Plan, history: Sequence[Turn]) -> Plan:
    """``plan`` with the previous turn's author filters when it counts or lists the catalog by
    a decision and names no author, topic or whole list of its own ("what did yoshua bengio
    submit?" then "how many were rejected?": his rejected papers, not every rejected paper)."""
    if not history or not history[-1].plan or plan.papers != "catalog" or \
            plan.op not in ("count", "list", "sort", "extreme") or \
            any(f.startswith("author=") for f in plan.filters) or \
            not any(f.startswith("status=") for f in plan.filters) or \
            _WHOLE_LIST.search(plan.said or "") or plan.per_year:
        return plan
    authors = [f for f in Plan.from_json(history[-1].plan).filters if f.startswith("author=")]
    return replace(plan, filters=plan.filters + authors) if authors else plan


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
