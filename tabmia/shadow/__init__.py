"""Populations of shadow / reference models.

- :class:`ShadowPopulation`: the membership matrix (each record IN for half the
  models), training through joblib, and the score of every model on every record as
  one float32 array.
- :class:`TorchMLPClassifier`, :func:`fit_mlps_batched`, :func:`gradient_norms`: a
  torch MLP with a scikit-learn API, trained many at a time as one batched network.
- :func:`catboost_classifier`, :func:`xgboost_classifier`, :func:`lightgbm_classifier`,
  :func:`gpu_available`: boosted shadow models, on a GPU where that pays
  (:mod:`tabmia.backends`).
- :func:`fit_population`, :class:`PoolIndex`, :func:`masked_moments`,
  :func:`pooled_variance`: what the reference-model attacks share: train an attack's
  population, find candidates among its pool records, and the per-record moments of
  the models' scores.

torch, CatBoost, XGBoost and LightGBM are imported only when used.
"""

from typing import Any

from tabmia.shadow.batched import auto_group_size, fit_mlps_batched
from tabmia.shadow.boosting import (
    catboost_classifier,
    categorical_columns,
    gpu_available,
    lightgbm_classifier,
    xgboost_classifier,
)
from tabmia.shadow.fitting import fit_population
from tabmia.shadow.gradients import gradient_norms
from tabmia.shadow.moments import masked_moments, pooled_variance
from tabmia.shadow.pool import PoolIndex, record_keys
from tabmia.shadow.population import ShadowPopulation, draw_in_masks
from tabmia.shadow.torch_mlp import TorchMLPClassifier

__all__ = [
    "ShadowPopulation",
    "draw_in_masks",
    "fit_population",
    "PoolIndex",
    "record_keys",
    "masked_moments",
    "pooled_variance",
    "TorchMLPClassifier",
    "fit_mlps_batched",
    "gradient_norms",
    "auto_group_size",
    "catboost_classifier",
    "xgboost_classifier",
    "lightgbm_classifier",
    "gpu_available",
    "categorical_columns",
    "CatBoostAuto",
]


def __getattr__(name: str) -> Any:
    if name == "CatBoostAuto":  # built on first use: it subclasses catboost's classifier
        from tabmia.shadow import boosting

        return boosting.CatBoostAuto
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
