"""The slice report: :class:`SliceReport` (table, tests, omnibus, verdict in sentences)
and :func:`slice_report` / :func:`slice_report_from_frames`, which check the frames, run
each (attack, slicing) and correct the test across the report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from tabmia.slices._display import SliceRiskDisplay
from tabmia.slices._labels import SLICE_PREFIX
from tabmia.slices._stats import METRICS, _adjust
from tabmia.slices._table import (
    _alphas,
    _attack_slicing,
    _check_labels,
    _resolve_slicings,
)

_CORRECTIONS = ("holm", "bonferroni", "fdr_bh")
_POWER = 0.8


@dataclass
class SliceReport:
    """Per-slice membership rates, their intervals, and the disparity test.

    Attributes
    ----------
    table : DataFrame
        One row per (attack, slicing, slice), plus an ``"overall"`` row per (attack,
        slicing) that equals the unsliced computation: counts (``n_members``,
        ``n_nonmembers``, ``n_calibration``), at the attack's own threshold ``tp``,
        ``tpr`` (``tpr_low``, ``tpr_high``), ``fp``, ``fpr`` (the FPR delivered to the
        slice's non-members, with its interval), ``advantage``; at the slice's calibrated
        threshold ``calibration`` ("resolvable" / "not resolvable" / "no calibration"),
        ``tp_cal``, ``tpr_cal`` (interval), ``fp_cal``, ``fpr_cal`` (interval),
        ``advantage_cal``; ``auc`` (bootstrap interval); ``fpr_target`` (the attack's
        FPR goal α) and ``fpr_above_target`` (the slice's FPR at the attack's threshold is
        shown above α: exact binomial test, Holm over the report's slices).
        Rates are Clopper-Pearson intervals at ``confidence``.
    tests : DataFrame
        One row per (attack, slicing, metric, slice): the slice's and the rest's TPR and
        FPR, ``difference`` (advantage, slice minus rest) with ``difference_low`` /
        ``difference_high``, ``tpr_difference`` (Newcombe interval), ``z``, ``se``;
        ``hypothesis`` (the row is a comparison of the test: the tested metric), and for
        those ``p_value`` (one-sided permutation), ``p_adjusted``, ``significant`` and
        ``detectable_difference`` (80% power).
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

    @property
    def named(self) -> pd.DataFrame:
        """The (attack, slicing, metric, slice) rows the corrected test names."""
        if self.tests.empty:
            return self.tests
        return self.tests[self.tests["significant"]].reset_index(drop=True)

    @property
    def disparity(self) -> bool:
        """Whether the corrected test names any slice (an alarm)."""
        return bool(len(self.named))

    def lines(self) -> list[str]:
        """The verdict in plain-language sentences."""
        out: list[str] = []
        tests = self.tests
        n_hyp = int(tests["hypothesis"].sum()) if len(tests) else 0
        named = self.named
        corr = {"holm": "Holm", "bonferroni": "Bonferroni", "fdr_bh": "Benjamini-Hochberg"}[
            self.correction
        ]
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
            slicing = str(row.slicing)[len(SLICE_PREFIX) :]
            head = f"{row.attack}, slices by {slicing}"
            if not np.isfinite(row.p_value):
                out.append(
                    f"{head}: not tested (fewer than two slices with members and "
                    "non-members and, for the calibrated comparison, public records)."
                )
                continue
            sub = tests[
                (tests["attack"] == row.attack)
                & (tests["slicing"] == row.slicing)
                & (tests["metric"] == row.metric)
            ]
            where = (
                "at thresholds calibrated per slice to the attack's FPR"
                if row.metric == "calibrated advantage"
                else "at the attack's own threshold"
            )
            hits = sub[sub["significant"]]
            for h in hits.itertuples(index=False):
                out.append(
                    f"{head}: {h.slice!r} is more exposed: its membership advantage "
                    f"(TPR − FPR) {where} exceeds the other slices' by {h.difference:.3f} "
                    f"(95% interval {h.difference_low:.3f} to {h.difference_high:.3f}; TPR "
                    f"{h.tpr_slice:.1%} vs {h.tpr_rest:.1%} at FPR {h.fpr_slice:.1%} vs "
                    f"{h.fpr_rest:.1%}; {corr}-adjusted p = {h.p_adjusted:.2g}, omnibus "
                    f"p = {row.p_adjusted:.2g})."
                )
            if len(hits):
                continue
            power = ""
            mdd = sub[sub["hypothesis"] & np.isfinite(sub["detectable_difference"])]
            if len(mdd):
                lo = mdd.loc[mdd["detectable_difference"].idxmin()]
                hi = mdd.loc[mdd["detectable_difference"].idxmax()]
                span = (
                    f"{lo.detectable_difference:.3f}"
                    if lo.slice == hi.slice
                    else f"{lo.detectable_difference:.3f} ({lo.slice!r}) to "
                    f"{hi.detectable_difference:.3f} ({hi.slice!r})"
                )
                power = (
                    f" At these counts it finds, with {_POWER:.0%} power, a slice whose TPR "
                    f"exceeds the rest's by {span} at equal FPR; smaller differences may go "
                    "unseen."
                )
            if not len(mdd):
                power = (
                    " The attack flags (almost) no record of these slices at this FPR, so the "
                    "test has no power here: a disparity would go unseen."
                )
            out.append(
                f"{head}: no disparity shown ({int(row.n_tested)} slices compared {where}; "
                f"omnibus permutation p = {row.p_value:.2g}, adjusted {row.p_adjusted:.2g})."
                + power
            )
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
    n_bootstraps: int = 200,
    random_state: int | None = 0,
    metrics: pd.DataFrame | None = None,
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
        The FPR goal α of the per-slice calibrated thresholds (one for all attacks, or
        attack -> α); None: read from ``metrics`` (``fpr_target`` per repeat and attack).
    slices, alpha, correction, n_permutations, confidence, n_bootstraps, random_state :
        See :func:`slice_report`.
    metrics : DataFrame, default=None
        ``ExperimentResult.metrics``, where ``fpr`` is None.

    Returns
    -------
    SliceReport
    """
    if correction not in _CORRECTIONS:
        raise ValueError(f"correction must be one of {_CORRECTIONS}, got {correction!r}")
    if not 0.0 < alpha < 1.0 or not 0.0 < confidence < 1.0:
        raise ValueError(f"alpha and confidence must be in (0, 1), got {alpha}, {confidence}")
    if n_permutations < 99:
        raise ValueError(f"n_permutations must be >= 99, got {n_permutations}")
    for c in ("member", "score", "flagged"):
        if c not in scores.columns:
            raise ValueError(f"the scores frame has no {c!r} column")
    cols = _resolve_slicings(scores, slices)
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
    alphas = _alphas(scores, fpr, metrics)
    rng = np.random.default_rng(random_state)
    rows, tests, omni, notes = [], [], [], []
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
            r, t, o, n = _attack_slicing(
                df.reset_index(drop=True),
                cal,
                col,
                str(attack),
                alphas,
                confidence=confidence,
                n_bootstraps=n_bootstraps,
                seed=0 if random_state is None else int(random_state),
                n_permutations=n_permutations,
                rng=rng,
            )
            rows += r
            tests += t
            omni.append(o)
            notes += n
    table = pd.DataFrame(rows)
    if len(table):
        # Holm over every slice of the report: a line only where the excess is shown
        adj_fpr = _adjust(table["fpr_above_p"].to_numpy(float), "holm")
        table["fpr_above_target"] = adj_fpr <= alpha
        table = table.drop(columns="fpr_above_p")
    tests_df = pd.DataFrame(tests)
    omnibus = pd.DataFrame(omni)
    omnibus["p_adjusted"] = _adjust(omnibus["p_value"].to_numpy(float), "holm")
    omnibus["rejected"] = omnibus["p_adjusted"] <= alpha
    if len(tests_df):
        hyp = tests_df["hypothesis"].to_numpy(bool)
        p = np.where(hyp, tests_df["p_value"].to_numpy(float), np.nan)
        adj = _adjust(p, correction)
        tests_df["p_adjusted"] = adj
        gate = tests_df.merge(
            omnibus[["attack", "slicing", "rejected"]], on=["attack", "slicing"], how="left"
        )["rejected"]
        tests_df["significant"] = (adj <= alpha) & gate.fillna(False).to_numpy(bool)
        m = max(int(hyp.sum()), 1)
        if m / (n_permutations + 1.0) > alpha:
            notes.append(
                f"with {n_permutations} permutations the smallest p-value is "
                f"1/{n_permutations + 1}, which {m} comparisons cannot bring under "
                f"{alpha:g} after correction: no slice can be named; use at least "
                f"{math.ceil(m / alpha)} permutations."
            )
        zq = stats.norm.ppf(1.0 - alpha / m) + stats.norm.ppf(_POWER)
        se = pd.to_numeric(tests_df["se"], errors="coerce").to_numpy(float)
        # a null spread of 0 (nobody flagged at this FPR) detects nothing, not a difference of 0
        tests_df["detectable_difference"] = np.where(hyp & (se > 0), zq * se, np.nan)
    else:
        for c in ("p_adjusted", "significant", "detectable_difference", "hypothesis"):
            tests_df[c] = pd.Series(dtype=object)
    return SliceReport(
        table=table,
        tests=tests_df,
        omnibus=omnibus,
        alpha=alpha,
        correction=correction,
        confidence=confidence,
        n_permutations=int(n_permutations),
        notes=tuple(notes),
    )


def slice_report(
    result: Any,
    slices: str | Sequence[str] | None = None,
    *,
    fpr: float | Mapping[str, float] | None = None,
    alpha: float = 0.05,
    correction: str = "holm",
    n_permutations: int = 9999,
    confidence: float = 0.95,
    n_bootstraps: int = 200,
    random_state: int | None = 0,
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
        FPR goal α of the per-slice calibrated thresholds; default each attack's own
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
    n_bootstraps : int, default=200
        Bootstrap resamples of each AUC interval (0: the AUC alone).
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
        n_bootstraps=n_bootstraps,
        random_state=random_state,
        metrics=getattr(result, "metrics", None),
    )
    report.unit = str(getattr(result, "unit", "record"))
    return report
