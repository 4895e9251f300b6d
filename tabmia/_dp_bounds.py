"""The bounds differential privacy puts on an attack's rates, and the ε they imply.

The (ε, δ)-DP and μ-GDP trade-off functions with the TPR, advantage and PPV bounds they
give (Jayaraman et al., PETS 2021, Thm 4.1 / 4.2; Dong, Roth and Su, JRSS-B 2022), the
check of measured rates against a claim, and the empirical ε lower bound (Jagielski,
Ullman and Oprea, NeurIPS 2020). Public through :mod:`tabmia.metrics`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from tabmia._rates import clopper_pearson, ppv
from tabmia._validation import NON_NEGATIVE, POSITIVE, RATE, UNIT_LEFT_CLOSED, validate_params

__all__ = [
    "dp_tradeoff",
    "dp_advantage_bound",
    "dp_ppv_bound",
    "gdp_tradeoff",
    "gdp_advantage_bound",
    "gdp_ppv_bound",
    "empirical_epsilon",
    "dp_tpr_bound",
    "dp_consistency",
]


@validate_params({"epsilon": NON_NEGATIVE, "delta": UNIT_LEFT_CLOSED})
def dp_tradeoff(alpha: Any, epsilon: float, delta: float = 0.0) -> Any:
    """Trade-off function of (epsilon, delta)-DP: smallest FNR at FPR ``alpha``.

    ``f(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))``.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    f = np.maximum.reduce(
        [
            np.zeros_like(alpha),
            1.0 - delta - math.exp(epsilon) * alpha,
            math.exp(-epsilon) * (1.0 - delta - alpha),
        ]
    )
    return float(f) if f.ndim == 0 else f


@validate_params({"epsilon": NON_NEGATIVE, "delta": UNIT_LEFT_CLOSED})
def dp_advantage_bound(alpha: Any, epsilon: float, delta: float = 0.0) -> Any:
    """Jayaraman et al. Thm 4.1: ``Adv(alpha) <= 1 - f(alpha) - alpha``."""
    out = 1.0 - np.asarray(dp_tradeoff(alpha, epsilon, delta)) - np.asarray(alpha)
    return float(out) if np.ndim(out) == 0 else out


@validate_params({"epsilon": NON_NEGATIVE, "delta": UNIT_LEFT_CLOSED, "gamma": POSITIVE})
def dp_ppv_bound(alpha: Any, epsilon: float, delta: float = 0.0, gamma: float = 1.0) -> Any:
    """Jayaraman et al. Thm 4.2: ``PPV <= (1 - f) / (1 - f + gamma alpha)``."""
    tpr_max = 1.0 - np.asarray(dp_tradeoff(alpha, epsilon, delta))
    return ppv(tpr_max, alpha, gamma)


@validate_params({"mu": NON_NEGATIVE})
def gdp_tradeoff(alpha: Any, mu: float) -> Any:
    """Trade-off function of mu-GDP: ``Phi(Phi^-1(1 - alpha) - mu)``."""
    alpha = np.asarray(alpha, dtype=np.float64)
    out = stats.norm.cdf(stats.norm.ppf(1.0 - alpha) - mu)
    return float(out) if out.ndim == 0 else out


@validate_params({"mu": NON_NEGATIVE})
def gdp_advantage_bound(alpha: Any, mu: float) -> Any:
    """Largest ``TPR - FPR`` at FPR ``alpha`` under mu-GDP."""
    out = 1.0 - np.asarray(gdp_tradeoff(alpha, mu)) - np.asarray(alpha)
    return float(out) if np.ndim(out) == 0 else out


@validate_params({"mu": NON_NEGATIVE, "gamma": POSITIVE})
def gdp_ppv_bound(alpha: Any, mu: float, gamma: float = 1.0) -> Any:
    """Largest PPV at FPR ``alpha`` under mu-GDP and prior ``gamma``."""
    return ppv(1.0 - np.asarray(gdp_tradeoff(alpha, mu)), alpha, gamma)


@validate_params({"epsilon": NON_NEGATIVE, "delta": UNIT_LEFT_CLOSED})
def dp_tpr_bound(alpha: Any, epsilon: float, delta: float = 0.0) -> Any:
    """Largest TPR at FPR ``alpha`` under (epsilon, delta)-DP: ``1 - f(alpha)``.

    Equals ``min(1, e^eps alpha + delta, 1 - e^-eps (1 - delta - alpha))``.
    """
    out = 1.0 - np.asarray(dp_tradeoff(alpha, epsilon, delta))
    return float(out) if out.ndim == 0 else out


@validate_params({"epsilon": NON_NEGATIVE, "delta": UNIT_LEFT_CLOSED, "confidence": RATE})
def dp_consistency(
    tp: int,
    n_members: int,
    fp: int,
    n_nonmembers: int,
    epsilon: float,
    delta: float = 0.0,
    *,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Whether one decision rule's measured rates are consistent with (epsilon, delta)-DP.

    The rule violates the claim, with confidence ``confidence``, only when even the
    TPR's lower Clopper-Pearson bound is above the DP bound at the FPR's upper bound
    (the FPR of a few hundred non-members is uncertain too). When the measured TPR is
    above the bound at the measured FPR but that test does not reject, the number of
    non-members does not resolve the question.

    Returns
    -------
    dict
        ``tpr``, ``tpr_low``, ``fpr``, ``fpr_high``, ``tpr_bound`` (at the measured FPR),
        ``tpr_bound_at_fpr_high`` and ``verdict``: ``"yes"``, ``"no"`` or
        ``"not resolved"``.
    """
    tpr, fpr = tp / n_members, fp / n_nonmembers
    tpr_lo, _ = clopper_pearson(tp, n_members, confidence)
    _, fpr_hi = clopper_pearson(fp, n_nonmembers, confidence)
    bound = dp_tpr_bound(fpr, epsilon, delta)
    bound_hi = dp_tpr_bound(fpr_hi, epsilon, delta)
    if tpr_lo > bound_hi + 1e-12:
        verdict = "no"
    elif tpr <= bound + 1e-12:
        verdict = "yes"
    else:
        verdict = "not resolved"
    return {
        "tpr": tpr,
        "tpr_low": float(tpr_lo),
        "fpr": fpr,
        "fpr_high": float(fpr_hi),
        "tpr_bound": bound,
        "tpr_bound_at_fpr_high": bound_hi,
        "verdict": verdict,
    }


def _epsilon_from_rates(tpr: float, fpr: float, delta: float) -> float:
    candidates = [0.0]
    if fpr > 0 and tpr - delta > 0:
        candidates.append(math.log((tpr - delta) / fpr))
    if tpr < 1 and 1.0 - delta - fpr > 0:
        candidates.append(math.log((1.0 - delta - fpr) / (1.0 - tpr)))
    if fpr == 0 and tpr - delta > 0:
        candidates.append(math.inf)
    return max(candidates)


@validate_params({"delta": UNIT_LEFT_CLOSED, "confidence": RATE})
def empirical_epsilon(
    tp: int,
    n_members: int,
    fp: int,
    n_nonmembers: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> dict[str, float]:
    """Empirical lower bound on epsilon from one attack decision rule.

    Any (epsilon, delta)-DP training algorithm satisfies ``TPR <= e^eps FPR + delta``
    and ``1 - FPR <= e^eps (1 - TPR) + delta``. The point estimate plugs in the
    observed rates; the lower bound, valid with probability ``confidence``, plugs in a
    Clopper-Pearson lower bound on TPR and upper bound on FPR (each at
    ``1 - (1 - confidence) / 2``, one-sided). The decision rule must be fixed before
    looking at the evaluation records (e.g. the attack's ``threshold_``), or the bound
    is optimistic.

    Returns
    -------
    dict
        ``{"epsilon": point estimate, "epsilon_lower": lower confidence bound}``.
    """
    if not (0 <= tp <= n_members and 0 <= fp <= n_nonmembers):
        raise ValueError("need 0 <= tp <= n_members and 0 <= fp <= n_nonmembers")
    point = _epsilon_from_rates(tp / n_members, fp / n_nonmembers, delta)
    # a two-sided interval at `confidence` has one-sided bounds at 1 - (1 - confidence) / 2;
    # both inequalities are weakest at (lowest plausible TPR, highest plausible FPR)
    tpr_lo, _ = clopper_pearson(tp, n_members, confidence)
    _, fpr_hi = clopper_pearson(fp, n_nonmembers, confidence)
    lower = _epsilon_from_rates(tpr_lo, fpr_hi, delta)
    return {"epsilon": point, "epsilon_lower": min(lower, point)}


def _empirical_epsilons(counts: Any, delta: float, confidence: float) -> list[dict[str, float]]:
    """:func:`empirical_epsilon` of each row of a frame with ``tp``, ``n_members``, ``fp``
    and ``n_nonmembers`` columns (one per attack), in row order."""
    return [
        empirical_epsilon(
            int(r.tp),
            int(r.n_members),
            int(r.fp),
            int(r.n_nonmembers),
            delta=delta,
            confidence=confidence,
        )
        for r in counts[["tp", "n_members", "fp", "n_nonmembers"]].itertuples()
    ]
