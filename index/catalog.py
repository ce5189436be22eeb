"""The paper catalog of an index: SQLite tables beside the Chroma collection.

``papers`` holds each indexed paper's record (for display and filters), its normalised search
text (for BM25), its content hash and the number of its chunks that are stored (0 while it waits
for the dense fill). A build writes every paper's row first, before embedding anything, so the
catalog, the names and BM25 are whole within seconds (:func:`index.build.build_index`).

``dense`` says which papers are embedded: one row per paper whose chunks are stored, with the
text hash they were embedded from, their count and the batch (``dense_batches``) that holds their
vectors (:mod:`index.dense`). A paper is embedded when its ``dense`` row has the text hash of its
``papers`` row (:meth:`Catalog.embedded`). A ``dense`` row is written only *after* the paper's
chunks are in Chroma and its batch file is on disk, and it is deleted *before* those chunks are
deleted or replaced, so after an interrupted build a paper either has its row and all its chunks,
or no row and is embedded again (its stray chunks deleted first). That is what makes ``kill -9``
safe to resume, and what lets a reader search the committed batches while the fill goes on.

Content hashes (:func:`content_hash`) and the fingerprint of a whole catalog
(:func:`catalog_fingerprint`) tell a build what changed, and the map and a running app whether
they are current.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from rag.types import Paper

_SCHEMA = """
CREATE TABLE IF NOT EXISTS papers (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    n_chunks INTEGER NOT NULL,
    record TEXT NOT NULL,
    search_text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dense (
    id TEXT PRIMARY KEY,
    text_hash TEXT NOT NULL,
    n_chunks INTEGER NOT NULL,
    batch INTEGER
);
CREATE TABLE IF NOT EXISTS dense_batches (
    batch INTEGER PRIMARY KEY,
    papers INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    committed REAL NOT NULL
);
"""
#: ``PRAGMA user_version`` of a catalog with the tables above. 0: a catalog from before the
#: dense fill, whose rows were all written after their chunks: each becomes a ``dense`` row with
#: no batch (its vectors are in Chroma only, until a build copies them into a batch file).
SCHEMA_VERSION = 2
#: A text hash in SQL: the part of ``papers.hash`` before ":" (:func:`content_hash`).
_TEXT_HASH = "substr(p.hash, 1, instr(p.hash, ':') - 1)"


#: The fields of a paper record, in order.
_FIELDS = tuple(f.name for f in dataclasses.fields(Paper))


def paper_record(paper: Paper) -> str:
    """The JSON record of a paper as the catalog stores it: its fields in order, non-ASCII kept
    (the text of ``json.dumps(dataclasses.asdict(paper))``, without copying every list first,
    which was most of phase 1's catalog time)."""
    return json.dumps({f: getattr(paper, f) for f in _FIELDS}, ensure_ascii=False)


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
        with contextlib.closing(self._conn()) as con:
            # a current catalog is opened without writing anything (readers beside a build)
            if con.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                self._create(con)

    def _create(self, con: sqlite3.Connection) -> None:
        """Create the tables, or bring a catalog from before the dense fill up to them."""
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("BEGIN IMMEDIATE")  # one writer migrates; the others then see it done
        try:
            if con.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        con.execute(statement)
                con.execute(f"INSERT OR IGNORE INTO dense (id, text_hash, n_chunks, batch) "
                            f"SELECT p.id, {_TEXT_HASH}, p.n_chunks, NULL FROM papers p "
                            f"WHERE p.n_chunks > 0")
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def _conn(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def hashes(self) -> dict[str, str]:
        """Content hash per indexed paper id."""
        with self._conn() as con:
            return dict(con.execute("SELECT id, hash FROM papers"))

    def put(self, rows: Iterable[tuple[Paper, str, int, str]]) -> None:
        """Insert or replace ``(paper, hash, n_chunks, search_text)`` rows in one transaction."""
        data = [(p.id, h, n, paper_record(p), t) for p, h, n, t in rows]
        with self._conn() as con:
            con.executemany("INSERT OR REPLACE INTO papers VALUES (?, ?, ?, ?, ?)", data)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove papers: their ``dense`` rows first, then their ``papers`` rows."""
        ids = [(i,) for i in ids]
        with self._conn() as con:
            con.executemany("DELETE FROM dense WHERE id = ?", ids)
            con.executemany("DELETE FROM papers WHERE id = ?", ids)

    # -- the dense fill (index.dense) ----------------------------------------------------------
    def embedded(self) -> dict[str, tuple[int, int | None]]:
        """``paper id -> (chunks, batch)`` of every embedded paper: a ``dense`` row with the
        text hash of its ``papers`` row (``batch`` None: vectors in Chroma only, see
        :data:`SCHEMA_VERSION`)."""
        with self._conn() as con:
            rows = con.execute(f"SELECT d.id, d.n_chunks, d.batch FROM dense d JOIN papers p "
                               f"ON p.id = d.id WHERE d.text_hash = {_TEXT_HASH}")
            return {pid: (int(n), b) for pid, n, b in rows}

    def dense_ids(self) -> set[str]:
        """Ids of every paper with a ``dense`` row, current or not (its chunks may be stored)."""
        with self._conn() as con:
            return {pid for (pid,) in con.execute("SELECT id FROM dense")}

    def coverage_counts(self) -> tuple[int, int]:
        """``(papers, embedded papers)`` (:meth:`embedded`), in one query."""
        with self._conn() as con:
            total, done = con.execute(
                f"SELECT COUNT(*), COUNT(d.id) FROM papers p LEFT JOIN dense d ON d.id = p.id "
                f"AND d.text_hash = {_TEXT_HASH}").fetchone()
        return int(total), int(done)

    def commit_dense(self, batch: int, rows: Sequence[tuple[str, str, int]],
                     committed: float) -> None:
        """Record batch ``batch`` as done, in one transaction: its ``dense_batches`` row (papers,
        chunks, ``committed`` as Unix time), a ``dense`` row per ``(paper id, text hash,
        chunks)`` of ``rows``, and those papers' ``n_chunks``. Called after the batch's file and
        its Chroma chunks are written (:mod:`index.dense`)."""
        with self._conn() as con:
            con.execute("INSERT OR REPLACE INTO dense_batches VALUES (?, ?, ?, ?)",
                        (batch, len(rows), sum(n for _, _, n in rows), committed))
            con.executemany("INSERT OR REPLACE INTO dense VALUES (?, ?, ?, ?)",
                            [(pid, h, n, batch) for pid, h, n in rows])
            con.executemany("UPDATE papers SET n_chunks = ? WHERE id = ?",
                            [(n, pid) for pid, _, n in rows])

    def drop_dense(self, ids: Iterable[str]) -> None:
        """Mark papers as not embedded (their ``dense`` rows deleted, ``n_chunks`` 0): done before
        their stored chunks are deleted or replaced."""
        ids = [(i,) for i in ids]
        with self._conn() as con:
            con.executemany("DELETE FROM dense WHERE id = ?", ids)
            con.executemany("UPDATE papers SET n_chunks = 0 WHERE id = ?", ids)

    def batches(self) -> list[tuple[int, int, int, float]]:
        """Every committed batch as ``(batch, papers, chunks, committed Unix time)``, in order."""
        with self._conn() as con:
            return [(int(b), int(p), int(c), float(t)) for b, p, c, t in
                    con.execute("SELECT batch, papers, chunks, committed FROM dense_batches "
                                "ORDER BY batch")]

    def last_batch(self) -> int:
        """The highest committed batch number (0 when none)."""
        with self._conn() as con:
            return int(con.execute("SELECT COALESCE(MAX(batch), 0) FROM dense_batches")
                       .fetchone()[0])

    def forget_batches(self, batches: Iterable[int]) -> None:
        """Delete ``dense_batches`` rows no ``dense`` row points at any more."""
        with self._conn() as con:
            con.executemany("DELETE FROM dense_batches WHERE batch = ?", [(b,) for b in batches])

    def batch_refs(self) -> dict[int, int]:
        """Papers per batch among every ``dense`` row (current or not)."""
        with self._conn() as con:
            return {int(b): int(n) for b, n in con.execute(
                "SELECT batch, COUNT(*) FROM dense WHERE batch IS NOT NULL GROUP BY batch")}

    def count(self) -> int:
        with self._conn() as con:
            return int(con.execute("SELECT COUNT(*) FROM papers").fetchone()[0])

    def year_totals(self) -> dict[int, int]:
        """Papers per year, years ascending (papers without a year left out): the catalog's
        per-year totals, for an index of several lists."""
        with self._conn() as con:
            rows = con.execute("SELECT json_extract(record, '$.year'), COUNT(*) FROM papers "
                               "GROUP BY 1").fetchall()
        return dict(sorted((int(y), int(n)) for y, n in rows if y))

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

    def search_texts(self) -> list[tuple[str, str]]:
        """Every ``(paper id, search_text)`` in id order (the order of :meth:`papers`), without
        decoding the records."""
        with self._conn() as con:
            return con.execute("SELECT id, search_text FROM papers ORDER BY id").fetchall()

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
