"""The statistics of the slice report: Wilson / MOVER / Clopper-Pearson intervals,
Holm / Bonferroni / Benjamini-Hochberg adjustment, the cell counts of a slice, and the
permutation test of the membership advantage across slices (max-T, exact under the
no-leak null)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_curve

from tabmia.metrics import clopper_pearson

#: The two advantages compared across slices (the first tested where it can be).
METRICS: tuple[str, ...] = ("calibrated advantage", "advantage")
#: Power at which the report states the difference a test detects.
_POWER = 0.8


# ------------------------------------------------------------- rate statistics
def _wilson(k: np.ndarray, n: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    z = stats.norm.ppf(1.0 - (1.0 - confidence) / 2.0)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        den = 1.0 + z * z / n
        centre = (p + z * z / (2 * n)) / den
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return centre - half, centre + half


def _mover(
    coef: Sequence[float], k: Sequence[Any], n: Sequence[Any], confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MOVER interval (Wilson) of ``sum(c_i k_i / n_i)`` over independent binomials."""
    est = np.zeros(np.shape(k[0]), dtype=float)
    lo_sq = np.zeros_like(est)
    hi_sq = np.zeros_like(est)
    for c, ki, ni in zip(coef, k, n):
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.asarray(ki, float) / np.asarray(ni, float)
        lo, hi = _wilson(ki, ni, confidence)
        est = est + c * p
        a, b = c * lo, c * hi
        lo_sq = lo_sq + (c * p - np.minimum(a, b)) ** 2
        hi_sq = hi_sq + (np.maximum(a, b) - c * p) ** 2
    return est, est - np.sqrt(lo_sq), est + np.sqrt(hi_sq)


def _tests_frame(
    tests: list[dict[str, Any]],
    omnibus: pd.DataFrame,
    alpha: float,
    correction: str,
    confidence: float,
    n_permutations: int,
    notes: list[str],
) -> pd.DataFrame:
    """The tests with their corrected p-values, simultaneous intervals, which are named and
    the difference each could detect; notes when the permutations are too few to name any."""
    tests_df = pd.DataFrame(tests)
    if not len(tests_df):
        for c in ("p_adjusted", "significant", "named", "detectable_difference", "hypothesis"):
            tests_df[c] = pd.Series(dtype=object)
        return tests_df
    hyp = tests_df["hypothesis"].to_numpy(bool)
    p = np.where(hyp, tests_df["p_value"].to_numpy(float), np.nan)
    adj = _adjust(p, correction)
    tests_df["p_adjusted"] = adj
    gate = tests_df.merge(
        omnibus[["attack", "slicing", "rejected"]], on=["attack", "slicing"], how="left"
    )["rejected"]
    tests_df["significant"] = (adj <= alpha) & gate.fillna(False).to_numpy(bool)
    m = max(int(hyp.sum()), 1)
    _set_intervals(tests_df, 1.0 - (1.0 - confidence) / m)
    # named: the test rejects, the slices were compared at equal FPR (calibrated), and
    # the simultaneous interval printed beside the name excludes 0
    tests_df["named"] = (
        tests_df["significant"].to_numpy(bool)
        & (tests_df["metric"] == "calibrated advantage").to_numpy(bool)
        & (tests_df["difference_low"].to_numpy(float) > 0)
    )
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
    return tests_df


def _set_intervals(tests: pd.DataFrame, level: float) -> None:
    """The difference's and the TPR difference's MOVER intervals at ``level`` (simultaneous
    over the report's comparisons: Bonferroni, the first step of Holm)."""
    if tests.empty:
        return
    c = {
        k: tests[k].to_numpy(float)
        for k in (
            "tp_slice",
            "fp_slice",
            "tp_rest",
            "fp_rest",
            "n_members",
            "n_nonmembers",
            "n_members_rest",
            "n_nonmembers_rest",
        )
    }
    _, lo, hi = _mover(
        (1, -1, -1, 1),
        (c["tp_slice"], c["fp_slice"], c["tp_rest"], c["fp_rest"]),
        (c["n_members"], c["n_nonmembers"], c["n_members_rest"], c["n_nonmembers_rest"]),
        level,
    )
    tdiff, tlo, thi = _mover(
        (1, -1), (c["tp_slice"], c["tp_rest"]), (c["n_members"], c["n_members_rest"]), level
    )
    tests["difference_low"], tests["difference_high"] = lo, hi
    tests["tpr_difference"] = tdiff
    tests["tpr_difference_low"], tests["tpr_difference_high"] = tlo, thi
    tests["interval_level"] = level


def _cp(k: Any, n: Any, confidence: float) -> tuple[float, float]:
    if not np.isfinite(n) or n <= 0 or not np.isfinite(k):
        return math.nan, math.nan
    lo, hi = clopper_pearson(int(k), int(n), confidence)
    return float(lo), float(hi)


def _adjust(p: np.ndarray, method: str) -> np.ndarray:
    """Holm / Bonferroni / Benjamini-Hochberg adjusted p-values (NaN kept out)."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out
    q = p[ok]
    if method == "bonferroni":
        out[ok] = np.minimum(q * m, 1.0)
        return out
    order = np.argsort(q, kind="stable")
    ranked = q[order]
    if method == "holm":
        adj = np.maximum.accumulate(ranked * (m - np.arange(m)))
    else:  # fdr_bh
        adj = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    res = np.empty(m)
    res[order] = np.minimum(adj, 1.0)
    out[ok] = res
    return out


# -------------------------------------------------------------- cell counts
#: What :func:`_cells` counts: candidates, then members, per cell (flagged at the own
#: threshold, flagged at the calibrated one) = 11, 10, 01, 00.
_CELLS = ("c3", "c2", "c1", "c0", "m3", "m2", "m1", "m0")


def _rates(cells: Sequence[int]) -> tuple[int, ...]:
    """Members, non-members, flagged members / non-members at the own threshold and at
    the calibrated one, from :func:`_cells`."""
    c3, c2, c1, c0, m3, m2, m1, m0 = (int(v) for v in cells)
    n1 = m3 + m2 + m1 + m0
    n0 = c3 + c2 + c1 + c0 - n1
    tp, tp_cal = m3 + m2, m3 + m1
    return n1, n0, tp, c3 + c2 - tp, tp_cal, c3 + c1 - tp_cal


def _cells(y: np.ndarray, p: np.ndarray, flag_cal: np.ndarray) -> tuple[int, ...]:
    """Candidates, then members, in each cell (own, calibrated) = 11, 10, 01, 00 (one
    metric: fairlearn calls each metric once per group)."""
    y, p, c = (np.asarray(v, bool) for v in (y, p, flag_cal))
    code = 3 - (2 * p + c)  # 0: (1,1), 1: (1,0), 2: (0,1), 3: (0,0)
    return (*np.bincount(code, minlength=4).tolist(), *np.bincount(code[y], minlength=4).tolist())


# --------------------------------------------------------------- the test core
def _hyper_var(n1: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Variance of the flagged members of a stratum when membership is permuted in it."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, k / np.where(n > 0, n, 1), 0.0)
        fpc = np.where(n > 1, (n - n1) / np.where(n > 1, n - 1, 1), 0.0)
    return n1 * p * (1 - p) * fpc


def _z_stats(
    x: np.ndarray,
    n1: np.ndarray,
    n0: np.ndarray,
    k: np.ndarray,
    var: np.ndarray,
    tested: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Advantage difference (slice - rest) and its z, per slice.

    ``x`` holds flagged members per slice (pooled over repeats), shape ``(..., J)``;
    the other arrays are per slice, shape ``(J,)``; ``tested`` marks the slices in the
    comparison (the rest is the other tested slices).
    """
    x = np.where(tested, x, 0)
    n1 = np.where(tested, n1, 0)
    n0 = np.where(tested, n0, 0)
    k = np.where(tested, k, 0)
    var = np.where(tested, var, 0.0)
    xt = x.sum(axis=-1, keepdims=True)
    n1r, n0r, kr = n1.sum() - n1, n0.sum() - n0, k.sum() - k
    vr = var.sum() - var
    with np.errstate(invalid="ignore", divide="ignore"):
        a = x / n1 - (k - x) / n0
        xr = xt - x
        ar = xr / n1r - (kr - xr) / n0r
        d = a - ar
        se = np.sqrt((1 / n1 + 1 / n0) ** 2 * var + (1 / n1r + 1 / n0r) ** 2 * vr)
        z = np.where(se > 0, d / np.where(se > 0, se, 1.0), 0.0)
    ok = tested & (n1 > 0) & (n0 > 0) & (n1r > 0) & (n0r > 0)
    return np.where(ok, d, np.nan), np.where(ok, z, np.nan)


def _null_se(n1: np.ndarray, n0: np.ndarray, var: np.ndarray, tested: np.ndarray) -> np.ndarray:
    n1 = np.where(tested, n1, 0)
    n0 = np.where(tested, n0, 0)
    var = np.where(tested, var, 0.0)
    n1r, n0r, vr = n1.sum() - n1, n0.sum() - n0, var.sum() - var
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((1 / n1 + 1 / n0) ** 2 * var + (1 / n1r + 1 / n0r) ** 2 * vr)
    return np.where(tested & (n1 > 0) & (n0 > 0) & (n1r > 0) & (n0r > 0), se, np.nan)


def _permutation_test(
    strata: pd.DataFrame,
    slices: list[Any],
    calibrated: np.ndarray,
    n_permutations: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Observed statistics of both metrics; the permutation test of the tested one.

    ``strata``: one row per (repeat, slice) with the counts of all candidates
    (``c<cell>``) and of members (``m<cell>``) in each cell of the two thresholds' flags
    (:data:`_CELLS`). The tested metric is the calibrated advantage where at least two
    slices resolve the FPR goal, else the advantage at the attack's own threshold.
    """
    J = len(slices)
    B = n_permutations
    j = strata["slice"].map({s: i for i, s in enumerate(slices)}).to_numpy(int)
    c = {k: strata[k].to_numpy(np.int64) for k in _CELLS}
    n1 = c["m3"] + c["m2"] + c["m1"] + c["m0"]
    n = c["c3"] + c["c2"] + c["c1"] + c["c0"]
    flags = {"advantage": ("3", "2"), "calibrated advantage": ("3", "1")}
    per: dict[str, dict[str, np.ndarray]] = {}
    for metric, (a, b) in flags.items():  # per stratum, then summed per slice
        k = c["c" + a] + c["c" + b]
        x = c["m" + a] + c["m" + b]
        var = _hyper_var(n1.astype(float), k.astype(float), n.astype(float))
        per[metric] = {"k_s": k, "x_s": x}
        per[metric].update(
            {
                name: np.bincount(j, weights=v, minlength=J)
                for name, v in (("n1", n1), ("n0", n - n1), ("k", k), ("x", x), ("var", var))
            }
        )
    # where slices calibrate, roc_null_test replaces this test of the calibrated advantage
    family = "calibrated advantage" if calibrated.sum() >= 2 else "advantage"
    out: dict[str, Any] = {"family": family}
    for metric, t in per.items():
        tested = (t["n1"] > 0) & (t["n0"] > 0)
        if metric == "calibrated advantage":
            tested &= calibrated
        if tested.sum() < 2:
            out[metric] = None
            continue
        d, z = _z_stats(t["x"], t["n1"], t["n0"], t["k"], t["var"], tested)
        out[metric] = {
            "difference": d,
            "z": z,
            "p": np.full(J, np.nan),
            "hypothesis": np.zeros(J, bool),
            "se": _null_se(t["n1"], t["n0"], t["var"], tested),
            "tested": tested,
            **{key: t[key] for key in ("n1", "n0", "k", "x")},
        }
    res = out.get(family)
    if res is None or not np.isfinite(res["z"]).any():
        out["omnibus"] = {"statistic": math.nan, "p": math.nan}
        return out
    t = per[family]
    # membership permuted within each (repeat, slice): flagged members are hypergeometric
    x_perm = np.zeros((B, J))
    for i in range(len(strata)):  # one draw per stratum (repeat, slice), B permutations
        k_i, n_i, n1_i = int(t["k_s"][i]), int(n[i]), int(n1[i])
        if 0 < n1_i < n_i and 0 < k_i < n_i:
            x_perm[:, j[i]] += rng.hypergeometric(k_i, n_i - k_i, n1_i, size=B)
        else:  # nothing to permute: the count is fixed
            x_perm[:, j[i]] += t["x_s"][i]
    _, zp = _z_stats(x_perm, t["n1"], t["n0"], t["k"], t["var"], res["tested"])
    z = res["z"]
    hyp = np.isfinite(z)
    # one-sided: does the slice leak *more* than the rest?
    tol = 1e-9 * np.maximum(1.0, np.abs(np.nan_to_num(z)))
    p = (1.0 + np.sum(zp >= z - tol, axis=0)) / (B + 1.0)
    res["p"] = np.where(hyp, p, np.nan)
    res["hypothesis"] = hyp
    t_obs = float(np.max(z[hyp]))
    t_perm = np.max(zp[:, hyp], axis=1)
    p_omni = (1.0 + np.sum(t_perm >= t_obs - 1e-9 * max(1.0, abs(t_obs)))) / (B + 1.0)
    out["omnibus"] = {"statistic": t_obs, "p": float(p_omni)}
    return out


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


def roc_null_test(
    strata: pd.DataFrame,
    slices: list[Any],
    calibrated: np.ndarray,
    common: dict[Any, tuple[int, float]],
    roc: dict[Any, tuple[np.ndarray, np.ndarray]],
    n_draws: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """The calibrated advantage's test, under the null that every slice has the same ROC
    curve, with each slice's own threshold drawn as the conformal threshold is.

    Membership permutations hold each slice's threshold fixed; but a threshold from a
    slice's own ``m`` public records is random, and under a leak that is the same in every
    slice a lucky low threshold raises the slice's advantage: conditional on the
    thresholds the slices differ, and a permutation test names one (an equal 1-sd leak in
    four slices was named in 23 of 40 runs: tests/test_slices.py). Here the null draws
    the thresholds too: the conformal threshold of ``m`` non-member scores sits at the
    ``j``-th order statistic, ``j = ceil((m + 1)(1 - alpha))``, so the FPR it delivers to
    the slice's non-members is ``1 - U`` with ``U ~ Beta(j, m + 1 - j)`` whatever the
    slice's score distribution; its TPR is the pooled ROC curve's at that FPR (the
    repeat's candidates, all slices); members and non-members flagged are then binomial.
    Each slice's advantage minus the rest's is studentised by its null standard deviation
    and the largest is the omnibus statistic, as in :func:`_permutation_test`.

    Returns
    -------
    dict
        As one metric of :func:`_permutation_test`'s result.
    """
    J = len(slices)
    B = int(n_draws)
    j = strata["slice"].map({s: i for i, s in enumerate(slices)}).to_numpy(int)
    c = {k: strata[k].to_numpy(np.int64) for k in _CELLS}
    n1_s = c["m3"] + c["m2"] + c["m1"] + c["m0"]
    n_s = c["c3"] + c["c2"] + c["c1"] + c["c0"]
    x1_s = c["m3"] + c["m1"]  # members flagged at the slice's calibrated threshold
    k_s = c["c3"] + c["c1"]
    X1 = np.zeros((B, J))
    X0 = np.zeros((B, J))
    for i, r in enumerate(strata["repeat"].to_numpy()):  # one draw per stratum, B at once
        m, alpha = common.get(r, (0, math.nan))
        if not calibrated[j[i]] or m < 1 or not np.isfinite(alpha):
            continue
        rank = math.ceil((m + 1) * (1.0 - alpha) - 1e-9)
        fpr = 1.0 - rng.beta(rank, m + 1 - rank, size=B)
        fpr_curve, tpr_curve = roc[r]
        tpr = np.interp(fpr, fpr_curve, tpr_curve)
        X1[:, j[i]] += rng.binomial(int(n1_s[i]), tpr)
        X0[:, j[i]] += rng.binomial(int(n_s[i] - n1_s[i]), fpr)
    n1 = np.bincount(j, weights=n1_s, minlength=J)
    n0 = np.bincount(j, weights=n_s - n1_s, minlength=J)
    x = np.bincount(j, weights=x1_s, minlength=J)
    k = np.bincount(j, weights=k_s, minlength=J)
    tested = calibrated & (n1 > 0) & (n0 > 0)

    def differences(x1: np.ndarray, x0: np.ndarray) -> np.ndarray:
        x1, x0 = np.where(tested, x1, 0.0), np.where(tested, x0, 0.0)
        n1t, n0t = np.where(tested, n1, 0.0), np.where(tested, n0, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            a = x1 / n1t - x0 / n0t
            r1 = x1.sum(axis=-1, keepdims=True) - x1
            r0 = x0.sum(axis=-1, keepdims=True) - x0
            rest = r1 / (n1t.sum() - n1t) - r0 / (n0t.sum() - n0t)
        return np.where(tested, a - rest, np.nan)

    d_obs = differences(x, k - x)
    d_null = differences(X1, X0)
    sd = np.full(J, np.nan)
    sd[tested] = np.std(d_null[:, tested], axis=0)  # the untested slices have no draws
    ok = tested & (sd > 0) & np.isfinite(d_obs)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(ok, d_obs / np.where(sd > 0, sd, 1.0), np.nan)
        zp = np.where(ok, d_null / np.where(sd > 0, sd, 1.0), np.nan)
    out: dict[str, Any] = {
        "difference": np.where(ok, d_obs, np.nan),
        "z": z,
        "p": np.full(J, np.nan),
        "hypothesis": ok,
        "se": np.where(ok, sd, np.nan),
        "tested": tested,
        "n1": n1,
        "n0": n0,
        "k": k,
        "x": x,
    }
    if ok.sum() < 2:
        out["hypothesis"] = np.zeros(J, bool)
        out["omnibus"] = {"statistic": math.nan, "p": math.nan}
        return out
    tol = 1e-9 * np.maximum(1.0, np.abs(np.nan_to_num(z)))
    out["p"] = np.where(ok, (1.0 + np.sum(zp >= z - tol, axis=0)) / (B + 1.0), np.nan)
    t_obs = float(np.max(z[ok]))
    t_null = np.max(zp[:, ok], axis=1)
    p_omni = (1.0 + np.sum(t_null >= t_obs - 1e-9 * max(1.0, abs(t_obs)))) / (B + 1.0)
    out["omnibus"] = {"statistic": t_obs, "p": float(p_omni)}
    return out
