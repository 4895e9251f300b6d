"""Every attack class, discovered (not listed by hand), keeps the same contract.

- finite float scores, one per candidate; predict == (score >= threshold_)
- same random_state, same scores; n_jobs does not change them
- clone keeps the fitted target by reference; get_params / set_params round-trip
- better than chance on an overfit target; at chance on a model that never saw
  the candidates (AUC within 0.5 +- 0.05, mean over seeds)
- documented bad input raises its documented error

A white-box attack (``white_box`` tag: it reads the model's trees) audits a random
forest trained on the same records instead of the MLP.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.neural_network import MLPClassifier

import tabmia.attacks
from tabmia.attacks import membership_tags
from tabmia.attacks.base import BaseMembershipAttack
from tabmia.metrics import auc
from tabmia.target import concat_rows


def _discover() -> list[type]:
    for info in pkgutil.iter_modules(tabmia.attacks.__path__):
        importlib.import_module(f"tabmia.attacks.{info.name}")
    found, stack = set(), [BaseMembershipAttack]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if (not inspect.isabstract(sub) and not sub.__name__.startswith("_")
                    and sub.__module__.startswith("tabmia.attacks")):
                found.add(sub)
    return sorted(found, key=lambda c: c.__name__)


ATTACKS = _discover()
PARALLEL_ATTACKS = [c for c in ATTACKS if "n_jobs" in c().get_params()]

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(seed: int):
    X, y = make_classification(n_samples=3000, n_features=12, n_informative=8, n_classes=3,
                               flip_y=0.15, class_sep=0.8, random_state=seed)
    return X.astype(np.float32), y


def _target(X, y, seed):
    return MLPClassifier(hidden_layer_sizes=(64, 64), max_iter=400, alpha=0.0,
                         random_state=seed).fit(X, y)


def _forest(X, y, seed):
    return RandomForestClassifier(n_estimators=30, random_state=seed).fit(X, y)


def _white_box(cls) -> bool:
    return membership_tags(cls()).white_box


@pytest.fixture(scope="module")
def overfit():
    X, y = _data(0)
    tr, pub, out = np.arange(400), np.arange(400, 2200), np.arange(2200, 2600)
    return {"target": _target(X[tr], y[tr], 0), "forest": _forest(X[tr], y[tr], 0), "X": X,
            "y": y, "public": pub, "members": tr, "nonmembers": out}


def _target_for(cls, d):
    """The overfit target this attack audits: the forest for a white-box attack."""
    return d["forest"] if _white_box(cls) else d["target"]


def _make(cls, target, **extra):
    if isinstance(target, dict):
        target = _target_for(cls, target)
    params = {**cls._fast_params(), **extra}
    return cls(target=target, **params)


def _fit(attack, X, y, pub, cand):
    if attack.fit_includes_candidates:
        return attack.fit(concat_rows([X[pub], X[cand]]), np.r_[y[pub], y[cand]])
    return attack.fit(X[pub], y[pub])


def _run(attack, d, random_state=0):
    attack.set_params(random_state=random_state)
    cand = np.r_[d["members"], d["nonmembers"]]
    _fit(attack, d["X"], d["y"], d["public"], cand)
    return attack.decision_function(d["X"][cand], d["y"][cand])


def test_discovery_finds_every_exported_attack():
    exported = {
        name for name in tabmia.attacks.__all__
        if inspect.isclass(cls := getattr(tabmia.attacks, name))
        and issubclass(cls, BaseMembershipAttack) and not inspect.isabstract(cls)
    }
    assert len(exported) >= 8  # the package exports at least the eight documented attacks
    assert exported == {c.__name__ for c in ATTACKS}


@pytest.mark.parametrize("cls", ATTACKS, ids=lambda c: c.__name__)
def test_scores_shape_predict_determinism_and_overfit_signal(cls, overfit):
    a = _make(cls, overfit)
    s = _run(a, overfit)
    n = overfit["members"].size + overfit["nonmembers"].size
    assert s.shape == (n,) and s.dtype == np.float64 and np.all(np.isfinite(s))
    cand = np.r_[overfit["members"], overfit["nonmembers"]]
    assert np.array_equal(a.predict(overfit["X"][cand], overfit["y"][cand]), s >= a.threshold_)
    # same seed, same numbers
    s2 = _run(_make(cls, overfit), overfit)
    assert np.array_equal(s, s2)
    member = np.r_[np.ones(overfit["members"].size, bool), np.zeros(overfit["nonmembers"].size, bool)]
    assert auc(member, s) > 0.6, f"{cls.__name__} does not beat chance on an overfit target"


@pytest.mark.parametrize("cls", PARALLEL_ATTACKS, ids=lambda c: c.__name__)
def test_n_jobs_does_not_change_scores(cls, overfit):
    s1 = _run(_make(cls, overfit, n_jobs=1), overfit)
    s2 = _run(_make(cls, overfit, n_jobs=2), overfit)
    assert np.array_equal(s1, s2)


@pytest.mark.parametrize("cls", ATTACKS, ids=lambda c: c.__name__)
def test_clone_keeps_target_and_params_round_trip(cls, overfit):
    a = _make(cls, overfit, random_state=3)
    b = clone(a)
    assert b.target is _target_for(cls, overfit)
    assert b.get_params(deep=False).keys() == a.get_params(deep=False).keys()
    for k, v in a.get_params(deep=False).items():
        if k != "target":
            assert b.get_params(deep=False)[k] == v or b.get_params(deep=False)[k] is v
    fpr_before = a.fpr
    b.set_params(fpr=0.05)
    assert b.fpr == 0.05 and a.fpr == fpr_before
    # no work in __init__: nothing fitted before fit
    assert not hasattr(cls(), "threshold_")


@functools.lru_cache(maxsize=None)
def _unseen_game(seed: int):
    """A target and data shared by every attack class (trained once per seed)."""
    X, y = _data(100 + seed)
    return X, y, _target(X[:400], y[:400], seed), _forest(X[:400], y[:400], seed)


@pytest.mark.parametrize("cls", ATTACKS, ids=lambda c: c.__name__)
def test_chance_level_on_a_model_that_never_saw_the_candidates(cls):
    aucs = []
    for seed in range(3):
        X, y, mlp, forest = _unseen_game(seed)
        target = forest if _white_box(cls) else mlp
        # "members" come from the population, never from the training set
        d = {"X": X, "y": y, "public": np.arange(400, 2200), "members": np.arange(2200, 2600),
             "nonmembers": np.arange(2600, 3000)}
        s = _run(_make(cls, target), d, random_state=seed)
        aucs.append(auc(np.r_[np.ones(400, bool), np.zeros(400, bool)], s))
    assert abs(np.mean(aucs) - 0.5) < 0.05, aucs


@pytest.mark.parametrize("cls", ATTACKS, ids=lambda c: c.__name__)
def test_bad_input_raises_documented_errors(cls, overfit):
    X, y, pub = overfit["X"], overfit["y"], overfit["public"]
    with pytest.raises(ValueError, match="target is None"):
        cls(**cls._fast_params()).fit(X[pub], y[pub])
    a = _make(cls, overfit)
    with pytest.raises(ValueError, match="records but y has"):
        a.fit(X[pub], y[pub][:-1])
    with pytest.raises(ValueError, match="never saw"):
        a.fit(X[pub], np.full(pub.size, 7))
    # the FPR goal is checked whatever the attack's default goal is (Morgan: max_ppv)
    with pytest.raises(ValueError, match="fpr"):
        _make(cls, overfit, fpr=1.5, threshold_goal="fpr").fit(X[pub], y[pub])
    # Morgan refuses the FPR goal outright: it cannot promise one
    too_small = ("cannot promise an FPR" if cls.__name__ == "MorganAttack"
                 else "fpr=0.0001 cannot be promised from")
    with pytest.raises(ValueError, match=too_small):
        _make(cls, overfit, fpr=1e-4, threshold_goal="fpr").fit(X[pub], y[pub])
    with pytest.raises(Exception, match="not fitted"):
        a.decision_function(X[:5], y[:5])
    _fit(a, X, y, pub, np.r_[overfit["members"], overfit["nonmembers"]])
    with pytest.raises(ValueError, match="columns"):
        a.decision_function(X[:5, :4], y[:5])
    with pytest.raises(ValueError, match="y is required"):
        a.decision_function(X[:5], None)


SCORE_SAMPLES_ATTACKS = [c for c in ATTACKS if hasattr(c, "score_samples")]


def test_the_shadow_and_quantile_attacks_have_score_samples():
    # the monotonicity test below must not pass by finding no attack to check
    names = {c.__name__ for c in SCORE_SAMPLES_ATTACKS}
    assert {"LiRAAttack", "QuantileAttack", "RMIAAttack"} <= names


@pytest.mark.parametrize("cls", SCORE_SAMPLES_ATTACKS, ids=lambda c: c.__name__)
def test_score_samples_ranks_candidates_like_decision_function(cls, overfit):
    """One meaning of score_samples (attacks/base.py): higher = more member-like and
    non-decreasing in decision_function: no pair of candidates is ordered one way by
    score_samples and the other way by decision_function."""
    a = _make(cls, overfit)
    d = _run(a, overfit)
    cand = np.r_[overfit["members"], overfit["nonmembers"]]
    s = a.score_samples(overfit["X"][cand], overfit["y"][cand])
    assert s.shape == d.shape and np.all(np.isfinite(s))
    assert np.unique(s).size > 10  # a constant would be trivially monotone
    order = np.lexsort((d, s))  # by score_samples, ties by decision_function
    assert np.all(np.diff(d[order]) >= -1e-12), f"{cls.__name__}: score_samples and " \
        "decision_function order some candidates differently"
    member = np.r_[np.ones(overfit["members"].size, bool),
                   np.zeros(overfit["nonmembers"].size, bool)]
    assert auc(member, s) > 0.6  # higher = member, as decision_function
