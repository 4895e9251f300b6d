"""``tabmia audit --reconstruct``: how much of the training set a tree model's file gives back.

Without the flag, a model whose file could give its training set back (a decision tree,
a forest without bootstrap) gets one ``tabmia: note:`` saying so and naming the flag.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np

from tabmia.cli._inputs import UsageError, first_line
from tabmia.exceptions import RunNote
from tabmia.reconstruction import (
    may_be_reconstructible,
    reconstruct_training_set,
    unsupported_reason,
)
from tabmia.reconstruction._forest import split_model

__all__ = ["reconstruction_step"]


def reconstruction_step(
    args: argparse.Namespace, model: Any, X_train: Any, y_train: Any, X_population: Any
) -> Any:
    """The :class:`~tabmia.reconstruction.ReconstructionResult` with ``--reconstruct``;
    else None, after the note where the model may give its training set back."""
    if not getattr(args, "reconstruct", False):
        if may_be_reconstructible(model):
            warnings.warn(
                f"{args.model_file} is a tree model trained without bootstrap: its file "
                "stores per-node training counts, so the training set may be reconstructible "
                "from the file alone; --reconstruct measures it",
                RunNote,
                stacklevel=1,
            )
        return None
    reason = unsupported_reason(model)
    if reason is not None:
        raise UsageError(f"--reconstruct: {reason}")
    if args.reconstruct_time <= 0:
        raise UsageError(f"--reconstruct-time must be positive, got {args.reconstruct_time:g}")
    try:
        return reconstruct_training_set(
            model,
            X_train,
            y_train,
            domains=_binary_columns(model, X_population),
            time_limit=args.reconstruct_time,
            random_state=args.random_state,
        )
    except (ImportError, ValueError) as exc:
        raise UsageError(f"--reconstruct: {first_line(exc)}") from exc


def _binary_columns(model: Any, X_population: Any) -> dict[int, list[int]]:
    """Columns (as the tree model sees them) whose --population values are all 0 or 1:
    the attacker's public records say these are binary."""
    before, _ = split_model(model)
    try:
        seen = before.transform(X_population) if before is not None else X_population
        values = np.asarray(seen.toarray() if hasattr(seen, "toarray") else seen, dtype=float)
    except (TypeError, ValueError):  # text columns: the reconstruction refuses them itself
        return {}
    binary = np.isin(values, (0.0, 1.0)).all(axis=0)
    return {int(f): [0, 1] for f in np.flatnonzero(binary)}
