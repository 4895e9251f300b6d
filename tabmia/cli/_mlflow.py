"""``tabmia audit --model-uri`` and ``--mlflow``: a model from MLflow, an audit logged to
MLflow. MLflow is an optional extra (``pip install 'tabmia[mlflow]'``); without it either
flag is one ``tabmia: error:`` line that names the extra."""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from tabmia.cli._inputs import UsageError

__all__ = [
    "add_mlflow_arguments",
    "check_mlflow_flags",
    "log_to_mlflow",
    "model_source",
    "uri_model",
]

_EXTRA = "pip install 'tabmia[mlflow]'"


def add_mlflow_arguments(own: Any, reporting: Any) -> None:
    """``--model-uri`` (in the own-model group) and ``--mlflow`` (with the outputs)."""
    own.add_argument(
        "--model-uri",
        default=None,
        metavar="URI",
        help="a model in MLflow instead of --model-file: models:/name@alias, "
        "models:/name/3, runs:/RUN_ID/PATH or a local MLflow model folder (the registry "
        "of MLFLOW_TRACKING_URI); native flavours (scikit-learn, XGBoost, LightGBM, "
        "CatBoost, PyTorch) are audited with their probabilities, a pyfunc that gives "
        "labels only as a label-only model. Needs the mlflow extra",
    )
    reporting.add_argument(
        "--mlflow",
        default=None,
        metavar="EXPERIMENT",
        help="also log the audit as a run of this MLflow experiment (MLFLOW_TRACKING_URI): "
        "its metrics, report.html and results.json. Needs the mlflow extra",
    )


def check_mlflow_flags(args: argparse.Namespace) -> None:
    """Refuse ``--model-uri`` / ``--mlflow`` without MLflow, and a model given twice."""
    uri, experiment = getattr(args, "model_uri", None), getattr(args, "mlflow", None)
    if uri is None and experiment is None:
        return
    if importlib.util.find_spec("mlflow") is None:
        flag = "--model-uri" if uri is not None else "--mlflow"
        raise UsageError(f"{flag} needs MLflow, which is not installed: {_EXTRA}")
    if uri is not None and args.model_file is not None:
        raise UsageError("give --model-file or --model-uri, not both")
    if uri is not None and not str(uri).strip():
        raise UsageError("--model-uri is empty: give models:/name@alias, runs:/... or a folder")
    if experiment is not None and not str(experiment).strip():
        raise UsageError("--mlflow is empty: give the name of an MLflow experiment")


def model_source(args: argparse.Namespace) -> Any:
    """What the command line named as the audited model: ``--model-file`` or
    ``--model-uri`` (None for precomputed outputs and the built-in game)."""
    return args.model_file if args.model_file is not None else getattr(args, "model_uri", None)


def uri_model(args: argparse.Namespace, labels: Any) -> tuple[Any, Any, str]:
    """``(model, classes, context line)`` of ``--model-uri``: the context line says how
    the model is audited; ``classes``, the labels of ``labels`` (label arrays, sorted
    together), for a model that names none itself (a torch module's logits, a pyfunc that
    answers with labels), else None."""
    import numpy as np

    from tabmia.mlflow._loading import load_mlflow_model

    try:
        loaded = load_mlflow_model(str(args.model_uri))
    except ValueError as exc:
        raise UsageError(f"--model-uri {exc}") from exc
    classes = None
    if not hasattr(loaded.model, "classes_"):
        classes = np.unique(np.concatenate([np.asarray(y) for y in labels]))
    return loaded.model, classes, f"{args.model_uri} ({loaded.note})"


def log_to_mlflow(args: argparse.Namespace) -> str | None:
    """Log the audit in ``--out`` as a run of ``--mlflow``'s experiment; its run id."""
    if getattr(args, "mlflow", None) is None:
        return None
    from tabmia.mlflow._run import log_audit_run

    try:
        return log_audit_run(args.out, experiment=str(args.mlflow))
    except Exception as exc:  # an unreachable server, a refused experiment name
        raise UsageError(
            f"--mlflow {args.mlflow}: cannot log the audit ({exc}); its files are in {args.out}"
        ) from exc
