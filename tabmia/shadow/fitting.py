"""Train the shadow / reference population of one attack on its pool of records."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["fit_population"]


def fit_population(
    X: Any,
    y_idx: np.ndarray,
    *,
    recipe: Any,
    classes: np.ndarray,
    n_models: int,
    statistic: str,
    pkeep: float = 0.5,
    random_state: Any = None,
    n_jobs: int | None = None,
    cache_dir: Any = None,
    cache_prefix: str = "",
    verbose: bool = False,
    target: Any = None,
    groups: Any = None,
) -> Any:
    """Train a :class:`~tabmia.shadow.ShadowPopulation` of ``recipe`` on ``(X, y_idx)``.

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame of shape (n, d)
        The pool.
    y_idx : ndarray of int of shape (n,)
        Labels as indices into ``classes``.
    recipe : estimator
        Unfitted model, cloned for every shadow.
    classes : ndarray
        The target's classes (the shadows' score columns follow them).
    n_models, statistic, pkeep, random_state, n_jobs, verbose, target
        As in :class:`~tabmia.shadow.ShadowPopulation`.
    groups : array-like of shape (n,), default=None
        Person id of each pool record (:meth:`ShadowPopulation.fit
        <tabmia.shadow.ShadowPopulation.fit>`).
    cache_dir : str or path, default=None
        Parent folder of the cache. The population goes into the sub-folder
        ``{cache_prefix}-{fingerprint of the pool}``, so that different pools and
        statistics never collide.
    cache_prefix : str, default=""
        Names the attack and statistic in the cache sub-folder.

    Returns
    -------
    ShadowPopulation
        Fitted.
    """
    from threadpoolctl import threadpool_limits

    from tabmia.shadow._cache import _fingerprint
    from tabmia.shadow.population import ShadowPopulation

    y_raw = classes[y_idx]
    if cache_dir is not None:
        cache_dir = os.path.join(
            os.fspath(cache_dir), f"{cache_prefix}-{_fingerprint(X, y_raw)[:16]}"
        )
    pop = ShadowPopulation(
        recipe,
        n_models=n_models,
        statistic=statistic,
        classes=classes,
        pkeep=pkeep,
        n_jobs=n_jobs,
        random_state=random_state,
        cache_dir=cache_dir,
        keep_models=True,
        verbose=verbose,
        target=target,
    )
    # BLAS summation order depends on its thread count, and training (an MLP's many
    # small steps) amplifies the difference: one thread in this process, like in each
    # worker of a 2-core machine, keeps n_jobs from changing the shadows
    with threadpool_limits(limits=1):
        return pop.fit(X, y_raw, groups)
