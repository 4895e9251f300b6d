"""The quantile attack's maths: a score against predicted quantiles as a normal z-score.

Only :mod:`tabmia.attacks.quantile` imports this module.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["predicted_thresholds", "standard_normal_z"]

#: Bounds on the Gaussian head's log standard deviation (keeps exp() finite).
_LOG_SD_CLIP = 50.0


def standard_normal_z(
    s: np.ndarray, raw: np.ndarray, *, mode: str, alphas: np.ndarray, spread: float
) -> np.ndarray:
    """Each record's score ``s`` as a standard-normal quantile of its non-member model.

    Parameters
    ----------
    s : ndarray of shape (n,)
        The target's scores.
    raw : ndarray of shape (n, k)
        The regressor's raw output: ``(mean, log sd)`` for ``mode="gaussian"``, the
        predicted quantiles at levels ``1 - alphas`` (any order) for ``"pinball"``.
    mode : {"gaussian", "pinball"}
    alphas : ndarray
        The FPRs whose ``1 - a`` quantiles the pinball model learnt.
    spread : float
        Global spread of the scores: the slope outside the learnt quantiles and the
        floor of every scale.

    Returns
    -------
    ndarray of shape (n,)
        ``z`` with ``P(S >= s | x) = Phi(-z)`` under the model.
    """
    tiny = 1e-6 * spread
    if mode == "gaussian":
        sd = np.maximum(np.exp(np.clip(raw[:, 1], -_LOG_SD_CLIP, _LOG_SD_CLIP)), tiny)
        return (s - raw[:, 0]) / sd
    q = np.sort(raw, axis=1)  # ascending, at ascending levels 1 - a
    zk = stats.norm.ppf(1.0 - alphas[::-1])
    K = zk.size
    if K == 1:
        return zk[0] + (s - q[:, 0]) / spread
    span = np.maximum(q[:, -1] - q[:, 0], 1e-3 * spread)
    slope_out = (zk[-1] - zk[0]) / span
    # knots strictly below s: a score equal to a run of tied quantiles (an atom of
    # the score distribution, e.g. a forest's probability 1.0) gets the lowest
    # level of the run, i.e. the conservative p-value P(S >= s | x)
    idx = np.sum(q < s[:, None], axis=1)
    lo = np.clip(idx - 1, 0, K - 2)
    rows = np.arange(s.size)
    q_lo, q_hi = q[rows, lo], q[rows, lo + 1]
    seg = np.maximum(q_hi - q_lo, tiny)
    z = zk[lo] + (s - q_lo) * (zk[lo + 1] - zk[lo]) / seg
    z = np.where(idx == 0, zk[0] + (s - q[:, 0]) * slope_out, z)
    z = np.where(idx == K, zk[-1] + (s - q[:, -1]) * slope_out, z)
    return z


def predicted_thresholds(raw: np.ndarray, *, mode: str, alphas: np.ndarray) -> np.ndarray:
    """The score thresholds ``q_{1-a}(x)`` for each ``a`` in ``alphas``, column by column.

    Examples
    --------
    >>> raw = np.array([[0.0, 0.0]])  # Gaussian head: mean 0, log sd 0
    >>> predicted_thresholds(raw, mode="gaussian", alphas=np.array([0.5])).tolist()
    [[0.0]]
    """
    if mode == "gaussian":
        sd = np.exp(np.clip(raw[:, 1], -_LOG_SD_CLIP, _LOG_SD_CLIP))
        return raw[:, :1] + sd[:, None] * stats.norm.isf(alphas)[None, :]
    return np.sort(raw, axis=1)[:, ::-1]
