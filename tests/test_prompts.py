"""Every template in prompts/ renders with exactly its variables; anything else is an error."""

import pytest

from rag.compose import prompts
from rag.compose.prompts import TemplateError

#: The variables each template takes (a new template must be added here).
EXPECTED = {
    "system": {"max_sentences"},
    "paper": {"n", "title", "text"},
    "answer": {"papers", "question"},
    "compare": {"papers", "question"},
    "system_pick": set(),
    "pick": {"candidates", "question"},
}
#: Templates that take variables (the missing/unknown-variable tests need one).
WITH_VARIABLES = sorted(name for name, names in EXPECTED.items() if names)


def test_every_template_is_known():
    assert set(prompts.names()) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_renders_with_its_variables(name):
    assert prompts.variables(prompts.load(name)) == EXPECTED[name]
    values = {v: f"<{v}>" for v in EXPECTED[name]}
    text = prompts.render(name, **values)
    assert all(f"<{v}>" in text for v in EXPECTED[name])
    assert "{" not in text.replace("{x}", "")


@pytest.mark.parametrize("name", WITH_VARIABLES)
def test_missing_variable_raises(name):
    values = {v: "x" for v in EXPECTED[name]}
    missing = sorted(EXPECTED[name])[0]
    del values[missing]
    with pytest.raises(TemplateError, match=rf"missing \['{missing}'\]"):
        prompts.render(name, **values)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_unknown_variable_raises(name):
    values = {v: "x" for v in EXPECTED[name]}
    with pytest.raises(TemplateError, match=r"unknown \['surprise'\]"):
        prompts.render(name, surprise="x", **values)


def test_values_are_data_not_fields():
    text = prompts.render("answer", papers="{question}", question="What is {papers}?")
    assert "{question}" in text and "What is {papers}?" in text


def test_paper_block_has_no_labels_to_echo():
    text = prompts.render("paper", n=3, title="T", text="Body.")
    assert text == "[3] T\nBody."


def test_unknown_template_raises():
    with pytest.raises(TemplateError, match="not found"):
        prompts.render("no_such_template")
