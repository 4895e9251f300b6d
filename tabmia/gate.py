"""A privacy gate: does an audit show a model's membership risk below a limit, above it,
or neither?

An audit measures each attack with an interval, so a limit has three outcomes:

- **below** (exit status 0): every attack's upper confidence bound is at or under the
  limit;
- **above** (exit status 1): some attack's lower confidence bound is over it;
- **unresolved** (exit status 3): neither, e.g. too few records to tell, or attacks whose
  thresholds could not aim at the limit's FPR. ``unresolved="pass"`` lets it pass.

Limits, as ``METRIC=LIMIT`` (what ``tabmia audit --fail-above`` takes):

- ``tpr@<fpr>=<limit>``: the share of training records an attack flags at its own
  threshold aimed at FPR ``<fpr>`` (chosen without the candidates' membership), with its
  95% Clopper-Pearson interval, counts pooled over seeds. An attack shows it above only
  when its threshold aimed at ``<fpr>`` or lower and its flagged non-members stay
  consistent with that (FPR's lower bound at most ``<fpr>``); it shows it below only when
  its threshold aimed at ``<fpr>`` or higher (a looser threshold flags every record a
  stricter one would).
- ``auc=<limit>``: the AUC with its 95% bootstrap interval; with several seeds, above
  needs every seed's lower bound over the limit and below every seed's upper bound at or
  under it.
- ``epsilon=<limit>``: the ε an attack's decisions demonstrate for (ε, δ)-DP, δ from the
  audit. Above: its 95% lower bound (:func:`tabmia.metrics.empirical_epsilon`) is over the
  limit, so (limit, δ)-DP training cannot have produced these rates. Below: even the most
  favourable reading of the rates (TPR's upper, FPR's lower bound) demonstrates no more.
  An audit never certifies DP: "below" means these attacks show no more than the limit.

Over several attacks the largest risk decides: above if any attack shows it above, below
only if all show it below. Each check names the attack that decided.

The gate's outcome is a function of the audit's verdict state
(:func:`tabmia.report.state.verdict_state`) and the limits, never the other way round.
Where the verdict cannot tell, for a cause it names (:attr:`VerdictState.causes`: the
inputs contradict themselves, every attack's scores tie where its threshold falls
(``ties``), no threshold kept its FPR (``fpr_not_kept``); the last two only for limits
that read the attacks' thresholds, not an ``auc`` limit), no limit's check is
evidence and the gate cannot tell (exit status 3, even with ``unresolved="pass"``) until
the cause is fixed or the user accepts it by name (``accept_warnings``; ``tabmia audit
--accept-warning NAME``), which the result records. A label-only audit of a model that
also gives probabilities models a weaker attacker than the model allows: the gate can
fail it, but passes it only when the user accepts that scope (``label_only``). Every line
names the attacker the audit modelled (one who sees the model's decisions only, or its
probabilities). A name accepted that the audit did not raise is said.

A TPR limit is shown met only by attacks that could have flagged records at its FPR:
where an attack's non-members tie at its highest unflagged score, more of them than the
FPR allows (an overfit forest's loss of 0 on most records), its threshold flags nobody
there, and the gate counts the training records that a random tie-break reaching the FPR
would flag (:func:`tabmia.report.state.tie_reach`), its upper bound the one the verdict
states (:func:`tabmia.report.state.tie_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import DEFAULT_DELTA, _epsilon_from_rates, empirical_epsilon
from tabmia.report.state import (
    CAUSES,
    CONTRADICTIONS,
    LABEL_ONLY,
    VerdictState,
    own_threshold_summary,
    tie_bound,
    tie_reach,
    verdict_state,
)

__all__ = [
    "EXIT_ABOVE",
    "EXIT_BELOW",
    "EXIT_UNRESOLVED",
    "GateResult",
    "LimitCheck",
    "RiskLimit",
    "evaluate_gate",
    "parse_limits",
]

#: Exit status of ``tabmia audit --fail-above`` when the audit shows every limit met.
EXIT_BELOW = 0
#: Exit status when the audit shows a limit exceeded.
EXIT_ABOVE = 1
#: Exit status when the audit cannot tell (``--unresolved fail``, the default); 2 stays
#: the status of a usage error.
EXIT_UNRESOLVED = 3

_CONFIDENCE = 0.95
_TOL = 1e-9


@dataclass(frozen=True)
class RiskLimit:
    """One limit of the gate: ``metric`` (``"tpr"``, ``"auc"`` or ``"epsilon"``) at most
    ``limit``; ``fpr`` is the FPR of a ``"tpr"`` limit."""

    metric: str
    limit: float
    fpr: float | None = None

    @property
    def name(self) -> str:
        """``tpr@0.01``, ``auc`` or ``epsilon``."""
        return f"tpr@{self.fpr:g}" if self.metric == "tpr" else self.metric

    def __str__(self) -> str:
        """The limit as written on the command line, e.g. ``tpr@0.01=0.05``."""
        return f"{self.name}={self.limit:g}"

    @classmethod
    def parse(cls, text: str) -> RiskLimit:
        """``tpr@0.01=0.05``, ``auc=0.6`` or ``epsilon=4``.

        Raises
        ------
        ValueError
            Naming what is wrong with ``text``.
        """
        key, sep, value = str(text).strip().partition("=")
        key = key.strip().lower()
        if not sep:
            raise ValueError(
                f"{text!r}: expected METRIC=LIMIT, e.g. tpr@0.01=0.05, auc=0.6 or epsilon=4"
            )
        try:
            limit = float(value)
        except ValueError:
            raise ValueError(f"{text!r}: the limit {value.strip()!r} is not a number") from None
        if key.startswith("tpr@"):
            try:
                fpr = float(key[4:])
            except ValueError:
                raise ValueError(f"{text!r}: the FPR in {key!r} is not a number") from None
            if not 0.0 < fpr < 1.0:
                raise ValueError(f"{text!r}: the FPR must be in (0, 1), got {fpr:g}")
            if not 0.0 <= limit < 1.0:
                raise ValueError(f"{text!r}: a TPR limit must be in [0, 1), got {limit:g}")
            return cls("tpr", limit, fpr)
        if key == "auc":
            if not 0.0 <= limit < 1.0:
                raise ValueError(f"{text!r}: an AUC limit must be in [0, 1), got {limit:g}")
            return cls("auc", limit)
        if key in ("epsilon", "eps"):
            if not 0.0 <= limit < math.inf:
                raise ValueError(f"{text!r}: an epsilon limit must be >= 0, got {limit:g}")
            return cls("epsilon", limit)
        raise ValueError(
            f"{text!r}: unknown metric {key!r}; use tpr@<fpr> (e.g. tpr@0.01), auc or epsilon"
        )


def parse_limits(specs: str | Iterable[str]) -> tuple[RiskLimit, ...]:
    """Limits from ``"tpr@0.01=0.05,auc=0.6"`` or a list of such strings.

    Raises
    ------
    ValueError
        For a malformed limit, or one metric given twice.
    """
    texts = [specs] if isinstance(specs, str) else list(specs)
    limits = tuple(
        RiskLimit.parse(part) for text in texts for part in str(text).split(",") if part.strip()
    )
    names = [lim.name for lim in limits]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{twice[0]} is limited twice; give each metric one limit")
    return limits


@dataclass(frozen=True)
class LimitCheck:
    """The outcome of one limit over all attacks.

    Attributes
    ----------
    limit : RiskLimit
    outcome : {"below", "above", "unresolved"}
    attack : str
        The attack that decided (above: the one furthest over the limit; below: the one
        closest to it; unresolved: one that left it open).
    value, low, high : float
        The deciding attack's measurement and its 95% interval.
    reason : str
        One sentence with the numbers.
    attacks : list of dict
        Every attack's measurement and outcome.
    """

    limit: RiskLimit
    outcome: str
    attack: str
    value: float
    low: float
    high: float
    reason: str
    attacks: list[dict[str, Any]] = field(default_factory=list)

    def line(self, attacker_sees: str | None = None) -> str:
        """``tpr@0.01 <= 0.05 (attacker sees probabilities): above: <reason>``."""
        scope = f" (attacker sees {attacker_sees})" if attacker_sees else ""
        return f"{self.limit.name} <= {self.limit.limit:g}{scope}: {self.outcome}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON-ready values (the ``gate`` entry of ``results.json``)."""
        return {
            "metric": self.limit.name,
            "limit": self.limit.limit,
            "outcome": self.outcome,
            "attack": self.attack,
            "value": _json(self.value),
            "low": _json(self.low),
            "high": _json(self.high),
            "reason": self.reason,
            "attacks": [{k: _json(v) for k, v in a.items()} for a in self.attacks],
        }


@dataclass(frozen=True)
class GateResult:
    """Every limit's check, and what the gate returns.

    Attributes
    ----------
    checks : tuple of LimitCheck
    unresolved : {"fail", "pass"}
        What an unresolved limit returns.
    state : VerdictState, default=None
        The audit's verdict state; where it cannot tell (a cause not accepted) the gate
        cannot tell, whatever the checks say, and a label-only scope not accepted keeps
        it from passing.
    unit : {"record", "person"}, default="record"
        What the audit counted (its result's ``unit``); the lines speak of persons for
        a person-level audit.
    """

    checks: tuple[LimitCheck, ...]
    unresolved: str = "fail"
    state: VerdictState | None = None
    unit: str = "record"

    @property
    def blocked_by(self) -> tuple[str, ...]:
        """The names that keep the gate from deciding, none accepted: the verdict's causes
        of "cannot tell", and ``label_only`` where a label-only audit of a model with
        probabilities would otherwise pass."""
        if self.state is None:
            return ()
        # ties and broken FPR promises concern the thresholds: an AUC limit reads none
        thresholds = any(c.limit.metric != "auc" for c in self.checks)
        causes = tuple(n for n in self.state.causes if thresholds or n not in CAUSES)
        scope = (LABEL_ONLY,) if self.state.scope_open and self.limits_outcome != "above" else ()
        return causes + scope

    @property
    def attacker_sees(self) -> str | None:
        """What the attacker the audit modelled sees (None without a state)."""
        return self.state.attacker_sees if self.state is not None else None

    @property
    def limits_outcome(self) -> str:
        """What the limits' checks alone decide: ``"above"`` if any limit is shown
        exceeded, else ``"unresolved"`` if any is open, else ``"below"``."""
        outcomes = {c.outcome for c in self.checks}
        return (
            "above"
            if "above" in outcomes
            else ("unresolved" if "unresolved" in outcomes else "below")
        )

    @property
    def outcome(self) -> str:
        """:attr:`limits_outcome`, or ``"unresolved"`` where the inputs contradict
        themselves (:attr:`blocked_by`)."""
        return "unresolved" if self.blocked_by else self.limits_outcome

    @property
    def passed(self) -> bool:
        """Below every limit, or unresolved by the limits with ``unresolved="pass"``;
        never where the inputs contradict themselves."""
        if self.blocked_by:
            return False
        return self.outcome == "below" or (
            self.outcome == "unresolved" and self.unresolved == "pass"
        )

    @property
    def exit_status(self) -> int:
        """0 (passed), 1 (a limit exceeded) or 3 (cannot tell, failing)."""
        if self.outcome == "above":
            return EXIT_ABOVE
        return EXIT_BELOW if self.passed else EXIT_UNRESOLVED

    def lines(self) -> list[str]:
        """One line per limit, the names accepted (and those the audit did not raise),
        then the decision."""
        state = self.state
        accepted = [n for n in state.accepted if n in state.raised] if state is not None else []
        ignored = list(state.not_raised) if state is not None else []
        if self.unit == "person":
            from tabmia.report.verdict import in_persons

            return [in_persons(line) for line in self._lines(accepted, ignored)]
        return self._lines(accepted, ignored)

    def _lines(self, accepted: list[str], ignored: list[str]) -> list[str]:
        return (
            [c.line(self.attacker_sees) for c in self.checks]
            + (
                [f"accepted warnings (checked by the user, not deciding): {', '.join(accepted)}"]
                if accepted
                else []
            )
            + (
                [
                    f"--accept-warning {', '.join(ignored)}: this audit raised no such "
                    "finding, so there was nothing to accept"
                ]
                if ignored
                else []
            )
            + [self.summary()]
        )

    def _for_whom(self) -> str:
        """The attacker the decision holds for, as a clause."""
        state = self.state
        if state is None:
            return ""
        if not state.labels_only:
            return " for an attacker who sees the model's probabilities"
        return " for an attacker who sees only the model's decisions" + (
            f" ({LABEL_ONLY} accepted: the model's probabilities were not audited)"
            if state.hidden_scores
            else ""
        )

    def _blocked_summary(self) -> str:
        assert self.state is not None
        names = self.blocked_by
        why = []
        contradictions = [n for n in names if n in CONTRADICTIONS]
        if contradictions:
            why.append(f"the inputs contradict themselves ({', '.join(contradictions)})")
        why += [f"{CAUSES[n][0]} ({n})" for n in names if n in CAUSES]
        if LABEL_ONLY in names:
            why.append(
                "the audit modelled an attacker who sees only the model's decisions, but the "
                f"model also gives probabilities, which no attack was given ({LABEL_ONLY})"
            )
        return (
            f"CANNOT TELL (exit status {EXIT_UNRESOLVED}): "
            + "; ".join(why)
            + f", so no limit's check above is evidence (they say {self.limits_outcome}). "
            "To fix: "
            + "; ".join(self.state.fixes(names))
            + ". Having checked, --accept-warning NAME "
            "(accept_warnings=[NAME] in Python) lets the limits decide"
        )

    def summary(self) -> str:
        """The decision in one line, with the exit status and the attacker it holds for."""
        if self.blocked_by:
            return self._blocked_summary()
        whom = self._for_whom()
        if self.outcome == "above":
            over = ", ".join(c.limit.name for c in self.checks if c.outcome == "above")
            return f"FAIL (exit status {EXIT_ABOVE}): the audit shows {over} above the limit{whom}"
        if self.outcome == "below":
            return f"PASS (exit status {EXIT_BELOW}): the audit shows every limit met{whom}"
        open_ = ", ".join(c.limit.name for c in self.checks if c.outcome == "unresolved")
        if self.unresolved == "pass":
            return (
                f"PASS (exit status {EXIT_BELOW}, --unresolved pass): the audit cannot "
                f"tell whether {open_} is within its limit{whom}"
            )
        return (
            f"CANNOT TELL (exit status {EXIT_UNRESOLVED}): the audit cannot tell whether "
            f"{open_} is within its limit; more records narrow the intervals, or "
            "--unresolved pass lets it pass"
        )

    def to_dict(self) -> dict[str, Any]:
        """The decision as JSON-ready values (``results.json``'s ``gate``)."""
        return {
            "outcome": self.outcome,
            "passed": self.passed,
            "exit_status": self.exit_status,
            "unresolved": self.unresolved,
            "limits_outcome": self.limits_outcome,
            "attacker_sees": self.attacker_sees,
            "blocked_by": list(self.blocked_by),
            "accepted_warnings": list(self.state.accepted if self.state else ()),
            "accepted_not_raised": list(self.state.not_raised if self.state else ()),
            "checks": [c.to_dict() for c in self.checks],
        }


def evaluate_gate(
    result: Any,
    limits: str | Iterable[str | RiskLimit],
    *,
    unresolved: str = "fail",
    delta: float | None = None,
    accept_warnings: Iterable[str] = (),
) -> GateResult:
    """Check an audit against risk limits.

    Parameters
    ----------
    result : ExperimentResult
        From :func:`tabmia.audit.audit_model` or
        :class:`~tabmia.experiment.MembershipExperiment`.
    limits : str or iterable of str or RiskLimit
        E.g. ``"tpr@0.01=0.05,auc=0.6"`` (see the module docstring for each metric).
    unresolved : {"fail", "pass"}, default="fail"
        What a limit the audit cannot resolve returns (not where the inputs contradict
        themselves: that fails until fixed or accepted).
    delta : float, default=None
        δ of the ``epsilon`` limit; by default the audit's (``metrics["delta"]``, set by
        ``tabmia audit --delta``), else :data:`tabmia.metrics.DEFAULT_DELTA`, the CLI's
        default.
    accept_warnings : iterable of str, default=()
        Names the user has checked and overrides (:data:`tabmia.report.state.WARNING_NAMES`:
        the findings ``fit_gap``, ``label_shift``, ``auc_below_chance``; the causes
        ``ties``, ``fpr_not_kept``; the scope ``label_only``), each once; recorded in the
        result, with those the audit did not raise.

    Returns
    -------
    GateResult

    Raises
    ------
    ValueError
        For no limit, a malformed one, a metric limited twice or an unknown finding name.
    """
    if unresolved not in ("fail", "pass"):
        raise ValueError(f"unresolved must be 'fail' or 'pass', got {unresolved!r}")
    items = [limits] if isinstance(limits, (str, RiskLimit)) else list(limits)
    checked: list[RiskLimit] = []
    for item in items:
        checked += [item] if isinstance(item, RiskLimit) else list(parse_limits(item))
    if not checked:
        raise ValueError("no limit given")
    names = [lim.name for lim in checked]
    if len(set(names)) < len(names):
        raise ValueError(f"{max(names, key=names.count)} is limited twice")
    state = verdict_state(result, accept_warnings=accept_warnings, confidence=_CONFIDENCE)
    metrics = result.metrics
    if delta is None:
        delta = float(metrics["delta"].iloc[0]) if "delta" in metrics else DEFAULT_DELTA
    checks = []
    for lim in checked:
        if lim.metric == "auc":
            checks.append(_check_auc(metrics, lim))
            continue
        summary = own_threshold_summary(metrics, confidence=_CONFIDENCE)
        checks.append(
            _check_tpr(summary, lim, tie_reach(result.scores, lim.fpr or 0.0), _CONFIDENCE)
            if lim.metric == "tpr"
            else _check_epsilon(summary, lim, delta)
        )
    return GateResult(tuple(checks), unresolved, state, getattr(result, "unit", "record"))


# ---------------------------------------------------------------------- metrics
def _decide(limit: RiskLimit, rows: pd.DataFrame, describe: Any) -> LimitCheck:
    """The largest risk over attacks: rows have ``value``, ``low``, ``high``, ``outcome``."""
    above = rows[rows["outcome"] == "above"]
    if len(above):
        name = above["low"].idxmax()
        outcome = "above"
    elif (rows["outcome"] == "below").all():
        name = rows["high"].idxmax()
        outcome = "below"
    else:
        open_ = rows[rows["outcome"] == "unresolved"]
        name = open_["high"].idxmax()
        outcome = "unresolved"
    r = rows.loc[name]
    per_attack = [{"attack": a, **row} for a, row in rows.to_dict(orient="index").items()]
    return LimitCheck(
        limit,
        outcome,
        str(name),
        float(r["value"]),
        float(r["low"]),
        float(r["high"]),
        describe(name, r, outcome),
        per_attack,
    )


def _check_tpr(
    summary: pd.DataFrame, limit: RiskLimit, ties: pd.DataFrame, confidence: float
) -> LimitCheck:
    assert limit.fpr is not None  # a tpr@<fpr> limit names its FPR
    alpha, cap = float(limit.fpr), limit.limit
    aim = summary["fpr_target"].to_numpy(float)  # the FPR the threshold promises
    no_goal = np.isnan(aim)
    # the level it was chosen for: the one asked for, or higher where its calibration
    # records could not promise that (a discrete promise may sit below what was asked)
    chosen_for = np.fmax(aim, summary["fpr_requested"].to_numpy(float))
    # a threshold promising alpha or less whose flags keep that: evidence of "above" at alpha
    strict = np.where(
        no_goal,
        summary["fpr_high"] <= alpha + _TOL,
        (aim <= alpha * (1 + _TOL)) & (summary["fpr_low"] <= alpha + _TOL),
    )
    # a threshold chosen for alpha or higher flags a superset: evidence of "below" at alpha
    loose = np.where(no_goal, summary["fpr_low"] >= alpha - _TOL, chosen_for >= alpha * (1 - _TOL))
    # what its tied scores hide at alpha: a random tie-break reaching alpha flags more;
    # its upper bound, not the threshold's, must be under the cap to show "below"
    ties = ties.reindex(summary.index)
    extra = ties["extra_tp"].fillna(0.0).to_numpy(float)
    rows = pd.DataFrame(
        {
            "value": summary["tpr"],
            "low": summary["tpr_low"],
            "high": tie_bound(summary, ties, confidence=confidence),
            "tpr_high": summary["tpr_high"],
            "tp": summary["tp"],
            "n_members": summary["n_members"],
            "fp": summary["fp"],
            "n_nonmembers": summary["n_nonmembers"],
            "fpr_target": aim,
            "tied": ties["tied"].fillna(0).to_numpy(),
            "extra_tp": extra,
            "blind": ties["blind"].eq(True).to_numpy(),
        },
        index=summary.index,
    )
    rows["outcome"] = np.where(
        strict & (rows["low"] > cap),
        "above",
        np.where(loose & (rows["high"] <= cap), "below", "unresolved"),
    )

    def describe(name: str, r: pd.Series, outcome: str) -> str:
        rate = f"TPR {_num(r['value'])} [{_num(r['low'])}, {_num(r['tpr_high'])}]"
        counts = (
            f"{int(r['tp'])} of {int(r['n_members'])} training records flagged, "
            f"{int(r['fp'])} of {int(r['n_nonmembers'])} non-members"
        )
        goal = (
            f"its own threshold aimed at FPR {_num(r['fpr_target'])}"
            if np.isfinite(r["fpr_target"])
            else "its own threshold (no FPR goal)"
        )
        beyond = f", more than FPR {alpha:g} allows" if r["blind"] else ""
        tie = (
            f"its scores tie at its threshold ({int(r['tied'])} non-members share its "
            f"highest unflagged score{beyond}): "
            f"broken at random to reach FPR {alpha:g}, the tie flags about "
            f"{r['extra_tp']:.0f} more training records, TPR up to {_num(r['high'])}"
        )
        if outcome == "above":
            return f"{name} at {goal}: {rate} ({counts}); its lower bound is over {cap:g}"
        if outcome == "below":
            return (
                f"every attack's TPR upper bound at its own threshold is at or under {cap:g}; "
                f"the highest, {name} at {goal}: {rate} ({counts})"
                + (f"; {tie}" if r["high"] > r["tpr_high"] else "")
            )
        if r["tpr_high"] <= cap < r["high"]:  # under the cap only because the ties hide records
            return (
                f"{name} at {goal}: {rate} ({counts}), but {tie}, so it cannot show TPR "
                f"under {cap:g} at FPR {alpha:g}"
            )
        if r["low"] <= cap < r["high"]:
            return (
                f"{name} at {goal}: {rate} ({counts}); the interval contains {cap:g}: "
                f"{int(r['n_members'])} training records cannot tell"
            )
        if r["high"] <= cap:  # under the limit, but at a stricter threshold than alpha's
            return (
                f"{name} at {goal}: {rate} ({counts}) is under {cap:g} at a stricter "
                f"threshold, which does not show it under {cap:g} at FPR {alpha:g}"
            )
        if np.isfinite(r["fpr_target"]) and r["fpr_target"] > alpha * (1 + _TOL):
            return (
                f"{name} at {goal}, not {alpha:g} (its calibration records cannot promise "
                f"{alpha:g}): {rate} ({counts}) is over {cap:g} only at that looser FPR; "
                f"more public records let it aim at {alpha:g}"
            )
        return (
            f"{name} at {goal}: {rate} ({counts}) is over {cap:g}, but it flags more "
            f"non-members than FPR {alpha:g} allows, so it shows nothing at {alpha:g}"
        )

    return _decide(limit, rows, describe)


def _check_auc(metrics: pd.DataFrame, limit: RiskLimit) -> LimitCheck:
    cap = limit.limit
    if not {"auc", "auc_low", "auc_high"} <= set(metrics.columns):
        raise ValueError("the audit's metrics have no AUC interval (auc_low, auc_high)")
    values = metrics[["auc", "auc_low", "auc_high"]].apply(pd.to_numeric, errors="coerce")
    grouped = values.groupby(metrics["attack"], sort=False)
    rows = pd.DataFrame(
        {
            "value": grouped["auc"].mean(),
            "low": grouped["auc_low"].min(),
            "high": grouped["auc_high"].max(),
            "n_seeds": grouped.size(),
        }
    )
    rows["outcome"] = np.where(
        rows["low"] > cap, "above", np.where(rows["high"] <= cap, "below", "unresolved")
    )

    def describe(name: str, r: pd.Series, outcome: str) -> str:
        seeds = int(r["n_seeds"])
        auc = f"AUC {_num(r['value'])} [{_num(r['low'])}, {_num(r['high'])}] (95% bootstrap" + (
            f"; mean over {seeds} seeds, interval from the lowest lower and highest upper bound)"
            if seeds > 1
            else ")"
        )
        if outcome == "above":
            return f"{name}'s {auc}: its lower bound is over {cap:g}"
        if outcome == "below":
            return f"every attack's AUC upper bound is at or under {cap:g}; the highest, {name}'s {auc}"
        return f"{name}'s {auc} contains {cap:g}: the audit's records cannot tell"

    return _decide(limit, rows, describe)


def _check_epsilon(summary: pd.DataFrame, limit: RiskLimit, delta: float) -> LimitCheck:
    cap = limit.limit
    low = [
        empirical_epsilon(
            int(r.tp),
            int(r.n_members),
            int(r.fp),
            int(r.n_nonmembers),
            delta=delta,
            confidence=_CONFIDENCE,
        )["epsilon_lower"]
        for r in summary.itertuples()
    ]  # one per attack
    point = [_epsilon_from_rates(r.tpr, r.fpr, delta) for r in summary.itertuples()]
    high = [_epsilon_from_rates(r.tpr_high, r.fpr_low, delta) for r in summary.itertuples()]
    rows = pd.DataFrame(
        {
            "value": point,
            "low": low,
            "high": high,
            "tp": summary["tp"],
            "n_members": summary["n_members"],
            "fp": summary["fp"],
            "n_nonmembers": summary["n_nonmembers"],
        },
        index=summary.index,
    )
    rows["outcome"] = np.where(
        rows["low"] > cap, "above", np.where(rows["high"] <= cap, "below", "unresolved")
    )

    def describe(name: str, r: pd.Series, outcome: str) -> str:
        eps = (
            f"ε {_num(r['value'])} [{_num(r['low'])}, {_num(r['high'])}] for δ = {delta:g} "
            f"({int(r['tp'])} of {int(r['n_members'])} training records, {int(r['fp'])} of "
            f"{int(r['n_nonmembers'])} non-members flagged at its own threshold)"
        )
        if outcome == "above":
            return (
                f"{name}'s decisions demonstrate {eps}: its lower bound is over {cap:g}, so "
                f"({cap:g}, {delta:g})-DP training cannot have produced them"
            )
        if outcome == "below":
            return (
                f"no attack's decisions demonstrate more than ε = {cap:g}; the highest upper "
                f"bound, {name}'s: {eps}. An audit shows no DP guarantee, only what these "
                "attacks demonstrate"
            )
        return f"{name}'s {eps} contains {cap:g}: {int(r['n_nonmembers'])} non-members cannot tell"

    return _decide(limit, rows, describe)


def _num(value: float) -> str:
    return "inf" if value == math.inf else f"{value:.4g}"


def _json(value: Any) -> Any:
    """Numbers as JSON takes them (inf as a string)."""
    if isinstance(value, (float, np.floating)):
        return None if np.isnan(value) else ("inf" if np.isinf(value) else float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value
