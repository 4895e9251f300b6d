"""The joblib tasks of a shadow population: train models, score the pool with each.

Each task returns ``[(k, statistics row, model or None), ...]`` so that the driver in
:mod:`tabmia.shadow.population` can cache and collect results in any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from tabmia._estimators import clone_unfitted
from tabmia._memory import release_freed_memory
from tabmia._seeding import seed_estimator
from tabmia.backends import release_fit_state, set_device, set_threads
from tabmia.shadow._schedule import gpu_slot, torch_threads
from tabmia.target import (
    ModelOutputs,
    TargetModel,
    declared_outputs,
    encode_labels,
    n_rows,
    take_rows,
)


def _chunk_rows(n_classes: int) -> int:
    return int(max(1024, min(65536, 2**23 // max(n_classes, 1))))


def _outputs_chunks(model: Any, X: Any, classes: np.ndarray):
    """Yield ``(slice, ModelOutputs)`` of ``model`` on ``X``, in ``classes`` order."""
    n = n_rows(X)
    step = _chunk_rows(classes.size)
    final, prepare = _logits_step(model)
    if final is not None and np.array_equal(final.classes_, classes):
        target = TargetModel(final, batch_size=step)
        for start in range(0, n, step):
            sl = slice(start, min(start + step, n))
            rows = take_rows(X, sl)
            yield sl, target.query(rows if prepare is None else prepare.transform(rows))
        return
    target = TargetModel(model, batch_size=step)
    cols = encode_labels(target.classes_, classes, name="the shadow's classes_")
    same = cols.size == classes.size and np.array_equal(cols, np.arange(classes.size))
    for start in range(0, n, step):
        sl = slice(start, min(start + step, n))
        rows = take_rows(X, sl)
        if target.outputs == "labels":  # a label-only recipe: its labels as one-hot rows
            p = np.eye(target.n_classes)[target.predict_indices(rows)]
        else:
            p = target.predict_proba(rows)
        if not same:  # classes missing from this model's training subset get probability 0
            full = np.zeros((p.shape[0], classes.size), dtype=np.float64)
            full[:, cols] = p
            p = full
        yield sl, ModelOutputs(proba=p)


def _logits_step(model: Any) -> tuple[Any, Any]:
    """``(the model that gives logits, the Pipeline steps before it or None)``, or
    ``(None, None)``.

    A model that gives logits (:func:`tabmia.target.declared_outputs`), alone or as a
    Pipeline's last step, is scored from them: its logit and hinge statistics do not
    round to the probabilities' 1.0.
    """
    from sklearn.pipeline import Pipeline

    if "logits" in declared_outputs(model):
        return model, None
    if isinstance(model, Pipeline) and "logits" in declared_outputs(model.steps[-1][1]):
        return model.steps[-1][1], (model[:-1] if len(model.steps) > 1 else None)
    return None, None


def _statistic_row(
    model: Any, X: Any, y_idx: np.ndarray, classes: np.ndarray, statistic: str
) -> np.ndarray:
    out = np.empty(n_rows(X), dtype=np.float32)
    for sl, outputs in _outputs_chunks(model, X, classes):
        out[sl] = outputs.statistic(statistic, y_idx[sl])
    return out


def _train_one(
    recipe: Any,
    k: int,
    seed: int,
    mask: np.ndarray,
    X: Any,
    y: np.ndarray,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    keep_model: bool,
    threads: int | None = None,
    gpus: tuple[str, ...] = (),
) -> list[tuple[int, np.ndarray, Any]]:
    """One joblib task: fit a clone of ``recipe`` on the rows ``mask``, score the pool.

    BLAS and OpenMP run on one thread here, in-process or in a worker: float results
    of BLAS calls depend on the thread count (seen: sklearn MLP shadows differing by
    0.17 in the logit score between ``n_jobs=1`` with 2 BLAS threads and ``n_jobs=2``;
    HistGradientBoosting reduces in parallel), and the scores must not depend on
    ``n_jobs``. Parallelism comes from the jobs, and from ``threads`` given to models
    whose result does not depend on them (set where the recipe left the thread count
    unset; :attr:`tabmia.backends.Backend.thread_invariant`). GPU work holds one of ``gpus`` alone
    (:func:`~tabmia.shadow._schedule.gpu_slot`) and trains there.
    """
    model = clone_unfitted(recipe)
    seed_estimator(model, seed)
    set_threads(model, threads, only_unset=True)
    rows = np.flatnonzero(mask)
    with gpu_slot(gpus, first=k) as device:
        if device is not None:
            set_device(model, device)
        with threadpool_limits(limits=1):
            model.fit(take_rows(X, rows), y[rows])
            row = _statistic_row(model, X, y_idx, classes, statistic)
    release_freed_memory()  # a worker idles between tasks on what its last one freed
    return [(k, row, release_fit_state(model) if keep_model else None)]


def _train_mlp_group(
    recipe: Any,
    ks: np.ndarray,
    seeds: np.ndarray,
    masks: np.ndarray,
    X: Any,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    device: Any,
    keep_model: bool,
    verbose: bool,
    threads: int = 1,
    gpus: tuple[str, ...] = (),
) -> list[tuple[int, np.ndarray, Any]]:
    """One joblib task: train the MLPs ``ks`` as a batched network, score the pool.

    ``recipe`` is a ``TorchMLPClassifier`` or a Pipeline ending in one. torch runs on
    ``threads`` intra-op threads (one by default: its results depend on the thread
    count, and one thread per job was also the fastest measured); GPU work holds one
    of ``gpus`` alone.
    """
    from tabmia.shadow._stacked import thread_map
    from tabmia.shadow.batched import fit_mlps_batched

    with gpu_slot(gpus, first=int(ks[0])) as slot, torch_threads(threads):
        models = fit_mlps_batched(
            X, y_idx, masks, seeds, recipe, slot or device, classes=classes, verbose=verbose
        )
        # a GPU job holds all the cores (one job per GPU): the models' statistics on the
        # pool are computed on them at once (each model's row is the same either way)
        rows = thread_map(
            lambda j: _statistic_row(models[j], X, y_idx, classes, statistic),
            len(models),
            workers=threads if slot is not None else 1,
        )
        return [(int(k), row, m if keep_model else None) for k, row, m in zip(ks, rows, models)]


def _delayed(func: Any) -> Any:
    from joblib import delayed

    return delayed(func)
