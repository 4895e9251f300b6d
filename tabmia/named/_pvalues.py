"""Each candidate's conformal p-value against the attacker's public null, per attack.

A record's p-value is :func:`tabmia.thresholds.conformal_pvalues` of its score against
the scores the attack's threshold was calibrated on (``ExperimentResult.calibration``:
the attacker's public records, never the audit's non-member candidates). A person's is
the person-level p-value of :func:`tabmia.persons.person_scores` (``scores["p_value"]``
of a person-level result), against the public persons of its record-count band.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia._columns import PERSON
from tabmia.thresholds import conformal_pvalues

__all__ = ["candidate_pvalues"]


def _promising(metrics: pd.DataFrame) -> set[tuple[Any, Any]]:
    """(repeat, attack) pairs whose threshold was chosen for an FPR (they have a null)."""
    frame = metrics if "repeat" in metrics else metrics.assign(repeat=0)
    if "fpr_target" not in frame:
        return set()
    kept = frame[pd.to_numeric(frame["fpr_target"], errors="coerce").notna()]
    return set(zip(kept["repeat"], kept["attack"], strict=True))


def candidate_pvalues(result: Any) -> tuple[pd.DataFrame, dict[str, str]]:
    """p-values of every candidate under each attack that promises an FPR.

    Parameters
    ----------
    result : ExperimentResult
        Record-level (``unit="record"``; needs ``calibration``) or person-level
        (``unit="person"``, from :func:`tabmia.persons.person_result`).

    Returns
    -------
    frame : DataFrame
        One row per (repeat, attack, candidate): ``repeat``, ``attack``, ``id`` (the
        record's row or the person's id), ``member``, ``p_value``, ``p_floor`` (the
        smallest p-value its public null allows, ``1 / (n + 1)``) and ``n_null`` (that
        ``n``: public records, or public persons of the person's band).
    skipped : dict of str -> str
        Attacks left out, with why.
    """
    unit = getattr(result, "unit", "record")
    scores = result.scores if "repeat" in result.scores else result.scores.assign(repeat=0)
    promising = _promising(result.metrics)
    skipped: dict[str, str] = {}
    for attack in pd.unique(scores["attack"]):
        if not any(a == attack for _, a in promising):
            skipped[str(attack)] = "its threshold promises no FPR (no public null to test against)"
    cal = getattr(result, "calibration", None)
    if cal is not None and "repeat" not in cal:
        cal = cal.assign(repeat=0)
    parts = []
    for (repeat, attack), part in scores.groupby(["repeat", "attack"], sort=False):
        if (repeat, attack) not in promising:
            continue
        if unit == "person":
            parts.append(_person_part(part, cal, repeat, attack))
            continue
        null = None if cal is None else cal[(cal["repeat"] == repeat) & (cal["attack"] == attack)]
        if null is None or null.empty:
            skipped[str(attack)] = "the audit kept no public calibration scores for it"
            continue
        n = len(null)
        ids = part["record"].to_numpy() if "record" in part else np.arange(len(part))
        parts.append(
            pd.DataFrame(
                {
                    "repeat": repeat,
                    "attack": attack,
                    "id": ids,
                    "member": part["member"].to_numpy(bool),
                    "p_value": conformal_pvalues(part["score"], null["score"]),
                    "p_floor": 1.0 / (n + 1.0),
                    "n_null": n,
                }
            )
        )
    columns = ["repeat", "attack", "id", "member", "p_value", "p_floor", "n_null"]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    return frame, skipped


def _person_part(part: pd.DataFrame, cal: pd.DataFrame | None, repeat: Any, attack: Any) -> Any:
    """A person-level result's p-values, with the size of each person's public band."""
    if "p_value" not in part or "band" not in part:
        raise ValueError(
            "a person-level result needs the p_value and band columns of "
            "tabmia.persons.person_result"
        )
    band = part["band"].astype(object)
    if cal is not None and "band" in cal:
        public = cal[(cal["repeat"] == repeat) & (cal["attack"] == attack)]
        n_band = public.groupby(public["band"].astype(object)).size()
        n = band.map(n_band).fillna(0).to_numpy(np.int64)
    else:  # the p-values themselves bound it: p >= 1 / (n + 1)
        n = np.full(len(part), int(round(1.0 / part["p_value"].min())) - 1)
    return pd.DataFrame(
        {
            "repeat": repeat,
            "attack": attack,
            "id": part[PERSON].to_numpy(),
            "member": part["member"].to_numpy(bool),
            "p_value": part["p_value"].to_numpy(float),
            "p_floor": 1.0 / (n + 1.0),
            "n_null": n,
        }
    )
