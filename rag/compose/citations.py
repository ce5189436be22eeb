"""One citation syntax, one parser, one refusal constant (ARCHITECTURE.md, habit 7).

Answers cite papers as ``[n]``: ``n`` is the 1-based position of the paper among the answer's hits.
Models also write ``[1, 2]``, ``[1][2]``, ``[1-2]`` and ``[Paper 1]``; :func:`normalise_markers`
rewrites them all to separate ``[n]`` markers, and :func:`drop_invalid` removes any marker that
does not point at a hit (``[7]`` with 5 hits, ``[0]``), so it never reaches the user.
Text that is *quoted* to the model or shown as a table cell (abstracts) goes through
:func:`defuse` first, so a bracketed number inside an abstract ("as shown in [9]") is never read
as one of our citations.
"""

from __future__ import annotations

import re

#: Shown (and returned as the answer text) when the index does not cover the question.
REFUSAL = ("No paper in this index answers this question. "
           "The nearest papers are listed, but none of them appears to be about it.")
#: :data:`REFUSAL` when no paper is listed beside it.
REFUSAL_NONE = "No paper in this index answers this question."


def no_match(filters: list[str]) -> str:
    """Answer text when the filters (``field=value`` strings) leave no paper to search."""
    which = ", ".join(filters)
    return (f"No paper in this index matches the filter{'s' if len(filters) > 1 else ''} {which}, "
            "so there is nothing to answer from. Check the value (statuses: oral, spotlight, "
            "poster, accepted, rejected, withdrawn; areas and keywords as the papers spell "
            "them) or remove the filter.")


_GROUP = re.compile(r"\[(?:papers?\s*|#)?(\d+(?:\s*(?:[,;–-]|and)\s*(?:papers?\s*|#)?\d+)*)\]", re.I)
MARKER = re.compile(r"\[(\d+)\]")


def _expand(group: str) -> list[int]:
    nums: list[int] = []
    for part in re.split(r"\s*(?:[,;]|and)\s*", group):
        part = re.sub(r"(?i)papers?\s*|#", "", part).strip()
        if re.fullmatch(r"\d+\s*[–-]\s*\d+", part):
            a, b = (int(x) for x in re.split(r"[–-]", part))
            if 0 < b - a < 10:
                nums.extend(range(a, b + 1))
                continue
        if part.isdigit():
            nums.append(int(part))
    return nums


def normalise_markers(text: str) -> str:
    """Rewrite every citation group to consecutive ``[n]`` markers: ``[1, 3]`` -> ``[1][3]``."""
    return _GROUP.sub(lambda m: "".join(f"[{n}]" for n in _expand(m.group(1))), text)


def parse(text: str) -> list[int]:
    """Cited numbers in order of first appearance (after normalisation), without repeats."""
    seen: list[int] = []
    for m in MARKER.finditer(normalise_markers(text)):
        n = int(m.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def drop_invalid(text: str, n_hits: int) -> str:
    """Remove markers outside ``1..n_hits`` and repeated adjacent markers; tidy the spacing."""
    text = normalise_markers(text)
    text = MARKER.sub(lambda m: m.group(0) if 1 <= int(m.group(1)) <= n_hits else "", text)
    text = re.sub(r"(\[\d+\])(?:\1)+", r"\1", text)
    return re.sub(r"[ \t]+([.,;:])", r"\1", text)


def defuse(text: str) -> str:
    """Quoted text with every citation-like group turned into parentheses (``[9]`` -> ``(9)``,
    ``[Paper 2]`` -> ``(Paper 2)``), so neither the model nor :func:`parse` reads it as a
    citation."""
    return _GROUP.sub(lambda m: "(" + m.group(0)[1:-1] + ")", text)


def quote(text: str) -> str:
    """``text`` made safe to put between a prompt's ``\"\"\"`` quotes as data: every ``"`` becomes
    ``'`` (so nothing inside can close the quote) and citation-like brackets are defused."""
    return defuse(text.replace('"', "'"))
