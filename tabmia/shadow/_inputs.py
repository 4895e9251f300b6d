"""Records as the float32 matrices and tensors the torch models take."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["as_float32", "to_tensor"]


def as_float32(X: Any, name: str = "X") -> np.ndarray:
    """``X`` (numpy, sparse or numeric DataFrame) as a C-contiguous float32 matrix."""
    if isinstance(X, pd.DataFrame):
        bad = [
            str(c)
            for c, dt in X.dtypes.items()
            if not (pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt))
        ]
        if bad:
            raise ValueError(
                f"{name} has non-numeric columns {bad[:10]}; TorchMLPClassifier takes numeric "
                "features only. Encode them first, e.g. make_pipeline(make_column_transformer("
                "(OneHotEncoder(), categorical_columns), remainder='passthrough'), "
                "TorchMLPClassifier())"
            )
        arr = X.to_numpy(dtype=np.float32, na_value=np.nan)
    elif sp.issparse(X):
        arr = X.toarray().astype(np.float32, copy=False)
    else:
        try:
            arr = np.asarray(X, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric: {exc}") from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_records, n_features), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} has no records")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return np.ascontiguousarray(arr)


def to_tensor(arr: np.ndarray, device: Any) -> Any:
    """``torch.from_numpy`` that copies read-only arrays (joblib memmaps) first."""
    import torch

    if not arr.flags.writeable:
        arr = arr.copy()
    return torch.from_numpy(arr).to(device)

