"""The privacy gate's limits and their checks: a ``METRIC=LIMIT`` parsed
(:class:`RiskLimit`), and one limit checked over every attack (:class:`LimitCheck`: below,
above or unresolved, with the deciding attack and its numbers). :mod:`tabmia.gate`
combines the checks with the audit's verdict state into the gate's decision; the rules of
each metric are in its module docstring.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmia._columns import slicing_name
from tabmia.metrics import _empirical_epsilons, _epsilon_from_rates
from tabmia.report.state import tie_bound

__all__ = [
    "CONFIDENCE",
    "LimitCheck",
    "RiskLimit",
    "check_auc",
    "check_epsilon",
    "check_slice_tpr",
    "check_tpr",
    "parse_limits",
]

#: Confidence of every interval the checks read.
CONFIDENCE = 0.95
_TOL = 1e-9


@dataclass(frozen=True)
class RiskLimit:
    """One limit of the gate: ``metric`` (``"tpr"``, ``"slice_tpr"``, ``"named"``, ``"auc"``,
    ``"epsilon"`` or ``"structure:<finding>"``) at most ``limit``; ``fpr`` is the FPR of a
    ``"tpr"`` or ``"slice_tpr"``
    limit (``slice:tpr@0.01=0.1``: the worst slice's TPR at a threshold calibrated on that
    slice's own public records), and the false-discovery rate ``q`` of a ``"named"`` one
    (``named@0.1=0``: no member named at FDR 10 %; ``named@0.1=0.01``: at most 1 % of the
    members, :mod:`tabmia.named`)."""

    metric: str
    limit: float
    fpr: float | None = None

    @property
    def name(self) -> str:
        """``tpr@0.01``, ``slice:tpr@0.01``, ``named@0.1``, ``auc`` or ``epsilon``."""
        if self.metric == "named":  # fpr holds the list's false-discovery rate q
            return f"named@{self.fpr:g}"
        if self.metric == "tpr":
            return f"tpr@{self.fpr:g}"
        return f"slice:tpr@{self.fpr:g}" if self.metric == "slice_tpr" else self.metric

    def __str__(self) -> str:
        """The limit as written on the command line, e.g. ``tpr@0.01=0.05``."""
        return f"{self.name}={self.limit:g}"

    @classmethod
    def parse(cls, text: str) -> RiskLimit:
        """``tpr@0.01=0.05``, ``slice:tpr@0.01=0.1``, ``auc=0.6`` or ``epsilon=4``.

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
        sliced = key.startswith("slice:")
        if sliced and not key.startswith("slice:tpr@"):
            raise ValueError(f"{text!r}: a slice limit is slice:tpr@<fpr>, e.g. slice:tpr@0.01=0.1")
        if key.startswith(("tpr@", "slice:tpr@")):
            try:
                fpr = float(key.split("@", 1)[1])
            except ValueError:
                raise ValueError(f"{text!r}: the FPR in {key!r} is not a number") from None
            if not 0.0 < fpr < 1.0:
                raise ValueError(f"{text!r}: the FPR must be in (0, 1), got {fpr:g}")
            if not 0.0 <= limit < 1.0:
                raise ValueError(f"{text!r}: a TPR limit must be in [0, 1), got {limit:g}")
            return cls("slice_tpr" if sliced else "tpr", limit, fpr)
        if key.startswith("named@"):
            return cls._parse_named(text, key, limit)
        if key == "auc":
            if not 0.0 <= limit < 1.0:
                raise ValueError(f"{text!r}: an AUC limit must be in [0, 1), got {limit:g}")
            return cls("auc", limit)
        if key.startswith("structure:"):
            from tabmia.structure.findings import FINDING_NAMES

            finding = key.split(":", 1)[1]
            if finding not in FINDING_NAMES:
                raise ValueError(
                    f"{text!r}: unknown structural finding {finding!r}; use "
                    + ", ".join(f"structure:{n}" for n in FINDING_NAMES)
                )
            if not 0.0 <= limit <= 1.0:
                raise ValueError(f"{text!r}: a structural limit is a share in [0, 1]")
            return cls(key, limit)
        if key in ("epsilon", "eps"):
            if not 0.0 <= limit < math.inf:
                raise ValueError(f"{text!r}: an epsilon limit must be >= 0, got {limit:g}")
            return cls("epsilon", limit)
        raise ValueError(
            f"{text!r}: unknown metric {key!r}; use tpr@<fpr> (e.g. tpr@0.01), "
            "slice:tpr@<fpr>, named@<q>, auc, epsilon or structure:<finding> "
            "(e.g. structure:alone)"
        )

    @classmethod
    def _parse_named(cls, text: str, key: str, limit: float) -> RiskLimit:
        """``named@<q>=<limit>``: members an attacker names at FDR ``q``; a limit of 1 or
        more (or 0) counts them, one in (0, 1) is their share of the members."""
        try:
            q = float(key.split("@", 1)[1])
        except ValueError:
            raise ValueError(f"{text!r}: the FDR in {key!r} is not a number") from None
        if not 0.0 < q < 1.0:
            raise ValueError(f"{text!r}: the FDR q must be in (0, 1), got {q:g}")
        if not (limit == 0 or 0.0 < limit < 1.0 or (limit >= 1 and limit == int(limit))):
            raise ValueError(
                f"{text!r}: a named limit is a count (0, 1, 2, ...) or a share of the "
                f"members in (0, 1), got {limit:g}"
            )
        return cls("named", limit, q)


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


# ---------------------------------------------------------------------- metrics
def _outcomes(rows: pd.DataFrame, cap: float, *, above: Any = True, below: Any = True) -> Any:
    """Each row's outcome against ``cap``: ``"above"`` where its ``low`` is over the cap,
    ``"below"`` where its ``high`` is at or under it, else ``"unresolved"``; ``above`` and
    ``below`` (bool or a mask over the rows) say where each side may be shown at all."""
    return np.where(
        above & (rows["low"] > cap),
        "above",
        np.where(below & (rows["high"] <= cap), "below", "unresolved"),
    )


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


def check_tpr(
    summary: pd.DataFrame, limit: RiskLimit, ties: pd.DataFrame, confidence: float
) -> LimitCheck:
    """A ``tpr@<fpr>`` limit over the attacks of ``summary``
    (:func:`~tabmia.report.state.own_threshold_summary`), their ties at the limit's FPR
    (:func:`~tabmia.report.state.tie_reach`) read as the TPR's upper bound they allow."""
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
    rows["outcome"] = _outcomes(rows, cap, above=strict, below=loose)

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


def check_structure(structure: Any, limit: RiskLimit) -> LimitCheck:
    """A ``structure:<finding>`` limit: a tree model file's structural finding
    (:class:`tabmia.structure.StructureFindings`) against the limit.

    The finding is a census of the training records in the file, not an estimate from a
    sample, so it has no interval: above when it exceeds the limit, else below. A
    finding the file cannot give (class disclosure without stored class counts) leaves
    the limit unresolved."""
    finding = limit.metric.split(":", 1)[1]
    value = structure.value(finding)
    if value is None:
        reason = (
            f"{structure.summary['family']} stores no per-class counts, so "
            f"structure:{finding} is not measured"
        )
        return LimitCheck(limit, "unresolved", "structure", math.nan, 0.0, 1.0, reason)
    outcome = "above" if value > limit.limit else "below"
    reason = (
        f"{100 * value:.3g}% of the {structure.summary['n_records']} training records "
        f"({finding}; a census of the model file, no sampling interval), "
        f"{'over' if outcome == 'above' else 'within'} the limit {100 * limit.limit:.3g}%"
    )
    return LimitCheck(limit, outcome, "structure", value, value, value, reason)


def check_slice_tpr(table: pd.DataFrame, limit: RiskLimit) -> LimitCheck:
    """A ``slice:tpr@<fpr>`` limit: the worst slice's TPR at a threshold calibrated on that
    slice's own public records to the limit's FPR (``tpr_cal`` of the slice table of
    :func:`tabmia.slices.slice_report`, Clopper-Pearson intervals).

    Above: some slice's lower bound is over the limit. Below: every slice of every
    attack could be calibrated at the FPR and its upper bound is at or under the limit.
    A slice too small to calibrate at that FPR ("not resolvable") leaves the limit
    unresolved: its TPR at that FPR is unknown, and the worst slice may be that one."""
    assert limit.fpr is not None  # a slice:tpr@<fpr> limit names its FPR
    alpha, cap = float(limit.fpr), limit.limit
    need = {"attack", "slice", "calibration", "fpr_target", "tpr_cal", "tpr_cal_low"}
    if not need <= set(table.columns):
        raise ValueError("the slice table lacks the per-slice calibrated rates (tpr_cal)")
    rows = table[table["slice"].astype(str) != "overall"].copy()
    aimed = np.isclose(pd.to_numeric(rows["fpr_target"], errors="coerce"), alpha)
    resolved = (rows["calibration"] == "resolvable").to_numpy() & aimed
    rows.index = (
        rows["attack"].astype(str)
        + " / "
        + rows["slicing"].map(slicing_name)
        + "="
        + rows["slice"].astype(str)
    )
    frame = pd.DataFrame(
        {
            "value": pd.to_numeric(rows["tpr_cal"], errors="coerce"),
            "low": pd.to_numeric(rows["tpr_cal_low"], errors="coerce").fillna(0.0),
            "high": pd.to_numeric(rows["tpr_cal_high"], errors="coerce").fillna(1.0),
            "resolved": resolved,
            "n_members": rows["n_members"].to_numpy(),
            "n_calibration": rows["n_calibration"].to_numpy(),
            "ties": (
                rows.get("unresolvable_reason", pd.Series("", index=rows.index)) == "ties"
            ).to_numpy(bool),
            "unit": rows.get("unit", pd.Series("record", index=rows.index)).to_numpy(),
        },
        index=rows.index,
    )
    frame["outcome"] = _outcomes(frame, cap, above=resolved, below=resolved)

    def describe(name: str, r: pd.Series, outcome: str) -> str:
        where, unit = f"slice {name}", f"{r['unit']}s"
        if not r["resolved"] and r["ties"]:
            return (
                f"{where}: the attack's scores tie at the top of its public {unit}, so a "
                f"threshold calibrated to FPR {alpha:g} flags none of its candidates and its "
                "TPR at that FPR is unknown (an attack whose scores do not tie, or a larger FPR)"
            )
        if not r["resolved"]:
            return (
                f"{where}: its {int(r['n_calibration'])} public {unit} cannot calibrate a "
                f"threshold at FPR {alpha:g}, so its TPR there is unknown (more public {unit} "
                "of the slice, or a larger FPR)"
            )
        rate = (
            f"TPR {_num(r['value'])} [{_num(r['low'])}, {_num(r['high'])}] of its "
            f"{int(r['n_members'])} members (training {unit}) at a threshold calibrated on "
            f"the slice's own public {unit} to FPR {alpha:g}"
        )
        if outcome == "above":
            return f"{where}: {rate}; its lower bound is over {cap:g}"
        if outcome == "below":
            return f"every slice's upper bound is at or under {cap:g}; the highest, {where}: {rate}"
        return f"{where}: {rate}; the interval contains {cap:g}"

    return _decide(limit, frame, describe)


def check_auc(metrics: pd.DataFrame, limit: RiskLimit) -> LimitCheck:
    """An ``auc`` limit over the attacks of ``metrics`` (bootstrap intervals; over seeds,
    the lowest lower and the highest upper bound)."""
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
    rows["outcome"] = _outcomes(rows, cap)

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


def check_epsilon(summary: pd.DataFrame, limit: RiskLimit, delta: float) -> LimitCheck:
    """An ``epsilon`` limit: the ε each attack's decisions demonstrate for δ ``delta``."""
    cap = limit.limit
    low = [e["epsilon_lower"] for e in _empirical_epsilons(summary, delta, CONFIDENCE)]
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
    rows["outcome"] = _outcomes(rows, cap)

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
