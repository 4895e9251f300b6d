"""Assertions for test suites and CI pipelines: fail a build when an audit shows membership
risk above a limit.

>>> from tabmia.testing import assert_membership_risk
>>> assert_membership_risk(result, tpr_at_fpr={0.01: 0.05}, auc=0.6)  # doctest: +SKIP

The check is :func:`tabmia.gate.evaluate_gate`'s, the one ``tabmia audit --fail-above``
makes: a limit passes when every attack's upper confidence bound is at or under it, fails
when some attack's lower bound is over it, and is unresolved otherwise (failing, unless
``unresolved="pass"``). Where the audit's verdict cannot tell (its inputs contradict
themselves: swapped training and population records, labels that differ beyond chance,
an AUC below chance; or every attack's scores tie at its FPR) it fails, until the cause
is fixed or accepted by name (``accept_warnings=["fit_gap"]``); a label-only audit of a
model with probabilities passes only with ``accept_warnings=["label_only"]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tabmia.gate import GateResult, RiskLimit, evaluate_gate

__all__ = ["assert_membership_risk"]


def assert_membership_risk(
    result: Any,
    *,
    tpr_at_fpr: Mapping[float, float] | tuple[float, float] | None = None,
    auc: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    unresolved: str = "fail",
    accept_warnings: Iterable[str] = (),
) -> GateResult:
    """Raise ``AssertionError`` unless the audit shows the membership risk within limits.

    Parameters
    ----------
    result : ExperimentResult
        From :func:`tabmia.audit.audit_model` or
        :class:`~tabmia.experiment.MembershipExperiment` (the attacks' thresholds should
        aim at the FPR of ``tpr_at_fpr``: ``fpr=`` of each attack).
    tpr_at_fpr : dict of float -> float, or (fpr, limit), default=None
        E.g. ``{0.01: 0.05}``: at most 5% of training records singled out by an attack's
        own threshold aimed at FPR 1% (95% Clopper-Pearson interval).
    auc : float, default=None
        Largest AUC (95% bootstrap interval).
    epsilon : float, default=None
        Largest ε the attacks' decisions may demonstrate for (ε, δ)-DP.
    delta : float, default=None
        δ of the ``epsilon`` limit; by default the audit's, else
        :data:`tabmia.metrics.DEFAULT_DELTA` (``tabmia audit --delta``'s default).
    unresolved : {"fail", "pass"}, default="fail"
        Whether a limit the audit cannot resolve (its interval contains the limit) fails.
    accept_warnings : iterable of str, default=()
        Plausibility findings (by name) checked and overridden, as ``tabmia audit
        --accept-warning``: an accepted contradiction no longer makes the check fail.

    Returns
    -------
    GateResult
        When every limit passes; its ``lines()`` say by how much.

    Raises
    ------
    AssertionError
        One line per limit with the numbers and the attack that decided; where the inputs
        contradict themselves, the findings and what to fix first.
    ValueError
        When no limit is given, or a limit is malformed.
    """
    __tracebackhide__ = True  # pytest shows the message, not this function's source
    limits = []
    if tpr_at_fpr is not None:
        pairs = tpr_at_fpr.items() if isinstance(tpr_at_fpr, Mapping) else [tuple(tpr_at_fpr)]
        limits += [RiskLimit.parse(f"tpr@{float(fpr)!r}={float(cap)!r}") for fpr, cap in pairs]
    if auc is not None:
        limits.append(RiskLimit.parse(f"auc={float(auc)!r}"))
    if epsilon is not None:
        limits.append(RiskLimit.parse(f"epsilon={float(epsilon)!r}"))
    gate = evaluate_gate(
        result, limits, unresolved=unresolved, delta=delta, accept_warnings=accept_warnings
    )
    if not gate.passed:
        if gate.blocked_by and gate.state is not None:
            why = gate.summary().split(": ", 1)[1].split(", so no limit's check")[0]
            head = (
                f"the audit cannot tell: {why}, so no limit's check below is evidence "
                f"(they say {gate.limits_outcome}). To fix: "
                + "; ".join(gate.state.fixes(gate.blocked_by))
                + ". Having checked, accept_warnings=[NAME] lets the limits decide. The "
                "limits' checks"
            )
        elif gate.outcome == "above":
            head = "the audit shows membership risk above the limit"
        else:
            head = (
                "the audit cannot tell whether membership risk is within the limit "
                "(unresolved='pass' lets it pass)"
            )
        raise AssertionError(
            head + ":\n" + "\n".join(f"  {c.line(gate.attacker_sees)}" for c in gate.checks)
        )
    return gate
