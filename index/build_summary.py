"""What a build reports: :class:`BuildSummary` (the counts, the problems of the list, and the
wall time of each of the build's :data:`STAGES`), which :func:`index.build.build_index` returns
and ``paperchat bench index`` reads."""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field

from index.source_records import Problem


#: The stages a build's time is split into (``BuildSummary.stages``, ``paperchat bench index``):
#: reading the list, the store and catalog checks of an interrupted build (``check``), text
#: normalisation, tokenising into chunks, embedding, batch files and Chroma writes and deletes
#: (``store``), catalog writes, the BM25 index, the paper vectors and the map layout. Phase 1 is
#: load, check, normalise, catalog and bm25. In the dense fill, chunking (and normalising what
#: phase 1 did not) runs in a helper thread and store and catalog in a writer thread, beside
#: embedding (:func:`index.dense_fill._embed_papers`), so their seconds overlap the embedder's;
#: ``wait`` is the embedding loop's own time spent waiting for them (the part that was not
#: hidden). The paper names (``names``, phase 1) are written by a child process beside the BM25
#: build: the stage is the time phase 1 waited for them after BM25 was done.
STAGES = ("load", "check", "normalise", "chunk", "embed", "store", "catalog", "wait", "bm25",
          "names", "vectors", "layout")


@dataclass
class BuildSummary:
    """What a build did. Times in seconds."""

    name: str
    papers: int = 0            # papers in the index after the build
    chunks: int = 0            # chunks in the index after the build
    embedded: int = 0          # papers (re-)embedded by this build
    updated_metadata: int = 0  # papers whose metadata changed but text did not
    unchanged: int = 0
    pruned: int = 0
    skipped: int = 0           # malformed records skipped
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0
    #: Wall seconds per stage (:data:`STAGES`); stages that did not run are absent.
    stages: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    #: Tokens given to the embedder, special tokens included (sum of chunk ``n_tokens``).
    tokens_embedded: int = 0
    #: Wall seconds from the start until the index answered (catalog, BM25 and manifest
    #: written: phase 1), and those of the dense fill with the paper vectors and the map after.
    ready_seconds: float = 0.0
    dense_seconds: float = 0.0
    #: Papers per year in the index after the build (:meth:`index.catalog.Catalog.year_totals`).
    years: dict[int, int] = field(default_factory=dict)

    @contextmanager
    def timed(self, stage: str):
        """Add the wall time of the ``with`` body to ``stages[stage]`` (perf_counter seconds)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stages[stage] += time.perf_counter() - t0

    def stages_line(self) -> str:
        """``time by stage: embed 301.2 s (78%), store 40.3 s (10%), ...``, slowest first, as
        shares of the build's wall time, then when the index answered and how long the dense
        fill took. Chunk, store and catalog run beside embedding (:data:`STAGES`), so the shares
        add up to more than 100%."""
        total = self.seconds or sum(self.stages.values()) or 1.0
        parts = [f"{k} {v:.1f} s ({v / total:.0%})"
                 for k, v in sorted(self.stages.items(), key=lambda kv: -kv[1]) if v >= 0.05]
        phases = (f"; answering after {self.ready_seconds:.1f} s, then the dense fill and map "
                  f"{self.dense_seconds:.1f} s" if self.embedded else "")
        return ("time by stage (in the dense fill, chunk, store and catalog overlap embed): "
                + (", ".join(parts) or "nothing to do") + phases)

    def line(self) -> str:
        per_year = (" (" + ", ".join(f"{y}: {n:,}" for y, n in self.years.items()) + ")"
                    if len(self.years) > 1 else "")
        return (f"index {self.name!r}: {self.papers} papers{per_year}, {self.chunks} chunks; "
                f"embedded {self.embedded}, unchanged {self.unchanged}, metadata updated "
                f"{self.updated_metadata}, pruned {self.pruned}, skipped {self.skipped}; "
                f"{self.seconds:.1f} s")
