"""Identical public records are one record in the shadow design (issue 24).

Copies of a record share one IN / OUT mask, so a model trained on every copy or on
none, and a record is OUT for as many models as a distinct one. Before, each copy
drew its own mask and the pool index OR-ed them: a duplicated record was OUT for a
quarter of the models instead of half, its calibration scores were not drawn like a
fresh record's, and offline LiRA flagged ~7% of fresh non-members at a 5% promise.
"""

import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from tabmia.attacks import LiRAAttack
from tabmia.shadow import ShadowPopulation, draw_in_masks
from tabmia.shadow._design import record_groups
from tabmia.thresholds import conformal_fpr_band


def test_grouped_masks_are_the_ungrouped_ones_when_records_are_distinct():
    X = np.arange(40, dtype=float).reshape(20, 2)
    y = np.zeros(20, dtype=int)
    groups = record_groups(X, y)
    assert np.array_equal(groups, np.arange(20))
    plain = draw_in_masks(6, 20, random_state=3)
    assert np.array_equal(draw_in_masks(6, 20, random_state=3, groups=groups), plain)
    # the same features with another label are another record
    assert np.array_equal(record_groups(np.r_[X, X], np.r_[y, y + 1]), np.arange(40))


def test_copies_share_one_mask_and_stay_balanced():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int)
    Xd, yd = np.r_[X, X, X[:5]], np.r_[y, y, y[:5]]
    pop = ShadowPopulation(LogisticRegression(), n_models=4, random_state=0).fit(Xd, yd)
    masks = pop.in_masks_
    assert np.array_equal(masks[:, :30], masks[:, 30:60])
    assert np.array_equal(masks[:, :5], masks[:, 60:])
    # every record (and so every copy) is IN for exactly half of the models
    assert (masks.sum(axis=0) == 2).all()


def test_fpr_promise_holds_with_every_public_record_duplicated():
    n_train, n_public, n_fresh, fpr = 1000, 5000, 20000, 0.05
    X, y = make_classification(n_samples=n_train + n_public + n_fresh, n_features=10,
                               n_informative=6, flip_y=0.05, random_state=0)
    X = X.astype(np.float32)
    train = np.arange(n_train)
    public = np.arange(n_train, n_train + n_public)
    fresh = np.arange(n_train + n_public, y.size)
    target = LogisticRegression().fit(X[train], y[train])
    twice = np.r_[public, public]
    attack = LiRAAttack(target, n_shadow=4, fpr=fpr, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the shadow-size note of a small pool
        attack.fit(X[twice], y[twice])
    delivered = float(attack.predict(X[fresh], y[fresh]).mean())
    # the band of the distinct calibration records: copies add no information
    lo, hi = conformal_fpr_band(n_public, fpr, n_fresh, level=0.999)
    assert lo <= delivered <= hi, (delivered, lo, hi)
