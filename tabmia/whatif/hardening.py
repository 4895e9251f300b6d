"""The same model behind a hardened output: rounded probabilities, top-k, or the label only.

:class:`HardenedOutput` is a scikit-learn meta-estimator: its ``predict_proba`` is the
wrapped model's, hardened. Wrapped around a fitted model it is that model, deployed
differently: nothing is refitted. Because the attacks train their shadow and reference
models by cloning the target (:func:`tabmia._estimators.recipe_of`), a clone of the
wrapper is ``HardenedOutput(<unfitted copy of the model>, round=2)``: every shadow is
trained like the target and answers through the same hardening, so the attacker's
models see what the attacker sees.

The shadow engine knows such a wrapper (:meth:`HardenedOutput.wrap_fitted`): a
population of hardened shadows is the inner recipe's population (trained, or loaded from
the shadow cache where an audit of the unhardened model left it) scored through the
hardening, so the hardened variants of a model reuse its audit's shadow models.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.metaestimators import available_if

from tabmia._estimators import clone_unfitted, is_fitted

__all__ = ["HardenedOutput", "check_hardening", "harden_proba", "hardening_name"]


def hardening_name(round: int | None, top_k: int | None, labels_only: bool) -> str:
    """A short name of a hardening: ``round2``, ``top1``, ``labels_only`` (or ``none``)."""
    if labels_only:
        return "labels_only"
    if round is not None:
        return f"round{int(round)}"
    if top_k is not None:
        return f"top{int(top_k)}"
    return "none"


def check_hardening(
    round: int | None,
    top_k: int | None,
    labels_only: bool,
    *,
    n_classes: int | None = None,
    has_proba: bool = True,
    model: str = "the model",
) -> None:
    """Refuse a hardening that is malformed or that the model cannot take.

    Raises
    ------
    ValueError
        One line naming the problem: no hardening or more than one; ``round`` not a whole
        number >= 1; ``top_k`` not a whole number >= 1, or one that hides nothing (``top_k
        >= n_classes - 1``: the rest of the probability is 1 minus the top ones); rounding
        or top-k of a model that gives labels only (no ``predict_proba``).
    """
    given = [
        name
        for name, value in (("round", round), ("top_k", top_k), ("labels_only", labels_only))
        if value is not None and value is not False
    ]
    if not given:
        raise ValueError("give one hardening: round=DECIMALS, top_k=K or labels_only=True")
    if len(given) > 1:
        raise ValueError(f"give one hardening at a time, not {' and '.join(given)}")
    if round is not None and (
        isinstance(round, bool) or not isinstance(round, (int, np.integer)) or round < 1
    ):
        raise ValueError(
            f"round={round!r}: give the decimals to keep, a whole number >= 1 "
            "(round=0 is the label: use labels_only=True)"
        )
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise ValueError(f"top_k={top_k!r}: give a whole number >= 1")
        if n_classes is not None and top_k >= n_classes - 1:
            raise ValueError(
                f"top_k={top_k} hides nothing from a model with {n_classes} classes (the "
                "probability left is 1 minus the top ones): use round= or labels_only=True"
            )
    if not labels_only and not has_proba:
        raise ValueError(
            f"{given[0]}= cannot harden {model}: it gives labels only (no predict_proba); "
            "its output is already as hard as it gets"
        )


def harden_proba(
    proba: np.ndarray, *, round: int | None = None, top_k: int | None = None
) -> np.ndarray:
    """Hardened probabilities, every row still summing to 1.

    ``round``: every class's probability rounded to ``round`` decimals, the rounding's
    remainder given to the largest class, so that it too is a multiple of ``10**-round``
    and the row a probability vector (what a rounding API returns). ``top_k``: the ``k``
    largest probabilities kept, the rest of the mass spread evenly over the other classes
    (which tells nothing about them).
    """
    p = np.asarray(proba, dtype=np.float64)
    rows = np.arange(p.shape[0])
    top = np.argmax(p, axis=1)
    if round is not None:
        out = np.round(p, int(round))
        out[rows, top] = 0.0
        out[rows, top] = np.clip(1.0 - out.sum(axis=1), 0.0, 1.0)
        return out
    if top_k is not None:
        k = int(top_k)
        order = np.argsort(-p, axis=1, kind="stable")
        kept = np.zeros_like(p, dtype=bool)
        kept[rows[:, None], order[:, :k]] = True
        rest = np.clip(1.0 - np.where(kept, p, 0.0).sum(axis=1), 0.0, 1.0)
        return np.where(kept, p, (rest / (p.shape[1] - k))[:, None])
    return p


class HardenedOutput(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """A classifier whose probabilities are hardened before anyone sees them.

    Parameters
    ----------
    estimator : classifier
        The model. A fitted one is used as it is (``fit`` is never needed: the wrapper is
        the deployed model behind a hardened API); an unfitted one is cloned and trained by
        :meth:`fit`, as the attacks' shadow models are.
    round : int, default=None
        Keep this many decimals of each probability (:func:`harden_proba`).
    top_k : int, default=None
        Keep the ``top_k`` largest probabilities, spread the rest evenly.
    labels_only : bool, default=False
        Answer with the predicted label only: the wrapper then has no ``predict_proba``,
        and tabmia treats it as a label-only target (only the label-only attacks can run).

    Attributes
    ----------
    estimator_ : classifier
        The inner model :meth:`fit` trained; absent when wrapping a fitted model.
    classes_ : ndarray
        The inner model's classes.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = LogisticRegression(max_iter=5000).fit(X, y)
    >>> HardenedOutput(model, round=1).predict_proba(X[:2]).round(3).tolist()
    [[1.0, 0.0], [1.0, 0.0]]
    >>> hasattr(HardenedOutput(model, labels_only=True), "predict_proba")
    False
    """

    #: The fitted model answers every query and only its outputs are post-processed, so
    #: its trees stay in the file: white-box readers (:mod:`tabmia.structure`) read them
    #: from the first of these attributes that holds a model.
    __tabmia_output_wrapper__ = ("estimator_", "estimator")

    def __init__(
        self,
        estimator: Any = None,
        *,
        round: int | None = None,
        top_k: int | None = None,
        labels_only: bool = False,
    ) -> None:
        self.estimator = estimator
        self.round = round
        self.top_k = top_k
        self.labels_only = labels_only

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any, **fit_params: Any) -> HardenedOutput:
        """Train a clone of ``estimator`` on ``(X, y)``.

        Returns
        -------
        self
        """
        self._check(self.estimator)
        inner = clone_unfitted(self.estimator)
        inner.fit(X, y, **fit_params)
        self.estimator_ = inner
        return self

    def wrap_fitted(self, model: Any) -> HardenedOutput:
        """``model`` (fitted) behind this wrapper's hardening.

        The shadow engine trains a hardened recipe's inner models as the inner recipe's
        own (:class:`tabmia.shadow.ShadowPopulation`) and scores each through this.

        Returns
        -------
        HardenedOutput
        """
        return type(self)(model, round=self.round, top_k=self.top_k, labels_only=self.labels_only)

    def _check(self, model: Any) -> None:
        if model is None:
            raise ValueError("HardenedOutput needs an estimator")
        has_proba = hasattr(model, "predict_proba")
        classes = getattr(model, "classes_", None) if is_fitted(model) else None
        check_hardening(
            self.round,
            self.top_k,
            self.labels_only,
            n_classes=None if classes is None else len(classes),
            has_proba=has_proba,
            model=type(model).__name__,
        )

    def _model(self) -> Any:
        """The fitted inner model: the one :meth:`fit` trained, else ``estimator`` itself."""
        if hasattr(self, "estimator_"):
            return self.estimator_
        if self.estimator is not None and is_fitted(self.estimator):
            return self.estimator
        raise NotFittedError(
            "this HardenedOutput wraps an unfitted estimator: fit it, or wrap a fitted model"
        )

    def __sklearn_is_fitted__(self) -> bool:
        """Fitted when it trained its inner model or wraps a fitted one."""
        return hasattr(self, "estimator_") or (
            self.estimator is not None and is_fitted(self.estimator)
        )

    @property
    def classes_(self) -> np.ndarray:
        """The inner model's classes."""
        return np.asarray(self._model().classes_)

    @property
    def n_features_in_(self) -> int:
        """Columns the inner model was trained on (0 where it does not say)."""
        return int(getattr(self._model(), "n_features_in_", 0) or 0)

    @property
    def feature_names_in_(self) -> Any:
        """Column names the inner model was trained on, where it has them."""
        names = getattr(self._model(), "feature_names_in_", None)
        if names is None:
            raise AttributeError("the inner model has no feature_names_in_")
        return names

    # ------------------------------------------------------------------ outputs
    def _gives_proba(self) -> bool:
        return not self.labels_only

    @available_if(_gives_proba)
    def predict_proba(self, X: Any) -> np.ndarray:
        """The inner model's probabilities, hardened (:func:`harden_proba`).

        Returns
        -------
        ndarray of shape (n, n_classes)
        """
        model = self._model()
        proba = np.asarray(model.predict_proba(X), dtype=np.float64)
        if self.top_k is not None and self.top_k >= proba.shape[1] - 1:
            self._check(model)  # raises: the fitted model's classes make top_k pointless
        return harden_proba(proba, round=self.round, top_k=self.top_k)

    def predict(self, X: Any) -> np.ndarray:
        """The inner model's decision: hardening changes what is shown, not the decision.

        Returns
        -------
        ndarray of shape (n,)
        """
        return np.asarray(self._model().predict(X))
