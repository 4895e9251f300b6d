"""The privacy gate's ``named@<q>=<limit>`` check on a :class:`NamedResult`."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from tabmia.report.limits import LimitCheck, RiskLimit

__all__ = ["check_named"]


def check_named(named: Any, limit: RiskLimit) -> LimitCheck:
    """A ``named@<q>`` limit on the audit's headline named list (:attr:`NamedResult.headline`).

    A count limit (0, 1, 2, ...) reads the number named with its interval over resampled
    candidates; a share limit (in (0, 1)) the share of members named with its 95%
    Clopper-Pearson interval. Above: the lower bound is over the limit; below: the upper
    bound is at or under it; else unresolved, as is a list withheld (the verdict cannot
    tell), unresolvable (too few public records for ``q``) or missing.

    Raises
    ------
    ValueError
        When ``named`` was computed at another ``q`` than the limit's.
    """
    q = float(limit.fpr or 0.0)
    if named is None or not math.isclose(named.q, q):
        given = "no named list" if named is None else f"a named list at q = {named.q:g}"
        raise ValueError(f"{limit}: the limit needs the named list at q = {q:g}; got {given}")
    row = named.headline_row()
    share = 0.0 < limit.limit < 1.0
    noun = named.unit_noun()
    # said in the noun already: GateResult.lines turns a bare "non-members" into persons
    wrong = f"non-member {noun}" if named.unit == "person" else "non-members"
    if named.withheld or row is None or row["status"] == "unresolvable":
        why = (
            named.withheld
            or (row or {}).get("reason")
            or "; ".join(f"{a}: {r}" for a, r in named.skipped.items())
            or "no attack gives a list"
        )
        return LimitCheck(
            limit,
            "unresolved",
            named.headline,
            math.nan,
            math.nan,
            math.nan,
            f"no named list to check ({why})",
            [],
        )
    if share:
        value = float(row["members_named"])
        low, high = float(row["members_named_low"]), float(row["members_named_high"])
        what = (
            f"{int(row['n_right'])} of {int(row['n_members'])} member {noun} named "
            f"({value:.3f} [{low:.3f}, {high:.3f}], 95% Clopper-Pearson)"
        )
    else:
        value = float(row["n_named"])
        low, high = float(row["n_named_low"]), float(row["n_named_high"])
        what = (
            f"{int(value)} {noun} named ({low:.0f}-{high:.0f} over resampled candidates; "
            f"{int(row['n_wrong'])} of them {wrong})"
        )
    outcome = "above" if low > limit.limit else "below" if high <= limit.limit else "unresolved"
    which = row["attack"] + ("" if row["attack"] != "combined" else f" ({row['method']})")
    verb = {"above": "over", "below": "at or under", "unresolved": "around"}[outcome]
    reason = f"{which} at FDR {q:g}: {what}, {verb} {limit.limit:g}"
    per_list = named.summary()
    rows = [
        {
            "attack": r["attack"],
            "method": r["method"],
            "n_named": int(r["n_named"]),
            "n_wrong": int(r["n_wrong"]),
            "members_named": r["members_named"],
            "status": r["status"],
        }
        for r in per_list.to_dict("records")
        if not pd.isna(r["n_named"])
    ]
    return LimitCheck(limit, outcome, named.headline, value, low, high, reason, rows)
