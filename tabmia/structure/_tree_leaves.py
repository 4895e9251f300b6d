"""The container of a tree model's leaves and stored counts (:class:`TreeLeaves`), which
every family's reader fills (:mod:`tabmia.structure.leaves` dispatches to them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TreeLeaves", "NotATreeModelError", "flat_offsets"]


class NotATreeModelError(TypeError):
    """The model is not a tree model whose leaves tabmia can read."""


@dataclass
class TreeLeaves:
    """Leaves and stored counts of a fitted tree model.

    Node arrays are flat over all trees: tree ``t``'s node ``j`` is ``node_offset[t] + j``.

    Attributes
    ----------
    family : str
        The model class, e.g. ``"RandomForestClassifier"``.
    n_trees : int
    node_offset : ndarray of shape (n_trees,)
    counts : ndarray of shape (n_nodes,)
        The training count (or weight, or cover) the file stores per node.
    class_counts : ndarray of shape (n_nodes, n_classes) or None
        Per-class training counts where the file stores them (scikit-learn classifier
        trees and forests), in the model's class order; None otherwise.
    tree_size : ndarray of shape (n_trees,)
        What each tree's counts add up to over its leaves (its root's count).
    inclusion : ndarray of shape (n_trees,)
        Probability that a given training record is counted in a tree (1 without
        bagging; about 0.632 for a bootstrap forest).
    count_kind : str
        What the counts are, in words.
    exact : bool
        Whether the counts are counts of training records (False for XGBoost's cover).
    """

    family: str
    n_trees: int
    node_offset: np.ndarray
    counts: np.ndarray
    class_counts: np.ndarray | None
    tree_size: np.ndarray
    inclusion: np.ndarray
    count_kind: str
    exact: bool
    _apply: Any = field(repr=False)
    _prepare: Any = field(repr=False, default=None)
    _record_counts: Any = field(repr=False, default=None)

    def leaves(self, X: Any, dtype: Any = np.int64) -> np.ndarray:
        """Each record's leaf in each tree, as flat node indices.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n, d)
        dtype : integer dtype, default=np.int64
            Of the indices; int32 halves the memory of a large (n, n_trees) array
            where the flat nodes (times the classes, for class tables) fit in it.

        Returns
        -------
        ndarray of shape (n, n_trees)
        """
        Xt = X if self._prepare is None else self._prepare(X)
        local = np.asarray(self._apply(Xt))
        if local.ndim == 1:
            local = local[:, None]
        if local.dtype.kind not in "iu":  # a library that returns leaf ids as floats
            local = local.astype(np.int64)
        # one pass: LightGBM's int32 ids widen as the offsets are added, with no copy first
        return np.add(local, self.node_offset[None, :], dtype=dtype, casting="unsafe")

    def leaf_counts(self, X: Any, nodes: np.ndarray | None = None) -> np.ndarray:
        """The stored count of each record's leaf in each tree, shape (n, n_trees).

        For XGBoost, cover divided by the record's own hessian at that round: an
        estimate of the number of training records, not a stored count.
        """
        if nodes is None:
            nodes = self.leaves(X)
        if self._record_counts is not None:
            Xt = X if self._prepare is None else self._prepare(X)
            return np.asarray(self._record_counts(Xt, nodes), dtype=np.float64)
        return self.counts[nodes]

    def leaf_class_counts(self, nodes: np.ndarray, y_idx: np.ndarray) -> np.ndarray | None:
        """The stored count of class ``y_idx[i]`` in each leaf of ``nodes``; None where
        the file stores no per-class counts."""
        if self.class_counts is None:
            return None
        return self.class_counts[nodes, np.asarray(y_idx)[:, None]]


def flat_offsets(sizes: list[int] | np.ndarray) -> np.ndarray:
    """Start of each tree's nodes in the flat node arrays."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
