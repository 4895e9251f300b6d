"""Record identity: a 64-bit hash per row, equal for equal rows, computed vectorised.

Used wherever tabmia must recognise the same record in two places: precomputed
probabilities looked up by content, and checks that the data given as non-members
(the population, the candidates) does not repeat records of the members or of the
attacker's public data.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["row_hashes", "record_hashes", "hashes_reused", "fold_hashes", "shared_mask"]

#: The record hashes computed inside :func:`hashes_reused` blocks of this thread (or task):
#: ``(X, y, hashes)``, X held so that its ``id`` cannot be reused while the block runs.
_REUSED: ContextVar[list[tuple[Any, np.ndarray, np.ndarray]] | None] = ContextVar(
    "tabmia_record_hashes", default=None
)


@contextmanager
def hashes_reused() -> Iterator[None]:
    """Within the block, :func:`record_hashes` of the same ``X`` object with equal labels
    is computed once (an attack's scoring and its duplicate check hash the same
    candidates; at 10^6 records each pass costs a few tenths of a second).

    Context-local, so concurrent calls in other threads keep their own.
    """
    token = _REUSED.set([])
    try:
        yield
    finally:
        _REUSED.reset(token)


def _frame(X: Any) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X.reset_index(drop=True)
    arr = np.asarray(X)
    if arr.ndim == 1:
        arr = arr[:, None]
    return pd.DataFrame(arr, copy=False)  # only read: a copy would cost a pass over X


def _is_number(dtype: Any) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _common_dtypes(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The same number read as int in one file and as float in the other is the same
    value: cast such column pairs to float64 on both sides."""
    cast = {
        c: np.float64
        for c in a.columns
        if a[c].dtype != b[c].dtype and _is_number(a[c].dtype) and _is_number(b[c].dtype)
    }
    return (a.astype(cast), b.astype(cast)) if cast else (a, b)


def _sparse_hashes(X: Any) -> np.ndarray:
    """Order-free combination of the hashes of each row's (column, value) entries."""
    csr = sp.csr_matrix(X, copy=True)  # canonicalised below: never alter the caller's matrix
    csr.sum_duplicates()
    csr.eliminate_zeros()
    entry = pd.util.hash_array(csr.indices.astype(np.int64)) * np.uint64(0x9E3779B97F4A7C15)
    entry ^= pd.util.hash_array(csr.data.astype(np.float64))
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    out = np.zeros(csr.shape[0], dtype=np.uint64)
    np.add.at(out, rows, entry)  # uint64 sums wrap: a hash of the entry multiset
    return out


def row_hashes(X: Any) -> np.ndarray:
    """A ``uint64`` hash per row of ``X`` (array, sparse matrix or DataFrame).

    Equal rows get equal hashes. DataFrames are hashed in their own column order and
    dtypes: :func:`shared_mask` aligns two tables first.
    """
    if sp.issparse(X):
        return _sparse_hashes(X)
    frame = _frame(X)
    if frame.shape[1] == 0:
        # rows without columns are all the same empty record (and pandas 3.0 cannot
        # hash a frame without columns: "Length of values (0) does not match ...")
        return np.zeros(frame.shape[0], dtype=np.uint64)
    return pd.util.hash_pandas_object(frame, index=False).to_numpy()


def record_hashes(X: Any, y: Any) -> np.ndarray:
    """A ``uint64`` hash per labelled record ``(X[i], y[i])``.

    Inside :func:`hashes_reused`, a repeated call on the same ``X`` object with equal
    labels (same dtype and values) returns a copy of the first call's hashes.
    """
    y = np.asarray(y)
    seen = _REUSED.get()
    if seen is not None:
        for X_seen, y_seen, hashes in seen:
            if X_seen is X and y_seen.dtype == y.dtype and np.array_equal(y_seen, y):
                return hashes.copy()
    frame = pd.DataFrame({"x": row_hashes(X), "y": y})
    hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    if seen is not None:
        seen.append((X, y.copy(), hashes.copy()))
    return hashes


def fold_hashes(X: Any, y: Any) -> np.ndarray:
    """A well-mixed ``uint64`` per labelled record, for ``h % K`` fold assignment.

    Equal records get equal hashes, and the low bits are mixed (splitmix64 finaliser)
    so that ``h % K`` splits records evenly. ``y`` is taken as integer label indices.
    """
    h = row_hashes(X) ^ pd.util.hash_array(np.asarray(y, dtype=np.int64))
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def shared_mask(X: Any, y: Any, X_other: Any, y_other: Any) -> np.ndarray:
    """Which records of ``(X, y)`` also appear in ``(X_other, y_other)``.

    DataFrames are compared on the columns of ``X`` (``X_other`` is reordered to them),
    numbers by value whatever their int / float dtype, labels likewise.

    Returns
    -------
    ndarray of bool of shape (n,)
    """
    if isinstance(X, pd.DataFrame) and isinstance(X_other, pd.DataFrame):
        if not set(X.columns) <= set(X_other.columns):
            return np.zeros(len(X), dtype=bool)
        X, X_other = _common_dtypes(X, X_other[list(X.columns)])
    y, y_other = np.asarray(y), np.asarray(y_other)
    if y.dtype != y_other.dtype and _is_number(y.dtype) and _is_number(y_other.dtype):
        y, y_other = y.astype(np.float64), y_other.astype(np.float64)
    return np.isin(record_hashes(X, y), record_hashes(X_other, y_other))
