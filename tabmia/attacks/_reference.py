"""Base class of the attacks that train shadow / reference models on public records.

LiRA, RMIA and difficulty calibration share everything but their statistic: the
models are trained on random subsets of the public records (a pool), each record IN
for a share ``pkeep`` of them in balanced blocks (:func:`tabmia.shadow.draw_in_masks`);
a candidate found in the pool takes the moments of the models that were OUT for it,
and a candidate outside it is scored by a set of models drawn exactly like a pool
record's OUT set.

How the FPR promise is kept (``threshold_goal="fpr"``)
-----------------------------------------------------
A split-conformal threshold needs calibration scores distributed like a fresh
non-member's. With ``calibration_share=0`` (the default), every public record
calibrates: it is scored by the models that did not train on it, and a fresh
candidate is scored by as many models, chosen the same way (per block of models, a
uniformly random OUT set, drawn from a hash of the record so that it does not depend
on the candidate's membership). Each model that scores a public record was trained on
as many public records as one that scores a fresh candidate, none of them the record
itself, so the two scores have the same distribution. They are not exactly
exchangeable jointly: a model that scores one public record was trained on some of
the others. Had the fresh record been in the pool, the run would be symmetric in all
records and the promise exact; the real run differs from that one only in the fresh
record's absence from the training sets of the models it would have been IN for,
which moves the other records' scores by the learner's sensitivity to one training
record (the setting of cross-conformal prediction and the jackknife+, Vovk 2015;
Barber et al. 2021). ``benchmarks/fpr_promise.py`` measures the delivered FPR.

``calibration_share > 0`` holds that share of the public records out of every model
instead: they are scored by all the models, like a fresh candidate, and the promise
is exactly split-conformal; the models then train on fewer records, and the
threshold is set from fewer scores.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from fractions import Fraction
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from tabmia._estimators import clone_recipe, recipe_of
from tabmia._memory import chunk_bounds, record_bytes, resolve_max_memory, warn_over_budget
from tabmia._rows import n_rows
from tabmia.attacks._tags import membership_tags
from tabmia.attacks.base import BaseMembershipAttack, _scoring_persons
from tabmia.exceptions import MemoryBudgetWarning
from tabmia.shadow._design import draw_record_in_masks
from tabmia.shadow._schedule import plan_jobs
from tabmia.shadow._training import _chunk_rows
from tabmia.shadow.fitting import fit_population
from tabmia.shadow.moments import masked_moments
from tabmia.shadow.pool import PoolIndex, record_keys
from tabmia.target import take_rows

__all__ = ["ReferenceModelAttack", "MIN_OUT_MODELS", "MIN_OUT_SHARE"]

#: ``shadow_train_size`` never makes the models' share of the pool so large that a
#: record is OUT for fewer than this many models, nor for fewer than
#: :data:`MIN_OUT_SHARE` of them (half of them when there are fewer than eight): a
#: candidate is scored by as many models as a record is OUT for, and fewer estimate
#: its non-member statistic too noisily (and more models would no longer help).
MIN_OUT_MODELS = 4
#: See :data:`MIN_OUT_MODELS`.
MIN_OUT_SHARE = 0.25
#: Denominators tried for the models' share of the pool (``pkeep = a / b``).
_MAX_BLOCK = 16


class ReferenceModelAttack(BaseMembershipAttack):
    """Attack whose statistic compares the target with models trained on public records.

    Subclasses keep ``calibration_share``, ``shadow_train_size``, ``n_jobs``,
    ``max_memory``, ``cache_dir`` and ``verbose`` among their constructor parameters; this class
    validates them, holds calibration records out when ``calibration_share > 0``,
    resolves the models' share of the pool (:meth:`_resolve_pkeep`) and trains the
    population (:meth:`_fit_population`). After :meth:`_index_pool` and
    :meth:`_set_moments`, :meth:`_candidate_moments` gives each candidate the moments
    of its OUT models' scores; :meth:`_reference_statistics` says what a model's score
    on a record is (by default the population's statistic).

    Attributes set by ``fit``
    -------------------------
    pkeep_ : float
        Share of the pool each model trained on.
    shadow_train_size_ : int
        Records each model trained on (``pkeep_`` times the pool, rounded).
    shadow_size_note_ : str or None
        Why the models train on fewer records than ``shadow_train_size`` asked for,
        when they do.
    calibration_index_ : ndarray of int
        With ``calibration_share > 0`` and ``threshold_goal="fpr"``: the rows of
        ``fit``'s ``X`` held out of every model to calibrate ``threshold_``. Empty
        otherwise (every public record calibrates, scored by its OUT models).
    """

    _parameter_constraints = {
        **BaseMembershipAttack._parameter_constraints,
        "calibration_share": [Interval(Real, 0, 1, closed="left")],
        "shadow_train_size": [
            None,
            Interval(Integral, 1, None, closed="left"),
            Interval(Real, 0, 1, closed="neither"),
        ],
        "n_jobs": [Integral, None],
        "max_memory": [Interval(Integral, 1, None, closed="left"), str, None],
        "cache_dir": [str, os.PathLike, None],
        "verbose": ["verbose"],
    }

    #: The parameters that give the models' recipe and their number (``"shadow_estimator"``,
    #: ``"n_shadow"``): the runners size and build the population through them.
    _model_recipe_param: str
    _model_count_param: str

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        m = tags.membership_tags
        m.model_recipe_params = (self._model_recipe_param,)
        m.model_count_params = (self._model_count_param,)
        m.reports_model_size = True
        # the target's training-set size, unless the user sized the models
        m.train_size_param = "shadow_train_size" if self.shadow_train_size is None else None
        m.runner_settings |= {
            "n_jobs",
            "max_memory",
            "cache_dir",
            "verbose",
            self._model_count_param,
        }
        m.run_params |= {"n_jobs", "max_memory", "cache_dir", "verbose"}
        return tags

    # ------------------------------------------------------------- calibration
    def _holds_out(self) -> bool:
        return self.threshold_goal == "fpr" and self.calibration_share > 0

    def _calibration_count(self) -> tuple[int, str]:
        n = self.n_public_
        if self._holds_out():
            n_cal = int(round(n * self.calibration_share))
            return n_cal, (
                f"calibration_share={self.calibration_share:g} of the {n} public records, "
                "held out of every model so that they are scored like a fresh candidate"
            )
        return n, f"the {n} public records, each scored by the models that did not train on it"

    def _fit_public(self, X: Any, y: np.ndarray) -> None:
        resolve_max_memory(self.max_memory)  # a bad size is refused before any training
        self.calibration_index_ = np.empty(0, dtype=np.int64)
        self._calibration_records = None
        groups = getattr(self, "_fit_groups", None)
        self._pool_groups = groups
        if not self._holds_out():
            self._fit(X, y)
            return
        fit_rows, cal_rows = _split_calibration(
            self.n_public_, self.calibration_share, self._draw_seed(), groups=groups
        )
        self.calibration_index_ = cal_rows
        self._calibration_records = (take_rows(X, cal_rows), y[cal_rows])
        self._pool_groups = None if groups is None else groups[fit_rows]
        self._fit(take_rows(X, fit_rows), y[fit_rows])

    def _calibration_rows(self) -> np.ndarray:
        if self.calibration_index_.size:
            return self.calibration_index_
        return super()._calibration_rows()

    def _nonmember_calibration_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        if self._calibration_records is not None:
            records, self._calibration_records = self._calibration_records, None
            return self._score(*records)
        # pool records: each is scored by its OUT models (see the module docstring)
        return self._score(X, y)

    # --------------------------------------------------------------- the models
    def _resolve_pkeep(
        self,
        n_pool: int,
        n_models: int,
        pkeep: float,
        *,
        min_out: int | None = None,
        need_in: int = 0,
    ) -> float:
        """The share of the pool each model trains on, from ``shadow_train_size``.

        ``None`` keeps ``pkeep``. A share (a float) is taken as given, as the nearest
        fraction ``a / b`` with ``b <= 16``. A number of records picks the balanced
        share ``a / b`` (``b <= 16``) closest to it that leaves every record OUT for at
        least ``min_out`` of the first ``n_models`` models (by default
        :data:`MIN_OUT_MODELS` and :data:`MIN_OUT_SHARE` of them, at most half) and, for
        an online attack, IN for at least ``need_in``; ``shadow_size_note_`` says when
        that falls short of the number.
        """
        self.shadow_size_note_ = None
        size = self.shadow_train_size
        if size is None:
            share = float(pkeep)
        elif isinstance(size, float):
            share = float(Fraction(size).limit_denominator(_MAX_BLOCK))
            if abs(share - size) > 0.005:
                raise ValueError(
                    f"shadow_train_size={size!r} as a share of the pool must be close to a "
                    f"fraction a/b with b <= {_MAX_BLOCK} (models train in balanced blocks)"
                )
        else:
            if min_out is None:
                min_out = min(
                    max(MIN_OUT_MODELS, math.ceil(MIN_OUT_SHARE * n_models)), n_models // 2
                )
            min_out = max(int(min_out), 1)
            options = [
                Fraction(a, b)
                for b in range(2, _MAX_BLOCK + 1)
                for a in range(1, b)
                if math.floor(n_models * (b - a) / b + 1e-9) >= min_out
                and math.floor(n_models * a / b + 1e-9) >= need_in
            ]
            if not options:
                raise ValueError(
                    f"{n_models} models cannot leave every record OUT for {min_out} of them "
                    f"and IN for {need_in}: use more models"
                )
            # the closest in ratio; ties to the smaller share (and smaller blocks)
            share = float(min(options, key=lambda f: (abs(math.log(f * n_pool / size)), f)))
            got = int(round(share * n_pool))
            if got < 0.9 * size:
                self.shadow_size_note_ = (
                    f"its models train on {got} records each, not the {size} the target did: "
                    f"the pool has {n_pool} records and each must stay OUT of at least "
                    f"{min_out} of the {n_models} models (the attack is weaker for it)"
                )
        if (
            self.threshold_goal == "fpr"
            and not self._holds_out()
            and math.floor(n_models * (1.0 - share) + 1e-9) < 1
        ):
            raise ValueError(
                f"{n_models} model(s) training on {share:g} of the public records leave some "
                "records without a model that did not train on them, so neither those records "
                "nor the candidates drawn like them can be scored: use more models, or "
                "calibration_share > 0 to hold calibration records out of every model"
            )
        self.pkeep_ = share
        self.shadow_train_size_ = int(round(share * n_pool))
        return share

    def _fit_population(
        self,
        X: Any,
        y: np.ndarray,
        *,
        estimator: Any,
        name: str,
        n_models: int,
        statistic: str,
        pkeep: float = 0.5,
        min_out: int | None = None,
        need_in: int = 0,
        share_models: int | None = None,
    ) -> Any:
        """Train ``n_models`` clones of ``estimator`` (the target's recipe when None).

        ``pkeep`` is the share of the pool each model trains on unless
        ``shadow_train_size`` sets it (:meth:`_resolve_pkeep`, over the first
        ``share_models`` models, all by default). The seed comes from the
        attack's random state; ``cache_dir`` gets one sub-folder per attack, statistic
        and pool.
        """
        if estimator is not None:
            recipe = clone_recipe(estimator, name=name, target=self.target)
        else:
            recipe = recipe_of(self.target, name=name)
        if not membership_tags(self).works_with("labels") and not hasattr(recipe, "predict_proba"):
            raise ValueError(
                f"{name} {type(recipe).__name__} has no predict_proba: "
                f"{type(self).__name__}'s shadow / reference models must output class "
                "probabilities"
            )
        share = self._resolve_pkeep(
            len(y), share_models or n_models, pkeep, min_out=min_out, need_in=need_in
        )
        return fit_population(
            X,
            y,
            recipe=recipe,
            classes=self.target_.classes_,
            n_models=n_models,
            statistic=statistic,
            pkeep=share,
            random_state=self._draw_seed(),
            n_jobs=self.n_jobs,
            cache_dir=self.cache_dir,
            cache_prefix=f"{type(self).__name__}-{statistic}",
            verbose=self.verbose,
            target=self.target,
            groups=getattr(self, "_pool_groups", None),
        )

    def _index_pool(self, X: Any, y: np.ndarray, in_masks: np.ndarray) -> None:
        """Index the pool; identical records share their masks (a copy IN is the record IN)."""
        self._pool = PoolIndex(X, y, in_masks)
        self.in_masks_ = self._pool.in_masks
        # the OUT sets of records outside the pool are drawn from their content and this seed
        self._outside_seed = self._draw_seed()

    def _set_moments(self, stats: np.ndarray) -> None:
        """OUT count, mean and squared deviations of each pool record's model scores."""
        c, mu, ssd = masked_moments(stats, ~self.in_masks_)
        self._moments = {"c_out": c, "mu_out": mu, "ssd_out": ssd}

    def _reference_statistics(self, X: Any, y: np.ndarray) -> np.ndarray:
        """Every model's score on records ``(X, y)``, shape ``(n_models, n)``."""
        y_raw = self.target_.classes_[y]
        # half the budget: the other half holds this process's chunk (_moments_while)
        budget = resolve_max_memory(self.max_memory) // 2
        return self.population_.statistics(X, y_raw, max_memory=budget, dtype=np.float64)

    def _outside_out_masks(self, X: Any, y: np.ndarray) -> np.ndarray:
        """Which models score each record outside the pool, shape ``(n_models, n)``.

        Records held out for calibration, and candidates scored against them, are
        scored by every model; otherwise by an OUT set drawn like a pool record's.
        """
        return self._outside_masks_of(record_keys(X, y))

    def _draw_keys(self, keys: np.ndarray) -> np.ndarray:
        """The keys the OUT sets of records outside the pool are drawn from: each record's
        own, or, where the scored records' persons are known (``decision_function``'s
        ``groups``), the smallest key of its person's records, so that a candidate
        person's records are scored by one OUT set, as a public person's records share
        one IN/OUT mask (a person's records scored by different models would make their
        person-level statistic spread unlike a public person's)."""
        groups = getattr(self, "_score_groups", None)
        if groups is None or keys.size == 0:
            return keys
        smallest = pd.Series(keys).groupby(groups).transform("min")
        return smallest.to_numpy(dtype=np.uint64)

    def _outside_masks_of(self, keys: np.ndarray) -> np.ndarray:
        """:meth:`_outside_out_masks` of records given by their :func:`record_keys`."""
        n_models = self.in_masks_.shape[0]
        if self.calibration_index_.size:
            return np.ones((n_models, keys.size), dtype=bool)
        return ~draw_record_in_masks(keys, n_models, pkeep=self.pkeep_, seed=self._outside_seed)

    def out_model_masks(self, X: Any, y: Any, groups: Any = None) -> np.ndarray:
        """Which models score each record as models that did not train on it.

        A public record of the pool: the models it was OUT for. Any other record: as
        many models, drawn per block of models the way a pool record's OUT set is,
        from the record's content (the same record always gets the same set), or with
        ``groups`` from its person's records (a person's records share one set, as a
        public person's share one mask); all of them for records scored against
        held-out calibration records (``calibration_share > 0``).

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n, d)
            Records.
        y : array-like of shape (n,)
            Their labels.
        groups : array-like of shape (n,), default=None
            Person id of each record, as ``decision_function`` takes them.

        Returns
        -------
        ndarray of bool of shape (n_models, n)
            ``out[k, i]``: model ``k`` scores record ``i``.
        """
        check_is_fitted(self, "in_masks_")
        y_idx = self._validate_records(X, y, "out_model_masks")
        pos = self._pool.lookup(X, y_idx)
        found = pos >= 0
        with _scoring_persons(self, groups, X):
            out = self._outside_masks_of(self._draw_keys(record_keys(X, y_idx)))
        out[:, found] = ~self.in_masks_[:, pos[found]]
        return out

    def _candidate_moments(
        self, X: Any, y: np.ndarray, *, need_out: bool = True
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Moments of the models' scores on each candidate, and which were pool records.

        A pool record takes its pool moments; any other record (and, with
        ``need_out``, a pool record that no model was OUT for) is scored by the models
        :meth:`_outside_out_masks` gives it, all of them OUT (no IN moments: count 0,
        mean NaN).

        Returns
        -------
        moments : dict of ndarray of shape (n,)
            The keys of the pool moments (``c_out``, ``mu_out``, ``ssd_out``, and the
            ``_in`` ones of an online attack).
        found : ndarray of bool of shape (n,)
            The record's moments come from the pool.
        """
        mom, found, _ = self._moments_while(X, y, None, need_out=need_out)
        return mom, found

    def _moments_while(
        self,
        X: Any,
        y: np.ndarray,
        during: Callable[[], Any] | None,
        *,
        need_out: bool = True,
    ) -> tuple[dict[str, np.ndarray], np.ndarray, Any]:
        """:meth:`_candidate_moments`, and ``during()`` run while the models score.

        ``during`` is the attack's query of the target on the same records: with the
        models' scoring on parallel jobs it runs in a thread of this process meanwhile
        (the two are independent and deterministic, so the order changes nothing).
        The records outside the pool are scored in chunks whose size follows
        ``max_memory`` (:mod:`tabmia._memory`), each chunk's moments kept and its
        statistics dropped.

        Returns
        -------
        moments, found
            As :meth:`_candidate_moments`.
        result
            What ``during()`` returned (None without it).
        """
        n = n_rows(X)
        # the target's query starts first: the records' hashing and OUT masks below run
        # beside it, then the models' scoring on the jobs
        with _Alongside(during, self._parallel_scoring(n)) as side:
            keys = record_keys(X, y)
            pos = self._pool.positions(keys)
            found = pos >= 0
            if need_out:
                found &= self._moments["c_out"][np.maximum(pos, 0)] > 0
            mom = {k: np.empty(n, dtype=v.dtype) for k, v in self._moments.items()}
            for k, v in self._moments.items():
                mom[k][found] = v[pos[found]]
            miss = np.flatnonzero(~found)
            if "c_in" in mom:
                mom["c_in"][miss], mom["mu_in"][miss], mom["ssd_in"][miss] = 0, np.nan, 0.0
            self._score_outside(X, y, self._draw_keys(keys), miss, mom)
        return mom, found, side.result

    def _score_outside(
        self,
        X: Any,
        y: np.ndarray,
        keys: np.ndarray,
        miss: np.ndarray,
        mom: dict[str, np.ndarray],
    ) -> None:
        """The OUT moments of the records ``miss`` (not from the pool), written into
        ``mom``: the models score them in chunks whose size follows ``max_memory``;
        ``keys`` are the records' draw keys (:meth:`_draw_keys`)."""
        budget = resolve_max_memory(self.max_memory)
        n_models = self.in_masks_.shape[0]
        # per record in this process: its copy, the models' float32 and float64 scores
        # and their clipped copy, the OUT mask, the moments' temporaries
        row_bytes = record_bytes(X) + n_models * (4 + 8 + 8 + 1 + 24)
        # whole batches of the models' own, so that chunking leaves their inputs as
        # they were (results of BLAS-based models depend on the batch)
        batch = _chunk_rows(len(self.target_.classes_))
        warn_over_budget(
            miss.size,
            row_bytes,
            budget // 2,
            multiple=batch,
            what="scoring the candidates' moments",
        )
        for k, sl in enumerate(chunk_bounds(miss.size, row_bytes, budget // 2, multiple=batch)):
            rows = miss[sl]  # a loop over chunks of records
            out_masks = self._outside_masks_of(keys[rows])
            with warnings.catch_warnings():
                if k:  # the models' scoring said it on the first chunk: once is enough
                    warnings.simplefilter("ignore", MemoryBudgetWarning)
                stats = self._reference_statistics(take_rows(X, _as_slice(rows)), y[rows])
            c, mu, ssd = masked_moments(stats, out_masks)
            mom["c_out"][rows], mom["mu_out"][rows], mom["ssd_out"][rows] = c, mu, ssd

    def _parallel_scoring(self, n: int) -> bool:
        """Whether the models score ``n`` records on more than one job."""
        pop = getattr(self, "population_", None)
        if pop is None or n == 0:
            return False
        plan = plan_jobs(pop.estimator_, pop.n_jobs, n)
        return plan.n_jobs > 1 and not plan.gpus  # GPU models score in this process


def _as_slice(rows: np.ndarray) -> np.ndarray | slice:
    """``rows`` (ascending) as a slice where they are a run without gaps (the usual case:
    no candidate is a public record), so that taking them is a view, not a copy."""
    if rows.size and int(rows[-1]) - int(rows[0]) + 1 == rows.size:
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


class _Alongside:
    """Run ``func`` in a thread while the block runs (in line first without ``thread``);
    ``result`` holds what it returned once the block has ended."""

    def __init__(self, func: Callable[[], Any] | None, thread: bool) -> None:
        self.func, self.thread, self.result = func, thread, None
        self._future: Any = None
        self._pool: Any = None

    def __enter__(self) -> _Alongside:
        if self.func is None:
            return self
        if not self.thread:
            self.result = self.func()
            return self
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1)
        self._future = self._pool.submit(self.func)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._pool is None:
            return
        try:
            result = self._future.result()  # its error, if any, is raised here
        finally:
            self._pool.shutdown(wait=True)
        if exc[0] is None:
            self.result = result


def _split_calibration(
    n: int, share: float, seed: int, *, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (model-training rows, held-out calibration rows) of ``n`` public records.

    With ``groups`` (person codes) whole persons are held out, drawn in a random order
    until they hold at least the share's records: a held-out record whose person trained
    the models would not be scored like a fresh non-member person's."""
    n_cal = int(round(n * share))
    if groups is not None and n_cal >= 1:
        n_persons = int(groups.max()) + 1
        order = np.random.RandomState(seed).permutation(n_persons)
        sizes = np.bincount(groups, minlength=n_persons)[order]
        held = order[: int(np.searchsorted(np.cumsum(sizes), n_cal)) + 1]
        out = np.isin(groups, held)
        if out.all() or (~out).sum() < 2:
            raise ValueError(
                f"calibration_share={share:g} of {n} public records ({n_persons} persons) "
                "leaves fewer than 2 records to train the shadow / reference models; give "
                "the attack more public persons"
            )
        return np.flatnonzero(~out), np.flatnonzero(out)
    if n_cal < 1 or n_cal > n - 2:
        raise ValueError(
            f"calibration_share={share:g} of {n} public records leaves {n_cal} records to "
            f"calibrate the threshold and {n - n_cal} to train the shadow / reference "
            "models; both need records (give the attack more public records)"
        )
    perm = np.random.RandomState(seed).permutation(n)
    return np.sort(perm[n_cal:]), np.sort(perm[:n_cal])
