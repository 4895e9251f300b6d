"""Boundary distance for tabular records (Li & Zhang, CCS 2021): members sit farther from
the decision boundary than other records.

Li & Zhang's boundary attack finds the smallest perturbation that changes the target's
label with a decision-based adversarial search (HopSkipJump) in image space. Mixed-type
tabular records have no such space; here the search runs along random rays of an
encoded space (:class:`tabmia.perturb.TabularRays`: numeric columns in standard
deviations, 0/1 columns rounded, categories one-hot and decoded by their largest
coordinate), by a grid then bisection, with a fixed query budget per record.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval

from tabmia.attacks._docs import shared_parameters
from tabmia.attacks.base import BaseMembershipAttack
from tabmia.attacks.label_only._queries import LabelQueriesMixin, boundary_distances
from tabmia.perturb import TabularRays

__all__ = ["BoundaryDistanceAttack"]


@shared_parameters
class BoundaryDistanceAttack(LabelQueriesMixin, BaseMembershipAttack):
    """Distance to the target's decision boundary along random directions (Li & Zhang).

    For each record the target labels right, the attack walks ``n_directions`` random
    directions of the encoded feature space and finds, along each, the smallest
    step that changes the label: first on a geometric grid of ``n_grid`` steps from
    ``max_distance / 2**(n_grid - 1)`` to ``max_distance`` (one query round), then by
    ``n_bisect`` rounds of bisection between the last unchanged and the first changed
    grid step. ``decision_function`` is the smallest such step over the directions
    (Li & Zhang's minimal perturbation); a record labelled wrong scores 0 (it is past
    the boundary already), and one whose label changes on no ray scores
    ``2 * max_distance``.

    Categorical columns move in the encoding the noise model uses for its categories:
    one coordinate per category seen in the public records, the record's own at 1; the
    value becomes another category once the step raises that category's coordinate
    above the record's own. 0/1 columns flip once the step moves them past 1/2. Numeric
    columns move in units of their public standard deviation. Distances are root mean
    square moves per encoded coordinate (the Euclidean distance divided by the square
    root of the encoded dimension), so one ``max_distance`` suits data sets of any
    width. The directions are drawn
    once in ``fit`` and shared by every record, so a record's score is a fixed function
    of the record and the public records calibrate ``threshold_``.

    Parameters
    ----------
    target : object
        Fitted model under audit; only its labels are used. Precomputed labels cannot
        answer for moved records.
    n_directions : int, default=16
        Random directions per record.
    n_grid : int, default=8
        Steps of the geometric grid (each a factor 2 apart).
    n_bisect : int, default=6
        Bisection rounds after the grid; the distance is then known to within
        ``2**-n_bisect`` of its grid bracket.
    max_distance : float, default=4.0
        Largest step tried: the root mean square move per encoded coordinate (for a
        numeric column, in its public standard deviations; see
        :class:`~tabmia.perturb.TabularRays`).
    max_batch_rows : int, default=None
        Rows sent to the model per call. None: each round is one ``predict`` call over
        all records and rays (``n * n_directions * n_grid`` rows in the grid round); a
        number bounds the rows held in memory at once. Does not change results.
    {threshold_params}
    random_state : int, RandomState instance or None, default=None
        Seeds the directions (and the proxy split).

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    rays_ : TabularRays
        The encoded space, fitted on the public records, with its directions.
    public_scores_ : ndarray of shape (n_public,)
        Scores of the public records (the calibration scores).
    queries_per_record_ : int
        Most queries one record costs: ``1 + n_directions * (n_grid + n_bisect)``
        (records labelled wrong cost 1, rays that never change skip the bisection).
    n_queries_ : int
        Records sent to the target so far.
    threshold_ : float
        Threshold on the distance.

    Notes
    -----
    A ray search finds a distance at least the true one along that ray's direction,
    and the minimum over random directions is at least the distance to the nearest
    boundary point: an upper bound, looser in more dimensions, where HopSkipJump's
    gradient estimate walks toward the boundary. It needs no gradient estimate, no
    continuous input space and a known number of queries. The score is continuous
    except at 0 (records labelled wrong) and at ``2 * max_distance`` (no change on any
    ray); ties there only lower the FPR below ``fpr``. Where more than ``fpr`` of the
    public records never change label, the threshold flags nothing: raise
    ``max_distance`` or ``n_directions``.

    References
    ----------
    .. [1] Li, Zhang. Membership Leakage in Label-Only Exposures. CCS 2021.
       (the boundary attack)
    .. [2] Choquette-Choo, Tramer, Carlini, Papernot. Label-Only Membership Inference
       Attacks. ICML 2021. (decision-boundary distance)

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from tabmia.attacks import BoundaryDistanceAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = RandomForestClassifier(random_state=0).fit(X[:250], y[:250])
    >>> attack = BoundaryDistanceAttack(target, n_directions=4, fpr=0.05, random_state=0)
    >>> attack.fit(X[250:], y[250:]).decision_function(X[:3], y[:3]).shape
    (3,)
    """

    _parameter_constraints = {
        **BaseMembershipAttack._parameter_constraints,
        "n_directions": [Interval(Integral, 1, None, closed="left")],
        "n_grid": [Interval(Integral, 1, 64, closed="both")],
        "n_bisect": [Interval(Integral, 0, 64, closed="both")],
        "max_distance": [Interval(Real, 0, None, closed="neither")],
        "max_batch_rows": [None, Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        target: Any = None,
        *,
        n_directions: int = 16,
        n_grid: int = 8,
        n_bisect: int = 6,
        max_distance: float = 4.0,
        max_batch_rows: int | None = None,
        threshold_goal: str = "fpr",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
    ) -> None:
        self.target = target
        self.n_directions = n_directions
        self.n_grid = n_grid
        self.n_bisect = n_bisect
        self.max_distance = max_distance
        self.max_batch_rows = max_batch_rows
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    @classmethod
    def _fast_params(cls) -> dict[str, Any]:
        return {"n_directions": 4, "n_grid": 6, "n_bisect": 3}

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False  # a step moves every coordinate (TabularRays)
        tags.membership_tags.queries_perturbed_records = True
        return tags

    def _fit(self, X: Any, y: np.ndarray) -> None:
        self.rays_ = TabularRays(self.n_directions).fit(X).draw(self._draw_seed())
        self.queries_per_record_ = 1 + self.n_directions * (self.n_grid + self.n_bisect)
        self.public_scores_ = self._score(X, y)

    def _nonmember_calibration_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self.public_scores_

    def _score_ceiling(self) -> float:
        # a record whose label changes on no ray
        return 2.0 * float(self.max_distance)

    def _grid(self) -> np.ndarray:
        return float(self.max_distance) * 2.0 ** -np.arange(self.n_grid - 1, -1, -1.0)

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        _, distance = boundary_distances(
            self.target_.predict_indices,
            self.rays_,
            X,
            y,
            grid=self._grid(),
            n_bisect=self.n_bisect,
            max_batch_rows=self.max_batch_rows,
        )
        return np.minimum(distance.min(axis=1), 2.0 * self.max_distance)
