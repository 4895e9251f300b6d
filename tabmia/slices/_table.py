"""One (attack, slicing) of the slice report: the frames checked, the per-slice
calibrated thresholds, fairlearn's ``MetricFrame`` over the slices (and over (repeat,
slice) strata), the per-slice table rows and the disparity test's rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from tabmia._columns import (
    FPR_TARGET,
    promised_fpr,
    promised_fprs,
    slice_column,
    slice_columns,
    slicing_name,
)
from tabmia.metrics import auc as _auc
from tabmia.metrics import bootstrap_auc_interval
from tabmia.slices._stats import (
    _CELLS,
    METRICS,
    _cells,
    _cp,
    _null_roc,
    _permutation_test,
    _rates,
    roc_null_test,
)
from tabmia.thresholds import resolves_fpr, select_threshold


def _auc_metric(n_bootstrap: int, confidence: float, seed: int) -> Any:
    def metric(y: np.ndarray, p: np.ndarray, scores: np.ndarray) -> tuple[float, float, float]:
        y = np.asarray(y, bool)
        if y.all() or not y.any():
            return (math.nan, math.nan, math.nan)
        value = _auc(y, scores)
        if n_bootstrap <= 0:
            return (value, math.nan, math.nan)
        lo, hi = bootstrap_auc_interval(
            y, scores, n_bootstrap=n_bootstrap, confidence=confidence, random_state=seed
        )
        return (value, lo, hi)

    return metric


# ------------------------------------------------------------------ frames in
def _as_bool(values: pd.Series, what: str) -> np.ndarray:
    v = values.to_numpy()
    if v.dtype == bool:
        return v
    if pd.isna(values).any():
        raise ValueError(f"column {what!r} has missing values")
    u = np.unique(v)
    if not np.isin(u, [0, 1]).all():
        raise ValueError(f"column {what!r} must be boolean or 0/1, got values {u[:5]}")
    return v.astype(bool)


def _resolve_slicings(scores: pd.DataFrame, slices: Any) -> list[str]:
    available = slice_columns(scores)
    if slices is None:
        if not available:
            raise ValueError(
                "the scores carry no slice:<name> column: run the audit with slices= "
                "(or add slice:<name> columns, docs/records_persons_slices.md)"
            )
        return available
    names = [slices] if isinstance(slices, str) else list(slices)
    out = []
    for s in names:
        col = slice_column(s)
        if col not in scores.columns:
            shown = ", ".join(slicing_name(c) for c in available) or "none"
            raise ValueError(f"slice column {col!r} is not in the scores (slices present: {shown})")
        out.append(col)
    return out


def _slice_order(values: pd.Series) -> list[Any]:
    if isinstance(values.dtype, pd.CategoricalDtype):
        present = set(values.unique())
        return [c for c in values.cat.categories if c in present]
    uniq = pd.unique(values)
    try:
        return sorted(uniq)
    except TypeError:
        return sorted(uniq, key=str)


def _check_labels(values: pd.Series, col: str, frame: str) -> None:
    n = int(values.isna().sum())
    if n:
        raise ValueError(
            f"slice column {col!r} of the {frame} has {n} missing labels (NaN): give every "
            "record a label (e.g. 'missing')"
        )


def _alphas(scores: pd.DataFrame, fpr: Any, metrics: pd.DataFrame | None) -> dict[tuple, float]:
    """(repeat, attack) -> the FPR goal a slice's calibrated threshold aims at (NaN: none;
    by default the FPR each attack promised)."""
    if fpr is None and metrics is not None and FPR_TARGET in metrics:
        fpr = promised_fprs(metrics)
    keys = scores[["repeat", "attack"]].drop_duplicates().itertuples(index=False, name=None)
    return {(r, a): promised_fpr(fpr, r, a) for r, a in keys}


# --------------------------------------------------------------- computation
def _common_size(sizes: list[int], alpha: float) -> int:
    """The calibration count every slice of a repeat is cut to: the largest ``n`` with
    ``alpha (n + 1)`` whole that the smallest slice resolving ``alpha`` still holds."""
    ok = [n for n in sizes if n >= 1 and resolves_fpr(n, alpha)]
    if not ok:
        return 0
    k = math.floor(alpha * (min(ok) + 1) + 1e-9)
    return max(round(k / alpha) - 1, 1)


def _threshold_on_a_tie(kept: np.ndarray, alpha: float) -> bool:
    """Whether the conformal threshold of ``kept`` at ``alpha`` had to step over tied
    scores: the score at its rank equals the next one up (or, at the top rank, the top
    score is shared). Such a threshold delivers less than ``alpha``, and where the tie is
    the top scores it may flag nobody at all (a forest's many records at loss 0)."""
    s = np.sort(kept)
    j = math.ceil((s.size + 1) * (1.0 - alpha) - 1e-9)  # 1-based, as threshold_at_fpr
    if j < s.size:
        return bool(s[j - 1] == s[j])
    return bool(s.size >= 2 and s[-1] == s[-2])


def _thresholds(
    cal: pd.DataFrame | None,
    col: str,
    alphas: dict[tuple, float],
    attack: str,
    repeats: list[Any],
    seed: int = 0,
) -> tuple[dict[tuple, float], dict[Any, dict[str, Any]], dict[Any, float], set[tuple]]:
    """Per (repeat, slice) calibrated thresholds, per-slice status, overall thresholds,
    and the (repeat, slice) pairs whose threshold sits on a tie (:func:`_threshold_on_a_tie`).

    Every slice of a repeat calibrates on the same number of its public records, drawn at
    random (:func:`_common_size`): a threshold from ``n`` records delivers
    ``floor(alpha (n + 1)) / (n + 1)`` on average (1/151 for a 1% goal on 150 records)
    and scatters the more the fewer they are, so slices calibrated on their own counts
    are compared at different FPRs and with different noise, and an equal leak then
    names the largest or the smallest slice (measured in benchmarks/results/
    slices_real.md and tests/test_slices.py). With one whole count per repeat every slice
    delivers ``alpha`` on average with the same scatter."""
    rng = np.random.default_rng(seed)
    tied: set[tuple] = set()
    thr: dict[tuple, float] = {}
    status: dict[Any, dict[str, Any]] = {}
    overall: dict[Any, float] = {}
    if cal is None:
        return thr, status, overall, tied
    for r in repeats:  # loops over repeats and slices only
        a = alphas.get((r, attack), math.nan)
        rows = cal[cal["repeat"] == r]
        if np.isfinite(a) and resolves_fpr(len(rows), a):
            overall[r] = select_threshold(rows["score"].to_numpy(float), goal="fpr", fpr=a)
        groups = list(rows.groupby(col, observed=True, sort=False))
        common = _common_size([len(g) for _, g in groups], a) if np.isfinite(a) else 0
        status.setdefault("__common__", {})[r] = (common, a)
        for s, group in groups:
            st = status.setdefault(s, {"n": [], "ok": []})
            st["n"].append(len(group))
            ok = bool(np.isfinite(a) and resolves_fpr(len(group), a))
            st["ok"].append(ok)
            if ok:
                scores = group["score"].to_numpy(float)
                kept = rng.choice(scores, common, replace=False) if common < scores.size else scores
                thr[(r, s)] = select_threshold(kept, goal="fpr", fpr=a)
                if _threshold_on_a_tie(kept, a):
                    tied.add((r, s))
    for key, st in status.items():
        if key != "__common__":
            st["n_repeats"] = len(st["n"])
    return thr, status, overall, tied


def _calibrated_flags(
    df: pd.DataFrame,
    col: str,
    slices: list[Any],
    repeats: list[Any],
    thr: dict[tuple, float],
    status: dict[Any, dict[str, Any]],
    tied: set[tuple],
) -> tuple[dict[Any, bool], list[Any], np.ndarray]:
    """Which slices resolve the FPR goal, which of them only fail for ties, and each
    candidate's flag at its slice's calibrated threshold (False where unresolvable)."""
    labels = df[col]
    score = df["score"].to_numpy(float)
    key = pd.MultiIndex.from_arrays([df["repeat"], labels])
    t_cal = pd.Series(thr, dtype=float).reindex(key).to_numpy() if thr else np.full(len(df), np.nan)
    resolvable = {
        s: bool(s in status and status[s]["n_repeats"] == len(repeats) and all(status[s]["ok"]))
        for s in slices
    }
    reached = score >= np.nan_to_num(t_cal, nan=np.inf)
    # a threshold that stepped over a tie of the top scores and flags none of the slice's
    # candidates cannot flag anyone: "at equal FPR" would be false for it (it delivers 0,
    # not alpha), and a power claim from it would be one the attack cannot deliver
    rows = {r: (df["repeat"] == r).to_numpy() for r in repeats}
    blocked = {s for r, s in tied if not reached[rows[r] & (labels == s).to_numpy()].any()}
    tie_blocked = [s for s in slices if s in blocked]
    for s in tie_blocked:
        resolvable[s] = False
    res_row = labels.astype(object).map(resolvable).fillna(False).to_numpy(bool)
    return resolvable, tie_blocked, res_row & reached


def _strata(
    mf: Any,
    df: pd.DataFrame,
    repeats: list[Any],
    member: np.ndarray,
    flagged: np.ndarray,
    sensitive: pd.Series,
    flag_cal: np.ndarray,
) -> pd.DataFrame:
    """The test's strata: one row per (repeat, slice) with its cell counts."""
    from fairlearn.metrics import MetricFrame

    if len(repeats) == 1:
        cells = mf.by_group["cells"]
        index = pd.MultiIndex.from_arrays(
            [[repeats[0]] * len(cells), cells.index], names=["repeat", "slice"]
        )
    else:  # the same grouping, per repeat
        cells = (
            MetricFrame(
                metrics={"cells": _cells},
                y_true=member,
                y_pred=flagged,
                sensitive_features=sensitive,
                control_features=pd.Series(df["repeat"].to_numpy(), name="repeat"),
                sample_params={"cells": {"flag_cal": flag_cal}},
            )
            .by_group["cells"]
            .dropna()
        )
        index = cells.index
    strata = pd.DataFrame(cells.tolist(), columns=list(_CELLS), index=index).reset_index()
    return strata[strata[["c3", "c2", "c1", "c0"]].sum(axis=1) > 0]


def _rate_metric(members: bool, calibrated: bool) -> Any:
    """A fairlearn metric: the share flagged of a group's members (TPR) or non-members
    (FPR), at the attack's own threshold or the slice's calibrated one (NaN where the
    slice does not resolve the goal)."""

    def metric(y_true: Any, y_pred: Any, flag_cal: Any = None, resolved: Any = None) -> float:
        y = np.asarray(y_true, bool) if members else ~np.asarray(y_true, bool)
        if calibrated and not np.asarray(resolved, bool).all():
            return math.nan
        flags = np.asarray(flag_cal if calibrated else y_pred, bool)
        return float(flags[y].mean()) if y.any() else math.nan

    return metric


def public_metric_frame(
    member: np.ndarray,
    flagged: np.ndarray,
    flag_cal: np.ndarray,
    resolved: np.ndarray,
    score: np.ndarray,
    sensitive: pd.Series,
) -> Any:
    """fairlearn's MetricFrame of an (attack, slicing), for the user: per slice the TPR and
    FPR at the attack's own threshold and at the slice's calibrated one, the advantages
    and the AUC (``by_group``, ``difference()``, ``ratio()``, ``group_max()``...)."""
    from fairlearn.metrics import MetricFrame

    cal = {"flag_cal": flag_cal, "resolved": resolved}
    return MetricFrame(
        metrics={
            "TPR": _rate_metric(True, False),
            "FPR": _rate_metric(False, False),
            "TPR calibrated": _rate_metric(True, True),
            "FPR calibrated": _rate_metric(False, True),
            "AUC": _auc_metric(0, 0.95, 0),
        },
        y_true=member,
        y_pred=flagged,
        sensitive_features=sensitive,
        sample_params={"TPR calibrated": cal, "FPR calibrated": cal, "AUC": {"scores": score}},
    )


def _attack_slicing(
    df: pd.DataFrame,
    cal: pd.DataFrame | None,
    col: str,
    attack: str,
    alphas: dict,
    *,
    confidence: float,
    n_bootstrap: int,
    seed: int,
    n_permutations: int,
    rng: np.random.Generator,
    unit: str = "record",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], list[str], Any]:
    """One (attack, slicing): its table rows, test rows, omnibus row, notes and the
    user's MetricFrame."""
    from fairlearn.metrics import MetricFrame

    repeats = list(pd.unique(df["repeat"]))
    slices = _slice_order(df[col])
    thr, status, overall_thr, tied = _thresholds(cal, col, alphas, attack, repeats, seed)
    alpha_values = {alphas.get((r, attack), math.nan) for r in repeats}
    alpha = alpha_values.pop() if len(alpha_values) == 1 else math.nan
    member = _as_bool(df["member"], "member")
    flagged = _as_bool(df["flagged"], "flagged")
    score = df["score"].to_numpy(float)
    labels = df[col]
    resolvable, tie_blocked, flag_cal = _calibrated_flags(
        df, col, slices, repeats, thr, status, tied
    )
    sensitive = pd.Series(pd.Categorical(labels, categories=slices), name="slice")
    mf = MetricFrame(
        metrics={"cells": _cells, "auc": _auc_metric(n_bootstrap, confidence, seed)},
        y_true=member,
        y_pred=flagged,
        sensitive_features=sensitive,
        sample_params={"cells": {"flag_cal": flag_cal}, "auc": {"scores": score}},
    )
    strata = _strata(mf, df, repeats, member, flagged, sensitive, flag_cal)
    calibrated = np.array([resolvable[s] for s in slices], bool)
    test = _slice_tests(
        strata,
        slices,
        calibrated,
        status,
        (member, score, labels.to_numpy(), df["repeat"], repeats),
        n_permutations,
        rng,
    )
    rows, notes = _table_rows(
        mf,
        _overall_calibrated(df, member, score, overall_thr, repeats, cal is None, alpha),
        int(len(cal)) if cal is not None else 0,
        status,
        resolvable,
        tie_blocked,
        slices,
        attack=attack,
        col=col,
        alpha=alpha,
        n_repeats=len(repeats),
        no_calibration=cal is None,
        confidence=confidence,
        unit=unit,
    )
    tests = _test_rows(test, slices, attack, col)
    if test.get("calibrated advantage") is None and calibrated.sum() < 2:
        notes.append(
            f"{attack}, slices by {slicing_name(col)}: fewer than two slices "
            "resolve the FPR goal on their own public records, so the slices cannot be "
            "compared at equal FPR and none is named more exposed; the advantage at the "
            "attack's own threshold is tested instead, which also moves with where that "
            "threshold falls in each slice's scores (not only with leakage)."
        )
    omni = _omnibus_row(test, attack, col, len(slices))
    public = public_metric_frame(
        member,
        flagged,
        flag_cal,
        labels.astype(object).map(resolvable).fillna(False).to_numpy(bool),
        score,
        sensitive,
    )
    return rows, tests, omni, notes, public


def _slice_tests(
    strata: Any,
    slices: list[Any],
    calibrated: np.ndarray,
    status: dict[Any, dict[str, Any]],
    candidates: tuple[np.ndarray, np.ndarray, np.ndarray, pd.Series, list[Any]],
    n_permutations: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """The permutation test at the attack's own threshold and, where two slices or more
    calibrate, at equal FPR (``roc_null_test`` against each repeat's null ROC from the
    ``candidates``' member, score, label, repeat and the repeats), which then becomes the
    tested family."""
    member, score, labels, repeat, repeats = candidates
    test = _permutation_test(strata, slices, calibrated, n_permutations, rng)
    if calibrated.sum() >= 2:
        test["calibrated advantage"] = roc_null_test(
            strata,
            slices,
            calibrated,
            dict(status.get("__common__", {})),
            {r: _null_roc(member, score, labels, repeat == r) for r in repeats},
            n_permutations,
            rng,
        )
        if test["calibrated advantage"]["hypothesis"].sum() >= 2:
            test["family"] = "calibrated advantage"
            test["omnibus"] = test["calibrated advantage"]["omnibus"]
    return test


def _overall_calibrated(
    df: pd.DataFrame,
    member: np.ndarray,
    score: np.ndarray,
    overall_thr: dict[Any, float],
    repeats: list[Any],
    no_calibration: bool,
    alpha: float,
) -> tuple[Any, Any, str]:
    """The overall row's calibrated (TP, FP, state): at the threshold of all the attack's
    calibration records per repeat, NaN counts where a repeat has none."""
    if overall_thr and len(overall_thr) == len(repeats):
        t_all = df["repeat"].map(overall_thr).to_numpy(float)
        flag_all = score >= t_all
        return (int(np.sum(member & flag_all)), int(np.sum(~member & flag_all)), "resolvable")
    state = (
        "no calibration"
        if no_calibration
        else ("no FPR goal" if not np.isfinite(alpha) else "not resolvable")
    )
    return (math.nan, math.nan, state)


def _omnibus_row(test: dict[str, Any], attack: str, col: str, n_slices: int) -> dict[str, Any]:
    """The omnibus row of an (attack, slicing): the tested family's max-z and its p-value."""
    return {
        "attack": attack,
        "slicing": col,
        "metric": test["family"],
        "statistic": test["omnibus"]["statistic"],
        "p_value": test["omnibus"]["p"],
        "n_slices": n_slices,
        "n_tested": int(test[test["family"]]["hypothesis"].sum())
        if test.get(test["family"])
        else 0,
    }


def _table_rows(
    mf: Any,
    ov_cal: tuple[Any, Any, str],
    n_cal_all: int,
    status: dict[Any, dict[str, Any]],
    resolvable: dict[Any, bool],
    tie_blocked: list[Any],
    slices: list[Any],
    *,
    attack: str,
    col: str,
    alpha: float,
    n_repeats: int,
    no_calibration: bool,
    confidence: float,
    unit: str,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The per-slice table rows (and the overall row) with the notes on unresolved slices."""
    notes: list[str] = []
    slicing = slicing_name(col)
    entries = [("overall", mf.overall, ov_cal, n_cal_all, "")]
    for s in slices:
        st = status.get(s)
        n_cal = int(sum(st["n"])) if st else 0
        if no_calibration:
            state = "no calibration"
        elif not np.isfinite(alpha) and not resolvable[s]:
            state = "no FPR goal"
        else:
            state = "resolvable" if resolvable[s] else "not resolvable"
        g = mf.by_group.loc[s]
        cal_counts = _rates(g["cells"])[4:6] if resolvable[s] else (math.nan, math.nan)
        reason = ""
        if s in tie_blocked:
            reason = "ties"
        elif state == "not resolvable" and np.isfinite(alpha):
            reason = "too few public " + unit + "s"
            notes.append(
                f"{attack}, slice {s!r} ({slicing}): calibrated TPR not resolvable: "
                f"{min(st['n']) if st else 0} public {unit}s in the slice (in its smallest "
                f"repeat), too few to promise FPR {alpha:g} (it needs "
                f"{math.ceil(1.0 / alpha) - 1})."
            )
        entries.append((s, g, (*cal_counts, state), n_cal, reason))
    if tie_blocked:  # one line for all of them: on a forest it is every slice
        which = ", ".join(repr(s) for s in tie_blocked)
        notes.append(
            f"{attack}, slices by {slicing}: calibrated TPR not resolvable in {which}: the "
            f"attack's scores tie at the top of each one's public {unit}s, so each threshold "
            f"calibrated to FPR {alpha:g} lies above the tie and flags none of its candidates "
            f"(FPR 0, not {alpha:g}); left out of the equal-FPR comparison."
        )
    rows: list[dict[str, Any]] = []
    for s, g, (tpc, fpc, state), n_cal, reason in entries:
        n1, n0, tp, fp = _rates(g["cells"])[:4]
        a, a_lo, a_hi = g["auc"]
        row: dict[str, Any] = {
            "attack": attack,
            "slicing": col,
            "slice": s,
            "unit": unit,
            "n_repeats": n_repeats,
            "n_members": n1,
            "n_nonmembers": n0,
            "n_calibration": n_cal,
            "fpr_target": alpha,
            "tp": tp,
            "tpr": tp / n1 if n1 else math.nan,
        }
        row["tpr_low"], row["tpr_high"] = _cp(tp, n1, confidence)
        row["fp"], row["fpr"] = fp, fp / n0 if n0 else math.nan
        row["fpr_low"], row["fpr_high"] = _cp(fp, n0, confidence)
        row["advantage"] = row["tpr"] - row["fpr"]
        # exact one-sided binomial p-value of "the slice's FPR at this threshold > α"
        row["fpr_above_p"] = (
            float(stats.binom.sf(fp - 1, n0, alpha))
            if np.isfinite(alpha) and n0 and s != "overall"
            else math.nan
        )
        row["calibration"] = state
        row["unresolvable_reason"] = reason
        row["tp_cal"], row["fp_cal"] = tpc, fpc
        ok = state == "resolvable"
        row["tpr_cal"] = tpc / n1 if ok and n1 else math.nan
        row["tpr_cal_low"], row["tpr_cal_high"] = (
            _cp(tpc, n1, confidence) if ok else (math.nan, math.nan)
        )
        row["fpr_cal"] = fpc / n0 if ok and n0 else math.nan
        row["fpr_cal_low"], row["fpr_cal_high"] = (
            _cp(fpc, n0, confidence) if ok else (math.nan, math.nan)
        )
        row["advantage_cal"] = row["tpr_cal"] - row["fpr_cal"]
        row["auc"], row["auc_low"], row["auc_high"] = a, a_lo, a_hi
        rows.append(row)
    return rows, notes


def _test_rows(
    test: dict[str, Any], slices: list[Any], attack: str, col: str
) -> list[dict[str, Any]]:
    """One row per (metric, slice) compared: the counts of the slice and of the rest (the
    other compared slices), their rates, the difference and the test's statistics; the
    intervals are set by the report, at a level simultaneous over its comparisons."""
    tests: list[dict[str, Any]] = []
    for metric in METRICS:
        res = test.get(metric)
        if res is None:
            continue
        n1, n0, k, x = res["n1"], res["n0"], res["k"], res["x"]
        tested = res["tested"]
        n1t, n0t, kt, xt = (np.where(tested, v, 0).sum() for v in (n1, n0, k, x))
        n1r, n0r, xr = n1t - n1, n0t - n0, xt - x
        fr = (kt - k) - xr  # flagged non-members of the rest
        fs = k - x
        for j, s in enumerate(slices):
            if not np.isfinite(res["z"][j]):
                continue
            tests.append(
                {
                    "attack": attack,
                    "slicing": col,
                    "metric": metric,
                    "slice": s,
                    "n_members": int(n1[j]),
                    "n_nonmembers": int(n0[j]),
                    "tp_slice": int(x[j]),
                    "fp_slice": int(fs[j]),
                    "n_members_rest": int(n1r[j]),
                    "n_nonmembers_rest": int(n0r[j]),
                    "tp_rest": int(xr[j]),
                    "fp_rest": int(fr[j]),
                    "tpr_slice": x[j] / n1[j],
                    "fpr_slice": fs[j] / n0[j],
                    "tpr_rest": xr[j] / n1r[j],
                    "fpr_rest": fr[j] / n0r[j],
                    "difference": float(res["difference"][j]),
                    "z": float(res["z"][j]),
                    "p_value": float(res["p"][j]),
                    "hypothesis": bool(res["hypothesis"][j]),
                    "se": float(res["se"][j]),
                }
            )
    return tests
