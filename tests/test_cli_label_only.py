"""`tabmia audit` on a label-only model: predicted labels, a predict-only model file,
--label-only; every wrong input is one error line and exit status 2."""

from __future__ import annotations

import json

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from tabmia.cli import main

LABEL = "diagnosis"


@pytest.fixture(scope="module")
def files(tmp_path_factory, write_audit_files):
    d = tmp_path_factory.mktemp("cli-label-only")
    train, pop = write_audit_files(d)
    X_tr, X_pop = train.drop(columns=LABEL), pop.drop(columns=LABEL)
    svc = make_pipeline(StandardScaler(), LinearSVC(C=10.0, max_iter=20000))
    joblib.dump(svc.fit(X_tr, train[LABEL]), d / "svc.joblib")  # predict only
    forest = joblib.load(d / "model.joblib")
    names = np.array(["malignant", "benign"])
    for name, X in (("train", X_tr), ("pop", X_pop)):
        pred = forest.predict(X)
        pd.DataFrame({"prediction": pred}).to_csv(d / f"{name}_pred.csv", index=False)
        pd.DataFrame(np.eye(2)[pred], columns=["0", "1"]).to_csv(d / f"{name}_onehot.csv",
                                                                 index=False)
        # text labels that no record has (the label column holds 0 / 1): refused
        pd.Series(names[pred]).to_csv(d / f"{name}_words.csv", index=False, header=False)
        pd.Series(names[pred], name="p").to_csv(d / f"{name}_words_hdr.csv", index=False)
    pd.Series(forest.predict(X_pop)).to_csv(d / "pop_pred_nohdr.csv", index=False,
                                             header=False)
    pd.DataFrame({"a": forest.predict(X_pop), "b": 0}).to_csv(d / "two_cols.csv", index=False)
    pd.DataFrame({"prediction": forest.predict(X_pop)[:-5]}).to_csv(d / "short.csv", index=False)
    holes = pd.DataFrame({"prediction": forest.predict(X_pop).astype(float)})
    holes.iloc[[3, 7], 0] = np.nan
    holes.to_csv(d / "holes.csv", index=False)
    return d


def _own(d, *extra):
    return ["audit", "--train", str(d / "train.csv"), "--population", str(d / "pop.csv"),
            "--label", LABEL, "--fpr", "0.05", "--quiet", *extra]


def _results(out):
    return json.loads((out / "results.json").read_text())


def test_predicted_labels_run_the_gap_attack(files, tmp_path, capsys):
    for pop in ("pop_pred.csv", "pop_pred_nohdr.csv"):  # with a header or without
        out = tmp_path / pop
        code = main(_own(files, "--train-pred", str(files / "train_pred.csv"),
                         "--population-pred", str(files / pop), "--out", str(out)))
        assert code == 0, capsys.readouterr().err
        res = _results(out)
        assert [m["attack"] for m in res["metrics"]] == ["gap"]
        assert res["context"]["model"] == "precomputed predicted labels"
        assert res["context"]["outputs"] == "labels only (--train-pred / --population-pred)"
        # the gap attack queries each public record and candidate once
        m = res["metrics"][0]
        assert m["n_queries"] == res["context"]["attacker public records"] + m["n_members"] \
            + m["n_nonmembers"]
    err = capsys.readouterr().err
    assert "one-hot" not in err  # a declared label-only model is no plausibility finding


def test_a_predict_only_model_file_runs_the_label_only_attacks(files, tmp_path, capsys):
    out = tmp_path / "svc"
    code = main(_own(files, "--model-file", str(files / "svc.joblib"), "--out", str(out)))
    assert code == 0, capsys.readouterr().err
    res = _results(out)
    rows = {m["attack"]: m for m in res["metrics"]}
    assert list(rows) == ["gap", "noise_robustness", "boundary_distance"]
    assert res["context"]["outputs"] == "labels only (Pipeline has predict but no predict_proba)"
    n = res["context"]["attacker public records"] + rows["gap"]["n_members"] \
        + rows["gap"]["n_nonmembers"]
    assert rows["noise_robustness"]["n_queries"] == n * 101  # each record and 100 copies
    assert n < rows["boundary_distance"]["n_queries"] <= n * (1 + 16 * (8 + 6))


def test_label_only_declared_for_a_model_or_its_one_hot_probabilities(files, tmp_path, capsys):
    out = tmp_path / "declared"
    code = main(_own(files, "--model-file", str(files / "model.joblib"), "--label-only",
                     "--recipe", "random_forest", "--attacks",
                     "gap,noise_robustness_calibrated", "--n-shadow", "4",
                     "--out", str(out)))
    assert code == 0, capsys.readouterr().err
    res = _results(out)
    assert res["context"]["outputs"] == "labels only (--label-only)"
    assert [m["attack"] for m in res["metrics"]] == ["gap", "noise_robustness_calibrated"]
    out = tmp_path / "onehot"
    code = main(_own(files, "--train-proba", str(files / "train_onehot.csv"),
                     "--population-proba", str(files / "pop_onehot.csv"), "--label-only",
                     "--out", str(out)))
    assert code == 0
    assert [m["attack"] for m in _results(out)["metrics"]] == ["gap"]
    assert "one-hot" not in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--train-pred", "train_pred.csv"], "--train-pred and --population-pred go together"),
    (["--train-pred", "train_pred.csv", "--population-pred", "pop_pred.csv",
      "--model-file", "svc.joblib"], "give one of --model-file, the --*-proba files or the "
     "--*-pred files, not several"),
    (["--train-pred", "train_pred.csv", "--population-pred", "two_cols.csv"],
     "two_cols.csv: 2 columns; give one column of predicted labels"),
    (["--train-pred", "train_pred.csv", "--population-pred", "short.csv"],
     "short.csv: 264 rows for 269 records"),
    (["--train-pred", "train_pred.csv", "--population-pred", "holes.csv"],
     "holes.csv: 2 empty predicted label(s) (rows [3, 7])"),
    (["--train-pred", "train_pred.csv", "--population-pred", "pop_pred.csv", "--attacks",
      "loss,gap"], "--attacks loss need the model's probabilities, but it answers with labels "
     "only (--train-pred / --population-pred); attacks that work from labels: gap (the "
     "others query perturbed records: they need --model-file)"),
    (["--train-pred", "train_pred.csv", "--population-pred", "pop_pred.csv", "--attacks",
      "noise_robustness"], "--attacks noise_robustness query perturbed records: they need "
     "--model-file, not precomputed predicted labels"),
    (["--model-file", "svc.joblib", "--recipe", "logistic_regression", "--attacks", "lira"],
     "--attacks lira need the model's probabilities, but it answers with labels only "
     "(Pipeline has predict but no predict_proba); attacks that work from labels: gap, "
     "noise_robustness, noise_robustness_calibrated, boundary_distance"),
    (["--train-pred", "train_words.csv", "--population-pred", "pop_words.csv"],
     "train_words.csv: 299 rows for 300 records (without a header line, its first line "
     "'malignant' must be a label of the --label column)"),
    (["--train-pred", "train_words_hdr.csv", "--population-pred", "pop_words_hdr.csv"],
     "--*-pred: the predicted labels ['malignant', 'benign'] are none of the --label "
     "column's labels [0, 1]"),
])
def test_bad_label_only_inputs_are_one_error_line(files, tmp_path, capsys, extra, message):
    args = [str(files / a) if a.endswith((".csv", ".joblib")) else a for a in extra]
    out = tmp_path / "o"
    assert main(_own(files, *args, "--out", str(out))) == 2
    err = [line for line in capsys.readouterr().err.splitlines()
           if not line.startswith("tabmia: warning: loading")]
    assert len(err) == 1 and err[0].startswith("tabmia: error: "), err
    assert message in err[0]
    assert not out.exists()


def test_label_only_belongs_to_an_audit_of_your_own_model(tmp_path, capsys):
    assert main(["audit", "--label-only", "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert "--label-only applies to an audit of your own model" in capsys.readouterr().err
