"""The paper catalog of an index: one SQLite table beside the Chroma collection.

It holds each indexed paper's record (for display and filters), its normalised search text (for
BM25), its content hash and its chunk count. A row is written only *after* the paper's chunks are in
Chroma, so after an interrupted build a paper either has its row and all its chunks, or no row and
is redone (its stray chunks deleted first). That is what makes ``kill -9`` safe to resume.

Content hashes (:func:`content_hash`) and the fingerprint of a whole catalog
(:func:`catalog_fingerprint`) tell a build what changed, and the map and a running app whether
they are current.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Iterable, Iterator

from rag.types import Paper

_SCHEMA = """
CREATE TABLE IF NOT EXISTS papers (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    n_chunks INTEGER NOT NULL,
    record TEXT NOT NULL,
    search_text TEXT NOT NULL
);
"""


def paper_from_json(text: str) -> Paper:
    return Paper(**json.loads(text))


def content_hash(paper: Paper) -> str:
    """``<text hash>:<record hash>`` (sha256 prefixes): the first changes only when the title or
    abstract does (re-embed), the second with any field (metadata update)."""
    text = hashlib.sha256(f"{paper.title}\x00{paper.abstract}".encode()).hexdigest()[:16]
    rec = hashlib.sha256(json.dumps(paper.__dict__, sort_keys=True, ensure_ascii=False)
                         .encode()).hexdigest()[:16]
    return f"{text}:{rec}"


def catalog_fingerprint(hashes: dict[str, str]) -> str:
    """sha256 prefix of the catalog's sorted ``id:hash`` pairs: equal fingerprints mean the same
    papers with the same content (what the BM25 index was built from)."""
    h = hashlib.sha256()
    for pid in sorted(hashes):
        h.update(f"{pid}\x00{hashes[pid]}\n".encode())
    return h.hexdigest()[:16]


class Catalog:
    """SQLite-backed table of indexed papers; safe to open from several threads (one connection
    per call, WAL journal)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._conn() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def hashes(self) -> dict[str, str]:
        """Content hash per indexed paper id."""
        with self._conn() as con:
            return dict(con.execute("SELECT id, hash FROM papers"))

    def put(self, rows: Iterable[tuple[Paper, str, int, str]]) -> None:
        """Insert or replace ``(paper, hash, n_chunks, search_text)`` rows in one transaction."""
        data = [(p.id, h, n, json.dumps(dataclasses.asdict(p), ensure_ascii=False), t)
                for p, h, n, t in rows]
        with self._conn() as con:
            con.executemany("INSERT OR REPLACE INTO papers VALUES (?, ?, ?, ?, ?)", data)

    def delete(self, ids: Iterable[str]) -> None:
        with self._conn() as con:
            con.executemany("DELETE FROM papers WHERE id = ?", [(i,) for i in ids])

    def count(self) -> int:
        with self._conn() as con:
            return int(con.execute("SELECT COUNT(*) FROM papers").fetchone()[0])

    def total_chunks(self) -> int:
        with self._conn() as con:
            return int(con.execute("SELECT COALESCE(SUM(n_chunks), 0) FROM papers").fetchone()[0])

    def chunk_counts(self) -> dict[str, int]:
        """Number of chunks per indexed paper id."""
        with self._conn() as con:
            return dict(con.execute("SELECT id, n_chunks FROM papers"))

    def papers(self) -> Iterator[tuple[Paper, str]]:
        """Every ``(paper, search_text)`` in id order."""
        with self._conn() as con:
            for rec, text in con.execute("SELECT record, search_text FROM papers ORDER BY id"):
                yield paper_from_json(rec), text

    def get(self, ids: Iterable[str]) -> dict[str, Paper]:
        """Papers by id (unknown ids are absent)."""
        ids = list(ids)
        out: dict[str, Paper] = {}
        with self._conn() as con:
            for i in range(0, len(ids), 500):
                part = ids[i:i + 500]
                q = f"SELECT id, record FROM papers WHERE id IN ({','.join('?' * len(part))})"
                for pid, rec in con.execute(q, part):
                    out[pid] = paper_from_json(rec)
        return out

    def facet_values(self, field: str) -> list[tuple[str, int]]:
        """Distinct values of a paper field with their counts, most common first (for UI filters)."""
        counts: dict[str, int] = {}
        for paper, _ in self.papers():
            value = getattr(paper, field)
            for v in (value if isinstance(value, list) else [value]):
                if v not in ("", None):
                    counts[str(v)] = counts.get(str(v), 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
