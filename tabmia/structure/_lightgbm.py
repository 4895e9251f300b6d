"""Leaves and counts of LightGBM models (``leaf_count`` from the model dump)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia.structure._tree_leaves import TreeLeaves, flat_offsets

__all__ = ["read_lightgbm"]


def _leaf_counts(tree: dict[str, Any], n_leaves: int) -> np.ndarray:
    """``leaf_count`` by ``leaf_index`` of one dumped tree (a walk over its nodes)."""
    out = np.zeros(max(n_leaves, 1))
    stack = [tree["tree_structure"]]
    while stack:
        node = stack.pop()
        if "leaf_index" in node or "split_index" not in node:
            out[int(node.get("leaf_index", 0))] = float(
                node.get("leaf_count", node.get("internal_count", 0))
            )
        else:
            stack += [node["left_child"], node["right_child"]]
    return out


def _bagging_fraction(params: dict[str, Any]) -> float:
    fraction = float(params.get("bagging_fraction", params.get("subsample", 1.0)))
    freq = int(params.get("bagging_freq", params.get("subsample_freq", 0)))
    return fraction if freq > 0 else 1.0


def read_lightgbm(estimator: Any) -> TreeLeaves:
    """Read a fitted ``LGBMClassifier`` / ``LGBMRegressor`` or a ``lightgbm.Booster``.

    ``counts`` is each leaf's ``leaf_count``: training records in the iteration's bag.
    """
    booster = getattr(estimator, "booster_", estimator)
    dump = booster.dump_model()
    trees = dump["tree_info"]
    per_tree = [_leaf_counts(t, int(t.get("num_leaves", 1))) for t in trees]
    sizes = [c.size for c in per_tree]
    counts = np.concatenate(per_tree)
    params = estimator.get_params() if hasattr(estimator, "get_params") else booster.params
    inclusion = np.full(len(trees), _bagging_fraction(dict(params or {})))

    # the scikit-learn wrapper's predict places records on its own n_jobs threads
    predict = estimator.predict if hasattr(estimator, "booster_") else booster.predict

    def apply(X: Any) -> np.ndarray:
        return np.asarray(predict(X, pred_leaf=True)).reshape(len(X), -1)

    offsets = flat_offsets(sizes)
    return TreeLeaves(
        family=type(estimator).__name__,
        n_trees=len(trees),
        node_offset=offsets,
        counts=counts,
        class_counts=None,
        tree_size=np.array([c.sum() for c in per_tree]),
        inclusion=inclusion,
        count_kind="leaf_count: training records in the iteration's bag",
        exact=True,
        _apply=apply,
    )
