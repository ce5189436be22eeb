"""The conference map, rating histogram and per-area table (rag.conference.mapfigure) and ``paperchat map``.

Layouts here are a PCA of the fake embedder's vectors (:func:`pca_layout`), built as
:class:`index.layout.Layout` when that module is there, else as a look-alike with the same fields;
``paperchat map`` runs against the real :func:`index.layout.ensure_layout` when it exists, else
against a stand-in module that serves the same PCA layout.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest

from conftest import SEED, FakeEmbedder
from rag.conference import area_table, histogram, plotting
from rag.conference import mapfigure as mf
from rag.filters import Filters
from rag.types import Answer, Citation, Hit, Paper

try:  # the layout API (index.layout); until it exists, a look-alike with the same fields
    from index.layout import Layout
    from index.layout_labels import Label
except ImportError:  # pragma: no cover - depends on the tree
    @dataclass
    class Label:  # type: ignore[no-redef]
        text: str
        x: float
        y: float
        size: int

    @dataclass
    class Layout:  # type: ignore[no-redef]
        ids: list
        xy: np.ndarray
        labels: list
        method: str
        fingerprint: str


XSS = "<script>alert('t')</script> & <b>bold</b> $\\alpha$-Nets"


def pca_layout(papers: list[Paper], extra_ids: tuple[str, ...] = ()) -> Layout:
    """2-d PCA of FakeEmbedder vectors of title + abstract; one label per primary area at the
    mean of its papers. ``extra_ids``: ids on the layout that are no paper (a stale layout)."""
    vecs = FakeEmbedder().embed([f"{p.title}. {p.abstract}" for p in papers])
    centred = vecs - vecs.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    xy = (centred @ vt[:2].T).astype(np.float32)
    ids = [p.id for p in papers] + list(extra_ids)
    xy = np.vstack([xy, np.full((len(extra_ids), 2), 9.0, dtype=np.float32)])
    labels = []
    for area in sorted({p.primary_area for p in papers if p.primary_area}):
        rows = [i for i, p in enumerate(papers) if p.primary_area == area]
        cx, cy = xy[rows].mean(axis=0)
        labels.append(Label(area, float(cx), float(cy), len(rows)))
    return Layout(ids=ids, xy=xy, labels=labels, method="pca", fingerprint="test")


def make_papers() -> list[Paper]:
    """Twelve papers: every decision, three areas (one empty), some unrated, one hostile title."""
    spec = [  # id, status, area, ratings
        ("o1", "Accept (Oral)", "optimization", [8, 8, 6]),
        ("s1", "Accept (Spotlight)", "optimization", [6, 8]),
        ("p1", "Accept (Poster)", "generative models", [6, 6, 4]),
        ("p2", "Accept (Poster)", "generative models", []),
        ("p3", "Accept (Conditional Poster)", "generative models", [5, 6]),
        ("a1", "Accept", "learning theory", [6]),
        ("r1", "Not accepted (Reject, or withdrawn after 2025-11-22)", "optimization", [2, 4]),
        ("r2", "Reject", "learning theory", [4, 4, 2]),
        ("r3", "Reject", "generative models", [3, 5, 1, 3]),
        ("w1", "Withdrawn (by 2025-11-22)", "learning theory", []),
        ("x1", "", "", [5]),
        ("h1", "Accept (Poster)", "optimization", [7, 5]),
    ]
    out = []
    for pid, status, area, ratings in spec:
        title = XSS if pid == "h1" else f"Paper {pid} on {area or 'nothing'} with a title"
        out.append(Paper(pid, title, f"Abstract of {pid} about {area}.", status=status,
                         primary_area=area, ratings=[float(r) for r in ratings]))
    return out


@pytest.fixture
def papers() -> dict[str, Paper]:
    return {p.id: p for p in make_papers()}


@pytest.fixture
def layout(papers) -> Layout:
    return pca_layout(list(papers.values()), extra_ids=("gone",))


def point_traces(fig):
    """The coloured traces (not the dimmed one, not the highlight)."""
    return [t for t in fig.data if t.meta not in (plotting.DIMMED_ROLE, plotting.HIGHLIGHT_ROLE)]


def coords(layout) -> dict[str, tuple[float, float]]:
    return {pid: (float(x), float(y)) for pid, (x, y) in zip(layout.ids, layout.xy)}


# --- the map -------------------------------------------------------------------------------------
def test_every_paper_is_one_point_at_its_layout_place(layout, papers):
    fig = mf.map_figure(layout, papers)
    ids = [pid for t in point_traces(fig) for pid in t.customdata]
    assert sorted(ids) == sorted(papers)  # "gone" (on the layout, no paper) is not drawn
    where = coords(layout)
    for t in point_traces(fig):
        assert t.type == "scattergl"
        for pid, x, y in zip(t.customdata, t.x, t.y):
            assert (float(x), float(y)) == where[pid]
    assert fig.layout.meta["points"] == len(papers)
    assert [a.text for a in fig.layout.annotations] == sorted(
        {p.primary_area for p in papers.values() if p.primary_area})
    sizes = {a.text: a.font.size for a in fig.layout.annotations}
    assert sizes["optimization"] == 16 and sizes["learning theory"] == 10 + round(6 * 0.75 ** .5)


@pytest.mark.parametrize("color_by, key", [
    ("primary_area", lambda p: p.primary_area or plotting.NO_AREA),
    ("area", lambda p: p.primary_area or plotting.NO_AREA),
    ("decision", mf.decision),
])
def test_one_colour_per_area_or_decision(layout, papers, color_by, key):
    fig = mf.map_figure(layout, papers, color_by=color_by)
    groups = {}
    for p in papers.values():
        groups.setdefault(key(p), set()).add(p.id)
    seen = {}
    for t in point_traces(fig):
        values = {key(papers[pid]) for pid in t.customdata}
        assert len(values) == 1, (t.name, values)
        value = values.pop()
        assert set(t.customdata) == groups[value]
        assert t.name.startswith(plotting.esc(value)[:20]) and f"({len(t.customdata)})" in t.name
        seen[value] = t.marker.color
    assert set(seen) == set(groups)
    assert len(set(seen.values())) == len(seen)  # distinct colours
    if color_by == "decision":
        assert set(seen) == {"oral", "spotlight", "poster", "accepted", "rejected", "withdrawn",
                             "other"}
        assert seen["oral"] == mf.DECISION_COLORS["oral"]


@pytest.mark.parametrize("status, decision", [
    ("Accept (Oral)", "oral"), ("Accept (Conditional Oral)", "oral"),
    ("Accept (Spotlight)", "spotlight"), ("Accept (Conditional Poster)", "poster"),
    ("Accept", "accepted"), ("Reject", "rejected"),
    ("Not accepted (Reject, or withdrawn after 2025-11-22)", "rejected"),
    ("Withdrawn (by 2025-11-22)", "withdrawn"), ("", "other"), ("Workshop", "other"),
])
def test_decision_of_a_status(status, decision):
    assert mf.decision(Paper("x", "t", "a", status=status)) == decision


def test_hover_shows_title_decision_and_rating_with_html_escaped(layout, papers):
    fig = mf.map_figure(layout, papers)
    hover = {pid: (h, t) for tr in point_traces(fig)
             for pid, h, t in zip(tr.customdata, tr.hovertext, tr.text)}
    title, facts = hover["h1"]
    assert "<script>" not in title and "<b>bold" not in title
    assert title.startswith("&lt;script&gt;alert('t')&lt;/script&gt; &amp; &lt;b&gt;bold")
    assert facts == "poster, rating 6"
    assert hover["p2"][1] == "poster, unrated" and hover["r3"][1] == "rejected, rating 3"
    assert hover["o1"][1] == "oral, rating 7.33"
    extras = {tr.hovertemplate.removeprefix("<b>%{hovertext}</b><br>%{text}<extra>")
              for tr in point_traces(fig)}
    assert extras == {f"{a}</extra>" for a in ("optimization", "generative models",
                                                 "learning theory", plotting.NO_AREA)}
    assert "<script>" not in fig.to_json() and "<script>" not in json.dumps(
        [a.text for a in fig.layout.annotations])


def test_long_titles_are_cut_to_two_lines():
    title = "A " + "very " * 60 + "long title"
    lines = plotting.hover_title(title)
    assert len(lines) == plotting.HOVER_LINES and all(len(line) <= plotting.HOVER_WIDTH for line in lines)
    assert lines[-1].endswith("…")
    assert plotting.hover_title("Short title") == ["Short title"]
    assert plotting.hover_title("x" * 130) == ["x" * 60, "x" * 59 + "…"]  # no space: cut anyway
    assert mf.hover_text(Paper("p", title, "a"), 3).startswith("[3] A very")


@pytest.mark.parametrize("flt", [["status=oral"], ["primary_area=optimization"],
                                 ["rating>=5"], ["status=accepted", "primary_area=optimization"]])
def test_filters_dim_the_papers_that_do_not_match(layout, papers, flt):
    filters = Filters.parse(flt)
    fig = mf.map_figure(layout, papers, filters=filters)
    match = {pid for pid, p in papers.items() if filters.matches(p)}
    shown = {pid for t in point_traces(fig) for pid in t.customdata}
    assert shown == match
    dimmed = [t for t in fig.data if t.meta == plotting.DIMMED_ROLE]
    assert len(dimmed) == 1 and fig.data[0].meta == plotting.DIMMED_ROLE  # drawn underneath
    where = coords(layout)
    assert sorted(zip(map(float, dimmed[0].x), map(float, dimmed[0].y))) == \
        sorted(where[pid] for pid in papers if pid not in match)  # float32 both sides: exact
    assert dimmed[0].hoverinfo == "skip" and dimmed[0].customdata is None
    assert fig.layout.meta["dimmed"] == len(papers) - len(match)


def test_no_filters_dim_nothing(layout, papers):
    for filters in (None, Filters.parse([])):
        fig = mf.map_figure(layout, papers, filters=filters)
        assert not [t for t in fig.data if t.meta == plotting.DIMMED_ROLE]


def test_the_answers_papers_are_drawn_on_top_with_their_numbers(layout, papers):
    fig = mf.map_figure(layout, papers, highlight=[(1, "r2"), (3, "h1"), (4, "gone"),
                                                   (5, "nope")])
    top = fig.data[-1]
    assert top.meta == plotting.HIGHLIGHT_ROLE and top.type == "scattergl"  # on top of the others
    assert list(top.text) == ["[1]", "[3]"] and list(top.customdata) == ["r2", "h1"]
    where = coords(layout)
    assert [(float(x), float(y)) for x, y in zip(top.x, top.y)] == [where["r2"], where["h1"]]
    assert top.marker.size > point_traces(fig)[0].marker.size
    assert top.hovertext[1].startswith("<b>[3] &lt;script&gt;")
    labels = [(a.text, a.x, a.y) for a in fig.layout.annotations if a.name == plotting.HIGHLIGHT_ROLE]
    assert labels == [("<b>[1]</b>", *where["r2"]), ("<b>[3]</b>", *where["h1"])]
    assert len([t for t in fig.data if t.meta == plotting.HIGHLIGHT_ROLE]) == 1
    assert mf.map_figure(layout, papers, highlight=[]).data[-1].meta != plotting.HIGHLIGHT_ROLE


def test_bad_colour_or_layout_shape_is_a_value_error(layout, papers):
    with pytest.raises(ValueError, match="color_by"):
        mf.map_figure(layout, papers, color_by="rating")
    bad = Layout(ids=["o1"], xy=np.zeros((2, 2), np.float32), labels=[], method="x",
                 fingerprint="x")
    with pytest.raises(ValueError, match="shape"):
        mf.map_figure(bad, papers)


def test_answer_highlight_numbers_the_cited_papers_else_the_hits():
    a, b, c = (Paper(i, i, "x") for i in "abc")
    hits = [Hit(a, 1.0), Hit(b, 0.5), Hit(c, 0.2)]
    cited = Answer("q", "q", "x [3] y [1]", [Citation(3, c), Citation(1, a)], hits)
    assert mf.answer_highlight(cited) == [(1, "a"), (3, "c")]
    assert mf.answer_highlight(Answer("q", "q", "list", [], hits)) == [(1, "a"), (2, "b"),
                                                                         (3, "c")]
    assert mf.answer_highlight(Answer("q", "q", "no", [], hits, refused=True)) == []
    assert mf.answer_highlight(None) == []


# --- histogram -----------------------------------------------------------------------------------
def test_histogram_counts_rated_papers_and_says_how_many(papers):
    fig = histogram.rating_histogram(papers)
    bars = fig.data[0]
    rated = [p for p in papers.values() if p.ratings]
    assert sum(bars.y) == len(rated) == 10
    width = histogram.BIN_WIDTH
    for center, count in zip(bars.x, bars.y):
        lo, hi = center - width / 2, center + width / 2
        expected = sum(1 for p in rated
                       if lo - 1e-9 <= sum(p.ratings) / len(p.ratings) < hi - 1e-9)
        assert count == expected, (center, count, expected)
    title = fig.layout.title.text
    assert "10 rated papers" in title and "2 unrated, not shown" in title
    assert fig.layout.meta == {"rated": 10, "unrated": 2}


def test_histogram_marks_the_answers_rated_papers(papers):
    fig = histogram.rating_histogram(papers, highlight=[(1, "o1"), (2, "p2"), (3, "a1"), (5, "r1"),
                                                 (6, "r3"), (7, "nope")])
    marks = [t for t in fig.data if t.meta == plotting.HIGHLIGHT_ROLE]
    assert len(marks) == 1
    # p2 is unrated, "nope" is no paper; r1 and r3 (both 3.0) share a bin and one marker
    assert list(marks[0].text) == ["[5] [6]", "[3]", "[1]"]
    assert list(marks[0].customdata) == ["r1 r3", "a1", "o1"]
    bars = dict(zip(fig.data[0].x, fig.data[0].y))
    assert [round(x - histogram.BIN_WIDTH / 2, 2) for x in marks[0].x] == [3.0, 6.0, 7.25]
    assert all(y > bars[x] for x, y in zip(marks[0].x, marks[0].y))  # above its bar
    assert sorted(s.x0 for s in fig.layout.shapes) == pytest.approx([3.0, 3.0, 6.0, 7.33])


def test_histogram_without_ratings_says_so(seed_papers):
    fig = histogram.rating_histogram(seed_papers)
    assert "No paper in this list has reviewer ratings" in fig.layout.title.text
    assert not fig.data


# --- per-area table ------------------------------------------------------------------------------
def test_area_table_figures_recomputed_independently(papers):
    table = area_table.area_table(papers)
    by_area = {r.area: r for r in table.rows}
    assert set(by_area) == {"optimization", "generative models", "learning theory", plotting.NO_AREA}
    accepted = ("Accept (Oral)", "Accept (Spotlight)", "Accept (Poster)",
                "Accept (Conditional Poster)", "Accept")
    for area, row in by_area.items():
        members = [p for p in papers.values() if (p.primary_area or plotting.NO_AREA) == area]
        means = [round(statistics.fmean(p.ratings), 2) for p in members if p.ratings]
        assert row.papers == len(members)
        assert row.accepted == sum(p.status in accepted for p in members)
        assert row.rated == len(means)
        if means:
            assert row.mean_rating == pytest.approx(statistics.fmean(means))
            if len(means) > 1:
                q1, _, q3 = statistics.quantiles(means, n=4, method="inclusive")
                assert (row.q1, row.q3) == pytest.approx((q1, q3))
            else:
                assert row.q1 == row.q3 == means[0]
    assert by_area["optimization"].accepted_share == pytest.approx(3 / 4)
    assert [r.papers for r in table.rows] == sorted((r.papers for r in table.rows), reverse=True)
    assert table.total.papers == 12 and table.total.accepted == 7
    assert not table.all_accepted and table.note == ""
    out = table.html()
    assert "<td>75%</td>" in out and "optimization" in out and "all areas" in out


def test_area_table_says_acceptance_means_nothing_on_an_accepted_list(seed_papers):
    table = area_table.area_table(seed_papers)
    assert table.all_accepted
    assert "Every paper in this list is accepted" in table.note
    assert "No paper in this list has reviewer ratings" in table.note
    out = table.html()
    assert "Every paper in this list is accepted" in out and "<td>100%</td>" not in out


def test_a_hostile_area_name_is_escaped_and_no_template_field():
    p = Paper("a", "t", "x", primary_area="<img src=x> 100%{customdata}")
    fig = mf.map_figure(pca_layout([p, Paper("b", "u", "y")]), {"a": p, "b": Paper("b", "u", "y")})
    template = next(t.hovertemplate for t in fig.data if "a" in t.customdata)
    assert template.endswith("<extra>&lt;img src=x&gt; 100&#37;{customdata}</extra>")
    assert "<img" not in fig.to_json()


def test_area_table_escapes_area_names():
    table = area_table.area_table([Paper("a", "t", "x", primary_area="<img src=x onerror=alert(1)>")])
    assert "<img" not in table.html() and "&lt;img src=x" in table.html()


# --- standalone HTML -----------------------------------------------------------------------------
def test_standalone_html_embeds_plotly_and_fetches_nothing(layout, papers):
    page = mf.conference_html(layout, papers, title="ICLR <2026>", color_by="decision")
    assert page.startswith("<!DOCTYPE html>") and "<title>ICLR &lt;2026&gt;</title>" in page
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", page, re.I)
    assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']?(https?:)?//", page, re.I)
    assert not re.search(r"<(img|iframe)[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", page, re.I)
    tags = re.findall(r"<(?:script|link)\b[^>]*>", page, re.I)
    assert tags and not [t for t in tags if re.search(r"\b(src|href)\s*=", t)], tags[:5]
    import plotly

    from pathlib import Path

    js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()
    assert js[:2000] in page and page.count("plotly.js v") == 1  # inline, once
    assert page.count('class="plotly-graph-div"') == 2 and 'class="pc-areas"' in page
    assert "<script>alert" not in page  # the hostile title stays text


# --- paperchat map -------------------------------------------------------------------------------
@pytest.fixture
def layouts(monkeypatch):
    """The real index.layout when it exists; else a stand-in module whose ensure_layout serves
    the PCA layout of the index's catalog (and counts its calls)."""
    try:
        import index.layout  # noqa: F401

        return None
    except ImportError:
        pass
    calls = []

    def ensure_layout(settings, name, *, log=lambda m: None):
        from index.catalog import Catalog

        calls.append(name)
        catalog = Catalog(settings.index_dir(name) / "papers.sqlite")
        return pca_layout([p for p, _ in catalog.papers()])

    module = types.ModuleType("index.layout")
    module.ensure_layout, module.Layout, module.Label = ensure_layout, Layout, Label
    monkeypatch.setitem(sys.modules, "index.layout", module)
    return calls


def test_paperchat_map_writes_one_offline_html_file(fake_index, layouts, tmp_path, capsys,
                                                     seed_papers):
    from rag.cli import main

    out = tmp_path / "map.html"
    assert main(["map", "--out", str(out), "--color", "decision"]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.count('class="plotly-graph-div"') == 2 and 'class="pc-areas"' in page
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", page, re.I)
    data = json.loads(re.search(r'Plotly\.newPlot\(\s*"pc-figure-0",\s*(\[.*?\]),\s*\{',
                                page, re.S).group(1))
    ids = {pid for t in data if t.get("meta", "").startswith("pc-decision")
           for pid in t["customdata"]}
    assert ids == {p.id for p in seed_papers}
    said = capsys.readouterr()
    assert str(out) in said.out and f"{len(seed_papers)} papers" in said.out
    if layouts is not None:
        assert layouts == ["default"]


@pytest.mark.parametrize("where, expected", [
    ("missing/dir/map.html", "does not exist"),
    (".", "is a directory"),
])
def test_paperchat_map_reports_a_bad_output_path_in_one_line(fake_index, layouts, tmp_path,
                                                             capsys, where, expected):
    from rag.cli import main

    target = tmp_path / where
    assert main(["map", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("paperchat: error: ") and expected in err
    assert "Traceback" not in err
    if layouts is not None:
        assert layouts == []  # the path is checked before any work


def test_paperchat_map_reports_an_unwritable_directory_in_one_line(fake_index, layouts,
                                                                   tmp_path, capsys):
    import os

    from rag.cli import main

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        assert main(["map", "--out", str(locked / "map.html")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "cannot write" in err
    finally:
        locked.chmod(0o700)


def test_paperchat_map_for_a_missing_index_says_how_to_build_it(settings, tmp_path, capsys):
    from rag.cli import main

    assert main(["map", "--index", "nosuch", "--out", str(tmp_path / "m.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "paperchat index PATH --name nosuch" in err


# --- the app's Map view (ui.app.ChatApp, no server) ----------------------------------------------
CVRP = "aITKXFeivk"  # Refining Hybrid Genetic Search for CVRP via RL-Finetuned LLM


@pytest.fixture
def chat_app(fake_index, fake_embedder, monkeypatch):
    """A ChatApp over the fake seed index whose ensure_layout is counted (and can be slowed)."""
    pytest.importorskip("gradio")
    import index.layout as layout_module
    from conftest import ScriptedGenerator
    from rag.chat.pipeline import Pipeline
    from ui.app import ChatApp

    settings, retriever = fake_index
    real = layout_module.ensure_layout
    calls = {"n": 0, "sleep": 0.0}

    def counted(settings, name, *, log=print):
        import time

        calls["n"] += 1
        time.sleep(calls["sleep"])
        return real(settings, name, log=log)

    monkeypatch.setattr(layout_module, "ensure_layout", counted)
    app = ChatApp(Pipeline(settings, embedder=fake_embedder, generator=ScriptedGenerator(),
                           retriever=retriever))
    return app, calls


def test_map_view_says_it_is_computing_then_draws_and_keeps_the_layout(chat_app, monkeypatch):
    import ui.map_tab as ui_map_tab

    app, calls = chat_app
    monkeypatch.setattr(ui_map_tab, "MAP_WAIT_S", 0.05)
    monkeypatch.setattr(ui_map_tab, "MAP_TICK_S", 0.1)
    calls["sleep"] = 0.5
    parts = list(app.map_parts("primary_area", "any", "any", []))
    assert "computing the map (19 papers)…" in parts[0]["status"] and "map" not in parts[0]
    last = parts[-1]
    assert set(last) == {"status", "map", "hist", "table"} and "19 papers" in last["status"]
    assert sum(len(t.customdata) for t in last["map"].data) == 19
    assert "Every paper in this list is accepted" in last["table"]
    assert calls["n"] == 1
    again = list(app.map_parts("decision", "any", "any", []))  # cached: no wait, no message
    assert len(again) == 1 and calls["n"] == 1


def test_map_view_asks_again_after_the_index_is_reopened(chat_app):
    app, calls = chat_app
    first = list(app.map_parts("primary_area", "any", "any", []))[-1]
    layout = app.cached_layout(app.pipeline.current_retriever())
    from rag.retrieve.retriever import Retriever

    app.pipeline._retriever = Retriever.open(app.settings, app.pipeline.embedder)  # a reopen
    app.pipeline._seen = app.pipeline._watch()[0]
    second = list(app.map_parts("primary_area", "any", "any", []))[-1]
    assert calls["n"] == 2  # asked again for the new retriever ...
    assert app.cached_layout(app.pipeline.current_retriever()) is layout  # same fingerprint
    assert first["map"].to_json() == second["map"].to_json()


def test_map_view_follows_the_dropdowns_and_marks_the_last_answer(chat_app):
    app, _ = chat_app
    papers = app.retriever.papers
    part = list(app.map_parts("primary_area", "oral", "any", []))[-1]
    dimmed = [t for t in part["map"].data if t.meta == plotting.DIMMED_ROLE]
    assert len(dimmed[0].x) == 19  # every seed paper is a poster
    part = list(app.map_parts("primary_area", "any", "learning theory", []))[-1]
    shown = {pid for t in part["map"].data if t.meta != plotting.DIMMED_ROLE for pid in t.customdata}
    assert shown == {pid for pid, p in papers.items() if p.primary_area == "learning theory"}

    hits = [Hit(papers[CVRP], 1.0), Hit(papers["ZXr3Xx7Z1O"], 0.5)]
    answer = Answer("q", "q", "x [2]", [Citation(2, papers["ZXr3Xx7Z1O"])], hits)
    part = list(app.map_parts("decision", "any", "any", [answer]))[-1]
    top = part["map"].data[-1]
    assert top.meta == plotting.HIGHLIGHT_ROLE and list(top.customdata) == ["ZXr3Xx7Z1O"]
    assert list(top.text) == ["[2]"]


def test_a_click_on_a_map_point_asks_about_that_paper(chat_app):
    import gradio as gr

    app, _ = chat_app
    title = app.retriever.papers[CVRP].title
    assert app.question_about(CVRP) == f"Tell me about \u201c{title}\u201d"
    for bad in ("nope", None, 3, "x" * 1000):
        with pytest.raises(gr.Error):
            app.question_about(bad)


def test_a_click_on_a_very_long_title_fits_the_question_limit(chat_app):
    app, _ = chat_app
    app.settings.max_question_chars = 60
    question = app.question_about(CVRP)
    assert len(question) == 60 and question.endswith("…\u201d")


def test_map_key_tells_a_new_answer_from_a_copy_of_the_same():
    import copy

    pytest.importorskip("gradio")
    from ui.map_tab import map_key

    a = Paper("a", "a", "x")
    first = Answer("q", "q", "x [1]", [Citation(1, a)], [Hit(a, 1.0)],
                   timings_ms={"total": 5.0})
    again = Answer("q", "q", "x [1]", [Citation(1, a)], [Hit(a, 1.0)],
                   timings_ms={"total": 7.0})
    key = map_key("primary_area", "any", "any", [first])
    assert map_key("primary_area", "any", "any", copy.deepcopy([first])) == key
    assert map_key("primary_area", "any", "any", [first, again]) != key
    assert map_key("primary_area", "any", "any", [again]) != key  # regenerated
    assert map_key("decision", "any", "any", [first]) != key
    assert map_key("primary_area", "oral", "any", [first]) != key
    assert map_key("primary_area", "any", "any", []) != key
