"""Data set loaders for membership-inference audits of tabular models.

Every loader reads files below a *data home* (``data_home=`` argument, else the
``TABMIA_DATA`` environment variable, else ``~/.cache/tabmia``) and returns a
:class:`sklearn.utils.Bunch` with ``data``, ``target``, ``feature_names``,
``categorical_features``, ``target_names``, ``DESCR``, ``frame`` and
``source_path`` (or ``(data, target)`` with ``return_X_y=True``).  A missing
file raises :class:`DataNotFoundError` naming the exact paths looked for.
A read-only data home is never written to; derived caches go to
``TABMIA_CACHE`` / ``~/.cache/tabmia``.  ``TABMIA_OFFLINE=1`` forbids network
access.  openml and folktables are imported only when needed.
"""

from tabmia.exceptions import DataNotFoundError

from . import classic
from ._home import get_cache_home, get_data_home
from ._registry import (
    DATASETS,
    DEFAULT_SLICINGS,
    PERSON_NOUNS,
    available_datasets,
    default_slicings,
    load_dataset,
    person_noun,
    resolve_dataset_name,
)
from .acs import fetch_acs
from .classic import (  # noqa: F401  (exported through classic.__all__)
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
from .openml import SUITE_TASKS, fetch_openml_task, list_suite_tasks
from .purchase import fetch_purchase100
from .texas import fetch_texas100

__all__ = [
    "DATASETS",
    "DEFAULT_SLICINGS",
    "PERSON_NOUNS",
    "SUITE_TASKS",
    "DataNotFoundError",
    "available_datasets",
    "default_slicings",
    "person_noun",
    "fetch_acs",
    "fetch_openml_task",
    "fetch_purchase100",
    "fetch_texas100",
    "get_cache_home",
    "get_data_home",
    "list_suite_tasks",
    "load_dataset",
    "resolve_dataset_name",
    *classic.__all__,  # the classic tables' loaders, imported above
]
