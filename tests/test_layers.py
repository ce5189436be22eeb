"""The layer rules of ARCHITECTURE.md, checked on the source: rag/ is grouped by stage
(:data:`STAGES`) and every import runs down that order, never up; the write side (index/) never
imports the query side and the query side never the index builder; no import cycle; nobody
touches a store's private fields; no module grows past :data:`MAX_LINES`. Imports inside
functions and under ``TYPE_CHECKING`` count too."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("rag", "index", "ui")
#: The stages, lowest first: a module may import its own stage and the stages before it, never
#: one after it (ARCHITECTURE.md, "Layers"). ``rag`` is its top level only: the shared basics.
STAGES = (
    "rag",             # types, errors, paths, settings, text, cpu, offline, filters
    "rag.backends",    # embedders, Chroma store, BM25, generators, the seams
    "index",           # the write side: sources, chunking, build, layout; and index.reader
    "rag.understand",  # slots, turn reader, plan, names, conversation history
    "rag.retrieve",    # hybrid retrieval, fusion, dense coverage
    "rag.compose",     # extractive composition, compare, aspects, grounding, citations, refusal
    "rag.conference",  # catalog facets, exports, map figures
    "rag.chat",        # one turn end to end: operations, answer modes, pipeline
    "rag.evaluate",    # evaluations and benchmarks
    "ui",              # the Gradio app and the MCP server
    "rag.cli",         # the paperchat command
)
#: Entry points outside the order: ``python -m rag`` runs the CLI.
ENTRY_POINTS = ("rag.__main__",)
#: At most this many modules at rag/'s top level (issue 24).
MAX_TOP_LEVEL = 10
#: No module of rag/, ui/ or index/ is longer than this (lines; issue 24).
MAX_LINES = 500
#: Modules that import nothing of the project's.
BASICS = ("rag.types", "rag.text", "rag.paths", "rag.errors", "rag.cpu", "rag.understand.plan")
#: The query side reads an index through index.reader, never index.build: every module of these
#: stages except the ones that build backends or indexes (:data:`BUILDERS`).
QUERY_STAGES = ("rag.understand", "rag.retrieve", "rag.compose", "rag.conference", "rag.chat",
                "rag.evaluate")
BUILDERS = ("rag.chat.pipeline", "rag.evaluate.bench_index")
#: The index builder and the parts it was split into: only :data:`BUILDERS` import them.
BUILDER_MODULES = ("index.build", "index.build_workers", "index.dense_fill", "index.build_summary")


def stage_of(module: str) -> int:
    """Index in :data:`STAGES` of the stage holding ``module`` (the longest matching prefix).

    Raises:
        KeyError: ``module`` is in rag/ but in no named stage (a new subpackage must be added to
        :data:`STAGES`, in its place).
    """
    best = -1
    for i, stage in enumerate(STAGES):
        if module == stage or module.startswith(stage + "."):
            if best < 0 or len(stage) > len(STAGES[best]):
                best = i
    if best < 0 or (STAGES[best] == "rag" and module.count(".") > 1):
        raise KeyError(module)
    return best


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


@functools.cache
def _tree(path: Path) -> ast.Module:
    """``path`` parsed, once for all the checks of this file."""
    return ast.parse(path.read_text(), str(path))


def _imports(path: Path, known: set[str]) -> set[str]:
    """Project modules imported anywhere in ``path`` (``from rag import x`` counts as rag.x when
    rag.x is a module). An import of a module or name that does not exist is
    :func:`test_every_imported_name_exists_where_it_is_imported_from`'s to report."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found.update(name for name in names if name in known)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: _imports(path, known) - {name} for name, path in mods.items()}


@pytest.mark.parametrize("basic", BASICS)
def test_basics_import_nothing_of_the_project(graph, basic):
    assert basic in graph, f"{basic} is missing"
    assert graph[basic] - set(PACKAGES) == set()


def test_every_module_of_rag_is_in_a_named_stage(graph):
    unplaced = []
    for m in graph:
        if m in ENTRY_POINTS:
            continue
        try:
            stage_of(m)
        except KeyError:
            unplaced.append(m)
    assert not unplaced, f"add their subpackage to STAGES: {unplaced}"


def test_imports_run_down_the_stage_order(graph):
    upward = {}
    for m, imps in graph.items():
        if m in ENTRY_POINTS:
            continue
        up = sorted(i for i in imps if i in graph and stage_of(i) > stage_of(m))
        if up:
            upward[m] = up
    assert not upward


def test_rag_top_level_is_the_basics_and_the_stages():
    top = sorted(p.stem for p in (ROOT / "rag").glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top
    subpackages = {f"rag.{p.parent.name}" for p in (ROOT / "rag").glob("*/__init__.py")}
    assert subpackages <= set(STAGES), sorted(subpackages - set(STAGES))
    assert len(subpackages - {"rag.cli"}) >= 4  # issue 24: at least four stage subpackages


def test_no_module_is_longer_than_max_lines():
    long = {m: n for m, path in _modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long


def test_the_write_side_never_imports_the_query_side(graph):
    bad = {m: sorted(i for i in imps if i in graph and stage_of(i) > STAGES.index("index"))
           for m, imps in graph.items() if m == "index" or m.startswith("index.")}
    assert not {m: v for m, v in bad.items() if v}


def test_the_query_side_never_imports_the_index_builder(graph):
    query_side = [m for m in graph if m.startswith(tuple(s + "." for s in QUERY_STAGES))
                  and m not in BUILDERS]
    assert len(query_side) >= 30, query_side
    bad = {m: sorted(graph[m] & set(BUILDER_MODULES)) for m in query_side}
    assert not {m: v for m, v in bad.items() if v}


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (also inside top-level if/try/with blocks)."""
    names: set[str] = set()

    def visit(body) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.Import):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                names.update(a.asname or a.name for a in node.names)
            for field in ("body", "orelse", "finalbody", "handlers"):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    visit(getattr(node, field, []) or [])

    visit(tree.body)
    return names


def test_every_imported_name_exists_where_it_is_imported_from():
    """``from rag.x import Y`` needs Y to be a submodule of rag.x or a name rag.x binds, and
    ``import rag.x`` needs the module: a module turned into a package, or a name moved to
    another module, leaves imports behind that only fail when their function runs. Relative
    imports are not used in the project (they would escape the other checks)."""
    mods = _modules()
    bound = {m: _top_level_names(_tree(p)) for m, p in mods.items()}
    bad = []
    for m, path in list(mods.items()) + [(f"tests.{p.stem}", p)
                                         for p in sorted((ROOT / "tests").glob("*.py"))]:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.level:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} relative import")
            elif isinstance(node, ast.ImportFrom) and node.module in mods:
                if "__getattr__" in bound[node.module]:
                    continue
                for a in node.names:
                    if a.name != "*" and f"{node.module}.{a.name}" not in mods \
                            and a.name not in bound[node.module]:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{a.name}")
            elif isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.split(".")[0] in PACKAGES:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} no module {node.module}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in PACKAGES and a.name not in mods:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno} no module {a.name}")
    assert not bad


def test_private_names_stay_in_their_package():
    """ARCHITECTURE.md, habit 16: ``_name`` is shared only by the modules of one package."""
    out = []
    for m, path in _modules().items():
        package = m if path.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.split(".")[0] in PACKAGES:
                source = node.module.rsplit(".", 1)[0] if node.module.count(".") else node.module
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__") and \
                            source != package and node.module != package:
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{a.name}")
    assert not out


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
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path == ROOT / "rag" / "backends" / "store.py":
                continue
            for node in ast.walk(_tree(path)):
                if isinstance(node, ast.Attribute) and node.attr in ("_col", "_client"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert not offenders
