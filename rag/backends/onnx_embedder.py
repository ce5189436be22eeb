"""all-MiniLM-L6-v2 in ONNX Runtime, int8: the fast embedding path (``embed_backend="onnx-int8"``).

The bundled sentence-transformers model (transformer + mean pooling + L2 normalisation) is exported
once with ``torch.onnx.export`` and quantised with ``onnxruntime.quantization.quantize_dynamic``
(int8 weights per output channel, int8 activations with a scale computed at run time). The result
(about 23 MB) is cached under ``cache_dir`` with a name keyed by a hash of the source model files,
the export code version and the library versions; it is written to a temporary file and renamed,
so a killed export never leaves a broken model behind, and the next run simply exports again.

**Why every text runs alone.** Dynamic quantisation picks one activation scale per tensor, from
the tensor's largest value. In a padded batch that tensor holds every text of the batch, so a
text's vector would change with its companions (measured on 64 real chunks: cosine between a text
alone and in a padded batch of 32, mean 0.994, min 0.986). Per-row activation scales are not
available in ORT's dynamic quantisation, so the exported graph takes batch size 1 and has no
attention mask: each text is its own unpadded sequence, and its scales come from that text alone.
Its vector therefore depends only on the text, bitwise (``tests/test_onnx_embedder.py``). This
costs no speed: no padding is computed, and texts run in parallel on a small thread pool (one
ONNX Runtime thread each, longest first). On this 2-core machine under load, that pool ran about
2x faster than one text at a time with two intra-op threads, and 1.7x faster than length-sorted
padded batches of 32 with two intra-op threads.

Quality on 500 real ICLR 2026 chunks: cosine to the torch fp32 embedder mean 0.9945, min 0.990.
Weights are quantised per output channel: per-tensor weight scales gave mean 0.934.

**Two int8 variants, picked by the CPU** (:data:`VARIANTS`, :func:`choose_variant`). ONNX Runtime
multiplies uint8 activations by int8 weights. With VNNI (AVX-512 VNNI or AVX-VNNI) the products
are summed in 32 bits. Without it, the AVX2 kernel sums pairs of products in 16 bits with
saturation (``vpmaddubsw``), so the same model gives other vectors: on 200 ICLR 2026 texts under
the AVX2 path (``bench/avx2only.c``) cosine to torch fp32 fell from min 0.992 to 0.982. ONNX
Runtime documents the remedy, ``reduce_range`` (7-bit weights, which cannot saturate); it alone
gave min 0.988, and keeping the first transformer layer in fp32 as well gave min 0.991, mean
0.995, at 43.5 texts/s against 48 for the saturating model and 40 for uint8 weights (u8u8, min
0.991). So ``int8`` (8-bit weights) is used with VNNI and ``int8-avx2`` (7-bit weights, layer 0
fp32) without. The variant an index was built with is in its manifest, and querying or updating
that index uses the same variant whatever the CPU (:meth:`OnnxEmbedder.with_variant`): vectors of
one variant on the two kinds of CPU agree to cosine >= 0.997 (the int8 rounding of activations
differs in the last bit between the kernels), far closer than the two variants do to each other.

Importing this module imports neither torch nor onnxruntime; loading imports onnxruntime and
the ``tokenizers`` library (:class:`FastTokenizer`; not transformers, not torch); only a missing
or stale cached model makes the export import torch (once, about 10-20 s).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
import time
import warnings
from importlib import metadata
from pathlib import Path
from typing import Sequence

import numpy as np

from rag import offline

#: Bump when the exported graph or the quantisation settings change: the cache key changes.
EXPORT_VERSION = 1
#: ONNX opset of the export.
OPSET = 17
#: Model files that do not affect the vectors (left out of the cache key).
_KEY_IGNORE = {"README.md"}
#: Texts used to check a fresh export against the torch model it came from.
_PROBES = ("Dynamic quantisation of transformer activations for fast CPU inference.",
           "A benchmark for retrieval-augmented question answering over paper abstracts.")
#: Lowest cosine between the torch model and a fresh int8 export accepted by the check.
_MIN_PROBE_COSINE = 0.97

#: Quantisation recipes, by the name recorded in an index's manifest (``embed_variant``):
#: ``reduce_range`` (7-bit weights) and ``fp32_layers`` (transformer layers left unquantised).
#: ``fp32`` is the unquantised export (``embed_backend="onnx-fp32"``). See the module docstring.
VARIANTS: dict[str, dict] = {
    "int8": {"reduce_range": False, "fp32_layers": ()},
    "int8-avx2": {"reduce_range": True, "fp32_layers": (0,)},
    "fp32": {},
}


def choose_variant(features: dict | None = None) -> str:
    """``int8`` when the CPU has VNNI (AVX-512 VNNI or AVX-VNNI), else ``int8-avx2``.

    Args:
        features: :func:`rag.cpu.cpu_features` (default: this process's).
    """
    from rag.cpu import cpu_features

    return "int8" if (features or cpu_features())["vnni"] else "int8-avx2"


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def model_key(model_dir: str | Path) -> str:
    """16 hex digits of sha256 over the model directory's files (relative path + bytes), the
    export code version, the opset and the versions of the libraries that shape the export."""
    model_dir = Path(model_dir)
    h = hashlib.sha256()
    h.update(f"export={EXPORT_VERSION};opset={OPSET}".encode())
    for dist in ("torch", "transformers", "onnx", "onnxruntime"):
        h.update(f";{dist}={_version(dist)}".encode())
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(model_dir).as_posix()
        if rel in _KEY_IGNORE:
            continue
        h.update(b"\x00" + rel.encode() + b"\x00")
        with open(path, "rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()[:16]


def _check_mean_pooling(model_dir: Path) -> None:
    """The export hard-codes mean pooling + normalisation (all-MiniLM-L6-v2's modules.json)."""
    import json

    pooling = model_dir / "1_Pooling" / "config.json"
    if pooling.exists():
        cfg = json.loads(pooling.read_text())
        others = [k for k, v in cfg.items() if k.startswith("pooling_mode") and v
                  and k != "pooling_mode_mean_tokens"]
        if not cfg.get("pooling_mode_mean_tokens") or others:
            raise ValueError(f"{model_dir}: the ONNX export supports mean pooling only, the model "
                             f"uses {others or 'none'}; use embed_backend='torch'")


def export_int8(model_dir: str | Path, out_path: str | Path, *, quantize: bool = True,
                variant: str = "int8") -> Path:
    """Export ``model_dir`` (a sentence-transformers BERT model: mean pooling, L2 norm) to an
    int8 ONNX model at ``out_path``, atomically (temporary file in the same directory, fsync,
    rename). Imports torch.

    The graph takes ``input_ids`` of shape (1, n_tokens), int64, with [CLS] and [SEP], no padding,
    and returns ``embedding`` of shape (1, dim), float32, L2-normalised.

    ``variant`` names the quantisation recipe in :data:`VARIANTS`. With ``quantize=False`` (or
    ``variant="fp32"``) the fp32 graph is kept as exported (``embed_backend="onnx-fp32"``).

    Raises:
        RuntimeError: the quantised model disagrees with the torch model on the probe texts.
    """
    model_dir, out_path = Path(model_dir), Path(out_path)
    recipe = VARIANTS[variant]
    quantize = quantize and variant != "fp32"
    _check_mean_pooling(model_dir)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True,
                                      attn_implementation="eager").eval()

    class MeanPooledNormalised(torch.nn.Module):
        """Transformer -> mean over the (unpadded) tokens -> L2 normalisation."""

        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids):
            hidden = self.bert(input_ids=input_ids,
                               token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            return torch.nn.functional.normalize(hidden.mean(dim=1), p=2.0, dim=1)

    wrapped = MeanPooledNormalised(model).eval()
    tokenizer = _load_tokenizer(model_dir)
    probe = tokenizer(list(_PROBES), add_special_tokens=True)["input_ids"]

    with tempfile.TemporaryDirectory(prefix=".export-", dir=out_path.parent) as tmp:
        fp32, int8 = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        example = torch.tensor([probe[0]], dtype=torch.long)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # legacy-exporter deprecation and tracer warnings
            torch.onnx.export(wrapped, (example,), str(fp32), input_names=["input_ids"],
                              output_names=["embedding"], dynamic_axes={"input_ids": {1: "tokens"}},
                              opset_version=OPSET, dynamo=False, do_constant_folding=True)
            expected = [wrapped(torch.tensor([ids])).numpy()[0] for ids in probe]
        # quantize_dynamic logs a "consider pre-processing" warning through logging.warning(),
        # which would also install a root handler (basicConfig) for the rest of the process.
        root = logging.getLogger()
        level, handlers = root.level, list(root.handlers)
        root.setLevel(logging.ERROR)
        try:
            if quantize:
                # DefaultTensorType: shape inference cannot type some MatMul outputs of this graph.
                quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8,
                                 per_channel=True, reduce_range=recipe["reduce_range"],
                                 nodes_to_exclude=_layer_nodes(fp32, recipe["fp32_layers"]),
                                 extra_options={"DefaultTensorType": 1})  # onnx.TensorProto.FLOAT
            else:
                shutil.copyfile(fp32, int8)
        finally:
            root.setLevel(level)
            root.handlers[:] = handlers
        session = _session(int8, threads=1)
        for ids, want in zip(probe, expected):
            got = session.run(None, {"input_ids": np.asarray([ids], dtype=np.int64)})[0][0]
            cos = float(np.dot(got, want))
            if not cos >= _MIN_PROBE_COSINE:
                raise RuntimeError(f"int8 export of {model_dir} disagrees with the torch model "
                                   f"(cosine {cos:.3f} < {_MIN_PROBE_COSINE}); use "
                                   "embed_backend='torch' and report this")
        with open(int8, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(int8, out_path)
    return out_path


def _layer_nodes(graph_path: Path, layers: Sequence[int]) -> list[str]:
    """Names of the MatMul nodes of transformer ``layers`` in the exported graph (node names
    follow the module path, ``/bert/encoder/layer.0/attention/self/query/MatMul``)."""
    if not layers:
        return []
    import onnx

    graph = onnx.load(str(graph_path), load_external_data=False).graph
    marks = tuple(f"/layer.{n}/" for n in layers)
    names = [n.name for n in graph.node
             if n.op_type == "MatMul" and any(m in n.name for m in marks)]
    if not names:
        raise RuntimeError(f"no MatMul node of layers {list(layers)} in {graph_path}: the export's "
                           "node names changed; update rag.backends.onnx_embedder._layer_nodes")
    return names


class FastTokenizer:
    """The model's ``tokenizer.json`` run by the ``tokenizers`` library, called as paperchat
    calls a Hugging Face fast tokenizer: ``tok(text or texts, add_special_tokens=...,
    truncation=..., max_length=..., return_offsets_mapping=...)`` gives ``{"input_ids": ...,
    "offset_mapping": ...}`` (lists, or a list of lists for a list of texts), the same ids and
    offsets as transformers' ``PreTrainedTokenizerFast`` over the same file (checked in
    tests/test_onnx_embedder.py), without importing transformers (0.7 s of every ask, up to
    2 s beside a build). The file's own padding and truncation are turned off, as transformers
    does; truncation (``truncation=True``: the longest-first cut to ``max_length`` tokens, special
    tokens included) runs on a second copy set up once, so no call changes state another thread
    sees."""

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer

        self.path = Path(path)
        self._plain = Tokenizer.from_file(str(self.path))
        self._plain.no_padding()
        self._plain.no_truncation()
        self._cut: dict[int, object] = {}
        self._lock = threading.Lock()

    def _truncating(self, max_length: int):
        with self._lock:
            if max_length not in self._cut:
                from tokenizers import Tokenizer

                tok = Tokenizer.from_file(str(self.path))
                tok.no_padding()
                tok.enable_truncation(max_length, stride=0, strategy="longest_first")
                self._cut[max_length] = tok
            return self._cut[max_length]

    def __call__(self, text, *, add_special_tokens: bool = True, truncation: bool = False,
                 max_length: int | None = None, return_offsets_mapping: bool = False) -> dict:
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        tok = self._truncating(int(max_length)) if truncation and max_length else self._plain
        encs = tok.encode_batch(texts, add_special_tokens=add_special_tokens) if texts else []
        out = {"input_ids": [e.ids for e in encs]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e.offsets for e in encs]
        return {k: v[0] for k, v in out.items()} if single else out

    def __deepcopy__(self, memo) -> "FastTokenizer":
        return self  # no state a call changes: one copy serves every thread


def _load_tokenizer(model_dir: Path) -> FastTokenizer:
    return FastTokenizer(Path(model_dir) / "tokenizer.json")


def _session(path: Path, *, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


class OnnxEmbedder:
    """all-MiniLM-L6-v2 as an int8 ONNX model on the CPU; satisfies :class:`rag.backends.embedder.Embedder`.

    Args:
        cache_dir: where the exported model is kept (``<settings.home>/models``).
        model_dir: sentence-transformers model directory (default: the bundled all-MiniLM-L6-v2).
        name: model id recorded in index manifests.
        batch_size: accepted for the same signature as the torch embedder; unused, since every
            text runs as its own sequence (see the module docstring).
        threads: texts embedded at once, one ONNX Runtime thread each (default: usable CPUs).
        quantize: False for the fp32 export (variant ``fp32``).
        variant: a key of :data:`VARIANTS`; default :func:`choose_variant` for this CPU.

    The vector of a text depends on that text only, not on the others in the call.

    Raises:
        ValueError: unknown ``variant``.
    """

    def __init__(self, cache_dir: str | Path, *, model_dir: str | Path | None = None,
                 name: str = "all-MiniLM-L6-v2", batch_size: int = 32, threads: int | None = None,
                 quantize: bool = True, variant: str | None = None):
        offline.enforce()
        if not quantize:
            variant = "fp32"
        elif variant is None:
            variant = choose_variant()
        if variant not in VARIANTS:
            raise ValueError(f"unknown ONNX embedder variant {variant!r}; known: "
                             f"{', '.join(VARIANTS)}")
        #: The quantisation recipe in use (recorded in index manifests as ``embed_variant``).
        self.variant = variant
        self.quantize = variant != "fp32"
        self.cache_dir = Path(cache_dir)
        self.model_dir = Path(model_dir or offline.bundled_embedder_dir())
        self.name = name
        self.batch_size = batch_size
        self.threads = max(1, threads or _usable_cpus())
        self.dim = 384
        self.max_tokens = 256
        #: Seconds spent exporting in this process (0.0 when the cached model was used).
        self.export_seconds = 0.0
        self._tokenizer = None
        self._session_obj = None
        self._output = None
        self._pool = None
        self._lock = threading.Lock()

    # --- loading -----------------------------------------------------------------------------
    def with_variant(self, variant: str) -> "OnnxEmbedder":
        """This embedder (``variant`` is its own) or a new one over the same cache, model and
        threads with ``variant`` (e.g. the one an index was built with).

        Raises:
            ValueError: unknown ``variant``, or ``fp32`` asked of an int8 embedder or back.
        """
        if variant == self.variant:
            return self
        if (variant == "fp32") != (self.variant == "fp32"):
            raise ValueError(f"the index was embedded with the {variant!r} ONNX model and the "
                             f"settings ask for {self.variant!r}: set embed_backend to "
                             f"{'onnx-fp32' if variant == 'fp32' else 'onnx-int8'}")
        return OnnxEmbedder(self.cache_dir, model_dir=self.model_dir, name=self.name,
                            batch_size=self.batch_size, threads=self.threads, variant=variant)

    @property
    def model_path(self) -> Path:
        """The cached model file for the current model files, export code and variant
        (``<name>-<key>.int8.onnx``, ``.int8-avx2.onnx`` or ``.fp32.onnx``)."""
        return self.cache_dir / f"{self.name}-{model_key(self.model_dir)}.{self.variant}.onnx"

    def ensure_model(self) -> Path:
        """Export the model unless it is cached; returns its path. One export at a time per
        cache directory (a file lock); a concurrent process reuses the other's result."""
        path = self.model_path
        if path.exists():
            return path
        from filelock import FileLock

        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.cache_dir / f".{self.name}.export.lock")):
            if not path.exists():
                # Holding the lock, any export directory left here is from a killed export.
                for stale in self.cache_dir.glob(".export-*"):
                    shutil.rmtree(stale, ignore_errors=True)
                t0 = time.perf_counter()
                export_int8(self.model_dir, path, quantize=self.quantize, variant=self.variant)
                self.export_seconds = time.perf_counter() - t0
        return path

    def prepare(self):
        """Start exporting the model in a process of its own unless it is cached, so that it is
        ready when the first text is embedded: :func:`index.build.build_index` calls this when
        phase 1 begins, and the export (about 11 CPU seconds, imports torch) runs beside it
        instead of after it, where the dense fill and the first question waited for it.
        :meth:`ensure_model` then finds the file, or waits for that process's export lock; if
        the process fails, it exports itself. The process shares nothing with the caller (no
        open files: not the index's build lock), so it ends on its own even when the caller
        is killed. Returns the ``subprocess.Popen``, or None when the model is cached."""
        if self.model_path.exists():
            return None
        import subprocess
        import sys

        code = ("import sys; from rag.backends.onnx_embedder import OnnxEmbedder; "
                "OnnxEmbedder(sys.argv[1], model_dir=sys.argv[2], name=sys.argv[3], "
                "variant=sys.argv[4], threads=1).ensure_model()")
        return subprocess.Popen([sys.executable, "-c", code, str(self.cache_dir),
                                 str(self.model_dir), self.name, self.variant],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, close_fds=True)

    def _load(self):
        if self._session_obj is None:
            with self._lock:
                if self._session_obj is None:
                    session = _session(self.ensure_model(), threads=1)
                    self._output = session.get_outputs()[0].name
                    self._session_obj = session
        return self._session_obj

    @property
    def tokenizer(self):
        """The model's tokenizer (:class:`FastTokenizer`, from the model directory only)."""
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = _load_tokenizer(self.model_dir)
        return self._tokenizer

    # --- embedding ---------------------------------------------------------------------------
    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Model input ids of each text: [CLS] ... [SEP], cut to :attr:`max_tokens`."""
        return self.tokenizer([str(t).strip() for t in texts], add_special_tokens=True,
                              truncation=True, max_length=self.max_tokens)["input_ids"]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dim), float32, rows L2-normalised (dot product = cosine); an empty
        input gives shape (0, dim). Texts longer than :attr:`max_tokens` tokens are truncated."""
        n = len(texts)
        if n == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        session = self._load()
        ids = self.token_ids(texts)
        out = np.empty((n, self.dim), dtype=np.float32)
        output = [self._output]

        def one(i: int) -> None:
            out[i] = session.run(output, {"input_ids": np.asarray([ids[i]], dtype=np.int64)})[0][0]

        # Longest first, so the last texts to finish are short ones (threads end together).
        order = sorted(range(n), key=lambda i: -len(ids[i]))
        if self.threads == 1 or n == 1:
            for i in order:
                one(i)
        else:
            for _ in self._executor().map(one, order):
                pass
        return out

    def _executor(self):
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    from concurrent.futures import ThreadPoolExecutor

                    self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="onnx-embed")
        return self._pool
