"""OneRunAudit end to end: canaries, one training run, guesses, bounds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tabmia.dp import (
    GaussianMembershipClassifier,
    OneRunAudit,
    RandomizedResponseClassifier,
    gdp_epsilon,
    make_canaries,
)


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(return_X_y=True)


def test_memorising_model_violates_a_small_epsilon(cancer):
    X, y = cancer
    result = OneRunAudit(KNeighborsClassifier(1), n_canaries=250, canaries="flipped",
                         claimed_epsilon=1.0, random_state=0).run(X, y)
    assert result.violated and result.epsilon_lower > 1.5
    assert result.p_value < 0.05
    assert result.accuracy > 0.95
    assert result.n_canaries == 250 and 90 < result.n_included < 160
    assert result.n_guesses == result.k_plus + result.k_minus == np.abs(result.guessed).sum()
    # the guesses that were counted are the ones in the per-canary arrays
    right = ((result.guessed == 1) & result.included) | ((result.guessed == -1) & ~result.included)
    assert right.sum() == result.n_correct
    assert "violated at 95 % confidence" in result.sentence()
    assert result.to_dict()["violated"] is True


def test_exactly_private_recipe_stays_under_its_epsilon(cancer):
    """Randomised response behind the full runner (canaries drawn, included with
    probability 1/2, one fit): the bound exceeds the true epsilon rarely; 6 of 30
    has probability below 1 % for a sound audit."""
    X, y = cancer
    eps = 2.0
    bounds = np.array([
        OneRunAudit(RandomizedResponseClassifier(eps), n_canaries=250, score="entropy",
                    delta=0.0, random_state=seed).run(X, y).epsilon_lower
        for seed in range(30)
    ])
    assert (bounds > eps).sum() <= 5
    assert bounds.mean() > 0.4 * eps


def test_gaussian_recipe_gdp_bound(cancer):
    X, y = cancer
    result = OneRunAudit(GaussianMembershipClassifier(3.0), n_canaries=280, score="entropy",
                         random_state=2, claimed_epsilon=gdp_epsilon(3.0, 1e-5)).run(X, y)
    assert 0.5 < result.mu_lower <= 3.0
    assert result.epsilon_lower_gdp <= gdp_epsilon(3.0, 1e-5)
    # epsilon 16.7 is out of reach of 280 canaries (their every guess right refutes at
    # most ~3): the verdict says it cannot tell rather than "consistent"
    assert not result.violated and result.claim_check.state == "cannot_tell"
    assert "Cannot tell whether" in result.sentence()


def test_flipped_canaries_leak_more_than_real_records(cancer):
    X, y = cancer
    recipe = make_pipeline(StandardScaler(), LogisticRegression(C=100.0, max_iter=2000))
    real = OneRunAudit(recipe, n_canaries=250, canaries="records", random_state=0).run(X, y)
    flipped = OneRunAudit(recipe, n_canaries=250, canaries="flipped", random_state=0).run(X, y)
    assert flipped.epsilon_lower > real.epsilon_lower


def test_canaries_of_each_kind():
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"age": rng.randint(18, 90, 100), "income": rng.normal(size=100),
                      "job": rng.choice(["a", "b"], 100)})
    y = rng.choice(["no", "yes"], 100)
    index = np.arange(10)
    Xr, yr = make_canaries(X, y, index, "records", random_state=0)
    assert Xr.equals(X.iloc[:10]) and (yr == y[:10]).all()
    _, yf = make_canaries(X, y, index, "flipped", random_state=0)
    assert (yf != y[:10]).all()
    Xo, yo = make_canaries(X, y, index, "outliers", random_state=0)
    outside = (Xo["age"] > X["age"].max()) | (Xo["age"] < X["age"].min())
    assert outside.all() and ((Xo["income"] > X["income"].max())
                              | (Xo["income"] < X["income"].min())).all()
    assert (Xo["job"] == X["job"].iloc[:10]).all()  # categories kept
    assert set(yo) <= {"no", "yes"}
    with pytest.raises(ValueError, match="canaries must be"):
        make_canaries(X, y, index, "poisoned")


def test_dataframe_recipe_with_outliers_runs():
    from tabmia.recipes import make_model

    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300),
                      "c": rng.choice(["u", "v", "w"], 300)})
    y = (X["a"] + rng.normal(size=300) > 0).astype(int).to_numpy()
    result = OneRunAudit(make_model("random_forest", X), n_canaries=100, canaries="outliers",
                         guesses="holdout", random_state=0).run(X, y)
    assert result.guesses == "holdout" and result.n_canaries == 50
    assert result.context["canaries"] == "outliers"


def test_attack_as_score_needs_public_records(cancer):
    from tabmia.attacks import LossAttack

    X, y = cancer
    with pytest.raises(ValueError, match="public_size"):
        OneRunAudit(KNeighborsClassifier(1), score=LossAttack(None)).run(X, y)
    result = OneRunAudit(KNeighborsClassifier(1), n_canaries=200, canaries="flipped",
                         score=LossAttack(None), public_size=100, random_state=0).run(X, y)
    assert result.context["public records"] == 100 and result.epsilon_lower > 1.5


@pytest.mark.parametrize("kw, match", [
    ({"canaries": "odd"}, "canaries must be"),
    ({"score": "auc"}, "score must be"),
    ({"guesses": "best"}, "guesses must be"),
    ({"n_canaries": 1}, "at least 2"),
    ({"n_canaries": 600}, "no training records"),
    ({"n_canaries": 1.5}, "fraction"),
])
def test_bad_settings_are_refused(cancer, kw, match):
    X, y = cancer
    with pytest.raises(ValueError, match=match):
        OneRunAudit(KNeighborsClassifier(1), **kw).run(X, y)
