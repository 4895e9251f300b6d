"""Small array helpers shared across tabmia (one copy each)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import log_softmax as _scipy_log_softmax
from scipy.special import softmax as _scipy_softmax

__all__ = ["softmax", "log_softmax", "ravel_column", "is_categorical_dtype", "as_float_matrix"]


def softmax(logits: Any) -> np.ndarray:
    """Row-wise softmax of ``(n, n_classes)`` logits, as float64."""
    return _scipy_softmax(np.asarray(logits, dtype=np.float64), axis=1)


def log_softmax(logits: Any) -> np.ndarray:
    """Row-wise log-softmax of ``(n, n_classes)`` logits, as float64."""
    return _scipy_log_softmax(np.asarray(logits, dtype=np.float64), axis=1)


def ravel_column(y: Any) -> np.ndarray:
    """``y`` as an array, a single column ``(n, 1)`` flattened to ``(n,)``.

    Any other shape is returned as is, for the caller to reject with its own message.
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        return arr.ravel()
    return arr


def is_categorical_dtype(dtype: Any) -> bool:
    """Whether a column of ``dtype`` holds categories: category, object or string."""
    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
    )


def as_float_matrix(X: Any, *, hint: str) -> np.ndarray:
    """``X`` as a 2-D float64 array (float arrays of any width are kept as they are).

    Raises
    ------
    ValueError
        If ``X`` is not 2-D.
    TypeError
        If it holds non-numeric values; ``hint`` says what to pass instead.
    """
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-D (n_records, n_features), got shape {arr.shape}")
    if arr.dtype.kind == "f":
        return arr
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"X holds non-numeric values; {hint}") from exc
