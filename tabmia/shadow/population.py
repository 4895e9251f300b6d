"""Populations of shadow / reference models and their scores on every record.

:class:`ShadowPopulation` is the helper that LiRA, RMIA and Watson-style calibrated
attacks share: it decides which pool records train which model (each record IN for
``pkeep`` of the models), trains the models through joblib (locally, or on a Dask /
Ray cluster through ``joblib.parallel_config``), and keeps the score of every model on
every pool record as one ``(n_models, n_records)`` float32 array.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from tabmia._array import ravel_column
from tabmia._device import resolve_device
from tabmia._estimators import clone_recipe, clone_unfitted
from tabmia._groups import check_groups, joint_codes, person_codes
from tabmia._memory import resolve_max_memory
from tabmia.backends import set_device
from tabmia.scores import SCORE_NAMES
from tabmia.shadow._cache import _FORMAT, _Cache, _describe, _fingerprint
from tabmia.shadow._design import (
    _base_entropy,
    _check_pool,
    _draw_masks,
    _mask_hash,
    _model_seeds,
    _pkeep_block,
    draw_in_masks,
    record_groups,
)
from tabmia.shadow._schedule import plan_jobs
from tabmia.shadow._scoring import score_models
from tabmia.shadow._training import (
    _delayed,
    _outputs_chunks,
    _train_mlp_group,
    _train_one,
)
from tabmia.target import TargetModel, encode_labels, n_rows

__all__ = ["ShadowPopulation", "draw_in_masks"]


def _output_wrapper(recipe: Any) -> Any:
    """The recipe when it shows another model's outputs changed (``wrap_fitted``), else None.

    Such a meta-estimator (:class:`tabmia.whatif.HardenedOutput`) trains nothing of its
    own: its shadows are its inner recipe's models, trained (or loaded from the cache)
    exactly as that recipe's, and scored through the wrapper.
    """
    if callable(getattr(recipe, "wrap_fitted", None)) and hasattr(recipe, "estimator"):
        return recipe
    return None


def _batched_mlp(recipe: Any) -> Any:
    """The TorchMLPClassifier that a recipe trains batched (alone or ending a Pipeline)."""
    from sklearn.pipeline import Pipeline

    from tabmia.shadow.torch_mlp import TorchMLPClassifier

    if isinstance(recipe, TorchMLPClassifier):
        return recipe
    if isinstance(recipe, Pipeline) and isinstance(recipe.steps[-1][1], TorchMLPClassifier):
        return recipe.steps[-1][1]
    return None


# ---------------------------------------------------------------- the population
class ShadowPopulation(BaseEstimator):
    """Shadow (reference) models trained on random halves of a pool of records.

    ``fit(X, y)`` draws the membership matrix ``in_masks_`` (each record IN for
    ``pkeep`` of the models; see :func:`draw_in_masks`), trains model ``k`` on the
    records ``in_masks_[k]`` and stores the score ``statistic`` of every model on
    every pool record in ``statistics_``, a ``(n_models, n_records)`` float32 array
    (higher = the record looks more like a member of that model). LiRA compares a
    candidate's score under the target with the IN and OUT columns of
    ``statistics_``; RMIA and Watson's calibration use the OUT ones.

    Training goes through ``joblib.Parallel``: processes on this machine by default, a
    Dask or Ray cluster inside ``with joblib.parallel_config(backend="dask"):``. Seeds
    are drawn before any parallel work, so ``n_jobs`` and the backend never change a
    result. The hardware is used as :mod:`tabmia.shadow._schedule` plans it: CPU work
    spreads over the cores (one job per core by default; a job's spare cores go only
    to models whose result does not depend on their thread count, scikit-learn's
    ensembles);
    GPU work runs one job per GPU, each job holding its GPU alone (two CatBoost GPU fits
    on one device would run out of memory). A
    :class:`~tabmia.shadow.TorchMLPClassifier` estimator, alone or at the end of a
    Pipeline, trains as batched networks of many models at once
    (:func:`~tabmia.shadow.fit_mlps_batched`), on the GPU when there is one.

    Parameters
    ----------
    estimator : estimator
        Unfitted recipe of a shadow model (any scikit-learn compatible classifier with
        ``predict_proba``, a ``Pipeline``, a boosting model, a
        ``TorchMLPClassifier``). A classifier with ``predict`` only is scored from its
        labels, as one-hot probabilities (for the label-only attacks). Cloned per
        model, with every ``random_state`` (and CatBoost ``random_seed``) set to the
        model's seed. A ``FrozenEstimator`` or
        the target itself is refused (its clone would be the target). A wrapper that
        only changes what its inner model shows (a ``wrap_fitted`` method and an
        ``estimator``: :class:`tabmia.whatif.HardenedOutput`) trains its inner recipe's
        population, exactly as that recipe would (the cache is the inner recipe's: one
        filled by a population of the unwrapped recipe serves it), and scores each model
        through the wrapper.
    n_models : int, default=16
        Number of models. Even (a multiple of the block size of ``pkeep``) for exact
        balance.
    statistic : {"logit", "hinge", "loss", "confidence", "entropy", \
            "modified_entropy"}, default="logit"
        Score of a model on a labelled record (:func:`tabmia.scores.membership_score`,
        signed so that higher = member). MLP shadows use their logits for "logit" and
        "hinge".
    classes : array-like of shape (n_classes,), default=None
        Labels in the column order the scores use (e.g. the target's ``classes_``);
        ``np.unique(y)`` when None. A model whose training subset misses a class gets
        probability 0 for it.
    pkeep : float, default=0.5
        Share of the models each record trains (a fraction with denominator <= 64).
    n_jobs : int, default=None
        Parallel jobs of joblib. None: what the hardware runs at once (every core for
        CPU work, one job per GPU for GPU work), or the ``n_jobs`` of an enclosing
        ``joblib.parallel_config``; -1: all cores, all cluster workers or all GPUs.
        GPU work never runs more jobs than there are GPUs. Each model fits with one
        BLAS thread whatever ``n_jobs`` is, so that the scores do not depend on it:
        use jobs, not BLAS threads, for speed.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the membership matrix and every model. With ``cache_dir`` and
        ``random_state=None``, an existing cache's seed is re-used.
    cache_dir : str or path, default=None
        Folder where each finished model's scores (``model_{k:05d}.npz``) and, with
        ``keep_models``, the model itself (``model_{k:05d}.joblib``) are written,
        with a ``manifest.json`` describing the pool, the estimator and the seed. A
        later ``fit`` with the same setup loads them and trains only what is missing:
        an interrupted run resumes, a larger ``n_models`` tops up. A manifest that
        describes other data, another estimator, statistic, ``classes``, ``pkeep``
        or seed raises ``ValueError``. Execution settings (``device``, ``n_jobs``,
        verbosity, thread counts, CatBoost ``task_type``) are not compared.
    keep_models : bool, default=True
        Keep the fitted models in ``models_`` (needed by :meth:`statistics` and
        :meth:`proba`). False keeps only ``statistics_``.
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        Device of every model with a device notion (torch MLP, CatBoost, XGBoost; see
        :mod:`tabmia.backends`): "auto" keeps the estimator's own setting (an MLP's
        "auto" means CUDA when the machine that trains it has it); "cuda" spreads the
        jobs over all GPUs, one job per GPU. Ignored for estimators without one.
    verbose : bool, default=False
        tqdm progress bar over the models.
    target : object, default=None
        The model under audit, when known: refused as ``estimator``. Kept by
        reference.

    Attributes
    ----------
    in_masks_ : ndarray of bool of shape (n_models, n_records)
        ``in_masks_[k, i]``: pool record ``i`` trained model ``k``.
    seeds_ : ndarray of int64 of shape (n_models,)
        Seed of each model (depends only on ``random_state`` and ``k``).
    statistics_ : ndarray of float32 of shape (n_models, n_records)
        Score of model ``k`` on pool record ``i``.
    models_ : list or None
        The fitted models (None when ``keep_models=False``).
    classes_ : ndarray of shape (n_classes,)
        Labels in score column order.
    estimator_ : estimator
        The validated, unfitted recipe.
    n_records_ : int
        Pool size.
    n_trained_ : int
        Models trained by the latest ``fit`` (the others came from ``cache_dir``).
    device_ : torch.device or None
        Resolved device of MLP shadows on this machine; None for other estimators.
    n_jobs_ : int
        Parallel jobs the latest ``fit`` trained with (0 when every model came from
        the cache).

    See Also
    --------
    tabmia.shadow.fit_mlps_batched : the batched MLP trainer.
    tabmia.shadow.catboost_classifier : CatBoost shadows with GPU when present.

    References
    ----------
    .. [1] Shokri, Stronati, Song, Shmatikov. Membership Inference Attacks Against
       Machine Learning Models. IEEE S&P 2017.
    .. [2] Carlini, Chien, Nasr, Song, Terzis, Tramer. Membership Inference Attacks
       From First Principles. IEEE S&P 2022.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from tabmia.shadow import ShadowPopulation
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> pop = ShadowPopulation(make_pipeline(StandardScaler(), LogisticRegression()),
    ...                        n_models=4, random_state=0).fit(X, y)
    >>> pop.statistics_.shape, pop.statistics_.dtype
    ((4, 569), dtype('float32'))
    >>> pop.in_masks_.sum(axis=0).min(), pop.in_masks_.sum(axis=0).max()
    (np.int64(2), np.int64(2))
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "n_models": [Interval(numbers.Integral, 1, None, closed="left")],
        "statistic": [StrOptions(set(SCORE_NAMES))],
        "classes": ["array-like", None],
        "pkeep": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state", np.random.Generator],
        "cache_dir": [str, os.PathLike, None],
        "keep_models": ["boolean"],
        "device": "no_validation",
        "verbose": ["verbose"],
        "target": "no_validation",
    }

    def __init__(
        self,
        estimator: Any = None,
        *,
        n_models: int = 16,
        statistic: str = "logit",
        classes: Any = None,
        pkeep: float = 0.5,
        n_jobs: int | None = None,
        random_state: Any = None,
        cache_dir: Any = None,
        keep_models: bool = True,
        device: Any = "auto",
        verbose: bool = False,
        target: Any = None,
    ) -> None:
        self.estimator = estimator
        self.n_models = n_models
        self.statistic = statistic
        self.classes = classes
        self.pkeep = pkeep
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.cache_dir = cache_dir
        self.keep_models = keep_models
        self.device = device
        self.verbose = verbose
        self.target = target

    def __sklearn_clone__(self) -> ShadowPopulation:
        """Clone the settings, keeping ``target`` by reference (not un-fitting it)."""
        params = self.get_params(deep=False)
        target = params.pop("target", None)
        return type(self)(
            target=target, **{k: clone_unfitted(v, safe=False) for k, v in params.items()}
        )

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, groups: Any = None) -> ShadowPopulation:
        """Draw the membership matrix, train the models and score the pool.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_records, d)
            The pool of records, in the form the estimator takes.
        y : array-like of shape (n_records,)
            Their labels (raw labels, as the target was trained on).
        groups : array-like of shape (n_records,), default=None
            Person id of each record: a person's records get one mask (a model trains
            on all of them or on none), as identical records do. With one record per
            person the masks equal those drawn without groups.

        Returns
        -------
        self
        """
        if self.estimator is None:
            raise ValueError("estimator is None: pass an unfitted shadow model recipe")
        self._validate_params()
        n, y_arr = _check_pool(X, y)
        classes = np.unique(y_arr) if self.classes is None else np.asarray(self.classes)
        y_idx = encode_labels(y_arr, classes, name="y")
        recipe, wrapper, mlp = self._recipe(n)
        # a wrapper's shadows are re-scored from the inner models: they are needed
        keep = bool(self.keep_models) or wrapper is not None
        _pkeep_block(self.pkeep)
        K = int(self.n_models)
        cache, seeds, masks, hashes = self._draw(X, y_arr, y_idx, classes, recipe, groups)
        statistics = np.empty((K, n), dtype=np.float32)
        models: list[Any] = [None] * K
        done = np.zeros(K, dtype=bool)
        if cache is not None:
            for k in range(K):  # a loop over models
                hit = cache.load(k, int(seeds[k]), hashes[k], n, keep)
                if hit is not None:
                    statistics[k], models[k] = hit
                    done[k] = True
        todo = np.flatnonzero(~done)

        self.device_ = None
        if mlp is not None:
            self.device_ = resolve_device(mlp.device)
            plan, tasks = self._mlp_tasks(recipe, mlp, todo, seeds, masks, X, y_idx, classes, keep)
        else:
            plan = plan_jobs(recipe, self.n_jobs, todo.size)
            tasks = [
                _delayed(_train_one)(
                    recipe,
                    int(k),
                    int(seeds[k]),
                    masks[k],
                    X,
                    y_arr,
                    y_idx,
                    classes,
                    self.statistic,
                    keep,
                    plan.threads,
                    plan.gpus,
                )
                for k in todo
            ]

        def store(k: int, row: np.ndarray, model: Any) -> None:
            statistics[k] = row
            models[k] = model
            if cache is not None:
                cache.save(k, int(seeds[k]), hashes[k], row, model)

        self.n_jobs_ = plan.n_jobs if tasks else 0
        self._run(tasks, todo.size, store, plan.n_jobs)
        if wrapper is not None:
            # the cache keeps the inner models and their own statistics (shared with an
            # audit of the inner model); what this population's attack sees is the wrapper
            models = [wrapper.wrap_fitted(m) for m in models]
            statistics = score_models(
                models,
                X,
                y_idx,
                classes,
                self.statistic,
                plan=plan_jobs(recipe, self.n_jobs, n),
                max_memory=resolve_max_memory(None, least=1),
            )
            recipe = wrapper

        self.estimator_ = recipe
        self.classes_ = classes
        self.in_masks_ = masks
        self.seeds_ = seeds
        self.statistics_ = statistics
        self.models_ = models if self.keep_models else None
        self.n_records_ = n
        self.n_trained_ = int(todo.size)
        return self

    def _recipe(self, n: int) -> tuple[Any, Any, Any]:
        """The shadow recipe (the inner one of an output wrapper), the wrapper (or None)
        and the batched MLP the recipe is or ends in (or None)."""
        target = self.target.model if isinstance(self.target, TargetModel) else self.target
        recipe = clone_recipe(self.estimator, name="shadow_estimator", target=target)
        wrapper = _output_wrapper(recipe)
        if wrapper is not None:
            recipe = clone_recipe(wrapper.estimator, name="shadow_estimator", target=target)
        if str(self.device) != "auto":
            set_device(recipe, self.device, n_rows=int(round(n * self.pkeep)))
        mlp = _batched_mlp(recipe)
        if mlp is None and not hasattr(recipe, "predict_proba") and not hasattr(recipe, "predict"):
            raise ValueError(
                f"estimator {type(recipe).__name__} has neither predict_proba nor predict; "
                "shadow models must output class probabilities (or, for label-only "
                "attacks, labels)"
            )
        return recipe, wrapper, mlp

    def _draw(
        self,
        X: Any,
        y_arr: np.ndarray,
        y_idx: np.ndarray,
        classes: np.ndarray,
        recipe: Any,
        groups: Any,
    ) -> tuple[_Cache | None, np.ndarray, np.ndarray, list[str]]:
        """The cache (its manifest written or checked), each model's seed, its
        membership mask and the mask's hash."""
        n, K = y_arr.shape[0], int(self.n_models)
        cache = _Cache(self.cache_dir) if self.cache_dir is not None else None
        cached_manifest = cache.read_manifest() if cache is not None else None
        if cached_manifest is not None and self.random_state is None:
            entropy = int(cached_manifest["seed_entropy"])
        else:
            entropy = _base_entropy(self.random_state)
        seeds = _model_seeds(entropy, K)
        codes = record_groups(X, y_idx)
        if groups is not None:
            # a cached model whose mask differs (another grouping) fails its mask hash
            codes = joint_codes(person_codes(check_groups(groups, n)), codes)
        masks = _draw_masks(entropy, K, n, self.pkeep, groups=codes)
        hashes = [_mask_hash(m) for m in masks]
        if cache is not None:
            manifest = {
                "format": _FORMAT,
                "n_records": n,
                "data_sha256": _fingerprint(X, y_arr),
                "estimator": _describe(recipe),
                "statistic": self.statistic,
                "pkeep": float(self.pkeep),
                "classes": [str(c) for c in classes],
                "seed_entropy": str(entropy),
            }
            if cached_manifest is None:
                cache.write_manifest(manifest)
            else:
                cache.check(cached_manifest, manifest, adopt_seed=self.random_state is None)
        return cache, seeds, masks, hashes

    def _mlp_tasks(
        self,
        recipe: Any,
        mlp: Any,
        todo: np.ndarray,
        seeds: np.ndarray,
        masks: np.ndarray,
        X: Any,
        y_idx: np.ndarray,
        classes: np.ndarray,
        keep: bool,
    ) -> tuple[Any, list[Any]]:
        """The job plan and the groups of MLPs, each one batched network (one task).

        Groups are as large as this machine's device memory allows, split further so
        that every job gets one.
        """
        from tabmia._torch import as_float32
        from tabmia.shadow.batched import auto_group_size

        plan = plan_jobs(recipe, self.n_jobs, todo.size)
        if todo.size == 0:
            return plan, []
        plain = recipe is mlp
        X_train = as_float32(X) if plain else X
        # a Pipeline's encoded width is known only once its steps are fitted: the raw
        # width sizes the split here, and each task sizes its groups again
        width = X_train.shape[1]
        group = auto_group_size(
            width,
            mlp._hidden(),
            classes.size,
            int(mlp.batch_size),
            self.device_,
            n_records=X_train.shape[0] if plain else 0,
            own_pool_rows=0 if plain else int(masks[todo].sum(axis=1).max()),
        )
        n_tasks = min(todo.size, max(math.ceil(todo.size / group), plan.n_jobs))
        inner_verbose = bool(self.verbose) and plan.n_jobs == 1
        tasks = [
            _delayed(_train_mlp_group)(
                recipe,
                ks,
                seeds[ks],
                masks[ks],
                X_train,
                y_idx,
                classes,
                self.statistic,
                mlp.device,
                keep,
                inner_verbose,
                plan.threads,
                plan.gpus,
            )
            for ks in np.array_split(todo, n_tasks)
        ]
        return plan, tasks

    def _run(self, tasks: list[Any], n_models: int, store: Any, n_jobs: int) -> None:
        if not tasks:
            return
        from joblib import Parallel
        from tqdm.auto import tqdm

        # results stream back as they finish, so the cache keeps every finished model
        # of an interrupted run; joblib < 1.4 streams only in order, some backends not
        # at all
        for mode in ("generator_unordered", "generator", "list"):
            try:
                parallel = Parallel(n_jobs=n_jobs, return_as=mode)
                break
            except ValueError:
                continue
        from tabmia._progress import progress_desc

        desc = progress_desc("shadows") if self.verbose else "shadow models"
        with tqdm(total=n_models, desc=desc, disable=not self.verbose) as bar:
            for results in parallel(tasks):
                for k, row, model in results:
                    store(k, row, model)
                    bar.update(1)

    # ------------------------------------------------------------- scoring
    def _check_models(self) -> list[Any]:
        check_is_fitted(self, "statistics_")
        if self.models_ is None:
            raise ValueError(
                "this population was fit with keep_models=False: its models were not kept, "
                "only statistics_ on the pool. Refit with keep_models=True"
            )
        return self.models_

    def statistics(
        self, X: Any, y: Any, *, max_memory: Any = None, dtype: Any = np.float32
    ) -> np.ndarray:
        """Score of every kept model on new labelled records.

        The records are scored in parallel on the population's ``n_jobs``: threads of
        this process, or, inside a ``joblib.parallel_config`` that chooses a back end,
        its workers (processes, a Dask or Ray cluster), a chunk of records each; the
        scores do not depend on the chunks, the jobs or where they run
        (:mod:`tabmia.shadow._scoring`).

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n, d)
            Records.
        y : array-like of shape (n,)
            Their labels (in ``classes_``).
        max_memory : int or str, default=None
            Memory the chunks scored at once may hold (:func:`tabmia._memory.parse_memory`:
            bytes, ``"8GB"``, ``"25%"``); None: 256 MiB per core, at least 2 GiB, at
            most half of this machine's memory. Any positive size (an attack gives its
            share of its own ``max_memory``, which its ``fit`` holds to 1 MiB at least):
            a chunk is never smaller than one batch of the models' own, and a budget
            that one batch needs more than is exceeded with a
            :class:`~tabmia.exceptions.MemoryBudgetWarning` naming the memory held.
        dtype : numpy dtype, default=np.float32
            Of the result; the scores are float32 values, held exactly by float64.

        Returns
        -------
        ndarray of shape (n_models, n)
        """
        models = self._check_models()
        n = n_rows(X)
        y_arr = ravel_column(y)
        if y_arr.shape != (n,):
            raise ValueError(f"X has {n} records but y has shape {y_arr.shape}")
        y_idx = encode_labels(y_arr, self.classes_, name="y")
        plan = plan_jobs(self.estimator_, self.n_jobs, n)
        return score_models(
            models,
            X,
            y_idx,
            self.classes_,
            self.statistic,
            plan=plan,
            max_memory=resolve_max_memory(max_memory, least=1),
            dtype=dtype,
        )

    def proba(self, X: Any) -> np.ndarray:
        """Class probabilities of every kept model, in ``classes_`` order.

        Returns
        -------
        ndarray of float32 of shape (n_models, n, n_classes)
        """
        models = self._check_models()
        n = n_rows(X)
        out = np.empty((len(models), n, self.classes_.size), dtype=np.float32)
        for k, model in enumerate(models):
            for sl, outputs in _outputs_chunks(model, X, self.classes_):
                out[k, sl] = outputs.proba
        return out
