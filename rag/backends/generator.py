"""Text generators: a ``stream(messages) -> Iterator[str]`` seam (ARCHITECTURE.md, Seams).

This module holds the seam (:class:`Generator`), :func:`gbnf_literal` for the grammars a reply
is constrained to, and :func:`make_generator`, which builds the generator the settings ask for:

- :class:`rag.backends.llama_cpp.LlamaCppGenerator` runs a local GGUF in-process through
  llama-cpp-python (the bundled SmolLM2-135M-Instruct by default, re-quantised once by
  :func:`rag.backends.gguf.bundled_model`); its speed features are described in
  :mod:`rag.backends.llama_cpp`.
- :class:`rag.backends.llm_server.OpenAIServerGenerator` streams from an OpenAI-compatible server
  (``PAPERCHAT_LLM_URL``), so the model runs in its own process, or on another machine, and can
  serve several paperchat processes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, runtime_checkable

from rag.backends.gguf import bundled_model
from rag.backends.llama_cpp import LlamaCppGenerator
from rag.backends.llm_server import OpenAIServerGenerator
from rag.errors import GrammarError

if TYPE_CHECKING:
    from rag.settings import Settings

Message = dict  # {"role": "system"|"user"|"assistant", "content": str}


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
