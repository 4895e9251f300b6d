"""The one-run bounds: hand-checked values, monotonicity, and exact soundness on
mechanisms whose privacy is known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from tabmia.dp import (
    audit_canary_scores,
    epsilon_lower_bound_one_run,
    gdp_epsilon,
    gdp_lower_bound_one_run,
    guess_rules,
    one_run_p_value,
)
from tabmia.dp.bounds import gdp_delta, gdp_one_run_rejects


# ----------------------------------------------------------- hand-checked values
def test_p_value_pure_dp_is_the_randomised_response_tail():
    q = math.e / (1 + math.e)
    assert one_run_p_value(10, 10, 100, 1.0) == pytest.approx(q**10, rel=1e-12)
    # 8 of 10: P[Bin(10, q) >= 8] by hand
    tail = sum(math.comb(10, k) * q**k * (1 - q) ** (10 - k) for k in (8, 9, 10))
    assert one_run_p_value(8, 10, 100, 1.0) == pytest.approx(tail, rel=1e-12)


def test_p_value_delta_term_by_hand():
    # r = v = 2: the slopes are P[B = 1] / 1 and P[B <= 1] / 2
    m, delta, eps = 10, 0.01, 1.0
    q = special.expit(eps)
    slope = max(2 * q * (1 - q), (1 - q**2) / 2)
    expected = q**2 + 2 * m * delta * slope
    assert one_run_p_value(2, 2, m, eps, delta) == pytest.approx(expected, rel=1e-12)


def test_all_right_bound_is_the_logit_of_alpha_root():
    for v in (5, 10, 100):
        q = 0.05 ** (1 / v)
        assert epsilon_lower_bound_one_run(v, v, 1000) == pytest.approx(
            math.log(q / (1 - q)), abs=1e-6)
    assert epsilon_lower_bound_one_run(10, 10, 100) == pytest.approx(1.05187, abs=1e-5)


def test_bound_is_the_edge_of_the_rejected_claims():
    r, v, m, delta = 140, 200, 1000, 1e-5
    eps = epsilon_lower_bound_one_run(r, v, m, delta, 0.95)
    assert eps > 0
    assert one_run_p_value(r, v, m, eps, delta) < 0.05
    assert one_run_p_value(r, v, m, eps + 1e-4, delta) >= 0.05


def test_no_better_than_coins_refutes_nothing():
    assert epsilon_lower_bound_one_run(50, 100, 1000) == 0.0
    assert epsilon_lower_bound_one_run(0, 0, 10) == 0.0
    assert gdp_lower_bound_one_run(50, 100, 1000) == 0.0


@pytest.mark.parametrize("args", [(5, 4, 10), (1, 2, 1), (-1, 2, 5), (1.5, 2, 5)])
def test_counts_are_checked(args):
    with pytest.raises(ValueError, match="n_correct|whole"):
        epsilon_lower_bound_one_run(*args)


@pytest.mark.parametrize("kw", [{"confidence": 1.0}, {"confidence": 0.0}, {"delta": 1.0},
                                {"delta": -0.1}])
def test_levels_are_checked(kw):
    with pytest.raises(ValueError, match="confidence|delta"):
        epsilon_lower_bound_one_run(8, 10, 100, **kw)


# ---------------------------------------------------------------- monotonicity
def test_bound_rises_with_right_guesses():
    bounds = [epsilon_lower_bound_one_run(r, 200, 1000, 1e-5) for r in range(100, 201, 10)]
    assert np.all(np.diff(bounds) >= 0) and bounds[-1] > bounds[3] > 0
    mus = [gdp_lower_bound_one_run(r, 200, 1000) for r in range(100, 201, 10)]
    assert np.all(np.diff(mus) >= 0) and mus[-1] > mus[3] > 0


def test_bound_falls_with_delta_and_confidence():
    by_delta = [epsilon_lower_bound_one_run(160, 200, 1000, d) for d in (0, 1e-6, 1e-4, 1e-3)]
    assert np.all(np.diff(by_delta) < 0)
    by_conf = [epsilon_lower_bound_one_run(160, 200, 1000, 0, c) for c in (0.8, 0.9, 0.95, 0.99)]
    assert np.all(np.diff(by_conf) < 0)


def test_bound_rises_with_guesses_at_the_same_accuracy():
    bounds = [epsilon_lower_bound_one_run(int(0.8 * v), v, 5000) for v in (20, 100, 500, 2500)]
    assert np.all(np.diff(bounds) > 0)
    # and it tends to the accuracy's own epsilon, logit(0.8), from below
    assert bounds[-1] < math.log(0.8 / 0.2)
    assert bounds[-1] > 0.9 * math.log(0.8 / 0.2)


# --------------------------------------------------------- exact soundness
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_exact_coverage_on_randomised_response(eps):
    """Randomised response at eps, every canary guessed: the right guesses are
    Binomial(v, expit(eps)); the chance that the bound exceeds eps is computed
    exactly over every outcome and must stay at most 5 % (and near it: tight)."""
    v = 200
    outcomes = np.arange(v + 1)
    over = np.array([epsilon_lower_bound_one_run(r, v, v) > eps for r in outcomes])
    chance = stats.binom.pmf(outcomes[over], v, special.expit(eps)).sum()
    assert chance <= 0.05
    assert chance >= 0.02  # the bound is tight for this mechanism


def test_exact_coverage_of_the_gdp_test_under_perfect_privacy():
    """mu = 0 (output independent of the canaries): right guesses are Binomial(v, 1/2);
    the chance that the test refutes mu = 0 is at most 5 %."""
    for v, m in ((10, 10), (50, 500), (200, 1000)):
        outcomes = np.arange(v + 1)
        refuted = np.array([gdp_one_run_rejects(0.0, r, v, m) for r in outcomes])
        chance = stats.binom.pmf(outcomes[refuted], v, 0.5).sum()
        assert 0.01 <= chance <= 0.05


def test_randomised_response_canaries_stay_under_epsilon():
    """200 one-run audits of randomised response (eps = 1) on 500 canaries with a
    fixed rule: the bound exceeds eps in at most 5 % of runs in expectation; more
    than 17 of 200 has probability below 1e-3 for a sound bound."""
    rng = np.random.RandomState(0)
    eps, m, runs = 1.0, 500, 200
    included = rng.uniform(size=(runs, m)) < 0.5
    truthful = rng.uniform(size=(runs, m)) < special.expit(eps)
    released = np.where(truthful, included, ~included).astype(float)
    bounds = np.array([
        audit_canary_scores(released[i], included[i], guesses=(m // 2, m // 2), delta=0.0,
                            random_state=i).epsilon_lower
        for i in range(runs)
    ])
    assert (bounds > eps).sum() <= 17
    assert bounds.mean() > 0.5 * eps  # and the audit is not vacuous


def test_gaussian_canaries_stay_under_mu():
    rng = np.random.RandomState(1)
    mu, m, runs = 2.0, 500, 60
    included = rng.uniform(size=(runs, m)) < 0.5
    released = mu * included + rng.normal(size=(runs, m))
    results = [audit_canary_scores(released[i], included[i], delta=1e-5, random_state=i)
               for i in range(runs)]
    mus = np.array([r.mu_lower for r in results])
    eps = np.array([r.epsilon_lower for r in results])
    # a sound bound exceeds the truth in at most 5 % of runs: 9 of 60 has chance < 1 %
    assert (mus > mu).sum() <= 8
    assert (eps > gdp_epsilon(mu, 1e-5)).sum() <= 8
    assert mus.mean() > 0.4 * mu


# ---------------------------------------------------------------- mu-GDP maths
def test_gdp_delta_and_epsilon_are_inverse():
    # delta(0) of 1-GDP: Phi(1/2) - Phi(-1/2)
    assert gdp_delta(1.0, 0.0) == pytest.approx(stats.norm.cdf(0.5) - stats.norm.cdf(-0.5))
    for mu in (0.5, 1.0, 3.0):
        eps = gdp_epsilon(mu, 1e-5)
        assert gdp_delta(mu, eps) == pytest.approx(1e-5, rel=1e-6)
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    with pytest.raises(ValueError, match="delta"):
        gdp_epsilon(1.0, 0.0)


# ------------------------------------------------------------------- guesses
def test_guess_rules_cover_both_sides_and_stay_in_range():
    rules = guess_rules(1000)
    assert (10, 0) in rules and (0, 10) in rules and (500, 500) in rules
    assert all(1 <= kp + km <= 1000 for kp, km in rules)
    assert len(rules) == len(set(rules))


def test_holdout_and_given_rules_keep_their_promises():
    rng = np.random.RandomState(3)
    included = rng.uniform(size=1000) < 0.5
    scores = 3.0 * included + rng.normal(size=1000)
    held = audit_canary_scores(scores, included, guesses="holdout", random_state=0)
    assert held.n_holdout == 500 and held.n_canaries == 500 and held.n_rules == 1
    assert (held.guessed != 0).sum() == held.n_guesses  # holdout canaries never guessed
    assert held.epsilon_lower > 1.0
    given = audit_canary_scores(scores, included, guesses=(100, 0), random_state=0)
    assert (given.k_plus, given.k_minus, given.n_guesses) == (100, 0, 100)
    assert set(np.flatnonzero(given.guessed == 1)) == set(np.argsort(scores)[-100:])
    with pytest.raises(ValueError, match="guesses"):
        audit_canary_scores(scores, included, guesses="best")
    with pytest.raises(ValueError, match="k_plus"):
        audit_canary_scores(scores, included, guesses=(900, 200))


def test_scores_must_not_look_at_nan_or_mismatched_inputs():
    with pytest.raises(ValueError, match="NaN"):
        audit_canary_scores([0.1, np.nan, 0.3], [True, False, True])
    with pytest.raises(ValueError, match="one length"):
        audit_canary_scores([0.1, 0.2], [True])
    with pytest.raises(ValueError, match="booleans"):
        audit_canary_scores([0.1, 0.2], [2, 0])
