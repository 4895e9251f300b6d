"""``tabmia audit`` on a tree model's file: the Structure section, results.json's
``structure``, structural gate limits and the leaf attack; refused without a tree model."""

from __future__ import annotations

import json

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

from tabmia.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("structure")
    df = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "diagnosis"})
    df = df.iloc[np.random.RandomState(0).permutation(len(df))].reset_index(drop=True)
    train, pop = df.iloc[:250], df.iloc[250:]
    X = train.drop(columns="diagnosis")
    joblib.dump(RandomForestClassifier(n_estimators=30, random_state=0).fit(X, train["diagnosis"]),
                d / "forest.joblib")
    joblib.dump(LogisticRegression(max_iter=5000).fit(X, train["diagnosis"]), d / "linear.joblib")
    train.to_csv(d / "train.csv", index=False)
    pop.to_csv(d / "population.csv", index=False)
    return d


def _args(d, model, out, *extra):
    return ["audit", "--model-file", str(d / model), "--train", str(d / "train.csv"),
            "--population", str(d / "population.csv"), "--label", "diagnosis",
            "--fpr", "0.05", "--out", str(d / out), "--quiet", *extra]


def test_tree_model_file_gets_structure_leaf_attack_and_gate(files, capsys):
    code = main(_args(files, "forest.joblib", "out", "--attacks", "loss,leaf",
                      "--fail-above", "structure:alone=0.9,structure:small=0.01"))
    payload = json.loads((files / "out" / "results.json").read_text())
    structure = payload["structure"]
    assert structure["family"] == "RandomForestClassifier" and structure["n_records"] == 250
    assert 0.0 <= structure["alone"] <= 0.9 < 1.0 and structure["small"] > 0.01
    assert {m["attack"] for m in payload["metrics"]} == {"loss", "leaf"}
    checks = {c["metric"]: c["outcome"] for c in payload["gate"]["checks"]}
    assert checks == {"structure:alone": "below", "structure:small": "above"}
    assert code == 1  # one structural limit exceeded
    html = (files / "out" / "report.html").read_text()
    assert "Structure: what the model file stores" in html and "not a membership test" in html
    assert "## Structure" in (files / "out" / "results.md").read_text()
    assert "structure:small" in capsys.readouterr().err


def test_non_tree_model_has_no_structure_and_refuses_the_leaf_attack(files, capsys):
    assert main(_args(files, "linear.joblib", "lin", "--attacks", "loss")) == 0
    assert json.loads((files / "lin" / "results.json").read_text())["structure"] is None
    assert "Structure:" not in (files / "lin" / "report.html").read_text()
    for extra in (["--attacks", "leaf"], ["--attacks", "loss", "--fail-above", "structure:alone=0.1"]):
        assert main(_args(files, "linear.joblib", "refused", *extra)) == 2
        err = capsys.readouterr().err
        assert "tabmia: error:" in err and "LogisticRegression" in err and "Traceback" not in err


def test_leaf_attack_refused_on_precomputed_probabilities(files, capsys):
    model = joblib.load(files / "forest.joblib")
    import pandas as pd

    for name in ("train", "population"):
        frame = pd.read_csv(files / f"{name}.csv")
        proba = model.predict_proba(frame.drop(columns="diagnosis"))
        pd.DataFrame(proba, columns=[str(c) for c in model.classes_]).to_csv(
            files / f"{name}_proba.csv", index=False)
    assert main(["audit", "--train", str(files / "train.csv"), "--population",
                 str(files / "population.csv"), "--label", "diagnosis", "--attacks", "leaf",
                 "--train-proba", str(files / "train_proba.csv"), "--population-proba",
                 str(files / "population_proba.csv"), "--out", str(files / "p"), "--quiet"]) == 2
    assert "not precomputed probabilities" in capsys.readouterr().err


def test_unknown_structural_finding_is_a_usage_error(files, capsys):
    assert main(_args(files, "forest.joblib", "x", "--fail-above", "structure:lonely=0.1")) == 2
    assert "structure:alone" in capsys.readouterr().err
