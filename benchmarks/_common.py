"""Shared plumbing of the benchmark scripts: machine facts, versions, result files."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

#: Reported name -> installed distribution (read from its metadata: nothing is imported).
_PACKAGES = {
    "tabmia": "tabmia", "numpy": "numpy", "scipy": "scipy", "pandas": "pandas",
    "sklearn": "scikit-learn", "catboost": "catboost", "xgboost": "xgboost",
    "lightgbm": "lightgbm", "optuna": "optuna", "torch": "torch", "joblib": "joblib",
    "dask": "dask", "distributed": "distributed", "ray": "ray",
}


def use_shared_data() -> None:
    """Point TABMIA_DATA at ../shared/data when it exists and nothing else is set."""
    if "TABMIA_DATA" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TABMIA_DATA"] = str(SHARED_DATA)


def machine_info() -> dict[str, Any]:
    """CPU, cores, memory, GPU (if any) and package versions of this run."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as fh:
            info["mem_total_gb"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    versions = {}
    for name, dist in _PACKAGES.items():
        try:
            versions[name] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            # xgboost installs as xgboost-cpu
            versions[name] = _first_version(dist + "-cpu")
    info["versions"] = versions
    try:
        import torch

        info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        info["gpu"] = None
    return info


def _first_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def write_results(name: str, payload: dict[str, Any], markdown: str) -> tuple[Path, Path]:
    """Write ``results/<name>.json`` (payload + machine) and ``results/<name>.md``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    machine = machine_info()
    payload = {"benchmark": name, "machine": machine, **payload}
    json_path = RESULTS / f"{name}.json"
    json_path.write_text(json.dumps(_jsonable(payload), indent=2) + "\n")
    header = (
        f"# {name}\n\n"
        f"Machine: {machine.get('cpu_model', machine['processor'])}, "
        f"{machine['cpu_count']} cores, {machine.get('mem_total_gb', '?')} GB, "
        f"GPU: {machine['gpu'] or 'none'}; Python {machine['python']}; {machine['date']}\n\n"
        "Versions: "
        + ", ".join(f"{k} {v}" for k, v in machine["versions"].items() if v)
        + "\n\n"
    )
    md_path = RESULTS / f"{name}.md"
    md_path.write_text(header + markdown.rstrip() + "\n")
    return json_path, md_path


def present_datasets(
    keys: Iterable[str], loader: Callable[[str], Any], report: dict[str, Any]
) -> Iterator[tuple[str, Any]]:
    """``(key, loader(key))`` for each data set the data home holds.

    A data set that is absent is skipped: the loader's message (the paths it looked for
    and where to get the file) goes to stderr and into ``report["not_present"][key]``.
    """
    from tabmia.datasets import DataNotFoundError

    for key in keys:
        try:
            data = loader(key)
        except DataNotFoundError as exc:
            print(f"{key}: not present, skipped.\n{exc}", file=sys.stderr, flush=True)
            report["not_present"][key] = str(exc)
            continue
        yield key, data


def load_note(load: dict[str, Any]) -> str:
    """A markdown line on how busy the machine was (other jobs inflate wall times).

    ``load`` holds ``os.getloadavg()`` at the ``"start"`` and ``"end"`` of the run.
    """
    cores = os.cpu_count() or 1
    busy = max(load["start"][0], load["end"][0]) > cores  # the run itself counts ~1
    return (
        "\n\nLoad average (1/5/15 min) at start "
        + "/".join(f"{v:.1f}" for v in load["start"]) + ", at end "
        + "/".join(f"{v:.1f}" for v in load["end"])
        + f" on {cores} cores: "
        + ("above the core count, other jobs shared the CPU and wall times are inflated."
           if busy else "no other jobs of note were running.")
    )


def mean_std(values: Any) -> str:
    """``mean ± std`` of the finite values, or ``n/a``."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "n/a"
    return f"{v.mean():.3f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.3f}"
