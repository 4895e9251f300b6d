"""Model back ends: for each library that trains tabmia's models, what tabmia must know.

One :class:`Backend` record per library (the torch MLP, CatBoost, XGBoost, LightGBM,
scikit-learn): its factory, how it sees a GPU, the parameters that place it on a device
and set its threads, and the parameters that change how a model is computed but not
which model (left out of the shadow cache's fingerprint). The shadow scheduler, the
cache, the thread settings of the command line, the quantile attack's regressor, the
recipes and the boosting factories all read these records; adding a back end means
adding a record here (and its test).

``device`` uses the one vocabulary of :mod:`tabmia._device` (``"auto"``, ``"cpu"``,
``"cuda"``, ``"cuda:N"``). ``"auto"`` means the GPU where it pays:

- the torch MLP: whenever torch sees a GPU (many MLPs train as one batched network, which
  fills a GPU at any size);
- CatBoost and XGBoost: when the library can use a GPU *and* a model trains on at least
  :func:`auto_gpu_rows` rows: :data:`GPU_MIN_ROWS` (10^5), or
  :data:`GPU_ROWS_PER_CORE` (2*10^4) per CPU core where that is more. On smaller data
  the CPU is faster. Measured on an H100 with 16 CPU cores
  (``benchmarks/results/gpu_shadows.md``; one CatBoost model, 300 iterations, depth 6,
  30 features): 10^4 rows 1.6 s on the GPU, 1.1 s on 16 threads, 1.8 s on 2; 10^5 rows
  1.5 / 1.9 / 4.8 s; 10^6 rows 2.1 / 10.0 / 39.8 s. A GPU holds one fit at a time while
  the CPU trains shadows in parallel jobs, so per shadow model the CPU costs about its
  2-thread time divided by half the cores: the GPU pays from about 2*10^4 rows per
  core (on 16 cores between 10^5 rows, where 8 CPU jobs take 0.6 s a model against the
  GPU's 1.5 s, and 10^6, 5.0 s against 2.1 s). XGBoost follows the same rule, not
  measured on a GPU here. Without a row count, "auto" is the CPU for them;
- LightGBM and scikit-learn: always the CPU (LightGBM's GPU needs a custom build).

Libraries are imported only when a record is asked something that needs them.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tabmia import _device
from tabmia._device import resolve_device_name

__all__ = [
    "GPU_MIN_ROWS",
    "GPU_ROWS_PER_CORE",
    "auto_gpu_rows",
    "Backend",
    "BACKENDS",
    "backend_of",
    "estimators_in",
    "execution_params",
    "set_device",
    "set_threads",
    "training_device",
    "final_model",
    "release_fit_state",
    "has_device",
    "gpu_present",
]

#: Fewest training rows from which ``device="auto"`` puts CatBoost and XGBoost on a GPU.
GPU_MIN_ROWS = 100_000
#: Training rows per CPU core from which the GPU beats a machine's cores (see above).
GPU_ROWS_PER_CORE = 20_000


def auto_gpu_rows(min_rows: int = GPU_MIN_ROWS) -> int:
    """Training rows from which ``device="auto"`` picks the GPU on this machine.

    ``max(min_rows, GPU_ROWS_PER_CORE * cores)``, ``cores`` as joblib counts them (the
    processors this process may use).
    """
    import joblib

    return max(int(min_rows), GPU_ROWS_PER_CORE * max(1, int(joblib.cpu_count())))


# ------------------------------------------------------------------ GPU probes
@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 for the block: C libraries print there themselves.

    (CatBoost's GPU count prints "Error 35 (CUDA driver version is insufficient ...)"
    on machines without a GPU driver.) Output of other threads in that moment is lost.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real descriptor 2 (embedded consoles)
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@functools.cache
def _catboost_gpus() -> int:
    """GPUs CatBoost can use (asked once per process, quietly; CPU-only builds give 0)."""
    try:
        from catboost.utils import get_gpu_device_count
    except ImportError:
        return 0
    with _quiet_stderr():
        try:
            return int(get_gpu_device_count())
        except Exception:  # noqa: BLE001 - a broken driver counts as no GPU
            return 0


@functools.cache
def _visible_gpus() -> int:
    """CUDA devices on this machine, from ``nvidia-smi -L`` (else CatBoost's count)."""
    if shutil.which("nvidia-smi") is not None:
        try:
            out = subprocess.run(
                ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            out = None
        if out is not None and out.returncode == 0:
            return sum(line.startswith("GPU ") for line in out.stdout.splitlines())
    return _catboost_gpus()


@functools.cache
def _xgboost_gpus() -> int:
    """GPUs XGBoost can use: a CUDA build (not the ``xgboost-cpu`` wheel) on a GPU machine."""
    try:
        import xgboost
    except ImportError:
        return 0
    try:
        built_with_cuda = bool(xgboost.build_info().get("USE_CUDA", False))
    except Exception:  # noqa: BLE001
        built_with_cuda = False
    return _visible_gpus() if built_with_cuda else 0


def _no_gpus() -> int:
    return 0


def _check_vocabulary(device: Any) -> str:
    """``device`` as text, refused (ValueError) outside the vocabulary; probes nothing."""
    text = "auto" if device is None else device
    if type(text).__module__ == "torch":
        text = str(text)
    resolve_device_name(text, n_gpus=lambda: 1, check_index=False)
    return text


def _torch_gpus() -> int:
    return _device._torch_gpus()


def gpu_present() -> bool:
    """Whether any library tabmia uses can see a CUDA device on this machine."""
    return _visible_gpus() > 0 or _torch_gpus() > 0


# ------------------------------------------------- device parameters per library
def _device_param(name: str) -> dict[str, Any]:
    return {"device": name}


def _device_from_param(params: dict[str, Any]) -> str:
    value = params.get("device")
    if value is None:
        return "cpu"
    text = str(value)
    return "cuda" + text[3:] if text.startswith("gpu") else text


def _catboost_params(name: str) -> dict[str, Any]:
    if name == "cpu":
        return {"task_type": "CPU", "devices": None}
    if ":" in name:
        return {"task_type": "GPU", "devices": name.split(":", 1)[1]}
    return {"task_type": "GPU", "devices": None}


def _catboost_device(params: dict[str, Any]) -> str:
    if str(params.get("task_type") or "CPU").upper() != "GPU":
        return "cpu"
    devices = params.get("devices")
    return f"cuda:{devices}" if devices is not None and str(devices).isdigit() else "cuda"


# ------------------------------------------------------------------- the records
@dataclass(frozen=True)
class Backend:
    """What tabmia knows about one library that trains models.

    Attributes
    ----------
    name : str
        Short name (``"catboost"``).
    label : str
        The library's name in messages (``"CatBoost"``).
    modules : tuple of str
        Top-level modules whose classes (anywhere in an estimator's MRO) belong to it.
    factory : str or None
        ``"module:callable"`` building an unfitted model with tabmia's defaults.
    device_params : tuple of str
        Parameters that place a model on a device; empty: no device notion.
    thread_params : tuple of str
        Parameters that set a model's threads (the first is the one tabmia sets).
    default_threads : tuple
        Values of the thread parameter that mean "the library's default".
    execution_params : frozenset of str
        Parameters that change how a model is computed, not which model.
    gpu_min_rows : int or None
        ``"auto"`` uses a GPU from this many training rows, or from
        :func:`auto_gpu_rows` where that is more (0: whenever one is seen; None: never).
    thread_invariant : bool
        The fitted model does not depend on its thread count (checked by the tests), so
        the scheduler may give a job more than one thread. scikit-learn's ensembles are
        (their trees are seeded one by one); CatBoost is not (on Adult, one and two
        threads gave other models), nor are XGBoost, LightGBM and torch.
    gpu_unsupported : tuple of str
        Losses its GPU build refuses (they train on the CPU).
    probe : callable or str
        Number of GPUs the library can use (a str names a function of this module).
    lists_all_params : bool
        ``get_params`` lists every parameter (CatBoost lists only those it was given).
    thread_modules : tuple of str
        Modules whose models tabmia gives threads through ``thread_params`` (empty: all
        of the library's). scikit-learn: the ensembles, where ``n_jobs`` trains trees in
        parallel (elsewhere it often does nothing, or is deprecated).
    """

    name: str
    label: str
    modules: tuple[str, ...]
    factory: str | None
    device_params: tuple[str, ...] = ()
    thread_params: tuple[str, ...] = ()
    default_threads: tuple[Any, ...] = (None,)
    execution_params: frozenset[str] = frozenset()
    gpu_min_rows: int | None = None
    thread_invariant: bool = False
    gpu_unsupported: tuple[str, ...] = ()
    probe: Callable[[], int] | str = "_no_gpus"
    lists_all_params: bool = True
    thread_modules: tuple[str, ...] = ()
    to_params: Callable[[str], dict[str, Any]] = field(default=_device_param, repr=False)
    from_params: Callable[[dict[str, Any]], str] = field(default=_device_from_param, repr=False)

    def gpu_count(self) -> int:
        """GPUs this library can use here (0 without one, or without a device notion)."""
        probe = globals()[self.probe] if isinstance(self.probe, str) else self.probe
        return int(probe())

    def owns(self, estimator: Any) -> bool:
        """Whether ``estimator`` is a model of this library."""
        roots = {k.__module__.split(".", 1)[0] for k in type(estimator).__mro__}
        return bool(roots & set(self.modules))

    def resolve(self, device: Any = "auto", *, n_rows: int | None = None) -> str:
        """``device`` as ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` for this library.

        ``"auto"`` follows the module's rule (``gpu_min_rows``; ``n_rows`` is the number
        of rows a model trains on). CUDA the library cannot use warns and gives the CPU.
        """
        if device is None or (isinstance(device, str) and device == "auto"):
            if self.gpu_min_rows is None or not self.device_params:
                return "cpu"
            if self.gpu_min_rows > 0 and (
                n_rows is None or n_rows < auto_gpu_rows(self.gpu_min_rows)
            ):
                return "cpu"  # decided without probing a driver
        elif not self.device_params:
            _check_vocabulary(device)
            return "cpu"
        return resolve_device_name(device, n_gpus=self.gpu_count, library=self.label, stacklevel=3)

    def device_settings(self, device: Any = "auto", *, n_rows: int | None = None) -> dict:
        """The model parameters that put it on ``device`` (empty without a device notion)."""
        if not self.device_params:
            return {}
        if self.gpu_min_rows == 0:  # the model resolves "auto" itself, where it trains
            return self.to_params(_check_vocabulary(device))
        return self.to_params(self.resolve(device, n_rows=n_rows))

    def make(self, *, device: Any = "auto", n_rows: int | None = None, **params: Any) -> Any:
        """An unfitted model from the factory, on ``device`` (see :meth:`resolve`)."""
        if self.factory is None:
            raise ValueError(f"the {self.label} back end has no factory")
        module, _, attr = self.factory.partition(":")
        model = getattr(importlib.import_module(module), attr)(**params)
        if not any(p in params for p in self.device_params):
            set_device(model, device, n_rows=n_rows)
        return model


_COMMON_EXECUTION = frozenset({"verbose", "n_jobs"})

BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            name="torch",
            label="torch",
            modules=("torch",),
            factory="tabmia.shadow.torch_mlp:TorchMLPClassifier",
            device_params=("device",),
            execution_params=_COMMON_EXECUTION | {"device"},
            gpu_min_rows=0,
            probe="_torch_gpus",
        ),
        Backend(
            name="catboost",
            label="CatBoost",
            modules=("catboost",),
            factory="tabmia.shadow.boosting:catboost_classifier",
            device_params=("task_type", "devices"),
            thread_params=("thread_count",),
            default_threads=(None, -1),
            execution_params=_COMMON_EXECUTION
            | {
                "verbosity",
                "silent",
                "logging_level",
                "thread_count",
                "task_type",
                "devices",
                "allow_writing_files",
                "train_dir",
                "gpu_ram_part",
                "used_ram_limit",
            },
            gpu_min_rows=GPU_MIN_ROWS,
            gpu_unsupported=("MultiQuantile",),
            probe="_catboost_gpus",
            lists_all_params=False,
            to_params=_catboost_params,
            from_params=_catboost_device,
        ),
        Backend(
            name="xgboost",
            label="XGBoost",
            modules=("xgboost",),
            factory="tabmia.shadow.boosting:xgboost_classifier",
            device_params=("device",),
            thread_params=("n_jobs", "nthread"),
            execution_params=_COMMON_EXECUTION | {"device", "nthread", "verbosity"},
            gpu_min_rows=GPU_MIN_ROWS,
            probe="_xgboost_gpus",
        ),
        Backend(
            name="lightgbm",
            label="LightGBM",
            modules=("lightgbm",),
            factory="tabmia.shadow.boosting:lightgbm_classifier",
            thread_params=("n_jobs", "num_threads"),
            default_threads=(None, -1),
            execution_params=_COMMON_EXECUTION | {"num_threads", "verbosity"},
        ),
        Backend(
            name="sklearn",
            label="scikit-learn",
            modules=("sklearn",),
            factory=None,
            thread_params=("n_jobs",),
            execution_params=_COMMON_EXECUTION,
            thread_invariant=True,
            thread_modules=("sklearn.ensemble",),
        ),
    )
}

_FALLBACK = BACKENDS["sklearn"]


def _mlp_class() -> type | None:
    module = sys.modules.get("tabmia.shadow.torch_mlp")
    return None if module is None else module.TorchMLPClassifier


def backend_of(estimator: Any) -> Backend:
    """The back end of one model (not of a Pipeline's steps: see :func:`estimators_in`).

    ``TorchMLPClassifier`` is the torch back end; a class of an unknown library counts
    as scikit-learn (no device notion, ``n_jobs`` threads where it has them).
    """
    mlp = _mlp_class()
    if mlp is not None and isinstance(estimator, mlp):
        return BACKENDS["torch"]
    for backend in BACKENDS.values():
        if backend.name != "torch" and backend.owns(estimator):
            return backend
    return _FALLBACK


def estimators_in(estimator: Any) -> list[tuple[str, Any]]:
    """``(parameter prefix, object)`` for ``estimator`` and every estimator nested in it.

    The prefix is ``""`` for ``estimator`` itself and ``"<key>__"`` for a nested one,
    ready to prefix its parameter names in ``estimator.set_params``.
    """
    if not hasattr(estimator, "get_params") or isinstance(estimator, type):
        return []
    out = [("", estimator)]
    for key, value in estimator.get_params(deep=True).items():
        if hasattr(value, "get_params") and not isinstance(value, type):
            out.append((f"{key}__", value))
    return out


@functools.cache
def execution_params() -> frozenset[str]:
    """Parameter names of any back end that change how a model is computed, not which."""
    return frozenset().union(*(b.execution_params for b in BACKENDS.values()))


def set_device(estimator: Any, device: Any, *, n_rows: int | None = None) -> list[str]:
    """Put every model in ``estimator`` (Pipeline steps too) on ``device``, in place.

    Parameters
    ----------
    estimator : estimator
        A model or a meta-estimator holding models.
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where to train (see :meth:`Backend.resolve`; CUDA a library cannot use warns
        and gives the CPU).
    n_rows : int, default=None
        Rows a model trains on, for the ``"auto"`` rule.

    Returns
    -------
    list of str
        The back ends (names) that took the device; empty when no model in
        ``estimator`` has a device notion.
    """
    taken: list[str] = []
    updates: dict[str, Any] = {}
    for prefix, obj in estimators_in(estimator):
        backend = backend_of(obj)
        settings = backend.device_settings(device, n_rows=n_rows)
        if not settings:
            continue
        taken.append(backend.name)
        own = obj.get_params(deep=False)
        for key, value in settings.items():
            if value is None and own.get(key) is None:
                continue  # CatBoost lists only the parameters it was given
            updates[prefix + key] = value
    if updates:
        estimator.set_params(**updates)
    return taken


def set_threads(estimator: Any, threads: int | None, *, only_unset: bool = False) -> list[str]:
    """Set the thread parameter of every model in ``estimator`` to ``threads``, in place.

    With ``only_unset``, a model whose thread parameter the user set keeps it. Returns
    the back ends (names) that took it.
    """
    if threads is None:
        return []
    taken: list[str] = []
    updates: dict[str, Any] = {}
    for prefix, obj in estimators_in(estimator):
        backend = backend_of(obj)
        if backend.thread_modules and not type(obj).__module__.startswith(backend.thread_modules):
            continue
        own = obj.get_params(deep=False)
        names = [p for p in backend.thread_params if p in own]
        if not names and not backend.lists_all_params and backend.thread_params:
            names = [backend.thread_params[0]]
        if not names:
            continue
        if only_unset and any(own.get(p) not in backend.default_threads for p in names):
            continue
        taken.append(backend.name)
        updates[prefix + names[0]] = int(threads)
    if updates:
        estimator.set_params(**updates)
    return taken


def has_device(estimator: Any) -> bool:
    """Whether a model in ``estimator`` (Pipeline steps too) can be put on a device."""
    return any(backend_of(obj).device_params for _prefix, obj in estimators_in(estimator))


def final_model(estimator: Any) -> Any:
    """The model at the end of a Pipeline (or inside a meta-estimator's ``estimator``)."""
    seen = 0
    while seen < 32:  # nesting depth guard
        seen += 1
        steps = getattr(estimator, "steps", None)
        if isinstance(steps, list) and steps:
            estimator = steps[-1][1]
            continue
        inner = (
            estimator.get_params(deep=False).get("estimator")
            if hasattr(estimator, "get_params")
            else None
        )
        if inner is not None and hasattr(inner, "get_params"):
            estimator = inner
            continue
        return estimator
    return estimator


def release_fit_state(estimator: Any) -> Any:
    """``estimator`` fitted, without what its library still holds from the training.

    A CatBoost model fresh from ``fit`` holds memory in proportion to its training
    records (about 0.8 KB a record with categorical features, measured on CatBoost 1.2)
    until it is copied; its copy is the serialised model that pickling hands to another
    process, and predicts the same.
    Other models, and unfitted ones, are returned as they are; a Pipeline's final step
    is replaced in place.
    """
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and steps:
        name, last = steps[-1]
        steps[-1] = (name, release_fit_state(last))
        return estimator
    fitted = getattr(estimator, "is_fitted", None)
    if backend_of(estimator).name == "catboost" and callable(fitted) and fitted():
        return estimator.copy()
    return estimator


def training_device(estimator: Any) -> tuple[str, Backend]:
    """Where ``estimator`` trains as configured, and the back end that trains it.

    The device is ``"cuda"`` / ``"cuda:N"`` when a model in ``estimator`` (Pipeline
    steps too) is set to train on a GPU that its library sees (an MLP with
    ``device="auto"`` on a machine where torch sees a GPU), else ``"cpu"``. The back
    end is that model's, else the one of :func:`final_model`.
    """
    for _prefix, obj in estimators_in(estimator):
        backend = backend_of(obj)
        if not backend.device_params:
            continue
        params = obj.get_params(deep=False)
        if backend.gpu_min_rows == 0:  # resolved by the model where it trains
            with warnings.catch_warnings():  # the model warns itself when it trains
                warnings.simplefilter("ignore", RuntimeWarning)
                name = resolve_device_name(
                    params.get("device", "auto"), n_gpus=backend.gpu_count, library=backend.label
                )
        else:
            name = backend.from_params(params)
        if name != "cpu":
            return name, backend
    return "cpu", backend_of(final_model(estimator))
