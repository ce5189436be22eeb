"""Composing an answer from the evidence: extractive sentences and comparison tables, aspect surveys, grounding and its checks, citations, prompts, refusal, and an answer's renderings."""
