"""What a reconstruction found, and the sentence an audit says about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmia.reconstruction._bins import bin_bounds, representatives

__all__ = ["ReconstructionResult"]


@dataclass(frozen=True)
class ReconstructionResult:
    """A training set rebuilt from a tree model's structure and stored counts.

    Built by :func:`tabmia.reconstruction.reconstruct_training_set`. Records live in the
    feature space the model splits on: per feature, the bin between two consecutive
    thresholds the model uses on it (a feature no tree splits on has one bin, the whole
    line, and says nothing).

    Attributes
    ----------
    model : str
        The tree model's class name.
    n_trees, n_records : int
        Trees read, and training records the file says there were.
    bootstrap : bool
        Whether the trees were trained on bootstrap samples (the bagging variant: each
        record's multiplicity per tree is an unknown too).
    tried : bool
        Whether the solver ran; ``reason`` says why not when it did not.
    reason : str or None
        Why the reconstruction was not tried.
    status : str
        CP-SAT's status: ``"OPTIMAL"`` or ``"FEASIBLE"`` (a training set consistent with
        every stored count was found), ``"UNKNOWN"`` (none within the time limit),
        ``"INFEASIBLE"`` (none exists: the counts are not record counts), ``"NOT_TRIED"``.
    seconds : float
        Time spent building and solving the program.
    time_limit : float
        The limit the solver ran under.
    n_variables : int
        Variables of the constraint program.
    feature_names : list of str
        Names of the model's input features.
    thresholds : list of ndarray
        Per feature, the distinct thresholds the model splits it at (ascending).
    bins : ndarray of shape (n_records, n_features) or None
        Each reconstructed record's bin per feature (0 below the first threshold).
    labels : ndarray of shape (n_records,) or None
        Each reconstructed record's class.
    n_true : int or None
        True training records compared (None when none were given).
    exact : ndarray of bool or None
        Per true record: whether a reconstructed record has its label and its bin on
        every feature the program has a variable for: those some tree splits on and the
        columns of ``one_hot_groups`` (records paired one to one, optimally).
    partner : ndarray of int or None
        Per true record, the index of its reconstructed partner (-1 for none).
    feature_accuracy : dict of str to float or None
        Per feature the model splits on, the share of true records whose partner has
        their bin.
    baseline_feature_accuracy : dict of str to float or None
        The same for the best constant guess (each feature's most common true bin).
    label_accuracy : float or None
        Share of true records whose partner has their label.
    """

    model: str
    n_trees: int
    n_records: int
    bootstrap: bool
    tried: bool
    reason: str | None
    status: str
    seconds: float
    time_limit: float
    n_variables: int
    feature_names: list[str]
    thresholds: list[np.ndarray] = field(repr=False)
    bins: np.ndarray | None = field(default=None, repr=False)
    labels: np.ndarray | None = field(default=None, repr=False)
    n_true: int | None = None
    exact: np.ndarray | None = field(default=None, repr=False)
    partner: np.ndarray | None = field(default=None, repr=False)
    feature_accuracy: dict[str, float] | None = field(default=None, repr=False)
    baseline_feature_accuracy: dict[str, float] | None = field(default=None, repr=False)
    label_accuracy: float | None = None

    @property
    def found(self) -> bool:
        """Whether a training set consistent with every stored count was found."""
        return self.bins is not None

    @property
    def n_exact(self) -> int | None:
        """True training records recovered exactly (None without them)."""
        return None if self.exact is None else int(self.exact.sum())

    @property
    def exact_share(self) -> float | None:
        """Share of the true training records recovered exactly."""
        return None if self.exact is None or not len(self.exact) else float(self.exact.mean())

    @property
    def n_silent_features(self) -> int:
        """Features no tree splits on and in no one-hot group: the file says nothing
        about them, and no count includes them."""
        return sum(t.size == 0 for t in self.thresholds)

    def records(self) -> pd.DataFrame:
        """The reconstructed records: per feature the interval ``(lower, upper]`` its bin
        covers (``"any"`` for a feature no tree splits on), and the label."""
        if self.bins is None:
            raise ValueError(f"no reconstruction to show: {self.sentence()}")
        lower, upper = bin_bounds(self.bins, self.thresholds)
        columns = {
            name: [
                "any" if np.isinf(lo) and np.isinf(hi) else f"({lo:.6g}, {hi:.6g}]"
                for lo, hi in zip(lower[:, f], upper[:, f])
            ]
            for f, name in enumerate(self.feature_names)
        }
        return pd.DataFrame({**columns, "label": self.labels})

    def values(self) -> np.ndarray:
        """One value inside each reconstructed record's bins (features no tree splits on:
        0): records the model routes exactly as the reconstruction."""
        if self.bins is None:
            raise ValueError(f"no reconstruction to show: {self.sentence()}")
        return representatives(self.bins, self.thresholds)

    def sentence(self) -> str:
        """What the reconstruction shows, in one sentence for an audit's report."""
        trees = f"{self.n_trees} tree" + ("s" if self.n_trees != 1 else "")
        what = f"{'bagged ' if self.bootstrap else ''}{self.model} ({trees})"
        if not self.tried:
            return f"reconstruction not tried on the {what}: {self.reason}"
        if self.status == "INFEASIBLE":
            return (
                f"no training set fits the stored counts of the {what} (CP-SAT proved it in "
                f"{self.seconds:.1f} s): they are not record counts"
            )
        if not self.found:
            return (
                f"no training set consistent with the stored counts of the {what} was found within "
                f"the {self.time_limit:g} s limit (CP-SAT: {self.status}): a time limit, not a "
                "proof that the training set cannot be reconstructed"
            )
        silent = (
            f"; {self.n_silent_features} feature(s) no tree splits on are not counted"
            if self.n_silent_features
            else ""
        )
        if self.exact is None:
            return (
                f"the training set may be reconstructible: {self.n_records} records consistent "
                f"with every count the {what} stores were found in {self.seconds:.1f} s; how "
                f"many are exact needs the true training set{silent}"
            )
        accuracy = _mean(self.feature_accuracy)
        baseline = _mean(self.baseline_feature_accuracy)
        return (
            f"the training set may be reconstructible: {self.n_exact} of {self.n_true} "
            f"records recovered exactly (label and every feature at the model's thresholds) "
            f"from the structure and stored counts of the {what} in {self.seconds:.1f} s; per "
            f"feature {accuracy:.0%} right on average, against {baseline:.0%} for each "
            f"feature's most common value{silent}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON types (``results.json``'s ``reconstruction``)."""
        return {
            "model": self.model,
            "n_trees": self.n_trees,
            "n_records": self.n_records,
            "bootstrap": self.bootstrap,
            "tried": self.tried,
            "reason": self.reason,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "time_limit": self.time_limit,
            "n_variables": self.n_variables,
            "found": self.found,
            "n_true": self.n_true,
            "n_exact": self.n_exact,
            "exact_share": self.exact_share,
            "label_accuracy": self.label_accuracy,
            "feature_accuracy": self.feature_accuracy,
            "baseline_feature_accuracy": self.baseline_feature_accuracy,
            "silent_features": [
                n for n, t in zip(self.feature_names, self.thresholds) if t.size == 0
            ],
            "sentence": self.sentence(),
        }


def _mean(per_feature: dict[str, float] | None) -> float:
    values = [v for v in (per_feature or {}).values() if not np.isnan(v)]
    return float(np.mean(values)) if values else float("nan")
