"""What a turn names: name-like words (:data:`NAME`: CamelCase, acronyms and names with digits,
"StepORLM", "RFTHGS", "Llama3"; the retriever resolves them to papers), quoted titles, and the
sides of a comparison (:func:`comparison_sides`: "how does A differ from B", "compare A with
B", "A vs B").
"""

from __future__ import annotations

import re
from typing import Sequence

from rag.types import Paper


# --- names ----------------------------------------------------------------------------------
#: A name in a turn: CamelCase (StepORLM), an acronym of 3+ capitals (GRPO, RFTHGS), or a word
#: with letters and digits (Llama3, F2SA).
NAME = re.compile(r"\b(?:[A-Za-z]*[a-z][A-Z][A-Za-z0-9-]*|[A-Z][A-Z0-9-]{2,}[a-z]*|"
                  r"[A-Za-z]+[0-9][A-Za-z0-9-]*)\b")


def fold_name(text: str) -> str:
    """``text`` lower-cased without anything but letters and digits, so that names compare
    regardless of case, hyphens and spacing ("Part-X-MLLM" and "part x mllm" -> "partxmllm")."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def name_words(text: str) -> list[str]:
    """The name-like words of ``text`` (:data:`NAME`), in order."""
    return NAME.findall(text)


def new_names(text: str, papers: Sequence[Paper]) -> list[str]:
    """Names in ``text`` that occur in none of ``papers``' titles and abstracts (case and hyphens
    ignored): a turn naming something else is not about them."""
    corpus = fold_name(" ".join(f"{p.title} {p.abstract}" for p in papers))
    return [n for n in NAME.findall(text) if fold_name(n) and fold_name(n) not in corpus]


#: A phrase in double quotes (apostrophes inside: "Don't Stop Pretraining"), or in single quotes
#: that stand apart from words: the apostrophe of "I'm reading the paper "X"" opens nothing.
_QUOTED = re.compile(r"[\"“]([^\"”]{12,200})[\"”]|(?<!\w)['‘]([^'’]{12,200})['’](?!\w)")


def quoted(text: str) -> list[str]:
    """Quoted phrases of 12-200 characters ("'Generating Natural Adversarial Examples'"): a
    title, usually."""
    return [(m.group(1) or m.group(2)).strip() for m in _QUOTED.finditer(text)]


# --- comparison sides -------------------------------------------------------------------------
_COMPARE = [
    re.compile(r"^\s*(?:how|in what ways?|where)\s+(?P<v>does|do|did|is|are)\s+(?P<a>.+?)\s+"
               r"(?:differ|compare|contrast|relate)\w*\s+(?:from|with|to|against|and)\s+(?P<b>.+?)"
               r"\s*[?.!]*\s*$", re.I),
    re.compile(r"^\s*(?:compare|contrast)\s+(?P<a>.+?)\s+(?:with|to|and|against|versus|vs\.?)\s+"
               r"(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    re.compile(r"^\s*(?:what(?:'s| is| are) the differences?\s+between)\s+(?P<a>.+?)\s+and\s+"
               r"(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    re.compile(r"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    # "Which is better: the paper that does A, or the one that does B?" (sides described, not
    # named: each must be a clause of OR_SIDE_WORDS words or more)
    re.compile(r"^\s*(?:which\s+(?:one\s+|paper\s+|method\s+|approach\s+)?(?:is|works|"
               r"performs|should I (?:use|pick|read))\s+(?:better|best|stronger|faster|more \w+)?"
               r"\s*[:,-]?\s*)?(?P<a>(?:the|a)\s+.+?),?\s+or\s+(?P<b>(?:the|a)\s+.+?)"
               r"\s*[?.!]*\s*$", re.I),
]
#: Words each side of an "A or B" comparison needs (shorter "X or Y" is a topic: "papers on
#: pruning or quantization").
OR_SIDE_WORDS = 6


def comparison_sides(text: str) -> list[str] | None:
    """The sides of a comparison (2 or more), or None when the words name no sides.

    "How does A differ from B?" -> [A, B]; "Compare A, B and C" -> [A, B, C]. A side must be two
    words or more, or one name-like word such as ``StepORLM`` (else it is likely not a comparison
    of papers: "how does it compare to this?").
    """
    for pattern in _COMPARE:
        m = pattern.match(text)
        if not m:
            continue
        a, b = m.group("a"), m.group("b")
        if pattern is _COMPARE[3] and len(a.split()) > 3 * len(b.split()):
            continue  # "teaching X ... with RL versus plain SFT": one topic, two settings
        if pattern is _COMPARE[-1] and min(len(a.split()), len(b.split())) < OR_SIDE_WORDS:
            continue
        # "A, B and C" lists several papers on the first side; "on- and off-policy" (a hyphen
        # before "and") and a first side without a comma ("the paper on X and Y") are one paper
        plural = (m.groupdict().get("v") or "do").lower() in ("do", "are", "did")
        listed = "," in a and plural
        sides = ([s.strip(" ,;") for s in re.split(r",\s*(?:and\s+)?|(?<!-)\s+and\s+", a)]
                 if listed else [a]) + [b]
        if len(sides) > 2 and not all(_side_ok(s) for s in sides):
            sides = [a, b]
        sides = [re.sub(r"^(?:the|a|an)\s+(?:paper|work|method|approach|one|model|technique|"
                        r"framework|system|study|algorithm)\s+(?:on|about|that|which|where|"
                        r"proposing)?\s*", "", s, flags=re.I) or s for s in sides]
        if all(_side_ok(s) for s in sides):
            return sides
    return None


def _side_ok(side: str) -> bool:
    """A comparison side names a paper: two words or more, or one word written as a name
    (StepORLM, GRPO, F2SA, Cactus: a capital or a digit; not "it" or "this")."""
    words = side.split()
    if len(words) >= 2:
        return True
    return len(words) == 1 and len(words[0]) >= 3 and bool(re.search(r"[A-Z0-9]", words[0]))
