"""diffprivlib's models, made to import and fit under the scikit-learn tabmia runs with.

diffprivlib 0.6.6 (the newest release) was written against scikit-learn <= 1.7:

- its forest module imports ``DOUBLE`` and ``DTYPE`` from ``sklearn.tree._tree``, which
  scikit-learn 1.8 stopped exporting (they were ``np.float64`` and ``np.float32``);
- its ``LogisticRegression.__init__`` passes ``multi_class="ovr"`` to scikit-learn's,
  which scikit-learn 1.8 removed; its ``fit`` never reads it (the one-vs-rest scheme is
  its own loop).

This module adds the two missing names to ``sklearn.tree._tree`` (only where absent:
nothing scikit-learn defines is replaced) and subclasses the logistic regression with a
constructor that leaves ``multi_class`` out. The privacy mechanisms are diffprivlib's,
untouched. It is imported only when a DP variant is asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sklearn.tree._tree as _sk_tree

# scikit-learn >= 1.8 no longer exports these two dtypes; diffprivlib's forest imports them
for _name, _dtype in (("DOUBLE", np.float64), ("DTYPE", np.float32)):
    if not hasattr(_sk_tree, _name):
        setattr(_sk_tree, _name, _dtype)

import diffprivlib  # noqa: E402 - after the names above exist
from diffprivlib.models import GaussianNB, RandomForestClassifier  # noqa: E402
from diffprivlib.models import LogisticRegression as _DPLogisticRegression  # noqa: E402
from sklearn.linear_model import LogisticRegression as _SkLogisticRegression  # noqa: E402

__all__ = ["GaussianNB", "LogisticRegression", "RandomForestClassifier", "VERSION"]

#: The diffprivlib release in use.
VERSION: str = str(getattr(diffprivlib, "__version__", "unknown"))

_SK_TAKES_MULTI_CLASS = "multi_class" in _SkLogisticRegression().get_params()


class LogisticRegression(_DPLogisticRegression):
    """diffprivlib's ε-DP logistic regression (objective perturbation, Chaudhuri et al.
    2011), with a constructor that runs on scikit-learn >= 1.8.

    Parameters
    ----------
    epsilon : float, default=1.0
        The ε of its (ε, 0)-DP guarantee.
    data_norm : float, default=None
        The largest L2 norm of a record; records are clipped to it. None computes it
        from the training data, which leaks (diffprivlib warns): always give it.
    tol, C, fit_intercept, max_iter, verbose, warm_start, n_jobs, random_state, accountant
        As diffprivlib's.
    """

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        data_norm: float | None = None,
        tol: float = 1e-4,
        C: float = 1.0,
        fit_intercept: bool = True,
        max_iter: int = 100,
        verbose: int = 0,
        warm_start: bool = False,
        n_jobs: int | None = None,
        random_state: Any = None,
        accountant: Any = None,
    ) -> None:
        from diffprivlib.accountant import BudgetAccountant

        params: dict[str, Any] = {
            "penalty": "l2",
            "dual": False,
            "tol": tol,
            "C": C,
            "fit_intercept": fit_intercept,
            "intercept_scaling": 1.0,
            "class_weight": None,
            "random_state": random_state,
            "solver": "lbfgs",
            "max_iter": max_iter,
            "verbose": verbose,
            "warm_start": warm_start,
            "n_jobs": n_jobs,
        }
        if _SK_TAKES_MULTI_CLASS:
            params["multi_class"] = "ovr"
        _SkLogisticRegression.__init__(self, **params)
        self.epsilon = epsilon
        self.data_norm = data_norm
        self.accountant = BudgetAccountant.load_default(accountant)
