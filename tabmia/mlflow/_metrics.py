"""An audit's results.json as MLflow metrics, tags and the promotion gate's threshold.

Every number logged is one results.json holds: the rates of its ``rates`` section (each
with its interval bounds), the verdict's state and the privacy gate's decision, so that
the run and the evidence file never disagree.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["GATE_METRIC", "audit_metrics", "audit_tags", "gate_thresholds"]

#: The metric MLflow's promotion gate reads: 1 where tabmia's gate passed, else 0.
GATE_METRIC = "tabmia/gate/passed"
_PREFIX = "tabmia"
_VERDICTS = ("risk shown", "risk not shown", "cannot tell")
#: A rate's name in the metric: what the attacker achieves at its own threshold
#: (``tpr_own``), the oracle's ROC reading (``tpr_at_fpr_<fpr>``), the AUC, the ε bound.
_MEASURES = {
    "tpr_at_own_threshold": "tpr_own",
    "auc": "auc",
    "epsilon_lower_bound": "epsilon_lower",
}


def _name(*parts: Any) -> str:
    """A metric name MLflow accepts (alphanumerics, ``_-. /``), parts joined by ``/``."""
    return "/".join(re.sub(r"[^\w.\- ]", "_", str(p)) for p in parts)


def audit_metrics(payload: dict[str, Any]) -> dict[str, list[tuple[float, int]]]:
    """Metric name -> ``[(value, step), ...]`` of a results.json payload (schema 2).

    Per rate ``tabmia/<unit>/<attack>/<measure>`` with ``_low`` / ``_high`` for its
    interval; at the attack's own threshold also ``fpr_own`` (delivered, with its
    bounds) and ``fpr_promised``. The step is the seed's index (0 for one seed). Then
    ``tabmia/verdict/<state>`` (1 for the audit's state, 0 for the others) and, with
    limits, ``tabmia/gate/passed``, ``tabmia/gate/exit_status`` and per limit
    ``tabmia/gate/<limit>/above`` (1 where the audit shows it exceeded).
    """
    out: dict[str, list[tuple[float, int]]] = {}

    def put(name: str, value: Any, step: int = 0) -> None:
        if value is not None:
            out.setdefault(name, []).append((float(value), step))

    rates = payload.get("rates") or []
    seeds = sorted({r["seed"] for r in rates if r.get("seed") is not None})
    for rate in rates:
        measure = rate["measure"]
        short = f"tpr_at_fpr_{rate['fpr']:g}" if measure == "tpr_at_fpr" else _MEASURES[measure]
        base = _name(_PREFIX, rate["unit"], rate["attack"], short)
        step = seeds.index(rate["seed"]) if rate.get("seed") in seeds else 0
        put(base, rate["value"], step)
        interval = rate.get("interval") or {}
        put(base + "_low", interval.get("low"), step)
        put(base + "_high", interval.get("high"), step)
        delivered = rate.get("fpr_delivered")
        if delivered:
            fpr = _name(_PREFIX, rate["unit"], rate["attack"], "fpr_own")
            put(fpr, delivered["value"], step)
            put(fpr + "_low", delivered["interval"].get("low"), step)
            put(fpr + "_high", delivered["interval"].get("high"), step)
            put(
                _name(_PREFIX, rate["unit"], rate["attack"], "fpr_promised"),
                rate.get("fpr_promised"),
                step,
            )
    state = (payload.get("state") or {}).get("state")
    for verdict in _VERDICTS:
        put(_name(_PREFIX, "verdict", verdict.replace(" ", "_")), float(state == verdict))
    gate = payload.get("gate")
    if gate:
        put(GATE_METRIC, float(bool(gate["passed"])))
        put(_name(_PREFIX, "gate", "exit_status"), gate["exit_status"])
        for check in gate.get("checks") or []:
            put(
                _name(_PREFIX, "gate", check["metric"], "above"), float(check["outcome"] == "above")
            )
    return out


def audit_tags(payload: dict[str, Any]) -> dict[str, str]:
    """The run's tags: the verdict's state, what the attacker saw, the unit, the gate's
    outcome and the schema version of results.json."""
    state = payload.get("state") or {}
    gate = payload.get("gate")
    tags = {
        "tabmia.verdict": str(state.get("state")),
        "tabmia.attacker_sees": str((payload.get("attacker") or {}).get("sees")),
        "tabmia.unit": str(payload.get("unit", "record")),
        "tabmia.schema_version": str(payload.get("schema_version", 1)),
        "tabmia.version": str(payload.get("tabmia_version")),
    }
    if gate:
        tags["tabmia.gate"] = str(gate["outcome"])
    return tags


def gate_thresholds() -> dict[str, Any]:
    """MLflow's thresholds for a promotion gate that agrees with tabmia's own.

    For ``mlflow.models.validate_evaluation_results(gate_thresholds(), result)``: it
    passes exactly where the tabmia evaluator's gate (``evaluator_config["limits"]``,
    :func:`tabmia.gate.evaluate_gate`) passed, and raises MLflow's
    ``ModelValidationFailedException`` otherwise (a limit shown exceeded, or an audit
    that cannot tell under ``unresolved="fail"``).
    """
    from mlflow.models import MetricThreshold

    return {GATE_METRIC: MetricThreshold(threshold=1.0, greater_is_better=True)}
