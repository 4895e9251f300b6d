"""The plot of a slice report: per-slice TPR and delivered FPR with their intervals,
one panel per attack (scikit-learn's Display pattern)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import pandas as pd

from tabmia.slices._labels import SLICE_PREFIX


class _Report(Protocol):
    """What :meth:`SliceRiskDisplay.from_report` reads of a :class:`SliceReport`."""

    @property
    def table(self) -> pd.DataFrame: ...

    @property
    def named(self) -> pd.DataFrame: ...


class SliceRiskDisplay:
    """Per-slice TPR and delivered FPR with their intervals, one panel per attack.

    scikit-learn's Display pattern: build with :meth:`from_report` (which draws), or
    construct and call :meth:`plot` (on ``ax``, one axes per attack).

    Parameters
    ----------
    table : DataFrame
        :attr:`SliceReport.table` rows of one slicing.
    named : DataFrame
        :attr:`SliceReport.named` rows (marked on the plot).
    slicing : str
        The slicing drawn.

    Attributes
    ----------
    ax_ : ndarray of matplotlib Axes
        One per attack.
    figure_ : matplotlib Figure
    """

    def __init__(self, table: pd.DataFrame, named: pd.DataFrame, slicing: str) -> None:
        self.table = table
        self.named = named
        self.slicing = slicing

    @classmethod
    def from_report(
        cls,
        report: _Report,
        *,
        slicing: str | None = None,
        attacks: Iterable[str] | None = None,
        ax: Any = None,
    ) -> SliceRiskDisplay:
        """Draw a report's per-slice rates (one slicing; default the first)."""
        t = report.table
        if t.empty:
            raise ValueError("the report has no slice to plot")
        slicings = list(pd.unique(t["slicing"]))
        if slicing is None:
            slicing = slicings[0]
        elif not str(slicing).startswith(SLICE_PREFIX):
            slicing = SLICE_PREFIX + str(slicing)
        if slicing not in slicings:
            raise ValueError(f"the report has no slicing {slicing!r} (it has {slicings})")
        t = t[t["slicing"] == slicing]
        if attacks is not None:
            t = t[t["attack"].isin(list(attacks))]
        named = report.named
        if len(named):
            named = named[named["slicing"] == slicing]
        return cls(t.reset_index(drop=True), named, slicing).plot(ax=ax)

    def plot(self, ax: Any = None) -> SliceRiskDisplay:
        """Draw on ``ax`` (one axes per attack; default a new figure)."""
        import matplotlib.pyplot as plt

        attacks = list(pd.unique(self.table["attack"]))
        if ax is None:
            fig, axes = plt.subplots(
                1, len(attacks), figsize=(4.5 * len(attacks), 4), squeeze=False
            )
            axes = axes.ravel()
        else:
            axes = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
            if axes.size != len(attacks):
                raise ValueError(f"ax has {axes.size} axes for {len(attacks)} attacks")
            fig = axes[0].figure
        for a, name in zip(axes, attacks):
            t = self.table[self.table["attack"] == name]
            x = np.arange(len(t))
            series = [
                ("tpr", "TPR, own threshold", "o", -0.15),
                ("fpr", "FPR delivered", "s", 0.0),
                ("tpr_cal", "TPR, per-slice calibrated", "^", 0.15),
            ]
            for key, label, marker, dx in series:
                v = t[key].to_numpy(float)
                if not np.isfinite(v).any():
                    continue
                lo = v - t[f"{key}_low"].to_numpy(float)
                hi = t[f"{key}_high"].to_numpy(float) - v
                a.errorbar(
                    x + dx, v, yerr=np.vstack([lo, hi]), fmt=marker, capsize=3, label=label, ms=5
                )
            target = t["fpr_target"].to_numpy(float)
            if np.isfinite(target).any():
                a.axhline(float(np.nanmax(target)), color="grey", ls="--", lw=0.8, label="FPR goal")
            hit = (
                set(self.named.loc[self.named["attack"] == name, "slice"])
                if len(self.named)
                else set()
            )
            a.set_xticks(x)
            a.set_xticklabels(
                [f"{s} *" if s in hit else str(s) for s in t["slice"]],
                rotation=30,
                ha="right",
                fontsize=8,
            )
            a.set_ylim(bottom=0)
            a.set_title(name)
            a.set_ylabel("rate")
            a.grid(True, axis="y", alpha=0.3)
        axes[0].legend(fontsize=7, loc="upper left")
        fig.suptitle(
            f"Slices by {self.slicing[len(SLICE_PREFIX) :]} (* named by the test)", fontsize=9
        )
        self.ax_, self.figure_ = axes, fig
        return self
