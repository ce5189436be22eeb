"""Late interaction without an encoder at run time: each word piece's vector in context, averaged
over the conference lists, and MaxSim over those vectors.

**Table.** :data:`TABLE_FILE`, written by ``bench/build_token_table.py``: for every word piece of
the bundled all-MiniLM-L6-v2's vocabulary that occurs in the lists' titles and abstracts, the mean
of its L2-normalised last-layer vectors over all its occurrences, re-normalised, int8 with one
scale per row (about 7 MB). A word piece's vector in context varies with the sentence; its mean
keeps what the encoder makes of it in this field ("kv", "cache", "evict" near each other), which a
BM25 term does not.

**Score.** MaxSim (Khattab & Zaharia, SIGIR 2020, "ColBERT"): for each content word piece of the
question (less :func:`rag.retrieve.late_interaction.skipped_words`), the highest cosine to any
word piece of the paper's title and abstract; the score is their mean, in [-1, 1]. A word piece
with no row (never seen in the lists) matches only itself (cosine 1 when the paper has it, 0 when
not). The paper is read whole (no 256-piece limit: nothing is encoded).

**Measured when it was written** (retrieval alone, fused top 50 reordered by reciprocal rank
fusion of the fused and the MaxSim order, k=60), against the same reordering with the encoder run
over every paper (:mod:`rag.retrieve.late_interaction`, 3.2 s per question): recall@15 on the
survey questions of ``tests/data/topics`` 0.736 -> 0.767 (a) and 0.835 -> 0.872 (b), the encoder's
0.784 / 0.879; in milliseconds. On ``../shared/eval/dev_hard.jsonl`` the same reordering loses
r@1 (0.891 -> 0.818), so it is a feature of topic membership (:mod:`rag.retrieve.membership`),
not a reordering of every search.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

#: The shipped table, written by ``bench/build_token_table.py``.
TABLE_FILE = Path(__file__).resolve().parent / "token_table.npz"


class TokenTable:
    """The word-piece table and MaxSim over it (module docstring).

    ``ids`` (n,) int: vocabulary ids with a row; ``vectors`` (n, dim) float32, rows L2-normalised;
    ``tokenizer``: a ``tokenizers.Tokenizer`` (the bundled model's, no truncation). Papers' word
    pieces are computed once per paper id and kept."""

    def __init__(self, ids: np.ndarray, vectors: np.ndarray, tokenizer, vocab_size: int):
        from rag.retrieve.late_interaction import skipped_words

        self.row = np.full(max(vocab_size, int(ids.max()) + 1 if len(ids) else 0), -1, np.int64)
        self.row[np.asarray(ids, np.int64)] = np.arange(len(ids))
        self.vectors = np.asarray(vectors, np.float32)
        self.tokenizer = tokenizer
        self._skipped = skipped_words()
        self._papers: dict[str, tuple[np.ndarray, frozenset[int]]] = {}

    @classmethod
    def load(cls, path: str | Path = TABLE_FILE, model_dir: str | Path | None = None
             ) -> "TokenTable":
        """Read the table at ``path`` and the tokenizer of ``model_dir`` (default the bundled
        model, :func:`rag.offline.bundled_embedder_dir`).

        Raises:
            FileNotFoundError: no table at ``path`` (rebuild it with bench/build_token_table.py).
        """
        from tokenizers import Tokenizer

        from rag import offline

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no word-piece table; rebuild it with "
                                    "bench/build_token_table.py")
        with np.load(path) as z:
            ids, q, scales = z["ids"], z["vectors"], z["scales"]
        vectors = q.astype(np.float32) * scales[:, None]
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
        tok = Tokenizer.from_file(str(Path(model_dir or offline.bundled_embedder_dir())
                                      / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return cls(ids, vectors, tok, tok.get_vocab_size())

    def question_pieces(self, question: str) -> list[int]:
        """Vocabulary ids of the question's content word pieces (every piece when none is)."""
        enc = self.tokenizer.encode(question, add_special_tokens=False)
        keep, word = [], ""
        for piece, wid in zip(enc.tokens, enc.ids):
            if not piece.startswith("##"):  # a word's pieces follow its first
                word = piece.lower()
            if word not in self._skipped and any(c.isalnum() for c in piece):
                keep.append(wid)
        return keep or list(enc.ids)

    def _tokenize(self, ids: Sequence[str], texts: Mapping[str, str]) -> None:
        """Each new paper's table rows and the pieces without one, in one batch (the tokenizer
        runs a batch on its own threads: 300 abstracts one by one took about 0.25 s)."""
        new = [pid for pid in dict.fromkeys(ids) if pid not in self._papers]
        if not new:
            return
        for pid, enc in zip(new, self.tokenizer.encode_batch([texts[p] for p in new],
                                                             add_special_tokens=False)):
            pieces = np.unique(np.asarray(enc.ids, np.int64))
            rows = self.row[pieces] if len(pieces) else np.zeros(0, np.int64)
            self._papers[pid] = (rows[rows >= 0], frozenset(pieces[rows < 0].tolist()))

    def scores(self, question: str, ids: Sequence[str], texts: Mapping[str, str]) -> np.ndarray:
        """MaxSim of each paper of ``ids`` (``texts[id]``: its title and abstract) for
        ``question``: shape (len(ids),) float64 in [-1, 1] (module docstring)."""
        if not len(ids):
            return np.zeros(0)
        pieces = self.question_pieces(question)
        rows = self.row[np.asarray(pieces, np.int64)] if pieces else np.zeros(0, np.int64)
        sims = self.vectors[rows[rows >= 0]] @ self.vectors.T  # (seen pieces, table rows)
        unseen = [p for p, r in zip(pieces, rows) if r < 0]
        n = max(len(pieces), 1)
        out = np.zeros(len(ids))
        self._tokenize(ids, texts)
        for j, pid in enumerate(ids):
            drows, dunseen = self._papers[pid]
            total = float(sims[:, drows].max(axis=1).sum()) if len(drows) and len(sims) else 0.0
            total += sum(1.0 for p in unseen if p in dunseen)
            out[j] = total / n
        return out


@lru_cache(maxsize=1)
def shipped() -> TokenTable | None:
    """The shipped table (:data:`TABLE_FILE`), or None when there is none."""
    return TokenTable.load() if TABLE_FILE.is_file() else None
