"""Difficulty calibration (Watson, Guo, Cormode, Sablayrolles, ICLR 2022).

A membership score ``s(h, z)`` of the target ``h`` on a record ``z`` is compared with
what typical models trained on the same distribution give the record (Eq. 5):

    s_cal(h, z) = s(h, z) - E_g[s(g, z)],

so that an easy record (high score under every model) no longer looks like a member
and a hard member (low score, but higher than typical) does. The expectation is an
average over reference models trained on public records (``calibration="reference"``)
or over copies of the target fine-tuned on public records, which makes it forget its
own training records (``calibration="forgetting"``, Sec. 3, 4.1; torch MLP targets).
"""

from __future__ import annotations

import copy
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from tabmia.attacks._docs import shared_parameters
from tabmia.attacks._reference import ReferenceModelAttack
from tabmia.attacks.base import DefaultStatistic, statistic_from_legacy
from tabmia.target import TargetModel, take_rows

__all__ = ["CalibratedAttack", "CALIBRATED_SCORES"]

#: Scores :class:`CalibratedAttack` can calibrate (Watson et al., Eq. 1-3).
CALIBRATED_SCORES: tuple[str, ...] = ("loss", "confidence", "gradient_norm")

_LOG_FLOOR = 1e-300


def _differentiable(target: TargetModel) -> bool:
    """Whether the gradient norm is a statistic of ``target`` (a torch model)."""
    return "gradient_norm" in target.statistic_names


def _score_from_log_proba(score: str, logp: np.ndarray, y_idx: np.ndarray) -> np.ndarray:
    if score == "loss":  # Eq. 1: -loss = log h(x)_y
        return logp[np.arange(logp.shape[0]), y_idx]
    return logp.max(axis=1)  # Eq. 3: max_i log h(x)_i


@shared_parameters
class CalibratedAttack(ReferenceModelAttack):
    """Watson et al.'s difficulty-calibrated loss, confidence or gradient-norm attack.

    ``decision_function(X, y) = s(h, z) - mean_g s(g, z)`` with ``h`` the target and
    ``g`` the reference models that did not train on ``z``:

    - ``statistic="loss"``: ``s = log h(x)_y`` (minus the cross-entropy loss, Eq. 1);
    - ``statistic="confidence"``: ``s = max_i log h(x)_i`` (Eq. 3);
    - ``statistic="gradient_norm"``: ``s = -||grad_theta loss(h(x), y)||_2`` (Eq. 2), for
      torch targets (:class:`tabmia.shadow.TorchMLPClassifier` or an ``nn.Module``
      returning logits) with :class:`~tabmia.shadow.TorchMLPClassifier` references.

    ``fit(X, y)`` trains the references on random halves of the public records (or
    subsets of ``shadow_train_size`` records), so every public record is OUT for some
    of them and its calibrated score averages only those; a candidate outside the
    public data is scored by as many references, drawn the way a public record's OUT
    set is. With ``threshold_goal="fpr"`` the public records, scored so, calibrate
    ``threshold_`` (see :mod:`tabmia.attacks._reference`).

    Parameters
    ----------
    {target}
    statistic : {"loss", "confidence", "gradient_norm"}, default="loss"
        Membership score to calibrate (formerly ``score``, accepted with a
        ``FutureWarning`` until tabmia 0.3).
    calibration : {"reference", "forgetting"}, default="reference"
        ``"reference"``: reference models trained from scratch (clones of
        ``reference_estimator``). ``"forgetting"``: copies of the fitted target
        fine-tuned for ``forgetting_epochs`` on public records (the target must be a
        :class:`~tabmia.shadow.TorchMLPClassifier`; Sec. 3 "Efficient difficulty
        calibration via forgetting").
    reference_estimator : estimator, default=None
        Unfitted reference recipe for ``calibration="reference"``; a clone of the
        target's recipe by default.
    n_reference : int, default=4
        Number of reference models (or fine-tuned copies), each trained on a random
        half of the public records.
    forgetting_epochs : int, default=10
        Epochs of fine-tuning for ``calibration="forgetting"``.
    forgetting_lr : float, default=None
        Learning rate of the fine-tuning; the target's ``lr`` when None.
    proba_floor : float, "auto" or None, default="auto"
        Probabilities are floored here before logarithms (``statistic="loss"``). A model
        whose probabilities are counts (a forest of ``T`` trees: multiples of
        ``1/T``) gives some records probability exactly 0, whose log-loss is
        infinite (-690 after tabmia's 1e-300 guard): one such reference value
        would dominate the mean. ``"auto"``: when the target gives some public record
        a true-class probability of exactly 0, half of its smallest positive one
        (``1/(2T)``: the Haldane-Anscombe correction); otherwise 1e-300. None:
        1e-300.
    {reference_population}
    {max_memory}
    cache_dir : str or path, default=None
        Cache of the reference population (``calibration="reference"``).
    {reference_verbose}
    {threshold_params}
    random_state : int, RandomState instance or None, default=None
        Seeds the reference models, their training halves and the fine-tuning.

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    reference_models_ : list
        The fitted reference models (or fine-tuned copies of the target).
    in_masks_ : ndarray of bool of shape (n_reference, n_public)
        Which public record trained (or fine-tuned) which reference model.
    reference_scores_ : ndarray of shape (n_reference, n_public)
        ``s(g, z)`` of every reference model on every public record.
    population_ : ShadowPopulation or None
        The reference population (``calibration="reference"``).
    proba_floor_ : float
        The floor applied to probabilities (resolved from ``"auto"``).
    threshold_ : float
        Decision threshold on ``decision_function``.

    References
    ----------
    .. [1] Watson, Guo, Cormode, Sablayrolles. On the Importance of Difficulty
       Calibration in Membership Inference Attacks. ICLR 2022. (Eq. 1-3, 5; Sec. 3,
       4.1)

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from tabmia.attacks import CalibratedAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = DecisionTreeClassifier(random_state=0).fit(X[:200], y[:200])
    >>> attack = CalibratedAttack(target, n_reference=2, fpr=0.05, random_state=0)
    >>> attack = attack.fit(X[200:], y[200:])
    >>> attack.decision_function(X[:5], y[:5]).shape
    (5,)
    """

    _model_recipe_param, _model_count_param = "reference_estimator", "n_reference"

    _parameter_constraints = {
        **ReferenceModelAttack._parameter_constraints,
        "statistic": [StrOptions(set(CALIBRATED_SCORES))],
        "calibration": [StrOptions({"reference", "forgetting"})],
        "reference_estimator": [None, HasMethods(["fit"])],
        "n_reference": [Interval(Integral, 1, None, closed="left")],
        "forgetting_epochs": [Interval(Integral, 0, None, closed="left")],
        "forgetting_lr": [None, Interval(Real, 0, None, closed="neither")],
        "proba_floor": [None, StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        target: Any = None,
        *,
        statistic: str = DefaultStatistic("loss"),
        calibration: str = "reference",
        reference_estimator: Any = None,
        n_reference: int = 4,
        forgetting_epochs: int = 10,
        forgetting_lr: float | None = None,
        proba_floor: Any = "auto",
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
        **legacy: Any,
    ) -> None:
        self.target = target
        self.statistic = statistic_from_legacy(type(self).__name__, statistic, "loss", legacy)
        self.calibration = calibration
        self.reference_estimator = reference_estimator
        self.n_reference = n_reference
        self.forgetting_epochs = forgetting_epochs
        self.forgetting_lr = forgetting_lr
        self.proba_floor = proba_floor
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

    def __sklearn_tags__(self) -> Any:  # noqa: D105
        tags = super().__sklearn_tags__()
        m = tags.membership_tags
        # forgetting fine-tunes copies of the target: no recipe
        if self.calibration != "reference":
            m.model_recipe_params = ()
        if self.statistic == "gradient_norm" or self.calibration == "forgetting":
            m.target_outputs = "logits"  # a torch model's gradients or weights
        return tags

    # ----------------------------------------------------------------------- fit
    def _fit(self, X: Any, y: np.ndarray) -> None:
        if self.statistic == "gradient_norm" and not _differentiable(self.target_):
            raise ValueError(
                "statistic='gradient_norm' needs a torch target (a TorchMLPClassifier or an "
                f"nn.Module returning logits), got {type(self.target).__name__}"
            )
        self.proba_floor_ = self._resolve_floor(X, y)
        if self.calibration == "forgetting":
            self._fit_forgetting(X, y)
        else:
            self._fit_reference(X, y)
        self._index_pool(X, y, self.in_masks_)
        self._set_moments(self.reference_scores_)
        if not (self._moments["c_out"] > 0).any():
            raise ValueError("no public record has an OUT reference model; use n_reference >= 2")

    def _resolve_floor(self, X: Any, y: np.ndarray) -> float:
        if self.proba_floor is None or self.statistic == "gradient_norm":
            return _LOG_FLOOR
        if self.proba_floor != "auto":
            return float(self.proba_floor)
        if self.target_.has_logits:
            return _LOG_FLOOR
        p = self.target_.statistic("confidence", X, y)
        if not (p <= 0).any():
            return _LOG_FLOOR
        positive = p[p > 0]
        return float(0.5 * positive.min()) if positive.size else _LOG_FLOOR

    def _fit_reference(self, X: Any, y: np.ndarray) -> None:
        pop = self._fit_population(
            X,
            y,
            estimator=self.reference_estimator,
            name="reference_estimator",
            n_models=self.n_reference,
            statistic="loss",
            pkeep=0.5,
        )
        if self.statistic == "gradient_norm":
            classes = self.target_.classes_
            if not all(_differentiable(TargetModel(m, classes=classes)) for m in pop.models_):
                raise ValueError(
                    "statistic='gradient_norm' needs TorchMLPClassifier reference models; pass "
                    "reference_estimator=TorchMLPClassifier(...)"
                )
        self.population_ = pop
        self.reference_models_ = pop.models_
        self.in_masks_ = pop.in_masks_
        if self.statistic == "loss":  # log p_y, floored
            self.reference_scores_ = np.maximum(
                pop.statistics_.astype(np.float64), np.log(self.proba_floor_)
            )
        else:
            self.reference_scores_ = self._reference_scores(X, y)

    def _fit_forgetting(self, X: Any, y: np.ndarray) -> None:
        from tabmia.shadow import TorchMLPClassifier, draw_in_masks
        from tabmia.shadow._design import record_groups

        model = self.target_.model
        if not isinstance(model, TorchMLPClassifier):
            raise ValueError(
                "calibration='forgetting' fine-tunes copies of the target and needs a fitted "
                f"TorchMLPClassifier target, got {type(model).__name__}"
            )
        n = y.shape[0]
        codes = record_groups(X, y)
        persons = getattr(self, "_pool_groups", None)
        if persons is not None:  # a person's records share a mask, as copies of a record do
            from tabmia._groups import joint_codes

            codes = joint_codes(persons, codes)
        masks = draw_in_masks(
            self.n_reference,
            n,
            pkeep=self._resolve_pkeep(n, self.n_reference, 0.5),
            random_state=self._draw_seed(),
            groups=codes,
        )
        y_raw = self.target_.classes_[y]
        models = []
        for k in range(self.n_reference):  # a loop over fine-tuned copies
            rows = np.flatnonzero(masks[k])
            ref = copy.deepcopy(model)
            ref.fine_tune(
                take_rows(X, rows),
                y_raw[rows],
                epochs=self.forgetting_epochs,
                lr=self.forgetting_lr,
                random_state=self._draw_seed(),
            )
            models.append(ref)
        self.population_ = None
        self.reference_models_ = models
        self.in_masks_ = masks
        self.reference_scores_ = self._reference_scores(X, y)

    # -------------------------------------------------------------------- score
    def _model_scores(
        self, model: Any, X: Any, y_idx: np.ndarray, classes: np.ndarray
    ) -> np.ndarray:
        """``s(model, z)`` for labels given as indices into ``classes``."""
        return self._adapter_scores(TargetModel(model, classes=classes), X, y_idx)

    def _adapter_scores(self, tm: TargetModel, X: Any, y_idx: np.ndarray) -> np.ndarray:
        """``s(h, z)`` of a target adapter: its gradient norm, or its log-probabilities
        (from its logits where it gives them), floored."""
        if self.statistic == "gradient_norm":
            return tm.statistic("gradient_norm", X, y_idx)
        floor = self.proba_floor_
        logp = np.maximum(tm.query(X).log_proba(floor), np.log(floor))
        return _score_from_log_proba(self.statistic, logp, y_idx)

    def _reference_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        classes = self.target_.classes_
        out = np.empty((len(self.reference_models_), y.shape[0]))
        for k, model in enumerate(self.reference_models_):  # a loop over models
            out[k] = self._model_scores(model, X, self._index_for(model, y), classes)
        return out

    def _index_for(self, model: Any, y: np.ndarray) -> np.ndarray:
        """Target column indices ``y`` as column indices of ``model``'s output."""
        own = getattr(model, "classes_", None)
        classes = self.target_.classes_
        if own is None or np.array_equal(np.asarray(own), classes):
            return y
        return TargetModel(model).encode_labels(classes[y], name="y")

    def _target_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self._adapter_scores(self.target_, X, y)

    def _reference_statistics(self, X: Any, y: np.ndarray) -> np.ndarray:
        if self.statistic == "loss" and self.population_ is not None:
            return np.maximum(super()._reference_statistics(X, y), np.log(self.proba_floor_))
        return self._reference_scores(X, y)

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "reference_scores_")
        mom, _, target = self._moments_while(X, y, lambda: self._target_scores(X, y))
        return target - mom["mu_out"]
