"""The layer rules of ARCHITECTURE.md, checked on the source: one direction of imports between
basics, backends, the write side (index/), the reader and the query side; no import cycle;
nobody touches a store's private fields. Imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("rag", "index", "ui")
#: Modules that import nothing of the project's.
BASICS = ("rag.types", "rag.text", "rag.paths", "rag.errors", "rag.cpu", "rag.plan")
#: Query-side modules: they read an index through index.reader, never index.build.
QUERY_SIDE = ("rag.retrieve", "rag.answer", "rag.history", "rag.refusal", "rag.grounding",
              "rag.compare", "rag.compose", "rag.filters", "rag.facets", "rag.slots",
              "rag.names", "rag.turn_reader", "rag.understand", "rag.operations", "rag.aspects",
              "rag.roles", "rag.coverage",
              "rag.evaluate", "rag.evaluate_answers", "rag.evaluate_checks", "rag.rendering",
              "rag.export", "rag.mapfigure", "rag.fusion", "rag.evaluate_tldr")
#: What the write side must never import.
NOT_FROM_INDEX = ("rag.retrieve", "rag.answer", "rag.pipeline", "rag.cli", "ui")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).glob("*.py"))}


def _imports(path: Path, known: set[str]) -> set[str]:
    """Project modules imported anywhere in ``path`` (``from rag import x`` counts as rag.x when
    rag.x is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name in known:
                found.add(name)
            elif name.split(".")[0] in PACKAGES and name.rsplit(".", 1)[0] not in known:
                found.add(name)  # a module of the project that does not exist: reported below
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: _imports(path, known) - {name} for name, path in mods.items()}


def test_every_imported_project_module_exists(graph):
    known = set(graph) | set(PACKAGES)
    missing = {m: sorted(imps - known) for m, imps in graph.items()}
    assert not {m: v for m, v in missing.items() if v}


@pytest.mark.parametrize("basic", BASICS)
def test_basics_import_nothing_of_the_project(graph, basic):
    assert basic in graph, f"{basic} is missing"
    assert graph[basic] - set(PACKAGES) == set()


def test_the_write_side_never_imports_the_query_side(graph):
    bad = {m: sorted(i for i in imps if i.startswith(NOT_FROM_INDEX))
           for m, imps in graph.items() if m.startswith("index.")}
    assert not {m: v for m, v in bad.items() if v}


@pytest.mark.parametrize("module", QUERY_SIDE)
def test_the_query_side_never_imports_the_index_builder(graph, module):
    if module not in graph:
        pytest.fail(f"{module} is listed as query side but does not exist")
    assert "index.build" not in graph[module]


def test_no_import_cycle(graph):
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if seen.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in seen:
                visit(nxt, path + [nxt])
        seen[node] = 2

    for start in sorted(graph):
        if start not in seen:
            visit(start, [start])
    assert not cycles, " ; ".join(" -> ".join(c) for c in cycles)


def test_nobody_touches_a_store_s_private_fields():
    offenders = []
    for pkg in PACKAGES + ("bench",):
        for path in sorted((ROOT / pkg).glob("*.py")):
            if path == ROOT / "rag" / "store.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Attribute) and node.attr in ("_col", "_client"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert not offenders
