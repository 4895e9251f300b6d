"""The slice report: :class:`SliceReport` (table, tests, omnibus, verdict in sentences)
and :func:`slice_report` / :func:`slice_report_from_frames`, which check the frames, run
each (attack, slicing) and correct the test across the report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmia._columns import slice_column, slicing_name
from tabmia._deprecation import DEPRECATED, renamed_parameter
from tabmia.slices._display import SliceRiskDisplay
from tabmia.slices._stats import _POWER, METRICS, _adjust, _tests_frame
from tabmia.slices._table import (
    _alphas,
    _attack_slicing,
    _check_labels,
    _resolve_slicings,
)

_CORRECTIONS = ("holm", "bonferroni", "fdr_bh")
_CORRECTION_NAMES = {"holm": "Holm", "bonferroni": "Bonferroni", "fdr_bh": "Benjamini-Hochberg"}


@dataclass
class SliceReport:
    """Per-slice membership rates, their intervals, and the disparity test.

    Attributes
    ----------
    table : DataFrame
        One row per (attack, slicing, slice), plus an ``"overall"`` row per (attack,
        slicing) that equals the unsliced computation: counts (``n_members``,
        ``n_nonmembers``, ``n_calibration``, of ``unit``), at the attack's own threshold
        ``tp``, ``tpr`` (``tpr_low``, ``tpr_high``), ``fp``, ``fpr`` (the FPR delivered to
        the slice's non-members, with its interval), ``advantage``; at the slice's
        calibrated threshold ``calibration`` ("resolvable" / "not resolvable" / "no
        calibration") and, where not resolvable, ``unresolvable_reason`` ("too few public
        records" or "ties": the threshold lies above a tie of the slice's top scores and
        flags none of its candidates), ``tp_cal``, ``tpr_cal`` (interval), ``fp_cal``,
        ``fpr_cal`` (interval), ``advantage_cal``; ``auc`` (bootstrap interval);
        ``fpr_target`` (the attack's FPR goal) and ``fpr_above_target`` (the slice's FPR
        at the attack's threshold is shown above that goal: exact binomial test, Holm over the
        report's slices). Rates are Clopper-Pearson intervals at ``confidence``.
    tests : DataFrame
        One row per (attack, slicing, metric, slice): the counts and rates of the slice and
        of the rest (``tp_slice``, ``fp_slice``, ``tp_rest``, ... ``tpr_slice``,
        ``fpr_rest``), ``difference`` (advantage, slice minus rest) with
        ``difference_low`` / ``difference_high`` and ``tpr_difference`` with its interval,
        both MOVER intervals at ``interval_level``, simultaneous over the report's
        comparisons (Bonferroni: ``1 - (1 - confidence) / m``), ``z``, ``se``;
        ``hypothesis`` (the row is a comparison of the test: the tested metric), and for
        those ``p_value`` (one-sided), ``p_adjusted``, ``significant`` (the corrected test
        rejects), ``named`` (significant, compared at equal FPR, i.e. the calibrated
        advantage, and the simultaneous interval excludes 0) and ``detectable_difference``
        (80% power).
    omnibus : DataFrame
        One row per (attack, slicing): the tested ``metric``, the max-z ``statistic``,
        its permutation ``p_value``, ``p_adjusted`` (Holm over the pairs), ``rejected``.
    alpha, correction, confidence, n_permutations :
        The test's settings.
    notes : tuple of str
        What could not be computed, and why.
    unit : {"record", "person"}
        What the counts count: a person-level result's slices count persons (public
        persons calibrate them), and the sentences say so.
    metric_frames : dict
        (attack, slicing) -> fairlearn's :class:`~fairlearn.metrics.MetricFrame` of the
        per-slice rates (:meth:`metric_frame`).
    """

    table: pd.DataFrame
    tests: pd.DataFrame
    omnibus: pd.DataFrame
    alpha: float = 0.05
    correction: str = "holm"
    confidence: float = 0.95
    n_permutations: int = 9999
    notes: tuple[str, ...] = ()
    unit: str = "record"
    metric_frames: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    @property
    def named(self) -> pd.DataFrame:
        """The (attack, slicing, metric, slice) rows named more exposed: the corrected test
        rejects, at equal FPR, with a simultaneous interval above 0."""
        if self.tests.empty:
            return self.tests
        return self.tests[self.tests["named"].astype(bool)].reset_index(drop=True)

    @property
    def disparity(self) -> bool:
        """Whether the report names any slice more exposed (an alarm)."""
        return bool(len(self.named))

    def metric_frame(self, attack: str | None = None, slicing: str | None = None) -> Any:
        """fairlearn's :class:`~fairlearn.metrics.MetricFrame` of one (attack, slicing).

        Its ``by_group`` holds each slice's TPR and FPR at the attack's own threshold and
        at the slice's calibrated one ("TPR calibrated", NaN where not resolvable) and
        its AUC; ``difference()`` and ``ratio()`` the spread between the slices (the
        largest minus the smallest, the smallest over the largest). These are
        descriptive, without intervals: the spread of many slices' point estimates grows
        with their number whatever the leak; :attr:`tests` says which difference is
        shown.

        Parameters
        ----------
        attack, slicing : str, default=None
            Which one (``"sex"`` or ``"slice:sex"``); None: the only one there is.

        Returns
        -------
        fairlearn.metrics.MetricFrame
        """
        keys = list(self.metric_frames)
        if attack is not None:
            keys = [k for k in keys if k[0] == attack]
        if slicing is not None:
            col = slice_column(slicing)
            keys = [k for k in keys if k[1] == col]
        if len(keys) != 1:
            have = ", ".join(f"{a} / {slicing_name(c)}" for a, c in self.metric_frames)
            raise ValueError(
                f"{len(keys)} (attack, slicing) pairs match attack={attack!r}, "
                f"slicing={slicing!r}; name one of: {have or 'none'}"
            )
        return self.metric_frames[keys[0]]

    def lines(self) -> list[str]:
        """The verdict in plain-language sentences."""
        out: list[str] = []
        tests = self.tests
        n_hyp = int(tests["hypothesis"].sum()) if len(tests) else 0
        named = self.named
        corr = _CORRECTION_NAMES[self.correction]
        guard = (
            f"{n_hyp} slice-vs-rest comparisons, {corr}-corrected after an omnibus "
            f"permutation test: when the target leaks nothing, the chance of any alarm is at "
            f"most {self.alpha:.0%}"
        )
        if named.empty:
            out.append(f"No slice was shown to leak more than the others ({guard}).")
        else:
            k = named[["attack", "slicing", "slice"]].drop_duplicates().shape[0]
            out.append(f"{k} slice(s) shown to leak more than the others ({guard}).")
        for row in self.omnibus.itertuples(index=False):
            out += self._pair_lines(row, corr)
        t = self.table
        if len(t):
            per = t[(t["slice"] != "overall") & t["fpr_above_target"].astype(bool)]
            for r in per.itertuples(index=False):
                out.append(
                    f"{r.attack}: its own threshold wrongly flags {r.fpr:.1%} ({r.fpr_low:.1%} "
                    f"to {r.fpr_high:.1%}) of the non-members of slice {r.slice!r}, above the "
                    f"{r.fpr_target:.1%} it promises overall: false accusations fall unevenly "
                    "(where the threshold falls in that slice's scores, not a sign of leakage)."
                )
        out.extend(self.notes)
        if self.unit == "person":  # the counts are persons, public ones calibrate
            out = [line.replace("public records", "public persons") for line in out]
        return out

    def _pair_lines(self, row: Any, corr: str) -> list[str]:
        """The sentences of one (attack, slicing)."""
        slicing = slicing_name(row.slicing)
        head = f"{row.attack}, slices by {slicing}"
        if not np.isfinite(row.p_value):
            return [
                f"{head}: not tested (fewer than two slices with members and non-members "
                "and, for the calibrated comparison, public records whose threshold can "
                "flag anyone)."
            ]
        tests = self.tests
        sub = tests[
            (tests["attack"] == row.attack)
            & (tests["slicing"] == row.slicing)
            & (tests["metric"] == row.metric)
        ]
        calibrated = row.metric == "calibrated advantage"
        alpha_goal = self._goal(row.attack, row.slicing)
        level = float(sub["interval_level"].iloc[0]) if len(sub) else self.confidence
        out: list[str] = []
        for h in sub[sub["significant"].astype(bool)].itertuples(index=False):
            interval = (
                f"simultaneous {self.confidence:.0%} interval over the report's "
                f"{int(tests['hypothesis'].sum())} comparisons (Bonferroni, each at "
                f"{level:.2%}): {h.difference_low:.3f} to {h.difference_high:.3f}"
            )
            p_text = f"{corr}-adjusted p = {h.p_adjusted:.2g}, omnibus p = {row.p_adjusted:.2g}"
            if h.named:
                out.append(
                    f"{head}: {h.slice!r} is more exposed: at thresholds calibrated to FPR "
                    f"{alpha_goal:g} in each slice, its membership advantage (TPR − FPR) "
                    f"exceeds the other slices' by {h.difference:.3f} ({interval}; TPR "
                    f"{h.tpr_slice:.1%} vs {h.tpr_rest:.1%}, the FPR those thresholds "
                    f"delivered to the candidates {h.fpr_slice:.1%} vs {h.fpr_rest:.1%}; "
                    f"{p_text})."
                )
            elif calibrated:
                out.append(
                    f"{head}: the test points at {h.slice!r} ({p_text}), but the size of its "
                    f"excess is not resolved ({interval}, which holds 0): not named."
                )
            else:
                out.append(
                    f"{head}: at the attack's own threshold {h.slice!r}'s advantage "
                    f"(TPR − FPR) exceeds the rest's by {h.difference:.3f} ({p_text}; TPR "
                    f"{h.tpr_slice:.1%} at FPR {h.fpr_slice:.1%} vs {h.tpr_rest:.1%} at "
                    f"{h.fpr_rest:.1%}), but no two slices calibrate at this FPR, so they are "
                    "not compared at equal FPR and no slice is named; the target leaks, and "
                    "where the threshold falls in each slice's scores moves this advantage as "
                    "much as the leak does."
                )
        if len(out):
            return out
        where = (
            f"at thresholds calibrated to FPR {alpha_goal:g} in each slice"
            if calibrated
            else "at the attack's own threshold"
        )
        return [
            f"{head}: no disparity shown ({int(row.n_tested)} slices compared {where}; "
            f"omnibus permutation p = {row.p_value:.2g}, adjusted {row.p_adjusted:.2g})."
            + self._power(sub, calibrated)
        ]

    def _goal(self, attack: str, slicing: str) -> float:
        t = self.table
        goal = t.loc[(t["attack"] == attack) & (t["slicing"] == slicing), "fpr_target"]
        return float(goal.iloc[0]) if len(goal) else math.nan

    def _power(self, sub: pd.DataFrame, calibrated: bool) -> str:
        """The power sentence, from what the attack delivers: only for slices compared at
        equal FPR whose thresholds flag some candidates, and only for a difference a slice
        could reach (its TPR at most 1)."""
        if not calibrated:
            return (
                " No two slices calibrate at this FPR, so none could be named: no power is claimed."
            )
        flagged = int(sub["tp_slice"].sum() + sub["fp_slice"].sum()) if len(sub) else 0
        mdd = sub[sub["hypothesis"].astype(bool) & np.isfinite(sub["detectable_difference"])]
        mdd = mdd[mdd["detectable_difference"] < 1.0 - mdd["tpr_rest"]]
        if not flagged or not len(mdd):
            return (
                " The attack flags (almost) no candidate of these slices at this FPR, so the "
                "test has no power here: a disparity would go unseen."
            )
        lo = mdd.loc[mdd["detectable_difference"].idxmin()]
        hi = mdd.loc[mdd["detectable_difference"].idxmax()]
        span = (
            f"{lo.detectable_difference:.3f}"
            if lo.slice == hi.slice
            else f"{lo.detectable_difference:.3f} ({lo.slice!r}) to "
            f"{hi.detectable_difference:.3f} ({hi.slice!r})"
        )
        return (
            f" At these counts it finds, with {_POWER:.0%} power, a slice whose TPR exceeds "
            f"the rest's by {span} at equal FPR; smaller differences may go unseen."
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready content (results.json): settings, table, tests, omnibus, lines."""

        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            rows = frame.astype(object).where(pd.notna(frame), None).to_dict("records")
            return [{k: _plain(v) for k, v in r.items()} for r in rows]

        return {
            "settings": {
                "alpha": self.alpha,
                "correction": self.correction,
                "confidence": self.confidence,
                "n_permutations": self.n_permutations,
                "metrics": list(METRICS),
                "unit": self.unit,
            },
            "disparity": self.disparity,
            "table": records(self.table),
            "tests": records(self.tests),
            "omnibus": records(self.omnibus),
            "notes": list(self.notes),
            "lines": self.lines(),
        }

    def plot(self, **kwargs: Any) -> SliceRiskDisplay:
        """:meth:`SliceRiskDisplay.from_report` of this report."""
        return SliceRiskDisplay.from_report(self, **kwargs)


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def slice_report_from_frames(
    scores: pd.DataFrame,
    calibration: pd.DataFrame | None = None,
    fpr: float | Mapping[str, float] | None = None,
    *,
    slices: str | Sequence[str] | None = None,
    alpha: float = 0.05,
    correction: str = "holm",
    n_permutations: int = 9999,
    confidence: float = 0.95,
    n_bootstrap: int = 200,
    random_state: int | None = 0,
    metrics: pd.DataFrame | None = None,
    unit: str = "record",
    n_bootstraps: Any = DEPRECATED,
) -> SliceReport:
    """:func:`slice_report` from the frames themselves.

    Parameters
    ----------
    scores : DataFrame
        One row per candidate (per repeat and attack): ``member``, ``score``, ``flagged``
        (at the attack's own threshold) and ``slice:<name>`` columns; ``repeat`` and
        ``attack`` where there are several (absent: one).
    calibration : DataFrame, default=None
        One row per public calibration record (per repeat and attack): ``score`` (the
        null score the attack's threshold was chosen from) and the same ``slice:<name>``
        columns. None: no per-slice calibrated TPR.
    fpr : float or dict, default=None
        The FPR goal of the per-slice calibrated thresholds (one for all attacks, or
        attack -> FPR); None: read from ``metrics`` (``fpr_target`` per repeat and attack).
    slices, alpha, correction, n_permutations, confidence, n_bootstrap, random_state :
        See :func:`slice_report` (``n_bootstraps``, its former name, is accepted with a
        ``FutureWarning`` until tabmia 0.3).
    metrics : DataFrame, default=None
        ``ExperimentResult.metrics``, where ``fpr`` is None.
    unit : {"record", "person"}, default="record"
        What a row of the frames is (the sentences count records or persons).

    Returns
    -------
    SliceReport
    """
    n_bootstrap = renamed_parameter(
        n_bootstraps,
        n_bootstrap,
        old="n_bootstraps",
        new="n_bootstrap",
        new_default=200,
        owner="slice_report_from_frames",
    )
    _check_settings(scores, correction, alpha, confidence, n_permutations)
    cols = _resolve_slicings(scores, slices)
    scores, calibration = _with_defaults(scores, calibration)
    alphas = _alphas(scores, fpr, metrics)
    rows, tests, omni, notes, frames = _run_slicings(
        scores,
        calibration,
        cols,
        alphas,
        confidence=confidence,
        n_bootstrap=n_bootstrap,
        random_state=random_state,
        n_permutations=n_permutations,
        unit=unit,
    )
    table = _table_frame(rows, alpha)
    omnibus = pd.DataFrame(omni)
    omnibus["p_adjusted"] = _adjust(omnibus["p_value"].to_numpy(float), "holm")
    omnibus["rejected"] = omnibus["p_adjusted"] <= alpha
    tests_df = _tests_frame(tests, omnibus, alpha, correction, confidence, n_permutations, notes)
    return SliceReport(
        table=table,
        tests=tests_df,
        omnibus=omnibus,
        alpha=alpha,
        correction=correction,
        confidence=confidence,
        n_permutations=int(n_permutations),
        notes=tuple(notes),
        unit=unit,
        metric_frames=frames,
    )


def _check_settings(
    scores: pd.DataFrame, correction: str, alpha: float, confidence: float, n_permutations: int
) -> None:
    """Refuse an unknown correction, a level outside (0, 1), too few permutations, or a
    scores frame without ``member``, ``score`` or ``flagged``."""
    if correction not in _CORRECTIONS:
        raise ValueError(f"correction must be one of {_CORRECTIONS}, got {correction!r}")
    if not 0.0 < alpha < 1.0 or not 0.0 < confidence < 1.0:
        raise ValueError(f"alpha and confidence must be in (0, 1), got {alpha}, {confidence}")
    if n_permutations < 99:
        raise ValueError(f"n_permutations must be >= 99, got {n_permutations}")
    for c in ("member", "score", "flagged"):
        if c not in scores.columns:
            raise ValueError(f"the scores frame has no {c!r} column")


def _with_defaults(
    scores: pd.DataFrame, calibration: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Copies of the frames with ``repeat`` (0) and ``attack`` (``"attack"``) where absent.

    Raises
    ------
    ValueError
        The calibration frame has no ``score`` column.
    """
    scores = scores.copy()
    if "repeat" not in scores:
        scores["repeat"] = 0
    if "attack" not in scores:
        scores["attack"] = "attack"
    if calibration is not None:
        calibration = calibration.copy()
        if "score" not in calibration:
            raise ValueError("the calibration frame has no 'score' column")
        if "repeat" not in calibration:
            calibration["repeat"] = 0
        if "attack" not in calibration:
            calibration["attack"] = "attack"
    return scores, calibration


def _run_slicings(
    scores: pd.DataFrame,
    calibration: pd.DataFrame | None,
    cols: list[str],
    alphas: dict,
    *,
    confidence: float,
    n_bootstrap: int,
    random_state: int | None,
    n_permutations: int,
    unit: str,
) -> tuple[list, list, list, list[str], dict[tuple[str, str], Any]]:
    """:func:`_attack_slicing` of each (slicing, attack), all drawing from one generator
    seeded by ``random_state``: table rows, test rows, omnibus rows, notes, metric frames."""
    rng = np.random.default_rng(random_state)
    rows, tests, omni, notes = [], [], [], []
    frames: dict[tuple[str, str], Any] = {}
    for col in cols:
        _check_labels(scores[col], col, "scores")
        by_col = calibration if calibration is not None and col in calibration.columns else None
        if calibration is not None and by_col is None:
            notes.append(f"the calibration frame has no {col!r} column: no calibrated TPR by it.")
        if by_col is not None:
            _check_labels(by_col[col], col, "calibration records")
        for attack, df in scores.groupby("attack", sort=False):  # per attack
            cal = None
            if by_col is not None:
                cal = by_col[by_col["attack"] == attack]
                cal = cal if len(cal) else None
            r, t, o, n, frames[(str(attack), col)] = _attack_slicing(
                df.reset_index(drop=True),
                cal,
                col,
                str(attack),
                alphas,
                confidence=confidence,
                n_bootstrap=n_bootstrap,
                seed=0 if random_state is None else int(random_state),
                n_permutations=n_permutations,
                rng=rng,
                unit=unit,
            )
            rows += r
            tests += t
            omni.append(o)
            notes += n
    return rows, tests, omni, notes, frames


def _table_frame(rows: list[dict[str, Any]], alpha: float) -> pd.DataFrame:
    """The table, with ``fpr_above_target`` Holm-corrected over every slice of the report."""
    table = pd.DataFrame(rows)
    if len(table):
        # Holm over every slice of the report: a line only where the excess is shown
        adj_fpr = _adjust(table["fpr_above_p"].to_numpy(float), "holm")
        table["fpr_above_target"] = adj_fpr <= alpha
        table = table.drop(columns="fpr_above_p")
    return table


def slice_report(
    result: Any,
    slices: str | Sequence[str] | None = None,
    *,
    fpr: float | Mapping[str, float] | None = None,
    alpha: float = 0.05,
    correction: str = "holm",
    n_permutations: int = 9999,
    confidence: float = 0.95,
    n_bootstrap: int = 200,
    random_state: int | None = 0,
    n_bootstraps: Any = DEPRECATED,
) -> SliceReport:
    """Per-slice membership rates and a disparity test, from an experiment's result.

    Parameters
    ----------
    result : ExperimentResult
        With ``slice:<name>`` columns in ``result.scores`` and, for the per-slice
        calibrated TPR, in ``result.calibration`` (docs/records_persons_slices.md).
    slices : str or list of str, default=None
        Which slicings (``"sex"`` or ``"slice:sex"``); default every ``slice:*`` column.
        Each slicing is reported and tested on its own (intersect columns with
        :func:`slice_labels` beforehand).
    fpr : float or dict, default=None
        FPR goal of the per-slice calibrated thresholds; default each attack's own
        (``fpr_target`` of ``result.metrics``).
    alpha : float, default=0.05
        Level of the disparity test: the chance of any alarm when the target leaks
        nothing is at most ``alpha``.
    correction : {"holm", "bonferroni", "fdr_bh"}, default="holm"
        Adjustment of the per-slice p-values across all the report's comparisons.
    n_permutations : int, default=9999
        Permutations of membership within (repeat, slice); the smallest p-value is
        ``1 / (n_permutations + 1)``.
    confidence : float, default=0.95
        Of every interval.
    n_bootstrap : int, default=200
        Bootstrap resamples of each AUC interval (0: the AUC alone). Formerly
        ``n_bootstraps``, accepted with a ``FutureWarning`` until tabmia 0.3.
    random_state : int or None, default=0
        Seeds the permutations and the bootstraps.

    Returns
    -------
    SliceReport
    """
    report = slice_report_from_frames(
        result.scores,
        getattr(result, "calibration", None),
        fpr,
        slices=slices,
        alpha=alpha,
        correction=correction,
        n_permutations=n_permutations,
        confidence=confidence,
        n_bootstrap=renamed_parameter(
            n_bootstraps,
            n_bootstrap,
            old="n_bootstraps",
            new="n_bootstrap",
            new_default=200,
            owner="slice_report",
        ),
        random_state=random_state,
        metrics=getattr(result, "metrics", None),
        unit=str(getattr(result, "unit", "record") or "record"),
    )
    report.unit = str(getattr(result, "unit", "record"))
    return report
