"""One (attack, slicing) of the slice report: the frames checked, the per-slice
calibrated thresholds, fairlearn's ``MetricFrame`` over the slices (and over (repeat,
slice) strata), the per-slice table rows and the disparity test's rows."""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_curve

from tabmia.metrics import auc as _auc
from tabmia.metrics import bootstrap_auc_interval
from tabmia.slices._labels import SLICE_PREFIX, slice_columns
from tabmia.slices._stats import (
    _CELLS,
    METRICS,
    _cells,
    _cp,
    _mover,
    _permutation_test,
    _rates,
    roc_null_test,
)
from tabmia.thresholds import resolves_fpr, select_threshold


def _fairlearn() -> Any:
    try:
        # imported by name: fairlearn ships no type information (mypy reads it as Any)
        metrics = importlib.import_module("fairlearn.metrics")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "tabmia.slices groups records with fairlearn's MetricFrame, which is not "
            "installed: pip install 'tabmia[slices]' (or pip install 'fairlearn>=0.10')"
        ) from exc
    return metrics.MetricFrame


def _auc_metric(n_bootstraps: int, confidence: float, seed: int) -> Any:
    def metric(y: np.ndarray, p: np.ndarray, scores: np.ndarray) -> tuple[float, float, float]:
        y = np.asarray(y, bool)
        if y.all() or not y.any():
            return (math.nan, math.nan, math.nan)
        value = _auc(y, scores)
        if n_bootstraps <= 0:
            return (value, math.nan, math.nan)
        lo, hi = bootstrap_auc_interval(
            y, scores, n_bootstraps=n_bootstraps, confidence=confidence, random_state=seed
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
        col = s if str(s).startswith(SLICE_PREFIX) else SLICE_PREFIX + str(s)
        if col not in scores.columns:
            shown = ", ".join(c[len(SLICE_PREFIX) :] for c in available) or "none"
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
    """(repeat, attack) -> the FPR goal a slice's calibrated threshold aims at."""
    keys = scores[["repeat", "attack"]].drop_duplicates().itertuples(index=False, name=None)
    out: dict[tuple, float] = {}
    lookup: dict[tuple, float] = {}
    if fpr is None and metrics is not None and "fpr_target" in metrics:
        for r, a, f in metrics[["repeat", "attack", "fpr_target"]].itertuples(
            index=False, name=None
        ):
            if f is not None and np.isfinite(float(f)):
                lookup[(r, a)] = float(f)
    for key in keys:
        if fpr is None:
            value = lookup.get(key, math.nan)
        elif isinstance(fpr, Mapping):
            value = float(fpr.get(key[1], math.nan))
        else:
            value = float(fpr)
        if np.isfinite(value) and not 0.0 < value < 1.0:
            raise ValueError(f"fpr must be in (0, 1), got {value} for attack {key[1]!r}")
        out[key] = value
    return out


# --------------------------------------------------------------- computation
#: FPRs the null ROC curve is read at: fine near the small FPRs an audit aims at.
_ROC_GRID = np.unique(np.r_[0.0, np.geomspace(1e-5, 1.0, 600), np.linspace(0.0, 1.0, 201)])


def _null_roc(
    member: np.ndarray, score: np.ndarray, labels: np.ndarray, in_repeat: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The ROC curve every slice shares under the null: the slices' own empirical curves,
    averaged with their candidates' weights. Pooling the candidates of slices whose scores
    lie at different places would give a mixture's curve, lower than any slice's own."""
    rows = np.asarray(in_repeat, bool)
    tpr_sum, weight = np.zeros(_ROC_GRID.size), 0.0
    for lab in pd.unique(labels[rows]):  # a loop over slices
        sel = rows & (labels == lab)
        m = member[sel]
        if m.all() or not m.any():
            continue
        fpr, tpr, _ = roc_curve(m, score[sel], drop_intermediate=False)
        tpr_sum += sel.sum() * np.interp(_ROC_GRID, fpr, tpr)
        weight += sel.sum()
    if weight == 0:
        fpr, tpr, _ = roc_curve(member[rows], score[rows], drop_intermediate=False)
        return fpr, tpr
    return _ROC_GRID, tpr_sum / weight


def _common_size(sizes: list[int], alpha: float) -> int:
    """The calibration count every slice of a repeat is cut to: the largest ``n`` with
    ``alpha (n + 1)`` whole that the smallest slice resolving ``alpha`` still holds."""
    ok = [n for n in sizes if n >= 1 and resolves_fpr(n, alpha)]
    if not ok:
        return 0
    k = math.floor(alpha * (min(ok) + 1) + 1e-9)
    return max(round(k / alpha) - 1, 1)


def _thresholds(
    cal: pd.DataFrame | None,
    col: str,
    alphas: dict[tuple, float],
    attack: str,
    repeats: list[Any],
    seed: int = 0,
) -> tuple[dict[tuple, float], dict[Any, dict[str, Any]], dict[Any, float]]:
    """Per (repeat, slice) calibrated thresholds, per-slice status, overall thresholds.

    Every slice of a repeat calibrates on the same number of its public records, drawn at
    random (:func:`_common_size`): a threshold from ``n`` records delivers
    ``floor(alpha (n + 1)) / (n + 1)`` on average (1/151 for a 1% goal on 150 records)
    and scatters the more the fewer they are, so slices calibrated on their own counts
    are compared at different FPRs and with different noise, and an equal leak then
    names the largest or the smallest slice (measured in benchmarks/results/
    slices_real.md and tests/test_slices.py). With one whole count per repeat every slice
    delivers ``alpha`` on average with the same scatter."""
    rng = np.random.default_rng(seed)
    thr: dict[tuple, float] = {}
    status: dict[Any, dict[str, Any]] = {}
    overall: dict[Any, float] = {}
    if cal is None:
        return thr, status, overall
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
    for key, st in status.items():
        if key != "__common__":
            st["n_repeats"] = len(st["n"])
    return thr, status, overall


def _attack_slicing(
    df: pd.DataFrame,
    cal: pd.DataFrame | None,
    col: str,
    attack: str,
    alphas: dict,
    *,
    confidence: float,
    n_bootstraps: int,
    seed: int,
    n_permutations: int,
    rng: np.random.Generator,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], list[str]]:
    metric_frame = _fairlearn()
    notes: list[str] = []
    repeats = list(pd.unique(df["repeat"]))
    slices = _slice_order(df[col])
    thr, status, overall_thr = _thresholds(cal, col, alphas, attack, repeats, seed)
    alpha_values = {alphas.get((r, attack), math.nan) for r in repeats}
    alpha = alpha_values.pop() if len(alpha_values) == 1 else math.nan
    member = _as_bool(df["member"], "member")
    flagged = _as_bool(df["flagged"], "flagged")
    score = df["score"].to_numpy(float)
    labels = df[col]
    # each candidate's calibrated threshold: its slice's, in its repeat
    key = pd.MultiIndex.from_arrays([df["repeat"], labels])
    t_cal = pd.Series(thr, dtype=float).reindex(key).to_numpy() if thr else np.full(len(df), np.nan)
    resolvable = {
        s: bool(s in status and status[s]["n_repeats"] == len(repeats) and all(status[s]["ok"]))
        for s in slices
    }
    res_row = labels.astype(object).map(resolvable).fillna(False).to_numpy(bool)
    flag_cal = res_row & (score >= np.nan_to_num(t_cal, nan=np.inf))
    sensitive = pd.Series(pd.Categorical(labels, categories=slices), name="slice")
    sp = {"scores": score}
    fc = {"flag_cal": flag_cal}
    mf = metric_frame(
        metrics={"cells": _cells, "auc": _auc_metric(n_bootstraps, confidence, seed)},
        y_true=member,
        y_pred=flagged,
        sensitive_features=sensitive,
        sample_params={"cells": fc, "auc": sp},
    )
    if len(repeats) == 1:
        cells = mf.by_group["cells"]
        strata_index = pd.MultiIndex.from_arrays(
            [[repeats[0]] * len(cells), cells.index], names=["repeat", "slice"]
        )
    else:  # the test's strata: the same grouping, per repeat
        strata_mf = metric_frame(
            metrics={"cells": _cells},
            y_true=member,
            y_pred=flagged,
            sensitive_features=sensitive,
            control_features=pd.Series(df["repeat"].to_numpy(), name="repeat"),
            sample_params={"cells": fc},
        )
        cells = strata_mf.by_group["cells"].dropna()
        strata_index = cells.index
    strata = pd.DataFrame(cells.tolist(), columns=list(_CELLS), index=strata_index).reset_index()
    strata = strata[strata[["c3", "c2", "c1", "c0"]].sum(axis=1) > 0]
    calibrated = np.array([resolvable[s] for s in slices], bool)
    test = _permutation_test(strata, slices, calibrated, n_permutations, rng)
    if calibrated.sum() >= 2:
        test["calibrated advantage"] = roc_null_test(
            strata,
            slices,
            calibrated,
            dict(status.get("__common__", {})),
            {r: _null_roc(member, score, labels.to_numpy(), df["repeat"] == r) for r in repeats},
            n_permutations,
            rng,
        )
        if test["calibrated advantage"]["hypothesis"].sum() >= 2:
            test["family"] = "calibrated advantage"
            test["omnibus"] = test["calibrated advantage"]["omnibus"]

    rows: list[dict[str, Any]] = []
    by_group = mf.by_group
    ov = mf.overall
    # overall calibrated: the threshold of all the attack's calibration records per repeat
    ov_cal: tuple[Any, Any, str]
    if overall_thr and len(overall_thr) == len(repeats):
        t_all = df["repeat"].map(overall_thr).to_numpy(float)
        flag_all = score >= t_all
        ov_cal = (int(np.sum(member & flag_all)), int(np.sum(~member & flag_all)), "resolvable")
    else:
        state = (
            "no calibration"
            if cal is None
            else ("no FPR goal" if not np.isfinite(alpha) else "not resolvable")
        )
        ov_cal = (math.nan, math.nan, state)
    n_cal_all = int(len(cal)) if cal is not None else 0
    entries = [("overall", ov, ov_cal, n_cal_all)]
    for s in slices:
        st = status.get(s)
        n_cal = int(sum(st["n"])) if st else 0
        if cal is None:
            state = "no calibration"
        elif not np.isfinite(alpha) and not resolvable[s]:
            state = "no FPR goal"
        else:
            state = "resolvable" if resolvable[s] else "not resolvable"
        g = by_group.loc[s]
        cal_counts = _rates(g["cells"])[4:6] if resolvable[s] else (math.nan, math.nan)
        entries.append((s, g, (*cal_counts, state), n_cal))
        if state == "not resolvable" and np.isfinite(alpha):
            need = math.ceil(1.0 / alpha) - 1
            notes.append(
                f"{attack}, slice {s!r} ({col[len(SLICE_PREFIX) :]}): calibrated TPR not "
                f"resolvable: {min(st['n']) if st else 0} public records in the slice (in its "
                f"smallest repeat), too few to promise FPR {alpha:g} (it needs {need})."
            )
    for s, g, (tpc, fpc, state), n_cal in entries:
        n1, n0, tp, fp = _rates(g["cells"])[:4]
        a, a_lo, a_hi = g["auc"]
        row: dict[str, Any] = {
            "attack": attack,
            "slicing": col,
            "slice": s,
            "n_repeats": len(repeats),
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

    tests: list[dict[str, Any]] = []
    for metric in METRICS:
        res = test.get(metric)
        if res is None:
            if metric == "calibrated advantage" and calibrated.sum() < 2:
                notes.append(
                    f"{attack}, slices by {col[len(SLICE_PREFIX) :]}: fewer than two slices "
                    "resolve the FPR goal on their own public records, so the test compares "
                    "the advantage at the attack's own threshold, which also moves with where "
                    "that threshold falls in each slice's scores (not only with leakage)."
                )
            continue
        n1, n0, k, x = res["n1"], res["n0"], res["k"], res["x"]
        tested = res["tested"]
        n1t, n0t, kt, xt = (np.where(tested, v, 0).sum() for v in (n1, n0, k, x))
        n1r, n0r, xr = n1t - n1, n0t - n0, xt - x
        fr = (kt - k) - xr  # flagged non-members of the rest
        fs = k - x
        _, dlo, dhi = _mover((1, -1, -1, 1), (x, fs, xr, fr), (n1, n0, n1r, n0r), confidence)
        tdiff, tlo, thi = _mover((1, -1), (x, xr), (n1, n1r), confidence)
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
                    "tpr_slice": x[j] / n1[j],
                    "fpr_slice": fs[j] / n0[j],
                    "tpr_rest": xr[j] / n1r[j],
                    "fpr_rest": fr[j] / n0r[j],
                    "difference": float(res["difference"][j]),
                    "difference_low": float(dlo[j]),
                    "difference_high": float(dhi[j]),
                    "tpr_difference": float(tdiff[j]),
                    "tpr_difference_low": float(tlo[j]),
                    "tpr_difference_high": float(thi[j]),
                    "z": float(res["z"][j]),
                    "p_value": float(res["p"][j]),
                    "hypothesis": bool(res["hypothesis"][j]),
                    "se": float(res["se"][j]),
                }
            )
    omni = {
        "attack": attack,
        "slicing": col,
        "metric": test["family"],
        "statistic": test["omnibus"]["statistic"],
        "p_value": test["omnibus"]["p"],
        "n_slices": len(slices),
        "n_tested": int(test[test["family"]]["hypothesis"].sum())
        if test.get(test["family"])
        else 0,
    }
    return rows, tests, omni, notes
