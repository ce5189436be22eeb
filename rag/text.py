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
from functools import lru_cache, partial

NORMALISER_VERSION = "2"  # 2: font macros (\\texttt{X} in math) keep their text

_LATEXISH = re.compile(r"[\\$]|\{[^}]*\}")
_UNESCAPED_PERCENT = re.compile(r"(?<!\\)%")
_MARKDOWNISH = re.compile(r"[*_`#\[\]]|^\s*[-+>]\s", re.M)
_WS = re.compile(r"\s+")


#: Font macros whose argument is the text itself. pylatexenc drops unknown macros inside math
#: ("$\\texttt{StepORLM}$" -> ""), which would erase method names from abstracts.
_FONT_MACROS = ("texttt", "mathtt", "textsc", "mathsf", "textsf", "textrm", "mathrm", "textnormal",
                "textup", "textmd", "mathnormal")


def _specials_lookup(db):
    """``db.test_for_specials`` (pylatexenc's ``LatexContextDb``) with its table indexed by
    first character: the same result (the longest specials sequence at ``pos``, the first
    category's on a tie), without trying all eight sequences (``~``, ``--``, ``''`` ...) of every
    category at every character, which pylatexenc's walker asks once per character of an
    abstract. On the 19,630 ICLR 2026 papers it takes normalisation from 62 to 39 CPU seconds.
    ``db`` must not change afterwards."""
    by_first: dict[str, list] = {}
    for category in db.category_list:
        for chars, spec in db.d[category]["specials"].items():
            by_first.setdefault(chars[:1], []).append((chars, spec))

    def test_for_specials(s, pos, parsing_state=None):
        best, best_len = None, 0
        for chars, spec in by_first.get(s[pos:pos + 1], ()):
            if len(chars) > best_len and s.startswith(chars, pos):
                best, best_len = spec, len(chars)
        return best

    return test_for_specials


@lru_cache(maxsize=1)
def _latex_converter():
    """The LaTeX -> text function of :func:`latex_to_text` (made once)."""
    return _make_converter()


def _make_converter(fast: bool = True):
    """pylatexenc's walker and ``LatexNodes2Text`` with the font macros; ``fast``: with the
    indexed specials lookup (:func:`_specials_lookup`), and plain text and closed pieces of
    markup met before anything else (:func:`_first_markup`, :func:`_closed_pieces`) left out of
    the whole parse: the same text in a quarter of the time (62 -> 17 CPU s for the 19,630
    ICLR 2026 papers); without, the plain library (what the tests compare with)."""
    from pylatexenc import latexwalker, macrospec
    from pylatexenc.latex2text import (LatexNodes2Text, MacroTextSpec,
                                       get_default_latex_context_db)

    text_db = get_default_latex_context_db()
    text_db.add_context_category("paperchat-fonts", prepend=True, macros=[
        MacroTextSpec(m, simplify_repl="%(1)s") for m in _FONT_MACROS])
    walker_db = latexwalker.get_default_latex_context_db()
    walker_db.add_context_category("paperchat-fonts", prepend=True, macros=[
        macrospec.MacroSpec(m, "{") for m in _FONT_MACROS])
    first_markup = _first_markup(walker_db)
    if fast:
        walker_db.test_for_specials = _specials_lookup(walker_db)
    converter = LatexNodes2Text(latex_context=text_db, math_mode="text", strict_latex_spaces=False)

    def parse(text: str) -> str:
        walker = latexwalker.LatexWalker(text, latex_context=walker_db, tolerant_parsing=True)
        nodes, _, _ = walker.get_latex_nodes()
        return converter.nodelist_to_text(nodes)

    closed = _closed_pieces(walker_db)
    done: dict[str, str] = {}  # closed pieces converted so far ("$k$", "\\%")

    def piece(text: str) -> str:
        if text not in done:
            if len(done) > 4096:
                done.clear()
            done[text] = parse(text)
        return done[text]

    def convert(text: str) -> str:
        if not fast:
            return parse(text)
        # Plain characters (up to the next character the walker reads as markup) are read into
        # a text node that comes out as it went in, and a closed piece of markup met at the top
        # level (_closed_pieces) comes out as it does alone: only from the first other markup
        # on is the text parsed (30% of the characters of the ICLR 2026 abstracts that have any
        # LaTeX). The spaces just before that markup stay with it: they are its token's, and a
        # token that ends the text early drops them ("ends with \\" loses its last space).
        out: list[str] = []
        pos = 0
        while True:
            found = first_markup.search(text, pos)
            if found is None:
                out.append(text[pos:])
                return "".join(out)
            whole = closed.match(text, found.start())
            if whole is not None:
                out += [text[pos:whole.start()], piece(whole.group(0))]
                pos = whole.end()
                continue
            plain = text[pos:found.start()].rstrip()
            out += [plain, parse(text[pos + len(plain):])]
            return "".join(out)

    return convert


#: Macros of one braced argument whose text is the argument's (a piece of _closed_pieces when
#: the argument is plain), when the walker's context gives them exactly that argument.
_TEXT_MACROS = ("textbf", "textit", "textsl", "emph", "underline", "textup", "textmd", "textrm",
                "textsf", "texttt", "textsc", "textnormal")


def _closed_pieces(db) -> re.Pattern:
    """Markup that pylatexenc's walker (context ``db``) reads to its end by itself when it meets
    it at the top level, leaving the walker at the top level again with nothing pending: inline
    math ``$...$`` without macros, braces, comments or a ``$$``; an escaped ``\\%``, ``\\&``,
    ``\\#``, ``\\_`` or ``\\$`` (no macro spec: no argument, and no space taken after it); and
    ``\\textbf{...}``-like macros (:data:`_TEXT_MACROS` whose spec is one braced argument) of
    plain text. Converted alone it gives the text it gives in place, which
    tests/test_build_phase1.py checks against the whole conversion."""
    escapes = "".join(c for c in "%&#_$" if db.get_macro_spec(c) is None)
    macros = [m for m in _TEXT_MACROS
              if getattr(getattr(db.get_macro_spec(m), "args_parser", None), "argspec", None)
              == "{"]
    parts = [r"\$[^$\\{}%]+\$(?!\$)"]
    if escapes:
        parts.append(r"\\[" + re.escape(escapes) + "]")
    if macros:
        parts.append(r"\\(?:" + "|".join(macros) + r")\{[^{}$\\%]*\}")
    return re.compile("|".join(parts))


def _first_markup(db) -> re.Pattern:
    """Where pylatexenc's walker (``LatexWalker.get_token`` at the top level, with context
    ``db``) first reads anything but a plain character: a macro or escape (``\\``), a comment
    (``%``), a brace, a math delimiter (``$``) or a specials sequence of ``db`` (``~``, ``--``,
    ``''``, ``&`` ...). Before it the walker's state never changes and the characters make one
    text node, which ``LatexNodes2Text`` (``strict_latex_spaces=False``: spaces between
    constructs kept, no ``fill_text``) returns unchanged: so converting the text from the end
    of those characters on, after them, is converting the whole text (checked against the
    whole conversion in tests/test_build_phase1.py)."""
    specials = {chars for category in db.category_list
                for chars in db.d[category]["specials"] if chars}
    starts = sorted(specials | {"\\", "%", "{", "}", "$"}, key=lambda c: (-len(c), c))
    return re.compile("|".join(re.escape(c) for c in starts))


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


# --- sentences -----------------------------------------------------------------------------------
#: A list-item marker opening a sentencex piece: "(2) ", "2) ", "(ii) ", "(b) ", "(-) ".
_LIST_ITEM = re.compile(
    r"\s*(?:\((?:\d{1,2}|[ivx]{1,4}|[a-zA-Z]|-)\)|(?:\d{1,2}|[ivx]{1,4}|[a-z])\))\s")
#: A piece that ends a sentence: terminal punctuation, then closing quotes or brackets.
_ENDS_SENTENCE = re.compile(r"[.!?][\"'”’)\]]*\s*$")
#: ...unless it is only a numbered-list marker ("2.", "(ii).", "results: 1.")...
_BARE_MARKER = re.compile(r"(?:^|:)\s*\(?(?:\d{1,2}|[ivxIVX]{1,4})\)?\.\s*$")
#: ...or ends in an abbreviation sentencex's English list lacks (it knows e.g., i.e., et al., vs.,
#: cf., Fig., Sec., etc., a.k.a., U.S., i.i.d., Dr., Jan.).
_ABBREV_END = re.compile(r"\b(?:Eqs?|Figs|Tab|Thm|Alg|Appx|resp|approx|abbr|avg)\.\s*$")
#: A one-letter token ending a sentence ("in time n. We", "of B. Our"): a variable, not an initial.
_VARIABLE_END = re.compile(r"(?<![\w.])[^\W\d_]\.\s+(?=[A-Z])")
_ALNUM = re.compile(r"[^\W_]")


@lru_cache(maxsize=1)
def _segmenter():
    """sentencex's English segmenter, imported on first use."""
    try:
        from sentencex import segment
    except ImportError as e:  # pragma: no cover - a project dependency
        raise ImportError("rag.text.split_sentences needs the sentencex package: "
                          "run `make install` (or `pip install sentencex`)") from e
    return partial(segment, "en")


def _pieces(text: str) -> list[str]:
    """sentencex pieces of ``text`` (they concatenate back to it exactly), with list items
    re-split: sentencex ends an item that starts with a marker only at the next marker or at the
    end of the text, so "(2) B. Next sentence. Another." came back as one piece."""
    out: list[str] = []
    for piece in _segmenter()(text):
        item = _LIST_ITEM.match(piece)
        rest = _pieces(piece[item.end():]) if item and item.end() < len(piece) else []
        if rest:
            out.append(piece[:item.end()] + rest[0])
            out.extend(rest[1:])
        else:
            out.append(piece)
    return out


def split_sentences(text: str) -> list[str]:
    """Split normalised text (:func:`normalise`) into sentences, for evidence, grounding and
    quoting: non-empty stripped sentences, each an exact substring of ``text``, that together
    hold, in order, every non-whitespace character of ``text``.

    The segmenter is ``sentencex`` (English rules: abbreviations, quotes, URLs, decimals and
    versions, sentences that start with a lower-case name such as "iFusion", a missing space as in
    "process.This"), with three fixes for its systematic errors on ML abstracts:

    1. a list item ("(2) ...", "2) ...", "(ii) ...") is re-split: sentencex ran it to the next
       marker or the end of the text (most of its 343 certain misses, in 190 of the 5,358 ICLR
       2026 accepted abstracts);
    2. a piece is joined to the previous one when that one does not end a sentence: sentencex
       cuts before list markers at ":", ";" and "," ("two challenges: | (1) ...; | (2) ..."), at a
       bare numbered-list marker ("results: 1. | For ..."), after "Eq." and a few other
       abbreviations it lacks, and leaves lone closing brackets ("}.");
    3. a sentence ending in a one-letter variable is split off ("time in n. | We close ..."):
       sentencex reads "n." as an initial; of 30 of the 78 such places in these abstracts, read
       by hand, none was one.

    Measured by ``.venv/bin/python bench/sentences.py`` on the hand-checked labelled set
    ``tests/data/sentence_boundaries.jsonl`` (85 cases, 199 sentences: e.g./i.e./et al./vs.,
    decimals, versions, normalised LaTeX, enumerations, lower-case starts, questions, closing
    quotes, URLs, abbreviations, ordinary text): 84/85 cases split exactly (boundary precision
    0.991, recall 1.000, F1 0.996); the regex splitter this replaced 51/85 (F1 0.811), plain
    sentencex 74/85 (0.941), pysbd 69/85 (0.916), syntok 64/85 (0.897). The fixes were written
    after seeing those errors, so 84/85 is in-sample. Out of sample, over all 5,358 abstracts: 4
    certain missed boundaries and 0 certain false cuts (regex 14 and 6, plain sentencex 343 and
    286; see the bench's ``missed`` / ``bad cut``), and of 40 random boundaries where this and the
    regex splitter disagree (``--disagree 40``), judged by hand, this one was right in 26, the
    regex in 10 (4 unclear). Known misses: a quote or ``<...>`` pair spanning sentences hides the
    boundaries inside it; "state of the art." or "etc." before a rarer opener ("Importantly");
    "CryoNet.Refine" is cut. Speed: about 0.1 ms per abstract (mean 0.095 ms, 84,000 sentences/s;
    pysbd needs 5 ms), plus about 13 ms to import sentencex on the first call.
    """
    pieces: list[str] = []
    for piece in _pieces(text):
        prev = pieces[-1] if pieces else None
        if prev is not None and (not _ENDS_SENTENCE.search(prev) or _BARE_MARKER.search(prev)
                                 or _ABBREV_END.search(prev) or not _ALNUM.search(piece)):
            pieces[-1] = prev + piece
        else:
            pieces.append(piece)
    out: list[str] = []
    for piece in pieces:
        start = 0
        for m in _VARIABLE_END.finditer(piece):
            out.append(piece[start:m.end()])
            start = m.end()
        out.append(piece[start:])
    return [s for s in (s.strip() for s in out) if s]
