"""The seams of rag/backends/seams.py: the real retriever and the test fakes satisfy their Protocols, and
the annotations that name them cost nothing at import time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, FakeEmbedder, ScriptedGenerator

from rag.backends import seams


def test_a_retriever_over_a_fake_embedder_index_is_a_retriever(fake_index):
    from rag.retrieve.retriever import Retriever

    _, retriever = fake_index
    assert isinstance(retriever, Retriever) and isinstance(retriever, seams.Retriever)
    assert isinstance(retriever.embedder, seams.Embedder)


@pytest.mark.parametrize("fake, protocol", [
    (FakeEmbedder(), "Embedder"),
    (ScriptedGenerator(), "Generator"),
])
def test_the_fakes_satisfy_their_seams(fake, protocol):
    assert isinstance(fake, getattr(seams, protocol))


def test_an_object_without_search_is_no_retriever(fake_embedder, settings):
    class Partial:
        name, papers, embedder = "seed", {}, fake_embedder

        def __len__(self) -> int:
            return 0

    partial = Partial()
    partial.settings = settings
    assert not isinstance(partial, seams.Retriever)


@pytest.mark.parametrize("module, name", [
    ("rag.backends.embedder", "Embedder"),
    ("rag.backends.generator", "Generator"),
])
def test_the_backend_seams_are_the_same_from_both_modules(module, name):
    import importlib

    assert getattr(seams, name) is getattr(importlib.import_module(module), name)


def test_importing_the_seams_or_an_annotated_module_imports_no_settings_or_retriever():
    mods = ("rag.backends.seams", "rag.backends.embedder", "rag.backends.generator", "rag.compose.grounding", "index.manifest")
    code = (f"import importlib, json, sys; [importlib.import_module(m) for m in {mods!r}]; "
            "print(json.dumps([m in sys.modules for m in ('rag.settings', 'pydantic', "
            "'rag.retrieve.retriever')]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == [False, False, False]
