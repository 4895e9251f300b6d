"""Leaves and counts of scikit-learn's trees, forests, extra-trees and gradient boosting."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia.structure._tree_leaves import TreeLeaves, flat_offsets

__all__ = ["read_sklearn"]


def _trees(estimator: Any) -> list[Any]:
    if hasattr(estimator, "tree_"):
        return [estimator]
    if hasattr(estimator, "estimators_") and isinstance(estimator.estimators_, np.ndarray):
        return list(estimator.estimators_.ravel())  # gradient boosting: (stages, K)
    return list(estimator.estimators_)


def _bootstrap_inclusion(estimator: Any) -> float:
    """Chance that a training record is drawn at least once into one bootstrap tree."""
    if not getattr(estimator, "bootstrap", False):
        subsample = float(getattr(estimator, "subsample", 1.0))
        return subsample  # gradient boosting's stage subsample, drawn without replacement
    n = int(getattr(estimator, "_n_samples", 0))
    draws = int(getattr(estimator, "_n_samples_bootstrap", n))
    if n < 1:
        return 1.0 - np.exp(-1.0)
    return float(1.0 - (1.0 - 1.0 / n) ** draws)


def read_sklearn(estimator: Any) -> TreeLeaves:
    """Read a fitted scikit-learn tree, forest or ``GradientBoosting*``.

    ``counts`` is ``n_node_samples``: distinct training records (in a bootstrap forest,
    those drawn into the tree at least once). Per-class counts (classifier trees and
    forests) are the node's stored class shares times ``n_node_samples``: exact without
    bootstrap; with it, shares of bootstrap draws.
    """
    trees = [t.tree_ for t in _trees(estimator)]
    sizes = [t.node_count for t in trees]
    counts = np.concatenate([t.n_node_samples for t in trees]).astype(np.float64)
    boosting = isinstance(getattr(estimator, "estimators_", None), np.ndarray)
    is_classifier_tree = hasattr(estimator, "classes_") and not boosting
    class_counts = None
    if is_classifier_tree and trees[0].value.shape[1] == 1:
        shares = np.concatenate([t.value[:, 0, :] for t in trees])
        shares = shares / np.maximum(shares.sum(axis=1, keepdims=True), 1e-300)
        class_counts = shares * counts[:, None]
    bagged = bool(getattr(estimator, "bootstrap", False))
    inclusion = np.full(len(trees), _bootstrap_inclusion(estimator))
    kind = (
        "n_node_samples: distinct training records drawn into the tree (bootstrap)"
        if bagged
        else "n_node_samples: training records"
    )
    if not bagged and float(getattr(estimator, "subsample", 1.0)) < 1.0:
        kind = "n_node_samples: training records of the stage's subsample"

    def apply(X: Any) -> np.ndarray:
        out = np.asarray(estimator.apply(X))
        return out.reshape(out.shape[0], -1)

    offsets = flat_offsets(sizes)
    return TreeLeaves(
        family=type(estimator).__name__,
        n_trees=len(trees),
        node_offset=offsets,
        counts=counts,
        class_counts=class_counts,
        tree_size=counts[offsets],
        inclusion=inclusion,
        count_kind=kind,
        exact=True,
        _apply=apply,
    )
