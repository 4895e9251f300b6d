"""A DP claim checked against an audit: refuted, consistent, or cannot tell.

An audit can refute a claimed (epsilon, delta) by showing more than such training
allows; it never proves one. So "consistent" is said only where the audit could
have refuted the claim: where even the strongest possible outcome (every member
flagged and no non-member; every guess right) would not have refuted it at the
confidence asked for, the answer is "cannot tell", with the amount of evidence
that would. One rule, two audits:

- the membership game (:func:`membership_claim_check`, the report's DP table):
  Clopper-Pearson intervals on one decision rule's TPR and FPR against the
  trade-off bound ``TPR <= e^eps FPR + delta`` (:func:`tabmia.metrics.dp_consistency`);
- the one-run canary audit (:func:`tabmia.dp.one_run_claim_check`): right guesses
  against Steinke et al.'s bound.

A claim needs ``epsilon > 0`` (:func:`check_claimed_epsilon`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import special

from tabmia.metrics import dp_consistency

__all__ = [
    "CLAIM_STATES",
    "group_privacy",
    "ClaimCheck",
    "check_claimed_epsilon",
    "membership_claim_check",
    "records_to_refute",
]

#: The three answers to "does the audit refute the claim?".
CLAIM_STATES: tuple[str, ...] = ("refuted", "consistent", "cannot_tell")


@dataclass(frozen=True)
class ClaimCheck:
    """What an audit says about a claimed (epsilon, delta).

    Attributes
    ----------
    state : {"refuted", "consistent", "cannot_tell"}
        ``"refuted"``: the audit shows more than (epsilon, delta)-DP training allows,
        at ``confidence``. ``"consistent"``: it does not, although its strongest
        possible outcome would have. ``"cannot_tell"``: not even that outcome would
        have refuted the claim, or the measured rates are above the bound only within
        their uncertainty.
    epsilon, delta, confidence : float
        The claim and the confidence of the test.
    needed : int or None
        Where the audit was too small to refute the claim: the least evidence that
        could, in ``unit``; None where no amount can (``delta`` too large for the
        test) or where size is not what is missing.
    unit : str
        What ``needed`` counts.
    reason : str
        One sentence: why this state.
    """

    state: str
    epsilon: float
    delta: float
    confidence: float
    needed: int | None
    unit: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def check_claimed_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """The claimed epsilon as a float; raises ``ValueError`` unless it is finite and > 0.

    Epsilon = 0 is refused rather than tested: (0, delta)-DP says the model moves by at
    most delta when any one record is added or removed, so by group privacy by at most
    ``n delta`` over all ``n`` training records; with ``n delta < 1`` that is a model
    independent of its training data. No recipe that learns makes that claim, and an
    audit of it could only refute it or fail to, which reads as an endorsement.
    """
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number > 0, got {epsilon!r}") from None
    if value == 0.0:
        raise ValueError(
            f"{name} must be > 0, got 0: a DP claim with epsilon = 0 says the model does not "
            "depend on its training data, which no training that learns achieves (and an "
            "audit can only fail to refute it); check a positive epsilon"
        )
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}")
    return value


def records_to_refute(epsilon: float, delta: float = 0.0, confidence: float = 0.95) -> int | None:
    """Fewest members (and as many non-members) with which a membership game could refute
    (epsilon, delta)-DP.

    The strongest outcome, every member flagged and no non-member, refutes the claim
    (:func:`tabmia.metrics.dp_consistency`) when the TPR's Clopper-Pearson lower bound
    ``a^(1/n)`` (``a = (1 - confidence) / 2``) exceeds the bound at the FPR's upper
    bound ``1 - a^(1/n)``; both sides of the trade-off bound give the same condition,
    ``a^(1/n) > (e^eps + delta) / (1 + e^eps)``, solved for ``n`` in closed form and
    checked against :func:`~tabmia.metrics.dp_consistency` itself.

    Returns
    -------
    int or None
        The count; None when no count can (epsilon beyond ~700, where
        ``e^-eps`` underflows).

    Examples
    --------
    >>> records_to_refute(1.0, 1e-5)
    12
    """
    epsilon = check_claimed_epsilon(epsilon)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    a = (1.0 - confidence) / 2.0
    # log of (e^eps + delta) / (1 + e^eps) = 1 - (1 - delta) / (1 + e^eps), without overflow
    log_t = math.log1p(-(1.0 - delta) * float(special.expit(-epsilon)))
    if log_t == 0.0:  # epsilon so large that no representable count refutes it
        return None
    n = max(1, math.floor(math.log(a) / log_t) + 1)

    def refutes(k: int) -> bool:
        return dp_consistency(k, k, 0, k, epsilon, delta, confidence=confidence)["verdict"] == "no"

    if n > 10**12:  # past float resolution of a^(1/n): the closed form is the answer
        return n
    # the closed form up to rounding: a step or two to the exact count of the test in use
    for _ in range(8):
        if not refutes(n):
            n += 1
        elif n > 1 and refutes(n - 1):
            n -= 1
        else:
            break
    return n


def membership_claim_check(
    tp: int,
    n_members: int,
    fp: int,
    n_nonmembers: int,
    epsilon: float,
    delta: float = 0.0,
    *,
    confidence: float = 0.95,
) -> ClaimCheck:
    """Refuted, consistent or cannot tell: one decision rule of a membership game against
    a claimed (epsilon, delta).

    Parameters
    ----------
    tp, n_members, fp, n_nonmembers : int
        Members flagged of those scored, non-members flagged of those scored.
    epsilon : float
        The claimed epsilon, > 0.
    delta : float, default=0.0
        Its delta.
    confidence : float, default=0.95
        Confidence of the intervals.

    Returns
    -------
    ClaimCheck
        ``needed`` counts members, and as many non-members, where the game was too
        small for any outcome to refute the claim.
    """
    epsilon = check_claimed_epsilon(epsilon)
    check = dp_consistency(tp, n_members, fp, n_nonmembers, epsilon, delta, confidence=confidence)
    unit = "members and as many non-members"
    pct = f"{100 * confidence:g}%"
    if check["verdict"] == "no":
        return ClaimCheck(
            "refuted",
            epsilon,
            delta,
            confidence,
            None,
            unit,
            f"even the TPR's {pct} lower bound is above the largest TPR the claim "
            "allows at the FPR's upper bound",
        )
    best = dp_consistency(
        n_members, n_members, 0, n_nonmembers, epsilon, delta, confidence=confidence
    )
    if best["verdict"] != "no":
        needed = records_to_refute(epsilon, delta, confidence)
        more = (
            "no feasible number of records can"
            if needed is None
            else f"that takes at least {needed} members and as many non-members"
        )
        return ClaimCheck(
            "cannot_tell",
            epsilon,
            delta,
            confidence,
            needed,
            unit,
            f"even an attack flagging all {n_members} members and none of the "
            f"{n_nonmembers} non-members would not refute it at {pct}; {more}",
        )
    if check["verdict"] == "not resolved":
        return ClaimCheck(
            "cannot_tell",
            epsilon,
            delta,
            confidence,
            None,
            unit,
            "the TPR is above the bound at the measured FPR, but within the "
            f"FPR's uncertainty with {n_nonmembers} non-members",
        )
    return ClaimCheck(
        "consistent",
        epsilon,
        delta,
        confidence,
        None,
        unit,
        "the rates are within the bound, and this game could have refuted the "
        "claim (flagging every member and no non-member would have)",
    )


def group_privacy(
    epsilon: float | np.ndarray, n_records: int | np.ndarray, delta: float = 0.0
) -> tuple[Any, Any]:
    """The (epsilon, delta) a person with ``k`` records has under record-level DP.

    Group privacy (Dwork & Roth 2014, Theorem 2.2): a mechanism that is (epsilon, delta)-DP for one record is
    ``(k * epsilon, k * exp((k - 1) * epsilon) * delta)``-DP for a group of ``k`` records,
    here one person's. The guarantee degrades linearly in ``epsilon`` and exponentially
    in ``delta``; a person-level delta of 1 or more promises nothing. Training with
    person-level DP (clipping each person's contribution) avoids the degradation.

    Parameters
    ----------
    epsilon : float or array-like
        Record-level epsilon (>= 0).
    n_records : int or array-like
        Records of the person (>= 1).
    delta : float, default=0.0
        Record-level delta.

    Returns
    -------
    epsilon_person, delta_person : float or ndarray
        ``k * epsilon`` and ``k * exp((k - 1) * epsilon) * delta`` (0 where ``delta`` is
        0; inf where it overflows).
    """
    eps = np.asarray(epsilon, dtype=float)
    k = np.asarray(n_records)
    if np.any(eps < 0) or np.any(np.isnan(eps)):
        raise ValueError("epsilon must be >= 0")
    if delta < 0 or delta > 1:
        raise ValueError(f"delta must be in [0, 1], got {delta}")
    if np.any(k < 1) or not np.all(np.equal(np.mod(k, 1), 0)):
        raise ValueError("n_records must be whole numbers >= 1")
    k = k.astype(float)
    eps_person = k * eps
    with np.errstate(over="ignore"):
        delta_person = (
            np.zeros(np.broadcast(k, eps).shape)
            if delta == 0
            else k * np.exp((k - 1.0) * eps) * delta
        )
    if eps_person.ndim == 0 and np.ndim(delta_person) == 0:
        return float(eps_person), float(delta_person)
    return eps_person, delta_person
