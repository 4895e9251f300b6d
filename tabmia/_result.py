"""The result of a membership game: scores, metrics and what the checks found.

:class:`ExperimentResult` is what every runner returns (:class:`tabmia.experiment.
MembershipExperiment`, :func:`tabmia.audit.audit_model`, ``tabmia audit``) and what the
analyses read and make (:func:`tabmia.persons.person_result` returns one whose unit is
the person; :mod:`tabmia.slices` and :mod:`tabmia.named` read one). It lives below the
runners so that an analysis builds one without importing a runner;
:mod:`tabmia.experiment` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from tabmia.metrics import _empirical_epsilons

__all__ = ["ExperimentResult"]


@dataclass
class ExperimentResult:
    """Scores and metrics of a membership game over one or more seeds.

    Attributes
    ----------
    scores : DataFrame
        One row per (repeat, attack, candidate): ``record`` (row index in the data
        set), ``member`` (ground truth), ``score``, ``flagged`` (``score >= threshold_``).
    metrics : DataFrame
        One row per (repeat, attack) with every metric of :func:`attack_metrics`,
        plus ``fit_seconds``, ``score_seconds`` and ``n_queries`` (records the attack
        sent to the target, fit and scoring). ``tp`` / ``fp`` count the members /
        non-members the attack flags at its own ``threshold_`` (chosen without the
        candidates' membership): what the attacker achieves. ``tpr@<fpr>`` are ROC-curve
        points, reached only by a threshold set with the membership labels (an oracle).
    targets : list
        Fitted target of each repeat.
    splits : list of MembershipSplit
        The split of each repeat.
    target_accuracy : DataFrame
        Train and held-out accuracy of the target per repeat.
    attacks : list
        The fitted attacks.
    findings : tuple of tabmia.plausibility.Finding
        What the plausibility checks found in the inputs and the scores (empty when
        nothing, or when no check ran); the verdict and the gate decide from them
        (:mod:`tabmia.report.state`).
    calibration : DataFrame or None
        One row per (repeat, attack, calibration record) of every attack whose threshold
        was chosen for an FPR: the score it was chosen from, with the record's ``record``
        (row of the public data), ``person`` and ``slice:<name>`` (docs: records, persons
        and slices) where known. None when no attack aimed at an FPR.
    unit : {"record", "person"}, default="record"
        What a row of ``scores`` and a count of ``metrics`` is: a record, or a person
        (:func:`tabmia.persons.person_result`).
    structure : StructureFindings or None, default=None
        A tree model file's structural findings on its training records
        (:func:`tabmia.structure.structural_findings`), which ``tabmia audit`` adds to an
        audit of a tree model's file; None otherwise.
    """

    scores: pd.DataFrame
    metrics: pd.DataFrame
    targets: list = field(default_factory=list)
    splits: list = field(default_factory=list)
    target_accuracy: pd.DataFrame | None = None
    attacks: list = field(default_factory=list)
    findings: tuple = ()
    calibration: pd.DataFrame | None = None
    unit: str = "record"
    structure: Any = None

    def summary(self) -> pd.DataFrame:
        """Mean and standard deviation over repeats of each numeric metric, per attack."""
        numeric = self.metrics.drop(columns=["repeat", "seed"], errors="ignore")
        numeric = numeric.apply(pd.to_numeric, errors="coerce").assign(
            attack=self.metrics["attack"]
        )
        grouped = numeric.groupby("attack", sort=False)
        mean = grouped.mean()
        std = grouped.std(ddof=1).fillna(0.0)
        return pd.concat({"mean": mean, "std": std}, axis=1)

    def at_own_threshold(self) -> pd.DataFrame:
        """Each attack's decisions at its own threshold, per repeat.

        Returns
        -------
        DataFrame
            ``repeat``, ``seed``, ``attack``, ``threshold``, ``tp``, ``n_members``,
            ``tpr`` (with ``tpr_low`` / ``tpr_high``), ``fp``, ``n_nonmembers``,
            ``fpr`` (with ``fpr_low`` / ``fpr_high``): 95% Clopper-Pearson intervals.
        """
        cols = [
            "repeat",
            "seed",
            "attack",
            "threshold",
            "tp",
            "n_members",
            "tpr",
            "tpr_low",
            "tpr_high",
            "fp",
            "n_nonmembers",
            "fpr",
            "fpr_low",
            "fpr_high",
        ]
        return self.metrics[[c for c in cols if c in self.metrics]].reset_index(drop=True)

    def named(self, q: float = 0.1, **kwargs: Any) -> Any:
        """Whom an attacker with the public data could name as members at FDR ``q``.

        :func:`tabmia.named.named_members` of this result (``kwargs`` go to it); for
        persons, call it on :func:`tabmia.persons.person_result` of this result.

        Returns
        -------
        tabmia.named.NamedResult
        """
        from tabmia.named import named_members

        return named_members(self, q, **kwargs)

    def with_delta(self, delta: float, *, confidence: float = 0.95) -> ExperimentResult:
        """A copy whose empirical epsilon lower bounds are for (epsilon, ``delta``)-DP."""
        metrics = self.metrics.copy()
        eps = _empirical_epsilons(metrics, delta, confidence)
        metrics["epsilon"] = [e["epsilon"] for e in eps]
        metrics["epsilon_lower"] = [e["epsilon_lower"] for e in eps]
        metrics["delta"] = float(delta)
        return replace(self, metrics=metrics)
