"""Every kept model of a population scored on new records, in parallel chunks of records.

The models' statistics on candidates are the bulk of a reference-model attack's scoring
(over 90 % of LiRA's ``decision_function`` with tree shadows): they run where the
training ran, in joblib's workers (processes on this machine, or a Dask / Ray cluster
inside ``joblib.parallel_config``), one chunk of records per task with all the models.
A chunk of records moves to one worker once; the models, wrapped in one object, are
scattered once per call by joblib's Dask back end (it scatters any large argument that
can be weakly referenced, and reuses it across the call's tasks).

Each model scores a record from that record alone (trees, linear models, networks in
evaluation mode), and chunks are cut at multiples of the models' own batch
(:func:`~tabmia.shadow._training._chunk_rows`), so the scores are those of one model
after another in this process, bit for bit.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from tabmia._memory import chunk_bounds, record_bytes, release_freed_memory
from tabmia._rows import n_rows, take_rows
from tabmia.shadow._schedule import JobPlan
from tabmia.shadow._training import _chunk_rows, _statistic_row

__all__ = ["score_models"]

#: Copies of a chunk of records alive while it is scored: the driver's slice, the copy
#: a worker unpickles, and the model's own conversion of it (a float matrix, a Pool).
_RECORD_COPIES = 3


class _Models:
    """The fitted models as one weakly referable object (joblib's Dask back end then
    scatters them once per call instead of sending them with every task)."""

    def __init__(self, models: list[Any]) -> None:
        self.models = models


def _score_chunk(
    box: _Models,
    X: Any,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    threads: int | None,
) -> np.ndarray:
    """One task: every model's statistic on the records ``X``, ``(n_models, n)`` float32."""
    out = np.empty((len(box.models), n_rows(X)), dtype=np.float32)
    limits = threadpool_limits(limits=threads) if threads is not None else nullcontext()
    with limits:
        for k, model in enumerate(box.models):  # a loop over models, on one chunk
            out[k] = _statistic_row(model, X, y_idx, classes, statistic)
    release_freed_memory()  # the chunk's copies and the models' conversions of it
    return out


def score_models(
    models: list[Any],
    X: Any,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    *,
    plan: JobPlan,
    max_memory: int,
    dtype: Any = np.float32,
) -> np.ndarray:
    """Every model's statistic on every record, ``(n_models, n)``.

    Parameters
    ----------
    models : list of fitted estimators
    X : array-like, sparse matrix or DataFrame of shape (n, d)
    y_idx : ndarray of int of shape (n,)
        Labels as indices into ``classes``.
    classes : ndarray
        Score column order.
    statistic : str
        A :data:`tabmia.scores.SCORE_NAMES` entry.
    plan : JobPlan
        Jobs and threads per job (:func:`~tabmia.shadow._schedule.plan_jobs`); work
        on GPUs is scored in this process, on the device each model holds.
    max_memory : int
        Bytes the chunks scored at once may hold.
    dtype : numpy dtype, default=np.float32
        Of the result. The models' float32 scores are cast block by block as they
        arrive (a float64 result holds them exactly, without a serial pass at the end).

    Returns
    -------
    ndarray of shape (n_models, n)
    """
    n = n_rows(X)
    out = np.empty((len(models), n), dtype=dtype)
    if n == 0 or not models:
        return out
    jobs = 1 if plan.gpus else max(1, int(plan.n_jobs))
    row_bytes = _RECORD_COPIES * record_bytes(X) + 4 * len(models)
    batch = _chunk_rows(classes.size)
    chunks = chunk_bounds(n, row_bytes, max_memory, parts=jobs, multiple=batch)
    box = _Models(models)
    if jobs == 1 or len(chunks) == 1:
        for sl in chunks:  # a loop over chunks of records
            out[:, sl] = _score_chunk(box, take_rows(X, sl), y_idx[sl], classes, statistic, None)
        return out
    from joblib import Parallel, delayed

    tasks = (
        delayed(_score_chunk)(box, take_rows(X, sl), y_idx[sl], classes, statistic, plan.threads)
        for sl in chunks
    )
    # in order, as each finishes, so that finished blocks do not pile up in memory
    try:
        parallel = Parallel(n_jobs=jobs, return_as="generator")
    except ValueError:  # a back end without generators
        parallel = Parallel(n_jobs=jobs)
    for sl, block in zip(chunks, parallel(tasks)):
        out[:, sl] = block
    return out
