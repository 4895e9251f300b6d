"""Yeom loss attack and score-threshold attacks: thresholds, goals, class-based, Adult."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.frozen import FrozenEstimator

from tabmia.attacks import LossAttack, ScoreAttack
from tabmia.metrics import auc, clopper_pearson
from tabmia.target import TargetModel


@pytest.fixture(scope="module")
def game():
    X, y = make_classification(n_samples=12000, n_features=10, n_informative=6, flip_y=0.2,
                               random_state=1)
    target = RandomForestClassifier(n_estimators=30, min_samples_leaf=3, random_state=0)
    target.fit(X[:2000], y[:2000])
    return X, y, target


@pytest.mark.parametrize("alpha", [0.01, 0.05])
@pytest.mark.parametrize("score", ["loss", "confidence", "entropy", "hinge"])
def test_threshold_fpr_holds_on_fresh_nonmembers(game, score, alpha):
    X, y, target = game
    attack = ScoreAttack(target, statistic=score, fpr=alpha).fit(X[2000:6000], y[2000:6000])
    flagged = attack.predict(X[6000:], y[6000:])  # 6000 fresh non-members
    lo, hi = clopper_pearson(round(alpha * 6000), 6000)
    # threshold from 4000 public records carries its own binomial spread
    slack = 2.5 * np.sqrt(alpha * (1 - alpha) / 4000)
    assert lo - slack <= flagged.mean() <= hi + slack, (score, alpha, flagged.mean())


def test_class_based_thresholds_keep_fpr_per_class(game):
    X, y, target = game
    attack = LossAttack(target, class_based=True, fpr=0.05).fit(X[2000:6000], y[2000:6000])
    flagged = attack.predict(X[6000:], y[6000:])
    for c in (0, 1):
        assert flagged[y[6000:] == c].mean() == pytest.approx(0.05, abs=0.02)


def test_loss_attack_flags_members_more(game):
    X, y, target = game
    attack = LossAttack(target, fpr=0.05).fit(X[2000:6000], y[2000:6000])
    assert attack.predict(X[:2000], y[:2000]).mean() > 2 * attack.predict(X[6000:8000], y[6000:8000]).mean()
    s = attack.decision_function(np.r_[X[:2000], X[6000:8000]], np.r_[y[:2000], y[6000:8000]])
    assert auc(np.r_[np.ones(2000, bool), np.zeros(2000, bool)], s) > 0.6


@pytest.mark.parametrize("goal", ["max_ppv", "max_advantage"])
def test_procedure_5_1_goals_use_a_proxy(game, goal):
    X, y, target = game
    attack = LossAttack(target, threshold_goal=goal, prior=1.0, random_state=0)
    attack.fit(X[2000:6000], y[2000:6000])
    assert attack.proxy_ is not target and hasattr(attack.proxy_, "estimators_")
    # a PPV-maximising threshold is stricter than an advantage-maximising one
    if goal == "max_ppv":
        adv = LossAttack(target, threshold_goal="max_advantage", random_state=0)
        assert attack.threshold_ >= adv.fit(X[2000:6000], y[2000:6000]).threshold_


def test_proxy_refuses_frozen_estimator_and_non_sklearn_target(game):
    X, y, target = game
    with pytest.raises(ValueError, match="FrozenEstimator"):
        LossAttack(target, threshold_goal="max_ppv",
                   proxy_estimator=FrozenEstimator(target)).fit(X[2000:3000], y[2000:3000])
    with pytest.raises(ValueError, match="proxy_estimator"):
        blackbox = TargetModel(lambda Z: np.full((len(Z), 2), 0.5), classes=[0, 1])
        LossAttack(blackbox, threshold_goal="max_ppv").fit(
            X[2000:3000], y[2000:3000])


def test_clone_keeps_the_fitted_target(game):
    _, _, target = game
    a = LossAttack(target, fpr=0.02)
    b = clone(a)
    assert b.target is target and hasattr(b.target, "estimators_")


def test_adult_pipeline_with_categorical_dataframe(shared_data):
    """An attack on Pipeline(ColumnTransformer(OneHotEncoder, StandardScaler), HGB) over Adult."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from tabmia.datasets import load_adult

    bunch = load_adult(data_home=shared_data)
    X, y = bunch.data, np.asarray(bunch.target)
    cats = bunch.categorical_features
    nums = [c for c in X.columns if c not in cats]
    assert len(cats) >= 5 and all(str(X[c].dtype) == "category" for c in cats)
    rng = np.random.RandomState(0)
    idx = rng.permutation(len(X))
    tr, pub, out = idx[:3000], idx[3000:9000], idx[9000:12000]
    target = Pipeline([
        ("prep", ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore",
                                                          sparse_output=False), cats),
                                    ("num", StandardScaler(), nums)])),
        ("hgb", HistGradientBoostingClassifier(max_iter=300, early_stopping=False,
                                               random_state=0)),
    ]).fit(X.iloc[tr], y[tr])
    attack = LossAttack(target, fpr=0.01).fit(X.iloc[pub], y[pub])
    cand = np.r_[tr, out]
    s = attack.decision_function(X.iloc[cand], y[cand])
    member = np.r_[np.ones(tr.size, bool), np.zeros(out.size, bool)]
    assert auc(member, s) > 0.55
    assert attack.predict(X.iloc[out], y[out]).mean() < 0.03
