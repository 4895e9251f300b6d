"""Results tables: one row per attack, intervals or spread over seeds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["results_table", "markdown_table"]


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _cell(rows: pd.DataFrame, key: str, digits: int = 3) -> str:
    """One repeat: value [low, high]; several: mean ± std over repeats."""
    if key not in rows:
        return "n/a"
    values = pd.to_numeric(rows[key], errors="coerce").to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return "n/a"
    if len(rows) == 1:
        text = _fmt(finite[0], digits)
        low, high = rows.get(f"{key}_low"), rows.get(f"{key}_high")
        if low is not None and high is not None:
            lo, hi = low.iloc[0], high.iloc[0]
            if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi):
                text += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
        return text
    std = finite.std(ddof=1) if finite.size > 1 else 0.0
    return f"{finite.mean():.{digits}f} ± {std:.{digits}f}"


def results_table(
    metrics: pd.DataFrame,
    *,
    fprs: tuple[float, ...] = (0.01, 0.001),
    gammas: tuple[float, ...] = (1.0, 10.0),
) -> pd.DataFrame:
    """Table of strings, one row per attack, from ``ExperimentResult.metrics``.

    With one repeat, cells show the value and its 95% interval (bootstrap for AUC,
    Clopper-Pearson for rates); with several, mean ± std over repeats. TPR at an FPR
    below ``1/n_nonmembers`` shows ``n/a``.
    """
    rows = []
    for name, group in metrics.groupby("attack", sort=False):
        row = {"attack": name, "AUC": _cell(group, "auc")}
        for alpha in fprs:
            row[f"TPR@{alpha:g}FPR"] = _cell(group, f"tpr@{alpha:g}")
        row["threshold TPR"] = _cell(group, "tpr")
        row["threshold FPR"] = _cell(group, "fpr")
        for g in gammas:
            row[f"PPV γ={g:g}"] = _cell(group, f"ppv@gamma={g:g}")
        row["advantage"] = _cell(group, "advantage")
        row["ε lower bound"] = _cell(group, "epsilon_lower", 2)
        row["seconds"] = _cell(group.assign(seconds=group["fit_seconds"] + group["score_seconds"]),
                               "seconds", 1)
        rows.append(row)
    return pd.DataFrame(rows)


def markdown_table(table: pd.DataFrame) -> str:
    """GitHub markdown for a table of strings (no extra dependency)."""
    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in table.iterrows():
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"
