"""Canary records for a one-run audit of a tabular training recipe.

A canary is a record that is put into the training set or left out at random; the
audit then asks how well the trained model tells which. Canaries the model must
memorise to fit are easier to tell apart and give tighter bounds:

- ``"records"``: real records of the data set, unchanged (what an average record
  leaks);
- ``"flipped"``: real records with their label changed to another class drawn at
  random (a model fits such a record only by memorising it);
- ``"outliers"``: real records whose numeric features are moved outside the data
  set's range (each feature half to one and a half times its range beyond its
  minimum or maximum, the side at random) and whose label is a class drawn at
  random; categorical features keep their values, so every recipe can encode them.

Outliers gave the tightest bounds in ``benchmarks/results/dp_one_run.md`` (the only
kind that got a positive bound out of the DP models there); they are
:class:`tabmia.dp.OneRunAudit`'s default.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils import check_random_state

from tabmia.target import take_rows

__all__ = ["CANARY_KINDS", "make_canaries"]

#: The kinds of canaries :func:`make_canaries` builds.
CANARY_KINDS: tuple[str, ...] = ("records", "flipped", "outliers")


def _numeric_columns(X: Any) -> list[Any]:
    if isinstance(X, pd.DataFrame):
        return [
            c
            for c in X.columns
            if pd.api.types.is_numeric_dtype(X[c]) and not pd.api.types.is_bool_dtype(X[c])
        ]
    return list(range(X.shape[1]))


def _pushed_out(
    values: np.ndarray, reference: np.ndarray, rng: np.random.RandomState
) -> np.ndarray:
    """``values`` (n, d) moved beyond the range of ``reference`` (N, d), per column."""
    lo, hi = np.nanmin(reference, axis=0), np.nanmax(reference, axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    shape = values.shape
    distance = (0.5 + rng.uniform(size=shape)) * span
    upward = rng.uniform(size=shape) < 0.5
    return np.where(upward, hi + distance, lo - distance)


def make_canaries(
    X: Any,
    y: Any,
    index: Any,
    kind: str = "records",
    *,
    classes: Any = None,
    random_state: Any = None,
) -> tuple[Any, np.ndarray]:
    """The canary records ``index`` of ``(X, y)``, made into canaries of ``kind``.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n, d)
        The data set (the outliers' ranges are taken over all of it).
    y : array-like of shape (n,)
        Labels.
    index : array-like of int
        Rows that become canaries.
    kind : {"records", "flipped", "outliers"}, default="records"
        See the module docstring.
    classes : array-like, default=None
        Labels to draw new labels from (default: those in ``y``).
    random_state : int, RandomState instance or None, default=None
        Seeds the new labels and feature values.

    Returns
    -------
    X_canaries, y_canaries
        Records of the same type as ``X`` (a DataFrame keeps its columns) and labels.
    """
    if kind not in CANARY_KINDS:
        raise ValueError(f"canaries must be one of {CANARY_KINDS}, got {kind!r}")
    rng = check_random_state(random_state)
    y = np.asarray(y)
    index = np.asarray(index, dtype=np.intp)
    X_can, y_can = take_rows(X, index), y[index].copy()
    if kind == "records":
        return X_can, y_can
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if classes.size < 2:
        raise ValueError(f"{kind} canaries need at least 2 classes, got {classes.size}")
    if kind == "flipped":
        position = np.searchsorted(classes, y_can)
        position = np.where(classes[np.clip(position, 0, classes.size - 1)] == y_can, position, 0)
        offset = rng.randint(1, classes.size, size=y_can.size)
        return X_can, classes[(position + offset) % classes.size]
    if sp.issparse(X):
        raise ValueError("outlier canaries need dense records (an array or a DataFrame)")
    columns = _numeric_columns(X)
    if not columns:
        raise ValueError("outlier canaries need at least one numeric feature")
    y_new = classes[rng.randint(0, classes.size, size=y_can.size)]
    if isinstance(X, pd.DataFrame):
        reference = X[columns].to_numpy(dtype=np.float64, na_value=np.nan)
        moved = _pushed_out(np.empty((index.size, len(columns))), reference, rng)
        X_can = X_can.copy()
        for j, column in enumerate(columns):
            X_can[column] = moved[:, j]
        return X_can, y_new
    reference = np.asarray(X, dtype=np.float64)
    return _pushed_out(reference[index], reference, rng), y_new
