"""The membership game: seeded disjoint splits, priors, repeats, results."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from tabmia.attacks import LossAttack, ScoreAttack
from tabmia.experiment import MembershipExperiment, split_membership


def test_split_is_disjoint_seeded_and_honours_prior():
    s = split_membership(1000, train_size=0.4, public_size=0.5, random_state=3)
    assert len(s.train) == 400 and len(s.public) == 300 and len(s.nonmembers) == 300
    assert not set(s.train) & set(s.public) and not set(s.public) & set(s.nonmembers)
    assert set(s.members) <= set(s.train)
    again = split_membership(1000, train_size=0.4, public_size=0.5, random_state=3)
    assert np.array_equal(s.public, again.public)
    p = split_membership(1000, train_size=0.4, public_size=0.5, prior=2.0, random_state=3)
    assert len(p.nonmembers) == 2 * len(p.members) == 300
    with pytest.raises(ValueError, match="train_size"):
        split_membership(100, train_size=1.5)
    with pytest.raises(ValueError, match="no non-member"):
        split_membership(100, train_size=50, public_size=50)


def test_experiment_runs_repeats_and_is_reproducible():
    X, y = make_classification(n_samples=1500, n_features=8, flip_y=0.2, random_state=0)
    attacks = {"loss": LossAttack(fpr=0.02), "entropy": ScoreAttack(statistic="entropy", fpr=0.02)}
    exp = MembershipExperiment(RandomForestClassifier(n_estimators=20), attacks,
                               n_repeats=2, random_state=5)
    res = exp.run(X, y)
    assert set(res.metrics["attack"]) == {"loss", "entropy"} and len(res.metrics) == 4
    assert len(res.scores) == 2 * 2 * (750 + 375)
    assert (res.metrics["auc"] > 0.55).all()  # forests overfit noisy labels
    assert (res.target_accuracy["train_accuracy"] > res.target_accuracy["test_accuracy"]).all()
    summary = res.summary()
    assert summary.loc["loss", ("mean", "auc")] == pytest.approx(
        res.metrics.query("attack == 'loss'")["auc"].mean())
    res2 = MembershipExperiment(RandomForestClassifier(n_estimators=20), attacks,
                                n_repeats=2, random_state=5).run(X, y)
    assert np.array_equal(res.scores["score"], res2.scores["score"])


def test_experiment_rejects_bad_config():
    X, y = make_classification(n_samples=200, random_state=0)
    with pytest.raises(ValueError, match="attacks"):
        MembershipExperiment(RandomForestClassifier(), {}).run(X, y)
    with pytest.raises(ValueError, match="labels"):
        MembershipExperiment(RandomForestClassifier(), {"l": LossAttack()}).run(X, y[:-1])


def test_fpr_fallback_aims_at_the_smallest_promisable_fpr_and_says_so():
    from sklearn.linear_model import LogisticRegression

    from tabmia.attacks import RMIAAttack
    from tabmia.exceptions import FPRFallbackWarning
    from tabmia.metrics import UnresolvableFPRError

    X, y = make_classification(n_samples=600, n_features=6, random_state=0)
    # 150 public records, every one a calibration score: they promise 1% but not 0.5%
    attacks = {"rmia": RMIAAttack(n_reference=2, fpr=0.005), "loss": LossAttack(fpr=0.01)}
    exp = MembershipExperiment(LogisticRegression(), attacks, random_state=0)
    with pytest.raises(UnresolvableFPRError, match="150 calibration records"):
        exp.run(X, y)
    exp.fpr_fallback = True
    with pytest.warns(FPRFallbackWarning, match="rmia: 150 calibration records"):
        res = exp.run(X, y)
    rows = res.metrics.set_index("attack")
    assert rows.loc["rmia", "fpr_requested"] == 0.005
    assert rows.loc["rmia", "fpr_target"] == 0.007  # ceil(1000 / 151) / 1000
    assert res.attacks[0].fpr_ == 0.007
    assert rows.loc["loss", "fpr_target"] == 0.01  # 150 public scores resolve 1%
