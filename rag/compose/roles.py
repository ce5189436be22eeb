"""Sentence roles in an abstract: does a sentence state the approach, the results, a
limitation, the datasets and benchmarks, or the metrics? (:func:`role_score`), and the names of
datasets, benchmarks and metrics a sentence gives (:func:`named_things`).

Approach and results reuse the cue words of the comparison table's rows (:mod:`rag.compose.compare`);
limitations, datasets and metrics have cue words here. :mod:`rag.compose.aspects` builds aspect surveys
on them and :mod:`rag.compose.extractive` prefers a role's sentences when a turn asks about that aspect.
"""

from __future__ import annotations

import re

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
#: Words after which, within :data:`CUE_WINDOW` words, a name is a dataset or benchmark
#: ("experiments on LongBench and RULER", "benchmarks such as MMLU"), and words right after
#: which a name is one too ("the HELMET benchmark").
_DATA_CUE = re.compile(r"^(?:on|including|include|includes|such|e\.g\.?|like|across|over|"
                       r"benchmarks?|datasets?|suites?|corpus|corpora|tasks?|testbeds?)$", re.I)
_DATA_NOUN = re.compile(r"^(?:benchmarks?|datasets?|suites?|corpus|corpora|bench|leaderboards?)"
                        r"[,.;:)]*$", re.I)
CUE_WINDOW = 6
#: A plural acronym (LMs, VLMs) or a model size (LLaMA-3-8B, Qwen2.5-7B): not a dataset.
_NOT_DATA = re.compile(r"^[A-Z]{2,}s$|\d+(?:\.\d+)?[BMK]$|-(?:based|level|like|aware|style|"
                       r"scale|free|specific|wise|driven|[a-z]+(?:ed|ing|ive|al|ous))$|"
                       r"^(?:QA|NLU|NLG|NLP|VQA|ICL|SFT)$|"
                       # model families (a model, not the data it is tested on)
                       r"^(?:GPT|Llama|LLaMA|Qwen|Mistral|Mixtral|Gemma|Gemini|Claude|DeepSeek|"
                       r"Phi|OPT|BERT|RoBERTa|ViT|CLIP|SigLIP|LLaVA|InternVL|o1|o3)[-\d.]*\w{0,4}$")


#: The row a comparison asked about one aspect puts first ("which datasets do they each
#: use?"): the table's own row for approaches and results (:data:`ROLES`), else a row of its own.
ASPECT_ROWS = {**ROLES, "limitations": "Limitations", "datasets": "Datasets / benchmarks",
               "metrics": "Metrics"}


def aspect_row(aspect: str):
    """``(row label, scorer)`` for :func:`rag.compose.compare.build_comparison`'s ``first`` and
    ``scorer`` (``scorer(sentence, position)`` is :func:`role_score` of ``aspect``, to be at
    least :data:`MIN_ROLE`); ``("", None)`` for no aspect."""
    if aspect not in ASPECT_ROWS:
        return "", None
    return ASPECT_ROWS[aspect], lambda sentence, position: role_score(aspect, sentence, position)


def role_score(aspect: str, sentence: str, position: float) -> float:
    """How much ``sentence`` (at relative ``position`` in its abstract, 0 first) plays the part
    of ``aspect``: :func:`rag.compose.compare.cue_score` of the matching table row for approaches and
    results; cue counts for limitations (limitation words), datasets (dataset words plus names)
    and metrics (metric words plus names)."""
    from rag.compose.compare import cue_score

    if aspect in ROLES:
        return cue_score(ROLES[aspect], sentence, position)
    if aspect == "limitations":
        hits = len(_LIMITATION.findall(sentence))
        return min(2.0, hits) - (0.5 if position == 0 and hits < 2 else 0.0)
    things = named_things(aspect, sentence)
    cue = _DATASET if aspect == "datasets" else _METRIC
    return (1.0 if cue.search(sentence) else 0.0) + min(1.5, 0.5 * len(things))


def named_things(aspect: str, sentence: str, own: str = "") -> list[str]:
    """The dataset/benchmark names (``aspect`` ``datasets``) or metric names (``metrics``) a
    sentence names, in order, without repeats. Names of models and method families
    (:data:`_NOT_THINGS`) and the paper's own name (``own``, the name its title gives, folded
    as :func:`rag.understand.mentions.fold_name`) are left out; for datasets only names in a sentence that
    talks about data or evaluation count; a metric is a known metric name (FID, BLEU, AUROC ...,
    :data:`METRIC_WORDS`), a name ending in "Score", or a name right before "score"/"metric"."""
    from rag.understand.mentions import fold_name

    if aspect == "datasets" and not _DATASET.search(sentence):
        return []
    found = [m.group(0).rstrip(".") for m in _THING.finditer(sentence)]
    if aspect == "datasets":
        words = sentence.split()
        near: set[str] = set()
        for i, w in enumerate(words):
            if _DATA_CUE.match(w.strip("(),;:")):
                near.update(x.strip("(),;:.") for x in words[i + 1:i + 1 + CUE_WINDOW])
            if i + 1 < len(words) and _DATA_NOUN.match(words[i + 1]):
                near.add(w.strip("(),;:."))
        found = [f for f in found if f in near and not _NOT_DATA.search(f)]
    if aspect == "metrics":
        found = [f for f in found if _METRIC.fullmatch(f) or f.lower().endswith("score") or
                 re.search(rf"\b{re.escape(f)}\s+(?:score|metric|accuracy)", sentence)]
        low = sentence.lower()
        found += [w for w in METRIC_WORDS if re.search(rf"\b{re.escape(w.lower())}\b", low)]
    out = []
    for f in found:
        if f in _NOT_THINGS or len(f) < 2 or f in out or (own and fold_name(f) == own):
            continue
        out.append(f)
    return out


