"""Metadata filters (``--filter status=Oral``, the UI's dropdowns), applied inside the search.

A :class:`Filters` is evaluated two ways that must agree: :meth:`Filters.where` gives the Chroma
``where`` clause for the dense side, :meth:`Filters.matches` tests a :class:`Paper` for the
lexical side. Values are matched case-insensitively; several values for one field mean "any of".

Fields: ``status`` (``oral``, ``spotlight``, ``poster``, ``accepted``, ``rejected``,
``withdrawn`` or an exact status string), ``primary_area``, ``venue``, ``year``, ``keyword``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from rag.errors import PaperchatError
from rag.types import Paper

FIELDS = ("status", "primary_area", "venue", "year", "keyword")
TIERS = {"oral": "oral", "orals": "oral", "spotlight": "spotlight", "poster": "poster",
         "posters": "poster", "withdrawn": "withdrawn", "reject": "reject", "rejected": "reject",
         "workshop": "workshop"}
ACCEPTED = {"accept", "accepted"}


class FilterError(PaperchatError, ValueError):
    """A filter string is not ``FIELD=VALUE`` with a known field."""


@dataclass
class Filters:
    """Conjunction over fields of disjunctions over values (all strings, as typed)."""

    values: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, items: Iterable[str]) -> "Filters":
        """Parse ``["status=Oral", "primary_area=optimization"]``.

        Raises:
            FilterError: not ``FIELD=VALUE``, unknown field, or a non-numeric year.
        """
        values: dict[str, list[str]] = {}
        for item in items or ():
            if "=" not in item:
                raise FilterError(f"filter {item!r} is not FIELD=VALUE (fields: {', '.join(FIELDS)})")
            key, value = (s.strip() for s in item.split("=", 1))
            key = key.lower().replace("-", "_")
            if key == "keywords":
                key = "keyword"
            if key not in FIELDS:
                raise FilterError(f"unknown filter field {key!r}; use one of {', '.join(FIELDS)}")
            if not value:
                raise FilterError(f"filter {item!r} has an empty value")
            if key == "year" and not value.lstrip("-").isdigit():
                raise FilterError(f"year filter needs a number, got {value!r}")
            values.setdefault(key, []).append(value)
        return cls(values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def as_strings(self) -> list[str]:
        return [f"{k}={v}" for k, vs in self.values.items() for v in vs]

    # -- the lexical side --------------------------------------------------------------------------
    def matches(self, paper: Paper) -> bool:
        from index.build import is_accepted, status_tier

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
            else:
                ok = str(getattr(paper, key)).lower() in low
            if not ok:
                return False
        return True

    # -- the dense side -----------------------------------------------------------------------------
    def where(self, allowed_ids: Iterable[str] | None = None) -> dict[str, Any] | None:
        """Chroma ``where`` for these filters. Fields Chroma cannot match case-insensitively
        (primary area, venue, keyword, exact statuses) are expressed through ``allowed_ids``:
        the ids of matching papers, computed by :meth:`matches` over the catalog."""
        clauses: list[dict[str, Any]] = []
        for key, wanted in self.values.items():
            if key == "status" and all(w.lower() in TIERS or w.lower() in ACCEPTED for w in wanted):
                ors: list[dict[str, Any]] = []
                for w in wanted:
                    w = w.lower()
                    ors.append({"accepted": True} if w in ACCEPTED else {"tier": TIERS[w]})
                clauses.append(ors[0] if len(ors) == 1 else {"$or": ors})
            elif key == "year":
                ys = [int(y) for y in wanted]
                clauses.append({"year": ys[0]} if len(ys) == 1 else {"year": {"$in": ys}})
            elif allowed_ids is not None:
                clauses.append({"paper_id": {"$in": sorted(allowed_ids) or ["\x00none"]}})
                allowed_ids = None  # one id clause covers every remaining field
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}
