"""The quantile attack's CatBoost plumbing: the loss, the regressor, its pool, its output.

Imported only by ``quantile.py``. Each function is what one CatBoost call needs, so that
the attack reads as what it does with the regressors (cross-fit, tune, score).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia.backends import BACKENDS
from tabmia.exceptions import DegenerateRegressorError

__all__ = ["catboost_pool", "degenerate", "loss_function", "make_regressor", "raw_predict"]


def degenerate(params: dict[str, Any]) -> DegenerateRegressorError:
    """The error of a regressor whose training with ``params`` produced non-finite values."""
    return DegenerateRegressorError(
        f"QuantileAttack: a CatBoost regressor trained with {params} holds non-finite "
        "values (its training degenerated); a larger l2_leaf_reg or a smaller "
        "learning_rate avoids it"
    )


def loss_function(mode: str, alphas: np.ndarray) -> str:
    """CatBoost's ``loss_function`` for ``mode`` at the FPRs ``alphas`` (ascending)."""
    if mode == "gaussian":
        return "RMSEWithUncertainty"
    levels = 1.0 - alphas[::-1]  # ascending quantile levels
    if levels.size == 1:
        return f"Quantile:alpha={float(levels[0])!r}"
    return "MultiQuantile:alpha=" + ",".join(repr(float(v)) for v in levels)


def make_regressor(
    params: dict[str, Any], seed: int, gpu: str | None, *, loss: str, n_jobs: int | None
) -> Any:
    """An unfitted ``CatBoostRegressor`` with ``params``, on ``gpu`` (None: the CPU)."""
    from catboost import CatBoostRegressor

    p = dict(params)
    if "subsample" in p and "bootstrap_type" not in p:
        p["bootstrap_type"] = "Bernoulli"
    p.update(
        loss_function=loss,
        random_seed=int(seed),
        verbose=False,
        allow_writing_files=False,
        thread_count=-1 if n_jobs is None else int(n_jobs),
    )
    settings = BACKENDS["catboost"].to_params(gpu or "cpu")
    p.update({k: v for k, v in settings.items() if v is not None})
    return CatBoostRegressor(**p)


def catboost_pool(data: Any, cat_idx: list[int], s: np.ndarray | None = None) -> Any:
    """CatBoost's copy of the regressor's input (and its targets ``s``).

    One pool of all the public records is built per fit and sliced per fold (and
    per Optuna trial): a slice trains and predicts as a pool of the same rows would,
    bit for bit, without a frame copy of the records per fold.
    """
    from catboost import Pool

    return Pool(data, s, cat_features=cat_idx or None)


def raw_predict(model: Any, pool: Any) -> np.ndarray:
    """The regressor's raw output on ``pool``, one row per record."""
    raw = np.asarray(model.predict(pool, prediction_type="RawFormulaVal"), dtype=np.float64)
    return raw.reshape(raw.shape[0], -1)
