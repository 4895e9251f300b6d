"""LiRA's statistics: Gaussian membership scores, score clipping, and the TPR used to pick a clip.

Pure array functions, vectorised over records; :mod:`tabmia.attacks.lira` owns the
estimator that fits the moments they take.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

__all__ = ["offline_score", "online_score"]


def _clip_stat(s: np.ndarray, bound: float | None) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    return s if bound is None else np.clip(s, -bound, bound)


def _tpr_at(member: np.ndarray, scores: np.ndarray, alpha: float) -> float:
    """TPR of the rule ``score > the (floor(alpha n) + 1)-th largest non-member score``."""
    neg = np.sort(scores[~member])[::-1]
    k = int(np.floor(alpha * neg.size + 1e-9))
    thr = neg[k] if k < neg.size else -np.inf
    return float(np.mean(scores[member] > thr))


def _logit_bound(proba_clip: float | None) -> float | None:
    if proba_clip is None or proba_clip <= 0:
        return None
    return float(math.log1p(-proba_clip) - math.log(proba_clip))


def _predictive_sd(var: np.ndarray, count: np.ndarray) -> np.ndarray:
    c = np.maximum(np.asarray(count, dtype=np.float64), 1.0)
    return np.sqrt(var * (1.0 + 1.0 / c))


def offline_score(t: np.ndarray, mu_out: np.ndarray, var_out: np.ndarray, c_out: np.ndarray) -> np.ndarray:
    """``-log Pr[Z >= t]``, ``Z ~ N(mu_out, var_out (1 + 1/c_out))`` (Eq. 4, in log space)."""
    z = (t - mu_out) / _predictive_sd(var_out, c_out)
    return -log_ndtr(-z)


def online_score(
    t: np.ndarray,
    mu_in: np.ndarray,
    var_in: np.ndarray,
    c_in: np.ndarray,
    mu_out: np.ndarray,
    var_out: np.ndarray,
    c_out: np.ndarray,
) -> np.ndarray:
    """Gaussian log likelihood ratio IN vs OUT (Alg. 1, line 15)."""
    sd_in = _predictive_sd(var_in, c_in)
    sd_out = _predictive_sd(var_out, c_out)
    z_in = (t - mu_in) / sd_in
    z_out = (t - mu_out) / sd_out
    return 0.5 * (z_out * z_out - z_in * z_in) + np.log(sd_out) - np.log(sd_in)
