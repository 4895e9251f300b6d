"""``tabmia audit`` of persons (issue 39): ``--group-column`` on files and a built-in data set's
own patients; the verdict, the gate and the outputs count persons; shared persons make the
audit "cannot tell" (exit 3 under a gate); bad person columns get one error line."""

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
    """A forest trained on the records of 300 persons (1 to 5 records each); the
    population holds 600 other persons."""
    d = tmp_path_factory.mktemp("cli-persons")
    rng = np.random.RandomState(0)
    sizes = rng.randint(1, 6, 900)
    person = np.repeat(np.arange(900), sizes)
    X, y = make_classification(n_samples=person.size, n_features=6, flip_y=0.1, random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)]).assign(
        patient=[f"P{p:04d}" for p in person], **{LABEL: y})
    train, pop = frame[person < 300], frame[person >= 300]
    features = [f"f{i}" for i in range(6)]
    model = RandomForestClassifier(n_estimators=30, random_state=0)
    joblib.dump(model.fit(train[features], train[LABEL]), d / "model.joblib")
    train.to_csv(d / "train.csv", index=False)
    pop.to_csv(d / "pop.csv", index=False)
    # a population that shares 20 persons with the training file
    shared = pop.copy()
    shared.loc[shared.index[:40], "patient"] = train["patient"].iloc[:40].to_numpy()
    shared.to_csv(d / "pop_shared.csv", index=False)
    holes = pop.copy()
    holes.loc[holes.index[:3], "patient"] = np.nan
    holes.to_csv(d / "pop_holes.csv", index=False)
    unique = pop.assign(patient=[f"R{i}" for i in range(len(pop))])
    unique_train = train.assign(patient=[f"T{i}" for i in range(len(train))])
    unique.to_csv(d / "pop_unique.csv", index=False)
    unique_train.to_csv(d / "train_unique.csv", index=False)
    return d


def _audit(d: Path, out: Path, *extra: str, train: str = "train.csv", pop: str = "pop.csv") -> int:
    argv = ["audit", "--model-file", str(d / "model.joblib"), "--train", str(d / train),
            "--population", str(d / pop), "--label", LABEL, "--attacks", "loss,confidence",
            "--fpr", "0.05", "--quiet", "--out", str(out), *extra]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main(argv)


def test_group_column_makes_the_audit_count_persons(files, tmp_path, capsys):
    out = tmp_path / "persons"
    code = _audit(files, out, "--group-column", "patient", "--fail-above", "auc=0.99")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads((out / "results.json").read_text())
    assert payload["unit"] == "person"
    assert payload["verdict"][1].startswith("The unit is the person")
    assert " persons" in payload["verdict"][0]
    # the metrics count persons; the record-level ones are kept beside them
    n_member_persons = pd.read_csv(files / "train.csv")["patient"].nunique()
    assert payload["metrics"][0]["n_members"] == n_member_persons
    assert payload["record_metrics"][0]["n_members"] == len(pd.read_csv(files / "train.csv"))
    persons = pd.read_csv(out / "persons.csv.gz")
    records = pd.read_csv(out / "scores.csv.gz")
    assert {"person", "n_records", "band", "p_value"} <= set(persons.columns)
    assert "person" in records.columns and "patient" not in records.columns
    assert payload["person_risk"] and payload["most_exposed"]
    html = (out / "report.html").read_text()
    assert "Person risk" in html and "Most exposed persons" in html


def test_shared_persons_cannot_tell_under_a_gate(files, tmp_path, capsys):
    out = tmp_path / "shared"
    code = _audit(files, out, "--group-column", "patient", "--fail-above", "auc=0.99",
                  pop="pop_shared.csv")
    err = capsys.readouterr().err
    assert code == 3
    payload = json.loads((out / "results.json").read_text())
    assert payload["state"]["state"] == "cannot tell"
    assert payload["gate"]["blocked_by"] == ["shared_persons"]
    assert "persons have records among both" in err


@pytest.mark.parametrize("extra, pop, train, message", [
    (("--group-column", "customer"), "pop.csv", "train.csv", "has no column 'customer'"),
    (("--group-column", "patient"), "pop_holes.csv", "train.csv", "3 of"),
    (("--group-column", "patient"), "pop_unique.csv", "train_unique.csv",
     "every one of the"),
])
def test_bad_person_columns_get_one_error_line(files, tmp_path, capsys, extra, pop, train,
                                               message):
    code = _audit(files, tmp_path / "bad", *extra, pop=pop, train=train)
    err = [line for line in capsys.readouterr().err.splitlines()
           if line.startswith("tabmia: error:")]
    assert code == 2 and len(err) == 1 and message in err[0]


def test_diabetes130_audits_its_patients(tmp_path, capsys):
    home = os.environ.get("TABMIA_DATA")
    if not home or not (Path(home) / "diabetes130").is_dir():
        pytest.skip("diabetes130 is not in the data home")
    out = tmp_path / "d130"
    code = main(["audit", "--dataset", "diabetes130", "--max-records", "3000", "--attacks",
                 "loss", "--fpr", "0.05", "--quiet", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "the audit's unit is the person (patients" in captured.err
    payload = json.loads((out / "results.json").read_text())
    assert payload["unit"] == "person" and "patients" in payload["verdict"][0]
    # --group-column none audits the encounters
    out2 = tmp_path / "rows"
    assert main(["audit", "--dataset", "diabetes130", "--max-records", "3000", "--attacks",
                 "loss", "--fpr", "0.05", "--quiet", "--group-column", "none", "--out",
                 str(out2)]) == 0
    # results.json (schema 2) names the unit of every audit: records here
    assert json.loads((out2 / "results.json").read_text())["unit"] == "record"


def test_too_few_public_persons_for_the_fpr_is_refused_before_training(files, tmp_path, capsys):
    # 600 population persons: 300 public ones, and 1/(n+1) <= 0.001 needs 999
    out = tmp_path / "few"
    code = _audit(files, out, "--group-column", "patient", "--fpr", "0.001",
                  "--attacks", "loss,lira:n_shadow=4", "--recipe", "random_forest")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("tabmia: error: attack 'loss': the attacker's public data will "
                             "hold 300 persons")
    assert "needs at least 999 public persons" in err[0] and "at least 0.00332" in err[0]
    assert not out.exists()


@pytest.fixture(scope="module")
def id_model_files(files, tmp_path_factory):
    """A model that takes the person id as an input (numeric ids), and a population of one
    person."""
    d = tmp_path_factory.mktemp("cli-persons-ids")
    train, pop = pd.read_csv(files / "train.csv"), pd.read_csv(files / "pop.csv")
    for frame in (train, pop):
        frame["pid"] = frame["patient"].str[1:].astype(int)
    features = [f"f{i}" for i in range(6)] + ["pid"]
    model = RandomForestClassifier(n_estimators=20, random_state=0)
    joblib.dump(model.fit(train[features], train[LABEL]), d / "model.joblib")
    train.drop(columns="patient").to_csv(d / "train.csv", index=False)
    pop.drop(columns="patient").to_csv(d / "pop.csv", index=False)
    pop.assign(patient="P9999").to_csv(files / "pop_one.csv", index=False)
    return d


def test_the_header_names_the_person_column(files, tmp_path, capsys):
    """Issue 46, item 9: the header said "persons: persons"; it names the column."""
    out = tmp_path / "header"
    argv = ["audit", "--model-file", str(files / "model.joblib"), "--train",
            str(files / "train.csv"), "--population", str(files / "pop.csv"), "--label", LABEL,
            "--attacks", "loss", "--fpr", "0.05", "--group-column", "patient", "--out", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(argv) == 0
    # the header, its lines joined: they wrap at the terminal's width, which differs
    # between runners (a pytest-xdist worker has none)
    header = " ".join(capsys.readouterr().out.split("\n\n")[0].split())
    assert "persons: persons" not in header
    assert "person ids: column 'patient'" in header


@pytest.mark.parametrize("extra, pop, message", [
    # the label column is no person id, and is said to be the label
    (("--group-column", LABEL), "pop.csv", f"--group-column {LABEL}: {LABEL!r} is the label"),
    # a rule for persons without persons does nothing: refused, not ignored
    (("--person-rule", "stouffer"), "pop.csv", "--person-rule stouffer needs --group-column"),
    # one public person can promise no person-level FPR: said so, not "a larger --fpr (at
    # least 1)"
    (("--group-column", "patient"), "pop_one.csv", "too few"),
])
def test_person_flags_that_cannot_work_get_one_error_line(
        files, id_model_files, tmp_path, capsys, extra, pop, message):
    code = _audit(files, tmp_path / "bad", *extra, pop=pop)
    err = [line for line in capsys.readouterr().err.splitlines()
           if line.startswith("tabmia: error:")]
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert "at least 1)" not in err[0]


def test_a_person_column_the_model_takes_stays_its_input(id_model_files, tmp_path, capsys):
    """Issue 46, item 9: a model trained with the person id among its inputs failed with
    "X is missing columns ['pid']"; the column stays the model's input and names persons."""
    out = tmp_path / "ids"
    code = _audit(id_model_files, out, "--group-column", "pid")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads((out / "results.json").read_text())
    assert payload["unit"] == "person"
    assert "pid" in captured.err  # a note says the model takes it
