"""The gap attack (Yeom et al., CSF 2018): a record the target labels right is a member."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia.attacks._docs import shared_parameters
from tabmia.attacks.base import BaseMembershipAttack
from tabmia.attacks.label_only._queries import LabelQueriesMixin

__all__ = ["GapAttack"]


@shared_parameters
class GapAttack(LabelQueriesMixin, BaseMembershipAttack):
    """Yeom et al.'s baseline from labels alone: correctly classified = member.

    ``decision_function`` is 1 when the target's label for the record is its true
    label, else 0: the attack exploits only the gap between the target's accuracy on
    its training records and on other records. One query per record; it runs on any
    target, label-only ones (:class:`tabmia.target.PrecomputedLabels` included) too.

    Parameters
    ----------
    {target}
    {threshold_params}
    {random_state_proxy}

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    public_accuracy_ : float
        Share of the public records the target labels right.
    n_queries_ : int
        Records sent to the target so far.
    threshold_ : float
        Threshold on the 0/1 score.
    flags_nobody_ : bool
        Whether ``threshold_`` lies above 1: the attack flags no record (see Notes).

    Notes
    -----
    The score is binary, so a threshold can flag every correctly labelled record or
    none. With ``threshold_goal="fpr"`` the split-conformal threshold flags the
    correctly labelled ones only when at most ``fpr`` of the public records are
    labelled right; for any useful model it flags nothing, which keeps the FPR promise
    (0 flagged) and shows that the gap attack singles no record out at a low FPR: its
    TPR at 1% FPR is 0 (``fit`` says so with a
    :class:`~tabmia.exceptions.FlagsNobodyWarning`, and sets ``flags_nobody_``). Its
    AUC is ``1/2 + (train accuracy - test accuracy) / 2``.

    References
    ----------
    .. [1] Yeom, Giacomelli, Fredrikson, Jha. Privacy Risk in Machine Learning:
       Analyzing the Connection to Overfitting. CSF 2018.
    .. [2] Choquette-Choo, Tramer, Carlini, Papernot. Label-Only Membership Inference
       Attacks. ICML 2021. (the gap attack as the label-only baseline)

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.svm import LinearSVC
    >>> from tabmia.attacks import GapAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = LinearSVC().fit(X[:250], y[:250])  # predict only: a label-only target
    >>> attack = GapAttack(target, fpr=0.05).fit(X[250:], y[250:])
    >>> attack.decision_function(X[:3], y[:3]).tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(
        self,
        target: Any = None,
        *,
        threshold_goal: str = "fpr",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
    ) -> None:
        self.target = target
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    def _fit(self, X: Any, y: np.ndarray) -> None:
        self._public_scores = self._score(X, y)
        self.public_accuracy_ = float(self._public_scores.mean())

    def _nonmember_calibration_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self._public_scores

    def _score_ceiling(self) -> float:
        return 1.0  # labelled right

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        return (self.target_.predict_indices(X) == y).astype(np.float64)
