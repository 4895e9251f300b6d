"""Named target recipes and attack presets used by the CLI and the benchmarks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from tabmia.backends import BACKENDS

__all__ = ["MODEL_NAMES", "make_model", "ATTACK_NAMES", "make_attack", "tabular_preprocessor"]


def tabular_preprocessor() -> ColumnTransformer:
    """One-hot encode categorical/object columns, standardise numeric ones."""
    return ColumnTransformer(
        [
            (
                "categorical",
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                make_column_selector(dtype_include=["category", "object", "string"]),
            ),
            ("numeric", StandardScaler(), make_column_selector(dtype_include="number")),
        ],
        sparse_threshold=0.0,
    )


def _random_forest(device: str, n_rows: int | None) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=100)


def _gradient_boosting(device: str, n_rows: int | None) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=200)


def _logistic_regression(device: str, n_rows: int | None) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=2000)


def _mlp(device: str, n_rows: int | None) -> Any:
    """The MLP of the membership inference papers, in torch (:class:`TorchMLPClassifier`).

    Two hidden layers of 256 ReLU units, softmax output, Adam (lr 0.005), minibatches
    of 200, 100 epochs, no weight decay (Shokri et al. 2017; Jayaraman et al. 2021).
    Its shadows train many at a time as one batched network, on the GPU when there is
    one.
    """
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise ValueError('the mlp recipe is a torch MLP: install torch (pip install '
                         '"tabmia[torch]")')
    return BACKENDS["torch"].make(hidden_layer_sizes=(256, 256), epochs=100, batch_size=200,
                                  lr=0.005, device=device)


def _catboost(device: str, n_rows: int | None) -> Any:
    # thread_count left unset: all cores for the target, the scheduler's share per
    # shadow job, or --threads
    return BACKENDS["catboost"].make(iterations=300, device=device, n_rows=n_rows)


_MODELS: dict[str, Callable[[str, int | None], Any]] = {
    "random_forest": _random_forest,
    "gradient_boosting": _gradient_boosting,
    "logistic_regression": _logistic_regression,
    "mlp": _mlp,
    "catboost": _catboost,
}

#: Target recipes known by name.
MODEL_NAMES: tuple[str, ...] = tuple(_MODELS)


def make_model(name: str, X: Any = None, *, device: str = "auto") -> Any:
    """Unfitted target recipe ``name``; wrapped in a preprocessing Pipeline.

    Parameters
    ----------
    name : str
        One of :data:`MODEL_NAMES`: ``random_forest`` (100 trees),
        ``gradient_boosting`` (``HistGradientBoostingClassifier``, 200 iterations),
        ``logistic_regression``, ``mlp`` (the papers' 2x256 ReLU MLP in torch, Adam lr
        0.005, batch 200, 100 epochs: :class:`~tabmia.shadow.TorchMLPClassifier`) or
        ``catboost`` (300 iterations).
    X : array-like or DataFrame, default=None
        The data the recipe will see: a DataFrame gets one-hot encoding of its
        categorical columns and standardised numeric ones, anything else
        standardisation. Its row count sizes ``device="auto"``.
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        Where the models with a device notion train (``mlp``: the GPU whenever torch
        sees one under "auto"; ``catboost``: see :mod:`tabmia.backends` for when "auto"
        picks the GPU). The scikit-learn recipes have none.

    Returns
    -------
    sklearn.pipeline.Pipeline
        Unfitted; shadow and reference models of the attacks are clones of it.
    """
    if name not in _MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    from tabmia.target import n_rows

    model = _MODELS[name](device, None if X is None else n_rows(X))
    if isinstance(X, pd.DataFrame):
        return Pipeline([("prepare", tabular_preprocessor()), ("model", model)])
    return Pipeline([("scale", StandardScaler()), ("model", model)])


def _preset_score(score: str, **kw: Any) -> Callable[[], Any]:
    def build() -> Any:
        from tabmia.attacks import ScoreAttack

        return ScoreAttack(statistic=score, **kw)

    return build


def _preset(module: str, cls: str, **kw: Any) -> Callable[[], Any]:
    def build() -> Any:
        import importlib

        try:
            klass = getattr(importlib.import_module(f"tabmia.attacks.{module}"), cls)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"attack {cls} is not available in this install: {exc}") from exc
        return klass(**kw)

    return build


_ATTACKS: dict[str, Callable[[], Any]] = {
    "loss": _preset("loss", "LossAttack"),
    "loss_class": _preset("loss", "LossAttack", class_based=True),
    "confidence": _preset_score("confidence"),
    "entropy": _preset_score("entropy"),
    "modified_entropy": _preset_score("modified_entropy"),
    "hinge": _preset_score("hinge"),
    "lira": _preset("lira", "LiRAAttack", n_shadow=16),
    "lira_online": _preset("lira", "LiRAAttack", n_shadow=16, online=True),
    "calibrated": _preset("calibrated", "CalibratedAttack"),
    "rmia": _preset("rmia", "RMIAAttack"),
    "quantile": _preset("quantile", "QuantileAttack"),
    "merlin": _preset("merlin", "MerlinAttack"),
    "morgan": _preset("merlin", "MorganAttack"),
    "gap": _preset("label_only.gap", "GapAttack"),
    "noise_robustness": _preset("label_only.robustness", "NoiseRobustnessAttack"),
    "noise_robustness_calibrated": _preset("label_only.robustness", "CalibratedRobustnessAttack"),
    "boundary_distance": _preset("label_only.boundary", "BoundaryDistanceAttack"),
}

#: Attack presets known by name.
ATTACK_NAMES: tuple[str, ...] = tuple(_ATTACKS)


def make_attack(name: str, **params: Any) -> Any:
    """Unfitted attack preset ``name`` with extra ``params`` set where it takes them."""
    if name not in _ATTACKS:
        raise ValueError(f"unknown attack {name!r}; choose from {', '.join(ATTACK_NAMES)}")
    attack = _ATTACKS[name]()
    valid = attack.get_params(deep=False)
    attack.set_params(**{k: v for k, v in params.items() if k in valid})
    return attack
