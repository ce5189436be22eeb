"""The records common to every paper-list format (:mod:`index.sources`): one record's fields
made a :class:`rag.types.Paper` (:func:`paper_from_mapping`, the project's JSONL schema, also used
for CSV rows and by the other formats' builders), the field helpers they share, venue and year
from a file name or an OpenReview venue string, and the collector that turns records into a
:class:`LoadResult` with a :class:`Problem` per bad record.

Reviewer ratings and confidences (:attr:`rag.types.Paper.ratings`, ``confidences``) come from a
``ratings``/``rating`` and ``confidences``/``confidence`` field or column (a list of numbers, or a
``;``-separated string such as Paper Copilot's ``"4;5;5"``; ``""`` means none), or from a dated
field such as the ICLR 2026 lists' ``ratings_2025_11_22`` (the latest date wins when there are
several). OpenReview notes carry no ratings (they are in the reviews, not the submission). A
malformed value (``"4;x;5"``, an object) does not lose the paper: it loads without that list and a
warning :class:`Problem` names the field and the record's line.
"""

from __future__ import annotations

import ast
import math
import unicodedata
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from rag.types import Paper


#: Conference names recognised in file names (lower-case stem prefix -> display name).
_CONFERENCES = {
    "iclr": "ICLR", "nips": "NeurIPS", "neurips": "NeurIPS", "icml": "ICML", "cvpr": "CVPR",
    "iccv": "ICCV", "eccv": "ECCV", "wacv": "WACV", "acl": "ACL", "emnlp": "EMNLP",
    "naacl": "NAACL", "coling": "COLING", "colm": "COLM", "aaai": "AAAI", "ijcai": "IJCAI",
    "aistats": "AISTATS", "uai": "UAI", "colt": "COLT", "corl": "CoRL", "kdd": "KDD",
    "www": "WWW", "icra": "ICRA", "iros": "IROS", "rss": "RSS", "siggraph": "SIGGRAPH",
    "tmlr": "TMLR", "mlsys": "MLSys", "3dv": "3DV", "automl": "AutoML", "lod": "LOD",
}

#: Column / field aliases mapped onto the project's field names (CSV and Paper Copilot).
_ALIASES = {"author": "authors", "site": "url", "tl;dr": "tldr", "paper_id": "id",
            "forum": "id", "keyword": "keywords", "decision": "status"}


def _column_names(header: list[str]) -> list[str]:
    """Lower-cased column names with aliases applied, unless the alias's target is a column."""
    names = [h.strip().lower() for h in header]
    return [_ALIASES[n] if n in _ALIASES and _ALIASES[n] not in names else n for n in names]


@dataclass
class Problem:
    """A record that was skipped (``skipped=True``) or accepted with a warning.

    ``line`` is the 1-based line where the record starts; ``record`` is its 0-based index in a
    JSON array (None for JSONL and CSV, whose line is the record's identity).
    """

    line: int
    message: str
    skipped: bool = True
    record: int | None = None

    def __str__(self) -> str:
        kind = "skipped" if self.skipped else "warning"
        where = f"line {self.line}" if self.record is None else \
            f"line {self.line} (array index {self.record})"
        return f"{where}: {kind}: {self.message}"


@dataclass
class LoadResult:
    """Papers in file order (duplicates resolved: a repeated id takes the place of its last
    occurrence), the problems found, the format used, the number of records seen (good or bad,
    blank lines excluded) and the path read ('' when built by hand)."""

    papers: list[Paper]
    problems: list[Problem] = field(default_factory=list)
    fmt: str = "jsonl"
    n_records: int = 0
    path: str = ""

    @property
    def skipped(self) -> int:
        """Records skipped as malformed (duplicates are warnings, not counted)."""
        return sum(1 for p in self.problems if p.skipped)


# --- field helpers --------------------------------------------------------------------------------
def _str(value: Any, name: str, numbers: bool = False) -> str:
    if value is None:
        return ""
    if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"field {name!r} should be a string, got {type(value).__name__}")
    return value


def _str_list(value: Any, name: str, sep: str = ";") -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):  # a list written as text (pandas, JSON)
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                parsed = None
            if isinstance(parsed, list) and all(isinstance(v, str) for v in parsed):
                return [v.strip() for v in parsed if v.strip()]
        return [v.strip() for v in value.split(sep) if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise ValueError(f"field {name!r} should be a list of strings")


#: Field names that carry reviewer scores: ``ratings``, ``rating``, ``confidence(s)``, optionally
#: dated as in the ICLR 2026 lists (``ratings_2025_11_22``).
_SCORE_FIELD = re.compile(r"^(?P<kind>rating|confidence)s?(?:_(?P<date>\d{4}_\d\d_\d\d))?$")

#: One score written as text: ``6``, ``6.5``, or OpenReview's ``6: marginally above threshold``.
_SCORE_TEXT = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?::.*)?$", re.S)


def _score_field(rec: dict[str, Any], kind: str) -> tuple[str, Any] | None:
    """``(field name, value)`` of the record's ``kind`` (``rating`` or ``confidence``) scores:
    an undated field (``ratings``, ``rating``) first, else the latest dated one; fields whose value
    is None, ``""`` or ``[]`` are passed over. None when the record has none."""
    found = []
    for key, value in rec.items():
        m = _SCORE_FIELD.match(str(key).strip().lower()) if isinstance(key, str) else None
        if m and m.group("kind") == kind and value not in (None, "", []):
            found.append((m.group("date") is not None, m.group("date") or "", key, value))
    if not found:
        return None
    undated = [f for f in found if not f[0]]
    best = undated[0] if undated else max(found, key=lambda f: f[1])
    return best[2], best[3]


def _scores(value: Any, name: str) -> list[float]:
    """Reviewer scores from a list of numbers (or numeric strings), a ``;``-separated string
    (``"4;5;5"``), a list written as text (``"[4, 5, 5]"``) or one number; blank entries are
    skipped.

    Raises:
        ValueError: a non-numeric or non-finite entry, or a value of another type (the message
            names the field and the value).
    """
    if value is None or value == "":
        return []
    items: list[Any]
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise ValueError(f"field {name!r} is not a list of numbers: "
                                 f"{text[:60]!r}") from None
            if not isinstance(parsed, list):
                raise ValueError(f"field {name!r} is not a list of numbers: {text[:60]!r}")
            items = parsed
        else:
            items = [v for v in text.split(";") if v.strip()]
    elif isinstance(value, list):
        items = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    else:
        raise ValueError(f"field {name!r} should be a list of numbers or a ';'-separated "
                         f"string, got {_json_type(value)}")
    out: list[float] = []
    for item in items:
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            x = float(item)
        elif isinstance(item, str) and _SCORE_TEXT.match(item):
            x = float(_SCORE_TEXT.match(item).group(1))
        else:
            shown = repr(item) if isinstance(item, str) else f"a JSON {_json_type(item)}"
            raise ValueError(f"field {name!r} holds {shown[:60]}, not a number")
        if not math.isfinite(x):
            raise ValueError(f"field {name!r} holds {item!r}, not a finite number")
        out.append(x)
    return out


def _record_scores(rec: dict[str, Any], kind: str, warnings: list[str] | None) -> list[float]:
    """The record's ``kind`` scores (see :func:`_score_field`); a malformed value gives ``[]``
    and a message appended to ``warnings`` (when given)."""
    picked = _score_field(rec, kind)
    if picked is None:
        return []
    try:
        return _scores(picked[1], picked[0])
    except ValueError as exc:
        if warnings is not None:
            plural = "ratings" if kind == "rating" else "confidences"
            warnings.append(f"{exc}; loaded without {plural}")
        return []


_YEAR = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")


def _year(value: Any, venue: str = "") -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():  # 2026.0 from a spreadsheet
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\d+(\.0*)?\s*", value):
        return int(float(value))
    for token in venue.split():
        if token.isdigit() and len(token) == 4:
            return int(token)
    return None


def _id_from_url(url: str) -> str:
    m = re.search(r"[?&]id=([^&#\s]+)", url)
    return m.group(1) if m else ""


def _bad_utf8(value: Any, where: str = "") -> str | None:
    """Name of the first field holding undecodable bytes (surrogate escapes), or None."""
    if isinstance(value, str):
        return where or "record" if re.search("[\udc80-\udcff]", value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            found = _bad_utf8(k, where or "record") or _bad_utf8(v, f"{where}.{k}" if where else k)
            if found:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _bad_utf8(v, f"{where}[{i}]")
            if found:
                return found
    return None


def venue_from_filename(name: str) -> tuple[str, int | None]:
    """``(venue, year)`` named by a file name, e.g. ``iclr2018_papercopilot.json`` ->
    ``("ICLR 2018", 2018)``; ``("", None)`` when it names no known conference (see
    ``_CONFERENCES``) directly followed by a year (an optional ``_`` or ``-`` between)."""
    stem = Path(name).name.lower()
    for m in re.finditer(r"(?<![a-z0-9])([a-z0-9]+?)[_-]?((?:19|20)\d\d)(?!\d)", stem):
        conf = _CONFERENCES.get(m.group(1))
        if conf:
            return f"{conf} {m.group(2)}", int(m.group(2))
    return "", None


_DATED_VENUE = re.compile(r"^venue_(\d{4}_\d\d_\d\d)$")


def _dated_venue(rec: dict[str, Any]) -> str:
    """The conference named by the latest dated OpenReview venue field of a record, as the ICLR
    2026 lists carry it (``venue_2025_11_22: "ICLR 2026 Conference Submission"`` -> ``ICLR
    2026``, see :func:`split_openreview_venue`); ``""`` when there is none or it names no
    ``<conference> <year>``. Lets a list without a ``venue`` field still give BibTeX its
    booktitle and year, whatever the file is called."""
    dated = sorted((m.group(1), v) for k, v in rec.items()
                   if isinstance(k, str) and isinstance(v, str) and (m := _DATED_VENUE.match(k)))
    if not dated:
        return ""
    venue, _ = split_openreview_venue(dated[-1][1])
    return venue if _YEAR.search(venue) else ""


# --- one record -> Paper --------------------------------------------------------------------------
def paper_from_mapping(rec: dict[str, Any], warnings: list[str] | None = None) -> Paper:
    """Build a Paper from a dict in the project's JSONL schema (also used for CSV rows).

    ``authors``/``keywords`` may be lists of strings or ``;``-separated strings; ``id`` may be a
    number (``12`` -> ``"12"``), and when missing is taken from an ``?id=`` in ``url``; ``venue``
    when missing from a dated ``venue_YYYY_MM_DD`` field (:func:`_dated_venue`); ``year``
    an int or a string of digits (else taken from ``venue``). Ratings and confidences as the
    module docstring says: a malformed one leaves that list empty and appends a message to
    ``warnings`` (ignored when ``warnings`` is None); it never raises.

    Raises:
        ValueError: missing/empty ``id``, ``title`` or ``abstract``, or a field of the wrong type;
            the message names the field.
    """
    if not isinstance(rec, dict):
        raise ValueError(f"record is a JSON {_json_type(rec)}, not an object")
    url = _str(rec.get("url"), "url").strip()
    pid = unicodedata.normalize("NFC", _str(rec.get("id"), "id", numbers=True).strip()
                                or _id_from_url(url))
    title = _str(rec.get("title"), "title").strip()
    abstract = _str(rec.get("abstract"), "abstract").strip()
    for name, value in (("id", pid), ("title", title), ("abstract", abstract)):
        if not value:
            raise ValueError(f"missing or empty {name!r}")
    venue = _str(rec.get("venue"), "venue").strip() or _dated_venue(rec)
    return Paper(
        id=pid, title=title, abstract=abstract,
        authors=_str_list(rec.get("authors"), "authors"),
        keywords=_str_list(rec.get("keywords"), "keywords"),
        primary_area=_str(rec.get("primary_area"), "primary_area").strip(),
        status=_str(rec.get("status"), "status").strip(),
        venue=venue, year=_year(rec.get("year"), venue),
        url=url,
        tldr=_str(rec.get("tldr"), "tldr").strip(),
        ratings=_record_scores(rec, "rating", warnings),
        confidences=_record_scores(rec, "confidence", warnings),
    )


_VENUE = re.compile(r"^(?P<pre>.*?)\b(?P<conf>[A-Za-z][\w&.+-]*\s+(?:19|20)\d\d)\b\s*(?P<rest>.*)$")


def split_openreview_venue(venue: str) -> tuple[str, str]:
    """``(venue, status)`` from OpenReview's ``content.venue`` string.

    ``"ICLR 2026 Poster"`` -> ``("ICLR 2026", "Accept (Poster)")`` (the project's status style);
    ``"Submitted to ICLR 2026"`` -> ``("ICLR 2026", "Submitted")``;
    ``"ICLR 2026 Conference Withdrawn Submission"`` -> ``("ICLR 2026", "Withdrawn")``;
    ``"... Desk Rejected Submission"`` -> ``"Desk Rejected"``; a string with no
    ``<name> <year>`` -> ``(venue, "")``.
    """
    venue = venue.strip()
    m = _VENUE.match(venue)
    if not m:
        return venue, ""
    conf, pre, rest = m.group("conf"), m.group("pre").strip().lower(), m.group("rest").strip()
    low = rest.lower()
    if "desk reject" in low:
        return conf, "Desk Rejected"
    if "withdraw" in low:
        return conf, "Withdrawn"
    if "reject" in low:
        return conf, "Reject"
    if pre.startswith("submitted") or low in ("conference submission", "submission"):
        return conf, "Submitted"
    if not rest:
        return conf, ""
    return conf, f"Accept ({rest[0].upper()}{rest[1:]})"


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null"}.get(type(value), "number")


# --- collecting records ---------------------------------------------------------------------------
class _Collector:
    """Counts records, turns ValueErrors into Problems, resolves duplicate ids (last wins).

    ``make(warnings)`` builds one Paper and may append messages to ``warnings`` about fields it
    dropped (malformed ratings): each becomes a warning Problem on the record's line."""

    def __init__(self, fmt: str, path: Path):
        self.result = LoadResult(papers=[], fmt=fmt, path=str(path))
        self.venue, self.year = venue_from_filename(path.name)
        self._by_id: dict[str, tuple[int, Paper]] = {}

    def problem(self, line: int, message: str, record: int | None = None) -> None:
        self.result.problems.append(Problem(line, message, True, record))

    def add(self, line: int, make: Callable[[list[str]], Paper], record: int | None = None,
            raw: Any = None) -> None:
        self.result.n_records += 1
        bad = _bad_utf8(raw) if raw is not None else None
        if bad:
            self.problem(line, f"not valid UTF-8 (in {bad!r})", record)
            return
        warnings: list[str] = []
        try:
            paper = make(warnings)
        except ValueError as exc:
            self.problem(line, str(exc), record)
            return
        self.result.problems += [Problem(line, w, skipped=False, record=record) for w in warnings]
        if not paper.venue and self.venue:
            paper = replace(paper, venue=self.venue)
        if paper.year is None:
            paper = replace(paper, year=_year(None, paper.venue) or self.year)
        if paper.id in self._by_id:
            first = self._by_id[paper.id][0]
            self.result.problems.append(Problem(
                line, f"duplicate id {paper.id!r} (also on line {first}); this later record wins",
                skipped=False, record=record))
        self._by_id[paper.id] = (line, paper)

    def finish(self) -> LoadResult:
        self.result.papers = [p for _, p in sorted(self._by_id.values(), key=lambda lp: lp[0])]
        return self.result


def _read_text(path: Path) -> str:
    """The file decoded as UTF-8; undecodable bytes become surrogate escapes (reported per
    record)."""
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    return text[1:] if text.startswith("\ufeff") else text
