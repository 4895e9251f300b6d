"""Whom an attacker can name: members claimed at a promised false-discovery rate.

A membership audit counts how many records an attacker flags at a promised FPR; a data
holder deciding whom to notify asks *who*. :func:`named_members` answers with the list an
attacker holding only the public data could draw up, and shows it against the truth.

**The p-values.** For each attack whose threshold promises an FPR, each candidate's
conformal p-value (:func:`tabmia.thresholds.conformal_pvalues`) against the scores the
threshold was chosen from: the attacker's public records (a person's: against the public
persons of its record-count band, :func:`tabmia.persons.person_scores`). Never against the
audit's own non-member candidates, which no attacker holds. A non-member candidate's
p-value is uniform (conservative with ties), and the p-values against one calibration set
are positively dependent (Bates, Candès, Lei, Romano & Sesia, Ann. Statist. 2023).

**The list.** Benjamini-Hochberg at level ``q`` (:func:`scipy.stats.false_discovery_control`)
names the candidates whose p-values clear the step-up: in expectation at most a share
``pi0 * q <= q`` of the named are non-members, ``pi0`` the non-members' share of the
candidates (Jin & Candès 2023: conformal selection). Across attacks, each candidate's
smallest p-value times the number of attacks (Bonferroni: valid however the attacks
depend on each other), then BH (``"bonferroni"``) or Benjamini-Yekutieli (``"by"``,
valid under any dependence between candidates too). ``adaptive=True`` adds Storey's
estimate of ``pi0`` (``"storey"``), which names more where most candidates are members.

**Against the truth.** The audit knows who the members are: every list carries its
realised false-discovery proportion with a Clopper-Pearson interval, the share of members
it names, and its count resampled at the audit's own member share and at the PPV prior's.
A list is ``"unresolvable"`` where the public null is too small for ``q`` (its smallest
p-value ``1 / (n + 1)`` above ``q``), ``"empty"`` where nobody clears the step-up, and
``"withheld"`` where the audit's verdict cannot tell (:func:`tabmia.report.state.verdict_state`).

**For every k at once.** Each list also carries a bound that holds simultaneously for
every length (:func:`fdp_bounds`, Simes / Goeman-Solari): with 95 % confidence, among the
first ``k`` candidates by p-value at most ``m_k`` are non-members, for every ``k`` at once,
so an auditor may choose where to stop (or ``q``) after looking at the ranked list.

It is the attacker's list, not a list of everyone at risk: a member not named may still be
exposed to a stronger attack or a smaller ``q``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from tabmia.named._bounds import fdp_bounds
from tabmia.named._lists import METHODS, counts_at_share, intervals, one_list
from tabmia.named._pvalues import candidate_pvalues
from tabmia.named._result import COMBINED, NamedResult
from tabmia.named._select import bonferroni_min, fdr_select, storey_pi0

__all__ = [
    "COMBINED",
    "BOUND_ALPHA",
    "DEFAULT_Q",
    "METHODS",
    "NamedResult",
    "bonferroni_min",
    "candidate_pvalues",
    "fdp_bounds",
    "fdr_select",
    "named_members",
    "storey_pi0",
]

#: The default false-discovery rate (``tabmia audit --fdr``).
DEFAULT_Q = 0.1

#: The simultaneous bounds (:func:`fdp_bounds`) hold together with probability 1 - this.
BOUND_ALPHA = 0.05


def _ppv_prior(metrics: pd.DataFrame) -> float | None:
    """The largest PPV prior ``gamma`` (non-members per member) among the metrics."""
    found = [
        float(m.group(1))
        for c in metrics.columns
        if (m := re.fullmatch(r"ppv@gamma=([0-9.e+-]+)", str(c)))
    ]
    return max(found) if found else None


def named_members(
    result: Any,
    q: float = DEFAULT_Q,
    *,
    combine: Iterable[str] = ("bonferroni", "by"),
    adaptive: bool = False,
    prior: float | None = None,
    n_resamples: int = 200,
    state: Any = None,
    accept_warnings: Iterable[str] = (),
    random_state: int | None = 0,
    noun: str | None = None,
) -> NamedResult:
    """The members an attacker with the public data could name, at FDR ``q``.

    Parameters
    ----------
    result : ExperimentResult
        A record-level result with its ``calibration`` frame (every audit keeps it), or
        a person-level one (:func:`tabmia.persons.person_result`).
    q : float, default=0.1
        The false-discovery rate promised: in expectation at most this share of the
        named are non-members.
    combine : iterable of {"bonferroni", "by"}, default=("bonferroni", "by")
        The combinations over attacks (where more than one attack has a list).
    adaptive : bool, default=False
        Also the adaptive list (``"storey"``) of each attack.
    prior : float, default=None
        Non-members per member at which to resample the count (the PPV prior ``gamma``;
        member share ``1 / (1 + gamma)``); by default the largest ``ppv@gamma=`` of the
        metrics.
    n_resamples : int, default=200
        Resamples of the candidates behind each count's interval.
    state : VerdictState, default=None
        The audit's verdict state; computed from ``result`` (and ``accept_warnings``)
        when None. Where it cannot tell, every list is withheld.
    accept_warnings : iterable of str, default=()
        As :func:`tabmia.report.state.verdict_state`.
    random_state : int or None, default=0
        Seeds the resampling.
    noun : str, default=None
        The data set's own word for its persons in the sentences ("patients"); by
        default "persons" (a person-level result) or "records".

    Returns
    -------
    NamedResult

    Examples
    --------
    >>> from tabmia.named import named_members  # doctest: +SKIP
    >>> named = named_members(result, q=0.1)  # doctest: +SKIP
    >>> named.lines()  # doctest: +SKIP
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    combine = tuple(combine)
    unknown = [c for c in combine if c not in ("bonferroni", "by")]
    if unknown:
        raise ValueError(f"combine must name 'bonferroni' or 'by', got {unknown[0]!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    unit = getattr(result, "unit", "record")
    if state is None:
        from tabmia.report.state import verdict_state

        state = verdict_state(result, accept_warnings=accept_warnings)
    withheld = (state.cause or "the audit cannot tell") if state.state == "cannot tell" else ""
    pvals, skipped = candidate_pvalues(result)
    gamma = prior if prior is not None else _ppv_prior(result.metrics)
    share = None if gamma is None else 1.0 / (1.0 + gamma)
    rng = np.random.default_rng(random_state)
    # the bounds of all repeats hold together (their sum over repeats too): alpha split
    alpha = BOUND_ALPHA / max(1, pvals["repeat"].nunique() if len(pvals) else 1)
    rows, names = [], []
    for repeat, part in pvals.groupby("repeat", sort=False):
        lists = _lists_of_repeat(part, combine, adaptive)
        for attack, method, member, ids, p, floor, n_null, n_attacks in lists:
            row, selected = one_list(member, p, floor, q, method, n_null, n_attacks)
            bounds = _bounded(row, p, alpha, n_attacks)
            own = counts_at_share(
                member, p, q, method, member.mean(), n_resamples=n_resamples, rng=rng
            )
            row.update(repeat=repeat, attack=attack, **intervals(row))
            row.update(n_named_low=own["n_named_low"], n_named_high=own["n_named_high"])
            row["prior_share"] = share
            if share is not None:
                at = counts_at_share(member, p, q, method, share, n_resamples=n_resamples, rng=rng)
                row.update(
                    n_named_prior=at["n_named"],
                    n_named_prior_low=at["n_named_low"],
                    n_named_prior_high=at["n_named_high"],
                    n_wrong_prior=at["n_wrong"],
                    fdr_prior=at["fdr"],
                )
            if withheld:
                row.update(status="withheld", reason=withheld)
            rows.append(row)
            if not withheld and selected.any():
                order = np.argsort(p[selected], kind="stable")
                names.append(
                    pd.DataFrame(
                        {
                            "repeat": repeat,
                            "attack": attack,
                            "method": method,
                            "id": ids[selected][order],
                            "member": member[selected][order],
                            "p_value": p[selected][order],
                            "rank": np.arange(1, int(selected.sum()) + 1),
                            "nonmembers_at_most": bounds[: int(selected.sum())],
                        }
                    )
                )
    table = pd.DataFrame(rows)
    if not table.empty:
        first = ["repeat", "attack", "method", "status"]
        table = table[first + [c for c in table.columns if c not in first]]
    n_attacks = pvals["attack"].nunique() if len(pvals) else 0
    headline = f"{COMBINED}:{combine[0]}" if n_attacks > 1 and combine else ""
    if not headline and n_attacks:
        headline = str(pvals["attack"].iloc[0])
    columns = ["repeat", "attack", "method", "id", "member", "p_value", "rank"]
    columns.append("nonmembers_at_most")
    return NamedResult(
        q=q,
        unit=unit,
        table=table,
        names=pd.concat(names, ignore_index=True) if names else pd.DataFrame(columns=columns),
        skipped=skipped,
        withheld=withheld,
        headline=headline,
        noun=noun or "",
    )


def _bounded(row: dict[str, Any], p: np.ndarray, alpha: float, n_attacks: int) -> np.ndarray:
    """The list's simultaneous bounds (:func:`fdp_bounds`; any dependence for a combination
    over attacks), and in ``row``: the bound at the list's length (``n_wrong_bound``) and
    how many of its first names are members with that confidence (``n_sure``)."""
    bounds = fdp_bounds(p, alpha, dependence="prds" if n_attacks == 1 else "arbitrary")
    n_named = int(row["n_named"])
    row["bound_alpha"] = alpha
    row["n_wrong_bound"] = int(bounds[n_named - 1]) if n_named else math.nan
    row["n_sure"] = int((bounds[:n_named] == 0).sum()) if n_named else math.nan
    return bounds


def _lists_of_repeat(
    part: pd.DataFrame, combine: tuple[str, ...], adaptive: bool
) -> list[tuple[Any, ...]]:
    """Every list of one repeat: (attack, method, member, ids, p, p_floor, n_null, m)."""
    out: list[tuple[Any, ...]] = []
    for attack, one in part.groupby("attack", sort=False):
        member, ids = one["member"].to_numpy(bool), one["id"].to_numpy()
        p = one["p_value"].to_numpy(float)
        floor, n_null = float(one["p_floor"].min()), int(one["n_null"].max())
        for method in ("bh", "storey") if adaptive else ("bh",):
            out.append((attack, method, member, ids, p, floor, n_null, 1))
    attacks = list(pd.unique(part["attack"]))
    if len(attacks) < 2 or not combine:
        return out
    # candidates by id: the attacks of a repeat score the same candidates
    wide = part.pivot_table(index="id", columns="attack", values="p_value", aggfunc="first")
    wide = wide.dropna()
    member = part.drop_duplicates("id").set_index("id")["member"].reindex(wide.index).to_numpy(bool)
    p = bonferroni_min(wide.to_numpy(), axis=1)
    m = len(attacks)
    floors = part.groupby("attack")["p_floor"].min()
    n_null = int(part.groupby("attack")["n_null"].max().min())
    for method in combine:
        out.append(
            (COMBINED, method, member, wide.index.to_numpy(), p, m * floors.min(), n_null, m)
        )
    return out
