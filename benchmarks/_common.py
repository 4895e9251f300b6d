"""Shared plumbing of the benchmark scripts: machine facts, versions, result files,
the run set-up (data home, output folder, torch threads) and the MLP data sets and target
of the Jayaraman et al. protocol that several scripts reuse."""

from __future__ import annotations

import argparse
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
    results = results_dir()
    machine = machine_info()
    payload = {"benchmark": name, "machine": machine, **payload}
    json_path = results / f"{name}.json"
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
    md_path = results / f"{name}.md"
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


def prepare_run(args: argparse.Namespace) -> None:
    """Data home, output folder and torch threads of a benchmark run."""
    use_shared_data()
    if getattr(args, "out", None):
        set_results_dir(args.out)
    threads = getattr(args, "threads", None)
    if threads:
        try:
            import torch

            torch.set_num_threads(int(threads))
        except ImportError:
            pass


def set_results_dir(path: str | Path) -> Path:
    """Send this run's files to ``path`` (created) instead of benchmarks/results."""
    global RESULTS
    RESULTS = Path(path).resolve()
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS


def results_dir() -> Path:
    """Where this run writes its files (``--out`` or benchmarks/results)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS


def device_note() -> str:
    """Where torch MLPs train in this run, in words."""
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if torch.cuda.is_available():
        return f"GPU ({torch.cuda.get_device_name(0)})"
    return f"CPU (no CUDA device; torch threads: {torch.get_num_threads()})"


def pct(values: Any) -> str:
    """``mean ± std`` of rates as percentages (1 decimal), or ``n/a``."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "n/a"
    sd = v.std(ddof=1) if v.size > 1 else 0.0
    return f"{100 * v.mean():.1f} ± {100 * sd:.1f}"


def missing_data_exit(
    missing: dict[str, str], asked: list[str], *, name: str = "benchmark"
) -> None:
    """Exit non-zero when no requested data set is present (``name``: the script's)."""
    if missing and len(missing) == len(asked):
        print(
            f"{name}: none of the requested data sets is present "
            f"({', '.join(missing)}); nothing to run.",
            file=sys.stderr,
        )
        sys.exit(2)


def minmax_onehot(frame: Any, min_frequency: float | None) -> np.ndarray:
    """One-hot categorical columns, numeric columns median-imputed and scaled to [0, 1]."""
    import pandas as pd
    from sklearn.preprocessing import OneHotEncoder

    cat = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    num = [c for c in frame.columns if c not in cat]
    parts = []
    if num:
        a = frame[num].to_numpy(dtype=np.float64, na_value=np.nan)
        med = np.nanmedian(a, axis=0)
        a = np.where(np.isnan(a), med, a)
        lo, hi = a.min(axis=0), a.max(axis=0)
        parts.append((a - lo) / np.where(hi > lo, hi - lo, 1.0))
    if cat:
        enc = OneHotEncoder(
            min_frequency=min_frequency, handle_unknown="infrequent_if_exist",
            sparse_output=False,
        )
        parts.append(enc.fit_transform(frame[cat].astype(str).fillna("missing")))
    return np.hstack(parts).astype(np.float32)


def load_numeric(name: str, *, l2_normalise: bool = True) -> dict[str, Any]:
    """A data set as a dense float32 matrix the paper's MLP takes.

    Purchase-100 / Texas-100 as distributed (binary features); Adult and Diabetes
    130-US one-hot encoded (Diabetes: categories seen in fewer than 0.1% of the
    records merged into one "infrequent" column; one encounter per patient, the
    first, so that no patient is both a member and a non-member), numeric columns
    scaled to [0, 1]. Rows are then scaled to unit L2 norm (the paper's pre-processing).
    The encoding is fitted on the whole data set (population-level pre-processing).

    Raises
    ------
    tabmia.datasets.DataNotFoundError
        When the data set is not in the data home.
    """
    from tabmia import datasets as ds

    note = ""
    if name == "purchase100":
        b = ds.fetch_purchase100()
        X, y = np.asarray(b.data, dtype=np.float32), np.asarray(b.target)
        note = "600 binary features as distributed"
    elif name == "texas100":
        b = ds.fetch_texas100()
        X, y = b.data, np.asarray(b.target)  # sparse; densified per split
        note = "binary features as distributed"
    elif name == "diabetes130":
        b = ds.load_diabetes130()
        groups = np.asarray(b.groups)
        _, first = np.unique(groups, return_index=True)
        first = np.sort(first)
        frame = b.data.iloc[first].reset_index(drop=True)
        y = np.asarray(b.target)[first]
        X = minmax_onehot(frame, min_frequency=0.001)
        note = (
            f"first encounter per patient ({first.size:,} of {len(groups):,}); 3 classes "
            "(readmitted NO / >30 / <30); one-hot with categories < 0.1% merged"
        )
    elif name == "adult":
        b = ds.load_adult()
        X = minmax_onehot(b.data, min_frequency=None)
        y = np.asarray(b.target)
        note = "one-hot categorical, numeric scaled to [0, 1]"
    else:
        raise ValueError(
            f"unknown data set {name!r}; choose from purchase100, texas100, diabetes130, adult"
        )
    if l2_normalise and not hasattr(X, "tocsr"):
        X = _l2(X)
    return {"X": X, "y": y, "note": note, "n_features": int(X.shape[1])}


def _l2(X: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / np.where(norm > 0, norm, 1.0)).astype(np.float32)


def take_dense(X: Any, idx: np.ndarray) -> np.ndarray:
    """Rows ``idx`` as a dense, L2-normalised float32 matrix (sparse Texas-100 too)."""
    rows = X[idx]
    if hasattr(rows, "toarray"):
        return _l2(np.asarray(rows.toarray(), dtype=np.float32))
    return np.asarray(rows, dtype=np.float32)


def paper_mlp(epochs: int, seed: int) -> Any:
    """The paper's target: 2 x 256 ReLU, Adam, batch 200, lr 0.005."""
    from tabmia.shadow import TorchMLPClassifier

    return TorchMLPClassifier(
        hidden_layer_sizes=(256, 256), epochs=epochs, batch_size=200, lr=0.005,
        device="auto", random_state=seed,
    )


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and its live children (the workers)."""
    import psutil

    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:  # a worker that just exited
            pass
    return total
