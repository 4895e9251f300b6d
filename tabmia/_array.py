"""Small array helpers shared across tabmia (one copy each)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import log_softmax as _scipy_log_softmax
from scipy.special import softmax as _scipy_softmax

__all__ = ["softmax", "log_softmax", "ravel_column", "is_categorical_dtype"]


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
