"""The sentence checker: no statement of an audit's ``results.json`` disagrees with its numbers.

Every verdict, gate, slice and what-if sentence that states a number or a direction is
built from fields of ``results.json``. :func:`check_statements` reads the file's content
(a dict) and checks pairs of statements, and statements against the fields they were
built from, rule by rule (:data:`RULES`); each disagreement is a :class:`Contradiction`
naming the rule, the statement and the numbers that contradict it. It recomputes what it
checks from the counts (Clopper-Pearson intervals, the ε lower bound, the strongest
attack), so a sentence written from a wrong field is caught too.

The fields read (absent ones skip their rules):

- ``verdict`` (the sentences), ``state.state``, ``state.blind``, ``metrics`` (per repeat and attack:
  ``attack``, ``tp``, ``n_members``, ``fp``, ``n_nonmembers``, ``fpr_target``), and for a
  person-level audit (``unit == "person"``) ``record_metrics`` (the same, of records);
- ``config.epsilon`` / ``config.delta`` (a DP claim) and ``claim`` (its answer:
  ``state``, ``decided_by``);
- ``most_exposed`` (``band``) of a person-level audit;
- ``gate.checks`` (``metric``, ``limit``, ``outcome``, ``low``, ``high``);
- ``slices``: ``lines``, ``tests`` (``attack``, ``slicing``, ``metric``, ``slice``,
  ``significant``, ``difference_low``, ``tpr_slice``, ``fpr_slice``, ``tpr_rest``,
  ``fpr_rest``, ``n_nonmembers``) and ``table`` (``attack``, ``slicing``, ``slice``,
  ``n_members``, ``n_nonmembers``, ``calibration``, ``tp_cal``, ``fp_cal``,
  ``fpr_target``);
- a what-if's ``frontier`` (``variant``, ``kind``, ``tpr``, ``tpr_low``, ``tpr_high``,
  ``risk_high``, ``fpr_target``, ``passes``, ``epsilon``, ``dp_epsilon_lower``,
  ``dp_claim``) and ``best``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from tabmia._columns import slicing_name
from tabmia.metrics import clopper_pearson, empirical_epsilon
from tabmia.report.state import own_threshold_summary

__all__ = ["PERSON_BANDS", "RULES", "Contradiction", "check_statements"]

_TOL = 1e-9


@dataclass(frozen=True)
class Contradiction:
    """A statement that the numbers beside it contradict.

    Attributes
    ----------
    rule : str
        The rule broken (a key of :data:`RULES`).
    statement : str
        The sentence, or the field, that says it.
    evidence : str
        The numbers that contradict it.
    """

    rule: str
    statement: str
    evidence: str

    def __str__(self) -> str:
        """The rule, the statement and the evidence on one line."""
        return f"{self.rule}: {self.statement!r} contradicted by {self.evidence}"


# ------------------------------------------------------------------- reading
def _number(value: Any) -> float:
    """A field as a float: NaN for None, text or an infinite bound written as a string."""
    if isinstance(value, str):
        return {"inf": math.inf, "-inf": -math.inf}.get(value, math.nan)
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def _summary(rows: Any) -> pd.DataFrame | None:
    """Per attack, its pooled decisions at its own threshold, strongest first; None
    without the counts."""
    if not rows:
        return None
    frame = pd.DataFrame(rows)
    need = {"attack", "tp", "n_members", "fp", "n_nonmembers"}
    if not need <= set(frame.columns) or frame[list(need - {"attack"})].isna().any().any():
        return None
    return own_threshold_summary(frame)


def _rates(name: str, r: pd.Series) -> str:
    return (
        f"{name}: {int(r['tp'])}/{int(r['n_members'])} members flagged, TPR {r['tpr']:.3f} "
        f"[{r['tpr_low']:.3f}, {r['tpr_high']:.3f}]; {int(r['fp'])}/{int(r['n_nonmembers'])} "
        f"non-members, FPR {r['fpr']:.3f} [{r['fpr_low']:.3f}, {r['fpr_high']:.3f}]"
    )


def _verdict(results: Mapping[str, Any]) -> list[str]:
    return [str(line) for line in results.get("verdict") or []]


# -------------------------------------------------------------------- verdict
def _beyond_chance_denied(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """The AUC line's "no threshold ... singles out records beyond chance" while an attack's TPR interval
    lies above its FPR's, at whatever FPR it delivered (issue 46, item 5)."""
    summary = _summary(results.get("metrics"))
    if summary is None:
        return
    beyond = summary[summary["tpr_low"] > summary["fpr_high"] + _TOL]
    if beyond.empty:
        return
    for line in _verdict(results):
        if re.search(r"no threshold[^.;]*singles out[^.;]*beyond chance", line):
            yield Contradiction(
                "beyond_chance_denied", line, _rates(str(beyond.index[0]), beyond.iloc[0])
            )


def _state_vs_rates(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """The state against the rates: "risk shown" needs an attack that kept its FPR
    promise (or had none) with its TPR's interval above its FPR's; "risk not shown" has
    none (the ranking and the intervals of :mod:`tabmia.report.state`)."""
    summary = _summary(results.get("metrics"))
    state = (results.get("state") or {}).get("state")
    if summary is None or state not in ("risk shown", "risk not shown"):
        return
    honest = summary[summary["promise"] != "broken"]
    shown = honest[honest["tpr_low"] > honest["fpr_high"] + _TOL]
    if state == "risk not shown" and len(shown):
        yield Contradiction(
            "state_vs_rates",
            "state: risk not shown",
            _rates(str(shown.index[0]), shown.iloc[0]) + ", within its FPR promise",
        )
    if state == "risk shown" and shown.empty:
        best = summary.iloc[0]
        yield Contradiction(
            "state_vs_rates",
            "state: risk shown",
            "no attack within its FPR promise flags members beyond chance; the strongest, "
            + _rates(str(summary.index[0]), best),
        )


#: How the verdict's first sentence opens for each state.
_OPENINGS = {
    "risk shown": "Risk:",
    "risk not shown": "Risk not shown",
    "cannot tell": "Cannot tell",
}


def _first_line_vs_state(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """The verdict's first sentence says the state decided (``state.state``)."""
    lines = _verdict(results)
    state = (results.get("state") or {}).get("state")
    if not lines or state not in _OPENINGS:
        return
    opening = next((o for o in _OPENINGS.values() if lines[0].startswith(o)), None)
    if opening is not None and opening != _OPENINGS[state]:
        yield Contradiction("first_line_vs_state", lines[0], f"state: {state}")


# ------------------------------------------------------------------ DP claim
_REFUTED = ("cannot hold",)
_NOT_REFUTED = ("cannot tell", "no rate can refute", "consistent with it")


def _says_refuted(text: str) -> bool | None:
    """Whether the claim's sentences refute it, don't, or say neither."""
    if any(word in text for word in _REFUTED):
        return True
    if any(word in text.replace("inconsistent with it", "") for word in _NOT_REFUTED):
        return False
    return None


def _claim_refuted_by(rows: Any, epsilon: float, delta: float) -> tuple[bool, str] | None:
    """Whether the strongest attack of ``rows`` refutes (ε, δ): its ε lower bound at δ
    above ε (:func:`tabmia.claims.membership_claim_check`'s test, said as a bound)."""
    summary = _summary(rows)
    if summary is None:
        return None
    name, best = str(summary.index[0]), summary.iloc[0]
    counts = (int(best[k]) for k in ("tp", "n_members", "fp", "n_nonmembers"))
    low = empirical_epsilon(*counts, delta=delta)["epsilon_lower"]
    return bool(low > epsilon * (1 + 1e-6)), (
        f"{_rates(name, best)}: ε lower bound {low:.3g} at δ = {delta:g}, claim ε = {epsilon:g}"
    )


def _claim_facts(
    results: Mapping[str, Any],
) -> tuple[str, bool | None, tuple[bool, str] | None, float, float] | None:
    """The DP claim's sentences, whether they refute it, whether the strongest
    record-level attack does (a claim is about records), and the claim; None without one."""
    config = results.get("config") or {}
    epsilon = _number(config.get("epsilon"))
    if not math.isfinite(epsilon):
        return None
    delta = _number(config.get("delta"))
    delta = 0.0 if math.isnan(delta) else delta
    rows = results.get("record_metrics" if results.get("unit") == "person" else "metrics")
    text = " ".join(line for line in _verdict(results) if "Against a claim of" in line)
    return text, _says_refuted(text), _claim_refuted_by(rows, epsilon, delta), epsilon, delta


def _claim_refutation_hidden(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A DP claim called "cannot tell", "consistent" or "no rate can refute" (or stored
    as ``claim.state``) while the strongest record-level attack's ε lower bound is above
    the claim: the records' rates refute it whatever the audit's unit (issue 46, item 2)."""
    facts = _claim_facts(results)
    if facts is None or facts[2] is None or not facts[2][0]:
        return
    text, said, (_, evidence) = facts[0], facts[1], facts[2]
    if said is False:
        yield Contradiction("claim_refutation_hidden", text, evidence)
    answer = results.get("claim") or {}
    if answer and answer.get("state") != "refuted":
        yield Contradiction(
            "claim_refutation_hidden", f"claim.state: {answer.get('state')}", evidence
        )


def _claim_refutation_unsupported(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A DP claim said not to hold ("the claim cannot hold") where neither the strongest
    record-level attack nor, in a person-level audit, the persons' rates against the group
    claim of its largest person (group privacy) refute it."""
    facts = _claim_facts(results)
    if facts is None or facts[1] is not True or facts[2] is None or facts[2][0]:
        return
    text, (_, evidence), epsilon, delta = facts[0], facts[2], facts[3], facts[4]
    if results.get("unit") == "person":
        k = _largest_person(results, text)
        if k is not None:
            delta_k = k * math.exp(min((k - 1) * epsilon, 700.0)) * delta
            by_persons = (
                _claim_refuted_by(results.get("metrics"), epsilon * k, delta_k)
                if delta_k < 1.0
                else None
            )
            if by_persons is not None and by_persons[0]:
                return
    yield Contradiction("claim_refutation_unsupported", text, evidence)


def _claim_consistent_while_blind(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A DP claim called "consistent" on the rates of an attack that flags nobody because
    its scores tie where its threshold falls (``state.blind``): the verdict says its zero
    says nothing at that FPR, so it is no evidence that the claim holds."""
    blind = set((results.get("state") or {}).get("blind") or [])
    if results.get("unit") == "person" or not blind:
        return
    for line in _verdict(results):
        found = re.search(r"-DP, (.+?)'s rates are consistent with it", line)
        if found and found.group(1) in blind:
            yield Contradiction(
                "claim_consistent_while_blind", line, f"state.blind: {sorted(blind)}"
            )


def _largest_person(results: Mapping[str, Any], text: str) -> int | None:
    """The records of the audit's largest person: the claim's answer, else its sentence."""
    persons = (results.get("claim") or {}).get("persons") or {}
    if persons.get("max_records") is not None:
        return int(persons["max_records"])
    found = re.search(r"largest person (?:here )?(?:has|\()\s*(\d+) records", text)
    return int(found.group(1)) if found else None


# -------------------------------------------------------------------- persons
#: The record-count bands a person-level threshold is calibrated in, unmerged
#: (:data:`tabmia.persons.BANDS`, a layer above this one; a test keeps them equal). A band
#: labelled otherwise in ``most_exposed`` merged some of them.
PERSON_BANDS = ("1", "2-3", "4-7", "8-15", "16+")


def _merged_bands_said_same(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """Persons said calibrated on public persons "of the same number of records" where
    the bands merged (a ``most_exposed`` person's ``band`` is no single band; issue 46,
    item 12)."""
    merged = sorted(
        {
            str(r.get("band"))
            for r in results.get("most_exposed") or []
            if r.get("band") is not None and str(r.get("band")) not in PERSON_BANDS
        }
    )
    if not merged:
        return
    for line in _verdict(results):
        if "of the same number of records" in line or "in the same band of record" in line:
            yield Contradiction(
                "merged_bands_said_same", line, f"most_exposed bands merged: {merged}"
            )


# ----------------------------------------------------------------------- gate
def _gate_outcomes(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """Each gate limit's outcome against its interval: "above" needs the lower bound over
    the limit, "below" the upper bound at or under it."""
    for check in (results.get("gate") or {}).get("checks") or []:
        limit, low, high = (_number(check.get(k)) for k in ("limit", "low", "high"))
        outcome = check.get("outcome")
        wrong = (outcome == "above" and not low > limit) or (
            outcome == "below" and not high <= limit + _TOL
        )
        if wrong:
            yield Contradiction(
                "gate_outcome_vs_interval",
                f"{check.get('metric')} <= {limit:g}: {outcome}",
                f"{check.get('attack')}: [{low:.4g}, {high:.4g}]",
            )


# --------------------------------------------------------------------- slices
def _named_interval(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A slice named more exposed with an interval of its difference that holds 0: the
    interval printed with it must agree with the test that named it (issue 46, item 6)."""
    slices = results.get("slices") or {}
    for row in slices.get("tests") or []:
        low = _number(row.get("difference_low"))
        if row.get("significant") and not low > 0:
            yield Contradiction(
                "named_slice_interval_holds_zero",
                f"{row.get('attack')}, {slicing_name(row.get('slicing'))}: "
                f"{row.get('slice')!r} named more exposed",
                f"difference {_number(row.get('difference')):.3f}, interval "
                f"[{low:.3f}, {_number(row.get('difference_high')):.3f}]",
            )
    pattern = re.compile(r"is more exposed.*?interval (-?[\d.]+) to (-?[\d.]+)")
    for line in slices.get("lines") or []:
        found = pattern.search(str(line))
        if found and not float(found.group(1)) > 0:
            yield Contradiction(
                "named_slice_interval_holds_zero", str(line), f"interval from {found.group(1)}"
            )


def _overall_nonmembers(table: list[dict[str, Any]]) -> dict[tuple[Any, Any], int]:
    return {
        (r.get("attack"), r.get("slicing")): int(_number(r.get("n_nonmembers")))
        for r in table
        if str(r.get("slice")) == "overall" and math.isfinite(_number(r.get("n_nonmembers")))
    }


def _named_at_unequal_fpr(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A named slice's TPRs compared at FPRs that differ beyond chance (the slice's and
    the rest's Clopper-Pearson intervals apart): the comparison is not at equal FPR
    (issue 46, items 6 and 11)."""
    slices = results.get("slices") or {}
    totals = _overall_nonmembers(slices.get("table") or [])
    for row in slices.get("tests") or []:
        if not row.get("significant"):
            continue
        n_slice = int(_number(row.get("n_nonmembers")))
        n_rest = totals.get((row.get("attack"), row.get("slicing")), 0) - n_slice
        f_slice, f_rest = _number(row.get("fpr_slice")), _number(row.get("fpr_rest"))
        if n_slice < 1 or n_rest < 1 or not (math.isfinite(f_slice) and math.isfinite(f_rest)):
            continue
        lo_s, hi_s = clopper_pearson(round(f_slice * n_slice), n_slice)
        lo_r, hi_r = clopper_pearson(round(f_rest * n_rest), n_rest)
        if lo_s > hi_r + _TOL or lo_r > hi_s + _TOL:
            yield Contradiction(
                "named_slice_at_unequal_fpr",
                f"{row.get('attack')}, {slicing_name(row.get('slicing'))}: "
                f"{row.get('slice')!r} named more exposed ({row.get('metric')})",
                f"TPR {_number(row.get('tpr_slice')):.3f} vs {_number(row.get('tpr_rest')):.3f} "
                f"at FPR {f_slice:.3f} [{lo_s:.3f}, {hi_s:.3f}] ({n_slice} non-members) vs "
                f"{f_rest:.3f} [{lo_r:.3f}, {hi_r:.3f}] ({n_rest})",
            )


def _equal_fpr_without_flags(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A slice sentence's "at equal FPR" said of an attack and slicing where a slice's calibrated threshold
    flags nobody, members or non-members, though the FPR it aims at would flag some of
    its non-members (below a 5% chance of none): its threshold sits on a tie, and the
    slices are not compared at equal FPR (issue 46, item 11)."""
    slices = results.get("slices") or {}
    silent: dict[tuple[str, str], list[str]] = {}
    for r in slices.get("table") or []:
        if str(r.get("slice")) == "overall" or r.get("calibration") != "resolvable":
            continue
        alpha, n0 = _number(r.get("fpr_target")), _number(r.get("n_nonmembers"))
        flags = _number(r.get("tp_cal")) + _number(r.get("fp_cal"))
        if flags == 0 and 0 < alpha < 1 and n0 * -math.log1p(-alpha) > -math.log(0.05):
            key = (str(r.get("attack")), slicing_name(r.get("slicing")))
            silent.setdefault(key, []).append(
                f"{r.get('slice')!r} flags 0 of {int(_number(r.get('n_members')))} members and "
                f"0 of {int(n0)} non-members at its threshold calibrated to FPR {alpha:g}"
            )
    for line in slices.get("lines") or []:
        text = str(line)
        if "equal FPR" not in text:
            continue
        for (attack, slicing), what in silent.items():
            if text.startswith(f"{attack}, slices by {slicing}:"):
                yield Contradiction("equal_fpr_without_flags", text, "; ".join(what))


# -------------------------------------------------------------------- what-if
def _hardening_above_original(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A hardened variant (a function of the original's outputs: rounding, labels only)
    measured as leaking more than the original it post-processes: anyone who sees the
    original's outputs can run the hardened variant's attack, so the original's stated
    risk is at least that (issue 46, item 3). Where the frontier states the original's
    risk (``risk_high``: at least its hardenings', :mod:`tabmia.whatif.frontier`), that
    is the statement checked; else its own TPR."""
    frontier = results.get("frontier") or []
    original = next((r for r in frontier if r.get("kind") == "original"), None)
    if original is None:
        return
    high = _number(original.get("risk_high", original.get("tpr_high")))
    for row in frontier:
        if row.get("kind") != "harden":
            continue
        same_fpr = _number(row.get("fpr_target")) <= _number(original.get("fpr_target")) + _TOL
        if same_fpr and _number(row.get("tpr_low")) > high + _TOL:
            yield Contradiction(
                "hardening_above_original",
                f"original: TPR {_number(original.get('tpr')):.3f} "
                f"[{_number(original.get('tpr_low')):.3f}, {high:.3f}]",
                f"{row.get('variant')} (post-processes the original's outputs): TPR "
                f"{_number(row.get('tpr')):.3f} [{_number(row.get('tpr_low')):.3f}, "
                f"{_number(row.get('tpr_high')):.3f}]",
            )


def _variant_claim(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A DP variant's claim (``dp_claim``) not "refuted" while its audit's ε lower bound
    (``dp_epsilon_lower``) is above the claimed ``epsilon``, or "refuted" while it is not
    (the one-run audit refutes exactly when its lower bound exceeds the claim)."""
    for row in results.get("frontier") or []:
        state, low, eps = (
            row.get("dp_claim"),
            _number(row.get("dp_epsilon_lower")),
            _number(row.get("epsilon")),
        )
        if not state or not (math.isfinite(low) and math.isfinite(eps)):
            continue
        if (state == "refuted") != (low > eps):
            yield Contradiction(
                "variant_claim_vs_bound",
                f"{row.get('variant')}: the claim ε = {eps:g} is {state}",
                f"its ε lower bound {low:.3g}",
            )


def _best_when_original_passes(results: Mapping[str, Any]) -> Iterator[Contradiction]:
    """A "best" variant named other than the original where the original passes the limit
    already (the original is a candidate; issue 46, item 8)."""
    frontier = results.get("frontier") or []
    original = next((r for r in frontier if r.get("kind") == "original"), None)
    best = results.get("best")
    name = best.get("variant") if isinstance(best, Mapping) else best
    if original is not None and original.get("passes") and name not in (None, "original"):
        yield Contradiction("best_beside_passing_original", f"best: {name}", "original passes")


#: Every rule, by name: what it reads and what it checks is in its docstring.
RULES: dict[str, Callable[[Mapping[str, Any]], Iterator[Contradiction]]] = {
    "beyond_chance_denied": _beyond_chance_denied,
    "state_vs_rates": _state_vs_rates,
    "first_line_vs_state": _first_line_vs_state,
    "claim_refutation_hidden": _claim_refutation_hidden,
    "claim_refutation_unsupported": _claim_refutation_unsupported,
    "claim_consistent_while_blind": _claim_consistent_while_blind,
    "merged_bands_said_same": _merged_bands_said_same,
    "gate_outcome_vs_interval": _gate_outcomes,
    "named_slice_interval_holds_zero": _named_interval,
    "named_slice_at_unequal_fpr": _named_at_unequal_fpr,
    "equal_fpr_without_flags": _equal_fpr_without_flags,
    "hardening_above_original": _hardening_above_original,
    "variant_claim_vs_bound": _variant_claim,
    "best_beside_passing_original": _best_when_original_passes,
}


def check_statements(results: Mapping[str, Any]) -> list[Contradiction]:
    """Every pair of statements, or statement and field, of ``results`` that disagree.

    Parameters
    ----------
    results : mapping
        The content of a ``results.json`` of ``tabmia audit`` or ``tabmia whatif``
        (``json.load``): the fields read are listed in the module's docstring; a rule
        whose fields are absent checks nothing.

    Returns
    -------
    list of Contradiction
        Empty when every statement agrees with the numbers.

    Examples
    --------
    >>> check_statements({"state": {"state": "risk shown"}, "verdict": ["Risk not shown."]})
    [Contradiction(rule='first_line_vs_state', statement='Risk not shown.', evidence='state: risk shown')]
    """
    return [c for rule in RULES.values() for c in rule(results)]
