"""BibTeX, reference lists and Markdown export (rag.conference.export): every .bib parses back with
bibtexparser, keys are unique, and titles with LaTeX or special characters survive."""

from __future__ import annotations

import bibtexparser
import pytest

from rag.conference import export
from rag.types import Answer, AnswerSentence, Citation, Hit, Paper

TRICKY_TITLES = [
    "Plain Title",
    r"On $\ell_1$ Regularization and $\mathcal{O}(n^2)$ Bounds",
    "Fast & Furious: 100% of #hashtags_in titles",
    "Unbalanced {brace in a title",
    "Closing } first { then",
    r"A $\textit{credit}$ assignment problem",
    "Ünïcödé — Señor Müller's Noël 深度学习",
    '<script>alert("x")</script> & <img src=x onerror=alert(1)>',
    "Ends with a backslash \\",
    "@misc{evil, title={injected}}",
]


def paper(pid: str, title: str, **kw) -> Paper:
    kw.setdefault("venue", "ICLR 2026")
    kw.setdefault("year", 2026)
    return Paper(pid, title, "Abstract.", **kw)


def parse(text: str):
    lib = bibtexparser.parse_string(text)
    assert not lib.failed_blocks, [b.error for b in lib.failed_blocks]
    return lib


def test_bibtex_parses_back_with_all_fields():
    p = paper("aITKXFeivk", "Refining Hybrid Genetic Search", authors=["Jane Doe", "Li Wei"],
              url="https://openreview.net/forum?id=aITKXFeivk")
    lib = parse(export.bibtex([p]))
    (entry,) = lib.entries
    f = {k: v.value for k, v in entry.fields_dict.items()}
    assert entry.entry_type == "inproceedings" and entry.key == "doe2026refining"
    assert f == {"title": "{Refining Hybrid Genetic Search}", "author": "Jane Doe and Li Wei",
                 "year": "2026", "booktitle": "ICLR 2026",
                 "url": "https://openreview.net/forum?id=aITKXFeivk"}


def test_author_is_omitted_when_unknown_and_url_defaults_to_openreview():
    (entry,) = parse(export.bibtex([paper("abc123", "Some Title", venue="")])).entries
    assert entry.entry_type == "misc" and "author" not in entry.fields_dict
    assert entry.fields_dict["url"].value == "https://openreview.net/forum?id=abc123"
    assert entry.key == "some2026title"


@pytest.mark.parametrize("title", TRICKY_TITLES)
def test_tricky_titles_survive(title):
    lib = parse(export.bibtex([paper("x1", title, authors=["A. B. O'Neil"])]))
    (entry,) = lib.entries
    value = entry.fields_dict["title"].value
    assert value.startswith("{") and value.endswith("}")
    assert value[1:-1] == export.tex_escape(title)
    # LaTeX math is kept verbatim; bare specials are escaped outside it
    for math in ("$\\ell_1$", "$\\mathcal{O}(n^2)$", "$\\textit{credit}$"):
        if math in title:
            assert math in value
    if "&" in title:
        assert "\\&" in value and " & " not in value
    if "深度学习" in title:
        assert "深度学习" in value and "Müller" in value


def test_all_tricky_titles_in_one_file_keep_unique_keys():
    papers = [paper(f"id{i}", t, authors=["Same Author"]) for i, t in enumerate(TRICKY_TITLES)]
    papers += [paper("dup", "Plain Title", authors=["Same Author"])]
    lib = parse(export.bibtex(papers))
    keys = [e.key for e in lib.entries]
    assert len(keys) == len(papers) == len(set(keys))
    assert all(k.isascii() and k == k.lower() and " " not in k for k in keys)
    assert {"author2026plain", "author2026plaina"} <= set(keys)


def test_bibtex_drops_repeated_papers_and_is_empty_for_none():
    p = paper("a", "T")
    assert len(parse(export.bibtex([p, p])).entries) == 1
    assert export.bibtex([]) == ""


@pytest.mark.parametrize("text, escaped", [
    ("a & b", "a \\& b"), ("50% #1 a_b", "50\\% \\#1 a\\_b"), ("already \\& ok", "already \\& ok"),
    ("$a_b & c$ d_e", "$a_b & c$ d\\_e"), ("{x}", "{x}"), ("}x{", "\\}x\\{"),
    ("two  \n spaces", "two spaces"),
])
def test_tex_escape(text, escaped):
    assert export.tex_escape(text) == escaped


# --- answers -> exports -------------------------------------------------------------------------
def make_answer(question="What is RFTHGS?", refused=False) -> Answer:
    a = paper("aITKXFeivk", "Refining Hybrid Genetic Search for CVRP", authors=["Jane Doe"],
              status="Accept (Poster)")
    b = paper("ZXr3Xx7Z1O", r"Training Dynamics and $\ell_1$ Quantization", status="Accept (Oral)")
    hits = [Hit(a, 0.03, evidence=["We propose RFTHGS."]), Hit(b, 0.02)]
    if refused:
        return Answer(question, question, "I could not find papers.", [], hits, refused=True)
    return Answer(question, question + " (about: X)", "RFTHGS refines HGS [1]. Moon cheese.",
                  [Citation(1, a, True, 0.8, "We propose RFTHGS.")], hits, mode="generative",
                  sentences=[AnswerSentence("RFTHGS refines HGS [1].", [1], True, 0.8)],
                  unsupported=[AnswerSentence("Moon cheese.", [], False, 0.1)])


def evidence_answer() -> Answer:
    """An extractive answer with a sentence of every kind but ``claim``."""
    ans = make_answer()
    ans.mode, ans.unsupported = "extractive", []
    ans.sentences = [
        AnswerSentence("The closest match is Refining Hybrid Genetic Search for CVRP [1].", [1],
                       True, 0.9, kind="direct"),
        AnswerSentence("“We propose RFTHGS.” [1]", [1], True, 0.95, kind="quote",
                       quote="We propose RFTHGS."),
        AnswerSentence("“It beats HGS.” [1]", [1], True, 0.9, kind="quote",
                       quote="It beats HGS."),
        AnswerSentence("Also relevant:", [], True, 1.0, kind="heading"),
        AnswerSentence("Training Dynamics [2]: “Quantization.”", [2], True, 0.6, kind="item",
                       quote="Quantization."),
        AnswerSentence("[1]: “Caching.”", [1], True, 0.6, kind="item", quote="Caching."),
        AnswerSentence("The abstracts cannot say how many papers there are.", [], kind="note"),
    ]
    return ans


def test_cited_and_retrieved_papers():
    answers = [make_answer(), make_answer("again")]
    assert [p.id for p in export.cited_papers(answers)] == ["aITKXFeivk"]
    assert [p.id for p in export.retrieved_papers(answers)] == ["aITKXFeivk", "ZXr3Xx7Z1O"]
    assert len(parse(export.bibtex(export.retrieved_papers(answers))).entries) == 2


def test_reference_list():
    ans = make_answer()
    text = export.reference_list(export.answer_references(ans))
    assert text == ("[1] Refining Hybrid Genetic Search for CVRP. Jane Doe. ICLR 2026 "
                    "(Accept (Poster)). https://openreview.net/forum?id=aITKXFeivk")
    refused = export.answer_references(make_answer(refused=True))
    assert [n for n, _ in refused] == [1, 2]


def test_conversation_markdown_has_questions_answers_and_references():
    md = export.conversation_markdown([make_answer(), make_answer("Nothing?", refused=True)],
                                      index="default", model="SmolLM2")
    assert md.startswith("# paperchat conversation")
    assert "_index `default`, model `SmolLM2`_" in md
    assert "## 1. What is RFTHGS?" in md and "## 2. Nothing?" in md
    assert "_Searching for: What is RFTHGS? (about: X)_" in md
    assert ("RFTHGS refines HGS [1].\n\n_Not supported by the cited abstracts:_\n\n"
            "- Moon cheese. (support 0.10)\n") in md
    assert ("[1] [Refining Hybrid Genetic Search for CVRP]"
            "(https://openreview.net/forum?id=aITKXFeivk) Jane Doe · ICLR 2026") in md
    assert "**Nearest papers (none answers the question)**" in md
    assert "[2] [Training Dynamics and $\\ell_1$ Quantization]" in md
    bib = md.split("```bibtex\n", 1)[1].split("```", 1)[0]
    assert [e.key for e in parse(bib).entries] == ["doe2026refining"]


def test_answer_markdown_text_by_sentence_kind():
    assert export.answer_markdown_text(evidence_answer()) == (
        "The closest match is Refining Hybrid Genetic Search for CVRP [1].\n\n"
        "> “We propose RFTHGS.” [1]\n\n"
        "> “It beats HGS.” [1]\n\n"
        "Also relevant:\n\n"
        "- Training Dynamics [2]: “Quantization.”\n"
        "- [1]: “Caching.”\n\n"
        "The abstracts cannot say how many papers there are.")


def test_unsupported_claims_leave_the_body_for_their_own_list():
    ans = make_answer()
    ans.sentences.append(AnswerSentence("Flipped [1].", [1], False, 0.3, kind="claim"))
    ans.sentences.append(AnswerSentence("Also true [1].", [1], True, 0.7, kind="claim"))
    body, _, rest = export.answer_markdown_text(ans).partition("_Not supported by the cited "
                                                              "abstracts:_")
    assert body == "RFTHGS refines HGS [1]. Also true [1].\n\n"
    assert rest == "\n\n- Moon cheese. (support 0.10)\n- Flipped [1]. (support 0.30)"


def test_comparison_table_is_exported_from_its_rows():
    ans = evidence_answer()
    ans.text = "| stale | table |"  # the text is not parsed: the rows are the table
    ans.comparison = [["Aspect", "[1] A", "[2] B"], ["Approach", "x | z", "y"]]
    md = export.conversation_markdown([ans])
    table = "| Aspect | [1] A | [2] B |\n|---|---|---|\n| Approach | x \\| z | y |"
    assert ("The closest match is Refining Hybrid Genetic Search for CVRP [1].\n\n" + table +
            "\n\n> “We propose RFTHGS.” [1]") in md
    assert "stale" not in md


def test_markdown_link_text_escapes_brackets():
    ans = make_answer()
    ans.citations[0].paper.title = "A [bracketed] title"
    assert "[1] [A \\[bracketed\\] title](" in export.conversation_markdown([ans])
