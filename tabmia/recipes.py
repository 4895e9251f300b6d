"""Named target recipes and attack presets used by the CLI and the benchmarks.

``ATTACK_NAMES`` is the tuple of the preset names in :data:`ATTACK_PRESETS` at the
time it is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from tabmia.attacks import (
    BoundaryDistanceAttack,
    CalibratedAttack,
    CalibratedRobustnessAttack,
    GapAttack,
    LeafAttack,
    LiRAAttack,
    LossAttack,
    MerlinAttack,
    MorganAttack,
    NoiseRobustnessAttack,
    QuantileAttack,
    RMIAAttack,
    ScoreAttack,
)
from tabmia.backends import BACKENDS

__all__ = [
    "MODEL_NAMES",
    "make_model",
    "ATTACK_PRESETS",
    "ATTACK_NAMES",  # noqa: F822 - computed on access by the module __getattr__
    "AUDIT_ATTACKS",
    "LABEL_AUDIT_ATTACKS",
    "BENCHMARK_ATTACKS",
    "label_attack_names",
    "make_attack",
    "tabular_preprocessor",
]


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
        raise ValueError(
            'the mlp recipe is a torch MLP: install torch (pip install "tabmia[torch]")'
        )
    return BACKENDS["torch"].make(
        hidden_layer_sizes=(256, 256), epochs=100, batch_size=200, lr=0.005, device=device
    )


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


#: Attack presets: name -> (attack class, its parameters). Adding an attack adds a line.
ATTACK_PRESETS: dict[str, tuple[type, dict[str, Any]]] = {
    "loss": (LossAttack, {}),
    "loss_class": (LossAttack, {"class_based": True}),
    "confidence": (ScoreAttack, {"statistic": "confidence"}),
    "entropy": (ScoreAttack, {"statistic": "entropy"}),
    "modified_entropy": (ScoreAttack, {"statistic": "modified_entropy"}),
    "hinge": (ScoreAttack, {"statistic": "hinge"}),
    "lira": (LiRAAttack, {"n_shadow": 16}),
    "lira_online": (LiRAAttack, {"n_shadow": 16, "online": True}),
    "calibrated": (CalibratedAttack, {}),
    "rmia": (RMIAAttack, {}),
    "quantile": (QuantileAttack, {}),
    "merlin": (MerlinAttack, {}),
    "morgan": (MorganAttack, {}),
    "gap": (GapAttack, {}),
    "noise_robustness": (NoiseRobustnessAttack, {}),
    "noise_robustness_calibrated": (CalibratedRobustnessAttack, {}),
    "boundary_distance": (BoundaryDistanceAttack, {}),
    "leaf": (LeafAttack, {}),
}

#: The attacks ``tabmia audit`` runs when none are named. Without a recipe to train
#: shadow / reference models (precomputed probabilities, a model file without
#: ``--recipe``) it runs those of them that train none. Online LiRA's FPR promise needs
#: known non-members inside its pool: the audit has them in both modes.
AUDIT_ATTACKS: tuple[str, ...] = (
    "loss",
    "loss_class",
    "confidence",
    "entropy",
    "modified_entropy",
    "lira",
    "lira_online",
    "rmia",
)
#: The attacks ``tabmia audit`` runs on a label-only model file when none are named:
#: those that work from its predicted labels without a training recipe.
LABEL_AUDIT_ATTACKS: tuple[str, ...] = ("gap", "noise_robustness", "boundary_distance")
#: The attacks ``tabmia benchmark`` runs when none are named.
BENCHMARK_ATTACKS: tuple[str, ...] = ("loss", "quantile", "lira", "lira_online", "rmia")


def __getattr__(name: str) -> Any:
    if name == "ATTACK_NAMES":  # the presets known now, those registered later included
        return tuple(ATTACK_PRESETS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def label_attack_names(*, queries_perturbed: bool = True) -> list[str]:
    """The presets that work from a target's predicted labels alone (their
    ``target_outputs`` tag); without ``queries_perturbed``, only those that query no
    record they were not given (they run on saved labels)."""
    from tabmia.attacks import membership_tags

    tags = {name: membership_tags(make_attack(name)) for name in ATTACK_PRESETS}
    return [
        name
        for name, t in tags.items()
        if t.works_with("labels") and (queries_perturbed or not t.queries_perturbed_records)
    ]


def make_attack(name: str) -> Any:
    """Unfitted attack preset ``name`` (one of :data:`ATTACK_PRESETS`)."""
    if name not in ATTACK_PRESETS:
        raise ValueError(f"unknown attack {name!r}; choose from {', '.join(ATTACK_PRESETS)}")
    klass, params = ATTACK_PRESETS[name]
    return klass(**params)
