"""Reviewer ratings: loading them from every format (malformed ones reported by line, the paper
kept), the rating and author filters (both search sides agree), cards, terminal references and
``ask --json``, chunk metadata, metadata-only re-indexing, and a real-embedder search under
``rating>=6``."""

from __future__ import annotations

import json

import pytest

from index.sources import load_papers
from rag.types import Paper
from tests.conftest import shared




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


# --- loading --------------------------------------------------------------------------------------
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


# --- the rating and author filters ----------------------------------------------------------------
from rag.filters import FilterError, Filters  # noqa: E402

RATED = Paper("r", "t", "x", ratings=[5, 6, 7])          # mean 6.0
HIGH = Paper("h", "t", "x", ratings=[8, 7])              # mean 7.5
THIRDS = Paper("q", "t", "x", ratings=[5, 6, 6])         # mean 17/3, shown 5.67
UNRATED = Paper("u", "t", "x", confidences=[4])          # confidences but no ratings


@pytest.mark.parametrize("item,expected", [
    ("rating>=6", {"r", "h"}),
    ("rating>6", {"h"}),
    ("rating<=6", {"r", "q"}),
    ("rating<6", {"q"}),
    ("rating=6", {"r"}),
    ("rating==6", {"r"}),
    ("rating=7.5", {"h"}),
    ("rating>=5.67", {"r", "h", "q"}),  # the shown (rounded) mean is compared
    ("rating>5.67", {"r", "h"}),
    ("rating<0", set()),
    ("rating>=0", {"r", "h", "q"}),     # unrated never matches, whatever the threshold
    ("rating <= 100", {"r", "h", "q"}),
    ("ratings>=7", {"h"}),
])
def test_rating_filter_semantics(item, expected):
    filters = Filters.parse([item])
    assert {p.id for p in (RATED, HIGH, THIRDS, UNRATED) if filters.matches(p)} == expected


def test_several_rating_conditions_form_a_range():
    filters = Filters.parse(["rating>=5.5", "rating<7"])
    assert {p.id for p in (RATED, HIGH, THIRDS, UNRATED) if filters.matches(p)} == {"r", "q"}


@pytest.mark.parametrize("value,authors,expected", [
    ("Bengio", ["Yoshua Bengio", "Aaron Courville"], True),
    ("bengio", ["Yoshua Bengio"], True),
    ("Yoshua Bengio", ["YOSHUA BENGIO"], True),
    ("yoshua  bengio", ["Yoshua Bengio"], True),  # spaces collapsed
    ("Ben", ["Yoshua Bengio"], False),              # not a whole word
    ("Samy Bengio", ["Yoshua Bengio"], False),
    ("Jurgen Schmidhuber", ["Jürgen Schmidhuber"], True),   # accents folded, both ways
    ("Jürgen", ["Jurgen Schmidhuber"], True),
    ("Prugel-Bennett", ["Adam Prügel-Bennett"], True),
    ("Bennett", ["Adam Prügel-Bennett"], True),     # a hyphen separates words
    ("Pr\u00fcgel", ["Adam Pru\u0308gel-Bennett"], True),  # NFC value, NFD name
    ("Hinton", [], False),                           # no authors (ICLR 2026): never
    ("a.", ["Jane A. Doe"], True),
    # one person written several ways: a middle name, a nickname, an umlaut's "e"
    ("Zack Lipton", ["Zack Chase Lipton"], True),
    ("Zack Lipton", ["Zachary C. Lipton"], True),
    ("Samuel Schoenholz", ["Sam S. Schoenholz"], True),
    ("Samuel Schoenholz", ["Samuel Stern Schoenholz"], True),
    ("Sam Bengio", ["Samy Bengio"], False),             # no nickname of "Sam"
    ("Zack Lipton", ["Zack Chase Smith"], False),       # another surname
    ("Bernhard Schoelkopf", ["Bernhard Schölkopf"], True),
])
def test_author_filter(value, authors, expected):
    paper = Paper("a", "t", "x", authors=authors)
    assert Filters.parse([f"author={value}"]).matches(paper) is expected


def test_several_authors_mean_any_of():
    paper = Paper("a", "t", "x", authors=["Geoffrey Hinton"])
    assert Filters.parse(["author=LeCun", "author=Hinton"]).matches(paper)
    assert not Filters.parse(["author=LeCun", "authors=Bengio"]).matches(paper)


@pytest.mark.parametrize("items,expected", [
    (["rating>=6"], ["rating>=6"]),
    (["rating >= 6.0"], ["rating>=6"]),
    (["Rating<4.50"], ["rating<4.5"]),
    (["rating==6"], ["rating=6"]),
    (["rating>6", "rating<=8"], ["rating>6", "rating<=8"]),
    (["author=Yoshua Bengio"], ["author=Yoshua Bengio"]),
    (["authors=Bengio", "status=Oral", "year=2018"], ["author=Bengio", "status=Oral", "year=2018"]),
    (["primary_area=a<b"], ["primary_area=a<b"]),  # '<' inside a value is the value's
])
def test_as_strings_round_trip(items, expected):
    filters = Filters.parse(items)
    assert filters.as_strings() == expected
    assert Filters.parse(filters.as_strings()) == filters


@pytest.mark.parametrize("item,message", [
    ("rating>=abc", "rating filter needs a number, got 'abc' (e.g. rating>=6)"),
    ("rating>=", "rating filter needs a number, got ''"),
    ("rating>=nan", "rating filter needs a number, got 'nan'"),
    ("rating<inf", "rating filter needs a number, got 'inf'"),
    ("rating~6", "rating filter 'rating~6' needs a comparison: rating>=6, rating>6, rating<=5, "
                 "rating<4 or rating=6"),
    ("rating!=6", "needs a comparison"),
    ("rating", "quote it in a shell: --filter 'rating>=6'"),  # what bash leaves of rating>=6
    ("year>2020", "only rating takes a comparison"),
    ("author=", "has an empty value"),
    ("rating_avg>=6", "unknown filter field 'rating_avg'"),
    ("reviewer=x", "use one of status, primary_area, venue, year, keyword, rating, author"),
])
def test_bad_rating_and_author_filters_are_one_clear_line(item, message):
    with pytest.raises(FilterError) as err:
        Filters.parse([item])
    assert message in str(err.value) and "\n" not in str(err.value)


def test_merged_keeps_both_sets_once_and_changes_neither():
    a = Filters.parse(["status=Oral", "rating>=6"])
    b = Filters.parse(["status=oral", "rating>=6.0", "author=Bengio", "status=poster"])
    m = a.merged(b)
    assert m.as_strings() == ["status=Oral", "status=poster", "rating>=6", "author=Bengio"]
    assert a.as_strings() == ["status=Oral", "rating>=6"]
    assert b.as_strings() == ["status=oral", "status=poster", "rating>=6", "author=Bengio"]
    assert a.merged(None) == a and Filters().merged(b).as_strings() == b.as_strings()
    assert Filters.parse(["author=Jürgen"]).merged(Filters.parse(["author=jurgen"])) \
        .as_strings() == ["author=Jürgen"]


def test_without_removes_named_entries_only():
    f = Filters.parse(["status=Oral", "rating>=6", "rating<9", "author=Bengio"])
    assert f.without(["rating>=6"]).as_strings() == ["status=Oral", "rating<9", "author=Bengio"]
    assert f.without(["status=oral", "author=Bengio", "rating>=6.0", "rating<9"]) == Filters()
    assert not f.without(f.as_strings())
    assert f.without(["rating>=7", "venue=ICLR", "not a filter", "rating~1"]) == f
    assert f.as_strings() == ["status=Oral", "rating>=6", "rating<9", "author=Bengio"]  # unchanged


@pytest.mark.parametrize("argv_filter,message", [
    ("rating>=abc", "rating filter needs a number, got 'abc' (e.g. rating>=6)"),
    ("rating", "rating filter 'rating' needs a comparison"),  # bash ate an unquoted '>=6'
])
def test_cli_rating_filter_errors_are_one_line(tmp_path, monkeypatch, capsys, argv_filter,
                                               message):
    from rag.cli import main
    from rag.cli.parser import _parser

    assert _parser().parse_args(["ask", "q", "--filter", "rating>=6"]).filter == ["rating>=6"]
    monkeypatch.setenv("PAPERCHAT_HOME", str(tmp_path / "home"))
    assert main(["ask", "what is new?", "--filter", argv_filter]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"paperchat: error: {message}")


# --- both search sides agree (fake embedder, real Chroma) -----------------------------------------
#: ratings given to the seed papers by position (None: unrated); means 3.0 ... 8.0
SEED_RATINGS = [[3], [4, 5], [6, 6, 6, 6], [5, 7], [8], None, [6, 7, 5], [5, 6, 6], [7, 8, 9],
                [2, 4], None, [6], [5.5, 6.5], [10, 6], [1, 3, 5], [6, 8], None, [4, 4, 5], [7]]
SEED_AUTHORS = {0: ["Yoshua Bengio", "Aaron Courville"], 3: ["Jürgen Schmidhuber"],
                7: ["Samy Bengio"], 12: ["Jane Bengio-Smith"]}


@pytest.fixture
def rated_index(settings, fake_embedder, seed_papers):
    from dataclasses import replace

    from index.build import build_index
    from index.source_records import LoadResult
    from rag.retrieve.retriever import Retriever

    assert len(seed_papers) == len(SEED_RATINGS)
    papers = [replace(p, ratings=list(r or []), authors=SEED_AUTHORS.get(i, []))
              for i, (p, r) in enumerate(zip(seed_papers, SEED_RATINGS))]
    build_index(LoadResult(papers=papers), settings=settings, embedder=fake_embedder,
                progress=False, log=lambda m: None)
    return papers, Retriever.open(settings, fake_embedder)


def plain_mean(ratings):
    return round(sum(ratings) / len(ratings), 2) if ratings else None


AGREEMENT = [
    (["rating>=6"], lambda p, m: m is not None and m >= 6),
    (["rating>6"], lambda p, m: m is not None and m > 6),
    (["rating<5"], lambda p, m: m is not None and m < 5),
    (["rating<=5.67"], lambda p, m: m is not None and m <= 5.67),
    (["rating=6"], lambda p, m: m == 6),
    (["rating>=5", "rating<7"], lambda p, m: m is not None and 5 <= m < 7),
    # "Jane Bengio-Smith" too: a hyphen separates words
    (["author=Bengio"], lambda p, m: p.id in {0, 7, 12}),
    (["author=bengio", "rating>=6"],
     lambda p, m: p.id in {0, 7, 12} and m is not None and m >= 6),
    (["author=Jurgen Schmidhuber"], lambda p, m: p.id == 3),
    (["rating>=6", "status=poster"], lambda p, m: m is not None and m >= 6),  # seed: all posters
    (["rating>=6", "primary_area=optimization"],
     lambda p, m: m is not None and m >= 6 and p.primary_area == "optimization"),
]


def _expected(papers, test):
    """Paper ids chosen by ``test(paper with its position as id, plain mean)``."""
    from dataclasses import replace

    return {p.id for i, p in enumerate(papers)
            if test(replace(p, id=i), plain_mean(p.ratings))}


def _ids_under(retriever, where):
    got = retriever.store._col.get(where=where, include=["metadatas"]) if where else \
        retriever.store._col.get(include=["metadatas"])
    return {m["paper_id"] for m in got["metadatas"]}


@pytest.mark.parametrize("items,test", AGREEMENT, ids=[" ".join(a[0]) for a in AGREEMENT])
def test_matches_and_where_agree_on_a_real_store(rated_index, items, test):
    papers, retriever = rated_index
    filters = Filters.parse(items)
    expected = _expected(papers, test)
    assert 0 < len(expected) < len(papers) or items == ["rating>=6", "status=poster"]
    assert {pid for pid, p in retriever.papers.items() if filters.matches(p)} == expected
    allowed = {pid for pid, p in retriever.papers.items() if filters.matches(p)}
    assert _ids_under(retriever, filters.where(allowed)) == expected
    if all(k in ("rating", "status", "year") for k in filters.values):
        # no ids: ratings from the chunks' own metadata give the same papers
        assert _ids_under(retriever, filters.where()) == expected
    res = retriever.search("learning", k=len(papers), filters=filters, evidence=False)
    assert {h.id for h in res.hits} == expected
    assert set(res.dense.ids) <= expected and set(res.lexical.ids) <= expected


def test_rating_filter_works_on_an_index_without_rating_chunk_metadata(rated_index):
    """Indexes written before ratings were in the chunk metadata filter through the catalog."""
    papers, retriever = rated_index
    col = retriever.store._col
    got = col.get(include=["metadatas"])
    col.update(ids=got["ids"], metadatas=[{**m, "rating": None, "n_ratings": None}
                                          for m in got["metadatas"]])
    assert all("rating" not in m for m in col.get(include=["metadatas"])["metadatas"])
    expected = _expected(papers, lambda p, m: m is not None and m >= 6)
    res = retriever.search("learning", k=len(papers), filters=Filters.parse(["rating>=6"]),
                           evidence=False)
    assert {h.id for h in res.hits} == expected and len(expected) == 10


# --- cards, terminal references, ask --json -------------------------------------------------------
from rag.types import Answer, Citation, Hit  # noqa: E402


@pytest.mark.parametrize("ratings,text", [
    ([4, 6, 6, 8], "rating 6.0 · 4 reviews, 4–8"),
    ([6], "rating 6.0 · 1 review"),
    ([5, 6, 6], "rating 5.67 · 3 reviews, 5–6"),
    ([5.5, 7.25], "rating 6.38 · 2 reviews, 5.5–7.25"),
    ([3, 3], "rating 3.0 · 2 reviews, 3–3"),
])
def test_rating_text(ratings, text):
    assert Paper("a", "t", "x", ratings=ratings).rating_text() == text


def test_card_shows_the_rating_and_nothing_when_unrated():
    cards = pytest.importorskip("ui.cards")
    rated = Paper("p1", "Title <b>x</b>", "An abstract.", status="Accept (Poster)",
                  ratings=[4, 6, 6, 8], confidences=[3, 4, 4, 4])
    out = cards.card_html(1, Hit(rated, 0.5, evidence=["An abstract."]))
    assert '<span class="pc-rating" ' in out and ">rating 6.0 · 4 reviews, 4–8</span>" in out
    assert "mean reviewer confidence 3.75" in out
    assert "<b>x</b>" not in out  # the card still escapes what the list supplies
    one = cards.card_html(2, Hit(Paper("p2", "T", "A.", ratings=[6]), 0.5))
    assert ">rating 6.0 · 1 review</span>" in one and "mean reviewer confidence" not in one
    unrated = cards.card_html(3, Hit(Paper("p3", "T", "A.", confidences=[4]), 0.5))
    assert "pc-rating" not in unrated and "rating " not in unrated and " review" not in unrated


def _answer(papers, **kw) -> Answer:
    hits = [Hit(p, 1.0 - i / 10, evidence=["An abstract."]) for i, p in enumerate(papers)]
    return Answer(question="q", standalone_question="q", text="An answer [1].",
                  citations=[Citation(1, papers[0])], hits=hits, **kw)


def test_terminal_references_show_the_rating():
    from rag.cli.chat import format_answer

    papers = [Paper("a", "First", "A.", venue="ICLR 2026", status="Accept (Poster)",
                    url="https://openreview.net/forum?id=a", ratings=[4, 6, 6, 8]),
              Paper("b", "Second", "B.", url="https://openreview.net/forum?id=b", ratings=[6]),
              Paper("c", "Third", "C.", url="https://openreview.net/forum?id=c")]
    ans = _answer(papers, refused=True)
    lines = format_answer(ans).splitlines()
    assert "[1] First. ICLR 2026 Accept (Poster). rating 6.0 · 4 reviews, 4–8. " \
           "https://openreview.net/forum?id=a" in lines
    assert "[2] Second. rating 6.0 · 1 review. https://openreview.net/forum?id=b" in lines
    assert "[3] Third. https://openreview.net/forum?id=c" in lines
    cited = format_answer(_answer(papers)).splitlines()
    assert cited[-1] == ("[1] First. ICLR 2026 Accept (Poster). rating 6.0 · 4 reviews, 4–8. "
                         "https://openreview.net/forum?id=a")


def test_answer_json_hits_carry_the_rating():
    from rag.compose.rendering import answer_json

    papers = [Paper("a", "First", "A.", ratings=[4, 6, 6, 8], confidences=[3, 3, 3, 3]),
              Paper("b", "Second", "B.", ratings=[5, 6, 6]),
              Paper("c", "Third", "C.")]
    out = json.loads(json.dumps(answer_json(_answer(papers))))
    assert [h["rating"] for h in out["hits"]] == [
        {"mean": 6.0, "n": 4, "min": 4.0, "max": 8.0},
        {"mean": 5.67, "n": 3, "min": 5.0, "max": 6.0},
        None]
    assert all(set(h) == {"id", "title", "score", "status", "primary_area", "url", "evidence",
                          "rating", "venue", "year"} for h in out["hits"])
    assert [h["id"] for h in out["hits"]] == ["a", "b", "c"]
    assert out["hits"][0]["evidence"] == ["An abstract."] and out["citations"][0]["id"] == "a"


# --- a real index (real embedder, real Chroma) of 60 accepted ICLR 2026 papers --------------------
N_REAL = 60


def _mean(ratings):
    return round(sum(ratings) / len(ratings), 2) if ratings else None


@pytest.fixture
def real_rated(tmp_path, monkeypatch, real_embedder):
    """60 records of iclr2026_accepted.jsonl (four of them stripped of their ratings) indexed
    with the real embedder under a tmp PAPERCHAT_HOME; returns (settings, path, raw records)."""
    from index.build import build_index
    from rag.settings import Settings

    source = shared("iclr2026_accepted.jsonl")
    with source.open(encoding="utf-8") as fh:
        records = [json.loads(next(fh)) for _ in range(N_REAL)]
    for r in records[5:60:15]:  # papers 5, 20, 35, 50: unrated
        r["ratings_2025_11_22"] = []
    path = write_jsonl(tmp_path / "iclr2026_60.jsonl", records)
    monkeypatch.setenv("PAPERCHAT_HOME", str(tmp_path / "home"))
    settings = Settings(home=tmp_path / "home")
    summary = build_index(path, settings=settings, embedder=real_embedder, name="rated",
                          progress=False, log=lambda m: None)
    assert (summary.papers, summary.embedded, summary.skipped) == (N_REAL, N_REAL, 0)
    return settings, path, records


def _chunk_metas(settings, name="rated"):
    from index.reader import open_store

    store = open_store(settings.index_dir(name), settings, name, create=False)
    return store._col.get(include=["metadatas"])["metadatas"]


@pytest.mark.integration
def test_real_index_rating_filter_and_chunk_metadata(real_rated, real_embedder):
    from rag.retrieve.retriever import Retriever

    settings, _, records = real_rated
    means = {r["id"]: _mean(r["ratings_2025_11_22"]) for r in records}
    high = {pid for pid, m in means.items() if m is not None and m >= 6}
    assert 0 < len(high) < N_REAL - 4 and sum(m is None for m in means.values()) == 4

    metas = _chunk_metas(settings)
    assert {m["paper_id"] for m in metas} == set(means)
    for m in metas:
        ratings = next(r["ratings_2025_11_22"] for r in records if r["id"] == m["paper_id"])
        assert m["n_ratings"] == len(ratings)
        if ratings:
            assert m["rating"] == pytest.approx(means[m["paper_id"]])
        else:
            assert "rating" not in m

    retriever = Retriever.open(settings, real_embedder, "rated")
    filters = Filters.parse(["rating>=6"])
    for question in ("large language models reasoning", "graph neural networks",
                     "diffusion models for image generation"):
        res = retriever.search(question, k=10, filters=filters, evidence=False)
        assert len(res.hits) == min(10, len(high))
        assert {h.id for h in res.hits} <= high, question
        assert all(h.paper.rating["mean"] >= 6 for h in res.hits)
    everything = retriever.search("learning", k=N_REAL, filters=filters, evidence=False)
    assert {h.id for h in everything.hits} <= high
    unfiltered = retriever.search("learning", k=N_REAL, evidence=False)
    assert {h.id for h in unfiltered.hits} - high  # without the filter, others come back


@pytest.mark.integration
def test_real_index_new_ratings_are_a_metadata_only_update(real_rated, real_embedder):
    from index.build import build_index
    from rag.retrieve.retriever import Retriever

    settings, path, records = real_rated
    means = {r["id"]: _mean(r["ratings_2025_11_22"]) for r in records}
    up = next(r for r in records if means[r["id"]] is not None and means[r["id"]] < 6)
    down = next(r for r in records if means[r["id"]] is not None and means[r["id"]] >= 6)
    gone = next(r for r in records
                if r is not down and r is not up and means[r["id"]] is not None)
    up["ratings_2025_11_22"], down["ratings_2025_11_22"] = [9, 9], [1, 2]
    gone["ratings_2025_11_22"] = []
    write_jsonl(path, records)

    summary = build_index(path, settings=settings, embedder=real_embedder, name="rated",
                          progress=False, log=lambda m: None)
    assert (summary.embedded, summary.updated_metadata, summary.unchanged) == (0, 3, N_REAL - 3)
    by_paper = {}
    for m in _chunk_metas(settings):
        by_paper.setdefault(m["paper_id"], set()).add((m.get("rating"), m["n_ratings"]))
    assert by_paper[up["id"]] == {(9.0, 2)}
    assert by_paper[down["id"]] == {(1.5, 2)}
    assert by_paper[gone["id"]] == {(None, 0)}

    retriever = Retriever.open(settings, real_embedder, "rated")
    filters = Filters.parse(["rating>=6"])
    found_up = retriever.search(up["title"], k=5, filters=filters, evidence=False)
    assert found_up.hits[0].id == up["id"]
    for r in (down, gone):
        res = retriever.search(r["title"], k=N_REAL, filters=filters, evidence=False)
        assert r["id"] not in {h.id for h in res.hits}
    assert down["id"] in {h.id for h in
                          retriever.search(down["title"], k=5, evidence=False).hits}


@pytest.mark.parametrize("value,authors,expected", [
    ("Quoc Le", ["Quoc V. Le"], True),                  # the lists spell one person both ways
    ("Geoffrey E. Hinton", ["Geoffrey E Hinton"], True),
    ("Geoffrey Hinton", ["Geoffrey E. Hinton"], True),
    ("Quoc Le", ["Samuel L. Smith and Quoc V. Le"], True),  # a broken author string
    ("Quoc Le", ["Quoc Lee"], False),
])
def test_author_filter_leaves_initials_out(value, authors, expected):
    paper = Paper("a", "t", "x", authors=authors)
    assert Filters.parse([f"author={value}"]).matches(paper) is expected
