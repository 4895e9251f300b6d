"""Where decisions live (issue 18): runners read attack tags, never class names.

No tabmia module decides anything by comparing a class name: neither ``x.__name__`` /
``x.__qualname__`` nor a string naming one of tabmia's classes appears in a comparison
(``==``, ``!=``, ``in``, ``not in``) or in ``str.startswith`` / ``endswith``. Capabilities
are asked for instead: an attack's :class:`~tabmia.attacks.MembershipTags`, a model's
``__tabmia_outputs__``, ``isinstance``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tabmia

PACKAGE = Path(tabmia.__file__).resolve().parent
_NAME_ATTRS = {"__name__", "__qualname__"}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _class_names() -> set[str]:
    names = set()
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
    return names


def _names_a_class(node: ast.AST, classes: set[str]) -> bool:
    """``x.__name__`` / ``x.__qualname__``, or a string (or a collection of strings)
    naming one of ``classes``."""
    if isinstance(node, ast.Attribute) and node.attr in _NAME_ATTRS:
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in classes
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_class(e, classes) for e in node.elts)
    return False


def class_name_decisions(source: str, classes: set[str]) -> list[int]:
    """Lines of ``source`` that compare a class name (a module's ``__getattr__``, which
    hands out names of the module lazily, excepted)."""
    tree = ast.parse(source)
    lazy = {id(n) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
            for n in ast.walk(f)}
    lines = []
    for node in ast.walk(tree):
        if id(node) in lazy:
            continue
        if isinstance(node, ast.Compare):
            if any(_names_a_class(n, classes) for n in [node.left, *node.comparators]):
                lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith")
              and (_names_a_class(node.func.value, classes)
                   or any(_names_a_class(a, classes) for a in node.args))):
            lines.append(node.lineno)
    return lines


def test_the_check_finds_what_it_looks_for():
    classes = {"MerlinAttack", "TargetModel"}
    found = class_name_decisions(
        "a = type(x).__name__ == 'Foo'\n"
        "b = type(x).__name__ in ('MerlinAttack', 'MorganAttack')\n"
        "c = klass.__qualname__.startswith('Torch')\n"
        "d = name == 'TargetModel'\n"
        "e = type(x).__name__\n"  # a message, not a decision
        "f = isinstance(x, MerlinAttack)\n"
        "if __name__ == '__main__': pass\n"
        "def __getattr__(name):\n    return name == 'TargetModel'\n", classes)
    assert found == [1, 2, 3, 4]


def test_no_tabmia_module_decides_by_class_name():
    classes = _class_names()
    found = {str(p.relative_to(PACKAGE.parent)): lines for p in _modules()
             if (lines := class_name_decisions(p.read_text(), classes))}
    assert not found, f"class-name comparisons (ask a tag or a capability instead): {found}"


@pytest.mark.parametrize("module", ["experiment", "cli/audit", "cli/_checks",
                                    "_attack_builder", "benchmark", "report/verdict"])
def test_runners_name_no_attack_parameter(module):
    """The runners read tags: no attack's parameter name is written in them."""
    source = (PACKAGE / f"{module}.py").read_text()
    for param in ("shadow_estimator", "reference_estimator", "proxy_estimator",
                  "unresolved_fpr", "pkeep", "calibration"):
        assert f'"{param}"' not in source, f"{module} names the parameter {param!r}"
