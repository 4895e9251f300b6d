"""MLflow is optional (issue 50): without it, ``tabmia audit`` runs as before, and
``--model-uri`` / ``--mlflow`` are one ``tabmia: error:`` line naming the extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tabmia.cli import main


@pytest.fixture
def without_mlflow(monkeypatch):
    """An interpreter where ``import mlflow`` fails, as where the extra is not installed."""
    for name in [m for m in sys.modules if m == "mlflow" or m.startswith("mlflow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mlflow", None)


@pytest.mark.parametrize("flags", [["--model-uri", "models:/credit@champion"],
                                   ["--mlflow", "audits"]])
def test_mlflow_flags_without_mlflow_are_one_error_line(without_mlflow, tmp_path, capsys,
                                                        write_audit_files, flags):
    write_audit_files(tmp_path)
    out = tmp_path / "out"
    own = ([] if flags[0] == "--model-uri"
           else ["--model-file", str(tmp_path / "model.joblib")])
    code = main(["audit", *flags, *own, "--train", str(tmp_path / "train.csv"),
                 "--population", str(tmp_path / "pop.csv"), "--label", "diagnosis",
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0] == (f"tabmia: error: {flags[0]} needs MLflow, which is not installed: "
                      "pip install 'tabmia[mlflow]'")
    assert not out.exists()


def test_model_uri_and_model_file_together_are_refused(tmp_path, capsys, write_audit_files):
    pytest.importorskip("mlflow")
    write_audit_files(tmp_path)
    code = main(["audit", "--model-uri", "models:/x/1", "--model-file",
                 str(tmp_path / "model.joblib"), "--train", str(tmp_path / "train.csv"),
                 "--population", str(tmp_path / "pop.csv"), "--label", "diagnosis",
                 "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "tabmia: error: give --model-file or --model-uri, not both")


def test_import_tabmia_does_not_import_mlflow():
    code = "import sys, tabmia, tabmia.cli, tabmia.schema; print('mlflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
