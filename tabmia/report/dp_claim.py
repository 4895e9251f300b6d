"""A DP claim answered once: from the record-level evidence, whatever the audit's unit.

A claim of (ε, δ)-DP training is a claim about records: adding or removing one record
changes the model's output distribution by at most e^ε and δ. The record-level rates of
the audit test it directly (:func:`tabmia.claims.membership_claim_check`, the strongest
attack by :data:`~tabmia.report.state.STRONGEST_RULE`). A person-level audit reads the
same claim for persons through group privacy (:func:`tabmia.claims.group_privacy`): a
person with ``k`` records is protected only at (kε, k·e^((k−1)ε)·δ). That translation
stands beside the answer and never replaces it: where the records' rates refute the
claim, the fact that the claim promises a person of many records nothing (δ_k ≥ 1) does
not make it "cannot tell". And since group privacy follows from record-level DP, persons'
rates above what the claim allows them refute it too.

:func:`claim_answer` decides; :meth:`ClaimAnswer.lines` says it (the verdict), and
:meth:`ClaimAnswer.to_dict` stores it (``results.json``'s ``claim``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from tabmia.claims import ClaimCheck, group_privacy, membership_claim_check
from tabmia.metrics import DEFAULT_DELTA, empirical_epsilon
from tabmia.report.state import own_threshold_summary, tie_reach

__all__ = ["ClaimAnswer", "blind_attacks", "claim_answer"]

#: Each state of a claim check in the verdict's words.
_MEANING = {
    "consistent": "consistent with it (a game this size could have refuted it)",
    "refuted": "inconsistent with it: the claim cannot hold",
}


def _meaning(check: ClaimCheck) -> str:
    return _MEANING.get(check.state, f"cannot tell: {check.reason}")


@dataclass(frozen=True)
class _Rates:
    """One attack's decisions at its own threshold, checked against one claim."""

    attack: str
    tp: int
    n_members: int
    fp: int
    n_nonmembers: int
    epsilon_lower: float
    check: ClaimCheck

    def to_dict(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "tp": self.tp,
            "n_members": self.n_members,
            "fp": self.fp,
            "n_nonmembers": self.n_nonmembers,
            "epsilon_lower": self.epsilon_lower,
            "state": self.check.state,
            "reason": self.check.reason,
            "needed": self.check.needed,
        }


def blind_attacks(result: Any, summary: pd.DataFrame | None = None) -> set[str]:
    """The attacks of ``result`` that flag nobody because their scores tie where their
    threshold falls (:func:`~tabmia.report.state.tie_reach`): their zero is no evidence."""
    scores = getattr(result, "scores", None)
    if not isinstance(scores, pd.DataFrame):
        return set()
    summary = own_threshold_summary(result.metrics) if summary is None else summary
    ties = tie_reach(scores, summary["fpr_target"])
    return {
        str(a)
        for a in summary.index
        if a in ties.index and bool(ties.at[a, "blind"]) and summary.at[a, "tp"] == 0
    }


def _strongest_rates(result: Any, epsilon: float, delta: float, confidence: float) -> _Rates:
    """The strongest attack of ``result`` (pooled over repeats) against (ε, δ).

    An attack that flags nobody because its scores tie where its threshold falls
    (:func:`~tabmia.report.state.tie_reach`) shows nothing at that FPR: its zero is no
    evidence that the claim holds, so the answer is "cannot tell", never "consistent"."""
    summary = own_threshold_summary(result.metrics, confidence=confidence)
    name, best = str(summary.index[0]), summary.iloc[0]
    tp, n_mem, fp, n_neg = (int(best[k]) for k in ("tp", "n_members", "fp", "n_nonmembers"))
    eps = empirical_epsilon(tp, n_mem, fp, n_neg, delta=delta, confidence=confidence)
    check = membership_claim_check(tp, n_mem, fp, n_neg, epsilon, delta, confidence=confidence)
    if check.state == "consistent" and name in blind_attacks(result, summary):
        check = replace(
            check,
            state="cannot_tell",
            reason=f"{name}'s scores tie where its threshold falls, so it flags nobody "
            "there: its zero says nothing about the model at that FPR",
        )
    return _Rates(name, tp, n_mem, fp, n_neg, float(eps["epsilon_lower"]), check)


@dataclass(frozen=True)
class ClaimAnswer:
    """What the audit says about a claimed (ε, δ)-DP training, once.

    Attributes
    ----------
    epsilon, delta : float
        The claim (record-level).
    state : {"refuted", "consistent", "cannot_tell"}
        The answer: the record-level rates' check, or "refuted" where the persons' rates
        exceed what the claim allows a person (group privacy); without record-level rates
        (a person-level result alone), the persons' check ("cannot_tell" where the claim
        promises the largest person nothing).
    decided_by : {"records", "persons"}
        Whose rates decided.
    records : _Rates or None
        The strongest record-level attack, its counts, ε lower bound at ``delta`` and
        check; None where only person-level rates were given.
    persons : dict or None
        For a person-level audit: ``max_records`` (its largest person's), the group
        claim ``epsilon`` / ``delta`` for that person, ``promises_nothing`` (δ ≥ 1), and
        where it promises something, the strongest person-level attack's counts, ε lower
        bound at that δ and check.
    """

    epsilon: float
    delta: float
    state: str
    decided_by: str
    records: _Rates | None = None
    persons: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The answer as ``results.json`` stores it (``claim``)."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "state": self.state,
            "decided_by": self.decided_by,
            "records": None if self.records is None else self.records.to_dict(),
            "persons": self.persons,
        }

    def lines(self, noun: str = "persons") -> list[str]:
        """The verdict's sentences: the answer, then (persons) the group-privacy reading."""
        claim = f"Against a claim of (ε = {self.epsilon:g}, δ = {self.delta:g})-DP"
        r, p = self.records, self.persons
        if p is None:  # a record-level audit
            assert r is not None  # a record audit has record rates
            return [f"{claim}, {r.attack}'s rates are {_meaning(r.check)}."]
        if r is not None:
            first = (
                f"{claim} (a claim about records, so judged from the record-level rates of the "
                f"same audit: {r.attack} flags {r.tp} of {r.n_members} training records and "
                f"{r.fp} of {r.n_nonmembers} non-member records at its own threshold, ε lower "
                f"bound {r.epsilon_lower:.2f}), the rates are "
            )
            if self.decided_by == "persons":
                first += (
                    "inconsistent with it: the claim cannot hold (shown by the "
                    f"{noun}' rates below; the records' alone are {r.check.state.replace('_', ' ')})."
                )
            else:
                first += f"{_meaning(r.check)}."
            return [first, self._person_line(noun)]
        return [
            f"{claim} for records (the record-level rates were not given, so it is read "
            f"for {noun} through group privacy): " + self._person_line(noun, alone=True)
        ]

    def _person_line(self, noun: str, alone: bool = False) -> str:
        p = self.persons
        assert p is not None  # a person-level audit's
        head = (
            f"{'for' if alone else 'For'} {noun}, DP for records protects a person with k records "
            f"only at (kε, k·e^((k−1)ε)·δ) (group privacy); this audit's largest person has "
            f"{p['max_records']} records"
        )
        refuted = self.state == "refuted"
        if p["promises_nothing"]:
            tail = (
                f", for whom δ reaches {p['delta']:.3g} ≥ 1: the claim promises that person nothing"
            )
            if alone:
                return head + tail + f", so the {noun}' rates cannot test it (the records' can)."
            return (
                head
                + tail
                + (
                    " even where it holds, and here the record-level rates show it does not."
                    if refuted
                    else f"; the {noun}' rates cannot test it, so the records' answer above stands."
                )
            )
        check = p["state"]
        said = f"are {_MEANING[check]}" if check in _MEANING else f"cannot tell: {p['reason']}"
        text = (
            f"{head}, so the {noun}' rates are checked against (ε = {p['epsilon']:.3g}, δ = "
            f"{p['delta']:.3g}): {p['attack']}'s {said}"
        )
        if refuted and check != "refuted":
            text += "; the record-level rates refute the claim all the same"
        return text + "."


def claim_answer(
    result: Any,
    epsilon: float,
    delta: float = DEFAULT_DELTA,
    *,
    records: Any = None,
    confidence: float = 0.95,
) -> ClaimAnswer:
    """Refuted, consistent or cannot tell: a claimed (ε, δ)-DP training against an audit.

    Parameters
    ----------
    result : ExperimentResult
        The audit; of records, or of persons (``unit == "person"``,
        :func:`tabmia.persons.person_result`).
    epsilon, delta : float
        The claim, about records.
    records : ExperimentResult, default=None
        For a person-level ``result``: the record-level audit it was made from, whose
        rates decide (without it, the persons' rates are read through group privacy).
    confidence : float, default=0.95

    Returns
    -------
    ClaimAnswer
    """
    persons = getattr(result, "unit", "record") == "person"
    record_result = records if records is not None else (None if persons else result)
    rec = (
        None
        if record_result is None
        else _strongest_rates(record_result, epsilon, delta, confidence)
    )
    if not persons:
        assert rec is not None  # a record-level result has record metrics
        return ClaimAnswer(epsilon, delta, rec.check.state, "records", rec)
    k = int(pd.to_numeric(result.scores["n_records"]).max())
    eps_k, delta_k = group_privacy(epsilon, k, delta)
    person: dict[str, Any] = {
        "max_records": k,
        "epsilon": float(eps_k),
        "delta": float(delta_k),
        "promises_nothing": not delta_k < 1.0,
    }
    person_state = None
    if delta_k < 1.0:
        rates = _strongest_rates(result, float(eps_k), float(delta_k), confidence)
        person.update(rates.to_dict())
        person_state = rates.check.state
    if rec is not None and (rec.check.state == "refuted" or person_state != "refuted"):
        return ClaimAnswer(epsilon, delta, rec.check.state, "records", rec, person)
    # no record-level refutation: the persons' rates beyond the group claim refute it
    # (group privacy follows from record-level DP); without record rates they are all
    return ClaimAnswer(epsilon, delta, person_state or "cannot_tell", "persons", rec, person)
