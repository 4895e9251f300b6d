"""Membership inference attacks, each a scikit-learn estimator.

See :class:`tabmia.attacks.base.BaseMembershipAttack` for the contract.
"""

from tabmia.attacks.base import BaseMembershipAttack
from tabmia.attacks.loss import LossAttack, ScoreAttack

__all__ = ["BaseMembershipAttack", "LossAttack", "ScoreAttack"]
