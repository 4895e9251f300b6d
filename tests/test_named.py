"""Whom an attacker can name (issue 48): tabmia.named, its gate limit and its CLI output.

The list keeps its promise on the complete null (nobody named in at least 1 - q of many
simulated audits), finds planted memorised records, agrees between records and persons
where every person has one record, and uses scipy's step-up exactly. Its simultaneous
bound holds for every k at once where a pointwise bound does not.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import re
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, false_discovery_control
from sklearn.ensemble import RandomForestClassifier

from tabmia.cli import main
from tabmia.experiment import ExperimentResult
from tabmia.gate import EXIT_ABOVE, EXIT_BELOW, EXIT_UNRESOLVED, evaluate_gate, parse_limits
from tabmia.named import COMBINED, bonferroni_min, fdp_bounds, fdr_select, named_members
from tabmia.thresholds import conformal_pvalues, threshold_at_fpr


def _game(n_members=300, n_nonmembers=300, n_public=400, planted=0, shift=6.0, seed=0,
          attacks=("a",)):
    """A record-level result from scores alone: member and non-member candidates, the
    public calibration scores, all N(0, 1) but ``planted`` members at ``shift``."""
    rng = np.random.default_rng(seed)
    frames, cal, metrics = [], [], []
    member = np.r_[np.ones(n_members, bool), np.zeros(n_nonmembers, bool)]
    for attack in attacks:
        s = rng.normal(size=member.size)
        s[:planted] += shift
        frames.append(pd.DataFrame({"repeat": 0, "attack": attack, "record": np.arange(member.size),
                                    "member": member, "score": s}))
        cal.append(pd.DataFrame({"repeat": 0, "attack": attack, "score": rng.normal(size=n_public)}))
        metrics.append({"repeat": 0, "seed": seed, "attack": attack, "fpr_target": 0.01,
                        "ppv@gamma=100": 0.5})
    scores = pd.concat(frames, ignore_index=True)
    return ExperimentResult(scores=scores, metrics=pd.DataFrame(metrics),
                            calibration=pd.concat(cal, ignore_index=True))


_RISK = type("State", (), {"state": "risk shown", "cause": ""})()


def test_conformal_pvalues_are_the_fpr_threshold_and_valid():
    rng = np.random.default_rng(1)
    cal, fresh = rng.normal(size=499), rng.normal(size=20_000)
    p = conformal_pvalues(fresh, cal)
    assert np.array_equal(p <= 0.05 + 1e-12, fresh >= threshold_at_fpr(cal, 0.05))
    assert p.min() >= 1 / 500
    # valid over calibration sets: P(p <= t) <= t for a fresh non-member, marginally
    hits = [np.mean(conformal_pvalues(rng.normal(size=200), rng.normal(size=99)) <= 0.1)
            for _ in range(300)]
    assert abs(np.mean(hits) - 0.1) < 0.01
    # ties count against the candidate; the randomised rule is uniform whatever the ties
    tied = conformal_pvalues(np.zeros(4000), np.zeros(99))
    assert np.all(tied == 1.0)
    u = conformal_pvalues(np.zeros(4000), np.zeros(99), ties="randomized", random_state=0)
    assert abs(np.mean(u <= 0.2) - 0.2) < 0.03
    with pytest.raises(ValueError, match="ties"):
        conformal_pvalues([1.0], [0.0], ties="up")


def test_bh_is_scipys_step_up():
    rng = np.random.default_rng(2)
    p = np.r_[rng.uniform(size=300), rng.uniform(0, 0.002, size=40)]
    for method in ("bh", "by"):
        assert np.array_equal(fdr_select(p, 0.1, method=method),
                              false_discovery_control(p, method=method) <= 0.1)
    result = _game(planted=40, shift=4.0)
    named = named_members(result, 0.1, state=_RISK)
    part = result.scores
    cal = result.calibration["score"]
    expected = false_discovery_control(conformal_pvalues(part["score"], cal)) <= 0.1
    got = set(named.names.loc[named.names["attack"] == "a", "id"])
    assert got == set(part.loc[expected, "record"]) and len(got) > 0


def test_the_complete_null_names_nobody_in_at_least_1_minus_q_of_runs():
    # 2000 audits of a model that saw no candidate: every candidate exchangeable with the
    # public records; BH at q must name somebody in at most a share q of them
    rng = np.random.default_rng(3)
    runs, n_cand, n_cal, q = 2000, 100, 200, 0.1
    cal = np.sort(rng.normal(size=(runs, n_cal)), axis=1)
    cand = rng.normal(size=(runs, n_cand))
    # conformal p-values of every run at once: rank of each candidate among its run's null
    above = n_cal - (cal[:, None, :] < cand[:, :, None]).sum(axis=2)
    p = (1.0 + above) / (n_cal + 1.0)
    assert np.allclose(p[0], conformal_pvalues(cand[0], cal[0]))
    any_named = fdr_select(p, q, axis=1).any(axis=1)
    share = any_named.mean()
    assert share <= q + 3 * np.sqrt(q * (1 - q) / runs)
    # and the Bonferroni combination of two independent attacks, too
    p2 = rng.uniform(size=(runs, n_cand))
    combined = bonferroni_min(np.stack([p, p2], axis=2), axis=2)
    assert fdr_select(combined, q, axis=1).any(axis=1).mean() <= q + 3 * np.sqrt(q / runs)


def test_planted_memorised_records_are_named_with_the_truth_beside_them():
    # 15 of 600 candidates: naming them takes p-values <= 0.1 x 15 / 600, so the public
    # null must hold more than 2 x 400 records (the combination doubles the smallest p)
    result = _game(planted=15, attacks=("a", "b"), n_public=2000)
    named = named_members(result, 0.1, state=_RISK, n_resamples=50)
    top = named.headline_row()
    assert result.named(0.1, state=_RISK, n_resamples=50).names.equals(named.names)
    assert named.headline == f"{COMBINED}:bonferroni"
    assert top["status"] == "named" and top["n_right"] >= 15
    assert top["n_wrong"] <= 2 and top["fdp"] <= top["fdp_high"]
    listed = named.names[(named.names["attack"] == COMBINED) & (named.names["method"] == "bonferroni")]
    assert set(range(15)) <= set(listed["id"])
    line = named.lines()[0]
    assert f"could name {top['n_named']} of the 300 training records" in line
    assert f"here {top['n_wrong']} of the {top['n_named']} were wrong" in line
    payload = named.to_dict()
    assert payload["q"] == 0.1 and {r["attack"] for r in payload["attacks"]} == {"a", "b"}
    assert {r["method"] for r in payload["combined"]} == {"bonferroni", "by"}
    json.dumps(payload)  # JSON-ready


def test_an_unresolvable_null_and_a_withheld_list_say_why():
    small = _game(n_public=5, planted=30)
    named = named_members(small, 0.1, state=_RISK, n_resamples=20)
    row = named.headline_row()
    assert row["status"] == "unresolvable" and "5 public" in row["reason"]
    assert named.names.empty
    cannot = type("State", (), {"state": "cannot tell", "cause": "the inputs contradict themselves"})()
    withheld = named_members(_game(planted=30), 0.1, state=cannot, n_resamples=20)
    assert withheld.names.empty and set(withheld.table["status"]) == {"withheld"}
    assert "cannot tell (the inputs contradict themselves)" in withheld.lines()[0]


def test_persons_and_records_agree_when_every_person_has_one_record():
    from tabmia.persons import person_result

    result = _game(planted=20, shift=4.0, n_public=400)
    result.scores["person"] = result.scores["record"] + 10_000
    result.calibration["person"] = np.arange(len(result.calibration))
    result.metrics["tp"] = 0  # person_result copies the record metrics it finds
    persons = person_result(result)
    by_record = named_members(result, 0.1, state=_RISK, n_resamples=20)
    by_person = named_members(persons, 0.1, state=_RISK, n_resamples=20)
    assert by_person.unit == "person"
    assert set(by_person.names["id"] - 10_000) == set(by_record.names["id"])
    assert len(by_record.names) > 0


# ------------------------------------------------------- simultaneous bounds, every k
def _closed_testing_bounds(p, alpha):
    """Closed testing with Simes' local tests, by enumeration: the most candidates among
    the first k that a set Simes does not reject can hold, for each k."""
    p = np.sort(p)
    n = p.size
    most = np.zeros(n, int)
    for size in range(1, n + 1):
        for kept in itertools.combinations(range(n), size):
            if np.any(p[list(kept)] <= np.arange(1, size + 1) * alpha / size):
                continue  # Simes rejects this set (p[list(kept)] is sorted)
            inside = np.zeros(n, bool)
            inside[list(kept)] = True
            most = np.maximum(most, np.cumsum(inside))
    return most


def test_fdp_bounds_is_closed_testing_with_simes():
    rng = np.random.default_rng(5)
    for _ in range(60):
        n = rng.integers(1, 8)
        p = np.where(rng.random(n) < 0.5, rng.uniform(size=n), rng.uniform(0, 0.05, size=n))
        if rng.random() < 0.3:  # ties, as conformal p-values k / (n + 1) have
            p = np.ceil(p * 20) / 21
        assert np.array_equal(fdp_bounds(p, 0.1), _closed_testing_bounds(p, 0.1)), p
    # any dependence divides alpha by sum 1/i: never below the positive-dependence bound
    tied = np.r_[np.full(20, 1 / 501), rng.uniform(size=50)]
    assert np.all(fdp_bounds(tied, 0.05, dependence="arbitrary") >= fdp_bounds(tied, 0.05))
    # above the size where Hommel's h is sought, n stands in: larger, never smaller
    big = np.r_[np.full(5_001, 1e-6), rng.uniform(size=10)]
    assert fdp_bounds(big[:5_000], 0.05)[-1] == 0 and fdp_bounds(big, 0.05)[-1] <= 10
    assert fdp_bounds([], 0.05).size == 0
    for bad, message in [({"alpha": 1.5}, "alpha"), ({"dependence": "none"}, "dependence")]:
        with pytest.raises(ValueError, match=message):
            fdp_bounds([0.1, 0.2], **bad)


def _violations(bound_of, n_null, n_members, shift, runs, rng, n_cal=200):
    """Share of simulated audits in which some prefix of the ranked candidates holds more
    non-members than its bound: conformal p-values against one public null per run."""
    member = np.r_[np.zeros(n_null, bool), np.ones(n_members, bool)]
    cal = np.sort(rng.normal(size=(runs, n_cal)), axis=1)
    cand = rng.normal(size=(runs, member.size)) + shift * member
    p = (1.0 + n_cal - (cal[:, None, :] < cand[:, :, None]).sum(axis=2)) / (n_cal + 1.0)
    bad = 0
    for row in p:
        wrong = np.cumsum(~member[np.argsort(row, kind="stable")])
        bad += bool(np.any(wrong > bound_of(row)))
    return bad / runs


def test_fdp_bounds_hold_for_every_k_at_once_where_a_pointwise_bound_does_not():
    # the truth is known: null (non-member) candidates exchangeable with the public null,
    # members shifted. The simultaneous bound may fail for some k in at most a share
    # alpha of the audits; each k's own binomial quantile (valid for one k fixed in
    # advance, not for all at once) fails far more often, so this check has teeth.
    rng = np.random.default_rng(6)
    alpha, runs = 0.1, 300
    slack = 3 * np.sqrt(alpha * (1 - alpha) / runs)
    simultaneous = lambda p: fdp_bounds(p, alpha)  # noqa: E731
    pointwise = lambda p: binom.ppf(1 - alpha, p.size, np.sort(p))  # noqa: E731
    for n_null, n_members, shift in [(150, 0, 0.0), (120, 40, 3.0)]:
        assert _violations(simultaneous, n_null, n_members, shift, runs, rng) <= alpha + slack
    assert _violations(pointwise, 150, 0, 0.0, runs, rng) > alpha + slack
    # and it is no vacuous bound: strong members are certified members
    p = np.r_[np.full(40, 1e-4), rng.uniform(size=160)]
    assert fdp_bounds(p, 0.05)[39] == 0 and fdp_bounds(p, 0.05)[-1] <= 160


def test_the_named_list_carries_its_simultaneous_bound():
    # certifying a name as a member takes a p-value under alpha / n: a public null of
    # more than n / alpha = 12000 records (with 2000, the bound never drops below ~5)
    result = _game(planted=60, n_public=20_000)
    named = named_members(result, 0.2, state=_RISK, n_resamples=20)
    row = named.headline_row()
    assert row["status"] == "named" and row["n_wrong"] <= row["n_wrong_bound"] <= row["n_named"]
    assert row["bound_alpha"] == pytest.approx(0.05) and row["n_sure"] >= 1
    at_most = named.names["nonmembers_at_most"].to_numpy()
    assert np.all(np.diff(at_most) >= 0) and at_most[-1] == row["n_wrong_bound"]
    p = named.names["p_value"].to_numpy()
    assert np.all(np.diff(p) >= 0)  # ranked: the bound reads the first rank names
    text = named.lines()[0]
    assert "Among the first k named, at most m are non-members, with 95 % confidence" in text
    assert f"for all {int(row['n_named'])}, at most {int(row['n_wrong_bound'])}" in text
    # 8 planted among 600 candidates, 1000 public records: BH names them (0.1 x 8 / 600
    # is above the smallest p-value, 1 / 1001), Simes cannot bound them (0.05 / 600 is not)
    thin = named_members(_game(planted=8, n_public=1000), 0.1, state=_RISK, n_resamples=20)
    thin_row = thin.headline_row()
    assert thin_row["n_named"] >= 8 and thin_row["n_wrong_bound"] == thin_row["n_named"]
    assert "for every k at once" in thin.lines()[0] and "cannot be given here" in thin.lines()[0]
    entry = named.to_dict()["attacks"][0]
    assert {"n_wrong_bound", "n_sure", "bound_alpha"} <= set(entry)
    # two repeats: each repeat's bound at alpha / 2, so their sum holds at alpha
    twice = dataclasses.replace(
        result,
        scores=pd.concat([result.scores, result.scores.assign(repeat=1)], ignore_index=True),
        calibration=pd.concat([result.calibration, result.calibration.assign(repeat=1)]),
        metrics=pd.concat([result.metrics, result.metrics.assign(repeat=1)]),
    )
    pooled = named_members(twice, 0.2, state=_RISK, n_resamples=20).headline_row()
    assert pooled["bound_alpha"] == pytest.approx(0.05)


def test_the_count_at_the_ppv_prior_is_a_count_with_its_range_or_none():
    from tabmia.named._result import _count

    assert _count(0.0, 0.0, 0.0) == "none"
    assert _count(0.02, 0.0, 0.0) == "none in at least 97.5 % of resamples"
    assert _count(0.6, 0.0, 2.0) == "fewer than 1 on average (95 % of resamples: 0-2)"
    assert _count(41.3, 30.0, 52.0) == "41 on average (95 % of resamples: 30-52)"
    game = _game(planted=30, n_public=2000)

    def at_prior(named):
        row = named.headline_row()
        said = re.search(r"\(the PPV prior\) it would name (.+) of as many", named.lines()[0])
        return row, said.group(1)

    # 1000 non-members per member: about 0.6 members among 600, none of them nameable
    row, said = at_prior(named_members(game, 0.1, prior=1000, state=_RISK, n_resamples=50))
    assert row["n_named_prior_high"] == 0 and said.startswith("none")
    # the audit's own share: a count with its range over resamples
    row, said = at_prior(named_members(game, 0.1, prior=1, state=_RISK, n_resamples=50))
    assert row["n_named_prior"] >= 1
    assert said == _count(row["n_named_prior"], row["n_named_prior_low"], row["n_named_prior_high"])
    assert f"{row['n_named_prior']:.0f} on average (95 % of resamples: " in said


def test_person_lists_speak_of_the_data_sets_own_persons():
    from tabmia.cli._named import named_of
    from tabmia.named._gate import check_named
    from tabmia.persons import person_result
    from tabmia.report.limits import parse_limits as parse

    result = _game(planted=20, shift=4.0, n_public=400)
    result.scores["person"] = result.scores["record"] + 10_000
    result.calibration["person"] = np.arange(len(result.calibration))
    result.metrics["tp"] = 0
    persons = person_result(result)
    args = argparse.Namespace(dataset="diabetes130", fdr=0.1, gammas=None, random_state=0)
    named = named_of(args, persons, _RISK)
    assert named.noun == "patients" and "training patients" in named.lines()[0]
    (lim,) = parse("named@0.1=0")
    reason = check_named(named, lim).reason
    assert "patients named" in reason and "of them non-member patients" in reason
    gate = evaluate_gate(persons, "named@0.1=0", named=named)
    assert "non-member persons" not in " ".join(gate.lines())
    from_file = named_of(argparse.Namespace(dataset=None, fdr=0.1), persons, _RISK)
    assert "training persons" in from_file.lines()[0]
    assert "training records" in named_of(args, result, _RISK).lines()[0]


# --------------------------------------------------------------- the gate and the CLI
def test_named_limits_parse():
    (lim,) = parse_limits("named@0.1=0")
    assert (lim.metric, lim.fpr, lim.limit, lim.name) == ("named", 0.1, 0.0, "named@0.1")
    for bad, message in [("named@2=0", "in \\(0, 1\\)"), ("named@0.1=2.5", "count"),
                         ("named@x=1", "not a number")]:
        with pytest.raises(ValueError, match=message):
            parse_limits(bad)


@pytest.fixture(scope="module")
def audit_files(tmp_path_factory):
    """A forest that memorised its 300 training records, whose labels are noise (so only
    memory predicts them), and one that never saw them."""
    folder = tmp_path_factory.mktemp("named")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(2000, 8)), rng.integers(0, 2, size=2000)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)]).assign(label=y)
    features = frame.drop(columns="label")
    for name, rows in (("leaky", slice(0, 300)), ("unseen", slice(1000, 1500))):
        model = RandomForestClassifier(n_estimators=50, random_state=0)
        joblib.dump(model.fit(features.iloc[rows], y[rows]), folder / f"{name}.joblib")
    frame.iloc[:300].to_csv(folder / "train.csv", index=False)
    frame.iloc[300:1000].to_csv(folder / "population.csv", index=False)
    return folder


def _audit(files, model, *extra):
    argv = ["audit", "--model-file", str(files / model), "--train", str(files / "train.csv"),
            "--population", str(files / "population.csv"), "--label", "label",
            "--attacks", "loss", "--quiet", *extra]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main(argv)


def test_cli_named_list_and_gate_fails_a_leaking_model(audit_files, tmp_path, capsys):
    out = tmp_path / "leak"
    code = _audit(audit_files, "leaky.joblib", "--fail-above", "named@0.2=0", "--out", str(out))
    captured = capsys.readouterr()
    assert code == EXIT_ABOVE
    payload = json.loads((out / "results.json").read_text())
    named = payload["named"]
    assert named["q"] == 0.2 and payload["config"]["fdr"] == 0.2
    row = named["attacks"][0]
    assert row["n_named"] > 0 and row["unit"] == "record"
    assert f"could name {row['n_named']} of the 300 training records" in captured.out
    frame = pd.read_csv(out / "named.csv.gz")
    assert len(frame) == row["n_named"] and {"id", "member", "p_value"} <= set(frame.columns)
    assert "Whom an attacker could name" in (out / "report.html").read_text()
    assert "non-members at most (95%, every k)" in (out / "report.html").read_text()
    assert {"n_wrong_bound", "n_sure"} <= set(row) and "nonmembers_at_most" in frame
    assert "Riskiest training records" not in (out / "report.html").read_text()
    assert "named@0.2 <= 0" in captured.err


def test_cli_named_gate_passes_a_model_that_never_saw_the_records(audit_files, tmp_path, capsys):
    code = _audit(audit_files, "unseen.joblib", "--fail-above", "named@0.1=0.2",
                  "--out", str(tmp_path / "clean"))
    assert code == EXIT_BELOW
    assert "named@0.1 <= 0.2 (attacker sees probabilities): below" in capsys.readouterr().err


def test_named_gate_cannot_tell_where_the_list_is_withheld_or_unresolvable():
    result = _game(planted=30)
    result.metrics = result.metrics.assign(
        tp=30, n_members=300, fp=3, n_nonmembers=300, tpr=0.1, tpr_low=0.07, tpr_high=0.14,
        fpr=0.01, fpr_low=0.002, fpr_high=0.03, fpr_requested=0.01, auc=0.6, auc_low=0.55,
        auc_high=0.65, delta=0.0)
    state = type("State", (), {"state": "cannot tell", "cause": "the inputs contradict themselves"})()
    withheld = named_members(result, 0.1, state=state, n_resamples=20)
    check = evaluate_gate(result, "named@0.1=0", named=withheld).checks[0]
    assert check.outcome == "unresolved" and "contradict" in check.reason
    small = dataclasses.replace(result, calibration=result.calibration.iloc[:5])
    gate = evaluate_gate(small, "named@0.1=0", named=named_members(small, 0.1, state=_RISK))
    assert gate.checks[0].outcome == "unresolved" and gate.exit_status == EXIT_UNRESOLVED
    with pytest.raises(ValueError, match=r"q = 0\.1"):
        evaluate_gate(result, "named@0.1=0", named=named_members(result, 0.2, state=_RISK))
