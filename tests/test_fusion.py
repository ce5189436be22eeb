"""Learned fusion (issue 21): the weights file and its training script, the features on a
fake-embedder index, the named-paper rule, the eval report's added keys, TL;DR queries with
coined names masked, and the leak rule with a title that holds "Answer:"."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, SEED, SHARED_EVAL

TINY_WEIGHTS = ROOT / "tests" / "data" / "fusion_tiny_weights.json"
QUESTION = "hybrid genetic search for CVRP with a reinforcement-finetuned LLM"


# --- the weights file -----------------------------------------------------------------------
def test_the_shipped_weights_load_and_name_known_features():
    from rag.retrieve.fusion import CANDIDATE, QUERY, WEIGHTS_FILE, FusionModel, shipped

    model = FusionModel.load(WEIGHTS_FILE)
    assert model.features and len(model.weights) == len(model.features)
    for name in model.features:
        head, *rest = name.split("*")
        assert head in CANDIDATE and all(q in QUERY for q in rest)
    assert all(math.isfinite(w) for w in model.weights)
    assert model.meta["script"] == "bench/train_fusion.py"
    assert model.meta["trained_on"]["tldr"] > 500 and model.meta["off_topic"] == 0
    assert shipped().weights == model.weights


@pytest.mark.parametrize("bad,message", [
    ({"format_version": 99, "features": ["bm25"], "weights": [1.0]}, "format 99"),
    ({"format_version": 1, "features": ["bm25", "nonsense"], "weights": [1.0, 1.0]},
     "unknown fusion feature 'nonsense'"),
    ({"format_version": 1, "features": ["bm25*nonsense"], "weights": [1.0]},
     re.escape("'bm25*nonsense'")),
    ({"format_version": 1, "features": ["bm25", "prf"], "weights": [1.0]}, "one weight per"),
])
def test_a_bad_weights_file_is_refused_with_the_reason(tmp_path, bad, message):
    from rag.retrieve.fusion import FusionModel

    path = tmp_path / "w.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=message):
        FusionModel.load(path)


def test_the_on_topic_threshold_is_refusals():
    from rag.compose.refusal import MIN_DENSE
    from rag.retrieve.fusion import ON_TOPIC_COSINE

    assert ON_TOPIC_COSINE == MIN_DENSE


def _tiny_papers(tmp_path: Path) -> Path:
    """The seed corpus with each abstract's first sentence as its TL;DR."""
    from rag.text import split_sentences

    rows = []
    for line in SEED.read_text().splitlines():
        p = json.loads(line)
        p["tldr"] = split_sentences(p["abstract"])[0]
        rows.append(json.dumps(p))
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_the_training_script_writes_the_committed_weights_of_a_tiny_fixture(fake_index, tmp_path):
    """bench/train_fusion.py on the seed corpus (fake embedder, TL;DR = first sentence) writes
    exactly tests/data/fusion_tiny_weights.json, twice; --check agrees and catches a change."""
    from bench.train_fusion import run
    from rag.retrieve.fusion import FusionModel

    _, retriever = fake_index
    papers = _tiny_papers(tmp_path)
    out = tmp_path / "w.json"
    assert run(retriever, out, papers=papers, eval_files=()) == 0
    assert out.read_text() == TINY_WEIGHTS.read_text()
    assert run(retriever, out, papers=papers, eval_files=(), check=True) == 0
    model = FusionModel.load(out)
    assert model.meta["trained_on"] == {"tldr": 8} and model.meta["questions"] == 8
    out.write_text(out.read_text().replace(str(model.weights[0]), "0.5"))
    assert run(retriever, out, papers=papers, eval_files=(), check=True) == 1


def test_fit_ranks_the_gold_paper_first_on_separable_data():
    from rag.retrieve.fusion import Channels, fit

    def ch(gold_bm25: float) -> Channels:
        n = 5
        bm25 = np.array([gold_bm25, 1.0, 0.5, 0.2, 0.1])
        dense = np.array([0.5, 0.6, 0.4, 0.3, 0.2])
        return Channels([f"p{i}" for i in range(n)], dense, dense, dense, dense, bm25, bm25)

    groups = [(ch(3.0 + i / 10), 0, 1.0) for i in range(6)]
    model = fit(groups, ["prf", "bm25"], C=1.0, negatives=3)
    assert model.weights[1] > 0
    assert all(int(np.argmax(model.scores(c))) == 0 for c, _, _ in groups)
    # negatives: the top 3 of each channel but the gold paper, here rows 1 and 2 every time
    assert model.meta["questions"] == 6 and model.meta["pairs"] == 6 * 2


# --- features on a fake-embedder index --------------------------------------------------------
def test_channels_and_features_on_a_fake_index(fake_index):
    from rag.retrieve.fusion import RARE_DF, feature_matrix
    from rag.text import normalise

    settings, retriever = fake_index
    ch = retriever.fusion_inputs(QUESTION)
    assert len(set(ch.ids)) == len(ch.ids) and len(ch) > 0
    res = retriever.search(QUESTION, k=5, evidence=False, feedback=False)
    assert set(res.dense.ids) | set(res.lexical.ids) <= set(ch.ids)
    # BM25: the exact score of every candidate; its z-score over BM25's own top papers
    full = retriever.bm25_scores(QUESTION)
    assert np.allclose(ch.bm25, [full[retriever.lexical.row[p]] for p in ch.ids])
    pool = np.asarray(res.lexical.scores, dtype=np.float64)
    f = feature_matrix(ch, ["bm25", "bm25_top", "paper", "coverage", "rare_coverage",
                            "bm25_top*bm25_margin", "bm25_top*on_topic"])
    assert np.allclose(f[:, 0], (ch.bm25 - pool.mean()) / pool.std())
    top = int(np.argmax(ch.bm25))
    assert f[:, 1].tolist() == [1.0 if i == top else 0.0 for i in range(len(ch))]
    # paper vectors: the cosine of each candidate's paper vector to the question
    pv = retriever.paper_vectors()
    q = retriever.embedder.embed([normalise(QUESTION)])[0]
    for pid, cos in zip(ch.ids, ch.paper):
        assert cos == pytest.approx(float(pv.vectors[pv.row(pid)] @ q), abs=1e-5)
    # term overlap: shares in [0, 1]; document frequencies as the BM25 matrix holds them
    assert ((0 <= f[:, 3]) & (f[:, 3] <= 1 + 1e-9)).all()
    assert ((0 <= f[:, 4]) & (f[:, 4] <= 1 + 1e-9)).all()
    texts = retriever.search_texts()
    from rag.backends.lexical import query_terms

    for (term, rows), df in zip(retriever.lexical.term_rows(normalise(QUESTION)), ch.term_df):
        having = {p for p, t in texts.items() if term in set(query_terms(t))}
        assert {retriever.lexical.ids[r] for r in rows} == having and df == len(having)
    assert (ch.term_df <= RARE_DF).all()  # 19 papers: every term is rare
    # a question feature multiplies: only BM25's top paper carries its margin
    assert f[top, 5] > 0 and f[:, 5].sum() == f[top, 5]


def test_features_are_only_computed_when_a_model_needs_them(fake_index):
    from rag.retrieve.fusion import needs

    _, retriever = fake_index
    assert needs(["prf", "bm25", "bm25_top*bm25_margin_over1*on_topic"]) == set()
    assert needs(["paper", "bm25_top*rare_terms"]) == {"paper", "terms"}
    ch = retriever.fusion_inputs(QUESTION, needs=frozenset())
    assert ch.paper is None and ch.term_df is None


def test_search_uses_the_learned_fusion_and_fixed_is_the_convex_combination(fake_index):
    from rag.retrieve.combine import zfusion
    from rag.retrieve.fusion import feature_matrix, shipped

    settings, retriever = fake_index
    learned = retriever.search(QUESTION, k=10, evidence=False, feedback=False)
    assert learned.meta["fusion"] == "learned"
    ch = retriever.fusion_inputs(QUESTION, feedback=False)
    scores = dict(zip(ch.ids, feature_matrix(ch, shipped().features) @ shipped().weights))
    assert [h.id for h in learned.hits] == sorted(scores, key=scores.get, reverse=True)[:10]
    retriever.settings = settings.model_copy(update={"fusion": "fixed"})
    fixed = retriever.search(QUESTION, k=10, evidence=False, feedback=False)
    assert "fusion" not in fixed.meta
    lx = {pid: float(retriever.bm25_scores(QUESTION)[retriever.lexical.row[pid]])
          for pid in fixed.dense.ids}
    expected = zfusion(fixed.dense, fixed.lexical, settings.lexical_weight, lexical_all=lx)
    assert {h.id: h.score for h in fixed.hits} == pytest.approx(
        {pid: expected[pid] for pid in (h.id for h in fixed.hits)})


# --- the named-paper rule --------------------------------------------------------------------
@pytest.mark.parametrize("fused,named,bm25_top,prf_top,first,overruled", [
    ({"a": 3.0, "b": 2.0, "c": 1.0}, ["c"], ["a"], ["b"], "c", False),   # named goes first
    ({"a": 3.0, "b": 2.0, "c": 1.0}, ["c", "b"], ["a"], ["b"], "b", False),  # fused order
    ({"a": 3.0, "b": 2.0, "c": 1.0}, ["c"], ["a"], ["a"], "a", True),    # all channels: a
    ({"a": 3.0, "b": 2.0, "c": 1.0}, ["a"], ["a"], ["a"], "a", False),   # it names the top
    ({"a": 3.0, "b": 2.0}, [], ["a"], ["b"], "a", False),
])
def test_put_named_first(fused, named, bm25_top, prf_top, first, overruled):
    from rag.retrieve.combine import put_named_first

    out, meta = put_named_first(fused, named, bm25_top, prf_top)
    assert max(out, key=out.get) == first
    assert ("named_overruled" in meta) is overruled
    assert ("named" in meta) is bool(named and not overruled)


NAMED_PAPERS = [
    {"id": "rv", "title": "ReVeal: Self-Evolving Code Agents via Reliable Self-Verification",
     "abstract": "Code agents that verify their own programs."},
    {"id": "ls", "title": "LoRA-S: Low Rank Adaptation via Sylvester equations",
     "abstract": "A low rank adapter solved with Sylvester equations."},
    {"id": "so", "title": "StepORLM: A Self-Evolving Framework for Operations Research",
     "abstract": "Language models for operations research problems."},
] + [{"id": f"w{i}", "title": f"Study {i} of optimisation",
      "abstract": f"We reveal that LoRA fine-tuning of optimisers fails in case {i}."}
     for i in range(5)]


@pytest.fixture
def named_index(tmp_path, settings, fake_embedder):
    from index.build import build_index
    from rag.retrieve.retriever import Retriever

    path = tmp_path / "named.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in NAMED_PAPERS))
    build_index(path, settings=settings, embedder=fake_embedder, progress=False,
                log=lambda m: None)
    return Retriever.open(settings, fake_embedder)


@pytest.mark.parametrize("question,named", [
    ("We reveal why code agents fail", []),          # a word, in 5 other papers
    ("How does ReVeal verify programs?", ["rv"]),     # the name as written
    ("The method expands LoRA's capacity", []),       # not the name LoRA-S
    ("what does LoRA-S solve?", ["ls"]),
    ("what does lora-s solve?", []),                 # "loras" is LoRA's plural too
    ("what is steporlm?", ["so"]),                    # a rare word: the name in lower case
])
def test_a_title_name_written_as_a_plain_word_names_only_a_rare_one(named_index, question, named):
    assert named_index.named(question) == named


# --- the eval report ---------------------------------------------------------------------------
def test_the_eval_report_keeps_its_keys_and_adds_the_oracle(fake_index):
    from rag.evaluate.retrieval import run_queries

    settings, retriever = fake_index
    queries = [
        {"qid": "a", "type": "specific", "question": QUESTION, "gold": ["aITKXFeivk"]},
        {"qid": "b", "type": "tldr", "question": "sparsifiers of kernel graphs under updates",
         "gold": ["ZLJsJ8IWUz"]},
        {"qid": "c", "type": "specific", "question": "mode connectivity entropic confinement",
         "gold": ["XyrNcsJhyN"]},
        {"qid": "d", "type": "out_of_corpus", "question": "best sourdough bread recipe",
         "gold": []},
    ]
    report = run_queries(queries, retriever, settings)
    assert set(report) >= {"n", "by_type", "refusal", "baselines", "oracle", "gap"}
    assert set(report["baselines"]) >= {"bm25", "dense", "paper_vectors"}
    for system in [report, *report["baselines"].values()]:
        assert set(system["refusal"]) == {"out_of_corpus_refused", "in_corpus_refused"}
    assert set(report["by_type"]) == {"specific", "tldr"}
    keys = {"n", "recall@1", "recall@5", "recall@10", "mrr", "all_gold@10"}
    for t, m in report["by_type"].items():
        assert set(m) == keys and set(report["oracle"]["by_type"][t]) == keys
        for k in keys - {"n"}:
            o = report["oracle"]["by_type"][t][k]
            assert o >= max(report["baselines"][b]["by_type"][t][k] for b in ("bm25", "dense"))
            assert report["gap"]["by_type"][t][k] == pytest.approx(m[k] - o, abs=1e-4)
    assert report["oracle"]["channels"] == ["bm25", "dense"]


def test_the_text_report_shows_the_oracle_and_the_gap(fake_index):
    from rag.evaluate.retrieval import format_report, run_queries

    settings, retriever = fake_index
    report = run_queries([{"qid": "a", "type": "specific", "question": QUESTION,
                           "gold": ["aITKXFeivk"]}], retriever, settings)
    text = format_report(report)
    assert "\noracle   specific" in text and "\ngap      specific" in text
    assert "\npapervec specific" in text


# --- TL;DR queries -----------------------------------------------------------------------------
@pytest.mark.parametrize("title,tldr,expected", [
    ("StepORLM: A Self-Evolving Framework", "We propose StepORLM, a self-evolving framework.",
     "We propose a self-evolving framework."),
    ("HippoTune: A Fine-Tuning Method", "HippoTune is a continual learning method.",
     "This work is a continual learning method."),
    ("String Seed of Thought: Prompting", "We propose String Seed of Thought (SSoT), a method. "
     "SSoT works.", "We propose a method. This work works."),
    ("FlowNIB: An Analysis", "Our FlowNIB method measures this.", "Our method measures this."),
    ("EEPO: Exploration", "We propose EEPO, which helps.", "We propose a method, which helps."),
    ("Multi-Marginal Flow Matching", "Interpolants in multi-marginal flow matching.",
     "Interpolants in multi-marginal flow matching."),   # an ordinary hyphenated word
])
def test_coined_names_are_masked(title, tldr, expected):
    from collections import Counter

    from rag.evaluate.tldr import coined_names, mask_names

    text, found = mask_names(tldr, coined_names(title, Counter()))
    assert text == expected
    assert bool(found) is (text != tldr)


def test_tldr_queries_follow_the_split_and_drop_a_bare_name():
    from rag.evaluate.tldr import part_of, split_of, tldr_queries

    papers = [{"id": f"id{i}", "title": "MOSAIC: Personal Generation" if i == 0 else f"T{i}",
               "abstract": "x", "tldr": "MOSAIC" if i == 0 else f"We study problem number {i}."}
              for i in range(40)]
    dev = tldr_queries(papers, "dev")
    held = tldr_queries(papers, "heldout")
    assert {q["gold"][0] for q in dev} == {p["id"] for p in papers[1:]
                                          if split_of(p["id"]) == "dev"}
    assert {q["gold"][0] for q in held} | {q["gold"][0] for q in dev} == \
        {p["id"] for p in papers[1:]}
    train = tldr_queries(papers, "dev", "train")
    assert {q["gold"][0] for q in train} == {p["id"] for p in papers[1:]
                                            if part_of(p["id"]) == "train"}
    assert all(q["type"] == "tldr" and q["turns"] is None for q in dev)


def test_the_split_is_shared_evals():
    """Every gold paper of shared/eval's dev files is in the dev split."""
    from rag.evaluate.retrieval import load_queries
    from rag.evaluate.tldr import split_of

    files = sorted(SHARED_EVAL.glob("dev_*.jsonl"))
    if not files:
        pytest.skip(f"{SHARED_EVAL} is absent")
    golds = [g for f in files for q in load_queries(f) for g in q.get("gold") or []]
    assert golds and all(split_of(g) == "dev" for g in golds)


# --- the leak rule and a title holding "Answer:" -----------------------------------------------
TITLE = ("Distilling the Thought, Watermarking the Answer: A Principle Semantic Guided Watermark "
         "for Reasoning Large Language Models")


@pytest.mark.parametrize("text,titles,leak", [
    (f"[1] {TITLE} embeds a watermark in the answer.", [TITLE], False),
    ("The paper Distilling the Thought, Watermarking the Answer: semantic marks [1].", [TITLE],
     False),                                            # quoted in part, other case
    (f"[1] {TITLE} embeds a watermark.", [], True),     # without the titles: as before
    (f"{TITLE}. Answer: the moon [1].", [TITLE], True),  # scaffolding beside the title
    ('Title: StepORLM Abstract: """We', [TITLE], True),
])
def test_a_quoted_title_is_no_prompt_leak(text, titles, leak):
    from rag.compose.guards import count_leaks, leak_reason

    assert (leak_reason(text, titles) is not None) is leak
    assert count_leaks(text, titles) == int(leak)


def test_eval_answers_counts_no_leak_for_an_answer_naming_that_title():
    from rag.evaluate.answers import record
    from rag.types import Answer, Hit, Paper

    paper = Paper("wm", TITLE, "We watermark reasoning models.")
    ans = Answer(question="q", standalone_question="q",
                 text=f"[1] {TITLE}: We watermark reasoning models [1].",
                 hits=[Hit(paper, 1.0)], citations=[], refused=False)
    assert record({"qid": "x", "type": "specific", "gold": ["wm"]}, ans, [])["leaks"] == 0


def test_eval_answers_counts_no_leak_for_the_templates_own_heading():
    # the extractive answer's "Other papers:" matched the Papers: scaffolding rule: 31 of 45
    # dev_hard answers were counted as leaks for it; the same words written by a model still are
    from rag.evaluate.answers import record
    from rag.types import Answer, AnswerSentence, Hit, Paper

    paper = Paper("wm", TITLE, "We watermark reasoning models.")
    for kind, leaks in (("heading", 0), ("claim", 1)):
        said = AnswerSentence("Other papers:", [], kind=kind, support=1.0)
        ans = Answer(question="q", standalone_question="q",
                     text="We watermark reasoning models [1].\n\nOther papers:\n- [1] x",
                     hits=[Hit(paper, 1.0)], citations=[], refused=False, sentences=[said])
        assert record({"qid": "x", "type": "specific", "gold": ["wm"]}, ans, [])["leaks"] == leaks


# --- real models, seed corpus ------------------------------------------------------------------
@pytest.mark.integration
def test_learned_fusion_finds_the_seed_questions_first(real_index, real_settings):
    """dev_easy's seed questions (the bundled corpus, real embedder): every gold paper first,
    with the learned fusion as with the fixed one."""
    from rag.evaluate.retrieval import load_queries

    path = SHARED_EVAL / "dev_easy.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    seed = [q for q in load_queries(path) if q["type"] == "seed"]
    assert seed
    for fusion in ("learned", "fixed"):
        real_index.settings = real_settings.model_copy(update={"fusion": fusion})
        for q in seed:
            res = real_index.search(q["question"], k=5, evidence=False)
            assert res.hits[0].id in q["gold"], (fusion, q["question"])
            assert ("fusion" in res.meta) is (fusion == "learned")
    real_index.settings = real_settings
