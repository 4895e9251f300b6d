"""One named list: its selection, its realised false-discovery proportion, its status, and
its count at another member share by resampling."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tabmia.metrics import clopper_pearson
from tabmia.named._select import fdr_select, storey_pi0

__all__ = ["one_list", "counts_at_share", "METHODS"]

#: How each list selects: the per-attack lists and the combinations over attacks.
METHODS: dict[str, str] = {
    "bh": "Benjamini-Hochberg on the attack's conformal p-values",
    "storey": "Benjamini-Hochberg at q / pi0, pi0 Storey's estimate (adaptive)",
    "bonferroni": "Benjamini-Hochberg on each candidate's Bonferroni-adjusted smallest "
    "p-value over the attacks (m x min p)",
    "by": "Benjamini-Yekutieli on each candidate's Bonferroni-adjusted smallest p-value "
    "(valid under any dependence, between attacks and between candidates)",
}

# resamples are selected in blocks of at most this many p-values (memory), and a large
# audit gets fewer resamples: at most this many p-values sorted in all (time), 10 at least
_BLOCK = 2_000_000
_BUDGET = 50_000_000


def _select(p: np.ndarray, q: float, method: str, axis: int = -1) -> np.ndarray:
    """The step-up of ``method`` (``storey``: BH at q / pi0 per row)."""
    if method == "storey":
        pi0 = np.expand_dims(storey_pi0(p, axis=axis), axis)
        # BH at q / pi0 is BH at q on p * pi0
        return fdr_select(np.minimum(1.0, p * pi0), q, method="bh", axis=axis)
    return fdr_select(p, q, method="by" if method == "by" else "bh", axis=axis)


def one_list(
    member: np.ndarray,
    p: np.ndarray,
    p_floor: float,
    q: float,
    method: str,
    n_null: int,
    n_attacks: int = 1,
) -> tuple[dict[str, Any], np.ndarray]:
    """The list of one (repeat, attack or combination): its row and its selection mask.

    ``p_floor`` is the smallest p-value the public null allows (``m / (n + 1)`` for a
    Bonferroni combination of ``m`` attacks); above ``q`` nobody can ever be named.
    """
    selected = _select(p, q, method)
    n_named = int(selected.sum())
    n_wrong = int((selected & ~member).sum())
    n_members = int(member.sum())
    row: dict[str, Any] = {
        "method": method,
        "q": q,
        "n_candidates": int(member.size),
        "n_members": n_members,
        "n_null": int(n_null),
        "p_floor": float(p_floor),
        "p_min": float(p.min()) if p.size else math.nan,
        "n_named": n_named,
        "n_wrong": n_wrong,
        "n_right": n_named - n_wrong,
    }
    if p_floor > q * (1.0 + 1e-12):
        needed = math.ceil(n_attacks / q) - 1
        row["status"] = "unresolvable"
        row["reason"] = (
            f"the attacker's {n_null} public {'' if n_attacks == 1 else 'null '}"
            f"scores cannot resolve q = {q:g}: the smallest p-value they allow, "
            f"{p_floor:.3g}{'' if n_attacks == 1 else f' ({n_attacks} attacks x 1/(n+1))'}, "
            f"is above q (it needs at least {needed} public records)"
        )
    elif n_named == 0:
        row["status"] = "empty"
        # the k smallest p-values must all be <= k q / n: with the smallest p, k >= p n / q
        fewest = math.ceil(row["p_min"] * member.size / q - 1e-9)
        row["reason"] = (
            f"no candidate's p-value clears the step-up (the k smallest must be at most "
            f"k x {q:g} / {member.size}): the smallest is {row['p_min']:.3g}, so it would "
            f"take at least {fewest} candidates that extreme"
        )
    else:
        row["status"] = "named"
        row["reason"] = ""
    return row, selected


def intervals(row: dict[str, Any]) -> dict[str, float]:
    """95% Clopper-Pearson intervals of the realised FDP (over the named) and of the share
    of members named (over the members)."""
    out = {"fdp": math.nan, "fdp_low": math.nan, "fdp_high": math.nan}
    if row["n_named"]:
        lo, hi = clopper_pearson(row["n_wrong"], row["n_named"])
        out.update(fdp=row["n_wrong"] / row["n_named"], fdp_low=lo, fdp_high=hi)
    out.update(members_named=math.nan, members_named_low=math.nan, members_named_high=math.nan)
    if row["n_members"]:
        lo, hi = clopper_pearson(row["n_right"], row["n_members"])
        out.update(members_named=row["n_right"] / row["n_members"])
        out.update(members_named_low=lo, members_named_high=hi)
    return out


def counts_at_share(
    member: np.ndarray,
    p: np.ndarray,
    q: float,
    method: str,
    share: float,
    *,
    n_resamples: int,
    rng: np.random.Generator,
) -> dict[str, float]:
    """Named count and FDP of the same attack facing as many candidates with member share
    ``share``: candidates redrawn with replacement, members from the members' p-values and
    non-members from the non-members' (each resample's member count binomial).

    A large audit gets fewer resamples (``5e7 / n``, at least 10). Returns the mean named
    count with its 2.5 / 97.5 percentiles, the mean wrong count,
    the mean FDP (0 where nothing is named) and the mean members named.
    """
    p_mem, p_non = p[member], p[~member]
    n = p.size
    nan = dict.fromkeys(("n_named", "n_named_low", "n_named_high", "n_wrong", "fdr"), math.nan)
    if n == 0 or (share > 0 and p_mem.size == 0) or (share < 1 and p_non.size == 0):
        return nan
    named, wrong = [], []
    n_resamples = min(n_resamples, max(10, _BUDGET // n))
    block = max(1, _BLOCK // n)
    for start in range(0, n_resamples, block):
        b = min(block, n_resamples - start)
        k = rng.binomial(n, share, size=b)
        is_member = np.arange(n)[None, :] < k[:, None]
        draw = np.empty((b, n))
        if p_mem.size:
            draw[is_member] = p_mem[rng.integers(0, p_mem.size, size=int(is_member.sum()))]
        if p_non.size:
            draw[~is_member] = p_non[rng.integers(0, p_non.size, size=int((~is_member).sum()))]
        selected = _select(draw, q, method, axis=1)
        named.append(selected.sum(axis=1))
        wrong.append((selected & ~is_member).sum(axis=1))
    n_named, n_wrong = np.concatenate(named), np.concatenate(wrong)
    fdp = np.where(n_named > 0, n_wrong / np.maximum(n_named, 1), 0.0)
    low, high = np.percentile(n_named, [2.5, 97.5])
    return {
        "n_named": float(n_named.mean()),
        "n_named_low": float(low),
        "n_named_high": float(high),
        "n_wrong": float(n_wrong.mean()),
        "fdr": float(fdp.mean()),
    }
