"""The lexical side of hybrid retrieval: BM25 over each paper's normalised title, keywords and
abstract, with ``bm25s`` (Lù 2024, eager sparse scoring) and the Snowball English stemmer.

It catches what a small embedding model misses: exact method names, acronyms and dataset names
(``GRPO``, ``CVRP``, ``F²SA`` -> ``f2sa`` after NFKC). Names written with hyphens, dots or spaces
also get one joined term (:func:`compound_terms`: ``Llama-3-8B``, ``llama3-8b`` and ``Llama 3 8B``
all give ``llama38b``; ``Part-X-MLLM`` gives ``partxmllm``), by one rule applied to the indexed
text and to queries alike. The index is one row per paper, saved beside
the Chroma collection and rebuilt from the catalog whenever a build changes papers (about 2 s for
20k papers), so it always matches the collection.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    import bm25s

IDS_FILE = "paper_ids.json"
PARAMS_FILE = "params.index.json"  # written by bm25s.BM25.save

#: BM25 term-frequency saturation and length normalisation: k1=1.2, b=0.75, the values of
#: Robertson & Zaragoza (2009, "The Probabilistic Relevance Framework: BM25 and Beyond", §3.4)
#: and Manning et al. (2008, IR book §11.4.3). On shared/eval/dev_hard.jsonl (5,358 papers)
#: fused with dense they gave specific recall@1 0.822 vs 0.778 for bm25s' default k1=1.5,
#: recall@5 and @10 equal; k1=0.9, b=0.4 (Anserini's) and k1=1.2, b=0.5 scored the same or
#: within one question, so this is a plateau rather than a tuned point.
K1 = 1.2
B = 0.75
#: Version of the text -> terms rule (:func:`compound_terms`); a saved index made with another
#: is rebuilt from the catalog when opened. 1: bm25s' default; 3: joined compound names.
TOKENIZER_VERSION = 3
VERSION_FILE = "paperchat.json"

# A word with inner hyphens, underscores or dots: Part-X-MLLM, llama3-8b, Qwen2.5-7B, GPT-4o,
# fine-tuning (the last is no name: see _NAME_SHAPE). The runs are possessive (++): a run of
# letters and digits never ends inside itself before a separator or a word boundary, so giving
# characters back could never match (the same matches; the 19,630 ICLR 2026 papers' texts are
# scanned in 1.1 CPU s instead of 1.8, and by _SPACED in 1.1 s instead of 2.3).
_JOINED = re.compile(r"\b[A-Za-z0-9]++(?:[-_.][A-Za-z0-9]++)+\b")
# A word followed by number-led parts separated by spaces or hyphens: llama 3 8b, GPT 4
# (possessive for the same reason: each run is followed by a character it cannot hold).
_SPACED = re.compile(r"\b([A-Za-z][A-Za-z0-9]*+)((?:[\s_-]++\d[A-Za-z0-9.]*+)+)")
_SEPARATORS = re.compile(r"[\s._-]+")
#: A hyphenated word (a :data:`_JOINED` match) is a name when it has a digit and a letter
#: (Llama-3-8B, GPT-4o), a one-letter part (Part-X-MLLM) or capitals in two parts (Go-Browse);
#: ordinary hyphenated words (fine-tuning, second-order, RL-tuning) are not, and keep only
#: their own parts. One search of the match (ASCII letters, digits and separators only):
#: 1.8 CPU s for the 19,630 ICLR 2026 papers where testing its parts took 3.3 s.
_NAME_SHAPE = re.compile(r"\d.*[A-Za-z]|[A-Za-z].*\d|(?:^|[-_.])[A-Za-z](?:[-_.]|$)"
                         r"|[A-Z].*[-_.].*[A-Z]")


def compound_terms(text: str) -> list[str]:
    """Joined, lower-cased forms of the compound names in ``text`` (NFKC-normalised, case kept):
    each name written with inner hyphens, underscores or dots (:data:`_NAME_SHAPE`:
    ``Part-X-MLLM`` -> ``partxmllm``, ``Qwen2.5-7B`` -> ``qwen257b``), and each word followed by
    number-led parts (``Llama 3 8B`` -> ``llama38b``; not after a stop word: ``in 2018`` gives
    nothing). The tokenizer adds them to the text's own terms, for the index and for queries,
    so the three spellings of a model size share a term and a hyphenated method name matches as
    one rare word. Measured on dev_hard: joining every hyphenated word (``fine-tuning``) cost
    specific recall@1 one question; names only cost none.
    """
    stop = _stopwords()
    out = [m.group(0) for m in _JOINED.finditer(text) if _NAME_SHAPE.search(m.group(0))]
    out += [m.group(0) for m in _SPACED.finditer(text) if m.group(1).lower() not in stop]
    joined = (_SEPARATORS.sub("", t).lower() for t in out)
    return [t for t in dict.fromkeys(joined) if len(t) >= 3]


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def bm25_text(text: str) -> str:
    """What bm25s' tokenizer is given for ``text``: its NFKC form lower-cased, then its
    :func:`compound_terms`. A function of the text alone, so a build can compute it in the
    processes that normalise the papers (:meth:`LexicalIndex.build`'s ``prepared``)."""
    text = unicodedata.normalize("NFKC", text)
    return " ".join([text.lower(), *compound_terms(text)])


def _tokenize(texts: Sequence[str], *, return_ids: bool,
              prepared: Mapping[str, str] | None = None):
    import bm25s

    prepared = prepared or {}
    texts = [prepared.get(t) or bm25_text(t) for t in texts]
    return bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False,
                          return_ids=return_ids)


def query_terms(text: str) -> list[str]:
    """The stemmed, stop-word-free terms BM25 sees for ``text`` (also used for lexical overlap)."""
    toks = _tokenize([text], return_ids=False)
    return list(toks[0]) if toks else []


class LexicalIndex:
    """BM25 scores of every indexed paper for a query.

    ``ids[i]`` is the paper id of row ``i``; :meth:`scores` returns shape (len(ids),) float32,
    BM25 (Lucene variant, :data:`K1`, :data:`B`), 0 for papers sharing no term with the query.
    """

    def __init__(self, retriever: bm25s.BM25, ids: list[str]):
        self._retriever = retriever
        self.ids = ids
        self.row = {pid: i for i, pid in enumerate(ids)}

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str],
              prepared: Mapping[str, str] | None = None) -> "LexicalIndex":
        """BM25 over ``texts`` (row ``i`` is paper ``ids[i]``); ``prepared`` maps texts to
        their :func:`bm25_text` already computed (the rest are computed here)."""
        import bm25s

        retriever = bm25s.BM25(k1=K1, b=B)
        if len(ids):
            retriever.index(_tokenize(texts, return_ids=True, prepared=prepared),
                            show_progress=False)
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
        (tmp / VERSION_FILE).write_text(json.dumps({"tokenizer": TOKENIZER_VERSION}))
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

    @staticmethod
    def is_current(directory: Path) -> bool:
        """True when the index saved in ``directory`` was built with this module's BM25
        parameters and tokenizer rule (:data:`TOKENIZER_VERSION`); an index from an older version
        is rebuilt from the catalog, about 2 s per 20k papers. An empty index (no papers) is
        always current."""
        directory = Path(directory)
        try:
            if not json.loads((directory / IDS_FILE).read_text()):
                return True
            params = json.loads((directory / PARAMS_FILE).read_text())
            version = json.loads((directory / VERSION_FILE).read_text()).get("tokenizer")
        except (OSError, ValueError, AttributeError):
            return False
        return params.get("k1") == K1 and params.get("b") == B and version == TOKENIZER_VERSION

    def vocabulary(self) -> set[str]:
        """Every stemmed term of the indexed papers."""
        if not hasattr(self, "_vocab"):
            self._vocab = set(getattr(self._retriever, "vocab_dict", {}) or {})
        return self._vocab

    def term_rows(self, query: str) -> list[tuple[str, np.ndarray]]:
        """``(term, rows)`` for each distinct BM25 term of ``query`` that the index has, in query
        order: ``rows`` (int array, ascending) are the rows of :attr:`ids` whose paper has the
        term, so ``len(rows)`` is its document frequency. Read from the BM25 matrix (one slice
        per term, no scoring)."""
        if not self.ids:
            return []
        vocab = self._retriever.vocab_dict
        matrix = self._retriever.scores
        indptr, indices = matrix["indptr"], matrix["indices"]
        out = []
        for term in dict.fromkeys(query_terms(query)):
            i = vocab.get(term)
            if i is None or i + 1 >= len(indptr):
                continue
            rows = np.asarray(indices[indptr[i]:indptr[i + 1]], dtype=np.int64)
            out.append((term, np.sort(rows)))
        return out

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every paper (row order of :attr:`ids`) for ``query``."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        if not self.ids:
            return out
        terms = [t for t in query_terms(query) if t in self._retriever.vocab_dict]
        if not terms:
            return out
        return np.asarray(self._retriever.get_scores(terms), dtype=np.float32)
