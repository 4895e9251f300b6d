"""The privacy gate: ``tabmia audit --fail-above`` and ``tabmia.testing.assert_membership_risk``.

Three outcomes, each shown end to end: a model that leaks (an overfit forest on noisy
data) fails the gate (exit 1), a model that never saw the audited records passes it
(exit 0), and an audit of 20 records cannot tell (exit 3, or 0 with --unresolved pass).
"""

from __future__ import annotations

import json
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from tabmia import metrics as M
from tabmia.cli import main
from tabmia.experiment import ExperimentResult
from tabmia.gate import (
    EXIT_ABOVE, EXIT_BELOW, EXIT_UNRESOLVED, RiskLimit, evaluate_gate, parse_limits,
)
from tabmia.testing import assert_membership_risk


def _result(rows: list[dict]) -> ExperimentResult:
    """An ExperimentResult whose metrics hold the given own-threshold counts per attack
    (and repeat), with Clopper-Pearson intervals and a stand-in AUC interval."""
    out = []
    for row in rows:
        tp, n_pos, fp, n_neg = row["tp"], row["n_members"], row["fp"], row["n_nonmembers"]
        tlo, thi = M.clopper_pearson(tp, n_pos)
        flo, fhi = M.clopper_pearson(fp, n_neg)
        out.append({"repeat": row.get("repeat", 0), "seed": 0, "attack": row["attack"],
                    "tp": tp, "n_members": n_pos, "fp": fp, "n_nonmembers": n_neg,
                    "tpr": tp / n_pos, "tpr_low": tlo, "tpr_high": thi, "fpr": fp / n_neg,
                    "fpr_low": flo, "fpr_high": fhi, "fpr_target": row.get("fpr_target", 0.01),
                    "fpr_requested": row.get("fpr_requested", 0.01),
                    "auc": row.get("auc", 0.5), "auc_low": row.get("auc_low", 0.45),
                    "auc_high": row.get("auc_high", 0.55), "delta": 0.0})
    return ExperimentResult(scores=pd.DataFrame(), metrics=pd.DataFrame(out))


def _check(result, text, **kw):
    gate = evaluate_gate(result, text, **kw)
    assert len(gate.checks) == 1
    return gate, gate.checks[0]


# ------------------------------------------------------------------ parsing
def test_limits_parse_and_refuse_what_they_cannot_mean():
    limits = parse_limits(["tpr@0.01=0.05,auc=0.6", "epsilon=4"])
    assert [str(lim) for lim in limits] == ["tpr@0.01=0.05", "auc=0.6", "epsilon=4"]
    assert limits[0] == RiskLimit("tpr", 0.05, 0.01) and limits[0].name == "tpr@0.01"
    for bad, message in [("tpr@0.01", "METRIC=LIMIT"), ("tpr@x=0.1", "FPR in 'tpr@x'"),
                         ("tpr@1.5=0.1", "FPR must be in"), ("tpr@0.01=1.2", "TPR limit"),
                         ("auc=high", "not a number"), ("precision=0.5", "unknown metric"),
                         ("epsilon=-1", "epsilon limit"), ("auc=0.6,auc=0.7", "limited twice")]:
        with pytest.raises(ValueError, match=message):
            parse_limits(bad)


# ------------------------------------------------------------- the decisions
def test_tpr_limit_above_below_unresolved_and_the_deciding_attack():
    # 60 of 300 flagged: TPR 0.2 [0.156, 0.249]
    leak = _result([{"attack": "loss", "tp": 3, "n_members": 300, "fp": 2, "n_nonmembers": 300},
                    {"attack": "lira", "tp": 60, "n_members": 300, "fp": 3, "n_nonmembers": 300}])
    gate, check = _check(leak, "tpr@0.01=0.1")
    assert (check.outcome, check.attack, gate.exit_status) == ("above", "lira", EXIT_ABOVE)
    assert check.low > 0.1 and "lira at its own threshold aimed at FPR 0.01" in check.reason
    assert "60 of 300 training records flagged, 3 of 300 non-members" in check.reason
    gate, check = _check(leak, "tpr@0.01=0.3")  # every upper bound under 0.3
    assert (check.outcome, check.attack, gate.exit_status) == ("below", "lira", EXIT_BELOW)
    gate, check = _check(leak, "tpr@0.01=0.2")  # lira's interval contains 0.2
    assert (check.outcome, gate.exit_status) == ("unresolved", EXIT_UNRESOLVED)
    assert "contains 0.2: 300 training records cannot tell" in check.reason
    assert evaluate_gate(leak, "tpr@0.01=0.2", unresolved="pass").exit_status == EXIT_BELOW
    assert {a["attack"]: a["outcome"] for a in check.attacks} == {"loss": "below",
                                                                  "lira": "unresolved"}


def test_tpr_limit_needs_thresholds_that_aimed_at_its_fpr():
    # the attack could only aim at 1.4% (too few calibration records for 1%): flagging
    # many members there does not show TPR above the limit at 1%, but flagging few does
    # show it below (a 1% threshold would flag a subset)
    loose_many = _result([{"attack": "lira", "tp": 60, "n_members": 300, "fp": 3,
                           "n_nonmembers": 300, "fpr_target": 0.014}])
    _, check = _check(loose_many, "tpr@0.01=0.1")
    assert check.outcome == "unresolved"
    assert "aimed at FPR 0.014, not 0.01" in check.reason and "more public records" in check.reason
    loose_few = _result([{"attack": "lira", "tp": 1, "n_members": 300, "fp": 3,
                          "n_nonmembers": 300, "fpr_target": 0.014}])
    assert _check(loose_few, "tpr@0.01=0.1")[1].outcome == "below"
    # a threshold chosen for 1% whose discrete promise is 0.7% is the attacker's at 1%
    discrete = _result([{"attack": "lira", "tp": 1, "n_members": 300, "fp": 1,
                         "n_nonmembers": 300, "fpr_target": 0.007, "fpr_requested": 0.01}])
    assert _check(discrete, "tpr@0.01=0.1")[1].outcome == "below"
    # a stricter threshold shows above, not below
    strict = _result([{"attack": "lira", "tp": 60, "n_members": 300, "fp": 0,
                       "n_nonmembers": 300, "fpr_target": 0.001, "fpr_requested": 0.001}])
    assert _check(strict, "tpr@0.01=0.1")[1].outcome == "above"
    _, check = _check(strict, "tpr@0.01=0.3")
    assert check.outcome == "unresolved" and "under 0.3 at a stricter threshold" in check.reason
    # a threshold that broke its promise (30 of 300 non-members at 1%) shows nothing above
    broken = _result([{"attack": "loss", "tp": 200, "n_members": 300, "fp": 30,
                       "n_nonmembers": 300}])
    _, check = _check(broken, "tpr@0.01=0.1")
    assert check.outcome == "unresolved" and "more non-members than FPR 0.01 allows" in check.reason


def test_auc_limit_over_seeds():
    two = _result([{"attack": "loss", "repeat": r, "tp": 0, "n_members": 100, "fp": 0,
                    "n_nonmembers": 100, "auc": a, "auc_low": a - 0.05, "auc_high": a + 0.05}
                   for r, a in ((0, 0.70), (1, 0.72))])
    _, check = _check(two, "auc=0.6")
    assert check.outcome == "above" and check.low == pytest.approx(0.65)
    assert "mean over 2 seeds" in check.reason
    assert _check(two, "auc=0.8")[1].outcome == "below"
    # one seed's interval contains the limit: not every seed shows it above
    assert _check(two, "auc=0.66")[1].outcome == "unresolved"


def test_epsilon_limit_matches_the_dp_check():
    result = _result([{"attack": "lira", "tp": 150, "n_members": 300, "fp": 3,
                       "n_nonmembers": 300}])
    eps = M.empirical_epsilon(150, 300, 3, 300)
    _, above = _check(result, f"epsilon={eps['epsilon_lower'] - 0.1}")
    assert above.outcome == "above" and above.low == pytest.approx(eps["epsilon_lower"])
    # the same question as the DP table's "no"
    assert M.dp_consistency(150, 300, 3, 300, eps["epsilon_lower"] - 0.1)["verdict"] == "no"
    assert "cannot have produced them" in above.reason
    # the most favourable reading of the rates (TPR high, FPR low) bounds what is shown
    _, below = _check(result, "epsilon=10")
    assert below.outcome == "below" and below.high <= 10
    assert "An audit shows no DP guarantee" in below.reason
    # nothing flagged among few non-members: FPR may be 0, any ε is possible
    none = _result([{"attack": "lira", "tp": 5, "n_members": 300, "fp": 0, "n_nonmembers": 50}])
    _, open_ = _check(none, "epsilon=10")
    assert open_.outcome == "unresolved" and open_.high == np.inf
    assert json.dumps(open_.to_dict())  # inf goes into results.json as text


# ------------------------------------------------------------ from Python
def test_assert_membership_risk_in_a_test_suite():
    leak = _result([{"attack": "lira", "tp": 60, "n_members": 300, "fp": 3, "n_nonmembers": 300,
                     "auc": 0.8, "auc_low": 0.75, "auc_high": 0.85}])
    with pytest.raises(AssertionError, match=r"(?s)above the limit:\n  tpr@0.01 <= 0.1 "
                                             r"\(attacker sees probabilities\): above: "
                                             r"lira.*\n  auc <= 0.9 .*: below"):
        assert_membership_risk(leak, tpr_at_fpr={0.01: 0.1}, auc=0.9)
    with pytest.raises(AssertionError, match=r"cannot tell .*\(unresolved='pass' lets it pass\):\n  tpr@0.01 <= 0.2 \(attacker sees probabilities\): unresolved"):
        assert_membership_risk(leak, tpr_at_fpr=(0.01, 0.2))
    gate = assert_membership_risk(leak, tpr_at_fpr=(0.01, 0.2), unresolved="pass")
    assert gate.outcome == "unresolved" and gate.passed
    assert assert_membership_risk(leak, epsilon=20, auc=0.9).outcome == "below"
    with pytest.raises(ValueError, match="no limit"):
        assert_membership_risk(leak)


# --------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def audit_files(tmp_path_factory):
    """A leaking forest (trained on the 300 records of train.csv), a forest that never saw
    the audited records, and the population both are audited against."""
    folder = tmp_path_factory.mktemp("gate")
    X, y = make_classification(n_samples=2000, n_features=8, n_informative=4, flip_y=0.3,
                               random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)]).assign(label=y)
    features = frame.drop(columns="label")
    leaky = RandomForestClassifier(n_estimators=50, random_state=0)
    leaky.fit(features.iloc[:300], y[:300])
    unseen = RandomForestClassifier(n_estimators=50, random_state=0)
    unseen.fit(features.iloc[1000:1500], y[1000:1500])
    joblib.dump(leaky, folder / "leaky.joblib")
    joblib.dump(unseen, folder / "unseen.joblib")
    frame.iloc[:300].to_csv(folder / "train.csv", index=False)
    frame.iloc[300:900].to_csv(folder / "population.csv", index=False)
    frame.iloc[:20].to_csv(folder / "train20.csv", index=False)
    return folder


def _audit(files, model, train, *extra):
    argv = ["audit", "--model-file", str(files / model), "--train", str(files / train),
            "--population", str(files / "population.csv"), "--label", "label",
            "--attacks", "loss", "--quiet", *extra]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # loading a joblib file warns that it runs code
        return main(argv)


def _gate_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("tabmia: gate: ")]


def test_cli_gate_fails_a_leaking_model(audit_files, tmp_path, capsys):
    out = tmp_path / "leak"
    code = _audit(audit_files, "leaky.joblib", "train.csv", "--fail-above", "tpr@0.05=0.1",
                  "--fail-above", "auc=0.6", "--out", str(out))
    lines = _gate_lines(capsys.readouterr().err)
    assert code == EXIT_ABOVE == 1
    assert lines[0].startswith("tabmia: gate: tpr@0.05 <= 0.1 (attacker sees probabilities): "
                               "above: loss at its own threshold "
                               "aimed at FPR 0.05: TPR ")
    assert lines[1].startswith("tabmia: gate: auc <= 0.6 (attacker sees probabilities): above: "
                               "loss's AUC 0.8")
    assert lines[-1] == ("tabmia: gate: FAIL (exit status 1): the audit shows tpr@0.05, auc "
                         "above the limit for an attacker who sees the model's probabilities")
    payload = json.loads((out / "results.json").read_text())
    assert payload["gate"]["outcome"] == "above" and payload["gate"]["exit_status"] == 1
    assert [c["metric"] for c in payload["gate"]["checks"]] == ["tpr@0.05", "auc"]
    assert payload["config"]["fail_above"] == ["tpr@0.05=0.1", "auc=0.6"]
    # the thresholds aimed at the limit's FPR
    assert {m["fpr_target"] for m in payload["metrics"]} == {0.05}
    assert "## Privacy gate" in (out / "results.md").read_text()
    assert "<h2>Privacy gate</h2>" in (out / "report.html").read_text()


def test_cli_gate_passes_a_model_that_never_saw_the_records(audit_files, tmp_path, capsys):
    out = tmp_path / "clean"
    code = _audit(audit_files, "unseen.joblib", "train.csv",
                  "--fail-above", "tpr@0.05=0.15,auc=0.6", "--out", str(out))
    lines = _gate_lines(capsys.readouterr().err)
    assert code == EXIT_BELOW == 0
    assert [line.split(": ")[2] for line in lines[:2]] == [
        "tpr@0.05 <= 0.15 (attacker sees probabilities)", "auc <= 0.6 (attacker sees probabilities)"]
    assert all(": below: every attack's" in line for line in lines[:2])
    assert lines[-1].startswith("tabmia: gate: PASS (exit status 0)")
    assert json.loads((out / "results.json").read_text())["gate"]["passed"] is True


def test_cli_gate_cannot_tell_with_too_few_records(audit_files, tmp_path, capsys):
    # 20 training records: even none flagged leaves TPR's upper bound at 0.17
    code = _audit(audit_files, "unseen.joblib", "train20.csv", "--fail-above", "tpr@0.05=0.15",
                  "--out", str(tmp_path / "few"))
    lines = _gate_lines(capsys.readouterr().err)
    assert code == EXIT_UNRESOLVED == 3
    assert "contains 0.15: 20 training records cannot tell" in lines[0]
    assert lines[-1].startswith("tabmia: gate: CANNOT TELL (exit status 3)")
    code = _audit(audit_files, "unseen.joblib", "train20.csv", "--fail-above", "tpr@0.05=0.15",
                  "--unresolved", "pass", "--out", str(tmp_path / "few-pass"))
    assert code == 0
    assert _gate_lines(capsys.readouterr().err)[-1].startswith(
        "tabmia: gate: PASS (exit status 0, --unresolved pass)")


def test_cli_gate_usage_errors_and_config(audit_files, tmp_path, capsys):
    for extra, message in [
        (["--fail-above", "tpr@0.05=0.1", "--fpr", "0.01"], "drop --fpr or make them equal"),
        (["--fail-above", "tpr@0.05=0.1,tpr@0.01=0.1"], "one tpr@<fpr> limit per audit"),
        (["--fail-above", "tpr=0.1"], "unknown metric"),
        (["--unresolved", "maybe"], "invalid choice"),
    ]:
        out = tmp_path / "bad"
        assert _audit(audit_files, "leaky.joblib", "train.csv", *extra, "--out", str(out)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("tabmia: error:") and message in err[-1], err
        assert not out.exists()
    # config file keys mirror the flags; the command line's limits replace the file's
    config = tmp_path / "gate.yaml"
    config.write_text("fail_above: [tpr@0.05=0.1, auc=0.99]\nunresolved: pass\n")
    out = tmp_path / "cfg"
    assert _audit(audit_files, "leaky.joblib", "train.csv", "--config", str(config),
                  "--out", str(out)) == 1
    assert json.loads((out / "results.json").read_text())["gate"]["unresolved"] == "pass"
    assert _audit(audit_files, "leaky.joblib", "train.csv", "--config", str(config),
                  "--fail-above", "auc=0.99", "--out", str(tmp_path / "cfg2")) == 0
    checks = json.loads((tmp_path / "cfg2" / "results.json").read_text())["gate"]["checks"]
    assert [c["metric"] for c in checks] == ["auc"]
    capsys.readouterr()
