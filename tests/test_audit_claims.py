"""The audit report claims only what the attacker achieves (issue 9).

Counts come from each attack's own threshold, not from the ROC curve; every PPV has an
interval and says when the non-members cannot resolve it; a DP claim is checked with its
delta and the rates' uncertainty; audits too small to mean anything are refused.
"""

from __future__ import annotations

import json
import re
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from tabmia import metrics as M
from tabmia.attacks import LossAttack
from tabmia.audit import audit_model
from tabmia.cli import main
from tabmia.experiment import ExperimentResult
from tabmia.report import results_table
from tabmia.report.html import riskiest_records, write_html_report
from tabmia.report.plots import plot_score_histograms
from tabmia.report.verdict import own_threshold_summary, verdict_lines


def _result(member: np.ndarray, scores: dict[str, np.ndarray], thresholds: dict[str, float]):
    """An ExperimentResult of one repeat from given scores and own thresholds."""
    frames, rows = [], []
    for name, s in scores.items():
        m = M.attack_metrics(member, s, threshold=thresholds[name], fprs=(0.01,),
                             gammas=(1.0, 100.0), random_state=0)
        rows.append({"repeat": 0, "seed": 7, "attack": name, **m, "fpr_target": 0.01,
                     "fit_seconds": 0.0, "score_seconds": 0.0})
        frames.append(pd.DataFrame({"repeat": 0, "attack": name, "record": np.arange(member.size),
                                    "member": member, "score": s,
                                    "flagged": s >= thresholds[name]}))
    return ExperimentResult(scores=pd.concat(frames, ignore_index=True), metrics=pd.DataFrame(rows))


@pytest.fixture()
def separable():
    # 100 members, 300 non-members; at 1% FPR the ROC curve reaches TPR 0.6, but the
    # attack's own threshold (set on public data) is high and flags only 5 members
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(100, bool), np.zeros(300, bool)]
    s = np.r_[np.r_[np.linspace(10, 20, 5), np.linspace(3.5, 6, 55), rng.normal(0, 1, 40)],
              rng.normal(0, 1, 300)]
    return member, s


def test_headline_counts_the_attacks_own_threshold_not_the_roc_optimum(separable, tmp_path):
    member, s = separable
    result = _result(member, {"strong": s, "weak": -s}, {"strong": 9.0, "weak": 0.0})
    oracle = M.tpr_at_fpr(member, s, 0.01)
    assert round(oracle * 100) >= 55  # what the ROC point would have claimed
    lines = verdict_lines(result)
    headline = next(line for line in lines if "singles out" in line)
    flagged = int((s[member] >= 9.0).sum())
    assert flagged == 5
    assert headline == lines[0] and "with strong at its own threshold" in headline
    assert f"singles out {flagged} of 100 training records" in headline
    assert re.search(r"TPR 0\.050 \[0\.0\d\d, 0\.1\d\d\]", headline)
    assert "0 of 300 non-members: FPR 0.000 [0.000, 0.012]" in headline
    html = write_html_report(result, tmp_path / "r.html").read_text()
    assert f"singles out {flagged} of 100" in html and f"singles out {round(oracle * 100)}" not in html
    table = results_table(result.metrics, fprs=(0.01,), gammas=(1.0,))
    row = table.set_index("attack").loc["strong"]
    assert row["members flagged (own threshold)"] == "5/100"
    assert row["TPR@0.01FPR (oracle threshold)"].startswith(f"{oracle:.3f}")
    summary = own_threshold_summary(result.metrics)
    assert summary.index[0] == "strong" and summary.loc["strong", "tp"] == flagged


def test_ppv_interval_and_not_resolved_without_flagged_nonmembers(separable):
    lo, hi = M.ppv_interval(14, 500, 0, 250, gamma=100)
    assert hi == 1.0 and 0.0 < lo < 0.5  # 0 of 250 flagged: FPR may reach ~0.015
    assert not M.ppv_resolved(0, lo, hi)
    # lower end from (TPR low, FPR high), upper from (TPR high, FPR low), 97.5% each
    tlo, thi = M.clopper_pearson(300, 1000, 0.975)
    flo, fhi = M.clopper_pearson(40, 2000, 0.975)
    lo, hi = M.ppv_interval(300, 1000, 40, 2000, gamma=1)
    assert lo == pytest.approx(M.ppv(tlo, fhi, 1)) and hi == pytest.approx(M.ppv(thi, flo, 1))
    assert lo < M.ppv(0.3, 0.02, 1) < hi and M.ppv_resolved(40, lo, hi)
    member, s = separable
    result = _result(member, {"strong": s}, {"strong": 9.0})
    cell = results_table(result.metrics, gammas=(100.0,)).loc[0, "PPV γ=100"]
    assert re.fullmatch(r"1\.000 \[0\.\d{3}, 1\.000\] not resolved by 300 non-members", cell)


def test_dp_consistency_uses_delta_and_the_rates_uncertainty(separable, tmp_path):
    assert M.dp_tpr_bound(0.01, 1.0, 0.1) == pytest.approx(M.dp_tpr_bound(0.01, 1.0) + 0.1)
    # TPR lower bound far above the bound even at the FPR's upper bound: the claim fails
    no = M.dp_consistency(300, 500, 5, 1000, epsilon=1.0, delta=1e-5)
    assert no["tpr_low"] > no["tpr_bound_at_fpr_high"] and no["verdict"] == "no"
    # a large delta lifts the bound above it
    assert M.dp_consistency(300, 500, 5, 1000, epsilon=1.0, delta=0.6)["verdict"] != "no"
    # the row: 14/500 members, 0/250 non-members. Above the bound at FPR 0, but
    # 250 non-members cannot exclude an FPR of 0.015
    row = M.dp_consistency(14, 500, 0, 250, epsilon=1.0, delta=1e-5)
    assert row["tpr"] > row["tpr_bound"] and row["verdict"] == "not resolved"
    assert M.dp_consistency(10, 500, 10, 1000, epsilon=1.0)["verdict"] == "yes"
    member, s = separable
    result = _result(member, {"strong": s}, {"strong": 3.0})
    html = write_html_report(result, tmp_path / "r.html", epsilon=0.5, delta=1e-5).read_text()
    assert "<td class='no'>no: the claim cannot hold</td>" in html and "inconsistent with it" in html
    # delta reaches the ε lower bounds
    assert (result.with_delta(0.3).metrics["epsilon_lower"]
            < result.metrics["epsilon_lower"]).all()


def test_tiny_audit_is_refused(tmp_path, capsys):
    with pytest.raises(M.AuditTooSmallError, match="at least 20"):
        M.check_audit_size(1, 500)
    M.check_audit_size(20, 20)
    data = load_breast_cancer(as_frame=True)
    df = data.frame.rename(columns={"target": "diagnosis"})
    X, y = df.drop(columns="diagnosis"), df["diagnosis"].to_numpy()
    model = RandomForestClassifier(n_estimators=10, random_state=0).fit(X.iloc[:1], y[:1])
    with pytest.raises(M.AuditTooSmallError, match="1 members"):
        audit_model(model, X.iloc[:1], y[:1], X.iloc[300:], y[300:], {"loss": LossAttack()})
    model = RandomForestClassifier(n_estimators=10, random_state=0).fit(X.iloc[:2], [0, 1])
    joblib.dump(model, tmp_path / "model.joblib")
    df.iloc[:1].to_csv(tmp_path / "train.csv", index=False)
    df.iloc[300:].to_csv(tmp_path / "pop.csv", index=False)
    out = tmp_path / "out"
    code = main(["audit", "--model-file", str(tmp_path / "model.joblib"), "--train",
                 str(tmp_path / "train.csv"), "--population", str(tmp_path / "pop.csv"),
                 "--label", "diagnosis", "--attacks", "loss", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("tabmia: error:") and "at least 20" in err[0]
    assert not out.exists() or not any(out.iterdir())


def test_riskiest_records_ties_and_flagged_by_are_consistent():
    # 30 members all above every non-member for both attacks: every member ties at the
    # smallest tail probability; "b" flags records 0..9, "a" records 5..29
    member = np.r_[np.ones(30, bool), np.zeros(40, bool)]
    a = np.r_[np.linspace(5, 6, 30), np.linspace(0, 1, 40)]
    b = np.r_[np.linspace(6, 5, 30), np.linspace(0, 1, 40)]
    result = _result(member, {"a": a, "b": b}, {"a": a[5], "b": b[9]})
    top = riskiest_records(result.scores, top_k=30)
    assert (top["tail_probability"] == 1 / 41).all()
    assert top["n_flagged"].is_monotonic_decreasing  # ties broken by attacks flagging
    assert set(top.loc[top["n_flagged"] == 2, "record"]) == set(range(5, 10))
    flagged = result.scores[result.scores["flagged"] & result.scores["member"]]
    by_record = flagged.groupby("record")["attack"].agg(lambda x: ", ".join(sorted(x)))
    for r in top.itertuples():
        names = by_record.get(r.record, "none")
        assert ", ".join(sorted(r.flagged_by.split(", "))) == names
        assert (r.strongest_attack in r.flagged_by) == (r.n_flagged > 0)


def test_histograms_have_axis_labels_legend_and_threshold(separable):
    member, s = separable
    result = _result(member, {"strong": s}, {"strong": 9.0})
    fig = plot_score_histograms(result.scores, thresholds={"strong": 9.0}, title="seed 0 of 3")
    ax = fig.axes[0]
    assert "score" in ax.get_xlabel() and ax.get_ylabel() == "density"
    labels = ax.get_legend_handles_labels()[1]
    assert {"members", "non-members", "own threshold 9"} <= set(labels)
    assert fig._suptitle.get_text() == "seed 0 of 3"


def test_cli_writes_verdict_and_own_threshold_decisions(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["audit", "--attacks", "loss,entropy", "--seeds", "2", "--epsilon", "2",
                 "--delta", "0.01", "--out", str(out), "--quiet"]) == 0
    payload = json.loads((out / "results.json").read_text())
    own = pd.DataFrame(payload["at_own_threshold"])
    assert len(own) == 4 and {"tp", "fp", "tpr_low", "fpr_high", "seed"} <= set(own.columns)
    scores = pd.read_csv(out / "scores.csv.gz")
    tp = scores[scores["member"] & scores["flagged"]].groupby(["repeat", "attack"]).size()
    for r in own.itertuples():
        assert r.tp == tp.get((r.repeat, r.attack), 0)
    assert payload["verdict"] and all(m["delta"] == 0.01 for m in payload["metrics"])
    md = (out / "results.md").read_text()
    assert "## Verdict" in md and "What was attacked" in md and "tabmia " in md
    html = (out / "report.html").read_text()
    assert "seed 0 of 2" in html and "command: <code>" in html and "δ = 0.01" in html


def test_a_blind_attack_is_never_consistent_with_a_dp_claim(tmp_path):
    """Scores tied where the threshold falls flag nobody: that zero is "cannot tell" of a DP
    claim in the verdict and in the report's DP table, never "consistent" / "yes"."""
    member = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    s = np.r_[np.zeros(250), np.linspace(-3, -1, 50), np.zeros(250), np.linspace(-3, -1, 50)]
    result = _result(member, {"tied": s}, {"tied": 0.5})  # above the tie at 0: flags nobody
    assert M.dp_consistency(0, 300, 0, 300, epsilon=0.5)["verdict"] == "yes"  # the raw rule
    claim = [line for line in verdict_lines(result, epsilon=0.5) if "Against a claim" in line]
    assert claim == [
        "Against a claim of (ε = 0.5, δ = 1e-05)-DP, tied's rates are cannot tell: tied's "
        "scores tie where its threshold falls, so it flags nobody there: its zero says "
        "nothing about the model at that FPR."]
    html = write_html_report(result, tmp_path / "r.html", epsilon=0.5).read_text()
    assert "cannot tell: its scores tie where its threshold falls" in html
    assert "<td class='yes'>yes</td>" not in html


def test_audit_model_keeps_the_calibration_scores_without_persons_or_slices():
    """``calibration`` is there whenever an attack chose an FPR threshold (issue 46, item
    13): the public records' scores, one row per public record and attack."""
    X, y = load_breast_cancer(return_X_y=True)
    model = RandomForestClassifier(n_estimators=10, random_state=0).fit(X[:300], y[:300])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes of a small audit
        result = audit_model(model, X[:300], y[:300], X[300:], y[300:],
                             {"loss": LossAttack(fpr=0.05)}, random_state=0)
    cal = result.calibration
    assert cal is not None and {"attack", "record", "score"} <= set(cal.columns)
    assert sorted(cal["record"]) == sorted(result.splits[0].public)
