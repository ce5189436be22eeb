"""Which papers in hand a turn's terms pick (rag.chat.term_pick): expected picks read off the
hand-written abstracts below."""

from __future__ import annotations

from rag.chat.term_pick import PICK_MAX_SHARE, pick_by_terms
from rag.types import Hit, Paper

ABSTRACTS = [
    ("g1", "Graph rewiring against oversquashing", "We rewire the graph so each node sees far nodes."),
    ("g2", "Deep GNNs without oversmoothing", "Residual connections keep node features apart."),
    ("g3", "Virtual nodes for long-range graphs", "A virtual node joins every node of the graph."),
    ("g4", "Equivariant graph networks", "Message passing on the graph of atoms and their nodes."),
    ("g5", "Spectral graph filters", "Filters on the graph Laplacian for node classification."),
]
HITS = [Hit(Paper(pid, title, abstract), 1.0) for pid, title, abstract in ABSTRACTS]


def test_an_alternative_picks_when_its_paper_has_every_term():
    from rag.compose.extractive import GENERIC_TERMS  # ("use" is one)

    chosen, used = pick_by_terms("use rewiring or virtual nodes", HITS, GENERIC_TERMS)
    # "rewiring": g1; "virtual nodes": g3 only ("node" alone is in all five, so no term)
    assert chosen == [1, 3]
    assert used and all(t.startswith(("rewir", "virtual")) for t in used)


def test_a_term_most_papers_have_picks_none():
    assert sum("graph" in f"{t} {a}".lower() for _, t, a in ABSTRACTS) > PICK_MAX_SHARE * 5
    assert pick_by_terms("graph", HITS) == ([], set())


def test_an_alternative_with_a_term_no_paper_has_picks_none():
    # "virtual" is in g3 but "transformers" in none: the alternative needs both
    assert pick_by_terms("virtual transformers", HITS) == ([], set())
    assert pick_by_terms("diffusion, transformers", HITS) == ([], set())


def test_generic_terms_are_left_out():
    chosen, _ = pick_by_terms("spectral filters", HITS)
    assert chosen == [5]
    assert pick_by_terms("spectral filters", HITS, generic=frozenset({"spectral", "filter"})) \
        == ([], set())
