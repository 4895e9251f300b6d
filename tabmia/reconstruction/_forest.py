"""What a fitted scikit-learn tree or forest stores about its training set.

A classification tree keeps, for every node, the split (feature, threshold), the number
of training records that reached it (``n_node_samples``) and their class distribution
(``value``, fractions of ``weighted_n_node_samples`` since scikit-learn 1.4, counts
before). :func:`read_forest` turns that into integer counts per node and class, and
refuses what the reconstruction cannot use, each with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ForestStructure", "TreeNodes", "read_forest", "split_model", "unsupported_reason"]

#: The scikit-learn classes whose stored counts the reconstruction reads.
SINGLE_TREES = ("DecisionTreeClassifier", "ExtraTreeClassifier")
FORESTS = ("RandomForestClassifier", "ExtraTreesClassifier")


@dataclass(frozen=True)
class TreeNodes:
    """One tree's nodes: children (-1 at a leaf), split feature and threshold, and per
    node the training records that reached it (``n_records``, distinct records) and their
    class counts (``class_counts``, bootstrap multiplicities included)."""

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    n_records: np.ndarray
    class_counts: np.ndarray

    @property
    def leaves(self) -> np.ndarray:
        """Indices of the leaves."""
        return np.flatnonzero(self.left < 0)


@dataclass(frozen=True)
class ForestStructure:
    """The trees of a classifier, what they were trained on and how."""

    trees: list[TreeNodes]
    classes: np.ndarray
    n_features: int
    n_records: int
    bootstrap: bool
    kind: str


def split_model(model: Any) -> tuple[Any, Any]:
    """``(preprocessing, tree model)``: a Pipeline's steps before its last (None when
    there are none or all pass through) and its last step; a bare model as it is."""
    from sklearn.pipeline import Pipeline

    if not isinstance(model, Pipeline):
        return None, model
    before = [step for _, step in model.steps[:-1] if step not in (None, "passthrough")]
    return (model[:-1] if before else None), model.steps[-1][1]


def unsupported_reason(model: Any) -> str | None:
    """Why :func:`~tabmia.reconstruction.reconstruct_training_set` cannot read ``model``
    (None when it can: a fitted scikit-learn tree or random / extra-trees forest
    classifier, bare or last in a Pipeline)."""
    _, last = split_model(model)
    name = type(last).__name__
    if name not in SINGLE_TREES + FORESTS:
        return (
            f"{name} is not a scikit-learn decision tree or random / extra-trees forest "
            f"classifier (supported: {', '.join(SINGLE_TREES + FORESTS)}, bare or as the "
            "last step of a Pipeline)"
        )
    fitted = hasattr(last, "tree_") if name in SINGLE_TREES else hasattr(last, "estimators_")
    if not fitted:
        return f"the {name} is not fitted"
    if getattr(last, "n_outputs_", 1) != 1:
        return f"the {name} predicts {last.n_outputs_} outputs; only single-output models"
    return None


def _class_counts(tree: Any, n_classes: int) -> np.ndarray:
    """Integer class counts per node, or ValueError when the file's counts are weighted."""
    value = np.asarray(tree.value)[:, 0, :n_classes]
    weight = np.asarray(tree.weighted_n_node_samples, dtype=float)
    sums = value.sum(axis=1)
    # scikit-learn >= 1.4 stores fractions; older releases store weighted counts
    counts = value * weight[:, None] if np.allclose(sums, 1.0) else value
    rounded = np.rint(counts)
    if not np.allclose(counts, rounded, atol=1e-6):
        raise ValueError(
            "the tree's per-node class counts are not whole numbers: it was trained with "
            "sample_weight or class_weight, so the file stores weights, not record counts"
        )
    return rounded.astype(np.int64)


def read_forest(model: Any) -> ForestStructure:
    """The trees of ``model`` (a tree or forest classifier, or the last step of a Pipeline).

    Raises
    ------
    ValueError
        For a model the reconstruction cannot read (:func:`unsupported_reason`), or one
        whose stored counts are weights rather than record counts.
    """
    reason = unsupported_reason(model)
    if reason is not None:
        raise ValueError(f"cannot reconstruct the training set: {reason}")
    _, last = split_model(model)
    name = type(last).__name__
    single = name in SINGLE_TREES
    estimators = [last] if single else list(last.estimators_)
    classes = np.asarray(last.classes_)
    trees = []
    for estimator in estimators:
        tree = estimator.tree_
        trees.append(
            TreeNodes(
                left=np.asarray(tree.children_left),
                right=np.asarray(tree.children_right),
                feature=np.asarray(tree.feature),
                threshold=np.asarray(tree.threshold, dtype=float),
                n_records=np.asarray(tree.n_node_samples, dtype=np.int64),
                class_counts=_class_counts(tree, len(classes)),
            )
        )
    bootstrap = bool(getattr(last, "bootstrap", False)) and not single
    draws = int(trees[0].class_counts[0].sum())
    # scikit-learn keeps the training-set size of a bagged forest as _n_samples; without it
    # (an older release) the draws per tree are the best guess (max_samples=None draws n)
    n_records = int(getattr(last, "_n_samples", draws)) if bootstrap else draws
    if not bootstrap and any(int(t.n_records[0]) != n_records for t in trees):
        raise ValueError("the trees' roots disagree on the number of training records")
    return ForestStructure(
        trees=trees,
        classes=classes,
        n_features=int(last.n_features_in_),
        n_records=n_records,
        bootstrap=bootstrap,
        kind=name,
    )
