"""The plot of person risk: how many member and non-member persons reach each level of
evidence, one curve per attack (scikit-learn's Display pattern)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["PersonRiskDisplay"]


def _share_at_most(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The share of ``p`` at or below each of its distinct values (its empirical CDF)."""
    ordered = np.sort(p)
    x = np.unique(ordered)
    return x, np.searchsorted(ordered, x, side="right") / ordered.size


class PersonRiskDisplay:
    """Share of member and non-member persons whose p-value is at most each level.

    A person's p-value (:func:`~tabmia.persons.person_scores`) is calibrated on the attacker's public
    persons: a non-member person reaches ``p <= x`` with probability at most ``x``, the
    diagonal drawn as the calibration's promise. Member persons above it are persons the
    attack exposes at that level; the non-members' curve shows the promise kept. Both
    axes are logarithmic, so the few persons exposed at small p-values stay visible.
    :func:`~tabmia.persons.person_risk` gives the same shares at chosen levels as a table.

    scikit-learn's Display pattern: build with :meth:`from_result` or
    :meth:`from_persons` (which draw), or construct and call :meth:`plot`.

    Parameters
    ----------
    p_values : dict of str -> (ndarray, ndarray)
        Each attack's person p-values: of the member persons, of the non-member ones.

    Attributes
    ----------
    line_ : dict of str -> (matplotlib Line2D, matplotlib Line2D or None)
        Each attack's member and non-member curves (None where it has no non-member).
    chance_line_ : matplotlib Line2D
        The calibration's promise, ``share = p``.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    """

    def __init__(self, *, p_values: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        self.p_values = p_values

    @classmethod
    def from_persons(
        cls, persons: pd.DataFrame, *, attacks: Any = None, ax: Any = None
    ) -> PersonRiskDisplay:
        """Draw the candidate persons of :func:`~tabmia.persons.person_scores` (``attack``, ``member``,
        ``p_value``; pooled over repeats).

        Parameters
        ----------
        persons : DataFrame
        attacks : iterable of str, default=None
            The attacks drawn; all when None.
        ax : matplotlib Axes, default=None
            Draw there; a new figure when None.

        Returns
        -------
        PersonRiskDisplay
        """
        missing = [c for c in ("attack", "member", "p_value") if c not in persons]
        if missing:
            raise ValueError(
                f"persons has no column {missing[0]!r}: pass the candidate persons of "
                "person_scores or a person-level result's scores"
            )
        if attacks is not None:
            persons = persons[persons["attack"].isin(list(attacks))]
        if persons.empty:
            raise ValueError("there is no person to plot")
        p_values = {}
        for name, group in persons.groupby("attack", sort=False):
            member = group["member"].to_numpy(bool)
            p = group["p_value"].to_numpy(float)
            p_values[str(name)] = (p[member], p[~member])
        return cls(p_values=p_values).plot(ax=ax)

    @classmethod
    def from_result(cls, result: Any, *, attacks: Any = None, ax: Any = None) -> PersonRiskDisplay:
        """Draw a person-level :class:`~tabmia.experiment.ExperimentResult`
        (:func:`~tabmia.persons.person_result`; :meth:`from_persons` of its ``scores``)."""
        if getattr(result, "unit", "record") != "person":
            raise ValueError(
                "result is a record-level audit: pass person_result(...) of it, whose "
                "unit is the person"
            )
        return cls.from_persons(result.scores, attacks=attacks, ax=ax)

    def plot(self, ax: Any = None) -> PersonRiskDisplay:
        """Draw on ``ax`` (a new 5.5 x 5 inch figure when None).

        Returns
        -------
        PersonRiskDisplay
        """
        import matplotlib.pyplot as plt

        own_figure = ax is None
        if own_figure:
            fig, ax = plt.subplots(figsize=(5.5, 5))
        else:
            fig = ax.figure
        smallest = 1.0
        self.line_ = {}
        for name, (members, nonmembers) in self.p_values.items():
            lines: list[Any] = [None, None]
            for k, (p, who, style) in enumerate(
                ((members, "members", "-"), (nonmembers, "non-members", "--"))
            ):
                if p.size == 0:
                    continue
                x, share = _share_at_most(p)
                smallest = min(smallest, float(x[0]))
                color = None if k == 0 else lines[0].get_color()
                (lines[k],) = ax.step(
                    x,
                    share,
                    where="post",
                    ls=style,
                    lw=1.5,
                    color=color,
                    label=f"{name}: {who}",
                )
            self.line_[name] = (lines[0], lines[1])
        grid = np.logspace(np.log10(smallest), 0, 50)
        (self.chance_line_,) = ax.plot(
            grid, grid, "k:", lw=0.8, label="non-members at most (calibration)"
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(smallest, 1)
        ax.set_xlabel("person p-value at most")
        ax.set_ylabel("share of persons")
        ax.set_title("Person risk: persons at each level of evidence")
        ax.legend(loc="lower right", fontsize=7)
        ax.grid(True, which="both", alpha=0.2)
        if own_figure:
            fig.tight_layout()
        self.ax_, self.figure_ = ax, fig
        return self
