"""The paper names an index keeps (rag/understand/names.py's names file): written by the build, read by the
retriever only when made from the same papers by the same code, and the same find() results as a
NameIndex built afresh, on a few papers and on the whole ICLR 2026 list (shared data)."""

from __future__ import annotations

import json

import pytest

from rag.paths import IndexPaths
from rag.types import Paper
from rag.understand import names
from rag.understand.names import NameIndex, papers_key, write_names
from tests.conftest import SEED, shared

ATTRS = ("titles", "capitals", "words", "prefixes", "heads", "head_phrases")

PAPERS = [Paper("a", "StepORLM: A Self-Evolving Framework", "We propose StepORLM and DCFold."),
          Paper("b", "SPEED: Faster Decoding", "Speed matters. We use Llama3 and XOR."),
          Paper("c", "The Polar Express: Optimal Matrix Sign Methods", "Sign methods, F²SA."),
          Paper("d", "Learning to Route Delivery Fleets with Graphs", "Part-X-MLLM routes.")] + \
    [Paper(f"x{i}", f"Filler {i}", "An abstract about graphs.") for i in range(30)]


def questions(papers: list[Paper], n: int = 400) -> list[str]:
    """Turns that name papers in every way find() reads: titles, their heads and openings,
    abstract words (coined names among them), in upper and lower case."""
    out = ["what is steporlm", "the SPEED paper", "it can speed up training",
           "what does the Polar Express paper do", "compare Part-X-MLLM and Llama3's results"]
    step = max(1, len(papers) // n)
    for p in papers[::step][:n]:
        words = p.abstract.split()
        out += [p.title, p.title.lower(), f"Which paper proposes {p.title.partition(':')[0]}?",
                " ".join(words[:12]), " ".join(words[-12:]).upper()]
    return out


def assert_same(a: NameIndex, b: NameIndex, turns: list[str]) -> None:
    for key in ATTRS:
        assert getattr(a, key) == getattr(b, key), key
    for turn in turns:
        assert a.find(turn) == b.find(turn), turn


def test_a_saved_name_index_loads_back_equal(tmp_path):
    built = NameIndex(PAPERS)
    path = tmp_path / "names.json"
    built.save(path, papers_key(PAPERS))
    loaded = NameIndex.load(path, papers_key(PAPERS))
    assert loaded is not None
    assert_same(built, loaded, questions(PAPERS))
    assert [ids for _, _, ids in loaded.find("what is steporlm")] == [["a"]]
    assert loaded.ids(["DCFold"]) == ["a"]


@pytest.mark.parametrize("change", ["title", "abstract", "order", "one more"])
def test_a_saved_name_index_of_other_papers_is_not_used(tmp_path, change):
    path = tmp_path / "names.json"
    NameIndex(PAPERS).save(path, papers_key(PAPERS))
    other = list(PAPERS)
    if change == "title":
        other[0] = Paper("a", "StepOR: A Self-Evolving Framework", other[0].abstract)
    elif change == "abstract":
        other[1] = Paper("b", other[1].title, other[1].abstract + " RFTHGS.")
    elif change == "order":
        other = other[::-1]
    else:
        other.append(Paper("e", "RFTHGS: Routing", "Hybrid genetic search."))
    assert papers_key(other) != papers_key(PAPERS)
    assert NameIndex.load(path, papers_key(other)) is None


@pytest.mark.parametrize("content", ["", "{", "[]", '{"format": 0}', '{"format": 1, "key": "x"}'])
def test_a_missing_broken_or_old_names_file_is_not_used(tmp_path, content):
    path = tmp_path / "names.json"
    assert NameIndex.load(path, papers_key(PAPERS)) is None
    path.write_text(content)
    assert NameIndex.load(path, papers_key(PAPERS)) is None


def test_names_made_by_other_code_are_not_used(tmp_path, monkeypatch):
    path = tmp_path / "names.json"
    NameIndex(PAPERS).save(path, papers_key(PAPERS))
    monkeypatch.setattr(names, "code_version", lambda: "another")
    assert NameIndex.load(path, papers_key(PAPERS)) is None


def test_the_build_writes_the_names_and_the_retriever_reads_them(settings, fake_embedder,
                                                                 monkeypatch):
    """An index built with names= has its names file from phase 1; the retriever reads it (no
    NameIndex is built) and it equals a fresh one."""
    from index.build import build_index
    from rag.retrieve.retriever import Retriever

    build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None, names=write_names)
    path = IndexPaths(settings.index_dir()).names
    assert path.is_file()
    retriever = Retriever.open(settings, fake_embedder)
    papers = list(retriever.papers.values())
    fresh = NameIndex(papers)
    with monkeypatch.context() as m:
        m.setattr(NameIndex, "__init__", lambda self, papers: pytest.fail("built, not read"))
        loaded = retriever.name_index()
    assert_same(fresh, loaded, questions(papers))
    # an unchanged re-index leaves the file alone; a changed catalog rewrites it
    before = path.stat().st_mtime_ns
    build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None, names=write_names)
    assert path.stat().st_mtime_ns == before
    extra = json.dumps({"id": "zz1", "title": "QuuxNet: A New Model", "abstract": "QuuxNet."})
    longer = settings.home / "more.jsonl"
    longer.write_text(SEED.read_text() + extra + "\n")
    build_index(longer, settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None, names=write_names)
    again = Retriever.open(settings, fake_embedder).name_index()
    assert [ids for _, _, ids in again.find("what is QuuxNet")] == [["zz1"]]


def test_an_index_without_a_names_file_still_answers_and_gets_one(settings, fake_embedder):
    """An index built before names files existed (or by a build given no names=): the first
    reader builds the names and saves them for the next one."""
    from index.build import build_index
    from rag.retrieve.retriever import Retriever

    build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None)
    path = IndexPaths(settings.index_dir()).names
    assert not path.exists()
    retriever = Retriever.open(settings, fake_embedder)
    first = retriever.name_index()
    assert path.is_file()
    papers = list(retriever.papers.values())
    assert_same(first, NameIndex.load(path, papers_key(papers)), questions(papers))


def test_a_read_only_index_keeps_its_names_in_memory(settings, fake_embedder, monkeypatch):
    from index.build import build_index
    from rag.retrieve.retriever import Retriever

    build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None)

    def refuse(self, path, key, catalog=""):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(NameIndex, "save", refuse)
    retriever = Retriever.open(settings, fake_embedder)
    assert retriever.name_index().find("what is steporlm") is not None


def broken_writer(index_dir, fingerprint):
    raise RuntimeError("disk on fire")


def test_a_failing_names_writer_does_not_fail_the_build(settings, fake_embedder):
    from index.build import build_index

    lines: list[str] = []
    summary = build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                          log=lines.append, names=broken_writer)
    assert summary.papers > 0
    assert any("paper names not written (RuntimeError: disk on fire)" in m for m in lines)


def test_saved_names_equal_fresh_ones_on_the_whole_iclr2026_list(tmp_path):
    """19,630 papers (../shared/data/iclr2026_all.jsonl) in the order a retriever reads them
    (by id): the loaded index has the same dicts and sets and the same find() results for 2,000
    turns as one built afresh."""
    from index.sources import load_papers

    papers = sorted(load_papers(shared("iclr2026_all.jsonl")).papers, key=lambda p: p.id)
    built = NameIndex(papers)
    path = tmp_path / "names.json"
    built.save(path, papers_key(papers))
    loaded = NameIndex.load(path, papers_key(papers))
    assert loaded is not None
    assert_same(built, loaded, questions(papers, n=400))
    assert [ids for _, _, ids in loaded.find("Which paper proposes StepORLM?")] == [["ZrgxU8WMmG"]]


def test_a_title_opening_many_titles_share_names_its_paper_when_said_longer():
    from rag.types import Paper
    from rag.understand.names import NameIndex

    titles = ["On the Convergence of Adam and Beyond", "On the Convergence of SGD with Momentum",
              "On the Convergence of Federated Averaging", "On the Convergence of Q-Learning",
              "On the Convergence of Mirror Descent Revisited"]
    ni = NameIndex([Paper(str(i), t, "An abstract.") for i, t in enumerate(titles)])
    found = ni.find("which 2026 papers are closest to On the Convergence of Adam and Beyond (2018)")
    assert [ids for _, _, ids in found] == [["0"]]
    assert ni.find("papers on the convergence of optimisers") == []  # the shared opening alone
