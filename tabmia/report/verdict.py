"""The audit's verdict in plain language: what an attacker achieves at its own threshold.

Every count here is of records an attack flags at the threshold it chose itself
(``threshold_``, set without the candidates' membership), never of a ROC-curve point,
which needs the membership labels to pick its threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import (
    clopper_pearson, dp_consistency, empirical_epsilon, ppv, ppv_interval, ppv_resolved,
)

__all__ = ["own_threshold_summary", "verdict_lines", "model_description"]


def own_threshold_summary(metrics: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per attack, its decisions at its own threshold pooled over repeats.

    Returns
    -------
    DataFrame
        Indexed by attack, sorted strongest first (largest ``tpr - fpr``, then most
        members flagged): ``tp``, ``n_members``, ``fp``, ``n_nonmembers`` (sums over
        repeats), ``tp_per_seed`` (list), ``tpr``/``fpr`` with Clopper-Pearson
        ``_low``/``_high``, ``n_seeds``.
    """
    need = ["attack", "tp", "n_members", "fp", "n_nonmembers"]
    if not set(need) <= set(metrics.columns):
        raise ValueError("metrics lack the counts at each attack's own threshold (tp, fp); "
                         "were the attacks run without a threshold?")
    grouped = metrics[need].groupby("attack", sort=False)
    out = grouped.sum().astype(int)
    out["tp_per_seed"] = grouped["tp"].agg(lambda s: [int(v) for v in s])
    out["n_seeds"] = grouped.size()
    out["tpr"] = out["tp"] / out["n_members"]
    out["fpr"] = out["fp"] / out["n_nonmembers"]
    out["tpr_low"], out["tpr_high"] = clopper_pearson(out["tp"].to_numpy(),
                                                      out["n_members"].to_numpy(), confidence)
    out["fpr_low"], out["fpr_high"] = clopper_pearson(out["fp"].to_numpy(),
                                                      out["n_nonmembers"].to_numpy(), confidence)
    out["advantage"] = out["tpr"] - out["fpr"]
    return out.sort_values(["advantage", "tp"], ascending=False, kind="stable")


def model_description(target: Any) -> str:
    """A short name of the audited model (the estimator's class, a pipeline's last step)."""
    model = getattr(target, "model", target)  # TargetModel wraps the user's model
    if type(model).__name__ == "PrecomputedProbabilities":
        return "precomputed probabilities"
    steps = getattr(model, "steps", None)
    if steps:
        return f"{type(steps[-1][1]).__name__} (in a Pipeline)"
    return type(model).__name__


def _rate(v: float, lo: float, hi: float) -> str:
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def verdict_lines(
    result: Any,
    *,
    context: dict[str, Any] | None = None,
    gammas: tuple[float, ...] = (1.0, 10.0, 100.0),
    epsilon: float | None = None,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> list[str]:
    """Plain-language sentences an auditor reads first (plain text, no markup).

    Parameters
    ----------
    result : ExperimentResult
    context : dict, default=None
        Shown facts; ``data`` names the data set, ``target`` / ``model`` the model.
    gammas : tuple of float
        Priors for the PPV sentence (the largest is quoted).
    epsilon, delta : float
        A DP claim to check the strongest attack against.
    """
    context = context or {}
    metrics = result.metrics
    summary = own_threshold_summary(metrics, confidence=confidence)
    best_name, best = summary.index[0], summary.iloc[0]
    n_seeds = int(best["n_seeds"])
    first = metrics[metrics["attack"] == best_name].iloc[0]
    n_mem, n_neg = int(first["n_members"]), int(first["n_nonmembers"])
    model = context.get("target") or (model_description(result.targets[0])
                                      if result.targets else context.get("model", "the model"))
    data = context.get("data", "the given data")
    seeds = f", over {n_seeds} seeds (counts pooled)" if n_seeds > 1 else ""
    lines = [f"What was attacked: a {model} model trained on {data}; each attack scored "
             f"{n_mem} members (training records) and {n_neg} non-members it never saw{seeds}."]
    acc = getattr(result, "target_accuracy", None)
    if acc is not None and len(acc):
        tr, te = float(acc["train_accuracy"].mean()), float(acc["test_accuracy"].mean())
        lines.append(f"The model's accuracy is {tr:.3f} on its training records and {te:.3f} "
                     f"on held-out records (gap {tr - te:+.3f}); a large gap means memorisation, "
                     "which is what these attacks exploit.")
    aim = (f" (aimed at {float(first['fpr_target']):.1%} FPR)"
           if _is_finite(first.get("fpr_target")) else "")

    if int(summary["tp"].max()) == 0:
        lines.append(f"No attack flags a single training record at its own threshold{aim}: "
                     f"at most {best['tpr_high']:.3f} of training records (95% upper bound) "
                     "could be singled out this way.")
    else:
        lines.append(_singles_out(best_name, best, aim, n_mem))
    g = max(gammas)
    if int(best["tp"]) + int(best["fp"]) == 0:
        lines.append("PPV (the share of flagged records that really are training records) is "
                     "undefined: nothing was flagged.")
    else:
        lines.append(_ppv_line(best_name, best, g, confidence))
    eps = empirical_epsilon(int(best["tp"]), int(best["n_members"]), int(best["fp"]),
                            int(best["n_nonmembers"]), delta=delta, confidence=confidence)
    lines.append(
        f"The ε lower bound is the smallest ε for which (ε, δ = {delta:g})-differentially private "
        f"training could allow these rates (95% confidence); for {best_name} it is "
        f"{eps['epsilon_lower']:.2f}" + (" (counts pooled over seeds)" if n_seeds > 1 else "")
        + ".")
    if epsilon is not None:
        check = dp_consistency(int(best["tp"]), int(best["n_members"]), int(best["fp"]),
                               int(best["n_nonmembers"]), epsilon, delta, confidence=confidence)
        meaning = {"yes": "consistent with it", "no": "inconsistent with it: the claim cannot hold",
                   "not resolved": (f"not resolved: its TPR is above the bound at its measured FPR, "
                                    f"but within the FPR's uncertainty with "
                                    f"{int(best['n_nonmembers'])} non-members")}[check["verdict"]]
        lines.append(f"Against a claim of (ε = {epsilon:g}, δ = {delta:g})-DP, {best_name}'s "
                     f"rates are {meaning}.")
    lines.append("TPR at a fixed FPR (the ROC curve) needs a threshold set with the membership "
                 "labels: those columns are an oracle's reference, not what the attacker achieved.")
    return lines


def _singles_out(name: str, best: pd.Series, aim: str, n_mem: int) -> str:
    if int(best["n_seeds"]) > 1:  # the seeds' members overlap: count per seed, pool the rates
        count = (f"singles out {best['tp'] / best['n_seeds']:g} of {n_mem} training records per "
                 f"seed on average (seeds: {', '.join(map(str, best['tp_per_seed']))}): pooled TPR")
        false = (f"it also flags {int(best['fp'])} of {int(best['n_nonmembers'])} non-members "
                 "over all seeds: pooled FPR")
    else:
        count = f"singles out {int(best['tp'])} of {int(best['n_members'])} training records: TPR"
        false = f"it also flags {int(best['fp'])} of {int(best['n_nonmembers'])} non-members: FPR"
    return (
        f"At its own threshold{aim}, chosen without knowing who is a member, the strongest attack, "
        f"{name}, {count} {_rate(best['tpr'], best['tpr_low'], best['tpr_high'])}; {false} "
        f"{_rate(best['fpr'], best['fpr_low'], best['fpr_high'])}."
        + (" Its TPR's interval overlaps its FPR's: these flags are not shown to be better "
           "than guessing." if best["tpr_low"] <= best["fpr_high"] else ""))


def _ppv_line(name: str, best: pd.Series, g: float, confidence: float) -> str:
    value = ppv(best["tpr"], best["fpr"], g)
    lo, hi = ppv_interval(int(best["tp"]), int(best["n_members"]), int(best["fp"]),
                          int(best["n_nonmembers"]), g, confidence=confidence)
    resolved = ppv_resolved(int(best["fp"]), lo, hi)
    return (
        f"PPV is the share of flagged records that really are training records when the attacker "
        f"searches a pool with γ non-members per member; for {name} at γ = {g:g} it is "
        f"{value:.3f} [{lo:.3f}, {hi:.3f}]"
        + ("." if resolved else f", not resolved by {int(best['n_nonmembers'])} non-members "
           f"({int(best['fp'])} flagged): only the interval is informative."))


def _is_finite(value: Any) -> bool:
    try:
        return bool(np.isfinite(float(value)))
    except (TypeError, ValueError):
        return False
