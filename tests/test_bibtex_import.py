"""BibTeX that imports as it is (issue 23): entries only, stable keys, @inproceedings with a
booktitle and a year for ICLR 2026 papers whose list has no venue field, and RIS."""

from __future__ import annotations

import json
import random

import bibtexparser
import pytest
from bibtexparser.model import Entry

from rag.conference import export
from rag.types import Paper
from tests.conftest import SEED, shared


def parse_entries_only(text: str) -> list[Entry]:
    """The entries of ``text``, asserting that nothing else is there (no failed block, comment,
    @string or @preamble), as Zotero's importer and bibtexparser read it."""
    lib = bibtexparser.parse_string(text)
    assert not lib.failed_blocks, [b.error for b in lib.failed_blocks]
    assert all(isinstance(b, Entry) for b in lib.blocks), [type(b).__name__ for b in lib.blocks]
    return lib.entries


def test_iclr2026_list_without_venue_fields_gives_inproceedings(tmp_path):
    # the ICLR 2026 lists have no venue/year fields; under a name that says nothing
    # (papers.jsonl) the conference still comes from their venue_2025_11_22 field
    from index.sources import load_papers

    source = shared("iclr2026_all.jsonl")
    lines = source.read_text(encoding="utf-8").splitlines()
    picked = [json.loads(x) for x in random.Random(0).sample(lines, 300)]
    assert not any("venue" in r or "year" in r for r in picked)
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked), encoding="utf-8")
    papers = load_papers(path).papers
    entries = parse_entries_only(export.bibtex(papers))
    assert len(entries) == 300
    assert {e.entry_type for e in entries} == {"inproceedings"}
    assert {e.fields_dict["booktitle"].value for e in entries} == {"ICLR 2026"}
    assert {e.fields_dict["year"].value for e in entries} == {"2026"}
    assert len({e.key for e in entries}) == 300


def test_fetched_list_gives_inproceedings(tmp_path):
    from index.fetch import note_row
    from index.sources import load_papers

    notes = json.loads(shared("openreview_v2_sample.json").read_text(encoding="utf-8"))
    path = tmp_path / "fetched.jsonl"
    path.write_text("".join(json.dumps(note_row(n)) + "\n" for n in notes), encoding="utf-8")
    entries = parse_entries_only(export.bibtex(load_papers(path).papers))
    assert len(entries) == 300
    assert all(e.entry_type == "inproceedings" and e.fields_dict["year"].value == "2026"
               for e in entries)


def test_seed_bibtex_is_entries_only_with_venue_and_year():
    from index.sources import load_papers

    papers = load_papers(SEED).papers
    text = export.bibtex(papers)
    assert text.lstrip().startswith("@inproceedings{") and "%" not in text.replace("\\%", "")
    entries = parse_entries_only(text)
    assert len(entries) == len(papers) == 19


def test_keys_do_not_depend_on_the_order_papers_are_cited_in():
    same = [Paper(f"id{i}", "Plain Title", "A.", authors=["Jo Same"], venue="ICLR 2026",
                  year=2026) for i in (3, 1, 2)]
    other = Paper("z", "Other Work", "A.", venue="ICLR 2026", year=2026)
    one = {e.key: e.fields_dict["url"].value for e in parse_entries_only(
        export.bibtex(same + [other]))}
    two = {e.key: e.fields_dict["url"].value for e in parse_entries_only(
        export.bibtex([other] + same[::-1]))}
    assert one == two
    assert one["same2026plain"].endswith("id=id1")  # the smallest id keeps the plain key
    assert one["same2026plaina"].endswith("id=id2") and one["same2026plainb"].endswith("id=id3")


def test_ris_records():
    papers = [Paper("p1", "A $\\ell_1$\nTitle", "A.", authors=["Ann Lee", "Bo Li"],
                    keywords=["x", "y"], status="Accept (Oral)", venue="ICLR 2026", year=2026),
              Paper("p2", "Unknown Venue", "A.")]
    text = export.ris(papers + papers[:1])
    records = [r for r in text.split("ER  - ") if r.strip()]
    assert len(records) == 2
    first = records[0].strip().splitlines()
    assert first[0] == "TY  - CPAPER"
    assert "TI  - A $\\ell_1$ Title" in first and "T2  - ICLR 2026" in first
    assert [x for x in first if x.startswith("AU")] == ["AU  - Ann Lee", "AU  - Bo Li"]
    assert "PY  - 2026" in first and "N1  - Accept (Oral)" in first
    assert "UR  - https://openreview.net/forum?id=p1" in first
    assert records[1].strip().splitlines()[0] == "TY  - GEN"
    assert all(len(line) > 6 and line[2:6] == "  - " for r in records
               for line in r.strip().splitlines())
    assert export.ris([]) == ""
