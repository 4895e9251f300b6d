"""``NamedResult``: the named lists of an audit, their sentences and their files."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

__all__ = ["NamedResult", "COMBINED"]

#: The ``attack`` of the lists that combine every attack (one per combination method).
COMBINED = "combined"

_SUMMED = ["n_candidates", "n_members", "n_named", "n_wrong", "n_right"]
_RESAMPLED = [
    "n_named_low",
    "n_named_high",
    "n_named_prior",
    "n_named_prior_low",
    "n_named_prior_high",
    "n_wrong_prior",
]
# simultaneous bounds: each repeat's at alpha / repeats, so their sum holds at alpha
_BOUNDED = ["n_wrong_bound", "n_sure", "bound_alpha"]


def _count(mean: float, low: float, high: float) -> str:
    """A resampled count in words: "none" where (nearly) every resample names nobody, else
    the mean with its 2.5-97.5 percentile range."""
    if high < 0.5:
        most = "" if mean == 0 else " in at least 97.5 % of resamples"
        return f"none{most}"
    mean_text = f"{mean:.0f}" if mean >= 1 else "fewer than 1"
    return f"{mean_text} on average (95 % of resamples: {low:.0f}-{high:.0f})"


def _bound_clause(row: dict[str, Any], n_named: int) -> str:
    """The simultaneous bound in words (empty where the row has none)."""
    bound = row.get("n_wrong_bound")
    if bound is None or pd.isna(bound):
        return ""
    alpha = float(row.get("bound_alpha", 0.05))
    conf = f"{100 * (1 - alpha):g} %"
    if int(bound) >= n_named:
        # Simes needs p-values under alpha / n; conformal ones stop at 1 / (public + 1)
        return (
            f" A bound on the non-members among the first k named valid for every k at once "
            f"({conf} confidence, so q could be chosen after looking) cannot be given here: "
            f"it needs p-values below {alpha:g} / {int(row['n_candidates'])} (the "
            "candidates), so more public records or stronger evidence."
        )
    sure = int(row.get("n_sure") or 0)
    first = f"; the first {sure} named are all members" if sure else ""
    return (
        f" Among the first k named, at most m are non-members, with {conf} confidence, for "
        f"every k at once (so q may be chosen after looking): for all {n_named}, at most "
        f"{int(bound)}{first} (m for each k: named.csv.gz, nonmembers_at_most)."
    )


def _json(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _json(value.item())
    return value


@dataclass
class NamedResult:
    """Whom an attacker with the public data could name as members, at FDR ``q``.

    Attributes
    ----------
    q : float
        The false-discovery rate every list promises.
    unit : {"record", "person"}
    table : DataFrame
        One row per (repeat, list): ``repeat``, ``attack`` (an attack, or
        :data:`COMBINED`), ``method`` (:data:`~tabmia.named.METHODS`), ``n_candidates``,
        ``n_members``, ``n_null`` (public records / persons of the null), ``p_floor``,
        ``p_min``, ``n_named``, ``n_wrong`` (non-members named: the audit knows),
        ``n_right``, ``fdp`` with ``fdp_low`` / ``fdp_high``, ``members_named`` (share of
        members named) with its interval, ``n_named_low`` / ``n_named_high`` (resampled
        at the audit's own member share), ``prior_share`` and ``n_named_prior`` (with
        interval, ``n_wrong_prior``, ``fdr_prior``: resampled at the PPV prior's member
        share), ``n_wrong_bound`` (at most this many of the named are non-members,
        with confidence ``1 - bound_alpha``, a bound that holds for every list length at
        once: :func:`~tabmia.named.fdp_bounds`), ``n_sure`` (the first names that are
        all members with that confidence), ``status`` ("named", "empty", "unresolvable",
        "withheld") and ``reason``.
    names : DataFrame
        One row per named candidate: ``repeat``, ``attack``, ``method``, ``id`` (record
        row or person id), ``member``, ``p_value`` (the list's: combined for a
        combination), ``rank`` (1 = smallest p-value), ``nonmembers_at_most`` (at most
        this many non-members among the first ``rank`` names; every rank at once, with
        confidence ``1 - bound_alpha``).
    skipped : dict of str -> str
        Attacks with no list, and why.
    withheld : str
        Why every list is withheld ("" when not): the audit's verdict cannot tell.
    headline : str
        The list the verdict speaks of: the combination over attacks where there are
        several, else the one attack's.
    noun : str
        The data set's word for its persons in the sentences ("patients"); "" for the
        default ("persons", or "records" for a record-level list).
    """

    q: float
    unit: str
    table: pd.DataFrame
    names: pd.DataFrame
    skipped: dict[str, str] = field(default_factory=dict)
    withheld: str = ""
    headline: str = ""
    noun: str = ""

    def unit_noun(self) -> str:
        """What the sentences call the candidates: "records", or the persons' noun."""
        if self.unit != "person":
            return "records"
        return self.noun or "persons"

    def summary(self) -> pd.DataFrame:
        """One row per list, counts summed over repeats (so are the resampled counts and
        their percentiles), the realised FDP and the share of members named with their
        intervals over the pooled counts."""
        from tabmia.named._lists import intervals

        if self.table.empty:
            return self.table
        table = self.table.copy()
        table["is_named"] = table["status"] == "named"
        grouped = table.groupby(["attack", "method"], sort=False)
        summed = [c for c in _SUMMED + _RESAMPLED + _BOUNDED if c in table]
        pooled = grouped[summed].sum(min_count=1)
        first = grouped[["status", "reason", "p_floor", "n_null", "prior_share"]].first()
        fdr_prior = grouped[[c for c in ("fdr_prior",) if c in table]].mean()
        any_named = grouped["is_named"].any()
        out = pd.concat([pooled, first, fdr_prior], axis=1).reset_index()
        out.loc[any_named.to_numpy(), ["status", "reason"]] = ["named", ""]
        ci = pd.DataFrame([intervals(r) for r in out.to_dict("records")])
        out = pd.concat([out, ci], axis=1)
        out.insert(2, "q", self.q)
        out.insert(3, "unit", self.unit)
        return out

    def headline_row(self) -> dict[str, Any] | None:
        """The pooled row of :attr:`headline` (None without lists)."""
        summary = self.summary()
        if summary.empty:
            return None
        attack, _, method = self.headline.partition(":")
        hit = summary[(summary["attack"] == attack) & (summary["method"] == (method or "bh"))]
        return None if hit.empty else hit.iloc[0].to_dict()

    def lines(self, noun: str | None = None) -> list[str]:
        """The verdict's sentences about the named list."""
        noun = noun or self.unit_noun()
        pct = f"{100 * self.q:g} %"
        if self.withheld:
            return [
                f"Named list at FDR {pct}: cannot tell ({self.withheld}); no list of "
                f"{noun} an attacker could name is given."
            ]
        row = self.headline_row()
        alone = self._alone_line() if row is not None and row["attack"] == COMBINED else []
        if row is None:
            why = "; ".join(f"{a}: {r}" for a, r in self.skipped.items()) or "no attack"
            return [f"Named list at FDR {pct}: none ({why})."]
        which = (
            f"combining {self._n_attacks()} attacks ({row['method']})"
            if row["attack"] == COMBINED
            else f"with {row['attack']}"
        )
        n_mem, n_named, n_wrong = int(row["n_members"]), int(row["n_named"]), int(row["n_wrong"])
        if row["status"] != "named":
            return [
                f"Named list at FDR {pct} ({which}): an attacker with the public data could "
                f"name none of the {n_mem} training {noun}: {row['reason']}.",
                *alone,
            ]
        text = (
            f"An attacker with the public data could name {n_named} of the {n_mem} training "
            f"{noun} as members ({which}), at most {pct} of such claims wrong in "
            f"expectation; here {n_wrong} of the {n_named} were wrong (realised FDP "
            f"{row['fdp']:.3f}, 95% CI {row['fdp_low']:.3f}-{row['fdp_high']:.3f}; "
            f"{n_named} named, {row['n_named_low']:.0f}-{row['n_named_high']:.0f} when "
            "the candidates are resampled)."
        )
        text += _bound_clause(row, n_named)
        prior = row.get("n_named_prior")
        if prior is not None and not pd.isna(prior):
            count = _count(
                prior, row.get("n_named_prior_low", 0.0), row.get("n_named_prior_high", 0.0)
            )
            text += (
                f" At a member share of {row['prior_share']:.3g} (the PPV prior) it would "
                f"name {count} of as many candidates."
            )
        return [text, *alone]

    def _alone_line(self) -> list[str]:
        """Each attack's own list: what an attacker who fixed that attack in advance names
        (choosing the best one after seeing the lists would void the promise)."""
        summary = self.summary()
        own = summary[(summary["attack"] != COMBINED) & (summary["method"] == "bh")]
        if own.empty:
            return []
        parts = [
            f"{r['attack']} {int(r['n_named'])} ({int(r['n_wrong'])} wrong)"
            if r["n_named"]
            else f"{r['attack']} none"
            for r in own.to_dict("records")
        ]
        return [
            f"Each attack alone, fixed in advance, at FDR {100 * self.q:g} %: "
            + ", ".join(parts)
            + " (picking the attack that names most after seeing these lists would not "
            "keep the promise; the combined list does)."
        ]

    def _n_attacks(self) -> int:
        return int(
            self.table.loc[self.table["attack"] != COMBINED, "attack"].nunique()
            if not self.table.empty
            else 0
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``named`` entry of ``results.json``: per attack and combined, pooled."""
        summary = self.summary()
        lists = [{k: _json(v) for k, v in row.items()} for row in summary.to_dict("records")]
        return {
            "q": self.q,
            "unit": self.unit,
            "headline": self.headline,
            "withheld": self.withheld or None,
            "attacks": [r for r in lists if r["attack"] != COMBINED],
            "combined": [r for r in lists if r["attack"] == COMBINED],
            "skipped": dict(self.skipped),
        }
