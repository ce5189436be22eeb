"""Shared fixtures: deterministic fakes (ARCHITECTURE.md, Seams and habit 2) and real-model
fixtures (marked).

``FakeEmbedder`` makes a vector from sha256 of each word (haystack's trick: never ``hash()``), sums
them and L2-normalises, so texts sharing words are similar, deterministically, in any process.
``ScriptedGenerator`` replays queued replies and records the messages it was given.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SHARED_DATA = SHARED / "data"
SHARED_EVAL = SHARED / "eval"
SEED = ROOT / "data" / "seed_papers.jsonl"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rag import offline  # noqa: E402

offline.enforce()


class _WordTokenizer:
    """A fast-tokenizer look-alike: one token per word or punctuation mark, with offsets."""

    def __call__(self, text, *, add_special_tokens=False, return_offsets_mapping=False, **_):
        spans = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
        out = {"input_ids": [hash_int(text[a:b]) % 30000 for a, b in spans]}
        if return_offsets_mapping:
            out["offset_mapping"] = spans
        return out


def hash_int(word: str) -> int:
    return int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")


class FakeEmbedder:
    """Deterministic bag-of-words embedder, dim 64, L2-normalised float32 rows."""

    name = "fake-bow"
    dim = 64
    max_tokens = 256

    def __init__(self):
        self.calls: list[list[str]] = []
        self.tokenizer = _WordTokenizer()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                rng = np.random.default_rng(hash_int(w))
                out[i] += rng.standard_normal(self.dim).astype(np.float32)
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n else np.eye(self.dim, dtype=np.float32)[0]
        return out


class ScriptedGenerator:
    """Replies queued with :meth:`enqueue` (or a default), streamed word by word; ``history``
    keeps every messages list it was asked to answer and ``grammars`` the grammar of each of those
    calls (None for free text), in the same order. ``n_params`` plays the model's size (None:
    unknown, as for an LLM server)."""

    name = "scripted"

    def __init__(self, replies: Sequence[str] = (), context_window: int = 2048,
                 n_params: int | None = None):
        self.replies = list(replies)
        self.history: list[list[dict]] = []
        self.grammars: list[str | None] = []
        self.context_window = context_window
        self.n_params = n_params

    def enqueue(self, reply: str) -> None:
        self.replies.append(reply)

    def count_tokens(self, text: str) -> int:
        return len(re.findall(r"\w+|[^\w\s]", text))

    def stream(self, messages, *, max_tokens: int = 256, temperature: float = 0.0,
               grammar: str | None = None) -> Iterator[str]:
        self.history.append(list(messages))
        self.grammars.append(grammar)
        reply = self.replies.pop(0) if self.replies else "No scripted reply."
        for piece in re.findall(r"\S+\s*", reply):
            yield piece


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def scripted() -> ScriptedGenerator:
    return ScriptedGenerator()


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """Settings with ``home`` in tmp_path and the fake embedder's name recorded. The map layout
    is off at index time (``map_layout=False``: fake-embedder tests build many small indexes and
    need no map); tests/test_layout.py turns it on."""
    from rag.settings import Settings

    monkeypatch.setenv("PAPERCHAT_HOME", str(tmp_path / "home"))
    return Settings(home=tmp_path / "home", embedder="fake-bow", embed_backend="torch",
                    map_layout=False)


@pytest.fixture
def seed_papers():
    from index.sources import load_papers

    return load_papers(SEED).papers


@pytest.fixture
def fake_index(settings, fake_embedder):
    """The seed corpus indexed with the fake embedder into tmp_path; returns (settings, retriever)."""
    from index.build import build_index
    from rag.retrieve.retriever import Retriever

    build_index(SEED, settings=settings, embedder=fake_embedder, progress=False, log=lambda m: None)
    return settings, Retriever.open(settings, fake_embedder)


# --- real models (integration) ----------------------------------------------------------------
@pytest.fixture(scope="session")
def real_embedder():
    from rag.backends.embedder import make_embedder
    from rag.settings import Settings

    return make_embedder(Settings())


@pytest.fixture(scope="session")
def real_generator():
    from rag.backends.llama_cpp import LlamaCppGenerator

    return LlamaCppGenerator()


@pytest.fixture(scope="session")
def real_home(tmp_path_factory):
    return tmp_path_factory.mktemp("real_home")


@pytest.fixture(scope="session")
def real_settings(real_home):
    from rag.settings import Settings

    return Settings(home=real_home)


@pytest.fixture(scope="session")
def real_index(real_settings, real_embedder):
    """The seed corpus indexed with the real embedder once per test session."""
    from index.build import build_index
    from rag.retrieve.retriever import Retriever

    build_index(SEED, settings=real_settings, embedder=real_embedder, progress=False,
                log=lambda m: None)
    return Retriever.open(real_settings, real_embedder)


def shared(name: str) -> Path:
    """``../shared/data/<name>``, or skip the calling test with the reason when it is absent."""
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (the shared paper data lives beside the repo in "
                    f"../shared/data; see shared/data/README.md)")
    return path


@pytest.fixture(scope="session")
def accepted_index(tmp_path_factory, real_embedder):
    """Every accepted ICLR 2026 paper (../shared/data/iclr2026_accepted.jsonl, 5,358 papers)
    indexed with the real embedder once per test session (about 3-5 min on 2 cores); returns
    ``(settings, build summary, seconds)``. Skips when the shared data is absent."""
    import time

    from index.build import build_index
    from rag.settings import Settings

    path = SHARED_DATA / "iclr2026_accepted.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is absent (shared paper data beside the repo)")
    settings = Settings(home=tmp_path_factory.mktemp("accepted_home"), index="iclr2026")
    t0 = time.perf_counter()
    summary = build_index(path, settings=settings, embedder=real_embedder, name="iclr2026",
                          progress=False, log=lambda m: None)
    return settings, summary, time.perf_counter() - t0
