"""Load paper lists into :class:`rag.types.Paper` records, reporting bad records by line.

Formats (``fmt``; ``auto`` detects one from the file's first bytes, see :func:`detect_format`):

``jsonl``
    The project's schema (``shared/data/README.md``), one JSON object per line.
``papercopilot``
    Paper Copilot's ``paperlists`` files: one JSON array of objects; ``author`` and ``keywords``
    are ``;``-separated strings, ``site`` is the paper's URL, missing values are empty strings,
    ``status`` is the raw decision (``Poster``, ``Oral``, ``Reject``...).
``openreview``
    OpenReview API v2 notes: a JSON array of notes, or the API's ``{"notes": [...]}`` response;
    each field is ``content.<field>.value`` (v1's bare ``content.<field>`` is accepted too).
``csv``
    A header row naming the columns (``id,title,abstract,authors,keywords,...``, any order,
    case-insensitive; unknown columns ignored), ``authors``/``keywords`` ``;``-separated (or a
    list written as text, ``['a', 'b']``, as pandas does), read with the stdlib :mod:`csv` module
    (RFC 4180 quoting; quoted fields may span lines). Tab- and ``;``-delimited files are
    recognised by their header.

Reviewer ratings and confidences (:attr:`rag.types.Paper.ratings`, ``confidences``) come from a
``ratings``/``rating`` and ``confidences``/``confidence`` field or column (a list of numbers, or a
``;``-separated string such as Paper Copilot's ``"4;5;5"``; ``""`` means none), or from a dated
field such as the ICLR 2026 lists' ``ratings_2025_11_22`` (the latest date wins when there are
several). OpenReview notes carry no ratings (they are in the reviews, not the submission). A
malformed value (``"4;x;5"``, an object) does not lose the paper: it loads without that list and a
warning :class:`Problem` names the field and the record's line.

Malformed records are never fatal: each becomes a :class:`Problem` with the 1-based line number
where the record *starts* (for JSON arrays also its 0-based index in the array), and the good
records are returned. Duplicate ids: the last record wins and a warning Problem names both lines.
Only a file that cannot be read as the format at all raises :class:`SourceFormatError`.

Venue and year come from the records when they have them (``venue``/``year`` fields, OpenReview's
``venue``/``venueid``, Paper Copilot's ``bibtex``); otherwise from the file name when it names a
known conference and a year (``iclr2018_papercopilot.json`` -> ``ICLR``, 2018).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import unicodedata
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from rag.errors import SourceFormatError
from rag.types import Paper

#: Accepted values of ``fmt``.
FORMATS = ("auto", "jsonl", "papercopilot", "openreview", "csv")

#: Bytes read to detect a file's format.
_SNIFF_BYTES = 64 * 1024

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


def paper_from_papercopilot(rec: dict[str, Any], warnings: list[str] | None = None) -> Paper:
    """Build a Paper from one Paper Copilot ``paperlists`` object.

    ``author`` (``;``-separated) -> authors, ``site`` (or ``openreview``) -> url, ``keywords``
    split on ``;``; ``status`` kept as given (``Poster``, ``Oral``, ``Reject``...); ``rating`` and
    ``confidence`` (``"4;5;5"``, ``""`` for none) -> ratings, confidences. Year from a
    ``year`` field, else the ``bibtex`` entry's ``year={...}``, else a year in the URL path
    (``iclr.cc/virtual/2018/...``); venue from a ``conference``/``venue`` field. The file name
    fills whatever is still missing (see :func:`load_papers`).

    Raises:
        ValueError: as :func:`paper_from_mapping`.
    """
    if not isinstance(rec, dict):
        raise ValueError(f"record is a JSON {_json_type(rec)}, not an object")
    if isinstance(rec.get("content"), dict):
        raise ValueError("record is an OpenReview note (has 'content'); use --format openreview")
    url = _str(rec.get("site"), "site").strip() or _str(rec.get("openreview"), "openreview").strip()
    authors = rec["author"] if "author" in rec else rec.get("authors")
    venue = (_str(rec.get("conference"), "conference") or _str(rec.get("venue"), "venue")).strip()
    paper = paper_from_mapping({
        "id": rec.get("id"), "title": rec.get("title"), "abstract": rec.get("abstract"),
        "authors": authors, "keywords": rec.get("keywords"),
        "primary_area": rec.get("primary_area"), "status": rec.get("status"),
        "venue": venue, "url": url, "tldr": rec.get("tldr"), "year": rec.get("year"),
        **{k: v for k, v in rec.items() if isinstance(k, str) and _SCORE_FIELD.match(k.lower())},
    }, warnings)
    if paper.year is None:
        bib = _str(rec.get("bibtex"), "bibtex")
        m = re.search(r"\byear\s*=\s*[{\"]?\s*((?:19|20)\d\d)", bib)
        m = m or _YEAR.search(url.split("?")[0])
        if m:
            paper.year = int(m.group(1))
    if paper.venue and paper.year and str(paper.year) not in paper.venue:
        paper.venue = f"{paper.venue} {paper.year}"
    return paper


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


#: The last part of an OpenReview ``venueid`` that carries a decision -> the project's status
#: (OpenReview moves rejected, withdrawn and desk-rejected submissions to these groups, e.g.
#: ``ICLR.cc/2025/Conference/Rejected_Submission``, while their ``venue`` may still read
#: ``Submitted to ICLR 2025``).
_VENUEID_DECISIONS = {"rejected_submission": "Reject", "withdrawn_submission": "Withdrawn",
                      "desk_rejected_submission": "Desk Rejected"}


def decision_from_venueid(venueid: str) -> str:
    """The status a ``venueid`` says on its own: ``.../Rejected_Submission`` -> ``Reject``,
    ``.../Withdrawn_Submission`` -> ``Withdrawn``, ``.../Desk_Rejected_Submission`` ->
    ``Desk Rejected``; ``""`` for any other (the conference's own id of accepted papers, or
    ``.../Submission`` while under review), where ``content.venue`` decides."""
    last = venueid.strip().rstrip("/").rsplit("/", 1)[-1].lower()
    return _VENUEID_DECISIONS.get(last, "")


def paper_from_openreview(note: dict[str, Any], warnings: list[str] | None = None) -> Paper:
    """Build a Paper from one OpenReview note (API v2: ``content.<field>.value``; v1's bare
    ``content.<field>`` also works).

    id = the note's ``id`` (else ``forum``); url = ``https://openreview.net/forum?id=<forum>``;
    venue/status from ``content.venue`` (see :func:`split_openreview_venue`), the status
    overridden by a ``venueid`` that names a decision (:func:`decision_from_venueid`); year from
    ``content.venueid`` (``ICLR.cc/2026/Conference``) or the venue; tldr from ``TLDR``.

    Raises:
        ValueError: not a note (no ``content`` object), or as :func:`paper_from_mapping`.
    """
    if not isinstance(note, dict):
        raise ValueError(f"record is a JSON {_json_type(note)}, not an object")
    content = note.get("content")
    if not isinstance(content, dict):
        raise ValueError("not an OpenReview note: no 'content' object")

    def value(name: str) -> Any:
        v = content.get(name)
        return v.get("value") if isinstance(v, dict) else v

    pid = _str(note.get("id"), "id").strip() or _str(note.get("forum"), "forum").strip()
    forum = _str(note.get("forum"), "forum").strip() or pid
    venue, status = split_openreview_venue(_str(value("venue"), "content.venue"))
    venueid = _str(value("venueid"), "content.venueid") or _str(note.get("domain"), "domain")
    status = decision_from_venueid(venueid) or status
    m = _YEAR.search(venueid)
    paper = paper_from_mapping({
        "id": pid, "title": value("title"), "abstract": value("abstract"),
        "authors": value("authors"), "keywords": value("keywords"),
        "primary_area": value("primary_area"), "status": status, "venue": venue,
        "year": int(m.group(1)) if m else None,
        "url": f"https://openreview.net/forum?id={forum}" if forum else "",
        "tldr": value("TLDR") if value("TLDR") is not None else value("tldr"),
    }, warnings)
    return paper


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


# --- JSONL ----------------------------------------------------------------------------------------
def _load_jsonl(path: Path) -> LoadResult:
    out = _Collector("jsonl", path)
    objects = 0
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                out.result.n_records += 1
                out.problem(lineno, f"not valid UTF-8 (byte {exc.start} of the line)")
                continue
            try:
                rec = json.loads(text)
            except json.JSONDecodeError as exc:
                out.result.n_records += 1
                out.problem(lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            objects += isinstance(rec, dict)
            out.add(lineno, lambda warn, rec=rec: paper_from_mapping(rec, warn))
    if out.result.n_records and not objects:
        raise SourceFormatError(f"{path}: no line is a JSON object ({out.result.problems[0]}); "
                                "this is not JSONL: try --format auto")
    return out.finish()


# --- JSON arrays (Paper Copilot, OpenReview) ------------------------------------------------------
_WS = re.compile(r"[ \t\n\r]*")


def _read_text(path: Path) -> str:
    """The file decoded as UTF-8; undecodable bytes become surrogate escapes (reported per
    record)."""
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    return text[1:] if text.startswith("\ufeff") else text


class _Lines:
    """1-based line of a character offset; offsets must be asked in increasing order."""

    def __init__(self, text: str):
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, offset: int) -> int:
        self.line += self.text.count("\n", self.pos, offset)
        self.pos = offset
        return self.line


def _iter_json_array(text: str, start: int, lines: _Lines
                     ) -> Iterator[tuple[int, int, Any, str | None]]:
    """Elements of the JSON array opening at ``text[start] == '['``:
    ``(line, index, value, error)``, ``error`` a message when the element is not valid JSON.

    After a syntax error it skips to the next line that starts, at the same indentation as the
    array's first element, with ``{`` (pretty-printed files), counting the broken element as one
    record; in a compact file (no such lines) the rest of the array is reported lost.
    """
    dec = json.JSONDecoder()
    i = _WS.match(text, start + 1).end()
    if text.startswith("]", i):
        return
    nl = text.rfind("\n", 0, i)
    indent = text[nl + 1:i] if nl >= 0 and not text[nl + 1:i].strip() else None
    index = 0
    while i < len(text):
        line = lines(i)
        try:
            value, end = dec.raw_decode(text, i)
            error = None
        except json.JSONDecodeError as exc:
            value, end, error = None, exc.pos, f"invalid JSON: {exc.msg} (line {exc.lineno}, " \
                                               f"column {exc.colno})"
        if error is None:
            j = _WS.match(text, end).end()
            if text.startswith(",", j):
                yield line, index, value, None
                index += 1
                i = _WS.match(text, j + 1).end()
                if text.startswith("]", i):  # a trailing comma: tolerated
                    return
                continue
            if text.startswith("]", j):
                yield line, index, value, None
                return
            error = "invalid JSON: expected ',' or ']' after this record" if j < len(text) else \
                "invalid JSON: the array is not closed (file truncated?)"
            end = j
        if indent is None:
            yield line, index, None, error + "; the rest of the array could not be read"
            return
        m = re.compile(r"\n" + re.escape(indent) + r"\{").search(text, max(end, i + 1))
        if not m:
            yield line, index, None, error + "; no later record could be found"
            return
        yield line, index, None, error
        index += 1
        i = m.start() + 1 + len(indent)


def _notes_array_start(text: str, i: int) -> int | None:
    """Offset of the ``[`` of the top-level object's ``"notes"`` value, or None."""
    dec = json.JSONDecoder()
    i = _WS.match(text, i + 1).end()
    while i < len(text) and text[i] == '"':
        key, i = dec.raw_decode(text, i)
        i = _WS.match(text, i).end()
        if not text.startswith(":", i):
            return None
        i = _WS.match(text, i + 1).end()
        if key == "notes":
            return i if text.startswith("[", i) else None
        _, i = dec.raw_decode(text, i)
        i = _WS.match(text, i).end()
        if text.startswith(",", i):
            i = _WS.match(text, i + 1).end()
    return None


def _load_json_array(path: Path, fmt: str) -> LoadResult:
    text = _read_text(path)
    start = _WS.match(text).end()
    kind = {"papercopilot": "a Paper Copilot list (a JSON array of papers)",
            "openreview": "OpenReview notes (a JSON array, or an object with 'notes')"}[fmt]
    if text.startswith("{", start) and fmt == "openreview":
        try:
            arr = _notes_array_start(text, start)
        except json.JSONDecodeError as exc:
            raise SourceFormatError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}; "
                                    f"expected {kind}") from None
        if arr is None:
            raise SourceFormatError(f"{path}: a JSON object without a 'notes' array; expected "
                                    f"{kind}")
        start = arr
    elif not text.startswith("[", start):
        raise SourceFormatError(f"{path}: does not start with '['; expected {kind}. Pass "
                                "--format to choose another format, or --format auto")
    make = paper_from_papercopilot if fmt == "papercopilot" else paper_from_openreview
    out = _Collector(fmt, path)
    lines = _Lines(text)
    n_notes = 0
    for line, index, value, error in _iter_json_array(text, start, lines):
        if error:
            out.result.n_records += 1
            out.problem(line, error, index)
            continue
        n_notes += isinstance(value, dict) and isinstance(value.get("content"), dict)
        out.add(line, lambda warn, value=value: make(value, warn), index, raw=value)
    result = out.finish()
    if result.n_records and not result.papers:
        if fmt == "openreview" and not n_notes:
            raise SourceFormatError(f"{path}: no record is an OpenReview note (no 'content' "
                                    "object); try --format papercopilot")
        if fmt == "papercopilot" and n_notes == result.n_records:
            raise SourceFormatError(f"{path}: the records are OpenReview notes; use --format "
                                    "openreview")
    return result


# --- CSV ------------------------------------------------------------------------------------------
def _csv_delimiter(first_line: str) -> str:
    """The delimiter (``,``, tab or ``;``) that splits a header line into columns naming
    ``title`` and ``abstract``; ``,`` when none does."""
    for delimiter in (",", "\t", ";"):
        try:
            names = set(_column_names(next(csv.reader([first_line], delimiter=delimiter))))
        except (csv.Error, StopIteration):
            continue
        if {"title", "abstract"} <= names:
            return delimiter
    return ","


def _load_csv(path: Path) -> LoadResult:
    text = _read_text(path)
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True,
                        delimiter=_csv_delimiter(first))
    out = _Collector("csv", path)
    header: list[str] | None = None
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            if header is None:
                raise SourceFormatError(f"{path}: line {line}: unreadable CSV header "
                                        f"({exc})") from None
            out.result.n_records += 1
            out.problem(line, f"invalid CSV: {exc}")
            continue
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = _column_names(row)
            missing = [c for c in ("title", "abstract") if c not in header]
            if missing:
                raise SourceFormatError(
                    f"{path}: the CSV header (line {line}) lacks the column(s) "
                    f"{', '.join(map(repr, missing))}; it starts {', '.join(row)[:120]!r}")
            continue
        if len(row) != len(header):
            out.result.n_records += 1
            out.problem(line, f"row has {len(row)} fields, the header has {len(header)} "
                              "(a stray comma or quote?)")
            continue
        rec = dict(zip(header, row))
        out.add(line, lambda warn, rec=rec: paper_from_mapping(rec, warn), raw=rec)
    if header is None:
        raise SourceFormatError(f"{path}: no CSV header row (the file is empty)")
    return out.finish()


# --- detection and the entry point ----------------------------------------------------------------
def detect_format(path: str | Path) -> str:
    """The format of the paper list at ``path``: ``jsonl``, ``papercopilot``, ``openreview`` or
    ``csv``, judged from its first 64 KiB.

    ``[`` -> a JSON array: ``openreview`` when its first element has a ``content`` object, else
    ``papercopilot``. ``{`` -> ``jsonl`` when one of the first lines is a whole JSON object (and not
    an API response with ``notes``), ``openreview`` when it is an object with ``notes``. Anything
    else -> ``csv`` when the first non-blank line is a header with ``title`` and ``abstract``.

    Raises:
        SourceFormatError: empty, binary or UTF-16 files, or none of the formats; the message lists
            what was expected and suggests ``--format``.
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            head_bytes = fh.read(_SNIFF_BYTES)
    except OSError as exc:
        raise SourceFormatError(f"cannot read {path}: {exc.strerror}") from None
    expected = ("expected JSONL (one JSON object per line), a Paper Copilot JSON array, "
                "OpenReview v2 notes (JSON) or CSV with a header row naming 'title' and 'abstract'")
    if head_bytes.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SourceFormatError(f"{path}: the file is UTF-16; save it as UTF-8")
    if b"\x00" in head_bytes:
        raise SourceFormatError(f"{path}: looks like a binary file, not a paper list; {expected}")
    head = head_bytes.decode("utf-8", errors="surrogateescape").lstrip("\ufeff")
    body = head.lstrip()
    if not body:
        raise SourceFormatError(f"{path}: the file is empty")
    if body[0] == "[":
        try:
            first, _ = json.JSONDecoder().raw_decode(body, _WS.match(body, 1).end())
            note = isinstance(first, dict) and isinstance(first.get("content"), dict)
        except json.JSONDecodeError:  # element cut by the 64 KiB window, or broken: look for it
            note = re.search(r'"content"\s*:\s*\{', body) is not None
        return "openreview" if note else "papercopilot"
    if body[0] == "{":
        lines = [ln for ln in body.splitlines()[:20] if ln.strip()]
        for i, ln in enumerate(lines):
            try:
                rec = json.loads(ln)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                if i == 0 and len(lines) == 1 and isinstance(rec.get("notes"), list):
                    return "openreview"
                return "jsonl"
        if re.search(r'"notes"\s*:\s*\[', body):
            return "openreview"
        raise SourceFormatError(f"{path}: starts with '{{' but is neither JSONL nor an "
                                f"OpenReview response with 'notes'; {expected}")
    first_line = next(ln for ln in body.splitlines() if ln.strip())
    try:
        header = next(csv.reader([first_line], delimiter=_csv_delimiter(first_line)))
    except csv.Error:
        header = []
    if {"title", "abstract"} <= set(_column_names(header)):
        return "csv"
    raise SourceFormatError(f"{path}: unrecognised paper list format; {expected}. Pass --format "
                            f"{{{','.join(FORMATS[1:])}}} to force one")


_LOADERS: dict[str, Callable[[Path], LoadResult]] = {
    "jsonl": _load_jsonl,
    "papercopilot": lambda p: _load_json_array(p, "papercopilot"),
    "openreview": lambda p: _load_json_array(p, "openreview"),
    "csv": _load_csv,
}


def load_papers(path: str | Path, fmt: str = "auto") -> LoadResult:
    """Read a paper list in format ``fmt`` (one of :data:`FORMATS`; ``auto`` detects it).

    Returns:
        A :class:`LoadResult`: the good papers in file order, one :class:`Problem` per malformed
        record (skipped) or duplicate id (warning; the last record wins), the format used and
        the number of records seen.
    Raises:
        SourceFormatError: the file does not exist or cannot be read, ``fmt`` is unknown, the
            format cannot be detected, or the file is not that format at all (e.g. ``--format
            csv`` on a JSON file).
    """
    path = Path(path)
    if not path.is_file():
        raise SourceFormatError(f"paper list not found: {path}")
    if fmt not in FORMATS:
        raise SourceFormatError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "auto":
        fmt = detect_format(path)
    try:
        return _LOADERS[fmt](path)
    except OSError as exc:
        raise SourceFormatError(f"cannot read {path}: {exc.strerror}") from None
