"""The base install (``pip install .``, no extras) runs every documented command (issue 46).

A fresh venv per test run would cost minutes of installing; instead each document's
commands run in a subprocess where every module an *extra* of pyproject.toml brings (and
is not a core dependency) is hidden: a ``sys.meta_path`` finder raises ImportError for it,
as on a base install. What is hidden is read from pyproject.toml, so a package moved from
an extra into the core dependencies stops being hidden, and a new extra is hidden as soon
as it is declared (its import name must be in :data:`MODULES`).

The commands are the documents' own, run at fast sizes (one seed, 4 shadow models, 2
reference models, 2,000 records of a built-in data set): README's main command, Getting
started's Python blocks and commands (with a slicing of its own files, which needs
fairlearn), and the built-in credit and health data sets that are sliced by default (with
the data home only: they are read from ../shared/data).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tabmia.cli._slices import DEFAULT_SLICES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: The import name of every package an extra installs. pytest (and its xdist workers) is the test runner itself.
MODULES = {
    "torch": ("torch",),
    "xgboost-cpu": ("xgboost",),
    "xgboost": ("xgboost",),
    "lightgbm": ("lightgbm",),
    "folktables": ("folktables",),
    "openml": ("openml",),
    "pyarrow": ("pyarrow",),
    "dask": ("dask", "distributed"),
    "ray": ("ray",),
    "pyyaml": ("yaml",),
    "fairlearn": ("fairlearn",),
    "diffprivlib": ("diffprivlib",),
    "opacus": ("opacus",),
    "ortools": ("ortools",),
    "mlflow": ("mlflow",),
    "pytest": (),
    "pytest-xdist": (),
    "numpydoc": ("numpydoc",),
}
#: Extras that are tools, not parts of tabmia (the site, the linters).
TOOLING = ("docs", "lint")
#: Never installed by any extra, hidden all the same: a stray import of them is a bug.
ALWAYS_HIDDEN = ("mlflow", "ortools")


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()


def _pyproject() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def hidden_modules() -> list[str]:
    """Modules of the extras that the core dependencies do not bring."""
    project = _pyproject()
    core = {_name(r) for r in project["dependencies"]}
    extra = {
        _name(r)
        for group, reqs in project["optional-dependencies"].items()
        if group not in TOOLING
        for r in reqs
        if not r.startswith("tabmia")
    }
    unknown = sorted(extra - set(MODULES))
    assert not unknown, f"add the import names of {unknown} to MODULES"
    core_modules = {m for name in core for m in MODULES.get(name, ())}
    return sorted({m for name in extra - core for m in MODULES[name]} - core_modules
                  | set(ALWAYS_HIDDEN))


# Runs in the subprocess: hides the modules, keeps the network out, then runs the steps
# (Python blocks in one namespace, CLI commands through tabmia.cli.main) and prints one
# JSON line: per step its exit status and the last line it wrote to stderr.
BOOTSTRAP = r"""
import contextlib, importlib.abc, io, json, socket, sys, traceback
hidden, steps = json.loads(sys.argv[1]), json.loads(sys.argv[2])

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in hidden:
            raise ImportError(f"No module named {name!r} (hidden: not in the base install)")
        return None

sys.meta_path.insert(0, Hide())
for name in [m for m in sys.modules if m.split(".")[0] in hidden]:
    del sys.modules[name]
real_connect = socket.socket.connect
def guarded(self, address, *a, **k):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and not (host.startswith("127.") or host in ("localhost", "::1")
                                      or host.startswith("/")):
        raise RuntimeError(f"tried to reach the network: {address!r}")
    return real_connect(self, address, *a, **k)
socket.socket.connect = guarded

from tabmia.cli import main
namespace, out = {"__name__": "__main__"}, []
for kind, what in steps:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            if kind == "python":
                exec(compile(what, "<document block>", "exec"), namespace)
                code = 0
            else:
                code = main(what)
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        code, err = "traceback", io.StringIO(traceback.format_exc())
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    out.append({"step": what if kind == "cli" else kind, "code": code,
                "last": lines[-1] if lines else ""})
print(json.dumps(out))
"""


def run_steps(steps: list, cwd: Path, data_home: Path | None = None) -> list[dict]:
    import os

    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    env["TABMIA_DATA"] = str(data_home if data_home is not None else cwd / "no-data-home")
    proc = subprocess.run(
        [sys.executable, "-c", BOOTSTRAP, json.dumps(hidden_modules()), json.dumps(steps)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fast(argv: list[str], out: Path) -> list[str]:
    """A documented command at test sizes: one seed, few shadow / reference models."""
    joined = " ".join(argv)
    game = "--model-file" not in argv and "--train" not in argv
    attacks = argv[argv.index("--attacks") + 1] if "--attacks" in argv else None
    extra = ["--quiet", "--out", str(out)]
    if game:
        extra += ["--seeds", "1"]
        if "--dataset" in argv and "breast_cancer" not in joined:
            extra += ["--max-records", "2000"]
    if (attacks is None and game) or (attacks and "lira" in attacks):
        extra += ["--n-shadow", "4"]
    if (attacks is None and game) or (attacks and "rmia" in attacks):
        extra += ["--n-references", "2"]
    return [*argv[1:], *extra]


def commands(page: Path) -> list[list[str]]:
    """The ``tabmia`` commands of a page's bash blocks (continuation lines joined)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", page.read_text(), re.S | re.M)
    out = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("tabmia "):
                out.append(shlex.split(line))
    return out


def _assert_all_ran(results: list[dict]) -> None:
    failed = [r for r in results if r["code"] != 0]
    assert not failed, "\n".join(f"{r['step']}: exit {r['code']}: {r['last']}" for r in failed)


def test_the_extras_are_hidden_and_fairlearn_is_core():
    hidden = hidden_modules()
    for module in ("torch", "xgboost", "lightgbm", "openml", "folktables", "dask", "ray",
                   "diffprivlib", "opacus", "mlflow", "ortools"):
        assert module in hidden
    # per-group rates (fairlearn's MetricFrame) are part of every sliced audit
    assert "fairlearn" in {_name(r) for r in _pyproject()["dependencies"]}


def test_readme_main_command(tmp_path):
    readme = (ROOT / "README.md").read_text()
    first = re.findall(r"```bash\n(.*?)```", readme, re.S)[0].strip()
    command = shlex.split(first.split("&&")[-1].strip().replace(".venv/bin/", ""))
    assert command[:2] == ["tabmia", "audit"]
    probe = "import importlib\ntry:\n    importlib.import_module('torch')\nexcept ImportError:\n" \
            "    pass\nelse:\n    raise SystemExit('torch is not hidden')\n"
    results = run_steps([["python", probe], ["cli", fast(command, tmp_path / "out")]], tmp_path)
    _assert_all_ran(results)
    assert (tmp_path / "out" / "report.html").is_file()


def test_getting_started(tmp_path, shared_data_or_none):
    page = DOCS / "getting_started.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)
    cmds = [c for c in commands(page) if c[:2] == ["tabmia", "audit"]]
    assert len(blocks) >= 3 and len(cmds) >= 2
    own = next(c for c in cmds if "--model-file" in c)
    steps = [["python", b] for b in blocks]
    steps += [["cli", fast(c, tmp_path / f"out{i}")] for i, c in enumerate(cmds)]
    # the same files sliced by a column of theirs (the slices guide's second command), with
    # one attack that trains nothing (so without --recipe)
    at = own.index("--recipe")
    sliced = [*own[:at], *own[at + 2 :]]
    sliced[sliced.index("--attacks") + 1] = "loss_class"
    steps.append(["cli", fast([*sliced, "--slice-by", "mean radius"], tmp_path / "sliced")])
    _assert_all_ran(run_steps(steps, tmp_path, shared_data_or_none))
    payload = json.loads((tmp_path / "sliced" / "results.json").read_text())
    assert payload["slices"]["table"]


def test_built_in_data_sets_sliced_by_default(tmp_path, shared_data):
    """Every data set sliced by default (read from the data home), with the issue's command:
    on the base install the attacks ran, then ImportError (fairlearn), nothing written."""
    steps = [["cli", fast(["tabmia", "audit", "--dataset", name, "--model",
                           "logistic_regression", "--attacks", "loss"], tmp_path / name)]
             for name in DEFAULT_SLICES]
    _assert_all_ran(run_steps(steps, tmp_path, shared_data))
    for name in DEFAULT_SLICES:
        payload = json.loads((tmp_path / name / "results.json").read_text())
        assert {r["slicing"] for r in payload["slices"]["table"]} == {
            f"slice:{c}" for c in DEFAULT_SLICES[name]}


@pytest.fixture
def shared_data_or_none():
    from tests.conftest import SHARED_DATA

    return SHARED_DATA if SHARED_DATA.is_dir() else None
