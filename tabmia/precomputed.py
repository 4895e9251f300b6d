"""Outputs of a model computed elsewhere, looked up by record content.

A model trained and served elsewhere is audited from what it answered on the audited
records: :class:`PrecomputedProbabilities` (its probabilities) or
:class:`PrecomputedLabels` (its decisions only: a label-only target). Wrapped by
:class:`tabmia.target.TargetModel` like any model; a record that was not given (a
perturbed copy) raises a clear error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia._array import ravel_column
from tabmia._records import row_hashes
from tabmia._rows import _n_columns, n_rows

__all__ = ["PrecomputedProbabilities", "PrecomputedLabels"]


class _PrecomputedOutputs:
    """Outputs of a model computed elsewhere, one row per record, found by content."""

    _what = "outputs"

    def __init__(self, X: Any, values: np.ndarray) -> None:
        if n_rows(X) != values.shape[0]:
            raise ValueError(
                f"X has {n_rows(X)} records but {self._what} has {values.shape[0]} rows"
            )
        index = pd.Index(row_hashes(X))
        if not index.is_unique:
            # duplicated records: the first row's outputs are used for all copies
            first = ~index.duplicated(keep="first")
            index, values = index[first], values[first]
        self._index = index
        self._values = values
        self.n_features_in_ = _n_columns(X)

    def lookup(self, X: Any) -> np.ndarray:
        """Stored outputs of the records ``X``."""
        pos = self._index.get_indexer(row_hashes(X))
        if (pos < 0).any():
            raise ValueError(
                f"{int((pos < 0).sum())} of {pos.size} records were not among the "
                f"records whose {self._what} were given ({type(self).__name__} cannot "
                "score new or perturbed records)"
            )
        return self._values[pos]


class PrecomputedProbabilities(_PrecomputedOutputs):
    """Probabilities computed elsewhere, looked up by record content.

    Use it when the model cannot be run here (trained and served elsewhere): give
    the records and the probabilities the model gave them. ``predict_proba`` on any
    subset of those records returns their stored rows; a record that was not given
    raises a clear error (so attacks that perturb records, like Merlin, cannot run).
    One-hot rows of a model that gives only its label: wrap with
    ``TargetModel(..., labels_only=True)``.

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame of shape (n, d)
        Records that were scored.
    proba : array-like of shape (n, n_classes)
        The model's probabilities for those records.
    """

    _what = "probabilities"

    def __init__(self, X: Any, proba: Any) -> None:
        proba = np.asarray(proba, dtype=np.float64)
        if proba.ndim != 2:
            raise ValueError(f"proba must be 2-D (n, n_classes), got shape {proba.shape}")
        super().__init__(X, proba)

    @property
    def proba(self) -> np.ndarray:
        """The stored probability rows (one per distinct record)."""
        return self._values


class PrecomputedLabels(_PrecomputedOutputs):
    """Predicted labels computed elsewhere, looked up by record content: a label-only target.

    Use it for a model reachable only through its decision, whose labels on the
    audited records were collected elsewhere. Only attacks that work from labels and
    query no new records run on it (the gap attack): a perturbed record was not
    given, and raises a clear error.

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame of shape (n, d)
        Records that were scored.
    labels : array-like of shape (n,)
        The model's predicted label of each record.
    classes : array-like, default=None
        Every label the model can predict (and the true labels of the audited records
        take); by default the labels seen in ``labels``. A true label outside it cannot
        be scored.

    Attributes
    ----------
    classes_ : ndarray
        Sorted union of ``classes`` and the predicted labels.
    """

    _what = "labels"

    def __init__(self, X: Any, labels: Any, classes: Any = None) -> None:
        labels = ravel_column(np.asarray(labels))
        if labels.ndim != 1:
            raise ValueError(f"labels must be 1-D, one per record, got shape {labels.shape}")
        if labels.dtype.kind in "fO" and pd.isna(labels).any():
            raise ValueError(f"labels has {int(pd.isna(labels).sum())} missing (NaN) values")
        seen = pd.unique(pd.Series(labels))
        if classes is not None:
            seen = pd.unique(
                pd.Series(np.r_[np.asarray(classes, dtype=object), np.asarray(seen, dtype=object)])
            )
        try:
            self.classes_ = np.sort(np.asarray(list(seen)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"labels and classes do not sort together: {exc}") from exc
        super().__init__(X, labels)
