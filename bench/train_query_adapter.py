"""Train the linear query adapter (:mod:`rag.retrieve.query_adapter`) and write
``rag/retrieve/query_adapter.npz``::

    .venv/bin/python bench/train_query_adapter.py            # train, report, write
    .venv/bin/python bench/train_query_adapter.py --dry-run  # the figures only, nothing written

**Data**: the papers' vectors of an index of ICLR 2018 and all of ICLR 2026 (``--index``,
default ``years``, 20,625 papers; built from ``../shared/data`` first when missing, about 25
minutes on 2 cores) and queries written from the same lists, each asking for its own paper:

* each paper's keywords (its first six, comma-joined), 20,519 queries;
* the author TL;DRs of the ``train`` part of the dev half (first md5 hex digit 0-5, coined names
  masked: :func:`rag.evaluate.tldr.tldr_queries`), 3,774 queries; the 6-7 part is only reported
  and the 8-f half (kept for evaluation) is never read;
* the survey and terse questions of ``tests/data/topics/topics_a.jsonl`` (the tune file of the
  relevance model), each with all its on-topic papers as positives.

**Training**: ``W`` (dim x dim, from 0) minimises the cross-entropy of each query's softmax over
every paper of the index at temperature :data:`TAU` (InfoNCE; a positive set's target mass is
split evenly) plus :data:`L2` ``||W||^2``, with Adam (lr 1e-3, batches of 256, :data:`EPOCHS`
epochs, seed 0), in torch on the CPU (about 30 s). The figures printed are the dense channel
alone, plain query against adapted, over the 5,358 accepted ICLR 2026 papers: recall@1 of the kept-aside
TL;DRs and recall@15/@50 of ``topics_b``/``topics_c``'s survey and terse questions, which are
never trained on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
TOPICS = ROOT / "tests" / "data" / "topics"
#: Softmax temperature and L2 weight (the first values tried; 0.03 and 1e-2 / 1e-4 were no better
#: on topics_a and the kept-aside TL;DRs), epochs, batch size.
TAU, L2, EPOCHS, BATCH = 0.05, 1e-3, 3, 256
#: Keywords of a paper joined into one query.
KEYWORDS = 6


def queries(known: set[str]) -> list[tuple[str, str, list[str]]]:
    """``(kind, text, positive paper ids)`` from the lists and ``topics_a`` (module docstring);
    ids outside ``known`` are dropped."""
    from rag.evaluate.tldr import read_papers, tldr_queries

    out = []
    for name in ("iclr2026_all.jsonl", "iclr2018.jsonl"):
        papers = read_papers(DATA / name)
        for p in papers:
            kw = p.get("keywords") or []
            text = ", ".join(kw[:KEYWORDS]) if isinstance(kw, list) else str(kw)
            if text.strip() and p["id"] in known:
                out.append(("keywords", text, [p["id"]]))
        for part in ("train", "aside"):
            out += [(f"tldr-{part}", q["question"], [g for g in q["gold"] if g in known])
                    for q in tldr_queries(papers, "dev", part)]
    for line in (TOPICS / "topics_a.jsonl").read_text(encoding="utf-8").splitlines():
        t = json.loads(line)
        out += [("topics_a", t[k], [g for g in t["on_topic"] if g in known])
                for k in ("survey", "terse")]
    for name in ("topics_b", "topics_c"):
        for line in (TOPICS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            t = json.loads(line)
            out += [(f"{name}-measure", t[k], t["on_topic"]) for k in ("survey", "terse")]
    return [q for q in out if q[2]]


def train(x: np.ndarray, positives: list[np.ndarray], papers: np.ndarray, seed: int = 0):
    """``W`` (dim, dim) float32 from query vectors ``x`` (n, dim), each query's positive rows of
    ``papers`` (m, dim), by the loss of the module docstring."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    X, P = torch.tensor(x), torch.tensor(papers)
    W = torch.zeros(x.shape[1], x.shape[1], requires_grad=True)
    opt = torch.optim.Adam([W], lr=1e-3)
    for epoch in range(EPOCHS):
        order, total = rng.permutation(len(x)), 0.0
        for b in range(0, len(order), BATCH):
            rows = order[b:b + BATCH]
            y = X[rows] + X[rows] @ W
            logits = (y / y.norm(dim=-1, keepdim=True)) @ P.T / TAU
            target = torch.zeros_like(logits)
            for r, i in enumerate(rows):
                target[r, positives[i]] = 1.0 / len(positives[i])
            loss = -(target * torch.log_softmax(logits, -1)).sum(-1).mean() + L2 * (W ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(rows)
        print(f"epoch {epoch + 1}/{EPOCHS}: loss {total / len(x):.4f}", file=sys.stderr)
    return W.detach().numpy().astype(np.float32)


def report(adapter, x: np.ndarray, positives: list[np.ndarray], papers: np.ndarray) -> dict:
    """recall@1, @15 and @50 of the dense channel alone (paper vectors) with the plain and the
    adapted query vectors ``x``."""
    out = {}
    for name, q in (("plain", x), ("adapted", adapter.adapt(x))):
        top = np.argsort(-(q @ papers.T), axis=1, kind="stable")[:, :50]
        rec = {k: float(np.mean([len(set(top[i, :k]) & set(p)) / len(p)
                                 for i, p in enumerate(positives)])) for k in (1, 15, 50)}
        out[name] = {f"recall@{k}": round(v, 3) for k, v in rec.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", default="years")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)

    from index.reader import index_exists
    from rag.backends.embedder import make_embedder
    from rag.retrieve.query_adapter import WEIGHTS, QueryAdapter
    from rag.retrieve.retriever import Retriever
    from rag.settings import Settings
    from rag.text import normalise

    sources = [DATA / "iclr2018.jsonl", DATA / "iclr2026_all.jsonl"]
    if not all(p.is_file() for p in sources):
        print(f"{DATA} lacks the ICLR lists: the adapter is trained on ../shared/data",
              file=sys.stderr)
        return 2
    settings = Settings(index=args.index)
    embedder = make_embedder(settings)
    if not index_exists(settings, args.index):
        from index.build import build_index
        from index.sources import load_lists

        print(f"building index {args.index!r} from {', '.join(map(str, sources))} ...",
              file=sys.stderr)
        build_index(load_lists([str(p) for p in sources]), settings=settings, embedder=embedder,
                    name=args.index)
    retriever = Retriever.open(settings, embedder, args.index)
    pv = retriever.paper_vectors()
    row = {pid: i for i, pid in enumerate(pv.ids)}
    qs = queries(set(row))
    print(f"{len(qs)} queries; embedding them with {retriever.embedder.name} ...", file=sys.stderr)
    x = np.asarray(retriever.embedder.embed([normalise(q[1]) for q in qs]), dtype=np.float32)
    pos = [np.array([row[g] for g in q[2] if g in row]) for q in qs]
    fit = [i for i, q in enumerate(qs) if q[0] in ("keywords", "tldr-train", "topics_a")]
    W = train(x[fit], [pos[i] for i in fit], pv.vectors.astype(np.float32))
    adapter = QueryAdapter(W, retriever.embedder.name)
    from rag.evaluate.tldr import read_papers

    # measured over the accepted ICLR 2026 papers, the list the topic files were read from
    accepted = [row[p["id"]] for p in read_papers(DATA / "iclr2026_accepted.jsonl")
                if p["id"] in row]
    local = {r: j for j, r in enumerate(accepted)}
    figures = {}
    for kind in ("tldr-aside", "topics_b-measure", "topics_c-measure"):
        idx = [i for i, q in enumerate(qs) if q[0] == kind and any(r in local for r in pos[i])]
        figures[kind] = {"n": len(idx), **report(
            adapter, x[idx], [np.array([local[r] for r in pos[i] if r in local]) for i in idx],
            pv.vectors[accepted].astype(np.float32))}
    print(json.dumps({"queries": {k: sum(q[0] == k for q in qs) for k in dict.fromkeys(q[0] for q in qs)},
                      "papers": len(pv.ids), "measured (dense channel alone)": figures}, indent=1))
    if not args.dry_run:
        adapter.save(WEIGHTS)
        print(f"wrote {WEIGHTS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
