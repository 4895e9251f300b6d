"""The quantile attack's feature encoding: records (and their label) as CatBoost input.

Only :mod:`tabmia.attacks.quantile` imports this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from tabmia._array import as_float_matrix, is_categorical_dtype

__all__ = ["LABEL_COLUMN", "regressor_input"]

#: Column name of the label when it is a regressor input.
LABEL_COLUMN = "__tabmia_label__"


def regressor_input(
    X: Any, y: np.ndarray, *, n_classes: int, with_label: bool, fitted_layout: tuple | None = None
) -> tuple[Any, list[int], tuple]:
    """The regressor's input: ``X`` (and the label), in a form CatBoost takes.

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame
        Records.
    y : ndarray of int
        Labels as class indices.
    n_classes : int
        Classes of the target: a binary label is one numeric column, a multi-class
        label one categorical column (a one-hot block for sparse input).
    with_label : bool
        Whether the label is an input.
    fitted_layout : tuple, default=None
        The layout returned when fitting; when given, ``X`` must have it (a frame's
        columns may come reordered or with extra columns).

    Returns
    -------
    data : ndarray, sparse matrix or DataFrame
    cat_idx : list of int
        Positions of the categorical columns of ``data``.
    layout : tuple
        What ``X`` looked like: ``("sparse", n_columns)``, ``("numpy", n_columns)`` or
        ``("frame", columns, categorical columns)``.

    Raises
    ------
    ValueError
        If ``X`` is not 2-D or does not have ``fitted_layout``.
    TypeError
        If an array holds non-numeric values.
    """
    if sp.issparse(X):
        Xs = sp.csr_matrix(X, dtype=np.float64)
        layout: tuple = ("sparse", Xs.shape[1])
        _check_layout(layout, fitted_layout)
        if with_label:
            if n_classes == 2:
                lab = sp.csr_matrix(y.astype(np.float64)[:, None])
            else:
                lab = sp.csr_matrix(
                    (np.ones(y.size), (np.arange(y.size), y)), shape=(y.size, n_classes)
                )
            Xs = sp.hstack([Xs, lab], format="csr")
        return Xs, [], layout
    if isinstance(X, pd.DataFrame):
        frame = X.copy(deep=False)  # columns are replaced, never written into
        frame.columns = [str(c) for c in frame.columns]
        if (
            fitted_layout is not None
            and fitted_layout[0] == "frame"
            and set(frame.columns) >= set(fitted_layout[1])
        ):
            frame = frame[list(fitted_layout[1])]  # same columns, maybe reordered / extra
        cat_cols = [c for c in frame.columns if is_categorical_dtype(frame[c].dtype)]
        for c in frame.columns:
            if c in cat_cols:
                frame[c] = _as_text(frame[c])
            elif pd.api.types.is_bool_dtype(frame[c].dtype):
                frame[c] = frame[c].astype(np.float64)
        layout = ("frame", tuple(frame.columns), tuple(cat_cols))
    else:
        arr = as_float_matrix(
            X, hint="pass a pandas DataFrame whose categorical columns have category / string dtype"
        ).astype(np.float64)
        layout = ("numpy", arr.shape[1])
        if not with_label or n_classes == 2:
            _check_layout(layout, fitted_layout)
            data = np.column_stack([arr, y.astype(np.float64)]) if with_label else arr
            return data, [], layout
        frame = pd.DataFrame(arr, columns=[f"f{j}" for j in range(arr.shape[1])])
        cat_cols = []
    _check_layout(layout, fitted_layout)
    if with_label:
        if n_classes == 2:
            frame[LABEL_COLUMN] = y.astype(np.float64)
        else:
            frame[LABEL_COLUMN] = y.astype(np.int64)
            cat_cols = [*cat_cols, LABEL_COLUMN]
    cat_idx = [frame.columns.get_loc(c) for c in cat_cols]
    return frame, cat_idx, layout


def _as_text(values: pd.Series) -> pd.Series:
    """A categorical column as CatBoost's text categories, missing values as ``"__nan__"``.

    Category and string columns convert without a Python object per record (ten million
    candidates made 30 million of them); the text is that of ``str(value)`` either way.
    """
    missing = values.isna()
    names = (
        [str(c) for c in values.cat.categories]
        if isinstance(values.dtype, pd.CategoricalDtype)
        else []
    )
    if names and len(set(names)) == len(names):  # 1 and "1" would merge: by value then
        text = values.cat.rename_categories(names).astype(str)
    elif pd.api.types.is_string_dtype(values.dtype) and values.dtype != object:
        text = values
    else:
        text = values.astype(object).astype(str)
    return text.where(~missing, "__nan__").astype(str) if missing.any() else text.astype(str)


def _check_layout(layout: tuple, fitted_layout: tuple | None) -> None:
    if fitted_layout is not None and layout != fitted_layout:
        raise ValueError(
            "X does not have the columns / types the attack was fitted on: "
            f"expected {fitted_layout[:2]}, got {layout[:2]}"
        )
