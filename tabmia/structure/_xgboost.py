"""Leaves and cover of XGBoost models.

XGBoost stores no count: each node's ``cover`` is the sum of the training records'
hessians there. For squared error that is a count; for log-loss it is
``sum p (1 - p)`` at the round's predictions, so a leaf of 40 confidently predicted
records can cover less than one of 4 uncertain ones. :func:`read_xgboost` estimates a
count per record and tree as cover divided by the record's own hessian at that round
(exact for the first round, where every record has the same prediction), and marks the
result ``exact=False``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia.structure._tree_leaves import TreeLeaves, flat_offsets

__all__ = ["read_xgboost"]

_HESSIAN_OBJECTIVES = ("binary:logistic", "multi:softprob", "multi:softmax", "reg:squarederror")


def _objective(estimator: Any, booster: Any) -> str:
    import json

    config = json.loads(booster.save_config())
    return str(config["learner"]["objective"]["name"])


def _hessians(margins: np.ndarray, objective: str) -> np.ndarray:
    """Each record's hessian at each round's margin (shape of ``margins``)."""
    if objective == "reg:squarederror":
        return np.ones_like(margins)
    if objective == "binary:logistic":
        p = 1.0 / (1.0 + np.exp(-margins))
        return np.maximum(p * (1.0 - p), 1e-16)
    # softmax over the class axis (1): XGBoost's multi-class hessian is 2 p (1 - p)
    z = margins - margins.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    return np.maximum(2.0 * p * (1.0 - p), 1e-16)


def read_xgboost(estimator: Any) -> TreeLeaves:
    """Read a fitted ``XGBClassifier`` / ``XGBRegressor``.

    ``counts`` is each node's ``cover`` (a hessian sum); :meth:`TreeLeaves.leaf_counts`
    divides it by the record's own hessian at that round.
    """
    booster = estimator.get_booster()
    objective = _objective(estimator, booster)
    if objective not in _HESSIAN_OBJECTIVES:
        raise ValueError(
            f"XGBoost objective {objective!r}: tabmia turns cover into counts for "
            f"{', '.join(_HESSIAN_OBJECTIVES)} only"
        )
    frame = booster.trees_to_dataframe()
    n_trees = int(frame["Tree"].max()) + 1
    sizes = frame.groupby("Tree")["Node"].max().reindex(range(n_trees)).to_numpy() + 1
    offsets = flat_offsets(sizes)
    flat = offsets[frame["Tree"].to_numpy()] + frame["Node"].to_numpy()
    cover = np.zeros(int(sizes.sum()))
    cover[flat] = frame["Cover"].to_numpy()
    value = np.zeros(int(sizes.sum()))
    is_leaf = (frame["Feature"] == "Leaf").to_numpy()
    value[flat[is_leaf]] = frame["Gain"].to_numpy()[is_leaf]
    n_groups = int(getattr(estimator, "n_classes_", 2)) if objective.startswith("multi") else 1
    per_round = max(n_trees // max(booster.num_boosted_rounds(), 1), 1)
    parallel = max(per_round // n_groups, 1)
    tree_class = (np.arange(n_trees) // parallel) % n_groups
    tree_round = np.arange(n_trees) // per_round
    subsample = float(estimator.get_params().get("subsample") or 1.0)

    def apply(X: Any) -> np.ndarray:
        return np.asarray(booster.predict(_matrix(X), pred_leaf=True)).reshape(len(X), -1)

    def record_counts(X: Any, nodes: np.ndarray) -> np.ndarray:
        leaf_values = value[nodes]
        final = np.asarray(booster.predict(_matrix(X), output_margin=True)).reshape(len(X), -1)
        n_rounds = int(tree_round.max()) + 1
        hess = np.empty_like(leaf_values)
        # each class's margin before each round: the base margin plus earlier rounds
        by_round = np.zeros((len(X), n_groups, n_rounds))
        for k in range(n_groups):
            mine = tree_class == k
            np.add.at(by_round[:, k, :].T, tree_round[mine], leaf_values[:, mine].T)
        before = np.cumsum(by_round, axis=2) - by_round
        base = final - by_round.sum(axis=2)
        margins = before + base[:, :, None]
        h = _hessians(margins, objective)  # (n, groups, rounds)
        hess[:] = h[:, tree_class, tree_round]
        return cover[nodes] / hess

    return TreeLeaves(
        family=type(estimator).__name__,
        n_trees=n_trees,
        node_offset=offsets,
        counts=cover,
        class_counts=None,
        tree_size=cover[offsets],
        inclusion=np.full(n_trees, subsample),
        count_kind=(
            "cover: a sum of hessians, NOT a count; per record estimated as cover / the "
            "record's hessian at that round"
            if objective != "reg:squarederror"
            else "cover: training records (squared error's hessian is 1)"
        ),
        exact=objective == "reg:squarederror",
        _apply=apply,
        _record_counts=record_counts,
    )


def _matrix(X: Any) -> Any:
    import xgboost

    # a model trained on pandas categories reads them only with this flag
    return xgboost.DMatrix(X, enable_categorical=True)
