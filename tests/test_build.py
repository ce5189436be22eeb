"""index.build: incremental re-indexing, metadata-only updates, pruning, settings mismatches, the
lock, and recovery from builds killed part-way (``kill -9`` and Ctrl-C of a real process).

All with the deterministic fake embedder except the one ``slow`` test, which builds every accepted
ICLR 2026 paper with the real bundled embedder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from index import manifest
from index.build import build_index, search_text
from index.catalog import Catalog
from index.chunking import chunk_paper
from index.dense_fill import PAPERS_PER_STEP
from index.reader import open_store
from index.source_records import LoadResult
from index.sources import load_papers
from rag.backends.lexical import LexicalIndex
from rag.errors import IndexLockedError, IndexMismatchError, SourceFormatError
from rag.settings import Settings
from tests.conftest import ROOT, SEED, SHARED_DATA, FakeEmbedder

QUIET = {"progress": False, "log": lambda m: None}


# --- helpers --------------------------------------------------------------------------------------
def build(papers, settings, embedder, **kw):
    source = papers if not isinstance(papers, list) else LoadResult(papers=list(papers))
    return build_index(source, settings=settings, embedder=embedder, **{**QUIET, **kw})


def store_of(settings, name="default"):
    return open_store(settings.index_dir(name), settings, name, create=False)


def chunk_ids(settings, name="default") -> list[str]:
    """Every chunk id in the index's Chroma collection (duplicates would show up twice)."""
    col = store_of(settings, name)._col
    ids, offset = [], 0
    while True:
        page = col.get(include=[], limit=1000, offset=offset)["ids"]
        ids += page
        if len(page) < 1000:
            return ids
        offset += 1000


def paper_chunks(settings, pid, name="default") -> dict[str, tuple[str, dict]]:
    """``chunk id -> (document, metadata)`` of one paper."""
    got = store_of(settings, name)._col.get(where={"paper_id": pid},
                                             include=["documents", "metadatas"])
    return {i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])}


def expected_chunk_ids(papers, settings, embedder) -> list[str]:
    ids = []
    for p in papers:
        title, abstract, _ = search_text(p)
        ids += [c.id for c in chunk_paper(p.id, title, abstract, embedder.tokenizer,
                                          max_tokens=settings.chunk_tokens,
                                          overlap=settings.chunk_overlap)]
    return ids


def catalog_of(settings, name="default") -> Catalog:
    return Catalog(settings.index_dir(name) / "papers.sqlite")


def bm25_ids(settings, name="default") -> list[str]:
    return LexicalIndex.load(settings.index_dir(name) / "bm25").ids


def assert_index_exact(settings, papers, embedder, name="default"):
    """The index holds exactly ``papers``: every expected chunk id once, no other chunk, one
    catalog row per paper with the right chunk count, and a BM25 row per paper."""
    ids = chunk_ids(settings, name)
    expected = expected_chunk_ids(papers, settings, embedder)
    assert len(ids) == len(set(ids)), "duplicate chunk ids"
    assert sorted(ids) == sorted(expected)
    catalog = catalog_of(settings, name)
    assert catalog.count() == len(papers)
    assert catalog.total_chunks() == len(expected) == store_of(settings, name).count()
    assert set(catalog.hashes()) == {p.id for p in papers}
    assert sorted(bm25_ids(settings, name)) == sorted(p.id for p in papers)


@pytest.fixture
def seed(seed_papers):
    return list(seed_papers)


# --- incremental builds ---------------------------------------------------------------------------
def test_first_build_indexes_every_chunk(settings, fake_embedder, seed):
    summary = build(seed, settings, fake_embedder)
    assert (summary.papers, summary.embedded, summary.unchanged) == (19, 19, 0)
    assert summary.chunks == len(expected_chunk_ids(seed, settings, fake_embedder))
    assert_index_exact(settings, seed, fake_embedder)


def test_reindexing_an_unchanged_list_embeds_nothing(settings, fake_embedder, seed):
    first = build(seed, settings, fake_embedder)
    ids_before = sorted(chunk_ids(settings))
    fake_embedder.calls.clear()
    again = build(SEED, settings, fake_embedder)  # same papers, read from the file this time
    assert fake_embedder.calls == []
    assert (again.embedded, again.unchanged, again.updated_metadata) == (0, 19, 0)
    assert again.chunks == first.chunks
    assert sorted(chunk_ids(settings)) == ids_before


def test_changed_abstract_replaces_the_papers_chunks(settings, fake_embedder, seed):
    target = seed[3]
    long = replace(target, abstract=" ".join([target.abstract] * 4))
    build([*seed[:3], long, *seed[4:]], settings, fake_embedder)
    before = paper_chunks(settings, target.id)
    assert len(before) >= 3, "the long abstract should need several chunks"
    others = {p.id: paper_chunks(settings, p.id) for p in seed if p.id != target.id}

    short = replace(target, abstract="A short replacement abstract about zebra stripes.")
    fake_embedder.calls.clear()
    summary = build([*seed[:3], short, *seed[4:]], settings, fake_embedder)
    assert (summary.embedded, summary.unchanged) == (1, 18)
    after = paper_chunks(settings, target.id)
    assert list(after) == [f"{target.id}#0"]  # no leftover #1, #2 ... of the old version
    assert "zebra stripes" in after[f"{target.id}#0"][0]
    assert [t for call in fake_embedder.calls for t in call] == [after[f"{target.id}#0"][0]]
    assert {p.id: paper_chunks(settings, p.id) for p in seed if p.id != target.id} == others
    assert_index_exact(settings, [*seed[:3], short, *seed[4:]], fake_embedder)

    build(seed, settings, fake_embedder)  # and back: grows again, still exact
    assert_index_exact(settings, seed, fake_embedder)


def test_status_only_change_updates_metadata_without_embedding(settings, fake_embedder, seed):
    build(seed, settings, fake_embedder)
    target = seed[0]
    ids = sorted(paper_chunks(settings, target.id))
    vectors = store_of(settings).get_embeddings(ids)
    assert paper_chunks(settings, target.id)[ids[0]][1]["tier"] == "poster"

    changed = [replace(target, status="Accept (Oral)"), *seed[1:]]
    fake_embedder.calls.clear()
    summary = build(changed, settings, fake_embedder)
    assert fake_embedder.calls == []
    assert (summary.embedded, summary.updated_metadata, summary.unchanged) == (0, 1, 18)
    for _, meta in paper_chunks(settings, target.id).values():
        assert (meta["status"], meta["tier"], meta["accepted"]) == ("Accept (Oral)", "oral", True)
    assert catalog_of(settings).get([target.id])[target.id].status == "Accept (Oral)"
    after = store_of(settings).get_embeddings(ids)
    assert all((after[i] == vectors[i]).all() for i in ids)
    assert sorted(paper_chunks(settings, target.id)) == ids

    fake_embedder.calls.clear()
    assert build(changed, settings, fake_embedder).updated_metadata == 0  # now recorded


def test_rating_changes_update_chunk_metadata_without_embedding(settings, fake_embedder, seed):
    """New reviews (ratings added, changed, removed) are a metadata-only update: no embedding,
    same vectors, and each chunk's ``rating``/``n_ratings`` follow the list; a rating the paper
    lost is removed from its chunks (Chroma's update would otherwise keep the old key)."""
    a, b, c = seed[0], seed[1], seed[2]
    first = [replace(a, ratings=[4, 6]), replace(b, ratings=[8]), *seed[2:]]
    build(first, settings, fake_embedder)
    metas = lambda p: [m for _, m in paper_chunks(settings, p.id).values()]  # noqa: E731
    assert {(m["rating"], m["n_ratings"]) for m in metas(a)} == {(5.0, 2)}
    assert {(m["rating"], m["n_ratings"]) for m in metas(b)} == {(8.0, 1)}
    assert all("rating" not in m and m["n_ratings"] == 0 for m in metas(c))
    ids = sorted(paper_chunks(settings, a.id))
    vectors = store_of(settings).get_embeddings(ids)

    second = [replace(a, ratings=[4, 6, 8, 7]), replace(b, ratings=[]),
              replace(c, ratings=[3, 5], confidences=[4, 4]), *seed[3:]]
    fake_embedder.calls.clear()
    summary = build(second, settings, fake_embedder)
    assert fake_embedder.calls == []
    assert (summary.embedded, summary.updated_metadata, summary.unchanged) == (0, 3, 16)
    assert {(m["rating"], m["n_ratings"]) for m in metas(a)} == {(6.25, 4)}
    assert all("rating" not in m and m["n_ratings"] == 0 for m in metas(b))
    assert {(m["rating"], m["n_ratings"]) for m in metas(c)} == {(4.0, 2)}
    after = store_of(settings).get_embeddings(ids)
    assert all((after[i] == vectors[i]).all() for i in ids)
    stored = catalog_of(settings).get([a.id, b.id, c.id])
    assert (stored[a.id].ratings, stored[b.id].ratings) == ([4, 6, 8, 7], [])
    assert (stored[c.id].ratings, stored[c.id].confidences) == ([3, 5], [4, 4])
    assert_index_exact(settings, second, fake_embedder)
    assert build(second, settings, fake_embedder).updated_metadata == 0  # now recorded


def test_decision_day_status_change_of_every_paper_is_batched_and_exact(settings, fake_embedder,
                                                                       seed, monkeypatch):
    import index.build as build_module

    monkeypatch.setattr(build_module, "METADATA_BATCH", 4)  # 19 papers: 5 batches, the last short
    build(seed, settings, fake_embedder)
    before_ids = sorted(chunk_ids(settings))
    vectors = store_of(settings).get_embeddings(before_ids)
    changed = [replace(p, status="Reject", primary_area=f"area {i % 3}") for i, p in enumerate(seed)]
    requests = []
    collection_class = type(store_of(settings)._col)
    real_update = collection_class.update

    def counting_update(self, *args, **kwargs):
        requests.append(len(kwargs["ids"]))
        return real_update(self, *args, **kwargs)

    monkeypatch.setattr(collection_class, "update", counting_update)
    summary = build(changed, settings, fake_embedder)
    assert (summary.embedded, summary.updated_metadata) == (0, 19)
    assert len(requests) == 5 and sum(requests) == len(before_ids)
    assert sorted(chunk_ids(settings)) == before_ids
    after = store_of(settings).get_embeddings(before_ids)
    assert all((after[i] == vectors[i]).all() for i in before_ids)
    for i, p in enumerate(changed):
        chunks = paper_chunks(settings, p.id)
        assert chunks, p.id
        for cid, (_, meta) in chunks.items():
            assert (meta["status"], meta["tier"], meta["accepted"]) == ("Reject", "reject", False)
            assert meta["primary_area"] == f"area {i % 3}" and meta["n_chunks"] == len(chunks)
    assert {p.status for p in catalog_of(settings).get([p.id for p in seed]).values()} == {"Reject"}
    assert build(changed, settings, fake_embedder).updated_metadata == 0


def test_prune_removes_papers_missing_from_the_list(settings, fake_embedder, seed):
    build(seed, settings, fake_embedder)
    kept, dropped = seed[3:], seed[:3]

    summary = build(kept, settings, fake_embedder)  # without prune: they stay
    assert (summary.papers, summary.pruned, summary.embedded) == (19, 0, 0)
    assert_index_exact(settings, seed, fake_embedder)

    summary = build(kept, settings, fake_embedder, prune=True)
    assert (summary.papers, summary.pruned, summary.embedded) == (16, 3, 0)
    for p in dropped:
        assert paper_chunks(settings, p.id) == {}
    assert catalog_of(settings).get([p.id for p in dropped]) == {}
    assert_index_exact(settings, kept, fake_embedder)


@pytest.mark.parametrize("change", [{"chunk_overlap": 32}, {"chunk_tokens": 128}])
def test_an_index_keeps_its_chunking_when_updated_and_queried(settings, fake_embedder, seed,
                                                               change):
    from rag.retrieve.retriever import Retriever

    build(seed[:10], settings, fake_embedder)
    other = Settings(**{**settings.model_dump(), **change})
    notes: list[str] = []
    summary = build_index(LoadResult(papers=list(seed)), settings=other, embedder=fake_embedder,
                          progress=False, log=notes.append)
    assert summary.embedded == len(seed) - 10
    key = next(iter(change))
    assert any("keeps its chunking" in n and f"{key} {getattr(settings, key)}" in n
               and "--rebuild" in n for n in notes), notes
    # every paper, old and new, is chunked the index's way, and the manifest still says so
    assert_index_exact(settings, seed, fake_embedder)
    recorded = manifest.read(settings.index_dir(settings.index))
    assert recorded[key] == getattr(settings, key)
    # a query does not depend on chunking: other chunk settings open the index
    assert len(Retriever.open(other, fake_embedder)) == len(seed)


@pytest.mark.parametrize("change,key", [
    ({"embedder": "some-other-model"}, "embedder"),
    ({"embed_backend": "onnx-int8"}, "embed_backend"),
])
def test_settings_mismatch_says_to_rebuild(settings, fake_embedder, seed, change, key):
    build(seed, settings, fake_embedder)
    other = Settings(**{**settings.model_dump(), **change})
    with pytest.raises(IndexMismatchError) as info:
        build(seed, other, fake_embedder)
    message = str(info.value)
    assert key in message and "Rebuild" in message and "--rebuild" in message
    assert_index_exact(settings, seed, fake_embedder)  # untouched


def test_embedder_of_another_dimension_is_a_mismatch(settings, fake_embedder, seed):
    build(seed, settings, fake_embedder)

    class Narrow(FakeEmbedder):
        dim = 32

    with pytest.raises(IndexMismatchError, match="dim: index has 64, settings say 32"):
        build(seed, settings, Narrow())


def test_second_build_while_one_holds_the_lock(settings, fake_embedder, seed):
    from filelock import FileLock

    index_dir = settings.index_dir("default")
    index_dir.mkdir(parents=True)
    with FileLock(str(index_dir / ".lock")):
        with pytest.raises(IndexLockedError, match="another 'paperchat index' is writing"):
            build(seed, settings, fake_embedder)
        assert manifest.read(index_dir) is None and fake_embedder.calls == []
    assert build(seed, settings, fake_embedder).papers == 19  # free again


# --- inputs and records ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bad.jsonl", "bad_papercopilot.json", "bad_openreview.json",
                                  "bad.csv", "papers.csv"])
def test_build_from_each_format_logs_problems_and_indexes_the_good(settings, fake_embedder, name):
    path = ROOT / "tests" / "data" / name
    loaded = load_papers(path)
    lines: list[str] = []
    summary = build_index(path, settings=settings, embedder=fake_embedder, progress=False,
                          log=lines.append)
    assert lines == [f"{path}: {p}" for p in loaded.problems]
    assert (summary.papers, summary.skipped) == (len(loaded.papers), loaded.skipped)
    assert_index_exact(settings, loaded.papers, fake_embedder)
    assert manifest.read(settings.index_dir("default"))["source"] == str(path)


def test_manifest_names_the_source_not_the_whole_list(settings, fake_embedder):
    build_index(load_papers(SEED), settings=settings, embedder=fake_embedder, **QUIET)
    assert manifest.read(settings.index_dir("default"))["source"] == str(SEED)
    build_index(LoadResult(papers=load_papers(SEED).papers), settings=settings,
                embedder=fake_embedder, name="other", **QUIET)
    text = (settings.index_dir("other") / manifest.MANIFEST).read_text()
    assert json.loads(text)["source"] == "(papers passed in)"
    assert len(text) < 2000


def test_missing_list_leaves_no_index_directory(settings, fake_embedder, tmp_path):
    with pytest.raises(SourceFormatError, match="paper list not found"):
        build_index(tmp_path / "typo.jsonl", settings=settings, embedder=fake_embedder, **QUIET)
    assert not settings.index_dir("default").exists()


# --- interrupted builds ---------------------------------------------------------------------------
def test_paper_whose_chunks_vanished_is_redone(settings, fake_embedder, seed):
    """Killed between deleting a changed paper's old chunks and writing the new ones, then the
    list reverted: the catalog row's hash matches, but the paper has no chunks."""
    build(seed, settings, fake_embedder)
    store_of(settings).delete_papers([seed[5].id])
    fake_embedder.calls.clear()
    summary = build(seed, settings, fake_embedder)
    assert (summary.embedded, summary.unchanged) == (1, 18)
    assert_index_exact(settings, seed, fake_embedder)


def test_stray_chunks_without_catalog_row_are_replaced(settings, fake_embedder, seed):
    """Killed after writing a step's chunks but before its catalog rows."""
    build(seed[:10], settings, fake_embedder)
    store = store_of(settings)
    ghost = seed[12]
    # a longer, older version's chunks under the paper's ids, no catalog row
    long = replace(ghost, abstract=" ".join([ghost.abstract] * 4))
    ids = expected_chunk_ids([long], settings, fake_embedder)
    store.upsert(ids, fake_embedder.embed(ids), ids, [{"paper_id": ghost.id, "n": i}
                                                      for i in range(len(ids))])
    assert len(ids) > len(expected_chunk_ids([ghost], settings, fake_embedder))
    build(seed, settings, fake_embedder)
    assert_index_exact(settings, seed, fake_embedder)


def test_bm25_is_rebuilt_after_a_build_interrupted_at_the_end(settings, fake_embedder, seed,
                                                            monkeypatch):
    """Interrupted while saving BM25, the end of phase 1: the catalog has the new papers, BM25
    and the dense fill do not."""
    build(seed[:17], settings, fake_embedder)

    def interrupted(self, directory):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(LexicalIndex, "save", interrupted)
        with pytest.raises(KeyboardInterrupt):
            build(seed, settings, fake_embedder)
    assert len(bm25_ids(settings)) == 17 and catalog_of(settings).count() == 19
    assert len(catalog_of(settings).embedded()) == 17
    summary = build(seed, settings, fake_embedder)
    assert (summary.embedded, summary.unchanged) == (2, 17)  # the fill had not begun
    assert_index_exact(settings, seed, fake_embedder)


BUILD_SCRIPT = r"""
import signal, sys, time
# Ctrl-C raises KeyboardInterrupt even when the test run was started with SIGINT ignored (a
# background job of a shell without job control inherits that, and Python keeps it)
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {root!r})
from tests.conftest import FakeEmbedder
from index.build import build_index
import index.catalog
from rag.settings import Settings

home, source, mode, marker = sys.argv[1:]

class SlowFake(FakeEmbedder):
    def embed(self, texts):
        time.sleep(0.3)  # room to interrupt part-way, even when the test process is slow
        return super().embed(texts)

if mode == "stray":  # park before the second step's dense rows: its chunks are in Chroma
    commit, calls = index.catalog.Catalog.commit_dense, []
    def parked_commit(self, *args):
        calls.append(1)
        if len(calls) == 2:
            open(marker, "w").close()
            time.sleep(120)
        commit(self, *args)
    index.catalog.Catalog.commit_dense = parked_commit

settings = Settings(home=home, embedder="fake-bow", embed_backend="torch")
build_index(source, settings=settings, embedder=SlowFake(), progress=False, log=lambda m: None)
print("finished")
"""

N_INTERRUPTED = 320


@pytest.fixture
def interrupted_source(tmp_path):
    """The first 320 papers of ICLR 2018 as a JSONL file (5 build steps)."""
    path = SHARED_DATA / "iclr2018.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is absent (shared paper data beside the repo)")
    src = tmp_path / "iclr2018_part.jsonl"
    with path.open() as fh:
        src.write_text("".join(next(fh) for _ in range(N_INTERRUPTED)))
    return src


def catalog_rows(db: Path, table: str = "papers") -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(db, timeout=1)
        try:
            return int(con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:  # table not created yet
        return 0


def dense_rows(db: Path) -> int:
    """Papers the dense fill has committed (their ``dense`` rows)."""
    return catalog_rows(db, "dense")


def start_build(tmp_path, settings, source, mode="plain") -> subprocess.Popen:
    script = tmp_path / "build_script.py"
    script.write_text(BUILD_SCRIPT.format(root=str(ROOT)))
    env = {**os.environ, "PAPERCHAT_HOME": str(settings.home)}
    return subprocess.Popen([sys.executable, str(script), str(settings.home), str(source), mode,
                             str(tmp_path / "parked")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(predicate, proc, timeout=90.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"the build ended before it could be interrupted: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the build made no progress in time")
        time.sleep(0.02)


def resume_and_check(settings, source, rows_at_kill):
    """Resume a build killed with ``rows_at_kill`` papers embedded (dense rows): the rest is
    embedded, nothing twice, and every chunk is stored once and findable."""
    papers = load_papers(source).papers
    assert len(papers) == N_INTERRUPTED
    embedder = FakeEmbedder()
    summary = build_index(source, settings=settings, embedder=embedder, **QUIET)
    assert summary.embedded == N_INTERRUPTED - rows_at_kill
    assert summary.unchanged == rows_at_kill
    assert summary.papers == N_INTERRUPTED
    assert_index_exact(settings, papers, embedder)
    # every chunk's vector is stored and findable: its own nearest neighbour
    store = store_of(settings)
    ids = chunk_ids(settings)
    vectors = store.get_embeddings(ids)
    assert set(vectors) == set(ids)
    for cid in ids[::40]:
        assert store.query(vectors[cid], 1)[0].chunk_id == cid


@pytest.mark.timeout(300)
def test_build_killed_with_sigkill_resumes_exactly(tmp_path, settings, interrupted_source):
    db = settings.index_dir("default") / "papers.sqlite"
    proc = start_build(tmp_path, settings, interrupted_source)
    wait_for(lambda: dense_rows(db) >= PAPERS_PER_STEP, proc)
    # a second build of the same index while this one runs is refused
    with pytest.raises(IndexLockedError):
        build_index(interrupted_source, settings=settings, embedder=FakeEmbedder(), **QUIET)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL
    assert catalog_rows(db) == N_INTERRUPTED  # phase 1 wrote every paper's row first
    rows = dense_rows(db)
    assert PAPERS_PER_STEP <= rows < N_INTERRUPTED, "the kill should land part-way"
    resume_and_check(settings, interrupted_source, rows)


@pytest.mark.timeout(300)
def test_build_killed_between_chunks_and_catalog_rows_resumes_exactly(tmp_path, settings,
                                                                     interrupted_source):
    db = settings.index_dir("default") / "papers.sqlite"
    proc = start_build(tmp_path, settings, interrupted_source, mode="stray")
    wait_for(lambda: (tmp_path / "parked").exists(), proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    rows = dense_rows(db)
    assert rows == PAPERS_PER_STEP
    chroma = store_of(settings).count()
    assert chroma > Catalog(db).total_chunks(), "step 2's chunks should be in Chroma, rowless"
    resume_and_check(settings, interrupted_source, rows)


@pytest.mark.timeout(300)
def test_build_interrupted_with_ctrl_c_resumes_exactly(tmp_path, settings, interrupted_source):
    db = settings.index_dir("default") / "papers.sqlite"
    for attempt in range(3):
        # Python delivers a SIGINT that lands inside a finaliser (__del__, a weakref callback) as
        # "Exception ignored in ...": the build then runs to the end. Seen once in a loaded full
        # run; that case is retried from an empty index, any other outcome is checked below.
        proc = start_build(tmp_path, settings, interrupted_source)
        wait_for(lambda: dense_rows(db) >= PAPERS_PER_STEP, proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        if not (proc.returncode == 0 and "finished" in out and "Exception ignored" in err):
            break
        shutil.rmtree(settings.index_dir("default"))
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
    rows = dense_rows(db)
    assert PAPERS_PER_STEP <= rows < N_INTERRUPTED
    resume_and_check(settings, interrupted_source, rows)


# --- the real thing -------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(3600)
def test_build_every_accepted_iclr2026_paper_with_the_real_embedder(accepted_index, real_embedder):
    settings, summary, seconds = accepted_index  # built once per session (tests/conftest.py)
    path = SHARED_DATA / "iclr2026_accepted.jsonl"
    papers = load_papers(path).papers
    assert len(papers) == summary.papers == summary.embedded == 5358
    catalog = catalog_of(settings, "iclr2026")
    assert catalog.count() == 5358
    store = store_of(settings, "iclr2026")
    counts = store.chunk_counts()
    assert set(counts) == {p.id for p in papers} and min(counts.values()) >= 1
    assert store.count() == catalog.total_chunks() == summary.chunks == sum(counts.values())
    # what the model reads of each stored chunk, [CLS] and [SEP] included
    tokenizer = real_embedder.tokenizer
    longest, offset = 0, 0
    while True:
        docs = store._col.get(include=["documents"], limit=2000, offset=offset)["documents"]
        if docs:
            lengths = [len(ids) for ids in tokenizer(docs, add_special_tokens=True)["input_ids"]]
            longest = max(longest, *lengths)
        if len(docs) < 2000:
            break
        offset += 2000
    assert longest <= 256
    again = build_index(path, settings=settings, embedder=real_embedder, name="iclr2026",
                        progress=False, log=lambda m: None)
    assert (again.embedded, again.unchanged, again.chunks) == (0, 5358, summary.chunks)
    print(f"\n5358 papers, {summary.chunks} chunks in {seconds:.0f} s "
          f"({5358 / seconds:.1f} papers/s); longest chunk {longest} tokens")


# --- embedder variants (rag.backends.onnx_embedder.VARIANTS): an index keeps the one it was built with ---
class VariantEmbedder(FakeEmbedder):
    """A fake with the ONNX embedder's variant seam; each variant gives other vectors."""

    def __init__(self, variant: str):
        super().__init__()
        self.variant = variant

    def with_variant(self, variant: str) -> "VariantEmbedder":
        return self if variant == self.variant else VariantEmbedder(variant)

    def embed(self, texts):
        out = super().embed(texts)
        return np.roll(out, 1, axis=1) if self.variant == "int8-avx2" else out


def test_an_index_keeps_its_embedder_variant_for_updates_and_queries(settings, seed):
    from rag.retrieve.retriever import Retriever

    settings = settings.model_copy(update={"embed_backend": "onnx-int8"})
    build(seed[:10], settings, VariantEmbedder("int8"))
    index_dir = settings.index_dir(settings.index)
    assert manifest.read(index_dir)["embed_variant"] == "int8"

    # the same index updated on a CPU whose own choice is the other variant
    notes: list[str] = []
    other_cpu = VariantEmbedder("int8-avx2")
    summary = build_index(LoadResult(papers=list(seed)), settings=settings, embedder=other_cpu,
                          progress=False, log=notes.append)
    assert summary.embedded == len(seed) - 10
    assert any("keeps the 'int8' embedder" in n and "'int8-avx2'" in n for n in notes), notes
    assert other_cpu.calls == []  # nothing was embedded with the other variant
    assert manifest.read(index_dir)["embed_variant"] == "int8"
    assert_index_exact(settings, seed, VariantEmbedder("int8"))

    # ... and queried there: the query is embedded with the index's variant
    retriever = Retriever.open(settings, other_cpu)
    assert retriever.embedder.variant == "int8"
    best = retriever.search(seed[4].title).hits[0].paper.id
    assert best == seed[4].id


def test_an_index_from_before_variants_counts_as_int8(settings, seed):
    from rag.retrieve.retriever import Retriever

    settings = settings.model_copy(update={"embed_backend": "onnx-int8"})
    build(seed[:5], settings, VariantEmbedder("int8"))
    index_dir = settings.index_dir(settings.index)
    old = manifest.read(index_dir)
    del old["embed_variant"]
    (index_dir / manifest.MANIFEST).write_text(json.dumps(old))
    retriever = Retriever.open(settings, VariantEmbedder("int8-avx2"))
    assert retriever.embedder.variant == "int8"


def test_stage_times_and_embedded_tokens_are_reported(settings, fake_embedder, seed):
    summary = build(seed, settings, fake_embedder)
    assert {"load", "normalise", "chunk", "embed", "store", "catalog", "bm25"} \
        <= set(summary.stages)
    assert all(v >= 0 for v in summary.stages.values())
    chunks = [c for p in seed for c in chunk_paper(p.id, *search_text(p)[:2],
                                                   fake_embedder.tokenizer)]
    assert summary.tokens_embedded == sum(c.n_tokens for c in chunks)
    line = summary.stages_line()
    assert line.startswith("time by stage")
    for stage, seconds in summary.stages.items():  # stages under 0.05 s are left out
        assert (f"{stage} {seconds:.1f} s" in line) == (seconds >= 0.05), (stage, line)


def test_chunking_never_shares_the_embedders_tokenizer_across_threads(settings, seed):
    """A fast tokenizer's truncation is mutable state set by each call; chunking in the
    pipeline's helper thread must use its own copy (index.dense_fill._embed_papers)."""
    import threading

    class Recording(FakeEmbedder):
        def __init__(self):
            super().__init__()
            self.tokenizer = RecordingTokenizer()

    class RecordingTokenizer(type(FakeEmbedder().tokenizer)):
        def __init__(self):
            self.threads: set[str] = set()

        def __call__(self, text, **kw):
            self.threads.add(threading.current_thread().name)
            return super().__call__(text, **kw)

    embedder = Recording()
    summary = build(seed, settings, embedder)
    assert summary.embedded == len(seed)
    assert embedder.tokenizer.threads <= {threading.current_thread().name}
