"""Score-threshold attacks: Yeom's loss attack and its confidence / entropy relatives."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils._param_validation import StrOptions

from tabmia.attacks._docs import shared_parameters
from tabmia.attacks.base import (
    BaseMembershipAttack,
    DefaultStatistic,
    statistic_from_legacy,
)
from tabmia.scores import SCORE_NAMES
from tabmia.thresholds import ClassConditionalRanks

__all__ = ["ScoreAttack", "LossAttack"]


@shared_parameters
class ScoreAttack(BaseMembershipAttack):
    """Threshold one score of the target's output on the record.

    The record is flagged a member when its signed score (minus the loss, the
    confidence, minus the entropy, ...) reaches ``threshold_``, chosen on public
    records for the ``threshold_goal``.

    Parameters
    ----------
    {target}
    statistic : {"loss", "confidence", "entropy", "modified_entropy", "logit", "hinge"}, \
            default="loss"
        Which score of the output (see :mod:`tabmia.scores`). Formerly ``score``, still
        accepted with a ``FutureWarning`` until tabmia 0.3.
    class_based : bool, default=False
        One threshold per label (Jayaraman et al.'s class-based thresholds): scores are
        replaced by their rank among public records of the same label, so a single
        threshold on the ranks is one threshold per label at the same FPR.
    {threshold_params}
    {random_state_proxy}

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    threshold_ : float
        Decision threshold on ``decision_function``.
    class_ranks_ : ClassConditionalRanks
        Per-label reference scores (``class_based=True`` only).

    References
    ----------
    .. [1] Yeom, Giacomelli, Fredrikson, Jha. Privacy Risk in Machine Learning:
       Analyzing the Connection to Overfitting. CSF 2018.
    .. [2] Song, Mittal. Systematic Evaluation of Privacy Risks of Machine Learning
       Models. USENIX Security 2021.
    .. [3] Jayaraman, Wang, Knipmeyer, Gu, Evans. Revisiting Membership Inference
       Under Realistic Assumptions. PETS 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from tabmia.attacks import ScoreAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = RandomForestClassifier(random_state=0).fit(X[:250], y[:250])
    >>> attack = ScoreAttack(target, statistic="confidence", fpr=0.05).fit(X[250:], y[250:])
    >>> attack.decision_function(X[:5], y[:5]).shape
    (5,)
    """

    _parameter_constraints = {
        **BaseMembershipAttack._parameter_constraints,
        "statistic": [StrOptions(set(SCORE_NAMES))],
        "class_based": ["boolean"],
    }

    def __init__(
        self,
        target: Any = None,
        *,
        statistic: str = DefaultStatistic("loss"),
        class_based: bool = False,
        threshold_goal: str = "fpr",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
        **legacy: Any,
    ) -> None:
        self.target = target
        self.statistic = statistic_from_legacy(type(self).__name__, statistic, "loss", legacy)
        self.class_based = class_based
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    def _statistic(self) -> str:
        return self.statistic

    def _raw_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self.target_.statistic(self._statistic(), X, y)

    def _fit(self, X: Any, y: np.ndarray) -> None:
        if self.class_based:
            raw = self._raw_scores(X, y)
            self.class_ranks_ = ClassConditionalRanks().fit(raw, y, self.target_.n_classes)

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        raw = self._raw_scores(X, y)
        if self.class_based:
            return self.class_ranks_.transform(raw, y)
        return raw


@shared_parameters
class LossAttack(ScoreAttack):
    """Yeom et al.'s loss attack: a member when the loss ``-log p_y`` is small.

    ``decision_function`` returns minus the loss: :class:`ScoreAttack` with
    ``statistic="loss"``.

    Parameters
    ----------
    {target}
    class_based : bool, default=False
        One threshold per label, as in :class:`ScoreAttack`.
    {threshold_params}
    {random_state_proxy}

    References
    ----------
    .. [1] Yeom, Giacomelli, Fredrikson, Jha. Privacy Risk in Machine Learning:
       Analyzing the Connection to Overfitting. CSF 2018.
    .. [2] Jayaraman, Wang, Knipmeyer, Gu, Evans. Revisiting Membership Inference
       Under Realistic Assumptions. PETS 2021. (threshold selection, class-based)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from tabmia.attacks import LossAttack
    >>> from tabmia.metrics import auc
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = RandomForestClassifier(random_state=0).fit(X[:200], y[:200])
    >>> attack = LossAttack(target, fpr=0.05).fit(X[200:400], y[200:400])
    >>> members = [True] * 150 + [False] * 150
    >>> scores = attack.decision_function(
    ...     np.r_[X[:150], X[400:550]], np.r_[y[:150], y[400:550]])
    >>> bool(auc(members, scores) > 0.6)
    True
    """

    _parameter_constraints = {
        k: v for k, v in ScoreAttack._parameter_constraints.items() if k != "statistic"
    }

    def __init__(
        self,
        target: Any = None,
        *,
        class_based: bool = False,
        threshold_goal: str = "fpr",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
    ) -> None:
        self.target = target
        self.class_based = class_based
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    def _statistic(self) -> str:
        return "loss"
