"""The few exception classes paperchat raises on purpose.

Every message says what went wrong *and what to do*; the CLI prints ``str(err)`` on one line and
exits non-zero, and the Gradio app shows it with ``gr.Error``. Anything else escaping is a bug.
"""

from __future__ import annotations


class PaperchatError(Exception):
    """Base class: an expected, explainable failure (bad input, missing index, bad model path)."""


class InvalidQuestionError(PaperchatError, ValueError):
    """The question is empty, too long, or not text. Raised before any retrieval or model call."""


class IndexNotFoundError(PaperchatError):
    """A named index does not exist; the message gives the ``paperchat index`` command to build it."""


class IndexMismatchError(PaperchatError):
    """The index was built with other embedding/chunking settings than the ones in use now.

    Querying it would compare vectors from different models (meaningless cosine similarities), so
    the message says to rebuild the index.
    """


class ModelLoadError(PaperchatError):
    """A model path is missing, a directory, empty, or not a GGUF file; the message names the path."""


class SourceFormatError(PaperchatError):
    """A paper list could not be read at all (unknown format, unreadable file)."""


class IndexLockedError(PaperchatError):
    """Another ``paperchat index`` run holds the index's lock."""


class BackendUnavailableError(PaperchatError):
    """A configured server (Chroma or an OpenAI-compatible LLM) did not answer in time."""


class GrammarError(PaperchatError, ValueError):
    """A GBNF grammar given to a local model does not parse (the message gives llama.cpp's reason).

    Grammars are built by code (see :func:`rag.backends.generator.gbnf_literal`), so this is a bug in the
    caller, reported instead of letting llama.cpp crash on a grammar it could not build."""


class FetchError(PaperchatError):
    """``paperchat fetch`` could not get a paper list: the network is unreachable, the service
    refused or does not know the list, or the source is misspelt. The message names the URL and
    says whether what was saved so far resumes on the next run."""
