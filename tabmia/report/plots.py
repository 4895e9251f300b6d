"""Plots of attack results: log-log ROC curves and score histograms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import auc, roc_curve

__all__ = ["plot_roc", "plot_score_histograms"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_roc(
    scores: pd.DataFrame,
    path: str | Path | None = None,
    *,
    repeat: int | None = 0,
    title: str = "Membership inference ROC (log-log)",
) -> Any:
    """Log-log ROC curves of every attack on one plot (Carlini et al.'s view).

    Parameters
    ----------
    scores : DataFrame
        ``ExperimentResult.scores`` (columns attack, repeat, member, score).
    path : str or Path, default=None
        Where to save the figure (PNG/SVG/PDF by suffix); not saved when None.
    repeat : int or None, default=0
        Which repeat to draw; None pools all repeats.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    data = scores if repeat is None else scores[scores["repeat"] == repeat]
    fig, ax = plt.subplots(figsize=(5.5, 5))
    floor = None
    for name, group in data.groupby("attack", sort=False):
        member = group["member"].to_numpy(bool)
        s = group["score"].to_numpy(float)
        fpr, tpr, _ = roc_curve(member, s)
        floor = 1.0 / max((~member).sum(), 1)
        ax.plot(fpr, tpr, label=f"{name} (AUC {auc(member, s):.3f})", lw=1.5)
    lo = floor if floor else 1e-4
    grid = np.logspace(np.log10(lo), 0, 50)
    ax.plot(grid, grid, "k--", lw=0.8, label="chance")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, 1)
    ax.set_ylim(lo, 1.02)
    ax.set_xlabel("False positive rate")
    ax.set_ylabel("True positive rate")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def plot_score_histograms(
    scores: pd.DataFrame,
    path: str | Path | None = None,
    *,
    repeat: int | None = 0,
    bins: int = 40,
    thresholds: dict[str, float] | None = None,
    title: str | None = None,
) -> Any:
    """Histogram of member vs non-member scores, one panel per attack.

    Parameters
    ----------
    scores : DataFrame
        ``ExperimentResult.scores``.
    path : str or Path, default=None
        Where to save the figure; not saved when None.
    repeat : int or None, default=0
        Which repeat to draw; None pools all repeats.
    thresholds : dict of str -> float, default=None
        Each attack's own threshold, drawn as a dashed line.
    title : str, default=None
        Figure title (e.g. which seed is shown).

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    data = scores if repeat is None else scores[scores["repeat"] == repeat]
    names = list(dict.fromkeys(data["attack"]))
    ncols = min(3, len(names))
    nrows = int(np.ceil(len(names) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3.2 * nrows), squeeze=False)
    for ax, name in zip(axes.ravel(), names):
        g = data[data["attack"] == name]
        s = g["score"].to_numpy(float)
        lo, hi = np.quantile(s, [0.005, 0.995]) if s.size > 1 else (s.min(), s.max() + 1)
        edges = np.linspace(lo, hi if hi > lo else lo + 1, bins + 1)
        m = g["member"].to_numpy(bool)
        ax.hist(np.clip(s[~m], lo, hi), bins=edges, alpha=0.6, label="non-members", density=True)
        ax.hist(np.clip(s[m], lo, hi), bins=edges, alpha=0.6, label="members", density=True)
        if thresholds is not None and name in thresholds and np.isfinite(thresholds[name]):
            t = float(thresholds[name])
            if lo <= t <= hi:
                ax.axvline(t, color="k", ls="--", lw=1, label="own threshold")
            else:  # off the clipped range: say so rather than stretch the axis
                ax.annotate(f"own threshold {t:.3g}\n{'above' if t > hi else 'below'} "
                            "the range shown", xy=(0.5, 0.97), xycoords="axes fraction",
                            ha="center", va="top", fontsize=7,
                            bbox={"fc": "white", "ec": "0.7", "alpha": 0.9})
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("attack score (higher = more likely a member)", fontsize=8)
        ax.set_ylabel("density", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig
