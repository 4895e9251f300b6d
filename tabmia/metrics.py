"""Metrics of a membership inference attack, and the bounds differential privacy puts on them.

All functions take ground-truth ``membership`` (bool, True = member) and attack
``scores`` (higher = more likely a member), as returned by any attack's
``decision_function``.

Conventions
-----------
- ROC curves keep every threshold (``drop_intermediate=False``): tree models produce
  many tied scores and dropping points changes TPR at a fixed FPR.
- A TPR "at FPR alpha" is the best TPR over thresholds whose empirical FPR is
  ``<= alpha``. With ``n`` non-members the smallest non-zero FPR is ``1/n``, so an
  ``alpha < 1/n`` cannot be resolved and raises :class:`UnresolvableFPRError`.
- The prior ``gamma`` is the number of non-members per member in the candidate
  pool (Jayaraman et al., ``gamma = (1 - p) / p``): ``PPV = TPR / (TPR + gamma * FPR)``.

References
----------
.. [1] Jayaraman, Wang, Knipmeyer, Gu, Evans. Revisiting Membership Inference Under
   Realistic Assumptions. PETS 2021. (PPV, Thm 4.1 and 4.2)
.. [2] Dong, Roth, Su. Gaussian Differential Privacy. JRSS-B 2022. (mu-GDP trade-off)
.. [3] Jagielski, Ullman, Oprea. Auditing Differentially Private Machine Learning.
   NeurIPS 2020. (empirical epsilon with Clopper-Pearson intervals)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from sklearn import metrics as skm
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions

from tabmia import _dp_bounds
from tabmia._deprecation import DEPRECATED, renamed_parameter

# _empirical_epsilons and _epsilon_from_rates: experiment and report.limits import them from here
from tabmia._dp_bounds import (  # noqa: F401
    _empirical_epsilons,
    _epsilon_from_rates,
    dp_advantage_bound,
    dp_consistency,
    dp_ppv_bound,
    dp_tpr_bound,
    dp_tradeoff,
    empirical_epsilon,
    gdp_advantage_bound,
    gdp_ppv_bound,
    gdp_tradeoff,
)
from tabmia._game_labels import split_game_labels
from tabmia._rates import clopper_pearson, ppv
from tabmia._validation import (
    COUNT,
    POSITIVE,
    RATE,
    UNIT_LEFT_CLOSED,
    validate_params,
)

# defined with the other exceptions; importable from here too (their old path)
from tabmia.exceptions import AuditTooSmallError, UnresolvableFPRError

__all__ = [
    "UnresolvableFPRError",
    "AuditTooSmallError",
    "MIN_AUDIT_RECORDS",
    "DEFAULT_DELTA",
    "check_audit_size",
    "roc_curve",
    "auc",
    "tpr_at_fpr",
    "precision_at_fpr",
    "rates_at_threshold",
    "ppv",
    "ppv_interval",
    "ppv_resolved",
    "advantage",
    "max_advantage",
    "make_membership_scorer",
    "clopper_pearson",
    "bootstrap_auc_interval",
    *_dp_bounds.__all__,  # re-exported above; their one list of names is _dp_bounds'
    "attack_metrics",
]


#: Fewest members and fewest non-member candidates an audit accepts. With fewer, a
#: rate's 95% Clopper-Pearson interval is wider than 0.3 whatever is flagged, and one
#: record moves a rate by more than 5 points.
MIN_AUDIT_RECORDS = 20

#: δ of every (ε, δ) an audit reports unless told otherwise: ``tabmia audit --delta``'s
#: default, the gate's and ``assert_membership_risk``'s, the verdict's and the report's.
DEFAULT_DELTA = 1e-5


def check_audit_size(
    n_members: int, n_nonmembers: int, *, minimum: int = MIN_AUDIT_RECORDS
) -> None:
    """Refuse an evaluation set too small to resolve the rates an audit reports.

    Raises
    ------
    AuditTooSmallError
        If there are fewer than ``minimum`` members or non-member candidates.
    """
    for count, what in (
        (n_members, "members (training records scored)"),
        (n_nonmembers, "non-member candidates"),
    ):
        if count < minimum:
            raise AuditTooSmallError(
                f"the audit has {count} {what}; at least {minimum} are needed for its rates "
                f"to mean anything (one record is 1/{max(count, 1)} of a rate), and far more "
                "(hundreds of non-members for TPR at 1% FPR) for a useful audit"
            )


def _check_membership_scores(membership: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    m = np.asarray(membership)
    s = np.asarray(scores, dtype=np.float64)
    if m.ndim != 1 or s.ndim != 1:
        raise ValueError(f"membership and scores must be 1-D, got shapes {m.shape} and {s.shape}")
    if m.shape[0] != s.shape[0]:
        raise ValueError(f"membership has {m.shape[0]} records but scores has {s.shape[0]}")
    if m.dtype != bool:
        uniq = np.unique(m)
        if not np.isin(uniq, [0, 1]).all():
            raise ValueError(f"membership must be boolean or 0/1, got values {uniq[:5]}")
        m = m.astype(bool)
    if not np.all(np.isfinite(s)):
        raise ValueError(f"scores contain {int((~np.isfinite(s)).sum())} NaN or infinite values")
    if m.all() or not m.any():
        raise ValueError("membership must contain both members and non-members")
    return m, s


def roc_curve(membership: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve with every threshold kept.

    Returns
    -------
    fpr, tpr, thresholds : ndarray
        As :func:`sklearn.metrics.roc_curve` with ``drop_intermediate=False``: the
        point ``i`` flags records with ``score >= thresholds[i]``.
    """
    m, s = _check_membership_scores(membership, scores)
    return skm.roc_curve(m, s, drop_intermediate=False)


def auc(membership: Any, scores: Any) -> float:
    """Area under the ROC curve (0.5 = chance)."""
    m, s = _check_membership_scores(membership, scores)
    # what sklearn.metrics.roc_auc_score computes for two classes, without its check of
    # the label type (a sort of every label: a third of its time on ten million records)
    fpr, tpr, _ = skm.roc_curve(m, s)
    return float(skm.auc(fpr, tpr))


def _check_fpr(fpr: float, n_nonmembers: int) -> None:
    if not 0.0 < fpr <= 1.0:
        raise ValueError(f"fpr must be in (0, 1], got {fpr}")
    if fpr * n_nonmembers < 1.0 - 1e-9:
        raise UnresolvableFPRError(
            f"fpr={fpr:g} cannot be resolved with {n_nonmembers} non-members: the smallest "
            f"non-zero FPR is 1/{n_nonmembers} = {1.0 / n_nonmembers:.3g}; use at least "
            f"{math.ceil(1.0 / fpr)} non-members (well over that for a stable estimate)"
        )


def _operating_point(
    m: np.ndarray,
    s: np.ndarray,
    fpr: float,
    curve: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[int, int, float]:
    """(TP, FP, threshold) of the lowest threshold whose FPR is <= fpr (on ``curve``, the
    full ROC curve of ``m`` and ``s`` where the caller has it)."""
    n_neg = int((~m).sum())
    _check_fpr(fpr, n_neg)
    fprs, tprs, thr = skm.roc_curve(m, s, drop_intermediate=False) if curve is None else curve
    ok = np.flatnonzero(fprs <= fpr + 1e-12)
    i = ok[np.argmax(tprs[ok])]
    n_pos = int(m.sum())
    return int(round(tprs[i] * n_pos)), int(round(fprs[i] * n_neg)), float(thr[i])


def tpr_at_fpr(membership: Any, scores: Any, fpr: float = 0.001) -> float:
    """Best true positive rate among thresholds with false positive rate ``<= fpr``.

    Raises
    ------
    UnresolvableFPRError
        If ``fpr < 1 / n_nonmembers``.
    """
    m, s = _check_membership_scores(membership, scores)
    tp, _, _ = _operating_point(m, s, fpr)
    return tp / int(m.sum())


def precision_at_fpr(membership: Any, scores: Any, fpr: float = 0.01) -> float:
    """Precision ``TP / (TP + FP)`` at the threshold of :func:`tpr_at_fpr`.

    Depends on the member/non-member ratio of the evaluation set. Returns NaN when
    no record is flagged at that FPR.
    """
    m, s = _check_membership_scores(membership, scores)
    tp, fp, _ = _operating_point(m, s, fpr)
    return tp / (tp + fp) if tp + fp > 0 else float("nan")


def rates_at_threshold(membership: Any, scores: Any, threshold: float) -> dict[str, Any]:
    """Counts and rates of the decision ``scores >= threshold``."""
    m, s = _check_membership_scores(membership, scores)
    flagged = s >= threshold
    tp = int((flagged & m).sum())
    fp = int((flagged & ~m).sum())
    n_pos, n_neg = int(m.sum()), int((~m).sum())
    return {
        "tp": tp,
        "fp": fp,
        "n_members": n_pos,
        "n_nonmembers": n_neg,
        "tpr": tp / n_pos,
        "fpr": fp / n_neg,
    }


@validate_params({"gamma": POSITIVE, "confidence": RATE})
def ppv_interval(
    tp: int,
    n_members: int,
    fp: int,
    n_nonmembers: int,
    gamma: float = 1.0,
    *,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Confidence interval of the PPV of one decision rule under prior ``gamma``.

    PPV rises with TPR and falls with FPR, so its lower bound is the PPV at (TPR lower,
    FPR upper) and its upper bound at (TPR upper, FPR lower) Clopper-Pearson bounds.
    Each bound is one-sided at ``(1 - confidence) / 4`` (a two-sided interval at
    ``1 - (1 - confidence) / 2`` for each rate), so that by the union bound each end of
    the PPV interval fails with probability at most ``(1 - confidence) / 2``.
    """
    level = 1.0 - (1.0 - confidence) / 2.0
    tpr_lo, tpr_hi = clopper_pearson(tp, n_members, level)
    fpr_lo, fpr_hi = clopper_pearson(fp, n_nonmembers, level)
    return float(ppv(tpr_lo, fpr_hi, gamma)), float(ppv(tpr_hi, fpr_lo, gamma))


def ppv_resolved(fp: int, low: float, high: float, *, max_width: float = 0.5) -> bool:
    """Whether the non-members resolve a PPV: some were flagged and its interval is narrower
    than ``max_width``.

    With no non-member flagged the PPV's point value is 1 whatever the prior, and only
    the FPR's upper bound (about ``3.7 / n_nonmembers``) limits it.
    """
    return bool(fp > 0 and high - low <= max_width)


def advantage(tpr: Any, fpr: Any) -> Any:
    """Membership advantage ``TPR - FPR`` (Yeom et al.)."""
    out = np.asarray(tpr, dtype=np.float64) - np.asarray(fpr, dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def max_advantage(membership: Any, scores: Any) -> float:
    """Largest ``TPR - FPR`` over all thresholds."""
    return _max_advantage_on(roc_curve(membership, scores))


def _max_advantage_on(curve: tuple[np.ndarray, np.ndarray, np.ndarray]) -> float:
    """Largest ``TPR - FPR`` on a full ROC curve ``(fpr, tpr, thresholds)``."""
    fprs, tprs, _ = curve
    return float(np.max(tprs - fprs))


class _MembershipScorer:
    """Callable ``scorer(attack, X, y_game)`` built by :func:`make_membership_scorer`."""

    def __init__(self, metric: str, fpr: float) -> None:
        self.metric, self.fpr = metric, fpr

    def __call__(self, estimator: Any, X: Any, y: Any) -> float:
        labels, member = split_game_labels(y)
        if member is None:
            raise ValueError(
                "the membership scorer needs y from a membership game (fields 'label' and "
                "'member'; see tabmia.game.membership_game), got plain labels"
            )
        s = estimator.decision_function(X, labels)
        if self.metric == "auc":
            return auc(member, s)
        if self.metric == "advantage":
            return max_advantage(member, s)
        return tpr_at_fpr(member, s, fpr=self.fpr)

    def __repr__(self) -> str:
        fpr = f", fpr={self.fpr:g}" if self.metric == "tpr_at_fpr" else ""
        return f"make_membership_scorer(metric={self.metric!r}{fpr})"


@validate_params({"metric": [StrOptions({"tpr_at_fpr", "auc", "advantage"})], "fpr": RATE})
def make_membership_scorer(metric: str = "tpr_at_fpr", *, fpr: float = 0.01) -> Any:
    """A scikit-learn scorer of attacks on a simulated membership game.

    For ``GridSearchCV(attack, grid, scoring=make_membership_scorer(...))`` fitted on
    ``X, y = tabmia.game.membership_game(...)``: in each fold the attack is fitted on
    the training part's non-members and scores the test part, members against
    non-members. Play the game with a shadow model the auditor trained on its own
    public records, never with the real target's candidates (see
    ``examples/select_attack_hyperparameters.py``).

    Parameters
    ----------
    metric : {"tpr_at_fpr", "auc", "advantage"}, default="tpr_at_fpr"
        :func:`tpr_at_fpr` at ``fpr``, :func:`auc`, or :func:`max_advantage`.
    fpr : float, default=0.01
        FPR of ``"tpr_at_fpr"``; each test fold needs at least ``1 / fpr`` non-members
        (else :class:`UnresolvableFPRError`, which the search reports as a failed fold).

    Returns
    -------
    callable
        ``scorer(attack, X, y)`` returning a float, higher = better attack.
    """
    return _MembershipScorer(metric, float(fpr))


@validate_params({"n_bootstrap": COUNT, "confidence": RATE})
def bootstrap_auc_interval(
    membership: Any,
    scores: Any,
    *,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    random_state: Any = None,
    n_bootstraps: Any = DEPRECATED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the AUC, resampling members and non-members separately.

    A resample draws as many members as there are, with replacement, and as many
    non-members. Only how often each record is drawn matters, and those multiplicities
    are exchangeable, so they are drawn directly in score order (:func:`_draw_counts`,
    block by block) and each resample's AUC is one pass over the sorted scores: linear
    time and memory per resample, with every array a block touches small enough for
    the CPU's cache, so a ten-million-record audit costs ten times a million-record one.
    ``n_bootstrap`` resamples are drawn (formerly ``n_bootstraps``, accepted with a
    ``FutureWarning`` until tabmia 0.3).
    """
    n_bootstrap = renamed_parameter(
        n_bootstraps,
        n_bootstrap,
        old="n_bootstraps",
        new="n_bootstrap",
        new_default=200,
        owner="bootstrap_auc_interval",
    )
    m, s = _check_membership_scores(membership, scores)
    rng = check_random_state(random_state)
    neg_sorted = np.sort(s[~m], kind="stable")
    pos_sorted = np.sort(s[m], kind="stable")
    # non-members strictly below / at most each member's score, as positions in neg_sorted
    below = np.searchsorted(neg_sorted, pos_sorted, side="left")
    at_most = np.searchsorted(neg_sorted, pos_sorted, side="right")
    ties = not np.array_equal(below, at_most)
    cum = np.zeros(neg_sorted.size + 1, dtype=np.int64)
    values = np.empty(n_bootstrap)
    for b in range(n_bootstrap):  # loop over resamples (and blocks), not records
        values[b] = _resample_auc(
            _draw_counts(rng, pos_sorted.size),
            _draw_counts(rng, neg_sorted.size),
            cum,
            below,
            at_most if ties else None,
        )
    a = (1.0 - confidence) / 2.0
    return float(np.quantile(values, a)), float(np.quantile(values, 1.0 - a))


def _resample_auc(
    pos_counts: Iterable[np.ndarray],
    neg_counts: Iterable[np.ndarray],
    cum: np.ndarray,
    below: np.ndarray,
    at_most: np.ndarray | None,
) -> float:
    """AUC of one resample: members drawn ``pos_counts`` times and non-members
    ``neg_counts`` times, both in ascending score order and in consecutive blocks; ties
    count one half (``at_most`` None: there are none).

    ``cum`` (one longer than the non-members) receives the non-members' cumulated draws
    (``cum[j]``: draws of the ``j`` lowest); ``below`` / ``at_most`` hold, per member in
    score order, how many non-members score below / at most its score. The non-members'
    blocks are consumed first. In integers: member wins and half-wins are counts, so
    the sums are exact and do not depend on the order they are added in.
    """
    start = 0
    for counts in neg_counts:
        block = cum[start + 1 : start + 1 + counts.size]
        np.cumsum(counts, out=block)
        block += cum[start]
        start += counts.size
    wins2 = 0  # twice the wins, so that half-wins stay integers
    start = 0
    for counts in pos_counts:
        low = cum[below[start : start + counts.size]]
        high = low if at_most is None else cum[at_most[start : start + counts.size]]
        wins2 += int(np.dot(counts, low)) + int(np.dot(counts, high))
        start += counts.size
    return 0.5 * wins2 / (int(below.size) * int(cum.size - 1))


#: Records per block of :func:`_draw_counts`: 2**16 counts (512 KiB) and their draws sit
#: in a core's L2 cache; a power of two makes the bounded draws rejection-free.
_COUNT_BLOCK = 2**16


def _draw_counts(rng: np.random.RandomState, n: int) -> Iterator[np.ndarray]:
    """Yield, block by block, how often each of ``n`` records is drawn in ``n`` draws with
    replacement (one multinomial vector with equal probabilities).

    The block totals are drawn first (a multinomial over the blocks' sizes), then each
    block's draws among its own records: the same distribution as counting ``n``
    uniform draws over all records, without scattering counts over a vector too large
    for the cache.
    """
    sizes = np.full(-(-n // _COUNT_BLOCK), _COUNT_BLOCK, dtype=np.int64)
    sizes[-1] = n - _COUNT_BLOCK * (sizes.size - 1)
    totals = rng.multinomial(n, sizes / n) if sizes.size > 1 else np.array([n])
    for size, total in zip(sizes.tolist(), totals.tolist()):
        yield np.bincount(rng.randint(0, size, total), minlength=size)


@validate_params(
    {
        "confidence": RATE,
        "delta": UNIT_LEFT_CLOSED,
        "n_bootstrap": COUNT,
        "random_state": ["random_state"],
    }
)
def attack_metrics(
    membership: Any,
    scores: Any,
    *,
    threshold: float | None = None,
    fprs: tuple[float, ...] = (0.01, 0.001),
    gammas: tuple[float, ...] = (1.0, 10.0),
    confidence: float = 0.95,
    delta: float = 0.0,
    n_bootstrap: int = 200,
    random_state: Any = None,
    n_bootstraps: Any = DEPRECATED,
) -> dict[str, Any]:
    """All headline metrics of one attack on one evaluation set.

    Parameters
    ----------
    membership, scores : array-like of shape (n,)
        Ground truth and attack scores.
    threshold : float, default=None
        The attack's own decision threshold (``threshold_``, chosen on public data).
        PPV, advantage and the empirical epsilon are reported at it.
    fprs : tuple of float
        FPR levels for TPR and precision; levels below ``1/n_nonmembers`` are
        reported as ``None``.
    gammas : tuple of float
        Priors for the PPV at ``threshold``.
    delta : float, default=0.0
        The delta of the empirical epsilon lower bound.
    n_bootstrap : int, default=200
        Bootstrap resamples of the AUC interval (formerly ``n_bootstraps``, accepted with
        a ``FutureWarning`` until tabmia 0.3).

    Returns
    -------
    dict
        Flat mapping of metric name to value (JSON-serialisable).
    """
    m, s = _check_membership_scores(membership, scores)
    n_pos, n_neg = int(m.sum()), int((~m).sum())
    out: dict[str, Any] = {"n_members": n_pos, "n_nonmembers": n_neg}
    out["auc"] = auc(m, s)
    lo, hi = bootstrap_auc_interval(
        m,
        s,
        n_bootstrap=renamed_parameter(
            n_bootstraps,
            n_bootstrap,
            old="n_bootstraps",
            new="n_bootstrap",
            new_default=200,
            owner="attack_metrics",
        ),
        confidence=confidence,
        random_state=random_state,
    )
    out["auc_low"], out["auc_high"] = lo, hi
    curve = skm.roc_curve(m, s, drop_intermediate=False)  # one sort for the rates below
    out["max_advantage"] = _max_advantage_on(curve)
    for alpha in fprs:
        key = f"{alpha:g}"
        try:
            tp, fp, _ = _operating_point(m, s, alpha, curve)
        except UnresolvableFPRError:
            out[f"tpr@{key}"] = out[f"tpr@{key}_low"] = out[f"tpr@{key}_high"] = None
            out[f"precision@{key}"] = None
            continue
        out[f"tpr@{key}"] = tp / n_pos
        out[f"tpr@{key}_low"], out[f"tpr@{key}_high"] = clopper_pearson(tp, n_pos, confidence)
        out[f"precision@{key}"] = tp / (tp + fp) if tp + fp else None
    if threshold is not None:
        r = rates_at_threshold(m, s, threshold)
        out["threshold"] = float(threshold)
        # what the attacker achieves: records flagged at its own threshold
        out["tp"], out["fp"] = r["tp"], r["fp"]
        out["tpr"], out["fpr"] = r["tpr"], r["fpr"]
        out["tpr_low"], out["tpr_high"] = clopper_pearson(r["tp"], n_pos, confidence)
        out["fpr_low"], out["fpr_high"] = clopper_pearson(r["fp"], n_neg, confidence)
        out["advantage"] = advantage(r["tpr"], r["fpr"])
        for g in gammas:
            out[f"ppv@gamma={g:g}"] = ppv(r["tpr"], r["fpr"], g)
            lo_g, hi_g = ppv_interval(r["tp"], n_pos, r["fp"], n_neg, g, confidence=confidence)
            out[f"ppv@gamma={g:g}_low"], out[f"ppv@gamma={g:g}_high"] = lo_g, hi_g
            out[f"ppv@gamma={g:g}_resolved"] = ppv_resolved(r["fp"], lo_g, hi_g)
        out["delta"] = float(delta)
        eps = empirical_epsilon(r["tp"], n_pos, r["fp"], n_neg, delta=delta, confidence=confidence)
        out["epsilon"], out["epsilon_lower"] = eps["epsilon"], eps["epsilon_lower"]
    return out
