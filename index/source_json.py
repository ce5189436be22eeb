"""The JSON formats of :mod:`index.sources`: JSONL (the project's schema, one object per line),
Paper Copilot's ``paperlists`` arrays and OpenReview notes (their record builders,
:func:`paper_from_papercopilot` and :func:`paper_from_openreview`), and the tolerant reader of a
JSON array that reports a broken element by line and goes on with the next."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from index.source_records import (_SCORE_FIELD, _YEAR, LoadResult, _Collector, _json_type,
                                  _read_text, _str, paper_from_mapping, split_openreview_venue)
from rag.errors import SourceFormatError
from rag.types import Paper


def paper_from_papercopilot(rec: dict[str, Any], warnings: list[str] | None = None) -> Paper:
    """Build a Paper from one Paper Copilot ``paperlists`` object.

    ``author`` (``;``-separated) -> authors, ``site`` (or ``openreview``) -> url, ``keywords``
    split on ``;``; ``status`` kept as given (``Poster``, ``Oral``, ``Reject``...); ``rating`` and
    ``confidence`` (``"4;5;5"``, ``""`` for none) -> ratings, confidences. Year from a
    ``year`` field, else the ``bibtex`` entry's ``year={...}``, else a year in the URL path
    (``iclr.cc/virtual/2018/...``); venue from a ``conference``/``venue`` field. The file name
    fills whatever is still missing (see :func:`index.sources.load_papers`).

    Raises:
        ValueError: as :func:`index.source_records.paper_from_mapping`.
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
    venue/status from ``content.venue`` (see
    :func:`index.source_records.split_openreview_venue`), the status overridden by a ``venueid``
    that names a decision (:func:`decision_from_venueid`); year from ``content.venueid``
    (``ICLR.cc/2026/Conference``) or the venue; tldr from ``TLDR``.

    Raises:
        ValueError: not a note (no ``content`` object), or as
            :func:`index.source_records.paper_from_mapping`.
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
