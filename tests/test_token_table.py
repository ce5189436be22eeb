"""The word-piece table (rag/retrieve/token_table.py): MaxSim over averaged in-context vectors,
its build (bench/build_token_table.py), the shipped file, and its use as a membership feature.

Expected values are written by hand from the module docstrings' definitions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _table(rows: dict[str, list[float]]):
    """A TokenTable over the bundled tokenizer whose rows are the word pieces ``rows`` names
    (each a single piece), with the given vectors."""
    from rag.retrieve.token_table import TokenTable

    base = TokenTable.load()
    ids = np.array([base.tokenizer.token_to_id(w) for w in rows])
    assert (ids != None).all()  # noqa: E711 (tokenizers gives None for an unknown piece)
    vecs = np.array(list(rows.values()), np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return TokenTable(ids.astype(np.int64), vecs, base.tokenizer, base.tokenizer.get_vocab_size())


def test_maxsim_is_the_mean_over_question_pieces_of_the_best_cosine():
    # three pieces: "cache" and "memory" close (cos 0.8), "protein" far from both
    t = _table({"cache": [1, 0, 0], "memory": [0.8, 0.6, 0], "protein": [0, 0, 1],
                "compression": [0, 1, 0]})
    texts = {"a": "memory compression", "b": "protein", "c": "cache"}
    s = t.scores("cache compression", ["a", "b", "c"], texts)
    # a: cache->memory 0.8, compression->compression 1 => 0.9; b: 0 and 0 => 0;
    # c: cache->cache 1, compression->cache 0 => 0.5
    assert np.allclose(s, [0.9, 0.0, 0.5], atol=1e-6)


def test_a_piece_without_a_row_matches_only_itself():
    t = _table({"cache": [1, 0, 0]})
    texts = {"a": "cache protein", "b": "cache"}
    # "protein" has no row: 1 where the paper has it, 0 where not; "cache" matches itself
    assert np.allclose(t.scores("cache protein", ["a", "b"], texts), [1.0, 0.5])


def test_question_frame_words_and_stopwords_are_not_scored():
    from rag.retrieve.token_table import TokenTable

    t = TokenTable.load()
    assert t.question_pieces("Which papers propose ways to compress the KV cache?") == \
        t.tokenizer.encode("compress KV cache", add_special_tokens=False).ids
    # a question of frame words only keeps them all rather than score nothing
    assert len(t.question_pieces("which papers")) == 2


def test_no_papers_no_scores():
    from rag.retrieve.token_table import TokenTable

    assert TokenTable.load().scores("cache", [], {}).shape == (0,)


def test_a_missing_table_says_how_to_rebuild_it(tmp_path):
    from rag.retrieve.token_table import TokenTable

    with pytest.raises(FileNotFoundError, match="build_token_table"):
        TokenTable.load(tmp_path / "none.npz")


def test_the_shipped_table_fits_the_size_limit_and_its_rows_are_unit_vectors():
    from rag.retrieve.token_table import TABLE_FILE, TokenTable

    assert TABLE_FILE.stat().st_size <= 25_000_000
    with np.load(TABLE_FILE) as z:
        assert z["vectors"].dtype == np.int8 and z["ids"].shape == z["scales"].shape
        meta = json.loads(str(z["meta"]))
    assert meta["papers"] > 5000  # built from the lists, not a sample
    t = TokenTable.load()
    assert np.allclose(np.linalg.norm(t.vectors, axis=1), 1.0, atol=1e-5)
    # the special tokens are left out
    for special in ("[CLS]", "[SEP]", "[PAD]"):
        assert t.row[t.tokenizer.token_to_id(special)] == -1


def test_the_shipped_table_puts_related_pieces_near_each_other():
    from rag.retrieve.token_table import TokenTable

    t = TokenTable.load()

    def cos(a, b):
        ra, rb = (t.row[t.tokenizer.token_to_id(w)] for w in (a, b))
        return float(t.vectors[ra] @ t.vectors[rb])

    assert cos("protein", "molecule") > cos("protein", "reinforcement")
    assert cos("cache", "memory") > cos("cache", "robot")
    assert cos("drug", "chemical") > cos("drug", "image")


def test_a_paper_with_every_concept_scores_above_one_with_some():
    from rag.retrieve.token_table import TokenTable

    texts = {
        "em": "Federated EM for mixture models. We fit Gaussian mixture models across clients "
              "with an expectation-maximisation algorithm and prove convergence.",
        "mix": "Scaling laws for data mixtures. We predict a language model's loss from the "
               "proportions of its pretraining data domains and fit a law to choose the mixture.",
        "size": "Scaling laws for model size. Loss falls as a power law in parameters and compute.",
    }
    s = TokenTable.load().scores("which papers study scaling laws for data mixtures?",
                                 list(texts), texts)
    assert int(np.argmax(s)) == 1


def test_bad_records_are_reported_by_line_and_skipped(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "bench"))
    import build_token_table as B

    f = tmp_path / "p.jsonl"
    f.write_text('{"title": "A", "abstract": "b"}\n{bad\n\n{"id": "x"}\n[1]\n'
                 '{"title": "C", "abstract": ""}\n', encoding="utf-8")
    assert B.read_texts([f]) == ["A. b", "C. "]
    err = capsys.readouterr().err
    assert f"{f}:2: skipped" in err and f"{f}:4: skipped, no title" in err
    assert f"{f}:5: skipped" in err


def test_the_build_averages_each_piece_over_its_occurrences_deterministically():
    sys.path.insert(0, str(ROOT / "bench"))
    import build_token_table as B
    from rag.retrieve.token_table import TokenTable

    texts = ["Cache eviction for language models.", "A protein language model.",
             "Language of proteins."]
    a, b = B.build(texts, log=lambda m: None), B.build(texts, log=lambda m: None)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    tok = TokenTable.load().tokenizer
    counts = dict(zip(a["ids"].tolist(), a["counts"].tolist()))
    assert counts[tok.token_to_id("language")] == 3 and counts[tok.token_to_id("cache")] == 1
    assert tok.token_to_id("[CLS]") not in counts
    v = a["vectors"].astype(np.float32) * a["scales"][:, None]
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=0.02)  # int8 rounding


def test_the_build_command_explains_missing_lists(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "bench"))
    import build_token_table as B

    assert B.main([str(tmp_path / "absent.jsonl"), "--out", str(tmp_path / "t.npz")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "t.npz").exists()


def test_membership_candidates_carry_the_maxsim_columns(real_index):
    from rag.retrieve import membership as M

    retriever = real_index
    ids, x = M.candidates(retriever, "LLM-designed crossover operators for evolutionary search")
    col = {n: x[:, i] for i, n in enumerate(M.FEATURES)}
    assert x.shape == (len(ids), len(M.FEATURES))
    assert np.isclose(col["maxsim_gap"].max(), 0.0)
    assert np.allclose(col["maxsim"] - col["maxsim"].max(), col["maxsim_gap"])
    assert np.all((col["maxsim"] > -1) & (col["maxsim"] <= 1 + 1e-6))
