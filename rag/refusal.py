"""Decide when the index does not cover a question ("not in this corpus").

Calibrated on scores, not guessed: see :data:`MIN_DENSE` for where the threshold comes from.
"""

from __future__ import annotations

from rag.types import Hit

#: Best-chunk cosine similarity below which no paper is considered about the question.
#: Placeholder until calibrated on the dev sets (rag.evaluate prints the score distributions).
MIN_DENSE = 0.30


def is_out_of_corpus(question: str, hits: list[Hit], retriever) -> bool:
    """True when no hit is relevant enough to answer from."""
    if not hits:
        return True
    return max(h.dense for h in hits) < MIN_DENSE


#: Baseline refusal thresholds (top BM25 score, top cosine) for ``paperchat eval``'s baselines.
BASELINE_MIN = {"bm25": 5.0, "dense": MIN_DENSE}


def baseline_refuses(system: str, scores: list[float]) -> bool:
    """Refusal rule of a single-channel baseline: its best score under BASELINE_MIN[system]."""
    return not scores or scores[0] < BASELINE_MIN[system]
