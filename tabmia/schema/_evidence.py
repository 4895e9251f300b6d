"""The evidence sections of ``results.json``: every rate with its unit, interval, FPR and
attacker, the attacker model, and the regulator checklist's coverage.

Built from the JSON-ready payload alone (what ``tabmia audit`` writes), so that the
sections say exactly what the file's own tables hold.
"""

from __future__ import annotations

import math
from typing import Any

#: The ``schema_version`` written into results.json (``tabmia.schema`` ships its schema).
SCHEMA_VERSION = 2
#: What the audit's intervals are, by measure.
CONFIDENCE = 0.95
_CLOPPER_PEARSON = "clopper-pearson"
_BOOTSTRAP = "percentile bootstrap (members and non-members resampled apart)"

#: The tests a regulator's checklist names (EDPB Opinion 28/2024: membership and
#: attribute inference, reconstruction; a DP claim checked against an audit), in order.
CHECKLIST = (
    "membership_per_record",
    "membership_per_person",
    "attribute_inference",
    "reconstruction",
    "dp_claim",
)

#: The attacker's view, in results.json's vocabulary, from the verdict state's words.
_SEES = {"probabilities": "probabilities", "decisions only": "labels"}


def add_evidence(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with ``schema_version``, ``unit``, ``attacker``, ``rates`` and
    ``coverage`` added (the payload's other keys untouched).

    Parameters
    ----------
    payload : dict
        What ``tabmia audit`` writes to results.json (``metrics``, ``config``,
        ``context``, ``state``; ``record_metrics`` for a person-level audit;
        ``reconstruction``, ``named``, ``structure`` where an audit ran them).

    Returns
    -------
    dict
        A new dict; ``schema_version`` first.
    """
    unit = payload.get("unit") or "record"
    attacker = attacker_model(payload)
    sees = _attacks_see(payload)  # the attacks' view; a structure finding's is white-box
    rates = rate_entries(payload.get("metrics") or [], unit, sees)
    if unit == "person" and payload.get("record_metrics"):
        rates = rate_entries(payload["record_metrics"], "record", sees) + rates
    return {
        "schema_version": SCHEMA_VERSION,
        **payload,
        "unit": unit,
        "attacker": attacker,
        "rates": rates,
        "coverage": coverage(payload, unit),
    }


def attacker_model(payload: dict[str, Any]) -> dict[str, Any]:
    """What the modelled attacker sees and which public data it holds, overall and per
    attack (the models it trains on those records, with which recipe)."""
    context = payload.get("context") or {}
    sees = _attacks_see(payload)
    public = _count(context.get("attacker public records"))
    per_attack: dict[str, dict[str, Any]] = {}
    for row in payload.get("metrics") or []:
        name = str(row.get("attack"))
        n_models = _number(row.get("n_models"))
        per_attack.setdefault(
            name,
            {
                "attack": name,
                "sees": sees,
                "trains_models": n_models is not None and n_models > 0,
                "n_models": _count(n_models),
                "model_recipe": row.get("model_recipe") or None,
                "target_queries": _count(row.get("n_queries")),
            },
        )
    return {
        # the strongest view any analysis of the file had
        "sees": "white-box" if payload.get("structure") else sees,
        "public_data": {
            "records": public,
            "description": (
                "records of the same population that the model did not train on, held by "
                "the attacker; each attack's threshold (and any shadow / reference model) "
                "comes from these alone, never from the candidates' membership"
            ),
        },
        "shadow_recipe": context.get("shadow recipe"),
        "attacks": list(per_attack.values()),
    }


def rate_entries(metrics: list[dict[str, Any]], unit: str, sees: str) -> list[dict[str, Any]]:
    """One entry per rate of each metrics row: the attacker's TPR and FPR at its own
    threshold (FPR promised and delivered), the oracle's TPR at each reported FPR, the
    AUC and the ε lower bound, each with its interval."""
    out: list[dict[str, Any]] = []
    for row in metrics:
        base: dict[str, Any] = {
            "attack": str(row.get("attack")),
            "unit": unit,
            "attacker_sees": sees,
        }
        if row.get("seed") is not None:
            base["seed"] = int(row["seed"])
        promised = _number(row.get("fpr_target"))
        delivered = _rate(row, "fpr", "fp", "n_nonmembers")
        tpr = _rate(row, "tpr", "tp", "n_members")
        if tpr is not None:
            out.append(
                {
                    **base,
                    "measure": "tpr_at_own_threshold",
                    "oracle": False,
                    **tpr,
                    "fpr_promised": promised,
                    "fpr_requested": _number(row.get("fpr_requested")),
                    "fpr_delivered": delivered,
                }
            )
        for key in sorted(k for k in row if k.startswith("tpr@") and "_" not in k):
            value = _number(row.get(key))
            if value is None:
                continue
            out.append(
                {
                    **base,
                    "measure": "tpr_at_fpr",
                    "oracle": True,
                    "fpr": float(key.split("@", 1)[1]),
                    "value": value,
                    "interval": _interval(row, key, _CLOPPER_PEARSON),
                }
            )
        auc = _number(row.get("auc"))
        if auc is not None:
            out.append(
                {
                    **base,
                    "measure": "auc",
                    "oracle": True,
                    "value": auc,
                    "interval": _interval(row, "auc", _BOOTSTRAP),
                }
            )
        epsilon = _number(row.get("epsilon_lower"))
        if epsilon is not None:
            out.append(
                {
                    **base,
                    "measure": "epsilon_lower_bound",
                    "oracle": False,
                    "value": epsilon,
                    "delta": _number(row.get("delta")),
                    "confidence": CONFIDENCE,
                }
            )
    return out


def coverage(payload: dict[str, Any], unit: str) -> list[dict[str, Any]]:
    """Each checklist test (:data:`CHECKLIST`) as run or not run, with the reason and
    the results.json key that holds its result."""
    config = payload.get("config") or {}
    has_metrics = bool(payload.get("metrics"))
    record_key = "record_metrics" if unit == "person" else "metrics"
    reconstruction = payload.get("reconstruction")
    claimed = config.get("epsilon")
    items = [
        (
            "membership_per_record",
            has_metrics,
            "membership inference attacks scored each record (metrics, rates)"
            if has_metrics
            else "no attack was run",
            record_key,
        ),
        (
            "membership_per_person",
            unit == "person",
            "persons were audited whole: a person is a member when any of their records "
            "trained the model"
            if unit == "person"
            else "no person id was given (--group-column): each record counts alone",
            "metrics" if unit == "person" else None,
        ),
        (
            "attribute_inference",
            False,
            "tabmia runs no attribute inference attack: its attacks infer membership",
            None,
        ),
        (
            "reconstruction",
            bool(reconstruction),
            "training records were reconstructed from the model (reconstruction)"
            if reconstruction
            else "this audit ran no reconstruction attack",
            "reconstruction" if reconstruction else None,
        ),
        (
            "dp_claim",
            claimed is not None,
            f"the attacks' ε lower bounds were compared with the claimed ε = {claimed}"
            if claimed is not None
            else "no differential-privacy ε was claimed (--epsilon): the ε lower bounds are "
            "reported, no claim is checked",
            "rates" if claimed is not None else None,
        ),
    ]
    return [
        {"test": test, "status": "run" if ran else "not run", "reason": reason, "where": where}
        for test, ran, reason, where in items
    ]


# ------------------------------------------------------------------ helpers
def _attacks_see(payload: dict[str, Any]) -> str:
    """What the membership attacks saw: the model's probabilities or its labels."""
    state = payload.get("state") or {}
    return _SEES.get(str(state.get("attacker_sees")), "probabilities")


def _number(value: Any) -> float | None:
    """A finite float, or None (JSON's null, NaN)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _interval(row: dict[str, Any], key: str, method: str) -> dict[str, Any]:
    return {
        "low": _number(row.get(f"{key}_low")),
        "high": _number(row.get(f"{key}_high")),
        "confidence": CONFIDENCE,
        "method": method,
    }


def _rate(row: dict[str, Any], key: str, count: str, total: str) -> dict[str, Any] | None:
    """A rate at the attack's own threshold: value, interval and its counts."""
    value = _number(row.get(key))
    if value is None:
        return None
    return {
        "value": value,
        "interval": _interval(row, key, _CLOPPER_PEARSON),
        "count": _count(row.get(count)),
        "of": _count(row.get(total)),
    }


def _count(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)
