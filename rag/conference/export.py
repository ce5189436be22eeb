"""Export what a conversation found: BibTeX, a plain-text reference list, and Markdown.

BibTeX is written with bibtexparser 2 (its default writer adds the outer braces) so that the
output always parses back: entries only, one ``@inproceedings`` entry per paper (``@misc`` when
the venue is unknown) with ``title``, ``author`` (when known), ``year``, ``booktitle`` (the
venue) and ``url``. Keys are ``<first author's surname or first title word><year><title word>``,
ASCII and lower case, made unique with ``a``, ``b`` ... suffixes given in paper-id order, so a
paper keeps its key whatever order it is cited in (:func:`bibtex_keys`). :func:`ris` writes the
same papers as RIS.

Titles keep their LaTeX (``$\\ell_1$`` stays math); outside math, the characters LaTeX treats
specially (``& % # _``) are escaped, and a title whose braces do not balance has them escaped
too, so a hostile or sloppy title can never break the ``.bib`` file. The title is wrapped in one
extra pair of braces so bibliography styles keep its capitalisation.

Functions take :class:`rag.types.Paper` and :class:`rag.types.Answer` records and return text;
nothing here touches the disk or the UI.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Sequence

from rag.compose.rendering import answer_markdown_text, answer_references
from rag.types import Answer, Paper

#: Words skipped when a key takes a word from the title.
_KEY_STOP = {"a", "an", "the", "on", "of", "for", "in", "to", "and", "via", "with", "from", "by",
             "towards", "toward", "is", "are", "at", "as", "do", "does", "when", "what", "how",
             "why", "can"}
_MATH = re.compile(r"(\$\$.+?\$\$|\$[^$]+\$)", re.S)
_SPECIAL = re.compile(r"(?<!\\)([&%#_])")


def _ascii_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    folded = re.sub(r"\$[^$]*\$|\\[A-Za-z]+", " ", folded)  # math and LaTeX commands
    return [w.lower() for w in re.findall(r"[A-Za-z0-9]+", folded)]


def _surname(author: str) -> str:
    """The family name of ``"First Last"`` or ``"Last, First"`` (ASCII-folded, lower case)."""
    author = author.strip()
    name = author.split(",")[0] if "," in author else (author.split() or [""])[-1]
    words = _ascii_words(name)
    return words[-1] if words else ""


def bibtex_key(paper: Paper, taken: set[str] | None = None) -> str:
    """A citation key for ``paper``, unique among ``taken`` (which it is added to).

    ``"Jane Doe", 2026, "Refining Hybrid Genetic Search"`` -> ``doe2026refining``; without authors
    the first title word leads: ``refining2026hybrid``.
    """
    words = [w for w in _ascii_words(paper.title)
             if w not in _KEY_STOP and re.search("[a-z]", w)] or _ascii_words(paper.id)
    surname = _surname(paper.authors[0]) if paper.authors else ""
    lead = surname or (words.pop(0) if len(words) > 1 else "paper")
    word = words[0] if words else ""
    base = f"{lead}{paper.year or ''}{word}" or "paper"
    key, n = base, 0
    taken = taken if taken is not None else set()
    while key in taken:
        key = base + _suffix(n)
        n += 1
    taken.add(key)
    return key


def _suffix(n: int) -> str:
    """a, b, ..., z, aa, ab, ..."""
    out = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(ord("a") + r) + out
    return out


def _balanced(text: str) -> bool:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "{}" and i and text[i - 1] == "\\":
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def tex_escape(text: str) -> str:
    """``text`` made safe inside a braced BibTeX field, LaTeX kept.

    Outside ``$...$`` math: unescaped ``& % # _`` get a backslash. Unbalanced braces are escaped
    as ``\\{`` ``\\}`` (so the field cannot close early). Whitespace is collapsed.
    """
    text = re.sub(r"\s+", " ", text or "").strip()
    parts = _MATH.split(text)
    parts = [p if i % 2 else _SPECIAL.sub(r"\\\1", p) for i, p in enumerate(parts)]
    text = "".join(parts)
    if not _balanced(text):
        text = re.sub(r"(?<!\\)([{}])", r"\\\1", text)
    if text.endswith("\\") and not text.endswith("\\\\"):
        text = text[:-1]  # a trailing backslash would escape the closing brace
    return text


def _base_key(paper: Paper) -> str:
    """The key :func:`bibtex_key` gives ``paper`` when nothing else has taken it."""
    return bibtex_key(paper, set())


def bibtex_keys(papers: Iterable[Paper]) -> dict[str, str]:
    """Citation keys of ``papers`` (by paper id; repeats by id counted once), unique among
    them and independent of their order: papers whose :func:`bibtex_key` is the same take
    their suffixes in paper-id order (the smallest id keeps the plain key, the next gets
    ``a``...), so citing the same papers in another order gives every paper the same key."""
    unique = {p.id: p for p in papers}
    base = {pid: _base_key(p) for pid, p in unique.items()}
    taken: set[str] = set()
    keys: dict[str, str] = {}
    for pid in sorted(unique, key=lambda i: (base[i], i)):
        keys[pid] = bibtex_key(unique[pid], taken)
    return keys


def bibtex(papers: Iterable[Paper]) -> str:
    """BibTeX entries for ``papers`` (repeats by id dropped, order kept); ``""`` for none.

    Entries only (no comments, no ``@string`` or preamble), keys from :func:`bibtex_keys`;
    ``@inproceedings`` with ``booktitle`` and ``year`` when the paper's venue is known (lists
    without a venue field get one from their dated OpenReview venue or file name, see
    :mod:`index.sources`), else ``@misc``. The text parses back with bibtexparser 2 without a
    failed block (tests/test_export.py, tests/test_bibtex_import.py)."""
    import bibtexparser
    from bibtexparser.model import Entry, Field

    papers = list(_unique(papers))
    keys = bibtex_keys(papers)
    library = bibtexparser.Library()
    for paper in papers:
        fields = [Field("title", "{" + tex_escape(paper.title) + "}")]
        if paper.authors:
            fields.append(Field("author", " and ".join(tex_escape(a) for a in paper.authors)))
        if paper.year:
            fields.append(Field("year", str(paper.year)))
        if paper.venue:
            fields.append(Field("booktitle", tex_escape(paper.venue)))
        fields.append(Field("url", _bib_url(paper.openreview_url)))
        entry_type = "inproceedings" if paper.venue else "misc"
        library.add(Entry(entry_type, keys[paper.id], fields))
    if not library.entries:
        return ""
    fmt = bibtexparser.BibtexFormat()
    fmt.indent = "  "
    fmt.block_separator = "\n"
    return bibtexparser.write_string(library, bibtex_format=fmt).strip() + "\n"


def _bib_url(url: str) -> str:
    """A URL safe inside a braced field: braces and spaces percent-encoded."""
    return url.replace("}", "%7D").replace("{", "%7B").replace(" ", "%20")


def ris(papers: Iterable[Paper]) -> str:
    """RIS records for ``papers`` (repeats by id dropped, order kept); ``""`` for none.

    ``TY  - CPAPER`` (conference paper) with ``T2`` the venue when it is known, else
    ``TY  - GEN``; ``TI`` the title as given (LaTeX kept), one ``AU`` per author, ``PY`` the
    year, ``KW`` per keyword, ``UR`` the forum URL, ``ID`` the BibTeX key (:func:`bibtex_keys`),
    ``N1`` the decision; each record ends with ``ER  -``. Field values are single lines (line
    breaks folded), as RIS readers (Zotero, EndNote) expect."""
    papers = list(_unique(papers))
    keys = bibtex_keys(papers)
    out: list[str] = []

    def tag(name: str, value: str) -> None:
        value = re.sub(r"\s+", " ", value or "").strip()
        if value:
            out.append(f"{name}  - {value}")

    for paper in papers:
        out.append(f"TY  - {'CPAPER' if paper.venue else 'GEN'}")
        tag("ID", keys[paper.id])
        tag("TI", paper.title)
        for author in paper.authors:
            tag("AU", author)
        tag("PY", str(paper.year) if paper.year else "")
        tag("T2", paper.venue)
        for keyword in paper.keywords:
            tag("KW", keyword)
        tag("N1", paper.status)
        tag("UR", paper.openreview_url)
        out.append("ER  - ")
        out.append("")
    return "\n".join(out)


def cited_papers(answers: Sequence[Answer]) -> list[Paper]:
    """Papers cited by ``answers``, first citation first, without repeats."""
    return _unique(c.paper for a in answers for c in a.citations)


def retrieved_papers(answers: Sequence[Answer]) -> list[Paper]:
    """Every paper retrieved for ``answers`` (cited or not), in rank order, without repeats."""
    return _unique(h.paper for a in answers for h in a.hits)


def _unique(papers: Iterable[Paper]) -> list[Paper]:
    out: dict[str, Paper] = {}
    for p in papers:
        out.setdefault(p.id, p)
    return list(out.values())


def reference(paper: Paper) -> str:
    """One plain-text reference: ``Title. Authors. Venue (Status). URL``."""
    parts = [paper.title.strip().rstrip(".") + "."]
    if paper.authors:
        parts.append(", ".join(paper.authors) + ".")
    venue = paper.venue or (str(paper.year) if paper.year else "")
    if venue or paper.status:
        parts.append(f"{venue} ({paper.status})." if venue and paper.status
                     else f"{venue or paper.status}.")
    parts.append(paper.openreview_url)
    return " ".join(parts)


def reference_list(numbered: Iterable[tuple[int, Paper]]) -> str:
    """``[n] reference`` lines for ``(n, paper)`` pairs."""
    return "\n".join(f"[{n}] {reference(p)}" for n, p in numbered)


def conversation_markdown(answers: Sequence[Answer], *, index: str = "", model: str = "") -> str:
    """A conversation as a Markdown document: each question, what was searched for, the answer
    and its numbered references (numbers are per answer, as in the chat)."""
    lines = ["# paperchat conversation", ""]
    about = ", ".join(x for x in (f"index `{index}`" if index else "",
                                   f"model `{model}`" if model else "") if x)
    if about:
        lines += [f"_{about}_", ""]
    for i, ans in enumerate(answers, start=1):
        lines += [f"## {i}. {ans.question.strip()}", ""]
        if ans.standalone_question and ans.standalone_question != ans.question:
            lines += [f"_Searching for: {ans.standalone_question}_", ""]
        lines += [answer_markdown_text(ans), ""]
        refs = answer_references(ans)
        if refs:
            lines += ["**Nearest papers (none answers the question)**" if ans.refused
                      else "**References**", ""]
            lines += [f"[{n}] [{_md_link_text(p.title)}]({p.openreview_url}) "
                      f"{_ref_tail(p)}".rstrip() + "  " for n, p in refs]
            lines.append("")
    papers = cited_papers(answers)
    if papers:
        lines += ["## BibTeX (cited papers)", "", "```bibtex", bibtex(papers).rstrip(), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _md_link_text(text: str) -> str:
    return re.sub(r"([\[\]])", r"\\\1", re.sub(r"\s+", " ", text).strip())


def _ref_tail(paper: Paper) -> str:
    bits = [", ".join(paper.authors) if paper.authors else "", paper.venue, paper.status]
    return " · ".join(b for b in bits if b)
