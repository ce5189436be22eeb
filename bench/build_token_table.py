"""Build the word-piece table of :mod:`rag.retrieve.token_table` and write
``rag/retrieve/token_table.npz``::

    .venv/bin/python bench/build_token_table.py                 # both lists of ../shared/data
    .venv/bin/python bench/build_token_table.py --out /tmp/t.npz FILE.jsonl ...

Each paper's title and abstract (never its TL;DR: those of half the papers are kept for
evaluation) is read by the bundled all-MiniLM-L6-v2 (sentence-transformers, torch, CPU, 256 word
pieces with [CLS] and [SEP], as it reads a chunk). Every word piece's last-layer vector is
L2-normalised and added to its vocabulary row; a row's vector is the mean over its occurrences,
re-normalised, stored as int8 with one scale per row (the row's largest magnitude / 127). Special
tokens are left out. Deterministic for the same inputs and library versions (no sampling, sums in
float64). On 2 cores the default corpus (ICLR 2026, 19,630 papers, and ICLR 2018, 995) takes about
35 minutes; a record that is not a JSON object with a title or abstract is reported by its line and
skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
DEFAULT_FILES = (DATA / "iclr2026_all.jsonl", DATA / "iclr2018.jsonl")
#: Word pieces the encoder reads per paper, with [CLS] and [SEP] (the bundled model's limit).
MAX_SEQ = 256


def read_texts(paths) -> list[str]:
    """Title and abstract of every record of the JSONL files, joined by ". "; a bad line is
    reported on stderr (file and line number) and skipped."""
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    title, abstract = rec.get("title") or "", rec.get("abstract") or ""
                except (json.JSONDecodeError, AttributeError) as e:
                    print(f"{path}:{n}: skipped, not a JSON object ({e})", file=sys.stderr)
                    continue
                if not (title or abstract):
                    print(f"{path}:{n}: skipped, no title or abstract", file=sys.stderr)
                    continue
                texts.append(f"{title}. {abstract}")
    return texts


def build(texts: list[str], batch: int = 256, log=print) -> dict[str, np.ndarray]:
    """The table's arrays (see :class:`rag.retrieve.token_table.TokenTable`): ``ids`` (n,) int32
    vocabulary ids, ``vectors`` (n, dim) int8, ``scales`` (n,) float32, ``counts`` (n,) int64."""
    from sentence_transformers import SentenceTransformer

    from rag import offline

    offline.enforce()
    model = SentenceTransformer(str(offline.bundled_embedder_dir()), device="cpu")
    model.max_seq_length = MAX_SEQ
    tok = model.tokenizer
    special = set(tok.all_special_ids)
    dim = model.get_sentence_embedding_dimension()
    sums = np.zeros((tok.vocab_size, dim), np.float64)
    counts = np.zeros(tok.vocab_size, np.int64)
    start = time.time()
    for i in range(0, len(texts), batch):
        part = texts[i:i + batch]
        outs = model.encode(part, output_value="token_embeddings", batch_size=32,
                            show_progress_bar=False)
        pieces = tok(part, truncation=True, max_length=MAX_SEQ)["input_ids"]
        for ids, out in zip(pieces, outs):
            v = np.asarray(out.cpu().numpy() if hasattr(out, "cpu") else out, np.float64)
            v = v[:len(ids)]
            v /= np.linalg.norm(v, axis=1, keepdims=True) + 1e-12
            keep = np.array([t not in special for t in ids])
            np.add.at(sums, np.asarray(ids)[keep], v[keep])
            np.add.at(counts, np.asarray(ids)[keep], 1)
        log(f"{min(i + batch, len(texts)):,}/{len(texts):,} papers, {time.time() - start:.0f} s")
    seen = np.flatnonzero(counts)
    mean = sums[seen] / counts[seen][:, None]
    mean /= np.linalg.norm(mean, axis=1, keepdims=True) + 1e-12
    scales = np.abs(mean).max(axis=1) / 127.0
    vectors = np.round(mean / scales[:, None]).astype(np.int8)
    return {"ids": seen.astype(np.int32), "vectors": vectors,
            "scales": scales.astype(np.float32), "counts": counts[seen]}


def main(argv=None) -> int:
    from rag.retrieve.token_table import TABLE_FILE

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path, default=list(DEFAULT_FILES))
    ap.add_argument("--out", type=Path, default=TABLE_FILE)
    args = ap.parse_args(argv)
    missing = [str(p) for p in args.files if not p.is_file()]
    if missing:
        print(f"no such file: {', '.join(missing)} (the lists live in ../shared/data)",
              file=sys.stderr)
        return 2
    texts = read_texts(args.files)
    arrays = build(texts)
    meta = {"papers": len(texts), "files": [p.name for p in args.files], "max_seq": MAX_SEQ,
            "model": "all-MiniLM-L6-v2 (bundled)"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp.npz")
    np.savez(tmp, meta=np.array(json.dumps(meta)), **arrays)  # uncompressed: loads faster
    tmp.replace(args.out)
    print(f"{args.out}: {len(arrays['ids']):,} word pieces from {len(texts):,} papers, "
          f"{args.out.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
