"""The learned part of reading a turn: which papers, which operation and which aspect it asks for.

Rules written for the phrasings one knows do not generalise, so these three decisions are made by
a model learned from labelled turns (``tests/data/turns/``: written by people who had not seen
the code, in several styles, each with its conversation context), in the way SetFit and similar
few-shot intent classifiers work: sentence-transformer embeddings plus a linear head. Here the
head is multinomial logistic regression (scikit-learn, L2, lbfgs) over four blocks of features:

* the turn's embedding by the bundled all-MiniLM-L6-v2 (384-d, unit length), with the words that
  name values (paper names, quoted titles, positions) replaced by placeholders (:func:`masked`),
  so that the topic of a turn weighs less than its form;
* TF-IDF of the masked, lower-cased turn's character 2-5-grams inside words (robust to typos:
  "comapre", "bibtx") and of its word 1-2-grams (scikit-learn's ``TfidfVectorizer``,
  sublinear tf);
* the conversation: is there a previous answer, what kind it was, one paper or several;
* the slots :mod:`rag.understand.slots` found: positions, a count, a title's name, a quoted title, a
  name-like word, each kind of filter, a rating order, comparison sides, a new subject, a topic
  left once they are removed.

Each head gives probabilities over its labels (:data:`HEADS`); :mod:`rag.understand.read` combines them
under the constraints of the conversation (no "previous" without a previous answer) into a
:class:`rag.understand.plan.Plan`. Weights live in ``rag/understand/turn_reader.npz``; ``python -m rag.understand.train_reader
--train`` (:mod:`rag.understand.train_reader`) rebuilds them from the tune part of the labelled turns and
prints the plan accuracy on both parts (:func:`measured`: the measure part is the ids whose md5
starts with 0-4 and every measure-only file).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from rag.understand import mentions, position_words, rating_order, slots, topics
from rag.understand.names import NameIndex
from rag.understand.plan import ASPECTS, OPERATIONS, PAPERS

if TYPE_CHECKING:
    from rag.backends.embedder import Embedder

#: Whether a turn asks something the papers' list can say ("in": every plan-labelled turn) or
#: not ("out": the conference's deadlines, venue or awards, reviews' text, other venues, chat).
SCOPES = ("in", "out")
#: The decisions the model makes, each over its labels ("" = no aspect).
HEADS: dict[str, tuple[str, ...]] = {"papers": PAPERS, "op": OPERATIONS,
                                     "aspect": ("",) + ASPECTS, "scope": SCOPES}
#: Answer kinds a previous turn may have had, for the context features (rag.types.Answer.kind).
KINDS = ("lookup", "describe", "survey", "compare", "followup", "count", "list", "rated",
         "extreme", "similar", "cite", "authors", "number")
#: Answer kinds about one paper (a best match, a description, a follow-up on it).
_ONE_PAPER = ("lookup", "describe", "followup", "authors", "number")
WEIGHTS_FILE = Path(__file__).with_name("turn_reader.npz")
TURNS_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "turns"
#: Turns labelled only with their scope (``{"id", "turn", "scope": "in"|"out", "note"}``),
#: written like the labelled turns by people who had not seen the code: the out-of-scope
#: questions and in-scope ones chosen near them (papers about weather, conference counts).
SCOPE_DIR = TURNS_DIR.parent / "scope"
#: Labelled files used only to measure, never to tune (written after the reader was tuned).
MEASURE_ONLY = ("turns_d.jsonl",)
#: Labelled files used only to tune: turns written by the project's developers (not independent
#: of the code, so never measured on).
TUNE_ONLY = ("turns_f.jsonl",)
#: Scale of each feature block before the linear head, and the inverse L2 strength of the
#: logistic regression: chosen by cross-validation over the labellers of the tune part (leave one
#: labeller out, 4 folds, a grid of C in 3/10/30 and block scales in 0.5-4): plan accuracy
#: 0.70-0.72 over the best dozen settings with plain class weights, a plateau; words weighed
#: twice helped most; balanced class weights for op and aspect then gave 0.77.
BLOCK_SCALE = {"embedding": 2.0, "chars": 1.0, "words": 2.0, "context": 1.0}
C = 10.0
#: How the heads' coefficients are stored (read back as float32): half precision keeps the
#: weights file under 2 MB, and reads every labelled and scope turn (6,533) as float32 does.
COEF_DTYPE = np.float16
#: Class weights per head (scikit-learn's ``class_weight``): "balanced" weighs each label by the
#: inverse of its frequency, so that the frequent "no aspect" and "survey" do not swallow the
#: rarer ones (same cross-validation: plan accuracy 0.742 -> 0.774).
CLASS_WEIGHT: dict[str, str | None] = {"aspect": "balanced", "op": "balanced",
                                       "scope": "balanced"}


@dataclass
class TurnContext:
    """What the reader sees of the conversation before the turn: the previous answer's ``kind``
    ("" when there is none), how many numbered papers it showed (``n_previous``) and how many
    it was about (``n_focus``)."""

    kind: str = ""
    n_previous: int = 0
    n_focus: int = 0
    #: The rating order the previous answer's papers were shown in ("rating_asc" after "rank
    #: these from worst to best"; "" when it was not sorted). Not a reader feature: it places
    #: "the best one" at the right end of such a list (:func:`rag.understand.read.assemble`).
    order: str = ""

    @property
    def has_previous(self) -> bool:
        return bool(self.kind) or self.n_previous > 0


@dataclass
class TurnSlots:
    """Slot findings of one turn that the reader uses as features and :mod:`rag.understand.read`
    builds the plan from (see :mod:`rag.understand.slots`)."""

    filters: slots.FilterSlots
    positions: list[int] = field(default_factory=list)
    position_spans: list[tuple[int, int]] = field(default_factory=list)
    count: int | None = None
    count_spans: list[tuple[int, int]] = field(default_factory=list)
    #: Papers named (:meth:`rag.understand.names.NameIndex.find`): (words, span, paper ids).
    names: list[tuple[str, tuple[int, int], list[str]]] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)
    name_words: list[str] = field(default_factory=list)
    sides: list[str] | None = None
    new_subject: str | None = None
    ascending: bool = False
    has_topic: bool = False
    #: The turn asks for papers in the plural ("papers", "works", "ones") and no single one;
    #: ``singular``: it names a single paper ("paper", "one", "work").
    plural: bool = False
    singular: bool = False
    #: The turn asks for the one paper at an end of the rating order ("the worst of them?":
    #: :func:`rag.understand.rating_order.one_superlative`).
    one_superlative: bool = False
    #: The turn asks for the decision of the papers it points at (:func:`rag.understand.rating_order.asks_status`).
    asks_status: bool = False
    #: The turn speaks of two papers together ("both", "the two": :func:`rag.understand.position_words.pair`).
    pair: bool = False
    #: The turn restricts to the area of what came before (:func:`rag.understand.position_words.same_area`).
    same_area: bool = False
    #: The turn picks among the previous answer's papers by naming the set ("of these":
    #: :func:`rag.understand.position_words.of_these`).
    of_these: bool = False
    #: The turn points at something said before ("that", "them": :func:`rag.understand.position_words.refers_back`).
    refers_back: bool = False
    #: The turn has a word that can ask for a rating order (:func:`rag.understand.rating_order.orders_by_rating`).
    orders_by_rating: bool = True
    #: The turn points at the topic searched before (:func:`rag.understand.position_words.points_at_topic`).
    points_at_topic: bool = False


def find_slots(text: str, context: TurnContext, areas: Sequence[str],
               names: NameIndex) -> TurnSlots:
    """Every slot of ``text`` (see :class:`TurnSlots`); ``names`` are the index's paper names."""
    read = slots.read_filters(text, areas=areas)
    pos, pos_spans = position_words.positions(text, context.n_previous)
    count, count_spans = position_words.count_asked(text)
    out = TurnSlots(read, pos, pos_spans, count, count_spans, names.find(text),
                    mentions.quoted(text), mentions.name_words(text), mentions.comparison_sides(text),
                    topics.new_subject(text), rating_order.ascending(text))
    out.has_topic = topics.has_topic(read.query)
    out.plural = position_words.plural(text)
    out.singular = position_words.singular(text)
    out.one_superlative = rating_order.one_superlative(text)
    out.asks_status = rating_order.asks_status(text)
    out.pair = position_words.pair(text)
    out.same_area = position_words.same_area(text)
    out.of_these = position_words.of_these(text)
    out.refers_back = position_words.refers_back(text)
    out.orders_by_rating = rating_order.orders_by_rating(text)
    out.points_at_topic = position_words.points_at_topic(text)
    return out


def masked(text: str, found: TurnSlots) -> str:
    """``text`` with the paper names the index knows replaced by ``NAME``, quoted titles by
    ``TITLE`` and positions by ``#N``: the form of the turn, less its topic (other name-like
    words stay: "BibTeX" is an operation, "GRPO" a topic the reader may need)."""
    spans = [(a, b, "NAME") for _, (a, b), _ in found.names]
    spans += [(a, b, "#N") for a, b in found.position_spans]
    for q in found.quoted:
        i = text.find(q)
        if i >= 0:
            spans.append((i, i + len(q), "TITLE"))
    taken = sorted(spans)
    out, last = [], 0
    for a, b, token in taken:
        if a < last:
            continue
        out.append(text[last:a])
        out.append(token)
        last = b
    out.append(text[last:])
    return "".join(out)


def context_features(context: TurnContext, found: TurnSlots) -> np.ndarray:
    """The conversation and slot features (0/1 floats), shape (:data:`N_CONTEXT`,)."""
    f = found.filters
    keys = set(f.filters.values) if f.filters else set()
    v = [context.has_previous, *(context.kind == k for k in KINDS),
         context.kind in _ONE_PAPER, context.n_previous >= 2, context.n_focus >= 2,
         bool(found.positions), bool(found.positions) and context.has_previous,
         found.count is not None, found.count is not None and context.has_previous,
         bool(found.names), bool(found.quoted),
         bool(found.name_words), "status" in keys, "primary_area" in keys, "rating" in keys,
         "year" in keys, "author" in keys, bool(f.sort_phrase), found.ascending,
         found.sides is not None, found.new_subject is not None, found.has_topic,
         found.has_topic and context.has_previous, found.plural, found.singular]
    return np.asarray(v, dtype=np.float32)


N_CONTEXT = len(context_features(TurnContext(), TurnSlots(slots.FilterSlots("", ""))))


def _vectorizers():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return (TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True,
                            min_df=2, lowercase=True),
            TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True,
                            lowercase=True, token_pattern=r"(?u)#N|\b\w+\b"))


class TurnReader:
    """The model (see the module docstring). Build with :meth:`load` or :meth:`fit`.

    Args:
        embedder: an all-MiniLM-L6-v2 embedder (384-d; the index's own when it is that model).
        chars, words: fitted ``TfidfVectorizer``s.
        heads: head name -> (labels, coef (n_labels, n_features) float32, intercept (n_labels,)).
    """

    def __init__(self, embedder: Embedder, chars, words, heads: dict, scale: dict | None = None):
        self.embedder = embedder
        self.chars = chars
        self.words = words
        self.heads = heads
        self.scale = scale or dict(BLOCK_SCALE)

    # -- features ------------------------------------------------------------------------------
    def blocks(self, texts: Sequence[str], contexts: Sequence[TurnContext],
               found: Sequence[TurnSlots]) -> dict:
        """The four feature blocks, unscaled: ``embedding`` (n, 384) float32, ``chars`` and
        ``words`` sparse TF-IDF rows, ``context`` (n, :data:`N_CONTEXT`) float32."""
        shown = [masked(t, s) for t, s in zip(texts, found)]
        lower = [s.lower() for s in shown]
        return {"embedding": np.asarray(self.embedder.embed(shown), dtype=np.float32),
                "chars": self.chars.transform(lower), "words": self.words.transform(lower),
                "context": np.stack([context_features(c, s) for c, s in zip(contexts, found)])}

    def stack(self, blocks: dict):
        """The blocks scaled (:attr:`scale`) and joined: a sparse CSR matrix (n, n_features)."""
        import scipy.sparse as sp

        sc = self.scale
        return sp.hstack([sp.csr_matrix(sc["embedding"] * blocks["embedding"]),
                          sc["chars"] * blocks["chars"], sc["words"] * blocks["words"],
                          sp.csr_matrix(sc["context"] * blocks["context"])],
                         format="csr", dtype=np.float32)

    def features(self, texts: Sequence[str], contexts: Sequence[TurnContext],
                 found: Sequence[TurnSlots]):
        """Feature rows: sparse CSR, shape (len(texts), n_features) float32."""
        return self.stack(self.blocks(texts, contexts, found))

    def probabilities(self, x) -> dict[str, dict[str, float]]:
        """Per head, label -> probability (softmax of the linear scores, as scikit-learn's
        multinomial ``LogisticRegression.predict_proba``), for one feature row ``x`` (a 1-row
        sparse matrix or a 1-D array)."""
        x = np.asarray(x.toarray()).ravel() if hasattr(x, "toarray") else np.asarray(x).ravel()
        out = {}
        for head, (labels, coef, intercept) in self.heads.items():
            z = coef @ x + intercept
            z = np.exp(z - z.max())
            p = z / z.sum()
            out[head] = {lab: float(q) for lab, q in zip(labels, p)}
        return out

    # -- training ------------------------------------------------------------------------------
    @classmethod
    def fit(cls, rows: Sequence[dict], embedder: Embedder, areas: Sequence[str],
            names: NameIndex, c: float = C,
            scale: dict | None = None, scope_rows: Sequence[dict] = ()) -> "TurnReader":
        """Fit on labelled turns (the ``tests/data/turns`` format: ``turn``, ``context``,
        ``plan``) and, for the scope head only, on ``scope_rows`` (``tests/data/scope``: ``turn``,
        ``scope``; the plan-labelled turns count as in scope)."""
        rows = list(rows) + list(scope_rows)
        texts, contexts, found = prepare(rows, areas, names)
        chars, words = _vectorizers()
        shown = [masked(t, s).lower() for t, s in zip(texts, found)]
        chars.fit(shown)
        words.fit(shown)
        reader = cls(embedder, chars, words, {}, scale)
        reader.fit_heads(reader.features(texts, contexts, found), rows, c)
        return reader

    def fit_heads(self, x, rows: Sequence[dict], c: float = C) -> None:
        """Fit the three heads on feature rows ``x`` of labelled ``rows``."""
        from sklearn.linear_model import LogisticRegression

        for head in HEADS:
            keep = [i for i, r in enumerate(rows) if head == "scope" or "plan" in r]
            y = [label_of(rows[i], head) for i in keep]
            if len(set(y)) < 2:
                continue  # (no out-of-scope turns given: no scope head)
            model = LogisticRegression(C=c, max_iter=5000,
                                       class_weight=CLASS_WEIGHT.get(head)).fit(x[keep], y)
            coef, intercept = model.coef_, model.intercept_
            if len(model.classes_) == 2:  # binary: one row, the score of the second label;
                coef = np.vstack([np.zeros_like(coef), coef])  # as a softmax over two rows
                intercept = np.concatenate([[0.0], intercept])
            self.heads[head] = (tuple(str(lab) for lab in model.classes_),
                                coef.astype(np.float32), intercept.astype(np.float32))

    # -- storage ---------------------------------------------------------------------------
    def save(self, path: Path = WEIGHTS_FILE, meta: dict | None = None) -> None:
        """Write the weights (no pickle: vocabularies and idf as arrays, JSON metadata)."""
        arrays = {}
        for name, vec in (("chars", self.chars), ("words", self.words)):
            vocab = sorted(vec.vocabulary_, key=vec.vocabulary_.get)
            arrays[f"{name}_vocab"] = np.asarray(vocab, dtype=str)
            arrays[f"{name}_idf"] = np.asarray(vec.idf_, dtype=np.float32)
        for head, (labels, coef, intercept) in self.heads.items():
            arrays[f"{head}_labels"] = np.asarray(labels, dtype=str)
            arrays[f"{head}_coef"] = coef.astype(COEF_DTYPE)
            arrays[f"{head}_intercept"] = intercept
        arrays["meta"] = np.asarray(json.dumps({**(meta or {}), "scale": self.scale,
                                                "heads": list(self.heads)}))
        np.savez_compressed(path, **arrays)

    @classmethod
    def load(cls, embedder: Embedder, path: Path = WEIGHTS_FILE) -> "TurnReader":
        """The saved model, over ``embedder``.

        Raises:
            FileNotFoundError: no weights file (rebuild it: ``python -m rag.understand.train_reader --train``).
        """
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            vecs = []
            for name, vec in zip(("chars", "words"), _vectorizers()):
                vocab = [str(w) for w in data[f"{name}_vocab"]]
                vec.set_params(vocabulary={w: i for i, w in enumerate(vocab)})
                vec._validate_vocabulary()
                vec.idf_ = np.asarray(data[f"{name}_idf"], dtype=np.float64)
                vecs.append(vec)
            heads = {h: (tuple(str(x) for x in data[f"{h}_labels"]),
                         np.asarray(data[f"{h}_coef"], dtype=np.float32),
                         np.asarray(data[f"{h}_intercept"], dtype=np.float32))
                     for h in meta["heads"]}
        reader = cls(embedder, vecs[0], vecs[1], heads, meta.get("scale"))
        reader.meta = meta
        return reader


# --- labelled turns ------------------------------------------------------------------------------
def context_of(row: dict) -> TurnContext:
    """The :class:`TurnContext` of a labelled turn (its last earlier turn)."""
    ctx = row.get("context") or []
    if not ctx:
        return TurnContext()
    last = ctx[-1]
    kind = {"sort": "rated", "refine": "survey"}.get(last.get("kind", ""), last.get("kind", ""))
    n = int(last.get("n_papers") or len(last.get("titles") or []))
    return TurnContext(kind if kind in KINDS else "survey", n,
                       2 if kind == "compare" else 1 if n else 0)


def label_of(row: dict, head: str) -> str:
    """A labelled turn's label for ``head`` (a plan-labelled turn is in scope)."""
    if head == "scope":
        return row.get("scope") or "in"
    return row["plan"].get(head) or ""


def prepare(rows: Sequence[dict], areas: Sequence[str], names: NameIndex):
    """(texts, contexts, slots) of labelled turns."""
    texts = [r["turn"] for r in rows]
    contexts = [context_of(r) for r in rows]
    found = [find_slots(t, c, areas, names) for t, c in zip(texts, contexts)]
    return texts, contexts, found


def measured(row_id: str, file: str) -> bool:
    """True when a labelled turn belongs to the measure part (never tuned on): its file is
    measure-only (:data:`MEASURE_ONLY`), or its id's md5 starts with 0-4 and its file is not
    tune-only (:data:`TUNE_ONLY`)."""
    if file in TUNE_ONLY:
        return False
    return file in MEASURE_ONLY or hashlib.md5(row_id.encode()).hexdigest()[0] in "01234"


def labelled_turns(directory: Path = TURNS_DIR) -> list[dict]:
    """Every labelled turn, each with ``file`` (its file's name) added."""
    rows = []
    for path in sorted(directory.glob("turns_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append({**json.loads(line), "file": path.name})
    return rows


def scope_turns(directory: Path = SCOPE_DIR) -> list[dict]:
    """Every scope-labelled turn (:data:`SCOPE_DIR`), each with ``file`` added.

    Raises:
        ValueError: a line that is not such a turn (its file and line number said).
    """
    rows = []
    for path in sorted(directory.glob("scope_*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("scope") not in SCOPES or not isinstance(row.get("turn"), str):
                raise ValueError(f"{path.name}:{n}: not a scope-labelled turn "
                                 "({'turn': str, 'scope': 'in' | 'out'})")
            rows.append({**row, "file": path.name})
    return rows


def catalog_names(paths: Sequence[Path]) -> tuple[list[str], NameIndex]:
    """(primary areas, :class:`rag.understand.names.NameIndex`) of the paper lists at ``paths`` (JSONL),
    as the reader's slot features see an index (:meth:`rag.retrieve.retriever.Retriever.name_index`)."""
    from index.sources import load_papers

    papers = [p for path in paths for p in load_papers(path).papers]
    return sorted({p.primary_area for p in papers if p.primary_area}), NameIndex(papers)
