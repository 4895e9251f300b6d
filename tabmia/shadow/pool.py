"""Find candidate records among the rows of a shadow pool, by content.

A candidate that duplicates a pool record (same features and label) is that record:
it was IN for the shadows that trained on the copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia._records import record_hashes

__all__ = ["PoolIndex", "record_keys"]


def record_keys(X: Any, y_idx: np.ndarray) -> np.ndarray:
    """A 64-bit hash per labelled record, equal for equal (features, label) pairs."""
    return record_hashes(X, np.asarray(y_idx, dtype=np.int64))


class PoolIndex:
    """Find candidate records among the rows of a shadow pool.

    Identical records (same features and label) in the pool are one record: its
    effective membership mask is the OR of its copies' masks (a shadow trained on one
    copy has seen the record), and every copy carries that mask.
    """

    def __init__(self, X: Any, y_idx: np.ndarray, in_masks: np.ndarray) -> None:
        keys = record_keys(X, y_idx)
        codes, uniques = pd.factorize(keys)
        self.n_duplicates = int(keys.size - uniques.size)
        if self.n_duplicates:
            agg = np.zeros((in_masks.shape[0], uniques.size), dtype=bool)
            for k in range(in_masks.shape[0]):  # a loop over models
                agg[k] = np.bincount(codes, weights=in_masks[k], minlength=uniques.size) > 0
            in_masks = agg[:, codes]
        self.in_masks = in_masks
        # first pool row of each distinct record
        first = np.full(uniques.size, -1, dtype=np.int64)
        first[codes[::-1]] = np.arange(keys.size)[::-1]
        self._index = pd.Index(uniques)
        self._first = first

    def lookup(self, X: Any, y_idx: np.ndarray) -> np.ndarray:
        """Pool row of each record, -1 where the record is not in the pool."""
        return self.positions(record_keys(X, y_idx))

    def positions(self, keys: np.ndarray) -> np.ndarray:
        """Pool row of each record given by its :func:`record_keys`, -1 where none."""
        pos = self._index.get_indexer(keys)
        return np.where(pos >= 0, self._first[np.maximum(pos, 0)], -1)
