"""Decision thresholds chosen for an attack goal (Jayaraman et al., Procedure 5.1).

A threshold is chosen from records the attacker *knows* to be non-members (its public
data, which the target did not train on) and, for goals that need them, simulated
members (records a proxy model of the attacker's own did train on). Never from the
candidates under attack.

Goals
-----
``"fpr"``
    The lowest threshold whose false positive rate on a fresh non-member is at most
    ``fpr``. With ``n`` calibration non-members the threshold sits just above the
    ``ceil((n + 1)(1 - fpr))``-th smallest score, the split-conformal rule: for
    exchangeable scores the expected FPR on fresh non-members is at most ``fpr``
    (exactly ``floor(fpr (n + 1)) / (n + 1)`` without ties). ``fpr < 1 / (n + 1)``
    cannot be promised and raises :class:`~tabmia.metrics.UnresolvableFPRError`.
``"max_ppv"``
    The threshold maximising ``PPV = TPR / (TPR + prior * FPR)`` on simulated members
    and non-members; among thresholds reaching the maximum, the lowest (it flags the
    most members).
``"max_advantage"``
    The threshold maximising ``TPR - FPR``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import StrOptions

from tabmia._validation import COUNT, POSITIVE, RATE, validate_params
from tabmia.exceptions import UnresolvableFPRError

__all__ = [
    "GOALS",
    "threshold_at_fpr",
    "smallest_resolvable_fpr",
    "resolves_fpr",
    "conformal_fpr_band",
    "conformal_pvalues",
    "conformal_pvalues_left_out",
    "select_threshold",
    "ClassConditionalRanks",
]

#: Goals accepted by :func:`select_threshold`.
GOALS: tuple[str, ...] = ("fpr", "max_ppv", "max_advantage")


def _as_scores(scores: Any, name: str) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{name} contains {int((~np.isfinite(s)).sum())} NaN or infinite values")
    return s


@validate_params({"fpr": RATE})
def threshold_at_fpr(nonmember_scores: Any, fpr: float) -> float:
    """Lowest threshold promising FPR ``<= fpr`` on fresh non-members (split-conformal).

    Parameters
    ----------
    nonmember_scores : array-like of shape (n,)
        Attack scores of records known to be non-members.
    fpr : float
        Target false positive rate, in (0, 1).

    Returns
    -------
    float
        Flag a record as member when ``score >= threshold``.

    Raises
    ------
    UnresolvableFPRError
        If ``fpr < 1 / (n + 1)``.
    """
    s = np.sort(_as_scores(nonmember_scores, "nonmember_scores"))
    n = s.size
    j = _conformal_rank(n, fpr)  # 1-based rank in ascending order
    if j > n:
        raise UnresolvableFPRError(
            f"fpr={fpr:g} cannot be promised from {n} non-member scores: it needs at "
            f"least {math.ceil(1.0 / fpr) - 1} (and well over that for a stable "
            "threshold); give the attack more public records or ask for a larger fpr"
        )
    return float(np.nextafter(s[j - 1], np.inf))


def _ordered_scores(scores: Any, name: str) -> np.ndarray:
    """Scores as float64; NaN refused, +-inf kept (they order like any score)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size == 0:
        raise ValueError(f"{name} is empty")
    n_nan = int(np.isnan(s).sum())
    if n_nan:
        raise ValueError(f"{name} contains {n_nan} NaN values")
    return s


def _conformal(at_or_above: np.ndarray, n: Any, own_count: float) -> np.ndarray:
    """``(own_count + #{reference >= s}) / (n + 1)``: the one conformal p-value formula,
    from each score's count of reference scores at or above it among ``n``."""
    return (own_count + at_or_above) / (n + 1.0)


def _check_own_count(own_count: float) -> float:
    if own_count not in (1.0, 0.5):
        raise ValueError(f"own_count must be 1 or 0.5, got {own_count!r}")
    return float(own_count)


def conformal_pvalues(
    candidate_scores: Any,
    calibration_scores: Any,
    *,
    ties: str = "conservative",
    own_count: float = 1.0,
    random_state: Any = None,
) -> np.ndarray:
    """Conformal p-value of each candidate under "it is a non-member like the calibration".

    With ``n`` calibration scores of known non-members (higher = more member-like),
    ``p(s) = (1 + #{calibration >= s}) / (n + 1)``: for a candidate exchangeable with the
    calibration records (a non-member drawn like them), ``P(p <= t) <= t`` for every
    ``t``, and the p-values of many candidates against one calibration set are positively
    dependent (PRDS; Bates et al., Ann. Statist. 2023), so Benjamini-Hochberg on them
    controls the false-discovery rate. ``p <= fpr`` flags exactly what
    :func:`threshold_at_fpr` does: the two are one rule. The same p-value serves records
    and persons (:func:`tabmia.persons.person_scores`: a person's statistic against the
    public persons'); :func:`conformal_pvalues_left_out` is its form for the calibration
    scores themselves.

    Parameters
    ----------
    candidate_scores : array-like of shape (m,)
        Scores of the records (or persons) tested. NaN is refused; +-inf orders as a score.
    calibration_scores : array-like of shape (n,)
        Scores of known non-members: the null the attack's threshold is chosen from.
    ties : {"conservative", "randomized"}, default="conservative"
        The tie rule. A calibration score equal to a candidate's counts as at or above it
        (``"conservative"``: valid, and conservative where scores tie, e.g. a loss of 0
        on many records), or counts with a uniform weight ``U``
        (``"randomized"``: ``(U (1 + #{calibration == s}) + #{calibration > s}) / (n + 1)``,
        exactly uniform for a non-member whatever the ties).
    own_count : {1, 0.5}, default=1
        What the candidate counts for itself (the ``1`` of ``1 + #{...}``); 0.5 gives the
        mid-p ``(0.5 + #{calibration >= s}) / (n + 1)``, below 1 for every score (a normal
        quantile of it stays finite: Stouffer's rule of persons), not itself valid
        (only with ``ties="conservative"``).
    random_state : int, Generator or None, default=None
        The ``U`` of ``ties="randomized"``, one per candidate.

    Returns
    -------
    ndarray of shape (m,)
        p-values in ``[1 / (n + 1), 1]`` (``(0, 1]`` randomized).

    Examples
    --------
    >>> conformal_pvalues([3.0, 0.5], [0.0, 1.0, 2.0, 3.0])
    array([0.4, 0.8])
    """
    s = _ordered_scores(candidate_scores, "candidate_scores")
    ref = np.sort(_ordered_scores(calibration_scores, "calibration_scores"))
    n = ref.size
    at_or_above = n - np.searchsorted(ref, s, side="left")
    if ties == "conservative":
        return _conformal(at_or_above, n, _check_own_count(own_count))
    if ties != "randomized":
        raise ValueError(f"ties must be 'conservative' or 'randomized', got {ties!r}")
    if own_count != 1.0:
        raise ValueError("own_count=0.5 (the mid-p) is only defined for ties='conservative'")
    above = n - np.searchsorted(ref, s, side="right")
    u = np.random.default_rng(random_state).uniform(size=s.size)
    return (above + u * (1.0 + at_or_above - above)) / (n + 1.0)


def conformal_pvalues_left_out(
    calibration_scores: Any, groups: Any = None, *, own_count: float = 1.0
) -> np.ndarray:
    """Conformal p-value of each calibration score against the others, its own left out.

    ``p_i = (1 + #{j outside i's group: s_j >= s_i}) / (n_i + 1)``, with ``n_i`` the
    calibration scores outside ``i``'s group (the tie rule of :func:`conformal_pvalues`:
    an equal score counts as at or above). A calibration record (or public person) then
    stands where a candidate stands: compared with the scores it is not part of, so its
    p-value is exchangeable with a fresh non-member's. With ``groups`` (person ids), a
    record is compared with the *other persons'* records only, as a candidate's record is
    (a candidate's other records are not in the calibration): counting a person's own
    correlated records would make public persons look less extreme than candidates like
    them.

    Parameters
    ----------
    calibration_scores : array-like of shape (n,)
        Scores of known non-members. NaN is refused; +-inf orders as a score.
    groups : array-like of shape (n,), default=None
        The group (person) of each score, left out with it; None: each score alone.
    own_count : {1, 0.5}, default=1
        As :func:`conformal_pvalues` (0.5: the mid-p).

    Returns
    -------
    ndarray of shape (n,)
        p-values in ``[1 / (n_i + 1), 1]``.

    Examples
    --------
    >>> conformal_pvalues_left_out([0.0, 1.0, 2.0, 3.0])
    array([1.  , 0.75, 0.5 , 0.25])
    >>> conformal_pvalues_left_out([0.0, 1.0, 2.0, 3.0], groups=[0, 0, 1, 1])
    array([1.        , 1.        , 0.33333333, 0.33333333])
    """
    s = _ordered_scores(calibration_scores, "calibration_scores")
    own_count = _check_own_count(own_count)
    ref = np.sort(s)
    n = ref.size
    at_or_above = n - np.searchsorted(ref, s, side="left")  # counts the score itself
    if groups is None:
        return _conformal(at_or_above - 1, n - 1, own_count)
    codes, _ = pd.factorize(np.asarray(groups))
    if codes.size != n or (codes < 0).any():
        raise ValueError(f"groups must give a group (no NaN) to each of the {n} calibration scores")
    # the group's own scores at or above each score (itself included), and its size
    own_at_or_above = (
        pd.Series(s).groupby(codes).rank(method="max", ascending=False).to_numpy(np.int64)
    )
    size = np.bincount(codes)
    return _conformal(at_or_above - own_at_or_above, n - size[codes], own_count)


@validate_params(
    {
        "n_calibration": COUNT,
        "fpr": RATE,
        "n_fresh": COUNT,
        "level": RATE,
    }
)
def conformal_fpr_band(
    n_calibration: int, fpr: float, n_fresh: int, level: float = 0.95
) -> tuple[float, float]:
    """Range the FPR of a split-conformal threshold may take on fresh non-members.

    With ``n`` exchangeable calibration scores and ``k = ceil((n + 1)(1 - fpr))``,
    the share of fresh non-members a :func:`threshold_at_fpr` threshold flags is
    ``Beta(n + 1 - k, k)`` distributed (continuous scores), and the number flagged
    among ``n_fresh`` of them is beta-binomial. The band is that distribution's
    central ``level`` interval, divided by ``n_fresh``: a delivered FPR above it
    means the calibration scores were not exchangeable with the fresh ones. Scores
    with ties (discrete scores) can only deliver less, possibly below the band.

    Parameters
    ----------
    n_calibration : int
        Number of calibration (non-member) scores the threshold was chosen from.
    fpr : float
        The promised FPR, in (0, 1).
    n_fresh : int
        Number of fresh non-members the FPR is measured on.
    level : float, default=0.95
        Probability the band holds (use a Bonferroni level for many cells).

    Returns
    -------
    (low, high) : tuple of float
        Bounds of the delivered FPR, inclusive.
    """
    from scipy.stats import betabinom

    k = _conformal_rank(n_calibration, fpr)
    if k > n_calibration:
        raise UnresolvableFPRError(
            f"fpr={fpr:g} cannot be promised from {n_calibration} calibration scores"
        )
    dist = betabinom(n_fresh, n_calibration + 1 - k, k)
    tail = (1.0 - level) / 2.0
    return float(dist.ppf(tail) / n_fresh), float(dist.ppf(1.0 - tail) / n_fresh)


def _conformal_rank(n: int, fpr: float) -> int:
    """1-based rank of the split-conformal threshold among ``n`` ascending scores."""
    return math.ceil((n + 1) * (1.0 - fpr) - 1e-9)


def resolves_fpr(n_nonmembers: int, fpr: float) -> bool:
    """Whether ``n_nonmembers`` calibration scores can promise ``fpr`` (``fpr >= 1/(n+1)``).

    Examples
    --------
    >>> resolves_fpr(99, 0.01), resolves_fpr(98, 0.01)
    (True, False)
    """
    return n_nonmembers >= 1 and _conformal_rank(int(n_nonmembers), float(fpr)) <= n_nonmembers


@validate_params(
    {
        "n_nonmembers": COUNT,
        "grid": RATE,
    }
)
def smallest_resolvable_fpr(n_nonmembers: int, *, grid: float = 0.001) -> float:
    """Smallest FPR on a ``grid`` that :func:`threshold_at_fpr` can promise.

    Parameters
    ----------
    n_nonmembers : int
        Number of non-member calibration scores.
    grid : float, default=0.001
        The FPR is rounded up to a multiple of ``grid`` (a readable level).

    Returns
    -------
    float
        ``1 / (n_nonmembers + 1)`` rounded up to the grid.

    Examples
    --------
    >>> smallest_resolvable_fpr(71)
    0.014
    >>> smallest_resolvable_fpr(10_000)
    0.001
    """
    steps = math.ceil(round(1.0 / ((n_nonmembers + 1) * grid), 9))
    return round(steps * grid, 12)


def _rates_by_threshold(
    nonmember: np.ndarray, member: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    thresholds = np.unique(np.r_[nonmember, member])  # ascending
    neg = np.sort(nonmember)
    pos = np.sort(member)
    fpr = 1.0 - np.searchsorted(neg, thresholds, side="left") / neg.size
    tpr = 1.0 - np.searchsorted(pos, thresholds, side="left") / pos.size
    return thresholds, tpr, fpr


@validate_params(
    {
        "goal": [StrOptions(set(GOALS))],
        "fpr": RATE,
        "prior": POSITIVE,
    }
)
def select_threshold(
    nonmember_scores: Any,
    member_scores: Any = None,
    *,
    goal: str = "fpr",
    fpr: float = 0.01,
    prior: float = 1.0,
) -> float:
    """Threshold for an attack goal (Procedure 5.1).

    Parameters
    ----------
    nonmember_scores : array-like of shape (n0,)
        Scores of known non-members.
    member_scores : array-like of shape (n1,), default=None
        Scores of simulated members; required for ``"max_ppv"`` and ``"max_advantage"``.
    goal : {"fpr", "max_ppv", "max_advantage"}
        What the threshold optimises.
    fpr : float, default=0.01
        Target FPR for ``goal="fpr"``.
    prior : float, default=1.0
        Non-members per member (``gamma``) for ``goal="max_ppv"``.

    Returns
    -------
    float
        Flag ``score >= threshold``.
    """
    neg = _as_scores(nonmember_scores, "nonmember_scores")
    if goal == "fpr":
        return threshold_at_fpr(neg, fpr)
    if member_scores is None:
        raise ValueError(f"goal={goal!r} needs member_scores (simulated members)")
    pos = _as_scores(member_scores, "member_scores")
    thresholds, tpr, fpr_ = _rates_by_threshold(neg, pos)
    if goal == "max_advantage":
        value = tpr - fpr_
    else:
        den = tpr + prior * fpr_
        value = np.where(tpr > 0, tpr / np.where(den > 0, den, 1.0), -np.inf)
    best = value.max()
    # thresholds are ascending: the first maximiser is the lowest threshold
    i = int(np.flatnonzero(value >= best - 1e-12)[0])
    return float(thresholds[i])


class ClassConditionalRanks:
    """Per-label ranks of a score among known non-members of the same label.

    Maps a score ``s`` of a record with label ``c`` to its mid-rank among the
    non-member scores of label ``c``: ``(#{< s} + #{<= s} / 2 + 1/2) / (n_c + 1)``.
    A single threshold on these ranks is one threshold per label at the same FPR:
    Jayaraman et al.'s class-based thresholds (Yeom class-based). Labels with fewer
    than ``min_per_class`` non-members are ranked against all non-members.

    Parameters
    ----------
    min_per_class : int, default=20
        Smallest number of non-members a label needs for its own ranking.
    """

    def __init__(self, min_per_class: int = 20) -> None:
        self.min_per_class = min_per_class

    def fit(self, scores: Any, y: Any, n_classes: int) -> ClassConditionalRanks:
        """Store the sorted non-member scores of each label."""
        s = _as_scores(scores, "scores")
        y = np.asarray(y)
        if y.shape != s.shape:
            raise ValueError("scores and y must have the same length")
        self.pooled_ = np.sort(s)
        order = np.lexsort((s, y))
        y_sorted, s_sorted = y[order], s[order]
        bounds = np.searchsorted(y_sorted, np.arange(n_classes + 1))
        self.sorted_by_class_ = [s_sorted[bounds[c] : bounds[c + 1]] for c in range(n_classes)]
        self.uses_own_ = np.array(
            [v.size >= self.min_per_class for v in self.sorted_by_class_], dtype=bool
        )
        return self

    def transform(self, scores: Any, y: Any) -> np.ndarray:
        """Mid-rank of each score among the non-members of its label, in (0, 1)."""
        s = np.asarray(scores, dtype=np.float64)
        y = np.asarray(y)
        out = np.empty_like(s)
        own = self.uses_own_[y]
        out[~own] = _mid_rank(self.pooled_, s[~own])
        for c in np.unique(y[own]):  # loop over labels, vectorised within a label
            mask = y == c
            out[mask] = _mid_rank(self.sorted_by_class_[c], s[mask])
        return out


def _mid_rank(sorted_ref: np.ndarray, s: np.ndarray) -> np.ndarray:
    below = np.searchsorted(sorted_ref, s, side="left")
    at_or_below = np.searchsorted(sorted_ref, s, side="right")
    return (below + at_or_below + 1) / 2.0 / (sorted_ref.size + 1)
