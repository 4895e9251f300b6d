"""RMIA: robust membership inference (Zarifzadeh, Liu, Shokri, ICML 2024), offline.

The likelihood ratio of a candidate ``x`` against a population record ``z`` is

    LR(x, z) = [p(x | theta) / p(x)] / [p(z | theta) / p(z)],

with ``p(. | theta)`` the target's probability of the record's label and ``p(.)`` its
average over reference models. RMIA's score of ``x`` is the share of population
records ``z`` it dominates: ``Pr_z[LR(x, z) >= gamma]``.

Offline (reference models never trained on ``x``), ``p(x)`` is approximated from the
OUT mean: ``p(x) = (1 + a)/2 * mean_OUT p(x | theta') + (1 - a)/2``, with ``a`` tuned by
attacking an extra reference model whose training records are known.

The count is computed without the ``n x z`` matrix: with ``r = log p(. | theta) -
log p(.)``, ``LR(x, z) >= gamma`` is ``r_z <= r_x - log gamma``, so the sorted
``r_z`` and one ``searchsorted`` per candidate give every count: ``O((n + z) log z)``
time and ``O(n + z)`` memory.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from tabmia._validation import POSITIVE, validate_params
from tabmia.attacks._docs import shared_parameters
from tabmia.attacks._reference import ReferenceModelAttack
from tabmia.metrics import auc as _auc
from tabmia.shadow.moments import masked_moments

__all__ = ["RMIAAttack", "rmia_fraction", "A_GRID"]

#: Values of ``a`` tried when ``a="auto"`` (the paper's grid, step 0.1).
A_GRID: tuple[float, ...] = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))
#: ``shadow_train_size`` leaves every public record OUT for at least this many
#: reference models (fewer with fewer than twice as many): ``p(x)`` averages them.
MIN_OUT_REFERENCES = 2
#: Probabilities are floored here before taking logarithms.
_P_FLOOR = 1e-30


@validate_params({"gamma": POSITIVE})
def rmia_fraction(
    log_ratio_x: Any, log_ratio_z: Any, gamma: float = 1.0, *, presorted: bool = False
) -> np.ndarray:
    """Share of population records each candidate dominates: ``Pr_z[LR(x, z) >= gamma]``.

    Parameters
    ----------
    log_ratio_x : array-like of shape (n,)
        ``log p(x | theta) - log p(x)`` of each candidate.
    log_ratio_z : array-like of shape (n_z,)
        The same for each population record.
    gamma : float, default=1.0
        Threshold on the pairwise likelihood ratio.
    presorted : bool, default=False
        ``log_ratio_z`` is already sorted ascending.

    Returns
    -------
    ndarray of shape (n,)
        ``#{z : r_x - r_z >= log gamma} / n_z``, computed with one sort of ``r_z``
        and a binary search per candidate (no ``n x n_z`` matrix).
    """
    rz = np.asarray(log_ratio_z, dtype=np.float64)
    if rz.ndim != 1 or rz.size == 0:
        raise ValueError("log_ratio_z must be a non-empty 1-D array")
    if not presorted:
        rz = np.sort(rz)
    rx = np.asarray(log_ratio_x, dtype=np.float64)
    return np.searchsorted(rz, rx - np.log(gamma), side="right") / rz.size


def _tie_break(log_ratio_x: np.ndarray, n_z: int) -> np.ndarray:
    """Strictly increasing in ``r_x``, within ``[0, 1 / (2 n_z))``."""
    return (0.5 + np.arctan(log_ratio_x) / np.pi) / (2.0 * n_z)


@shared_parameters
class RMIAAttack(ReferenceModelAttack):
    """Offline RMIA: pairwise likelihood ratios against population records.

    ``fit(X, y)`` trains ``n_reference`` reference models on random halves of the
    public records (or subsets of ``shadow_train_size`` records), plus one more to
    tune ``a`` when ``a="auto"``, and takes the population records ``z`` from the
    public records. ``decision_function(X, y)`` is the share of ``z`` that each
    candidate dominates (``LR(x, z) >= gamma``).

    ``p(x)`` of a public record averages the reference models that were OUT for it;
    a record outside the public data is scored by as many references, drawn the way
    a public record's OUT set is; ``p(z)`` of a population record likewise averages
    only the references that did not train on ``z``.

    Parameters
    ----------
    {target}
    reference_estimator : estimator, default=None
        Unfitted recipe of a reference model; a clone of the target's recipe by
        default.
    n_reference : int, default=4
        Number of reference models.
    a : float in [0, 1] or "auto", default="auto"
        Offline approximation ``p(x) = (1 + a)/2 p_OUT(x) + (1 - a)/2``. ``"auto"``
        trains one extra reference model, attacks it with the other references as an
        RMIA target (its IN and OUT public records are known) for every ``a`` in
        :data:`A_GRID`, and keeps the ``a`` with the largest AUC (the paper's
        procedure). The extra model then joins the references.
    gamma : float, default=1.0
        Threshold on the pairwise likelihood ratio ``LR(x, z)``.
    n_population : int, default=None
        Number of population records ``z`` drawn (without replacement) from the
        public records; all of them when None or larger.
    tie_break : bool, default=True
        The share of dominated ``z`` moves in steps of ``1/n_z``, and many candidates
        tie (all that dominate every ``z`` share the top score, exactly where a low
        FPR is decided). With ``tie_break`` the score is ``share + (1/2 +
        arctan(r_x)/pi) / (2 n_z)``: ties are broken by the candidate's own ratio
        ``r_x``, which the share is already monotone in, so no two candidates swap
        order and ``floor(score * n_z)`` is still the count.
    {reference_population}
    {max_memory}
    cache_dir : str or path, default=None
        Cache of the reference population (see :class:`tabmia.shadow.ShadowPopulation`).
    {reference_verbose}
    {threshold_params}
    random_state : int, RandomState instance or None, default=None
        Seeds the reference models and the population draw.

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    population_ : ShadowPopulation
        The reference models (``statistics_``: each one's true-label probability on
        every public record).
    in_masks_ : ndarray of bool of shape (n_models, n_public)
        Which public record trained which reference model.
    a_ : float
        The ``a`` used.
    a_auc_ : dict
        AUC of each ``a`` tried on the held-out reference model (``a="auto"``).
    population_index_ : ndarray of int
        Public rows used as population records ``z``.
    population_log_ratios_ : ndarray of shape (n_z,)
        Sorted ``r_z = log p(z | theta) - log p(z)``.
    threshold_ : float
        Decision threshold on ``decision_function``.

    Notes
    -----
    With ``threshold_goal="fpr"`` every public record calibrates ``threshold_``: its
    ``p(x)`` averages the references that did not train on it, and a fresh
    candidate's averages as many references, drawn the way a public record's OUT set
    is (:mod:`tabmia.attacks._reference`). Scoring fresh candidates with every
    reference instead made the threshold conservative: a mean over about half the
    references is noisier, and its upper tail runs above that of a mean over all of
    them. The score of a record is the same function of its ``r_x`` for public
    records and candidates (the share of ``z`` with ``r_z <= r_x``), so calibrating
    on the public records' scores is calibrating on their ``r_x``.

    With one shared set of ``z``, the score is a monotone function of ``r_x``: the
    pairwise comparison does not change the ranking of candidates, it gives the
    score its interpretation (the share of the population it beats) and lets
    ``gamma`` demand a margin.

    References
    ----------
    .. [1] Zarifzadeh, Liu, Shokri. Low-Cost High-Power Membership Inference Attacks.
       ICML 2024.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from tabmia.attacks import RMIAAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = DecisionTreeClassifier(random_state=0).fit(X[:200], y[:200])
    >>> attack = RMIAAttack(target, n_reference=2, fpr=0.05, random_state=0)
    >>> attack = attack.fit(X[200:], y[200:])
    >>> attack.decision_function(X[:5], y[:5]).shape
    (5,)
    """

    _model_recipe_param, _model_count_param = "reference_estimator", "n_reference"

    _parameter_constraints = {
        **ReferenceModelAttack._parameter_constraints,
        "reference_estimator": [None, HasMethods(["fit"])],
        "n_reference": [Interval(Integral, 1, None, closed="left")],
        "a": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="both")],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "n_population": [None, Interval(Integral, 1, None, closed="left")],
        "tie_break": ["boolean"],
    }

    def __init__(
        self,
        target: Any = None,
        *,
        reference_estimator: Any = None,
        n_reference: int = 4,
        a: Any = "auto",
        gamma: float = 1.0,
        n_population: int | None = None,
        tie_break: bool = True,
        shadow_train_size: Any = None,
        calibration_share: float = 0.0,
        n_jobs: int | None = None,
        max_memory: Any = None,
        cache_dir: Any = None,
        verbose: bool = False,
        threshold_goal: str = "fpr",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
    ) -> None:
        self.target = target
        self.reference_estimator = reference_estimator
        self.n_reference = n_reference
        self.a = a
        self.gamma = gamma
        self.n_population = n_population
        self.tie_break = tie_break
        self.shadow_train_size = shadow_train_size
        self.calibration_share = calibration_share
        self.n_jobs = n_jobs
        self.max_memory = max_memory
        self.cache_dir = cache_dir
        self.verbose = verbose
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    @classmethod
    def _fast_params(cls) -> dict[str, Any]:
        return {"n_reference": 2}

    # ----------------------------------------------------------------------- fit
    def _fit(self, X: Any, y: np.ndarray) -> None:
        tune = self.a == "auto"
        n_models = self.n_reference + (1 if tune else 0)
        if n_models < 2:
            raise ValueError(
                "RMIA with a single reference model trained on half of the public records "
                "leaves half of them without an OUT reference; use n_reference >= 2"
            )
        pop = self._fit_population(
            X,
            y,
            estimator=self.reference_estimator,
            name="reference_estimator",
            n_models=n_models,
            statistic="confidence",
            pkeep=0.5,
            # the model that tunes ``a`` plays the target: records must stay OUT of
            # some of the others
            share_models=max(self.n_reference, 2),
            min_out=min(MIN_OUT_REFERENCES, max(self.n_reference // 2, 1)),
        )
        self.population_ = pop
        self._index_pool(X, y, pop.in_masks_)
        stats = pop.statistics_
        p_target = self._target_proba(X, y)
        if tune:
            self.a_, self.a_auc_ = self._tune_a(stats, self.in_masks_)
        else:
            self.a_, self.a_auc_ = float(self.a), {}
        self._set_moments(stats)
        ok = np.flatnonzero(self._moments["c_out"] > 0)
        if ok.size == 0:
            raise ValueError("no public record has an OUT reference model")
        rng = np.random.RandomState(self._draw_seed())
        if self.n_population is not None and self.n_population < ok.size:
            ok = np.sort(rng.choice(ok, self.n_population, replace=False))
        self.population_index_ = ok
        r_pool = _log_ratio(p_target, self._moments["mu_out"], self.a_)
        self.population_log_ratios_ = np.sort(r_pool[ok])

    def _target_proba(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self.target_.statistic("confidence", X, y)

    def _tune_a(self, stats: np.ndarray, in_masks: np.ndarray) -> tuple[float, dict[float, float]]:
        """Attack the last reference model with the others, for every ``a`` in the grid."""
        k = stats.shape[0] - 1
        refs, ref_in = stats[:k], in_masks[:k]
        c, mean, _ = masked_moments(refs, ~ref_in)
        usable = c > 0
        member = in_masks[k] & usable
        nonmember = ~in_masks[k] & usable
        if member.sum() < 1 or nonmember.sum() < 2:
            raise ValueError("too few public records to tune a; pass a float a")
        p_k = stats[k].astype(np.float64)
        results: dict[float, float] = {}
        for a in A_GRID:  # a loop over the 11 values of a
            r = _log_ratio(p_k, mean, a)
            rz = np.sort(r[nonmember])
            s = self._decision(r, rz)
            idx = np.flatnonzero(usable)
            results[float(a)] = _auc(member[idx], s[idx])
        best = max(results.values())
        a_best = min(a for a, v in results.items() if v >= best - 1e-12)
        return float(a_best), results

    # -------------------------------------------------------------------- score
    def _decision(self, r_x: np.ndarray, r_z_sorted: np.ndarray) -> np.ndarray:
        s = rmia_fraction(r_x, r_z_sorted, self.gamma, presorted=True)
        if self.tie_break:
            s = s + _tie_break(r_x, r_z_sorted.size)
        return s

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "population_")
        return self._decision(self._log_ratios(X, y), self.population_log_ratios_)

    def _log_ratios(self, X: Any, y_idx: np.ndarray) -> np.ndarray:
        """``r_x = log p(x | theta) - log p(x)`` for label indices ``y_idx``."""
        mom, _, p_target = self._moments_while(X, y_idx, lambda: self._target_proba(X, y_idx))
        return _log_ratio(p_target, mom["mu_out"], self.a_)

    def score_samples(self, X: Any, y: Any) -> np.ndarray:
        """Log likelihood ratio ``r_x = log p(x | theta) - log p(x)`` of each record;
        higher = more member-like (the convention of :mod:`tabmia.attacks.base`).

        ``LR(x, z) = exp(r_x - r_z)``; ``decision_function`` is the share of
        population records with ``r_x - r_z >= log gamma``, a non-decreasing function
        of ``r_x``: the two rank candidates alike, up to ties of the share.
        """
        check_is_fitted(self, "population_")
        y_idx = self._validate_records(X, y, "score_samples")
        return self._log_ratios(X, y_idx)


def _log_ratio(p_theta: np.ndarray, mean_out: np.ndarray, a: float) -> np.ndarray:
    """``log p(x | theta) - log[(1 + a)/2 mean_OUT + (1 - a)/2]``."""
    p_x = (1.0 + a) / 2.0 * np.asarray(mean_out, dtype=np.float64) + (1.0 - a) / 2.0
    return np.log(np.maximum(p_theta, _P_FLOOR)) - np.log(np.maximum(p_x, _P_FLOOR))
