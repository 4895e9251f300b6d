"""What the metrics and the DP bounds both compute from an attack's rates: its PPV under a
prior, and the Clopper-Pearson interval every rate of an audit carries.

Public through :mod:`tabmia.metrics` (their home before that module was split).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from tabmia._validation import POSITIVE, RATE, validate_params

__all__ = ["clopper_pearson", "ppv"]


@validate_params({"confidence": RATE})
def clopper_pearson(k: Any, n: Any, confidence: float = 0.95) -> tuple[Any, Any]:
    """Two-sided Clopper-Pearson interval for a binomial rate ``k / n``.

    Returns
    -------
    low, high : float or ndarray
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.any(n <= 0) or np.any(k < 0) or np.any(k > n):
        raise ValueError("clopper_pearson needs 0 <= k <= n and n > 0")
    a = (1.0 - confidence) / 2.0
    low = np.where(k > 0, stats.beta.ppf(a, k, n - k + 1), 0.0)
    high = np.where(k < n, stats.beta.ppf(1.0 - a, k + 1, n - k), 1.0)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


@validate_params({"gamma": POSITIVE})
def ppv(tpr: Any, fpr: Any, gamma: float = 1.0) -> Any:
    """Positive predictive value under prior ``gamma`` (non-members per member).

    ``PPV = TPR / (TPR + gamma * FPR)`` (Jayaraman et al., proof of Thm 4.2). Where an
    attack flags nothing (TPR = FPR = 0) the PPV is the base rate ``1 / (1 + gamma)``.
    """
    tpr = np.asarray(tpr, dtype=np.float64)
    fpr = np.asarray(fpr, dtype=np.float64)
    den = tpr + gamma * fpr
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, tpr / np.where(den > 0, den, 1.0), 1.0 / (1.0 + gamma))
    return float(out) if out.ndim == 0 else out
