"""One settings object for a run (tabmia.settings, issue 47) and one spelling of the
bootstrap count: the runners hand RunSettings down unchanged, audit_model takes it in place
of its keywords with the same scores, the attacks get the jobs / memory they take, and the
old ``n_bootstraps`` keeps working one release with a FutureWarning.

Breast cancer data, a loss attack and LiRA with 4 shadows: a few seconds on 2 cores.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from tabmia.attacks import LiRAAttack, LossAttack
from tabmia.audit import audit_model
from tabmia.experiment import run_attacks
from tabmia.metrics import attack_metrics, bootstrap_auc_interval
from tabmia.settings import ATTACK_SETTINGS, RunSettings
from tabmia.slices import slice_report_from_frames


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    perm = np.random.RandomState(0).permutation(len(y))
    tr, pop = perm[:250], perm[250:]
    target = RandomForestClassifier(n_estimators=10, random_state=0).fit(X[tr], y[tr])
    return target, X[tr], y[tr], X[pop], y[pop]


# ---------------------------------------------------------------------- the object
def test_settings_are_frozen_checked_and_changed_by_copy():
    s = RunSettings(fprs=[0.1, 0.01])
    assert s.fprs == (0.1, 0.01)  # a tuple however given
    with pytest.raises(AttributeError):
        s.fprs = (0.2,)  # type: ignore[misc]
    t = s.replace(keep_attacks=False)
    assert t.keep_attacks is False and s.keep_attacks is True and t.fprs == s.fprs
    with pytest.raises(TypeError):
        s.replace(n_boot=10)
    for bad in ({"fprs": (0.0,)}, {"fprs": (1.5,)}, {"confidence": 1.0}, {"n_bootstrap": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RunSettings(**bad)


def test_attack_params_are_those_the_attack_takes_and_were_given():
    s = RunSettings(n_jobs=2, max_memory="64MB")
    assert set(ATTACK_SETTINGS) == {"n_jobs", "device", "max_memory"}
    assert s.attack_params({"n_jobs", "max_memory", "cache_dir"}) == {
        "n_jobs": 2,
        "max_memory": "64MB",
    }
    assert s.attack_params({"n_jobs", "device"}) == {"n_jobs": 2}  # device not given
    assert RunSettings().attack_params({"n_jobs", "device", "max_memory"}) == {}


# ---------------------------------------------------------------------- the runners
def test_audit_model_with_settings_scores_as_with_its_keywords(data):
    target, X_tr, y_tr, X_pop, y_pop = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_keywords = audit_model(
            target, X_tr, y_tr, X_pop, y_pop, {"loss": LossAttack(fpr=0.1)},
            fprs=(0.1,), gammas=(2.0,), random_state=4, keep_attacks=False,
        )  # fmt: skip
        by_settings = audit_model(
            target, X_tr, y_tr, X_pop, y_pop, {"loss": LossAttack(fpr=0.1)},
            settings=RunSettings(fprs=(0.1,), gammas=(2.0,), random_state=4, keep_attacks=False),
        )  # fmt: skip
    pd.testing.assert_frame_equal(by_keywords.scores, by_settings.scores)
    timing = ["fit_seconds", "score_seconds"]
    pd.testing.assert_frame_equal(
        by_keywords.metrics.drop(columns=timing), by_settings.metrics.drop(columns=timing)
    )
    assert "tpr@0.1" in by_settings.metrics and "ppv@gamma=2" in by_settings.metrics
    assert by_settings.attacks == []


def test_audit_model_refuses_settings_beside_its_keywords(data):
    target, X_tr, y_tr, X_pop, y_pop = data
    with pytest.raises(ValueError, match="fprs, random_state in settings"):
        audit_model(
            target, X_tr, y_tr, X_pop, y_pop, {"loss": LossAttack()},
            fprs=(0.1,), random_state=1, settings=RunSettings(),
        )  # fmt: skip


def test_run_attacks_gives_each_attack_the_settings_it_takes(data):
    target, X_tr, y_tr, X_pop, y_pop = data
    X_cand = np.r_[X_tr[:100], X_pop[:100]]
    y_cand = np.r_[y_tr[:100], y_pop[:100]]
    member = np.r_[np.ones(100, bool), np.zeros(100, bool)]
    attacks = {"loss": LossAttack(fpr=0.1), "lira": LiRAAttack(n_shadow=4, fpr=0.1)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, rows, fitted = run_attacks(
            target, attacks, X_pop[100:], y_pop[100:], X_cand, y_cand, member, seed=0,
            settings=RunSettings(fprs=(0.1,), n_jobs=1, max_memory="64MB"),
        )  # fmt: skip
    loss, lira = fitted
    assert (lira.n_jobs, lira.max_memory) == (1, "64MB")
    assert "n_jobs" not in loss.get_params()  # an attack that takes none is left alone
    assert attacks["lira"].max_memory is None  # set on the clone, not the user's attack
    assert [r["attack"] for r in rows] == ["loss", "lira"]


# ---------------------------------------------------------------------- n_bootstrap
def test_n_bootstraps_still_works_one_release_with_a_future_warning():
    rng = np.random.RandomState(0)
    m = np.r_[np.ones(60, bool), np.zeros(60, bool)]
    s = rng.normal(size=120) + m
    new = bootstrap_auc_interval(m, s, n_bootstrap=30, random_state=0)
    with pytest.warns(FutureWarning, match="'n_bootstraps' was renamed 'n_bootstrap'"):
        old = bootstrap_auc_interval(m, s, n_bootstraps=30, random_state=0)
    assert old == new
    assert new != bootstrap_auc_interval(m, s, random_state=0)  # 200 resamples differ
    with pytest.warns(FutureWarning, match="attack_metrics"):
        old_metrics = attack_metrics(m, s, threshold=0.5, n_bootstraps=30, random_state=0)
    assert (old_metrics["auc_low"], old_metrics["auc_high"]) == new
    with pytest.raises(TypeError, match="give n_bootstrap only"):
        bootstrap_auc_interval(m, s, n_bootstrap=30, n_bootstraps=40)


def test_slice_report_takes_n_bootstrap_and_the_old_name_with_a_warning():
    rng = np.random.RandomState(1)
    n = 400
    member = rng.rand(n) < 0.5
    score = rng.normal(size=n) + member
    scores = pd.DataFrame(
        {
            "member": member,
            "score": score,
            "flagged": score > 1.0,
            "slice:g": np.where(rng.rand(n) < 0.5, "a", "b"),
        }
    )
    cal = pd.DataFrame({"score": rng.normal(size=300), "slice:g": np.repeat(["a", "b"], 150)})
    kw = {"n_permutations": 99, "random_state": 0}
    new = slice_report_from_frames(scores, cal, 0.1, n_bootstrap=20, **kw)
    with pytest.warns(FutureWarning, match="slice_report_from_frames"):
        old = slice_report_from_frames(scores, cal, 0.1, n_bootstraps=20, **kw)
    pd.testing.assert_frame_equal(new.table, old.table)
    assert new.table["auc_low"].notna().any()
