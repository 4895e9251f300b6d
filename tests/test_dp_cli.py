"""``tabmia dpaudit``: the happy path and bad inputs (one error line, exit 2, nothing written)."""

from __future__ import annotations

import json

import joblib
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.neighbors import KNeighborsClassifier

from tabmia.cli import main


def test_preset_recipe_on_a_named_data_set(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["dpaudit", "--recipe", "random_forest", "--data", "breast_cancer",
                 "--epsilon", "1", "--canaries", "200", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "epsilon = 1 is violated at 95 % confidence" in printed
    payload = json.loads((out / "results.json").read_text())
    result = payload["result"]
    assert result["violated"] is True and result["epsilon_lower"] > 1.0
    assert result["n_canaries"] == 200 and result["claimed_epsilon"] == 1.0
    assert result["context"]["canaries"] == "outliers"
    assert payload["command"].startswith("tabmia dpaudit --recipe random_forest")
    assert (out / "results.md").read_text().startswith("tabmia dpaudit:")


def test_joblib_recipe_on_a_csv_file(tmp_path, capsys):
    data = load_breast_cancer(as_frame=True).frame
    csv = tmp_path / "cancer.csv"
    data.to_csv(csv, index=False)
    recipe = tmp_path / "knn.joblib"
    joblib.dump(KNeighborsClassifier(1), recipe)
    out = tmp_path / "out"
    code = main(["dpaudit", "--recipe", str(recipe), "--data", str(csv), "--label", "target",
                 "--epsilon", "50", "--guesses", "100,100", "--canary-type", "records",
                 "--delta", "0", "--out", str(out)])
    assert code == 0
    result = json.loads((out / "results.json").read_text())["result"]
    assert (result["k_plus"], result["k_minus"], result["guesses"]) == (100, 100, "given")
    assert result["violated"] is False and result["p_value"] > 0.05
    captured = capsys.readouterr()
    # 200 right guesses of 200 could not refute epsilon = 50: weak evidence reads as weak
    assert "Cannot tell whether epsilon = 50" in captured.out
    assert result["claim"]["state"] == "cannot_tell" and result["claim"]["unit"] == "guesses"
    # loading a joblib recipe runs code: said in one tabmia line, not Python's format
    warned = [line for line in captured.err.splitlines() if line.startswith("tabmia: warning:")]
    assert len(warned) == 1 and "runs any code" in warned[0]


@pytest.mark.parametrize("extra, message", [
    (["--recipe", "nope", "--data", "breast_cancer"], "--recipe nope: neither a recipe name"),
    (["--recipe", "random_forest", "--data", "no_such_set"], "--data no_such_set"),
    (["--recipe", "random_forest", "--data", "missing.csv", "--label", "y"], "no such file"),
    (["--recipe", "random_forest", "--data", "breast_cancer", "--confidence", "1.2"],
     "--confidence must be in (0, 1)"),
    (["--recipe", "random_forest", "--data", "breast_cancer", "--delta", "1"], "--delta"),
    (["--recipe", "random_forest", "--data", "breast_cancer", "--epsilon", "-1"], "--epsilon"),
    (["--recipe", "random_forest", "--data", "breast_cancer", "--canaries", "1"], "--canaries"),
    (["--recipe", "random_forest", "--data", "breast_cancer", "--canaries", "600"],
     "no training records"),
    (["--recipe", "random_forest", "--data", "breast_cancer", "--guesses", "many"], "--guesses"),
    (["--recipe", "random_forest", "--data", "breast_cancer", "--canary-type", "x"],
     "--canary-type"),
    (["--recipe", "random_forest"], "--data"),
])
def test_bad_input_is_one_line_with_status_2(tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    code = main(["dpaudit", *extra, "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tabmia: error:") and message in err[0]
    assert not out.exists()


def test_file_without_label_and_label_not_found(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    pd.DataFrame({"a": range(30), "y": [0, 1] * 15}).to_csv(csv, index=False)
    assert main(["dpaudit", "--recipe", "random_forest", "--data", str(csv),
                 "--out", str(tmp_path / "o")]) == 2
    assert "needs --label" in capsys.readouterr().err
    assert main(["dpaudit", "--recipe", "random_forest", "--data", str(csv), "--label", "z",
                 "--out", str(tmp_path / "o")]) == 2
    assert "label column 'z' not found" in capsys.readouterr().err


def test_recipe_that_fails_to_train_is_reported(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    pd.DataFrame({"a": ["x"] * 40, "y": [0, 1] * 20}).to_csv(csv, index=False)
    recipe = tmp_path / "knn.joblib"
    joblib.dump(KNeighborsClassifier(1), recipe)  # cannot take text features
    code = main(["dpaudit", "--recipe", str(recipe), "--data", str(csv), "--label", "y",
                 "--canaries", "10", "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("tabmia: error:")]
    assert len(errors) == 1 and "could not be trained or queried" in errors[0]
    assert all(line.startswith("tabmia: ") for line in err)
