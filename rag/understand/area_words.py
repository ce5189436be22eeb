"""Area names in a turn's words: where a turn names a primary area ("in the optimization
area", "area: learning theory", "orals in causal reasoning", "the optimization papers"), and
which of the index's areas a phrase names (:func:`match_area`: folded names, short names and
initials from :func:`area_aliases`, misspelt words). Read by
:func:`rag.understand.slots.read_filters`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from rag.filters import fold as fold_text


# "in the optimization area", "area: learning theory", "primary area reinforcement learning"
_AREA = re.compile(r"\b(?:(?:in|from|of|within)\s+(?:the\s+)?)?(?:(?:primary\s+)?area\s*"
                   r"(?:[:=]|\s(?:is|was)\s)?\s*"
                   r"(?P<after>[\w ,&()./-]{3,80}?)(?=[?.!;]|:\s|$|\s+(?:area|with|that|which|rated|"
                   r"and\s+(?:rated|with)))|(?P<before>[\w ,&()./-]{2,80}?)[\s(-]+(?:primary\s+)?"
                   r"(?:area|track|category)\b)", re.I)
# "whose primary area is applications to physical sciences (physics, ..., etc.)": a name after
# "area" that may hold full stops of its own, when the words before "area" named none
_AREA_NAMED = re.compile(r"\b(?:primary\s+)?area\s*(?:[:=]|\s(?:is|was)\s)?\s*['\"“‘]?"
                         r"(?P<after>[\w ,&()./-]{3,80}?)['\"”’]?(?=[?!;,]|[.:](?:\s|$)|$|\s+(?:with|that|"
                         r"which|rated|and\s+(?:rat|with|score|only)))", re.I)
# "orals in causal reasoning", "within the learning theory ...": an area named exactly after "in"
_IN_AREA = re.compile(r"\b(?:in|within|from)\s+(?:the\s+)?(?=\w)", re.I)
# "the optimization papers", "learning theory orals": an area named exactly before the noun
_AREA_PAPERS = re.compile(r"(?<=\w)\s+(?:papers?|submissions?|works|orals?|posters?|"
                          r"spotlights?)\b", re.I)
#: A word that makes an area's name a topic within it when said right before it ("offline RL
#: papers", "inverse reinforcement learning papers", "multi-agent RL papers").
SUBFIELD = re.compile(r"\b(?:offline|online|deep|inverse|safe|multi-?agent|model-?based|model-?free|"
                      r"hierarchical|meta|distributional|batch|off-?policy|on-?policy|"
                      r"goal-?conditioned|multi-?task|continual|federated|robust|constrained|"
                      r"risk-?sensitive|causal|bayesian|in-?context|zero-?shot|unsupervised|"
                      r"self-?supervised|quantum|adversarial)[\s-]+$", re.I)
# ... and ends the phrase there ("in learning theory?", not "in learning-theory proof sketches")
_AREA_END = re.compile(r"\s*(?:[^\w\s]|$|(?:and|or|with|that|which|rated|about|on|papers?|"
                       r"area|track|from|in|by(?!\s+\w+ing\b)|are|is|were|was|sorted|ordered|"
                       r"having|where|whose|only|pls|please|ranked|published)\b)", re.I)
#: "track" said as a verb ("models represent and track entities", "to track objects"): no area.
TRACK_VERB = re.compile(r"\b(?:and|or|to|can|cannot|could|must|will|would|they|we|models?|"
                        r"networks?|agents?)\s+track\s*$", re.I)


def fold(text: str) -> str:
    """:func:`rag.filters.fold` without punctuation: lower-case words without accents,
    single-spaced (for matching area names)."""
    return " ".join(re.findall(r"[a-z0-9]+", fold_text(text.replace("&", " and "))))


_AREA_STOP = frozenset("and or of the to a an in on for other etc i e none above including "
                       "applications models learning methods".split())


@lru_cache(maxsize=8)
def area_aliases(areas: tuple[str, ...]) -> dict[str, str]:
    """Short names of ``areas``, derived from the names themselves (folded, :func:`fold`): the
    first word of a name (after "applications to"), when it has 6+ letters and no other area's
    name uses it ("interpretability", "robotics", "neuroscience", "optimization"), and the
    initials of a two- or three-word name before its first comma ("rl" for "reinforcement
    learning", "lt" for "learning theory")."""
    words = {a: set(fold(a).replace("-", " ").split()) for a in areas}
    out: dict[str, str] = {}
    for a in areas:
        head = fold(re.split(r"[,(]", a)[0]).replace("-", " ")
        head = re.sub(r"^applications to ", "", head).split()
        others = set().union(*(v for b, v in words.items() if b != a)) if len(words) > 1 else set()
        if head and len(head[0]) >= 6 and head[0] not in others and head[0] not in _AREA_STOP:
            out.setdefault(head[0], a)
        if 2 <= len(head) <= 3 and not re.split(r"[,(]", a)[0].lower().startswith("applications"):
            out.setdefault("".join(x[0] for x in head), a)
    return out


def match_area(text: str, areas: Sequence[str], exact: bool = False) -> str | None:
    """The area of ``areas`` that ``text`` names: equal after :func:`fold` (British "-isation"
    read as "-ization"), or the area's name up to its first comma or bracket ("applications to
    robotics" for "applications to robotics, autonomy, planning"), or up to its bracket of
    examples without "applications to" ("physical sciences" for "applications to physical
    sciences (physics, chemistry, biology, etc.)"), or (unless ``exact``) the area
    contains ``text`` as whole words ("computer vision", "physical sciences") when only one area
    does."""
    want = re.sub(r"isation\b", "ization", fold(text))
    if len(want) < 2 or (len(want) < 3 and not exact and not text.strip().isupper()):
        return None
    want = re.sub(r"^(?:the|a|an)\s+", "", want)
    want = re.sub(r"\s+(?:area|track|category)$", "", want)
    if not _content_words(want):
        return None  # "the", "in the": no word of it can name an area ("the above" is not one)
    for area in areas:
        head = fold(re.split(r"[,(]", area)[0])
        if fold(area) == want or head == want or \
                re.sub(r"^applications to ", "", fold(area.split("(")[0])) == want:
            return area
    alias = area_aliases(tuple(areas)).get(want)
    if alias and (len(want) > 3 or text.strip().isupper()):  # "RL", not "rl" or "Lt"
        return alias
    if exact:
        return None
    inside = [a for a in areas if re.search(rf"\b{re.escape(want)}\b", fold(a))]
    return inside[0] if len(inside) == 1 else _fuzzy_area(want, tuple(areas))


def _content_words(text: str) -> list[str]:
    """The words of ``text`` that are not English function words (scikit-learn's
    ``ENGLISH_STOP_WORDS``, the Glasgow stop list)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in ENGLISH_STOP_WORDS]


#: Least :func:`difflib.SequenceMatcher` ratio for a misspelt area word ("aligment").
AREA_WORD_RATIO = 0.85


@lru_cache(maxsize=4096)
def _fuzzy_area(want: str, areas: tuple[str, ...]) -> str | None:
    """The one area whose own words cover every content word of ``want`` (folded), each word
    matching an area word in the singular ("graph" for "graphs", "geometry" for
    "geometries") or by a :data:`AREA_WORD_RATIO` spelling ratio ("aligment"; not "general"
    for "generative"): "the graph learning
    area", "graphs and geometry", "aligment". Words in three or more areas' names ("learning",
    "methods") are no evidence; any other word must fit, so "spotlight papers in the graph
    learning" fits no area (the caller tries shorter tails). ``None`` when no area or more than
    one fits."""
    from collections import Counter
    from difflib import SequenceMatcher

    def words(text: str) -> list[str]:
        return [w for w in text.split() if w not in _AREA_STOP and len(w) >= 3]

    own = {a: set(words(fold(a))) for a in areas}
    common = {w for w, c in Counter(w for ws in own.values() for w in ws).items() if c >= 3}
    asked = [w for w in words(want) if w not in common]
    if not asked:
        return None

    def one(w: str) -> str:  # "geometries" -> "geometry", "graphs" -> "graph"
        return re.sub(r"ies$", "y", w) if len(w) > 4 else w

    def close(w: str, x: str) -> bool:
        w, x = one(w).rstrip("s"), one(x).rstrip("s")
        return w == x or (len(w) >= 6 and SequenceMatcher(None, w, x).ratio() >= AREA_WORD_RATIO) \
            or (len(w) >= 3 and len(x) >= len(w) + 3 and x.startswith(w))  # "cog sci"

    fits = [a for a in areas if all(any(close(w, x) for x in own[a] - common) for w in asked)]
    return fits[0] if len(fits) == 1 else None
