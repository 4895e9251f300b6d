"""How an attack chooses ``threshold_`` for its goal (Jayaraman et al., Procedure 5.1).

The threshold half of :class:`~tabmia.attacks.base.BaseMembershipAttack`'s ``fit``: the
FPR the threshold will promise, settled before any model is trained (or refused:
:class:`~tabmia.exceptions.UnresolvableFPRError`); the threshold itself, from the
attack's non-member calibration scores or from a proxy model's simulated members and
non-members; and the check that it can flag anyone. Each function takes the attack and
reads or sets its attributes, as the base class's methods did.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from sklearn.base import clone

from tabmia._estimators import clone_recipe, recipe_of
from tabmia.exceptions import FlagsNobodyWarning, FPRFallbackWarning, UnresolvableFPRError
from tabmia.target import n_rows, take_rows
from tabmia.thresholds import resolves_fpr, select_threshold, smallest_resolvable_fpr

__all__ = [
    "MAX_FALLBACK_FPR",
    "check_flags_anybody",
    "choose_threshold",
    "proxy_calibration_scores",
    "resolve_fpr",
]

#: Largest FPR ``unresolved_fpr="smallest"`` falls back to. An attack that flags one
#: non-member in twenty no longer singles records out; fewer than 19 calibration
#: records (the smallest FPR they promise is above this) are refused instead.
MAX_FALLBACK_FPR = 0.05


def resolve_fpr(attack: Any, ranking_only: bool) -> float | None:
    """The FPR ``threshold_`` will promise, settled before anything is trained."""
    if attack.threshold_goal != "fpr":
        return None
    n, which = attack._calibration_count()
    if n >= 1 and resolves_fpr(n, attack.fpr):
        return float(attack.fpr)
    fallback = smallest_resolvable_fpr(n) if n >= 1 else None
    if fallback is not None and ranking_only:
        return fallback
    name = type(attack).__name__
    if (
        attack.unresolved_fpr == "smallest"
        and fallback is not None
        and fallback <= MAX_FALLBACK_FPR
    ):
        warnings.warn(
            f"{name}: {n} calibration records ({which}) cannot promise "
            f"fpr={attack.fpr:g}; its threshold aims at fpr={fallback:g}, the smallest "
            "they can",
            FPRFallbackWarning,
            stacklevel=4,
        )
        return fallback
    need = math.ceil(1.0 / attack.fpr - 1e-9) - 1
    why = (
        f"; the smallest FPR they promise, {fallback:g}, is above "
        f"{MAX_FALLBACK_FPR:g} (MAX_FALLBACK_FPR), where a flagged record is no "
        "longer singled out"
        if attack.unresolved_fpr == "smallest" and fallback
        else ""
    )
    reason = (
        f"fpr={attack.fpr:g} cannot be promised from {n} calibration records "
        f"({which}): it needs at least {need}{why}"
    )
    exc = UnresolvableFPRError(
        f"{name}: {reason}; give the attack more public records or ask for a larger fpr"
    )
    exc.reason = reason
    raise exc


def check_flags_anybody(attack: Any) -> None:
    """Set ``flags_nobody_``, and warn where the threshold can flag no record.

    Where scores tie at their highest value, the split-conformal threshold lies
    above it once more of the calibration records share it than the FPR allows
    (:func:`tabmia.thresholds.threshold_at_fpr`): with a score that cannot go
    higher, no candidate can reach it. (``tabmia audit``'s verdict says the same of
    the scores it saw: "flags nobody because its scores tie".)
    """
    ceiling = float(attack._score_ceiling())
    attack.flags_nobody_ = bool(attack.threshold_ > ceiling)
    if not attack.flags_nobody_:
        return
    share = float(np.mean(attack.calibration_scores_ >= ceiling))
    if attack.fpr_ is not None:
        why = (
            f"at fpr={attack.fpr_:g}: {100 * share:.3g}% of its {attack.n_calibration_} "
            "calibration records reach that score, more than the FPR allows, so no "
            "threshold of the attack can flag anyone there and its TPR of 0 says "
            "nothing about the model at that FPR"
        )
    else:
        why = f"for threshold_goal={attack.threshold_goal!r}"
    warnings.warn(
        f"{type(attack).__name__} flags nobody: its threshold lies above {ceiling:g}, "
        f"the highest score it can give, {why} (flags_nobody_ is True)",
        FlagsNobodyWarning,
        stacklevel=3,
    )


def choose_threshold(attack: Any, X: Any, y_raw: np.ndarray, y_idx: np.ndarray) -> float:
    """``threshold_`` for the attack's ``threshold_goal``, with its calibration attributes.

    ``"fpr"``: split-conformal on the attack's non-member calibration scores, at the FPR
    :func:`resolve_fpr` settled. The other goals: on a proxy model's simulated members and
    non-members (:func:`proxy_calibration_scores`).
    """
    if attack.threshold_goal == "fpr":
        neg = np.asarray(attack._nonmember_calibration_scores(X, y_idx), dtype=np.float64)
        if not np.all(np.isfinite(neg)):
            raise ValueError(
                f"{type(attack).__name__} produced NaN or infinite scores on the public records"
            )
        attack.calibration_scores_ = neg
        attack.n_calibration_ = int(neg.size)
        rows = np.asarray(attack._calibration_rows(), dtype=np.intp)
        if rows.shape != neg.shape:  # pragma: no cover - internal misuse
            raise RuntimeError("calibration_rows_ do not match calibration_scores_")
        attack.calibration_rows_ = rows
        assert attack.fpr_ is not None  # settled before training, for the "fpr" goal
        return select_threshold(neg, goal="fpr", fpr=attack.fpr_)
    if getattr(attack, "_fit_groups", None) is not None:
        raise ValueError(
            f"groups with threshold_goal={attack.threshold_goal!r}: the proxy model's "
            "simulated members and non-members are drawn record by record, not person "
            "by person; use threshold_goal='fpr', whose calibration keeps persons whole"
        )
    neg, pos = proxy_calibration_scores(attack, X, y_raw)
    attack.calibration_scores_ = neg
    attack.n_calibration_ = int(neg.size)
    attack.calibration_rows_ = None
    return select_threshold(
        neg, pos, goal=attack.threshold_goal, fpr=attack.fpr, prior=attack.prior
    )


def proxy_calibration_scores(attack: Any, X: Any, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Procedure 5.1: simulated members and non-members of a proxy model.

    Half of the public records train a proxy of the target; a quarter fits a copy
    of this attack against the proxy; the last quarter are the proxy's
    non-members, and as many of its training records are its members.
    """
    n = n_rows(X)
    if n < 40:
        raise ValueError(
            f"threshold_goal={attack.threshold_goal!r} needs public records to train a "
            f"proxy model; got only {n}"
        )
    if attack.proxy_estimator is not None:
        recipe = clone_recipe(attack.proxy_estimator, name="proxy_estimator", target=attack.target)
    else:
        recipe = recipe_of(
            attack.target,
            name=f"proxy_estimator (for threshold_goal={attack.threshold_goal!r})",
        )
    rng = np.random.RandomState(attack._draw_seed())
    perm = rng.permutation(n)
    half = n // 2
    train_idx, rest = perm[:half], perm[half:]
    fit_idx, out_idx = rest[: rest.size // 2], rest[rest.size // 2 :]
    in_idx = train_idx[: out_idx.size]
    proxy = recipe.fit(take_rows(X, train_idx), y[train_idx])
    proxy_attack = clone(attack)
    # the proxy copy only scores: it chooses no threshold and holds nothing out
    proxy_attack.set_params(target=proxy, threshold_goal="max_advantage")
    proxy_attack._fit_scorer(take_rows(X, fit_idx), y[fit_idx])
    del proxy_attack._y_public
    neg = proxy_attack._scores(take_rows(X, out_idx), y[out_idx])
    pos = proxy_attack._scores(take_rows(X, in_idx), y[in_idx])
    attack.proxy_ = proxy
    return neg, pos
