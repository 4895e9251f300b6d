"""Helpers shared by the loaders: dtype fixes, target encoding, Bunch assembly, balancing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

__all__ = [
    "balanced_undersample",
    "encode_labels",
    "make_bunch",
    "shokri_bunch",
    "to_categorical",
]


def to_categorical(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Convert ``columns`` of ``df`` (in place) to pandas ``category`` dtype.

    String values are stripped of surrounding whitespace.  Numeric columns whose
    non-missing values are all integral become integer categories (``1`` rather
    than ``1.0``).

    Parameters
    ----------
    df : pandas.DataFrame
        Frame to modify.
    columns : sequence of str
        Columns to convert; each must exist.

    Returns
    -------
    pandas.DataFrame
        ``df`` itself.
    """
    for col in columns:
        s = df[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            continue
        if pd.api.types.is_numeric_dtype(s):
            vals = s.dropna().to_numpy()
            if vals.size and np.all(np.mod(vals, 1) == 0):
                s = s.astype("Int64")
        else:
            s = s.str.strip()
        df[col] = s.astype("category")
    return df


def encode_labels(
    y: pd.Series, classes: Sequence[Any] | None = None, *, name: str | None = None
) -> tuple[pd.Series, list[str]]:
    """Encode labels as integers ``0..k-1``.

    Parameters
    ----------
    y : pandas.Series
        Raw labels (no missing values).
    classes : sequence, optional
        Label order; position ``i`` is encoded as ``i``.  Defaults to the sorted
        unique values.  Values not in ``classes`` raise :class:`ValueError`.
    name : str, optional
        Name of the returned Series (defaults to ``y.name``).

    Returns
    -------
    codes : pandas.Series of int64
    target_names : list of str
        ``str`` of each class, in code order.
    """
    if classes is None:
        classes = sorted(pd.unique(y.dropna()).tolist())
    cat = pd.Categorical(y, categories=list(classes))
    if (cat.codes < 0).any():
        bad = sorted(set(pd.unique(y[cat.codes < 0]).tolist()), key=str)
        raise ValueError(f"unexpected label values {bad!r}; expected one of {list(classes)!r}")
    codes = pd.Series(cat.codes.astype(np.int64), index=y.index, name=name or y.name)
    return codes, [str(c) for c in classes]


def balanced_undersample(y: np.ndarray | pd.Series, random_state: int | None = 0) -> np.ndarray:
    """Indices of a class-balanced subsample obtained by undersampling larger classes.

    Every class keeps ``min(class counts)`` rows drawn without replacement with a
    seeded :class:`numpy.random.RandomState`; the returned positions are sorted,
    so the original row order is preserved.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels.
    random_state : int or None
        Seed.

    Returns
    -------
    numpy.ndarray of int
        Sorted row positions.
    """
    y = np.asarray(y)
    rng = np.random.RandomState(random_state)
    classes, counts = np.unique(y, return_counts=True)
    n_min = counts.min()
    keep = []
    for cls in classes:
        idx = np.flatnonzero(y == cls)
        keep.append(idx if idx.size == n_min else rng.choice(idx, size=n_min, replace=False))
    return np.sort(np.concatenate(keep))


def make_bunch(
    data: Any,
    target: Any,
    *,
    feature_names: Sequence[str],
    categorical_features: Sequence[str],
    target_names: Sequence[str],
    descr: str,
    source_path: Path | None,
    return_X_y: bool = False,
    **extra: Any,
) -> Bunch | tuple[Any, Any]:
    """Assemble the loader result.

    Parameters
    ----------
    data : pandas.DataFrame, numpy.ndarray or scipy.sparse matrix
        Features.
    target : pandas.Series or numpy.ndarray
        Labels.
    feature_names, categorical_features, target_names : sequence of str
        Metadata.
    descr : str
        Description (source, processing, exact or analogue).
    source_path : pathlib.Path or None
        File the data was read from.
    return_X_y : bool
        If true return ``(data, target)`` instead of a Bunch.
    **extra
        Further Bunch fields (e.g. ``split``, ``groups``).

    Returns
    -------
    sklearn.utils.Bunch or tuple
        Bunch with ``data``, ``target``, ``feature_names``,
        ``categorical_features``, ``target_names``, ``DESCR``, ``frame``
        (features plus target column for DataFrame data, else ``None``),
        ``source_path`` and the extra fields.
    """
    if return_X_y:
        return data, target
    frame = None
    if isinstance(data, pd.DataFrame):
        tname = getattr(target, "name", None) or "target"
        if tname in data.columns:
            tname = f"{tname}_target"
        frame = data.assign(**{tname: np.asarray(target)})
    return Bunch(
        data=data,
        target=target,
        feature_names=list(feature_names),
        categorical_features=list(categorical_features),
        target_names=list(target_names),
        DESCR=descr,
        frame=frame,
        source_path=source_path,
        **extra,
    )


def shokri_bunch(
    X: np.ndarray, y: np.ndarray, descr: str, source: Path, return_X_y: bool, **extra: Any
) -> Bunch | tuple[Any, Any]:
    """Bunch of a Shokri et al. (2017) 100-class set: anonymous features ``f0..``."""
    return make_bunch(
        X,
        y,
        feature_names=[f"f{i}" for i in range(X.shape[1])],
        categorical_features=[],
        target_names=[str(i) for i in range(100)],
        descr=descr,
        source_path=source,
        return_X_y=return_X_y,
        **extra,
    )


def shokri_labels(y: np.ndarray, source: Path) -> np.ndarray:
    """The labels of a Shokri et al. (2017) file as 0..99: the files number them 1..100
    (0..99 is kept as it is)."""
    if y.size and y.min() >= 1 and y.max() <= 100:
        y = y - 1
    elif y.size and (y.min() < 0 or y.max() > 99):
        raise ValueError(f"{source}: labels must be 1..100 (or 0..99), got {y.min()}..{y.max()}")
    return y.astype(np.int64)
