"""Measuring it: retrieval and answer evaluations, the conference checks, author-TL;DR queries and the benchmarks (figures, never pass/fail on time)."""
