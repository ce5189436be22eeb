"""Load paper lists into :class:`rag.types.Paper` records, reporting bad records by line.

Supported formats (``fmt``): ``jsonl`` (the project's schema, one object per line). Malformed
records are never fatal: each becomes a :class:`Problem` with its line number (1-based) and the
good records are returned. Duplicate ids: the last record wins and a warning Problem names both
lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import SourceFormatError
from rag.types import Paper

FORMATS = ("auto", "jsonl")


@dataclass
class Problem:
    """A record that was skipped (``skipped=True``) or accepted with a warning."""

    line: int
    message: str
    skipped: bool = True

    def __str__(self) -> str:
        kind = "skipped" if self.skipped else "warning"
        return f"line {self.line}: {kind}: {self.message}"


@dataclass
class LoadResult:
    """Papers in file order (duplicates resolved), the problems found and the format used."""

    papers: list[Paper]
    problems: list[Problem] = field(default_factory=list)
    fmt: str = "jsonl"
    n_records: int = 0

    @property
    def skipped(self) -> int:
        return sum(1 for p in self.problems if p.skipped)


def _str(value: Any, name: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"field {name!r} should be a string, got {type(value).__name__}")
    return value


def _str_list(value: Any, name: str, sep: str = ";") -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(sep) if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise ValueError(f"field {name!r} should be a list of strings")


def _year(value: Any, venue: str) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    for token in venue.split():
        if token.isdigit() and len(token) == 4:
            return int(token)
    return None


def paper_from_mapping(rec: dict[str, Any]) -> Paper:
    """Build a Paper from a dict in the project's JSONL schema.

    Raises:
        ValueError: missing/empty ``id``, ``title`` or ``abstract``, or a field of the wrong type;
            the message names the field.
    """
    if not isinstance(rec, dict):
        raise ValueError(f"record is a JSON {type(rec).__name__}, not an object")
    pid = _str(rec.get("id"), "id").strip()
    title = _str(rec.get("title"), "title").strip()
    abstract = _str(rec.get("abstract"), "abstract").strip()
    for name, value in (("id", pid), ("title", title), ("abstract", abstract)):
        if not value:
            raise ValueError(f"missing or empty {name!r}")
    venue = _str(rec.get("venue"), "venue").strip()
    return Paper(
        id=pid, title=title, abstract=abstract,
        authors=_str_list(rec.get("authors"), "authors"),
        keywords=_str_list(rec.get("keywords"), "keywords"),
        primary_area=_str(rec.get("primary_area"), "primary_area").strip(),
        status=_str(rec.get("status"), "status").strip(),
        venue=venue, year=_year(rec.get("year"), venue),
        url=_str(rec.get("url"), "url").strip(),
        tldr=_str(rec.get("tldr"), "tldr").strip(),
    )


def _load_jsonl(path: Path) -> LoadResult:
    result = LoadResult(papers=[], fmt="jsonl")
    by_id: dict[str, tuple[int, Paper]] = {}
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            result.n_records += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                result.problems.append(Problem(lineno, f"not valid UTF-8 (byte {exc.start})"))
                continue
            try:
                rec = json.loads(text)
            except json.JSONDecodeError as exc:
                result.problems.append(Problem(lineno, f"invalid JSON: {exc.msg} (column {exc.colno})"))
                continue
            try:
                paper = paper_from_mapping(rec)
            except ValueError as exc:
                result.problems.append(Problem(lineno, str(exc)))
                continue
            if paper.id in by_id:
                first = by_id[paper.id][0]
                result.problems.append(Problem(lineno, f"duplicate id {paper.id!r} (also on line "
                                                       f"{first}); this later record wins", skipped=False))
            by_id[paper.id] = (lineno, paper)
    result.papers = [p for _, p in sorted(by_id.values(), key=lambda lp: lp[0])]
    return result


def load_papers(path: str | Path, fmt: str = "auto") -> LoadResult:
    """Read a paper list.

    Raises:
        SourceFormatError: the file does not exist, cannot be read, or its format is unknown.
    """
    path = Path(path)
    if not path.is_file():
        raise SourceFormatError(f"paper list not found: {path}")
    if fmt not in FORMATS:
        raise SourceFormatError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    try:
        return _load_jsonl(path)
    except OSError as exc:
        raise SourceFormatError(f"cannot read {path}: {exc.strerror}") from None
