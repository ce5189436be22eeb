"""An Answer's renderings (rag.compose.rendering): the comparison travels as rows on the Answer, the JSON
object keeps the ``paperchat ask --json`` contract, and the module leans on nothing but types."""

import ast
import json

from rag.chat.answer import answer
from rag.compose.rendering import answer_json, to_markdown
from tests.conftest import ROOT
from tests.test_compare import COMPARISON

#: The ``paperchat ask --json`` keys (ARCHITECTURE.md, Contracts).
KEYS = {"question", "standalone_question", "answer", "refused", "citations", "hits", "timings_ms",
        "mode", "kind", "sentences", "unsupported", "comparison", "filters_applied", "model", "plan",
        "trend"}
CITATION_KEYS = {"n", "id", "title", "url", "supported", "support"}
HIT_KEYS = {"id", "title", "score", "status", "primary_area", "url", "evidence", "rating",
            "venue", "year"}
SENTENCE_KEYS = {"text", "kind", "citations", "supported", "support"}


def test_a_comparison_answer_carries_its_table_and_renders_it_as_the_contract_says(fake_index,
                                                                                   scripted):
    settings, retriever = fake_index
    scripted.enqueue("RFTHGS fine-tunes an LLM to write crossover operators [1].")
    ans = answer(COMPARISON, retriever=retriever, generator=scripted, settings=settings,
                 mode="generative")
    assert ans.comparison is not None and ans.comparison[0][0] == "Aspect"
    assert ans.comparison_ids == [h.id for h in ans.hits[:2]]
    assert to_markdown(ans.comparison) in ans.text
    out = json.loads(json.dumps(answer_json(ans), ensure_ascii=False))
    assert set(out) == KEYS
    assert out["comparison"] == {"columns": ans.comparison_ids, "rows": ans.comparison}
    assert all(set(c) == CITATION_KEYS for c in out["citations"]) and out["citations"]
    assert all(set(h) == HIT_KEYS for h in out["hits"]) and out["hits"]
    assert all(set(s) == SENTENCE_KEYS for s in out["sentences"]) and out["sentences"]
    assert set(out["timings_ms"]) == {"retrieve", "first_token", "total"}
    assert out["mode"] == "generative" and out["kind"] == "compare"


def test_an_answer_without_a_comparison_renders_none(fake_index, scripted):
    settings, retriever = fake_index
    ans = answer("crossover operators for CVRP hybrid genetic search", retriever=retriever,
                 generator=scripted, settings=settings, mode="extractive")
    out = answer_json(ans)
    assert ans.comparison is None and out["comparison"] is None and set(out) == KEYS


def test_rendering_imports_nothing_of_the_project_but_types():
    tree = ast.parse((ROOT / "rag" / "compose" / "rendering.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in imported if m.split(".")[0] in ("rag", "index", "ui")} == {"rag.types"}
