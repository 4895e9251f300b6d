"""A white-box membership attack on tree models: the counts their leaves store.

A tree model's file stores, in every leaf, how many training records fell there (see
:mod:`tabmia.structure`). A member's own leaves hold it: in a tree that counts every
training record, a member's leaf holds at least one record of its class. A non-member's
leaves hold only what the population puts there. The attack compares, tree by tree, the
count stored in the candidate's leaf with what the attacker's public records (known
non-members) predict for that leaf.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval

from tabmia.attacks._docs import shared_parameters
from tabmia.attacks._tags import Tags
from tabmia.attacks.base import BaseMembershipAttack
from tabmia.structure import NotATreeModelError, TreeLeaves, read_trees
from tabmia.target import n_rows, take_rows

__all__ = ["LeafAttack"]

#: Smallest per-tree likelihood ratio: a stored count of 0 in a tree that counts every
#: training record rules membership out; the floor keeps the score finite.
_RATIO_FLOOR = 1e-6
_CHUNK_CELLS = 4_000_000


@shared_parameters
class LeafAttack(BaseMembershipAttack):
    """Score a record from the training counts stored in the leaves it falls in.

    For each tree ``t``, the leaf ``l`` the candidate falls in stores a count ``c`` of
    training records (of the candidate's class where the file keeps class counts:
    scikit-learn trees and forests). Were the candidate a non-member, ``c`` would be
    about ``lambda = N_t q_l``: the tree's ``N_t`` training records times the share
    ``q_l`` of the population in that leaf, estimated from the ``m`` public records
    (``q_l = (p_l + s c / N_t) / (m + s)``, ``p_l`` of them in the leaf, shrunk by
    ``prior_strength`` ``s`` towards the stored share). Were it a member counted in the
    tree (probability ``pi_t``: 1, or about 0.632 in a bootstrap forest), the leaf would
    hold it on top: a Poisson model gives the likelihood ratio ``(1 - pi_t) + pi_t c /
    lambda``. The score is the mean over trees of its logarithm.

    The public records' calibration scores leave each record out of the public counts
    (its own leaves would otherwise always hold a public record), with the same ``m``,
    so that they are exchangeable with a fresh non-member's, ties included, and the
    threshold keeps the FPR promise of :class:`~tabmia.attacks.base.BaseMembershipAttack`.

    It needs the fitted model (a white-box attack: ``white_box`` tag): scikit-learn
    trees, forests, extra-trees, gradient and histogram boosting, XGBoost, LightGBM,
    CatBoost, bare or as a Pipeline's last step. XGBoost stores cover (a hessian sum),
    not counts: its counts are estimates (:mod:`tabmia.structure`).

    Parameters
    ----------
    target : object
        Fitted tree model under audit.
    prior_strength : float, default=1.0
        Pseudo-records ``s`` of the stored share in the estimate of a leaf's population
        share, for leaves few public records reach.
    {threshold_params}
    {random_state_proxy}

    Attributes
    ----------
    leaves_ : TreeLeaves
        The target's leaves and stored counts.
    public_counts_ : ndarray
        Public records per leaf (per leaf and class where the file keeps class counts).
    threshold_ : float
        Decision threshold on ``decision_function``.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from tabmia.attacks import LeafAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = RandomForestClassifier(random_state=0).fit(X[:250], y[:250])
    >>> attack = LeafAttack(target, fpr=0.05).fit(X[250:], y[250:])
    >>> attack.decision_function(X[:5], y[:5]).shape
    (5,)
    """

    _parameter_constraints = {
        **BaseMembershipAttack._parameter_constraints,
        "prior_strength": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        target: Any = None,
        *,
        prior_strength: float = 1.0,
        threshold_goal: str = "fpr",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
    ) -> None:
        self.target = target
        self.prior_strength = prior_strength
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    def __sklearn_tags__(self) -> Tags:
        """The base tags, marked ``white_box``: the attack reads the model's trees."""
        tags = super().__sklearn_tags__()
        tags.membership_tags.white_box = True
        return tags

    # ------------------------------------------------------------------ fitting
    def _fit(self, X: Any, y: np.ndarray) -> None:
        try:
            self.leaves_: TreeLeaves = read_trees(self.target_)
        except NotATreeModelError as exc:
            raise NotATreeModelError(
                f"LeafAttack reads the target's trees and the counts their leaves store, "
                f"so it needs the fitted tree model itself: {exc}"
            ) from exc
        self._n_cells = self._cell_count()
        nodes = self._chunked(X, lambda part, rows: self.leaves_.leaves(part))
        self._public_cells = self._cells(nodes, y)
        self.public_counts_ = np.bincount(
            self._public_cells.ravel(), minlength=self._n_cells
        ).astype(np.float64)
        self._public_y = y

    def _cell_count(self) -> int:
        n_nodes = self.leaves_.counts.size
        cc = self.leaves_.class_counts
        return n_nodes * (1 if cc is None else cc.shape[1])

    def _cells(self, nodes: np.ndarray, y: np.ndarray) -> np.ndarray:
        cc = self.leaves_.class_counts
        if cc is None:
            return nodes
        return nodes * cc.shape[1] + np.asarray(y, dtype=np.int64)[:, None]

    def _chunked(self, X: Any, job: Any) -> np.ndarray:
        """``job(records, rows)`` over chunks of records, stacked."""
        n = n_rows(X)
        step = max(1, _CHUNK_CELLS // max(self.leaves_.n_trees, 1))
        if n <= step:
            return job(X, np.arange(n))
        parts = [
            job(take_rows(X, rows), rows)
            for rows in (np.arange(s, min(n, s + step)) for s in range(0, n, step))
        ]
        return np.concatenate(parts)

    # ------------------------------------------------------------------ scoring
    def _log_ratio(self, X: Any, nodes: np.ndarray, y: np.ndarray, own: bool) -> np.ndarray:
        """Mean over trees of the per-tree log likelihood ratio (member / non-member)."""
        leaves = self.leaves_
        stored = leaves.leaf_class_counts(nodes, y)
        if stored is None:
            stored = leaves.leaf_counts(X, nodes)
        public = self.public_counts_[self._cells(nodes, y)]
        # the same m for both: a fresh record whose leaf no public record reaches then
        # scores exactly as a public record alone in its leaf (with m - 1 here, it would
        # score a hair higher, and break the calibration's ties above the threshold)
        m = float(self.n_public_)
        if own:  # leave the record out of the public counts it is compared with
            public = public - 1.0
        s = float(self.prior_strength)
        size = leaves.tree_size[None, :]
        expected = (size * public + s * stored) / (m + s)
        ratio = np.divide(stored, expected, out=np.zeros_like(stored), where=stored > 0)
        pi = leaves.inclusion[None, :]
        lr = np.maximum((1.0 - pi) + pi * ratio, _RATIO_FLOOR)
        return np.log(lr).mean(axis=1)

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y)

        def job(part: Any, rows: np.ndarray) -> np.ndarray:
            return self._log_ratio(part, self.leaves_.leaves(part), y[rows], own=False)

        return self._chunked(X, job)

    def _nonmember_calibration_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y)
        cc = self.leaves_.class_counts
        k = 1 if cc is None else cc.shape[1]

        def job(part: Any, rows: np.ndarray) -> np.ndarray:
            nodes = self._public_cells[rows] // k if cc is not None else self._public_cells[rows]
            return self._log_ratio(part, nodes, y[rows], own=True)

        out = self._chunked(X, job)
        del self._public_cells, self._public_y
        return out
