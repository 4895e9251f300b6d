"""Name -> loader registry behind :func:`load_dataset`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from . import classic
from ._suite import SUITE_TASKS
from .acs import ACS_TASKS, fetch_acs
from .openml import fetch_openml_task
from .purchase import fetch_purchase100
from .texas import fetch_texas100

__all__ = [
    "DATASETS",
    "DEFAULT_SLICINGS",
    "PERSON_NOUNS",
    "available_datasets",
    "default_slicings",
    "load_dataset",
    "person_noun",
    "resolve_dataset_name",
]

DATASETS: dict[str, Callable[..., Any]] = {
    "breast_cancer": classic.load_breast_cancer,
    "adult": classic.load_adult,
    "german_credit": classic.load_german_credit,
    "hepatitis": classic.load_hepatitis,
    "taiwan_default": classic.load_taiwan_default,
    "give_me_some_credit": classic.load_give_me_some_credit,
    "diabetes130": classic.load_diabetes130,
    "heart_cleveland": partial(classic.load_heart_disease, variant="cleveland"),
    "heart_statlog": partial(classic.load_heart_disease, variant="statlog"),
    "bank_marketing": classic.load_bank_marketing,
    "compas": classic.load_compas,
    "pima_diabetes": classic.load_pima_diabetes,
    "australian_credit": classic.load_australian_credit,
    "purchase100": fetch_purchase100,
    "texas100": fetch_texas100,
}

#: Slicings an audit of a built-in credit or health data set compares by default (issue
#: 40): who a regulator asks about. Adult: sex, race; COMPAS: race, sex; diabetes130:
#: race, age; German credit: age, personal status and sex (one column there).
DEFAULT_SLICINGS: dict[str, tuple[str, ...]] = {
    "adult": ("sex", "race"),
    "compas": ("race", "sex"),
    "diabetes130": ("race", "age"),
    "german_credit": ("age", "personal_status"),
}

#: What an audit calls the persons of a built-in data set that carries them (its
#: ``groups``); any other data set's are "persons".
PERSON_NOUNS: dict[str, str] = {"diabetes130": "patients"}

_PATTERNS = [
    "openml:<task_id>",
    "<task_id>",
    "<tabular-benchmark name>",
    "acs:<Task>:<STATE>[:<year>]",
]

# Suite names (lower case) -> task id. Names in both suites (eye_movements, electricity,
# covertype, default-of-credit-card-clients) map to clf_num, the numerical-features
# version the quantile-regression paper (Bertran et al. 2023) uses; clf_cat is reached
# by its task id.
_SUITE_NAMES: dict[str, int] = {}
for _task in sorted(SUITE_TASKS.values(), key=lambda t: t.suite != "clf_num"):
    _SUITE_NAMES.setdefault(_task.name.lower(), _task.task_id)
del _task


def available_datasets() -> list[str]:
    """Names accepted by :func:`load_dataset` (fixed names, then the patterns)."""
    return list(DATASETS) + _PATTERNS


def default_slicings(name: str | None) -> tuple[str, ...]:
    """The columns an audit of data set ``name`` slices by unless told otherwise.

    Parameters
    ----------
    name : str or None
        A data set name as :func:`load_dataset` takes it; None (records of one's own)
        has no default.

    Returns
    -------
    tuple of str
        One column per slicing (:data:`DEFAULT_SLICINGS`); empty for data sets without
        known sensitive columns.
    """
    return DEFAULT_SLICINGS.get(name or "", ())


def person_noun(name: str | None) -> str:
    """What the persons of data set ``name`` are called ("patients" for diabetes130).

    Parameters
    ----------
    name : str or None
        A data set name as :func:`load_dataset` takes it.

    Returns
    -------
    str
        The plural noun (:data:`PERSON_NOUNS`), "persons" by default.
    """
    return PERSON_NOUNS.get(name or "", "persons")


def _unknown(name: str, why: str = "") -> ValueError:
    msg = f"unknown data set name {name!r}"
    if why:
        msg += f" ({why})"
    return ValueError(msg + "; valid names: " + ", ".join(available_datasets()))


def resolve_dataset_name(name: str) -> str:
    """The canonical form of a data set name, without loading anything.

    Fixed names stay as they are; an OpenML task id (``"361070"``) or a
    tabular-benchmark suite name (``"eye_movements"``, any case) becomes
    ``"openml:<task_id>"``; ``"openml:<name>"`` is accepted too. Suite names that are
    in both suites (eye_movements, electricity, covertype,
    default-of-credit-card-clients) resolve to the ``clf_num`` task; give the task id
    for the ``clf_cat`` one. ACS names are checked and kept.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid names.
    """
    if not isinstance(name, str):
        raise _unknown(repr(name), "not a string")
    name = name.strip()
    if name in DATASETS:
        return name
    rest = name.split(":", 1)[1] if name.startswith("openml:") else name
    if rest.isdigit():
        return f"openml:{int(rest)}"
    if rest.lower() in _SUITE_NAMES:
        return f"openml:{_SUITE_NAMES[rest.lower()]}"
    if name.startswith("openml:"):
        raise _unknown(name, "task id must be an integer or a tabular-benchmark name")
    if name.startswith("acs:"):
        parts = name.split(":")
        if len(parts) not in (3, 4) or parts[1] not in ACS_TASKS:
            raise _unknown(name, f"ACS tasks: {', '.join(ACS_TASKS)}")
        if len(parts) == 4 and not parts[3].isdigit():
            raise _unknown(name, "year must be an integer")
        return name
    raise _unknown(name)


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
        ``"openml:<task_id>"`` (e.g. ``"openml:361070"``), a bare task id
        (``"361070"``), a tabular-benchmark suite name (``"eye_movements"``; see
        :func:`resolve_dataset_name` for names in both suites) or
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
    name = resolve_dataset_name(name)
    if name in DATASETS:
        return DATASETS[name](**kwargs)
    if name.startswith("openml:"):
        return fetch_openml_task(int(name.split(":", 1)[1]), **kwargs)
    parts = name.split(":")
    if len(parts) == 4:
        kwargs.setdefault("year", int(parts[3]))
    return fetch_acs(parts[1], parts[2], **kwargs)
