"""tabmia as an MLflow model evaluator: ``mlflow.models.evaluate(..., evaluators=["tabmia"])``.

The evaluation data are the records the model was trained on (the members), with their
labels (``targets``); ``evaluator_config["population"]`` holds records of the same
population it did not train on. The evaluator runs ``tabmia audit`` on them (the same
audit, checks, verdict and gate as the command), logs its metrics
(:func:`tabmia.mlflow.audit_metrics`), ``report.html`` and ``results.json`` into the
evaluation's run, and returns the metrics, with ``tabmia/gate/passed`` where limits were
given, which :func:`tabmia.mlflow.gate_thresholds` turns into MLflow's promotion gate.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Any

from mlflow.exceptions import MlflowException
from mlflow.models.evaluation.base import EvaluationResult, ModelEvaluator

__all__ = ["CONFIG_KEYS", "TabmiaEvaluator", "register_evaluator"]

#: evaluator_config keys the evaluator reads itself; every other key is a flag of
#: ``tabmia audit`` (``n_shadow=4`` is ``--n-shadow 4``, a list is comma-joined, True a
#: switch), so the evaluator takes what the command takes.
CONFIG_KEYS = {
    "population": "records the model did not train on, with the label column: a "
    "DataFrame or a CSV / parquet path (required)",
    "limits": "the privacy gate's limits, as --fail-above: 'tpr@0.01=0.05,auc=0.6' or a list",
    "model_uri": "the model to audit, where mlflow.models.evaluate was given a model "
    "object (by default the evaluated model's URI)",
}
#: Flags the evaluator sets itself.
_OWN_FLAGS = {"train", "population", "label", "model_uri", "model_file", "out", "mlflow"}


class TabmiaEvaluator(ModelEvaluator):
    """MLflow's evaluator plugin ``tabmia``: a membership inference audit of a classifier.

    Registered under the ``mlflow.model_evaluator`` entry point of tabmia's package
    (:func:`register_evaluator` registers it in a process where the entry point is not
    installed). Its ``evaluator_config`` keys: :data:`CONFIG_KEYS`, and any flag of
    ``tabmia audit`` by its name (``attacks``, ``fpr``, ``recipe``, ``n_shadow``,
    ``random_state``, ``unresolved``, ``accept_warnings``, ``group_column`` ...).
    """

    name = "tabmia"

    @classmethod
    def can_evaluate(cls, *, model_type: Any, evaluator_config: Any, **kwargs: Any) -> bool:
        """Classifiers only: membership attacks read a classifier's outputs."""
        return model_type == "classifier"

    def evaluate(
        self,
        *,
        model_type: Any,
        dataset: Any,
        run_id: str,
        evaluator_config: dict[str, Any],
        model: Any = None,
        extra_metrics: Any = None,
        custom_artifacts: Any = None,
        predictions: Any = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """Audit the model against ``evaluator_config["population"]``; log and return the
        metrics, ``report.html`` and ``results.json``."""
        from tabmia.cli import UsageError, run_audit_argv
        from tabmia.mlflow._metrics import audit_metrics
        from tabmia.mlflow._run import log_audit_files

        config = dict(evaluator_config or {})
        uri = _model_uri(config, model, kwargs.get("model_id"))
        label = dataset.targets_name or "label"
        if not dataset.has_targets:
            raise MlflowException(
                "tabmia evaluator: the evaluation data need their labels (targets=): they "
                "are the records the model was trained on"
            )
        with tempfile.TemporaryDirectory(prefix="tabmia-mlflow-") as tmp:
            folder = Path(tmp)
            train, population = _write_data(folder, dataset, config.pop("population", None), label)
            argv = [
                "--model-uri", uri, "--train", str(train), "--population", str(population),
                "--label", label, "--out", str(folder / "audit"), "--quiet",
                *_flags(config),
            ]  # fmt: skip
            command = "mlflow.models.evaluate(evaluators=['tabmia']): tabmia audit " + shlex.join(
                argv
            )
            try:
                run_audit_argv(argv, command)
            except UsageError as exc:
                raise MlflowException(f"tabmia evaluator: {exc}") from exc
            payload = log_audit_files(folder / "audit", run_id)
        metrics = {name: values[-1][0] for name, values in audit_metrics(payload).items()}
        return EvaluationResult(metrics=metrics, artifacts={}, run_id=run_id)


def _model_uri(config: dict[str, Any], model: Any, model_id: Any) -> str:
    """The URI of the model to audit: the config's, else the evaluated model's."""
    uri = config.pop("model_uri", None)
    if uri is not None:
        return str(uri)
    model_id = model_id or getattr(model, "model_id", None)
    if model_id:
        return f"models:/{model_id}"
    source = getattr(getattr(model, "metadata", None), "artifact_path", None)
    run_id = getattr(getattr(model, "metadata", None), "run_id", None)
    if run_id and source:
        return f"runs:/{run_id}/{source}"
    raise MlflowException(
        "tabmia evaluator: cannot tell where the evaluated model is stored; pass its URI "
        "to mlflow.models.evaluate, or evaluator_config={'model_uri': ...}"
    )


def _write_data(folder: Path, dataset: Any, population: Any, label: str) -> tuple[Path, Path]:
    """The members (the evaluation data) and the population as parquet files, which keep
    the columns' types (categories too) for the audit."""
    import pandas as pd

    features = dataset.features_data
    if not isinstance(features, pd.DataFrame):
        features = pd.DataFrame(features, columns=dataset.feature_names)
    train = features.assign(**{label: list(dataset.labels_data)})
    if population is None:
        raise MlflowException(
            "tabmia evaluator: evaluator_config needs 'population': records of the same "
            f"population that the model did not train on, with the label column {label!r} "
            "(a DataFrame, or a CSV / parquet path)"
        )
    if isinstance(population, (str, Path)):
        from tabmia.cli._inputs import read_table

        population = read_table(Path(population), "evaluator_config['population']")
    if not isinstance(population, pd.DataFrame):
        raise MlflowException(
            "tabmia evaluator: evaluator_config['population'] must be a DataFrame or a path, "
            f"got {type(population).__name__}"
        )
    paths = folder / "train.parquet", folder / "population.parquet"
    train.to_parquet(paths[0], index=False)
    population.to_parquet(paths[1], index=False)
    return paths


def _flags(config: dict[str, Any]) -> list[str]:
    """The evaluator_config's other keys as flags of ``tabmia audit``."""
    limits = config.pop("limits", None)
    if limits is not None:
        config["fail_above"] = limits
    taken = sorted(set(config) & _OWN_FLAGS)
    if taken:
        raise MlflowException(
            f"tabmia evaluator: evaluator_config key {taken[0]!r} is set by the evaluator "
            "(the evaluation data are the training records; 'population' the others)"
        )
    flags = _audit_flags()
    unknown = sorted(str(k) for k in config if k not in flags)
    if unknown:
        raise MlflowException(
            f"tabmia evaluator: evaluator_config key {unknown[0]!r} is no flag of tabmia "
            f"audit (the evaluator's own keys: {', '.join(CONFIG_KEYS)}; the flags, by "
            "their names with underscores: attacks, fpr, recipe, n_shadow, random_state ...)"
        )
    argv: list[str] = []
    for key, value in config.items():
        flag = flags[key]
        if value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            argv += [flag, ",".join(map(str, value))]
        else:
            argv += [flag, str(value)]
    return argv


def _audit_flags() -> dict[str, str]:
    """``tabmia audit``'s flags by destination (``accept_warnings``: ``--accept-warning``)."""
    import argparse

    from tabmia.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    audit = commands.choices["audit"]
    return {
        a.dest: a.option_strings[0]
        for a in audit._actions
        if a.option_strings and a.dest not in ("help", "config")
    }


def register_evaluator() -> bool:
    """Register :class:`TabmiaEvaluator` as ``"tabmia"`` with MLflow in this process,
    where tabmia's ``mlflow.model_evaluator`` entry point did not (an editable install
    made before it existed); returns whether it had to."""
    from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry

    if _model_evaluation_registry.is_registered(TabmiaEvaluator.name):
        return False
    _model_evaluation_registry.register(TabmiaEvaluator.name, TabmiaEvaluator)
    return True
