"""Slice labels: columns (or an array) turned into named slices, numeric columns cut
into quantile bands, rare combinations merged into ``"other"``; the ``slice:<name>``
columns of a scores frame."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmia._columns import SLICE_PREFIX, slice_columns

__all__ = ["SLICE_PREFIX", "OTHER", "SliceLabels", "slice_labels", "slice_columns"]

#: Label of the records whose combination has too few of them.
OTHER = "other"


@dataclass(frozen=True)
class SliceLabels:
    """Slice labels of records, and how they were made.

    Attributes
    ----------
    labels : Series
        One label per record (an ordered categorical: bands in order, then ``"other"``).
    name : str
        The slicing's name: the column, or the columns joined by ``"×"``.
    columns : tuple of str
        The columns the labels come from.
    bands : dict
        Numeric column -> the cut points of its quantile bands (right-closed: a value
        equal to a cut point falls in the lower band).
    merged : dict
        Label -> number of records, for the labels merged into ``"other"`` (fewer than
        ``min_support`` records).
    notes : tuple of str
        What was cut and how, and what was merged, in sentences.
    """

    labels: pd.Series
    name: str
    columns: tuple[str, ...]
    bands: dict[str, list[float]] = field(default_factory=dict)
    merged: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def column(self) -> str:
        """The column name the labels take in a scores frame (``"slice:<name>"``)."""
        return SLICE_PREFIX + self.name

    def counts(self) -> pd.Series:
        """Records per slice, in slice order."""
        return self.labels.value_counts(sort=False)


def _number(value: float, digits: int) -> str:
    return f"{value:.{digits}g}"


def _band_names(name: str, values: np.ndarray, band: np.ndarray, k: int) -> list[str]:
    """``"<name> lo-hi"`` per band, from the smallest and largest value it holds."""
    lo = np.full(k, np.nan)
    hi = np.full(k, np.nan)
    present = np.unique(band)
    order = np.argsort(band, kind="stable")
    starts = np.searchsorted(band[order], present, side="left")
    ends = np.searchsorted(band[order], present, side="right")
    sorted_vals = values[order]
    for b, s, e in zip(present, starts, ends):  # one pass per band
        lo[b], hi[b] = sorted_vals[s:e].min(), sorted_vals[s:e].max()
    integer = bool(np.all(np.mod(values, 1) == 0))
    for digits in range(3, 13):
        names = []
        for a, b in zip(lo, hi):
            if integer:
                text = f"{int(a)}" if a == b else f"{int(a)}-{int(b)}"
            else:
                text = (
                    _number(a, digits) if a == b else f"{_number(a, digits)}-{_number(b, digits)}"
                )
            names.append(f"{name} {text}")
        if len(set(names)) == len(names) or integer:
            return names
    return names  # pragma: no cover - distinct floats separate within 12 digits


def _one_column(
    values: pd.Series, name: str, bands: int, max_categories: int, intersect: bool
) -> tuple[pd.Categorical, list[float] | None, str | None]:
    """Labels of one column: categories as they are, numeric columns cut into bands."""
    n_missing = int(values.isna().sum())
    if n_missing:
        raise ValueError(
            f"slice column {name!r} has {n_missing} missing values (NaN) among {len(values)} "
            "records: fill them (e.g. with 'missing') or drop those records before slicing"
        )
    uniq = pd.unique(values)
    if uniq.size < 2:
        shown = uniq[0] if uniq.size else None
        raise ValueError(
            f"slice column {name!r} has one value ({shown!r}) for every record: it cannot "
            "split them into slices"
        )
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    if numeric and uniq.size > max_categories:
        v = values.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(v)):
            raise ValueError(f"slice column {name!r} has infinite values: cut it yourself")
        q = np.quantile(v, np.linspace(0.0, 1.0, bands + 1))
        cuts = np.unique(q[1:-1])
        cuts = cuts[(cuts >= v.min()) & (cuts < v.max())]
        band = np.searchsorted(cuts, v, side="left")  # right-closed bands
        names = _band_names(name, v, band, cuts.size + 1)
        kept = np.unique(band)
        cat = pd.Categorical.from_codes(band, categories=names)
        cat = cat.remove_unused_categories() if kept.size < len(names) else cat
        fewer = (
            f" (fewer than the {bands} asked: tied quantiles)"
            if cat.categories.size < bands
            else ""
        )
        note = (
            f"{name}: numeric with {uniq.size} distinct values, cut into "
            f"{cat.categories.size} quantile bands{fewer} at "
            + ", ".join(_number(c, 6) for c in cuts)
            + " (a value equal to a cut point falls in the lower band; each band is named by "
            "the smallest and largest value it holds)"
        )
        return cat, [float(c) for c in cuts], note
    try:
        order = sorted(uniq)
    except TypeError:
        order = sorted(uniq, key=str)
    text = [f"{name}={u}" if intersect else str(u) for u in order]
    if len(set(text)) < len(text):
        raise ValueError(f"slice column {name!r} has values that read the same as text")
    mapping = dict(zip(order, text))
    cat = pd.Categorical(values.map(mapping), categories=text)
    return cat, None, None


def slice_labels(
    frame_or_array: Any,
    columns: str | Sequence[str] | None = None,
    *,
    bands: int = 4,
    min_support: int = 50,
    max_categories: int = 10,
) -> SliceLabels:
    """Turn one or more columns (or an array of labels) into slice labels.

    Parameters
    ----------
    frame_or_array : DataFrame, Series or array-like
        The records' attributes. A 1-D array or a Series is one column.
    columns : str or list of str, default=None
        Which columns of a DataFrame (default: all of them). Several columns are
        intersected: one slice per combination that holds at least ``min_support``
        records, labelled ``"age 25-37 & sex=Female"``.
    bands : int, default=4
        A numeric column with more than ``max_categories`` distinct values is cut into
        this many quantile bands (fewer where quantiles tie), named ``"age 25-37"`` by
        the smallest and largest value each holds.
    min_support : int, default=50
        Labels (combinations, or one column's values) held by fewer records are merged
        into ``"other"``; which were merged is stated.
    max_categories : int, default=10
        A numeric column with at most this many distinct values is taken as categories.

    Returns
    -------
    SliceLabels
        The labels (an ordered categorical Series aligned with the records), the cut
        points, what was merged, and ``notes`` saying so.

    Raises
    ------
    ValueError
        One line naming the column: missing from the frame, constant, with NaN labels;
        or fewer than two slices left.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": range(20, 100), "sex": ["F", "M"] * 40})
    >>> s = slice_labels(df, ["age", "sex"], bands=2, min_support=10)
    >>> s.name
    'age×sex'
    >>> for label, n in s.counts().items():
    ...     print(label, n)
    age 20-59 & sex=F 20
    age 20-59 & sex=M 20
    age 60-99 & sex=F 20
    age 60-99 & sex=M 20
    """
    if bands < 2:
        raise ValueError(f"bands must be >= 2, got {bands}")
    if min_support < 1:
        raise ValueError(f"min_support must be >= 1, got {min_support}")
    cols, index, series = _slice_inputs(frame_or_array, columns)
    intersect = len(cols) > 1
    parts, cut, notes = _label_columns(cols, series, bands, max_categories, intersect)
    name = "×".join(map(str, cols))
    labels, order = _combine(parts, intersect)
    labels, merged, kept = _merge_rare(labels, order, name, min_support, notes)
    if intersect:
        notes.append(f"{name}: intersection of {', '.join(map(str, cols))}, {len(kept)} slices")
    cat = pd.Categorical(labels, categories=kept, ordered=True)
    return SliceLabels(
        labels=pd.Series(cat, index=index, name=name),
        name=name,
        columns=tuple(map(str, cols)),
        bands=cut,
        merged=merged,
        notes=tuple(notes),
    )


def _slice_inputs(
    frame_or_array: Any, columns: str | Sequence[str] | None
) -> tuple[list[Any], pd.Index, list[pd.Series]]:
    """The slice columns' names, the records' index and one Series per column.

    Raises
    ------
    ValueError
        A column missing from the frame, none given, or an array that is not 1-D.
    """
    if isinstance(frame_or_array, pd.DataFrame):
        frame = frame_or_array
        cols = (
            list(frame.columns)
            if columns is None
            else ([columns] if isinstance(columns, str) else list(columns))
        )
        if not cols:
            raise ValueError("no slice column given")
        for c in cols:
            if c not in frame.columns:
                shown = ", ".join(map(str, list(frame.columns)[:20]))
                raise ValueError(f"slice column {c!r} is not in the data (its columns: {shown})")
        return cols, frame.index, [frame[c] for c in cols]
    if isinstance(frame_or_array, pd.Series):
        s = frame_or_array
        name = str(s.name) if s.name is not None else "slice"
    else:
        arr = np.asarray(frame_or_array)
        if arr.ndim != 1:
            raise ValueError(
                f"slice labels must be one column (1-D), got shape {arr.shape}; pass a "
                "DataFrame to slice by several columns"
            )
        s = pd.Series(arr)
        name = "slice"
    if isinstance(columns, str):  # the name of the one column
        name = columns
    elif columns is not None:
        raise ValueError("columns must be one name for a 1-D array or a Series")
    return [name], s.index, [s.rename(name)]


def _label_columns(
    cols: list[Any], series: list[pd.Series], bands: int, max_categories: int, intersect: bool
) -> tuple[list[pd.Categorical], dict[str, list[float]], list[str]]:
    """Each column's labels (:func:`_one_column`), the cut points of the numeric ones and
    the notes saying how they were cut."""
    parts, cut, notes = [], {}, []
    for c, s in zip(cols, series):
        cat, edges, note = _one_column(
            s.reset_index(drop=True), str(c), bands, max_categories, intersect
        )
        parts.append(cat)
        if edges is not None:
            cut[str(c)] = edges
        if note:
            notes.append(note)
    return parts, cut, notes


def _combine(parts: list[pd.Categorical], intersect: bool) -> tuple[np.ndarray, list[str]]:
    """One label per record (the columns' labels joined by ``" & "``) and the labels'
    order: lexicographic by the columns' own orders."""
    if intersect:
        codes = np.column_stack([p.codes for p in parts])
        combo, inverse = np.unique(codes, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        text = [" & ".join(str(p.categories[k]) for p, k in zip(parts, row)) for row in combo]
        # lexicographic by the columns' own orders (np.unique sorts codes)
        return np.asarray(text, dtype=object)[inverse], text
    return (
        np.asarray(parts[0].astype(str), dtype=object),
        [str(c) for c in parts[0].categories],
    )


def _merge_rare(
    labels: np.ndarray, order: list[str], name: str, min_support: int, notes: list[str]
) -> tuple[np.ndarray, dict[str, int], list[str]]:
    """Labels held by fewer than ``min_support`` records merged into ``"other"`` (one
    rare label keeps its own name); the merged labels' counts and the slices kept.

    Appends what it merged to ``notes``.

    Raises
    ------
    ValueError
        Fewer than two slices are left.
    """
    counts = pd.Series(labels).value_counts()
    small = [lab for lab in order if 0 < counts.get(lab, 0) < min_support]
    merged = {lab: int(counts[lab]) for lab in small}
    # a merged bucket named like an existing label ("Other" in COMPAS's race) says so
    other = OTHER if not any(str(lab).lower() == OTHER for lab in order) else f"{OTHER} (merged)"
    if len(small) == 1:  # one rare label is no merge: it keeps its own name, small
        notes.append(
            f"{name}: {small[0]!r} holds {merged[small[0]]} records, fewer than {min_support}: "
            "kept as a slice of its own (its rates have wide intervals)"
        )
        small, merged = [], {}
    if small:
        labels = np.where(pd.Series(labels).isin(small).to_numpy(), other, labels)
        n_other = int(sum(merged.values()))
        notes.append(
            f"{name}: {len(small)} labels with fewer than {min_support} records merged into "
            f"'{other}' ({n_other} records): "
            + "; ".join(f"{k!r} ({v})" for k, v in merged.items())
            + (
                f"; '{other}' itself holds fewer than {min_support}"
                if n_other < min_support
                else ""
            )
        )
    kept = [lab for lab in order if lab not in merged and counts.get(lab, 0) > 0]
    if small:
        kept.append(other)
    if len(kept) < 2:
        raise ValueError(
            f"slicing by {name}: fewer than two slices hold at least {min_support} records "
            "(lower min_support or slice by fewer columns)"
        )
    return labels, merged, kept
