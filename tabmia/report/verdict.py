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
    clopper_pearson,
    dp_consistency,
    empirical_epsilon,
    ppv,
    ppv_interval,
    ppv_resolved,
)

__all__ = ["STRONGEST_RULE", "own_threshold_summary", "verdict_lines", "model_description",
           "shadow_recipe"]


#: How the verdict picks "the strongest attack", in the words the report prints.
STRONGEST_RULE = (
    "the attack that flags the most training records among those whose non-member flags "
    "stay consistent with the FPR it aimed at (its FPR's 95% lower bound not above that FPR); "
    "ties go to the one flagging fewer non-members"
)


def own_threshold_summary(metrics: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per attack, its decisions at its own threshold pooled over repeats, strongest first.

    The order is :data:`STRONGEST_RULE`: attacks that kept the FPR they aimed at
    (``fpr_target``; ``promise == "kept"``) come first, by TPR (more members flagged),
    then fewer non-members flagged. Attacks whose threshold had no FPR goal
    (``promise == "none"``) follow by ``tpr - fpr``, and attacks that flagged more
    non-members than their goal allows (``promise == "broken"``) come last, by
    ``tpr - fpr``. A largest-``tpr - fpr`` order alone would call an attack flagging 179
    of 500 members at FPR 0 stronger than one flagging 180 at an FPR within its promise.

    Returns
    -------
    DataFrame
        Indexed by attack: ``tp``, ``n_members``, ``fp``, ``n_nonmembers`` (sums over
        repeats), ``tp_per_seed`` (list), ``tpr``/``fpr`` with Clopper-Pearson
        ``_low``/``_high``, ``advantage``, ``fpr_target`` (the FPR the threshold
        promises) and ``fpr_requested`` (the one asked for; largest over repeats, NaN
        without an FPR goal), ``promise`` and ``n_seeds``.
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
    for col in ("fpr_target", "fpr_requested"):
        values = (pd.to_numeric(metrics[col], errors="coerce") if col in metrics
                  else pd.Series(np.nan, index=metrics.index))
        out[col] = values.groupby(metrics["attack"], sort=False).max().reindex(out.index)
    aim = out["fpr_target"].to_numpy(float)
    kept = out["fpr_low"].to_numpy() <= aim * (1 + 1e-9)
    out["promise"] = np.where(np.isnan(aim), "none", np.where(kept, "kept", "broken"))
    group = out["promise"].map({"kept": 0, "none": 1, "broken": 2})
    first = np.where(group == 0, out["tpr"], out["advantage"])
    second = np.where(group == 0, -out["fpr"], out["tpr"])
    order = np.lexsort((-second, -first, group.to_numpy()))
    return out.iloc[order]


def model_description(target: Any) -> str:
    """A short name of the audited model (the estimator's class, a pipeline's last step)."""
    from tabmia.target import PrecomputedProbabilities

    model = getattr(target, "model", target)  # TargetModel wraps the user's model
    if isinstance(model, PrecomputedProbabilities):
        return "precomputed probabilities"
    steps = getattr(model, "steps", None)
    if steps:
        return f"{type(steps[-1][1]).__name__} (in a Pipeline)"
    return type(model).__name__


def shadow_recipe(result: Any, label: str | None = None) -> str | None:
    """The training recipe the shadow / reference models of ``result``'s attacks copy.

    Parameters
    ----------
    result : ExperimentResult
    label : str, default=None
        What the caller calls the recipe (a preset name, a file); by default the
        recipe's class, or "the target's own recipe" where the attacks clone it.

    Returns
    -------
    str or None
        None when no attack trained shadow or reference models.
    """
    from sklearn.utils import get_tags

    recipes = []
    for attack in getattr(result, "attacks", None) or []:
        # an attack's membership tags name the parameters of the models it trains
        params = get_tags(attack).membership_tags.model_recipe_params
        recipes += [getattr(attack, p) for p in params]
    if not recipes:
        return None
    if label is not None:
        return label
    names = {"the target's own recipe (an unfitted clone)" if r is None else model_description(r)
             for r in recipes}
    return ", ".join(sorted(names))


def _rate(v: float, lo: float, hi: float) -> str:
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def _pct(rate: float) -> str:
    return f"{100 * rate:.3g}%"


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

    The first is the risk statement: what an attacker holding the audit's public
    records achieves with the strongest attack (:data:`STRONGEST_RULE`) at its own
    threshold, with the 95% intervals of its TPR and FPR; where that does not beat
    guessing, an AUC whose interval lies above 0.5 is named. Then how attacks were
    ranked, what was attacked (and the recipe shadow models copy), the model's accuracy
    gap, PPV, the ε lower bound and an optional DP claim.

    Parameters
    ----------
    result : ExperimentResult
    context : dict, default=None
        Shown facts; ``data`` names the data set, ``target`` / ``model`` the model,
        ``attacker public records`` the attacker's data, ``shadow recipe`` the recipe.
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
    splits = getattr(result, "splits", None)
    n_public = len(splits[0].public) if splits else context.get("attacker public records")
    lines = [_risk_statement(best_name, best, n_mem, n_public)]
    auc_line = _significant_auc(metrics, summary)
    if auc_line and (int(best["tp"]) == 0 or best["tpr_low"] <= best["fpr_high"]
                     or best["promise"] == "broken"):
        lines.append(auc_line)
    lines.append(_ranking_line(summary, n_mem))
    seeds = f", over {n_seeds} seeds (counts pooled)" if n_seeds > 1 else ""
    recipe = context.get("shadow recipe") or shadow_recipe(result)
    lines.append(f"What was attacked: a {model} model trained on {data}; each attack scored "
                 f"{n_mem} members (training records) and {n_neg} non-members it never saw{seeds}"
                 + (f"; shadow / reference models were trained with {recipe}." if recipe else "."))
    acc = getattr(result, "target_accuracy", None)
    if acc is not None and len(acc):
        tr, te = float(acc["train_accuracy"].mean()), float(acc["test_accuracy"].mean())
        lines.append(f"The model's accuracy is {tr:.3f} on its training records and {te:.3f} "
                     f"on held-out records (gap {tr - te:+.3f}); a large gap means memorisation, "
                     "which is what these attacks exploit.")
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


def _risk_statement(name: str, best: pd.Series, n_mem: int, n_public: Any) -> str:
    """One sentence: what an attacker can do, at which error rate, how sure."""
    holding = f"{n_public} public records" if n_public else "public records"
    attacker = f"an attacker holding {holding} of the same population"
    aim = (f"aimed at {_pct(best['fpr_target'])} FPR" if best["promise"] != "none"
           else "with no FPR goal")
    how = f"with {name} at its own threshold ({aim}, chosen without knowing who is a member)"
    tpr = _rate(best["tpr"], best["tpr_low"], best["tpr_high"])
    fpr = _rate(best["fpr"], best["fpr_low"], best["fpr_high"])
    n_pos, n_neg, seeds = int(best["n_members"]), int(best["n_nonmembers"]), int(best["n_seeds"])
    if seeds > 1:  # the seeds' members overlap: count per seed, pool the rates
        count = (f"{best['tp'] / seeds:g} of {n_mem} training records per seed on average "
                 f"(seeds: {', '.join(map(str, best['tp_per_seed']))}): pooled TPR {tpr}")
        false = f"{int(best['fp'])} of {n_neg} non-members over all seeds: pooled FPR {fpr}"
    else:
        count = f"{int(best['tp'])} of {n_pos} training records: TPR {tpr}"
        false = f"{int(best['fp'])} of {n_neg} non-members: FPR {fpr}"
    sure = " (95% Clopper-Pearson intervals)"
    not_shown = (f"Risk not shown at {_pct(best['fpr_target'])} FPR"
                 if best["promise"] != "none" else "Risk not shown")
    if best["promise"] == "broken":
        return (f"Risk not measured reliably: every attack flags more non-members than the FPR "
                f"it aimed at allows, so no threshold kept its promise (too few public records, "
                f"or public records unlike the candidates). The strongest by TPR − FPR, {how}, "
                f"singles out {count}, while wrongly flagging {false}{sure}.")
    if int(best["tp"]) == 0:
        return (f"{not_shown}: no attack flags a single training record at its own threshold "
                f"({aim}); with {n_pos} training records scored, at most "
                f"{best['tpr_high']:.3f} of them could be singled out this way (95% upper "
                f"bound), and {int(best['fp'])} of {n_neg} non-members were flagged.")
    if best["tpr_low"] <= best["fpr_high"]:
        return (f"{not_shown}: {attacker} flags training records no more often than "
                f"non-members beyond chance. The strongest attack, {how}, singles out {count}, "
                f"and wrongly flags {false}{sure}; the two intervals overlap, so these flags "
                "are not shown to be better than guessing.")
    return (f"Risk: {attacker}, {how}, singles out {count}, while wrongly flagging "
            f"{false}{sure}.")


def _ranking_line(summary: pd.DataFrame, n_mem: int) -> str:
    """What "strongest" means, and every attack's flags in that order."""
    seeds = int(summary["n_seeds"].max())
    order = "; ".join(
        f"{name} {int(r['tp'])}/{int(r['n_members'])} members, {int(r['fp'])}/"
        f"{int(r['n_nonmembers'])} non-members"
        + {"kept": "", "none": " (no FPR goal)",
           "broken": f" (more than its {_pct(r['fpr_target'])} FPR allows)"}[r["promise"]]
        for name, r in summary.iterrows())
    rest = ""
    if (summary["promise"] == "none").any():
        rest += " Attacks without an FPR goal follow, by TPR − FPR."
    if (summary["promise"] == "broken").any():
        rest += " Attacks that flag more non-members than their FPR allows come last, by TPR − FPR."
    pooled = f" (counts over {seeds} seeds)" if seeds > 1 else ""
    return f"“Strongest” means {STRONGEST_RULE}.{rest} In that order{pooled}: {order}."


def _significant_auc(metrics: pd.DataFrame, summary: pd.DataFrame) -> str | None:
    """A sentence on the highest AUC whose 95% interval lies above 0.5, if any."""
    if not {"auc", "auc_low"} <= set(metrics.columns):
        return None
    lows = pd.to_numeric(metrics["auc_low"], errors="coerce").groupby(metrics["attack"]).min()
    aucs = pd.to_numeric(metrics["auc"], errors="coerce").groupby(metrics["attack"]).mean()
    above = aucs[lows > 0.5]
    if above.empty:
        return None
    name = above.idxmax()
    rows = metrics[metrics["attack"] == name]
    if len(rows) == 1:
        value = f"{float(rows['auc'].iloc[0]):.3f} [{float(rows['auc_low'].iloc[0]):.3f}, " \
                f"{float(rows['auc_high'].iloc[0]):.3f}] (95% bootstrap interval, above 0.5)"
    else:
        value = (f"{aucs[name]:.3f} on average over {len(rows)} seeds, every seed's 95% "
                 "bootstrap interval above 0.5")
    return (f"Yet the scores do rank members above non-members more often than chance: "
            f"{name}'s AUC is {value}. Membership leaks on average even though no threshold "
            "chosen without the membership labels singles out records beyond chance at this "
            "FPR; an attacker accepting a higher FPR, or holding more public records, may.")


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
