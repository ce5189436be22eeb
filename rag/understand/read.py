"""Read a turn once, with the conversation so far, into a :class:`rag.understand.plan.Plan`.

Two parts (ARCHITECTURE.md, "Understanding"):

1. **Slots** (:mod:`rag.understand.slots`, :func:`rag.understand.turn_reader.find_slots`): the words that name values:
   filters, positions, a count of papers, paper names, comparison sides, a new subject.
2. **The reading** (:mod:`rag.understand.turn_reader`): a model learned from labelled turns gives the
   probabilities of which papers the turn is about, of its operation and of the aspect asked.

:func:`read_turn` combines them under the conversation's constraints: without a previous answer
no turn is about "these" papers; "positions" needs a number or an ordinal; "named" needs a name
the index knows (or a quoted title, or comparison sides); a catalog-wide reading cannot
describe one paper. The most probable allowed pair (papers, operation) is taken, and its
probability is the plan's ``confidence``: below :data:`rag.understand.plan.UNSURE_BELOW` the answer says
which reading it took.

:func:`rag.understand.conversation.understand` is the front door for the answer path: it builds
the context from the history and reads the turn against the index;
:func:`rag.understand.accuracy.plan_accuracy` scores readings against labelled turns
(``tests/data/turns``).
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from rag.understand import narrowing, rating_order, topics, years
from rag.understand.years import apply_per_year
from rag.understand.filter_words import (asks_by_area, asks_by_decision, respell_decisions,
                                          without_decisions)
from rag.filters import fold, name_core
from rag.understand.authors import (apply_authors, authors_said, join_coauthors, joined_names,
                                    name_spans, surname_index, surnames_said)
from rag.understand.names import NameIndex
from rag.understand.plan import UNSURE_BELOW, Plan
from rag.understand.turn_reader import TurnContext, TurnReader, TurnSlots, find_slots

#: Operations that act on one known paper or a few, or on a topic, never on the catalog as a
#: whole (a catalog reading counts, lists, sorts or picks the best-rated).
_ONE_PAPER_OPS = ("describe", "lookup", "similar", "authors", "number", "compare", "cite",
                  "survey")
#: Operations whose answer is about an aspect of the papers.
_ASPECT_OPS = ("describe", "survey", "compare", "lookup")


def allowed_papers(context: TurnContext, found: TurnSlots) -> set[str]:
    """The paper sources a turn may have, given the conversation and its slots."""
    allowed = {"search", "catalog"}
    if context.has_previous:
        allowed |= {"previous", "focus"}
        if found.positions or found.count is not None:
            allowed.add("positions")
    if found.names or found.quoted or found.sides or context.has_previous and \
            _describes(found.filters.query):
        allowed.add("named")  # by name, by title, or by description ("the protein one")
    if found.quoted and found.names and not found.refers_back:
        return {"named"}  # "Tell me about “<a title of the index>”": that paper, whatever came before
    if found.of_these and context.has_previous:
        allowed -= {"search", "catalog"}  # "Of these, which target VLMs?"
    if found.asks_status and (context.has_previous or found.names or found.quoted):
        allowed -= {"search", "catalog"}  # "was it an oral?" is about papers already named
    return allowed


#: Words (stemmed as BM25 sees them) that point at a paper without describing it: "cite that
#: one" names no paper of the previous answer by description.
_POINTING = frozenset("one ones cite bibtex bib entri it that this those these them pleas pl "
                      "give me get need want can could you".split())


def _describes(query: str) -> bool:
    """True when ``query`` has words that could describe a paper ("the protein one")."""
    from rag.backends.lexical import query_terms

    return topics.has_topic(" ".join(t for t in query_terms(query) if t not in _POINTING))


def compatible(papers: str, op: str, context: TurnContext, found: TurnSlots | None = None
               ) -> bool:
    """True when operation ``op`` can act on ``papers`` (see the module docstring); a turn
    whose words name comparison sides ("how does A differ from B", "A vs B") is a comparison."""
    if op == "refine" and not context.has_previous:
        return False
    if found is not None and found.sides and op != "compare" and not (
            op == "survey" and _SURVEY_WORD.search(found.filters.question)):
        return False  # (a turn that asks for a survey in so many words may name sides in it)
    if found is not None and papers == "catalog" and op == "count" and context.has_previous \
            and not found.filters.filters and context.n_previous > 1 and (
                found.refers_back or not found.has_topic and
                not _WHOLE_LIST.search(found.filters.question)):
        # "how many is that in total?", "how many r there total": the papers just shown (or
        # all their listing matched), not the whole list ("how many in the whole index?")
        return False
    if found is not None and papers in ("previous", "focus") and op == "count" and \
            _WHOLE_LIST.search(found.filters.question) and not found.refers_back and \
            not found.points_at_topic and \
            not found.filters.filters and not found.of_these:
        return False  # "how many papers are in the whole index?", "... on X overall?": not them
    if found is not None and found.of_these and context.has_previous and op == "refine":
        return False  # "of these, which ...": picks among them, not the question asked again
    if found is not None and found.asks_status and op in ("refine", "list", "count"):
        return False  # "was it an oral?" asks a fact of the papers in hand
    if papers == "catalog" and op in _ONE_PAPER_OPS:
        return False
    if found is not None and papers == "positions" and not found.positions and found.count \
            and not context.order and _BY_RATING_ORDER.search(found.filters.question) \
            and not _BY_PLACE.search(found.filters.question):
        return False  # "top 3 highest rated" of an unsorted list: by rating, not [1]-[3]
    if found is not None and found.points_at_topic and context.has_previous and \
            (papers == "catalog" or papers == "search" and op == "count"):
        return False  # "how many such papers overall?": the topic before, not the whole list
    if found is not None and op in ("sort", "extreme") and not found.orders_by_rating:
        return False  # "best-of-N gets worse with more samples" is a topic, not an order
    if papers == "previous" and op in _SINGLE_OPS and found is not \
            None and found.singular and not found.plural and context.n_previous > 1 and \
            not _EVERY.search(found.filters.question):
        return False  # "cite that one" is one paper, not all eight of the previous answer
    return True


_WHICH = re.compile(r"\bwhich\b", re.I)
#: A count said by rating ("the best one", "worst 3"), not by place ("the first two", "top 3").
_BY_RATING = re.compile(r"\b(?:best|worst|highest|lowest|strongest|weakest)\b", re.I)
#: "highest rated", "best-reviewed", "top-scored": a rating order said in so many words.
_BY_RATING_ORDER = re.compile(r"\b(?:best|worst|highest|lowest|top|bottom)[-\s]+(?:rated|ranked|"
                              r"scored|scoring|reviewed|rating)\b", re.I)
#: Words that pick papers by place ("the first five", "among [2] and [4]").
_BY_PLACE = re.compile(r"\b(?:first|last|second|third|among|of\s+the)\b|[#\[]\d", re.I)
#: Words that ask about the whole index rather than the papers in hand.
_WHOLE_LIST = re.compile(r"\b(?:whole|entire|index|conference|iclr|corpus|overall)\b", re.I)
#: "survey of methods for X - A vs B vs C": a survey asked for in so many words.
_SURVEY_WORD = re.compile(r"^\W*(?:(?:a|an|give\s+me\s+(?:a|an))\s+)?(?:survey|overview|landscape|"
                          r"lit(?:erature)?\s+review)\b", re.I)
#: "more papers like TangoFlux", "anything similar to StepORLM": the papers near a named one.
_LIKE_NAME = re.compile(r"\b(?:papers?|works?|ones|stuff|more|others?|anything|something)\s+"
                        r"(?:\w+\s+)?(?:like|similar\s+to|close\s+to|resembling|akin\s+to)\s+$",
                        re.I)
#: A count of the list's papers in so many words ("how many submissions did ...", "the number
#: of orals").
_COUNTS_PAPERS = re.compile(r"\b(?:how\s+many|number\s+of|count\s+of)\s+(?:\w+\s+){0,2}?(?:papers|"
                            r"submissions|works|orals|posters|spotlights|rejections)\b|"
                            # "how big was ICLR 2018?", "the size of each conference"
                            r"\bhow\s+(?:big|large)\s+(?:was|were|is|are)\b|"
                            # "oral presentations", "withdrawn count", "acceptance rate"
                            r"\bhow\s+many\s+(?:\w+\s+){0,2}?(?:presentations|talks|decisions|"
                            r"withdrawals|rejects|invites|invitations|acceptances)\b|\b(?:orals?|posters?|spotlights?|withdrawn|"
                            r"rejected|rejects|accepted|submissions?|papers?)\s+(?:count|total|number)s?"
                            r"\b|\baccept[ae]nce\s+(?:rates?|ratios?)\b|\btotal\s+(?:number\s+of\s+)?"
                            r"(?:submissions|papers)\b|\bsize\s+of\s+(?:the\s+|"
                            r"each\s+|both\s+)?(?:conferences?|iclr|years?|lists?)\b", re.I)
#: A question that opens by asking how many papers do something ("How many ICLR 2026 papers work
#: on X?", "How many papers tackle X or Y?"): a count, however long the rest ("of these", "among
#: them" point at papers in hand and are left to the reader).
_ASKS_HOW_MANY = re.compile(r"^\W*(?:(?:roughly|approximately|about|so|ok(?:ay)?|and)\s*,?\s+)?"
                            r"how\s+many\s+(?!of\b|among\b)(?:[\w'-]+\s+){0,3}?(?:papers|works|"
                            r"submissions|studies|articles)\s+(?!of\b|among\b|here\b|above\b)\w",
                            re.I)
#: A turn's preamble about why it asks ("For a slide:", "Quick one for my thesis intro:", "I'm
#: writing a blog post about how much ICLR has grown."): no topic of the question.
#: A length asked for ("in two sentences"): not a subject ("the second paper in two sentences").
_LENGTH = re.compile(r"[\s,]*\b(?:in|within|using)\s+(?:one|two|three|four|five|a\s+few|a|\d+)"
                     r"\s+(?:short\s+)?(?:sentences?|lines?|words?|bullets?(?:\s+points?)?|"
                     r"paragraphs?)\b", re.I)
_PREAMBLE = re.compile(r"^\s*(?:(?:quick|one)\s+(?:one|question|q)\s+)?(?:for|i['’]?m\s+(?:writing|"
                       r"preparing|making|working\s+on)|i\s+am\s+(?:writing|preparing|making|"
                       r"working\s+on)|(?:my\s+)?(?:advisor|supervisor|boss|manager)\s+wants)\s+"
                       r"(?:an?\s+|my\s+|the\s+|some\s+)?(?:(?:short|quick|brief|small|little)\s+)?"
                       r"(?:slides?|talk|blog(?:\s+post)?|post|thesis|report|presentation|article|"
                       r"survey|newsletter|intro\w*|numbers?|lecture|review|notes?|piece|summary|"
                       r"memo|write-?up|essay|tweet|thread)\b[^:.?!]{0,80}[:.!—–-]\s+(?=\S)", re.I)
#: "what percent of", "what share of": a share of the list's papers.
_SHARE_OF = re.compile(r"\bwhat\s+(?:percent(?:age)?|share|fraction|proportion)\s+of\b", re.I)
#: A person's papers pointed back at ("how many of his papers were rejected?", "her orals").
_HIS_PAPERS = re.compile(r"\b(?:his|her)\s+(?:\w+\s+)?(?:papers?|works?|submissions?|orals?|"
                         r"posters?|ones)\b", re.I)
#: "what did ICLR 2018 have on X", "what was published about X": the papers on a topic.
_HAD_ON = re.compile(r"\b(?:have|had|has|publish(?:ed)?|accept(?:ed)?|feature[sd]?|present(?:ed)?|"
                     r"see|saw)\s+(?:on|about|regarding|in\s+the\s+way\s+of)\s+\w", re.I)
#: "the 2018 ancestors of X", "which 2018 papers does X build on", "2026 descendants of DAGMM":
#: a paper's neighbours in another year.
_LINEAGE = re.compile(r"\b(?:ancestors?|descendants?|precursors?|predecessors?|successors?|"
                      r"forerunners?|antecedents?|follow[- ]?ups?|lineage|builds?\s+(?:up)?on|"
                      r"build\s+(?:up)?on|built\s+(?:up)?on|inspired\s+by|related\s+(?:to|work)|"
                      r"most\s+(?:related|similar|alike)|closest|nearest|counterparts?|"
                      r"equivalents?|analog(?:ue)?s?|follow(?:s|ed)?\s+up\s+on|more\s+like|"
                      r"similar\s+to|same\s+(?:problem|topic|question|task|idea)s?\s+as)\b",
                      re.I)
#: "papers similar to the paper on X", "work closest to the 2026 paper that ...": the papers near
#: a paper described rather than named.
_LIKE_DESCRIBED = re.compile(
    r"\b(?:papers?|works?|ones|submissions?|anything|something)\s+(?:\w+\s+){0,2}?(?:similar\s+"
    r"to|closest\s+to|close\s+to|most\s+like|like|related\s+to|resembling)\s+(?:the|that|this)"
    r"\s+(?:(?:19|20)\d\d\s+)?(?:paper|work|submission|one)\b|"
    # "the 2018 paper that scaled up X - anything similar in 2026?"
    r"^\W*the\s+(?:(?:19|20)\d\d\s+)?(?:paper|work|submission)\b.*\b(?:anything|something|"
    r"papers?|works?)\s+(?:\w+\s+)?(?:similar|like\s+(?:it|that|this))\b", re.I)
#: Operations a singular reference ("that one", "this paper") applies to one paper.
#: ("which one of these ..." picks among the previous answer's papers: not this rule).
_SINGLE_OPS = ("describe", "authors", "number", "cite", "similar")
_EVERY = re.compile(r"\b(?:each|every|all|both|them|these|those|they|their)\b", re.I)


def read_turn(text: str, context: TurnContext, reader: TurnReader, *, areas: Sequence[str],
              names: NameIndex, authors: Mapping[str, str] | None = None,
              vocabulary: frozenset[str] | set[str] = frozenset()) -> Plan:
    """The :class:`Plan` of turn ``text`` (already checked: :func:`rag.chat.answer.check_question`).

    Args:
        context: the previous answer, as the reader sees it.
        reader: the learned model (:meth:`rag.understand.turn_reader.TurnReader.load`).
        areas: the index's primary areas (area filters).
        names: the index's paper names (:meth:`rag.retrieve.retriever.Retriever.name_index`).
        authors: the index's author names (:func:`rag.understand.authors.author_index`): a
            full name said in any frame filters by that author (:func:`rag.understand.authors.apply_authors`), and so
            does a surname said beside an author word ("Levine et al.").
        vocabulary: words the papers use, lower case: a surname that is one of them is read
            only when capitalised ("papers by Song", not "music made by song structure").
    """
    # (a preamble keeps its years: "My advisor wants numbers on how picky ICLR 2018 was.")
    text = respell_decisions(_PREAMBLE.sub(lambda m: "".join(
        f"in {y}, " for y in re.findall(r"\b(?:19|20)\d\d\b", m.group(0))), text))  # "rejectd"
    found = find_slots(_LENGTH.sub("", text).strip() or text, context, areas, names)
    x = reader.features([text], [context], [found])[0]
    probs = reader.probabilities(x)
    allowed = allowed_papers(context, found)
    best, best_p, total = None, -1.0, 0.0
    for papers, pp in probs["papers"].items():
        if papers not in allowed:
            continue
        for op, po in probs["op"].items():
            if not compatible(papers, op, context, found):
                continue
            p = pp * po
            total += p
            if p > best_p:
                best, best_p = (papers, op), p
    papers, op = best or ("search", "lookup")
    if op in ("survey", "lookup", "describe") and _ASKS_HOW_MANY.match(text) and \
            compatible(papers, "count", context, found):
        op = "count"  # "How many papers propose methods for music generation?" (read as a survey)
    if papers == "catalog" and context.has_previous and "previous" in allowed and \
            _HIS_PAPERS.search(text) and compatible("previous", op, context, found):
        papers = "previous"  # "how many of his papers were rejected?" after an author's list
    if found.names and op != "similar" and any(
            _LIKE_NAME.search(text[:span[0]]) for _, span, ids in found.names if len(ids) == 1):
        papers, op = "named", "similar"  # "find me more papers like TangoFlux - ..."
    elif op != "similar" and _LIKE_DESCRIBED.search(text):
        # "2018 papers similar to the 2026 paper on X": the paper described, then its neighbours
        papers, op = ("named" if "named" in allowed else "search"), "similar"
    elif op != "similar" and _LINEAGE.search(text) and (found.names or found.quoted) and \
            years.years_said(text):
        # "which 2018 papers does Difference-Based Graph Attention Networks build on?"
        papers, op = "named", "similar"
    elif op != "similar" and _SIMILAR_TO.search(text) and len(set(years.years_said(text))) >= 2 \
            and not years.asks_per_year(text):
        # "2026 papers similar to Graph Attention Networks from 2018": a paper of one year
        # searched by its words, then its neighbours in the other
        papers, op = "search", "similar"
    other_end = _OTHER_END.fullmatch(text) if context.order else None
    if other_end and not found.filters.filters:
        # "and the lowest rated one?" after the best-rated paper of a filter: the same papers'
        # other end (rag.chat.refine.resolve_refine), not the whole list's
        return Plan(papers="search", op="refine", topic=other_end.group(1), query=text,
                    said=text, confidence=round(best_p / total, 4) if total else 1.0)
    # (a refine's aspect is kept for the question it changes: "and what metrics?" after the
    # datasets of X asks for the metrics of X; see rag.chat.refine.resolve_refine)
    aspect = max(probs["aspect"], key=probs["aspect"].get) \
        if op in _ASPECT_OPS or op == "refine" else ""
    plan = assemble(text, papers, op, aspect, found, context,
                    confidence=best_p / total if total else 0.0)
    if papers == "catalog" and op in ("count", "extreme", "sort", "list") and plan.filters and \
            context.kind in ("count", "extreme", "rated", "list") and _GOES_ON.match(text) and \
            not _WHOLE_LIST.search(text) and not years.asks_per_year(text) and \
            not any(f.startswith("author=") for f in plan.filters) and \
            not topics.has_topic(_RATING_WORDS.sub(" ", plan.query)):
        # "and the lowest rated oral?" after the lowest rated poster of 2018: the previous
        # question with this filter changed (2018 kept), not the whole list's orals
        return Plan(papers="search", op="refine", filters=plan.filters, query=text, said=text,
                    confidence=plan.confidence)
    if op == "similar" and papers == "search":
        m = _SIMILAR_TO.search(plan.query)
        if m and topics.has_topic(plan.query[m.end():]):
            words = re.sub(r"\(\s*(?:iclr)?\s*\)|\b(?:from|in|at|of)\s+(?:iclr\s*)?$", " ",
                           plan.query[m.end():].strip(" ?.!,"), flags=re.I)
            plan.query = plan.topic = words.strip(" ?.!,")  # the paper's words
    said_authors = authors_said(text, authors) if authors and not any(
        f.startswith("author=") for f in plan.filters) else []
    if authors and not said_authors and not any(f.startswith("author=") for f in plan.filters):
        said_authors = surnames_said(text, surname_index(authors), vocabulary)  # "Levine et al."
    if said_authors:  # ("what about dawn song, any orals?": another author, a question of its own)
        apply_authors(plan, text, said_authors)
    elif op != "refine" and any(f.startswith("author=") for f in plan.filters):
        # read by the filter words ("papers by Yoshua Bengio"): the same cleanup of the topic
        named = [f[7:] for f in plan.filters if f.startswith("author=")]

        placed = authors_said(text, {fold(n): n for n in named if len(n.split()) > 1})
        apply_authors(plan, text, placed, add=False)
    if op != "refine" and authors and any(f.startswith("author=") for f in plan.filters):
        # "papers by Abbeel and Levine" (the second read by its place), "coauthored by A and B"
        said = [f[7:] for f in plan.filters if f.startswith("author=")]
        folded = {name_core(a) for a in said}
        more = [n for n, _ in authors_said(text, authors) if name_core(n) not in folded]
        words = {w for a in said + more for w in fold(a).split()}
        more += [n for n, _ in surnames_said(text, surname_index(authors), vocabulary)
                 if fold(n) not in words]  # "Levine et al. and Abbeel's papers"
        more += joined_names(text, said + more, authors, surname_index(authors))
        if more:
            plan.filters = plan.filters + [f"author={n}" for n in more]
            apply_authors(plan, text, name_spans(text, said + more), add=False)
        plan.filters = join_coauthors(plan.filters, text)
    if op != "similar" and years.asks_per_year(text) and (
            op != "refine" or topics.has_topic(years.trend_topic(plan.query))):
        # (a turn with a topic of its own is a new question, not the previous one changed:
        # "how did interest in X change since 2018?" after "orals?")
        apply_per_year(plan, text, found, context)
    compared = plan.op == "compare" and not plan.ids  # "orals vs posters vs rejects"
    if asks_by_decision(text) and plan.op not in ("similar", "cite") and (
            plan.op != "compare" or compared) and \
            (plan.papers in ("catalog", "search", "previous") or compared) and (
                plan.papers == "catalog" or not topics.has_topic(without_decisions(
                    years.without_mean(plan.query)))):
        # "break 2018 down by decision", "orals, posters, rejects and withdrawn per year?",
        # "average reviewer score of 2018 orals vs posters vs rejects": a count per decision
        # (with each one's mean rating), not one count of the decisions merged
        plan.by_decision, plan.op, plan.n, plan.order = True, "count", None, ""
        plan.filters = [f for f in plan.filters if not f.startswith("status=")]
        plan.sides, plan.names, plan.aspect = [], [], ""
        if plan.papers in ("search", "named"):
            plan.papers, plan.topic = "catalog", ""
    if years.apply_rated(plan, text):
        pass  # "mean rating of LLM papers vs the rest", "were orals rated higher than the rest?"
    elif plan.op == "count" and plan.papers == "catalog" and not plan.per_year and \
            years.asks_mean(text):
        plan.mean_rating = True  # "what's the average rating of 2026 orals?": stated
    elif asks_by_area(text) and plan.op not in ("similar", "compare", "cite") and (
            not plan.per_year or years.asks_acceptance(text) and len(plan.years) < 2) \
            and plan.papers in ("catalog", "search", "previous") and not plan.ids:
        # "which primary area had the most orals in 2026?", "what areas are there?", "which
        # area has the most papers on diffusion?" (its topic counted per area), "which area had
        # the best acceptance rate?" (its accepted papers, by rate)
        if plan.per_year:
            plan.filters = plan.filters + [f"year={y}" for y in plan.years]
            plan.per_year, plan.years, plan.mean_rating = False, [], False
        plan.by_area, plan.op, plan.n, plan.order = True, "count", None, ""
        plan.filters = [f for f in plan.filters if not f.startswith("primary_area=")]
        if plan.papers in ("search", "catalog"):
            # (the clause that asks it: "I run a funding program: which areas have the most
            # orals?" names no topic)
            clauses = [c for c in re.split(r"[:?!;]|\.(?=\s|$)", plan.query) if asks_by_area(c)]
            topic = years.trend_topic(_AREA_WORDS.sub(" ", years.without_mean(years.without_acceptance(
                _RATING_WORDS.sub(" ", clauses[0] if clauses else plan.query)))))
            if topics.has_topic(topic):
                plan.papers, plan.topic, plan.query = "search", topic, topic
            else:
                plan.papers, plan.topic = "catalog", ""
    out = probs.get("scope", {}).get("out", 0.0)
    if out >= OUTSIDE_ABOVE and not said_authors and not (plan.op == "similar" and plan.ids) \
            and not plan.by_decision and not plan.by_area \
            and not (plan.papers == "catalog" and (plan.filters or plan.per_year) and (
                plan.op == "count" and _COUNTS_PAPERS.search(text) or
                # "what percent of 2018 submissions got a workshop invitation?", "accepted papers
                # iclr 2026??": a share or a list of the papers the filters admit, nothing else
                # said ("what share of accepted papers come from Chinese institutions?" is)
                plan.op in ("count", "list") and not topics.has_topic(plan.query) and
                (plan.op == "list" or _SHARE_OF.search(text)) and
                not any(f.startswith("author=") for f in plan.filters) or
                plan.op in ("extreme", "sort") and found.orders_by_rating)) \
            and not (plan.papers == "search" and _HAD_ON.search(text)):
        # (a paper's neighbours are always in the list: "any 2026 follow-ups to <title>?"; so
        # are a count or the best-rated of its papers under a filter: "how many submissions did
        # iclr 2026 get", "lowest rated accepted poster at iclr 2026"; and what it "had on" a
        # topic: "what did iclr 2018 have on adversarial examples?")
        plan.outside = True
        plan.confidence = round(out, 4)  # the reading taken is "outside": as sure as that
    return plan


#: Words of a question per area ("which primary area had the most ..."): no topic.
_AREA_WORDS = re.compile(r"\b(?:which|what|primary|areas?|tracks?|categor(?:y|ies)|subfields?|"
                         r"ha[sd]|have|got|gets?|received?|are|is|was|were|there|exist|the|most|"
                         r"largest|biggest|popular|common|list|show|name|me|all|by|per|each|every|"
                         r"across|split|breakdown|distribution|counts?|how|many|papers?|"
                         r"submissions?|in|of|does|do|index|conference|iclr|fall|come|into|"
                         r"among|amongst|frequent|represented|top|compared?|overall|its|their|"
                         r"it|one|ones|and|rates?|what['’]s|whole|list['’]s)\b", re.I)
#: Words of a rating order ("the lowest", "best rated"): no topic.
_RATING_WORDS = re.compile(r"\b(?:best|worst|top|highest|lowest|bottom|least|weakest|strongest|"
                           r"rated|scored|reviewed|ones?|papers?|and|the|what|how|about|many|"
                           r"much|number)\b", re.I)
#: A turn that goes on from the previous one: "and ...", "what about ...", "same for ...".
_GOES_ON = re.compile(r"^\W*(?:and|what\s+about|how\s+about|same\s+(?:for|with)|now\s+for)\b", re.I)
#: "similar to", "closest to", "like": what a turn asks a paper's neighbours with.
_SIMILAR_TO = re.compile(r"\b(?:(?:most\s+)?similar|closest|close|nearest|related|akin)\s+to\b|"
                         r"\b(?:resembling|most\s+like|papers\s+like|works?\s+like)\b", re.I)
#: "and the lowest rated one?", "what about the worst?": the other end of a rating order, no
#: more (group 1: the order's words).
_OTHER_END = re.compile(r"\W*(?:(?:and|so|ok(?:ay)?|now|then|what\s+about|how\s+about)\W+)+"
                        r"(?:for\s+)?((?:the\s+)?(?:very\s+)?(?:best|worst|top|highest|lowest|"
                        r"bottom|least|weakest|strongest)(?:[-\s]+(?:rated|scored|scoring|"
                        r"reviewed|one|ones|paper|papers))*)\W*", re.I)
#: Probability of the scope head's "out" at or above which a turn is read as asking what the
#: list cannot say (:attr:`rag.understand.plan.Plan.outside`). Chosen by 4-fold cross-validation on the
#: tune part of the scope and plan turns, so that an in-scope turn is almost never refused:
#: at 0.5 the folds read 0.81 of the out-of-scope turns as outside but also 8.4% of the
#: in-scope turns written near them ("I'm looking for ICLR 2026 work on weather forecasting")
#: and 0.54% of the plan turns; at 0.9, 0.64, 0.8% and 0.0%.
OUTSIDE_ABOVE = 0.9


def assemble(text: str, papers: str, op: str, aspect: str, found: TurnSlots,
             context: TurnContext, confidence: float = 1.0) -> Plan:
    """The plan for a reading (papers, op, aspect) of ``text`` with its slots ``found``."""
    f = found.filters
    papers, op, aspect, confidence = narrowing.reread(  # "only the ones on X"
        text, papers, op, aspect, confidence, context.has_previous, bool(f.filters),
        rating_order.asks_rating(text), bool(found.positions) or found.count is not None)
    spans = list(found.position_spans) + list(found.count_spans)
    query = f.without(spans) or f.query
    plan = Plan(papers=papers, op=op, aspect=aspect, confidence=round(confidence, 4),
                filters=f.filters.as_strings() if f.filters else [], query=query, said=text)
    if papers == "positions":
        plan.positions = list(found.positions)
        if not plan.positions and found.count:
            n = found.count
            last = context.n_previous
            said = " ".join(text[a:b] for a, b in found.count_spans)
            from_end = rating_order.ascending(text)
            if context.order == "rating_asc" and _BY_RATING.search(said):
                from_end = not from_end  # "the best one" of a list shown worst first is its last
            plan.positions = (list(range(max(1, last - n + 1), last + 1))
                              if from_end and last else list(range(1, n + 1)))
    if papers == "previous" and op in _IT_OPS and context.n_previous > 1 and \
            _IT.search(text) and not _THEY.search(text) and not found.plural:
        # "cite it" after a list: one paper, the list's first; said in the answer, as unsure
        papers = plan.papers = "positions"
        plan.positions = [1]
        plan.confidence = min(plan.confidence, round(UNSURE_BELOW / 2, 4))
    if papers == "named":
        said = [w for w, _, _ in found.names if not any(  # (a name inside a quoted title: once)
            w.strip(" '\"‘’“”").lower() in q.lower() for q in found.quoted)]
        plan.names = list(dict.fromkeys(said + found.quoted)) or \
            [query]  # described, not named: "the one about medical segmentation"
        plan.ids = named_ids(found)
    if op == "compare" and found.sides:
        plan.sides = list(found.sides)
    if op == "survey" and not aspect and found.of_these and papers in ("previous", "focus") and \
            _WHICH.search(text):
        op = plan.op = "lookup"  # "Of these, which target VLMs?": picks among them
    if op == "extreme" and found.count is None and found.plural:
        op = plan.op = "sort"  # "the highest-rated papers on X": an ordering, not one paper
    elif op == "sort" and found.count is None and not found.plural and found.one_superlative:
        op = plan.op = "extreme"  # "the worst of them?": one paper, not an ordering
    if op in ("sort", "extreme"):
        plan.order = "rating_asc" if found.ascending else "rating_desc"
    if op in ("extreme", "compare", "survey", "sort", "list", "cite") and found.count and \
            not (op == "compare" and papers == "positions" and len(plan.positions) >= 2):
        plan.n = found.count  # ("how does the first one differ from the second": no "top 1")
    elif op in ("compare", "cite") and found.pair and papers == "focus":
        plan.n = 2  # "bibtex for both", "compare the two": see rag.chat.previous._paired
    if op == "refine":
        plan.topic = found.new_subject or query
        ids = named_ids(found)
        if ids and len(ids) <= 2:  # "and RealPDEBench?": a paper named (see resolve_refine)
            plan.names = list(dict.fromkeys(w for w, _, _ in found.names))
            plan.ids = ids
    elif op == "count" and papers == "search":
        plan.topic = plan.query = topics.count_topic(query) or query  # what the rule counts
    elif papers == "search":
        plan.topic = topics.topic_phrase(query)  # ("orals on X": "X", not "on X")
    if found.asks_status:
        plan.facts = ["status"]
    if papers in ("focus", "positions", "named", "previous") and rating_order.asks_rating(text):
        plan.facts = plan.facts + ["rating"]  # "what's its rating?": stated from the catalog
    if papers in ("focus", "positions", "named", "previous") and rating_order.asks_area(text):
        plan.facts = plan.facts + ["area"]  # "what area is StepORLM in?"
    if found.same_area and context.has_previous and not any(
            x.startswith("primary_area") for x in plan.filters):
        plan.inherit = ["primary_area"]
    if f.foreign:
        plan.notes.append(f.language_note)
    return plan


#: Operations on one paper: after a list, "it" is its first (:func:`assemble`).
_IT_OPS = ("cite", "describe", "authors", "number")
#: A singular pointer ("cite it", "what is its dataset?") and a plural one ("them", "each").
_IT = re.compile(r"\b(?:it|its|it's|this\s+(?:one|paper|work)|that\s+(?:one|paper|work))\b", re.I)
_THEY = re.compile(r"\b(?:they|them|their|these|those|all|each|every|both|ones|papers|works|"
                   r"which|list)\b", re.I)


def named_ids(found: TurnSlots) -> list[str]:
    """Ids of the papers the turn's names point at (:attr:`TurnSlots.names`), in order, once."""
    return list(dict.fromkeys(i for _, _, ids in found.names for i in ids))
