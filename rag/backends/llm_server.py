"""The server generator: :class:`OpenAIServerGenerator` streams from an OpenAI-compatible server
(``PAPERCHAT_LLM_URL``) behind the :class:`rag.backends.generator.Generator` seam, so the model
runs in its own process, or on another machine, and can serve several paperchat processes; a
server that goes away mid-answer raises :class:`BackendUnavailableError`.
"""

from __future__ import annotations

import json
import threading
from typing import Iterator, Sequence

from rag.errors import BackendUnavailableError


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
    #: The model's size is not known from the API: None, which callers treat as a big model.
    n_params: int | None = None
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

    def stream(self, messages: Sequence[dict], *, max_tokens: int = 256,
               temperature: float = 0.0, grammar: str | None = None) -> Iterator[str]:
        """Yield the reply's text deltas as the server sends them (server-sent events).

        ``grammar`` (GBNF) goes in the request body twice: as ``grammar`` (llama_cpp.server and
        llama.cpp's llama-server) and as ``guided_grammar`` (vLLM); each server ignores the key it
        does not know (llama_cpp.server's request model ignores extra fields). The grammar is not
        checked here, and a server that supports neither key answers unconstrained: callers check
        the reply.

        Raises:
            BackendUnavailableError: see the class docstring; pieces already yielded stay yielded
                (a grammar the server cannot parse comes back as a refused request).
        """
        import http.client

        body = {"model": self.model, "messages": list(messages), "stream": True,
                "max_tokens": max_tokens, "temperature": temperature}
        if grammar is not None:
            body["grammar"] = body["guided_grammar"] = grammar
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
