"""Normalise paper text for embedding and BM25; the original is kept for display.

LaTeX becomes readable Unicode with ``pylatexenc`` (``$\\mathcal{O}(\\varepsilon^{-1.75})$`` ->
``O(ε^-1.75)``), markdown markup is folded away with ``markdown-it-py`` (``**bold**`` -> ``bold``,
``[text](url)`` -> ``text``), and whitespace runs become one space. Bump
:data:`NORMALISER_VERSION` whenever the output of :func:`normalise` changes: the index manifest
records it, and an index built by another version must be rebuilt.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

NORMALISER_VERSION = "2"  # 2: font macros (\\texttt{X} in math) keep their text

_LATEXISH = re.compile(r"[\\$]|\{[^}]*\}")
_UNESCAPED_PERCENT = re.compile(r"(?<!\\)%")
_MARKDOWNISH = re.compile(r"[*_`#\[\]]|^\s*[-+>]\s", re.M)
_WS = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$\\])")
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|et al|vs|cf|Fig|Eq|resp|approx|etc)\.$", re.I)


#: Font macros whose argument is the text itself. pylatexenc drops unknown macros inside math
#: ("$\\texttt{StepORLM}$" -> ""), which would erase method names from abstracts.
_FONT_MACROS = ("texttt", "mathtt", "textsc", "mathsf", "textsf", "textrm", "mathrm", "textnormal",
                "textup", "textmd", "mathnormal")


@lru_cache(maxsize=1)
def _latex_converter():
    from pylatexenc import latexwalker, macrospec
    from pylatexenc.latex2text import (LatexNodes2Text, MacroTextSpec,
                                       get_default_latex_context_db)

    text_db = get_default_latex_context_db()
    text_db.add_context_category("paperchat-fonts", prepend=True, macros=[
        MacroTextSpec(m, simplify_repl="%(1)s") for m in _FONT_MACROS])
    walker_db = latexwalker.get_default_latex_context_db()
    walker_db.add_context_category("paperchat-fonts", prepend=True, macros=[
        macrospec.MacroSpec(m, "{") for m in _FONT_MACROS])
    converter = LatexNodes2Text(latex_context=text_db, math_mode="text", strict_latex_spaces=False)

    def convert(text: str) -> str:
        walker = latexwalker.LatexWalker(text, latex_context=walker_db, tolerant_parsing=True)
        nodes, _, _ = walker.get_latex_nodes()
        return converter.nodelist_to_text(nodes)

    return convert


def latex_to_text(text: str) -> str:
    """Turn LaTeX markup into Unicode text; text without LaTeX comes back unchanged.

    A bare ``%`` (common in abstracts: "improves by 5%") is escaped first, since LaTeX would read it
    as a comment and drop the rest of the line. Input pylatexenc cannot parse comes back unchanged
    rather than raising.
    """
    if not _LATEXISH.search(text):
        return text
    try:
        return _latex_converter()(_UNESCAPED_PERCENT.sub(r"\\%", text))
    except Exception:  # pylatexenc is tolerant, but never let one abstract stop an index build
        return text


@lru_cache(maxsize=1)
def _markdown_parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["html_block", "html_inline", "code"])


def markdown_to_text(text: str) -> str:
    """Fold markdown markup (emphasis, links, headings, list markers, code spans) to plain text."""
    if not _MARKDOWNISH.search(text):
        return text
    out: list[str] = []
    for token in _markdown_parser().parse(text):
        if token.type == "inline" and token.children is not None:
            for child in token.children:
                if child.type in ("text", "code_inline"):
                    out.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    out.append(" ")
            out.append(" ")
    return "".join(out) if out else text


def normalise(text: str) -> str:
    """The searchable form of a title or abstract: LaTeX -> Unicode, markdown folded, NFKC,
    whitespace collapsed. Idempotent on its own output for ordinary text."""
    if not text:
        return ""
    text = unicodedata.normalize("NFC", text)
    text = latex_to_text(text)
    text = markdown_to_text(text)
    text = unicodedata.normalize("NFKC", text)
    return _WS.sub(" ", text).strip()


def split_sentences(text: str) -> list[str]:
    """Split normalised text into sentences (for evidence and grounding).

    A rule-based splitter: a sentence ends at ``.``, ``!`` or ``?`` followed by space and an
    upper-case letter, digit or opening bracket, except after common abbreviations
    (e.g., i.e., et al., Fig.). Empty pieces are dropped.
    """
    pieces = _SENTENCE_END.split(text.strip())
    out: list[str] = []
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if out and _ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out
