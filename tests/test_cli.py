"""`tabmia audit`: the built-in game, the user's own model and data, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression

from tabmia.cli import main

OUTPUTS = {
    "report.html", "results.json", "results.md", "scores.csv.gz", "roc.png", "named.csv.gz"
}


def test_built_in_audit_writes_every_file(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["audit", "--out", str(out), "--quiet", "--attacks", "loss,entropy"]) == 0
    assert {p.name for p in out.iterdir()} == OUTPUTS
    payload = json.loads((out / "results.json").read_text())
    assert {m["attack"] for m in payload["metrics"]} == {"loss", "entropy"}
    captured = capsys.readouterr()
    # the terminal gets a summary that fits 100 columns; results.md keeps the full table
    assert re.search(r"^loss +\d+/\d+ +0\.\d{3} \[", captured.out, re.M)
    assert max(map(len, captured.out.splitlines())) <= 100
    assert "| loss |" in (out / "results.md").read_text()
    assert captured.err == "" and "warnings" not in payload["context"]  # an honest game
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "Whom an attacker could name" in html


@pytest.fixture()
def own_model(tmp_path):
    data = load_breast_cancer(as_frame=True)
    df = data.frame.rename(columns={"target": "diagnosis"})
    df = df.iloc[np.random.RandomState(0).permutation(len(df))].reset_index(drop=True)
    train, pop = df.iloc[:300], df.iloc[300:]
    model = RandomForestClassifier(n_estimators=30, random_state=0).fit(
        train.drop(columns="diagnosis"), train["diagnosis"])
    train.to_csv(tmp_path / "train.csv", index=False)
    pop.to_parquet(tmp_path / "population.parquet", index=False)
    joblib.dump(model, tmp_path / "model.joblib")
    return tmp_path, model, train, pop


def test_own_model_file_and_data(own_model, capsys):
    d, _, _, _ = own_model
    code = main(["audit", "--model-file", str(d / "model.joblib"), "--train", str(d / "train.csv"),
                 "--population", str(d / "population.parquet"), "--label", "diagnosis",
                 "--attacks", "loss,confidence", "--fpr", "0.05", "--epsilon", "1",
                 "--out", str(d / "out"), "--quiet"])
    assert code == 0
    # the pickle warning is one tabmia line, not Python's warning with a line of source
    err = capsys.readouterr().err.splitlines()
    assert err == [f"tabmia: warning: loading {d / 'model.joblib'} runs any code the file "
                   "contains (pickle/joblib): only audit files you trust"]
    assert "warnings" not in json.loads((d / "out" / "results.json").read_text())["context"]
    html = (d / "out" / "report.html").read_text()
    assert "Against a differential privacy claim" in html and "masked" in html
    scores = pd.read_csv(d / "out" / "scores.csv.gz")
    assert set(scores["source"]) == {"train", "population"}
    assert (scores["source"] == "train").sum() == 2 * 300


def test_precomputed_probabilities_mode_matches_model_file(own_model):
    d, model, train, pop = own_model
    for name, frame in (("train", train), ("population", pop)):
        proba = model.predict_proba(frame.drop(columns="diagnosis"))
        pd.DataFrame(proba, columns=[str(c) for c in model.classes_]).to_csv(
            d / f"{name}_proba.csv", index=False)
    common = ["--train", str(d / "train.csv"), "--population", str(d / "population.parquet"),
              "--label", "diagnosis", "--attacks", "loss", "--fpr", "0.05", "--quiet"]
    assert main(["audit", *common, "--train-proba", str(d / "train_proba.csv"),
                 "--population-proba", str(d / "population_proba.csv"), "--out", str(d / "a")]) == 0
    assert main(["audit", *common, "--model-file", str(d / "model.joblib"), "--out", str(d / "b")]) == 0
    a = pd.read_csv(d / "a" / "scores.csv.gz")["score"]
    b = pd.read_csv(d / "b" / "scores.csv.gz")["score"]
    assert np.allclose(a, b)


def test_config_file_mirrors_flags(tmp_path):
    cfg = tmp_path / "audit.yaml"
    cfg.write_text("attacks: [loss]\nfpr: 0.05\nseeds: 2\nquiet: true\n"
                   f"out: {tmp_path / 'cfg-out'}\n")
    assert main(["audit", "--config", str(cfg)]) == 0
    payload = json.loads((tmp_path / "cfg-out" / "results.json").read_text())
    assert payload["config"]["seeds"] == 2 and len(payload["metrics"]) == 2
    toml = tmp_path / "audit.toml"
    toml.write_text('[audit]\nattacks = "loss"\nfpr = 0.05\nquiet = true\n'
                    f'out = "{tmp_path / "toml-out"}"\n')
    assert main(["audit", "--config", str(toml)]) == 0


def _bad_cases(d: Path) -> list[tuple[list[str], str]]:
    common = ["--train", str(d / "train.csv"), "--population", str(d / "population.parquet")]
    return [
        (["--dataset", "no_such_data"], "no_such_data"),
        (["--attacks", "loss,telepathy"], "unknown attack 'telepathy'"),
        (["--fpr", "2"], "--fpr must be in (0, 1)"),
        (["--seeds", "0"], "--seeds must be >= 1"),
        (["--fprs", "abc"], "expected comma-separated numbers"),
        (["--model-file", str(d / "missing.joblib"), *common, "--label", "diagnosis"], "no such file"),
        (["--model-file", str(d / "model.joblib"), *common, "--label", "nope"], "label column 'nope' not found"),
        (["--model-file", str(d / "model.joblib"), "--train", str(d / "missing.csv"),
          "--population", str(d / "population.parquet"), "--label", "diagnosis"], "missing.csv: no such file"),
        (["--model-file", str(d / "regressor.joblib"), *common, "--label", "diagnosis"], "no predict_proba"),
        (["--model-file", str(d / "model.joblib"), "--train", str(d / "train.csv"),
          "--population", str(d / "narrow.csv"), "--label", "diagnosis"], "lacks columns"),
        (["--model-file", str(d / "model.joblib"), "--train", str(d / "train.csv"),
          "--population", str(d / "relabelled.csv"), "--label", "diagnosis"], "never saw"),
        (["--train", str(d / "train.csv"), "--population", str(d / "population.parquet"),
          "--label", "diagnosis"], "give --model-file"),
        (["--config", str(d / "bad.yaml")], "unknown keys ['colour']"),
        (["--config", str(d / "nothere.yaml")], "no such file"),
        (["--out", str(d / "a_file")], "is not a folder"),
        (["--fpr", "0.0001", "--max-records", "400"], "raise --fpr"),
    ]


def test_bad_input_one_line_exit_2_nothing_written(own_model, capsys):
    d, _, train, pop = own_model
    joblib.dump(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]), d / "regressor.joblib")
    pop.drop(columns=["mean radius"]).to_csv(d / "narrow.csv", index=False)
    pop.assign(diagnosis=7).to_csv(d / "relabelled.csv", index=False)
    (d / "bad.yaml").write_text("colour: blue\n")
    (d / "a_file").write_text("x")
    for args, message in _bad_cases(d):
        out = d / "never"
        argv = ["audit", *args] + ([] if "--out" in args else ["--out", str(out)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the pickle warning, where a model file is opened
            code = main(argv + ["--quiet"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2, (args, err)
        errors = [line for line in err if line.startswith("tabmia: error:")]
        assert len(errors) == 1 and message in errors[0], (args, err)
        assert not out.exists() or not any(out.iterdir()), args


def test_argparse_errors_are_one_line_with_status_2():
    proc = subprocess.run([sys.executable, "-m", "tabmia.cli", "audit", "--model", "nope"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "invalid choice" in proc.stderr


def test_default_attacks_add_lira_and_rmia_only_where_shadows_can_be_trained(own_model, tmp_path):
    score = {"loss", "loss_class", "confidence", "entropy", "modified_entropy"}
    out = tmp_path / "game"
    assert main(["audit", "--max-records", "240", "--fpr", "0.05", "--out", str(out), "--quiet"]) == 0
    game = {m["attack"] for m in json.loads((out / "results.json").read_text())["metrics"]}
    assert game == score | {"lira", "lira_online", "rmia"}
    d, _, _, _ = own_model  # a model file without --recipe: nothing to train shadows from
    assert main(["audit", "--model-file", str(d / "model.joblib"), "--train",
                 str(d / "train.csv"), "--population", str(d / "population.parquet"),
                 "--label", "diagnosis", "--out", str(d / "own"), "--quiet"]) == 0
    own = {m["attack"] for m in json.loads((d / "own" / "results.json").read_text())["metrics"]}
    assert own == score


def test_default_fpr_falls_back_with_a_note_but_an_asked_fpr_is_refused(tmp_path, capsys):
    # breast cancer with 60 public records: 60 calibration scores cannot promise 1%
    out = tmp_path / "out"
    code = main(["audit", "--attacks", "loss,rmia", "--n-references", "2", "--public-size",
                 "60", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0
    assert ("tabmia: note: rmia: 60 calibration records (the 60 public records, each scored "
            "by the models that did not train on it) cannot promise fpr=0.01; its threshold "
            "aims at fpr=0.017") in err
    rows = {r["attack"]: r for r in json.loads((out / "results.json").read_text())["metrics"]}
    assert rows["rmia"]["fpr_target"] == 0.017 and rows["rmia"]["fpr_requested"] == 0.01
    assert rows["loss"]["fpr_target"] == 0.017
    code = main(["audit", "--attacks", "rmia", "--n-references", "2", "--public-size", "60",
                 "--fpr", "0.01", "--quiet", "--out", str(tmp_path / "asked")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot be promised from 60" in err[0]
    assert not (tmp_path / "asked").exists()
    # and no fallback beyond MAX_FALLBACK_FPR: 10 records would flag one non-member in 11
    code = main(["audit", "--attacks", "loss", "--public-size", "10", "--quiet",
                 "--out", str(tmp_path / "tiny")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "MAX_FALLBACK_FPR" in err[-1] and not (tmp_path / "tiny").exists()
