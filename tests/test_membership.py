"""Topic membership by meaning (rag/retrieve/membership.py): features, the model, its shipped
weights, the labelled topic files it is fitted and measured on, and what it changes in answers
(counts, a survey's cut, the fallback of a filter that leaves none, "Also relevant").

The expected values are written by hand from the definitions in the module docstrings, or read
from the labelled files (tests/data/topics/, written by helpers who had not read the code)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SHARED_DATA

TOPICS = Path(__file__).parent / "data" / "topics"


# --- features -------------------------------------------------------------------------------
def _channels():
    from rag.retrieve.fusion import Channels

    nan = np.nan
    return Channels(
        ids=["a", "b", "c"],
        dense=np.array([0.6, 0.4, nan]), dense_pool=np.array([0.6, 0.4, 0.3]),
        prf=np.array([0.5, nan, 0.2]), prf_pool=np.array([0.5, 0.2, 0.1]),
        bm25=np.array([10.0, 5.0, 0.0]), bm25_pool=np.array([10.0, 5.0]),
        paper=np.array([0.7, 0.5, 0.1]), paper_pool=np.array([0.7, 0.5, 0.1]),
        term_df=np.array([1.0, 3.0]),
        term_present=np.array([[True, False, False], [True, True, False]]),
        n_docs=10)


def test_features_follow_their_definitions():
    from rag.retrieve.membership import CHANNEL_FEATURES, FEATURES, features

    head = np.array([[True, False, False], [False, True, False]])
    x = features(_channels(), head)
    col = {name: x[:, i] for i, name in enumerate(list(FEATURES)[:CHANNEL_FEATURES])}
    assert x.shape == (3, CHANNEL_FEATURES)
    assert col["dense"].tolist() == [0.6, 0.4, 0.3]      # missing: the lowest candidate's
    assert col["prf"].tolist() == [0.5, 0.1, 0.2]
    assert np.allclose(col["dense_gap"], [0.0, -0.2, -0.3])
    assert np.allclose(col["paper_gap"], [0.0, -0.2, -0.6])
    assert np.allclose(col["bm25_share"], [1.0, 0.5, 0.0])
    assert np.allclose(col["bm25_z"], [1.0, -1.0, -3.0])  # pool mean 7.5, sd 2.5
    idf = np.log((10 - np.array([1.0, 3.0]) + 0.5) / (np.array([1.0, 3.0]) + 0.5) + 1.0)
    share = idf / idf.sum()
    assert np.allclose(col["coverage"], [1.0, share[1], 0.0])
    assert col["all_terms"].tolist() == [1.0, 0.0, 0.0]
    assert np.allclose(col["head_coverage"], [share[0], share[1], 0.0])


def test_features_without_terms_or_head_are_zero_there():
    from rag.retrieve.membership import FEATURES, features

    ch = _channels()
    ch.term_df, ch.term_present = None, None
    x = features(ch)
    for name in ("coverage", "all_terms", "head_coverage"):
        assert not x[:, list(FEATURES).index(name)].any()


# --- the model --------------------------------------------------------------------------------
def test_fit_separates_and_is_deterministic():
    from rag.retrieve.membership import FEATURES, fit

    rng = np.random.default_rng(0)
    rows, labels = [], []
    for _ in range(6):
        y = np.array([1] * 5 + [0] * 20)
        x = rng.normal(size=(25, len(FEATURES)))
        x[:, 2] += 3 * y  # the paper cosine tells them apart
        rows.append(x)
        labels.append(y)
    a, b = fit(rows, labels), fit(rows, labels)
    assert np.array_equal(a.coef, b.coef) and a.intercept == b.intercept
    p = a.probabilities(np.concatenate(rows))
    y = np.concatenate(labels)
    assert p[y == 1].mean() > 0.7 > 0.3 > p[y == 0].mean()
    assert a.coef[2] > 0
    few = fit(rows, labels, n_features=3)  # the first three features only
    assert few.names == list(FEATURES)[:3] and few.coef.shape == (3,)
    assert few.probabilities(np.concatenate(rows)).shape == (150,)


def test_counts_and_filters_use_the_counter_surveys_the_model():
    from rag.retrieve.membership import CHANNEL_FEATURES, FEATURES, MembershipModel

    n = len(FEATURES)
    counter = MembershipModel(list(FEATURES)[:CHANNEL_FEATURES], np.zeros(CHANNEL_FEATURES),
                              np.ones(CHANNEL_FEATURES), np.ones(CHANNEL_FEATURES), 0.0)
    m = MembershipModel(list(FEATURES), np.zeros(n), np.ones(n),
                        np.r_[np.zeros(n - 1), 1.0], 0.0, counter=counter)
    x = np.zeros((2, n))
    x[0, -1] = 5.0   # only the last (MaxSim) feature: the model sees it, the counter does not
    x[1, 0] = 5.0    # only the first: the counter sees it, the model does not
    p, c = m.probabilities(x), m.count_probabilities(x)
    assert p[0] > 0.99 and p[1] == pytest.approx(0.5)
    assert c[0] == pytest.approx(0.5) and c[1] > 0.99
    again = MembershipModel.from_json(json.loads(json.dumps(m.to_json())))
    assert np.allclose(again.count_probabilities(x), c)
    bad = m.to_json()
    bad["counter"]["names"] = list(FEATURES)[1:CHANNEL_FEATURES + 1]
    with pytest.raises(ValueError, match="refit"):
        MembershipModel.from_json(bad)


def test_members_are_counted_by_the_count_probabilities():
    from rag.retrieve.membership import Membership

    m = Membership("t", ["a", "b", "c"], np.array([0.9, 0.4, 0.1]), 0.3, 0.2,
                   count_probs=np.array([0.2, 0.5, 0.6]))
    assert m.members() == ["b", "c"] and m.expected() == pytest.approx(1.3)
    assert m.prob("a") == pytest.approx(0.9)  # a survey's order and cut: the model's


def test_the_model_round_trips_and_refuses_other_features():
    from rag.retrieve.membership import FEATURES, MembershipModel

    m = MembershipModel(list(FEATURES), np.zeros(len(FEATURES)), np.ones(len(FEATURES)),
                        np.arange(len(FEATURES), dtype=float), -1.0, threshold=0.3, show=0.2,
                        blend=0.5, figures={"x": 1})
    again = MembershipModel.from_json(json.loads(json.dumps(m.to_json())))
    x = np.eye(len(FEATURES))
    assert np.allclose(again.probabilities(x), m.probabilities(x))
    assert (again.threshold, again.show, again.blend, again.figures) == (0.3, 0.2, 0.5, {"x": 1})
    # p = sigmoid(x @ coef + intercept): the first row is sigmoid(0 - 1)
    assert m.probabilities(x)[0] == pytest.approx(1 / (1 + np.exp(1.0)))
    bad = m.to_json() | {"names": ["dense"]}
    with pytest.raises(ValueError, match="refit"):
        MembershipModel.from_json(bad)


def test_membership_members_expected_prob_and_order_key():
    from rag.retrieve.membership import Membership

    m = Membership("t", ["a", "b", "c"], np.array([0.9, 0.4, 0.1]), 0.3, 0.2, blend=0.5)
    # blend * p + (1 - blend) * (1 - rank / n)
    assert m.order_key(0.4, 0, 50) == pytest.approx(0.7)
    assert m.order_key(0.9, 25, 50) == pytest.approx(0.7)
    assert m.members() == ["a", "b"]
    assert m.members({"b", "c"}) == ["b"]
    assert m.expected() == pytest.approx(1.4) and m.expected({"c"}) == pytest.approx(0.1)
    assert m.prob("b") == pytest.approx(0.4) and m.prob("zzz") == 0.0


def test_the_shipped_weights_were_fitted_on_the_tune_file_and_measured_on_the_other():
    from rag.retrieve.membership import FEATURES, shipped

    m = shipped()
    assert m is not None and m.names == list(FEATURES)
    assert m.counter is not None and m.counter.names == list(FEATURES)[:10]
    assert 0 < m.show <= m.threshold < 1
    f = m.figures
    assert f["tune"]["file"] == "topics_a.jsonl" and f["measure"]["file"] == "topics_b.jsonl"
    # the measure file's counts are far better than the phrase rule's 0.15 (README; 0.45 since
    # its long count questions are read as counts: two had been surveys whose first number was
    # taken for a count, one of them within range by chance)
    assert f["measure"]["count_within"] >= 0.4


def test_a_broad_topic_keeps_the_phrase_count():
    from rag.conference.facets import TopicMembers, broad

    few = TopicMembers("rl", [object()] * 22, 30.0, 0.25, (883, 120))
    assert broad(few)
    assert not broad(TopicMembers("kv", [object()] * 23, 19.0, 0.25, (11, 3)))
    assert not broad(TopicMembers("x", [object()] * 60, 19.0, 0.25, (110, 20)))


# --- the labelled topics ----------------------------------------------------------------------
@pytest.mark.parametrize("name,n", [("topics_a.jsonl", 20), ("topics_b.jsonl", 20),
                                    ("topics_c.jsonl", 16)])
def test_topic_files_are_well_formed(name, n):
    from rag.evaluate.topics import load_topics

    rows = load_topics(TOPICS / name)
    assert len(rows) == n
    assert len({r["topic_id"] for r in rows}) == n
    for r in rows:
        on, border = set(r["on_topic"]), set(r.get("borderline") or [])
        assert len(on) == len(r["on_topic"]) and not on & border
        assert all(r[k].strip() for k in ("survey", "terse", "count"))


def test_the_narrowing_exchanges_are_well_formed_and_scored_by_their_plan():
    from bench.narrowing import FILE, handled_as

    rows = [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    labels = [r["label"] for r in rows]
    assert len(rows) == 60 and all(r["first"].strip() and r["turn"].strip() for r in rows)
    assert {lab: labels.count(lab) for lab in set(labels)} == {
        "narrow_topic": 25, "narrow_term": 12, "new_search": 13, "filter_meta": 10}
    prev = {"papers": "previous", "op": "lookup", "filters": []}
    assert handled_as(prev, "lookup") == "narrow"
    assert handled_as({**prev, "filters": ["status=oral"]}, "list") == "filter_meta"
    assert handled_as({**prev, "papers": "search", "op": "survey"}, "survey") == "new_search"
    assert handled_as({**prev, "op": "list"}, "list") == "other:previous/list/list"


def test_topic_ids_are_accepted_papers():
    path = SHARED_DATA / "iclr2026_accepted.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is absent (shared paper data beside the repo)")
    ids = {json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()
           if line.strip()}
    for name in ("topics_a.jsonl", "topics_b.jsonl", "topics_c.jsonl"):
        for line in (TOPICS / name).read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            assert set(r["on_topic"]) | set(r.get("borderline") or []) <= ids, r["topic_id"]


def test_topic_metrics():
    from rag.evaluate.topics import first_number, precision, recall_at

    on = {"a", "b", "c"}
    assert recall_at(["a", "x", "b"], on, 15) == pytest.approx(2 / 3)
    assert recall_at(["a"], on, 1) == 1.0  # over min(len(on), k)
    assert precision(["a", "x", "y"], on, {"y"}) == (1, 2)
    assert first_number("About 1,234 of the 5,358 papers") == 1234
    assert first_number("none") is None


def test_a_bad_topic_line_is_named(tmp_path):
    from rag.errors import PaperchatError
    from rag.evaluate.topics import load_topics

    p = tmp_path / "t.jsonl"
    p.write_text('{"topic": "x", "on_topic": ["a"]}\n{"topic": "y"}\n', encoding="utf-8")
    with pytest.raises(PaperchatError, match="line 2"):
        load_topics(p)


# --- readings of the issue's fresh conversations ----------------------------------------------
@pytest.mark.parametrize("text,asc", [
    ("sort em best reviewed -> worst", False), ("best->worst", False),
    ("sort them from best to worst", False), ("worst to best", True),
    ("lowest rated first", True), ("sort by rating, worst first", True)])
def test_rating_direction(text, asc):
    from rag.understand.rating_order import ascending

    assert ascending(text) is asc


@pytest.mark.parametrize("query,topic", [
    ("papers on KV cache compression", "KV cache compression"),
    ("on diffusion language models", "diffusion language models"),
    ("work about model merging?", "model merging"),
    ("reinforcement learning", "reinforcement learning"),
    # asking whether there are any is no part of the topic
    ("small-molecule conformer generation w/ diffusion, anything there?",
     "small-molecule conformer generation w/ diffusion"),
    ("graph neural nets for weather forecasting, anything at iclr26?",
     "graph neural nets for weather forecasting"),
    ("time series foundation models - any?", "time series foundation models")])
def test_topic_phrase(query, topic):
    from rag.understand.topics import topic_phrase

    assert topic_phrase(query) == topic


@pytest.mark.parametrize("query,topic", [
    ("Which papers study federated learning with differential privacy?",
     "federated learning with differential privacy"),
    ("What work is there on foundation models pretrained on EEG?",
     "foundation models pretrained on EEG"),
    ("Papers proposing estimators for treatment effects?", "estimators for treatment effects"),
    ("Which papers are about diffusion policies?", "diffusion policies"),
    ("papers on KV cache compression", "KV cache compression"),
    ("reward hacking in RLHF", "reward hacking in RLHF")])
def test_survey_topic_is_the_question_less_its_frame(query, topic):
    from rag.understand.topics import survey_topic

    assert survey_topic(query) == topic


# --- real models on the seed corpus -----------------------------------------------------------
@pytest.mark.integration
def test_membership_on_the_seed_corpus(real_index):
    from rag.retrieve.membership import membership

    m = membership(real_index, "LLMs fine-tuned to write crossover operators for vehicle routing")
    assert m is not None and len(m.ids) == 19
    assert m.ids[0] == "aITKXFeivk" and m.prob("aITKXFeivk") >= m.threshold
    # the Hamilton-Jacobi optimal-transport paper is not about it (the README's first question
    # listed it under "Also relevant")
    assert m.prob("YbQxus1KEa") < m.show


@pytest.mark.integration
def test_the_readme_question_lists_no_off_topic_paper_as_also_relevant(real_index,
                                                                         real_settings,
                                                                         real_generator):
    from rag.chat.answer import answer

    ans = answer("Which paper fine-tunes an LLM to write crossover operators for a "
                 "vehicle-routing solver?", retriever=real_index, generator=real_generator,
                 settings=real_settings, mode="extractive")
    assert ans.hits[0].id == "aITKXFeivk"
    assert "Hamilton" not in ans.text


@pytest.mark.integration
def test_a_survey_on_the_seed_corpus_shows_fewer_papers_and_says_why(real_index, real_settings,
                                                                     real_generator):
    from rag.chat.answer import answer

    ans = answer("which papers do scheduling?", retriever=real_index, generator=real_generator,
                 settings=real_settings, mode="extractive")
    ids = [h.id for h in ans.hits]
    # the two scheduling papers of the seed list, read by hand
    assert {"Zcn4n57lHg", "YAgOaYedLQ"} <= set(ids) and len(ids) < 15
    assert "relevance model" in ans.text


# --- real models on the accepted list ---------------------------------------------------------
@pytest.fixture(scope="module")
def accepted(accepted_index, real_embedder, real_generator):
    from rag.chat.pipeline import Pipeline

    settings, _, _ = accepted_index
    return Pipeline(settings, embedder=real_embedder, generator=real_generator)


def _ask(pipe, *turns):
    from rag.chat.answer import answer
    from rag.understand.history import turn_after

    history, out = [], []
    for q in turns:
        ans = answer(q, retriever=pipe.retriever, generator=pipe.generator,
                     settings=pipe.settings, history=history, mode="extractive")
        history.append(turn_after(ans))
        out.append(ans)
    return out


@pytest.mark.slow
@pytest.mark.integration
def test_conversations_of_the_issue(accepted):
    from rag.evaluate.topics import first_number

    # "top 5 highest-rated papers" gives 5 and states the ties at the cut (it listed 19)
    top = _ask(accepted, "top 5 highest-rated papers")[0]
    assert len(top.hits) == 5 and "tied" in top.text
    # "Top 3 highest rated" after an unsorted list: its 3 best-rated, not [1]-[3] re-sorted
    survey, top3 = _ask(accepted, "papers on KV cache compression", "Top 3 highest rated")
    rated = sorted(((h.paper.rating or {}).get("mean", -1) for h in survey.hits), reverse=True)
    got = [(h.paper.rating or {}).get("mean", -1) for h in top3.hits]
    assert len(got) >= 3 and min(got) >= rated[2] and {h.id for h in top3.hits} <= \
        {h.id for h in survey.hits}
    # "sort em best reviewed -> worst" sorts descending
    ans = _ask(accepted, "papers on KV cache compression", "sort em best reviewed -> worst")[-1]
    means = [(h.paper.rating or {}).get("mean", -1) for h in ans.hits]
    assert len(means) > 2 and means == sorted(means, reverse=True)
    # "how many papers on this topic are there?" after "compare the first two" counts the topic
    *_, count = _ask(accepted, "papers on KV cache compression", "compare the first two",
                     "how many papers on this topic are there?")
    assert count.kind == "count" and first_number(count.text) > 5
    assert "“KV cache compression”" in count.text
    # after a survey asked as a question, the count names the topic, not the question
    *_, count = _ask(accepted, "Which papers study federated learning with differential privacy?",
                     "how many papers on this topic overall?")
    assert "“federated learning with differential privacy”" in count.text
    # "compare them" after a filter that left one paper says so and offers its neighbours
    *_, one = _ask(accepted, "papers on hallucination in vision-language models",
                   "which of these are orals?", "compare them")
    assert "only one paper" in one.text and one.kind == "similar" and len(one.hits) >= 5
    # "what does it propose?" after a tie of best papers describes each of them
    *_, best, what = _ask(accepted, "papers on KV cache compression", "the best one?",
                          "what does it propose?")
    assert len(best.hits) >= 2  # a tie at 6.0, read off the list by hand
    assert all(f"[{n}]" in what.text for n in range(1, len(best.hits) + 1))
    assert "does not say this directly" not in what.text


@pytest.mark.slow
@pytest.mark.integration
def test_fresh_topic_conversations_read_in_the_browser(accepted):
    from rag.evaluate.topics import first_number

    # "did any get a spotlight?" where the list has none (ICLR 2026: orals and posters): said
    # so with what the list holds, no empty "instead" list
    *_, spot = _ask(accepted, "continual learning for vision-language models",
                    "did any get a spotlight")
    assert not spot.hits and "no paper in this index does" in spot.text
    assert "Accept (Oral)" in spot.text
    # "what does the second one propose exactly": what it proposes, not the sentence closest to
    # "exactly" ("Code, models and new data will be publicly released.")
    *_, what = _ask(accepted, "machine unlearning for LLMs", "what does the second one propose "
                    "exactly")
    assert "does not say this directly" not in what.text and "propose" in what.text.lower()
    # "which of these use tree-based drafting?": the papers that say "tree", not every paper
    # with "based" (9 of 10 before)
    survey, tree = _ask(accepted, "speculative decoding papers",
                        "which of these use tree-based drafting instead of a single draft "
                        "sequence?")
    n = first_number(tree.text)
    assert n is not None and 1 <= n <= len(survey.hits) // 2
    assert all("tree" in f"{h.paper.title} {h.paper.abstract}".lower() for h in tree.hits[:n])
    # "any with 6 or more?" after "what does the third one propose": among the survey's papers,
    # not the one described (which left none, then searched the describing turn's words)
    survey, _, rated = _ask(accepted, "machine unlearning for LLMs",
                            "what does the third one propose", "any with 6 or more?")
    assert rated.hits and {h.id for h in rated.hits} <= {h.id for h in survey.hits}
    assert all(h.paper.rating["mean"] >= 6 for h in rated.hits)
    assert "new search" not in rated.text
    # "and which of those are orals?" after a rating filter that kept none: the orals on the
    # survey's topic, said so, never every oral of the list (the filter turn's words are no
    # topic to search: it listed all 224)
    _, kept, orals = _ask(accepted, "world models for reinforcement learning",
                          "only keep the ones rated 6 or more", "and which of those are orals?")
    assert all(h.paper.status == "Accept (Oral)" for h in orals.hits) and len(orals.hits) < 10
    assert {h.id for h in orals.hits} <= {h.id for h in kept.hits} or \
        "on this topic" in orals.text and "world models for reinforcement learning" in orals.text


@pytest.mark.slow
@pytest.mark.integration
def test_a_filter_that_leaves_none_never_lists_off_topic_papers(accepted):
    from rag.retrieve.membership import membership

    *_, ans = _ask(accepted, "papers on grokking", "any orals?")
    m = membership(accepted.retriever, "grokking")
    assert all(m.prob(h.id) >= m.threshold for h in ans.hits)
    assert "none of the" in ans.text.lower()


@pytest.mark.slow
@pytest.mark.integration
def test_topic_counts_on_the_measure_file_beat_the_phrase_rule(accepted):
    """The measure file's count questions through the whole answer path: within [0.67, 1.5]x
    the number read by hand for at least 8 of the 20 (the phrase rule: 3 of 20; 9 since the long
    count questions are read as counts, 10 before, one of them a survey whose first number fell
    in range by chance)."""
    from rag.evaluate.topics import COUNT_TOLERANCE, first_number, load_topics

    rows = load_topics(TOPICS / "topics_b.jsonl")
    lo, hi = COUNT_TOLERANCE
    within = 0
    for r in rows:
        ans = _ask(accepted, r["count"])[0]
        n = first_number(ans.text)
        within += n is not None and lo <= n / len(r["on_topic"]) <= hi
    assert within >= 8, within


def test_one_paper_of_the_previous_answer_is_said_in_the_singular():
    from rag.understand.plan import Plan

    assert Plan(papers="previous", ids=["x"]).source_text() == \
        "the one paper of the previous answer"
    assert Plan(papers="previous", ids=["x", "y"]).source_text() == \
        "2 papers from the previous answer"
