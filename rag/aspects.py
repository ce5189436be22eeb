"""Surveys of one aspect across many papers: approaches, limitations, datasets and benchmarks,
metrics, results (``survey`` plans with an ``aspect``, :mod:`rag.plan`).

A colleague asked "what datasets are used to evaluate long-context LMs?" names the datasets, not
the papers' motivation. So from each relevant abstract the sentence that plays the aspect's role
is taken (:func:`role_score`): a method sentence for approaches, a limitation sentence for
limitations, a results sentence for results (the cue words of :mod:`rag.compare`'s table rows,
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

from rag.text import normalise

if TYPE_CHECKING:
    from rag.embedder import Embedder
    from rag.types import AnswerSentence, Hit

#: Papers an aspect survey draws on: at most, and the least it tries to reach (the relevant ones).
MAX_PAPERS, MIN_PAPERS = 15, 8
#: Themes an aspect survey groups its lines into (fewer for few papers: one per 4 lines).
MAX_THEMES = 4
#: A sentence needs at least this role score (cues) to stand for its paper's aspect.
MIN_ROLE = 0.9

_LIMITATION = re.compile(
    r"\b(?:limitations?|limited|fail\w*|struggl\w*|vulnerab\w*|brittle\w*|bias\w*|cannot|"
    r"unable|degrad\w*|hallucinat\w*|overlook\w*|neglect\w*|weakness\w*|shortcoming\w*|"
    r"drawbacks?|suffer\w*|poorly|inconsisten\w*|unreliab\w*|risks?|gaps?|lack\w*|"
    r"insufficien\w*|challeng\w*|remain\w* (?:unclear|open|difficult|unsolved)|"
    r"does not|do not|fall short|sensitiv\w*|costly|expensive|overfit\w*|collapse\w*)\b", re.I)
_DATASET = re.compile(
    r"\b(?:datasets?|benchmarks?|corpus|corpora|suites?|testbeds?|leaderboards?|tasks|"
    r"evaluat\w* (?:on|across|with)|experiments? (?:on|across)|tested on|trained on)\b", re.I)
_METRIC = re.compile(
    r"\b(?:metrics?|measured? (?:by|with|in terms of)|in terms of|scores?|accuracy|precision|"
    r"recall|F1|perplexity|success rates?|win rates?|latency|throughput|error rates?|AUC|"
    r"AUROC|BLEU|ROUGE[-\w]*|FID|PSNR|SSIM|LPIPS|mAP|IoU|pass@\d+|exact match|correlation|"
    r"calibration error|ECE|speed-?ups?|%)\b", re.I)
#: Common metric names spelled in lower case (a closed vocabulary; capitalised names such as
#: FID, BLEU or AUROC are found as names).
METRIC_WORDS = ("accuracy", "precision", "recall", "perplexity", "success rate", "win rate",
                "latency", "throughput", "error rate", "exact match", "calibration error",
                "correlation", "F1", "pass@1", "pass@k", "mAP", "IoU")
#: A dataset or benchmark or metric name: a capitalised name with a capital or digit inside
#: (LongBench, GSM8K, MMLU, ImageNet-1K, HumanEval), or ending in Bench/QA/Eval.
_THING = re.compile(r"\b(?:[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*|"
                    r"[A-Za-z]+(?:Bench|QA|Eval|Arena|Set|Net)\b)(?:[-@][0-9A-Za-z]+)?")
#: Names that are no dataset, benchmark or metric (models, method families, units).
_NOT_THINGS = frozenset("LLM LLMs VLM VLMs MLLM MLLMs GPT GPT-4 GPT-4o GPT-3.5 AI ML RL NLP CV "
                        "LoRA SFT DPO PPO GRPO RLHF CoT RAG MoE KV CNN CNNs GNN GNNs ViT ViTs "
                        "API APIs GPU GPUs CPU TPU MLP MLPs SOTA OOD IID".split())

ROLES = {"approaches": "Approach", "results": "Evidence / results"}


def role_score(aspect: str, sentence: str, position: float) -> float:
    """How much ``sentence`` (at relative ``position`` in its abstract, 0 first) plays the part
    of ``aspect``: :func:`rag.compare.cue_score` of the matching table row for approaches and
    results; cue counts for limitations (limitation words), datasets (dataset words plus names)
    and metrics (metric words plus names)."""
    from rag.compare import cue_score

    if aspect in ROLES:
        return cue_score(ROLES[aspect], sentence, position)
    if aspect == "limitations":
        hits = len(_LIMITATION.findall(sentence))
        return min(2.0, hits) - (0.5 if position == 0 and hits < 2 else 0.0)
    things = named_things(aspect, sentence)
    cue = _DATASET if aspect == "datasets" else _METRIC
    return (1.0 if cue.search(sentence) else 0.0) + min(1.5, 0.5 * len(things))


def named_things(aspect: str, sentence: str) -> list[str]:
    """The dataset/benchmark names (``aspect`` ``datasets``) or metric names (``metrics``) a
    sentence names, in order, without repeats. Names of models and method families
    (:data:`_NOT_THINGS`) are left out; for datasets only names in a sentence that talks about
    data or evaluation count."""
    if aspect == "datasets" and not _DATASET.search(sentence):
        return []
    found = [m.group(0).rstrip(".") for m in _THING.finditer(sentence)]
    if aspect == "metrics":
        found = [f for f in found if _METRIC.fullmatch(f) or f.isupper()]
        low = sentence.lower()
        found += [w for w in METRIC_WORDS if re.search(rf"\b{re.escape(w.lower())}\b", low)]
    out = []
    for f in found:
        if f in _NOT_THINGS or len(f) < 2 or f in out:
            continue
        out.append(f)
    return out


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
    from rag.slots import fold

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
                  min_dense: float) -> list[AnswerSentence]:
    """The sentences of an aspect survey over ``hits`` (best first; see the module docstring).
    Relevance of a sentence to ``query`` (:func:`rag.compose.relevance`) breaks ties between a
    paper's role sentences; the papers are the relevant ones among the hits (at most
    :data:`MAX_PAPERS`)."""
    from rag import compose
    from rag.grounding import embed_cached
    from rag.types import AnswerSentence

    cands = compose.candidates(query, hits, embedder)
    numbers = ([1] + compose.relevant_others(hits, cands, {1}, min_dense))[:MAX_PAPERS]
    if len(numbers) < MIN_PAPERS:  # fewer relevant papers: the next best still count
        numbers += [n for n in range(1, len(hits) + 1) if n not in numbers][
            :MIN_PAPERS - len(numbers)]
    lines: list[tuple[int, compose.Candidate, list[str]]] = []
    for n in numbers:
        sents = sorted(cands.get(n, []), key=lambda c: c.pos)
        m = len(sents)
        best, best_score = None, MIN_ROLE
        for c in sents:
            score = role_score(aspect, c.text, c.pos / (m - 1) if m > 1 else 0.0) + c.score
            if role_score(aspect, c.text, c.pos / (m - 1) if m > 1 else 0.0) >= MIN_ROLE \
                    and score > best_score:
                best, best_score = c, score
        if best is not None:
            things = named_things(aspect, best.text) if aspect in ("datasets", "metrics") else []
            if aspect in ("datasets", "metrics") and not things:
                continue
            lines.append((n, best, things))
    what = {"approaches": "Approaches", "limitations": "Limitations",
            "datasets": "Datasets and benchmarks", "metrics": "Metrics",
            "results": "Results"}[aspect]
    if not lines:
        return [compose.note(f"None of the {len(numbers)} most relevant abstracts has a sentence "
                             f"that states {what.lower()}; the papers found:"),
                *[compose.item(hits[n - 1], n, (cands[n] or [None])[0]) for n in numbers]]
    cited = [n for n, _, _ in lines]
    out = [compose.direct(f"{what} in {len(lines)} of the {len(numbers)} most relevant abstracts"
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
            papers = [hits[n - 1].paper for n, _, _ in members]
            others = [hits[n - 1].paper for (n, _, _), th in zip(lines, themes) if th != t]
            out.append(compose.heading(f"{_theme_label(papers, others).capitalize()}:"))
        for n, c, things in members:
            s = compose.item(hits[n - 1], n, c)
            if things:
                s.text = s.text.replace(f"[{n}]", f"[{n}] ({', '.join(things)})", 1)
            out.append(s)
    return out
