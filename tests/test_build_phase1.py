"""Phase 1 of a build made faster without changing what it writes: each shortcut is compared with
the plain way it replaced (the library's own LaTeX conversion, the old compound-name rule, the
catalog record of dataclasses.asdict), on hand-made cases, on a seeded random sample of
LaTeX-like strings, and on the shared ICLR lists when present."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from functools import lru_cache

import pytest

from index.catalog import paper_record
from index.sources import load_papers
from rag import text
from rag.backends import lexical
from tests.conftest import SEED, SHARED_DATA

#: Strings where the head the fast path leaves out of the parse ends at each kind of markup.
CASES = [
    "plain words then $x^2$ and more", "a~b then c", "dash -- en and --- em", "a-b -c- d--e",
    "``quoted'' words", "it's 'single' quotes''", "Hola !`que? y ?`como", "a & b",
    r"escaped \% percent", r"ends with a macro \alpha", r"\alpha at the start",
    "   leading spaces $x$", " \n\n $x$ after a paragraph", "para one\n\npara two $y$",
    r"we introduce $\texttt{StepORLM}$, a framework", r"F${}^2$SA is fast",
    r"unclosed $x and {brace", r"closing } first then $a$", r"\begin{itemize} \item one",
    "trailing backslash \\", "é and ² then $\\beta$", "{braced} start", "no markup at all",
    "x" * 50 + "--" + "y" * 50, "!`", "?", "!", "''", "-", "--", "$", "\\", "%",
    # closed pieces converted alone (rag.text._closed_pieces), and what comes after them
    r"5% of them and 7% more", r"a \textbf{b} c \emph{d}", "$x$ and $y$ and $$z$$", "$a$$b$",
    "$x$ \\", r"x \emph{} y", r"\textbf{a}{b}", r"\%{x}", "$x$\n\n$y$", r"\textbf {x}",
    "end %", "a $ $ b", r"\textbf{a \alpha}", r"$k$ $\alpha$", r"\& \_ \# \$ 5", "$x$  ",
    r"\textit{x}\textbf{y}~z", r"$a~b$ -- \emph{c--d}", r"\textsc{ab}''",
]
ALPHABET = list("ab \n\\${}%&~`'-!?^_[]()x1é²") + [
    r"\alpha", r"\textbf", r"\texttt{", "$$", r"\begin{itemize}", r"\item", r"\end{itemize}",
    "--", "''", "``", "!`", "?`", r"\%", "\n\n", r"\frac{1}{2}", "{}", r"\emph{", r"\textbf{",
    r"\&", r"\_", r"\$", "$x$", "$k$ ", "}"]


@lru_cache(maxsize=1)
def plain_converter():
    return text._make_converter(fast=False)


def latexish_texts(every: int = 1) -> list[str]:
    """The texts of the seed list and, when present, of every ``every``-th paper of the shared
    ICLR lists that the LaTeX conversion sees (escaped as latex_to_text escapes them)."""
    papers = load_papers(SEED).papers
    for name in ("iclr2026_all.jsonl", "iclr2018.jsonl"):
        if (SHARED_DATA / name).is_file():
            papers += load_papers(SHARED_DATA / name).papers[::every]
    return [text._UNESCAPED_PERCENT.sub(r"\\%", t) for p in papers
            for t in (p.title, p.abstract, *p.keywords) if text._LATEXISH.search(t)]


def random_strings(n: int, seed: int = 22) -> list[str]:
    rng = random.Random(seed)
    out = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))) for _ in range(n)]
    return [text._UNESCAPED_PERCENT.sub(r"\\%", s) for s in out]


def convert_or_error(convert, s: str):
    try:
        return convert(s)
    except Exception as exc:  # noqa: BLE001 - both must fail alike
        return ("raised", type(exc).__name__)


@pytest.mark.parametrize("s", CASES)
def test_the_fast_latex_conversion_is_the_library_s_own_on_each_kind_of_markup(s):
    s = text._UNESCAPED_PERCENT.sub(r"\\%", s)
    assert convert_or_error(text._latex_converter(), s) == convert_or_error(plain_converter(), s)


def test_the_fast_latex_conversion_is_the_library_s_own_on_random_strings():
    fast, plain = text._latex_converter(), plain_converter()
    diff = [s for s in random_strings(4000) if convert_or_error(fast, s) != convert_or_error(plain, s)]
    assert diff == []


def test_the_fast_latex_conversion_is_the_library_s_own_on_real_abstracts():
    """Every LaTeX-like title, abstract and keyword of the seed list and of every 8th paper of
    the shared lists (all 19,630 + 995 papers were checked once: the same text)."""
    fast, plain = text._latex_converter(), plain_converter()
    texts = latexish_texts(every=8)
    assert texts
    assert [s for s in texts if convert_or_error(fast, s) != convert_or_error(plain, s)] == []


def test_the_indexed_specials_lookup_answers_as_pylatexenc_at_every_position():
    from pylatexenc import latexwalker
    from pylatexenc.macrospec import LatexContextDb

    db = latexwalker.get_default_latex_context_db()
    fast = text._specials_lookup(db)
    for s in CASES + random_strings(300, seed=7):
        for pos in range(len(s)):
            assert fast(s, pos) is LatexContextDb.test_for_specials(db, s, pos), (s, pos)


def test_the_head_left_out_of_the_parse_stops_at_every_specials_sequence():
    from pylatexenc import latexwalker

    db = latexwalker.get_default_latex_context_db()
    pattern = text._first_markup(db)
    for category in db.category_list:
        for chars in db.d[category]["specials"]:
            assert pattern.search(f"words {chars} words").start() == 6, chars
    assert pattern.search("a-b 'c' !d ?e then --").start() == 19


# --- BM25's compound names -----------------------------------------------------------------------
def old_compound_terms(t: str) -> list[str]:
    """rag.backends.lexical.compound_terms as it was: greedy runs, each match split into parts."""
    joined_re = re.compile(r"\b[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+\b")
    spaced_re = re.compile(r"\b([A-Za-z][A-Za-z0-9]*)((?:[\s_-]+\d[A-Za-z0-9.]*)+)")

    def is_name(parts):
        whole = "".join(parts)
        return ((any(c.isdigit() for c in whole) and any(c.isalpha() for c in whole))
                or any(len(p) == 1 and p.isalpha() for p in parts)
                or sum(any(c.isupper() for c in p) for p in parts) >= 2)

    out = [m.group(0) for m in joined_re.finditer(t) if is_name(re.split(r"[-_.]", m.group(0)))]
    out += [m.group(0) for m in spaced_re.finditer(t)
            if m.group(1).lower() not in lexical._stopwords()]
    joined = (lexical._SEPARATORS.sub("", x).lower() for x in out)
    return [x for x in dict.fromkeys(joined) if len(x) >= 3]


NAMES = ["Part-X-MLLM", "Qwen2.5-7B", "qwen 2.5 7b", "GPT-4o", "Go-Browse", "fine-tuning",
         "e.g. i.e. a.k.a", "in 2018 we", "0.5 and 2018-2019", "x-_-y", "A_b-C.d", "llama 3 8b",
         "Llama--3", "a.b.c-d", "café-Net2", "R2-D2 and C-3PO", "word_ 3", "v1.2.3-rc1",
         "the_end_", "_x-y", "GPT 4 and GPT-4 and gpt4"]


@pytest.mark.parametrize("t", NAMES)
def test_compound_terms_as_the_old_rule_gave_them(t):
    assert lexical.compound_terms(t) == old_compound_terms(t)


def test_compound_terms_as_the_old_rule_gave_them_on_real_abstracts():
    papers = load_papers(SEED).papers
    if (SHARED_DATA / "iclr2026_all.jsonl").is_file():
        papers += load_papers(SHARED_DATA / "iclr2026_all.jsonl").papers[::4]
    texts = [f"{p.title}. {'; '.join(p.keywords)}. {p.abstract}" for p in papers]
    assert [t for t in texts if lexical.compound_terms(t) != old_compound_terms(t)] == []


# --- the catalog record ---------------------------------------------------------------------------
def test_a_catalog_record_is_the_json_of_dataclasses_asdict():
    papers = load_papers(SEED).papers
    for name in ("iclr2026_all.jsonl", "iclr2018_papercopilot.json"):
        if (SHARED_DATA / name).is_file():
            papers += load_papers(SHARED_DATA / name).papers
    for p in papers:
        assert paper_record(p) == json.dumps(dataclasses.asdict(p), ensure_ascii=False), p.id


# --- the normalising processes --------------------------------------------------------------------
def test_phase_1_in_worker_processes_writes_what_one_process_writes(tmp_path, fake_embedder,
                                                                    monkeypatch):
    """The seed list built with phase 1's worker processes (they also make BM25's input,
    rag.backends.lexical.bm25_text) and built in one process: the same catalog rows and BM25 scores."""
    from index import build, build_workers
    from index.reader import open_catalog
    from rag.backends.lexical import LexicalIndex, bm25_text
    from rag.paths import IndexPaths
    from rag.settings import Settings

    queries = ["graph neural networks", "StepORLM", "Part-X-MLLM 3D", "llama 3 8b reasoning",
               "diffusion models for video", "reinforcement learning from human feedback"]
    built = {}
    for label, threshold in (("one process", 10 ** 9), ("workers", 1)):
        monkeypatch.setattr(build_workers, "PARALLEL_NORMALISE", threshold)
        settings = Settings(home=tmp_path / label, embedder="fake-bow", embed_backend="torch",
                            map_layout=False)
        build.build_index(SEED, settings=settings, embedder=fake_embedder, progress=False,
                          log=lambda m: None)
        index_dir = settings.index_dir()
        lexical = LexicalIndex.load(IndexPaths(index_dir).bm25)
        built[label] = (open_catalog(index_dir).search_texts(), lexical.ids,
                        [lexical.scores(q).tolist() for q in queries])
    assert built["workers"] == built["one process"]
    texts = [t for _, t in built["workers"][0]]
    assert build_workers._normalise_texts([("T", "A $x$ --", ["k"])])[0][3] == bm25_text("T. k. A x –")
    assert LexicalIndex.build(["a"] * len(texts), texts, {t: bm25_text(t) for t in texts}) \
        .scores("graph").tolist() == LexicalIndex.build(["a"] * len(texts), texts) \
        .scores("graph").tolist()
