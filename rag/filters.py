"""Metadata filters (``--filter status=Oral``, ``--filter 'rating>=6'``, the UI's dropdowns),
applied inside the search.

A :class:`Filters` is evaluated two ways that must agree: :meth:`Filters.where` gives the Chroma
``where`` clause for the dense side, :meth:`Filters.matches` tests a :class:`Paper` for the
lexical side. Values are matched case-insensitively; several values for one field mean "any of",
except ``rating``, whose comparisons must all hold (``rating>=5 rating<7`` is a range).

Fields: ``status`` (``oral``, ``spotlight``, ``poster``, ``accepted``, ``rejected``,
``withdrawn`` or an exact status string), ``primary_area``, ``venue``, ``year``, ``keyword``,
``rating`` and ``author``.

``rating`` is written with a comparison instead of ``=``: ``rating>=6``, ``rating>6``,
``rating<=5``, ``rating<4``, ``rating=6``; it compares the paper's mean reviewer rating as shown
(rounded to 2 decimals, :attr:`rag.types.Paper.rating`). An unrated paper never matches.

``author`` matches a paper when the value, case- and accent-folded (NFKD, combining marks
dropped), equals one of its authors' full names or is a whole-word part of one
(``author=Bengio`` matches "Yoshua Bengio", ``author=Ben`` does not). A value naming several
people joined by `` & `` asks for papers they wrote together (``author=Pieter Abbeel & Sergey
Levine``: every one of them is an author), where two ``author`` values mean either. A paper with
no authors (every ICLR 2026 list) never matches.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable

from rag.errors import PaperchatError
from rag.types import Paper, is_accepted, status_tier

FIELDS = ("status", "primary_area", "venue", "year", "keyword", "rating", "author")
TIERS = {"oral": "oral", "orals": "oral", "spotlight": "spotlight", "poster": "poster",
         "posters": "poster", "withdrawn": "withdrawn", "reject": "reject", "rejected": "reject",
         "workshop": "workshop"}
ACCEPTED = {"accept", "accepted"}
#: Field names accepted for the canonical ones.
FIELD_ALIASES = {"keywords": "keyword", "authors": "author", "ratings": "rating"}

#: Rating comparisons and their Chroma operators (``==`` is read as ``=``).
RATING_OPS = {">=": "$gte", ">": "$gt", "<=": "$lte", "<": "$lt", "=": "$eq"}
_RATING_HELP = "rating>=6, rating>6, rating<=5, rating<4 or rating=6"

#: ``FIELD<op>VALUE``: the field is everything before the first ``=``, ``<`` or ``>``.
_ITEM = re.compile(r"^([^=<>]*?)\s*(>=|<=|==|=|>|<)(.*)$", re.S)


#: Status words matched by the chunks' ``tier`` metadata. Rejected and withdrawn papers go
#: through ``allowed_ids`` instead: indexes built before rag.types.status_tier learned that
#: "Not accepted (Reject, or withdrawn after ...)" is a rejection stored ``tier=withdrawn``.
CHUNK_TIERS = frozenset(w for w, t in TIERS.items() if t in ("oral", "spotlight", "poster"))


class FilterError(PaperchatError, ValueError):
    """A filter string is not ``FIELD=VALUE`` (or ``rating<op>NUMBER``) with a known field."""


def fold(text: str) -> str:
    """Case- and accent-folded text with whitespace collapsed: NFKD, combining marks dropped,
    :meth:`str.casefold` (``"Jürgen  Schmidhuber"`` -> ``"jurgen schmidhuber"``)."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


#: Letters a shortened first name has at least, to name the same person as the long one.
SHORT_FIRST_NAME = 5


def author_matches(wanted: str, name: str) -> bool:
    """True when ``wanted`` equals the author ``name`` or is a whole-word part of it, both
    :func:`fold`-ed and without initials (:func:`name_core`: ``"bengio"`` matches ``"Yoshua
    Bengio"``, ``"Quoc Le"`` matches ``"Quoc V. Le"``; ``"ben"`` does not), or names the same
    surname with the same first name (middle names aside: "Zack Lipton", "Zack Chase Lipton"),
    a nickname of it ("Sam Schoenholz", "Samuel Schoenholz"), or one that starts the other's,
    at least :data:`SHORT_FIRST_NAME` letters ("Anima Anandkumar" and "Animashree
    Anandkumar"; "Sam Bengio" and "Samy Bengio" are neither)."""
    core = name_core(wanted)  # (an initial alone, "A.", is compared as it is)
    w, n = (core, name_core(name)) if core else (fold(wanted), fold(name))
    if not w:
        return False
    if w == n or re.search(rf"(?<!\w){re.escape(w)}(?!\w)", n) is not None:
        return True
    ws, ns = w.split(), n.split()
    if len(ws) < 2 or len(ns) < 2 or ws[-1] != ns[-1]:
        return False
    # one surname, and the first names (middle names aside: "Zack Lipton" is "Zack Chase
    # Lipton") the same, one the other's nickname ("Sam" and "Samuel", "Zack" and "Zachary";
    # "Sam" and "Samy" are not), or one the start of the other, five letters or more ("Anima"
    # and "Animashree"): the lists write one person all these ways
    a, b = ws[0], ns[0]
    return a == b or _nickname(a, b) or min(len(a), len(b)) >= SHORT_FIRST_NAME and (
        b.startswith(a) or a.startswith(b))


@lru_cache(maxsize=4096)
def _nickname(a: str, b: str) -> bool:
    """True when first name ``a`` is a nickname of ``b`` or ``b`` of ``a`` (lower case), by the
    hand-curated English table of the ``nicknames`` package (Old Dominion University's list)."""
    table = _nicknamer()
    return b in table.nicknames_of(a) | table.canonicals_of(a) or \
        a in table.nicknames_of(b) | table.canonicals_of(b)


@lru_cache(maxsize=1)
def _nicknamer():
    from nicknames import NickNamer

    return NickNamer()


def name_core(name: str) -> str:
    """A person's name :func:`fold`-ed with its initials left out ("Geoffrey E. Hinton" ->
    "geoffrey hinton", "Quoc V. Le" -> "quoc le") and an umlaut's "e" dropped before a consonant
    in the last word ("Schoelkopf" -> "scholkopf", as "Schölkopf" folds): the lists spell one
    person both ways."""
    words = [w for w in fold(name).replace(".", " ").split() if len(w) > 1]
    # ("Schoelkopf" is "Schölkopf" written without the umlaut: fold gives "scholkopf"; in the
    # surname only: "Samuel" and "Joel" are no umlauts)
    return " ".join(words[:-1] + [re.sub(r"([aou])e(?=[^aeiouy])", r"\1", w) for w in words[-1:]])


def coauthors(value: str) -> list[str]:
    """The names of an ``author`` filter value: ``"A & B"`` -> ``["A", "B"]`` (papers A and B
    wrote together), ``"A"`` -> ``["A"]``."""
    return [part.strip() for part in value.split("&") if part.strip()]


def _number(x: float) -> str:
    """Shortest text of a rating threshold (``6.0`` -> ``"6"``, ``5.5`` -> ``"5.5"``)."""
    return f"{x:g}"


def rating_condition(value: str) -> tuple[str, float]:
    """``(op, threshold)`` of a stored rating value (``">=6"`` -> ``(">=", 6.0)``; a bare number
    is ``=``); ``op`` one of :data:`RATING_OPS`.

    Raises:
        FilterError: no number after the comparison, or a non-finite one.
    """
    text = value.strip()
    op = next((o for o in ("==", ">=", "<=", ">", "<", "=") if text.startswith(o)), "")
    number = text[len(op):].strip()
    try:
        x = float(number)
    except ValueError:
        x = math.nan
    if not number or not math.isfinite(x):
        raise FilterError(f"rating filter needs a number, got {number!r} (e.g. rating>=6)")
    return ("=" if op in ("", "==") else op), x


def _compare(mean: float, op: str, x: float) -> bool:
    return {">=": mean >= x, ">": mean > x, "<=": mean <= x, "<": mean < x, "=": mean == x}[op]


@dataclass
class Filters:
    """Conjunction over fields of disjunctions over values (strings, as typed; ``rating`` values
    are stored as ``">=6"``: comparison and number, and are all required).

    Build with :meth:`parse`; :meth:`as_strings` gives the filter strings back.
    """

    values: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, items: Iterable[str]) -> "Filters":
        """Parse ``["status=Oral", "primary_area=optimization", "rating>=6", "author=Bengio"]``.

        Field names are case-insensitive (``-`` and spaces read as ``_``; ``keywords``,
        ``authors``, ``ratings`` accepted). A rating's number is stored in its shortest form
        (``rating>=6.0`` -> ``rating>=6``).

        Raises:
            FilterError: not ``FIELD=VALUE``, unknown field, empty value, a non-numeric year, a
                rating without a comparison or number (``rating~6``, ``rating>=abc``), or a
                comparison on another field (``year>2020``). The message is one line.
        """
        values: dict[str, list[str]] = {}
        for item in items or ():
            key, value = cls._split(item)
            if key == "rating":
                op, x = rating_condition(value)
                value = f"{op}{_number(x)}"
            values.setdefault(key, []).append(value)
        return cls(values)

    @staticmethod
    def _split(item: str) -> tuple[str, str]:
        """``(field, value)`` of one filter string; a rating's value keeps its comparison."""
        m = _ITEM.match(item)
        raw_key = (m.group(1) if m else item).strip().lower().replace("-", "_").replace(" ", "_")
        key = FIELD_ALIASES.get(raw_key, raw_key)
        if re.match(r"ratings?(?!\w)", key) and (not m or key != "rating"):  # rating~6, rating
            raise FilterError(f"rating filter {item!r} needs a comparison: {_RATING_HELP} "
                              "(quote it in a shell: --filter 'rating>=6')")
        if not m:
            raise FilterError(f"filter {item!r} is not FIELD=VALUE (fields: {', '.join(FIELDS)})")
        op, value = m.group(2), m.group(3).strip()
        if key not in FIELDS:
            raise FilterError(f"unknown filter field {key!r}; use one of {', '.join(FIELDS)}")
        if key == "rating":
            return key, op + value
        if op != "=":
            raise FilterError(f"filter {item!r}: only rating takes a comparison ({_RATING_HELP});"
                              f" write {key}=VALUE")
        if not value:
            raise FilterError(f"filter {item!r} has an empty value")
        if key == "year" and not value.lstrip("-").isdigit():
            raise FilterError(f"year filter needs a number, got {value!r}")
        return key, value

    def __bool__(self) -> bool:
        return bool(self.values)

    def as_strings(self) -> list[str]:
        """The filters as strings :meth:`parse` reads back: ``FIELD=VALUE``, and ``rating>=6``
        for ratings; in field order, then value order."""
        return [f"rating{v}" if k == "rating" else f"{k}={v}"
                for k, vs in self.values.items() for v in vs]

    # -- combining -------------------------------------------------------------------------------
    @staticmethod
    def _identity(key: str, value: str) -> Any:
        """What makes two values of ``key`` the same filter (case, accents, number spelling)."""
        if key == "rating":
            try:
                return rating_condition(value)
            except FilterError:
                return value
        return fold(value) if key == "author" else value.strip().casefold()

    def merged(self, other: "Filters | None") -> "Filters":
        """A new Filters with this one's values and then ``other``'s, each field's values
        deduplicated (``status=Oral`` and ``status=oral`` are one; ``rating>=6`` and
        ``rating>=6.0`` are one). Neither input is changed."""
        values: dict[str, list[str]] = {}
        seen: set[tuple[str, Any]] = set()
        for source in (self, other):
            for key, vs in (source.values if source else {}).items():
                for v in vs:
                    ident = (key, self._identity(key, v))
                    if ident not in seen:
                        seen.add(ident)
                        values.setdefault(key, []).append(v)
        return Filters(values)

    def without(self, strings: Iterable[str]) -> "Filters":
        """A copy without the filters named by ``strings`` (entries of :meth:`as_strings`,
        compared as :meth:`merged` does, so ``status=oral`` removes ``status=Oral``); strings
        that name no filter of this one, or are no valid filter at all, remove nothing. Fields
        left without values are dropped."""
        drop: set[tuple[str, Any]] = set()
        for s in strings:
            try:
                key, value = self._split(s)
            except FilterError:
                continue
            drop.add((key, self._identity(key, value)))
        values: dict[str, list[str]] = {}
        for key, vs in self.values.items():
            kept = [v for v in vs if (key, self._identity(key, v)) not in drop]
            if kept:
                values[key] = kept
        return Filters(values)

    # -- the lexical side --------------------------------------------------------------------------
    def matches(self, paper: Paper) -> bool:
        """True when ``paper`` passes every field's filter (see the module docstring).

        Raises:
            FilterError: a rating value that is no comparison and number (only when ``values``
                was built by hand rather than by :meth:`parse`).
        """
        for key, wanted in self.values.items():
            low = [w.lower() for w in wanted]
            if key == "status":
                tier = status_tier(paper.status)
                ok = any((w in ACCEPTED and is_accepted(paper.status)) or TIERS.get(w) == tier
                         or w == paper.status.lower() for w in low)
            elif key == "year":
                ok = paper.year is not None and str(paper.year) in wanted
            elif key == "keyword":
                kws = {k.lower() for k in paper.keywords}
                ok = any(w in kws for w in low)
            elif key == "rating":
                rating = paper.rating
                ok = rating is not None and all(_compare(rating["mean"], *rating_condition(w))
                                                for w in wanted)
            elif key == "author":
                ok = any(all(any(author_matches(part, name) for name in paper.authors)
                             for part in coauthors(w)) for w in wanted)
            else:
                ok = str(getattr(paper, key)).lower() in low
            if not ok:
                return False
        return True

    # -- the dense side -----------------------------------------------------------------------------
    def where(self, allowed_ids: Iterable[str] | None = None) -> dict[str, Any] | None:
        """Chroma ``where`` for these filters, or None when there is nothing to filter.

        Status tiers and years are chunk-metadata clauses. Fields Chroma cannot match
        case-insensitively or that older indexes lack in their chunk metadata (primary area,
        venue, keyword, exact statuses, author, rating) are expressed through ``allowed_ids``:
        the ids of matching papers, computed by :meth:`matches` over the catalog, so both sides
        agree. Without ``allowed_ids``, a rating becomes a clause on the chunks' ``rating``
        metadata (indexes built before ratings were indexed have none: nothing matches) and the
        other catalog-only fields are not filtered here."""
        clauses: list[dict[str, Any]] = []
        ids_used = False
        for key, wanted in self.values.items():
            if key == "status" and all(w.lower() in CHUNK_TIERS or w.lower() in ACCEPTED
                                       for w in wanted):
                ors: list[dict[str, Any]] = []
                for w in wanted:
                    w = w.lower()
                    ors.append({"accepted": True} if w in ACCEPTED else {"tier": TIERS[w]})
                clauses.append(ors[0] if len(ors) == 1 else {"$or": ors})
            elif key == "year":
                ys = [int(y) for y in wanted]
                clauses.append({"year": ys[0]} if len(ys) == 1 else {"year": {"$in": ys}})
            elif allowed_ids is not None:
                if not ids_used:  # one id clause covers every remaining field
                    clauses.append({"paper_id": {"$in": sorted(allowed_ids) or ["\x00none"]}})
                    ids_used = True
            elif key == "rating":
                for w in wanted:
                    op, x = rating_condition(w)
                    clauses.append({"rating": {RATING_OPS[op]: float(x)}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}
