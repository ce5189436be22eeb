"""Text generators: a ``stream(messages) -> Iterator[str]`` seam (STYLE.md 1).

:class:`LlamaCppGenerator` runs a local GGUF in-process through llama-cpp-python (the bundled
SmolLM2-135M-Instruct by default). A llama.cpp context is not thread-safe, so one generator holds
one ``Llama`` and serialises calls with a lock: concurrent users queue (Gradio's queue in front
keeps that orderly). :class:`OpenAIServerGenerator` streams from an OpenAI-compatible server.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Iterator, Protocol, Sequence, runtime_checkable

from rag import offline
from rag.errors import BackendUnavailableError, ModelLoadError

Message = dict  # {"role": "system"|"user"|"assistant", "content": str}

GGUF_MAGIC = b"GGUF"


@runtime_checkable
class Generator(Protocol):
    """What answering needs from a language model.

    Attributes:
        name: shown in the UI and recorded in answers (file name or server model id).
        context_window: tokens the model can attend to (prompt + answer).
    """

    name: str
    context_window: int

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's own tokenizer (no special tokens)."""
        ...

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 256,
               temperature: float = 0.0) -> Iterator[str]:
        """Yield the reply to a chat ``messages`` list piece by piece (text deltas)."""
        ...


def check_gguf(path: str | Path) -> Path:
    """Return ``path`` as a Path if it is a readable GGUF file.

    Raises:
        ModelLoadError: missing, a directory, empty, unreadable or without the ``GGUF`` magic bytes;
            the message names the path.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelLoadError(f"model file not found: {p}")
    if p.is_dir():
        raise ModelLoadError(f"model path is a directory, not a GGUF file: {p}")
    try:
        with p.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelLoadError(f"cannot read model file {p}: {exc.strerror}") from None
    if len(magic) < 4:
        raise ModelLoadError(f"model file is empty or truncated: {p}")
    if magic != GGUF_MAGIC:
        raise ModelLoadError(f"not a GGUF model file (no GGUF header): {p}")
    return p


class LlamaCppGenerator:
    """A GGUF model run in-process by llama-cpp-python, loaded once, calls serialised by a lock.

    Args:
        model_path: GGUF file; default the bundled SmolLM2-135M-Instruct Q4_1.
        n_ctx: context window in tokens (capped by the model's trained context).
        n_threads: CPU threads.
    Raises:
        ModelLoadError: see :func:`check_gguf`, or llama.cpp refused the file.
    """

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = 2048,
                 n_threads: int = 2):
        self.path = check_gguf(model_path or offline.bundled_gguf())
        self.name = self.path.name
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._llm = None
        self._lock = threading.Lock()

    def _load(self):
        if self._llm is None:
            from llama_cpp import Llama

            try:
                self._llm = Llama(model_path=str(self.path), n_ctx=self._n_ctx,
                                  n_threads=self._n_threads, n_threads_batch=self._n_threads,
                                  verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise ModelLoadError(f"llama.cpp could not load {self.path}: {exc}") from None
        return self._llm

    @property
    def context_window(self) -> int:
        return int(self._load().n_ctx())

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self._load().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 256,
               temperature: float = 0.0) -> Iterator[str]:
        """Stream a chat completion; the lock is held until the generator is exhausted or closed."""
        with self._lock:
            llm = self._load()
            llm.reset()
            chunks = llm.create_chat_completion(messages=list(messages), max_tokens=max_tokens,
                                                temperature=temperature, top_k=1 if temperature == 0 else 40,
                                                repeat_penalty=1.15, stream=True)
            try:
                for chunk in chunks:
                    delta = chunk["choices"][0].get("delta", {}).get("content")
                    if delta:
                        yield delta
            finally:
                close = getattr(chunks, "close", None)
                if close:
                    close()


class OpenAIServerGenerator:
    """Streams from an OpenAI-compatible ``/v1/chat/completions`` server (llama.cpp server, vLLM).

    Uses only the standard library (``urllib``) with a connect/read timeout in seconds.
    Token counts are estimated at 4 chars per token (OpenAI's rule of thumb) since the server's
    tokenizer is not local.

    Raises:
        BackendUnavailableError: the server does not answer or breaks off mid-answer.
    """

    def __init__(self, base_url: str, *, model: str = "default", context_window: int = 2048,
                 timeout_s: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.name = f"{model} @ {self.base_url}"
        self.model = model
        self.context_window = context_window
        self.timeout_s = timeout_s

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 256,
               temperature: float = 0.0) -> Iterator[str]:
        import urllib.error
        import urllib.request

        body = json.dumps({"model": self.model, "messages": list(messages), "stream": True,
                           "max_tokens": max_tokens, "temperature": temperature}).encode()
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                for raw in resp:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    delta = json.loads(data)["choices"][0].get("delta", {}).get("content")
                    if delta:
                        yield delta
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise BackendUnavailableError(
                f"the LLM server at {self.base_url} did not answer ({exc}); check that it is "
                f"running or unset PAPERCHAT_LLM_URL to use the local model") from None


def make_generator(settings) -> Generator:
    """The generator the settings ask for: an LLM server when ``llm_url`` is set, else the GGUF at
    ``settings.model`` (default the bundled SmolLM2)."""
    if settings.llm_url:
        return OpenAIServerGenerator(settings.llm_url, context_window=settings.n_ctx)
    return LlamaCppGenerator(settings.model, n_ctx=settings.n_ctx, n_threads=settings.n_threads)
