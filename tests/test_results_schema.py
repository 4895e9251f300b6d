"""The evidence file (issue 50): results.json follows a published, versioned JSON Schema.

Every results.json the suite writes is validated (tests/conftest.py wraps the writer);
here a matrix of fast audits (built-in game, persons, label-only, a DP claim under a gate)
checks the evidence sections' contents, a removed required field fails, and an old
(version 1) file stays readable.
"""

from __future__ import annotations

import copy
import json
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from tabmia.cli import main
from tabmia.schema import (
    CHECKLIST,
    SCHEMA_VERSION,
    add_evidence,
    load_schema,
    schema_path,
    validate_results,
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A forest trained on the records of 150 persons (1 to 3 records each); 300 others
    in the population; the forest's predicted labels for both files."""
    d = tmp_path_factory.mktemp("schema")
    rng = np.random.RandomState(0)
    person = np.repeat(np.arange(450), rng.randint(1, 4, 450))
    X, y = make_classification(n_samples=person.size, n_features=5, flip_y=0.2, random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)]).assign(
        person=[f"P{p}" for p in person], y=y)
    train, pop = frame[person < 150], frame[person >= 150]
    features = [f"f{i}" for i in range(5)]
    model = RandomForestClassifier(n_estimators=10, random_state=0)
    model.fit(train[features], train["y"])
    joblib.dump(model, d / "model.joblib")
    train.to_csv(d / "train.csv", index=False)
    pop.to_csv(d / "pop.csv", index=False)
    pd.DataFrame({"y": model.predict(train[features])}).to_csv(d / "train_pred.csv", index=False)
    pd.DataFrame({"y": model.predict(pop[features])}).to_csv(d / "pop_pred.csv", index=False)
    return d


def _own(d, *extra):
    return ["audit", "--train", str(d / "train.csv"), "--population", str(d / "pop.csv"),
            "--label", "y", "--quiet", *extra]


MATRIX = {
    "built-in game": lambda d: ["audit", "--attacks", "loss", "--max-records", "200",
                                "--quiet"],
    "persons, a DP claim and a gate": lambda d: _own(
        d, "--model-file", str(d / "model.joblib"), "--group-column", "person",
        "--attacks", "loss,confidence", "--epsilon", "2", "--fail-above", "auc=0.99"),
    "label-only": lambda d: _own(d, "--train-pred", str(d / "train_pred.csv"),
                                 "--population-pred", str(d / "pop_pred.csv")),
}


@pytest.mark.parametrize("case", list(MATRIX))
def test_every_audit_writes_a_valid_evidence_file(files, tmp_path, case):
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a joblib file runs code; findings are said
        code = main([*MATRIX[case](files), "--out", str(out)])
    assert code in (0, 1, 3)
    payload = json.loads((out / "results.json").read_text())
    assert validate_results(payload) == SCHEMA_VERSION == payload["schema_version"]
    coverage = {c["test"]: c for c in payload["coverage"]}
    assert list(coverage) == list(CHECKLIST)
    assert coverage["membership_per_record"]["status"] == "run"
    assert coverage["attribute_inference"]["status"] == "not run"
    persons = case.startswith("persons")
    assert payload["unit"] == ("person" if persons else "record")
    assert coverage["membership_per_person"]["status"] == ("run" if persons else "not run")
    assert coverage["dp_claim"]["status"] == ("run" if persons else "not run")
    sees = "labels" if case == "label-only" else "probabilities"
    assert {a["sees"] for a in payload["attacker"]["attacks"]} == {sees}
    # a tree model's file also gives a Structure section: the evidence's strongest view
    assert payload["attacker"]["sees"] == ("white-box" if payload.get("structure") else sees)
    # every attack's own-threshold TPR, with its unit, interval and both FPRs
    own = [r for r in payload["rates"] if r["measure"] == "tpr_at_own_threshold"]
    metrics = payload["metrics"] + payload.get("record_metrics", [])
    assert len(own) == len(metrics)
    for rate in own:
        row = next(m for m in metrics if m["attack"] == rate["attack"] and
                   m["seed"] == rate["seed"] and m["tp"] == rate["count"])
        assert rate["value"] == row["tpr"] and rate["fpr_promised"] == row["fpr_target"]
        assert rate["interval"]["low"] <= rate["value"] <= rate["interval"]["high"]
        assert rate["fpr_delivered"]["count"] == row["fp"]
        assert rate["oracle"] is False
    if persons:  # the person-level rates, and the records' beside them
        assert {r["unit"] for r in payload["rates"]} == {"record", "person"}


def _valid_payload(files, tmp_path):
    out = tmp_path / "one"
    assert main(["audit", "--attacks", "loss", "--max-records", "200", "--quiet",
                 "--out", str(out)]) == 0
    return json.loads((out / "results.json").read_text())


def test_a_removed_required_field_fails(files, tmp_path):
    payload = _valid_payload(files, tmp_path)
    for path in (["coverage"], ["attacker", "public_data"], ["rates", 0, "interval"],
                 ["rates", 0, "fpr_delivered"], ["coverage", 0, "reason"], ["schema_version"]):
        broken = copy.deepcopy(payload)
        holder = broken
        for key in path[:-1]:
            holder = holder[key]
        del holder[path[-1]]
        with pytest.raises(ValueError, match="results.json"):
            validate_results(broken)
    broken = copy.deepcopy(payload)
    broken["rates"][0]["unit"] = "household"  # a unit the schema does not define
    with pytest.raises(ValueError, match="rates/0/unit"):
        validate_results(broken)


def test_old_files_stay_readable_and_a_newer_one_is_named(files, tmp_path):
    payload = _valid_payload(files, tmp_path)
    old = {k: v for k, v in payload.items()
           if k not in ("schema_version", "unit", "attacker", "rates", "coverage")}
    assert validate_results(old) == 1  # what tabmia wrote before the version was recorded
    assert schema_path(1).is_file() and load_schema(1)["title"].endswith("version 1")
    with pytest.raises(ValueError, match="newer tabmia"):
        validate_results({**payload, "schema_version": 99})


def test_coverage_reads_other_analyses_when_present(files, tmp_path):
    payload = _valid_payload(files, tmp_path)
    base = {k: v for k, v in payload.items()
            if k not in ("schema_version", "attacker", "rates", "coverage")}
    full = add_evidence({**base, "reconstruction": {"records": 3}, "named": {"fdr": 0.1},
                         "structure": {"leaves": 1}})
    full = json.loads(json.dumps(full, default=str))
    assert validate_results(full) == 2
    coverage = {c["test"]: c for c in full["coverage"]}
    assert coverage["reconstruction"]["status"] == "run"
    assert coverage["reconstruction"]["where"] == "reconstruction"
    assert full["attacker"]["sees"] == "white-box"  # the structure was read
    assert {r["attacker_sees"] for r in full["rates"]} == {"probabilities"}
