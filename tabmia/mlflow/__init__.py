"""Audits where models live: models from MLflow, audits logged and gated in MLflow.

- :func:`load_mlflow_model` loads ``models:/name@alias``, ``models:/name/3``,
  ``runs:/...`` or a local MLflow model folder through MLflow's own loaders: the native
  flavour where there is one, so the audit queries probabilities; a pyfunc that gives
  labels only is audited label-only, and says so (``tabmia audit --model-uri``).
- :class:`TabmiaEvaluator` is MLflow's evaluator plugin ``tabmia``:
  ``mlflow.models.evaluate(uri, members, targets=..., model_type="classifier",
  evaluators=["tabmia"], evaluator_config={"population": ..., "limits": ...})`` runs
  ``tabmia audit`` and logs its metrics, ``report.html`` and ``results.json`` into the
  run; :func:`gate_thresholds` gives MLflow's ``validate_evaluation_results`` a
  promotion gate that agrees with tabmia's (:mod:`tabmia.gate`).
- :func:`log_audit_run` logs an audit's folder as a run (``tabmia audit --mlflow``).

MLflow is an optional extra (``pip install 'tabmia[mlflow]'``); this package imports it,
``import tabmia`` does not. Importing it registers the evaluator with MLflow where
tabmia's ``mlflow.model_evaluator`` entry point is not installed.
"""

from __future__ import annotations

from tabmia.mlflow._evaluator import CONFIG_KEYS, TabmiaEvaluator, register_evaluator
from tabmia.mlflow._loading import (
    NATIVE_FLAVORS,
    MLflowModel,
    PyfuncClassifier,
    load_mlflow_model,
)
from tabmia.mlflow._metrics import GATE_METRIC, audit_metrics, audit_tags, gate_thresholds
from tabmia.mlflow._run import ARTIFACTS, log_audit_files, log_audit_run

__all__ = [
    "load_mlflow_model",
    "MLflowModel",
    "PyfuncClassifier",
    "NATIVE_FLAVORS",
    "TabmiaEvaluator",
    "register_evaluator",
    "CONFIG_KEYS",
    "gate_thresholds",
    "GATE_METRIC",
    "audit_metrics",
    "audit_tags",
    "log_audit_run",
    "log_audit_files",
    "ARTIFACTS",
]

register_evaluator()
