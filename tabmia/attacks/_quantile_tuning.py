"""Optuna tuning of :class:`~tabmia.attacks.quantile.QuantileAttack`'s CatBoost regressor.

The search space is the paper's (Bertran et al. 2023, App. D, Table 5); the objective is
the out-of-fold loss the mode fits (Gaussian negative log-likelihood, or pinball loss
after the constant shift the calibrated threshold applies). It reads members of no kind:
the attacker's public records are all it has, so a search scored by the TPR at the target
FPR is not open to it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

__all__ = ["PAPER_SPACE", "tune_catboost", "cv_loss"]

#: The paper's ranges (Table 5); the subsample floor is raised on small public sets.
PAPER_SPACE: dict[str, tuple[float, float]] = {
    "depth": (1, 10),
    "l2_leaf_reg": (1e-2, 1e6),
    "learning_rate": (1e-6, 1.0),
    "subsample": (1e-2, 1.0),
    "iterations": (1, 1000),
}


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


def tune_catboost(attack: Any, data: Any, s: np.ndarray, cat_idx: list[int],
                  first: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """TPE search over :data:`PAPER_SPACE` by ``attack.cv``-fold out-of-fold loss.

    Parameters
    ----------
    attack : QuantileAttack
        Supplies the seeds, ``n_trials``, ``mode``, ``alphas_`` and the cross-fit.
    data, s, cat_idx
        Regressor input, target scores of the public records, categorical columns.
    first : dict
        Trial enqueued first, so the search never ends worse than it on the loss.

    Returns
    -------
    best_params : dict
    study : optuna.Study
    """
    from catboost import CatBoostError

    split_seed, model_seed, sampler_seed = (attack._draw_seed() for _ in range(3))
    # the paper's subsample range starts at 1e-2; on small public sets CatBoost refuses
    # a sample that small, so sample at least ~50 rows of a fold
    fold_rows = s.size * (attack.cv - 1) / attack.cv
    lo_sub = min(1.0, max(PAPER_SPACE["subsample"][0], 50.0 / max(fold_rows, 1.0)))
    with _quiet_optuna() as optuna:
        sampler = optuna.samplers.TPESampler(seed=sampler_seed)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        study.enqueue_trial(dict(first))

        def objective(trial: Any) -> float:
            params = {
                "depth": trial.suggest_int("depth", *PAPER_SPACE["depth"]),
                "l2_leaf_reg": trial.suggest_float("l2_leaf_reg", *PAPER_SPACE["l2_leaf_reg"],
                                                   log=True),
                "learning_rate": trial.suggest_float(
                    "learning_rate", *PAPER_SPACE["learning_rate"], log=True),
                "subsample": trial.suggest_float("subsample", lo_sub, 1.0, log=True),
                "iterations": trial.suggest_int("iterations", *PAPER_SPACE["iterations"],
                                                log=True),
            }
            try:
                raw, _ = attack._cross_fit(params, data, s, cat_idx, split_seed, model_seed,
                                           False)
            except CatBoostError:  # a setting CatBoost cannot train: a failed trial
                return float("inf")
            value = cv_loss(attack.mode, attack.alphas_, s, raw)
            return value if np.isfinite(value) else float("inf")

        study.optimize(objective, n_trials=int(attack.n_trials))
    return dict(study.best_params), study
