"""index.sources: every format on the real shared samples, malformed fixtures with exact problem
lines, format detection and the errors a user sees for files that are no paper list at all."""

from __future__ import annotations

import json

import pytest

from index.source_records import LoadResult, Problem, split_openreview_venue, venue_from_filename
from index.sources import FORMATS, detect_format, load_papers
from rag.errors import SourceFormatError
from tests.conftest import ROOT, shared

DATA = ROOT / "tests" / "data"




# --- the real samples -----------------------------------------------------------------------------
REAL = [
    # file, detected format, records, one paper's id, fields expected on that paper
    ("seed_papers.jsonl", "jsonl", 19, "bbuxDoRD2D", {
        "title": "Efficient Spatially-Variant Convolution via Differentiable Sparse Kernel Complex",
        "status": "Accept (Poster)", "venue": "ICLR 2026", "year": 2026, "authors": [],
        "primary_area": "optimization", "url": "https://openreview.net/forum?id=bbuxDoRD2D"}),
    ("iclr2018.jsonl", "jsonl", 995, "B12Js_yRb", {
        "authors": ["Yan Zhang", "Jonathon Hare", "Adam Prügel-Bennett"],
        "keywords": ["visual question answering", "vqa", "counting"],
        "status": "Accept (Poster)", "url": "https://iclr.cc/virtual/2018/poster/307",
        "venue": "ICLR 2018", "year": 2018,  # from the file name: the records have neither
        "tldr": "Enabling Visual Question Answering models to count by handling overlapping "
                "object proposals."}),
    ("iclr2018_papercopilot.json", "papercopilot", 995, "B12Js_yRb", {
        "authors": ["Yan Zhang", "Jonathon Hare", "Adam Prügel-Bennett"],  # from "a;b;c"
        "keywords": ["visual question answering", "vqa", "counting"],
        "status": "Poster", "url": "https://iclr.cc/virtual/2018/poster/307",  # from "site"
        "venue": "ICLR 2018", "year": 2018, "primary_area": ""}),
    ("iclr2018_papercopilot.json", "papercopilot", 995, "B11bwYgfM", {
        "authors": ["Mo Yu", "Xiaoxiao Guo", "Jinfeng Yi", "Shiyu Chang", "Saloni Potdar",
                    "Gerald Tesauro", "Haoyu Wang", "Bowen Zhou"],
        "status": "Withdraw", "url": "https://openreview.net/forum?id=B11bwYgfM", "year": 2018}),
    ("openreview_v2_sample.json", "openreview", 300, "02NbD16OnA", {
        "title": "Seeing Through Deception: Uncovering Misleading Creator Intent in Multimodal "
                 "News with Vision-Language Models",
        "keywords": ["multimodal misinformation detection", "vision-language models",
                     "creator intent"],
        "primary_area": "datasets and benchmarks", "status": "Accept (Poster)",
        "venue": "ICLR 2026", "year": 2026, "authors": [],
        "url": "https://openreview.net/forum?id=02NbD16OnA"}),
]


@pytest.mark.parametrize("name,fmt,n,pid,fields", REAL, ids=[f"{r[0]}:{r[3]}" for r in REAL])
def test_real_sample_loads_every_record(name, fmt, n, pid, fields):
    path = shared(name)
    assert detect_format(path) == fmt
    for forced in ("auto", fmt):
        result = load_papers(path, forced)
        assert result.fmt == fmt
        assert (result.n_records, len(result.papers), result.problems) == (n, n, [])
        paper = {p.id: p for p in result.papers}[pid]
        assert {k: getattr(paper, k) for k in fields} == fields
        assert all(p.title and p.abstract and p.url for p in result.papers)


def test_openreview_sample_status_and_venue_counts():
    papers = load_papers(shared("openreview_v2_sample.json")).papers
    statuses = {}
    for p in papers:
        statuses[p.status] = statuses.get(p.status, 0) + 1
    assert statuses == {"Accept (Poster)": 290, "Accept (Oral)": 10}
    assert {(p.venue, p.year) for p in papers} == {("ICLR 2026", 2026)}
    assert all(p.url == f"https://openreview.net/forum?id={p.id}" for p in papers)
    raw = json.loads(shared("openreview_v2_sample.json").read_text())
    assert [p.tldr for p in papers] == [(n["content"]["TLDR"]["value"] or "").strip() for n in raw]
    assert sum(1 for p in papers if p.tldr) == 164


def test_papercopilot_matches_the_same_list_in_jsonl():
    """Paper Copilot's native file and the project's JSONL of ICLR 2018 give the same papers."""
    copilot = {p.id: p for p in load_papers(shared("iclr2018_papercopilot.json")).papers}
    jsonl = {p.id: p for p in load_papers(shared("iclr2018.jsonl")).papers}
    assert copilot.keys() == jsonl.keys()
    for field in ("title", "abstract", "authors", "keywords", "url", "tldr", "venue", "year"):
        differ = [i for i in jsonl if getattr(jsonl[i], field) != getattr(copilot[i], field)]
        assert differ == [], field
    raw = {(c.status, j.status) for i, c in copilot.items() for j in [jsonl[i]]}
    assert ("Poster", "Accept (Poster)") in raw and ("Oral", "Accept (Oral)") in raw


def test_openreview_matches_the_accepted_jsonl():
    notes = load_papers(shared("openreview_v2_sample.json")).papers
    accepted = {p.id: p for p in load_papers(shared("iclr2026_accepted.jsonl")).papers}
    for p in notes:
        q = accepted[p.id]
        assert (p.title, p.abstract, p.status, p.url, p.venue, p.year) == \
            (q.title, q.abstract, q.status, q.url, q.venue, q.year)


# --- malformed fixtures ---------------------------------------------------------------------------
# (line, array index or None, skipped, text in the message)
MALFORMED = [
    ("bad.jsonl", "jsonl", 10, ["p7", "p1", "p11"], [
        (2, None, True, "invalid JSON"),
        (3, None, True, "not valid UTF-8"),
        (4, None, True, "missing or empty 'abstract'"),
        (5, None, True, "field 'authors' should be a list of strings"),
        (8, None, False, "duplicate id 'p1' (also on line 1)"),
        (9, None, True, "record is a JSON array, not an object"),
        (10, None, True, "missing or empty 'abstract'"),
    ]),
    ("bad_papercopilot.json", "papercopilot", 8, ["c6", "c1", "c8"], [
        (16, 1, True, "missing or empty 'abstract'"),
        (30, 2, True, "field 'title' should be a string, got list"),
        (48, 3, True, "not valid UTF-8 (in 'abstract')"),
        (62, 4, True, "invalid JSON: Expecting ',' delimiter (line 65"),
        (81, 6, False, "duplicate id 'c1' (also on line 2)"),
    ]),
    ("bad_openreview.json", "openreview", 7, ["n3", "n4", "n1"], [
        (35, 1, True, "no 'content' object"),
        (88, 4, True, "field 'abstract' should be a string, got float"),
        (119, 5, True, "missing or empty 'title'"),
        (147, 6, False, "duplicate id 'n1' (also on line 4)"),
    ]),
    ("bad.csv", "csv", 8, ["b6", "b1", "b7"], [
        (3, None, True, "invalid CSV: ',' expected after '\"'"),
        (4, None, True, "row has 8 fields, the header has 6"),
        (5, None, True, "missing or empty 'abstract'"),
        (6, None, True, "not valid UTF-8 (in 'abstract')"),
        (10, None, False, "duplicate id 'b1' (also on line 2)"),
    ]),
]


@pytest.mark.parametrize("name,fmt,n_records,kept,problems", MALFORMED,
                         ids=[m[0] for m in MALFORMED])
def test_malformed_records_are_reported_by_line_and_good_ones_kept(name, fmt, n_records, kept,
                                                                   problems):
    result = load_papers(DATA / name)
    assert result.fmt == fmt
    assert [p.id for p in result.papers] == kept
    assert result.n_records == n_records
    got = [(p.line, p.record, p.skipped) for p in result.problems]
    assert got == [(line, rec, skipped) for line, rec, skipped, _ in problems]
    for problem, (_, _, _, text) in zip(result.problems, problems):
        assert text in problem.message
    assert result.skipped == sum(1 for *_, skipped, _ in problems if skipped)
    # every record is either kept, skipped, or a duplicate that lost to a later one
    duplicates = sum(1 for p in result.problems if not p.skipped)
    assert len(result.papers) + result.skipped + duplicates == n_records


def test_duplicate_id_last_record_wins_in_place_of_the_last():
    papers = {p.id: p for p in load_papers(DATA / "bad.jsonl").papers}
    assert papers["p1"].title == "Paper 1, revised"
    papers = {p.id: p for p in load_papers(DATA / "bad_papercopilot.json").papers}
    assert papers["c1"].title == "Copilot paper 1, again"
    papers = {p.id: p for p in load_papers(DATA / "bad_openreview.json").papers}
    assert papers["n1"].status == "Withdrawn"


def test_malformed_fixture_fields_map_like_the_real_files():
    jsonl = {p.id: p for p in load_papers(DATA / "bad.jsonl").papers}
    assert jsonl["p11"].authors == ["Grace Hopper", "Edsger Dijkstra"]  # ';'-string accepted
    assert (jsonl["p7"].venue, jsonl["p7"].year, jsonl["p7"].tldr) == \
        ("ICLR 2026", 2026, "A short tldr.")
    assert (jsonl["p1"].venue, jsonl["p1"].year) == ("", None)  # no venue in record or name
    copilot = {p.id: p for p in load_papers(DATA / "bad_papercopilot.json").papers}
    assert copilot["c6"].keywords == ["graphs", "message passing"]
    assert copilot["c6"].status == "Oral"
    assert copilot["c8"].year == 2018  # from the iclr.cc/virtual/2018 URL
    assert copilot["c8"].url == "https://iclr.cc/virtual/2018/poster/8"
    notes = {p.id: p for p in load_papers(DATA / "bad_openreview.json").papers}
    assert notes["n3"].authors == ["Ada Lovelace", "Alan Turing"]
    assert (notes["n3"].status, notes["n3"].tldr) == ("Accept (Oral)", "tldr 3")
    assert (notes["n4"].title, notes["n4"].status, notes["n4"].year) == \
        ("V1 style title", "Submitted", 2026)  # API v1 shape: bare content values
    assert notes["n4"].url == "https://openreview.net/forum?id=n4"


def test_problem_str_names_line_and_array_index():
    assert str(Problem(3, "bad", True)) == "line 3: skipped: bad"
    assert str(Problem(81, "dup", False, 6)) == "line 81 (array index 6): warning: dup"


def test_compact_json_array_with_a_broken_record_keeps_the_records_before(tmp_path):
    path = tmp_path / "compact.json"
    good = json.dumps({"id": "a", "title": "T", "abstract": "A", "author": "X;Y"})
    path.write_text(f'[{good}, {{"id": "b", "title": }}, {good}]')
    result = load_papers(path, "papercopilot")
    assert [p.id for p in result.papers] == ["a"]
    assert [(p.line, p.record, p.skipped) for p in result.problems] == [(1, 1, True)]
    assert "the rest of the array could not be read" in result.problems[0].message


def test_truncated_json_array_is_reported(tmp_path):
    path = tmp_path / "truncated.json"
    rec = {"id": "a", "title": "T", "abstract": "A"}
    path.write_text("[\n" + json.dumps(rec) + ",\n" + json.dumps({**rec, "id": "b"}) + "\n")
    result = load_papers(path)
    assert result.fmt == "papercopilot"
    assert [p.id for p in result.papers] == ["a"]
    assert [(p.line, p.record) for p in result.problems] == [(3, 1)]
    assert "not closed" in result.problems[0].message


# --- CSV ------------------------------------------------------------------------------------------
def test_csv_with_quoted_multiline_fields_and_split_lists():
    result = load_papers(DATA / "papers.csv")
    assert (result.fmt, result.n_records, result.problems) == ("csv", 2, [])
    v1, v2 = result.papers
    assert v1.id == "v1" and v1.title == "Diffusion models, revisited"
    assert v1.abstract == ('We revisit diffusion models.\nThe abstract spans two lines, with '
                           '"quotes".')
    assert v1.authors == ["Ada Lovelace", "Alan Turing"]
    assert v1.keywords == ["diffusion", "generative models"]
    assert (v1.status, v1.venue, v1.year, v1.tldr) == ("Accept (Oral)", "ICLR 2026", 2026,
                                                       "A tldr.")
    assert (v2.authors, v2.url, v2.tldr, v2.year) == ([], "", "", 2026)


def test_csv_header_aliases_and_multiline_record_line():
    papers = {p.id: p for p in load_papers(DATA / "bad.csv").papers}
    assert papers["b7"].authors == ["Grace Hopper"]  # "Author" column -> authors
    assert papers["b6"].abstract == "Line one of b6.\nLine two of b6."
    assert papers["b6"].status == "Oral"


def test_csv_written_by_the_csv_module_round_trips(tmp_path):
    import csv

    path = tmp_path / "mine.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["title", "abstract", "url", "year", "primary_area"])
        w.writerow(["Ünïcode, commas", "An abstract with $x^2$,\n\"quotes\" and ; semicolons.",
                    "https://openreview.net/forum?id=XyZ12", "2024", "optimization"])
    (paper,) = load_papers(path).papers
    assert paper.id == "XyZ12"  # no id column: taken from the URL
    assert paper.title == "Ünïcode, commas"
    assert paper.abstract == "An abstract with $x^2$,\n\"quotes\" and ; semicolons."
    assert (paper.year, paper.primary_area) == (2024, "optimization")


@pytest.mark.parametrize("delimiter", [",", "\t", ";"])
def test_csv_from_a_spreadsheet_or_pandas(tmp_path, delimiter):
    """Excel writes ';' or tab delimiters; pandas writes list columns as "['a', 'b']" and int
    columns holding blanks as 2026.0."""
    import csv

    path = tmp_path / "export.csv"
    with path.open("w", newline="", encoding="utf-8-sig") as fh:
        w = csv.writer(fh, delimiter=delimiter)
        w.writerow(["", "id", "title", "abstract", "authors", "keywords", "year"])
        w.writerow(["0", "a1", "T; with semicolon", "A, with comma",
                    "['Ada Lovelace', 'Alan Turing']", '["graphs", "GNN"]', "2026.0"])
        w.writerow(["1", "a2", "T2", "A2", "[Ada]", "[RL] agents", ""])
    assert detect_format(path) == "csv"
    result = load_papers(path)
    assert result.problems == []
    a1, a2 = result.papers
    assert (a1.title, a1.abstract) == ("T; with semicolon", "A, with comma")
    assert a1.authors == ["Ada Lovelace", "Alan Turing"]
    assert a1.keywords == ["graphs", "GNN"]
    assert a1.year == 2026
    assert (a2.authors, a2.keywords, a2.year) == (["[Ada]"], ["[RL] agents"], None)


# --- detection and unreadable files ---------------------------------------------------------------
@pytest.mark.parametrize("name,fmt", [
    ("bad.jsonl", "jsonl"), ("bad_papercopilot.json", "papercopilot"),
    ("bad_openreview.json", "openreview"), ("papers.csv", "csv"), ("bad.csv", "csv"),
])
def test_detects_each_fixture_format(name, fmt):
    assert detect_format(DATA / name) == fmt
    assert load_papers(DATA / name).fmt == fmt


@pytest.mark.parametrize("content,fmt", [
    (b'\xef\xbb\xbf{"id": "a", "title": "T", "abstract": "A"}\n', "jsonl"),  # UTF-8 BOM
    (b'\n\n  {"id": "a", "title": "T", "abstract": "A"}\n', "jsonl"),
    (b'{"broken\n{"id": "a", "title": "T", "abstract": "A"}\n', "jsonl"),  # bad first line
    (b'{"count": 1, "notes": [{"id": "a", "content": {"title": {"value": "T"}, '
     b'"abstract": {"value": "A"}}}]}', "openreview"),  # one-line API response
    (b'[{"id": "a", "content": {"title": {"value": "T"}, "abstract": {"value": "A"}}}]',
     "openreview"),
    (b'[\n  {"id": "a", "title": "T", "abstract": "A", "author": "X;Y"}\n]', "papercopilot"),
    (b"Title,Abstract,ID\nT,A,a\n", "csv"),
])
def test_detects_format_from_content(tmp_path, content, fmt):
    path = tmp_path / "list.dat"
    path.write_bytes(content)
    assert detect_format(path) == fmt
    result = load_papers(path)
    assert (result.fmt, len(result.papers)) == (fmt, 1)
    assert (result.papers[0].title, result.papers[0].abstract) == ("T", "A")


def test_pretty_printed_openreview_response_with_keys_before_notes(tmp_path):
    path = tmp_path / "api.json"
    notes = [{"id": f"n{i}", "forum": f"n{i}", "content": {"title": {"value": f"T{i}"},
                                                          "abstract": {"value": "A"}}}
             for i in range(3)]
    path.write_text(json.dumps({"count": 3, "meta": {"x": [1, {"y": 2}]}, "notes": notes},
                               indent=2))
    result = load_papers(path)
    assert result.fmt == "openreview"
    assert [p.id for p in result.papers] == ["n0", "n1", "n2"]


@pytest.mark.parametrize("content,fmt,message", [
    (b"These are my notes about papers.\nNothing tabular here.\n", "auto",
     "unrecognised paper list format"),
    (b"", "auto", "the file is empty"),
    (b"   \n\n", "auto", "the file is empty"),
    ("title,abstract\nT,A\n".encode("utf-16"), "auto", "UTF-16; save it as UTF-8"),
    (b"PK\x03\x04\x00\x00binary", "auto", "looks like a binary file"),
    (b"{\n  \"papers\": []\n}\n", "auto", "neither JSONL nor an OpenReview response"),
    (b'{"id": "a", "title": "T", "abstract": "A"}\n', "csv", "lacks the column(s) 'title'"),
    (b'{"id": "a", "title": "T", "abstract": "A"}\n', "papercopilot", "does not start with '['"),
    (b'{"id": "a", "title": "T", "abstract": "A"}\n', "openreview", "without a 'notes' array"),
    (b'[{"id": "a", "title": "T", "abstract": "A"}]', "openreview", "try --format papercopilot"),
    (b'[{"id": "a", "content": {"title": {"value": "T"}}}]', "papercopilot",
     "use --format openreview"),
    (b"id,title,abstract\na,T,A\n", "jsonl", "this is not JSONL"),
    (b"id,title\na,T\n", "csv", "lacks the column(s) 'abstract'"),
    (b"id,title,abstract\n", "xml", "unknown format 'xml'"),
])
def test_files_that_are_no_paper_list_raise_a_clear_error(tmp_path, content, fmt, message):
    path = tmp_path / "list.dat"
    path.write_bytes(content)
    with pytest.raises(SourceFormatError, match=None) as info:
        load_papers(path, fmt)
    assert message in str(info.value)
    assert str(path) in str(info.value) or fmt == "xml"


def test_missing_file_raises():
    with pytest.raises(SourceFormatError, match="paper list not found"):
        load_papers(DATA / "no_such_file.jsonl")


def test_formats_lists_every_loader():
    assert FORMATS == ("auto", "jsonl", "papercopilot", "openreview", "csv")
    for fmt in FORMATS[1:]:
        with pytest.raises(SourceFormatError):  # each forced loader exists and checks its input
            load_papers(DATA / "not_a_list.txt", fmt)


def test_empty_json_array_loads_nothing(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("[]")
    assert load_papers(path) == LoadResult(papers=[], fmt="papercopilot", path=str(path))


# --- small helpers --------------------------------------------------------------------------------
@pytest.mark.parametrize("venue,expected", [
    ("ICLR 2026 Poster", ("ICLR 2026", "Accept (Poster)")),
    ("ICLR 2026 Oral", ("ICLR 2026", "Accept (Oral)")),
    ("ICLR 2023 notable top 5%", ("ICLR 2023", "Accept (Notable top 5%)")),
    ("Submitted to ICLR 2026", ("ICLR 2026", "Submitted")),
    ("ICLR 2026 Conference Submission", ("ICLR 2026", "Submitted")),
    ("ICLR 2026 Conference Withdrawn Submission", ("ICLR 2026", "Withdrawn")),
    ("ICLR 2026 Conference Desk Rejected Submission", ("ICLR 2026", "Desk Rejected")),
    ("NeurIPS 2024", ("NeurIPS 2024", "")),
    ("Some workshop", ("Some workshop", "")),
    ("", ("", "")),
])
def test_split_openreview_venue(venue, expected):
    assert split_openreview_venue(venue) == expected


@pytest.mark.parametrize("name,expected", [
    ("iclr2018_papercopilot.json", ("ICLR 2018", 2018)),
    ("iclr2026_accepted.jsonl", ("ICLR 2026", 2026)),
    ("nips2023.json", ("NeurIPS 2023", 2023)),
    ("paperlists_icml-2024.json", ("ICML 2024", 2024)),
    ("my_2024_list.jsonl", ("", None)),
    ("seed_papers.jsonl", ("", None)),
    ("iclr20180.json", ("", None)),
])
def test_venue_from_filename(name, expected):
    assert venue_from_filename(name) == expected


# --- several lists in one index (paperchat index FILE [FILE ...]) ---------------------------
def test_several_lists_keep_each_papers_venue_and_year(tmp_path):
    from index.sources import load_lists

    old = tmp_path / "iclr2018.jsonl"  # the file name names the venue and year
    old.write_text(json.dumps({"id": "o1", "title": "An old paper", "abstract": "Old."}) + "\n" +
                   json.dumps({"id": "s1", "title": "Replaced below", "abstract": "x"}) + "\n",
                   encoding="utf-8")
    plain = tmp_path / "mylist.jsonl"  # names neither
    plain.write_text(json.dumps({"id": "p1", "title": "A plain paper", "abstract": "P."}) + "\n" +
                     "not json\n", encoding="utf-8")
    seed = ROOT / "data" / "seed_papers.jsonl"
    got = load_lists([str(old), str(plain), str(seed)], "auto", None, None)
    assert isinstance(got, LoadResult)
    by_id = {p.id: p for p in got.papers}
    assert (by_id["o1"].venue, by_id["o1"].year) == ("ICLR 2018", 2018)
    assert (by_id["p1"].venue, by_id["p1"].year) == ("", None)
    assert by_id["ZrgxU8WMmG"].year == 2026 and len(got.papers) == 2 + 1 + 19
    assert got.n_records == 2 + 2 + 19
    # the bad line is reported with its file
    assert [str(p.line) + p.message.split(":")[0] for p in got.problems] == ["2mylist.jsonl"]
    # --venue/--year fill only what a list leaves empty
    got = load_lists([str(old), str(plain)], "auto", "NeurIPS 2020", 2020)
    by_id = {p.id: p for p in got.papers}
    assert (by_id["p1"].venue, by_id["p1"].year) == ("NeurIPS 2020", 2020)
    assert (by_id["o1"].venue, by_id["o1"].year) == ("ICLR 2018", 2018)


def test_one_list_is_passed_to_the_build_as_its_path():
    from index.sources import load_lists

    assert load_lists(["x.jsonl"], "auto", None, None) == "x.jsonl"


def test_a_missing_list_among_several_is_named(tmp_path):
    from index.sources import load_lists

    with pytest.raises(SourceFormatError, match="nope.jsonl"):
        load_lists([str(ROOT / "data" / "seed_papers.jsonl"), str(tmp_path / "nope.jsonl")],
               "auto", None, None)
