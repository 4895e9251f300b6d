"""Every kept model of a population scored on new records, in parallel.

The models' statistics on candidates are the bulk of a reference-model attack's scoring
(over 90 % of LiRA's ``decision_function`` with tree shadows). They never run one model
after another in this process on one core:

- On this machine (no ``joblib.parallel_config`` back end chosen, or ``"threading"``),
  on numeric records, ``n_jobs`` threads share the work. The grid of models x batches of
  records, read model by model, is cut into one run of near-equal length per thread, so
  the threads finish together whatever the number of models or records; nothing is
  copied or sent. The models' prediction runs in native code that releases the GIL
  (trees, boosting libraries, BLAS, torch). A model is used by one thread at a time (a
  lock each), so a model whose ``predict`` is not thread-safe is still scored right. A
  model whose ``predict`` is Python code holding the GIL gains nothing from the threads:
  score it in processes by choosing a back end,
  ``with joblib.parallel_config(backend="loky"):``.
- Records with category, string or object columns, or with a back end chosen
  (``"loky"``, a Dask / Ray cluster): the work goes to joblib's workers, one chunk of
  records per task with all the models. (Models convert such values in Python code that
  holds the GIL, e.g. CatBoost's strings and their hashes: on threads, a CatBoost audit's
  candidates scored slower than in processes.) A chunk of records moves to one worker
  once; the models, wrapped in one object, are scattered once per call by joblib's Dask
  back end (it scatters any large argument that can be weakly referenced, and reuses it
  across the call's tasks).

Each model scores a record from that record alone (trees, linear models, networks in
evaluation mode), and every piece of records starts at a multiple of the models' own
batch (:func:`~tabmia.shadow._training._chunk_rows`), so the scores are those of one
model after another in this process, bit for bit.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from tabmia._array import is_categorical_dtype
from tabmia._memory import chunk_bounds, record_bytes, release_freed_memory, warn_over_budget
from tabmia._rows import n_rows, take_rows
from tabmia.shadow._schedule import JobPlan
from tabmia.shadow._training import _chunk_rows, _statistic_row

__all__ = ["score_models"]

#: Copies of a chunk of records alive while it is scored in a worker process: the
#: driver's slice, the copy a worker unpickles, and the model's own conversion of it
#: (a float matrix, a Pool).
_RECORD_COPIES = 3
#: On threads the records are not copied: only the model's conversion of a piece is
#: made (counted twice for the conversion's own temporaries).
_THREAD_RECORD_COPIES = 2


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


def _on_threads() -> bool:
    """Whether joblib would run tasks on threads here: no back end other than
    ``"threading"`` was chosen with ``joblib.parallel_config``."""
    from joblib.parallel import ThreadingBackend, get_active_backend

    backend, _ = get_active_backend(prefer="threads")
    return isinstance(backend, ThreadingBackend)


def _converted_in_python(X: Any) -> bool:
    """Whether ``X`` has category, string or object columns. Models turn such values
    into their own (CatBoost: strings, then hashes; one-hot encoders) in Python code
    that holds the GIL, so threads would wait on each other: these records are scored
    in processes."""
    if isinstance(X, pd.DataFrame):
        return any(is_categorical_dtype(dtype) for dtype in X.dtypes)
    dtype = getattr(X, "dtype", None)
    return dtype is None or is_categorical_dtype(dtype)


def thread_shares(n_models: int, n: int, batch: int, jobs: int) -> list[list[tuple[int, slice]]]:
    """Each thread's ``(model, rows)`` pieces.

    The grid of ``n_models`` x batches of ``batch`` records, read model by model, is cut
    into ``jobs`` consecutive runs of near-equal length (a model may end one run and
    start the next). Every piece starts at a multiple of ``batch``.
    """
    n_batches = -(-n // batch)
    total = n_models * n_batches
    shares = []
    for t in range(jobs):  # a loop over threads and the models of each
        unit, stop = t * total // jobs, (t + 1) * total // jobs
        pieces = []
        while unit < stop:
            k, first = divmod(unit, n_batches)
            last = min(n_batches, first + stop - unit)
            pieces.append((k, slice(first * batch, min(last * batch, n))))
            unit += last - first
        shares.append(pieces)
    return shares


def _score_share(
    pieces: list[tuple[int, slice]],
    models: list[Any],
    locks: list[threading.Lock],
    X: Any,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    threads: int,
    row_bytes: int,
    budget: int,
    batch: int,
    out: np.ndarray,
) -> None:
    """One thread's work: each piece in chunks of whole batches that fit ``budget``."""
    # OpenMP's thread count is a setting of each thread (trees' and boosting libraries'
    # predictions do not depend on it); BLAS's and torch's are the process's, left as
    # they are: a target queried on another thread meanwhile must answer as it would
    # alone (BLAS results depend on the thread count)
    with threadpool_limits(limits=threads, user_api="openmp"):
        for k, rows in pieces:  # a loop over models
            with locks[k]:
                for part in chunk_bounds(rows.stop - rows.start, row_bytes, budget, multiple=batch):
                    sl = slice(rows.start + part.start, rows.start + part.stop)
                    out[k, sl] = _statistic_row(
                        models[k], take_rows(X, sl), y_idx[sl], classes, statistic
                    )


def _score_on_threads(
    models: list[Any],
    X: Any,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    plan: JobPlan,
    max_memory: int,
    out: np.ndarray,
) -> None:
    jobs = int(plan.n_jobs)
    batch = _chunk_rows(classes.size)
    row_bytes = _THREAD_RECORD_COPIES * record_bytes(X) + 4
    locks = [threading.Lock() for _ in models]
    warn_over_budget(
        n_rows(X),
        row_bytes,
        max_memory,
        parts=jobs,
        multiple=batch,
        at_once=jobs,  # each thread on a piece of its own, the same records or not
        what=f"scoring {len(models)} models",
    )
    shares = thread_shares(len(models), n_rows(X), batch, jobs)
    work = partial(
        _score_share,
        models=models,
        locks=locks,
        X=X,
        y_idx=y_idx,
        classes=classes,
        statistic=statistic,
        threads=plan.threads,
        row_bytes=row_bytes,
        budget=max_memory // jobs,
        batch=batch,
        out=out,
    )
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(work, pieces) for pieces in shares]
        for future in futures:
            future.result()  # a thread's error is raised here
    release_freed_memory()  # the models' conversions of the records


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
    if jobs > 1 and len(models) >= jobs and _on_threads() and not _converted_in_python(X):
        _score_on_threads(models, X, y_idx, classes, statistic, plan, max_memory, out)
        return out
    row_bytes = _RECORD_COPIES * record_bytes(X) + 4 * len(models)
    batch = _chunk_rows(classes.size)
    chunks = chunk_bounds(n, row_bytes, max_memory, parts=jobs, multiple=batch)
    warn_over_budget(
        n, row_bytes, max_memory, parts=jobs, multiple=batch, what=f"scoring {len(models)} models"
    )
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
