"""Shadow-based attacks on a CatBoost target with ``cat_features``.

CatBoost's ``get_params`` returns a fresh list for ``cat_features`` on every call, which
``sklearn.base.clone`` refuses; LiRA and RMIA clone the target's recipe (and the
experiment clones the attack), so both used to crash.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, clone

from tabmia._estimators import clone_unfitted
from tabmia.attacks import LiRAAttack, RMIAAttack

catboost = pytest.importorskip("catboost")


def _data(n: int = 500, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "a": rng.normal(size=n),
        "b": rng.normal(size=n),
        "c": rng.choice(["x", "y", "z"], size=n),
    })
    y = ((X["a"] + (X["c"] == "x")) > 0.5).astype(int).to_numpy()
    return X, y


def _recipe():
    return catboost.CatBoostClassifier(
        cat_features=["c"], iterations=30, verbose=0, random_seed=0, thread_count=1
    )


@pytest.fixture(scope="module")
def game():
    X, y = _data()
    target = _recipe().fit(X.iloc[:200], y[:200])
    return X, y, target


def test_sklearn_clone_refuses_the_recipe_and_clone_unfitted_copies_it():
    recipe = _recipe()
    with pytest.raises(RuntimeError, match="cat_features"):
        clone(recipe)
    copy = clone_unfitted(recipe)
    assert copy is not recipe and type(copy) is type(recipe)
    assert copy.get_params(deep=False) == recipe.get_params(deep=False)
    assert not copy.is_fitted()


def test_clone_unfitted_still_refuses_a_constructor_that_modifies_a_parameter():
    class Modifies(BaseEstimator):
        def __init__(self, k=1):
            self.k = k + 1

        def fit(self, X, y):
            return self

    with pytest.raises(RuntimeError):
        clone_unfitted(Modifies(k=3))


@pytest.mark.parametrize(
    "attack_cls, params",
    [(LiRAAttack, {"n_shadow": 4}), (RMIAAttack, {"n_reference": 4, "a": 0.5})],
)
def test_shadow_attacks_audit_a_catboost_target_with_cat_features(game, attack_cls, params):
    X, y, target = game
    attack = attack_cls(target, fpr=0.1, random_state=0, **params)
    # the experiment harness clones the attack, recipe parameters included
    attack = clone(attack).set_params(**{
        ("shadow_estimator" if attack_cls is LiRAAttack else "reference_estimator"): _recipe()
    })
    attack = clone(attack).fit(X.iloc[200:400], y[200:400])
    n_models = params.get("n_shadow", params.get("n_reference"))
    assert len(attack.population_.models_) == n_models
    assert all(m.get_params()["cat_features"] == ["c"] for m in attack.population_.models_)
    rows = np.r_[0:200, 400:500]  # members, then fresh non-members
    cand, y_cand = X.iloc[rows], y[rows]
    s = attack.decision_function(cand, y_cand)
    assert s.shape == (300,) and np.isfinite(s).all()
    assert np.unique(np.round(s, 9)).size > 50
    pred = attack.predict(cand, y_cand)
    assert set(np.unique(pred)) <= {0, 1}


def test_cli_audits_a_catboost_model_file_with_its_recipe(tmp_path, game):
    import joblib

    from tabmia.cli import main

    X, y, target = game
    frame = X.assign(label=y)
    frame.iloc[:200].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[200:].to_csv(tmp_path / "population.csv", index=False)
    joblib.dump(target, tmp_path / "model.joblib")
    joblib.dump(_recipe(), tmp_path / "recipe.joblib")
    out = tmp_path / "out"
    code = main([
        "audit", "--model-file", str(tmp_path / "model.joblib"),
        "--train", str(tmp_path / "train.csv"),
        "--population", str(tmp_path / "population.csv"), "--label", "label",
        "--recipe", str(tmp_path / "recipe.joblib"), "--attacks", "lira,rmia",
        "--n-shadow", "4", "--n-references", "2", "--fpr", "0.1",
        "--out", str(out), "--quiet",
    ])
    assert code == 0
    scores = pd.read_csv(out / "scores.csv.gz")
    assert set(scores["attack"]) == {"lira", "rmia"}
    assert np.isfinite(scores["score"]).all()
    # every training record is a candidate of both attacks
    members = scores[scores["source"] == "train"]
    assert (members.groupby("attack").size() == 200).all()
