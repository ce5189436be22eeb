"""Reviewer ratings: loading them from every format (malformed ones reported by line, the paper
kept), the rating and author filters (both search sides agree), cards, terminal references and
``ask --json``, chunk metadata, metadata-only re-indexing, and a real-embedder search under
``rating>=6``."""

from __future__ import annotations

import json

import pytest

from index.sources import load_papers
from rag.types import Paper
from tests.conftest import SHARED_DATA


def shared(name: str):
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (the shared paper data lives beside the repo in "
                    f"../shared/data; see shared/data/README.md)")
    return path


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def rec(pid, **fields):
    return {"id": pid, "title": f"Paper {pid}", "abstract": f"Abstract of {pid}.", **fields}


# --- Paper's summary ------------------------------------------------------------------------------
def test_rating_summary_mean_count_range_and_confidence():
    p = Paper("a", "t", "x", ratings=[4, 6, 6, 8], confidences=[3, 4, 4, 5])
    assert p.rating == {"mean": 6.0, "n": 4, "min": 4.0, "max": 8.0}
    assert p.mean_confidence == 4.0
    assert Paper("a", "t", "x", ratings=[5, 6, 6]).rating["mean"] == 5.67  # 17/3 rounded
    assert Paper("a", "t", "x").rating is None
    assert Paper("a", "t", "x").mean_confidence is None
    assert Paper("a", "t", "x", ratings=[6], confidences=[]).mean_confidence is None


def test_positional_construction_still_works():
    p = Paper("i", "t", "a", ["A B"], ["kw"], "area", "Oral", "ICLR 2026", 2026, "u", "tl")
    assert (p.tldr, p.ratings, p.confidences) == ("tl", [], [])


# --- loading ---------------------------------------------------------------------------------------
def test_iclr2026_all_ratings_from_the_dated_field():
    result = load_papers(shared("iclr2026_all.jsonl"))
    assert len(result.papers) == 19630 and result.problems == []
    assert sum(1 for p in result.papers if p.ratings) == 19472
    # every paper's ratings are exactly the file's list, in order
    raw = {}
    with shared("iclr2026_all.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            raw[r["id"]] = r["ratings_2025_11_22"]
    assert all(p.ratings == [float(x) for x in raw[p.id]] for p in result.papers)


def test_iclr2018_jsonl_and_papercopilot_give_the_same_ratings():
    jsonl = {p.id: p for p in load_papers(shared("iclr2018.jsonl")).papers}
    copilot = {p.id: p for p in load_papers(shared("iclr2018_papercopilot.json")).papers}
    assert sum(1 for p in jsonl.values() if p.ratings) == 972
    assert [i for i in jsonl if jsonl[i].ratings != copilot[i].ratings] == []
    # the first record of the Paper Copilot file: rating "4;5;5", confidence "4;4;4"
    p = copilot["B11bwYgfM"]
    assert (p.ratings, p.confidences) == ([4.0, 5.0, 5.0], [4.0, 4.0, 4.0])
    assert p.rating == {"mean": 4.67, "n": 3, "min": 4.0, "max": 5.0}
    # its empty-string ratings mean "none" (23 papers), not a problem
    assert sum(1 for p in copilot.values() if not p.ratings and not p.confidences) == 23


@pytest.mark.parametrize("fields,ratings,confidences", [
    ({"ratings_2025_11_22": [6, 8, 4, 6]}, [6, 8, 4, 6], []),
    ({"ratings": [3, 5]}, [3, 5], []),
    ({"rating": "4;5;5", "confidence": "4;3;4"}, [4, 5, 5], [4, 3, 4]),
    ({"rating": "4; 5 ;", "confidences": [2, 3.5]}, [4, 5], [2, 3.5]),
    ({"ratings": ["6", "7.5"]}, [6, 7.5], []),
    ({"rating": "[6, 8]"}, [6, 8], []),  # a list written as text
    ({"rating": "6: marginally above acceptance threshold"}, [6], []),
    ({"rating": 7}, [7], []),
    ({"rating": "", "confidence": None}, [], []),
    ({"ratings": []}, [], []),
    # undated field first; among dated ones the latest
    ({"ratings_2025_11_22": [1], "ratings": [9]}, [9], []),
    ({"ratings_2025_10_01": [1], "ratings_2025_11_22": [2, 3]}, [2, 3], []),
], ids=lambda v: json.dumps(v) if isinstance(v, dict) else None)
def test_jsonl_rating_fields(tmp_path, fields, ratings, confidences):
    result = load_papers(write_jsonl(tmp_path / "p.jsonl", [rec("p1", **fields)]))
    assert result.problems == []
    (paper,) = result.papers
    assert (paper.ratings, paper.confidences) == (ratings, confidences)


BAD = [  # (fields, field named in the message, text in it, ratings kept, confidences kept)
    ({"ratings_2025_11_22": [6, "abc", 4]}, "ratings_2025_11_22", "'abc', not a number",
     [], []),
    ({"rating": "4;x;5", "confidence": "3;3;3"}, "rating", "'x', not a number", [], [3, 3, 3]),
    ({"ratings": {"a": 1}}, "ratings", "got object", [], []),
    ({"ratings": True}, "ratings", "got boolean", [], []),
    ({"ratings": [6, None]}, "ratings", "a JSON null, not a number", [], []),
    ({"ratings": [6, [7]]}, "ratings", "a JSON array, not a number", [], []),
    ({"ratings": ["nan"]}, "ratings", "'nan', not a number", [], []),
    ({"ratings": [float("inf")]}, "ratings", "not a finite number", [], []),
    ({"rating": "[6, x]"}, "rating", "not a list of numbers", [], []),
    ({"rating": "[6, 'x']"}, "rating", "'x', not a number", [], []),
    ({"ratings": [6, 7], "confidence": "4;high"}, "confidence", "'high', not a number",
     [6, 7], []),
]


@pytest.mark.parametrize("fields,field,text,ratings,confidences", BAD,
                         ids=[str(b[0]) for b in BAD])
def test_malformed_ratings_keep_the_paper_and_report_the_line(tmp_path, fields, field, text,
                                                              ratings, confidences):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(rec("p1", ratings=[5])) + "\n\n"
                    + json.dumps(rec("p2", **fields), allow_nan=True) + "\n", encoding="utf-8")
    result = load_papers(path)
    assert [p.id for p in result.papers] == ["p1", "p2"]
    p2 = result.papers[1]
    assert (p2.ratings, p2.confidences) == (ratings, confidences)
    assert [(p.line, p.record, p.skipped) for p in result.problems] == [(3, None, False)]
    message = result.problems[0].message
    assert f"field {field!r}" in message and text in message and "loaded without" in message
    assert result.skipped == 0 and result.n_records == 2


def test_papercopilot_malformed_rating_reported_with_line_and_array_index(tmp_path):
    records = [rec("c1", rating="6;7", confidence="3;4"),
               rec("c2", rating="6;seven", confidence="3;4"),
               rec("c3", rating="", confidence="")]
    path = tmp_path / "list.json"
    path.write_text(json.dumps(records, indent=4), encoding="utf-8")
    result = load_papers(path)
    assert result.fmt == "papercopilot"
    by_id = {p.id: p for p in result.papers}
    assert list(by_id) == ["c1", "c2", "c3"]
    assert (by_id["c1"].ratings, by_id["c1"].confidences) == ([6, 7], [3, 4])
    assert (by_id["c2"].ratings, by_id["c2"].confidences) == ([], [3, 4])
    assert (by_id["c3"].ratings, by_id["c3"].confidences) == ([], [])
    # the problem's line is where c2's object opens (the "{" line above its "id")
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines, 1) if '"c2"' in ln) - 1
    assert lines[start - 1].strip() == "{"
    assert [(p.line, p.record, p.skipped) for p in result.problems] == [(start, 1, False)]
    assert "'seven', not a number" in result.problems[0].message
    assert str(result.problems[0]).startswith(f"line {start} (array index 1): warning: ")


def test_csv_rating_and_confidence_columns(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text(
        "id,title,abstract,Rating,confidence\n"
        "a,Title A,Abstract A.,6;8;4,3;4;4\n"
        'b,Title B,"Abstract B,\nsecond line.",,\n'
        "c,Title C,Abstract C.,5;n/a,4\n"
        'd,Title D,Abstract D.,"[7, 7]",\n', encoding="utf-8")
    result = load_papers(path)
    got = {p.id: (p.ratings, p.confidences) for p in result.papers}
    assert got == {"a": ([6, 8, 4], [3, 4, 4]), "b": ([], []), "c": ([], [4]),
                   "d": ([7, 7], [])}
    assert [(p.line, p.skipped) for p in result.problems] == [(5, False)]
    assert "field 'rating'" in result.problems[0].message


def test_csv_ratings_column_name(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text("title,abstract,id,ratings\nT,A.,x,5;6\n", encoding="utf-8")
    assert load_papers(path).papers[0].ratings == [5, 6]


def test_openreview_notes_load_unrated():
    papers = load_papers(shared("openreview_v2_sample.json")).papers
    assert papers and all(p.ratings == [] and p.rating is None for p in papers)
