"""Plots of attack results: log-log ROC curves and score histograms, as scikit-learn's
Display objects (:class:`AttackRocDisplay`, :class:`ScoreHistogramDisplay`), and the
functions that save their figures (:func:`plot_roc`, :func:`plot_score_histograms`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from sklearn import metrics as skm

from tabmia.metrics import roc_curve

__all__ = [
    "AttackRocDisplay",
    "ScoreHistogramDisplay",
    "plot_roc",
    "plot_score_histograms",
    "histogram_scale",
    "HistogramScale",
    "visible_roc_points",
]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


class AttackRocDisplay:
    """Log-log ROC curves of attacks on one plot (Carlini et al.'s view).

    scikit-learn's Display pattern (:class:`sklearn.metrics.RocCurveDisplay`): build
    with :meth:`from_result` or :meth:`from_scores` (which draw), or construct and call
    :meth:`plot`.

    Parameters
    ----------
    fpr, tpr : dict of str -> ndarray
        Each attack's ROC curve, as the points a log-log plot can tell apart
        (:func:`visible_roc_points`), in the order the attacks are drawn.
    roc_auc : dict of str -> float
        Each attack's AUC (of its full curve).
    fpr_floor : float, default=None
        The smallest FPR drawn (``1 / n_nonmembers``); ``1e-4`` when None.

    Attributes
    ----------
    line_ : dict of str -> matplotlib Line2D
        Each attack's curve.
    chance_line_ : matplotlib Line2D
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> display = AttackRocDisplay.from_result(result)  # doctest: +SKIP
    >>> display.figure_.savefig("roc.png")  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        fpr: dict[str, np.ndarray],
        tpr: dict[str, np.ndarray],
        roc_auc: dict[str, float],
        fpr_floor: float | None = None,
    ) -> None:
        self.fpr = fpr
        self.tpr = tpr
        self.roc_auc = roc_auc
        self.fpr_floor = fpr_floor

    @classmethod
    def from_scores(
        cls,
        scores: pd.DataFrame,
        *,
        repeat: int | None = 0,
        title: str = "Membership inference ROC (log-log)",
        ax: Any = None,
    ) -> AttackRocDisplay:
        """Draw the ROC curve of every attack in a scores frame.

        Parameters
        ----------
        scores : DataFrame
            ``ExperimentResult.scores`` (columns attack, repeat, member, score).
        repeat : int or None, default=0
            Which repeat to draw; None pools all repeats.
        title : str
        ax : matplotlib Axes, default=None
            Where to draw; a new figure when None.

        Returns
        -------
        AttackRocDisplay
        """
        data = scores if repeat is None else scores[scores["repeat"] == repeat]
        fprs, tprs, aucs = {}, {}, {}
        floor = None
        for name, group in data.groupby("attack", sort=False):
            member = group["member"].to_numpy(bool)
            fpr, tpr, _ = roc_curve(member, group["score"].to_numpy(float))
            floor = 1.0 / max((~member).sum(), 1)
            shown = visible_roc_points(fpr, tpr)
            # the area under every point: the AUC without a second sort of the scores
            aucs[str(name)] = float(skm.auc(fpr, tpr))
            fprs[str(name)], tprs[str(name)] = fpr[shown], tpr[shown]
        return cls(fpr=fprs, tpr=tprs, roc_auc=aucs, fpr_floor=floor).plot(ax=ax, title=title)

    @classmethod
    def from_result(
        cls,
        result: Any,
        *,
        repeat: int | None = 0,
        title: str = "Membership inference ROC (log-log)",
        ax: Any = None,
    ) -> AttackRocDisplay:
        """Draw the ROC curves of an :class:`~tabmia.experiment.ExperimentResult`
        (:meth:`from_scores` of its ``scores``)."""
        return cls.from_scores(result.scores, repeat=repeat, title=title, ax=ax)

    def plot(
        self, ax: Any = None, *, title: str = "Membership inference ROC (log-log)"
    ) -> AttackRocDisplay:
        """Draw the curves on ``ax`` (a new 5.5 x 5 inch figure when None).

        Returns
        -------
        AttackRocDisplay
        """
        plt = _pyplot()
        own_figure = ax is None
        if own_figure:
            fig, ax = plt.subplots(figsize=(5.5, 5))
        else:
            fig = ax.figure
        self.line_ = {
            name: ax.plot(
                self.fpr[name],
                self.tpr[name],
                label=f"{name} (AUC {self.roc_auc[name]:.3f})",
                lw=1.5,
            )[0]
            for name in self.fpr
        }
        lo = self.fpr_floor if self.fpr_floor else 1e-4
        grid = np.logspace(np.log10(lo), 0, 50)
        (self.chance_line_,) = ax.plot(grid, grid, "k--", lw=0.8, label="chance")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, 1)
        ax.set_ylim(lo, 1.02)
        ax.set_xlabel("False positive rate")
        ax.set_ylabel("True positive rate")
        ax.set_title(title)
        ax.legend(loc="lower right", fontsize=8)
        ax.grid(True, which="both", alpha=0.2)
        if own_figure:
            fig.tight_layout()
        self.ax_, self.figure_ = ax, fig
        return self


def plot_roc(
    scores: pd.DataFrame,
    path: str | Path | None = None,
    *,
    repeat: int | None = 0,
    title: str = "Membership inference ROC (log-log)",
) -> Any:
    """Log-log ROC curves of every attack on one plot, saved to ``path``
    (:class:`AttackRocDisplay`'s figure; the display draws on an ``ax`` of yours).

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
    fig = AttackRocDisplay.from_scores(scores, repeat=repeat, title=title).figure_
    if path is not None:
        fig.savefig(path, dpi=120)
        _pyplot().close(fig)
    return fig


#: Cells per decade of each log axis within which :func:`visible_roc_points` keeps only
#: a run's first and last point: a figure of a few hundred pixels shows one to two hundred
#: pixels per decade, so a cell is far below one pixel.
_ROC_CELLS_PER_DECADE = 1000


def visible_roc_points(fpr: np.ndarray, tpr: np.ndarray) -> np.ndarray:
    """Indices of the ROC points a log-log plot can tell apart.

    The points are cut into runs that fall into one cell of a grid of
    ``_ROC_CELLS_PER_DECADE`` cells to a decade on both axes (zeros: a cell of their
    own); each run keeps its first and last point. Two consecutive kept points are
    then either neighbours on the full curve (their segment is drawn as it is) or the
    ends of a run inside one cell, so the drawn curve departs from the full one only
    within a cell, a thousandth of a decade. A ROC curve rises on both axes and never
    comes back to a cell it left, so at most two points per cell crossed remain: a few
    tens of thousands for any number of records, where matplotlib drew one point per
    record before (several million per attack in a ten-million-record audit).

    Parameters
    ----------
    fpr, tpr : ndarray
        A ROC curve in order of decreasing threshold (both non-decreasing).

    Returns
    -------
    ndarray of int
        Indices into ``fpr`` / ``tpr``, ascending, including the first and last point.
    """
    with np.errstate(divide="ignore"):
        cell_x = np.floor(np.log10(fpr) * _ROC_CELLS_PER_DECADE)
        cell_y = np.floor(np.log10(tpr) * _ROC_CELLS_PER_DECADE)
    starts = np.ones(fpr.size, dtype=bool)
    starts[1:] = (cell_x[1:] != cell_x[:-1]) | (cell_y[1:] != cell_y[:-1])
    ends = np.ones(fpr.size, dtype=bool)
    ends[:-1] = starts[1:]
    return np.flatnonzero(starts | ends)


#: Largest share of a group's records one histogram bin may hold beyond the group's
#: largest set of tied scores before the next scale is tried: above it, the bins hide
#: where members and non-members overlap.
_CROWDED_BIN = 0.3


def _fullest_bin_excess(x: np.ndarray, member: np.ndarray, edges: np.ndarray) -> float:
    """Per group, the fullest bin's share of the group minus its largest tie's share; the max."""
    worst = 0.0
    for group in (x[member], x[~member]):
        if group.size == 0:
            continue
        counts, _ = np.histogram(np.clip(group, edges[0], edges[-1]), bins=edges)
        ties = np.unique(group, return_counts=True)[1].max()
        worst = max(worst, (counts.max() - ties) / group.size)
    return worst


class HistogramScale(NamedTuple):
    """How a panel of :func:`plot_score_histograms` draws one attack's scores."""

    name: str  #: "linear", "asinh" or "rank"
    edges: np.ndarray  #: bin edges on the panel's x-axis
    to_axis: Callable[[Any], np.ndarray]  #: scores (and thresholds) onto that axis
    linear_width: float | None = None  #: of the asinh axis


def histogram_scale(
    scores: np.ndarray, member: np.ndarray, threshold: float | None = None, *, bins: int = 40
) -> HistogramScale:
    """The first scale on which member and non-member scores spread over the bins.

    Tried in order: the scores themselves (bins over their central 99%, the threshold
    included), an asinh scale (linear near zero, logarithmic in the tails: heavy-tailed
    scores such as LiRA's or the quantile attack's ``-log p``), and the scores' rank among
    all candidates (0 = lowest, 1 = highest), which spreads any scores but ties. A scale
    passes when no bin holds more than 30% of a group beyond that group's largest set of
    tied scores (ties no scale can split).

    Returns
    -------
    HistogramScale
    """
    s = np.asarray(scores, float)
    m = np.asarray(member, bool)
    t = threshold if threshold is not None and np.isfinite(threshold) else None
    lo, hi = np.quantile(s, [0.005, 0.995])
    if t is not None and s.min() <= t <= s.max():  # the threshold stays inside the picture
        lo, hi = min(lo, t), max(hi, t)
    edges = np.linspace(lo, hi if hi > lo else lo + 1, bins + 1)
    if _fullest_bin_excess(s, m, edges) <= _CROWDED_BIN:
        return HistogramScale("linear", edges, _identity)
    width = float(np.quantile(np.abs(s), 0.1)) or float(np.abs(s[s != 0]).min(initial=1.0))
    low, high = np.arcsinh(s.min() / width), np.arcsinh(s.max() / width)
    edges = width * np.sinh(np.linspace(low, high if high > low else low + 1, bins + 1))
    if _fullest_bin_excess(s, m, edges) <= _CROWDED_BIN:
        return HistogramScale("asinh", edges, _identity, width)
    ordered = np.sort(s)
    # rank = share of candidates scoring strictly lower: flagged (>= t) iff rank >= rank(t)
    return HistogramScale(
        "rank",
        np.linspace(0.0, 1.0, bins + 1),
        lambda v: np.searchsorted(ordered, np.asarray(v, float), "left") / s.size,
    )


def _identity(values: Any) -> np.ndarray:
    return np.asarray(values, float)


_AXIS_LABEL = {
    "linear": "attack score (higher = more likely a member)",
    "asinh": "attack score, asinh scale: log-like\nin the tails (higher = more likely a member)",
    "rank": "rank of the score among all candidates\n(0 = lowest, 1 = highest; higher = member)",
}


class ScoreHistogramDisplay:
    """Histograms of member and non-member scores, one panel per attack.

    Each panel picks the first scale (:func:`histogram_scale`) on which both groups
    spread over the bins, so the picture shows where members and non-members overlap
    even when the scores span orders of magnitude; the x-axis label names the scale.
    scikit-learn's Display pattern: build with :meth:`from_result` or
    :meth:`from_scores` (which draw), or construct and call :meth:`plot`.

    Parameters
    ----------
    scores : DataFrame
        The rows drawn (columns attack, member, score).
    thresholds : dict of str -> float, default=None
        Each attack's own threshold, drawn as a dashed line (records at or right of it
        are flagged).
    bins : int, default=40

    Attributes
    ----------
    scale_ : dict of str -> HistogramScale
        The scale each attack's panel is drawn on.
    ax_ : ndarray of matplotlib Axes
        One per attack.
    figure_ : matplotlib Figure
    """

    def __init__(
        self,
        *,
        scores: pd.DataFrame,
        thresholds: dict[str, float] | None = None,
        bins: int = 40,
    ) -> None:
        self.scores = scores
        self.thresholds = thresholds
        self.bins = bins

    @classmethod
    def from_scores(
        cls,
        scores: pd.DataFrame,
        *,
        repeat: int | None = 0,
        bins: int = 40,
        thresholds: dict[str, float] | None = None,
        title: str | None = None,
        ax: Any = None,
    ) -> ScoreHistogramDisplay:
        """Draw the histograms of every attack in a scores frame.

        Parameters
        ----------
        scores : DataFrame
            ``ExperimentResult.scores``.
        repeat : int or None, default=0
            Which repeat to draw; None pools all repeats.
        thresholds : dict of str -> float, default=None
            Each attack's own threshold.
        title : str, default=None
            Figure title (e.g. which seed is shown).
        ax : array of matplotlib Axes, default=None
            One per attack; a new figure when None.

        Returns
        -------
        ScoreHistogramDisplay
        """
        data = scores if repeat is None else scores[scores["repeat"] == repeat]
        return cls(scores=data, thresholds=thresholds, bins=bins).plot(ax=ax, title=title)

    @classmethod
    def from_result(
        cls,
        result: Any,
        *,
        repeat: int | None = 0,
        bins: int = 40,
        thresholds: dict[str, float] | None = None,
        title: str | None = None,
        ax: Any = None,
    ) -> ScoreHistogramDisplay:
        """Draw the histograms of an :class:`~tabmia.experiment.ExperimentResult`
        (:meth:`from_scores` of its ``scores``)."""
        return cls.from_scores(
            result.scores, repeat=repeat, bins=bins, thresholds=thresholds, title=title, ax=ax
        )

    def plot(self, ax: Any = None, *, title: str | None = None) -> ScoreHistogramDisplay:
        """Draw on ``ax`` (one axes per attack; default a new figure, three panels a row).

        Returns
        -------
        ScoreHistogramDisplay
        """
        plt = _pyplot()
        data = self.scores
        names = [str(name) for name in pd.unique(data["attack"])]  # in order of appearance
        own_figure = ax is None
        if own_figure:
            ncols = min(3, len(names))
            nrows = int(np.ceil(len(names) / ncols))
            fig, grid = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3.4 * nrows), squeeze=False)
            axes = grid.ravel()
        else:
            axes = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
            if axes.size != len(names):
                raise ValueError(f"ax has {axes.size} axes for {len(names)} attacks")
            fig = axes[0].figure
        self.scale_ = {name: self._panel(a, name) for a, name in zip(axes, names)}
        for a in axes[len(names) :]:
            a.axis("off")
        if title:
            fig.suptitle(title, fontsize=10)
        if own_figure:
            fig.tight_layout()
        self.ax_, self.figure_ = axes[: len(names)], fig
        return self

    def _panel(self, ax: Any, name: str) -> HistogramScale:
        """One attack's histograms, on the first scale that spreads them."""
        g = self.scores[self.scores["attack"] == name]
        raw = g["score"].to_numpy(float)
        finite = raw[np.isfinite(raw)]
        # an infinite score (a p-value of 0) is drawn at the finite edge
        s = (
            np.clip(np.nan_to_num(raw, nan=finite.min()), finite.min(), finite.max())
            if finite.size
            else raw
        )
        m = g["member"].to_numpy(bool)
        t = None if self.thresholds is None else self.thresholds.get(name)
        t = float(t) if t is not None and np.isfinite(t) else None
        scale = histogram_scale(s, m, t, bins=self.bins)
        x = np.clip(scale.to_axis(s), scale.edges[0], scale.edges[-1])
        ax.hist(x[~m], bins=scale.edges, alpha=0.6, label="non-members", density=True)
        ax.hist(x[m], bins=scale.edges, alpha=0.6, label="members", density=True)
        if scale.name == "asinh":
            ax.set_xscale("asinh", linear_width=scale.linear_width)
        if t is not None:
            _threshold_mark(ax, scale, raw, s, t)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(_AXIS_LABEL[scale.name], fontsize=8)
        ax.set_ylabel("density", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
        return scale


def _threshold_mark(
    ax: Any, scale: HistogramScale, raw: np.ndarray, s: np.ndarray, t: float
) -> None:
    """The attack's own threshold on its panel: a dashed line where it splits the scores,
    a note where it lies off every score (a line there would stretch the axis)."""
    shown = f"{t:.6g}"  # a legend, not a table of scores (those print every digit)
    flagged = raw >= t
    if flagged.any() and not flagged.all():
        ax.axvline(
            float(scale.to_axis(min(max(t, s.min()), s.max()))),
            color="k",
            ls="--",
            lw=1,
            label=f"own threshold {shown}",
        )
        return
    where = (
        "above every score: nothing flagged"
        if not flagged.any()
        else "at or below every score: all flagged"
    )
    ax.annotate(
        f"own threshold {shown}\n{where}",
        xy=(0.5, 0.97),
        xycoords="axes fraction",
        ha="center",
        va="top",
        fontsize=7,
        bbox={"fc": "white", "ec": "0.7", "alpha": 0.9},
    )


def plot_score_histograms(
    scores: pd.DataFrame,
    path: str | Path | None = None,
    *,
    repeat: int | None = 0,
    bins: int = 40,
    thresholds: dict[str, float] | None = None,
    title: str | None = None,
) -> Any:
    """Histogram of member vs non-member scores, one panel per attack, saved to ``path``
    (:class:`ScoreHistogramDisplay`'s figure; the display draws on axes of yours).

    Parameters
    ----------
    scores : DataFrame
        ``ExperimentResult.scores``.
    path : str or Path, default=None
        Where to save the figure; not saved when None.
    repeat : int or None, default=0
        Which repeat to draw; None pools all repeats.
    thresholds : dict of str -> float, default=None
        Each attack's own threshold, drawn as a dashed line (records at or right of it
        are flagged).
    title : str, default=None
        Figure title (e.g. which seed is shown).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = ScoreHistogramDisplay.from_scores(
        scores, repeat=repeat, bins=bins, thresholds=thresholds, title=title
    ).figure_
    if path is not None:
        fig.savefig(path, dpi=110)
        _pyplot().close(fig)
    return fig
