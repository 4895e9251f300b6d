"""The joblib tasks of a shadow population: train models, score the pool with each.

Each task returns ``[(k, statistics row, model or None), ...]`` so that the driver in
:mod:`tabmia.shadow.population` can cache and collect results in any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from tabmia._estimators import clone_unfitted
from tabmia._seeding import seed_estimator
from tabmia.scores import membership_score
from tabmia.target import TargetModel, encode_labels, n_rows, take_rows


def _chunk_rows(n_classes: int) -> int:
    return int(max(1024, min(65536, 2**23 // max(n_classes, 1))))


def _model_proba_chunks(model: Any, X: Any, classes: np.ndarray):
    """Yield ``(slice, proba (m, C) float64, logits or None)`` in ``classes`` order."""
    from tabmia._array import softmax
    from tabmia.shadow.torch_mlp import TorchMLPClassifier

    n = n_rows(X)
    step = _chunk_rows(classes.size)
    if isinstance(model, TorchMLPClassifier) and np.array_equal(model.classes_, classes):
        for start in range(0, n, step):
            sl = slice(start, min(start + step, n))
            logits = model.decision_function(take_rows(X, sl)).astype(np.float64)
            yield sl, softmax(logits), logits
        return
    target = TargetModel(model, batch_size=step)
    cols = encode_labels(target.classes_, classes, name="the shadow's classes_")
    same = cols.size == classes.size and np.array_equal(cols, np.arange(classes.size))
    for start in range(0, n, step):
        sl = slice(start, min(start + step, n))
        p = target.predict_proba(take_rows(X, sl))
        if not same:  # classes missing from this model's training subset get probability 0
            full = np.zeros((p.shape[0], classes.size), dtype=np.float64)
            full[:, cols] = p
            p = full
        yield sl, p, None


def _statistic_row(
    model: Any, X: Any, y_idx: np.ndarray, classes: np.ndarray, statistic: str
) -> np.ndarray:
    out = np.empty(n_rows(X), dtype=np.float32)
    for sl, proba, logits in _model_proba_chunks(model, X, classes):
        out[sl] = membership_score(statistic, proba, y_idx[sl], logits=logits)
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
) -> list[tuple[int, np.ndarray, Any]]:
    """One joblib task: fit a clone of ``recipe`` on the rows ``mask``, score the pool.

    BLAS runs on one thread here, in-process or in a worker: float results of BLAS
    calls depend on its thread count (seen: sklearn MLP shadows differing by 0.17 in
    the logit score between ``n_jobs=1`` with 2 BLAS threads and ``n_jobs=2``), and the
    scores must not depend on ``n_jobs``. Parallelism comes from the jobs.
    """
    model = clone_unfitted(recipe)
    seed_estimator(model, seed)
    rows = np.flatnonzero(mask)
    with threadpool_limits(limits=1, user_api="blas"):
        model.fit(take_rows(X, rows), y[rows])
        row = _statistic_row(model, X, y_idx, classes, statistic)
    return [(k, row, model if keep_model else None)]


def _train_mlp_group(
    params: dict,
    ks: np.ndarray,
    seeds: np.ndarray,
    masks: np.ndarray,
    X32: np.ndarray,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    device: Any,
    keep_model: bool,
    verbose: bool,
) -> list[tuple[int, np.ndarray, Any]]:
    """One joblib task: train the MLPs ``ks`` as a batched network, score the pool."""
    from tabmia.shadow.batched import fit_mlps_batched

    models = fit_mlps_batched(
        X32, y_idx, masks, seeds, params, device, classes=classes, verbose=verbose
    )
    return [
        (int(k), _statistic_row(m, X32, y_idx, classes, statistic), m if keep_model else None)
        for k, m in zip(ks, models)
    ]


def _delayed(func: Any) -> Any:
    from joblib import delayed

    return delayed(func)
