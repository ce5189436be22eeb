"""Text generators: a ``stream(messages) -> Iterator[str]`` seam (STYLE.md 1).

:class:`LlamaCppGenerator` runs a local GGUF in-process through llama-cpp-python (the bundled
SmolLM2-135M-Instruct by default). A llama.cpp context is not thread-safe, so one generator holds
one ``Llama``, loaded once per process, and *serialises* every call with a lock (no pool: on a
2-core CPU two contexts would only split the same cores and double the memory). Concurrent users
queue; Gradio's queue in front (concurrency 1 for generation) keeps that orderly.

:class:`OpenAIServerGenerator` streams from an OpenAI-compatible server (``PAPERCHAT_LLM_URL``),
so the model runs in its own process, or on another machine, and can serve several paperchat
processes; a server that goes away mid-answer raises :class:`BackendUnavailableError`.
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

    Only a regular file is opened (a FIFO would block the open, a device would read forever).

    Raises:
        ModelLoadError: missing, a directory, not a regular file, empty, unreadable, a path that
            cannot name a file (NUL byte) or without the ``GGUF`` magic bytes; the message names
            the path.
    """
    if "\x00" in str(path):
        raise ModelLoadError(f"not a usable model path {str(path)!r}: it contains a NUL byte")
    try:
        p = Path(path).expanduser()
        exists, is_dir, is_file = p.exists(), p.is_dir(), p.is_file()
    except (ValueError, OSError) as exc:  # embedded NUL byte, name too long, ELOOP
        raise ModelLoadError(f"not a usable model path {str(path)!r}: {exc}") from None
    if not exists:
        raise ModelLoadError(f"model file not found: {p}")
    if is_dir:
        raise ModelLoadError(f"model path is a directory, not a GGUF file: {p}")
    if not is_file:
        raise ModelLoadError(f"model path is not a regular file (a device, FIFO or socket): {p}")
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
        self._lock = threading.Lock()       # one call at a time on the llama.cpp context
        self._load_lock = threading.Lock()  # one load, even when first calls race

    def load(self) -> None:
        """Load the model now (``paperchat serve`` does, so the first question does not wait and
        a broken file is reported before the server listens).

        Raises:
            ModelLoadError: llama.cpp cannot load the file.
        """
        self._load()

    def _load(self):
        if self._llm is None:
            with self._load_lock:
                if self._llm is None:
                    from llama_cpp import Llama

                    try:
                        self._llm = Llama(model_path=str(self.path), n_ctx=self._n_ctx,
                                          n_threads=self._n_threads,
                                          n_threads_batch=self._n_threads, verbose=False)
                    except (ValueError, RuntimeError) as exc:
                        raise ModelLoadError(f"llama.cpp could not load {self.path}: {exc}") \
                            from None
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
    """Streams from an OpenAI-compatible ``/v1/chat/completions`` server: llama-cpp-python's
    ``python -m llama_cpp.server``, llama.cpp's ``llama-server`` or vLLM.

    Standard library only (``http.client``: no proxy from the environment is used, so a loopback
    URL stays on loopback). Two timeouts, in seconds: ``connect_timeout_s`` to open the TCP
    connection, ``read_timeout_s`` for the longest silence between two pieces of the reply (the
    first piece waits for prompt processing and for the server's own queue). Token counts come from
    the server's tokenizer when it has a tokenize endpoint (``/extras/tokenize`` of
    llama_cpp.server, ``/tokenize`` of llama-server and vLLM), else they are estimated at 3 chars per token
    (conservative: English runs at about 4, so the prompt budget errs on the short side).

    A reply must end with ``data: [DONE]`` after a chunk with a ``finish_reason``: a stream that
    breaks off (server killed, connection reset, ``[DONE]`` without a finish reason, as
    llama_cpp.server sends when ``--interrupt_requests`` cuts an answer for a newer request) raises
    instead of passing off a truncated answer as complete.

    Args:
        base_url: ``http(s)://host:port/v1``.
        model: model id sent with each request; ``None`` asks the server (``GET /v1/models``,
            first id), falling back to ``"default"``.
        context_window: tokens (prompt + answer); must match the server's ``--n_ctx``.
        api_key: sent as ``Authorization: Bearer ...`` when set (llama_cpp.server ``--api_key``).
    Raises:
        BackendUnavailableError: from :meth:`stream`: the server does not answer, refuses the
            request, goes silent past ``read_timeout_s`` or breaks off mid-answer. The message names
            the URL and says what to do.
    """

    #: Characters per token assumed when the server cannot count tokens.
    CHARS_PER_TOKEN = 3
    #: Seconds of silence allowed for the small requests (model list, tokenize).
    META_TIMEOUT_S = 10.0

    def __init__(self, base_url: str, *, model: str | None = None, context_window: int = 2048,
                 connect_timeout_s: float = 5.0, read_timeout_s: float = 60.0,
                 api_key: str | None = None):
        from urllib.parse import urlsplit

        self.base_url = base_url.rstrip("/")
        u = urlsplit(self.base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise BackendUnavailableError(
                f"PAPERCHAT_LLM_URL must look like http://host:port/v1, got {base_url!r}")
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port or (443 if self._https else 80)
        self._path = u.path.rstrip("/")  # "/v1"
        self.context_window = context_window
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self._api_key = api_key
        self._model = model
        self._tokenize: tuple[str, str] | None = None  # (path, body key) once found
        self._tokenize_probed = False
        self._lock = threading.Lock()

    # -- metadata ------------------------------------------------------------------------------
    @property
    def model(self) -> str:
        """The model id sent with requests (asked from the server once, when not given)."""
        if self._model is None:
            try:
                ids = [m.get("id") for m in self._get_json(f"{self._path}/models").get("data", [])]
                self._model = next((i for i in ids if i), "default")
            except BackendUnavailableError:
                return "default"  # not cached: asked again once the server is up
        return self._model

    @property
    def name(self) -> str:
        """``<model> @ <url>``; a model id that is a file path (llama_cpp.server) is shortened to
        the file name."""
        return f"{self.model.rsplit('/', 1)[-1]} @ {self.base_url}"

    # -- HTTP ----------------------------------------------------------------------------------
    def _connection(self, read_timeout_s: float):
        import http.client

        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.connect_timeout_s)
        try:
            conn.connect()
        except OSError as exc:
            conn.close()
            raise self._unavailable("did not accept a connection", exc) from None
        conn.sock.settimeout(read_timeout_s)
        return conn

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json"}
        if self._api_key:
            h["Authorization"] = f"Bearer {self._api_key}"
        return h

    def _unavailable(self, what: str, exc: BaseException | None = None) -> BackendUnavailableError:
        detail = f" ({type(exc).__name__}: {exc})" if exc is not None and str(exc) else \
            (f" ({type(exc).__name__})" if exc is not None else "")
        return BackendUnavailableError(
            f"the LLM server at {self.base_url} {what}{detail}; check that it is running "
            f"(python -m llama_cpp.server --model FILE.gguf --port PORT) or unset "
            f"PAPERCHAT_LLM_URL to use the local model")

    def _request(self, method: str, path: str, body: dict | None = None, *,
                 read_timeout_s: float | None = None):
        """(connection, response) with status 200; anything else raises."""
        import http.client

        conn = self._connection(read_timeout_s or self.read_timeout_s)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body).encode(),
                         headers=self._headers())
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise self._unavailable("did not answer", exc) from None
        if resp.status != 200:
            try:
                detail = resp.read(4000).decode("utf-8", "replace")
            except (OSError, http.client.HTTPException):
                detail = ""
            conn.close()
            raise _Refused(
                f"the LLM server at {self.base_url} refused the request to {path} "
                f"(HTTP {resp.status}: {_error_text(detail) or resp.reason})")
        return conn, resp

    def _get_json(self, path: str, body: dict | None = None) -> dict:
        """A small JSON request (model list, tokenize): at most :data:`META_TIMEOUT_S` silent."""
        import http.client

        conn, resp = self._request("POST" if body is not None else "GET", path, body,
                                   read_timeout_s=min(self.META_TIMEOUT_S, self.read_timeout_s))
        try:
            return json.loads(resp.read())
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise self._unavailable(f"sent an unreadable reply to {path}", exc) from None
        finally:
            conn.close()

    # -- the seam ------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the server's tokenizer; an estimate if it has no endpoint."""
        if not self._tokenize_probed:
            with self._lock:
                if not self._tokenize_probed:
                    try:
                        self._tokenize = self._find_tokenizer()
                        self._tokenize_probed = True
                    except BackendUnavailableError:
                        pass  # server not reachable now: estimate, and look again next time
        if self._tokenize is not None:
            path, key = self._tokenize
            try:
                got = self._get_json(path, {key: text, "add_special": False,
                                            "model": self.model})
                if isinstance(got.get("tokens"), list):
                    return len(got["tokens"])
                if isinstance(got.get("count"), int):
                    return got["count"]
            except BackendUnavailableError:
                pass  # the answer request will report the server; estimate meanwhile
        return max(1, -(-len(text) // self.CHARS_PER_TOKEN))

    def _find_tokenizer(self) -> tuple[str, str] | None:
        """(path, body key) of the server's tokenize endpoint, or None if it has none.

        Raises:
            BackendUnavailableError: the server is not reachable (so nothing is concluded).
        """
        root = self._path.removesuffix("/v1")
        for path, key in ((f"{root}/extras/tokenize", "input"), (f"{root}/tokenize", "content"),
                          (f"{root}/tokenize", "prompt")):
            try:
                got = self._get_json(path, {key: "hello world", "model": self.model})
            except _Refused:
                continue  # no such endpoint (404/405/422): try the next
            if isinstance(got.get("tokens"), list) or isinstance(got.get("count"), int):
                return path, key
        return None

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 256,
               temperature: float = 0.0) -> Iterator[str]:
        """Yield the reply's text deltas as the server sends them (server-sent events).

        Raises:
            BackendUnavailableError: see the class docstring; pieces already yielded stay yielded.
        """
        import http.client

        body = {"model": self.model, "messages": list(messages), "stream": True,
                "max_tokens": max_tokens, "temperature": temperature}
        conn, resp = self._request("POST", f"{self._path}/chat/completions", body)
        pieces = 0
        finished = False
        try:
            while True:
                try:
                    raw = resp.readline(1 << 20)
                except (OSError, http.client.HTTPException) as exc:
                    what = "went silent" if isinstance(exc, TimeoutError) else "broke off"
                    raise self._unavailable(
                        f"{what} mid-answer after {pieces} pieces (the answer is incomplete)",
                        exc) from None
                if not raw:
                    break
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    if finished:
                        return
                    raise self._unavailable(
                        f"ended the answer early after {pieces} pieces without a finish reason "
                        "(llama_cpp.server does this when another request interrupts it: start it "
                        "with --interrupt_requests False)")
                try:
                    chunk = json.loads(data)
                except ValueError as exc:
                    raise self._unavailable("sent a malformed stream line", exc) from None
                if not isinstance(chunk, dict):
                    raise self._unavailable("sent a malformed stream line")
                if chunk.get("error"):
                    raise BackendUnavailableError(
                        f"the LLM server at {self.base_url} failed mid-answer: "
                        f"{_error_text(json.dumps(chunk))}")
                for choice in chunk.get("choices") or []:
                    delta = (choice.get("delta") or {}).get("content")
                    if delta:
                        pieces += 1
                        yield delta
                    if choice.get("finish_reason"):
                        finished = True
        finally:
            resp.close()
            conn.close()
        if not finished:
            raise self._unavailable(
                f"closed the connection mid-answer after {pieces} pieces (the answer is "
                "incomplete)")


class _Refused(BackendUnavailableError):
    """The server answered, with an HTTP error status."""


def _error_text(body: str) -> str:
    """The message inside an OpenAI-style error body (``{"error": {"message": ...}}``), or the
    body itself shortened to 300 chars."""
    try:
        obj = json.loads(body)
        err = obj.get("error", obj) if isinstance(obj, dict) else obj
        if isinstance(err, dict):
            err = err.get("message") or err.get("detail") or err
        text = err if isinstance(err, str) else json.dumps(err)
    except ValueError:
        text = body
    text = " ".join(text.split())
    return text[:300] + ("..." if len(text) > 300 else "")


def make_generator(settings) -> Generator:
    """The generator the settings ask for: an LLM server when ``llm_url`` is set, else the GGUF at
    ``settings.model`` (default the bundled SmolLM2)."""
    if settings.llm_url:
        return OpenAIServerGenerator(
            settings.llm_url, context_window=settings.n_ctx,
            model=getattr(settings, "llm_model", None),
            connect_timeout_s=getattr(settings, "llm_connect_timeout_s", 5.0),
            read_timeout_s=getattr(settings, "llm_read_timeout_s", 60.0),
            api_key=getattr(settings, "llm_api_key", None))
    return LlamaCppGenerator(settings.model, n_ctx=settings.n_ctx, n_threads=settings.n_threads)
