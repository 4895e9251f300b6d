"""Training "recipes" whose privacy is known exactly, to check a DP audit against.

Each is a scikit-learn classifier whose output on a record depends on its training
set only through whether that record was trained on, passed through a mechanism
of known privacy:

- :class:`RandomizedResponseClassifier`: randomised response on the membership
  bit, exactly epsilon-DP (and no better);
- :class:`GaussianMembershipClassifier`: the membership bit times ``mu`` plus
  standard normal noise, exactly mu-GDP (and so (epsilon(delta), delta)-DP for
  every delta, with :func:`tabmia.dp.gdp_epsilon`).

They answer with two-class probabilities whose entropy carries the noisy bit, so an
audit scores them with ``score="entropy"``. A record counts as trained on when a
training row has the same features (:func:`tabmia._records.row_hashes`). The noise of
each query comes from ``random_state`` and the query's position, never from the
training set, so the mechanisms are exactly as private as stated; asking about the
same record twice draws fresh noise (the audit asks once).
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from numbers import Real
from typing import Any

import numpy as np
from scipy import special
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from tabmia._records import row_hashes

__all__ = ["RandomizedResponseClassifier", "GaussianMembershipClassifier"]


class _MembershipMechanism(ClassifierMixin, BaseEstimator, metaclass=ABCMeta):
    """Fit stores the training rows' hashes; predict_proba answers through ``_release``."""

    def fit(self, X: Any, y: Any) -> _MembershipMechanism:
        """Remember which records were trained on (by content)."""
        self._validate_params()
        self.classes_ = np.unique(np.asarray(y))
        self.trained_ = np.unique(row_hashes(X))
        self.rng_ = check_random_state(self.random_state)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """``[p, 1 - p]`` per record, ``p`` in ``(1/2, 1)`` rising with the released value."""
        check_is_fitted(self, "trained_")
        member = np.isin(row_hashes(X), self.trained_)
        released = self._release(member, self.rng_)
        p = 0.5 + 0.5 * special.expit(released)
        proba = np.zeros((member.size, self.classes_.size))
        proba[:, 0], proba[:, -1] = p, 1.0 - p
        return proba

    def predict(self, X: Any) -> np.ndarray:
        """The first class for every record (the mechanisms do not classify)."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    @abstractmethod
    def _release(self, member: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """The released statistic of each queried record, from its membership bit."""


class RandomizedResponseClassifier(_MembershipMechanism):
    """Randomised response on each queried record's membership: exactly epsilon-DP.

    The released bit is the membership bit with probability ``e^eps / (1 + e^eps)``
    and its flip otherwise.

    Parameters
    ----------
    epsilon : float
        The mechanism's epsilon, ``>= 0``.
    random_state : int, RandomState instance or None, default=None
        Seeds the coins of the queries.
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, epsilon: float = 1.0, random_state: Any = None) -> None:
        self.epsilon = epsilon
        self.random_state = random_state

    def _release(self, member: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        truthful = rng.uniform(size=member.size) < special.expit(self.epsilon)
        return np.where(truthful == member, 1.0, -1.0)


class GaussianMembershipClassifier(_MembershipMechanism):
    """``mu`` times the membership bit plus standard normal noise: exactly mu-GDP.

    Parameters
    ----------
    mu : float
        The mechanism's mu, ``>= 0``.
    random_state : int, RandomState instance or None, default=None
        Seeds the noise of the queries.
    """

    _parameter_constraints: dict = {
        "mu": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, mu: float = 1.0, random_state: Any = None) -> None:
        self.mu = mu
        self.random_state = random_state

    def _release(self, member: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        return self.mu * member + rng.normal(size=member.size)
