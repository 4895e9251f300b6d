"""The verdict's sentence on persons: how record scores became person scores, where each
person was calibrated (bands, merged bands, persons beyond every public one), and what
the promise covers as delivered (:func:`person_rule_line`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["FEW_PERSONS", "person_rule_line"]

#: Fewer persons than this on the member or the public side make the audit say so: a
#: rate over a handful of persons is a handful of yes / no answers, and a band
#: calibrated on them promises its FPR only on average over draws of so few.
FEW_PERSONS = 5


def _first(metrics: pd.DataFrame, column: str) -> Any:
    return metrics[column].iloc[0] if column in metrics and len(metrics) else None


def _single(noun: str) -> str:
    return noun[:-1] if noun.endswith("s") else noun


def _bands_clause(metrics: pd.DataFrame, noun: str) -> str:
    """Where the persons were calibrated: bands alone, and those merged (per attack where
    attacks differ)."""
    if "bands" not in metrics:
        return ""
    described: dict[str, list[str]] = {}
    for _, row in metrics.drop_duplicates("attack").iterrows():
        bands = ", ".join(str(row["bands"]).split("; "))
        merged = [m.split(" = ") for m in str(row.get("merged_bands") or "").split("; ") if m]
        if merged:
            what = "; ".join(
                f"{label} merges {' and '.join(parts.split(' + '))}" for label, parts in merged
            )
            text = (
                f"bands {bands}; {what}, too few public {noun} to calibrate each alone: in a "
                f"merged band the promised FPR holds on average over its {noun}, not for "
                "each number of records within it"
            )
        else:
            text = f"bands {bands}, each calibrated alone"
        described.setdefault(text, []).append(str(row["attack"]))
    if len(described) == 1:
        return next(iter(described))
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in described.items())


def _beyond_clause(metrics: pd.DataFrame, noun: str) -> str:
    if "n_persons_beyond" not in metrics:
        return ""
    beyond = pd.to_numeric(metrics["n_persons_beyond"]).fillna(0)
    if not (beyond > 0).any():
        return ""
    row = metrics.loc[beyond.idxmax()]
    most = int(row["max_public_records"])
    n = int(row["n_persons_beyond"])
    who = f"{n} {noun}" if n != 1 else f"1 {_single(noun)}"
    return (
        f" {who} of the audit {'have' if n != 1 else 'has'} more records than any public "
        f"{_single(noun)} (up to {most}): calibrated with {noun} of up to {most} records, "
        f"which cannot say how a non-member with as many records would score, so the "
        f"promise does not cover {'them' if n != 1 else 'that ' + _single(noun)}."
    )


def _few_clause(result: Any, metrics: pd.DataFrame, noun: str) -> str:
    scores = result.scores
    first = scores
    if "repeat" in scores and len(scores):
        first = scores[scores["repeat"] == scores["repeat"].iloc[0]]
    if len(first):
        first = first[first["attack"] == first["attack"].iloc[0]]
    n_members = int(first["member"].astype(bool).sum())
    n_public = _first(metrics, "n_persons_public")
    few = []
    if n_members < FEW_PERSONS:
        few.append(f"{n_members} member {noun if n_members != 1 else _single(noun)}")
    if n_public is not None and int(n_public) < FEW_PERSONS:
        few.append(f"{int(n_public)} public {noun if int(n_public) != 1 else _single(noun)}")
    if not few:
        return ""
    return (
        f" The audit holds only {' and '.join(few)}, fewer than {FEW_PERSONS}: its person-"
        f"level rates are a few yes / no answers, not rates over a population of {noun}."
    )


def person_rule_line(result: Any, noun: str) -> str:
    """How record scores became person scores, where each person was calibrated and what
    the promise covers.

    Parameters
    ----------
    result : ExperimentResult
        A person-level result (:func:`tabmia.persons.person_result`).
    noun : str
        What the persons are called ("patients").

    Returns
    -------
    str
        One verdict line.
    """
    metrics = result.metrics
    rule = str(_first(metrics, "person_rule") or "max")
    n_public = _first(metrics, "n_persons_public")
    sizes = pd.to_numeric(result.scores["n_records"])
    public = f" on {int(n_public)} public {noun}" if n_public is not None else ""
    bands = _bands_clause(metrics, noun)
    where = (
        f"its threshold was calibrated{public}, each {_single(noun)} against those of its "
        f"band of record counts ({bands})"
        if bands
        else f"its threshold was calibrated{public} of the same band of record counts"
    )
    return (
        f"The unit is the person: each of an attack's {noun} is scored by combining the "
        f"scores of its records ({rule} rule; {noun} have 1 to {int(np.max(sizes))} records, "
        f"{float(np.mean(sizes)):.2f} on average), and {where}; the promised FPR holds for a "
        f"fresh non-member {_single(noun)} in each band as calibrated."
        + _beyond_clause(metrics, noun)
        + _few_clause(result, metrics, noun)
    )
