"""Each record's leaf in each tree of a fitted tree model, and the count each leaf stores.

:func:`read_trees` reads a fitted model (bare, the last step of a scikit-learn
``Pipeline`` whose earlier steps transform the records, or a
:class:`~tabmia.target.TargetModel` around either) into a :class:`TreeLeaves`: one flat
array of every tree's nodes, with the training count the model file stores for each
node. The readers of the families live beside this module, one per library.

What "count" means depends on the file (:attr:`TreeLeaves.count_kind`):

- scikit-learn trees and forests store ``n_node_samples`` (distinct training records;
  in a bootstrap forest the distinct records drawn into that tree) and, per class, the
  weighted count (bootstrap draws in a bagged forest);
- ``GradientBoostingClassifier`` stores ``n_node_samples`` of each regression tree (the
  stage's subsample where ``subsample < 1``);
- ``HistGradientBoostingClassifier`` stores ``count`` in each node (the training
  records after its own validation split);
- LightGBM stores ``leaf_count`` (records in the iteration's bag);
- CatBoost stores leaf weights (sums of the learn records' weights: counts for
  unweighted data);
- XGBoost stores ``cover``, the sum of the training records' hessians in the node. For
  log-loss that is ``sum p (1 - p)``, **not a count**: :class:`TreeLeaves` gives an
  estimate (cover divided by the record's own hessian at that round) and marks it
  ``exact=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TreeLeaves", "read_trees", "is_tree_model", "NotATreeModelError"]


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

    def leaves(self, X: Any) -> np.ndarray:
        """Each record's leaf in each tree, as flat node indices.

        Returns
        -------
        ndarray of shape (n, n_trees), int64
        """
        Xt = X if self._prepare is None else self._prepare(X)
        local = np.asarray(self._apply(Xt), dtype=np.int64)
        if local.ndim == 1:
            local = local[:, None]
        return local + self.node_offset[None, :]

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


def is_tree_model(model: Any) -> bool:
    """Whether :func:`read_trees` can read ``model``."""
    try:
        _final_step(model)
    except NotATreeModelError:
        return False
    return True


def _final_step(model: Any) -> tuple[Any, Any, str]:
    """The tree estimator, the transform of the steps before it, and its reader's name."""
    from sklearn.pipeline import Pipeline

    from tabmia.target import TargetModel

    if isinstance(model, TargetModel):
        model = model.model
    prepare = None
    if isinstance(model, Pipeline):
        prepare = model[:-1].transform if len(model.steps) > 1 else None
        model = model.steps[-1][1]
    reader = _reader_name(model)
    if reader is None:
        raise NotATreeModelError(
            f"{type(model).__name__} is not a tree model whose leaves tabmia reads "
            "(scikit-learn trees, forests, extra-trees, gradient and histogram boosting, "
            "XGBoost, LightGBM, CatBoost; bare or as a Pipeline's last step)"
        )
    return model, prepare, reader


def _reader_name(model: Any) -> str | None:
    names = {c.__name__ for c in type(model).__mro__}
    module = type(model).__module__
    if names & {"BaseForest", "BaseDecisionTree"}:
        return "sklearn_forest" if "BaseForest" in names else "sklearn_tree"
    if "BaseHistGradientBoosting" in names:
        return "sklearn_hist"
    if "BaseGradientBoosting" in names:
        return "sklearn_gb"
    if module.startswith("xgboost"):
        return "xgboost"
    if module.startswith("lightgbm"):
        return "lightgbm"
    if module.startswith("catboost"):
        return "catboost"
    return None


def read_trees(model: Any) -> TreeLeaves:
    """Read a fitted tree model's leaves and stored counts.

    Parameters
    ----------
    model : estimator, Pipeline or TargetModel
        A fitted scikit-learn ``DecisionTreeClassifier``, ``RandomForestClassifier``,
        ``ExtraTreesClassifier``, ``GradientBoostingClassifier``,
        ``HistGradientBoostingClassifier``, ``XGBClassifier``, ``LGBMClassifier`` or
        ``CatBoostClassifier`` (regressors too), bare or as the last step of a
        ``Pipeline`` (records are sent through the steps before it).

    Returns
    -------
    TreeLeaves

    Raises
    ------
    NotATreeModelError
        For any other model.
    """
    from sklearn.utils.validation import check_is_fitted

    estimator, prepare, reader = _final_step(model)
    if reader.startswith("sklearn"):
        check_is_fitted(estimator)
    if reader in ("sklearn_forest", "sklearn_tree", "sklearn_gb"):
        from tabmia.structure._sklearn_trees import read_sklearn

        leaves = read_sklearn(estimator)
    elif reader == "sklearn_hist":
        from tabmia.structure._sklearn_hist import read_hist

        leaves = read_hist(estimator)
    elif reader == "xgboost":
        from tabmia.structure._xgboost import read_xgboost

        leaves = read_xgboost(estimator)
    elif reader == "lightgbm":
        from tabmia.structure._lightgbm import read_lightgbm

        leaves = read_lightgbm(estimator)
    else:
        from tabmia.structure._catboost import read_catboost

        leaves = read_catboost(estimator)
    leaves._prepare = prepare
    return leaves


def flat_offsets(sizes: list[int] | np.ndarray) -> np.ndarray:
    """Start of each tree's nodes in the flat node arrays."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
