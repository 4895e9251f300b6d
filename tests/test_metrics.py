"""Metrics against hand-computed values, ties included, and the DP bounds."""

import math

import numpy as np
import pytest

from tabmia import metrics as M


def test_roc_keeps_tied_points_and_tpr_at_fpr_by_hand():
    # members: 0.9, 0.8, 0.5, 0.5 ; non-members: 0.7, 0.5, 0.2, 0.1
    m = np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)
    s = np.array([0.9, 0.8, 0.5, 0.5, 0.7, 0.5, 0.2, 0.1])
    fpr, tpr, thr = M.roc_curve(m, s)
    # thresholds 0.9, 0.8, 0.7, 0.5, 0.2, 0.1 (+inf): every point kept
    assert len(thr) == 7
    # FPR <= 0.25: best TPR is 2/4 (the tied 0.5s would cost two false positives)
    assert M.tpr_at_fpr(m, s, fpr=0.25) == pytest.approx(0.5)
    # FPR <= 0.5: threshold 0.5 flags members 0.9,0.8,0.5,0.5 and non-members 0.7,0.5
    assert M.tpr_at_fpr(m, s, fpr=0.5) == pytest.approx(1.0)
    assert M.precision_at_fpr(m, s, fpr=0.5) == pytest.approx(4 / 6)
    # TPR 0.5 is reached at t=0.8 (no false positive) and t=0.7 (one): the first wins
    assert M.precision_at_fpr(m, s, fpr=0.25) == pytest.approx(1.0)
    # AUC by pair counting: pairs (member > non-member) + 0.5 ties, over 16
    wins = sum((a > b) + 0.5 * (a == b) for a in s[m] for b in s[~m])
    assert M.auc(m, s) == pytest.approx(wins / 16)
    assert M.max_advantage(m, s) == pytest.approx(max(tpr - fpr))


def test_unresolvable_fpr_is_refused():
    m = np.r_[np.ones(50, bool), np.zeros(50, bool)]
    s = np.random.default_rng(0).normal(size=100)
    with pytest.raises(M.UnresolvableFPRError, match="50 non-members"):
        M.tpr_at_fpr(m, s, fpr=0.001)
    assert M.tpr_at_fpr(m, s, fpr=0.02) >= 0.0


@pytest.mark.parametrize(
    "membership, scores, match",
    [
        ([True, False], [0.1, np.nan], "NaN"),
        ([True, False, True], [0.1, 0.2], "records"),
        ([True, True], [0.1, 0.2], "both"),
        ([2, 0], [0.1, 0.2], "boolean"),
    ],
)
def test_bad_inputs(membership, scores, match):
    with pytest.raises(ValueError, match=match):
        M.auc(membership, scores)


def test_ppv_and_advantage_by_hand():
    assert M.ppv(0.5, 0.1, gamma=1) == pytest.approx(0.5 / 0.6)
    assert M.ppv(0.5, 0.1, gamma=10) == pytest.approx(0.5 / 1.5)
    assert M.ppv(0.0, 0.0, gamma=4) == pytest.approx(0.2)  # flags nothing: base rate
    assert M.advantage(0.7, 0.2) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="gamma"):
        M.ppv(0.5, 0.1, gamma=0)


def test_clopper_pearson_matches_scipy_and_edges():
    from scipy.stats import binomtest

    lo, hi = M.clopper_pearson(7, 40)
    ref = binomtest(7, 40).proportion_ci(0.95, method="exact")
    assert (lo, hi) == pytest.approx((ref.low, ref.high))
    assert M.clopper_pearson(0, 10)[0] == 0.0
    assert M.clopper_pearson(10, 10)[1] == 1.0
    with pytest.raises(ValueError):
        M.clopper_pearson(11, 10)


def test_bootstrap_auc_interval_covers_auc_and_is_seeded():
    rng = np.random.default_rng(1)
    m = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    s = np.r_[rng.normal(0.5, 1, 300), rng.normal(0, 1, 300)]
    a = M.bootstrap_auc_interval(m, s, random_state=3)
    assert a == M.bootstrap_auc_interval(m, s, random_state=3)
    assert a[0] < M.auc(m, s) < a[1]


def test_dp_bounds_match_jayaraman_numbers():
    # Sec. 4: eps=5, delta=1e-5, alpha=0.01, gamma=100 -> advantage can reach ~0.98,
    # PPV close to 0.5
    assert M.dp_advantage_bound(0.01, 5, 1e-5) == pytest.approx(0.9833, abs=1e-3)
    assert M.dp_ppv_bound(0.01, 5, 1e-5, gamma=100) == pytest.approx(0.498, abs=2e-3)
    # eps = 0: no attack beats chance
    assert M.dp_advantage_bound(0.3, 0.0) == pytest.approx(0.0)
    assert M.dp_ppv_bound(0.3, 0.0, gamma=1) == pytest.approx(0.5)
    # mu-GDP with mu = 0 is chance; bound grows with mu
    assert M.gdp_advantage_bound(0.1, 0.0) == pytest.approx(0.0, abs=1e-12)
    assert M.gdp_advantage_bound(0.1, 1.0) > M.gdp_advantage_bound(0.1, 0.5) > 0
    assert M.gdp_ppv_bound(0.1, 0.0, gamma=3) == pytest.approx(0.25)


def test_empirical_epsilon_point_and_lower_bound():
    out = M.empirical_epsilon(500, 1000, 10, 1000)
    assert out["epsilon"] == pytest.approx(math.log(0.5 / 0.01))
    assert 0 < out["epsilon_lower"] < out["epsilon"]
    # chance-level rule: no evidence of leakage
    assert M.empirical_epsilon(10, 1000, 10, 1000) == {"epsilon": 0.0, "epsilon_lower": 0.0}
    # an epsilon-DP-consistent rule never certifies more than the point estimate
    assert M.empirical_epsilon(30, 100, 10, 100)["epsilon_lower"] <= math.log(3)


def test_attack_metrics_reports_na_below_resolution():
    rng = np.random.default_rng(0)
    m = np.r_[np.ones(200, bool), np.zeros(200, bool)]
    s = np.r_[rng.normal(1, 1, 200), rng.normal(0, 1, 200)]
    out = M.attack_metrics(m, s, threshold=1.0, fprs=(0.01, 0.001))
    assert out["tpr@0.001"] is None and out["tpr@0.01"] is not None
    assert out["tpr@0.01_low"] <= out["tpr@0.01"] <= out["tpr@0.01_high"]
    assert out["ppv@gamma=1"] == pytest.approx(M.ppv(out["tpr"], out["fpr"], 1))


def test_bootstrap_auc_uses_the_resampled_records_auc():
    """The multiplicity form of a resample's AUC equals sklearn's on the resampled arrays."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.RandomState(0)
    pos = np.round(rng.normal(0.4, 1, 300), 1)  # rounded: ties between and within groups
    neg = np.round(rng.normal(0.0, 1, 500), 1)
    order = np.argsort(neg, kind="stable")
    below = np.searchsorted(neg[order], pos, side="left")
    at_most = np.searchsorted(neg[order], pos, side="right")
    for _ in range(5):
        ip, ineg = rng.randint(0, 300, 300), rng.randint(0, 500, 500)
        w_pos = np.bincount(ip, minlength=300)
        w_neg = np.bincount(ineg, minlength=500)[order]
        cum = np.r_[0, np.cumsum(w_neg)]
        expected = roc_auc_score(np.r_[np.ones(300), np.zeros(500)], np.r_[pos[ip], neg[ineg]])
        assert M._weighted_auc(w_pos, cum, below, at_most) == pytest.approx(expected, abs=1e-12)
        # without ties between the groups, the half-wins drop out
        moved = np.searchsorted(neg[order], pos + 0.05, side="left")
        expected = roc_auc_score(np.r_[np.ones(300), np.zeros(500)],
                                 np.r_[pos[ip] + 0.05, neg[ineg]])
        assert M._weighted_auc(w_pos, cum, moved, None) == pytest.approx(expected, abs=1e-12)
