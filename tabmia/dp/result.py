"""What a one-run DP audit found: the bounds, the guesses behind them, a verdict."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["OneRunAuditResult"]


def _fmt(value: float, digits: int = 2) -> str:
    return "inf" if math.isinf(value) else f"{value:.{digits}f}"


def _pct(confidence: float) -> str:
    return f"{100 * confidence:g} %"


@dataclass(frozen=True)
class OneRunAuditResult:
    """The outcome of a one-run audit (:class:`tabmia.dp.OneRunAudit` or
    :func:`tabmia.dp.audit_canary_scores`).

    Attributes
    ----------
    epsilon_lower : float
        Training is not (epsilon, ``delta``)-DP for any epsilon below this, with
        confidence ``confidence`` (Steinke et al.; no assumption on the mechanism).
    delta, confidence : float
        The delta of the claims tested and the confidence of the bounds.
    n_canaries, n_included : int
        Canaries audited and how many of them were trained on.
    k_plus, k_minus, n_guesses, n_correct : int
        The guessing rule behind ``epsilon_lower`` (the ``k_plus`` highest scores
        guessed in, the ``k_minus`` lowest out, the rest abstentions), its guesses
        and how many were right.
    accuracy, accuracy_low, accuracy_high : float
        ``n_correct / n_guesses`` and its Clopper-Pearson interval at ``confidence``
        (NaN without guesses).
    mu_lower : float
        Training is not mu-GDP for any mu below this, with confidence ``confidence``
        (Mahloujifar et al.).
    epsilon_lower_gdp : float or None
        The epsilon at ``delta`` of ``mu_lower``-GDP: a lower bound on epsilon only
        if the training's privacy curve is Gaussian; None when ``delta`` is 0.
    gdp_rule : tuple of int
        ``(k_plus, k_minus, n_guesses, n_correct)`` behind ``mu_lower``.
    guesses : str
        How the guessing rule was chosen: ``"bonferroni"`` (the best of ``n_rules``
        fixed rules, each tested at ``1 - (1 - confidence) / n_rules``),
        ``"holdout"`` (chosen on ``n_holdout`` other canaries) or ``"given"``.
    n_rules, n_holdout : int
        Rules tried (Bonferroni), canaries spent on choosing the rule (holdout).
    claimed_epsilon : float or None
        The claim compared against.
    p_value : float or None
        The chance, under the claim, of guesses at least this good (for
        ``"bonferroni"``, the smallest over the rules times ``n_rules``).
    scores, included, guessed : ndarray
        Per canary: the membership score, whether it was trained on, and the guess
        (1 in, -1 out, 0 abstained; canaries spent on a holdout choice are 0).
    context : dict
        What was audited (recipe, data, canaries, score), for reports.
    """

    epsilon_lower: float
    delta: float
    confidence: float
    n_canaries: int
    n_included: int
    k_plus: int
    k_minus: int
    n_guesses: int
    n_correct: int
    accuracy: float
    accuracy_low: float
    accuracy_high: float
    mu_lower: float
    epsilon_lower_gdp: float | None
    gdp_rule: tuple[int, int, int, int]
    guesses: str
    n_rules: int
    n_holdout: int
    claimed_epsilon: float | None
    p_value: float | None
    scores: np.ndarray = field(repr=False)
    included: np.ndarray = field(repr=False)
    guessed: np.ndarray = field(repr=False)
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def violated(self) -> bool | None:
        """Whether the claimed epsilon is refuted (None without a claim)."""
        if self.claimed_epsilon is None:
            return None
        return self.epsilon_lower > self.claimed_epsilon

    @property
    def claim_check(self) -> Any:
        """The claim refuted, consistent or cannot tell, and the canaries that could
        refute it (a :class:`tabmia.claims.ClaimCheck`; None without a claim), from
        :func:`tabmia.dp.one_run_claim_check`."""
        from tabmia.dp.claims import one_run_claim_check

        return one_run_claim_check(self)

    @property
    def tightness(self) -> float | None:
        """``epsilon_lower / claimed_epsilon`` (None without a positive claim)."""
        if not self.claimed_epsilon:
            return None
        return self.epsilon_lower / self.claimed_epsilon

    def sentence(self) -> str:
        """The verdict in one plain sentence."""
        conf, delta = _pct(self.confidence), f"{self.delta:g}"
        counts = (
            f"{self.n_correct} of {self.n_guesses} membership guesses on "
            f"{self.n_canaries} canaries were right"
        )
        bound = f"epsilon >= {_fmt(self.epsilon_lower)} (delta = {delta})"
        if self.claimed_epsilon is None:
            if self.epsilon_lower > 0:
                return (
                    f"Training is not ({_fmt(self.epsilon_lower)}, {delta})-DP at {conf} "
                    f"confidence: {counts}; lower bound {bound}."
                )
            return (
                f"No epsilon is refuted at {conf} confidence ({counts}): the audit's "
                "lower bound is 0, which says nothing on how private training is."
            )
        claim = f"epsilon = {self.claimed_epsilon:g}"
        check = self.claim_check
        if check.state == "cannot_tell":
            return (
                f"Cannot tell whether {claim} (delta = {delta}) holds: {check.reason}. "
                f"This audit: {counts}; lower bound {bound}."
            )
        if self.violated:
            return (
                f"{claim} is violated at {conf} confidence: {counts}, which no "
                f"({self.claimed_epsilon:g}, {delta})-DP training achieves with "
                f"probability above {100 * (1 - self.confidence):g} %; lower bound {bound}."
            )
        return (
            f"Consistent with {claim} (delta = {delta}): the audit's {conf} lower bound "
            f"is {bound}, {counts}; {check.reason}. A lower bound can refute a claim, "
            "never prove it."
        )

    def to_dict(self, *, arrays: bool = False) -> dict[str, Any]:
        """JSON-ready fields (infinite or NaN values as None; per-canary arrays only
        with ``arrays=True``)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            if name in ("scores", "included", "guessed") and not arrays:
                continue
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, float) and not math.isfinite(value):
                value = None
            out[name] = value
        out["violated"] = self.violated
        check = self.claim_check
        out["claim"] = None if check is None else check.to_dict()
        out["tightness"] = self.tightness
        out["sentence"] = self.sentence()
        return out
