"""Adding an attack is its class, its preset line and its tests (issue 18).

The attacks here live in this test module only: a subclass of
:class:`~tabmia.attacks.BaseMembershipAttack` with its tags, and a preset registered
for the test. ``tabmia audit`` and ``tabmia benchmark`` run them as they run tabmia's
own attacks, and act on what their tags say, without any other tabmia file knowing
them.
"""

from __future__ import annotations

import json
from numbers import Integral
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest

from tabmia._attack_builder import build_attack
from tabmia.attacks import BaseMembershipAttack
from tabmia.cli import main
from tabmia.recipes import ATTACK_PRESETS


class MarginAttack(BaseMembershipAttack):
    """A toy attack: the target's hinge margin on the record's label (higher = member).

    It takes the runner's ``n_jobs`` (which it does not need) to show that a runner
    setting an attack declares in its tags reaches it.
    """

    _parameter_constraints = {**BaseMembershipAttack._parameter_constraints,
                              "n_jobs": [None, Integral]}

    def __init__(self, target: Any = None, *, n_jobs: int | None = None,
                 threshold_goal: str = "fpr", fpr: float = 0.01, unresolved_fpr: str = "raise",
                 prior: float = 1.0, proxy_estimator: Any = None,
                 random_state: Any = None) -> None:
        self.target = target
        self.n_jobs = n_jobs
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.membership_tags.runner_settings |= {"n_jobs"}
        tags.membership_tags.run_params |= {"n_jobs"}
        return tags

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self.target_.statistic("hinge", X, y)


class NudgeAttack(MarginAttack):
    """A toy attack that queries the target on records it changes (so it needs a model)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.membership_tags.queries_perturbed_records = True
        return tags

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        nudged = np.asarray(X, dtype=float) * 1.01
        return self.target_.statistic("hinge", X, y) - self.target_.statistic("hinge", nudged, y)


class LogitMarginAttack(MarginAttack):
    """A toy attack that needs the target's logits (a torch model)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.membership_tags.target_outputs = "logits"
        return tags


@pytest.fixture()
def toy_presets(monkeypatch):
    """The toy attacks' preset lines, for this test only."""
    monkeypatch.setitem(ATTACK_PRESETS, "margin", (MarginAttack, {}))
    monkeypatch.setitem(ATTACK_PRESETS, "nudge", (NudgeAttack, {}))
    monkeypatch.setitem(ATTACK_PRESETS, "logit_margin", (LogitMarginAttack, {}))


def test_the_preset_takes_runner_settings_by_its_tags(toy_presets):
    attack = build_attack("margin", fpr=0.05, n_jobs=2, n_shadow=8, device="cpu")
    assert isinstance(attack, MarginAttack) and (attack.fpr, attack.n_jobs) == (0.05, 2)


def test_tabmia_audit_runs_a_new_attack(toy_presets, tmp_path):
    out = tmp_path / "audit"
    # --n-jobs is refused when no attack takes it: the toy's tags say it does
    assert main(["audit", "--attacks", "loss,margin", "--fpr", "0.05", "--n-jobs", "1",
                 "--out", str(out), "--quiet"]) == 0
    rows = {m["attack"]: m for m in json.loads((out / "results.json").read_text())["metrics"]}
    assert set(rows) == {"loss", "margin"}
    assert rows["margin"]["fpr_target"] == 0.05 and rows["margin"]["auc"] > 0.5
    scores = pd.read_csv(out / "scores.csv.gz")
    assert (scores["attack"] == "margin").sum() == (scores["attack"] == "loss").sum()


def test_tabmia_benchmark_runs_a_new_attack(toy_presets, tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["benchmark", "--datasets", "breast_cancer", "--model", "logistic_regression",
                 "--attacks", "loss,margin", "--quick", "--n-jobs", "1", "--no-html",
                 "--out", str(out), "--quiet"]) == 0
    assert "not used" not in capsys.readouterr().err  # the toy takes --n-jobs
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["attacks"] == ["loss", "margin"]
    # n_jobs is a run parameter of the toy (its tags): no part of its results' identity
    assert "n_jobs" not in results["settings"]["attack_params"]["margin"]
    auc = results["datasets"]["breast_cancer"]["attacks"]["margin"]["auc"]["mean"]
    assert auc > 0.5


def test_a_new_attack_that_perturbs_needs_a_model_file(toy_presets, tmp_path, capsys,
                                                       write_audit_files):
    train, pop = write_audit_files(tmp_path)
    model = joblib.load(tmp_path / "model.joblib")
    for name, frame in (("train", train), ("pop", pop)):
        proba = model.predict_proba(frame.drop(columns="diagnosis"))
        pd.DataFrame(proba, columns=[str(c) for c in model.classes_]).to_csv(
            tmp_path / f"{name}_proba.csv", index=False)
    common = ["audit", "--train", str(tmp_path / "train.csv"), "--population",
              str(tmp_path / "pop.csv"), "--label", "diagnosis", "--fpr", "0.05", "--quiet"]
    assert main([*common, "--attacks", "nudge", "--train-proba", str(tmp_path / "train_proba.csv"),
                 "--population-proba", str(tmp_path / "pop_proba.csv"),
                 "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("tabmia: error: --attacks nudge query perturbed records: they need "
                       "--model-file, not precomputed probabilities")
    assert main([*common, "--attacks", "nudge", "--model-file", str(tmp_path / "model.joblib"),
                 "--out", str(tmp_path / "b")]) == 0


def test_an_attack_needing_more_than_the_target_gives_is_refused_by_its_tags(monkeypatch):
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    from tabmia.attacks import LossAttack
    from tabmia.experiment import MembershipExperiment

    X, y = load_breast_cancer(return_X_y=True)
    attacks = {"loss": LossAttack(fpr=0.05), "logit_margin": LogitMarginAttack(fpr=0.05)}
    with pytest.raises(ValueError, match=r"^the target gives probabilities only: logit_margin "
                                         r"\(needs logits\) cannot attack it; loss can$"):
        MembershipExperiment(LogisticRegression(max_iter=5000), attacks).run(X, y)


def test_tabmia_audit_refuses_it_in_one_line(toy_presets, tmp_path, capsys):
    out = tmp_path / "audit"
    assert main(["audit", "--attacks", "loss,logit_margin", "--fpr", "0.05", "--out", str(out),
                 "--quiet"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "tabmia: error: the target gives probabilities only: logit_margin (needs logits) "
        "cannot attack it; loss can"]
    assert not out.exists()
