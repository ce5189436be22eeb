"""Several lists in one index and answers across years (issue 34): reading a turn per year
(rag/understand/years.py), author names said in any frame (rag/understand/authors.py), counts per
year (rag/conference/trends.py), their chart (rag/conference/trendfigure.py), the answers
(rag/chat/yearly.py) and the ``trend`` of ``ask --json``.

Expected values are written by hand or counted in the test from the list it indexes (the seed
corpus with seven papers made ICLR 2018 ones), never taken from the code under test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import SEED

#: Seed papers made 2018 papers in the two-year list, with a 2018 decision each.
AS_2018 = {0: "Oral", 1: "Poster", 2: "Reject", 3: "Reject", 4: "Workshop", 5: "Poster",
           6: "Oral"}
#: 2026 seed papers made orals.
ORALS_2026 = (7, 8)
#: Authors given to two 2018 papers (ICLR 2026 was anonymous).
AUTHORS = {0: ["Ada Lovelace", "Alan Turing"], 5: ["Ada Lovelace"]}


def two_year_records() -> list[dict]:
    rows = [json.loads(line) for line in SEED.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    for i, rec in enumerate(rows):
        rec["ratings"] = [1 + (i * 3) % 9, 1 + (i * 5) % 9, 1 + (i * 7) % 8]  # made up, fixed
        if i in AS_2018:
            rec.update(year=2018, venue="ICLR 2018", status=AS_2018[i],
                       authors=AUTHORS.get(i))
        elif i in ORALS_2026:
            rec["status"] = "Accept (Oral)"
    return rows


@pytest.fixture
def two_years(tmp_path, settings, fake_embedder):
    """The two-year list indexed with the fake embedder: (settings, retriever, records)."""
    from index.build import build_index
    from rag.retrieve.retriever import Retriever

    rows = two_year_records()
    path = tmp_path / "two_years.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    build_index(path, settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None)
    return settings, Retriever.open(settings, fake_embedder), rows


def ask(question, settings, retriever, scripted, history=None):
    from rag.chat.answer import answer

    return answer(question, retriever=retriever, generator=scripted, settings=settings,
                  history=history or [])


# --- reading a turn ----------------------------------------------------------------------------
@pytest.mark.parametrize("text, per_year", [
    ("how did interest in GANs change since 2018?", True),
    ("how many orals in 2018 vs 2026?", True),
    ("is meta-learning more or less popular now than in 2018?", True),
    ("share of papers on graph neural networks per year", True),
    ("how many papers were submitted in each year?", True),
    ("diffusion models over the years", True),
    ("papers from 2018 and 2026 on GANs", False),          # papers of both years, no count
    ("2018 papers on adversarial examples", False),
    ("how many orals did ICLR 2018 have?", False),         # one year
    ("distribution shift when the data changed over time in streams", False),
    ("time series trend forecasting with transformers", False),
    ("what was the acceptance rate at iclr 2018", True),    # a share: of that year
    ("total submissions 2018 vs 2026", True),               # two totals set against each other
    ("how many papers in total across 2018 and 2026?", False),
    ("withdrawn '18 vs '26?", True),                        # years by their last two digits
])
def test_a_turn_asks_per_year_when_it_says_so(text, per_year):
    from rag.understand.years import asks_per_year

    assert asks_per_year(text) is per_year


@pytest.mark.parametrize("query, topic", [
    ("how did interest in GANs change since", "GANs"),
    ("is meta-learning more or less popular now than in", "meta-learning"),
    ("share of papers on graph neural networks per year", "graph neural networks"),
    ("RNN and LSTM papers per year - did they die out?", "RNN and LSTM"),
    ("how many papers about reinforcement learning (in any area) were submitted", "reinforcement learning"),
    ("were there more on RL in or now?", "reinforcement learning"),   # a field acronym alone
    ("how many papers per year?", ""),
])
def test_the_topic_of_a_per_year_question_loses_its_frame(query, topic):
    from rag.understand.years import trend_topic

    assert trend_topic(query) == topic


def test_a_topic_counted_by_its_words_takes_its_alternatives_and_spellings():
    from rag.understand.years import topic_alternatives

    assert topic_alternatives("adversarial examples / adversarial robustness") == \
        ["adversarial examples", "adversarial robustness"]
    assert topic_alternatives("RNN and LSTM") == ["RNN", "LSTM", "recurrent neural networks"]
    assert topic_alternatives("GANs") == ["GANs", "generative adversarial networks"]
    # "and" between phrases is one compositional topic, not two
    assert topic_alternatives("federated learning and differential privacy") == \
        ["federated learning and differential privacy"]
    # "w/" is "with", not a split: "diffusion" alone would match every diffusion paper
    assert topic_alternatives("conformer generation w/ diffusion") == \
        ["conformer generation with diffusion"]


def test_author_names_of_the_list_are_read_in_any_frame():
    from rag.understand.authors import author_index, authors_said
    from rag.types import Paper

    names = author_index([Paper("a", "t", "x", authors=["Bernhard Schölkopf", "Dawn Song"]),
                          Paper("b", "t", "x", authors=["Deep Learning", "Yoshua Bengio"])])
    assert "deep learning" not in names  # no filter on every question that says it
    text = "bernhard scholkopf papers and Dawn Song's too"
    found = authors_said(text, names)
    assert [n for n, _ in found] == ["Bernhard Schölkopf", "Dawn Song"]
    (a, b) = found[1][1]
    assert text[a:b] == "Dawn Song"  # the possessive stays outside
    assert authors_said("papers on deep learning", names) == []


def test_a_surname_is_an_author_beside_an_author_word():
    from rag.understand.authors import surname_index, surnames_said

    surnames = surname_index({"dawn song": "Dawn Song", "sergey levine": "Sergey Levine"})
    said = lambda t: [n for n, _ in surnames_said(t, surnames, {"song"})]  # noqa: E731
    assert said("papers by levine") == ["Levine"]
    assert said("Levine et al. on offline RL") == ["Levine"]
    assert said("papers by song") == ["Song"]              # said as an author
    assert said("music made by song structure") == []     # a word of the papers, not a name
    assert said("levine on offline RL") == []             # no author word at all


# --- counting per year ------------------------------------------------------------------------
def _papers():
    from rag.types import Paper

    rows = [("a", 2018, "Oral"), ("b", 2018, "Poster"), ("c", 2018, "Reject"),
            ("d", 2018, "Reject"), ("e", 2026, "Accept (Oral)"), ("f", 2026, "Accept (Poster)"),
            ("g", 2026, "Not accepted (Reject, or withdrawn after 2025-11-22)"),
            ("h", 2026, "Accept (Poster)"), ("i", 2026, "Accept (Poster)"), ("j", None, "Oral")]
    return {pid: Paper(pid, pid, "x", status=s, year=y) for pid, y, s in rows}


def test_a_catalog_count_per_year_counts_each_year_and_its_share():
    from rag.conference.trends import catalog_trend, year_totals
    from rag.filters import Filters

    papers = _papers()
    assert year_totals(papers.values()) == {2018: 4, 2026: 5}  # the yearless paper is left out
    t = catalog_trend(papers, Filters.parse(["status=oral"]), [2026, 2018])
    assert [(r.year, r.n, r.total) for r in t.rows] == [(2018, 1, 4), (2026, 1, 5)]
    assert t.rows[0].share == 0.25 and t.rows[1].share == 0.2
    assert t.direction() == ("down", pytest.approx(0.8))
    accepted = catalog_trend(papers, Filters.parse(["status=accepted"]), [2018, 2026])
    assert [r.n for r in accepted.rows] == [2, 4]
    assert accepted.direction()[0] == "up"
    with pytest.raises(ValueError):
        catalog_trend(papers, Filters.parse(["year=2018"]), [2018, 2026])


def test_the_direction_is_said_in_words_and_survives_json():
    from rag.conference.trends import Trend, YearRow, direction_text, table_markdown

    t = Trend("GANs", "membership+phrase", [], [YearRow(2018, 50, 1000), YearRow(2026, 100, 20000)],
              threshold=0.25, phrases=["GANs"])
    assert t.direction() == ("down", pytest.approx(0.1))
    assert direction_text(t) == ("The share fell from 5.0% in 2018 to 0.50% in 2026, about 1/10 "
                                 "of its 2018 share.")
    up = Trend("LLMs", "phrase", [], [YearRow(2018, 1, 1000), YearRow(2026, 600, 20000)])
    assert "rose from 0.10% in 2018 to 3.0% in 2026, about 30.0x" in direction_text(up)
    table = table_markdown(t, "on “GANs”", "papers that year")
    assert table.splitlines()[2] == "| 2018 | 50 | 1,000 | 5.0% |"
    back = Trend.from_json(json.loads(json.dumps(t.to_json())))
    assert [(r.year, r.n, r.total) for r in back.rows] == [(2018, 50, 1000), (2026, 100, 20000)]
    assert t.to_json()["direction"] == "down" and back.phrases == ["GANs"]


def test_the_chart_has_one_bar_per_year_with_its_numbers():
    from rag.conference.trendfigure import BARS_ROLE, trend_figure
    from rag.conference.trends import Trend, YearRow

    fig = trend_figure(Trend("", "catalog", ["status=oral"],
                             [YearRow(2018, 23, 995), YearRow(2026, 224, 19630)]))
    bars = [t for t in fig.data if t.meta == BARS_ROLE]
    assert len(bars) == 1
    assert list(bars[0].x) == ["2018", "2026"]
    assert list(bars[0].y) == pytest.approx([100 * 23 / 995, 100 * 224 / 19630])
    assert list(bars[0].text) == ["23 of 995", "224 of 19,630"]
    assert fig.layout.meta["total"] == [995, 19630]
    assert "Orals" in fig.layout.title.text


def test_removing_per_year_from_the_plan_gives_back_its_years_as_filters():
    from rag.understand.plan import Plan

    plan = Plan(papers="catalog", op="count", filters=["status=oral"], per_year=True,
                years=[2018, 2026])
    assert ("per_year", "per year (2018, 2026)") in plan.parts()
    back = plan.without("per_year")
    assert not back.per_year and back.filters == ["status=oral", "year=2018", "year=2026"]


# --- answers over a two-year index (fake embedder) ------------------------------------------
def test_orals_per_year_are_counted_from_the_list(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("how many orals in 2018 vs 2026?", settings, retriever, scripted)
    per_year = {r["year"]: (r["n"], r["total"]) for r in ans.trend["years"]}
    n18 = sum(1 for r in rows if r.get("year") == 2018 and r["status"] == "Oral")
    n26 = sum(1 for r in rows if r.get("year") != 2018 and r["status"] == "Accept (Oral)")
    assert per_year == {2018: (n18, len(AS_2018)), 2026: (n26, len(rows) - len(AS_2018))}
    assert ans.plan["per_year"] and not any(f.startswith("year=") for f in ans.plan["filters"])
    assert f"| 2018 | {n18} | {len(AS_2018)} |" in ans.text
    assert not ans.refused


def test_a_topic_per_year_states_its_rule_and_counts_within_each_year(two_years, scripted):
    from rag.compose.rendering import answer_json

    settings, retriever, rows = two_years
    ans = ask("how did interest in reinforcement learning change since 2018?", settings,
              retriever, scripted)
    assert ans.trend["topic"] == "reinforcement learning"
    totals = {r["year"]: r["total"] for r in ans.trend["years"]}
    assert totals == {2018: len(AS_2018), 2026: len(rows) - len(AS_2018)}
    # the words alone already count these (title/keywords say it, or the abstract twice)
    worded = {r["id"] for r in rows if "reinforcement learning" in
              (r["title"] + " " + " ".join(r["keywords"])).lower()}
    assert worded
    for r in ans.trend["years"]:
        assert r["n"] <= r["total"]
    assert sum(r["n"] for r in ans.trend["years"]) >= len(worded)
    assert "A paper counts when" in ans.text
    out = answer_json(ans)
    assert out["trend"]["years"][0]["year"] == 2018
    assert {h["year"] for h in out["hits"]} <= {2018, 2026} and "venue" in out["hits"][0]


def test_the_best_rated_paper_of_each_year(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("highest rated paper of each year", settings, retriever, scripted)

    def mean(r):
        return round(sum(r["ratings"]) / len(r["ratings"]), 2)

    best = {}
    for r in rows:
        y = r.get("year") or 2026
        m = mean(r)
        if m is not None and (y not in best or m > best[y][0]):
            best[y] = (m, r["id"])
    shown = {h.paper.year: h.id for h in ans.hits}
    assert set(shown) == {2018, 2026} and len(ans.hits) == 2
    for y, (m, pid) in best.items():
        top = [r["id"] for r in rows if (r.get("year") or 2026) == y and mean(r) == m]
        assert shown[y] in top


def test_similar_papers_of_another_year_keep_the_years_for_the_neighbours(two_years, scripted):
    settings, retriever, rows = two_years
    target = rows[10]  # a 2026 paper
    ans = ask(f"which 2018 papers are closest to “{target['title']}”?", settings, retriever,
              scripted)
    assert ans.hits and all(h.paper.year == 2018 for h in ans.hits)
    assert target["id"] not in {h.id for h in ans.hits}


def test_an_author_said_in_any_frame_lists_their_papers(two_years, scripted):
    settings, retriever, rows = two_years
    theirs = {rows[i]["id"] for i, names in AUTHORS.items() if "Ada Lovelace" in names}
    ans = ask("what did ada lovelace submit?", settings, retriever, scripted)
    assert {h.id for h in ans.hits} == theirs
    assert "author=Ada Lovelace" in ans.filters_applied


def test_a_per_year_question_on_a_one_year_index_says_so(fake_index, scripted):
    settings, retriever = fake_index
    ans = ask("how many papers per year?", settings, retriever, scripted)
    assert "holds papers of 2026 only" in ans.text
    assert ans.trend is None


def test_the_map_colours_by_year_oldest_first():
    from types import SimpleNamespace

    import numpy as np

    from rag.conference.mapfigure import map_figure

    papers = _papers()
    ids = sorted(papers)
    layout = SimpleNamespace(ids=ids, xy=np.zeros((len(ids), 2), dtype=np.float32), labels=[])
    fig = map_figure(layout, papers, color_by="year")
    groups = {t.meta: len(t.x) for t in fig.data if str(t.meta).startswith("pc-year-")}
    assert groups == {"pc-year-0": 4, "pc-year-1": 5, "pc-year-2": 1}  # 2018, 2026, no year
    names = [t.name for t in fig.data if str(t.meta).startswith("pc-year-")]
    assert names[0].startswith("2018") and names[1].startswith("2026")


def test_a_card_names_the_papers_venue():
    from rag.types import Hit, Paper
    from ui.cards import card_html

    html = card_html(1, Hit(Paper("a", "t", "x", venue="ICLR 2018", year=2018), 1.0))
    assert '<span class="pc-venue">ICLR 2018</span>' in html
    assert "pc-venue" not in card_html(1, Hit(Paper("b", "t", "x"), 1.0))


@pytest.mark.parametrize("text, expected", [
    ("lowest rated accepted poster at iclr 2026", ["status=poster", "year=2026"]),
    ("worst 2026 oral by reviewer score", ["status=oral", "year=2026"]),
    ("number of 2018 rejects", ["status=rejected", "year=2018"]),
    ("spiking neural nets at iclr2018?", ["year=2018"]),
    ("how many 2018 papers were invited to the workshop track", ["status=workshop", "year=2018"]),
    ("Which rejected 2018 paper had the highest average reviewer score?",
     ["status=rejected", "year=2018"]),
])
def test_decisions_and_years_said_as_nouns_are_filters(text, expected):
    from rag.understand.slots import read_filters

    assert sorted(read_filters(text).filters.as_strings()) == sorted(expected)


def test_the_other_year_swaps_the_previous_questions_year():
    from rag.chat.refine import resolve_refine
    from rag.understand.history import Turn
    from rag.understand.plan import Plan

    before = Plan(papers="search", op="survey", topic="federated learning",
                  query="papers about federated learning", filters=["year=2026"])
    prev = Turn(question="show me 2026 papers about federated learning", plan=before.to_json())
    plan = Plan(papers="search", op="refine", topic="the other year",
                query="what about the other year?", said="what about the other year?")
    got = resolve_refine(plan, [prev], [], [2018, 2026])
    assert got.filters == ["year=2018"]
    assert "federated learning" in got.query and "other year" not in got.query


def test_bench_trend_needs_an_index_of_several_years(fake_index):
    from rag.errors import PaperchatError
    from rag.evaluate.bench_query import bench_trend

    settings, _ = fake_index
    with pytest.raises(PaperchatError, match="several years"):
        bench_trend(settings)


def test_a_filter_after_an_answer_per_year_acts_on_the_papers_it_counted(two_years, scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask("how did interest in reinforcement learning change since 2018?", settings,
                retriever, scripted)
    counted_2018 = next(r["n"] for r in first.trend["years"] if r["year"] == 2018)
    ans = ask("which of the 2018 ones were orals?", settings, retriever, scripted,
              [turn_after(first)])
    orals_2018 = [r["id"] for r in rows if r.get("year") == 2018 and r["status"] == "Oral"]
    assert len(orals_2018) == 2
    assert "the previous answer counted on “reinforcement learning”" in ans.text
    assert len(ans.hits) <= counted_2018 and len(ans.hits) < len(orals_2018) + 1
    assert all(h.id in orals_2018 for h in ans.hits)


def test_acceptance_rate_and_mean_rating_per_year(two_years, scripted):
    settings, retriever, rows = two_years

    def year(r):
        return r.get("year") or 2026

    ans = ask("what was the acceptance rate in 2018 vs 2026?", settings, retriever, scripted)
    accepted = {y: sum(1 for r in rows if year(r) == y and r["status"] in
                       ("Oral", "Poster", "Accept (Oral)", "Accept (Poster)")) for y in (2018, 2026)}
    assert {r["year"]: r["n"] for r in ans.trend["years"]} == accepted
    ans = ask("average reviewer rating per year?", settings, retriever, scripted)
    for r in ans.trend["years"]:
        means = [sum(x["ratings"]) / len(x["ratings"]) for x in rows if year(x) == r["year"]]
        # (each paper's mean to 2 decimals, as the catalog gives it, then their mean)
        expected = round(sum(round(m, 2) for m in means) / len(means), 2)
        assert r["mean_rating"] == pytest.approx(expected, abs=0.006)
    assert f"{ans.trend['years'][0]['mean_rating']:.2f} in 2018" in ans.text


def test_an_everyday_word_names_a_paper_only_written_as_its_name():
    from rag.types import Paper
    from rag.understand.names import NameIndex

    names = NameIndex([Paper("m1", "MoST: Mixture of Speech and Text", "x"),
                       Paper("r1", "StepORLM: a self-evolving framework", "y")])
    assert names.find("which papers are most similar to it?") == []
    assert [ids for _, _, ids in names.find("tell me about MoST")] == [["m1"]]
    assert [ids for _, _, ids in names.find("and steporlm?")] == [["r1"]]


# --- authors together, misspelt decisions, a year as the only change ----------------------------
def test_an_author_value_joined_by_ampersand_needs_every_author():
    from rag.filters import Filters
    from rag.types import Paper

    both = Paper("a", "t", "x", authors=["Pieter Abbeel", "Sergey Levine"])
    one = Paper("b", "t", "x", authors=["Sergey Levine"])
    together = Filters.parse(["author=Abbeel & Sergey Levine"])
    assert together.matches(both) and not together.matches(one)
    either = Filters.parse(["author=Abbeel", "author=Sergey Levine"])
    assert either.matches(both) and either.matches(one)


@pytest.mark.parametrize("question, expected", [
    ("papers Ada Lovelace and Alan Turing wrote together", {0}),
    ("papers coauthored by lovelace and turing", {0}),
    ("Ada Lovelace's papers with Alan Turing", {0}),
    ("papers by Lovelace and Turing", {0, 5}),  # said plainly: either of them
])
def test_authors_said_together_list_the_papers_they_wrote_together(question, expected, two_years,
                                                                   scripted):
    settings, retriever, rows = two_years
    ans = ask(question, settings, retriever, scripted)
    assert {h.id for h in ans.hits} == {rows[i]["id"] for i in expected}


def test_the_topic_left_beside_an_author_keeps_its_words():
    from rag.understand.authors import apply_authors, name_spans
    from rag.understand.plan import Plan

    text = "papers by Ada Lovelace on analytical engines"
    plan = Plan(papers="search", op="survey", query="on analytical engines",
                filters=["author=Ada Lovelace"])
    apply_authors(plan, text, name_spans(text, ["Ada Lovelace"]), add=False)
    assert plan.papers == "search" and plan.topic == "analytical engines"


@pytest.mark.parametrize("text, expected", [
    ("how many iclr 2018 papers were rejectd", "how many iclr 2018 papers were rejected"),
    ("acepted papers", "accepted papers"), ("withdrawen ones", "withdrawn ones"),
    ("spotlgihts in RL", "spotlights in RL"),
    # real words near a decision word stay
    ("posterior sampling papers", "posterior sampling papers"), ("accessed memory", "accessed memory"),
    ("projected gradients", "projected gradients"), ("positional encodings", "positional encodings"),
])
def test_misspelt_decision_words_are_read_as_the_decision(text, expected):
    from rag.understand.filter_words import respell_decisions

    assert respell_decisions(text) == expected


@pytest.mark.parametrize("text, filters", [
    ("size of each conference in accepted papers (orals + posters)", ["status=accepted"]),
    ("how many orals or spotlights in 2026", ["status=oral", "status=spotlight", "year=2026"]),
    ("oral / poster counts per area", []),  # a breakdown, not a filter
    ("How many submissions did ICLR 2026 receive, counting rejected and withdrawn?", ["year=2026"]),
    ("# of orals in '18", ["status=oral", "year=2018"]),
    ("rejected GAN papers from 2018", ["status=rejected", "year=2018"]),
    ("lowest rated paper that still got accepted in 2026", ["status=accepted", "year=2026"]),
    ("withdrawn count for iclr 2026?", ["status=withdrawn", "year=2026"]),
    ("posters: 2018 vs 2026?", ["status=poster", "year=2018", "year=2026"]),
    ("oral health papers", []),
    ("iclr18 poster count", ["status=poster", "year=2018"]),
    ("how many 2018 papers got a Reject decision", ["status=rejected", "year=2018"]),
    ("How many ICLR 2026 submissions were not accepted?", ["status=rejected", "year=2026"]),
    ("learning theory papers that got in", ["status=accepted"]),
    ("ok and how many were withdrawn that year", ["status=withdrawn"]),
    ("number of papers with avg rating strictly above 7", ["rating>7"]),
    ("# rejects '26", ["status=rejected", "year=2026"]),
    ("2026 withdrawals in the vision area?", ["status=withdrawn", "year=2026"]),
    ("how many papers did ICLR 2026 end up accepting in total?", ["status=accepted", "year=2026"]),
    ("what percent of 2018 submissions got a workshop invitation?", ["status=workshop", "year=2018"]),
    ("withdrawn '18 vs '26?", ["status=withdrawn", "year=2018", "year=2026"]),
    ("same for posters", ["status=poster"]),
])
def test_decisions_listed_together(text, filters):
    from rag.understand import slots

    got = slots.read_filters(text).filters
    assert sorted(got.as_strings() if got else []) == sorted(filters)


@pytest.mark.parametrize("query, topical", [
    ("size of each conference", False), ("how big was iclr", False),
    ("papers from their reviewers", False), ("model size scaling", True),
])
def test_the_size_of_a_list_and_its_ratings_are_no_topic(query, topical):
    from rag.understand.topics import has_topic

    assert has_topic(query) is topical


def test_same_for_a_year_after_a_sort_is_the_sorted_search_in_that_year():
    from rag.chat.refine import resolve_refine
    from rag.understand.history import Turn
    from rag.understand.plan import Plan

    search = Plan(papers="search", op="survey", topic="reinforcement learning",
                  query="on reinforcement learning", filters=["status=oral", "year=2018"])
    sort = Plan(papers="previous", op="sort", order="rating_desc", query="sort by rating")
    history = [Turn(question="2018 orals on reinforcement learning", plan=search.to_json()),
               Turn(question="sort by rating", plan=sort.to_json())]
    plan = Plan(papers="search", op="refine", query="same for 2026", said="same for 2026",
                filters=["year=2026"])
    got = resolve_refine(plan, history, [], [2018, 2026])
    assert (got.papers, got.op, got.order) == ("search", "sort", "rating_desc")
    assert sorted(got.filters) == ["status=oral", "year=2026"]
    assert "reinforcement learning" in got.query


def test_an_acceptance_rate_of_one_year_is_that_years_share(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("what was the acceptance rate at iclr 2018?", settings, retriever, scripted)
    of_2018 = [r for r in rows if r.get("year") == 2018]
    accepted = [r for r in of_2018 if r["status"] in ("Oral", "Poster")]
    assert [(y["year"], y["n"], y["total"]) for y in ans.trend["years"]] == \
        [(2018, len(accepted), len(of_2018))]


@pytest.mark.parametrize("question", ["Ada Lovelace 2018", "Lovelace 2018", "lovelace"])
def test_a_name_said_alone_lists_that_authors_papers_of_the_year(question, two_years, scripted):
    settings, retriever, rows = two_years
    theirs = {rows[i]["id"] for i, names in AUTHORS.items() if "Ada Lovelace" in names}
    ans = ask(question, settings, retriever, scripted)
    assert {h.id for h in ans.hits} == theirs


def test_a_count_under_a_year_filter_states_its_share_of_that_year(two_years, scripted):
    settings, retriever, rows = two_years
    of_2018 = [r for r in rows if r.get("year") == 2018]
    orals = [r for r in of_2018 if r["status"] == "Oral"]
    accepted = [r for r in of_2018 if r["status"] in ("Oral", "Poster")]
    ans = ask("how many orals in 2018?", settings, retriever, scripted)
    assert f"That is {100 * len(orals) / len(of_2018):.1f}% of the {len(of_2018)} papers of 2018" \
        in ans.text
    assert f"{100 * len(orals) / len(accepted):.1f}% of its {len(accepted)} accepted papers" \
        in ans.text


def test_a_filter_on_an_authors_whole_list_that_leaves_none_says_none(two_years, scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask("papers by Ada Lovelace", settings, retriever, scripted)
    assert first.hits and not any(h.paper.status == "Reject" for h in first.hits)
    assert any(r["status"] == "Reject" for r in rows)
    ans = ask("which were rejected?", settings, retriever, scripted, [turn_after(first)])
    assert ans.hits == []  # not every rejected paper of the index
    mine = ask("how many of her papers were orals?", settings, retriever, scripted,
               [turn_after(first)])
    theirs = [rows[i] for i, names in AUTHORS.items() if "Ada Lovelace" in names]
    assert mine.text.startswith(f"{sum(r['status'] == 'Oral' for r in theirs)} of the "
                                f"{len(theirs)} papers")


def test_one_person_spelled_several_ways_is_one_author():
    from rag.filters import Filters
    from rag.types import Paper
    from rag.understand.authors import author_index, authors_said

    names = author_index([Paper("a", "t", "x", authors=["Geoffrey E. Hinton", "Jane Doe"]),
                          Paper("b", "t", "x", authors=["Bernhard Schoelkopf"])])
    assert [n for n, _ in authors_said("what did geoff hinton put out", names)] == \
        ["Geoffrey E. Hinton"]
    umlaut = Filters.parse(["author=Bernhard Schölkopf"])
    assert umlaut.matches(Paper("b", "t", "x", authors=["Bernhard Schoelkopf"]))
    assert not umlaut.matches(Paper("c", "t", "x", authors=["Bernhard Schulz"]))


def test_a_count_of_every_paper_per_year_states_how_much_bigger_the_later_year_is():
    from rag.conference.trends import catalog_trend, direction_text

    trend = catalog_trend(_papers(), None, [2018, 2026])
    assert direction_text(trend) == "2026 had 1 more paper than 2018 (1.2x as many)."


def test_that_year_is_the_previous_turns_year():
    from rag.chat.refine import resolve_refine
    from rag.understand.history import Turn
    from rag.understand.plan import Plan

    before = Plan(papers="catalog", op="count", filters=["year=2018"])
    prev = Turn(question="How many submissions did ICLR 2018 receive?", plan=before.to_json())
    plan = Plan(papers="catalog", op="count", filters=["status=withdrawn"],
                said="ok and how many were withdrawn that year")
    got = resolve_refine(plan, [prev], [], [2018, 2026])
    assert sorted(got.filters) == ["status=withdrawn", "year=2018"]
    plain = replace_said(plan, "how many were withdrawn")
    assert resolve_refine(plain, [prev], [], [2018, 2026]).filters == ["status=withdrawn"]


def replace_said(plan, said):
    from dataclasses import replace

    return replace(plan, said=said)


@pytest.mark.parametrize("question", [
    "For a slide: ICLR 2018 vs 2026, how many orals each?",
    "I'm writing a blog post about how much ICLR has grown. How many orals did 2018 and 2026 each have?",
])
def test_a_preamble_about_why_one_asks_names_no_topic(question, two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask(question, settings, retriever, scripted)
    want = {y: sum(1 for r in rows if r.get("year", 2026) == y and r["status"] in
                   ("Oral", "Accept (Oral)")) for y in (2018, 2026)}
    assert {y["year"]: y["n"] for y in ans.trend["years"]} == want
    assert not ans.trend["topic"]


def test_a_count_of_a_tier_per_year_states_its_change_and_its_share_of_accepted(two_years,
                                                                                scripted):
    settings, retriever, rows = two_years
    ans = ask("how many orals in 2018 vs 2026?", settings, retriever, scripted)
    n18 = sum(1 for r in rows if r.get("year") == 2018 and r["status"] == "Oral")
    acc18 = sum(1 for r in rows if r.get("year") == 2018 and r["status"] in ("Oral", "Poster"))
    assert f"{100 * n18 / acc18:.1f}% in 2018 ({n18} of {acc18})" in ans.text


def test_a_count_per_year_within_an_area_is_a_share_of_that_areas_papers():
    from rag.conference.trends import catalog_trend
    from rag.filters import Filters
    from rag.types import Paper

    papers = {pid: Paper(pid, pid, "x", status=s, year=2026, primary_area=a) for pid, s, a in [
        ("a", "Accept (Poster)", "vision"), ("b", "Reject", "vision"), ("c", "Reject", "vision"),
        ("d", "Accept (Oral)", "graphs"), ("e", "Accept (Poster)", "graphs")]}
    papers["f"] = Paper("f", "f", "x", status="Oral", year=2018, primary_area="vision")
    trend = catalog_trend(papers, Filters.parse(["status=accepted", "primary_area=vision"]),
                          [2018, 2026])
    assert [(r.year, r.n, r.total) for r in trend.rows] == [(2018, 1, 1), (2026, 1, 3)]


def test_a_decision_counted_after_an_authors_list_is_counted_among_their_papers(two_years,
                                                                               scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask("what did ada lovelace submit?", settings, retriever, scripted)
    ans = ask("how many were orals?", settings, retriever, scripted, [turn_after(first)])
    theirs = [rows[i] for i, names in AUTHORS.items() if "Ada Lovelace" in names]
    assert "author=Ada Lovelace" in ans.filters_applied
    assert ans.text.startswith(f"{sum(r['status'] == 'Oral' for r in theirs)} of the ")
    whole = ask("how many orals overall?", settings, retriever, scripted, [turn_after(first)])
    assert not any(f.startswith("author=") for f in whole.filters_applied)


# --- breakdowns, follow-ups and readings seen in h18 and a fresh user's browser ----------------
@pytest.mark.parametrize("text, expected", [
    ("break down 2018 by decision: how many orals, posters, rejects, workshop?", True),
    ("how many 2018 papers per decision?", True),
    ("what is the decision breakdown of iclr 2026", True),
    ("how many orals, posters and rejects per year?", True),
    ("how many list RL as their area, and how many of those got an oral?", True),
    ("orals and posters in 2018", False),        # two decisions: one filter of both
    ("how many orals in 2018 vs 2026?", False),
    ("rejected and withdrawn per year", False),
])
def test_a_count_per_decision_is_asked_by_a_breakdown_or_three_decisions(text, expected):
    from rag.understand.filter_words import asks_by_decision

    assert asks_by_decision(text) is expected


def test_a_breakdown_by_decision_counts_every_decision_of_the_year(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("break down 2018 by decision: how many orals, posters, rejects?", settings,
              retriever, scripted)
    assert ans.plan["by_decision"] and "year=2018" in ans.plan["filters"]
    assert not any(f.startswith("status=") for f in ans.plan["filters"])
    assert ans.text.startswith(f"{len(AS_2018)} papers match year=2018")
    said = {"Oral": "oral", "Poster": "poster", "Reject": "rejected",
            "Workshop": "invited to the workshop track"}
    counts = {said[s]: sum(1 for v in AS_2018.values() if v == s) for s in said}
    for tier, n in counts.items():
        assert f"| {tier} | {n} ({100 * n / len(AS_2018):.1f}%) |" in ans.text, ans.text
    assert f"| **all** | {len(AS_2018)} |" in ans.text


def test_a_breakdown_by_decision_per_year_is_one_table_of_both_years(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("how many orals, posters and rejects per year?", settings, retriever, scripted)
    n26 = len(rows) - len(AS_2018)
    orals26 = len(ORALS_2026)
    orals18 = sum(1 for v in AS_2018.values() if v == "Oral")
    assert "| decision | 2018 | 2026 |" in ans.text
    assert f"| oral | {orals18} ({100 * orals18 / len(AS_2018):.1f}%) | {orals26} " \
           f"({100 * orals26 / n26:.1f}%) |" in ans.text
    assert f"| **all** | {len(AS_2018)} | {n26} |" in ans.text


def test_the_other_end_after_a_filters_best_rated_paper_keeps_the_filters(two_years,
                                                                           scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask("highest rated 2018 poster", settings, retriever, scripted)
    mean = {r["id"]: sum(r["ratings"]) / len(r["ratings"]) for r in rows}
    posters = [r["id"] for i, r in enumerate(rows) if AS_2018.get(i) == "Poster"]
    worst = min(posters, key=mean.get)
    for turn in ("and the lowest rated one?", "and the worst one?"):
        ans = ask(turn, settings, retriever, scripted, [turn_after(first)])
        assert ans.hits[0].id == worst, turn
        assert ans.plan["order"] == "rating_asc"
    # a decision said after the best-rated paper of a year: that year's, the other end
    ans = ask("and the lowest rated oral?", settings, retriever, scripted,
              [turn_after(ask("lowest rated poster in 2018?", settings, retriever, scripted))])
    assert all(h.paper.year == 2018 and h.paper.status == "Oral" for h in ans.hits)


def test_a_filters_frame_leaves_the_topic_with_the_filter():
    from rag.understand.slots import read_filters

    read = read_filters("and graph neural nets, among accepted papers only?")
    assert read.filters.as_strings() == ["status=accepted"]
    assert read.query == "and graph neural nets?"


def test_a_whole_title_said_names_its_paper_for_its_neighbours(two_years, scripted):
    settings, retriever, rows = two_years
    target = rows[0]  # a 2018 paper
    ans = ask(f"2026 papers similar to {target['title']} from 2018", settings, retriever,
              scripted)
    assert ans.plan["op"] == "similar" and ans.plan["ids"] == [target["id"]]
    assert ans.hits and all(h.paper.year == 2026 for h in ans.hits)


@pytest.mark.parametrize("query, topic", [
    ("Has LSTM / RNN research shrunk? Compare iclr18 and iclr26 counts and shares.", "LSTM / RNN"),
    ("LLM papers per year in the two lists? Is the share growing?", "LLM"),
    ("How popular were variational autoencoders (VAEs) in compared with? Counts and share please.",
     "variational autoencoders"),
    ("Did meta-learning go up or down between ICLR and ICLR (as a share of all submissions)? "
     "Give the counts too.", "meta-learning"),
    ("How did the number of GAN papers change from ICLR to ICLR, in counts and as a share?", "GAN"),
])
def test_a_trends_topic_is_read_from_the_sentence_that_names_it(query, topic):
    from rag.understand.years import trend_topic

    assert trend_topic(query) == topic


def test_a_shortened_first_name_of_five_letters_is_the_same_person():
    from rag.filters import Filters
    from rag.types import Paper

    anima = Filters.parse(["author=Anima Anandkumar"])
    assert anima.matches(Paper("a", "t", "x", authors=["Animashree Anandkumar"]))
    assert not anima.matches(Paper("b", "t", "x", authors=["Anita Anandkumar"]))
    sam = Filters.parse(["author=Sam Bengio"])
    assert not sam.matches(Paper("c", "t", "x", authors=["Samy Bengio"]))  # 3 letters: too few


@pytest.mark.parametrize("text, expected", [
    ("which primary area had the most orals in 2026?", True),
    ("what primary areas are there in the ICLR 2026 list?", True),
    ("orals per area", True),
    ("which area has the most papers on diffusion?", True),
    ("what's the most common primary area among 2026 orals?", True),
    ("what area is StepORLM in?", False),
    ("papers on area under the curve", False),
])
def test_a_count_per_area_is_asked_in_so_many_words(text, expected):
    from rag.understand.filter_words import asks_by_area

    assert asks_by_area(text) is expected


def test_a_count_per_area_ranks_the_areas_of_the_filters_papers(two_years, scripted):
    from collections import Counter

    settings, retriever, rows = two_years
    of_2026 = [r for i, r in enumerate(rows) if i not in AS_2018]
    counts = Counter(r["primary_area"] for r in of_2026)
    (top, n), (second, m) = counts.most_common(2)
    assert n > m  # (the seed list: most of its papers are on optimization)
    ans = ask("what primary areas are there in 2026?", settings, retriever, scripted)
    assert ans.plan["by_area"] and ans.plan["filters"] == ["year=2026"]
    assert f"The most are in “{top}” ({n}, {100 * n / len(of_2026):.1f}%)" in ans.text
    assert f"| {second} | {m} | {100 * m / len(of_2026):.1f}% |" in ans.text
    # a decision counted per area: against each area's papers
    ans = ask("which primary area had the most orals in 2026?", settings, retriever, scripted)
    orals = Counter(r["primary_area"] for i, r in enumerate(rows) if i in ORALS_2026)
    for area, k in orals.items():
        assert f"| {area} | {k} | {100 * k / len(ORALS_2026):.1f}% | {counts[area]} | " \
               f"{100 * k / counts[area]:.1f}% |" in ans.text


# --- from a fresh user's browser conversations (after the breakdowns landed) --------------------
def test_a_decision_said_before_each_year_is_that_decisions_count_per_year(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("how many were rejected each year?", settings, retriever, scripted)
    per_year = {r["year"]: r["n"] for r in ans.trend["years"]}
    assert per_year[2018] == sum(1 for v in AS_2018.values() if v == "Reject")
    assert ans.plan["filters"] == ["status=rejected"]


def test_a_mean_rating_asked_of_a_count_is_stated(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("what's the average rating of 2018 orals?", settings, retriever, scripted)
    orals = [r for i, r in enumerate(rows) if AS_2018.get(i) == "Oral"]
    mean = sum(sum(r["ratings"]) / len(r["ratings"]) for r in orals) / len(orals)
    assert f"Their mean reviewer rating is {mean:.2f}" in ans.text


def test_decisions_set_against_each_other_are_a_breakdown_with_their_mean_ratings(two_years,
                                                                                   scripted):
    settings, retriever, rows = two_years
    ans = ask("average reviewer score of 2018 orals vs posters vs rejects?", settings, retriever,
              scripted)
    assert ans.plan["by_decision"] and ans.plan["op"] == "count"
    posters = [r for i, r in enumerate(rows) if AS_2018.get(i) == "Poster"]
    mean = sum(sum(r["ratings"]) / len(r["ratings"]) for r in posters) / len(posters)
    assert f"| poster | {len(posters)} ({100 * len(posters) / len(AS_2018):.1f}%) | " \
           f"{mean:.2f} |" in ans.text


def test_the_best_rate_per_area_ranks_the_areas_by_their_share(two_years, scripted):
    from rag.conference.breakdowns import by_area
    from rag.types import Paper

    big = [Paper(f"a{i}", "t", "x", primary_area="A", status="Accept (Poster)" if i < 10
                 else "Reject") for i in range(40)]
    small = [Paper(f"b{i}", "t", "x", primary_area="B", status="Accept (Poster)" if i < 15
                   else "Reject") for i in range(30)]
    chosen = [p for p in big + small if p.status.startswith("Accept")]
    head = by_area(chosen, big + small, "accepted papers", "area's papers", by_rate=True)[0]
    # B: 15 of 30 (50%) beats A: 10 of 40 (25%), though A has fewer accepted papers
    assert head.text.startswith("By rate, among the areas with at least 20 papers: “B” has the "
                                "highest (15 of 30, 50.0%), “A” the lowest (10 of 40, 25.0%)")
    head = by_area(chosen, big + small, "accepted papers", "area's papers")[0]
    assert "The most are in “B” (15, 60.0%)" in head.text


def test_the_other_year_after_narrowing_a_search_is_that_search_narrowed_alike(two_years,
                                                                                scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    history = []
    for turn in ("papers on optimization in 2018", "just the accepted ones please",
                 "sort those by rating"):
        history.append(turn_after(ask(turn, settings, retriever, scripted, history)))
    ans = ask("and in 2026?", settings, retriever, scripted, history)
    assert ans.plan["papers"] == "search" and ans.plan["topic"]
    assert set(ans.plan["filters"]) == {"status=accepted", "year=2026"}
    assert ans.hits and all(h.paper.year == 2026 for h in ans.hits)


def test_another_papers_neighbours_after_a_neighbours_answer_keep_their_year(two_years,
                                                                              scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask(f"2026 papers similar to {rows[0]['title']} from 2018", settings, retriever,
                scripted)
    ans = ask(f"what about ones similar to {rows[1]['title']}?", settings, retriever, scripted,
              [turn_after(first)])
    assert ans.plan["op"] == "similar" and ans.plan["ids"] == [rows[1]["id"]]
    assert ans.hits and all(h.paper.year == 2026 for h in ans.hits), (
        first.plan["filters"], ans.plan["filters"], ans.filters_applied,
        [(h.id, h.paper.year) for h in ans.hits])


def test_a_decision_asked_after_a_count_per_area_is_counted_per_area_again(two_years, scripted):
    from collections import Counter

    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask("which primary area had the most orals in 2026?", settings, retriever, scripted)
    posters = Counter(r["primary_area"] for i, r in enumerate(rows)
                      if i not in AS_2018 and i not in ORALS_2026)
    (top, n), = posters.most_common(1)
    ans = ask("which one had the most posters?", settings, retriever, scripted,
              history=[turn_after(first)])
    # (not the one paper of the orals with the most posters: the posters of 2026 per area)
    assert ans.plan["by_area"] and sorted(ans.plan["filters"]) == ["status=poster", "year=2026"]
    assert f"The most are in “{top}” ({n}, " in ans.text


@pytest.mark.parametrize("text, expected", [
    ("mean rating of LLM papers vs the rest in 2026", True),
    ("do RL papers get higher ratings than the rest?", True),
    ("how do orals compare to the rest in ratings?", True),
    ("are LLM papers rated higher than others in iclr26?", True),
    ("LLM papers vs the rest", False),  # no rating asked
    ("what's the average rating of 2026 orals?", False),  # no other papers
])
def test_a_topics_ratings_against_the_rest_are_asked_in_so_many_words(text, expected):
    from rag.understand.years import asks_mean_against_rest

    assert asks_mean_against_rest(text) is expected


def test_the_mean_rating_of_a_topic_is_stated_beside_the_rests(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("what's the average rating of optimization papers in 2026 vs the rest?", settings,
              retriever, scripted)
    assert ans.plan["mean_rating"] and ans.plan["op"] == "count"
    assert ans.plan["filters"] == ["year=2026"] and ans.plan["topic"] == "optimization"
    of_2026 = [r for i, r in enumerate(rows) if i not in AS_2018]
    m = re.search(r"^(\d+) of the (\d+) papers matching year=2026 are on “optimization”.*"
                  r"Their mean reviewer rating is (\d+\.\d\d) .*the other (\d+) papers' is "
                  r"(\d+\.\d\d)", ans.text, re.S)
    assert m, ans.text[:300]
    n, total, on, rest_n, rest = int(m[1]), int(m[2]), float(m[3]), int(m[4]), float(m[5])
    assert total == len(of_2026) and n + rest_n == total and 0 < n < total
    # the two means, weighted by their papers, are the mean of every 2026 paper's mean rating
    overall = sum(sum(r["ratings"]) / len(r["ratings"]) for r in of_2026) / len(of_2026)
    assert abs((n * on + rest_n * rest) / total - overall) < 0.01
    assert all(h.paper.year == 2026 for h in ans.hits) and len(ans.hits) == min(n, 10)


def test_a_decision_against_the_rest_in_ratings_is_every_decisions_mean(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("were 2018 orals rated higher than the rest?", settings, retriever, scripted)
    assert ans.plan["by_decision"] and ans.plan["filters"] == ["year=2018"]
    orals = [r for i, r in enumerate(rows) if AS_2018.get(i) == "Oral"]
    mean = sum(sum(r["ratings"]) / len(r["ratings"]) for r in orals) / len(orals)
    assert f"| oral | {len(orals)} ({100 * len(orals) / len(AS_2018):.1f}%) | {mean:.2f} |" \
        in ans.text


def test_another_year_set_against_a_count_is_the_count_in_both_years(two_years, scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask("how many orals in 2018?", settings, retriever, scripted)
    ans = ask("and how does that compare to 2026, is it growing?", settings, retriever, scripted,
              history=[turn_after(first)])
    per_year = {r["year"]: r["n"] for r in ans.trend["years"]}
    assert per_year == {2018: sum(1 for v in AS_2018.values() if v == "Oral"),
                        2026: len(ORALS_2026)}
    # "and how many in 2026?" asks for 2026 alone
    ans = ask("and how many in 2026?", settings, retriever, scripted, history=[turn_after(first)])
    assert ans.trend is None and ans.plan["filters"] == ["status=oral", "year=2026"]


def test_a_preamble_about_a_note_names_no_topic(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("I'm writing a short note on how ICLR grew. Could you give me the number of "
              "accepted papers for each of the two years?", settings, retriever, scripted)
    per_year = {r["year"]: r["n"] for r in ans.trend["years"]}
    assert per_year == {2018: sum(1 for v in AS_2018.values() if v in ("Oral", "Poster")),
                        2026: len(rows) - len(AS_2018)}
    assert ans.trend["topic"] == ""


def test_sorted_by_average_rating_is_an_order_not_a_mean(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("list the 2018 papers on optimization, sorted by average reviewer score",
              settings, retriever, scripted)
    assert not ans.plan["mean_rating"] and ans.plan["op"] == "sort"
    means = [(h.paper.rating or {}).get("mean") for h in ans.hits]
    assert means == sorted(means, reverse=True) and all(h.paper.year == 2018 for h in ans.hits)


def test_a_filter_the_years_asked_cannot_apply_is_said_and_nothing_is_listed(two_years,
                                                                            scripted):
    from types import SimpleNamespace

    from rag.chat.operations import list_notes
    from rag.filters import Filters
    from rag.types import Paper
    from rag.understand.plan import Plan

    settings, retriever, rows = two_years
    # ICLR 2026 was anonymous: "papers by NAME in 2026" picks out nothing, and says why
    ans = ask("list papers by Ada Lovelace in 2026", settings, retriever, scripted)
    assert ans.refused and not ans.hits
    assert "The 2026 list has no author names" in ans.text
    # ICLR 2018 had no primary areas
    papers = {"a": Paper("a", "t", "x", year=2018), "b": Paper("b", "t", "x", year=2026,
                                                             primary_area="optimization")}
    kept, notes = list_notes(Plan(papers="catalog", op="count"),
                             Filters.parse(["year=2018", "primary_area=optimization"]),
                             SimpleNamespace(papers=papers))
    assert kept.as_strings() == ["year=2018"]
    assert "The 2018 list has no primary areas" in notes[0].text
    kept, notes = list_notes(Plan(papers="catalog", op="count"),
                             Filters.parse(["year=2026", "primary_area=optimization"]),
                             SimpleNamespace(papers=papers))
    assert "primary_area=optimization" in kept.as_strings() and not notes


def test_a_topic_no_paper_of_the_filters_has_is_counted_zero_with_no_papers(two_years, scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask("how many 2026 papers on knitting patterns?", settings, retriever, scripted)
    ans = ask("what about 2018?", settings, retriever, scripted, history=[turn_after(first)])
    said = sum("knitting" in (r["title"] + " " + r["abstract"]).lower() for r in rows)
    assert said == 0  # (the fixture: no paper says it)
    assert ans.text.startswith(f"0 of the {len(AS_2018)} papers matching year=2018")
    assert not ans.refused and ans.hits == []


def test_the_year_of_the_paper_built_on_is_not_the_papers_asked_for(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("2026 papers that build on online-to-nonconvex conversion (the 2018 paper)",
              settings, retriever, scripted)
    assert ans.plan["filters"] == ["year=2026"]
    assert ans.hits and all(h.paper.year == 2026 for h in ans.hits)


def test_a_count_and_its_mean_asked_in_two_clauses_is_the_catalogs(two_years, scripted):
    settings, retriever, rows = two_years
    ans = ask("how many workshop invites did iclr 2018 send out, and what was their average "
              "rating?", settings, retriever, scripted)
    assert sorted(ans.plan["filters"]) == ["status=workshop", "year=2018"]
    assert not ans.plan["topic"] and ans.plan["mean_rating"]
    invited = [r for i, r in enumerate(rows) if AS_2018.get(i) == "Workshop"]
    mean = sum(sum(r["ratings"]) / len(r["ratings"]) for r in invited) / len(invited)
    assert ans.text.startswith(f"{len(invited)} of the ") and \
        f"Their mean reviewer rating is {mean:.2f}" in ans.text



def test_a_decision_asked_of_a_years_topic_count_filters_the_papers_it_counted(two_years,
                                                                                scripted):
    from rag.understand.history import turn_after

    settings, retriever, rows = two_years
    first = ask("how many 2026 papers on convex optimization?", settings, retriever, scripted)
    n = int(re.match(r"\D*(\d+) of the", first.text).group(1))
    ans = ask("which of the 2026 ones got an oral?", settings, retriever, scripted,
              history=[turn_after(first)])
    # among the papers that count counted, not every 2026 oral of the list
    assert f"papers the previous answer counted on “convex optimization”" in ans.text
    assert f"of the {n} papers" in ans.standalone_question
    orals = {rows[i]["id"] for i in ORALS_2026}
    assert {h.id for h in ans.hits} <= orals
