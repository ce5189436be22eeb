"""The lexical side of hybrid retrieval: BM25 over each paper's normalised title, keywords and
abstract, with ``bm25s`` (Lù 2024, eager sparse scoring) and the Snowball English stemmer.

It catches what a small embedding model misses: exact method names, acronyms and dataset names
(``GRPO``, ``CVRP``, ``F²SA`` -> ``f2sa`` after NFKC). The index is one row per paper, saved beside
the Chroma collection and rebuilt from the catalog whenever a build changes papers (about 2 s for
20k papers), so it always matches the collection.
"""

from __future__ import annotations

import json
import shutil
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

IDS_FILE = "paper_ids.json"


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _tokenize(texts: Sequence[str], *, return_ids: bool):
    import bm25s

    texts = [unicodedata.normalize("NFKC", t).lower() for t in texts]
    return bm25s.tokenize(list(texts), stopwords="en", stemmer=_stemmer(), show_progress=False,
                          return_ids=return_ids)


def query_terms(text: str) -> list[str]:
    """The stemmed, stop-word-free terms BM25 sees for ``text`` (also used for lexical overlap)."""
    toks = _tokenize([text], return_ids=False)
    return list(toks[0]) if toks else []


class LexicalIndex:
    """BM25 scores of every indexed paper for a query.

    ``ids[i]`` is the paper id of row ``i``; :meth:`scores` returns shape (len(ids),) float32,
    BM25 (k1=1.5, b=0.75, bm25s defaults), 0 for papers sharing no term with the query.
    """

    def __init__(self, retriever, ids: list[str]):
        self._retriever = retriever
        self.ids = ids
        self.row = {pid: i for i, pid in enumerate(ids)}

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> "LexicalIndex":
        import bm25s

        retriever = bm25s.BM25()
        if len(ids):
            retriever.index(_tokenize(texts, return_ids=True), show_progress=False)
        return cls(retriever, list(ids))

    def save(self, directory: Path) -> None:
        """Write atomically: into ``<dir>.tmp`` then rename over ``dir``."""
        directory = Path(directory)
        tmp = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if self.ids:
            self._retriever.save(str(tmp))
        (tmp / IDS_FILE).write_text(json.dumps(self.ids))
        old = directory.with_name(directory.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if directory.exists():
            directory.rename(old)
        tmp.rename(directory)
        shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, directory: Path) -> "LexicalIndex":
        """Raises FileNotFoundError when the directory holds no index."""
        import bm25s

        directory = Path(directory)
        ids = json.loads((directory / IDS_FILE).read_text())
        retriever = bm25s.BM25.load(str(directory), mmap=False) if ids else bm25s.BM25()
        return cls(retriever, ids)

    def vocabulary(self) -> set[str]:
        """Every stemmed term of the indexed papers."""
        if not hasattr(self, "_vocab"):
            self._vocab = set(getattr(self._retriever, "vocab_dict", {}) or {})
        return self._vocab

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every paper (row order of :attr:`ids`) for ``query``."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        if not self.ids:
            return out
        terms = [t for t in query_terms(query) if t in self._retriever.vocab_dict]
        if not terms:
            return out
        return np.asarray(self._retriever.get_scores(terms), dtype=np.float32)
