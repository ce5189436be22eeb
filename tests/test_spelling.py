"""Misspelt search words (rag/understand/spelling.py): read as the papers' word one edit away,
never an English word, a title's word or a word many papers use. Expected readings are written
by hand."""

from __future__ import annotations

import pytest

from rag.types import Paper


class Papers:
    """A retriever's two lists the respelling reads: papers and their search texts."""

    def __init__(self, texts: dict[str, str], titles: dict[str, str] | None = None):
        self._texts = texts
        self.papers = {i: Paper(i, (titles or {}).get(i, "A title"), t) for i, t in texts.items()}

    def search_texts(self) -> dict[str, str]:
        return self._texts


def _papers() -> Papers:
    texts = {f"p{i}": "diffusion models for images and transformers for text" for i in range(60)}
    texts["typo"] = "we train tranformers on protein data"  # one paper's own typo
    return Papers(texts, {"named": "La-Proteina: protein generation"} | {
        i: "A title" for i in texts})


@pytest.mark.parametrize("text, expected, changes", [
    ("how did difusion models change", "how did diffusion models change",
     [("difusion", "diffusion")]),
    ("tranformers for text", "transformers for text", [("tranformers", "transformers")]),
    ("diffusion models", "diffusion models", []),          # the papers' word
    ("export the imagery", "export the imagery", []),      # English words no paper uses
    ("summarise the models", "summarise the models", []),  # British spellings
    ("papers analysing and modelling colour", "papers analysing and modelling colour", []),
    ("Difusion", "Difusion", []),                          # capitalised: maybe a name
])
def test_a_word_no_paper_and_no_dictionary_knows_is_read_as_the_papers_word(text, expected,
                                                                             changes):
    from rag.understand.spelling import respell

    assert respell(text, _papers()) == (expected, changes)


def test_the_answer_says_which_words_it_read_otherwise():
    from rag.understand.spelling import respelt_note

    assert respelt_note([("difusion", "diffusion")]) == \
        "Read “difusion” as “diffusion”: no paper says “difusion”."
    assert respelt_note([]) == ""


@pytest.mark.parametrize("a, b, expected", [
    ("tranformers", "transformers", True), ("nueral", "neural", True),
    ("difusion", "diffusion", True), ("biclustering", "clustering", False),
    ("neural", "neural", False),
])
def test_one_edit_is_one_letter_added_dropped_changed_or_two_swapped(a, b, expected):
    from rag.understand.spelling import one_edit

    assert one_edit(a, b) is expected


def test_a_retriever_without_texts_leaves_the_words():
    from rag.understand.spelling import respell

    assert respell("difusion", object()) == ("difusion", [])
