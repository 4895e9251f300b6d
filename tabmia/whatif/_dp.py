"""Differentially private training recipes for the DP variants, on public encodings.

A DP model needs numbers in known bounds: diffprivlib's logistic regression clips each
record to a norm, its naive Bayes and forest to per-feature bounds, and computing those
from the training records would leak them. So every DP recipe here is
``Pipeline([("encode", PublicEncoding(...)), ("model", <DP model>)])``: categorical
columns one-hot encoded and numeric ones median-imputed and scaled to [0, 1] by an
encoder fitted on *population* records (never the training records; the DP unit is one
training record, which the encoder then does not depend on), values clipped to [0, 1].
The bounds are then known: [0, 1] per column, L2 norm at most ``sqrt(width)``. The
encoder is fitted once and travels inside the recipe, so the attacks' shadow models
(clones of the recipe) use the same one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.pipeline import Pipeline

__all__ = ["DP_MODELS", "PublicEncoding", "dp_recipe", "dp_unavailable"]

#: DP models a variant can name: diffprivlib's three and the DP-SGD MLP (Opacus).
DP_MODELS: tuple[str, ...] = ("logistic_regression", "gaussian_nb", "random_forest", "mlp")


class _Fitted:
    """A fitted encoder held as a plain object: ``clone`` copies it (fitted) instead of
    re-creating it unfitted, and its ``repr`` (what the shadow cache is keyed by) names
    its state by hash."""

    def __init__(self, encoder: Any) -> None:
        import joblib

        self.encoder = encoder
        self.sha = joblib.hash(encoder)

    def __deepcopy__(self, memo: dict) -> _Fitted:
        return self  # read-only once fitted: every clone may share it

    def __repr__(self) -> str:
        return f"fitted-encoder-{self.sha[:16]}"


class PublicEncoding(TransformerMixin, BaseEstimator):
    """Records encoded by an encoder fitted on public records, clipped to [0, 1].

    ``fit`` does nothing: the encoder was fitted beforehand on records that are not the
    training records, so the encoding leaks none of them.

    Parameters
    ----------
    encoding : object, default=None
        The fitted encoder (built by :func:`dp_recipe`).
    """

    def __init__(self, encoding: Any = None) -> None:
        self.encoding = encoding

    def fit(self, X: Any, y: Any = None) -> PublicEncoding:
        """Nothing to learn from the training records.

        Returns
        -------
        self
        """
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Encoded records in [0, 1].

        Returns
        -------
        ndarray of shape (n, width)
        """
        out = np.asarray(self.encoding.encoder.transform(X), dtype=np.float64)
        return np.clip(out, 0.0, 1.0)

    def __sklearn_is_fitted__(self) -> bool:
        """Always: its encoder was fitted on public records."""
        return True


def _encoder(X_public: Any) -> Any:
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder

    numeric = Pipeline([("impute", SimpleImputer(strategy="median")), ("scale", MinMaxScaler())])
    if not isinstance(X_public, pd.DataFrame):
        return numeric.fit(np.asarray(X_public, dtype=np.float64))
    encoder = ColumnTransformer(
        [
            (
                "categorical",
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                make_column_selector(dtype_include=["category", "object", "string", "bool"]),
            ),
            ("numeric", numeric, make_column_selector(dtype_include="number")),
        ],
        sparse_threshold=0.0,
    )
    return encoder.fit(X_public)


def dp_unavailable(model: str) -> str | None:
    """None where the DP model ``model`` can be built here, else why not (in words)."""
    if model == "mlp":
        from tabmia.whatif._opacus import opacus_available

        return opacus_available()
    try:
        import tabmia.whatif._diffprivlib  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return f"diffprivlib does not import here ({type(exc).__name__}: {exc})"
    return None


def dp_recipe(
    model: str,
    epsilon: float,
    delta: float,
    X_public: Any,
    classes: np.ndarray,
    params: dict[str, Any] | None = None,
) -> Pipeline:
    """An unfitted DP recipe: the public encoding, then the DP model at ``epsilon``.

    Parameters
    ----------
    model : {"logistic_regression", "gaussian_nb", "random_forest", "mlp"}
        diffprivlib's ``LogisticRegression`` (objective perturbation; pure ε-DP, data norm
        ``sqrt(width)``), ``GaussianNB`` (bounds [0, 1]) or ``RandomForestClassifier``
        (bounds [0, 1], the classes given: neither is read off the training records); or
        the DP-SGD MLP (:class:`~tabmia.whatif._opacus.DPSGDClassifier`, (ε, δ)-DP).
    epsilon, delta : float
        The privacy parameters the model is trained at (δ only for the MLP).
    X_public : records
        Population records the encoder is fitted on.
    classes : ndarray
        Every class (the forest must not learn them from the training records).
    params : dict, default=None
        More parameters of the DP model (``max_depth``, ``n_estimators``, ``C``, ...).

    Returns
    -------
    Pipeline
    """
    encoder = _encoder(X_public)
    encoding = PublicEncoding(_Fitted(encoder))
    width = encoding.transform(
        X_public[:1] if not isinstance(X_public, pd.DataFrame) else X_public.iloc[:1]
    ).shape[1]
    extra = dict(params or {})
    if model == "mlp":
        from tabmia.whatif._opacus import DPSGDClassifier

        dp_model: Any = DPSGDClassifier(epsilon=epsilon, delta=delta, **extra)
    else:
        from tabmia.whatif import _diffprivlib as dpl

        zeros, ones = np.zeros(width), np.ones(width)
        if model == "logistic_regression":
            dp_model = dpl.LogisticRegression(
                epsilon=epsilon, data_norm=math.sqrt(width), **{"max_iter": 1000, **extra}
            )
        elif model == "gaussian_nb":
            dp_model = dpl.GaussianNB(epsilon=epsilon, bounds=(zeros, ones), **extra)
        elif model == "random_forest":
            dp_model = dpl.RandomForestClassifier(
                epsilon=epsilon,
                bounds=(zeros, ones),
                classes=list(np.asarray(classes).tolist()),
                **{"n_estimators": 20, "max_depth": 6, **extra},
            )
        else:
            raise ValueError(f"unknown DP model {model!r}; choose one of {', '.join(DP_MODELS)}")
    return Pipeline([("encode", encoding), ("model", dp_model)])
