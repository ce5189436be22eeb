"""The seams the query side is written against (ARCHITECTURE.md, "Seams and their fakes").

:class:`Retriever` is what answering uses of a retriever over one index (:mod:`rag.chat.answer`,
:mod:`rag.chat.operations` and the modules it runs, :mod:`rag.understand.read`,
:mod:`rag.compose.refusal`, :mod:`rag.evaluate.answers`, :mod:`rag.chat.pipeline`, the UI's tabs); the real
one is :class:`rag.retrieve.retriever.Retriever`, which tests open over a fake-embedder index.
:class:`Embedder` and :class:`Generator` are defined beside their implementations
(:mod:`rag.backends.embedder`, :mod:`rag.backends.generator`) and can be imported from here too
(``from rag.backends.seams import Embedder``): they are loaded on first use.

At run time this module imports only :mod:`typing`; the types its annotations name are imported
under ``TYPE_CHECKING``. Those imports still count as edges for ``tests/test_layers.py``: they
name only basics and backends (:class:`rag.types.Retrieval` is a record in the basics), so any
stage may import this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from rag.backends.embedder import Embedder
    from rag.backends.generator import Generator
    from rag.filters import Filters
    from rag.settings import Settings
    from rag.types import Hit, Paper, Retrieval

__all__ = ["Embedder", "Generator", "Retriever"]


@runtime_checkable
class Retriever(Protocol):
    """What the query side needs from a retriever over one index.

    Attributes:
        name: the index's name (its directory is ``settings.index_dir(name)``).
        papers: every indexed paper by id.
        embedder: the embedder the index was built with; questions and abstract sentences are
            embedded with it.
        settings: the settings it was opened with.
    """

    name: str
    papers: dict[str, Paper]
    embedder: Embedder
    settings: Settings

    def __len__(self) -> int:
        """The number of indexed papers."""
        ...

    def search(self, question: str, k: int | None = None, filters: Filters | None = None,
               evidence: bool = True, feedback: bool = True, topical: bool = False) -> Retrieval:
        """The top-``k`` papers for ``question`` (``.hits``, best first) with the dense channel's
        ranking (``.dense``: its best cosine similarity decides refusals); ``topical``: the
        question asks for a topic's papers (the query adapter may move its vector)."""
        ...

    def attach_evidence(self, question: str, hits: list[Hit], qvec: np.ndarray | None = None,
                        n: int = 3) -> None:
        """Fill each hit's ``evidence`` with the ``n`` abstract sentences closest to
        ``question``."""
        ...

    def named(self, question: str, allowed: set[str] | None = None) -> list[str]:
        """Ids of the papers ``question`` names (by a title's name or a rare name-like word)."""
        ...

    def vocabulary(self) -> set[str]:
        """Every stemmed BM25 term of the indexed papers."""
        ...

    def area_names(self) -> list[str]:
        """The distinct primary areas of the indexed papers, sorted."""
        ...

    def search_texts(self) -> dict[str, str]:
        """Each paper's normalised BM25 text (title, keywords, abstract) by id."""
        ...


def per_retriever(retriever, attr: str, compute):
    """``compute()`` once per retriever: kept on ``retriever`` as ``attr`` and returned from
    there after (an index re-indexed on disk is reopened as a new retriever, so nothing goes
    stale); computed each time for a retriever that takes no attributes (a fake)."""
    cached = getattr(retriever, attr, None)
    if cached is None:
        cached = compute()
        try:
            setattr(retriever, attr, cached)
        except AttributeError:
            pass
    return cached


def __getattr__(name: str):
    """``Embedder`` and ``Generator`` from their own modules, imported on first use (PEP 562)."""
    if name == "Embedder":
        from rag.backends.embedder import Embedder

        return Embedder
    if name == "Generator":
        from rag.backends.generator import Generator

        return Generator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
