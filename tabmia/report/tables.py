"""Results tables: one row per attack, intervals or spread over seeds.

Columns come in two groups. What the attacker achieves: the members and non-members
each attack flags at its own threshold (chosen without the candidates' membership), the
PPV and advantage of those decisions, and the empirical epsilon. Then ROC-curve points
(TPR at a fixed FPR), reached only by a threshold set with the membership labels: an
oracle threshold, an upper reference rather than an attack's result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import ppv, ppv_interval, ppv_resolved

__all__ = ["results_table", "markdown_table", "format_scores", "text_table", "summary_table"]


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _values(rows: pd.DataFrame, key: str) -> np.ndarray:
    if key not in rows:
        return np.full(len(rows), np.nan)
    return pd.to_numeric(rows[key], errors="coerce").to_numpy(dtype=float)


def _cell(rows: pd.DataFrame, key: str, digits: int = 3, missing: str = "n/a") -> str:
    """One repeat: value [low, high]; several: mean ± std over repeats."""
    values = _values(rows, key)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return missing
    if len(rows) == 1:
        text = _fmt(finite[0], digits)
        lo, hi = _values(rows, f"{key}_low")[0], _values(rows, f"{key}_high")[0]
        if np.isfinite(lo) and np.isfinite(hi):
            text += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
        return text
    std = finite.std(ddof=1) if finite.size > 1 else 0.0
    return f"{finite.mean():.{digits}f} ± {std:.{digits}f}"


def _count_cell(rows: pd.DataFrame, key: str, total: str) -> str:
    """``k/n`` flagged at the attack's own threshold; over seeds, each seed's count."""
    k, n = _values(rows, key), _values(rows, total)
    if not np.isfinite(k).any():
        return "n/a"
    if len(rows) == 1:
        return f"{int(k[0])}/{int(n[0])}"
    return ", ".join(str(int(v)) for v in k) + f" of {int(n[0])}"


def _ppv_cell(rows: pd.DataFrame, gamma: float) -> str:
    """PPV at prior ``gamma`` from the counts at the attack's own threshold (any gamma),
    with its propagated interval; says when the non-members cannot resolve it."""
    key = f"ppv@gamma={gamma:g}"
    tp, fp = _values(rows, "tp"), _values(rows, "fp")
    if not (np.isfinite(tp).all() and np.isfinite(fp).all()):
        return _cell(rows, key)  # metrics without counts
    if (tp + fp == 0).all():
        return "nothing flagged"  # the formula's base rate would look like a measurement
    n_pos, n_neg = _values(rows, "n_members").astype(int), _values(rows, "n_nonmembers").astype(int)
    bounds = [ppv_interval(int(a), p, int(b), n, gamma) for a, p, b, n in zip(tp, n_pos, fp, n_neg)]
    frame = pd.DataFrame(
        {
            key: ppv(tp / n_pos, fp / n_neg, gamma),
            f"{key}_low": [b[0] for b in bounds],
            f"{key}_high": [b[1] for b in bounds],
        }
    )
    text = _cell(frame, key)
    resolved = np.array([ppv_resolved(int(b), lo, hi) for b, (lo, hi) in zip(fp, bounds)])
    if resolved.all():
        return text
    where = "" if len(rows) == 1 else f" ({int((~resolved).sum())}/{len(rows)} seeds)"
    return f"{text} not resolved by {n_neg[0]} non-members{where}"


def results_table(
    metrics: pd.DataFrame,
    *,
    fprs: tuple[float, ...] = (0.01, 0.001),
    gammas: tuple[float, ...] = (1.0, 10.0),
) -> pd.DataFrame:
    """Table of strings, one row per attack, from ``ExperimentResult.metrics``.

    With one repeat, cells show the value and its 95% interval (bootstrap for AUC,
    Clopper-Pearson for rates, propagated Clopper-Pearson for PPV); with several,
    mean ± std over repeats (flagged counts: each seed's). A PPV the non-members cannot
    resolve (none flagged, or an interval wider than 0.5) says so; a TPR at an FPR below
    ``1/n_nonmembers`` is "not resolved".
    """
    rows = []
    for name, group in metrics.groupby("attack", sort=False):
        n_neg = int(_values(group, "n_nonmembers")[0])
        row = {
            "attack": name,
            "AUC": _cell(group, "auc"),
            "members flagged (own threshold)": _count_cell(group, "tp", "n_members"),
            "TPR (own threshold)": _cell(group, "tpr"),
            "non-members flagged": _count_cell(group, "fp", "n_nonmembers"),
            "FPR (own threshold)": _cell(group, "fpr"),
        }
        for g in gammas:
            row[f"PPV γ={g:g}"] = _ppv_cell(group, g)
        row["advantage"] = _cell(group, "advantage")
        row["ε lower bound"] = _cell(group, "epsilon_lower", 2)
        for alpha in fprs:
            key = f"tpr@{alpha:g}"  # absent: the audit did not compute this FPR level
            row[f"TPR@{alpha:g}FPR (oracle threshold)"] = _cell(
                group,
                key,
                missing=f"not resolved by {n_neg} non-members"
                if key in group.columns
                else "not computed",
            )
        row["seconds"] = _cell(
            group.assign(seconds=group["fit_seconds"] + group["score_seconds"]), "seconds", 1
        )
        rows.append(row)
    return pd.DataFrame(rows)


def summary_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """The few columns a terminal shows, one row per attack, strongest first: the
    records each attack flags at its own threshold (pooled over seeds) with their 95%
    Clopper-Pearson intervals, and the AUC (mean over seeds). The full table is
    :func:`results_table`'s."""
    from tabmia.report.state import own_threshold_summary

    summary = own_threshold_summary(metrics)
    auc = (
        pd.to_numeric(metrics["auc"], errors="coerce").groupby(metrics["attack"]).mean()
        if "auc" in metrics
        else pd.Series(np.nan, index=summary.index)
    )
    return pd.DataFrame(
        {
            "attack": summary.index,
            "members flagged": [f"{t}/{n}" for t, n in zip(summary["tp"], summary["n_members"])],
            "TPR [95%]": [
                f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
                for v, lo, hi in summary[["tpr", "tpr_low", "tpr_high"]].to_numpy()
            ],
            "non-members": [f"{f}/{n}" for f, n in zip(summary["fp"], summary["n_nonmembers"])],
            "FPR [95%]": [
                f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
                for v, lo, hi in summary[["fpr", "fpr_low", "fpr_high"]].to_numpy()
            ],
            "AUC": [_fmt(float(v)) for v in auc.reindex(summary.index)],
        }
    )


def text_table(table: pd.DataFrame) -> str:
    """A table of strings as aligned plain text (the first column left, the rest right)."""
    cols = list(table.columns)
    cells = [cols] + [[str(v) for v in row] for row in table.itertuples(index=False)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def markdown_table(table: pd.DataFrame) -> str:
    """GitHub markdown for a table of strings (no extra dependency)."""
    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in table.iterrows():
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def format_scores(values: Any, threshold: float, *, min_digits: int = 4) -> tuple[np.ndarray, str]:
    """Scores and their threshold as text that compare as the numbers do.

    The threshold gets the fewest significant digits (at least ``min_digits``) that put
    it above every unflagged score and at or below every flagged one (flagged: score
    ``>=`` threshold); each score then gets the fewest at which it stays on its side of
    the printed threshold. At four digits RMIA's threshold 1.0027 and a score 1.0026 would
    both read 1.003: here they read 1.0027 and 1.0026. A score a float rounding below
    a threshold of 0.9 reads 0.8999999999999999, not 0.9.

    Returns
    -------
    scores : ndarray of str (object dtype)
    threshold : str
    """
    v = np.asarray(values, dtype=float).ravel()
    out = np.char.mod(f"%.{min_digits}g", v).astype(object)
    if not np.isfinite(threshold):
        return out, f"{threshold:g}"
    flagged = v >= threshold
    below = v[~flagged].max(initial=-np.inf)
    lowest_flagged = v[flagged].min(initial=np.inf)
    for digits in range(min_digits, 18):
        shown_t = f"%.{digits}g" % threshold
        if below < float(shown_t) <= min(lowest_flagged, threshold):
            break
    else:
        shown_t = repr(float(threshold))
    cut = float(shown_t)
    for digits in range(min_digits + 1, 18):
        wrong = (out.astype(float) >= cut) != flagged
        if not wrong.any():
            break
        out[wrong] = np.char.mod(f"%.{digits}g", v[wrong])
    return out, shown_t
