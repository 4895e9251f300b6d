"""Per-record moments of the shadow models' scores, over the models a mask selects."""

from __future__ import annotations

import numpy as np

__all__ = ["masked_moments", "pooled_variance"]


def masked_moments(
    stats: np.ndarray, mask: np.ndarray, chunk: int = 16384
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-record count, mean and sum of squared deviations of ``stats[mask]``.

    Parameters
    ----------
    stats : ndarray of shape (n_models, n)
    mask : ndarray of bool of shape (n_models, n)

    Returns
    -------
    count : ndarray of int64 of shape (n,)
    mean : ndarray of float64 of shape (n,)
        NaN where ``count == 0``.
    ssd : ndarray of float64 of shape (n,)
        ``sum (x - mean)^2`` over the masked entries (0 where ``count == 0``).
    """
    n = stats.shape[1]
    count = mask.sum(axis=0).astype(np.int64)
    mean = np.full(n, np.nan)
    ssd = np.zeros(n)
    for start in range(0, n, chunk):  # chunks of records bound the float64 temporaries
        sl = slice(start, min(start + chunk, n))
        x = np.asarray(stats[:, sl], dtype=np.float64)
        w = mask[:, sl]
        c = count[sl]
        tot = np.where(w, x, 0.0).sum(axis=0)
        mu = np.divide(tot, c, out=np.full(tot.shape, np.nan), where=c > 0)
        d = np.where(w, x - np.nan_to_num(mu), 0.0)
        mean[sl] = mu
        ssd[sl] = (d * d).sum(axis=0)
    return count, mean, ssd


def pooled_variance(count: np.ndarray, ssd: np.ndarray) -> float:
    """Pooled within-record variance ``sum ssd / sum (count - 1)`` (records with >= 2)."""
    ok = count >= 2
    dof = float((count[ok] - 1).sum())
    return float(ssd[ok].sum() / dof) if dof > 0 else float("nan")
