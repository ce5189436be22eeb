"""Misspelt topic words ("how did difusion models change since 2018?"): a word of a search that
no paper of the index uses is read as the common word of the papers it is closest to, and the
answer says so ("Read “difusion” as “diffusion”: no paper says “difusion”.").

A word is respelt only when all of these hold (so names, coined words and rare real words
are kept):

* it is lower case, letters only, at least :data:`MIN_LETTERS` long, and no English word
  (pyspellchecker's list, a plural or British spelling of one, a contraction without its
  apostrophe) nor a word of a paper's title;
* no paper's title, keywords or abstract uses it, or at most :data:`RARE_PAPERS` do (a typo of
  theirs: then only to a word one edit away that :data:`COMMON_RATIO` times as many use);
* a word at least :data:`MIN_PAPERS` papers use, of the same first letter, is one edit away
  (:func:`one_edit`: the most used such word is taken), or, for a word no paper uses, has a
  :class:`difflib.SequenceMatcher` ratio of at least :data:`MIN_RATIO` to it (measured:
  "difusion"/"diffusion" 0.94, "reinforcment"/"reinforcement" 0.96, "tranformers"/
  "transformers" 0.96; "advisor"/"adversarial" 0.67).

The words the papers use are counted once per retriever (about 3 s for 20,625 papers on 2
cores), and only when a turn has a word no paper uses.
"""

from __future__ import annotations

import re
from collections import Counter
from difflib import get_close_matches
from functools import lru_cache

from rag.backends.seams import per_retriever

MIN_LETTERS = 5
MIN_PAPERS = 20
MIN_RATIO = 0.9
#: A word at most this many papers use may be a typo of theirs ("tranformers"): respelt only
#: to a word one edit away (:func:`one_edit`) that :data:`COMMON_RATIO` times as many use.
RARE_PAPERS = 2
COMMON_RATIO = 50
#: Words no dictionary lists that are meant as written: contractions without their apostrophe
#: and short forms.
_UNMARKED = frozenset("""theres thats whats wheres heres theyre youre shouldn shouldnt wasnt
    werent couldnt wouldnt didnt doesnt hasnt havent isnt arent intro stats""".split())
_WORD = re.compile(r"(?<![\w-])[a-z]+(?![\w-])")


def _word_papers(retriever) -> tuple[Counter, dict[str, list[str]], frozenset[str]]:
    """How many papers of ``retriever`` use each word of four or more letters (title,
    keywords, abstract), the words at least :data:`MIN_PAPERS` papers use, by first letter,
    and the words of the papers' titles (computed once per retriever)."""
    return per_retriever(retriever, "_word_papers", lambda: _count_words(retriever))


def _count_words(retriever) -> tuple[Counter, dict[str, list[str]], frozenset[str]]:
    """:func:`_word_papers`, counted."""
    counts: Counter = Counter()
    for text in retriever.search_texts().values():
        counts.update(set(re.findall(r"[a-z]{4,}", text.lower())))
    common: dict[str, list[str]] = {}
    for w, n in counts.items():
        if n >= MIN_PAPERS:
            common.setdefault(w[0], []).append(w)
    titles = {w for p in retriever.papers.values() for w in re.findall(r"[a-z]{4,}",
                                                                        p.title.lower())}
    return counts, common, frozenset(titles)


@lru_cache(maxsize=1)
def _english():
    """pyspellchecker's English word list (about 0.15 s to load)."""
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1)


def _a_word(word: str, counts: Counter, titles: frozenset) -> bool:
    """True when ``word`` is spelt as meant: an English word (pyspellchecker's list), a
    contraction written without its apostrophe ("theres"), a British spelling ("analysing",
    "modelling") or a plural of a known word, or a word of a paper's title (a name:
    "La-Proteina")."""
    if word in titles or word in _UNMARKED:
        return True
    english = _english()
    if english.known([word]):
        return True
    if word.endswith("s") and (english.known([word[:-1]]) or counts.get(word[:-1], 0) >= 1):
        return True  # "executables"
    for american in _american(word):
        if english.known([american]) or counts.get(american, 0) >= 1:
            return True  # "analysing", "modelling", "colour": British spellings
    return False


#: British endings and their American forms ("analysing" -> "analyzing", "modelling" ->
#: "modeling", "behaviour" -> "behavior", "centre" -> "center", "defence" -> "defense").
_BRITISH = ((r"is(e|es|ed|ing|ation|ations|er|ers)$", r"iz\1"),
            (r"ys(e|es|ed|ing|er|ers)$", r"yz\1"),
            (r"our(s|ed|ing|al|ite|ites)?$", r"or\1"), (r"tre(s|d)?$", r"ter\1"),
            (r"ll(ed|ing|er|ers)$", r"l\1"), (r"ence$", "ense"), (r"ogue(s)?$", r"og\1"))


def _american(word: str) -> list[str]:
    """The American spellings a British ``word`` may be (:data:`_BRITISH`), or []."""
    out = []
    for pattern, repl in _BRITISH:
        other = re.sub(pattern, repl, word)
        if other != word:
            out.append(other)
    return out


def one_edit(a: str, b: str) -> bool:
    """True when ``b`` is ``a`` with one letter added, dropped, changed, or two neighbours
    swapped (Damerau 1964, the four single-error kinds of a typed word)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])
    return a[i:] == b[i + 1:] if len(b) > len(a) else a[i + 1:] == b[i:]


def respell(text: str, retriever) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with its misspelt words respelt (see the module docstring), and the
    ``(as said, as read)`` pairs. A retriever without search texts (a fake) leaves ``text`` as
    it is."""
    if not hasattr(retriever, "search_texts"):
        return text, []
    words = [m for m in _WORD.finditer(text) if len(m.group(0)) >= MIN_LETTERS]
    if not words:
        return text, []
    counts, common, titles = _word_papers(retriever)
    changes: list[tuple[str, str]] = []

    def fix(m: re.Match) -> str:
        word = m.group(0)
        n = counts.get(word, 0)
        if len(word) < MIN_LETTERS or n > RARE_PAPERS or _a_word(word, counts, titles):
            return word
        pool = [w for w in common.get(word[0], []) if abs(len(w) - len(word)) <= 2]
        near = [w for w in pool if one_edit(word, w) and counts[w] >= COMMON_RATIO * max(n, 1)]
        best = max(near, key=counts.__getitem__) if near else None  # ("nueral": neural)
        if best is None and n == 0:
            best = next(iter(get_close_matches(word, pool, n=1, cutoff=MIN_RATIO)), None)
        if best is None:
            return word
        changes.append((word, best))
        return best

    out = _WORD.sub(fix, text)
    return out, changes


def respelt_note(changes: list[tuple[str, str]]) -> str:
    """"Read “difusion” as “diffusion”: no paper says “difusion”." for the ``changes`` of
    :func:`respell`, or ""."""
    if not changes:
        return ""
    said = ", ".join(f"“{a}” as “{b}”" for a, b in changes)
    missing = " or ".join(f"“{a}”" for a, _ in changes)
    return f"Read {said}: no paper says {missing}."
