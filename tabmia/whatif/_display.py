"""The privacy-utility frontier of a what-if run as scikit-learn's Display object:
stated risk against utility, one numbered point per variant."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia.gate import parse_limits

__all__ = ["FrontierDisplay"]

#: Each kind of variant's colour and marker.
_KIND_STYLE = {
    "original": ("black", "*"),
    "retrain": ("tab:blue", "o"),
    "harden": ("tab:orange", "s"),
    "dp": ("tab:green", "D"),
    "cap": ("tab:purple", "^"),
}


def _label_groups(px: np.ndarray, py: np.ndarray, points: float) -> list[list[int]]:
    """Points whose number labels would overprint, gathered into one label each.

    ``px``, ``py``: the points in display units; ``points``: display units per typographic
    point. Each label ("3" or "2,3,4") is a box starting just right of and above its first
    point; while two boxes overlap, a box covers another group's marker, or two points lie
    within a marker of each other, their groups merge (a handful of points: plain loops).
    """
    groups = [[i] for i in range(px.size)]

    def box(g: list[int]) -> tuple[float, float, float, float]:
        text = ",".join(str(i) for i in g)
        x0, y0 = px[g[0]] + 6 * points, py[g[0]] + 4 * points
        return x0, y0, x0 + (5.0 * len(text) + 2) * points, y0 + 10 * points

    def clash(a: list[int], b: list[int]) -> bool:
        ax0, ay0, ax1, ay1 = box(a)
        bx0, by0, bx1, by1 = box(b)
        overlap = ax0 < bx1 and bx0 < ax1 and ay0 < by1 and by0 < ay1
        close = any(np.hypot(px[i] - px[j], py[i] - py[j]) < 8 * points for i in a for j in b)
        # a label over another group's marker (markers reach ~5 points from their centre)
        covers = any(
            x0 - 5 * points < px[k] < x1 + 5 * points and y0 - 5 * points < py[k] < y1 + 5 * points
            for (x0, y0, x1, y1), other in ((box(a), b), (box(b), a))
            for k in other
        )
        return overlap or close or covers

    merged = True
    while merged:
        merged = False
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                if clash(groups[i], groups[j]):
                    groups[i] = sorted(groups[i] + groups.pop(j))
                    merged = True
                    break
            if merged:
                break
    return groups


class FrontierDisplay:
    """Stated risk against utility, one numbered point per variant of a what-if run.

    Stated risk: the largest TPR at the attacks' own thresholds, with its interval (the
    original at the largest of its hardenings' where that is higher). A point is filled
    where its variant passes the gate; a legend keyed by the numbers (the table's order)
    sits beside the axes, so no label overprints another; points too close to label
    apart share one label ("1,5"). The original is drawn last, so its marker is never
    hidden; where its stated risk is a hardening's, its own risk is a hollow star joined
    to the stated one.

    scikit-learn's Display pattern: build with :meth:`from_result` (which draws), or
    construct and call :meth:`plot`.

    Parameters
    ----------
    table : DataFrame
        :meth:`WhatIfResult.frontier` (:func:`tabmia.whatif.frontier.frontier_table`).
    utility_metric : str
        The run's utility metric (the x-axis; lower is better for ``"log_loss"``).
    limit : str or list of str
        The run's gate; its TPR limits are drawn as horizontal lines.

    Attributes
    ----------
    front_line_ : matplotlib Line2D
        The Pareto front.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    """

    def __init__(self, *, table: pd.DataFrame, utility_metric: str, limit: Any) -> None:
        self.table = table
        self.utility_metric = utility_metric
        self.limit = limit

    @classmethod
    def from_result(cls, result: Any, *, ax: Any = None) -> FrontierDisplay:
        """Draw a :class:`~tabmia.whatif.WhatIfResult`'s frontier.

        Parameters
        ----------
        result : WhatIfResult
        ax : matplotlib Axes, default=None
            Draw there; a new figure when None.

        Returns
        -------
        FrontierDisplay
        """
        return cls(
            table=result.frontier().reset_index(drop=True),
            utility_metric=result.settings["utility_metric"],
            limit=result.settings["limit"],
        ).plot(ax=ax)

    def plot(self, ax: Any = None) -> FrontierDisplay:
        """Draw on ``ax`` (a new 8.4 x 4.6 inch figure when None).

        Returns
        -------
        FrontierDisplay
        """
        import matplotlib

        if ax is None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        t = self.table
        metric = self.utility_metric
        if ax is None:
            fig, ax = plt.subplots(figsize=(8.4, 4.6))
        else:
            fig = ax.figure
        shown = t[np.isfinite(t["utility"].astype(float))]
        self._points(ax, shown)
        front = shown[shown["on_front"]].sort_values("utility")
        (self.front_line_,) = ax.plot(
            front["utility"], front["risk"], color="gray", lw=1, ls="--", label="Pareto front"
        )
        for limit in parse_limits(self.limit):
            if limit.metric == "tpr":
                ax.axhline(limit.limit, color="tab:red", lw=1, label=f"gate {limit}")
        for kind, (color, marker) in _KIND_STYLE.items():
            if (t["kind"] == kind).any():
                ax.scatter([], [], color=color, marker=marker, label=kind)
        handles, labels = ax.get_legend_handles_labels()
        key = [f"{i + 1}  {t.at[i, 'variant']}" for i in t.index]
        spacer = matplotlib.lines.Line2D([], [], linestyle="none")
        ax.legend(
            handles + [spacer] * len(key),
            labels + key,
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            frameon=False,
        )
        ax.set_xlabel(
            f"utility: {metric} on held-out records"
            + (" (lower is better)" if metric == "log_loss" else "")
        )
        ax.set_ylabel("TPR, member records (stated risk)")
        ax.set_title("Privacy-utility frontier (filled: passes the gate)", fontsize=10)
        fig.tight_layout()
        self._number_labels(ax, fig, shown)
        self.ax_, self.figure_ = ax, fig
        return self

    def _points(self, ax: Any, shown: pd.DataFrame) -> None:
        """Each variant's point with its risk interval, the original's last (on top)."""
        t = self.table
        order = [i for i in shown.index if shown.at[i, "kind"] != "original"]
        order += [i for i in shown.index if shown.at[i, "kind"] == "original"]  # drawn on top
        for i in order:
            r = t.loc[i]
            color, marker = _KIND_STYLE.get(r["kind"], ("gray", "o"))
            x, y = float(r["utility"]), float(r["risk"])
            top = r["kind"] == "original"
            ax.errorbar(
                x,
                y,
                yerr=[[y - r["risk_low"]], [r["risk_high"] - y]],
                fmt="none",
                ecolor=color,
                alpha=0.5,
                zorder=6 if top else 2,
            )
            if top and r["risk_variant"] != r["variant"]:
                ax.plot([x, x], [float(r["tpr"]), y], color=color, lw=1, ls=":", zorder=6)
                ax.scatter(
                    [x],
                    [float(r["tpr"])],
                    color="white",
                    edgecolors="gray",
                    marker=marker,
                    s=90,
                    zorder=7,
                    label="original on its own outputs (stated at a hardening's risk)",
                )
            ax.scatter(
                [x],
                [y],
                color=color if r["passes"] else "white",
                edgecolors=color,
                marker=marker,
                s=140 if top else 60,
                zorder=7 if top else 3,
                linewidths=1.5 if top else 1.0,
            )

    @staticmethod
    def _number_labels(ax: Any, fig: Any, shown: pd.DataFrame) -> None:
        """The points' numbers, placed last, once the axes have their final size: their
        clashes are measured there."""
        xs = shown["utility"].to_numpy(float)
        ys = shown["risk"].to_numpy(float)
        ax.autoscale_view()
        ax.set_autoscale_on(False)  # the labels must not move the points they were placed by
        pts = ax.transData.transform(np.column_stack([xs, ys]))
        for members in _label_groups(pts[:, 0], pts[:, 1], fig.dpi / 72.0):
            rows = shown.index[members]
            ax.annotate(
                ",".join(str(int(k) + 1) for k in rows),
                (xs[members[0]], ys[members[0]]),
                textcoords="offset points",
                xytext=(6, 5),
                fontsize=8,
                zorder=8,
            )
