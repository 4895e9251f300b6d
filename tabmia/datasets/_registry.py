"""Name -> loader registry behind :func:`load_dataset`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from .acs import ACS_TASKS, fetch_acs
from .classic import (
    load_adult,
    load_australian_credit,
    load_bank_marketing,
    load_breast_cancer,
    load_compas,
    load_diabetes130,
    load_german_credit,
    load_give_me_some_credit,
    load_heart_disease,
    load_hepatitis,
    load_pima_diabetes,
    load_taiwan_default,
)
from .openml import fetch_openml_task
from .purchase import fetch_purchase100
from .texas import fetch_texas100

__all__ = ["DATASETS", "available_datasets", "load_dataset"]

DATASETS: dict[str, Callable[..., Any]] = {
    "breast_cancer": load_breast_cancer,
    "adult": load_adult,
    "german_credit": load_german_credit,
    "hepatitis": load_hepatitis,
    "taiwan_default": load_taiwan_default,
    "give_me_some_credit": load_give_me_some_credit,
    "diabetes130": load_diabetes130,
    "heart_cleveland": partial(load_heart_disease, variant="cleveland"),
    "heart_statlog": partial(load_heart_disease, variant="statlog"),
    "bank_marketing": load_bank_marketing,
    "compas": load_compas,
    "pima_diabetes": load_pima_diabetes,
    "australian_credit": load_australian_credit,
    "purchase100": fetch_purchase100,
    "texas100": fetch_texas100,
}

_PATTERNS = ["openml:<task_id>", "acs:<Task>:<STATE>[:<year>]"]


def available_datasets() -> list[str]:
    """Names accepted by :func:`load_dataset` (fixed names, then the two patterns)."""
    return list(DATASETS) + _PATTERNS


def _unknown(name: str, why: str = "") -> ValueError:
    msg = f"unknown data set name {name!r}"
    if why:
        msg += f" ({why})"
    return ValueError(msg + "; valid names: " + ", ".join(available_datasets()))


def load_dataset(name: str, **kwargs: Any) -> Any:
    """Load a data set by short name.

    Parameters
    ----------
    name : str
        One of ``"breast_cancer"``, ``"adult"``, ``"german_credit"``,
        ``"hepatitis"``, ``"taiwan_default"``, ``"give_me_some_credit"``,
        ``"diabetes130"``, ``"heart_cleveland"``, ``"heart_statlog"``,
        ``"bank_marketing"``, ``"compas"``, ``"pima_diabetes"``,
        ``"australian_credit"``, ``"purchase100"``, ``"texas100"``,
        ``"openml:<task_id>"`` (e.g. ``"openml:361070"``) or
        ``"acs:<Task>:<STATE>[:<year>]"`` (e.g. ``"acs:ACSIncome:WY:2018"``).
    **kwargs
        Passed to the loader (``data_home``, ``return_X_y``, ...).

    Returns
    -------
    sklearn.utils.Bunch or tuple
        Whatever the loader returns.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid names.
    """
    if not isinstance(name, str):
        raise _unknown(repr(name), "not a string")
    if name in DATASETS:
        return DATASETS[name](**kwargs)
    if name.startswith("openml:"):
        rest = name.split(":", 1)[1]
        if not rest.isdigit():
            raise _unknown(name, "task id must be an integer")
        return fetch_openml_task(int(rest), **kwargs)
    if name.startswith("acs:"):
        parts = name.split(":")
        if len(parts) not in (3, 4) or parts[1] not in ACS_TASKS:
            raise _unknown(name, f"ACS tasks: {', '.join(ACS_TASKS)}")
        if len(parts) == 4:
            if not parts[3].isdigit():
                raise _unknown(name, "year must be an integer")
            kwargs.setdefault("year", int(parts[3]))
        return fetch_acs(parts[1], parts[2], **kwargs)
    raise _unknown(name)
