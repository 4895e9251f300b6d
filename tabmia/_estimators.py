"""Helpers for handling the user's estimators: unfitted recipes, fittedness."""

from __future__ import annotations

from typing import Any

from sklearn.base import clone

__all__ = ["clone_recipe", "clone_unfitted", "is_fitted", "recipe_of"]


def clone_unfitted(estimator: Any, *, safe: bool = True) -> Any:
    """``sklearn.base.clone``, also for estimators whose ``get_params`` returns copies.

    CatBoost's ``get_params`` returns a new list for ``cat_features`` on every call,
    which ``clone`` takes for a constructor that modifies its parameter and refuses.
    When the rebuilt estimator's parameters equal the original's, the copy is sound.
    ``safe=False`` deep-copies a non-estimator, like ``clone``.
    """
    try:
        return clone(estimator, safe=safe)
    except RuntimeError:
        import joblib

        params = estimator.get_params(deep=False)
        copy = type(estimator)(**{k: clone(v, safe=False) for k, v in params.items()})
        if joblib.hash(copy.get_params(deep=False)) != joblib.hash(params):
            raise
        return copy


def is_fitted(estimator: Any) -> bool:
    """Whether ``estimator`` is fitted, as ``check_is_fitted`` says; False for objects it
    cannot judge (not an estimator)."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(estimator)
    except (NotFittedError, TypeError):
        return False
    return True


def _is_frozen(estimator: Any) -> bool:
    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # scikit-learn < 1.6
        return False
    return isinstance(estimator, FrozenEstimator)


def clone_recipe(estimator: Any, *, name: str, target: Any = None) -> Any:
    """An unfitted copy of ``estimator`` to train as a shadow / proxy / reference model.

    Raises
    ------
    ValueError
        If the copy would be the fitted target itself: ``estimator`` is the target,
        or a ``FrozenEstimator`` (whose clone is the frozen, fitted model, so every
        "shadow" would be the target), or an object ``clone`` returns unchanged.
    TypeError
        If ``estimator`` has no ``fit``.
    """
    if estimator is None:
        raise ValueError(f"{name} is None: pass an unfitted estimator")
    if not hasattr(estimator, "fit"):
        raise TypeError(f"{name} of type {type(estimator).__name__} has no fit method")
    if _is_frozen(estimator):
        raise ValueError(
            f"{name} is a FrozenEstimator: cloning it returns the frozen fitted model, so "
            "every shadow would be the target itself. Pass the unfitted estimator instead"
        )
    if target is not None and estimator is target:
        raise ValueError(
            f"{name} is the target object itself; pass an unfitted estimator with the "
            "same settings (e.g. sklearn.base.clone(target))"
        )
    copy = clone_unfitted(estimator)
    if copy is estimator or (target is not None and copy is target) or _is_frozen(copy):
        raise ValueError(
            f"{name}: sklearn.base.clone returned the same object, so a 'shadow' would be "
            "the fitted model itself; pass an unfitted estimator"
        )
    return copy


def recipe_of(target: Any, *, name: str) -> Any:
    """The target's unfitted training recipe, when it is a scikit-learn estimator."""
    inner = getattr(target, "model", None)
    # a wrapper (tabmia.target.TargetModel: not an estimator itself) around an estimator
    if not hasattr(target, "get_params") and hasattr(inner, "get_params"):
        raise ValueError(
            f"{name} is needed: the target is a TargetModel wrapping a fitted "
            f"{type(inner).__name__}, whose training recipe tabmia does not guess; pass "
            f"{name}= (the unfitted recipe), or the {type(inner).__name__} itself as target"
        )
    if not hasattr(target, "get_params") or not hasattr(target, "fit"):
        raise ValueError(
            f"{name} is needed: the target ({type(target).__name__}) is not a "
            "scikit-learn estimator whose unfitted recipe tabmia could clone"
        )
    return clone_recipe(target, name=name)
