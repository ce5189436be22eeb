"""Normalisation (LaTeX, markdown, whitespace), sentence splitting and chunking."""

from __future__ import annotations

import pytest

from index.chunking import chunk_paper
from index.text import normalise, split_sentences
from tests.conftest import FakeEmbedder


@pytest.mark.parametrize("raw,expected", [
    (r"we introduce $\texttt{StepORLM}$, a framework", "we introduce StepORLM, a framework"),
    (r"complexity $\mathcal{O}(\varepsilon^{-1.75})$", "complexity O(ε^-1.75)"),
    (r"F${}^2$SA is fast", "F^2SA is fast"),
    (r"an \emph{important} idea", "an important idea"),
    ("improves by 5% over the baseline and 7% over X", "improves by 5% over the baseline and 7% over X"),
    ("**bold** and [a link](http://x.y) and `code`", "bold and a link and code"),
    ("line one\n\n  line   two\tend", "line one line two end"),
    ("plain text stays", "plain text stays"),
    ("", ""),
])
def test_normalise(raw, expected):
    assert normalise(raw) == expected


def test_unparseable_latex_does_not_raise():
    assert "broken" in normalise(r"broken $\frac{1}{ and \begin{itemize} never closed")


@pytest.mark.parametrize("text,expected", [
    ("First one. Second one! Third?", ["First one.", "Second one!", "Third?"]),
    ("We use e.g. Adam. It works.", ["We use e.g. Adam.", "It works."]),
    ("Results beat Smith et al. On three tasks.", ["Results beat Smith et al. On three tasks."]),
    ("Accuracy is 3.5 points higher. Done.", ["Accuracy is 3.5 points higher.", "Done."]),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_chunks_cover_every_word_within_the_window_with_the_title_on_each():
    tok = FakeEmbedder().tokenizer
    abstract = " ".join(f"w{i}" for i in range(700))
    chunks = chunk_paper("p", "A Title", abstract, tok, max_tokens=128, overlap=16)
    assert [c.id for c in chunks] == [f"p#{i}" for i in range(len(chunks))]
    assert len(chunks) > 5
    covered = set()
    for c in chunks:
        assert c.text.startswith("A Title. ")
        assert c.n_tokens <= 128
        covered |= set(c.text.split(". ", 1)[1].split())
    assert covered == set(abstract.split())
    # consecutive windows overlap
    first, second = (set(c.text.split(". ", 1)[1].split()) for c in chunks[:2])
    assert first & second


def test_short_abstract_is_one_chunk_and_empty_abstract_still_gives_one():
    tok = FakeEmbedder().tokenizer
    assert len(chunk_paper("p", "T", "short abstract", tok)) == 1
    assert len(chunk_paper("p", "T", "", tok)) == 1


def test_window_too_small_is_an_error():
    tok = FakeEmbedder().tokenizer
    with pytest.raises(ValueError, match="chunk_tokens"):
        chunk_paper("p", "word " * 60, "abstract", tok, max_tokens=40, overlap=16)


def test_repeated_windows_are_stored_once_and_numbered_without_gaps():
    tok = FakeEmbedder().tokenizer
    distinct = " ".join(f"w{i}" for i in range(300))
    repeated = "tensor sketching " * 2000
    chunks = chunk_paper("p", "T", distinct + " " + repeated, tok, max_tokens=64, overlap=8)
    texts = [c.text for c in chunks]
    assert len(texts) == len(set(texts))
    assert [c.id for c in chunks] == [f"p#{i}" for i in range(len(chunks))]
    assert [c.n for c in chunks] == list(range(len(chunks)))
    # every distinct word is still covered; the 4,000-word repetition adds only a few windows
    covered = " ".join(texts)
    assert all(f"w{i}" in covered.split() for i in range(300))
    plain = chunk_paper("p", "T", distinct, tok, max_tokens=64, overlap=8)
    assert len(plain) < len(chunks) <= len(plain) + 4
