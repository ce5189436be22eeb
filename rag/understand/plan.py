"""The typed reading of one chat turn: which papers, then what to do with them (a :class:`Plan`).

:mod:`rag.understand.read` reads each turn once, with the conversation so far, into a plan; everything
downstream (:mod:`rag.chat.operations`, :mod:`rag.chat.answer`) executes the plan and never reads the
turn's words again. ``ask --json`` returns it as ``plan``; the UI shows :meth:`Plan.summary` in
one line above the answer, each part removable (:meth:`Plan.parts`, :meth:`Plan.without`).

Imports nothing of the project's (a basic, like :mod:`rag.types`).

Which papers (:data:`PAPERS`):

* ``search``: a new search on ``topic`` (plus ``filters``);
* ``previous``: all the papers the previous answer showed ([1], [2], ... in its order);
* ``focus``: the paper(s) the previous answer was about (its best match, or the compared pair);
* ``positions``: papers of the previous answer by number (``positions``: 1-based);
* ``named``: papers named by their method name or title (``names`` as said; ``ids`` resolved);
* ``catalog``: the whole list, or the part of it ``filters`` pick (no topic).

What to do (:data:`OPERATIONS`, the answer's main operation): ``lookup`` (the paper that does X),
``describe`` (one paper, optionally one ``aspect`` of it), ``survey`` (papers on a topic, or one
aspect across them), ``compare`` (a table), ``similar`` (papers near a given paper), ``cite``
(BibTeX), ``count``, ``list`` (the papers a filter leaves), ``sort`` (by mean rating),
``extreme`` (the best or worst rated), ``authors``, ``number`` (a figure), ``refine`` (the
previous question again with a new subject or filter; resolved into the previous plan's
operation before execution). ``filters`` and ``order`` act on the chosen papers before it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace

PAPERS = ("search", "previous", "focus", "positions", "named", "catalog")
OPERATIONS = ("lookup", "describe", "survey", "compare", "similar", "cite", "count", "list",
              "sort", "extreme", "authors", "number", "refine")
#: Parts of papers an answer can be about: methods, weaknesses, datasets and benchmarks,
#: evaluation metrics, findings.
ASPECTS = ("approaches", "limitations", "datasets", "metrics", "results")
ORDERS = ("rating_desc", "rating_asc")
#: Readings less probable than this are stated in the answer ("Reading this as: ...").
UNSURE_BELOW = 0.6

_ASPECT_WORDS = {"approaches": "their approaches", "limitations": "their limitations",
                 "datasets": "the datasets and benchmarks they use",
                 "metrics": "the metrics they report", "results": "their results"}
_OP_WORDS = {"lookup": "the best match", "describe": "described", "survey": "surveyed",
             "compare": "compared in a table", "similar": "papers similar to it",
             "cite": "as BibTeX", "count": "counted", "list": "listed",
             "sort": "sorted by rating", "extreme": "the best rated", "authors": "their authors",
             "number": "the figures they give", "refine": "the previous question again"}


@dataclass
class Plan:
    """One turn, read (see the module docstring for the fields' values).

    ``query`` is the text that ranks evidence sentences and, for ``search``, the search itself
    (the turn without the words that said filters, positions or the order); ``topic`` is what
    the summary calls the search ("hallucination in vision-language models"). ``sides`` are the
    descriptions of compared papers, one search each. ``n`` is how many papers the turn asked
    for ("top three": 3), or None. ``confidence`` is the probability of this reading
    (:mod:`rag.understand.read`; 1.0 for readings no model made); below :data:`UNSURE_BELOW` the answer
    says which reading was taken. ``ids`` are the resolved papers of ``named`` / ``positions`` /
    ``previous`` / ``focus`` (set by :mod:`rag.chat.operations`), ``notes`` plain statements for the
    answer (another language, no authors in the list), ``dropped`` the parts the user removed.
    """

    papers: str = "search"
    op: str = "lookup"
    topic: str = ""
    query: str = ""
    positions: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    sides: list[str] = field(default_factory=list)
    aspect: str = ""
    filters: list[str] = field(default_factory=list)
    order: str = ""
    n: int | None = None
    confidence: float = 1.0
    ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    #: The turn's words, for display only (the standalone question shown to the user).
    said: str = ""
    #: The new subject a ``refine`` put on the previous question (kept, so that the next change
    #: of subject replaces it instead of adding to it).
    subject: str = ""
    #: Catalog facts the turn asks about the chosen papers, stated before the answer:
    #: ``"status"`` for "was it an oral?", "[3] is a spotlight, right?".
    facts: list[str] = field(default_factory=list)
    #: Filter fields taken from the conversation ("in that area": ``"primary_area"``, the area
    #: of the previous answer's filter or paper); :mod:`rag.chat.operations` adds them to ``filters``.
    inherit: list[str] = field(default_factory=list)
    #: The turn asks what no paper's title, abstract, area, decision or rating says (the
    #: conference's deadlines, venue or awards, reviews' text, other venues, small talk): the
    #: answer says so instead of searching. Removable like any part (then it is searched).
    outside: bool = False
    #: The answer is given per year of the index ("how many orals in 2018 vs 2026?", "how did
    #: interest in GANs change since 2018?": :mod:`rag.understand.years`): a count per year and
    #: its share, or the best-rated paper of each year. ``years`` are the years said (the
    #: years compared; one year said with "since" starts the range), never ``year=`` filters.
    per_year: bool = False
    years: list[int] = field(default_factory=list)
    #: A count per year that states each year's mean reviewer rating ("average rating per
    #: year?").
    mean_rating: bool = False
    #: A count given per decision ("break 2018 down by decision", "orals, posters, rejects and
    #: withdrawn per year?"): a table of every decision's count within the filters, which then
    #: hold no decision (:func:`rag.understand.filter_words.asks_by_decision`).
    by_decision: bool = False
    #: A count given per primary area ("which primary area had the most orals in 2026?",
    #: "what areas are there?"): a table of the areas' counts within the filters
    #: (:func:`rag.understand.filter_words.asks_by_area`).
    by_area: bool = False

    def __post_init__(self) -> None:
        if self.papers not in PAPERS:
            raise ValueError(f"unknown paper source {self.papers!r}; one of {', '.join(PAPERS)}")
        if self.op not in OPERATIONS:
            raise ValueError(f"unknown operation {self.op!r}; one of {', '.join(OPERATIONS)}")
        if self.aspect and self.aspect not in ASPECTS:
            raise ValueError(f"unknown aspect {self.aspect!r}; one of {', '.join(ASPECTS)}")
        if self.order and self.order not in ORDERS:
            raise ValueError(f"unknown order {self.order!r}; one of {', '.join(ORDERS)}")

    @property
    def unsure(self) -> bool:
        """True when the reading is uncertain enough to be stated in the answer."""
        return self.confidence < UNSURE_BELOW

    def source_text(self, n_previous: int | None = None) -> str:
        """Which papers, in words: "8 papers from the previous answer", "a new search on KV
        cache compression", "paper [2] of the previous answer", "StepORLM", "the whole list"."""
        if self.papers == "search":
            return f"a new search on {self.topic}" if self.topic else "a new search"
        if self.papers == "previous":
            count = len(self.ids) if self.ids else n_previous
            if count == 1:
                return "the one paper of the previous answer"
            return (f"{count} papers from the previous answer" if count
                    else "the papers of the previous answer")
        if self.papers == "focus":
            return "the paper under discussion" if len(self.ids) <= 1 else \
                f"the {len(self.ids)} papers under discussion"
        if self.papers == "positions":
            marks = ", ".join(f"[{p}]" for p in self.positions)
            return f"paper{'s' if len(self.positions) > 1 else ''} {marks} of the previous answer"
        if self.papers == "named":
            return ", ".join(self.names) or "the papers named"
        return "the whole list"

    def parts(self, n_previous: int | None = None) -> list[tuple[str, str]]:
        """The summary's parts as ``(key, text)``: ``papers`` first, then one ``filter:F`` per
        filter, ``order``, ``aspect``, ``facts`` and ``op``. Keys are what :meth:`without`
        removes."""
        if self.outside:
            return [("outside", "outside what the papers' list says")]
        out = [("papers", self.source_text(n_previous))]
        for f in self.filters:
            out.append((f"filter:{f}", _filter_text(f)))
        if self.order and self.op not in ("extreme",):
            out.append(("order", "sorted by rating" if self.order == "rating_desc"
                        else "sorted by rating, lowest first"))
        if self.aspect:
            out.append(("aspect", _ASPECT_WORDS[self.aspect]))
        if self.per_year:
            said = ", ".join(map(str, self.years)) if len(self.years) > 1 else \
                ("" if one_year_only(self.said) else "since ") + str(self.years[0]) \
                if self.years else ""
            out.append(("per_year", f"per year ({said})" if said else "per year"))
        if "status" in self.facts:
            out.append(("facts", "its decision stated"))
        if "rating" in self.facts:
            out.append(("facts", "its rating stated"))
        op = _OP_WORDS[self.op]
        if self.op == "extreme":
            op = "the best rated" if self.order != "rating_asc" else "the lowest rated"
            if self.n and self.n > 1:
                op += f" {self.n}"
        elif self.op == "sort":
            op = ""  # said by the order
        elif self.op == "compare" and self.n:
            op = f"top {self.n} compared in a table"
        if op and not (self.op in ("describe", "lookup", "survey") and self.aspect):
            out.append(("op", op))
        return out

    def summary(self, n_previous: int | None = None) -> str:
        """The one line the UI shows above the answer ("8 papers from the previous answer ·
        orals only · sorted by rating")."""
        return " · ".join(text for _, text in self.parts(n_previous))

    def without(self, key: str) -> "Plan":
        """This plan with part ``key`` (:meth:`parts`) removed: a filter dropped; the order
        dropped (a sort becomes a list); the aspect dropped; ``papers`` turns a reading of the
        previous answer into a new search on the same words. Records ``key`` in ``dropped``."""
        dropped = self.dropped + [key]
        if key.startswith("filter:"):
            return replace(self, filters=[f for f in self.filters if f != key[7:]],
                           dropped=dropped)
        if key == "order":
            op = "list" if self.op in ("sort", "extreme") else self.op
            return replace(self, order="", op=op, n=None if op == "list" else self.n,
                           dropped=dropped)
        if key == "aspect":
            return replace(self, aspect="", dropped=dropped)
        if key == "facts":
            return replace(self, facts=[], dropped=dropped)
        if key == "outside":
            return replace(self, outside=False, dropped=dropped)
        if key == "per_year":
            return replace(self, per_year=False, dropped=dropped,
                           filters=self.filters + [f"year={y}" for y in self.years])
        if key == "papers" and self.papers != "search":
            return replace(self, papers="search", positions=[], ids=[], topic=self.query,
                           dropped=dropped)
        return replace(self, dropped=dropped)

    def to_json(self) -> dict:
        """The plan as ``ask --json`` gives it: every field, plus ``summary`` (the one line),
        ``parts`` (``[[key, text], ...]``, :meth:`parts`: what the UI shows as removable chips)
        and ``unsure`` (the answer states its reading)."""
        out = asdict(self)
        out["summary"] = self.summary()
        out["parts"] = [list(p) for p in self.parts()]
        out["unsure"] = self.unsure
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Plan":
        """The plan :meth:`to_json` gave (extra keys ignored).

        Raises:
            ValueError: a field with a value the plan does not take.
        """
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def _filter_text(f: str) -> str:
    """A filter string as the summary says it: ``status=oral`` -> "orals only",
    ``rating>=6`` -> "rating ≥ 6", ``primary_area=optimization`` -> "area: optimization"."""
    key, _, value = f.partition("=")
    if f.startswith("rating"):
        for op, sign in ((">=", "≥"), ("<=", "≤"), (">", ">"), ("<", "<"), ("=", "=")):
            if f.startswith("rating" + op):
                return f"rating {sign} {f[len('rating' + op):]}"
    if key == "status":
        plural = {"oral": "orals", "spotlight": "spotlights", "poster": "posters",
                  "accepted": "accepted papers", "rejected": "rejected papers",
                  "withdrawn": "withdrawn papers"}.get(value.lower(), value)
        return f"{plural} only"
    if key == "primary_area":
        return f"area: {value}"
    return f"{key}: {value}"


#: Words that make one year said the start of a range ("since 2018", "how did X change after 2018").
_FROM_YEAR_ON = re.compile(r"\b(?:since|after|from|onwards?|through|till|until|chang\w*|grow\w*|"
                           r"grew|trend\w*|evolv\w*|now|today|nowadays|these\s+days|anymore|"
                           r"than|vs\.?|versus|compared|bigger|smaller|more|fewer|less|"
                           r"rise|rose|fall|fell|drop\w*|declin\w*|increas\w*|decreas\w*)\b", re.I)


def one_year_only(said: str) -> bool:
    """True when a per-year turn that says one year asks of that year alone ("the acceptance
    rate at ICLR 2018"), not of the years from it on ("how has it changed since 2018?")."""
    return not _FROM_YEAR_ON.search(said or "")
