"""Phase 2 of a build (:func:`index.build.build_index`): the dense fill, which chunks and embeds
the papers that have no vectors yet in steps of :data:`PAPERS_PER_STEP`, committing each step as
it finishes (:func:`_embed_papers`), and the lower scheduling priority it runs at
(:func:`lower_priority`)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from index import dense as dense_batches
from index.build_summary import BuildSummary
from index.catalog import Catalog, content_hash
from index.chunking import chunk_metadata, chunk_paper, search_text
from index.vectors import text_hash
from rag.types import Paper

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder
    from rag.backends.store import ChromaStore
    from rag.settings import Settings


#: Papers embedded and written per step; a kill loses at most one step's work.
PAPERS_PER_STEP = 64


def lower_priority(increment: int) -> int:
    """Lower this process's scheduling priority by ``increment`` nice levels (at most to 19),
    for every thread it has now: on Linux a nice value belongs to each thread (the Chroma client's
    threads are already running), so each one in ``/proc/self/task`` is lowered; threads started
    later inherit it from the thread that starts them. Elsewhere the process as a whole. An
    unprivileged process cannot raise it back. Returns the number of threads lowered.

    Linux's autogroups (``/proc/sys/kernel/sched_autogroup_enabled``) share the CPU between
    sessions first and apply nice values only within a session. So a process that leads its own
    session (``setsid``, a service, a script that starts it so) also lowers its session's
    autogroup, which holds nothing else; one started from a shell leaves the shell's alone (that
    would slow the terminal after the build): an ask from another terminal already gets a
    session's equal share, and one from the same session is ordered by the threads' nice."""
    if increment <= 0 or not hasattr(os, "setpriority"):
        return 0
    tasks = Path("/proc/self/task")
    try:
        threads = [int(t.name) for t in tasks.iterdir()] if tasks.is_dir() else [0]
    except OSError:
        threads = [0]
    lowered = 0
    for tid in threads:
        try:
            now = os.getpriority(os.PRIO_PROCESS, tid)
            os.setpriority(os.PRIO_PROCESS, tid, min(19, now + increment))
            lowered += 1
        except OSError:  # a thread that has just ended
            continue
    _lower_autogroup(increment)
    return lowered


def _lower_autogroup(increment: int) -> bool:
    """Raise the nice value of this process's autogroup by ``increment`` when the process leads
    its session (see :func:`lower_priority`); True when it did."""
    group = Path("/proc/self/autogroup")
    try:
        if os.getsid(0) != os.getpid() or not group.is_file():
            return False
        now = int(group.read_text().split("nice")[-1])
        group.write_text(str(min(19, now + increment)))
        return True
    except (OSError, ValueError):  # no autogroups, or not allowed
        return False


def _embed_papers(store: ChromaStore, catalog: Catalog, papers: list[Paper],
                  normalised: dict[str, tuple[str, str, str]], embedder: Embedder,
                  settings: Settings, progress: bool, summary: BuildSummary,
                  index_dir: Path) -> None:
    """The dense fill: embed ``papers`` (their catalog rows are written) in steps of
    :data:`PAPERS_PER_STEP`, as a three-stage pipeline: a helper thread chunks step k+1 (and
    normalises it when phase 1 did not: ``normalised`` holds what it did) and a writer thread
    commits step k-1 while the embedder works on step k. The embedder's ONNX Runtime threads
    release the GIL, so the Python and Chroma work of the other two stages fills the CPU time
    that a sequential loop left idle (measured in ``paperchat bench index``; see the README's
    performance notes).

    A step is committed as :mod:`index.dense` describes: its batch file, then its papers marked
    not embedded (an old ``dense`` row of a changed paper), its old chunks deleted and the new
    ones upserted, then its ``dense`` rows in one transaction. One writer commits the steps in
    order, so a killed build resumes at the first step that was not committed, with the same
    steps as an uninterrupted build (the papers still to embed are the tail of the list).

    Chunking uses its own copy of the embedder's tokenizer: a Hugging Face fast tokenizer keeps
    its truncation setting as state that each call sets (the embedder truncates at 256 tokens,
    chunking must not truncate), and the Rust encoder runs without the GIL, so one shared
    tokenizer could cut an abstract being chunked while the embedder encodes.
    """
    import copy
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    tokenizer = copy.deepcopy(embedder.tokenizer)
    steps = [papers[s:s + PAPERS_PER_STEP] for s in range(0, len(papers), PAPERS_PER_STEP)]
    had_rows = catalog.dense_ids()  # papers whose old chunks may be stored
    first_batch = catalog.last_batch() + 1

    def prepare(step: list[Paper]):
        ids, docs, metas, rows = [], [], [], []
        tokens = 0
        for paper in step:
            if paper.id in normalised:
                title, abstract = normalised[paper.id][:2]
            else:
                with summary.timed("normalise"):
                    title, abstract = search_text(paper)[:2]
            with summary.timed("chunk"):
                chunks = chunk_paper(paper.id, title, abstract, tokenizer,
                                     max_tokens=settings.chunk_tokens,
                                     overlap=settings.chunk_overlap)
            for c in chunks:
                ids.append(c.id)
                docs.append(c.text)
                metas.append(chunk_metadata(paper, c, len(chunks)))
                tokens += c.n_tokens
            rows.append((paper.id, text_hash(content_hash(paper)), len(chunks)))
        return ids, docs, metas, rows, tokens

    def write(batch: int, step: list[Paper], ids, vectors, docs, metas, rows) -> None:
        stale = [p.id for p in step if p.id in had_rows]
        with summary.timed("store"):
            dense_batches.write_batch(index_dir, batch, ids, vectors)
            if stale:
                catalog.drop_dense(stale)  # before their chunks go: see index.catalog
                store.delete_papers(stale)
            store.upsert(ids, vectors, docs, metas)
        with summary.timed("catalog"):
            catalog.commit_dense(batch, rows, time.time())  # readers see the step from here

    bar = tqdm(total=len(papers), unit="paper", disable=not progress or None, file=sys.stderr,
               desc="embedding", dynamic_ncols=True)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="index-prepare") as preparer, \
                ThreadPoolExecutor(1, thread_name_prefix="index-write") as writer:
            ahead = preparer.submit(prepare, steps[0]) if steps else None
            written = None  # (future, papers) of the step being written
            for k, step in enumerate(steps):
                with summary.timed("wait"):
                    ids, docs, metas, rows, tokens = ahead.result()
                ahead = preparer.submit(prepare, steps[k + 1]) if k + 1 < len(steps) else None
                with summary.timed("embed"):
                    vectors = embedder.embed(docs)
                summary.tokens_embedded += tokens
                if written is not None:
                    with summary.timed("wait"):
                        written[0].result()
                    bar.update(len(written[1]))
                written = (writer.submit(write, first_batch + k, step, ids, vectors, docs, metas,
                                         rows), step)
            if written is not None:
                with summary.timed("wait"):
                    written[0].result()
                bar.update(len(written[1]))
    finally:
        bar.close()
