"""From canary membership scores to guesses, and from guesses to the bounds.

The auditor ranks the canaries by score, guesses "in" for the ``k_plus`` highest,
"out" for the ``k_minus`` lowest and abstains on the middle (Steinke et al.).
The numbers ``k_plus`` and ``k_minus`` must not be chosen by looking at which
canaries were included, or the bound is optimistic. Three ways keep that:

- ``"bonferroni"`` (default): a fixed grid of rules (:func:`guess_rules`), each
  tested at ``1 - (1 - confidence) / n_rules``; the best of them is reported. The
  union bound makes the best one valid at ``confidence``.
- ``"holdout"``: a random share of the canaries picks the rule (as fractions of
  the canaries) with their inclusion known; the rest are audited with it at full
  confidence. Fixing the chosen canaries' inclusion leaves the training DP in the
  others, so the bound holds for the audited ones (``m`` = their number).
- ``(k_plus, k_minus)``: a rule given in advance.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats
from sklearn.utils import check_random_state

from tabmia.claims import check_claimed_epsilon
from tabmia.dp._rules import guess_rules
from tabmia.dp.bounds import (
    epsilon_lower_bound_one_run,
    gdp_epsilon,
    gdp_lower_bound_one_run,
    gdp_one_run_rejects,
    one_run_p_value,
)
from tabmia.dp.result import OneRunAuditResult
from tabmia.metrics import clopper_pearson

__all__ = [
    "GUESS_STRATEGIES",
    "guess_rules",
    "rank_canaries",
    "count_guesses",
    "audit_canary_scores",
]

#: Named ways of choosing the guessing rule without the inclusion bits.
GUESS_STRATEGIES: tuple[str, ...] = ("bonferroni", "holdout")


def rank_canaries(scores: Any, random_state: Any = None) -> np.ndarray:
    """Canary indices from the lowest score to the highest, ties in random order.

    The random tie-break depends only on ``random_state``, never on which canaries
    were included, so it keeps the guesses a function of the model's output.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {scores.shape}")
    if np.isnan(scores).any():
        raise ValueError(f"scores hold {int(np.isnan(scores).sum())} NaN values")
    shuffle = check_random_state(random_state).permutation(scores.size)
    return shuffle[np.argsort(scores[shuffle], kind="stable")]


def count_guesses(
    order: np.ndarray, included: np.ndarray, rules: list[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Guesses and right guesses of each rule on canaries ranked by ``order``."""
    hit = np.asarray(included, dtype=bool)[order]
    m = hit.size
    # right "in" guesses among the top k, right "out" guesses among the bottom k
    in_top = np.r_[0, np.cumsum(hit[::-1])]
    out_bottom = np.r_[0, np.cumsum(~hit)]
    plus = np.array([r[0] for r in rules], dtype=np.intp)
    minus = np.array([r[1] for r in rules], dtype=np.intp)
    if np.any(plus < 0) or np.any(minus < 0) or np.any(plus + minus > m):
        raise ValueError(f"need k_plus, k_minus >= 0 and k_plus + k_minus <= {m} canaries")
    return plus + minus, in_top[plus] + out_bottom[minus]


def _guessed(order: np.ndarray, rule: tuple[int, int]) -> np.ndarray:
    out = np.zeros(order.size, dtype=np.int8)
    k_plus, k_minus = rule
    if k_plus:
        out[order[-k_plus:]] = 1
    out[order[:k_minus]] = -1
    return out


def _best(
    guesses: np.ndarray, correct: np.ndarray, m: int, bound: Any, passes: Any
) -> tuple[int, float]:
    """Index of the rule with the largest bound, trying rules by falling accuracy
    and skipping those that cannot beat the best so far (one test each). Where no
    rule gives a positive bound, the one that beats coin flips most significantly."""
    accuracy = np.where(guesses > 0, correct / np.maximum(guesses, 1), 0.0)
    best_value = 0.0
    best = int(np.argmin(stats.binom.sf(correct - 1, guesses, 0.5)))
    for i in np.argsort(-accuracy, kind="stable"):
        v, r = int(guesses[i]), int(correct[i])
        if v == 0 or 2 * r <= v or (best_value > 0 and not passes(best_value, r, v, m)):
            continue
        value = bound(r, v, m)
        if value > best_value:
            best, best_value = int(i), value
    return best, best_value


def _bounds(
    guesses: np.ndarray, correct: np.ndarray, m: int, delta: float, confidence: float
) -> tuple[int, float, int, float]:
    """Best rule and bound for (epsilon, delta)-DP and for mu-GDP at ``confidence``."""
    alpha = 1.0 - confidence
    i_eps, eps = _best(
        guesses,
        correct,
        m,
        lambda r, v, m_: epsilon_lower_bound_one_run(r, v, m_, delta, confidence),
        lambda e, r, v, m_: one_run_p_value(r, v, m_, e, delta) < alpha,
    )
    i_mu, mu = _best(
        guesses,
        correct,
        m,
        lambda r, v, m_: gdp_lower_bound_one_run(r, v, m_, confidence),
        lambda u, r, v, m_: gdp_one_run_rejects(u, r, v, m_, confidence),
    )
    return i_eps, eps, i_mu, mu


def _check_inputs(scores: Any, included: Any) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=np.float64)
    included = np.asarray(included)
    if scores.ndim != 1 or included.shape != scores.shape:
        raise ValueError(
            f"scores and included must be 1-D of one length, got shapes {scores.shape} "
            f"and {included.shape}"
        )
    if included.dtype != bool:
        if not np.isin(included, (0, 1)).all():
            raise ValueError("included must hold booleans (or 0 / 1)")
        included = included.astype(bool)
    if scores.size < 2:
        raise ValueError(f"need at least 2 canaries, got {scores.size}")
    return scores, included


def audit_canary_scores(
    scores: Any,
    included: Any,
    *,
    guesses: str | tuple[int, int] = "bonferroni",
    delta: float = 1e-5,
    confidence: float = 0.95,
    claimed_epsilon: float | None = None,
    holdout_share: float = 0.5,
    random_state: Any = None,
    context: dict[str, Any] | None = None,
) -> OneRunAuditResult:
    """Lower bounds on epsilon (and mu) from canary scores of one training run.

    Parameters
    ----------
    scores : array-like of shape (m,)
        Membership score of each canary from the trained model (higher = more
        likely trained on), computed without the inclusion bits.
    included : array-like of bool, shape (m,)
        Whether each canary was trained on; each must have been included
        independently with probability 1/2 for the bound to hold.
    guesses : {"bonferroni", "holdout"} or (int, int), default="bonferroni"
        How the rule ``(k_plus, k_minus)`` is chosen (see the module docstring), or
        the rule itself.
    delta : float, default=1e-5
        The delta of the (epsilon, delta) claims tested.
    confidence : float, default=0.95
        Confidence of the bounds.
    claimed_epsilon : float, default=None
        A claimed epsilon to compare against (its p-value and verdict), > 0 (see
        :func:`tabmia.claims.check_claimed_epsilon` for why not 0).
    holdout_share : float, default=0.5
        Share of the canaries that choose the rule under ``"holdout"``.
    random_state : int, RandomState instance or None, default=None
        Seeds the tie-break among equal scores and the holdout split.
    context : dict, default=None
        Carried into the result for reports.

    Returns
    -------
    OneRunAuditResult
    """
    scores, included = _check_inputs(scores, included)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    if claimed_epsilon is not None:
        claimed_epsilon = check_claimed_epsilon(claimed_epsilon, "claimed_epsilon")
    rng = check_random_state(random_state)
    m_all = scores.size
    audited = np.arange(m_all)
    n_holdout = 0
    strategy, rule = _strategy(guesses)
    if strategy == "holdout":
        audited, rules = _holdout_rules(scores, included, rng, holdout_share, delta, confidence)
        n_holdout, n_tests = m_all - audited.size, 1
    elif rule is not None:  # the strategy "given"
        rules, n_tests = [rule], 1
    else:
        rules = guess_rules(m_all)
        n_tests = len(rules)
    m = audited.size
    order = rank_canaries(scores[audited], rng)
    n_guess, n_right = count_guesses(order, included[audited], rules)
    level = 1.0 - (1.0 - confidence) / n_tests
    if strategy == "holdout":
        i_eps, i_mu = 0, 1
        eps = epsilon_lower_bound_one_run(int(n_right[0]), int(n_guess[0]), m, delta, level)
        mu = gdp_lower_bound_one_run(int(n_right[1]), int(n_guess[1]), m, level)
    else:
        i_eps, eps, i_mu, mu = _bounds(n_guess, n_right, m, delta, level)
    p_value = None
    if claimed_epsilon is not None:
        candidates = [i_eps] if strategy == "holdout" else range(len(rules))
        p_min = min(
            one_run_p_value(int(n_right[i]), int(n_guess[i]), m, claimed_epsilon, delta)
            for i in candidates
        )
        p_value = min(1.0, p_min * n_tests)
    v, r = int(n_guess[i_eps]), int(n_right[i_eps])
    low, high = clopper_pearson(r, v, confidence) if v else (math.nan, math.nan)
    guessed = np.zeros(m_all, dtype=np.int8)
    guessed[audited] = _guessed(order, rules[i_eps])
    eps_gdp = None
    if delta > 0:
        eps_gdp = gdp_epsilon(mu, delta) if math.isfinite(mu) else math.inf
    return OneRunAuditResult(
        epsilon_lower=float(eps),
        delta=float(delta),
        confidence=float(confidence),
        n_canaries=int(m),
        n_included=int(included[audited].sum()),
        k_plus=int(rules[i_eps][0]),
        k_minus=int(rules[i_eps][1]),
        n_guesses=v,
        n_correct=r,
        accuracy=r / v if v else math.nan,
        accuracy_low=float(low),
        accuracy_high=float(high),
        mu_lower=float(mu),
        epsilon_lower_gdp=eps_gdp,
        gdp_rule=(int(rules[i_mu][0]), int(rules[i_mu][1]), int(n_guess[i_mu]), int(n_right[i_mu])),
        guesses=strategy,
        n_rules=n_tests,
        n_holdout=n_holdout,
        claimed_epsilon=None if claimed_epsilon is None else float(claimed_epsilon),
        p_value=p_value,
        scores=scores,
        included=included,
        guessed=guessed,
        context=dict(context or {}),
    )


def _strategy(guesses: str | tuple[int, int]) -> tuple[str, tuple[int, int] | None]:
    """The strategy's name ("given" for a rule), and the rule given (else None)."""
    if isinstance(guesses, str):
        if guesses not in GUESS_STRATEGIES:
            raise ValueError(
                f"guesses must be one of {GUESS_STRATEGIES} or (k_plus, k_minus), got {guesses!r}"
            )
        return guesses, None
    try:
        return "given", (int(guesses[0]), int(guesses[1]))
    except (TypeError, ValueError, IndexError) as exc:
        raise ValueError(
            f"guesses must be one of {GUESS_STRATEGIES} or (k_plus, k_minus), got {guesses!r}"
        ) from exc


def _holdout_rules(
    scores: np.ndarray,
    included: np.ndarray,
    rng: np.random.RandomState,
    holdout_share: float,
    delta: float,
    confidence: float,
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The canaries audited (those not held out) and the two rules the held-out ones
    choose (the epsilon bound's, the mu bound's), scaled to the audited count."""
    if not 0.0 < holdout_share < 1.0:
        raise ValueError(f"holdout_share must be in (0, 1), got {holdout_share}")
    m_all = scores.size
    perm = rng.permutation(m_all)
    n_holdout = int(round(holdout_share * m_all))
    if not 1 <= n_holdout < m_all:
        raise ValueError(f"{m_all} canaries are too few to hold out {holdout_share:g}")
    held, audited = np.sort(perm[:n_holdout]), np.sort(perm[n_holdout:])
    grid = guess_rules(held.size)
    g_h, c_h = count_guesses(rank_canaries(scores[held], rng), included[held], grid)
    i_eps, _, i_mu, _ = _bounds(g_h, c_h, held.size, delta, confidence)
    m = audited.size
    return audited, [_scaled(grid[i_eps], held.size, m), _scaled(grid[i_mu], held.size, m)]


def _scaled(rule: tuple[int, int], m_from: int, m_to: int) -> tuple[int, int]:
    """A rule chosen on ``m_from`` canaries, as the same shares of ``m_to``."""
    k_plus = round(rule[0] * m_to / m_from)
    k_minus = min(round(rule[1] * m_to / m_from), m_to - k_plus)
    if k_plus + k_minus == 0:
        k_plus = 1
    return k_plus, k_minus
