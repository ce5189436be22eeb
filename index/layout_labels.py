"""The topic labels of the paper map (:mod:`index.layout`): regions found by density on the 2-D
map and named by their papers' keywords (:class:`Label`, :func:`cluster_labels`).

Topic labels: density clusters of the 2-D map (scikit-learn's HDBSCAN, ``min_cluster_size``
from :func:`min_cluster_size`, ``min_samples`` :data:`MIN_SAMPLES`, regions of at most
:data:`MAX_CLUSTER_SHARE` of the papers), each labelled by its most distinctive keywords (a
coverage-weighted log-odds lift over the papers' own ``keywords``, see :func:`_distinctive`;
title words when a cluster's keywords are too sparse; never a model) and placed at the
cluster's median point (:func:`cluster_labels`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rag.types import Paper


#: Most keywords in a label, and the longest label (chars) a second or third keyword may make.
MAX_LABEL_TERMS = 3
MAX_LABEL_CHARS = 48


@dataclass
class Label:
    """A topic label on the map: ``text`` (1-3 keywords joined by " · ") at map point (x, y);
    ``size`` is the number of papers in its cluster."""

    text: str
    x: float
    y: float
    size: int


# --- labels ------------------------------------------------------------------------------------

_STOP = frozenset("""a an and are as at be by for from in into is it its of on or our over the their
this to towards toward via with without we using based new learning model models method methods
approach framework data towards via when what how do does can beyond through under than not one
all more less efficient effective""".split())


#: HDBSCAN's ``min_samples`` (at most): how dense a point's neighbourhood must be to be a core
#: point. Left at its default (``min_cluster_size``), the 19,630-paper map fell into 2 clusters.
MIN_SAMPLES = 10
#: Largest region, as a share of the papers (HDBSCAN's ``max_cluster_size``; never below 200
#: papers, so that small indexes keep whole topics). Without it, one of
#: two t-SNE maps of the same 19,630 papers (inputs differing by float rounding) gave 2 regions,
#: one of 19,328 papers; with it, 35 (the other map: 33 either way; 5,358 papers: 30).
MAX_CLUSTER_SHARE = 0.1


def min_cluster_size(n: int) -> int:
    """HDBSCAN's ``min_cluster_size`` for a map of ``n`` papers: n / 150, at least 5 (a topic
    needs a handful of papers) and at most 200. With ``min_samples`` :data:`MIN_SAMPLES` and
    regions of at most :data:`MAX_CLUSTER_SHARE` of the papers: 30 regions at 5,358 papers and
    33-35 at 19,630 (measured), few enough to read on one screen."""
    return int(min(200, max(5, round(n / 150))))


def _term_key(term: str) -> str:
    """Comparison form of a keyword: lower case, hyphens as spaces, single spaces, last word's
    plural 's' dropped (``Large Language Models`` and ``large language model`` are one term,
    ``LLMs`` is ``llm``, ``Mixture-of-Experts`` is ``mixture of expert``)."""
    t = re.sub(r"[\s_-]+", " ", term.strip().lower()).strip()
    words = t.split(" ")
    last = words[-1]
    if len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "is", "us")) and \
            last not in ("series", "species"):
        words[-1] = last[:-1]
    return " ".join(words)


def _display(forms: Counter) -> str:
    """A term's label text: its most common spelling, lower-cased unless a word is an acronym or
    a name written with inner capitals (LLM, RL, NeRF keep theirs)."""
    form = forms.most_common(1)[0][0].strip()
    words = []
    for w in form.split():
        inner_caps = any(c.isupper() for c in w[1:])
        words.append(w if inner_caps else w.lower())
    return " ".join(words)


def _paper_terms(paper: Paper, titles: bool) -> dict[str, str]:
    """``{term key: spelling}`` of a paper: its keywords, or with ``titles`` its title's words
    and pairs of adjacent words (stop words left out)."""
    if not titles:
        return {_term_key(k): k for k in paper.keywords if k and _term_key(k)}
    words = re.findall(r"[A-Za-z][A-Za-z0-9+-]*[A-Za-z0-9+]", paper.title)
    keep = [w if w.lower() not in _STOP and len(w) > 2 else None for w in words]
    terms = {_term_key(w): w for w in keep if w}
    terms.update({_term_key(f"{a} {b}"): f"{a} {b}" for a, b in zip(keep, keep[1:]) if a and b})
    return terms


def _distinctive(clusters: list[list[Paper]], others: list[Paper], titles: bool
                 ) -> list[list[tuple[str, float]]]:
    """Per cluster, ``(label text, score)`` of its terms, best first. With p_c the share of the
    cluster's papers that have the term and p the share of all n papers (noise included) that
    do, score = p_c * log(p_c / p): the term's contribution to the KL divergence of the cluster
    from the whole list (a log-odds lift weighted by coverage). A term on every paper scores 0;
    a rare term must also cover its cluster: at least 2 papers and 5% of it."""
    df: Counter = Counter()
    forms: dict[str, Counter] = {}  # spellings over the whole list: one term, one spelling
    per_cluster: list[Counter] = []
    for members in clusters + [others]:
        counts: Counter = Counter()
        for p in members:
            for key, spelling in _paper_terms(p, titles).items():
                counts[key] += 1
                forms.setdefault(key, Counter())[spelling] += 1
        df.update(counts)
        per_cluster.append(counts)
    n = sum(len(m) for m in clusters) + len(others)
    out = []
    for members, counts in zip(clusters, per_cluster):
        size = len(members)
        need = max(2, math.ceil(0.05 * size))
        scored = [(_display(forms[t]), (c / size) * math.log((c / size) / (df[t] / n)), t)
                  for t, c in counts.items() if c >= need]
        scored.sort(key=lambda s: (-s[1], s[2]))
        out.append([(text, score) for text, score, _ in scored if score > 0])
    return out


def _same_topic(a: str, b: str) -> bool:
    """True when one term's words are a run of the other's or one is the other's acronym
    (``diffusion`` and ``diffusion models``; ``LLM`` and ``large language models``)."""
    a, b = _term_key(a), _term_key(b)

    def initials(t: str) -> str:
        return "".join(w[0] for w in t.split())

    return f" {a} " in f" {b} " or f" {b} " in f" {a} " or a == initials(b) or b == initials(a)


def _label_text(terms: list[tuple[str, float]]) -> str:
    """1-3 terms joined by " · ": the best, then others scoring at least 40% of it, skipping a
    term of the same topic as one already chosen (:func:`_same_topic`), within
    :data:`MAX_LABEL_CHARS`."""
    chosen: list[str] = []
    best = terms[0][1]
    for text, score in terms:
        if len(chosen) == MAX_LABEL_TERMS or (chosen and score < 0.4 * best):
            break
        if any(_same_topic(text, c) for c in chosen):
            continue
        if chosen and len(" · ".join(chosen + [text])) > MAX_LABEL_CHARS:
            continue
        chosen.append(text)
    return " · ".join(chosen)


def cluster_labels(xy: np.ndarray, papers: Sequence[Paper]) -> list[Label]:
    """Topic labels of a map: HDBSCAN clusters of ``xy`` (shape (n, 2); ``papers`` in the same
    order), each labelled by :func:`_distinctive` keywords (title words when no keyword is common
    enough in the cluster) at its median point; largest cluster first. When regions would share
    a label (several LLM regions), the largest keeps it and the others are labelled by their
    best terms outside it. Fewer than 2 * :func:`min_cluster_size` papers: no labels."""
    n = len(papers)
    mcs = min_cluster_size(n)
    if n < 2 * mcs:
        return []
    from sklearn.cluster import HDBSCAN

    assign = HDBSCAN(min_cluster_size=mcs, min_samples=min(MIN_SAMPLES, mcs),
                     max_cluster_size=max(200, int(MAX_CLUSTER_SHARE * n)),
                     copy=True).fit_predict(np.asarray(xy, np.float64))
    k = int(assign.max()) + 1
    if k <= 0:
        return []
    clusters = [[papers[i] for i in np.flatnonzero(assign == c)] for c in range(k)]
    others = [papers[i] for i in np.flatnonzero(assign < 0)]
    by_keywords = _distinctive(clusters, others, titles=False)
    by_titles = None
    labels: list[Label] = []
    used: set[str] = set()
    for c in sorted(range(k), key=lambda c: (-len(clusters[c]), c)):
        terms = by_keywords[c]
        if not terms:
            if by_titles is None:
                by_titles = _distinctive(clusters, others, titles=True)
            terms = by_titles[c]
        if not terms:
            continue
        text = _label_text(terms)
        if text in used:
            taken = text.split(" · ")
            rest = [t for t in terms if not any(_same_topic(t[0], u) for u in taken)]
            text = _label_text(rest) if rest else text
        used.add(text)
        pts = xy[assign == c]
        labels.append(Label(text, float(np.median(pts[:, 0])), float(np.median(pts[:, 1])),
                            len(clusters[c])))
    return labels
