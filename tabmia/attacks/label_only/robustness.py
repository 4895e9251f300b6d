"""Noise robustness (Choquette-Choo et al., ICML 2021): members keep their label under noise.

An overfit model labels its training records right and keeps doing so in a wider
neighbourhood around them than around other records. The attack perturbs each record
``n_noise`` times with tabmia's mixed-type noise model (:class:`tabmia.perturb.TabularNoise`:
Gaussian noise on numeric columns, flips of 0/1 columns, redraws of categories from
their public marginal) and counts the copies the target still labels right.
:class:`CalibratedRobustnessAttack` compares that count with the record's robustness
under shadow models that did not train on it: the label-only analogue of LiRA's
per-example calibration.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted

from tabmia.attacks._docs import shared_parameters
from tabmia.attacks._reference import ReferenceModelAttack
from tabmia.attacks.base import BaseMembershipAttack
from tabmia.attacks.label_only._queries import (
    ROBUSTNESS_CONSTRAINTS,
    LabelQueriesMixin,
    empirical_logit,
    fitted_noise,
    robustness_counts,
)
from tabmia.target import TargetModel, n_rows

__all__ = ["NoiseRobustnessAttack", "CalibratedRobustnessAttack"]


@shared_parameters
class NoiseRobustnessAttack(LabelQueriesMixin, BaseMembershipAttack):
    """Share of noisy copies the target still labels right (Choquette-Choo et al.).

    ``decision_function`` is ``k / T``: ``k`` of the record's ``T = n_noise`` noisy
    copies get its true label from the target; a record whose clean copy is labelled
    wrong scores 0 (the paper's rule: the gap attack's non-member). The ``T``
    perturbations are drawn once in ``fit`` and shared by every record (common random
    numbers, as for Merlin): a record's score is a fixed function of the record, so the
    public records' scores are exchangeable with a fresh non-member's and calibrate
    ``threshold_``.

    Parameters
    ----------
    target : object
        Fitted model under audit; only its labels are used (a model with ``predict``
        only is fine). Precomputed labels cannot answer for perturbed records.
    n_noise, sigma, noise_scale, categorical_flip, binary_flip, max_batch_rows
        As in :class:`NoiseRobustnessAttack` (every shadow sees the same copies).
    {threshold_params}
    {random_state_noise}

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    noise_ : TabularNoise
        Noise model fitted on the public records, with the ``T`` perturbations drawn.
    public_scores_ : ndarray of shape (n_public,)
        Scores of the public records (the calibration scores).
    queries_per_record_ : int
        ``T + 1``.
    n_queries_ : int
        Records (clean and noisy) sent to the target so far.
    threshold_ : float
        Threshold on the score.

    Notes
    -----
    The score takes ``T + 1`` values, so records tie and the FPR at ``threshold_`` is
    at most ``fpr``, often below it (split-conformal calibration bounds it from above
    only). Where more than ``fpr`` of the public records keep all ``T`` labels (noise
    too small for the model), the threshold flags nothing: raise ``sigma`` and the flip
    probabilities until the public records' scores spread out (``public_scores_``).

    References
    ----------
    .. [1] Choquette-Choo, Tramer, Carlini, Papernot. Label-Only Membership Inference
       Attacks. ICML 2021. (Sec. 4, random-noise robustness for non-image data)

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from tabmia.attacks import NoiseRobustnessAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = RandomForestClassifier(random_state=0).fit(X[:250], y[:250])
    >>> attack = NoiseRobustnessAttack(target, n_noise=20, fpr=0.05, random_state=0)
    >>> attack.fit(X[250:], y[250:]).decision_function(X[:3], y[:3]).shape
    (3,)
    """

    _parameter_constraints = {
        **BaseMembershipAttack._parameter_constraints,
        **ROBUSTNESS_CONSTRAINTS,
    }

    def __init__(
        self,
        target: Any = None,
        *,
        n_noise: int = 100,
        sigma: float = 1.0,
        noise_scale: str = "std",
        categorical_flip: float = 0.2,
        binary_flip: float = 0.2,
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
        self.max_batch_rows = max_batch_rows
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    @classmethod
    def _fast_params(cls) -> dict[str, Any]:
        return {"n_noise": 16}

    def __sklearn_tags__(self) -> Any:  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.membership_tags.queries_perturbed_records = True
        return tags

    def _fit(self, X: Any, y: np.ndarray) -> None:
        self.noise_ = fitted_noise(X, self)
        self.queries_per_record_ = self.n_noise + 1
        self.public_scores_ = self._score(X, y)

    def _nonmember_calibration_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self.public_scores_

    def _score_ceiling(self) -> float:
        return 1.0  # every noisy copy keeps the record's label

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        correct, kept = robustness_counts(
            self.target_.predict_indices, self.noise_, X, y, max_batch_rows=self.max_batch_rows
        )
        return np.where(correct, kept, 0) / self.n_noise


@shared_parameters
class CalibratedRobustnessAttack(LabelQueriesMixin, ReferenceModelAttack):
    """Noise robustness against the record's robustness under shadow models.

    The target's robustness of a record (the empirical logit ``log((k + 1/2) /
    (T - k + 1/2))`` of its ``k`` kept copies, ``k = 0`` when the clean record is
    labelled wrong; see :class:`NoiseRobustnessAttack`) minus the mean of the same
    statistic under the shadow models that did not train on the record:

        decision_function = s(target, z) - mean_{OUT shadows} s(g, z).

    A record every model keeps stable (far from any boundary) no longer looks like a
    member; one the target holds more firmly than models that never saw it does. The
    shadow models are clones of the target's recipe (``shadow_estimator``) trained on
    shares of the public records in balanced blocks, and every record, public or
    candidate, is scored by as many OUT shadows, drawn as a public record's OUT set is
    (:mod:`tabmia.attacks._reference`): the public records, so scored, calibrate
    ``threshold_``. All models see the same ``T`` perturbations.

    Parameters
    ----------
    target : object
        Fitted model under audit (labels only are used).
    n_shadow : int, default=16
        Shadow models.
    shadow_estimator : estimator, default=None
        Unfitted shadow recipe; a clone of the target's recipe by default. Its models
        are queried for labels only (``predict``).
    n_noise, sigma, noise_scale, categorical_flip, binary_flip, max_batch_rows
        As in :class:`NoiseRobustnessAttack` (every shadow sees the same copies).
    shadow_train_size : int, float or None, default=None
        Records each shadow trains on (see :class:`~tabmia.attacks.LiRAAttack`); None:
        half of the public records. The audit passes the target's training-set size.
    calibration_share : float in [0, 1), default=0.0
        Share of the public records held out of every shadow to calibrate
        ``threshold_`` (0: every public record calibrates, scored by its OUT shadows).
    n_jobs : int, default=None
        Parallel jobs for training shadow models.
    {max_memory}
    cache_dir : str or path, default=None
        Cache of the shadow population.
    verbose : bool, default=False
        Progress bar over the shadow models.
    threshold_goal, fpr, unresolved_fpr, prior, proxy_estimator, random_state
        As in :class:`NoiseRobustnessAttack`.

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    noise_ : TabularNoise
        Noise model fitted on the shadows' pool, with the ``T`` perturbations drawn.
    population_ : ShadowPopulation
        The shadow models (``population_.models_``).
    in_masks_ : ndarray of bool of shape (n_shadow, n_pool)
        Which pool record trained which shadow.
    shadow_statistics_ : ndarray of shape (n_shadow, n_pool)
        Every shadow's robustness statistic on every pool record.
    n_shadow_queries_ : int
        Records sent to shadow models so far (they are the attacker's own models).
    queries_per_record_ : int
        Target queries per scored record, ``T + 1``.
    n_queries_ : int
        Records sent to the target so far.
    threshold_ : float
        Threshold on ``decision_function``.

    Notes
    -----
    The statistic takes ``T + 1`` values per model, and the difference of the target's
    value and a mean over shadows is far less tied than the plain share; what ties
    remain only lower the FPR below ``fpr``. Every shadow is queried with every
    record's ``T + 1`` copies: ``n_shadow`` times the target's queries, on the
    attacker's own models.

    References
    ----------
    .. [1] Choquette-Choo, Tramer, Carlini, Papernot. Label-Only Membership Inference
       Attacks. ICML 2021.
    .. [2] Carlini, Chien, Nasr, Song, Terzis, Tramer. Membership Inference Attacks
       From First Principles. IEEE S&P 2022. (per-example calibration against OUT
       models)
    .. [3] Watson, Guo, Cormode, Sablayrolles. On the Importance of Difficulty
       Calibration in Membership Inference Attacks. ICLR 2022.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from tabmia.attacks import CalibratedRobustnessAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = DecisionTreeClassifier(random_state=0).fit(X[:250], y[:250])
    >>> attack = CalibratedRobustnessAttack(target, n_shadow=4, n_noise=10, fpr=0.05,
    ...                                     random_state=0).fit(X[250:], y[250:])
    >>> attack.decision_function(X[:3], y[:3]).shape
    (3,)
    """

    _model_recipe_param, _model_count_param = "shadow_estimator", "n_shadow"

    _parameter_constraints = {
        **ReferenceModelAttack._parameter_constraints,
        **ROBUSTNESS_CONSTRAINTS,
        "n_shadow": [Interval(Integral, 2, None, closed="left")],
        "shadow_estimator": [None, HasMethods(["fit"])],
    }

    def __init__(
        self,
        target: Any = None,
        *,
        n_shadow: int = 16,
        shadow_estimator: Any = None,
        n_noise: int = 100,
        sigma: float = 1.0,
        noise_scale: str = "std",
        categorical_flip: float = 0.2,
        binary_flip: float = 0.2,
        max_batch_rows: int | None = None,
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
        self.n_shadow = n_shadow
        self.shadow_estimator = shadow_estimator
        self.n_noise = n_noise
        self.sigma = sigma
        self.noise_scale = noise_scale
        self.categorical_flip = categorical_flip
        self.binary_flip = binary_flip
        self.max_batch_rows = max_batch_rows
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
        return {"n_shadow": 4, "n_noise": 16}

    def __sklearn_tags__(self) -> Any:  # noqa: D105
        tags = super().__sklearn_tags__()
        m = tags.membership_tags
        m.queries_perturbed_records = True
        return tags

    def _fit(self, X: Any, y: np.ndarray) -> None:
        self.noise_ = fitted_noise(X, self)
        self.queries_per_record_ = self.n_noise + 1
        self.n_shadow_queries_ = 0
        self.population_ = self._fit_population(
            X,
            y,
            estimator=self.shadow_estimator,
            name="shadow_estimator",
            n_models=self.n_shadow,
            statistic="loss",
            pkeep=0.5,
        )
        self.in_masks_ = self.population_.in_masks_
        self.shadow_statistics_ = self._reference_statistics(X, y)
        self._index_pool(X, y, self.in_masks_)
        self._set_moments(self.shadow_statistics_)

    def _robustness(self, predict: Any, X: Any, truth: np.ndarray) -> np.ndarray:
        correct, kept = robustness_counts(
            predict, self.noise_, X, truth, max_batch_rows=self.max_batch_rows
        )
        return empirical_logit(correct, kept, self.n_noise)

    def _reference_statistics(self, X: Any, y: np.ndarray) -> np.ndarray:
        """Every shadow's robustness statistic on records ``(X, y)``, ``(n_shadow, n)``."""
        truth = self.target_.classes_[y]
        models = self.population_.models_
        out = np.empty((len(models), n_rows(X)))
        for k, model in enumerate(models):  # a loop over models; one query round each
            shadow = TargetModel(model, labels_only=self.target_.labels_only)
            out[k] = self._robustness(shadow.predict, X, truth)
            self.n_shadow_queries_ += shadow.n_queries_
        return out

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "shadow_statistics_")
        t = self._robustness(self.target_.predict_indices, X, y)
        return t - self._candidate_moments(X, y)[0]["mu_out"]
