"""Base class of the attacks that train shadow / reference models on public records.

LiRA, RMIA and difficulty calibration share everything but their statistic: the
models are trained on random halves of the public records (a pool), a candidate found
in the pool takes the moments of the models that were OUT for it, and a candidate
outside it is scored by every model.
"""

from __future__ import annotations

import os
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval

from tabmia._estimators import clone_recipe, recipe_of
from tabmia.attacks.base import BaseMembershipAttack
from tabmia.shadow.fitting import fit_population
from tabmia.shadow.moments import masked_moments
from tabmia.shadow.pool import PoolIndex
from tabmia.target import take_rows

__all__ = ["ReferenceModelAttack"]


class ReferenceModelAttack(BaseMembershipAttack):
    """Attack whose statistic compares the target with models trained on public records.

    Subclasses keep ``calibration_share``, ``n_jobs``, ``cache_dir`` and ``verbose``
    among their constructor parameters; this class validates them and uses them to
    train the population (:meth:`_fit_population`). After :meth:`_index_pool` and
    :meth:`_set_moments`, :meth:`_candidate_moments` gives each candidate the moments
    of the models' scores on it; :meth:`_reference_statistics` says what a model's
    score on a record is (by default the population's statistic).
    """

    _parameter_constraints = {
        **BaseMembershipAttack._parameter_constraints,
        "calibration_share": [Interval(Real, 0, 1, closed="left")],
        "n_jobs": [Integral, None],
        "cache_dir": [str, os.PathLike, None],
        "verbose": ["verbose"],
    }

    _holds_out_calibration = True

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
    ) -> Any:
        """Train ``n_models`` clones of ``estimator`` (the target's recipe when None).

        The seed comes from the attack's random state; ``cache_dir`` gets one
        sub-folder per attack, statistic and pool.
        """
        if estimator is not None:
            recipe = clone_recipe(estimator, name=name, target=self.target)
        else:
            recipe = recipe_of(self.target, name=name)
        return fit_population(
            X,
            y,
            recipe=recipe,
            classes=self.target_.classes_,
            n_models=n_models,
            statistic=statistic,
            pkeep=pkeep,
            random_state=self._draw_seed(),
            n_jobs=self.n_jobs,
            cache_dir=self.cache_dir,
            cache_prefix=f"{type(self).__name__}-{statistic}",
            verbose=self.verbose,
            target=self.target,
        )

    def _index_pool(self, X: Any, y: np.ndarray, in_masks: np.ndarray) -> None:
        """Index the pool; identical records share their masks (a copy IN is the record IN)."""
        self._pool = PoolIndex(X, y, in_masks)
        self.in_masks_ = self._pool.in_masks

    def _set_moments(self, stats: np.ndarray) -> None:
        """OUT count, mean and squared deviations of each pool record's model scores."""
        c, mu, ssd = masked_moments(stats, ~self.in_masks_)
        self._moments = {"c_out": c, "mu_out": mu, "ssd_out": ssd}

    def _reference_statistics(self, X: Any, y: np.ndarray) -> np.ndarray:
        """Every model's score on records ``(X, y)``, shape ``(n_models, n)``."""
        y_raw = self.target_.classes_[y]
        return self.population_.statistics(X, y_raw).astype(np.float64)

    def _candidate_moments(
        self, X: Any, y: np.ndarray, *, need_out: bool = True
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Moments of the models' scores on each candidate, and which were pool records.

        A pool record takes its pool moments; any other record (and, with
        ``need_out``, a pool record that no model was OUT for) is scored by every
        model, all of them OUT (no IN moments: count 0, mean NaN).

        Returns
        -------
        moments : dict of ndarray of shape (n,)
            The keys of the pool moments (``c_out``, ``mu_out``, ``ssd_out``, and the
            ``_in`` ones of an online attack).
        found : ndarray of bool of shape (n,)
            The record's moments come from the pool.
        """
        pos = self._pool.lookup(X, y)
        found = pos >= 0
        if need_out:
            found &= self._moments["c_out"][np.maximum(pos, 0)] > 0
        n = pos.size
        mom = {k: np.empty(n, dtype=v.dtype) for k, v in self._moments.items()}
        for k, v in self._moments.items():
            mom[k][found] = v[pos[found]]
        miss = np.flatnonzero(~found)
        if miss.size:
            stats = self._reference_statistics(take_rows(X, miss), y[miss])
            c, mu, ssd = masked_moments(stats, np.ones(stats.shape, dtype=bool))
            mom["c_out"][miss], mom["mu_out"][miss], mom["ssd_out"][miss] = c, mu, ssd
            if "c_in" in mom:
                mom["c_in"][miss], mom["mu_in"][miss], mom["ssd_in"][miss] = 0, np.nan, 0.0
        return mom, found
