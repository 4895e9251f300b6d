"""Records in any of the containers tabmia takes (numpy array, sparse matrix, DataFrame,
sequence): how many, a subset, a stack, keeping the container's type.

Every layer needs these; :mod:`tabmia.target` exports them under their old names.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["n_rows", "take_rows", "concat_rows", "plain"]


def n_rows(X: Any) -> int:
    """Number of records in ``X`` (array, sparse matrix, DataFrame or sequence)."""
    if hasattr(X, "shape") and len(getattr(X, "shape", ())) >= 1:
        return int(X.shape[0])
    return len(X)


def take_rows(X: Any, index: np.ndarray | slice) -> Any:
    """Rows ``index`` of ``X``, keeping its type (DataFrame stays a DataFrame)."""
    if isinstance(X, (pd.DataFrame, pd.Series)):
        return X.iloc[index]
    if sp.issparse(X):
        return X[index]
    if isinstance(X, np.ndarray):
        return X[index]
    return np.asarray(X)[index]


def concat_rows(parts: list[Any]) -> Any:
    """Stack record blocks of one type (numpy, sparse or DataFrame) vertically."""
    first = parts[0]
    if isinstance(first, pd.DataFrame):
        return pd.concat(parts, axis=0, ignore_index=True)
    if sp.issparse(first):
        return sp.vstack(parts, format="csr")
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


def plain(values: Any) -> list[Any]:
    """``values`` as a list of plain Python scalars (for messages: ``'a'``, not
    ``np.str_('a')``)."""
    flat = np.asarray(values, dtype=object).ravel()
    return [v.item() if isinstance(v, np.generic) else v for v in flat]


def _n_columns(X: Any) -> int | None:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[1])
    return None
