"""Every script in examples/ runs end to end (they are what new users copy)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


#: Examples that read a data set from the data home (the others use embedded data).
NEEDS_DATA_HOME = {"audit_german_credit"}


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(script, tmp_path):
    if script.stem in NEEDS_DATA_HOME and not os.environ.get("TABMIA_DATA"):
        pytest.skip("needs a data home: ../shared/data is not beside this checkout and "
                    "TABMIA_DATA is not set")
    env = {**os.environ, "PYTHONPATH": str(script.parents[1])}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| attack |" in proc.stdout  # printed its results table
    assert "PlausibilityWarning" not in proc.stderr  # honest inputs raise no finding
    if script.stem == "privacy_gate_ci":  # a CI log: tabmia lines, no Python warning format
        assert all(line.startswith("tabmia: ") for line in proc.stderr.splitlines()), proc.stderr
        assert "tabmia: gate:" in proc.stdout


def test_examples_exist():
    assert {p.stem for p in EXAMPLES} >= {
        "audit_german_credit", "audit_health_model", "audit_precomputed_probabilities",
        "select_attack_hyperparameters", "privacy_gate_ci"}
