"""Thresholds keep the FPR they promise on fresh non-members (Procedure 5.1)."""

import numpy as np
import pytest

from tabmia.metrics import UnresolvableFPRError, clopper_pearson
from tabmia.thresholds import (
    ClassConditionalRanks,
    conformal_pvalues,
    conformal_pvalues_left_out,
    select_threshold,
    threshold_at_fpr,
)


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_threshold_fpr_on_fresh_nonmembers_within_binomial_interval(alpha):
    rng = np.random.default_rng(7)
    n_fresh = 20000
    for seed in range(5):
        rng = np.random.default_rng(seed)
        t = threshold_at_fpr(rng.gumbel(size=3000), alpha)
        flagged = int((rng.gumbel(size=n_fresh) >= t).sum())
        # the threshold itself is random: check against the interval around alpha
        # widened by the calibration sample's own binomial spread (n=3000)
        lo, hi = clopper_pearson(round(alpha * n_fresh), n_fresh)
        slack = 2.5 * np.sqrt(alpha * (1 - alpha) / 3000)
        assert lo - slack <= flagged / n_fresh <= hi + slack


def test_threshold_expected_fpr_is_conformal():
    rng = np.random.default_rng(0)
    fprs = [(rng.normal(size=50000) >= threshold_at_fpr(rng.normal(size=500), 0.05)).mean()
            for _ in range(60)]
    # E[FPR] = floor(0.05 * 501) / 501 = 25/501 = 0.0499
    assert np.mean(fprs) == pytest.approx(25 / 501, abs=0.004)


def test_threshold_with_ties_never_exceeds_promise():
    # tree-like scores: 90% of non-members tie at the top value
    s = np.r_[np.ones(900), np.linspace(0, 0.5, 100)]
    t = threshold_at_fpr(s, 0.05)
    assert (s >= t).mean() <= 0.05
    assert t > 1.0  # the tied block cannot be flagged at 5% FPR


def test_unresolvable_alpha_raises():
    with pytest.raises(UnresolvableFPRError, match="at least 999"):
        threshold_at_fpr(np.arange(500.0), 0.001)


def test_max_ppv_and_max_advantage_by_hand():
    neg = np.array([0.1, 0.2, 0.3, 0.4])
    pos = np.array([0.35, 0.5, 0.6, 0.7])
    # t=0.5: TPR 3/4, FPR 0 -> PPV 1 (t=0.45 etc. not candidates); lowest t with PPV 1 = 0.5
    assert select_threshold(neg, pos, goal="max_ppv") == 0.5
    # advantage: t=0.35 -> 1 - 1/4 = 0.75 ; t=0.5 -> 0.75 ; lowest maximiser 0.35
    assert select_threshold(neg, pos, goal="max_advantage") == 0.35
    with pytest.raises(ValueError, match="member_scores"):
        select_threshold(neg, goal="max_ppv")
    with pytest.raises(ValueError, match="goal"):
        select_threshold(neg, goal="accuracy")
    with pytest.raises(ValueError, match="NaN"):
        select_threshold(np.array([0.1, np.nan]), goal="fpr", fpr=0.5)


def test_class_conditional_ranks_give_per_class_fpr():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=6000)
    s = rng.normal(size=6000) + 3.0 * y  # class 2 scores are much higher
    ranks = ClassConditionalRanks().fit(s[:3000], y[:3000], 3)
    r = ranks.transform(s[3000:], y[3000:])
    t = threshold_at_fpr(ranks.transform(s[:3000], y[:3000]), 0.05)
    for c in range(3):
        assert (r[y[3000:] == c] >= t).mean() == pytest.approx(0.05, abs=0.025)


def test_smallest_resolvable_fpr_is_the_first_level_threshold_at_fpr_accepts():
    from tabmia.metrics import UnresolvableFPRError
    from tabmia.thresholds import smallest_resolvable_fpr, threshold_at_fpr

    scores = np.arange(71, dtype=float)
    lowest = smallest_resolvable_fpr(71)
    assert lowest == 0.014
    threshold_at_fpr(scores, lowest)  # resolvable
    with pytest.raises(UnresolvableFPRError):
        threshold_at_fpr(scores, lowest - 0.001)
    assert smallest_resolvable_fpr(99) == 0.01 and smallest_resolvable_fpr(100_000) == 0.001
    with pytest.raises(ValueError):
        smallest_resolvable_fpr(0)


def test_left_out_pvalues_are_the_conformal_pvalue_against_the_others():
    """Each calibration score's p-value is conformal_pvalues against the scores outside its
    group: the one formula, its tie rule (an equal score counts as at or above) included."""
    rng = np.random.default_rng(4)
    s = rng.integers(0, 6, size=60).astype(float)  # many ties
    groups = rng.integers(0, 15, size=60)
    for g, own in ((None, 1.0), (groups, 1.0), (groups, 0.5)):
        p = conformal_pvalues_left_out(s, g, own_count=own)
        keys = np.arange(s.size) if g is None else g
        brute = [conformal_pvalues(s[i], s[keys != keys[i]], own_count=own)[0]
                 for i in range(s.size)]
        assert np.array_equal(p, brute)
    # mid-p: half a count below the conformal p-value, below 1 where a score is the lowest
    p, mid = conformal_pvalues([0.0, 5.0], s), conformal_pvalues([0.0, 5.0], s, own_count=0.5)
    assert np.allclose(p - mid, 0.5 / (s.size + 1)) and mid.max() < 1.0
    with pytest.raises(ValueError, match="own_count"):
        conformal_pvalues([1.0], [0.0], own_count=2)
    with pytest.raises(ValueError, match="only defined for ties='conservative'"):
        conformal_pvalues([1.0], [0.0], ties="randomized", own_count=0.5)
    with pytest.raises(ValueError, match="a group"):
        conformal_pvalues_left_out(s, groups[:-1])
    with pytest.raises(ValueError, match="NaN"):
        conformal_pvalues([np.nan], s)


def test_left_out_pvalues_are_valid_for_a_public_person():
    """A public person's p-value against the other public persons is distributed like a
    fresh non-member's: P(p <= t) <= t, close to t without ties."""
    rng = np.random.default_rng(5)
    hits = [conformal_pvalues_left_out(rng.normal(size=99))[0] <= 0.1 for _ in range(4000)]
    assert abs(np.mean(hits) - 0.1) < 3 * np.sqrt(0.1 * 0.9 / 4000)
