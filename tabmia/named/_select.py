"""Which candidates a list at false-discovery rate ``q`` names, from their p-values.

Every step-up is scipy's (:func:`scipy.stats.false_discovery_control`): its adjusted
p-values at most ``q`` are the Benjamini-Hochberg (``"bh"``) or Benjamini-Yekutieli
(``"by"``) rejections. Adjusting along an axis selects in many resamples at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import false_discovery_control

__all__ = ["fdr_select", "bonferroni_min", "storey_pi0", "STOREY_LAMBDA"]

#: Storey's tuning point: the share of p-values above it estimates the non-member share.
STOREY_LAMBDA = 0.5

# p-values are ratios of integers: the tolerance keeps k / (n + 1) <= q exact under rounding
_TOL = 1e-12


def fdr_select(p_values: Any, q: float, *, method: str = "bh", axis: int = -1) -> np.ndarray:
    """Mask of the p-values a step-up at FDR ``q`` rejects (along ``axis``).

    Parameters
    ----------
    p_values : array-like
        p-values in ``[0, 1]``; several rows are selected independently (``axis``).
    q : float
        The false-discovery rate, in (0, 1).
    method : {"bh", "by"}, default="bh"
        Benjamini-Hochberg (valid for positively dependent p-values, as conformal
        p-values against one calibration set are) or Benjamini-Yekutieli (valid under
        any dependence, at a cost of a factor ``sum_{i<=n} 1/i``).
    axis : int, default=-1

    Returns
    -------
    ndarray of bool, the shape of ``p_values``

    Examples
    --------
    >>> fdr_select([0.001, 0.02, 0.03, 0.5], 0.1).tolist()
    [True, True, True, False]
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    if method not in ("bh", "by"):
        raise ValueError(f"method must be 'bh' or 'by', got {method!r}")
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return np.zeros(p.shape, dtype=bool)
    adjusted = false_discovery_control(p, axis=axis, method=method)
    return np.asarray(adjusted <= q * (1.0 + _TOL))


def bonferroni_min(p_values: Any, axis: int = -1) -> np.ndarray:
    """One p-value per candidate from its ``m`` attacks' p-values: ``min(1, m * min_j p_j)``.

    Valid whatever the dependence between the attacks (a union bound): the attacks of
    one audit score the same records and are strongly dependent.
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = p.shape[axis]
    return np.minimum(1.0, m * p.min(axis=axis))


def storey_pi0(p_values: Any, *, lam: float = STOREY_LAMBDA, axis: int = -1) -> np.ndarray:
    """Storey's conservative estimate of the share of true nulls (non-members).

    ``min(1, (1 + #{p > lam}) / (n (1 - lam)))``: the non-members' p-values are uniform,
    so about ``(1 - lam) pi0 n`` of them lie above ``lam``, and members' rarely do. The
    ``+1`` makes the adaptive step-up at ``q / pi0`` valid for independent p-values
    (Storey, Taylor & Siegmund 2004); for conformal p-values the benchmark checks it.
    """
    p = np.asarray(p_values, dtype=np.float64)
    n = p.shape[axis]
    above = (p > lam).sum(axis=axis)
    return np.minimum(1.0, (1.0 + above) / (n * (1.0 - lam)))
