"""One turn of a conversation read against an index (:func:`understand`): the conversation's
view for the reader (:func:`context_from`), the index's author names and vocabulary, and the
corrections that need the index itself: a whole title said names its paper (:func:`title_ids`),
a misspelt word is respelt (:mod:`rag.understand.spelling`), another paper's neighbours keep the
previous neighbours' years. The turn itself is read by :func:`rag.understand.read.read_turn`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

from rag.backends.seams import per_retriever
from rag.filters import fold
from rag.understand import years
from rag.understand.plan import Plan
from rag.understand.read import _SIMILAR_TO, read_turn
from rag.understand.turn_reader import TurnContext, TurnReader

if TYPE_CHECKING:
    from rag.backends.seams import Retriever
    from rag.understand.history import Turn


def context_from(history: Sequence[Turn]) -> TurnContext:
    """The reader's view of the last turn of ``history`` (empty when there is none)."""
    from rag.understand.history import last_with_papers

    if not history:
        return TurnContext()
    last = last_with_papers(history)
    order = ""
    if last.plan and last.plan.get("op") in ("sort", "extreme"):
        order = last.plan.get("order") or ""
    return TurnContext(last.kind or "lookup", len(last.numbered) or len(last.papers),
                       max(1, last.focus) if last.papers else 0, order)


def understand(question: str, history: Sequence[Turn], retriever: Retriever,
               reader: TurnReader) -> Plan:
    """The :class:`Plan` of ``question`` after ``history``, read against ``retriever``'s index
    (its areas and its papers' names)."""
    from rag.understand.spelling import respell, respelt_note

    authors = index_authors(retriever)  # (the vocabulary is read only for a list with authors)
    plan = read_turn(question, context_from(history), reader, areas=retriever.area_names(),
                     names=retriever.name_index(), authors=authors,
                     vocabulary=_vocabulary(retriever) if authors else frozenset())
    last = history[-1].plan if history and history[-1].plan else {}
    m = _SIMILAR_TO.search(question)
    if m and last.get("op") == "similar" and plan.op in ("refine", "survey", "lookup",
                                                          "similar") and \
            not any(f.startswith("year=") for f in plan.filters):
        # "what about ones similar to Graph Attention Networks?" after a paper's neighbours:
        # that paper's, with the neighbours' years kept
        ids = plan.ids if plan.op == "similar" and plan.ids else \
            title_ids([question[m.end():].strip(" ?.!")], retriever)
        if ids:
            kept = [f for f in last.get("filters") or [] if f.startswith("year=")]
            return Plan(papers="named", op="similar", ids=ids, said=plan.said,
                        names=plan.names or [retriever.papers[ids[0]].title],
                        query=question[m.end():],
                        filters=list(dict.fromkeys(plan.filters + kept)),
                        confidence=plan.confidence)
    before = [int(f[5:]) for f in last.get("filters") or [] if f.startswith("year=")]
    said = years.years_said(question)
    if plan.op == "refine" and len(before) == 1 and len(said) == 1 and said != before and \
            last.get("op") in ("count", "survey", "list") and not last.get("per_year") and \
            years.sets_year_against(question):
        # "and how does that compare to 2026 — is it growing?" after "how many 2018 papers
        # dealt with federated learning?": the previous count in both years
        kept = [f for f in last.get("filters") or [] if not f.startswith("year=")]
        return Plan(papers=last.get("papers") or "search", op="count",
                    topic=last.get("topic") or "", query=last.get("query") or "",
                    filters=list(dict.fromkeys(kept + [f for f in plan.filters
                                                       if not f.startswith("year=")])),
                    per_year=True, years=sorted(set(before + said)), said=question,
                    confidence=plan.confidence)
    described = {m.group(1) for m in _ONE_PAPER_YEAR.finditer(question)}
    asked = [f for f in plan.filters if f.startswith("year=")]
    if plan.op != "similar" and len(asked) == 2 and len(described) == 1 and \
            f"year={next(iter(described))}" in asked:
        # "2026 submissions that build on mixup (the 2018 data augmentation paper)": 2018 is
        # the year of the paper built on, not of the papers asked for
        plan.filters = [f for f in plan.filters if f[5:] not in described or
                        not f.startswith("year=")]
    status = [f for f in plan.filters if f.startswith(("status=", "year="))]
    if last.get("by_area") and status and _AREA_GOES_ON.search(question):
        # "which one had the most withdrawals?", "and rejects?" after orals per area: the
        # count per area again with the new decision (or year), not the previous papers'
        return Plan(papers="search", op="refine", filters=status, query=question,
                    said=question, confidence=plan.confidence)
    if plan.op == "similar" and not plan.ids and plan.papers in ("named", "search"):
        # "similar to the 2018 paper "Mixed Precision Training"", "2026 papers similar to Graph
        # Attention Networks from 2018": a whole title said, too short to be a name
        ids = title_ids(plan.names + [plan.query], retriever)
        if ids:
            plan.papers, plan.ids = "named", ids
            plan.names = plan.names or [retriever.papers[ids[0]].title]
            return plan
    if plan.papers == "search" and not plan.outside and (plan.query or plan.topic):
        # "how did difusion models change since 2018?": the papers' word, said so
        query, changes = respell(plan.query, retriever)
        if changes:
            plan.query = query
            plan.topic = respell(plan.topic, retriever)[0]
            plan.notes = plan.notes + [respelt_note(changes)]
    return plan


#: A year said of one paper: "(the 2018 data augmentation paper)", "the 2018 work".
_ONE_PAPER_YEAR = re.compile(r"\bthe\s+((?:19|20)\d\d)\s+(?:[\w-]+\s+){0,4}?(?:paper|work|"
                             r"article)\b(?!s)", re.I)
#: A turn that goes on from a count per area: "which one had the most withdrawals?", "and
#: rejects?", "what about 2018?", "same for posters".
_AREA_GOES_ON = re.compile(r"^\W*(?:and\s+|so\s+|ok\W*\s*)?(?:(?:which|what)\s+(?:one|area|of\s+"
                           r"(?:them|those|these))\b|(?:what|how)\s+about\b|same\s+(?:for|with)\b|"
                           r"now\s+for\b|(?<=and\s)\w)", re.I)


def _title_key(text: str) -> str:
    """A title compared whole: folded, its punctuation and quotes gone."""
    return " ".join(re.findall(r"\w+", fold(text)))


def title_ids(said: Sequence[str], retriever: Retriever) -> list[str]:
    """The ids of the papers whose whole title is one of ``said`` (case, quotes and
    punctuation aside), in order; the titles are read once per retriever."""
    def titles() -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for p in getattr(retriever, "papers", {}).values():
            index.setdefault(_title_key(p.title), []).append(p.id)
        return index

    index = per_retriever(retriever, "_whole_titles", titles)
    out: list[str] = []
    for text in said:
        key = _title_key(text or "")
        out += [i for i in index.get(key, []) if i not in out] if len(key) >= 8 else []
    return out


def _vocabulary(retriever: Retriever) -> set[str] | frozenset[str]:
    """The index's BM25 terms (:meth:`rag.retrieve.retriever.Retriever.vocabulary`, a set the
    retriever keeps: not copied), or none."""
    get = getattr(retriever, "vocabulary", None)
    return get() if get is not None else frozenset()


def index_authors(retriever: Retriever) -> dict[str, str]:
    """The author names of ``retriever``'s papers (:func:`rag.understand.authors.author_index`),
    computed once per retriever; ``{}`` for a list without author names."""
    from rag.understand.authors import author_index

    return per_retriever(retriever, "_author_index",
                         lambda: author_index(getattr(retriever, "papers", {}).values()))


# --- scoring ---------------------------------------------------------------------------------
