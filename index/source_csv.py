"""The CSV format of :mod:`index.sources`: a header row naming the columns, read with the stdlib
:mod:`csv` module; the delimiter (``,``, tab or ``;``) is recognised from the header."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from index.source_records import (LoadResult, _Collector, _column_names, _read_text,
                                  paper_from_mapping)
from rag.errors import SourceFormatError


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
