"""Merlin and Morgan (Jayaraman et al., PETS 2021): does the loss rise around the record?

Merlin perturbs each candidate record ``T`` times and counts how often the target's
loss on the noisy copy is higher than on the clean record (Algorithm 1). Training
records sit near local minima of an overfit model's loss, so their ratio is high.
Morgan combines that ratio with a window on the loss itself (Section 5.3).

All ``T`` copies of a chunk of records, and the clean records themselves, go to the
target in one ``predict_proba`` call; the noise model is :class:`tabmia.perturb.TabularNoise`.
"""

from __future__ import annotations

import warnings
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from tabmia._estimators import clone_recipe, recipe_of
from tabmia.attacks._docs import shared_parameters
from tabmia.attacks.base import BaseMembershipAttack
from tabmia.exceptions import DegenerateRatioWarning
from tabmia.perturb import NOISE_CONSTRAINTS, TabularNoise
from tabmia.target import TargetModel, as_target, n_rows, take_rows

__all__ = [
    "MerlinAttack",
    "MorganAttack",
    "DegenerateRatioWarning",
    "merlin_statistics",
    "morgan_search",
]

#: Above this fraction of noisy copies that leave the loss exactly unchanged, fit warns.
TIE_WARNING_FRACTION = 0.5

#: Default size of one query batch (bytes of float64 features). Cache-sized batches
#: beat large ones, which pay for fresh memory for the copies (page faults, cache
#: misses); the batched ratio's cost against one predict_proba on all n*T rows is in
#: benchmarks/results/merlin_speed.md.
_BATCH_BYTES = 2**23


def _n_columns(X: Any) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) == 2 else 1


def merlin_statistics(
    target: TargetModel,
    noise: TabularNoise,
    X: Any,
    y: np.ndarray,
    *,
    ties: str = "strict",
    max_batch_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Loss, Merlin ratio and number of tied copies of each record.

    Parameters
    ----------
    target : TargetModel
        Model to query.
    noise : TabularNoise
        Fitted noise model with its ``T`` perturbations drawn.
    X : array, sparse matrix or DataFrame of shape (n, d)
        Records.
    y : ndarray of shape (n,)
        Label indices.
    ties : {"strict", "half"}
        A copy counts when its loss is strictly higher (Algorithm 1); ``"half"`` adds
        half a count per copy whose loss is exactly the clean loss.
    max_batch_rows : int, default=None
        Rows (clean + noisy) per query batch; ``None`` sizes batches to ~8 MB of
        float64 features. A batch always holds at least one record and its copies.

    Returns
    -------
    loss : ndarray of shape (n,)
        Cross-entropy loss ``log(1 + sum_{j != y} p_j / p_y)`` of the clean record.
    ratio : ndarray of shape (n,)
        Fraction of copies whose loss is higher.
    n_ties : ndarray of shape (n,)
        Copies whose loss equals the clean loss exactly.
    """
    n = n_rows(X)
    T = noise.n_copies_
    if max_batch_rows is None:
        max_batch_rows = max(1, _BATCH_BYTES // (8 * max(1, _n_columns(X))))
    per_chunk = max(1, int(max_batch_rows) // (T + 1))
    loss = np.empty(n, dtype=np.float64)
    count = np.empty(n, dtype=np.float64)
    n_ties = np.empty(n, dtype=np.int64)
    for start in range(0, n, per_chunk):
        stop = min(start + per_chunk, n)
        batch = noise.noisy_batch(take_rows(X, slice(start, stop)))
        y_rep = np.repeat(y[start:stop], T + 1)
        # ``lc = log p_y - log sum_{j != y} p_j``: the loss ``log(1 + exp(-lc))`` is
        # strictly decreasing in it, and unlike ``-log p_y`` it does not round to 0 for
        # confident predictions
        lc = target.statistic("logit", batch, y_rep).reshape(stop - start, T + 1)
        clean = lc[:, :1]
        noisy = lc[:, 1:]
        up = np.count_nonzero(noisy < clean, axis=1)
        tied = np.count_nonzero(noisy == clean, axis=1)
        count[start:stop] = up + 0.5 * tied if ties == "half" else up
        n_ties[start:stop] = tied
        loss[start:stop] = np.logaddexp(0.0, -clean[:, 0])
    return loss, count / T, n_ties


_NOISE_CONSTRAINTS = {
    **NOISE_CONSTRAINTS,
    "ties": [StrOptions({"strict", "half"})],
    "max_batch_rows": [None, Interval(Integral, 1, None, closed="left")],
}


class _PerturbationAttack(BaseMembershipAttack):
    """Shared machinery of Merlin and Morgan."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.membership_tags.queries_perturbed_records = True
        return tags

    def _fit_noise(self, X: Any) -> None:
        self.noise_ = TabularNoise(
            sigma=self.sigma,
            noise_scale=self.noise_scale,
            categorical_flip=self.categorical_flip,
            binary_flip=self.binary_flip,
        ).fit(X)
        self.noise_.draw(self.n_noise, self._draw_seed())

    def _statistics(self, target: TargetModel, X: Any, y: np.ndarray) -> tuple:
        return merlin_statistics(
            target, self.noise_, X, y, ties=self.ties, max_batch_rows=self.max_batch_rows
        )

    def _record_ties(self, n_ties: np.ndarray, where: str) -> None:
        self.tie_fraction_ = float(n_ties.sum()) / (n_ties.size * self.n_noise)
        if self.tie_fraction_ > TIE_WARNING_FRACTION:
            warnings.warn(
                f"{type(self).__name__}: {100 * self.tie_fraction_:.0f}% of the noisy copies "
                f"of the {where} left the loss exactly unchanged, so the Merlin ratio is "
                "degenerate (piecewise-constant models such as trees ignore small noise). "
                "Use noise_scale='std' with a larger sigma (e.g. 0.1-0.5), and/or "
                "ties='half' so that unchanged copies count as neutral.",
                DegenerateRatioWarning,
                stacklevel=4,
            )

    def loss_and_ratio(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Target's loss and Merlin ratio of each candidate record.

        Returns
        -------
        loss, ratio : ndarray of shape (n,)
        """
        if not hasattr(self, "noise_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit first")
        y_idx = self._validate_records(X, y, "loss_and_ratio")
        loss, ratio, _ = self._statistics(self.target_, X, y_idx)
        return loss, ratio


@shared_parameters
class MerlinAttack(_PerturbationAttack):
    """Merlin: a member when the loss rises under small perturbations of the record.

    For each candidate, ``n_noise`` noisy copies are scored by the target together
    with the clean record (one ``predict_proba`` call per chunk of records, never a
    loop over records);
    ``decision_function`` is the Merlin ratio, the fraction of copies whose loss is
    strictly higher than the clean loss (Jayaraman et al., Algorithm 1).

    Parameters
    ----------
    {target}
    n_noise : int, default=100
        Noisy copies ``T`` per record.
    sigma : float, default=0.01
        Standard deviation of the Gaussian noise on numeric features (the paper's
        value, for features scaled to [0, 1]).
    noise_scale : {"absolute", "std"}, default="absolute"
        ``"std"`` multiplies ``sigma`` by each feature's standard deviation on the
        public records (use it for unscaled features).
    categorical_flip : float, default=0.01
        Probability that a categorical cell of a DataFrame is redrawn from the
        column's public marginal.
    binary_flip : float, default=0.01
        Probability that a 0/1 (or bool) cell is flipped. ``0`` gives binary features
        Gaussian noise instead, as in the paper's Purchase-100 / Texas-100 runs.
    ties : {"strict", "half"}, default="strict"
        How copies whose loss is *exactly* the clean loss count. ``"strict"`` counts
        only increases (Algorithm 1, step 5: "equality is not a strong indicator of
        membership"), so a record in a flat region gets ratio 0, like one at a loss
        maximum. ``"half"`` counts a tie as half an increase, making flat regions
        neutral (0.5); prefer it for tree ensembles, whose piecewise-constant output
        ties often. Neural networks with continuous noise almost never tie.
    max_batch_rows : int, default=None
        Rows (clean + noisy) materialised and sent per ``predict_proba`` call; None
        sizes a batch to about 8 MB of float64 features (cache-sized batches were
        faster than larger ones). Does not change results.
    {threshold_params}
    {random_state_noise}

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    noise_ : TabularNoise
        Noise model fitted on the public records (column kinds, scales, marginals)
        with the ``T`` perturbations every record receives (``noise_.gauss_``,
        ``noise_.flips_``, ``noise_.redraws_``), drawn from ``random_state``.
    public_ratios_ : ndarray of shape (n_public,)
        Merlin ratios of the public records (the non-member calibration scores).
    tie_fraction_ : float
        Fraction of the public records' noisy copies whose loss equalled the clean
        loss exactly. Above 0.5 ``fit`` warns (:class:`DegenerateRatioWarning`).
    threshold_ : float
        Threshold on the ratio.

    Notes
    -----
    The ratio takes only ``T + 1`` values (``2T + 1`` with ``ties="half"``), so many
    records tie and the FPR at ``threshold_`` is at most, often well below, ``fpr``:
    split-conformal calibration bounds it from above only, so it can fall below the
    band :func:`tabmia.thresholds.conformal_fpr_band` gives for continuous scores.
    Losses are compared as ``log p_y - log sum_{j != y} p_j`` (strictly monotone in
    the loss) so that confident predictions, whose ``-log p_y`` rounds to 0 in float64,
    do not all tie. The ``T`` perturbations are drawn once in ``fit`` and shared by all
    records (common random numbers; per record they are i.i.d. draws, exactly
    Algorithm 1): a record's score does not depend on the other records, its position
    or the batch size, and public and candidate scores are exchangeable (see
    :mod:`tabmia.perturb`). Cost: ``n * (T + 1)`` target queries per call, and as many
    on the public records in ``fit``.

    References
    ----------
    .. [1] Jayaraman, Wang, Knipmeyer, Gu, Evans. Revisiting Membership Inference
       Under Realistic Assumptions. PETS 2021. (Section 5.2, Algorithm 1)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.neural_network import MLPClassifier
    >>> from tabmia.attacks import MerlinAttack
    >>> X, y = make_classification(600, n_features=10, n_informative=6, n_classes=3,
    ...                            random_state=0)
    >>> target = MLPClassifier((64,), max_iter=500, random_state=0).fit(X[:200], y[:200])
    >>> attack = MerlinAttack(target, n_noise=20, sigma=0.05, fpr=0.05,
    ...                       random_state=0).fit(X[200:400], y[200:400])
    >>> attack.decision_function(X[:3], y[:3]).shape
    (3,)
    """

    _parameter_constraints = {**BaseMembershipAttack._parameter_constraints, **_NOISE_CONSTRAINTS}

    def __init__(
        self,
        target: Any = None,
        *,
        n_noise: int = 100,
        sigma: float = 0.01,
        noise_scale: str = "absolute",
        categorical_flip: float = 0.01,
        binary_flip: float = 0.01,
        ties: str = "strict",
        max_batch_rows: int | None = None,
        threshold_goal: str = "fpr",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
    ) -> None:
        self.target = target
        self.n_noise = n_noise
        self.sigma = sigma
        self.noise_scale = noise_scale
        self.categorical_flip = categorical_flip
        self.binary_flip = binary_flip
        self.ties = ties
        self.max_batch_rows = max_batch_rows
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    @classmethod
    def _fast_params(cls) -> dict[str, Any]:
        return {"n_noise": 8, "noise_scale": "std", "sigma": 0.1}

    def _fit(self, X: Any, y: np.ndarray) -> None:
        self._fit_noise(X)
        _, ratio, n_ties = self._statistics(self.target_, X, y)
        self.public_ratios_ = ratio
        self._record_ties(n_ties, "public records")

    def _nonmember_calibration_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self.public_ratios_

    def _score_ceiling(self) -> float:
        return 1.0  # every noisy copy raised the loss

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self._statistics(self.target_, X, y)[1]


def _window_counts(sorted_loss: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``counts[a, b] = #{grid[a] <= loss <= grid[b]}`` (0 when ``b < a``)."""
    right = np.searchsorted(sorted_loss, grid, side="right")
    left = np.searchsorted(sorted_loss, grid, side="left")
    counts = right[None, :] - left[:, None]
    return np.triu(counts)


def morgan_search(
    loss_in: np.ndarray,
    ratio_in: np.ndarray,
    loss_out: np.ndarray,
    ratio_out: np.ndarray,
    *,
    goal: str = "max_ppv",
    fpr: float = 0.01,
    prior: float = 1.0,
    n_thresholds: int = 50,
) -> dict[str, float]:
    """Joint search of Morgan's ``(phi_L, phi_U, phi_M)`` on simulated members / non-members.

    The loss thresholds range over ``n_thresholds`` quantiles of the pooled losses
    plus 0 (no lower bound) and +inf (no upper bound); ``phi_M`` over every distinct
    ratio. A record is flagged when ``phi_L <= loss <= phi_U`` and ``ratio >= phi_M``.
    Every combination is scored at once (counts from sorted losses, one pass per
    ratio level). Among combinations reaching the best value (PPV under ``prior``,
    TPR - FPR, or TPR subject to FPR <= ``fpr``) the one flagging the most simulated
    members wins, then the lowest ``phi_L`` (the paper's rule, Section 5.3), then the
    fewest non-members.

    Returns
    -------
    dict
        ``phi_L``, ``phi_U``, ``phi_M``, and the ``tpr``, ``fpr``, ``ppv`` and
        ``value`` of the chosen region on the simulated records.
    """
    n_in, n_out = loss_in.size, loss_out.size
    pooled = np.r_[loss_in, loss_out]
    qs = np.quantile(pooled, np.linspace(0.0, 1.0, n_thresholds))
    grid = np.unique(np.r_[0.0, qs, np.inf])
    levels = np.unique(np.r_[ratio_in, ratio_out])
    G, M = grid.size, levels.size
    tpr = np.empty((M, G, G))
    fpr_ = np.empty((M, G, G))
    for k, level in enumerate(levels):  # loop over ratio levels (<= 2T + 1), not records
        tpr[k] = _window_counts(np.sort(loss_in[ratio_in >= level]), grid) / n_in
        fpr_[k] = _window_counts(np.sort(loss_out[ratio_out >= level]), grid) / n_out
    den = tpr + prior * fpr_
    ppv = np.where(den > 0, tpr / np.where(den > 0, den, 1.0), 1.0 / (1.0 + prior))
    if goal == "max_ppv":
        value = np.where(tpr > 0, ppv, -np.inf)
    elif goal == "max_advantage":
        value = tpr - fpr_
    elif goal == "fpr":
        value = np.where(fpr_ <= fpr + 1e-12, tpr, -np.inf)
    else:  # pragma: no cover - validated by the caller
        raise ValueError(f"unknown goal {goal!r}")
    best = value.max()
    if not np.isfinite(best):  # nothing flags a simulated member: flag nothing
        return {
            "phi_L": 0.0,
            "phi_U": -np.inf,
            "phi_M": float(levels[-1]),
            "tpr": 0.0,
            "fpr": 0.0,
            "ppv": 1.0 / (1.0 + prior),
            "value": float(best),
        }
    cand = np.argwhere(value >= best - 1e-12)  # rows (k, a, b)
    c_tpr = tpr[cand[:, 0], cand[:, 1], cand[:, 2]]
    c_fpr = fpr_[cand[:, 0], cand[:, 1], cand[:, 2]]
    order = np.lexsort((c_fpr, cand[:, 1], -c_tpr))
    k, a, b = cand[order[0]]
    return {
        "phi_L": float(grid[a]),
        "phi_U": float(grid[b]),
        "phi_M": float(levels[k]),
        "tpr": float(tpr[k, a, b]),
        "fpr": float(fpr_[k, a, b]),
        "ppv": float(ppv[k, a, b]),
        "value": float(best),
    }


@shared_parameters
class MorganAttack(_PerturbationAttack):
    """Morgan: a member when its loss is in a window and its Merlin ratio is high.

    A record is flagged when ``phi_L <= loss <= phi_U`` and ``merlin_ratio >= phi_M``
    (Jayaraman et al., Section 5.3). The three thresholds are chosen together on a
    proxy model the attacker trains on half of its public records (Procedure 5.1):
    the proxy's training records are simulated members, the other half simulated
    non-members, and every combination on quantile grids of the proxy's losses and
    ratios is scored at once (:func:`morgan_search`); the best PPV under ``prior``
    wins by default (``threshold_goal="max_ppv"``). Among equally good combinations,
    the one flagging the most simulated members, then the lowest ``phi_L``.

    ``decision_function`` is the Merlin ratio for records inside the loss window and
    ``ratio - 2`` (in [-2, -1]) outside it, so every record inside the window ranks
    above every record outside, records are ordered by their ratio within each
    group, and ``predict`` (``decision_function >= threshold_`` with ``threshold_ =
    phi_M``) is exactly the three-threshold rule.

    Parameters
    ----------
    {target}
    n_noise, sigma, noise_scale, categorical_flip, binary_flip, ties, max_batch_rows
        As in :class:`MerlinAttack`.
    n_thresholds : int, default=50
        Quantiles of the proxy's losses tried for ``phi_L`` and ``phi_U`` (plus 0 and
        +inf, i.e. no bound).
    threshold_goal : {"max_ppv", "max_advantage"}, default="max_ppv"
        What the three thresholds optimise on the proxy. ``"fpr"`` raises a
        ``ValueError``: Morgan cannot promise an FPR on the target's fresh
        non-members. Its thresholds are chosen on the proxy's simulated members and
        non-members, and the proxy's loss window and ratio do not transfer to the
        target's scores (a rule with FPR <= ``fpr`` on the proxy delivered well above
        ``fpr`` on the target). Use :class:`MerlinAttack` (or any other attack) for
        an FPR promise.
    fpr : float, default=0.01
        Unused (kept for the common interface).
    unresolved_fpr : {"raise", "smallest"}, default="raise"
        Unused (kept for the common interface).
    prior : float, default=1.0
        Non-members per member (``gamma``) in the PPV.
    proxy_estimator : estimator, default=None
        Unfitted recipe of the proxy; by default a clone of the target's recipe
        (the target must then be a scikit-learn estimator).
    random_state : int, RandomState instance or None, default=None
        Seeds the noise and the proxy split.

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    noise_ : TabularNoise
        Noise model fitted on all public records.
    proxy_ : estimator
        The attacker's proxy model.
    phi_L_, phi_U_, phi_M_ : float
        The loss window and the ratio threshold.
    proxy_tpr_, proxy_fpr_, proxy_ppv_ : float
        Rates of the chosen rule on the proxy's simulated members / non-members.
    tie_fraction_ : float
        Fraction of the proxy records' noisy copies that left the loss unchanged.
    calibration_scores_ : ndarray
        Scores of the proxy's non-members.
    threshold_ : float
        ``phi_M_``.

    References
    ----------
    .. [1] Jayaraman, Wang, Knipmeyer, Gu, Evans. Revisiting Membership Inference
       Under Realistic Assumptions. PETS 2021. (Sections 5.1, 5.3, 7.4)

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.neural_network import MLPClassifier
    >>> from tabmia.attacks import MorganAttack
    >>> X, y = make_classification(1000, n_features=10, n_informative=6, n_classes=3,
    ...                            random_state=0)
    >>> target = MLPClassifier((64,), max_iter=300, random_state=0).fit(X[:300], y[:300])
    >>> attack = MorganAttack(target, n_noise=20, sigma=0.05, random_state=0)
    >>> attack = attack.fit(X[300:], y[300:])
    >>> bool(attack.phi_L_ <= attack.phi_U_)
    True
    """

    _parameter_constraints = {
        **BaseMembershipAttack._parameter_constraints,
        **_NOISE_CONSTRAINTS,
        "n_thresholds": [Interval(Integral, 2, 2000, closed="both")],
    }

    def __init__(
        self,
        target: Any = None,
        *,
        n_noise: int = 100,
        sigma: float = 0.01,
        noise_scale: str = "absolute",
        categorical_flip: float = 0.01,
        binary_flip: float = 0.01,
        ties: str = "strict",
        max_batch_rows: int | None = None,
        n_thresholds: int = 50,
        threshold_goal: str = "max_ppv",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
    ) -> None:
        self.target = target
        self.n_noise = n_noise
        self.sigma = sigma
        self.noise_scale = noise_scale
        self.categorical_flip = categorical_flip
        self.binary_flip = binary_flip
        self.ties = ties
        self.max_batch_rows = max_batch_rows
        self.n_thresholds = n_thresholds
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    @classmethod
    def _fast_params(cls) -> dict[str, Any]:
        return {"n_noise": 8, "noise_scale": "std", "sigma": 0.1, "n_thresholds": 10}

    def _calibration_count(self) -> tuple[int, str]:
        # asked only for threshold_goal="fpr", before anything is fitted
        raise ValueError(
            "MorganAttack cannot promise an FPR (threshold_goal='fpr'): its three "
            "thresholds are chosen on a proxy model and its proxy FPR does not carry "
            "over to the target's non-members; use threshold_goal='max_ppv' or "
            "'max_advantage', or MerlinAttack / another attack for an FPR promise"
        )

    def _fit(self, X: Any, y: np.ndarray) -> None:
        n = n_rows(X)
        if getattr(self, "_fit_groups", None) is not None:
            raise ValueError(
                "MorganAttack with groups: its proxy model's members and non-members are drawn "
                "record by record, not person by person, and it promises no FPR to calibrate "
                "persons on; leave it out of a person-level audit (MerlinAttack keeps persons)"
            )
        if n < 40:
            raise ValueError(
                f"MorganAttack needs public records to train a proxy model; got only {n}"
            )
        self._fit_noise(X)
        if self.proxy_estimator is not None:
            recipe = clone_recipe(self.proxy_estimator, name="proxy_estimator", target=self.target)
        else:
            recipe = recipe_of(self.target, name="proxy_estimator (for MorganAttack)")
        y_raw = self.target_.classes_[y]
        perm = np.random.RandomState(self._draw_seed()).permutation(n)
        in_idx, out_idx = np.sort(perm[: n // 2]), np.sort(perm[n // 2 :])
        proxy = recipe.fit(take_rows(X, in_idx), y_raw[in_idx])
        proxy_target = as_target(proxy)
        seen = np.isin(y_raw[out_idx], proxy_target.classes_)
        out_idx = out_idx[seen]  # labels the proxy never saw cannot be scored by it
        loss_in, ratio_in, ties_in = self._statistics(
            proxy_target, take_rows(X, in_idx), proxy_target.encode_labels(y_raw[in_idx])
        )
        loss_out, ratio_out, ties_out = self._statistics(
            proxy_target, take_rows(X, out_idx), proxy_target.encode_labels(y_raw[out_idx])
        )
        self._record_ties(np.r_[ties_in, ties_out], "proxy's records")
        found = morgan_search(
            loss_in,
            ratio_in,
            loss_out,
            ratio_out,
            goal=self.threshold_goal,
            fpr=self.fpr,
            prior=self.prior,
            n_thresholds=self.n_thresholds,
        )
        self.proxy_ = proxy
        self.phi_L_, self.phi_U_, self.phi_M_ = found["phi_L"], found["phi_U"], found["phi_M"]
        self.proxy_tpr_, self.proxy_fpr_, self.proxy_ppv_ = found["tpr"], found["fpr"], found["ppv"]
        self.calibration_scores_ = self._combine(loss_out, ratio_out)

    def _choose_threshold(self, X: Any, y_raw: np.ndarray, y_idx: np.ndarray) -> float:
        self.calibration_rows_ = None  # the proxy's records, not fit's
        return float(self.phi_M_)

    def _combine(self, loss: np.ndarray, ratio: np.ndarray) -> np.ndarray:
        inside = (loss >= self.phi_L_) & (loss <= self.phi_U_)
        return np.where(inside, ratio, ratio - 2.0)

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        loss, ratio, _ = self._statistics(self.target_, X, y)
        return self._combine(loss, ratio)
