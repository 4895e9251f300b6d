"""The plot of a slice report: per-slice TPR and delivered FPR with their intervals,
one panel per attack (scikit-learn's Display pattern)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import pandas as pd

from tabmia.slices._labels import SLICE_PREFIX

#: The report's width (report.html is at most 1100 px wide, its figures at 110 dpi).
_WIDTH_IN = 10.0
#: Attacks side by side in a new figure; more go on further rows.
_MAX_COLUMNS = 3


class _Report(Protocol):
    """What :meth:`SliceRiskDisplay.from_report` reads of a :class:`SliceReport`."""

    @property
    def table(self) -> pd.DataFrame: ...

    @property
    def named(self) -> pd.DataFrame: ...


class SliceRiskDisplay:
    """Per-slice TPR and delivered FPR with their intervals, one panel per attack.

    scikit-learn's Display pattern: build with :meth:`from_report` (which draws), or
    construct (keywords only, as scikit-learn's Displays) and call :meth:`plot` (on
    ``ax``, one axes per attack).

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

    def __init__(self, *, table: pd.DataFrame, named: pd.DataFrame, slicing: str) -> None:
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
        """Draw a report's per-slice rates (one slicing; default the first).

        Parameters
        ----------
        report : SliceReport
        slicing : str, default=None
            The slicing drawn, with or without its ``slice:`` prefix; the report's first
            when None.
        attacks : iterable of str, default=None
            The attacks drawn; all when None.
        ax : array of matplotlib Axes, default=None
            One per attack; a new figure when None.

        Returns
        -------
        SliceRiskDisplay
        """
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
        return cls(table=t.reset_index(drop=True), named=named, slicing=slicing).plot(ax=ax)

    def plot(self, ax: Any = None) -> SliceRiskDisplay:
        """Draw on ``ax`` (one axes per attack; default a new figure).

        The slices run down the vertical axis, their names written out in full on the
        left; a new figure is 10 inches wide (the report's width), with at most
        three attacks side by side and the legend under the panels, so a dozen slices
        with long intersection names keep their labels and the legend whole."""
        import matplotlib.pyplot as plt

        attacks = list(pd.unique(self.table["attack"]))
        own_figure = ax is None
        if own_figure:
            n_slices = int(self.table.groupby("attack", sort=False).size().max())
            ncols = min(len(attacks), _MAX_COLUMNS)
            nrows = math.ceil(len(attacks) / ncols)
            fig, grid = plt.subplots(
                nrows,
                ncols,
                figsize=(_WIDTH_IN, nrows * (0.3 * n_slices + 1.1) + 0.9),
                squeeze=False,
                sharey=True,
                layout="constrained",
            )
            grid = grid.ravel()
            for extra in grid[len(attacks) :]:
                extra.remove()
            axes = grid[: len(attacks)]
        else:
            axes = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
            if axes.size != len(attacks):
                raise ValueError(f"ax has {axes.size} axes for {len(attacks)} attacks")
            fig = axes[0].figure
        for a, name in zip(axes, attacks):
            self._panel(a, name)
        handles, labels = axes[0].get_legend_handles_labels()
        for a in axes[1:]:  # the named marker may be on another attack's panel only
            for h, lab in zip(*a.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        if own_figure:
            fig.legend(
                handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8
            )
        else:
            axes[0].legend(handles, labels, fontsize=7, loc="lower right")
        fig.suptitle(f"Slices by {self.slicing[len(SLICE_PREFIX) :]}", fontsize=10)
        self.ax_, self.figure_ = axes, fig
        return self

    def _panel(self, a: Any, name: str) -> None:
        """One attack's slices: a row per slice, the first on top."""
        t = self.table[self.table["attack"] == name]
        y = np.arange(len(t))[::-1].astype(float)
        series = [
            ("tpr", "TPR, own threshold", "o", 0.22),
            ("fpr", "FPR delivered, own threshold", "s", 0.0),
            ("tpr_cal", "TPR, threshold calibrated per slice", "^", -0.22),
        ]
        right = 0.0
        for key, label, marker, dy in series:
            v = t[key].to_numpy(float)
            if not np.isfinite(v).any():
                continue
            lo = v - t[f"{key}_low"].to_numpy(float)
            hi = t[f"{key}_high"].to_numpy(float)
            right = max(right, float(np.nanmax(hi)))
            a.errorbar(
                v, y + dy, xerr=np.vstack([lo, hi - v]), fmt=marker, capsize=2, ms=4, label=label
            )
        target = t["fpr_target"].to_numpy(float)
        if np.isfinite(target).any():
            a.axvline(float(np.nanmax(target)), color="grey", ls="--", lw=0.8, label="FPR goal")
        hit = (
            set(self.named.loc[self.named["attack"] == name, "slice"]) if len(self.named) else set()
        )
        xmax = max(right, float(np.nanmax(target)) if np.isfinite(target).any() else 0.0)
        xmax = xmax * 1.12 if xmax > 0 else 1.0
        marks = [i for i, s in enumerate(t["slice"]) if s in hit]
        if marks:
            a.plot(
                np.full(len(marks), xmax * 0.97),
                y[marks],
                "*",
                color="crimson",
                ms=9,
                ls="none",
                label="named more exposed by the test",
            )
        a.set_yticks(y)
        a.set_yticklabels([str(s) for s in t["slice"]], fontsize=8)
        a.set_xlim(0, xmax)
        a.set_ylim(-0.6, len(t) - 0.4)
        a.set_title(name, fontsize=9)
        a.set_xlabel("rate", fontsize=8)
        a.tick_params(axis="x", labelsize=8)
        a.grid(True, axis="x", alpha=0.3)
