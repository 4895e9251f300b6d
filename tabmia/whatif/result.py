"""What a what-if run keeps: one :class:`VariantRun` per variant and seed, the
:class:`WhatIfResult` that holds them, and the folder of finished runs it resumes from.

The analysis (paired intervals, the gate, the frontier, the plot, the text) lives in
:mod:`tabmia.whatif.frontier`; :class:`WhatIfResult`'s methods call it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmia.whatif.variants import Variant

__all__ = ["VariantRun", "WhatIfResult", "combine"]


@dataclass
class VariantRun:
    """One variant audited with one seed.

    Attributes
    ----------
    variant : str
        The variant's name.
    repeat : int
        Which seed of the run (0 for a single ``whatif`` call; :func:`combine` numbers them).
    random_state : int
        The seed every audit of this repeat used.
    scores, metrics : DataFrame
        :func:`tabmia.audit.audit_model`'s, with ``repeat`` set. A member's ``record`` is
        its row in the *original* training data (a person cap trains on fewer rows).
    findings : tuple
        The audit's plausibility findings.
    utility_y : ndarray of int
        Class index of each held-out utility record.
    utility_output : ndarray of shape (n_utility, n_classes)
        The variant's output on them: probabilities, or its labels as one-hot rows for a
        label-only variant.
    utility_pred : ndarray of int
        Class index of its decision on each (its ``predict``: hardening an output does not
        change the decision).
    label_only : bool
        The variant answers with labels only (audited with label-only attacks; no log-loss).
    attacks : list of str
        The attacks run on it.
    notes : list of str
        What the reader must know (attacks that could not run, shadows retrained, ...).
    dp_check : dict or None
        A DP variant's one-run audit of its ε claim (:class:`tabmia.dp.OneRunAudit`):
        ``epsilon_lower``, ``state``, ``sentence``, ``n_canaries``, ``canaries``.
    seconds : float
        Wall time of this variant (training, audit, utility, DP check).
    models_trained : int
        Shadow / reference models trained for it (those loaded from a cache or shared
        with another variant not counted).
    models_used : int
        Shadow / reference models its attacks used.
    named : dict or None
        Its audit's headline named list at FDR :data:`tabmia.named.DEFAULT_Q`
        (:func:`tabmia.named.named_members`): ``q``, ``n_named``, ``n_wrong``,
        ``n_members``, ``status``; None where no attack gives one.
    from_store : bool
        Loaded from the output folder instead of run.
    target : object or None
        The fitted variant (not kept in the output folder).
    person_metrics : DataFrame or None
        Where the run has person ids: the audit with persons as its unit
        (:func:`tabmia.persons.person_result`'s ``metrics``: persons flagged by the default
        person rule at a threshold calibrated on public persons), as ``tabmia audit``
        reports it.
    """

    variant: str
    repeat: int
    random_state: int
    scores: pd.DataFrame
    metrics: pd.DataFrame
    findings: tuple
    utility_y: np.ndarray
    utility_output: np.ndarray
    utility_pred: np.ndarray
    label_only: bool
    attacks: list[str]
    notes: list[str] = field(default_factory=list)
    dp_check: dict[str, Any] | None = None
    seconds: float = 0.0
    models_trained: int = 0
    models_used: int = 0
    named: dict[str, Any] | None = None
    from_store: bool = False
    target: Any = field(default=None, repr=False)
    person_metrics: pd.DataFrame | None = None


@dataclass
class WhatIfResult:
    """Every variant re-audited side by side, with what the analysis needs.

    Attributes
    ----------
    variants : list of Variant
        The original first.
    runs : list of VariantRun
        One per (variant, repeat).
    classes : ndarray
        The labels, in the column order of ``utility_output``.
    settings : dict
        ``limit`` (the gate), ``utility_metric``, ``confidence``, ``n_bootstrap``, ``fprs``,
        ``public_fraction``, ``utility_fraction``, the population rows audited and held
        out per repeat, and the run's total ``seconds``.
    inputs : dict
        The estimator, data and attacks of the run (in memory only), for :func:`reaudit
        <tabmia.whatif.reaudit>`.
    """

    variants: list[Variant]
    runs: list[VariantRun]
    classes: np.ndarray
    settings: dict[str, Any]
    inputs: dict[str, Any] = field(default_factory=dict, repr=False)
    _table: pd.DataFrame | None = field(default=None, init=False, repr=False, compare=False)

    # ----------------------------------------------------------------- access
    def variant(self, name: str) -> Variant:
        """The variant named ``name``."""
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"no variant {name!r}; the variants are {[v.name for v in self.variants]}")

    def runs_of(self, name: str) -> list[VariantRun]:
        """The runs of variant ``name``, by repeat."""
        self.variant(name)
        return sorted((r for r in self.runs if r.variant == name), key=lambda r: r.repeat)

    def audit(self, name: str) -> Any:
        """Variant ``name``'s audit as one :class:`~tabmia.experiment.ExperimentResult`
        (its repeats pooled, as the gate and the report read several seeds)."""
        from tabmia.whatif.frontier import audit_result

        return audit_result(self, name)

    def gate(self, name: str) -> Any:
        """:func:`tabmia.gate.evaluate_gate` of variant ``name`` at the run's limit."""
        from tabmia.whatif.frontier import variant_gate

        return variant_gate(self, name)

    # --------------------------------------------------------------- analysis
    def frontier(self) -> pd.DataFrame:
        """The privacy-utility table (:func:`tabmia.whatif.frontier.frontier_table`)."""
        from tabmia.whatif.frontier import frontier_table

        if self._table is None:  # its bootstraps are computed once: the runs do not change
            self._table = frontier_table(self)
        return self._table.copy()

    def delivered_fpr(self) -> pd.DataFrame:
        """Per variant and attack: the FPR promised and the FPR delivered on the candidates."""
        from tabmia.whatif.frontier import delivered_fpr_table

        return delivered_fpr_table(self)

    def best(self) -> str | None:
        """The variant that passes the gate with the least utility lost (None if none does)."""
        from tabmia.whatif.frontier import best_variant

        return best_variant(self.frontier())

    def summary(self) -> str:
        """The findings in words: what passes, the best variant, the selection caveat, the
        DP claims."""
        from tabmia.whatif.summary import summary_text

        return summary_text(self)

    def to_markdown(self) -> str:
        """The summary and the tables, as Markdown."""
        from tabmia.whatif.summary import markdown_report

        return markdown_report(self)

    def to_html(self, command: str | None = None) -> str:
        """The run as one self-contained HTML page, like ``tabmia audit``'s ``report.html``
        (:func:`tabmia.whatif.report.html_report`): the findings in words, the frontier
        figure, the table keyed by its numbers, the FPRs delivered and the cost."""
        from tabmia.whatif.report import html_report

        return html_report(self, command=command)

    def plot(self, path: Any = None, ax: Any = None) -> Any:
        """The privacy-utility frontier's figure (:func:`tabmia.whatif.summary.plot_frontier`;
        :class:`~tabmia.whatif.FrontierDisplay` keeps the axes and the Pareto line)."""
        from tabmia.whatif.summary import plot_frontier

        return plot_frontier(self, path=path, ax=ax)


def combine(results: list[WhatIfResult]) -> WhatIfResult:
    """Several what-if runs of the same variants (one per seed) as one, repeats pooled.

    Raises
    ------
    ValueError
        If the runs' variants differ.

    Returns
    -------
    WhatIfResult
    """
    if not results:
        raise ValueError("nothing to combine")
    names = [v.name for v in results[0].variants]
    runs = []
    for repeat, res in enumerate(results):
        if [v.name for v in res.variants] != names:
            raise ValueError("the runs to combine have different variants")
        for run in res.runs:
            scores = run.scores.assign(repeat=repeat)
            metrics = run.metrics.assign(repeat=repeat)
            pm = run.person_metrics
            person = None if pm is None else pm.assign(repeat=repeat)
            runs.append(
                replace(run, repeat=repeat, scores=scores, metrics=metrics, person_metrics=person)
            )
    settings = dict(results[0].settings)
    settings["seconds"] = float(sum(r.settings.get("seconds", 0.0) for r in results))
    settings["random_states"] = [r.settings.get("random_state") for r in results]
    return WhatIfResult(results[0].variants, runs, results[0].classes, settings, results[0].inputs)


class VariantStore:
    """One file per finished variant run, ``<name>-<key>.joblib``, in a folder.

    The file is written last and atomically, so a run is finished iff its file exists; a
    rerun with the same inputs loads it instead of running again. The key hashes
    everything the run depends on (data, attacks, seed, settings, the variant), so a
    change of any of them runs it again. Loading unpickles the file: keep the folder to
    yourself.
    """

    def __init__(self, folder: Any) -> None:
        self.folder = Path(folder)

    def path(self, name: str, key: str) -> Path:
        """The file of variant ``name`` under ``key``."""
        safe = "".join(c if c.isalnum() or c in "-_.=," else "_" for c in name)
        return self.folder / f"{safe}-{key[:16]}.joblib"

    def load(self, name: str, key: str) -> VariantRun | None:
        """The finished run, or None (a damaged file is run again)."""
        import joblib

        path = self.path(name, key)
        if not path.is_file():
            return None
        try:
            run = joblib.load(path)
        except Exception:  # noqa: BLE001 - a damaged file: run the variant again
            return None
        if not isinstance(run, VariantRun):
            return None
        run.from_store = True
        return run

    def save(self, key: str, run: VariantRun) -> None:
        """Write ``run`` (without its fitted target) atomically."""
        import joblib

        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(run.variant, key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        joblib.dump(replace(run, target=None), tmp)
        os.replace(tmp, path)
