"""The labels of a membership game: each record's class label and its membership.

Kept apart from :mod:`tabmia.game` (which builds games from records) so that
:mod:`tabmia.metrics` can read them without importing the target adapter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia._array import ravel_column

__all__ = ["GAME_FIELDS", "game_labels", "split_game_labels"]


#: Field names of a membership game's ``y``.
GAME_FIELDS: tuple[str, str] = ("label", "member")


def _labels_1d(y: Any, name: str) -> np.ndarray:
    arr = ravel_column(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    return arr


def game_labels(labels: Any, member: Any) -> np.ndarray:
    """Structured ``y`` of a membership game from class labels and membership.

    Parameters
    ----------
    labels : array-like of shape (n,)
        Class label of each record.
    member : array-like of bool of shape (n,)
        Whether the record trained the (shadow) model.

    Returns
    -------
    ndarray of shape (n,)
        Structured array with fields ``label`` and ``member``.
    """
    labels = _labels_1d(labels, "labels")
    member = _labels_1d(member, "member")
    if member.dtype != bool:
        raise ValueError(f"member must be boolean, got dtype {member.dtype}")
    if labels.shape != member.shape:
        raise ValueError(f"labels has {labels.shape[0]} entries but member has {member.shape[0]}")
    out = np.empty(labels.shape[0], dtype=[(GAME_FIELDS[0], labels.dtype), (GAME_FIELDS[1], bool)])
    out[GAME_FIELDS[0]] = labels
    out[GAME_FIELDS[1]] = member
    return out


def split_game_labels(y: Any) -> tuple[Any, np.ndarray | None]:
    """``(labels, member)`` of a membership game's ``y``; ``(y, None)`` for plain labels."""
    if isinstance(y, np.ndarray) and y.dtype.names == GAME_FIELDS:
        return y[GAME_FIELDS[0]], np.asarray(y[GAME_FIELDS[1]], dtype=bool)
    return y, None
