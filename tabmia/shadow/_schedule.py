"""How shadow models use the machine: parallel jobs, threads per job, one job per GPU.

:func:`plan_jobs` decides, from where the recipe trains (:mod:`tabmia.backends`):

- GPU work (a model set to a GPU its library sees): one job per GPU, each job holding
  its device alone (:func:`gpu_slot`). A CatBoost GPU fit reserves most of the device's
  memory, so two on one GPU abort; a batched MLP group already fills a GPU. With
  ``device="cuda"`` and several GPUs, the jobs spread over all of them.
- CPU work: ``n_jobs`` jobs (None: every core, or the ``n_jobs`` of an enclosing
  ``joblib.parallel_config``). A job gets ``cores // jobs`` threads when its library's
  models do not depend on their thread count (scikit-learn's ensembles), else one
  (CatBoost, XGBoost, LightGBM, torch: their results change with it).

Thread counts and devices are set on each model's copy only where the recipe left
them unset, so an explicit ``thread_count`` or ``devices`` is kept.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["JobPlan", "plan_jobs", "gpu_slot", "torch_threads"]

#: Seconds between tries when every GPU of a job is held by another.
_POLL_S = 0.05


@dataclass(frozen=True)
class JobPlan:
    """How a population's models train.

    Attributes
    ----------
    n_jobs : int
        joblib jobs.
    threads : int
        Threads per job (set where the model's thread parameter is unset).
    gpus : tuple of str
        The GPUs a job takes one of (``"cuda:N"``); empty for CPU work.
    backend : str
        Name of the back end that trains the models.
    """

    n_jobs: int
    threads: int
    gpus: tuple[str, ...]
    backend: str


def _cpu_jobs(n_jobs: int | None) -> int:
    import joblib
    from joblib.parallel import get_active_backend

    if n_jobs is None:
        _backend, configured = get_active_backend()
        n_jobs = -1 if configured is None else configured
    return max(1, int(joblib.effective_n_jobs(n_jobs)))


def plan_jobs(recipe: Any, n_jobs: int | None, n_tasks: int) -> JobPlan:
    """Jobs, threads per job and GPUs for ``n_tasks`` training tasks of ``recipe``.

    Parameters
    ----------
    recipe : estimator
        The unfitted shadow recipe, device already set.
    n_jobs : int or None
        Requested jobs (None: as many as the hardware runs at once; -1: all cores, or
        all GPUs for GPU work). GPU work never gets more jobs than GPUs.
    n_tasks : int
        Tasks to run (more jobs than tasks would idle).

    Returns
    -------
    JobPlan
    """
    import joblib

    from tabmia.backends import training_device

    device, backend = training_device(recipe)
    cores = max(1, int(joblib.cpu_count()))
    n_tasks = max(1, int(n_tasks))
    if device.startswith("cuda"):
        if ":" in device:
            gpus: tuple[str, ...] = (device,)
        else:
            gpus = tuple(f"cuda:{i}" for i in range(max(1, backend.gpu_count())))
        wanted = len(gpus) if n_jobs is None or n_jobs < 0 else int(n_jobs)
        jobs = max(1, min(len(gpus), wanted, n_tasks))
        return JobPlan(jobs, max(1, cores // jobs), gpus, backend.name)
    jobs = max(1, min(_cpu_jobs(n_jobs), n_tasks))
    threads = max(1, cores // jobs) if backend.thread_invariant else 1
    return JobPlan(jobs, threads, (), backend.name)


def _lock_folder() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    folder = Path(tempfile.gettempdir()) / f"tabmia-gpu-locks-{uid}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def gpu_slot(gpus: Sequence[str], first: int = 0) -> Iterator[str | None]:
    """Hold one of ``gpus`` alone for the block; yields its name (None for no GPUs).

    An exclusive ``flock`` on a file per device (in the temporary folder) is held while
    the block runs, so that no other task of any process on this machine (joblib
    workers, other tabmia runs, pytest-xdist workers) trains on that GPU meanwhile. The
    devices are tried from ``first`` on (so that tasks spread over them); when all are
    held, the task waits. Where ``fcntl`` is missing (Windows) nothing is locked.
    """
    if not gpus:
        yield None
        return
    order = [gpus[(first + i) % len(gpus)] for i in range(len(gpus))]
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield order[0]
        return
    folder = _lock_folder()
    while True:
        for device in order:
            handle = open(folder / f"{device.replace(':', '-')}.lock", "a")  # noqa: SIM115
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                yield device
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        time.sleep(_POLL_S)


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """torch's intra-op threads set to ``threads`` for the block (when torch is loaded)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)
