"""One verdict state that the gate obeys (issue 24): swapped files and one-class labels
give cannot-tell (exit 3) under a gate through the CLI, ``audit_model`` +
``assert_membership_risk`` and the report; ties that hide records keep a TPR limit open;
honest audits raise no finding and keep their verdicts; a label-only verdict names its
attacker; ``--accept-warning`` returns the decision to the limits and is recorded."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from tabmia import PlausibilityWarning
from tabmia.attacks import GapAttack, LossAttack, ScoreAttack
from tabmia.audit import audit_model
from tabmia.cli import build_parser, main
from tabmia.experiment import ExperimentResult
from tabmia.gate import EXIT_UNRESOLVED, evaluate_gate
from tabmia.metrics import DEFAULT_DELTA, clopper_pearson
from tabmia.report.state import CANNOT_TELL, NOT_SHOWN, SHOWN, tie_reach, verdict_state
from tabmia.report.verdict import verdict_lines
from tabmia.target import TargetModel
from tabmia.testing import assert_membership_risk

LABEL = "diagnosis"
GATE = "tpr@0.05=0.05,auc=0.6"  # the limits


@pytest.fixture(scope="module")
def files(tmp_path_factory, write_audit_files):
    """The breast-cancer forest audit, and its training file with one-class labels."""
    d = tmp_path_factory.mktemp("verdict-state")
    train, _ = write_audit_files(d)
    train.assign(**{LABEL: 1}).to_csv(d / "train_one_class.csv", index=False)
    return d


def _audit(d, out, train="train.csv", population="pop.csv", *extra):
    argv = ["audit", "--model-file", str(d / "model.joblib"), "--train", str(d / train),
            "--population", str(d / population), "--label", LABEL, "--attacks", "loss",
            "--quiet", "--out", str(out), *extra]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # loading a joblib file warns that it runs code
        return main(argv)


def _gate_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("tabmia: gate: ")]


# ----------------------------------------------------------- contradictions
@pytest.mark.parametrize("case, train, population, names", [
    ("swapped", "pop.csv", "train.csv", ["fit_gap", "auc_below_chance"]),
    ("one-class", "train_one_class.csv", "pop.csv", ["fit_gap", "label_shift",
                                                     "auc_below_chance"]),
])
def test_cli_contradicting_inputs_cannot_tell_under_a_gate(files, tmp_path, capsys, case, train,
                                                           population, names):
    out = tmp_path / case
    code = _audit(files, out, train, population, "--fail-above", GATE)
    err = capsys.readouterr().err
    assert code == EXIT_UNRESOLVED == 3
    last = _gate_lines(err)[-1]
    assert last.startswith("tabmia: gate: CANNOT TELL (exit status 3): the inputs contradict "
                           f"themselves ({', '.join(names)})")
    assert "To fix: fit_gap: check that the training records" in last
    payload = json.loads((out / "results.json").read_text())
    assert payload["state"]["state"] == CANNOT_TELL
    assert [f["name"] for f in payload["state"]["findings"]] == names
    assert all(f["blocks"] for f in payload["state"]["findings"])
    assert payload["gate"]["blocked_by"] == names and payload["gate"]["exit_status"] == 3
    assert payload["verdict"][0].startswith(f"Cannot tell: the inputs contradict themselves "
                                            f"({', '.join(names)})")
    assert not any(line.startswith("Risk not shown") for line in payload["verdict"])
    # the findings live in the verdict, not among the header's warnings
    assert "warnings" not in payload["context"]
    html = (out / "report.html").read_text()
    box = html[html.index("<section class='verdict cannot'>"):]
    box = box[:box.index("</section>")]
    assert "<p class='state cannot'>cannot tell</p>" in box
    assert all(f"<div class='finding blocks'><b>{n}</b> (makes the verdict cannot-tell)" in box
               for n in names)
    # --unresolved pass is about intervals, not about contradicting inputs
    assert _audit(files, tmp_path / "pass", train, population, "--fail-above", GATE,
                  "--unresolved", "pass") == 3
    capsys.readouterr()


def test_cli_accept_warning_returns_the_decision_to_the_limits(files, tmp_path, capsys):
    out = tmp_path / "accepted"
    # every loss attack is tie-blind here too: a cannot-tell of its own, accepted by name
    code = _audit(files, out, "pop.csv", "train.csv", "--fail-above", GATE,
                  "--accept-warning", "fit_gap", "--accept-warning", "auc_below_chance,ties")
    lines = _gate_lines(capsys.readouterr().err)
    payload = json.loads((out / "results.json").read_text())
    gate = payload["gate"]
    assert gate["blocked_by"] == []
    assert gate["accepted_warnings"] == ["fit_gap", "auc_below_chance", "ties"]
    assert code == {"above": 1, "below": 0, "unresolved": 3}[gate["limits_outcome"]]
    assert gate["outcome"] == gate["limits_outcome"]
    assert "tabmia: gate: accepted warnings (checked by the user, not deciding): fit_gap, " \
           "auc_below_chance, ties" in lines
    assert payload["config"]["accept_warnings"] == ["fit_gap", "auc_below_chance", "ties"]
    state = payload["state"]
    assert state["cause"] != "the inputs contradict themselves" and state["causes"] == []
    assert state["accepted_warnings"] == gate["accepted_warnings"]
    assert all(f["accepted"] and not f["blocks"] for f in state["findings"])
    assert "<div class='finding accepted'><b>fit_gap</b> (accepted by the user" in \
        (out / "report.html").read_text()
    # accepting one of two findings leaves the other deciding
    assert _audit(files, tmp_path / "half", "pop.csv", "train.csv", "--fail-above", GATE,
                  "--accept-warning", "fit_gap") == 3
    assert "(auc_below_chance)" in _gate_lines(capsys.readouterr().err)[-1]


def test_api_contradicting_inputs_cannot_tell(files):
    train, pop = pd.read_csv(files / "train.csv"), pd.read_csv(files / "pop.csv")
    import joblib

    model = joblib.load(files / "model.joblib")
    X_tr, y_tr = train.drop(columns=LABEL), train[LABEL]
    X_pop, y_pop = pop.drop(columns=LABEL), pop[LABEL]
    with pytest.warns(PlausibilityWarning):
        swapped = audit_model(model, X_pop, y_pop, X_tr, y_tr, {"loss": LossAttack(fpr=0.05)})
    assert [f.check for f in swapped.findings] == ["fit_gap", "auc_below_chance"]
    assert verdict_state(swapped).state == CANNOT_TELL
    gate = evaluate_gate(swapped, GATE, unresolved="pass")
    assert (gate.outcome, gate.exit_status, gate.passed) == ("unresolved", 3, False)
    with pytest.raises(AssertionError, match=r"^the audit cannot tell: the inputs contradict "
                                             r"themselves \(fit_gap, auc_below_chance\)"):
        assert_membership_risk(swapped, tpr_at_fpr={0.05: 0.05}, auc=0.6)
    accepted = evaluate_gate(swapped, GATE, accept_warnings=["fit_gap", "auc_below_chance"])
    # the findings accepted, the ties (every loss attack blind at 5%) still block
    assert accepted.blocked_by == ("ties",) and accepted.state.accepted == (
        "fit_gap", "auc_below_chance")
    accepted = evaluate_gate(swapped, GATE,
                             accept_warnings=["fit_gap", "auc_below_chance", "ties"])
    assert accepted.outcome == accepted.limits_outcome
    with pytest.raises(ValueError, match="unknown warning 'swap'.*fit_gap, label_shift"):
        evaluate_gate(swapped, GATE, accept_warnings=["swap"])
    with pytest.warns(PlausibilityWarning):
        one_class = audit_model(model, X_tr, np.ones_like(y_tr), X_pop, y_pop,
                                {"loss": LossAttack(fpr=0.05)})
    assert evaluate_gate(one_class, GATE).blocked_by[:2] == ("fit_gap", "label_shift")
    # the honest order raises no finding, and the gate decides from the limits
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlausibilityWarning)
        honest = audit_model(model, X_tr, y_tr, X_pop, y_pop, {"loss": LossAttack(fpr=0.05)})
    # no finding blocks (a forest's loss ties at 5% FPR: that cannot-tell is the ties')
    assert honest.findings == () and verdict_state(honest).blocking == ()
    assert verdict_state(honest).cause != "the inputs contradict themselves"
    gate = evaluate_gate(honest, GATE)
    assert gate.blocked_by == ("ties",) and gate.exit_status == 3
    gate = evaluate_gate(honest, GATE, accept_warnings=["ties"])
    assert gate.blocked_by == () and gate.outcome == gate.limits_outcome


def test_assert_membership_risk_hides_its_frames():
    result = _counts([{"attack": "lira", "tp": 60, "n_members": 300, "fp": 3,
                       "n_nonmembers": 300}])
    try:
        assert_membership_risk(result, tpr_at_fpr={0.01: 0.1})
    except AssertionError as exc:
        tb = exc.__traceback__
        frames = []
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
    else:
        pytest.fail("the limit is exceeded")
    own = [f for f in frames if f.f_code.co_name == "assert_membership_risk"]
    assert own and own[0].f_locals.get("__tracebackhide__") is True


# ------------------------------------------------------------------ ties
@pytest.fixture(scope="module")
def tied_forest():
    """An overfit forest: every tree fits every training record (no bootstrap), so the
    loss is 0 on all training records and on the many easy non-members too."""
    X, y = make_classification(n_samples=1600, n_features=6, n_informative=4, class_sep=2.0,
                               flip_y=0.02, random_state=3)
    forest = RandomForestClassifier(n_estimators=25, bootstrap=False, random_state=0)
    forest.fit(X[:600], y[:600])
    return forest, X[:600], y[:600], X[600:], y[600:]


def test_tied_scores_keep_a_tpr_limit_open(tied_forest):
    forest, X_tr, y_tr, X_pop, y_pop = tied_forest
    result = audit_model(forest, X_tr, y_tr, X_pop, y_pop, {"loss": LossAttack(fpr=0.05)})
    assert result.findings == ()
    row = result.metrics.iloc[0]
    assert row["tp"] == 0 and row["auc"] > 0.55  # flags nobody, yet the scores leak
    ties = tie_reach(result.scores, 0.05)
    assert bool(ties.at["loss", "blind"]) and ties.at["loss", "extra_tp"] > 0.06 * row["n_members"]
    gate = evaluate_gate(result, "tpr@0.05=0.06")
    (check,) = gate.checks
    assert (check.outcome, gate.exit_status) == ("unresolved", EXIT_UNRESOLVED)
    assert "its scores tie at its threshold" in check.reason
    assert "more than FPR 0.05 allows" in check.reason
    assert "cannot show TPR under 0.06" in check.reason
    # the verdict says so rather than staying silent about a zero
    assert verdict_state(result).blind == ("loss",)
    lines = verdict_lines(result)
    tie_line = next(line for line in lines if line.startswith("Flags nobody"))
    assert tie_line.startswith("Flags nobody because its scores tie (aimed at 5% FPR, of ")
    assert "): loss (" in tie_line
    # the bound the verdict states is the one the gate reads
    bound = float(re.search(r"TPR up to (\d\.\d+)", tie_line).group(1))
    assert bound == pytest.approx(check.high, abs=5e-4)
    # every attack blind at its FPR: the audit cannot tell, it does not read "not shown"
    assert verdict_state(result).state == "cannot tell"
    assert lines[0].startswith("Cannot tell at 5% FPR for ")
    assert "every attack's scores tie where its threshold falls" in lines[0]


def test_tied_scores_cli_and_assert(tied_forest, tmp_path, capsys):
    import joblib

    forest, X_tr, y_tr, X_pop, y_pop = tied_forest
    cols = [f"f{i}" for i in range(X_tr.shape[1])]
    for name, X, y in (("train", X_tr, y_tr), ("pop", X_pop, y_pop)):
        pd.DataFrame(X, columns=cols).assign(**{LABEL: y}).to_csv(tmp_path / f"{name}.csv",
                                                                   index=False)
    from sklearn.base import clone

    forest = clone(forest).fit(pd.DataFrame(X_tr, columns=cols), y_tr)  # with column names
    joblib.dump(forest, tmp_path / "model.joblib")
    out = tmp_path / "out"
    assert _audit(tmp_path, out, "train.csv", "pop.csv", "--fail-above", "tpr@0.05=0.06") == 3
    lines = _gate_lines(capsys.readouterr().err)
    assert "its scores tie at its threshold" in lines[0]
    assert "cannot show TPR under 0.06" in lines[0]
    payload = json.loads((out / "results.json").read_text())
    assert payload["state"]["blind"] == ["loss"] and payload["gate"]["blocked_by"] == ["ties"]
    assert "Flags nobody because its scores tie (aimed at 5% FPR" in \
        (out / "report.html").read_text()
    result = audit_model(forest, pd.DataFrame(X_tr, columns=cols), y_tr,
                         pd.DataFrame(X_pop, columns=cols), y_pop, {"loss": LossAttack(fpr=0.05)})
    with pytest.raises(AssertionError, match=r"cannot tell: every attack's scores tie .*\n  "
                                             r"tpr@0.05 <= 0.06 \(attacker sees probabilities\)"
                                             r": unresolved: loss .* its scores tie"):
        assert_membership_risk(result, tpr_at_fpr={0.05: 0.06})


def test_ties_do_not_change_continuous_scores():
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(400, bool), np.zeros(400, bool)]
    s = np.r_[rng.normal(0.3, 1, 400), rng.normal(0, 1, 400)]
    scores = pd.DataFrame({"attack": "a", "member": member, "score": s,
                           "flagged": s >= np.quantile(s[~member], 0.99)})
    ties = tie_reach(scores, 0.01)
    assert not ties.at["a", "blind"] and ties.at["a", "extra_tp"] == 0


# -------------------------------------------------------- honest audits
def test_honest_embedded_audit_raises_nothing_and_keeps_its_verdict(tmp_path, capsys):
    out = tmp_path / "embedded"
    code = main(["audit", "--attacks", "loss,entropy", "--quiet", "--out", str(out),
                 "--fail-above", "auc=0.99"])
    payload = json.loads((out / "results.json").read_text())
    assert payload["state"]["findings"] == []
    assert payload["state"]["cause"] != "the inputs contradict themselves"
    assert code == 0 and payload["gate"]["blocked_by"] == []
    assert payload["verdict"][0].lower().startswith(payload["state"]["state"].split()[0])
    capsys.readouterr()


def test_honest_credit_audit_raises_nothing_and_keeps_its_verdict(shared_data):
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from tabmia.datasets import load_german_credit

    data = load_german_credit()
    X, y = data.data, np.asarray(data.target)
    order = np.random.RandomState(0).permutation(len(X))
    train, pop = order[:600], order[600:]
    cats = X.select_dtypes(exclude="number").columns
    model = make_pipeline(make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), cats), remainder=StandardScaler()),
        LogisticRegression(max_iter=2000)).fit(X.iloc[train], y[train])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlausibilityWarning)
        result = audit_model(model, X.iloc[train], y[train], X.iloc[pop], y[pop],
                             {"loss": LossAttack(fpr=0.05),
                              "confidence": ScoreAttack(statistic="confidence", fpr=0.05)})
    state = verdict_state(result)
    assert result.findings == () and state.state in (SHOWN, NOT_SHOWN)
    gate = evaluate_gate(result, GATE)
    assert gate.blocked_by == () and gate.outcome == gate.limits_outcome


# ----------------------------------------------------------- label-only
def test_label_only_verdict_names_its_attacker(tied_forest):
    forest, X_tr, y_tr, X_pop, y_pop = tied_forest
    declared = TargetModel(forest, labels_only=True)  # the model has probabilities
    result = audit_model(declared, X_tr, y_tr, X_pop, y_pop, {"gap": GapAttack(fpr=0.01)})
    state = verdict_state(result)
    assert state.labels_only and state.hidden_scores
    first = verdict_lines(result)[0]
    assert first.split(": ")[0].endswith("for an attacker who sees only the model's decisions "
                                         "(its predicted labels) and holds 500 public records "
                                         "of the same population")
    assert ("The model also gives probabilities, which these attacks were not given: an "
            "attacker who sees them is not covered by this audit.") in first
    # the gap attack cannot flag anyone at 1%: said, not silent
    assert state.blind == ("gap",)
    # a model with labels only has nothing hidden
    from sklearn.svm import LinearSVC

    svc = LinearSVC().fit(X_tr, y_tr)
    plain = audit_model(svc, X_tr, y_tr, X_pop, y_pop, {"gap": GapAttack(fpr=0.01)})
    first = verdict_lines(plain)[0]
    assert "who sees only the model's decisions" in first and "not covered" not in first


def test_cli_label_only_verdict_and_report(files, tmp_path, capsys):
    out = tmp_path / "labels"
    assert _audit(files, out, "train.csv", "pop.csv", "--label-only", "--attacks", "gap",
                  "--fpr", "0.05") == 0
    payload = json.loads((out / "results.json").read_text())
    assert "an attacker who sees only the model's decisions" in payload["verdict"][0]
    assert "not covered by this audit" in payload["verdict"][0]
    html = (out / "report.html").read_text()
    assert "an attacker who sees only the model&#x27;s decisions" in html
    capsys.readouterr()


# ---------------------------------------------------------- strongest
def _counts(rows):
    """An ExperimentResult of own-threshold counts (no scores), one row per attack/seed."""
    out = []
    for r in rows:
        tlo, thi = clopper_pearson(r["tp"], r["n_members"])
        flo, fhi = clopper_pearson(r["fp"], r["n_nonmembers"])
        out.append({"repeat": r.get("repeat", 0), "seed": 0, "attack": r["attack"],
                    "tp": r["tp"], "n_members": r["n_members"], "fp": r["fp"],
                    "n_nonmembers": r["n_nonmembers"], "tpr": r["tp"] / r["n_members"],
                    "tpr_low": tlo, "tpr_high": thi, "fpr": r["fp"] / r["n_nonmembers"],
                    "fpr_low": flo, "fpr_high": fhi, "fpr_target": 0.01, "fpr_requested": 0.01,
                    "auc": 0.5, "auc_low": 0.45, "auc_high": 0.55})
    return ExperimentResult(scores=pd.DataFrame(), metrics=pd.DataFrame(out))


def test_an_attack_no_better_than_chance_is_never_strongest():
    # the label-only forest: TPR 0.009 against FPR 0.015
    result = _counts([{"attack": "noise", "tp": 18, "n_members": 2000, "fp": 15,
                       "n_nonmembers": 1000},
                      {"attack": "gap", "tp": 0, "n_members": 2000, "fp": 0,
                       "n_nonmembers": 1000}])
    state = verdict_state(result)
    assert state.strongest is None and state.state == NOT_SHOWN
    first = verdict_lines(result)[0]
    assert "no attack did better than chance: none flags training records more often than " \
           "non-members" in first and "strongest" not in first.lower()
    ranking = next(line for line in verdict_lines(result) if line.startswith("“Strongest”"))
    assert "never the strongest" in ranking


def test_multi_seed_verdict_counts_whole_records():
    rows = [{"attack": "lira", "tp": tp, "n_members": 500, "fp": 2, "n_nonmembers": 500,
             "repeat": i} for i, tp in enumerate((200, 210, 210))]
    first = verdict_lines(_counts(rows))[0]
    assert "207 of 500 training records per seed on average (seeds: 200, 210, 210)" in first
    assert "206.6" not in first


def test_one_delta_for_the_api_and_the_cli():
    assert build_parser().parse_args(["audit"]).delta == DEFAULT_DELTA
    result = _counts([{"attack": "lira", "tp": 60, "n_members": 300, "fp": 3,
                       "n_nonmembers": 300}])
    (check,) = evaluate_gate(result, "epsilon=1").checks
    assert f"for δ = {DEFAULT_DELTA:g}" in check.reason


# ------------------------------------------------------------- the flags
@pytest.mark.parametrize("flags, message", [
    (["--fail-above", "auc=0.6", "--fail-above", "auc=0.7"],
     "--fail-above: auc is limited twice; give each metric one limit"),
    (["--fail-above", ""], "argument --fail-above: '' gives no limit"),
    (["--fail-above", ","], "gives no limit"),
    (["--accept-warning", "swapped"], "unknown warning 'swapped'"),
])
def test_bad_gate_flags_are_refused_before_any_work(files, tmp_path, capsys, monkeypatch,
                                                    flags, message):
    import tabmia.audit

    def never(*args, **kwargs):
        raise AssertionError("the audit ran")

    monkeypatch.setattr(tabmia.audit, "audit_model", never)
    out = tmp_path / "bad"
    assert _audit(files, out, "train.csv", "pop.csv", *flags) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tabmia: error:") and message in err[0], err
    assert not out.exists()


def test_terminal_summary_fits_100_columns(files, tmp_path, capsys):
    assert _audit(files, tmp_path / "o", "train.csv", "pop.csv", "--attacks",
                  "loss,entropy,confidence,modified_entropy") == 0
    printed = capsys.readouterr().out.splitlines()
    assert max(map(len, printed)) <= 100
    assert re.search(r"^attack +members flagged +TPR \[95%\]", "\n".join(printed), re.M)


def test_an_attack_silent_in_some_seeds_is_said():
    rows = [{"attack": "lira", "tp": 40, "n_members": 500, "fp": 4, "n_nonmembers": 500,
             "repeat": i} for i in range(3)]
    rows += [{"attack": "noise", "tp": tp, "n_members": 500, "fp": 3, "n_nonmembers": 500,
              "repeat": i} for i, tp in enumerate((9, 0, 12))]
    result = _counts(rows)
    assert verdict_state(result).silent_seeds == {"noise": [1]}
    assert "noise flagged no record at its own threshold in seed 1 of 3" in " ".join(
        verdict_lines(result))


class _Inverted(RandomForestClassifier):
    """A forest whose probabilities are turned around: it fits its training records worst,
    as swapped files or inverted scores would make any model look."""

    def predict_proba(self, X):
        return super().predict_proba(X)[:, ::-1]


def test_membership_experiment_records_an_auc_below_chance():
    from tabmia.experiment import MembershipExperiment

    # noisy labels: the forest fits its members exactly and is unsure elsewhere
    X, y = make_classification(n_samples=600, n_features=8, flip_y=0.3, random_state=0)
    experiment = MembershipExperiment(_Inverted(n_estimators=30, random_state=0),
                                      {"loss": LossAttack(fpr=0.05)}, random_state=0)
    with pytest.warns(PlausibilityWarning, match="AUC below 0.5 beyond chance: loss"):
        result = experiment.run(X, y)
    assert [f.check for f in result.findings] == ["auc_below_chance"]
    assert verdict_state(result).state == CANNOT_TELL
    assert evaluate_gate(result, "auc=0.6").exit_status == EXIT_UNRESOLVED


# ------------------------------------------- issue 38: the gate reads the verdict's state
@pytest.fixture(scope="module")
def label_files(files):
    """One-hot probability files of the forest (the attacker sees only its decisions)."""
    import joblib

    forest = joblib.load(files / "model.joblib")
    for name in ("train", "pop"):
        X = pd.read_csv(files / f"{name}.csv").drop(columns=LABEL)
        pd.DataFrame(np.eye(2)[forest.predict(X)], columns=["0", "1"]).to_csv(
            files / f"{name}_onehot.csv", index=False)
    return files


def _payload(out):
    return json.loads((out / "results.json").read_text())


def test_label_only_gap_with_ties_cannot_tell_in_the_verdict_and_the_gate(files, tmp_path,
                                                                            capsys):
    """The issue's case: --label-only --attacks gap at 1% FPR; the verdict cannot tell, so
    the gate exits 3 (it used to PASS on the tie-break bound), naming both causes."""
    gate = ["--label-only", "--attacks", "gap", "--fpr", "0.01", "--fail-above",
            "tpr@0.01=0.05"]
    argv = ["audit", "--model-file", str(files / "model.joblib"), "--train",
            str(files / "train.csv"), "--population", str(files / "pop.csv"), "--label", LABEL,
            "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*argv, *gate, "--out", str(tmp_path / "a")])
    lines = _gate_lines(capsys.readouterr().err)
    payload = _payload(tmp_path / "a")
    assert payload["state"]["state"] == CANNOT_TELL and code == EXIT_UNRESOLVED
    assert payload["state"]["causes"] == ["ties"] and payload["state"]["attacker_sees"] == \
        "decisions only"
    assert payload["gate"]["blocked_by"] == ["ties", "label_only"]
    assert lines[0].startswith("tabmia: gate: tpr@0.01 <= 0.05 (attacker sees decisions only)")
    assert lines[-1].startswith("tabmia: gate: CANNOT TELL (exit status 3): every attack's "
                                "scores tie")
    assert "(label_only)" in lines[-1]
    # ties accepted: the label-only scope of a model with probabilities still needs accepting
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*argv, *gate, "--accept-warning", "ties", "--out", str(tmp_path / "b")])
    lines = _gate_lines(capsys.readouterr().err)
    assert code == EXIT_UNRESOLVED and _payload(tmp_path / "b")["gate"]["blocked_by"] == [
        "label_only"]
    # both accepted (one name repeated): the limits decide on the tie-break bound, which the
    # verdict states too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*argv, *gate, "--accept-warning", "ties,label_only",
                     "--accept-warning", "ties", "--out", str(tmp_path / "c")])
    lines = _gate_lines(capsys.readouterr().err)
    payload = _payload(tmp_path / "c")
    assert payload["gate"]["accepted_warnings"] == ["ties", "label_only"]
    assert payload["state"]["state"] == NOT_SHOWN
    bound = payload["state"]["tie_bounds"]["gap"]
    check = payload["gate"]["checks"][0]
    assert check["high"] == pytest.approx(bound)
    assert f"at most {bound:.3f} of the 300 training records" in payload["verdict"][0]
    expected = {"below": 0, "above": 1, "unresolved": 3}[payload["gate"]["limits_outcome"]]
    assert code == expected
    if code == 0:
        assert lines[-1].endswith("for an attacker who sees only the model's decisions "
                                  "(label_only accepted: the model's probabilities were not "
                                  "audited)")


def test_label_only_scope_of_a_model_with_probabilities_needs_accepting(files, tmp_path,
                                                                         capsys):
    """Default label-only attacks: the verdict says the probabilities are not covered; the
    gate does not say a plain PASS for them, and --accept-warning label_only acts."""
    argv = ["audit", "--model-file", str(files / "model.joblib"), "--train",
            str(files / "train.csv"), "--population", str(files / "pop.csv"), "--label", LABEL,
            "--quiet", "--label-only", "--attacks", "gap,noise_robustness", "--fpr", "0.05",
            "--fail-above", "tpr@0.05=0.9"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*argv, "--out", str(tmp_path / "a")])
    lines = _gate_lines(capsys.readouterr().err)
    payload = _payload(tmp_path / "a")
    assert payload["state"]["hidden_scores"] and payload["gate"]["limits_outcome"] == "below"
    assert "not covered by this audit" in payload["verdict"][0]
    assert code == EXIT_UNRESOLVED and "label_only" in payload["gate"]["blocked_by"]
    assert all("(attacker sees decisions only)" in line for line in lines[:-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*argv, "--accept-warning", "label_only,ties", "--out", str(tmp_path / "b")])
    lines = _gate_lines(capsys.readouterr().err)
    assert code == 0 and "label_only accepted" in lines[-1]
    assert "(label_only accepted" in (tmp_path / "b" / "report.html").read_text()


def test_one_hot_files_with_the_loss_attack_give_one_state(label_files, tmp_path, capsys):
    out = tmp_path / "onehot"
    code = main(["audit", "--train", str(label_files / "train.csv"), "--population",
                 str(label_files / "pop.csv"), "--label", LABEL, "--train-proba",
                 str(label_files / "train_onehot.csv"), "--population-proba",
                 str(label_files / "pop_onehot.csv"), "--attacks", "loss", "--quiet",
                 "--fail-above", "tpr@0.01=0.05", "--out", str(out)])
    capsys.readouterr()
    payload = _payload(out)
    assert payload["state"]["state"] == CANNOT_TELL and payload["state"]["labels_only"]
    assert code == EXIT_UNRESOLVED and payload["gate"]["outcome"] == "unresolved"
    assert payload["gate"]["blocked_by"] == payload["state"]["causes"] == ["ties"]


def test_accepting_a_finding_the_audit_did_not_raise_is_said(files, tmp_path, capsys):
    out = tmp_path / "honest"
    code = _audit(files, out, "train.csv", "pop.csv", "--fail-above", "auc=0.99",
                  "--accept-warning", "label_shift,label_shift")
    lines = _gate_lines(capsys.readouterr().err)
    payload = _payload(out)
    assert code == 0
    assert payload["config"]["accept_warnings"] in (["label_shift"], ["label_shift",
                                                                      "label_shift"])
    assert payload["state"]["accepted_warnings"] == ["label_shift"]
    assert payload["state"]["accepted_not_raised"] == ["label_shift"]
    assert ("tabmia: gate: --accept-warning label_shift: this audit raised no such finding, so "
            "there was nothing to accept") in lines
    assert any(line.startswith("Accepted by the user but not raised by this audit")
               for line in payload["verdict"])


def test_missing_data_file_keeps_the_loaders_hints(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TABMIA_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("TABMIA_OFFLINE", "1")
    assert main(["audit", "--dataset", "adult", "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tabmia: error: UCI Adult: data file not found")
    assert "TABMIA_DATA" in err[0]
