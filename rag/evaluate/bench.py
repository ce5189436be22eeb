"""Benchmarks behind ``paperchat bench {index,query,answer,layout} [--json]``: they print figures
and never pass or fail on time.

Each ``bench_<what>(settings) -> dict`` returns plain JSON-able values (rates per second, times in
seconds, memory in MB); :func:`format_result` prints any such dict as indented ``key: value``
lines. CPU figures on a shared machine are noisy: compare the rates of one run (measured
interleaved in one process), not runs on different days. The benchmarks live in
:mod:`rag.evaluate.bench_index`, :mod:`rag.evaluate.bench_query` (query and answer) and
:mod:`rag.evaluate.bench_layout`; this module holds what they share.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any


def _peak_rss_mb() -> float:
    """Peak resident set size of this process so far, MB (``ru_maxrss`` is in KB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


def _format_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "null"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, dict):  # inside a list
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def format_result(result: dict[str, Any], indent: int = 0) -> str:
    """Any benchmark dict as indented ``key: value`` lines (nested dicts indented by two spaces;
    floats to 4 significant digits)."""
    lines = []
    pad = " " * indent
    for key, value in result.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            if value:
                lines.append(format_result(value, indent + 2))
        else:
            lines.append(f"{pad}{key}: {_format_value(value)}")
    return "\n".join(lines)

