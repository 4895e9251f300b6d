"""The import rules of docs/architecture.md, checked on the code.

``LAYERS`` is the module map of docs/architecture.md as data: a module may import (at the
top or inside a function) only modules of its own layer or of a layer listed before it,
and the import graph of the package has no cycle. Moving a module is one edit of
``LAYERS``; a module that matches no pattern fails the test until it is placed.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tabmia"

#: (layer, patterns of dotted module names), in the order of docs/architecture.md. The
#: first matching pattern places a module.
LAYERS: list[tuple[str, list[str]]] = [
    ("0 foundations", [
        "tabmia.exceptions", "tabmia.metrics", "tabmia._rates", "tabmia._dp_bounds", "tabmia.scores", "tabmia._game_labels",
        "tabmia._device", "tabmia._estimators", "tabmia._records", "tabmia._rows",
        "tabmia._progress", "tabmia._array", "tabmia._seeding", "tabmia._torch",
        "tabmia.claims", "tabmia._memory", "tabmia._groups", "tabmia.settings",
        "tabmia._deprecation", "tabmia._columns", "tabmia._docstrings", "tabmia._validation",
    ]),
    ("1 data", ["tabmia.datasets", "tabmia.datasets.*"]),
    ("2 target adapter", ["tabmia", "tabmia.target", "tabmia.precomputed", "tabmia.game"]),
    ("3 statistics", ["tabmia.thresholds", "tabmia.perturb", "tabmia.plausibility",
                      "tabmia.reconstruction", "tabmia.reconstruction.*",
                      "tabmia.structure", "tabmia.structure.*"]),
    ("4 shadow engine", ["tabmia.shadow", "tabmia.shadow.*", "tabmia.backends"]),
    ("5 attacks", ["tabmia.attacks", "tabmia.attacks.*"]),
    ("6 report", ["tabmia.report", "tabmia.report.*", "tabmia.schema", "tabmia.schema.*"]),
    ("7 analyses", [
        "tabmia._result", "tabmia.persons", "tabmia.persons.*", "tabmia.slices",
        "tabmia.slices.*", "tabmia.named", "tabmia.named.*",
    ]),
    ("8 gate", ["tabmia.gate", "tabmia.testing"]),
    ("9 runs", [
        "tabmia.recipes", "tabmia._attack_builder", "tabmia.experiment", "tabmia.audit",
        "tabmia.benchmark", "tabmia._benchmark_report", "tabmia.dp", "tabmia.dp.*",
        "tabmia._play", "tabmia.splits", "tabmia.whatif", "tabmia.whatif.*",
        "tabmia.mlflow._loading", "tabmia.mlflow._metrics", "tabmia.mlflow._run",
    ]),
    ("10 command line", ["tabmia.cli", "tabmia.cli.*"]),
    ("11 integrations", ["tabmia.mlflow", "tabmia.mlflow.*"]),
]

#: The analyses floor: what reads an ``ExperimentResult`` (and makes one, for persons)
#: never runs a game, so it imports no runner, directly or through another module.
ANALYSES = ["tabmia._result", "tabmia.persons", "tabmia.persons.*", "tabmia.slices",
            "tabmia.slices.*", "tabmia.named", "tabmia.named.*"]
RUNNERS = ["tabmia.experiment", "tabmia.audit", "tabmia.benchmark", "tabmia.whatif",
           "tabmia.whatif.*", "tabmia.cli", "tabmia.cli.*"]

#: Imports inside a function that close a loop, each with its reason. The cycle check
#: leaves out these edges only; each must stay inside a function body (checked).
LAZY_LOOPS: dict[tuple[str, str], str] = {
    ("tabmia.attacks.base", "tabmia.attacks"):
        "label_only_attacks() lists the package's exported attacks when an error names them",
}


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (``tabmia.attacks`` for its __init__)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def layer_of(module: str) -> int:
    """Index in ``LAYERS`` of the first layer with a pattern matching ``module``."""
    for index, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(module, p) for p in patterns):
            return index
    raise LookupError(f"{module} is in no layer of LAYERS (docs/architecture.md)")


def _imported(module: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """The package's modules ``module`` imports, with line numbers (function bodies too)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # "from package import submodule" imports the submodule
            names = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source
                     for a in node.names]
        else:
            continue
        for name in names:
            # the deepest module of the package the name is (or lies in)
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name, node.lineno


def import_graph(package: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """``module -> {imported module: first line}`` over the package's own modules."""
    files = module_files(package)
    known = set(files)
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        edges: dict[str, int] = {}
        for name, line in _imported(module, path, known):
            edges.setdefault(name, line)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, {}):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import of a module from a layer listed after the importer's own."""
    out = []
    for module, edges in sorted(graph.items()):
        for name, line in sorted(edges.items()):
            if layer_of(name) > layer_of(module):
                out.append(f"{module}:{line} imports {name} "
                           f"({LAYERS[layer_of(module)][0]} <- {LAYERS[layer_of(name)][0]})")
    return out


GRAPH = import_graph()


def test_every_module_is_in_a_layer():
    unplaced = [m for m in GRAPH if not any(
        fnmatch.fnmatchcase(m, p) for _, patterns in LAYERS for p in patterns)]
    assert not unplaced, f"place these modules in LAYERS (docs/architecture.md): {unplaced}"


def test_no_import_runs_up_the_layers():
    upward = upward_imports(GRAPH)
    assert not upward, "imports against docs/architecture.md's layers:\n" + "\n".join(upward)


def _matches(module: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(module, p) for p in patterns)


def reached_runners(graph: dict[str, dict[str, int]], start: str) -> list[str]:
    """The runners ``start`` imports, directly or through the modules it imports."""
    seen, stack = {start}, [start]
    while stack:
        for name in graph.get(stack.pop(), {}):
            if name not in seen:
                seen.add(name)
                stack.append(name)
    return sorted(m for m in seen if _matches(m, RUNNERS))


def test_analyses_import_no_runner():
    analyses = [m for m in GRAPH if _matches(m, ANALYSES)]
    assert {"tabmia.persons", "tabmia.slices", "tabmia._result"} <= set(analyses)
    reached = {m: r for m in analyses if (r := reached_runners(GRAPH, m))}
    assert not reached, f"analyses that import a runner (docs/architecture.md): {reached}"
    # and the check sees such an import
    graph = {"tabmia.persons": {"tabmia.report": 1}, "tabmia.report": {"tabmia.audit": 2}}
    assert reached_runners(graph, "tabmia.persons") == ["tabmia.audit"]


def _function_level(path: Path) -> set[int]:
    """Lines of the imports inside a function body of the file at ``path``."""
    lines = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines |= {n.lineno for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return lines


def test_no_import_cycle():
    graph = {m: {n: line for n, line in edges.items() if (m, n) not in LAZY_LOOPS}
             for m, edges in GRAPH.items()}
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle: {' -> '.join(cycle or [])}"


def test_allowed_loops_are_lazy_and_still_there():
    files = module_files()
    for (module, imported), reason in LAZY_LOOPS.items():
        line = GRAPH[module].get(imported)
        assert line is not None, f"{module} no longer imports {imported}: drop it from LAZY_LOOPS"
        assert line in _function_level(files[module]), (
            f"{module}:{line} imports {imported} at import time ({reason})")


def test_the_checks_see_a_violation(tmp_path):
    """The checks fail on a package that breaks each rule (so their passing means something)."""
    pkg = tmp_path / "tabmia"
    (pkg / "attacks").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "metrics.py").write_text("def f():\n    from tabmia.attacks import loss\n")
    (pkg / "attacks" / "__init__.py").write_text("from . import loss\n")
    (pkg / "attacks" / "loss.py").write_text("from tabmia.attacks import other\n")
    (pkg / "attacks" / "other.py").write_text("import tabmia.attacks.loss\n")
    graph = import_graph(pkg)
    assert graph["tabmia.metrics"] == {"tabmia.attacks.loss": 2}
    assert upward_imports(graph) == [
        "tabmia.metrics:2 imports tabmia.attacks.loss (0 foundations <- 5 attacks)"]
    assert find_cycle(graph) == ["tabmia.attacks.loss", "tabmia.attacks.other",
                                 "tabmia.attacks.loss"]
    with pytest.raises(LookupError):
        layer_of("tabmia.unplaced")
