"""A 2-D map of every paper of an index, computed at index time and stored beside the manifest.

Paper vectors: each paper's L2-normalised mean of its stored chunk vectors (:mod:`index.vectors`,
the centroid that :meth:`rag.retrieve.retriever.Retriever.feedback_query` uses), taken from the index's
``paper_vectors.npz`` when the build has just refreshed it, else read from the store by chunk id
in batches of :data:`VECTOR_BATCH` papers; shape (n_papers, dim) float32.

2-D method: t-SNE by openTSNE (Barnes-Hut gradients below 10,000 papers, FFT interpolation
above: Linderman et al. 2019) on those vectors, with openTSNE's default schedule (250 early
exaggeration + 500 iterations), chosen on measurement against UMAP, PaCMAP and a PCA baseline
(``paperchat bench layout``; figures in README.md): it keeps the most local structure, measured
as the share of papers whose nearest neighbour on the map is among their 10 nearest neighbours
in embedding space (cosine; :func:`knn_preservation`). The vectors are unit length, so
euclidean neighbours are cosine neighbours. Seeded: the same vectors and seed give the same map
(vectors that differ by float rounding give another, equally good one). Fewer than
:data:`MIN_TSNE` papers get a deterministic PCA layout (a circle below 3 papers), 0 papers an
empty one.

Topic labels: density clusters of the 2-D map (scikit-learn's HDBSCAN, ``min_cluster_size``
from :func:`min_cluster_size`, ``min_samples`` :data:`MIN_SAMPLES`, regions of at most
:data:`MAX_CLUSTER_SHARE` of the papers), each labelled by its most distinctive keywords (a
coverage-weighted log-odds lift over the papers' own ``keywords``, see :func:`_distinctive`;
title words when a cluster's keywords are too sparse; never a model) and placed at the
cluster's median point (:func:`cluster_labels`).

Storage: ``layout.npz`` in the index directory (:data:`rag.paths.LAYOUT_FILE`), written
atomically: ids, xy (float32), the labels, the method and its parameters, each paper's text hash
and the catalog fingerprint it was computed for (:func:`index.catalog.catalog_fingerprint`).
:func:`ensure_layout` loads it when that fingerprint is the manifest's and otherwise computes and
saves it, so an index built before maps existed gets one on first use.

Updates: a build that changed papers calls :func:`refresh_layout` before writing the manifest.
When at most :data:`INCREMENTAL_SHARE` of the papers are new or have new text (counted since the
last full fit), the old positions stay and each new paper is placed beside its most similar old
paper (:func:`place_new`: better and faster here than openTSNE's ``transform``, measured);
otherwise the map is fitted again. Metadata-only changes keep every position and only redo the
labels.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from index.vectors import VECTOR_BATCH, PaperVectors, from_store
from rag.paths import LAYOUT_FILE, IndexPaths
from rag.types import Paper

if TYPE_CHECKING:
    from rag.settings import Settings
    from rag.backends.store import ChromaStore

#: Version of the file's layout; another version is recomputed.
FORMAT_VERSION = 1
#: Fewest papers given a t-SNE map; fewer get PCA (a circle below 3).
MIN_TSNE = 5
#: t-SNE perplexity (openTSNE's default; lowered to (n - 1) / 3 for small indexes).
PERPLEXITY = 30.0
#: Threads for openTSNE's neighbour search and gradients (this machine has 2 cores).
N_JOBS = 2
#: New or re-embedded papers, as a share of the index, up to which a build places them into the
#: old map instead of fitting a new one (counted since the last full fit).
INCREMENTAL_SHARE = 0.05
#: Smallest index that is updated incrementally (below it a full fit is cheap).
MIN_INCREMENTAL = 1000
#: Most keywords in a label, and the longest label (chars) a second or third keyword may make.
MAX_LABEL_TERMS = 3
MAX_LABEL_CHARS = 48

Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


@dataclass
class Label:
    """A topic label on the map: ``text`` (1-3 keywords joined by " · ") at map point (x, y);
    ``size`` is the number of papers in its cluster."""

    text: str
    x: float
    y: float
    size: int


@dataclass
class Layout:
    """Map positions of an index's papers.

    ``ids``: paper ids, the row order of ``xy``; ``xy``: shape (n, 2) float32, map units
    (arbitrary; only distances between points mean anything); ``labels``: topic labels;
    ``method``: how it was made (library, version, parameters); ``fingerprint``: the catalog
    fingerprint it was computed for. ``text_hashes`` (each paper's title+abstract hash, same
    order as ``ids``) and ``params`` let a later build place only new papers.
    """

    ids: list[str]
    xy: np.ndarray
    labels: list[Label]
    method: str
    fingerprint: str
    text_hashes: list[str] = field(default_factory=list)
    params: dict = field(default_factory=dict)


# --- paper vectors ---------------------------------------------------------------------------


def paper_vectors(store: ChromaStore, ids: Sequence[str], n_chunks: Mapping[str, int],
                  batch: int = VECTOR_BATCH, saved: PaperVectors | None = None
                  ) -> tuple[list[str], np.ndarray]:
    """Each paper's vector (:mod:`index.vectors`): from ``saved`` when it holds them all, else
    read from ``store``. Returns ``(ids found, vectors (found, dim) float32)``, rows in the order
    of ``ids``."""
    if saved is not None:
        found, vectors = saved.take(ids)
        if len(found) == len(ids):
            return found, vectors
    return from_store(store, ids, n_chunks, batch)


# --- quality -----------------------------------------------------------------------------------


def knn_preservation(vectors: np.ndarray, xy: np.ndarray, k: int = 10,
                     rows: Sequence[int] | None = None, block: int = 1024) -> float:
    """Share of points whose nearest neighbour on the map (euclidean in ``xy``) is among their
    ``k`` nearest neighbours in embedding space (cosine similarity of ``vectors``, exact).

    1.0: every map neighbour is a true near neighbour; a random map scores about k / n.
    ``vectors``: shape (n, dim), need not be normalised; ``xy``: shape (n, 2); ``rows``: score
    only these points (default all). Fewer than 2 points: 1.0. Of points tied on the map, the
    one with the lower index counts as the neighbour.
    """
    n = len(vectors)
    if n < 2:
        return 1.0
    from scipy.spatial import cKDTree

    x = np.asarray(vectors, dtype=np.float32)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    rows = np.arange(n) if rows is None else np.asarray(rows, dtype=int)
    if not len(rows):
        return 1.0
    k = min(k, n - 1)
    xy = np.asarray(xy, dtype=np.float64)
    _, nn = cKDTree(xy).query(xy[rows], k=2)
    # the nearest other point: column 0 is the point itself, unless another sits on it
    map_nn = np.where(nn[:, 0] == rows, nn[:, 1], nn[:, 0])
    hits = 0
    for s in range(0, len(rows), block):
        part = rows[s:s + block]
        sims = x[part] @ x.T
        sims[np.arange(len(part)), part] = -np.inf
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        hits += int((top == map_nn[s:s + block, None]).any(axis=1).sum())
    return hits / len(rows)


# --- 2-D methods -------------------------------------------------------------------------------


def pca_2d(vectors: np.ndarray) -> np.ndarray:
    """The first two principal components, shape (n, 2) float32, signs fixed (largest
    coordinate of each component positive) so the result is deterministic. n < 3: points on a
    unit circle."""
    n = len(vectors)
    if n < 3:
        angles = 2 * np.pi * np.arange(n) / max(n, 1)
        return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    x = np.asarray(vectors, dtype=np.float64)
    x = x - x.mean(axis=0)
    u, s, _ = np.linalg.svd(x, full_matrices=False)
    xy = u[:, :2] * s[:2]
    signs = np.sign(xy[np.abs(xy).argmax(axis=0), [0, 1]])
    return (xy * np.where(signs == 0, 1, signs)).astype(np.float32)


def _perplexity(n: int) -> float:
    return float(min(PERPLEXITY, max(1.0, (n - 1) / 3)))


def tsne_2d(vectors: np.ndarray, seed: int = 0) -> tuple[np.ndarray, str, dict]:
    """openTSNE map of ``vectors`` (shape (n, dim), unit rows): ``(xy (n, 2) float32, method
    text, parameters)``. Deterministic for a given seed."""
    import openTSNE
    from openTSNE import TSNE

    n = len(vectors)
    perplexity = _perplexity(n)
    params = {"library": "openTSNE", "version": openTSNE.__version__, "perplexity": perplexity,
              "metric": "euclidean (unit vectors: cosine order)", "initialization": "pca",
              "n_jobs": N_JOBS, "seed": seed}
    tsne = TSNE(perplexity=perplexity, metric="euclidean", initialization="pca",
                n_jobs=N_JOBS, random_state=seed)
    xy = np.asarray(tsne.fit(np.asarray(vectors, dtype=np.float32)), dtype=np.float32)
    return xy, f"openTSNE {openTSNE.__version__} perplexity={perplexity:g}", params


def embed_2d(vectors: np.ndarray, seed: int = 0) -> tuple[np.ndarray, str, dict]:
    """The map for ``vectors``: t-SNE from :data:`MIN_TSNE` papers, PCA below (a circle below 3).
    Returns ``(xy, method, params)``."""
    n = len(vectors)
    if n >= MIN_TSNE:
        return tsne_2d(vectors, seed)
    if n >= 3:
        return pca_2d(vectors), "PCA (fewer than 5 papers)", {"library": "numpy", "seed": seed}
    return pca_2d(vectors), "circle (fewer than 3 papers)", {"seed": seed}


def place_new(old_vectors: np.ndarray, old_xy: np.ndarray, new_vectors: np.ndarray
              ) -> np.ndarray:
    """Positions for ``new_vectors`` in an existing map of ``old_vectors`` (unit rows): each new
    paper goes beside its most similar old paper (cosine), 0.3 of that paper's distance to its
    own map neighbour towards the median of its 5 most similar old papers, so it sits next to
    its nearest neighbour without covering it. Shape (len(new_vectors), 2) float32.

    Measured on the accepted list (every 20th paper placed into a map of the rest): 0.96 of the
    placed papers keep a true neighbour as their map neighbour (:func:`knn_preservation`),
    against 0.10 with openTSNE's ``transform`` (which starts at the median of 25 neighbours and
    optimises), in 0.02 s instead of 2.2 s; ``paperchat bench layout`` prints both.
    """
    from scipy.spatial import cKDTree

    old_xy = np.asarray(old_xy, dtype=np.float64)
    if not len(new_vectors):
        return np.zeros((0, 2), np.float32)
    if len(old_xy) < 2:
        return np.repeat(old_xy[:1] if len(old_xy) else np.zeros((1, 2)), len(new_vectors),
                         axis=0).astype(np.float32) + np.float32(1.0)
    old = np.asarray(old_vectors, dtype=np.float32)
    out = np.zeros((len(new_vectors), 2), np.float64)
    gap = cKDTree(old_xy).query(old_xy, k=2)[0][:, 1]
    k = min(5, len(old))
    for s in range(0, len(new_vectors), 1024):
        sims = np.asarray(new_vectors[s:s + 1024], dtype=np.float32) @ old.T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(sims, top, axis=1).argsort(axis=1)[:, ::-1]
        top = np.take_along_axis(top, order, axis=1)
        nearest = old_xy[top[:, 0]]
        towards = np.median(old_xy[top], axis=1) - nearest
        norm = np.linalg.norm(towards, axis=1, keepdims=True)
        unit = np.where(norm > 0, towards / np.maximum(norm, 1e-12), [[1.0, 0.0]])
        out[s:s + 1024] = nearest + 0.3 * gap[top[:, 0], None] * unit
    return out.astype(np.float32)


# --- labels ------------------------------------------------------------------------------------

_STOP = frozenset("""a an and are as at be by for from in into is it its of on or our over the their
this to towards toward via with without we using based new learning model models method methods
approach framework data towards via when what how do does can beyond through under than not one
all more less efficient effective""".split())


#: HDBSCAN's ``min_samples`` (at most): how dense a point's neighbourhood must be to be a core
#: point. Left at its default (``min_cluster_size``), the 19,630-paper map fell into 2 clusters.
MIN_SAMPLES = 10
#: Largest region, as a share of the papers (HDBSCAN's ``max_cluster_size``; never below 200
#: papers, so that small indexes keep whole topics). Without it, one of
#: two t-SNE maps of the same 19,630 papers (inputs differing by float rounding) gave 2 regions,
#: one of 19,328 papers; with it, 35 (the other map: 33 either way; 5,358 papers: 30).
MAX_CLUSTER_SHARE = 0.1


def min_cluster_size(n: int) -> int:
    """HDBSCAN's ``min_cluster_size`` for a map of ``n`` papers: n / 150, at least 5 (a topic
    needs a handful of papers) and at most 200. With ``min_samples`` :data:`MIN_SAMPLES` and
    regions of at most :data:`MAX_CLUSTER_SHARE` of the papers: 30 regions at 5,358 papers and
    33-35 at 19,630 (measured), few enough to read on one screen."""
    return int(min(200, max(5, round(n / 150))))


def _term_key(term: str) -> str:
    """Comparison form of a keyword: lower case, hyphens as spaces, single spaces, last word's
    plural 's' dropped (``Large Language Models`` and ``large language model`` are one term,
    ``LLMs`` is ``llm``, ``Mixture-of-Experts`` is ``mixture of expert``)."""
    t = re.sub(r"[\s_-]+", " ", term.strip().lower()).strip()
    words = t.split(" ")
    last = words[-1]
    if len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "is", "us")) and \
            last not in ("series", "species"):
        words[-1] = last[:-1]
    return " ".join(words)


def _display(forms: Counter) -> str:
    """A term's label text: its most common spelling, lower-cased unless a word is an acronym or
    a name written with inner capitals (LLM, RL, NeRF keep theirs)."""
    form = forms.most_common(1)[0][0].strip()
    words = []
    for w in form.split():
        inner_caps = any(c.isupper() for c in w[1:])
        words.append(w if inner_caps else w.lower())
    return " ".join(words)


def _paper_terms(paper: Paper, titles: bool) -> dict[str, str]:
    """``{term key: spelling}`` of a paper: its keywords, or with ``titles`` its title's words
    and pairs of adjacent words (stop words left out)."""
    if not titles:
        return {_term_key(k): k for k in paper.keywords if k and _term_key(k)}
    words = re.findall(r"[A-Za-z][A-Za-z0-9+-]*[A-Za-z0-9+]", paper.title)
    keep = [w if w.lower() not in _STOP and len(w) > 2 else None for w in words]
    terms = {_term_key(w): w for w in keep if w}
    terms.update({_term_key(f"{a} {b}"): f"{a} {b}" for a, b in zip(keep, keep[1:]) if a and b})
    return terms


def _distinctive(clusters: list[list[Paper]], others: list[Paper], titles: bool
                 ) -> list[list[tuple[str, float]]]:
    """Per cluster, ``(label text, score)`` of its terms, best first. With p_c the share of the
    cluster's papers that have the term and p the share of all n papers (noise included) that
    do, score = p_c * log(p_c / p): the term's contribution to the KL divergence of the cluster
    from the whole list (a log-odds lift weighted by coverage). A term on every paper scores 0;
    a rare term must also cover its cluster: at least 2 papers and 5% of it."""
    df: Counter = Counter()
    forms: dict[str, Counter] = {}  # spellings over the whole list: one term, one spelling
    per_cluster: list[Counter] = []
    for members in clusters + [others]:
        counts: Counter = Counter()
        for p in members:
            for key, spelling in _paper_terms(p, titles).items():
                counts[key] += 1
                forms.setdefault(key, Counter())[spelling] += 1
        df.update(counts)
        per_cluster.append(counts)
    n = sum(len(m) for m in clusters) + len(others)
    out = []
    for members, counts in zip(clusters, per_cluster):
        size = len(members)
        need = max(2, math.ceil(0.05 * size))
        scored = [(_display(forms[t]), (c / size) * math.log((c / size) / (df[t] / n)), t)
                  for t, c in counts.items() if c >= need]
        scored.sort(key=lambda s: (-s[1], s[2]))
        out.append([(text, score) for text, score, _ in scored if score > 0])
    return out


def _same_topic(a: str, b: str) -> bool:
    """True when one term's words are a run of the other's or one is the other's acronym
    (``diffusion`` and ``diffusion models``; ``LLM`` and ``large language models``)."""
    a, b = _term_key(a), _term_key(b)

    def initials(t: str) -> str:
        return "".join(w[0] for w in t.split())

    return f" {a} " in f" {b} " or f" {b} " in f" {a} " or a == initials(b) or b == initials(a)


def _label_text(terms: list[tuple[str, float]]) -> str:
    """1-3 terms joined by " · ": the best, then others scoring at least 40% of it, skipping a
    term of the same topic as one already chosen (:func:`_same_topic`), within
    :data:`MAX_LABEL_CHARS`."""
    chosen: list[str] = []
    best = terms[0][1]
    for text, score in terms:
        if len(chosen) == MAX_LABEL_TERMS or (chosen and score < 0.4 * best):
            break
        if any(_same_topic(text, c) for c in chosen):
            continue
        if chosen and len(" · ".join(chosen + [text])) > MAX_LABEL_CHARS:
            continue
        chosen.append(text)
    return " · ".join(chosen)


def cluster_labels(xy: np.ndarray, papers: Sequence[Paper]) -> list[Label]:
    """Topic labels of a map: HDBSCAN clusters of ``xy`` (shape (n, 2); ``papers`` in the same
    order), each labelled by :func:`_distinctive` keywords (title words when no keyword is common
    enough in the cluster) at its median point; largest cluster first. When regions would share
    a label (several LLM regions), the largest keeps it and the others are labelled by their
    best terms outside it. Fewer than 2 * :func:`min_cluster_size` papers: no labels."""
    n = len(papers)
    mcs = min_cluster_size(n)
    if n < 2 * mcs:
        return []
    from sklearn.cluster import HDBSCAN

    assign = HDBSCAN(min_cluster_size=mcs, min_samples=min(MIN_SAMPLES, mcs),
                     max_cluster_size=max(200, int(MAX_CLUSTER_SHARE * n)),
                     copy=True).fit_predict(np.asarray(xy, np.float64))
    k = int(assign.max()) + 1
    if k <= 0:
        return []
    clusters = [[papers[i] for i in np.flatnonzero(assign == c)] for c in range(k)]
    others = [papers[i] for i in np.flatnonzero(assign < 0)]
    by_keywords = _distinctive(clusters, others, titles=False)
    by_titles = None
    labels: list[Label] = []
    used: set[str] = set()
    for c in sorted(range(k), key=lambda c: (-len(clusters[c]), c)):
        terms = by_keywords[c]
        if not terms:
            if by_titles is None:
                by_titles = _distinctive(clusters, others, titles=True)
            terms = by_titles[c]
        if not terms:
            continue
        text = _label_text(terms)
        if text in used:
            taken = text.split(" · ")
            rest = [t for t in terms if not any(_same_topic(t[0], u) for u in taken)]
            text = _label_text(rest) if rest else text
        used.add(text)
        pts = xy[assign == c]
        labels.append(Label(text, float(np.median(pts[:, 0])), float(np.median(pts[:, 1])),
                            len(clusters[c])))
    return labels


# --- compute, save, load -----------------------------------------------------------------------


def compute_layout(store: ChromaStore, catalog_papers: dict[str, Paper],
                   n_chunks: dict[str, int], *, seed: int = 0, log: Log = _stderr,
                   fingerprint: str = "",
                   text_hashes: Mapping[str, str] | None = None,
                   vectors: PaperVectors | None = None) -> Layout:
    """A fresh map of every paper in ``catalog_papers`` that has stored vectors (ids sorted).

    Args:
        store: the index's :class:`rag.backends.store.ChromaStore`.
        catalog_papers: paper id -> Paper (keywords and titles make the labels).
        n_chunks: paper id -> chunk count, from the catalog (names the chunk ids to fetch).
        seed: random seed of t-SNE (same vectors and seed: same map).
        fingerprint, text_hashes: recorded in the layout (the catalog's fingerprint and each
            paper's title+abstract hash), so a later build can tell what changed; by default
            derived from the papers (:func:`index.catalog.content_hash`, as the catalog does).
        vectors: the index's paper vectors when already at hand (else read from ``store``).
    """
    if not fingerprint or text_hashes is None:
        from index.catalog import catalog_fingerprint, content_hash

        full = {pid: content_hash(p) for pid, p in catalog_papers.items()}
        fingerprint = fingerprint or catalog_fingerprint(full)
        text_hashes = {pid: h.split(":")[0] for pid, h in full.items()} \
            if text_hashes is None else text_hashes
    t0 = time.perf_counter()
    ids, vectors = paper_vectors(store, sorted(catalog_papers), n_chunks, saved=vectors)
    t1 = time.perf_counter()
    missing = len(catalog_papers) - len(ids)
    if missing:
        log(f"map layout: {missing} papers have no stored vectors and are left off the map")
    if not ids:
        return Layout([], np.zeros((0, 2), np.float32), [], "empty", fingerprint, [],
                      {"seed": seed, "n": 0})
    xy, method, params = embed_2d(vectors, seed)
    t2 = time.perf_counter()
    labels = cluster_labels(xy, [catalog_papers[i] for i in ids])
    t3 = time.perf_counter()
    params = {**params, "n": len(ids), "fit_papers": len(ids), "placed_since_fit": 0,
              "min_cluster_size": min_cluster_size(len(ids)),
              "seconds": {"vectors": round(t1 - t0, 2), "fit": round(t2 - t1, 2),
                          "labels": round(t3 - t2, 2)}}
    if len(ids) >= 200:
        log(f"map layout: {len(ids)} papers, {method}, {len(labels)} labels; vectors "
            f"{t1 - t0:.1f} s, map {t2 - t1:.1f} s, labels {t3 - t2:.1f} s")
    hashes = text_hashes or {}
    return Layout(ids, xy, labels, method, fingerprint, [hashes.get(i, "") for i in ids], params)


def save_layout(index_dir: Path, layout: Layout) -> None:
    """Write ``layout.npz`` in ``index_dir`` atomically (temporary file, then rename)."""
    path = IndexPaths(index_dir).layout
    meta = {"format_version": FORMAT_VERSION, "method": layout.method,
            "fingerprint": layout.fingerprint, "params": layout.params,
            "labels": [[lb.text, lb.x, lb.y, lb.size] for lb in layout.labels]}
    fd, tmp = tempfile.mkstemp(prefix=f".{LAYOUT_FILE}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, ids=np.asarray(layout.ids, dtype=str),
                     xy=np.asarray(layout.xy, dtype=np.float32).reshape(-1, 2),
                     text_hashes=np.asarray(layout.text_hashes, dtype=str),
                     meta=np.asarray(json.dumps(meta, ensure_ascii=False)))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_layout(index_dir: Path) -> Layout | None:
    """The saved layout of ``index_dir``; None when absent, unreadable or of another format."""
    path = IndexPaths(index_dir).layout
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("format_version") != FORMAT_VERSION:
                return None
            ids = [str(i) for i in data["ids"]]
            xy = np.asarray(data["xy"], dtype=np.float32).reshape(-1, 2)
            hashes = [str(h) for h in data["text_hashes"]]
        if len(xy) != len(ids):
            return None
        labels = [Label(str(t), float(x), float(y), int(s)) for t, x, y, s in meta["labels"]]
        return Layout(ids, xy, labels, str(meta["method"]), str(meta["fingerprint"]),
                      hashes if len(hashes) == len(ids) else [], dict(meta.get("params") or {}))
    except Exception:  # noqa: BLE001 - OSError, ValueError, KeyError, zipfile.BadZipFile ...
        return None


# --- keeping it current --------------------------------------------------------------------------


def _incremental(old: Layout, store: ChromaStore, papers: dict[str, Paper],
                 n_chunks: dict[str, int], hashes: dict[str, str], fingerprint: str,
                 log: Log, vectors: PaperVectors | None = None) -> Layout | None:
    """The old map with removed papers dropped and new or re-embedded ones placed into it, or
    None when a full fit is due (see the module docstring)."""
    text = {pid: h.split(":")[0] for pid, h in hashes.items()}
    old_text = dict(zip(old.ids, old.text_hashes)) if old.text_hashes else {}
    if not old.method.startswith("openTSNE") or not old_text:
        return None
    keep = [i for i, pid in enumerate(old.ids) if pid in papers and old_text[pid] == text[pid]]
    kept_ids = [old.ids[i] for i in keep]
    new_ids = sorted(set(papers) - set(kept_ids))
    fit_papers = int(old.params.get("fit_papers", len(old.ids)))
    placed = int(old.params.get("placed_since_fit", 0)) + len(new_ids)
    n = len(papers)
    if n < MIN_INCREMENTAL or len(kept_ids) < MIN_INCREMENTAL or \
            placed > INCREMENTAL_SHARE * max(n, fit_papers):
        return None
    t0 = time.perf_counter()
    xy = old.xy[keep]
    if new_ids:
        ids_kept, old_vectors = paper_vectors(store, kept_ids, n_chunks, saved=vectors)
        found, new_vectors = paper_vectors(store, new_ids, n_chunks, saved=vectors)
        if ids_kept != kept_ids:
            return None
        new_ids = found
        if new_ids:
            xy = np.concatenate([xy, place_new(old_vectors, xy, new_vectors)])
    ids = kept_ids + new_ids
    order = np.argsort(ids, kind="stable")
    ids = [ids[i] for i in order]
    xy = np.asarray(xy[order], dtype=np.float32)
    labels = cluster_labels(xy, [papers[i] for i in ids])
    params = {**old.params, "n": len(ids), "fit_papers": fit_papers,
              "placed_since_fit": int(old.params.get("placed_since_fit", 0)) + len(new_ids)}
    log(f"map layout: kept {len(kept_ids)} positions, placed {len(new_ids)} papers into the map "
        f"({time.perf_counter() - t0:.1f} s)")
    return Layout(ids, xy, labels, old.method, fingerprint, [text[i] for i in ids], params)


def refresh_layout(index_dir: Path, store: ChromaStore, catalog, fingerprint: str, *,
                   seed: int = 0, log: Log = _stderr,
                   vectors: PaperVectors | None = None) -> Layout:
    """Bring ``index_dir``'s layout up to the catalog (fingerprint ``fingerprint``): incremental
    when few papers are new (see the module docstring), else a full fit; saved, then returned.
    ``catalog`` is an :class:`index.catalog.Catalog`; ``vectors`` its paper vectors when at hand
    (:func:`index.vectors.refresh_vectors`), else they are read from ``store``."""
    hashes = catalog.hashes()
    papers = {p.id: p for p, _ in catalog.papers()}
    n_chunks = catalog.chunk_counts()
    old = load_layout(index_dir)
    if old is not None and old.fingerprint == fingerprint:
        return old  # (a build killed after writing it, before its manifest)
    layout = None
    if old is not None:
        layout = _incremental(old, store, papers, n_chunks, hashes, fingerprint, log, vectors)
    if layout is None:
        text = {pid: h.split(":")[0] for pid, h in hashes.items()}
        layout = compute_layout(store, papers, n_chunks, seed=seed, log=log,
                                fingerprint=fingerprint, text_hashes=text, vectors=vectors)
    save_layout(index_dir, layout)
    return layout


def ensure_layout(settings: Settings, name: str, *, log: Log = _stderr) -> Layout:
    """The map of index ``name``: the saved one when it was computed for the catalog the manifest
    names (its ``catalog_fingerprint``), else computed now and saved (an index built before maps
    existed, or with ``map_layout`` off, gets one on first use: about a minute at 20,000 papers).

    While a build is writing the index (its catalog differs from the manifest, or its dense fill
    is not done), the layout of the papers embedded so far is returned without being saved.

    Raises:
        IndexNotFoundError: no such index.
    """
    from index import manifest
    from index.catalog import catalog_fingerprint
    from index.reader import index_exists, open_catalog, open_chunks
    from rag.errors import IndexNotFoundError

    index_dir = settings.index_dir(name)
    if not index_exists(settings, name):
        raise IndexNotFoundError(f"no index named {name!r} under {settings.home}; build it "
                                 f"with: paperchat index PATH --name {name}")
    catalog = open_catalog(index_dir)
    hashes = catalog.hashes()
    now = catalog_fingerprint(hashes)
    recorded = manifest.read(index_dir) or {}
    wanted = recorded.get("catalog_fingerprint") or now
    saved = load_layout(index_dir)
    if saved is not None and saved.fingerprint in (wanted, now):
        return saved  # (== now: written by a build that has not yet written its manifest)
    papers = {p.id: p for p, _ in catalog.papers()}
    # while the dense fill runs: the papers embedded so far, from its batches (index.dense)
    store = open_chunks(index_dir, settings, name, catalog, papers, recorded)
    if now == wanted and not getattr(store, "building", False):
        return refresh_layout(index_dir, store, catalog, now, log=log)
    log("map layout: the index is being written; this map of it as it is now is not saved")
    return compute_layout(store, papers, catalog.chunk_counts(), log=log, fingerprint=now,
                          text_hashes={pid: h.split(":")[0] for pid, h in hashes.items()})
