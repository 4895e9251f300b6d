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
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import _epsilon_from_rates, empirical_epsilon
from tabmia.report.verdict import own_threshold_summary

__all__ = [
    "EXIT_ABOVE", "EXIT_BELOW", "EXIT_UNRESOLVED", "GateResult", "LimitCheck", "RiskLimit",
    "evaluate_gate", "parse_limits",
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
            raise ValueError(f"{text!r}: expected METRIC=LIMIT, e.g. tpr@0.01=0.05, auc=0.6 "
                             "or epsilon=4")
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
        raise ValueError(f"{text!r}: unknown metric {key!r}; use tpr@<fpr> (e.g. tpr@0.01), "
                         "auc or epsilon")


def parse_limits(specs: str | Iterable[str]) -> tuple[RiskLimit, ...]:
    """Limits from ``"tpr@0.01=0.05,auc=0.6"`` or a list of such strings.

    Raises
    ------
    ValueError
        For a malformed limit, or one metric given twice.
    """
    texts = [specs] if isinstance(specs, str) else list(specs)
    limits = tuple(RiskLimit.parse(part) for text in texts for part in str(text).split(",")
                   if part.strip())
    names = [lim.name for lim in limits]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{twice[0]} is limited twice")
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

    def line(self) -> str:
        """``tpr@0.01 <= 0.05: above: <reason>``."""
        return f"{self.limit.name} <= {self.limit.limit:g}: {self.outcome}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON-ready values (the ``gate`` entry of ``results.json``)."""
        return {"metric": self.limit.name, "limit": self.limit.limit, "outcome": self.outcome,
                "attack": self.attack, "value": _json(self.value), "low": _json(self.low),
                "high": _json(self.high), "reason": self.reason,
                "attacks": [{k: _json(v) for k, v in a.items()} for a in self.attacks]}


@dataclass(frozen=True)
class GateResult:
    """Every limit's check, and what the gate returns.

    Attributes
    ----------
    checks : tuple of LimitCheck
    unresolved : {"fail", "pass"}
        What an unresolved limit returns.
    """

    checks: tuple[LimitCheck, ...]
    unresolved: str = "fail"

    @property
    def outcome(self) -> str:
        """``"above"`` if any limit is shown exceeded, else ``"unresolved"`` if any is
        open, else ``"below"``."""
        outcomes = {c.outcome for c in self.checks}
        return "above" if "above" in outcomes else (
            "unresolved" if "unresolved" in outcomes else "below")

    @property
    def passed(self) -> bool:
        """Below every limit, or unresolved with ``unresolved="pass"``."""
        return self.outcome == "below" or (self.outcome == "unresolved"
                                           and self.unresolved == "pass")

    @property
    def exit_status(self) -> int:
        """0 (passed), 1 (a limit exceeded) or 3 (unresolved, failing)."""
        if self.outcome == "above":
            return EXIT_ABOVE
        return EXIT_BELOW if self.passed else EXIT_UNRESOLVED

    def lines(self) -> list[str]:
        """One line per limit, then the decision."""
        return [c.line() for c in self.checks] + [self.summary()]

    def summary(self) -> str:
        """The decision in one line, with the exit status."""
        if self.outcome == "above":
            over = ", ".join(c.limit.name for c in self.checks if c.outcome == "above")
            return f"FAIL (exit status {EXIT_ABOVE}): the audit shows {over} above the limit"
        if self.outcome == "below":
            return f"PASS (exit status {EXIT_BELOW}): the audit shows every limit met"
        open_ = ", ".join(c.limit.name for c in self.checks if c.outcome == "unresolved")
        if self.unresolved == "pass":
            return (f"PASS (exit status {EXIT_BELOW}, --unresolved pass): the audit cannot "
                    f"tell whether {open_} is within its limit")
        return (f"CANNOT TELL (exit status {EXIT_UNRESOLVED}): the audit cannot tell whether "
                f"{open_} is within its limit; more records narrow the intervals, or "
                "--unresolved pass lets it pass")

    def to_dict(self) -> dict[str, Any]:
        """The decision as JSON-ready values (``results.json``'s ``gate``)."""
        return {"outcome": self.outcome, "passed": self.passed, "exit_status": self.exit_status,
                "unresolved": self.unresolved, "checks": [c.to_dict() for c in self.checks]}


def evaluate_gate(
    result: Any,
    limits: str | Iterable[str | RiskLimit],
    *,
    unresolved: str = "fail",
    delta: float | None = None,
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
        What a limit the audit cannot resolve returns.
    delta : float, default=None
        δ of the ``epsilon`` limit; by default the audit's (``metrics["delta"]``), else 0.

    Returns
    -------
    GateResult
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
    metrics = result.metrics
    if delta is None:
        delta = float(metrics["delta"].iloc[0]) if "delta" in metrics else 0.0
    checks = []
    for lim in checked:
        if lim.metric == "auc":
            checks.append(_check_auc(metrics, lim))
            continue
        summary = own_threshold_summary(metrics, confidence=_CONFIDENCE)
        checks.append(_check_tpr(summary, lim) if lim.metric == "tpr"
                      else _check_epsilon(summary, lim, delta))
    return GateResult(tuple(checks), unresolved)


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
    return LimitCheck(limit, outcome, str(name), float(r["value"]), float(r["low"]),
                      float(r["high"]), describe(name, r, outcome), per_attack)


def _check_tpr(summary: pd.DataFrame, limit: RiskLimit) -> LimitCheck:
    assert limit.fpr is not None  # a tpr@<fpr> limit names its FPR
    alpha, cap = float(limit.fpr), limit.limit
    aim = summary["fpr_target"].to_numpy(float)  # the FPR the threshold promises
    no_goal = np.isnan(aim)
    # the level it was chosen for: the one asked for, or higher where its calibration
    # records could not promise that (a discrete promise may sit below what was asked)
    chosen_for = np.fmax(aim, summary["fpr_requested"].to_numpy(float))
    # a threshold promising alpha or less whose flags keep that: evidence of "above" at alpha
    strict = np.where(no_goal, summary["fpr_high"] <= alpha + _TOL,
                      (aim <= alpha * (1 + _TOL)) & (summary["fpr_low"] <= alpha + _TOL))
    # a threshold chosen for alpha or higher flags a superset: evidence of "below" at alpha
    loose = np.where(no_goal, summary["fpr_low"] >= alpha - _TOL,
                     chosen_for >= alpha * (1 - _TOL))
    rows = pd.DataFrame({"value": summary["tpr"], "low": summary["tpr_low"],
                         "high": summary["tpr_high"], "tp": summary["tp"],
                         "n_members": summary["n_members"], "fp": summary["fp"],
                         "n_nonmembers": summary["n_nonmembers"], "fpr_target": aim},
                        index=summary.index)
    rows["outcome"] = np.where(strict & (rows["low"] > cap), "above",
                               np.where(loose & (rows["high"] <= cap), "below", "unresolved"))

    def describe(name: str, r: pd.Series, outcome: str) -> str:
        rate = f"TPR {_num(r['value'])} [{_num(r['low'])}, {_num(r['high'])}]"
        counts = (f"{int(r['tp'])} of {int(r['n_members'])} training records flagged, "
                  f"{int(r['fp'])} of {int(r['n_nonmembers'])} non-members")
        goal = (f"its own threshold aimed at FPR {_num(r['fpr_target'])}"
                if np.isfinite(r["fpr_target"]) else "its own threshold (no FPR goal)")
        if outcome == "above":
            return (f"{name} at {goal}: {rate} ({counts}); its lower bound is over {cap:g}")
        if outcome == "below":
            return (f"every attack's TPR upper bound at its own threshold is at or under {cap:g}; "
                    f"the highest, {name} at {goal}: {rate} ({counts})")
        if r["low"] <= cap < r["high"]:
            return (f"{name} at {goal}: {rate} ({counts}); the interval contains {cap:g}: "
                    f"{int(r['n_members'])} training records cannot tell")
        if r["high"] <= cap:  # under the limit, but at a stricter threshold than alpha's
            return (f"{name} at {goal}: {rate} ({counts}) is under {cap:g} at a stricter "
                    f"threshold, which does not show it under {cap:g} at FPR {alpha:g}")
        if np.isfinite(r["fpr_target"]) and r["fpr_target"] > alpha * (1 + _TOL):
            return (f"{name} at {goal}, not {alpha:g} (its calibration records cannot promise "
                    f"{alpha:g}): {rate} ({counts}) is over {cap:g} only at that looser FPR; "
                    f"more public records let it aim at {alpha:g}")
        return (f"{name} at {goal}: {rate} ({counts}) is over {cap:g}, but it flags more "
                f"non-members than FPR {alpha:g} allows, so it shows nothing at {alpha:g}")

    return _decide(limit, rows, describe)


def _check_auc(metrics: pd.DataFrame, limit: RiskLimit) -> LimitCheck:
    cap = limit.limit
    if not {"auc", "auc_low", "auc_high"} <= set(metrics.columns):
        raise ValueError("the audit's metrics have no AUC interval (auc_low, auc_high)")
    values = metrics[["auc", "auc_low", "auc_high"]].apply(pd.to_numeric, errors="coerce")
    grouped = values.groupby(metrics["attack"], sort=False)
    rows = pd.DataFrame({"value": grouped["auc"].mean(), "low": grouped["auc_low"].min(),
                         "high": grouped["auc_high"].max(), "n_seeds": grouped.size()})
    rows["outcome"] = np.where(rows["low"] > cap, "above",
                               np.where(rows["high"] <= cap, "below", "unresolved"))

    def describe(name: str, r: pd.Series, outcome: str) -> str:
        seeds = int(r["n_seeds"])
        auc = (f"AUC {_num(r['value'])} [{_num(r['low'])}, {_num(r['high'])}] (95% bootstrap"
               + (f"; mean over {seeds} seeds, interval from the lowest lower and highest "
                  "upper bound)" if seeds > 1 else ")"))
        if outcome == "above":
            return f"{name}'s {auc}: its lower bound is over {cap:g}"
        if outcome == "below":
            return f"every attack's AUC upper bound is at or under {cap:g}; the highest, {name}'s {auc}"
        return f"{name}'s {auc} contains {cap:g}: the audit's records cannot tell"

    return _decide(limit, rows, describe)


def _check_epsilon(summary: pd.DataFrame, limit: RiskLimit, delta: float) -> LimitCheck:
    cap = limit.limit
    low = [empirical_epsilon(int(r.tp), int(r.n_members), int(r.fp), int(r.n_nonmembers),
                             delta=delta, confidence=_CONFIDENCE)["epsilon_lower"]
           for r in summary.itertuples()]  # one per attack
    point = [_epsilon_from_rates(r.tpr, r.fpr, delta) for r in summary.itertuples()]
    high = [_epsilon_from_rates(r.tpr_high, r.fpr_low, delta) for r in summary.itertuples()]
    rows = pd.DataFrame({"value": point, "low": low, "high": high, "tp": summary["tp"],
                         "n_members": summary["n_members"], "fp": summary["fp"],
                         "n_nonmembers": summary["n_nonmembers"]}, index=summary.index)
    rows["outcome"] = np.where(rows["low"] > cap, "above",
                               np.where(rows["high"] <= cap, "below", "unresolved"))

    def describe(name: str, r: pd.Series, outcome: str) -> str:
        eps = (f"ε {_num(r['value'])} [{_num(r['low'])}, {_num(r['high'])}] for δ = {delta:g} "
               f"({int(r['tp'])} of {int(r['n_members'])} training records, {int(r['fp'])} of "
               f"{int(r['n_nonmembers'])} non-members flagged at its own threshold)")
        if outcome == "above":
            return (f"{name}'s decisions demonstrate {eps}: its lower bound is over {cap:g}, so "
                    f"({cap:g}, {delta:g})-DP training cannot have produced them")
        if outcome == "below":
            return (f"no attack's decisions demonstrate more than ε = {cap:g}; the highest upper "
                    f"bound, {name}'s: {eps}. An audit shows no DP guarantee, only what these "
                    "attacks demonstrate")
        return (f"{name}'s {eps} contains {cap:g}: {int(r['n_nonmembers'])} non-members "
                "cannot tell")

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
