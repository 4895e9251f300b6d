"""Plausibility checks: they catch the wrong inputs of issue 16, keep their stated error
rates on honest inputs, and raise nothing on the built-in games and the examples' setups."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from tabmia import PlausibilityWarning
from tabmia.attacks import LossAttack, ScoreAttack
from tabmia.audit import audit_model
from tabmia.plausibility import (
    ALPHA,
    check_attack_scores,
    check_inputs,
    fit_gap_test,
    is_one_hot,
    label_shift_test,
)
from tabmia.recipes import make_model
from tabmia.target import TargetModel


@pytest.fixture(scope="module")
def cancer():
    """Breast cancer split at random: 300 training records, 269 population records."""
    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(y))
    X, y = X[order], y[order]
    model = RandomForestClassifier(n_estimators=30, random_state=0).fit(X[:300], y[:300])
    return model, X[:300], y[:300], X[300:], y[300:]


def _checks(findings):
    return [f.check for f in findings]


# ------------------------------------------------------------ the cases
def test_honest_inputs_raise_nothing(cancer):
    assert check_inputs(*cancer) == []


def test_swapped_files_are_a_fit_gap(cancer):
    model, X_tr, y_tr, X_pop, y_pop = cancer
    found = check_inputs(model, X_pop, y_pop, X_tr, y_tr)
    assert _checks(found) == ["fit_gap"]
    assert found[0].p_value < ALPHA
    assert "swapped" in found[0].message and f"p = {found[0].p_value:.2g}" in found[0].message


def test_one_class_training_labels_are_a_label_shift_and_a_fit_gap(cancer):
    model, X_tr, y_tr, X_pop, y_pop = cancer
    found = check_inputs(model, X_tr, np.ones_like(y_tr), X_pop, y_pop)
    assert _checks(found) == ["fit_gap", "label_shift"]
    assert all(f.p_value < ALPHA for f in found)
    assert "1: 100.0%" in found[1].message and "Fisher's exact test" in found[1].message


def test_one_hot_outputs_are_a_label_only_note(cancer):
    _, X_tr, y_tr, X_pop, y_pop = cancer
    tree = DecisionTreeClassifier(random_state=0).fit(X_tr, y_tr)  # pure leaves: 0/1 only
    found = check_inputs(tree, X_tr, y_tr, X_pop, y_pop)
    assert _checks(found) == ["label_only"]
    assert "labels_only=True" in found[0].message and found[0].p_value is None
    assert "noise robustness and boundary distance" in found[0].message
    # declared label-only: the user knows, nothing to report
    declared = TargetModel(tree, labels_only=True)
    assert check_inputs(declared, X_tr, y_tr, X_pop, y_pop) == []


def test_swapped_files_give_an_auc_below_chance(cancer):
    model, X_tr, y_tr, X_pop, y_pop = cancer
    honest = audit_model(model, X_tr, y_tr, X_pop, y_pop, {"loss": LossAttack(fpr=0.05)})
    assert check_attack_scores(honest.scores) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlausibilityWarning)
        swapped = audit_model(model, X_pop, y_pop, X_tr, y_tr, {"loss": LossAttack(fpr=0.05)})
    found = check_attack_scores(swapped.scores)
    assert _checks(found) == ["auc_below_chance"]
    assert found[0].message.startswith("AUC below 0.5 beyond chance: loss 0.4")
    assert "swapped" in found[0].message and "It scores" in found[0].message
    repeats = pd.concat([swapped.scores, honest.scores.assign(repeat=1)])  # Bonferroni x2
    (found,) = check_attack_scores(repeats)
    assert "loss (repeat 0) 0.4" in found.message and "repeat 1" not in found.message
    assert "Bonferroni-corrected over 2" in found.message
    (found,) = check_attack_scores(pd.concat([swapped.scores,
                                              swapped.scores.assign(attack="entropy")]))
    assert "loss 0.4" in found.message and "entropy 0.4" in found.message
    assert "These attacks score" in found.message


def test_audit_model_warns_before_the_attacks(cancer, monkeypatch):
    import tabmia.experiment

    model, X_tr, y_tr, X_pop, y_pop = cancer
    # audit_model plays its round through tabmia.experiment.run_attacks
    real, seen = tabmia.experiment.run_attacks, []

    def run_attacks(*args, **kwargs):
        seen.extend(str(w.message)[:25] for w in caught)
        return real(*args, **kwargs)

    monkeypatch.setattr(tabmia.experiment, "run_attacks", run_attacks)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        audit_model(model, X_pop, y_pop, X_tr, y_tr, {"loss": LossAttack(fpr=0.05)})
    found = [str(w.message) for w in caught if w.category is PlausibilityWarning]
    assert seen == ["the model fits its traini"]  # warned before any attack ran
    assert found[0].startswith("the model fits its training records worse")
    assert found[1].startswith("AUC below 0.5 beyond chance: loss 0.")


# ---------------------------------------------------------------- error rates
def test_label_test_false_alarm_rate_is_alpha_under_random_splits():
    rng = np.random.RandomState(0)
    alpha, n_sims = 0.05, 600
    for k, method in ((2, "Fisher"), (4, "chi-square test")):
        p = np.array([label_shift_test(rng.randint(k, size=200), rng.randint(k, size=150))[0]
                      for _ in range(n_sims)])
        # Fisher is conservative; the chi-square test is asymptotically exact
        assert np.mean(p < alpha) <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / n_sims), method
    assert label_shift_test(rng.randint(4, size=200), rng.randint(4, size=150))[1] == method


def test_label_test_small_counts_use_monte_carlo_tables():
    rare = np.r_[np.zeros(40, int), np.ones(40, int), [2]]  # expected count of class 2 < 5
    p, method = label_shift_test(rare, np.r_[np.zeros(40, int), np.ones(40, int)])
    assert "Monte Carlo" in method and p > 0.3
    p, _ = label_shift_test(np.r_[np.zeros(60, int), [2, 2, 2, 2]], np.r_[np.ones(60, int)])
    assert p <= 1e-4  # the smallest Monte Carlo p: 1 / (9999 + 1)


def test_fit_gap_false_alarm_rate_is_at_most_alpha_without_a_gap():
    rng = np.random.RandomState(1)
    alpha, n_sims = 0.05, 600
    p = np.array([fit_gap_test(rng.exponential(size=120), rng.exponential(size=100))[1]
                  for _ in range(n_sims)])
    assert np.mean(p < alpha) <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / n_sims)
    gap, p = fit_gap_test(rng.exponential(0.5, 300), rng.exponential(1.0, 300))
    assert gap < 0 and p > 0.99  # the honest direction: training records fit better
    assert fit_gap_test(np.zeros(30), np.zeros(40)) == (0.0, 1.0)  # all fit perfectly


def test_one_hot_detection():
    assert is_one_hot(np.eye(3)[[0, 2, 1, 1]])
    assert not is_one_hot([[0.5, 0.5]]) and not is_one_hot(np.zeros((0, 2)))
    assert not is_one_hot([[1.0, 1.0]])  # not a probability row


# ------------------------------------------- honest built-in games: no false alarm
#: (data set, max records) of the built-in games: the embedded set and the shared data's
GAMES = [("breast_cancer", None), ("german_credit", None), ("hepatitis", None),
         ("heart_cleveland", None), ("heart_statlog", None), ("pima_diabetes", None),
         ("australian_credit", None), ("compas", 1500), ("adult", 1500),
         ("bank_marketing", 1500), ("taiwan_default", 1500)]
SCORE_ATTACKS = ("loss", "loss_class", "confidence", "entropy", "modified_entropy")


def _game_data(name, max_records):
    from tabmia.datasets import DataNotFoundError, load_dataset

    try:
        bunch = load_dataset(name)
    except DataNotFoundError:
        pytest.skip(f"{name} is not in the data home")
    X, y = bunch.data, np.asarray(bunch.target)
    if max_records is not None and len(y) > max_records:
        idx = np.sort(np.random.RandomState(0).choice(len(y), max_records, replace=False))
        X, y = X.iloc[idx] if hasattr(X, "iloc") else X[idx], y[idx]
    return X, y


def _no_false_alarm(recipe, X, y, seeds=(0, 1)):
    """The CLI's built-in game (half trains the target, the attacker gets half the rest)
    with every score attack, over ``seeds``: no check fires."""
    from sklearn.base import clone

    from tabmia._attack_builder import build_attacks
    from tabmia.experiment import split_membership
    from tabmia.target import n_rows, take_rows

    frames = []
    for seed in seeds:
        split = split_membership(n_rows(X), random_state=seed)
        target = clone(recipe).fit(take_rows(X, split.train), y[split.train])
        population = np.r_[split.nonmembers, split.public]
        found = check_inputs(target, take_rows(X, split.train), y[split.train],
                             take_rows(X, population), y[population])
        assert found == [], [f.message for f in found]
        candidates = np.r_[split.members, split.nonmembers]
        X_cand, member = take_rows(X, candidates), np.isin(candidates, split.members)
        for name, attack in build_attacks(list(SCORE_ATTACKS), fpr=0.05).items():
            attack.set_params(target=target).fit(take_rows(X, split.public), y[split.public])
            frames.append(pd.DataFrame({"attack": name, "repeat": seed, "member": member,
                                        "score": attack.decision_function(X_cand, y[candidates])}))
    found = check_attack_scores(pd.concat(frames, ignore_index=True))
    assert found == [], [f.message for f in found]


@pytest.mark.parametrize(("name", "max_records"), GAMES, ids=[g[0] for g in GAMES])
def test_built_in_games_raise_no_plausibility_finding(name, max_records, request):
    if name != "breast_cancer":
        request.getfixturevalue("shared_data")
    X, y = _game_data(name, max_records)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the data sets' duplicate records
        _no_false_alarm(make_model("random_forest", X), X, y)
        if name == "breast_cancer":  # a model with no generalisation gap to speak of
            _no_false_alarm(make_model("logistic_regression", X), X, y)


def test_health_example_setup_raises_no_plausibility_finding():
    X, y = _game_data("breast_cancer", None)
    recipe = HistGradientBoostingClassifier(max_iter=200, early_stopping=False,
                                            categorical_features="from_dtype")
    _no_false_alarm(recipe, X, y)


def _example(name):
    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_german_credit_example_setup_raises_no_plausibility_finding(shared_data):
    from tabmia.datasets import load_german_credit

    data = load_german_credit()
    X, y = data.data, np.asarray(data.target)
    order = np.random.RandomState(0).permutation(len(X))  # the example's split
    train, population = order[:600], order[600:]
    model = _example("audit_german_credit").credit_model().fit(X.iloc[train], y[train])
    attacks = {"loss": LossAttack(fpr=0.05), "loss, class-based":
               LossAttack(class_based=True, fpr=0.05),
               "confidence": ScoreAttack(statistic="confidence", fpr=0.05)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlausibilityWarning)
        audit_model(model, X.iloc[train], y[train], X.iloc[population], y[population], attacks,
                    random_state=0)


def test_precomputed_example_setup_raises_no_plausibility_finding():
    from tabmia.target import PrecomputedProbabilities, TargetModel

    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import ExtraTreesClassifier

    # the example's set-up (examples/audit_precomputed_probabilities.py), without its audit
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    order = np.random.RandomState(1).permutation(len(X))
    train, population = order[:150], order[150:]
    their_model = ExtraTreesClassifier(n_estimators=50, random_state=0)
    their_model.fit(X.iloc[train], y.iloc[train])
    X_tr, y_tr = X.iloc[train], y.iloc[train]
    X_pop, y_pop = X.iloc[population], y.iloc[population]
    p_tr, p_pop = their_model.predict_proba(X_tr), their_model.predict_proba(X_pop)
    target = TargetModel(PrecomputedProbabilities(pd.concat([X_tr, X_pop]),
                                                  np.vstack([p_tr, p_pop])), classes=[0, 1])
    assert check_inputs(target, X_tr, y_tr, X_pop, y_pop) == []


def test_alpha_is_the_documented_level():
    page = (Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "report.md").read_text()
    assert ALPHA == 0.001 and "level 0.1%" in page and "tabmia.plausibility.ALPHA" in page


def test_a_model_without_a_gap_shows_no_fit_gap_when_swapped(cancer):
    """The documented limit: a model that fits its training records no better than others
    cannot tell which file it was trained on (and then leaks little either way)."""
    _, X_tr, y_tr, X_pop, y_pop = cancer
    model = LogisticRegression(max_iter=5000).fit(X_tr, y_tr)
    assert check_inputs(model, X_pop, y_pop, X_tr, y_tr) == []
