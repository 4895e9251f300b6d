"""The record columns of a game's frames and their names, written once.

After the split, a record's person and slices stop being parameters and travel as
columns of ``ExperimentResult.scores`` and ``.calibration`` (docs: records, persons and
slices): ``record`` (the row of the data set), ``person`` (its person id) and one
``slice:<name>`` column per slicing. Every reader and writer names them through this
module, so a name is spelled in one place. The FPR an attack promised travels the same
way, as the metrics' ``fpr_target`` column; :func:`promised_fpr` is its one lookup.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = [
    "RECORD",
    "PERSON",
    "SLICE_PREFIX",
    "FPR_TARGET",
    "slice_column",
    "slicing_name",
    "slice_columns",
    "promised_fprs",
    "promised_fpr",
]

#: The record's row in the data set it was drawn from.
RECORD = "record"
#: The record's person id (scikit-learn's ``groups``).
PERSON = "person"
#: Prefix of the slice columns: ``slice:<name>`` holds each record's slice of ``<name>``.
SLICE_PREFIX = "slice:"
#: The metrics' column of the FPR each attack's threshold promises (NaN: none).
FPR_TARGET = "fpr_target"


def slice_column(name: Any) -> str:
    """The column of slicing ``name`` (``"sex"`` or ``"slice:sex"`` -> ``"slice:sex"``)."""
    text = str(name)
    return text if text.startswith(SLICE_PREFIX) else SLICE_PREFIX + text


def slicing_name(column: Any) -> str:
    """The slicing a column holds (``"slice:sex"`` -> ``"sex"``; other text unchanged)."""
    text = str(column)
    return text[len(SLICE_PREFIX) :] if text.startswith(SLICE_PREFIX) else text


def slice_columns(frame: pd.DataFrame) -> list[str]:
    """The ``slice:<name>`` columns of a scores or calibration frame, in its order."""
    return [str(c) for c in frame.columns if str(c).startswith(SLICE_PREFIX)]


def promised_fprs(metrics: pd.DataFrame) -> pd.Series:
    """The FPR each (repeat, attack) of ``metrics`` promises, by (repeat, attack).

    Raises
    ------
    ValueError
        When ``metrics`` has no ``fpr_target`` column (pass the FPR instead).
    """
    if FPR_TARGET not in metrics.columns:
        raise ValueError(f"the result's metrics have no {FPR_TARGET}: pass fpr=")
    frame = metrics if "repeat" in metrics.columns else metrics.assign(repeat=0)
    index = pd.MultiIndex.from_frame(frame[["repeat", "attack"]])
    return pd.Series(pd.to_numeric(frame[FPR_TARGET], errors="coerce").to_numpy(), index=index)


def promised_fpr(fpr: Any, repeat: Any, attack: Any) -> float:
    """The FPR attack ``attack`` promised in repeat ``repeat``; NaN where it promised none.

    Parameters
    ----------
    fpr : float, None, mapping or Series
        One FPR for all; or by attack, or by ``(repeat, attack)`` (a Series with a
        MultiIndex, such as :func:`promised_fprs`, or a mapping with tuple keys). An
        attack it does not name, None and NaN promise none.
    repeat, attack
        Which attack of which repeat.

    Returns
    -------
    float
        In (0, 1), or NaN.

    Raises
    ------
    ValueError
        When the FPR found is outside (0, 1).
    """
    if isinstance(fpr, (pd.Series, Mapping)):
        by_repeat = (
            isinstance(fpr.index, pd.MultiIndex)
            if isinstance(fpr, pd.Series)
            else any(isinstance(k, tuple) for k in fpr)
        )
        key = (repeat, attack) if by_repeat else attack
        value = fpr.get(key)
    else:
        value = fpr
    alpha = math.nan if value is None else float(value)
    if not math.isnan(alpha) and not 0.0 < alpha < 1.0:
        raise ValueError(f"fpr must be in (0, 1), got {alpha} for attack {attack!r}")
    return alpha
