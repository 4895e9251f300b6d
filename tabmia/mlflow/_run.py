"""An audit's folder logged to MLflow: metrics, tags and the evidence files as artifacts."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tabmia.mlflow._metrics import audit_metrics, audit_tags

__all__ = ["ARTIFACTS", "log_audit_files", "log_audit_run"]

#: The files of an audit's folder logged as artifacts (those present).
ARTIFACTS = ("report.html", "results.json", "results.md", "roc.png")


def log_audit_files(out: Path, run_id: str, artifact_path: str | None = None) -> dict[str, Any]:
    """Log the audit written to ``out`` (``tabmia audit --out``) into the run ``run_id``.

    Parameters
    ----------
    out : Path
        The audit's folder: its results.json gives the metrics and tags.
    run_id : str
        An MLflow run of the tracking server in force.
    artifact_path : str, default=None
        Folder of the run's artifacts to put the files in.

    Returns
    -------
    dict
        The results.json payload logged.
    """
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    out = Path(out)
    payload: dict[str, Any] = json.loads((out / "results.json").read_text(encoding="utf-8"))
    client = MlflowClient()
    now = int(time.time() * 1000)
    metrics = [
        Metric(name, value, now, step)
        for name, values in audit_metrics(payload).items()
        for value, step in values
    ]
    tags = [RunTag(k, v) for k, v in audit_tags(payload).items()]
    for start in range(0, max(len(metrics), 1), 1000):  # MLflow's batch limit
        client.log_batch(
            run_id, metrics=metrics[start : start + 1000], tags=tags if start == 0 else []
        )
    for name in ARTIFACTS:
        if (out / name).is_file():
            client.log_artifact(run_id, str(out / name), artifact_path)
    return payload


def log_audit_run(out: Path, *, experiment: str, run_name: str | None = None) -> str:
    """Log the audit in ``out`` as a new run of ``experiment`` (created if missing);
    its run id. What ``tabmia audit --mlflow EXPERIMENT`` does."""
    import mlflow

    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=run_name or "tabmia audit") as run:
        payload = json.loads((Path(out) / "results.json").read_text(encoding="utf-8"))
        mlflow.log_param("tabmia.command", str(payload.get("command", ""))[:6000])
        log_audit_files(Path(out), run.info.run_id)
        run_id: str = run.info.run_id
    return run_id
