"""``tabmia audit --slice-by``: which groups leak more (:mod:`tabmia.slices`).

``--slice-by sex,race,age*sex`` names slicings: each column on its own, ``*`` joins
columns into their intersection (combinations below the minimum support merged into
"other", said). A built-in data set that has known sensitive columns is sliced by them
by default (:func:`tabmia.datasets.default_slicings`); ``--slice-by none`` turns that off. Slice columns stay
model inputs where they are (unlike a person column): they only label the records.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np
import pandas as pd

from tabmia._columns import slice_columns
from tabmia.cli._inputs import UsageError
from tabmia.datasets import DEFAULT_SLICINGS, default_slicings
from tabmia.exceptions import RunNote
from tabmia.slices import slice_labels, slice_report

__all__ = ["DEFAULT_SLICES", "slice_specs", "slice_frame_of", "slices_report"]

#: The built-in data sets' default slicings, kept by the data set registry.
DEFAULT_SLICES = DEFAULT_SLICINGS


def slice_specs(args: argparse.Namespace, dataset: str | None = None) -> list[tuple[str, ...]]:
    """The slicings asked for: ``--slice-by``, else the data set's defaults, else none."""
    text = getattr(args, "slice_by", None)
    if text is None:
        return [(c,) for c in default_slicings(dataset)]
    if text.strip().lower() == "none":
        return []
    specs = [tuple(c.strip() for c in part.split("*")) for part in text.split(",")]
    if any(not all(spec) for spec in specs):
        raise UsageError(f"--slice-by {text!r}: expected COL[,COL...] (COL*COL: intersection)")
    return specs


def slice_frame_of(
    X: Any,
    specs: list[tuple[str, ...]],
    what: str,
    *,
    fill_missing: bool = False,
    label: tuple[str, Any] | None = None,
) -> pd.DataFrame | None:
    """Slice labels of ``X``'s records, one column per slicing (None without slicings);
    numeric columns banded and rare values merged, each said as a ``tabmia: note:``.

    With ``fill_missing`` (a built-in data set's default slices, not the user's), a
    category column's missing values are the label "missing", said; otherwise they are
    an error naming the column. ``label`` (its name, its values): the records' label,
    which ``X`` does not hold but a slicing may name (slices by class: the attacker knows
    each candidate's label too), said as a note."""
    if not specs:
        return None
    if not isinstance(X, pd.DataFrame):
        raise UsageError(f"--slice-by needs named columns; {what} has none")
    named = {c for spec in specs for c in spec}
    if label is not None and label[0] in named and label[0] not in X.columns:
        X = X.assign(**{label[0]: np.asarray(label[1])})
        warnings.warn(
            f"slices: {label[0]!r} is the label: its slices are the records' classes",
            RunNote,
            stacklevel=2,
        )
    labels = {}
    for spec in specs:
        missing = [c for c in spec if c not in X.columns]
        if missing:
            raise UsageError(f"--slice-by {'*'.join(spec)}: {what} has no column {missing[0]!r}")
        columns = X[list(spec)]
        if fill_missing:
            gaps = {
                c: int(n)
                for c, n in columns.isna().sum().items()
                if n and not pd.api.types.is_numeric_dtype(columns[c])
            }
            if gaps:
                columns = columns.astype(dict.fromkeys(gaps, object))
                columns = columns.fillna(dict.fromkeys(gaps, "missing"))
                warnings.warn(
                    "slices: "
                    + "; ".join(
                        f"{c}: {n} records without a value labelled 'missing'"
                        for c, n in gaps.items()
                    ),
                    RunNote,
                    stacklevel=2,
                )
        try:
            made = slice_labels(columns, list(spec))
        except ValueError as exc:
            raise UsageError(f"--slice-by {'*'.join(spec)}: {exc}") from exc
        labels[made.name] = made.labels.to_numpy()
        for note in made.notes:
            warnings.warn(f"slices: {note}", RunNote, stacklevel=2)
    return pd.DataFrame(labels)


def slices_report(args: argparse.Namespace, result: Any) -> Any:
    """The slice report of ``result`` (its ``slice:`` columns), or None without them."""
    if not slice_columns(result.scores):
        return None
    try:
        return slice_report(result, random_state=args.random_state)
    except ValueError as exc:
        raise UsageError(f"--slice-by: {str(exc).splitlines()[0]}") from exc
