"""LiRA's statistics: Gaussian membership scores, score clipping, and the TPR used to pick a clip.

Pure array functions, vectorised over records; :mod:`tabmia.attacks.lira` owns the
estimator that fits the moments they take.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

__all__ = [
    "offline_score",
    "online_score",
    "clip_grid",
    "leave_one_out",
    "CLIP_GRID_MAX",
    "LOGIT_CLIP_GRID_MIN",
]

#: ``proba_clip="auto"`` tries ``delta/2 * 2**j`` up to this clip (``delta``: the
#: target's probability resolution).
CLIP_GRID_MAX = 0.25
_MAX_CLIP_GRID = 10
#: Smallest clip tried for a target that exposes logits (bound +-13.8 on the logit scale).
LOGIT_CLIP_GRID_MIN = 1e-6


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


def offline_score(
    t: np.ndarray, mu_out: np.ndarray, var_out: np.ndarray, c_out: np.ndarray
) -> np.ndarray:
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


def clip_grid(p_true: np.ndarray | None) -> tuple[list[float], bool]:
    """The probability clips ``proba_clip="auto"`` tries, and whether "no clip" competes.

    ``p_true`` holds the shadows' probabilities of the true class (None for a target
    that gives its own logits). An empty grid: nothing saturates, no clip is needed.
    """
    if p_true is None:
        # The target's own logits: nothing saturates, but an overfit MLP's scores
        # are heavy-tailed and inflate the pooled variance; bounding them can help.
        # "No bound" competes with the grid and wins ties.
        lo, with_none = LOGIT_CLIP_GRID_MIN, True
    else:
        gap = np.minimum(p_true, 1.0 - p_true)
        if not (gap <= 0).any():
            return [], False
        positive = gap[gap > 0]
        delta = float(positive.min()) if positive.size else 0.5
        # at least the smallest normal float: half a subnormal gap (a DP model's 1e-320)
        # would be 0 and the number of doublings infinite
        lo, with_none = min(max(0.5 * delta, np.finfo(np.float64).tiny), CLIP_GRID_MAX), False
    n_doublings = int(np.floor(np.log2(CLIP_GRID_MAX / lo) + 1e-9))
    hi = lo * 2.0**n_doublings
    return [float(e) for e in np.geomspace(lo, hi, min(n_doublings + 1, _MAX_CLIP_GRID))], with_none


def leave_one_out(
    c: np.ndarray, mu: np.ndarray, ssd: np.ndarray, x: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count, mean and sum of squared deviations of each record's statistics without
    one model's ``x``, on the records ``rows`` that model contributed to (Welford's
    update in reverse); a record left with no model gets count 0."""
    c, mu, ssd = c.copy(), mu.copy(), ssd.copy()
    r = rows & (c >= 2)
    c1 = c[r] - 1
    mu1 = (mu[r] * c[r] - x[r]) / c1
    ssd[r] = np.maximum(ssd[r] - (x[r] - mu[r]) * (x[r] - mu1), 0.0)
    mu[r] = mu1
    c[r] = c1
    c[rows & ~r] = 0
    return c, mu, ssd
