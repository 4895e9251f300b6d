"""Optuna tuning of :class:`~tabmia.attacks.quantile.QuantileAttack`'s CatBoost regressor.

Two recipes (``QuantileAttack(tuning=...)``):

- ``"cv"``: ``n_trials`` trials over the paper's ranges (Bertran et al. 2023, App. D,
  Table 5), each scored by the ``cv``-fold out-of-fold loss;
- ``"paper"``: the search of the paper's public code (amazon-science/quantile-mia,
  ``tabular_QMIA/qmia_ACS.py``): 200 trials over its ranges (:data:`PAPER_CODE_SPACE`,
  no subsample), each scored on one 80 / 20 split of the public records (stratified by
  the label), CatBoost's ``posterior_sampling`` on for the Gaussian head. One fit per
  trial instead of ``cv``. The code passes a Hyperband pruner that never acts (its
  objective reports nothing); here there is none. The split is drawn once, not per trial,
  so trials are compared on the same records.

The objective is the loss the mode fits (Gaussian negative log-likelihood, or pinball loss
after the constant shift the calibrated threshold applies). It reads members of no kind:
the attacker's public records are all it has, so a search scored by the TPR at the target
FPR is not open to it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from tabmia.exceptions import DegenerateRegressorError

__all__ = [
    "PAPER_CODE_SPACE",
    "PAPER_SPACE",
    "PAPER_TRIALS",
    "cv_loss",
    "fixed_params",
    "n_trials_of",
    "ranked_trial_params",
    "tune_catboost",
]

#: The paper's ranges (Table 5); the subsample floor is raised on small public sets.
PAPER_SPACE: dict[str, tuple[float, float]] = {
    "depth": (1, 10),
    "l2_leaf_reg": (1e-2, 1e6),
    "learning_rate": (1e-6, 1.0),
    "subsample": (1e-2, 1.0),
    "iterations": (1, 1000),
}

#: The ranges of the paper's public code (``qmia_ACS.py``), used by ``tuning="paper"``.
PAPER_CODE_SPACE: dict[str, tuple[float, float]] = {
    "depth": (1, 10),
    "l2_leaf_reg": (1e-4, 1e4),
    "learning_rate": (1e-4, 1.0),
    "iterations": (1, 1000),
}

#: Trials of the paper code's regressor search (``tuning="paper"`` with ``n_trials=0``).
PAPER_TRIALS = 200

#: Fraction of the public records the ``"paper"`` recipe holds out to score a trial.
_HOLDOUT = 0.2


def _pinball_terms(r: np.ndarray, level: float) -> np.ndarray:
    """Pinball loss at ``level`` of residuals ``r = s - q``."""
    return np.maximum(level * r, (level - 1.0) * r)


def calibrated_pinball(s: np.ndarray, q: np.ndarray, level: float) -> float:
    """Pinball loss of ``q + c`` at ``level`` for the best constant shift ``c``.

    The conformal threshold re-calibrates the predicted quantile by one constant, so
    models are compared after that correction; the best shift is the
    ``level``-quantile of the residuals ``s - q``.
    """
    r = s - q
    c = np.quantile(r, level)
    return float(np.mean(_pinball_terms(r - c, level)))


def gaussian_nll(s: np.ndarray, raw: np.ndarray) -> float:
    """Mean Gaussian negative log-likelihood (up to a constant) of ``s`` under (mu, log sd)."""
    mu, log_sd = raw[:, 0], np.clip(raw[:, 1], -30.0, 30.0)
    return float(np.mean(log_sd + 0.5 * ((s - mu) * np.exp(-log_sd)) ** 2))


def cv_loss(mode: str, alphas: np.ndarray, s: np.ndarray, raw: np.ndarray) -> float:
    """Out-of-fold tuning loss: Gaussian NLL, or shift-corrected pinball summed over levels."""
    if mode == "gaussian":
        return gaussian_nll(s, raw)
    q = np.sort(raw, axis=1)
    levels = 1.0 - alphas[::-1]
    return sum(calibrated_pinball(s, q[:, k], lv) for k, lv in enumerate(levels))


@contextlib.contextmanager
def _quiet_optuna():
    import optuna

    old = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield optuna
    finally:
        optuna.logging.set_verbosity(old)


def n_trials_of(tuning: str, n_trials: int) -> int:
    """Trials a recipe runs: ``n_trials``, or the paper's 200 for ``"paper"`` with 0."""
    return PAPER_TRIALS if tuning == "paper" and n_trials == 0 else int(n_trials)


def fixed_params(tuning: str, mode: str) -> dict[str, Any]:
    """Settings a recipe fixes in every trial and in the final regressors."""
    # the paper's code trains its RMSEWithUncertainty regressor with posterior sampling
    return {"posterior_sampling": True} if tuning == "paper" and mode == "gaussian" else {}


def _holdout(n: int, y: np.ndarray | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One 80 / 20 split of ``n`` records, stratified by ``y`` where every class can be."""
    from sklearn.model_selection import train_test_split

    strat = None
    if y is not None:
        _, counts = np.unique(y, return_counts=True)
        if counts.min() >= 2 and counts.size <= _HOLDOUT * n:
            strat = y
    return train_test_split(np.arange(n), test_size=_HOLDOUT, random_state=seed, stratify=strat)


def tune_catboost(
    attack: Any,
    pool: Any,
    s: np.ndarray,
    first: dict[str, Any],
    y: np.ndarray | None = None,
) -> tuple[dict[str, Any], Any]:
    """TPE search by out-of-fold (``"cv"``) or held-out (``"paper"``) loss.

    Parameters
    ----------
    attack : QuantileAttack
        Supplies the seeds, ``tuning``, ``n_trials``, ``mode``, ``alphas_`` and the
        cross-fit.
    pool : catboost.Pool
        The regressor's input on the public records, with their target scores ``s``
        (sliced per trial, never copied).
    s : ndarray
        The target scores of the public records.
    first : dict
        Trial enqueued first (its keys of the recipe's space), so the search never ends
        worse than it on the loss.
    y : ndarray of int, default=None
        Labels of the public records; the ``"paper"`` recipe stratifies its split by them.

    Returns
    -------
    best_params : dict
        The best trial's settings with the recipe's fixed ones.
    study : optuna.Study
    """
    from catboost import CatBoostError

    split_seed, model_seed, sampler_seed = (attack._draw_seed() for _ in range(3))
    paper = attack.tuning == "paper"
    space = PAPER_CODE_SPACE if paper else PAPER_SPACE
    fixed = fixed_params(attack.tuning, attack.mode)
    if paper:
        fit_idx, val_idx = _holdout(s.size, y, split_seed)
        fit_pool, val_pool = pool.slice(fit_idx), pool.slice(val_idx)
    # the paper's subsample range starts at 1e-2; on small public sets CatBoost refuses
    # a sample that small, so sample at least ~50 rows of a fold
    fold_rows = s.size * (attack.cv - 1) / attack.cv
    lo_sub = min(1.0, max(PAPER_SPACE["subsample"][0], 50.0 / max(fold_rows, 1.0)))
    with _quiet_optuna() as optuna:
        sampler = optuna.samplers.TPESampler(seed=sampler_seed)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        study.enqueue_trial({k: v for k, v in first.items() if k in space})

        def objective(trial: Any) -> float:
            params = {
                "depth": trial.suggest_int("depth", *space["depth"]),
                "l2_leaf_reg": trial.suggest_float("l2_leaf_reg", *space["l2_leaf_reg"], log=True),
                "learning_rate": trial.suggest_float(
                    "learning_rate", *space["learning_rate"], log=True
                ),
            }
            if "subsample" in space:  # suggested in this order: the sampler's draws follow it
                params["subsample"] = trial.suggest_float("subsample", lo_sub, 1.0, log=True)
            params["iterations"] = trial.suggest_int("iterations", *space["iterations"], log=True)
            params.update(fixed)
            try:
                if paper:
                    model = attack._fit_regressor(params, model_seed, fit_pool)
                    raw = attack._raw_predict(model, val_pool)
                    value = cv_loss(attack.mode, attack.alphas_, s[val_idx], raw)
                else:
                    raw, _ = attack._cross_fit(params, pool, s, split_seed, model_seed, False)
                    value = cv_loss(attack.mode, attack.alphas_, s, raw)
            except (CatBoostError, DegenerateRegressorError):  # a failed trial
                return float("inf")
            return value if np.isfinite(value) else float("inf")

        study.optimize(objective, n_trials=n_trials_of(attack.tuning, attack.n_trials))
    return {**study.best_params, **fixed}, study


def ranked_trial_params(study: Any, fixed: dict[str, Any]) -> list[dict[str, Any]]:
    """Settings of the study's finished trials with a finite loss, best first.

    The final fit falls back along this list when the best settings degenerate on a
    calibration fold (a fold's records and seed differ from the trial's split).
    """
    done = [t for t in study.trials if t.value is not None and np.isfinite(t.value)]
    done.sort(key=lambda t: (t.value, t.number))
    return [{**t.params, **fixed} for t in done]
