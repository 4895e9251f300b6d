"""Every script in examples/ runs end to end (they are what new users copy)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))

#: Python's warning format (``path.py:NN: SomeWarning: ...``): the examples say what a
#: warning means as a ``tabmia:`` line, or choose sizes that raise none.
PYTHON_WARNING = re.compile(r"\.py:\d+: \w*Warning:")


#: Examples that read a data set from the data home (the others use embedded data).
NEEDS_DATA_HOME = {"audit_german_credit", "audit_persons_diabetes130"}


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(script, tmp_path):
    if script.stem in NEEDS_DATA_HOME and not os.environ.get("TABMIA_DATA"):
        pytest.skip("needs a data home: ../shared/data is not beside this checkout and "
                    "TABMIA_DATA is not set")
    env = {**os.environ, "PYTHONPATH": str(script.parents[1])}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "PlausibilityWarning" not in proc.stderr  # honest inputs raise no finding
    assert not PYTHON_WARNING.search(proc.stdout + proc.stderr), proc.stderr[-3000:]
    assert str(tmp_path) not in proc.stdout  # the docs publish the output: no local paths
    if script.stem == "privacy_gate_ci":  # a CI log: tabmia lines, no Python warning format
        assert all(line.startswith("tabmia: ") for line in proc.stderr.splitlines()), proc.stderr
        assert "tabmia: gate:" in proc.stdout


def test_examples_exist():
    assert {p.stem for p in EXAMPLES} >= {
        "audit_german_credit", "audit_health_model", "audit_precomputed_probabilities",
        "select_attack_hyperparameters", "privacy_gate_ci"}


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_reads_like_a_gallery_page(script):
    """What the gallery shows: a figure for the thumbnail, a table as an HTML table (a
    DataFrame as a cell's last expression) or a CI log, and only public modules."""
    source = script.read_text()
    tree = ast.parse(source)
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    private = sorted(m for m in imported if m and m.startswith("tabmia")
                     and any(part.startswith("_") for part in m.split(".")))
    assert not private, f"{script.name} imports private modules: {private}"
    assert re.search(r"plot_roc\(|plt\.subplots\(", source), f"{script.name} draws no figure"
    assert "markdown_table" not in source  # a table is a DataFrame (HTML) or a CI log
