"""Label-only attacks: they need only the target's predicted labels.

For models reachable only through their decision (approve / decline, a diagnosis
code), or whose probabilities are masked. :class:`GapAttack` is the baseline (one
query per record); :class:`NoiseRobustnessAttack` and :class:`CalibratedRobustnessAttack`
count how many noisy copies of a record keep its label; :class:`BoundaryDistanceAttack`
measures how far the record sits from the decision boundary. All of them query the
target in rounds of one batched ``predict`` call and report their query count
(``n_queries_``, ``queries_per_record_``).
"""

from tabmia.attacks.label_only.boundary import BoundaryDistanceAttack
from tabmia.attacks.label_only.gap import GapAttack
from tabmia.attacks.label_only.robustness import CalibratedRobustnessAttack, NoiseRobustnessAttack

__all__ = [
    "BoundaryDistanceAttack",
    "CalibratedRobustnessAttack",
    "GapAttack",
    "NoiseRobustnessAttack",
]
