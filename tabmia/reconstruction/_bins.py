"""The feature space a forest splits on: per feature, the bins its thresholds cut.

A tree sends a record left at ``x <= threshold``. The distinct thresholds a forest uses on
a feature cut its line into bins; the forest cannot tell two values of one bin apart, so a
reconstructed record is a bin per feature, and a true record is compared in the same bins.
"""

from __future__ import annotations

import numpy as np

from tabmia.reconstruction._forest import ForestStructure

__all__ = ["bin_records", "feature_thresholds", "representatives"]


def feature_thresholds(
    forest: ForestStructure, binary_features: tuple[int, ...] = ()
) -> list[np.ndarray]:
    """Sorted distinct thresholds per feature over every tree; a feature of
    ``binary_features`` (one of a one-hot group) that no tree splits on gets 0.5, so that
    it is a 0 / 1 variable too."""
    per_feature: list[list[np.ndarray]] = [[] for _ in range(forest.n_features)]
    for tree in forest.trees:
        internal = tree.left >= 0
        for f in np.unique(tree.feature[internal]):
            per_feature[f].append(tree.threshold[internal & (tree.feature == f)])
    for f in binary_features:
        if not per_feature[f]:
            per_feature[f].append(np.array([0.5]))
    return [np.unique(np.concatenate(t)) if t else np.empty(0) for t in per_feature]


def bin_records(X: np.ndarray, thresholds: list[np.ndarray]) -> np.ndarray:
    """Each record's bin per feature: how many of the feature's thresholds its value
    exceeds (compared in float32, as scikit-learn's trees compare)."""
    X32 = np.asarray(X, dtype=np.float32).astype(np.float64)
    bins = np.zeros(X32.shape, dtype=np.int64)
    for f, cuts in enumerate(thresholds):
        if cuts.size:
            bins[:, f] = np.searchsorted(cuts, X32[:, f], side="left")
    return bins


def bin_bounds(bins: np.ndarray, thresholds: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``: each bin as the interval ``(lower, upper]`` of values (-inf /
    inf at the ends)."""
    lower = np.full(bins.shape, -np.inf)
    upper = np.full(bins.shape, np.inf)
    for f, cuts in enumerate(thresholds):
        edges = np.concatenate([[-np.inf], cuts, [np.inf]])
        lower[:, f] = edges[bins[:, f]]
        upper[:, f] = edges[bins[:, f] + 1]
    return lower, upper


def representatives(bins: np.ndarray, thresholds: list[np.ndarray]) -> np.ndarray:
    """A value inside each bin (the midpoint; half a unit past the outer threshold at an end,
    0 for a feature no tree splits on) that the forest routes as the bin."""
    lower, upper = bin_bounds(bins, thresholds)
    finite = np.isfinite(lower) & np.isfinite(upper)
    values = np.where(finite, np.where(finite, lower, 0) / 2 + np.where(finite, upper, 0) / 2, 0)
    values = np.where(np.isinf(lower) & np.isfinite(upper), upper - 0.5, values)
    values = np.where(np.isinf(upper) & np.isfinite(lower), lower + 0.5, values)
    return np.where(np.isinf(lower) & np.isinf(upper), 0.0, values)
