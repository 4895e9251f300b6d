"""tabmia: membership inference attacks against tabular models.

Attacks are scikit-learn estimators (:mod:`tabmia.attacks`): ``fit`` on the attacker's
public records, ``decision_function(X, y)`` on candidate records, ``predict`` with a
threshold chosen for a goal. :mod:`tabmia.metrics` scores them; :mod:`tabmia.experiment`
runs the membership game; ``tabmia audit`` does it all from the command line.

``import tabmia`` stays light: torch, catboost, optuna and the data set back-ends are
imported only where they are used.
"""

from tabmia.exceptions import (
    DuplicateRecordsWarning,
    FPRFallbackWarning,
    LabelOnlyTargetError,
    PlausibilityWarning,
)
from tabmia.target import PrecomputedLabels, PrecomputedProbabilities, TargetModel, as_target

__version__ = "0.1.0"

__all__ = [
    "DuplicateRecordsWarning",
    "FPRFallbackWarning",
    "PlausibilityWarning",
    "LabelOnlyTargetError",
    "TargetModel",
    "PrecomputedProbabilities",
    "PrecomputedLabels",
    "as_target",
    "__version__",
]
