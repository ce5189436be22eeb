"""The work phase 1 of a build (:func:`index.build.build_index`) hands to other processes: the
search texts of a long list normalised in a pool of forked workers (:func:`_normalise`), and the
paper names written by a forked child beside the BM25 build (:func:`_start_names`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from index.build_summary import BuildSummary
from index.chunking import search_text
from rag.backends.lexical import bm25_text
from rag.types import Paper


#: Papers to normalise from which phase 1 uses a pool of processes (one per CPU, at most
#: :data:`NORMALISE_PROCESSES`): LaTeX conversion (pylatexenc) is pure Python, about 21 s for
#: the 19,630 ICLR 2026 abstracts on one core of this machine, most of phase 1. The workers
#: also make each BM25 text's input to bm25s (:func:`rag.backends.lexical.bm25_text`, 3 s more), which
#: the BM25 build would otherwise make alone after them.
PARALLEL_NORMALISE = 2000
NORMALISE_PROCESSES = 4


def _normalise_texts(items: list[tuple[str, str, list[str]]]) -> list[tuple[str, str, str, str]]:
    """:func:`index.chunking.search_text` of ``(title, abstract, keywords)`` items and the
    :func:`rag.backends.lexical.bm25_text` of each BM25 text (runs in a worker process)."""
    out = []
    for t, a, k in items:
        texts = search_text(Paper(id="", title=t, abstract=a, keywords=k))
        out.append((*texts, bm25_text(texts[2])))
    return out


def _normalise(papers: list[Paper], summary: BuildSummary
               ) -> tuple[dict[str, tuple[str, str, str]], dict[str, str]]:
    """``(paper id -> (title, abstract, BM25 text), BM25 text -> its bm25_text)``, normalised
    (:func:`search_text`): in worker processes for long lists (:data:`PARALLEL_NORMALISE`),
    which also make the second mapping, else here (and the BM25 build makes it); the same text
    either way. The fill reuses the titles and abstracts."""
    out: dict[str, tuple[str, str, str]] = {}
    prepared: dict[str, str] = {}
    if not papers:
        return out, prepared
    with summary.timed("normalise"):
        workers = min(NORMALISE_PROCESSES, os.cpu_count() or 1)
        if len(papers) >= PARALLEL_NORMALISE and workers > 1:
            try:
                out, prepared = _normalise_in_processes(papers, workers)
            except Exception:  # noqa: BLE001 - no fork, a broken pool ...: one process does it
                out, prepared = {}, {}
        for paper in papers:
            if paper.id not in out:
                out[paper.id] = search_text(paper)
    return out, prepared


def _normalise_in_processes(papers: list[Paper], workers: int
                            ) -> tuple[dict[str, tuple[str, str, str]], dict[str, str]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if "fork" not in multiprocessing.get_all_start_methods():
        return {}, {}
    # fork: the workers need only rag.text, and a spawned worker would run the caller's script
    parts = [papers[i:i + 250] for i in range(0, len(papers), 250)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        done = pool.map(_normalise_texts, [[(p.title, p.abstract, list(p.keywords)) for p in part]
                                           for part in parts])
        out, prepared = {}, {}
        for part, texts in zip(parts, done):
            for p, (title, abstract, text, terms) in zip(part, texts):
                out[p.id] = (title, abstract, text)
                prepared[text] = terms
    return out, prepared


def _start_names(write: Callable[[Path, str], object], index_dir: Path, fingerprint: str,
                 log: Callable[[str], None]) -> Callable[[], None]:
    """Start ``write(index_dir, fingerprint)`` (the paper names: see
    :func:`index.build.build_index`) in a forked child process, where it runs beside the BM25
    build on the other core; returns the function that waits for it. Without fork, that function
    runs it. A failure is logged, not raised: a reader then builds the names itself."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = future = None
    if "fork" in multiprocessing.get_all_start_methods():
        try:
            pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
            future = pool.submit(write, index_dir, fingerprint)
        except Exception:  # noqa: BLE001 - no process to be had: written when waited for
            pool = future = None

    def wait() -> None:
        try:
            if future is None:
                write(index_dir, fingerprint)
            else:
                future.result()
        except Exception as exc:  # noqa: BLE001 - the names are an optimisation of the reader
            log(f"paper names not written ({type(exc).__name__}: {exc}); the first question "
                "builds them")
        finally:
            if pool is not None:
                pool.shutdown()

    return wait
