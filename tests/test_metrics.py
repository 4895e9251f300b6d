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
    """A resample's AUC from its multiplicities, in blocks, equals sklearn's on the
    resampled records."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.RandomState(0)
    pos = np.sort(np.round(rng.normal(0.4, 1, 300), 1))  # rounded: ties between and within
    neg = np.sort(np.round(rng.normal(0.0, 1, 500), 1))
    below = np.searchsorted(neg, pos, side="left")
    at_most = np.searchsorted(neg, pos, side="right")
    label = np.r_[np.ones(300), np.zeros(500)]
    for _ in range(5):
        w_pos = np.bincount(rng.randint(0, 300, 300), minlength=300)
        w_neg = np.bincount(rng.randint(0, 500, 500), minlength=500)
        expected = roc_auc_score(label, np.r_[np.repeat(pos, w_pos), np.repeat(neg, w_neg)])
        cum = np.zeros(501, dtype=np.int64)
        # uneven blocks on both sides
        blocks_pos, blocks_neg = np.split(w_pos, [7, 150]), np.split(w_neg, [333])
        assert M._resample_auc(blocks_pos, blocks_neg, cum, below, at_most) == pytest.approx(
            expected, abs=1e-12
        )
        # without ties between the groups, the half-wins drop out
        moved = np.searchsorted(neg, pos + 0.05, side="left")
        expected = roc_auc_score(label, np.r_[np.repeat(pos + 0.05, w_pos), np.repeat(neg, w_neg)])
        assert M._resample_auc([w_pos], [w_neg], cum, moved, None) == pytest.approx(
            expected, abs=1e-12
        )


def test_bootstrap_counts_in_blocks_are_one_multinomial_draw(monkeypatch):
    """Drawn block by block, the multiplicities of n draws from n records keep the
    distribution of n uniform draws: they add up to n, and each record's count is
    Binomial(n, 1/n) whichever block it is in (mean 1, variance 1 - 1/n)."""
    monkeypatch.setattr(M, "_COUNT_BLOCK", 16)
    n, repeats = 100, 4000  # blocks of 16, the last of 4
    rng = np.random.RandomState(0)
    draws = np.stack(
        [np.concatenate(list(M._draw_counts(rng, n))) for _ in range(repeats)]
    )
    assert draws.shape == (repeats, n)
    assert (draws.sum(axis=1) == n).all()
    # standard errors over 4,000 draws: 0.016 for a mean, 0.03 for a variance
    assert np.abs(draws.mean(axis=0).reshape(-1, 4).mean(axis=1) - 1).max() < 0.05
    assert draws.var(axis=0).mean() == pytest.approx(1 - 1 / n, abs=0.03)
    last = draws[:, 96:]  # the short block
    assert last.mean() == pytest.approx(1, abs=0.05)
    # records of different blocks are negatively correlated, as in a multinomial
    # (covariance -1/n between any two)
    cov = np.cov(draws[:, 0], draws[:, 50])[0, 1]
    assert cov == pytest.approx(-1 / n, abs=0.04)


def test_bootstrap_auc_interval_in_many_blocks_covers_the_auc(monkeypatch):
    """Drawn in blocks of 256 records, the interval covers the AUC with the width the
    bootstrap standard error gives."""
    monkeypatch.setattr(M, "_COUNT_BLOCK", 256)
    rng = np.random.default_rng(2)
    m = np.r_[np.ones(3000, bool), np.zeros(2000, bool)]
    s = np.r_[rng.normal(0.3, 1, 3000), rng.normal(0, 1, 2000)]
    lo, hi = M.bootstrap_auc_interval(m, s, random_state=0)
    assert lo < M.auc(m, s) < hi
    # the standard error of an AUC of ~0.58 on 3,000 x 2,000 records is ~0.008
    assert 0.02 < hi - lo < 0.045
