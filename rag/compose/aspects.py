"""Surveys of one aspect across many papers: approaches, limitations, datasets and benchmarks,
metrics, results (``survey`` plans with an ``aspect``, :mod:`rag.understand.plan`).

A colleague asked "what datasets are used to evaluate long-context LMs?" names the datasets, not
the papers' motivation. So from each relevant abstract the sentence that plays the aspect's role
is taken (:func:`role_score`): a method sentence for approaches, a limitation sentence for
limitations, a results sentence for results (the cue words of :mod:`rag.compose.compare`'s table rows,
plus limitation cues here), and for datasets and metrics the sentences that name them, with the
names pulled out (:func:`named_things`). A paper whose abstract has no such sentence is left out:
a background sentence ("X is important") is not an answer. The lines are grouped into a few
themes (agglomerative clustering of the chosen sentences' embeddings, each theme headed by the
keywords its papers share most), and every line cites its paper.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Sequence

import numpy as np

from rag.compose.roles import MIN_ROLE, named_things, role_score
from rag.text import normalise
from rag.understand.names import fold

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.types import AnswerSentence, Hit

#: Papers an aspect survey draws on: at most, and the least it tries to reach (the relevant ones).
MAX_PAPERS, MIN_PAPERS = 15, 8
#: Themes an aspect survey groups its lines into (fewer for few papers: one per 4 lines).
MAX_THEMES = 4
def _themes(vecs: np.ndarray, n: int) -> list[int]:
    """Theme of each of ``n`` lines (agglomerative clustering, cosine, average linkage)."""
    k = min(MAX_THEMES, max(1, n // 4))
    if k <= 1 or n < 4:
        return [0] * n
    from sklearn.cluster import AgglomerativeClustering

    labels = AgglomerativeClustering(n_clusters=k, metric="cosine",
                                     linkage="average").fit_predict(vecs)
    # number themes by their first line, so the best paper's theme comes first
    order: dict[int, int] = {}
    for lab in labels:
        order.setdefault(int(lab), len(order))
    return [order[int(lab)] for lab in labels]


def _theme_label(papers, others) -> str:
    """A one-line header for a theme: the keywords its papers share most (at least 2 of them),
    else the words of their titles that the other themes' titles use least."""
    from rag.understand.area_words import fold

    kw = Counter(k for p in papers for k in dict.fromkeys(fold(normalise(x)) for x in p.keywords
                                                          if x.strip()))
    shared = [k for k, c in kw.most_common(3) if c >= 2]
    if shared:
        return " · ".join(shared[:2])
    stop = {"a", "an", "the", "of", "for", "and", "in", "on", "with", "to", "via", "from", "by",
            "is", "are", "towards", "learning", "models", "model", "large", "language"}
    mine = Counter(w for p in papers for w in set(fold(normalise(p.title)).split()) - stop)
    theirs = Counter(w for p in others for w in set(fold(normalise(p.title)).split()))
    ranked = sorted(mine, key=lambda w: (-(mine[w] - 0.5 * theirs[w]), w))
    return " · ".join(ranked[:2]) if ranked else "other papers"


def aspect_survey(aspect: str, query: str, hits: Sequence[Hit], embedder: Embedder,
                  min_dense: float, chosen: bool = False
                  ) -> tuple[list[AnswerSentence], list[Hit]]:
    """The sentences of an aspect survey over ``hits`` (best first, a search's larger pool;
    see the module docstring), and the answer's papers: the relevant hits (at most
    :data:`MAX_PAPERS`, at least :data:`MIN_PAPERS` when there are that many) in rank order,
    those whose abstract has a sentence in the aspect's role coming first among them. Relevance
    of a sentence to ``query`` (:func:`rag.compose.quotes.relevance`) breaks ties between a paper's
    role sentences. The sentences number the returned papers from 1. ``chosen``: the hits are
    papers the conversation chose (the previous answer's: "which benchmarks do they evaluate
    on?"), so every one is relevant, whatever the aspect question's own words match."""
    from rag.compose import extractive
    from rag.compose import quotes, templates
    from rag.compose.grounding import embed_cached
    from rag.types import AnswerSentence

    cands = quotes.candidates(query, hits, embedder)
    relevant = list(range(1, len(hits) + 1)) if chosen else \
        [1] + extractive.relevant_others(hits, cands, {1}, min_dense)
    if len(relevant) < MIN_PAPERS:  # fewer relevant papers: the next best still count
        relevant += [n for n in range(1, len(hits) + 1) if n not in relevant][
            :MIN_PAPERS - len(relevant)]
    lines: list[tuple[int, quotes.Candidate, list[str]]] = []
    for n in relevant:
        if len(lines) >= MAX_PAPERS:
            break
        sents = sorted(cands.get(n, []), key=lambda c: c.pos)
        m = len(sents)
        best, best_score = None, MIN_ROLE
        for c in sents:
            role = role_score(aspect, c.text, c.pos / (m - 1) if m > 1 else 0.0)
            if role >= MIN_ROLE and role + c.score > best_score:
                best, best_score = c, role + c.score
        if best is not None:
            own = fold(hits[n - 1].paper.title.partition(":")[0]) \
                if ":" in hits[n - 1].paper.title else ""
            things = named_things(aspect, best.text, own) if aspect in ("datasets", "metrics") \
                else []
            if aspect in ("datasets", "metrics") and not things:
                continue
            lines.append((n, best, things))
    # the answer's papers: those with a line, then the other relevant ones, in rank order
    with_line = [n for n, _, _ in lines]
    keep = with_line + [n for n in relevant if n not in with_line][
        :max(0, MAX_PAPERS - len(with_line))]
    keep = sorted(keep)
    new = {old: i for i, old in enumerate(keep, start=1)}
    papers = [hits[n - 1] for n in keep]
    what = {"approaches": "Approaches", "limitations": "Limitations",
            "datasets": "Datasets and benchmarks", "metrics": "Metrics",
            "results": "Results"}[aspect]
    if not lines:
        return ([templates.note(f"None of the {len(keep)} most relevant abstracts has a sentence "
                              f"that states {what.lower()}; the papers found:"),
                 *[templates.item(papers[new[n] - 1], new[n], (cands[n] or [None])[0])
                   for n in keep]], papers)
    lines = [(new[n], type(c)(new[n], c.text, c.pos, c.score), t) for n, c, t in lines]
    cited = [n for n, _, _ in lines]
    looked = len([n for n in relevant if n <= max(with_line)])
    out = [templates.direct(f"{what} in {len(lines)} of the {looked} most relevant abstracts"
                          f"{', by theme' if len(lines) >= 4 else ''}:", cited)]
    if aspect in ("datasets", "metrics"):
        count: dict[str, list[int]] = {}
        for n, _, things in lines:
            for t in things:
                count.setdefault(t, []).append(n)
        named = sorted(count.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))[:12]
        out.append(AnswerSentence("Named most: " + "; ".join(
            f"{t} {' '.join(f'[{n}]' for n in ns)}" for t, ns in named) + ".",
            sorted({n for _, ns in named for n in ns}), kind="metadata", support=1.0))
    vecs = embed_cached(embedder, [c.text for _, c, _ in lines])
    themes = _themes(np.asarray(vecs), len(lines))
    for t in sorted(set(themes)):
        members = [line for line, th in zip(lines, themes) if th == t]
        if len(set(themes)) > 1:
            group = [papers[n - 1].paper for n, _, _ in members]
            others = [papers[n - 1].paper for (n, _, _), th in zip(lines, themes) if th != t]
            out.append(templates.heading(f"{_theme_label(group, others).capitalize()}:"))
        for n, c, things in members:
            s = templates.item(papers[n - 1], n, c)
            if things:
                s.text = s.text.replace(f"[{n}]", f"[{n}] ({', '.join(things)})", 1)
            out.append(s)
    return out, papers
