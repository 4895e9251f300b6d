"""How many of the first ``k`` named can be non-members, for every ``k`` at once.

A list at FDR ``q`` promises an *expected* share of wrong names, for a ``q`` fixed before
looking. An auditor who reads the ranked p-values and then picks where to stop (``q``
chosen after looking) needs a bound that holds for every stopping point simultaneously.
:func:`fdp_bounds` gives one from the Simes inequality, the bound of Goeman & Solari
(Statist. Sci. 2011; Goeman, Meijer, Krebs & Solari, Biometrika 2019): closed testing
with Simes' local tests, in closed form through Hommel's ``h``.

**Why it holds.** Let ``p0_(1) <= p0_(2) <= ...`` be the non-members' p-values. Simes'
inequality, valid for positively dependent (PRDS) p-values, as conformal p-values against
one calibration set are (Bates, Candès, Lei, Romano & Sesia, Ann. Statist. 2023; Sarkar,
Ann. Statist. 2008), gives ``P(some p0_(u) <= u alpha / n) <= alpha``. Outside that event
at most ``u - 1`` non-members have a p-value at or below ``u alpha / n``, for every ``u``,
so among any set ``R`` of candidates at most
``min_u (u - 1 + #{i in R : p_i > u alpha / n})`` are non-members, every ``R`` at once:
in particular each list of the ``k`` smallest p-values, whatever ``q`` drew it. Closed
testing sharpens it (Goeman et al. 2019): ``n`` becomes Hommel's ``h``, the size of the
largest set of candidates that Simes does not reject, ``max{i : i p_(n - i + j) > j alpha,
j = 1..i}``; with many members ``h`` is near the non-members' count. Finding ``h`` takes
``O(n^2)`` here, so above ``5 000`` candidates ``n`` stands in for it (valid, more
conservative). Under any dependence (a combination over attacks), Hommel's factor
``sum_{i <= n} 1/i`` divides ``alpha`` in every local test.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["fdp_bounds", "DEPENDENCE"]

# above this many candidates Hommel's h (O(n^2) to find) gives way to n
_HOMMEL_MAX_N = 5_000
# elements compared at once while finding h (memory)
_BLOCK = 2_000_000

#: The dependences :func:`fdp_bounds` covers: positive (conformal p-values against one
#: calibration set) or any (a Bonferroni combination over attacks).
DEPENDENCE = ("prds", "arbitrary")


def fdp_bounds(p_values: Any, alpha: float = 0.05, *, dependence: str = "prds") -> np.ndarray:
    """Upper bounds on the non-members among the ``k`` smallest p-values, every ``k`` at once.

    With probability at least ``1 - alpha``, for every ``k`` simultaneously, at most
    ``bounds[k - 1]`` of the candidates with the ``k`` smallest p-values are non-members
    (whatever the order among tied p-values). So a user may read the ranked list and stop
    at any ``k``, or choose the FDR ``q`` after looking, and the bound ``bounds[k - 1] / k``
    on the false-discovery proportion still holds.

    Parameters
    ----------
    p_values : array-like of shape (n,)
        Each candidate's p-value, valid under the null (a non-member): conformal
        p-values against the attacker's public records.
    alpha : float, default=0.05
        The bounds hold together with probability at least ``1 - alpha``.
    dependence : {"prds", "arbitrary"}, default="prds"
        ``"prds"`` for positively dependent p-values (conformal p-values against one
        calibration set); ``"arbitrary"`` for any dependence (``alpha`` divided by
        ``sum_{i <= n} 1/i``), as for a Bonferroni combination over attacks.

    Returns
    -------
    ndarray of int of shape (n,)
        ``bounds[k - 1]``: at most this many non-members among the first ``k``;
        nondecreasing, ``bounds[k - 1] <= k``.

    Examples
    --------
    >>> fdp_bounds([1e-5, 2e-5, 3e-5, 0.3, 0.6, 0.9], alpha=0.05).tolist()
    [0, 0, 0, 1, 2, 3]
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if dependence not in DEPENDENCE:
        raise ValueError(f"dependence must be one of {DEPENDENCE}, got {dependence!r}")
    p = np.sort(np.asarray(p_values, dtype=np.float64).ravel())
    n = p.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if np.isnan(p).any() or p[0] < 0.0 or p[-1] > 1.0:
        raise ValueError("p_values must lie in [0, 1] (no NaN)")
    level = alpha if dependence == "prds" else alpha / float(np.sum(1.0 / np.arange(1, n + 1)))
    h = _hommel_h(p, level) if n <= _HOMMEL_MAX_N else n
    if h == 0:  # Simes rejects every set: every candidate a member, with that confidence
        return np.zeros(n, dtype=np.int64)
    u = np.arange(1, n + 1)
    # below[u - 1]: candidates at or below the line u alpha / h (tolerance: p-values are
    # ratios of integers, so is the line)
    below = np.searchsorted(p, u * level / h * (1.0 + 1e-12), side="right")
    k = np.arange(1, n + 1)
    # for the k smallest, term(u) = u - 1 + max(0, k - below_u). below is nondecreasing in
    # u, so the u with below_u >= k are a suffix (its best: the first, giving first - 1)
    # and the others a prefix (its best: k + the prefix minimum of u - 1 - below_u)
    first = np.searchsorted(below, k, side="left")  # 0-based index of that first u
    prefix_min = np.minimum.accumulate(u - 1 - below)
    bound = k.copy()
    has_suffix = first < n
    bound[has_suffix] = np.minimum(bound[has_suffix], first[has_suffix])  # (first + 1) - 1
    has_prefix = first > 0
    bound[has_prefix] = np.minimum(
        bound[has_prefix], k[has_prefix] + prefix_min[first[has_prefix] - 1]
    )
    return np.maximum(bound, 0).astype(np.int64)


def _hommel_h(p_sorted: np.ndarray, level: float) -> int:
    """Hommel's ``h``: the largest ``i`` whose ``i`` largest p-values Simes does not reject,
    ``i p_(n - i + j) > j level`` for ``j = 1..i`` (0 where Simes rejects every set).

    Tried from ``i = n`` down, a block of ``i`` at a time, until one holds.
    """
    n = p_sorted.size
    j = np.arange(1, n + 1)
    block = max(1, _BLOCK // n)
    for top in range(n, 0, -block):
        i = np.arange(top, max(0, top - block), -1)[:, None]
        at = np.minimum(n - i + j - 1, n - 1)
        # near-equality counts as not rejected: a larger h only loosens the bound
        kept = (j > i) | (i * p_sorted[at] * (1.0 + 1e-12) > j * level)
        holds = kept.all(axis=1)
        if holds.any():
            return int(i[np.argmax(holds), 0])
    return 0
