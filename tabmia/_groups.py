"""Person ids (scikit-learn's ``groups``): checked once, as integer codes, wherever records
are split or models trained.

A person id is any hashable value aligned with the records (a patient number, a customer
key, a string); NaN is refused, since a record without a person cannot be kept on one
side of a split. Inside tabmia a person is its code: ``0 .. n_persons - 1`` in order of
first appearance (:func:`person_codes`), so that records that are all distinct persons
get ``0, 1, ..., n - 1`` and every grouped draw equals the ungrouped one there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

__all__ = ["check_groups", "joint_codes", "person_codes"]


def check_groups(groups: Any, n_records: int, *, name: str = "groups") -> np.ndarray:
    """``groups`` as a 1-D array of person ids, one per record.

    Parameters
    ----------
    groups : array-like of shape (n_records,)
        Person id of each record.
    n_records : int
        How many records the ids must cover.
    name : str, default="groups"
        What the caller calls the ids, in messages.

    Returns
    -------
    ndarray of shape (n_records,)

    Raises
    ------
    ValueError
        For another length, more than one column, or missing (NaN) ids.
    """
    values = groups.to_numpy() if isinstance(groups, (pd.Series, pd.Index)) else groups
    arr = np.asarray(values)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one person id per record, got shape {arr.shape}")
    if arr.shape[0] != n_records:
        raise ValueError(f"{name} has {arr.shape[0]} person ids for {n_records} records")
    missing = pd.isna(arr)
    if missing.any():
        raise ValueError(
            f"{name} has {int(missing.sum())} missing (NaN) person ids: every record needs "
            "its person, or the split cannot keep a person's records together"
        )
    return arr


def person_codes(groups: Any) -> np.ndarray:
    """Integer code per record, ``0 .. n_persons - 1`` in order of first appearance."""
    codes, _ = pd.factorize(np.asarray(groups))
    return codes.astype(np.intp, copy=False)


def joint_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Codes of the finest grouping that keeps both ``a``'s and ``b``'s groups whole.

    Two records share a code when a chain of shared ``a`` codes or shared ``b`` codes
    links them (e.g. ``a`` the person, ``b`` identical content): the connected
    components of the records' links, numbered in order of first appearance, so that
    ``joint_codes(a, arange(n))`` equals :func:`person_codes` of ``a``.
    """
    a, b = np.asarray(a, dtype=np.intp), np.asarray(b, dtype=np.intp)
    n = a.size
    if n == 0:
        return np.empty(0, dtype=np.intp)
    n_a = int(a.max()) + 1
    # records link to the nodes of their a code and their b code (a bipartite graph)
    rows = np.r_[np.arange(n), np.arange(n)]
    cols = np.r_[n + a, n + n_a + b]
    size = n + n_a + int(b.max()) + 1
    graph = sp.coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(size, size))
    _, labels = connected_components(graph, directed=False)
    return person_codes(labels[:n])
