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

Reviewer ratings and confidences (:attr:`rag.types.Paper.ratings`, ``confidences``) are read as
:mod:`index.source_records` says; a malformed one loses only that list, with a warning.

Malformed records are never fatal: each becomes a :class:`~index.source_records.Problem` with
the 1-based line number where the record *starts* (for JSON arrays also its 0-based index in the
array), and the good records are returned. Duplicate ids: the last record wins and a warning
Problem names both lines. Only a file that cannot be read as the format at all raises
:class:`SourceFormatError`.

Venue and year come from the records when they have them (``venue``/``year`` fields, OpenReview's
``venue``/``venueid``, Paper Copilot's ``bibtex``); otherwise from the file name when it names a
known conference and a year (``iclr2018_papercopilot.json`` -> ``ICLR``, 2018).

This module detects the format (:func:`detect_format`) and reads the file with its loader
(:func:`load_papers`): the JSON formats in :mod:`index.source_json`, CSV in
:mod:`index.source_csv`; the records, their fields and :class:`~index.source_records.LoadResult`
and :class:`~index.source_records.Problem` are in :mod:`index.source_records`.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Callable

from index.source_csv import _csv_delimiter, _load_csv
from index.source_json import _WS, _load_json_array, _load_jsonl
from index.source_records import LoadResult, _column_names
from rag.errors import SourceFormatError


#: Accepted values of ``fmt``.
FORMATS = ("auto", "jsonl", "papercopilot", "openreview", "csv")

#: Bytes read to detect a file's format.
_SNIFF_BYTES = 64 * 1024


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
        A :class:`~index.source_records.LoadResult`: the good papers in file order, one
        :class:`~index.source_records.Problem` per malformed record (skipped) or duplicate id
        (warning; the last record wins), the format used and the number of records seen.
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


def load_lists(paths, fmt: str = "auto", venue: str | None = None, year: int | None = None):
    """What ``paperchat index`` builds from: the one path as it is (read by the build), or, for
    several lists or a ``--venue``/``--year`` override, one
    :class:`index.source_records.LoadResult` of every list's papers in the order given (a paper
    id in two lists: the later list's record), each paper keeping the venue and year its list
    gave it; the override fills those a list leaves empty. A problem record is named with its
    file.

    Raises:
        SourceFormatError: a list cannot be read (:func:`load_papers`).
    """
    from dataclasses import replace

    from index.source_records import Problem

    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if len(paths) == 1 and venue is None and year is None:
        return paths[0]
    papers: dict[str, object] = {}
    problems: list[Problem] = []
    n_records = 0
    for path in paths:
        loaded = load_papers(path, fmt)
        n_records += loaded.n_records
        for prob in loaded.problems:
            problems.append(replace(prob, message=f"{Path(path).name}: {prob.message}"))
        for p in loaded.papers:
            if venue and not p.venue:
                p = replace(p, venue=venue)
            if year and not p.year:
                p = replace(p, year=year)
            papers.pop(p.id, None)
            papers[p.id] = p
    return LoadResult(list(papers.values()), problems, fmt=fmt, n_records=n_records,
                      path=", ".join(str(p) for p in paths))
