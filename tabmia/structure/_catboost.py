"""Leaves and weights of CatBoost models (``get_leaf_weights``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia.structure._tree_leaves import TreeLeaves, flat_offsets

__all__ = ["read_catboost"]


def _leaf_weights(estimator: Any) -> np.ndarray:
    """Every leaf's weight, tree after tree; from the model's JSON export where
    ``get_leaf_weights`` refuses (CatBoost 1.2 asserts on multi-class models)."""
    try:
        return np.asarray(estimator.get_leaf_weights(), dtype=np.float64)
    except AssertionError:
        import json
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.json")
            estimator.save_model(path, format="json")
            with open(path, encoding="utf-8") as f:
                trees = json.load(f).get("oblivious_trees")
        if trees is None:
            raise ValueError(
                "CatBoost model without oblivious trees: its leaf weights cannot be read"
            ) from None
        return np.concatenate([np.asarray(t["leaf_weights"], dtype=np.float64) for t in trees])


def read_catboost(estimator: Any) -> TreeLeaves:
    """Read a fitted ``CatBoostClassifier`` / ``CatBoostRegressor``.

    ``counts`` is each leaf's weight: the summed weights of the learn records in it
    (their count for unweighted data).
    """
    sizes = np.asarray(estimator.get_tree_leaf_counts(), dtype=np.int64)
    counts = _leaf_weights(estimator)
    offsets = flat_offsets(sizes)
    tree_size = np.add.reduceat(counts, offsets) if sizes.size else np.zeros(0)

    def apply(X: Any) -> np.ndarray:
        return np.asarray(estimator.calc_leaf_indexes(X), dtype=np.int64)

    return TreeLeaves(
        family=type(estimator).__name__,
        n_trees=int(sizes.size),
        node_offset=offsets,
        counts=counts,
        class_counts=None,
        tree_size=tree_size,
        inclusion=np.ones(sizes.size),
        count_kind="leaf weights: summed weights of the learn records (their count unweighted)",
        exact=True,
        _apply=apply,
    )
