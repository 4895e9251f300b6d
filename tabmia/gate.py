"""A privacy gate: does an audit show a model's membership risk below a limit, above it,
or neither?

An audit measures each attack with an interval, so a limit has three outcomes:

- **below** (exit status 0): every attack's upper confidence bound is at or under the
  limit;
- **above** (exit status 1): some attack's lower confidence bound is over it;
- **unresolved** (exit status 3): neither, e.g. too few records to tell, or attacks whose
  thresholds could not aim at the limit's FPR. ``unresolved="pass"`` lets it pass.

Limits, as ``METRIC=LIMIT`` (what ``tabmia audit --fail-above`` takes):

- ``tpr@<fpr>=<limit>``: the share of training records an attack flags at its own
  threshold aimed at FPR ``<fpr>`` (chosen without the candidates' membership), with its
  95% Clopper-Pearson interval, counts pooled over seeds. An attack shows it above only
  when its threshold aimed at ``<fpr>`` or lower and its flagged non-members stay
  consistent with that (FPR's lower bound at most ``<fpr>``); it shows it below only when
  its threshold aimed at ``<fpr>`` or higher (a looser threshold flags every record a
  stricter one would).
- ``named@<q>=<limit>``: the members an attacker with the public data could name at
  false-discovery rate ``q`` (:mod:`tabmia.named`, the audit's headline list): a count
  (``named@0.1=0``: nobody named) against the number named and its interval over
  resampled candidates, or a share in (0, 1) (``named@0.1=0.01``) against the share of
  members named and its Clopper-Pearson interval.
- ``auc=<limit>``: the AUC with its 95% bootstrap interval; with several seeds, above
  needs every seed's lower bound over the limit and below every seed's upper bound at or
  under it.
- ``epsilon=<limit>``: the ε an attack's decisions demonstrate for (ε, δ)-DP, δ from the
  audit. Above: its 95% lower bound (:func:`tabmia.metrics.empirical_epsilon`) is over the
  limit, so (limit, δ)-DP training cannot have produced these rates. Below: even the most
  favourable reading of the rates (TPR's upper, FPR's lower bound) demonstrates no more.
  An audit never certifies DP: "below" means these attacks show no more than the limit.
- ``structure:<finding>=<limit>`` (``alone``, ``small``, ``disclosure``, ``influence``): a
  tree model file's structural finding (:func:`tabmia.structure.structural_findings`),
  e.g. ``structure:alone=0.01``: at most 1% of the training records alone in their leaf
  in most trees. A census of the file, with no interval: above when it exceeds the limit.
  A finding about the file, not an attack's measurement.

Over several attacks the largest risk decides: above if any attack shows it above, below
only if all show it below. Each check names the attack that decided.

The gate's outcome is a function of the audit's verdict state
(:func:`tabmia.report.state.verdict_state`) and the limits, never the other way round.
Where the verdict cannot tell, for a cause it names (:attr:`VerdictState.causes`: the
inputs contradict themselves, every attack's scores tie where its threshold falls
(``ties``), no threshold kept its FPR (``fpr_not_kept``); the last two only for limits
that read the attacks' thresholds, not an ``auc`` limit), no limit's check is
evidence and the gate cannot tell (exit status 3, even with ``unresolved="pass"``) until
the cause is fixed or the user accepts it by name (``accept_warnings``; ``tabmia audit
--accept-warning NAME``), which the result records. A label-only audit of a model that
also gives probabilities models a weaker attacker than the model allows: the gate can
fail it, but passes it only when the user accepts that scope (``label_only``). Every line
names the attacker the audit modelled (one who sees the model's decisions only, or its
probabilities). A name accepted that the audit did not raise is said.

A TPR limit is shown met only by attacks that could have flagged records at its FPR:
where an attack's non-members tie at its highest unflagged score, more of them than the
FPR allows (an overfit forest's loss of 0 on most records), its threshold flags nobody
there, and the gate counts the training records that a random tie-break reaching the FPR
would flag (:func:`tabmia.report.state.tie_reach`), its upper bound the one the verdict
states (:func:`tabmia.report.state.tie_bound`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tabmia.metrics import DEFAULT_DELTA
from tabmia.report.limits import (
    CONFIDENCE,
    LimitCheck,
    RiskLimit,
    check_auc,
    check_epsilon,
    check_slice_tpr,
    check_structure,
    check_tpr,
    parse_limits,
)
from tabmia.report.state import (
    CAUSES,
    CONTRADICTIONS,
    LABEL_ONLY,
    VerdictState,
    own_threshold_summary,
    tie_reach,
    verdict_state,
)

__all__ = [
    "EXIT_ABOVE",
    "EXIT_BELOW",
    "EXIT_UNRESOLVED",
    "GateResult",
    "LimitCheck",
    "RiskLimit",
    "evaluate_gate",
    "parse_limits",
]

#: Exit status of ``tabmia audit --fail-above`` when the audit shows every limit met.
EXIT_BELOW = 0
#: Exit status when the audit shows a limit exceeded.
EXIT_ABOVE = 1
#: Exit status when the audit cannot tell (``--unresolved fail``, the default); 2 stays
#: the status of a usage error.
EXIT_UNRESOLVED = 3


@dataclass(frozen=True)
class GateResult:
    """Every limit's check, and what the gate returns.

    Attributes
    ----------
    checks : tuple of LimitCheck
    unresolved : {"fail", "pass"}
        What an unresolved limit returns.
    state : VerdictState, default=None
        The audit's verdict state; where it cannot tell (a cause not accepted) the gate
        cannot tell, whatever the checks say, and a label-only scope not accepted keeps
        it from passing.
    unit : {"record", "person"}, default="record"
        What the audit counted (its result's ``unit``); the lines speak of persons for
        a person-level audit.
    """

    checks: tuple[LimitCheck, ...]
    unresolved: str = "fail"
    state: VerdictState | None = None
    unit: str = "record"

    @property
    def blocked_by(self) -> tuple[str, ...]:
        """The names that keep the gate from deciding, none accepted: the verdict's causes
        of "cannot tell", and ``label_only`` where a label-only audit of a model with
        probabilities would otherwise pass."""
        if self.state is None:
            return ()
        # ties and broken FPR promises concern the thresholds: an AUC limit reads none
        thresholds = any(
            c.limit.metric != "auc" and not c.limit.metric.startswith("structure:")
            for c in self.checks
        )
        causes = tuple(n for n in self.state.causes if thresholds or n not in CAUSES)
        scope = (LABEL_ONLY,) if self.state.scope_open and self.limits_outcome != "above" else ()
        return causes + scope

    @property
    def attacker_sees(self) -> str | None:
        """What the attacker the audit modelled sees (None without a state)."""
        return self.state.attacker_sees if self.state is not None else None

    @property
    def limits_outcome(self) -> str:
        """What the limits' checks alone decide: ``"above"`` if any limit is shown
        exceeded, else ``"unresolved"`` if any is open, else ``"below"``."""
        outcomes = {c.outcome for c in self.checks}
        return (
            "above"
            if "above" in outcomes
            else ("unresolved" if "unresolved" in outcomes else "below")
        )

    @property
    def outcome(self) -> str:
        """:attr:`limits_outcome`, or ``"unresolved"`` where the inputs contradict
        themselves (:attr:`blocked_by`)."""
        return "unresolved" if self.blocked_by else self.limits_outcome

    @property
    def passed(self) -> bool:
        """Below every limit, or unresolved by the limits with ``unresolved="pass"``;
        never where the inputs contradict themselves."""
        if self.blocked_by:
            return False
        return self.outcome == "below" or (
            self.outcome == "unresolved" and self.unresolved == "pass"
        )

    @property
    def exit_status(self) -> int:
        """0 (passed), 1 (a limit exceeded) or 3 (cannot tell, failing)."""
        if self.outcome == "above":
            return EXIT_ABOVE
        return EXIT_BELOW if self.passed else EXIT_UNRESOLVED

    def lines(self) -> list[str]:
        """One line per limit, the names accepted (and those the audit did not raise),
        then the decision."""
        state = self.state
        accepted = [n for n in state.accepted if n in state.raised] if state is not None else []
        ignored = list(state.not_raised) if state is not None else []
        if self.unit == "person":
            from tabmia.report.verdict import in_persons

            return [in_persons(line) for line in self._lines(accepted, ignored)]
        return self._lines(accepted, ignored)

    def _lines(self, accepted: list[str], ignored: list[str]) -> list[str]:
        return (
            [c.line(self.attacker_sees) for c in self.checks]
            + (
                [f"accepted warnings (checked by the user, not deciding): {', '.join(accepted)}"]
                if accepted
                else []
            )
            + (
                [
                    f"--accept-warning {', '.join(ignored)}: this audit raised no such "
                    "finding, so there was nothing to accept"
                ]
                if ignored
                else []
            )
            + [self.summary()]
        )

    def _for_whom(self) -> str:
        """The attacker the decision holds for, as a clause."""
        state = self.state
        if state is None:
            return ""
        if not state.labels_only:
            return " for an attacker who sees the model's probabilities"
        return " for an attacker who sees only the model's decisions" + (
            f" ({LABEL_ONLY} accepted: the model's probabilities were not audited)"
            if state.hidden_scores
            else ""
        )

    def _blocked_summary(self) -> str:
        assert self.state is not None
        names = self.blocked_by
        why = []
        contradictions = [n for n in names if n in CONTRADICTIONS]
        if contradictions:
            why.append(f"the inputs contradict themselves ({', '.join(contradictions)})")
        why += [f"{CAUSES[n][0]} ({n})" for n in names if n in CAUSES]
        if LABEL_ONLY in names:
            why.append(
                "the audit modelled an attacker who sees only the model's decisions, but the "
                f"model also gives probabilities, which no attack was given ({LABEL_ONLY})"
            )
        return (
            f"CANNOT TELL (exit status {EXIT_UNRESOLVED}): "
            + "; ".join(why)
            + f", so no limit's check above is evidence (they say {self.limits_outcome}). "
            "To fix: "
            + "; ".join(self.state.fixes(names))
            + ". Having checked, --accept-warning NAME "
            "(accept_warnings=[NAME] in Python) lets the limits decide"
        )

    def summary(self) -> str:
        """The decision in one line, with the exit status and the attacker it holds for."""
        if self.blocked_by:
            return self._blocked_summary()
        whom = self._for_whom()
        if self.outcome == "above":
            over = ", ".join(c.limit.name for c in self.checks if c.outcome == "above")
            return f"FAIL (exit status {EXIT_ABOVE}): the audit shows {over} above the limit{whom}"
        if self.outcome == "below":
            return f"PASS (exit status {EXIT_BELOW}): the audit shows every limit met{whom}"
        open_ = ", ".join(c.limit.name for c in self.checks if c.outcome == "unresolved")
        if self.unresolved == "pass":
            return (
                f"PASS (exit status {EXIT_BELOW}, --unresolved pass): the audit cannot "
                f"tell whether {open_} is within its limit{whom}"
            )
        return (
            f"CANNOT TELL (exit status {EXIT_UNRESOLVED}): the audit cannot tell whether "
            f"{open_} is within its limit; more records narrow the intervals, or "
            "--unresolved pass lets it pass"
        )

    def to_dict(self) -> dict[str, Any]:
        """The decision as JSON-ready values (``results.json``'s ``gate``)."""
        return {
            "outcome": self.outcome,
            "passed": self.passed,
            "exit_status": self.exit_status,
            "unresolved": self.unresolved,
            "limits_outcome": self.limits_outcome,
            "attacker_sees": self.attacker_sees,
            "blocked_by": list(self.blocked_by),
            "accepted_warnings": list(self.state.accepted if self.state else ()),
            "accepted_not_raised": list(self.state.not_raised if self.state else ()),
            "checks": [c.to_dict() for c in self.checks],
        }


def evaluate_gate(
    result: Any,
    limits: str | Iterable[str | RiskLimit],
    *,
    unresolved: str = "fail",
    delta: float | None = None,
    accept_warnings: Iterable[str] = (),
    slices: Any = None,
    structure: Any = None,
    named: Any = None,
) -> GateResult:
    """Check an audit against risk limits.

    Parameters
    ----------
    result : ExperimentResult
        From :func:`tabmia.audit.audit_model` or
        :class:`~tabmia.experiment.MembershipExperiment`.
    limits : str or iterable of str or RiskLimit
        E.g. ``"tpr@0.01=0.05,auc=0.6"`` (see the module docstring for each metric).
    unresolved : {"fail", "pass"}, default="fail"
        What a limit the audit cannot resolve returns (not where the inputs contradict
        themselves: that fails until fixed or accepted).
    delta : float, default=None
        δ of the ``epsilon`` limit; by default the audit's (``metrics["delta"]``, set by
        ``tabmia audit --delta``), else :data:`tabmia.metrics.DEFAULT_DELTA`, the CLI's
        default.
    accept_warnings : iterable of str, default=()
        Names the user has checked and overrides (:data:`tabmia.report.state.WARNING_NAMES`:
        the findings ``fit_gap``, ``label_shift``, ``auc_below_chance``; the causes
        ``ties``, ``fpr_not_kept``; the scope ``label_only``), each once; recorded in the
        result, with those the audit did not raise.

    slices : SliceReport or DataFrame, default=None
        The audit's slice report (:func:`tabmia.slices.slice_report`) or its ``table``,
        which a ``slice:tpr@<fpr>`` limit reads.
    structure : StructureFindings, default=None
        A tree model file's structural findings
        (:func:`tabmia.structure.structural_findings`), which a ``structure:<finding>``
        limit reads.
    named : NamedResult, default=None
        The audit's named list (:func:`tabmia.named.named_members`) at the ``q`` of a
        ``named@<q>`` limit, which reads it.

    Returns
    -------
    GateResult

    Raises
    ------
    ValueError
        For no limit, a malformed one, a metric limited twice, an unknown finding name,
        or a slice limit without ``slices``.
    """
    if unresolved not in ("fail", "pass"):
        raise ValueError(f"unresolved must be 'fail' or 'pass', got {unresolved!r}")
    items = [limits] if isinstance(limits, (str, RiskLimit)) else list(limits)
    checked: list[RiskLimit] = []
    for item in items:
        checked += [item] if isinstance(item, RiskLimit) else list(parse_limits(item))
    if not checked:
        raise ValueError("no limit given")
    names = [lim.name for lim in checked]
    if len(set(names)) < len(names):
        raise ValueError(f"{max(names, key=names.count)} is limited twice")
    state = verdict_state(result, accept_warnings=accept_warnings, confidence=CONFIDENCE)
    metrics = result.metrics
    if delta is None:
        delta = float(metrics["delta"].iloc[0]) if "delta" in metrics else DEFAULT_DELTA
    checks = []
    for lim in checked:
        if lim.metric == "auc":
            checks.append(check_auc(metrics, lim))
            continue
        if lim.metric == "named":
            from tabmia.named._gate import check_named

            checks.append(check_named(named, lim))
            continue
        if lim.metric == "slice_tpr":
            if slices is None:
                raise ValueError(
                    f"{lim}: a slice limit needs the audit's slices (slices= a slice report, "
                    "from audit_model(..., slices=) and tabmia.slices.slice_report)"
                )
            checks.append(check_slice_tpr(getattr(slices, "table", slices), lim))
            continue
        if lim.metric.startswith("structure:"):
            if structure is None:
                raise ValueError(
                    f"{lim}: a structural limit needs the model file's structural findings "
                    "(structure=, from tabmia.structure.structural_findings on a tree model)"
                )
            checks.append(check_structure(structure, lim))
            continue
        summary = own_threshold_summary(metrics, confidence=CONFIDENCE)
        checks.append(
            check_tpr(summary, lim, tie_reach(result.scores, lim.fpr or 0.0), CONFIDENCE)
            if lim.metric == "tpr"
            else check_epsilon(summary, lim, delta)
        )
    return GateResult(tuple(checks), unresolved, state, getattr(result, "unit", "record"))
