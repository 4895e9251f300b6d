"""Membership inference attacks, each a scikit-learn estimator.

See :class:`tabmia.attacks.base.BaseMembershipAttack` for the contract, and
:class:`MembershipTags` for what each attack tells the runners about itself.
"""

from tabmia.attacks._tags import MembershipTags, membership_tags
from tabmia.attacks.base import BaseMembershipAttack
from tabmia.attacks.calibrated import CalibratedAttack
from tabmia.attacks.label_only import (
    BoundaryDistanceAttack,
    CalibratedRobustnessAttack,
    GapAttack,
    NoiseRobustnessAttack,
)
from tabmia.attacks.leaf import LeafAttack
from tabmia.attacks.lira import LiRAAttack
from tabmia.attacks.loss import LossAttack, ScoreAttack
from tabmia.attacks.merlin import MerlinAttack, MorganAttack
from tabmia.attacks.quantile import QuantileAttack
from tabmia.attacks.rmia import RMIAAttack

__all__ = [
    "BaseMembershipAttack",
    "BoundaryDistanceAttack",
    "CalibratedAttack",
    "CalibratedRobustnessAttack",
    "GapAttack",
    "LeafAttack",
    "LiRAAttack",
    "LossAttack",
    "MembershipTags",
    "MerlinAttack",
    "MorganAttack",
    "NoiseRobustnessAttack",
    "QuantileAttack",
    "RMIAAttack",
    "ScoreAttack",
    "membership_tags",
]
