"""Quantile-regression membership inference (Bertran et al., NeurIPS 2023).

One CatBoost regressor ``q(x, y)`` learns, from the attacker's public records (known
non-members) labelled with the target's score ``s(x, y)``, the conditional upper
quantiles (or the conditional mean and spread) of that score. A candidate is a
member when its score beats its own threshold: ``s(x, y) >= q_{1-alpha}(x, y)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np
from scipy import stats
from sklearn.model_selection import GroupKFold, KFold
from sklearn.utils._param_validation import Interval, StrOptions

from tabmia._memory import chunk_bounds, record_bytes, resolve_max_memory, warn_over_budget
from tabmia._records import fold_hashes
from tabmia.attacks._docs import shared_parameters
from tabmia.attacks._quantile_catboost import (
    catboost_pool,
    degenerate,
    loss_function,
    make_regressor,
    raw_predict,
)
from tabmia.attacks._quantile_features import regressor_input
from tabmia.attacks._quantile_maths import predicted_thresholds, standard_normal_z
from tabmia.attacks._quantile_tuning import (
    fixed_params,
    n_trials_of,
    ranked_trial_params,
    tune_catboost,
)
from tabmia.attacks.base import (
    BaseMembershipAttack,
    DefaultStatistic,
    statistic_from_legacy,
)
from tabmia.backends import BACKENDS, release_fit_state
from tabmia.exceptions import DegenerateRegressorError, RunNote
from tabmia.scores import SCORE_NAMES
from tabmia.shadow._schedule import gpu_slot
from tabmia.target import n_rows, take_rows

__all__ = ["QuantileAttack", "DEFAULT_CATBOOST_PARAMS"]

#: CatBoost settings used without tuning (``n_trials=0``) and tried first when tuning.
DEFAULT_CATBOOST_PARAMS: dict[str, Any] = {
    "depth": 6,
    "l2_leaf_reg": 3.0,
    "learning_rate": 0.05,
    "subsample": 0.8,
    "iterations": 300,
}

#: Copies of a chunk of candidates alive while it is scored: the slice, the regressor's
#: input table built from it, and CatBoost's own pool of that table.
_RECORD_COPIES = 3
_RESERVED = (
    "loss_function",
    "random_seed",
    "random_state",
    "verbose",
    "task_type",
    "devices",
    "thread_count",
)


@shared_parameters
class QuantileAttack(BaseMembershipAttack):
    """Quantile regression on public non-member scores, one CatBoost model.

    ``fit`` queries the target on the public records, computes their score
    ``s(x, y)`` (the hinge ``z_y - max_{y' != y} z_y'`` by default) and trains a
    CatBoost regressor on ``(x, y) -> s``:

    - ``mode="pinball"``: the conditional ``1 - a`` quantile for each FPR ``a`` in
      ``alphas`` (``Quantile:alpha=1-a`` for one level, ``MultiQuantile`` for a grid;
      predicted quantiles are sorted per record so they never cross);
    - ``mode="gaussian"``: the conditional mean and standard deviation
      (``RMSEWithUncertainty``, Gaussian negative log-likelihood), which gives a
      one-sided p-value for every FPR at once (the paper's variant for smaller data).

    ``decision_function`` is the estimated ``-log p`` of the record's score under
    the non-member distribution at ``(x, y)``: ``-log sf(z)`` with ``z = (s - mu) /
    sd`` (gaussian), or with ``z`` interpolated piecewise-linearly between the
    predicted quantiles ``q_{1-a_k}`` placed at the normal quantiles ``Phi^{-1}(1 -
    a_k)`` (pinball). Beyond the outermost predicted quantiles ``z`` continues
    linearly with the slope between them; with a single quantile the slope is one
    over a global spread (the MAD of the out-of-fold margins ``s - q``), i.e. the
    score is the margin ``s - q_{1-a}`` in units of that spread. It is monotone in
    ``s`` for each record, computed in log space (no saturation), and ``>= -log a``
    exactly when ``s >= q_{1-a}``: the paper's rule. (A score equal to several tied
    predicted quantiles gets the lowest of their levels, the conservative p-value.)
    :meth:`score_samples` returns ``-log`` of that p-value, as :meth:`decision_function`.

    Scores with atoms: a random forest gives probability 1.0 to the true class of
    many records, so its score has a point mass at the top (on Adult, a large share
    of the non-members). Every record at the atom then exceeds ``q_{1-a}`` with equality and
    one quantile cannot order them: the calibrated threshold lands above the atom and
    the attack flags almost nothing (FPR far below ``fpr``, still valid). A grid of
    ``alphas`` reaching past the atom's mass (e.g. up to 0.5), or
    ``mode="gaussian"``, orders atom records by how rare the atom is at ``(x, y)``.

    ``threshold_`` (for ``fpr``) is set on out-of-fold scores: the public records are
    split in ``cv`` folds, a regressor is trained on all folds but one and scores
    the held-out fold, so every calibration score comes from a model that did not
    train on that record (never in-sample). Each candidate is scored by one of the
    ``cv`` fold regressors, picked by a hash of the record (its features and label;
    the same record in the same form always gets the same regressor), so a fresh
    non-member's score has exactly the distribution of the out-of-fold calibration
    scores and ``threshold_`` keeps its FPR promise. Averaging the fold regressors
    does not: it breaks ties at atoms of the score unevenly (a forest on Adult with
    a quantile grid delivered more FPR than requested), and no regressor
    refit on all public records has out-of-sample scores to calibrate on.

    Hyperparameters can be tuned with Optuna (TPE, seeded; ``n_trials > 0``, see
    :mod:`tabmia.attacks._quantile_tuning`) by ``cv``-fold cross-validation on the
    public records only, over the paper's ranges (Table 5): depth 1-10, l2_leaf_reg
    1e-2-1e6, learning_rate 1e-6-1, subsample 1e-2-1 (Bernoulli bootstrap), iterations
    1-1000 (log). The objective is the out-of-fold Gaussian negative log-likelihood
    (gaussian), or the out-of-fold pinball loss summed over the levels ``1 - a`` *after
    the best constant shift* of each quantile (pinball), because the calibrated
    threshold applies exactly such a shift. The first trial is
    :data:`DEFAULT_CATBOOST_PARAMS`, so tuning never ends worse than the defaults on
    that loss. The calibration folds are a fresh split.

    Tuning caveat: neither loss measures what the attack needs, the ranking of the
    upper tail at ``(x, y)``. The Gaussian likelihood is dominated by the bulk of the
    scores, and at an extreme level such as 0.99 the pinball loss is estimated from
    ~1% of the public records. On public sets of a few thousand records a short pinball
    search flagged fewer members at the same FPR than the untuned pinball head, and a
    short likelihood search mostly kept the defaults
    (``benchmarks/results/quantile_table2_probe.md``). A search scored by the TPR at
    the target FPR would need known members, which the attacker does not have. Hence
    ``n_trials=0``.

    Parameters
    ----------
    {target}
    mode : {"pinball", "gaussian"}, default="gaussian"
        Quantile regression (pinball loss) or Gaussian mean / spread regression
        (``RMSEWithUncertainty``; the paper's variant for smaller data). Gaussian is
        the default: it flagged more members at 1% FPR than pinball on every tabular
        benchmark run here (``benchmarks/results/quantile_table2.md``,
        ``quantile_vs_lira.md``); a single extreme quantile is learnt from ~1% of the
        public records.
    statistic : {"hinge", "logit", "loss", "confidence", ...}, default="hinge"
        Target score regressed (see :mod:`tabmia.scores`; higher = more member-like;
        formerly ``score``, accepted with a ``FutureWarning`` until tabmia 0.3).
        ``"hinge"`` and ``"logit"`` are roughly Gaussian and are the paper's choices.
    alphas : array-like of float, default=None
        FPRs whose ``1 - a`` quantiles the pinball model learns (a grid gives one
        ``MultiQuantile`` model). Default: ``[fpr]``. With ``mode="gaussian"``, only
        the levels :meth:`predicted_quantiles` reports.
    label_as_feature : bool, default=True
        Give the regressor the record's label (categorical for multi-class targets,
        one-hot for sparse ``X``).
    n_trials : int, default=0
        Optuna trials of the ``tuning`` recipe (the first trial is
        ``DEFAULT_CATBOOST_PARAMS``); 0: untuned defaults with ``tuning="cv"``, the
        paper code's 200 trials with ``tuning="paper"``. Off by default (see the tuning
        caveat above).
    tuning : {"cv", "paper"}, default="cv"
        The search recipe when tuning (:mod:`tabmia.attacks._quantile_tuning`).
        ``"cv"``: ``n_trials`` trials over the paper's Table 5 ranges, each scored by
        ``cv``-fold CV loss. ``"paper"``: the budget and search of the paper's public
        code (``qmia_ACS.py``): 200 trials (``n_trials=0``) over its ranges (depth 1-10,
        l2_leaf_reg 1e-4-1e4, learning_rate 1e-4-1, iterations 1-1000), each scored on
        one 80 / 20 split of the public records, ``posterior_sampling`` on for the
        Gaussian head; one regressor fit per trial, one trial after another under a
        seeded sampler (the paper's code draws a fresh split per trial and runs 30
        unseeded workers). Its cost and effect on the quantile paper's Table 2 tasks are
        in ``benchmarks/results/quantile_table2_paper.md`` (minutes per attack on 2
        cores, where the untuned defaults take seconds; it did not beat them there).
        Cannot be combined with ``params``.
    cv : int, default=5
        Folds for tuning and for the out-of-fold calibration; each regressor trains on
        ``1 - 1/cv`` of the public records. 5 (the paper's fold count) flagged more
        members at 1% FPR than 3 on three of the four Table 2 tasks, at 5/3 the fitting
        time (``benchmarks/results/quantile_table2_probe_cv.md``).
    params : dict, default=None
        Fixed CatBoost parameters; skips tuning. Must not set the loss or the seed.
        Settings whose training degenerates (non-finite values, e.g. a tiny
        ``l2_leaf_reg`` with ``posterior_sampling``) raise
        :class:`~tabmia.exceptions.DegenerateRegressorError`; tuned ones that
        degenerate on a calibration fold give way to the next best trial
        (:class:`~tabmia.exceptions.RunNote`).
    n_jobs : int, default=None
        CatBoost threads; None uses all cores (CatBoost's default). Results do not
        depend on it.
    max_memory : int or str, default=None
        Memory that scoring candidates may hold at once: candidates are scored in
        chunks sized to it (bytes, ``"8GB"``, ``"512MB"`` or a share of this machine's
        memory such as ``"25%"``; None: 256 MiB per core, at
        least 2 GiB, at most half of this machine's memory). Results do not
        depend on it.
        At least 1 MiB (a smaller one is refused by ``fit``); a chunk is never
        smaller than one batch of the models' own (up to 65,536 records), so a budget
        that one batch needs more than is exceeded, with a
        :class:`~tabmia.exceptions.MemoryBudgetWarning` naming the memory held.
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        Where CatBoost trains, in tabmia's one device vocabulary
        (:func:`tabmia._device.resolve_device_name`; ``"gpu"`` is accepted as the old
        name of ``"cuda"``): ``"auto"`` trains on the GPU (``task_type="GPU"``) when
        CatBoost sees one and each regressor trains on at least
        :data:`tabmia.backends.GPU_MIN_ROWS` public records (smaller fits are faster on
        the CPU); ``"cuda"`` without a GPU warns and trains on the CPU. CatBoost's
        ``MultiQuantile`` loss (pinball with several ``alphas``) is CPU-only: it trains
        on the CPU from the start (an explicit ``"cuda"`` warns once per ``fit``). A
        GPU is held by one fit at a time (across processes of this machine), and
        ``"cuda"`` with several GPUs uses the first free one. GPU results are not
        bit-identical to CPU ones.
    {threshold_params}
    random_state : int, RandomState instance or None, default=None
        Seeds every random choice the attack makes.

    Attributes
    ----------
    target_ : TargetModel
        Wrapped target.
    estimators_ : list of catboost.CatBoostRegressor
        The ``cv`` fold regressors; each candidate is scored by the one its hash picks.
    best_params_ : dict
        CatBoost parameters used (tuned, given, or the defaults).
    study_ : optuna.Study or None
        The tuning study (None when not tuned).
    alphas_ : ndarray
        The validated ``alphas`` (default ``[fpr]``), ascending.
    oof_scores_ : ndarray of shape (n_public,)
        Out-of-fold decision scores of the public records (= ``calibration_scores_``
        for ``threshold_goal="fpr"``).
    spread_ : float
        Global spread used by single-quantile pinball scores and as a floor.
    device_ : {"cpu", "gpu"}
        Where CatBoost trained.
    gpus_ : tuple of str
        The GPUs the regressors could train on (``"cuda:N"``); empty on the CPU.
    threshold_ : float
        Threshold on ``decision_function``.

    Notes
    -----
    For other FPRs than ``fpr``, ``tabmia.thresholds.threshold_at_fpr(
    attack.calibration_scores_, a)`` gives the calibrated threshold; ``score_samples
    <= a`` is the model's nominal (uncalibrated) rule.

    References
    ----------
    .. [1] Bertran, Tang, Kearns, Morgenstern, Roth, Wu. Scalable Membership Inference
       Attacks via Quantile Regression. NeurIPS 2023. (Sections 3, 4.2; App. D, Table 5)

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from tabmia.attacks import QuantileAttack
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> target = RandomForestClassifier(random_state=0).fit(X[:200], y[:200])
    >>> attack = QuantileAttack(target, fpr=0.05, n_trials=0, cv=2,
    ...                         params={"iterations": 50, "depth": 3}, random_state=0)
    >>> attack = attack.fit(X[200:], y[200:])
    >>> attack.decision_function(X[:5], y[:5]).shape
    (5,)
    """

    _parameter_constraints = {
        **BaseMembershipAttack._parameter_constraints,
        "mode": [StrOptions({"pinball", "gaussian"})],
        "statistic": [StrOptions(set(SCORE_NAMES))],
        "alphas": [None, "array-like"],
        "label_as_feature": ["boolean"],
        "n_trials": [Interval(Integral, 0, None, closed="left")],
        "tuning": [StrOptions({"cv", "paper"})],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "params": [None, dict],
        "n_jobs": [None, Integral],
        "max_memory": [Interval(Integral, 1, None, closed="left"), str, None],
        "device": [str],  # the vocabulary is checked by resolve_device_name in fit
    }

    def __init__(
        self,
        target: Any = None,
        *,
        mode: str = "gaussian",
        statistic: str = DefaultStatistic("hinge"),
        alphas: Sequence[float] | None = None,
        label_as_feature: bool = True,
        n_trials: int = 0,
        tuning: str = "cv",
        cv: int = 5,
        params: dict[str, Any] | None = None,
        n_jobs: int | None = None,
        max_memory: Any = None,
        device: str = "auto",
        threshold_goal: str = "fpr",
        fpr: float = 0.01,
        unresolved_fpr: str = "raise",
        prior: float = 1.0,
        proxy_estimator: Any = None,
        random_state: Any = None,
        **legacy: Any,
    ) -> None:
        self.target = target
        self.mode = mode
        self.statistic = statistic_from_legacy(type(self).__name__, statistic, "hinge", legacy)
        self.alphas = alphas
        self.label_as_feature = label_as_feature
        self.n_trials = n_trials
        self.tuning = tuning
        self.cv = cv
        self.params = params
        self.n_jobs = n_jobs
        self.max_memory = max_memory
        self.device = device
        self.threshold_goal = threshold_goal
        self.fpr = fpr
        self.unresolved_fpr = unresolved_fpr
        self.prior = prior
        self.proxy_estimator = proxy_estimator
        self.random_state = random_state

    @classmethod
    def _fast_params(cls) -> dict[str, Any]:
        return {"n_trials": 0, "cv": 2, "params": {"iterations": 40, "depth": 3}}

    def __sklearn_tags__(self) -> Any:  # noqa: D105
        tags = super().__sklearn_tags__()
        m = tags.membership_tags
        m.runner_settings |= {"n_jobs", "device", "max_memory"}  # of its regressors
        m.run_params |= {"n_jobs", "device", "max_memory"}
        return tags

    # ------------------------------------------------------------------ scores
    def _target_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        return self.target_.statistic(self.statistic, X, y)

    # ---------------------------------------------------------------- features
    def _check_settings(self) -> None:
        alphas = [self.fpr] if self.alphas is None else self.alphas
        a = np.asarray(alphas, dtype=np.float64).ravel()
        if a.size == 0:
            raise ValueError("alphas is empty; give at least one FPR in (0, 1)")
        if not np.all(np.isfinite(a)) or np.any((a <= 0) | (a >= 1)):
            raise ValueError(f"alphas must be FPRs in (0, 1), got {list(a)}")
        if np.unique(a).size != a.size:
            raise ValueError(f"alphas must be distinct, got {list(a)}")
        self.alphas_ = np.sort(a)
        if self.params is not None:
            if self.tuning == "paper":
                raise ValueError(
                    "tuning='paper' searches the CatBoost settings, params fixes them: "
                    "give one of the two"
                )
            bad = [k for k in self.params if k in _RESERVED]
            if bad:
                raise ValueError(
                    f"params must not set {bad}: the loss follows mode/alphas, the seed "
                    "random_state, threads n_jobs and the device device"
                )

    def _features(self, X: Any, y: np.ndarray, *, fitting: bool) -> tuple[Any, list[int]]:
        """The regressor's input and its categorical columns (layout kept from fit)."""
        data, cat_idx, layout = regressor_input(
            X,
            y,
            n_classes=self.target_.n_classes,
            with_label=self.label_as_feature,
            fitted_layout=None if fitting else self._layout_,
        )
        if fitting:
            self._layout_: tuple = layout
        return data, cat_idx

    # ------------------------------------------------------------------ models
    def _loss_function(self) -> str:
        return loss_function(self.mode, self.alphas_)

    def _catboost_device(self) -> str:
        return "cuda" if self.device == "gpu" else self.device  # "gpu": the old name

    def _resolve_device(self, n_rows: int) -> str:
        """``"cpu"`` or ``"gpu"`` for regressors training on ``n_rows`` records; sets
        ``gpus_``. A loss CatBoost's GPU build refuses goes to the CPU at once."""
        catboost = BACKENDS["catboost"]
        requested = self._catboost_device()
        self.gpus_: tuple[str, ...] = ()
        name = catboost.resolve(requested, n_rows=n_rows)
        loss = self._loss_function().split(":", 1)[0]
        if loss in catboost.gpu_unsupported:
            if name != "cpu" and requested != "auto":
                warnings.warn(
                    f"QuantileAttack: CatBoost trains {loss} on the CPU only "
                    f"(mode={self.mode!r} with {self.alphas_.size} alphas); the regressors "
                    f"train there, not on device={self.device!r}",
                    UserWarning,
                    stacklevel=4,
                )
            return "cpu"
        if name == "cpu":
            return "cpu"
        count = max(1, catboost.gpu_count())
        self.gpus_ = (name,) if ":" in name else tuple(f"cuda:{i}" for i in range(count))
        return "gpu"

    def _make_regressor(self, params: dict[str, Any], seed: int, gpu: str | None) -> Any:
        loss = self._loss_function()
        return make_regressor(params, seed, gpu, loss=loss, n_jobs=self.n_jobs)

    _pool = staticmethod(catboost_pool)
    _raw_predict = staticmethod(raw_predict)

    def _fit_regressor(self, params: dict[str, Any], seed: int, pool: Any) -> Any:
        from catboost import CatBoostError

        with gpu_slot(self.gpus_) as gpu:  # one CatBoost fit per GPU at a time
            try:
                return release_fit_state(self._make_regressor(params, seed, gpu).fit(pool))
            except CatBoostError as exc:
                # CatBoost writes the model as JSON (in training, and for the copy); a
                # degenerate one holds NaN or inf, which JSON cannot
                if not any(m in str(exc) for m in ("Not a double", "invalid float value")):
                    raise
                raise degenerate(params) from exc

    def _cross_fit(
        self,
        params: dict[str, Any],
        pool: Any,
        s: np.ndarray,
        split_seed: int,
        model_seed: int,
        keep: bool,
    ) -> tuple[np.ndarray, list]:
        n = s.size
        groups = getattr(self, "_fit_groups", None)
        if groups is None:
            folds = KFold(n_splits=self.cv, shuffle=True, random_state=split_seed).split(
                np.arange(n)
            )
        else:  # a person's records in one fold: its out-of-fold scores are a fresh person's
            folds = GroupKFold(n_splits=self.cv, shuffle=True, random_state=split_seed).split(
                np.arange(n), groups=groups
            )
        raw: np.ndarray | None = None
        models = []
        for train, held in folds:
            model = self._fit_regressor(params, model_seed, pool.slice(train))
            pred = self._raw_predict(model, pool.slice(held))
            if not np.all(np.isfinite(pred)):
                raise degenerate(params)
            if raw is None:
                raw = np.empty((n, pred.shape[1]))
            raw[held] = pred
            if keep:
                models.append(model)
        assert raw is not None  # KFold yields at least two folds
        return raw, models

    # ---------------------------------------------------------------- decision
    def _decision(self, s: np.ndarray, raw: np.ndarray) -> np.ndarray:
        return -stats.norm.logsf(self._z(s, raw))

    def _z(self, s: np.ndarray, raw: np.ndarray) -> np.ndarray:
        return standard_normal_z(s, raw, mode=self.mode, alphas=self.alphas_, spread=self.spread_)

    # -------------------------------------------------------------------- fit
    def _fit(self, X: Any, y: np.ndarray) -> None:
        resolve_max_memory(self.max_memory)  # a bad size is refused before any training
        self._check_settings()
        s = self._target_scores(X, y)
        if not np.all(np.isfinite(s)):
            raise ValueError("the target's scores on the public records are not all finite")
        if s.size < 2 * self.cv:
            raise ValueError(
                f"QuantileAttack needs at least {2 * self.cv} public records, got {s.size}"
            )
        self.device_ = self._resolve_device(s.size * (self.cv - 1) // self.cv)
        data, cat_idx = self._features(X, y, fitting=True)
        self._cat_idx_ = cat_idx
        q75, q25 = np.percentile(s, [75, 25])
        spread = (q75 - q25) / 1.349
        if not spread > 0:
            spread = float(np.std(s))
        self.spread_ = float(spread) if spread > 0 else 1.0

        pool = self._pool(data, cat_idx, s)
        del data  # CatBoost's copy is all the folds and trials read
        self.study_ = None
        if self.params is not None:
            params = dict(self.params)
        elif n_trials_of(self.tuning, self.n_trials) > 0:
            params, self.study_ = tune_catboost(self, pool, s, DEFAULT_CATBOOST_PARAMS, y=y)
        else:
            params = dict(DEFAULT_CATBOOST_PARAMS)
        split_seed, model_seed = self._draw_seed(), self._draw_seed()
        fallbacks = []
        if self.study_ is not None:
            fallbacks = ranked_trial_params(self.study_, fixed_params(self.tuning, self.mode))[1:]
        while True:
            try:
                raw, models = self._cross_fit(params, pool, s, split_seed, model_seed, True)
                break
            except DegenerateRegressorError:
                if not fallbacks:
                    raise
                warnings.warn(
                    f"QuantileAttack: the tuned settings {params} degenerate on a "
                    "calibration fold (non-finite values); the next best trial's are used",
                    RunNote,
                    stacklevel=3,
                )
                params = fallbacks.pop(0)
        self.best_params_ = params
        self.estimators_ = models
        if self.mode == "pinball" and self.alphas_.size == 1:
            margin = s - raw[:, 0]
            mad = 1.4826 * np.median(np.abs(margin - np.median(margin)))
            if mad > 0:
                self.spread_ = float(mad)
        self.oof_scores_ = self._decision(s, raw)

    def _nonmember_calibration_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        if self.oof_scores_.shape[0] != n_rows(X):  # pragma: no cover - internal misuse
            raise RuntimeError("out-of-fold scores do not match the public records")
        return self.oof_scores_

    # ------------------------------------------------------------------ score
    def _raw_candidates(self, X: Any, y: np.ndarray) -> np.ndarray:
        data, cat_idx = self._features(X, y, fitting=False)
        fold = fold_hashes(X, y) % np.uint64(len(self.estimators_))
        raw = None
        for k, model in enumerate(self.estimators_):
            sel = np.flatnonzero(fold == k)
            if sel.size == 0:
                continue
            pred = self._raw_predict(model, self._pool(take_rows(data, sel), cat_idx))
            if raw is None:
                raw = np.empty((fold.size, pred.shape[1]))
            raw[sel] = pred
        assert raw is not None  # every candidate falls in one of the folds' models
        return raw

    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        # in chunks that fit max_memory, of whole target batches (a model's outputs may
        # depend on the batch they came in); every record's score depends on it alone
        out = np.empty(n_rows(X), dtype=np.float64)
        row_bytes = _RECORD_COPIES * record_bytes(X) + 8 * (4 + 2 * self.alphas_.size)
        budget = resolve_max_memory(self.max_memory)
        batch = self.target_.batch_size
        warn_over_budget(out.size, row_bytes, budget, multiple=batch, what="scoring the candidates")
        for sl in chunk_bounds(out.size, row_bytes, budget, multiple=batch):
            X_c, y_c = take_rows(X, sl), y[sl]  # a loop over chunks of records
            out[sl] = self._decision(self._target_scores(X_c, y_c), self._raw_candidates(X_c, y_c))
        return out

    def score_samples(self, X: Any, y: Any) -> np.ndarray:
        """``-log p`` of each record, ``p`` the one-sided p-value of its score under the
        non-member model; higher = more member-like (the convention of
        :mod:`tabmia.attacks.base`).

        Same values as :meth:`decision_function`. ``exp(-score_samples(X, y))`` is the
        regressor's nominal p-value (exactly ``a`` at ``s = q_{1-a}`` for pinball), not
        re-calibrated; ``threshold_`` is the calibrated rule.
        """
        return self.decision_function(X, y)

    def predicted_quantiles(self, X: Any, y: Any) -> np.ndarray:
        """Predicted thresholds ``q_{1-a}(x, y)`` per record and FPR in ``alphas_``.

        Returns
        -------
        ndarray of shape (n, number of alphas)
            Column ``k`` is the ``1 - alphas_[k]`` quantile (pinball), or the Gaussian
            model's ``mu + sd * Phi^{-1}(1 - a)`` for ``a`` in ``alphas`` / ``[fpr]``.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "estimators_")
        y_idx = self._validate_records(X, y, "predicted_quantiles")
        raw = self._raw_candidates(X, y_idx)
        return predicted_thresholds(raw, mode=self.mode, alphas=self.alphas_)
