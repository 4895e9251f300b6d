"""Seeds: integers for torch from a ``random_state``, and seeding an estimator's params."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["seed_from", "derived_seed", "seed_estimator"]

_SEED_MAX = 2**31 - 1


def seed_from(random_state: Any) -> int:
    """An integer seed in ``[0, 2**31 - 1)`` from an int, a RandomState / Generator or None.

    An int is returned as is (it must be >= 0); None draws fresh OS entropy.
    """
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint32)[0] >> 1)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        value = int(random_state)
        if value < 0:
            raise ValueError(f"random_state must be >= 0, got {value}")
        return value
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(_SEED_MAX))
    return int(check_random_state(random_state).randint(_SEED_MAX))


def derived_seed(random_state: Any) -> int:
    """A seed for a second use of ``random_state``, distinct from :func:`seed_from`'s."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        state = np.random.SeedSequence([int(random_state), 1]).generate_state(1, np.uint32)
        return int(state[0] >> 1)
    return seed_from(random_state)


def _is_catboost(obj: Any) -> bool:
    return any(k.__module__.startswith("catboost") for k in type(obj).__mro__)


def seed_estimator(estimator: Any, seed: int, *, catboost_seed: bool = True) -> None:
    """Set every ``random_state`` parameter of ``estimator`` (nested ones too) to ``seed``, in place.

    Parameters
    ----------
    estimator : object
        Anything with ``get_params`` / ``set_params``; other objects are left alone.
    seed : int
        The seed.
    catboost_seed : bool, default=True
        Also set ``random_seed`` parameters, and give a seed to CatBoost models that
        list neither (CatBoost's ``get_params`` shows only the parameters it was given).
    """
    if not hasattr(estimator, "get_params"):
        return
    params = estimator.get_params(deep=True)
    names = ("random_state", "random_seed") if catboost_seed else ("random_state",)
    updates = {key: int(seed) for key in params if key.rsplit("__", 1)[-1] in names}
    if catboost_seed:
        for key, obj in [("", estimator), *params.items()]:
            if _is_catboost(obj) and hasattr(obj, "get_params"):
                own = obj.get_params()
                if "random_state" not in own and "random_seed" not in own:
                    updates[f"{key}__random_seed" if key else "random_seed"] = int(seed)
    if updates:
        estimator.set_params(**updates)
