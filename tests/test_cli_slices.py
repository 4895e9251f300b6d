"""``tabmia audit --slice-by`` and the ``slice:tpr@`` gate (issue 40): a slice report in
results.json and report.html that changes no overall number, one error line for a bad slice
column, the worst slice gated with the same cannot-tell rules, and the built-in data sets'
default slices."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from tabmia.cli import main

LABEL = "y"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-slices")
    X, y = make_classification(n_samples=3000, n_features=6, flip_y=0.1, random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    rng = np.random.RandomState(0)
    frame["sex"] = rng.choice([0, 1], size=len(frame))  # a model input, coded
    frame["age"] = rng.randint(18, 90, size=len(frame))
    frame["constant"] = 1
    frame[LABEL] = y
    train, pop = frame.iloc[:1000], frame.iloc[1000:]
    features = [f"f{i}" for i in range(6)] + ["age", "sex", "constant"]
    model = RandomForestClassifier(n_estimators=30, min_samples_leaf=2, random_state=0)
    joblib.dump(model.fit(train[features], train[LABEL]), d / "model.joblib")
    train[features + [LABEL]].to_csv(d / "train.csv", index=False)
    pop[features + [LABEL]].to_csv(d / "pop.csv", index=False)
    holes = pop.copy()
    holes["sex"] = holes["sex"].astype(float)
    holes.loc[holes.index[:4], "sex"] = np.nan
    holes[features + [LABEL]].to_csv(d / "pop_holes.csv", index=False)
    return d


def _audit(d: Path, out: Path, *extra: str, pop: str = "pop.csv") -> int:
    argv = ["audit", "--model-file", str(d / "model.joblib"), "--train", str(d / "train.csv"),
            "--population", str(d / pop), "--label", LABEL, "--attacks", "loss,confidence",
            "--fpr", "0.05", "--quiet", "--out", str(out), *extra]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main(argv)


def test_slices_are_reported_and_change_no_overall_number(files, tmp_path, capsys):
    assert _audit(files, tmp_path / "plain") == 0
    assert _audit(files, tmp_path / "sliced", "--slice-by", "sex,age,age*sex") == 0
    err = capsys.readouterr().err
    assert "slices: " in err  # the age bands are said
    plain = json.loads((tmp_path / "plain" / "results.json").read_text())
    sliced = json.loads((tmp_path / "sliced" / "results.json").read_text())
    drop = ("fit_seconds", "score_seconds")
    strip = [{k: v for k, v in m.items() if k not in drop} for m in plain["metrics"]]
    assert strip == [{k: v for k, v in m.items() if k not in drop} for m in sliced["metrics"]]
    a = pd.read_csv(tmp_path / "plain" / "scores.csv.gz")
    b = pd.read_csv(tmp_path / "sliced" / "scores.csv.gz")
    assert np.array_equal(a["score"], b["score"]) and "slice:sex" in b.columns
    assert "slices" in sliced and "slices" not in plain
    html = (tmp_path / "sliced" / "report.html").read_text()
    assert "Which groups leak more (slices)" in html


@pytest.mark.parametrize("extra, pop, message", [
    (("--slice-by", "ethnicity"), "pop.csv", "no column 'ethnicity'"),
    (("--slice-by", "constant"), "pop.csv", "constant"),
    (("--slice-by", "sex"), "pop_holes.csv", "sex"),
])
def test_bad_slice_columns_get_one_error_line(files, tmp_path, capsys, extra, pop, message):
    code = _audit(files, tmp_path / "bad", *extra, pop=pop)
    err = [line for line in capsys.readouterr().err.splitlines()
           if line.startswith("tabmia: error:")]
    assert code == 2 and len(err) == 1 and message in err[0]


def test_the_worst_slice_gate(files, tmp_path, capsys):
    # a slice limit needs slices: refused before anything trains
    assert _audit(files, tmp_path / "none", "--fail-above", "slice:tpr@0.05=0.5") == 2
    assert "add --slice-by" in capsys.readouterr().err
    code = _audit(files, tmp_path / "gated", "--slice-by", "sex", "--fail-above",
                  "slice:tpr@0.05=0.99")
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith("tabmia: gate: ")]
    payload = json.loads((tmp_path / "gated" / "results.json").read_text())
    check = payload["gate"]["checks"][0]
    assert check["metric"] == "slice:tpr@0.05"
    # the verdict's state rules first (a tie-blind forest is cannot tell), then the limit
    expected = 3 if payload["gate"]["blocked_by"] else {"below": 0, "above": 1,
                                                        "unresolved": 3}[check["outcome"]]
    assert code == expected
    assert lines[0].startswith("tabmia: gate: slice:tpr@0.05 <= 0.99 (attacker sees probab")


def test_adult_is_sliced_by_sex_and_race_by_default(tmp_path, capsys):
    home = os.environ.get("TABMIA_DATA")
    if not home or not (Path(home) / "adult").is_dir():
        pytest.skip("adult is not in the data home")
    out = tmp_path / "adult"
    assert main(["audit", "--dataset", "adult", "--max-records", "3000", "--attacks", "loss",
                 "--fpr", "0.05", "--quiet", "--out", str(out)]) == 0
    capsys.readouterr()
    payload = json.loads((out / "results.json").read_text())
    slicings = {row["slicing"] for row in payload["slices"]["table"]}
    assert slicings == {"slice:sex", "slice:race"}


# ---------------------------------------------------------------- issue 46, item 9
def test_slicing_by_the_label_slices_by_class(files, tmp_path, capsys):
    """`--slice-by income` where income is the label answered "has no column": the label is
    not among the features, but its classes are slices like any other (the attacker knows
    each candidate's label too)."""
    assert _audit(files, tmp_path / "by-label", "--slice-by", LABEL) == 0
    err = capsys.readouterr().err
    assert f"'{LABEL}' is the label" in err and "tabmia: error" not in err
    payload = json.loads((tmp_path / "by-label" / "results.json").read_text())
    per = [r for r in payload["slices"]["table"] if r["slice"] != "overall"
           and r["attack"] == "loss"]
    assert {r["slicing"] for r in per} == {f"slice:{LABEL}"} and len(per) == 2
    # each slice holds the members of one class only
    y_train = pd.read_csv(files / "train.csv")[LABEL]
    assert sorted(r["n_members"] for r in per) == sorted(y_train.value_counts().tolist())


def test_help_lists_the_slice_gate(capsys):
    try:
        main(["audit", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert "slice:tpr@<fpr>=<limit>" in text


def test_slices_of_persons_count_persons(files, tmp_path, capsys):
    """Slice lines and the gate said "public records" where the counts were persons."""
    d = tmp_path / "persons"
    d.mkdir()
    for offset, name in enumerate(("train.csv", "pop.csv")):
        frame = pd.read_csv(files / name)
        frame["pid"] = 100_000 * offset + np.arange(len(frame)) // 2  # persons of two records
        frame.to_csv(d / name, index=False)
    joblib.dump(joblib.load(files / "model.joblib"), d / "model.joblib")
    code = _audit(d, tmp_path / "out", "--group-column", "pid", "--slice-by", "age",
                  "--fpr", "0.01", "--fail-above", "slice:tpr@0.01=0.99")
    capsys.readouterr()
    payload = json.loads((tmp_path / "out" / "results.json").read_text())
    assert code in (0, 1, 3)
    slices = payload["slices"]
    assert slices["settings"]["unit"] == "person"
    text = " ".join(slices["lines"]) + " ".join(c.get("detail", "") or "" for c in
                                                payload["gate"]["checks"])
    assert "public records" not in text
    assert "public persons" in text
