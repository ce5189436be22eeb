"""The in-process generator behind the :class:`rag.backends.generator.Generator` seam.

:class:`LlamaCppGenerator` runs a local GGUF in-process through llama-cpp-python (the bundled
SmolLM2-135M-Instruct by default). A llama.cpp context is not thread-safe, so one generator holds
one ``Llama``, loaded once per process, and *serialises* every call with a lock (no pool: on a
2-core CPU two contexts would only split the same cores and double the memory). Concurrent users
queue; Gradio's queue in front (concurrency 1 for generation) keeps that orderly.
:func:`check_grammar` checks a GBNF grammar with llama.cpp's parser before the model runs. The
GGUF files themselves (checking one, re-quantising the bundled model) are :mod:`rag.backends.gguf`.

Speed of the local model (SmolLM2-135M, 2 threads, median of 5-7 on this 2-core machine, which
was shared, so the figures are noisy; ``tests/test_generator_speed.py`` checks the behaviour):

- **Re-quantised once.** The bundled file is Q4_1, for which llama.cpp has no repacked CPU kernel;
  :func:`rag.backends.gguf.bundled_model` re-quantises it with llama.cpp's own quantiser into
  ``settings.requantize`` (default Q4_0: about 0.4 s, once, cached under ``<home>/models``). First
  token after a 673-token prompt: Q4_1 2.0-2.9 s, Q4_0 1.0-1.6 s, Q8_0 1.2-1.9 s. A ``--model``
  file is used as given.
- **The KV cache stays warm.** Each call keeps the context's state; llama-cpp-python re-uses the
  longest common token prefix with the previous call (the system message and the chat template's
  opening, in practice) and evaluates only the rest, so a second question saves its system
  message's share (an 89-token system message in an 805-token prompt: 1.31 -> 1.25 s).
  :meth:`LlamaCppGenerator.warm` evaluates a system message ahead of the first question.
- **Grammars.** ``stream(..., grammar=GBNF)`` constrains the reply to a GBNF grammar (llama.cpp's
  grammar sampler; a server gets it in the request). :func:`rag.backends.generator.gbnf_literal`
  quotes any text as a GBNF string. The sampler checks the whole vocabulary at every token (about
  10 ms here): picking one of three quoted 40-45-token sentences took 0.75 s, against 0.29 s for
  44 free tokens.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Iterator, Sequence

from rag import offline
from rag.backends.gguf import _captured_stderr, check_gguf
from rag.errors import GrammarError, ModelLoadError


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
            :func:`rag.backends.generator.make_generator` passes the re-quantised copy, see
            :func:`rag.backends.gguf.bundled_model`).
        n_ctx: context window in tokens (capped by the model's trained context).
        n_threads: CPU threads.
        name: shown in the UI and recorded in answers; default the file name.
    Raises:
        ModelLoadError: see :func:`rag.backends.gguf.check_gguf`, or llama.cpp refused the file.
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

    def stream(self, messages: Sequence[dict], *, max_tokens: int = 256,
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
