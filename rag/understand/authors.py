"""Author names a turn says, matched against the names the index's papers list (ICLR 2018 lists
them; ICLR 2026 was anonymous): "bernhard scholkopf papers", "what did David Ha submit in 2018",
"Chelsea Finn's highest-rated paper?", "had Yoshua Bengio as an author". The filter words of
:mod:`rag.understand.filter_words` read "papers by NAME"; this reads a full name said in any
frame, because the index knows it.

Names are compared :func:`rag.filters.fold`-ed (case and accents: "scholkopf" is "Schölkopf"),
as whole runs of two to four words, the longest first.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from rag.filters import fold

#: Words a name of the list never is as a whole (a two-word "name" such as "Deep Learning" in a
#: list's author field would otherwise filter every question that says it).
_NOT_A_NAME = frozenset("deep learning neural network networks machine reinforcement language "
                        "model models paper papers".split())
_WORD = re.compile(r"[^\W\d_][\w'’.\-]*", re.U)


def author_index(papers: Iterable) -> dict[str, str]:
    """Folded full name -> the name as the list spells it, for every author of ``papers`` whose
    name has two to four words (the first spelling met is kept)."""
    out: dict[str, str] = {}
    for p in papers:
        for name in p.authors or ():
            key = fold(name)
            words = key.split()
            if 2 <= len(words) <= 4 and not set(words) & _NOT_A_NAME:
                out.setdefault(key, name.strip())
    return out


def authors_said(text: str, names: Mapping[str, str]) -> list[tuple[str, tuple[int, int]]]:
    """The author names of ``names`` (:func:`author_index`) that ``text`` says, as ``(name as
    the list spells it, (start, end) span in text)``, left to right, longest match first, a
    possessive "'s" left outside the span."""
    if not names:
        return []
    words = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    found: list[tuple[str, tuple[int, int]]] = []
    i = 0
    while i < len(words):
        for n in (4, 3, 2):
            if i + n > len(words):
                continue
            run = words[i:i + n]
            last = re.sub(r"['’]s$", "", run[-1][0])
            key = fold(" ".join([w for w, _, _ in run[:-1]] + [last]))
            if key in names:
                end = run[-1][1] + len(last)
                found.append((names[key], (run[0][1], end)))
                i += n
                break
        else:
            i += 1
    return found
