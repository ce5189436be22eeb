"""Questions about the list itself, answered from the catalog, never from a model: counts of
papers with a decision, area, rating or year ("How many oral papers are in the optimization
area?"), counts of papers on a topic (by a stated rule), lists of the papers matching filters,
and the relevant papers sorted by mean reviewer rating ("highest-rated papers on X").

Every number here is counted over the index's catalog (:attr:`rag.retrieve.retriever.Retriever.papers`),
so it is exact for the list that was indexed; the answer says which filters and which rule.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from rag.compose.templates import direct, heading, item, note
from rag.filters import Filters
from rag.text import normalise
from rag.types import AnswerSentence, Hit, Paper

#: How many relevant papers a "highest-rated ..." question sorts by rating (the answer says so).
RATED_POOL = 20
#: Papers listed under a count or a listing (the rest are counted, not shown).
LISTED = 10
def describe(filters: Filters | None) -> str:
    """The filters as the answer states them: ``status=oral, primary_area=optimization``."""
    return ", ".join(filters.as_strings()) if filters else ""


_PLURAL = {"oral": "orals", "spotlight": "spotlights", "poster": "posters",
           "accepted": "accepted papers", "accept": "accepted papers",
           "rejected": "rejected papers", "reject": "rejected papers",
           "withdrawn": "withdrawn papers", "workshop": "workshop papers"}


def describe_plural(strings) -> str:
    """Filter strings as a plural noun: ``["status=oral"]`` -> "orals", ``["status=accepted",
    "primary_area=optimization"]`` -> "accepted papers matching primary_area=optimization",
    ``[]`` -> "papers"."""
    nouns, rest = [], []
    for f in strings:
        key, _, value = f.partition("=")
        if key == "status":
            nouns.append(_PLURAL.get(value.strip().lower(), f"{value} papers"))
        else:
            rest.append(f)
    noun = " or ".join(nouns) or "papers"
    return noun + (f" matching {', '.join(rest)}" if rest else "")


def matching(papers: dict[str, Paper], filters: Filters | None) -> list[Paper]:
    """The papers of ``papers`` that ``filters`` admit (all without filters), in id order."""
    return [p for _, p in sorted(papers.items()) if not filters or filters.matches(p)]


def by_rating(papers: Sequence[Paper], descending: bool = True) -> list[Paper]:
    """``papers`` sorted by mean rating, best first (``descending``) or worst first (ties:
    more reviews first; unrated last, in their given order)."""
    sign = -1 if descending else 1

    def key(p: Paper):
        r = p.rating
        return (0, sign * r["mean"], -r["n"]) if r else (1, 0.0, 0)

    return sorted(papers, key=key)


def _singular(word: str) -> str:
    """``word`` less a plural "s" ("gans" -> "gan", "networks" -> "network"; "process",
    "virus", "analysis" and words of three letters or fewer are kept)."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def phrase_stem(topic: str) -> str:
    """The first word of :func:`phrase_pattern`'s phrase, lower case and singular: every text
    the pattern matches contains it (a cheap test before the pattern)."""
    words = re.findall(r"[\w+]+", normalise(topic).lower())
    return _singular(words[0]) if words else ""


def phrase_pattern(topic: str) -> re.Pattern:
    """The rule a topic count uses: the topic's words in order, each in the singular and
    followed by an optional plural "s", separated by spaces or hyphens, case-insensitive, on the
    normalised text ("reinforcement learning" matches "Reinforcement-Learning" and
    "reinforcement learnings"; "GANs" matches "GAN")."""
    words = [_singular(w) for w in re.findall(r"[\w+]+", normalise(topic).lower())]
    body = r"[\s\-]+".join(re.escape(w) + r"(?:e?s)?" for w in words)
    return re.compile(rf"(?<![\w]){body}(?![\w])", re.I)


def topic_count(topic: str, papers: dict[str, Paper], texts: dict[str, str],
                filters: Filters | None) -> tuple[int, int]:
    """(papers whose title, keywords or abstract contain ``topic`` by :func:`phrase_pattern`,
    of those how many in the title or keywords), over the papers ``filters`` admit.
    ``texts`` are the BM25 search texts (:meth:`rag.retrieve.retriever.Retriever.search_texts`)."""
    pattern = phrase_pattern(topic)
    found = topic_matches(topic, papers, texts, filters)
    heads = (normalise(p.title) + " " + " ".join(normalise(k) for k in p.keywords) for p in found)
    return len(found), sum(bool(pattern.search(h)) for h in heads)


def topic_matches(topic: str, papers: dict[str, Paper], texts: dict[str, str],
                  filters: Filters | None) -> list[Paper]:
    """The papers :func:`topic_count` counts (title, keywords or abstract contain ``topic``,
    :func:`phrase_pattern`), among those ``filters`` admit, in the index's order."""
    pattern = phrase_pattern(topic)
    return [p for p in matching(papers, filters) if pattern.search(texts.get(p.id, ""))]


@dataclass
class TopicMembers:
    """The papers counted as on a topic by the relevance model (:mod:`rag.retrieve.membership`),
    among those the filters admit: ``papers`` best first (probability), ``expected`` the sum
    of the probabilities (the expected number), ``threshold`` the rule's probability and
    ``phrase`` the phrase count said beside it (:func:`topic_count`: papers with the phrase, of
    those how many in the title or keywords)."""

    topic: str
    papers: list[Paper]
    expected: float
    threshold: float
    phrase: tuple[int, int]


def topic_members(retriever, topic: str, filters: Filters | None,
                  within: Filters | None = None, phrase: bool = True,
                  reference=None) -> TopicMembers | None:
    """:class:`TopicMembers` of ``topic`` over the papers ``filters`` admit, or None when the
    retriever has no membership model (a fake): callers then count the phrase. ``within``
    restricts the model's search itself (one year: :mod:`rag.conference.trends`), its features
    taken against ``reference`` (:func:`rag.retrieve.membership.features`); without ``phrase``
    the phrase count is not made (``(0, 0)``)."""
    from rag.retrieve.membership import membership

    m = membership(retriever, topic, within=within, reference=reference)
    if m is None:
        return None
    allowed = {p.id for p in matching(retriever.papers, filters)} if filters else None
    ids = [pid for pid in m.members(allowed) if pid in retriever.papers]
    said = topic_count(topic, retriever.papers, retriever.search_texts(), filters) \
        if phrase else (0, 0)
    return TopicMembers(topic, [retriever.papers[i] for i in ids], m.expected(allowed),
                        m.threshold, said)


#: A topic whose phrase occurs in at least this many papers, and in more than
#: :data:`BROAD_RATIO` times the papers the relevance model counts, is broader than the model's
#: candidates (a few hundred papers nearest the topic) can hold ("reinforcement learning": 883
#: papers contain the phrase): its count is the phrase count, the model's said beside it.
BROAD_PHRASE = 100
BROAD_RATIO = 2.0


def broad(found: TopicMembers) -> bool:
    """True when ``found``'s topic is too broad for the relevance model's count (see
    :data:`BROAD_PHRASE`)."""
    n = found.phrase[0]
    return n >= BROAD_PHRASE and n > BROAD_RATIO * len(found.papers)


def by_meaning(found: TopicMembers | None) -> bool:
    """True when a topic count states the relevance model's papers (``found``, of
    :func:`topic_members`): the model applies, counts some and the topic is not too broad
    (:func:`broad`); else the count is the phrase's."""
    return found is not None and bool(found.papers) and not broad(found)


def members_head(found: TopicMembers, filters: Filters | None, total: int) -> AnswerSentence:
    """The statement of a topic count by meaning, with its rule and the phrase count beside it."""
    scope = f"the {total:,} papers matching {describe(filters)}" if filters else \
        f"the {total:,} papers in this index"
    n = len(found.papers)
    return note(f"About {n:,} of {scope} are about “{found.topic}”: the relevance model "
                f"gives each paper a probability of being about the topic, and {n:,} "
                f"{'has' if n == 1 else 'have'} at least {found.threshold:.2f} (the "
                f"probabilities add up to {found.expected:.0f}). By the words alone, "
                f"{found.phrase[0]:,} contain the phrase in their title, keywords or abstract.")


def status_breakdown(papers: Sequence[Paper]) -> str:
    """``5,120 Accept (Poster), 223 Accept (Oral), ...``: status counts, most common first."""
    counts = Counter(p.status or "no status" for p in papers)
    return ", ".join(f"{n:,} {s}" for s, n in counts.most_common())


def rated_item(hit: Hit, n: int, c) -> AnswerSentence:
    """A list line with the paper's rating after its marker (``title [n] (rating 6.5 · 4
    reviews, 5–8): “quote”``); the quote is what grounding checks."""
    s = item(hit, n, c)
    text = hit.paper.rating_text() or "unrated"
    s.text = s.text.replace(f"[{n}]", f"[{n}] ({text})", 1)
    return s


def facet_answer(papers: dict[str, Paper], filters: Filters | None,
                 k: int) -> tuple[list[AnswerSentence], list[Hit]]:
    """A count or list of the papers matching ``filters``, no topic: the exact number, then
    the first ``k`` by mean rating as the answer's papers. Returns (sentences, hits)."""
    chosen = matching(papers, filters)
    total = len(papers)
    what = describe(filters)
    if not chosen:
        return [note(f"0 papers. No paper in this index matches {what} (it holds {total:,} "
                     f"papers: {status_breakdown(list(papers.values()))}).")], []
    listed = by_rating(chosen)[:k]
    hits = [Hit(p, float(len(listed) - i)) for i, p in enumerate(listed)]
    numbers = list(range(1, len(hits) + 1))
    if what:
        head = f"{len(chosen):,} of the {total:,} papers in this index match {what}."
    else:
        head = (f"This index holds {total:,} papers: "
                f"{status_breakdown(list(papers.values()))}.")
    out = [direct(head, [])]
    share = year_share(papers, filters, len(chosen))
    if share:
        out.append(direct(share, []))
    rated = sum(1 for p in chosen if p.rating)
    order = "by mean reviewer rating" if rated else "in list order"
    out.append(heading(f"The first {len(hits)} {order}:" if len(chosen) > len(hits)
                       else f"All of them, {order}:"))
    out += [rated_item(h, n, None) for n, h in zip(numbers, hits)]
    return out, hits


def year_share(papers: dict[str, Paper], filters: Filters | None, n: int) -> str:
    """The share a count under a year filter is of that year's papers ("That is 2.3% of the 995
    papers of 2018"), and of its accepted papers when the filter asks for one tier ("and 6.8% of
    its 337 accepted papers"), on an index of several years; "" otherwise (no year filter, one
    year in the index, or the year filter alone)."""
    if not filters or set(filters.values) == {"year"} or "year" not in filters.values:
        return ""
    years = {p.year for p in papers.values() if p.year}
    if len(years) < 2:
        return ""
    said = filters.values["year"]
    of_year = [p for p in papers.values() if p.year is not None and str(p.year) in said]
    if not of_year:
        return ""
    when = " and ".join(said)
    text = f"That is {100 * n / len(of_year):.1f}% of the {len(of_year):,} papers of {when}"
    tiers = [v.lower() for v in filters.values.get("status", [])]
    if tiers and all(t in ("oral", "orals", "spotlight", "spotlights", "poster", "posters")
                     for t in tiers):
        from rag.types import is_accepted

        accepted = sum(1 for p in of_year if is_accepted(p.status))
        if accepted:
            text += f", and {100 * n / accepted:.1f}% of its {accepted:,} accepted papers"
    return text + "."


def topic_count_head(topic: str, count: tuple[int, int], filters: Filters | None,
                     total: int) -> AnswerSentence:
    """The statement of a topic count, with its rule."""
    n, n_title = count
    scope = f"the {total:,} papers matching {describe(filters)}" if filters else \
        f"the {total:,} papers in this index"
    return note(f"{n:,} of {scope} contain the phrase “{topic}” in their title, keywords or "
                f"abstract ({n_title:,} of them in the title or keywords). That is the rule "
                "counted here: a paper about the topic in other words is not counted, and a "
                "passing mention is.")


def rated_answer(hits: Sequence[Hit], cands) -> tuple[list[AnswerSentence], list[Hit]]:
    """The relevant ``hits`` re-ordered by mean reviewer rating, each line showing its rating.
    ``cands`` are :func:`rag.compose.quotes.candidates` keyed by the hits' *original* numbers.
    Returns (sentences, hits in their new order)."""
    order = by_rating([h.paper for h in hits])
    index = {h.id: i for i, h in enumerate(hits)}
    new_hits = [hits[index[p.id]] for p in order]
    numbers = list(range(1, len(new_hits) + 1))
    out = [direct(f"The {len(new_hits)} most relevant papers, sorted by mean reviewer rating "
                  "(unrated papers last):", numbers)]
    for n, h in zip(numbers, new_hits):
        c = (cands.get(index[h.id] + 1) or [None])[0]
        if c is not None:
            c = type(c)(n, c.text, c.pos, c.score)
        out.append(rated_item(h, n, c))
    return out, new_hits
