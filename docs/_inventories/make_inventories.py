"""Write the intersphinx inventories the docs build reads offline.

CI reaches only PyPI, not the projects' documentation sites, so the site cannot fetch
``objects.inv`` files while it builds. This script writes small ones from the libraries
installed here instead: each public class and function of scikit-learn, numpy and pandas
(and the Python builtins the docstrings name), at the URL each project's documentation
gives it (its documented layout: ``modules/generated/<name>.html`` for scikit-learn,
``reference/generated/<name>.html`` for numpy, ``reference/api/<name>.html`` for pandas).

Run it again after a major release of one of them::

    python docs/_inventories/make_inventories.py
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import zlib
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _role(obj: object) -> str | None:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return None


def _public(module: object) -> Iterable[tuple[str, object]]:
    listed = getattr(module, "__all__", None)
    for name in listed or dir(module):
        if name.startswith("_"):
            continue
        try:  # experimental names raise ImportError until enabled
            obj = getattr(module, name)
        except (AttributeError, ImportError):
            continue
        # without __all__, only what the module defines (not what it imports)
        if listed or getattr(obj, "__module__", "").startswith(module.__name__):  # type: ignore[attr-defined]
            yield name, obj


def write_inventory(path: Path, project: str, version: str,
                    entries: dict[str, tuple[str, str]]) -> None:
    """Write a Sphinx v2 inventory: ``name -> (role, uri)``, all in the ``py`` domain."""
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: {version}\n"
              "# The remainder of this file is compressed using zlib.\n")
    body = "".join(f"{name} py:{role} 1 {uri} -\n"
                   for name, (role, uri) in sorted(entries.items()))
    path.write_bytes(header.encode() + zlib.compress(body.encode(), 9))


def sklearn_entries() -> dict[str, tuple[str, str]]:
    """Every public class and function of scikit-learn's public modules."""
    import sklearn

    out = {}
    # sklearn.__all__ lists most submodules and a few functions; base and utils are not in it
    for sub in [*sklearn.__all__, "base", "utils", "utils.validation"]:
        if not isinstance(getattr(sklearn, sub, None), type(sklearn)) and sub in sklearn.__all__:
            obj = getattr(sklearn, sub, None)
            if callable(obj):  # clone, get_config, ...: documented under sklearn.<name>
                out[f"sklearn.{sub}"] = ("function", f"modules/generated/sklearn.{sub}.html#$")
                continue
        try:
            module = importlib.import_module(f"sklearn.{sub}")
        except ImportError:
            continue
        for name, obj in _public(module):
            role = _role(obj)
            if role and not inspect.ismodule(obj):
                full = f"sklearn.{sub}.{name}"
                out[full] = (role, f"modules/generated/{full}.html#$")
    return out


def numpy_entries() -> dict[str, tuple[str, str]]:
    """numpy's main namespace, and the random module's generators."""
    import numpy as np

    out = {}
    for name, obj in _public(np):
        role = _role(obj)
        if role and not inspect.ismodule(obj):
            out[f"numpy.{name}"] = (role, f"reference/generated/numpy.{name}.html#$")
    out["numpy.random.Generator"] = ("class", "reference/random/generator.html#$")
    out["numpy.random.RandomState"] = ("class", "reference/random/legacy.html#$")
    out["numpy.random.SeedSequence"] = (
        "class", "reference/random/bit_generators/generated/numpy.random.SeedSequence.html#$")
    out["numpy.random.default_rng"] = ("function", "reference/random/generator.html#$")
    return out


def pandas_entries() -> dict[str, tuple[str, str]]:
    """pandas' main namespace."""
    import pandas as pd

    out = {}
    for name, obj in _public(pd):
        role = _role(obj)
        if role and not inspect.ismodule(obj):
            out[f"pandas.{name}"] = (role, f"reference/api/pandas.{name}.html#$")
    return out


def python_entries() -> dict[str, tuple[str, str]]:
    """Builtin types, functions and exceptions, and the few library classes docstrings name."""
    out = {}
    for name, obj in vars(builtins).items():
        if name.startswith("_"):
            continue
        role = _role(obj)
        if role == "exception":
            out[name] = (role, "library/exceptions.html#$")
        elif role in ("class", "function"):  # builtin types are documented as functions
            out[name] = (role, "library/functions.html#$")
    out["pathlib.Path"] = ("class", "library/pathlib.html#$")
    out["warnings.warn"] = ("function", "library/warnings.html#$")
    out["argparse.ArgumentParser"] = ("class", "library/argparse.html#$")
    return out


def main() -> None:
    """Write the four inventories next to this script."""
    import platform

    import numpy
    import pandas
    import sklearn

    write_inventory(HERE / "sklearn.inv", "scikit-learn", sklearn.__version__, sklearn_entries())
    write_inventory(HERE / "numpy.inv", "NumPy", numpy.__version__, numpy_entries())
    write_inventory(HERE / "pandas.inv", "pandas", pandas.__version__, pandas_entries())
    write_inventory(HERE / "python.inv", "Python", platform.python_version(), python_entries())
    for p in sorted(HERE.glob("*.inv")):
        print(f"{p.name}: {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
