"""LeafAttack: its FPR promise on fresh non-members, chance on a model that never saw
the candidates, and a strong signal on an overfit forest."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression

from tabmia.attacks import LeafAttack, membership_tags
from tabmia.metrics import auc
from tabmia.recipes import make_attack
from tabmia.structure import NotATreeModelError


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(9000, n_features=10, n_informative=6, n_classes=2,
                               flip_y=0.1, random_state=1)
    return X.astype(np.float32), y


MODELS = {
    "bootstrap_forest": lambda: RandomForestClassifier(40, random_state=0),
    "hist_boosting": lambda: HistGradientBoostingClassifier(max_iter=30, early_stopping=False),
}


@pytest.mark.parametrize("name", MODELS)
def test_fpr_promise_holds_on_fresh_nonmembers(name, data):
    X, y = data
    train, public, fresh = np.arange(500), np.arange(500, 2500), np.arange(2500, 9000)
    model = MODELS[name]().fit(X[train], y[train])
    flagged = 0
    for fpr in (0.01, 0.05):
        attack = LeafAttack(model, fpr=fpr).fit(X[public], y[public])
        flagged = int(attack.predict(X[fresh], y[fresh]).sum())
        # conformal: at most fpr in expectation; one-sided binomial test at 1%
        assert binom.sf(flagged - 1, fresh.size, fpr) > 0.01, (fpr, flagged / fresh.size)
        assert flagged > 0  # the threshold is not simply above every score


def test_chance_on_a_model_that_never_saw_the_candidates(data):
    X, y = data
    model = RandomForestClassifier(40, random_state=0).fit(X[:500], y[:500])
    attack = LeafAttack(model).fit(X[500:2500], y[500:2500])
    # both groups from the population: neither was trained on
    s = attack.decision_function(X[2500:4500], y[2500:4500])
    assert abs(auc(np.r_[np.ones(1000, bool), np.zeros(1000, bool)], s) - 0.5) < 0.05


def test_beats_chance_and_the_loss_attack_on_an_overfit_forest(data):
    X, y = data
    train, public, out = np.arange(500), np.arange(500, 2500), np.arange(2500, 3000)
    model = RandomForestClassifier(40, random_state=0).fit(X[train], y[train])
    member = np.r_[np.ones(500, bool), np.zeros(500, bool)]
    cand = np.r_[train, out]
    leaf = LeafAttack(model).fit(X[public], y[public])
    loss = make_attack("loss").set_params(target=model).fit(X[public], y[public])
    s = leaf.decision_function(X[cand], y[cand])
    assert auc(member, s) > 0.8
    tpr_leaf = leaf.predict(X[train], y[train]).mean()
    tpr_loss = loss.predict(X[train], y[train]).mean()
    assert tpr_leaf > tpr_loss + 0.1


def test_white_box_tag_preset_and_refusal(data):
    X, y = data
    assert membership_tags(LeafAttack()).white_box
    assert isinstance(make_attack("leaf"), LeafAttack)
    linear = LogisticRegression().fit(X[:200], y[:200])
    with pytest.raises(NotATreeModelError, match="needs the fitted tree model itself"):
        LeafAttack(linear).fit(X[200:400], y[200:400])
