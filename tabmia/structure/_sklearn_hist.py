"""Leaves and counts of scikit-learn's ``HistGradientBoosting*``, which has no ``apply``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia.structure._tree_leaves import TreeLeaves, flat_offsets

__all__ = ["read_hist"]


def _descend(nodes: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Every record's leaf in one predictor, level by level over all records at once
    (the predictor's own rule: NaN follows ``missing_go_to_left``, else ``<=``)."""
    at = np.zeros(X.shape[0], dtype=np.int64)
    rows = np.arange(X.shape[0])
    leaf = nodes["is_leaf"] != 0  # a uint8 field: ~ would flip its bits
    active = ~leaf[at]
    while active.any():
        idx = rows[active]
        node = at[idx]
        value = X[idx, nodes["feature_idx"][node]]
        left = np.where(
            np.isnan(value),
            nodes["missing_go_to_left"][node] != 0,
            value <= nodes["num_threshold"][node],
        )
        at[idx] = np.where(left, nodes["left"][node], nodes["right"][node])
        active[idx] = ~leaf[at[idx]]
    return at


def read_hist(estimator: Any) -> TreeLeaves:
    """Read a fitted ``HistGradientBoostingClassifier`` / ``Regressor``.

    ``counts`` is the ``count`` each node stores: training records, after the
    validation split early stopping holds out. Categorical splits are refused.
    """
    predictors = [p for iteration in estimator._predictors for p in iteration]
    node_arrays = [p.nodes for p in predictors]
    if any(n["is_categorical"].any() for n in node_arrays):
        raise ValueError(
            f"{type(estimator).__name__} with categorical splits: tabmia reads the leaves "
            "of numeric splits only"
        )
    sizes = [n.shape[0] for n in node_arrays]
    counts = np.concatenate([n["count"] for n in node_arrays]).astype(np.float64)

    def apply(X: Any) -> np.ndarray:
        Xn = np.asarray(estimator._preprocess_X(X, reset=False), dtype=np.float64)
        return np.column_stack([_descend(n, Xn) for n in node_arrays])

    offsets = flat_offsets(sizes)
    return TreeLeaves(
        family=type(estimator).__name__,
        n_trees=len(predictors),
        node_offset=offsets,
        counts=counts,
        class_counts=None,
        tree_size=counts[offsets],
        inclusion=np.ones(len(predictors)),
        count_kind="count: training records (after early stopping's validation split)",
        exact=True,
        _apply=apply,
    )
