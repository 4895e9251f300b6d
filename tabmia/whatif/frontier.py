"""The privacy-utility frontier of a what-if run: each variant's audit, gate and table row,
the Pareto front and the best passing variant.

Risk is the largest TPR over a variant's attacks, each at its own threshold (chosen from
the public records alone for the FPR it promises), pooled over repeats; the FPR each
threshold delivered on the non-member candidates is reported beside it. Every variant
was audited on the same candidates as the original, so the change in TPR has a *paired*
bootstrap interval: the same members are resampled for both (within each repeat).
Utility is measured on the held-out records, the same for every variant, with a paired
bootstrap over them (:mod:`tabmia.whatif.paired`). Intervals are percentile intervals at
the run's ``confidence``. The words and the plot are :mod:`tabmia.whatif.summary`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import clopper_pearson
from tabmia.whatif.paired import (
    _utility_boot,
    paired_tpr_difference,
    paired_utility_difference,
)

__all__ = [
    "SELECTION_CAVEAT",
    "audit_result",
    "best_variant",
    "delivered_fpr_table",
    "frontier_table",
    "pareto_front",
    "derivable",
    "post_processing",
    "variant_gate",
]

SELECTION_CAVEAT = (
    "Choosing among variants on the same private data is itself a selection: the chosen "
    "variant's figures are the best of several noisy estimates and so optimistic. Before "
    "relying on them, re-audit it on fresh non-members (records no audit here used): "
    "tabmia.whatif.reaudit(result, X_fresh, y_fresh)."
)


class _LabelsOnly:
    """What a label-only variant loaded from the output folder looks like to the verdict
    (its fitted model is not kept there): a classifier with ``predict`` only."""

    def __init__(self, classes: np.ndarray) -> None:
        self.classes_ = classes

    def predict(self, X: Any) -> np.ndarray:
        raise RuntimeError("a stand-in for a variant loaded from disk: it answers nothing")


# ---------------------------------------------------------------------- audits
def audit_result(result: Any, name: str) -> Any:
    """Variant ``name``'s repeats as one :class:`~tabmia.experiment.ExperimentResult`."""
    from tabmia.experiment import ExperimentResult

    runs = result.runs_of(name)
    first = runs[0]
    target = first.target
    if target is None and first.label_only:
        target = _LabelsOnly(result.classes)
    findings: tuple = ()
    for run in runs:
        findings += tuple(f for f in run.findings if f not in findings)
    return ExperimentResult(
        scores=pd.concat([r.scores for r in runs], ignore_index=True),
        metrics=pd.concat([r.metrics for r in runs], ignore_index=True),
        targets=[] if target is None else [target],
        findings=findings,
    )


def variant_gate(result: Any, name: str) -> Any:
    """The gate (:func:`tabmia.gate.evaluate_gate`) of variant ``name`` at the run's limit."""
    from tabmia.gate import evaluate_gate

    return evaluate_gate(audit_result(result, name), result.settings["limit"])


# ----------------------------------------------------------------------- tables
def _rates(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per attack: counts at its own threshold pooled over repeats, TPR and FPR with
    Clopper-Pearson intervals, and the FPR it promised (largest over repeats)."""
    g = metrics.groupby("attack", sort=False)
    out = g[["tp", "n_members", "fp", "n_nonmembers"]].sum()
    out["fpr_target"] = g["fpr_target"].max() if "fpr_target" in metrics else np.nan
    out["tpr"] = out["tp"] / out["n_members"]
    out["fpr"] = out["fp"] / out["n_nonmembers"]
    out["tpr_low"], out["tpr_high"] = clopper_pearson(
        out["tp"].to_numpy(), out["n_members"].to_numpy()
    )
    out["fpr_low"], out["fpr_high"] = clopper_pearson(
        out["fp"].to_numpy(), out["n_nonmembers"].to_numpy()
    )
    return out


def _person_rates(runs: list[Any]) -> dict[str, Any]:
    """The person-level risk of a variant's runs: the attack with the largest person TPR,
    pooled over repeats (NaN without person ids)."""
    frames = [r.person_metrics for r in runs if getattr(r, "person_metrics", None) is not None]
    keys = ("person_tpr", "person_tpr_low", "person_tpr_high", "person_fpr", "person_attack")
    if len(frames) != len(runs) or not frames:
        return {**dict.fromkeys(keys, np.nan), "n_member_persons": 0, "n_nonmember_persons": 0}
    rates = _rates(pd.concat(frames, ignore_index=True))
    top = rates["tpr"].idxmax()
    r = rates.loc[top]
    return {
        "person_tpr": float(r["tpr"]),
        "person_tpr_low": float(r["tpr_low"]),
        "person_tpr_high": float(r["tpr_high"]),
        "person_fpr": float(r["fpr"]),
        "person_attack": top,
        "n_member_persons": int(r["n_members"]),
        "n_nonmember_persons": int(r["n_nonmembers"]),
    }


def delivered_fpr_table(result: Any) -> pd.DataFrame:
    """Per variant and attack: the FPR its threshold promised (``fpr_target``), the FPR it
    delivered on the non-member candidates with its interval, and its TPR.

    Returns
    -------
    DataFrame
    """
    rows = []
    for v in result.variants:
        rates = _rates(pd.concat([r.metrics for r in result.runs_of(v.name)], ignore_index=True))
        for attack, r in rates.iterrows():
            rows.append(
                {
                    "variant": v.name,
                    "attack": attack,
                    "fpr_target": float(r["fpr_target"]),
                    "fpr": float(r["fpr"]),
                    "fpr_low": float(r["fpr_low"]),
                    "fpr_high": float(r["fpr_high"]),
                    "fp": int(r["fp"]),
                    "n_nonmembers": int(r["n_nonmembers"]),
                    "tpr": float(r["tpr"]),
                    "kept": bool(r["fpr_low"] <= r["fpr_target"] + 1e-12)
                    if np.isfinite(r["fpr_target"])
                    else None,
                }
            )
    return pd.DataFrame(rows)


def frontier_table(result: Any) -> pd.DataFrame:
    """One row per variant: risk, utility, their changes against the original with
    paired intervals, the gate, the DP check and the cost.

    Columns: ``variant``, ``kind``, ``description``, ``attack`` (the one with the largest
    TPR), ``tpr`` [``tpr_low``, ``tpr_high``], ``fpr`` (delivered by that attack's threshold)
    [``fpr_low``, ``fpr_high``], ``fpr_target``, ``delta_tpr`` [``delta_tpr_low``,
    ``delta_tpr_high``], ``n_paired``, ``utility`` (the run's ``utility_metric``),
    ``delta_utility`` [``delta_utility_low``, ``delta_utility_high``], ``accuracy``,
    ``roc_auc``, ``log_loss``, ``gate`` (below / above / unresolved), ``passes``,
    ``epsilon``, ``delta``, ``dp_epsilon_lower``, ``dp_claim``, ``seconds``,
    ``models_trained``, ``models_used``, ``label_only``, ``named`` and ``named_wrong``
    (members an attacker could name at FDR 0.1, :mod:`tabmia.named`, and the non-members
    among them, summed over repeats), ``notes``, ``n_members`` (member
    records, pooled over repeats); with person ids the person-level risk ``person_tpr``
    [``person_tpr_low``, ``person_tpr_high``], ``person_fpr``, ``person_attack``,
    ``n_member_persons``, ``n_nonmember_persons`` (NaN / 0 without); the risk
    each variant is stated at, ``risk`` [``risk_low``, ``risk_high``] with ``risk_variant``,
    ``risk_attack``, ``risk_fpr``, ``risk_fpr_target`` and ``gate_own`` (the original is
    stated at the largest risk of its hardenings: :func:`post_processing`); ``on_front``
    marks the Pareto front on the stated risk (no other variant has both lower risk and
    higher utility).

    Returns
    -------
    DataFrame
    """
    s = result.settings
    metric, conf, B = s["utility_metric"], float(s["confidence"]), int(s["n_bootstrap"])
    seed = int(s.get("random_state") or 0)
    base = result.runs_of("original")
    rows = []
    for v in result.variants:
        runs = result.runs_of(v.name)
        rates = _rates(pd.concat([r.metrics for r in runs], ignore_index=True))
        top = rates["tpr"].idxmax()
        r = rates.loc[top]
        dt = paired_tpr_difference(base, runs, n_bootstrap=B, confidence=conf, random_state=seed)
        du = paired_utility_difference(
            base, runs, metric, n_bootstrap=B, confidence=conf, random_state=seed
        )
        ones = [np.arange(x.utility_y.size)[None, :] for x in runs]
        gate = variant_gate(result, v.name)
        dp = runs[0].dp_check or {}
        notes = list(dict.fromkeys(n for x in runs for n in x.notes))
        if gate.outcome == "unresolved":  # every unresolved variant says why
            why = gate.summary().split("): ", 1)[-1]
            notes.append(f"the gate {s['limit']} is unresolved for it: {why}")
        rows.append(
            {
                **_person_rates(runs),
                "variant": v.name,
                "kind": v.kind,
                "description": v.describe(),
                "attack": top,
                "tpr": float(r["tpr"]),
                "tpr_low": float(r["tpr_low"]),
                "tpr_high": float(r["tpr_high"]),
                "fpr": float(r["fpr"]),
                "fpr_low": float(r["fpr_low"]),
                "fpr_high": float(r["fpr_high"]),
                "fpr_target": float(r["fpr_target"]),
                "n_members": int(r["n_members"]),
                "delta_tpr": dt["delta"],
                "delta_tpr_low": dt["low"],
                "delta_tpr_high": dt["high"],
                "n_paired": dt["n_paired"],
                "utility": du["value"],
                "delta_utility": du["delta"],
                "delta_utility_low": du["low"],
                "delta_utility_high": du["high"],
                **{
                    m: float(_utility_boot(runs, m, ones)[0])
                    for m in ("accuracy", "roc_auc", "log_loss")
                },
                "gate": gate.outcome,
                "passes": bool(gate.passed),
                "epsilon": v.epsilon,
                "delta": v.delta,
                "dp_epsilon_lower": dp.get("epsilon_lower"),
                "dp_claim": dp.get("state"),
                "seconds": float(sum(x.seconds for x in runs)),
                "models_trained": int(sum(x.models_trained for x in runs)),
                "models_used": int(sum(x.models_used for x in runs)),
                "label_only": bool(runs[0].label_only),
                **_named_of(runs),
                "notes": notes,
            }
        )
    table = _stated_risk(pd.DataFrame(rows), result.variants)
    higher = metric != "log_loss"
    table["on_front"] = pareto_front(
        table["risk"].to_numpy(float), table["utility"].to_numpy(float), higher
    )
    return table


def post_processing(variant: Any) -> str:
    """What an attacker does to the outputs he sees to play hardening ``variant``."""
    p = variant.params
    if p.get("labels_only"):
        return "keeps only the predicted label"
    if p.get("round") is not None:
        d = int(p["round"])
        return f"rounds the outputs to {d} decimal{'s' if d > 1 else ''}"
    return f"keeps only the top {int(p['top_k'])} probabilities"


def derivable(source: Any, hardening: Any) -> bool:
    """Whether anyone who sees ``source``'s outputs can compute ``hardening``'s himself.

    The original's outputs give every hardening; rounded outputs give coarser roundings
    (up to a value that lay on a rounding boundary) and the label; the top ``k`` give a
    smaller top ``k`` and the label.
    """
    if hardening.kind != "harden" or source.name == hardening.name:
        return False
    if source.kind == "original":
        return True
    if source.kind != "harden" or source.params.get("labels_only"):
        return False
    if hardening.params.get("labels_only"):
        return True
    for key in ("round", "top_k"):
        a, b = source.params.get(key), hardening.params.get(key)
        if a is not None and b is not None:
            return int(b) < int(a)
    return False


def _stated_risk(table: pd.DataFrame, variants: list[Any]) -> pd.DataFrame:
    """The risk each variant is stated at: its own, or a hardening's that is larger.

    A hardened output is a function of the original's output (:func:`derivable`): anyone
    who sees the original can harden it himself and run the attack that was measured on
    the hardened variant. So the original's risk is at least the largest TPR measured on
    any of its hardenings (each at the FPR its own threshold delivered), and a rounded
    output's at least a coarser rounding's. Columns ``risk`` [``risk_low``,
    ``risk_high``], ``risk_variant``, ``risk_attack``, ``risk_fpr``, ``risk_fpr_target``
    hold it; where such a hardening's gate is above the limit, so is the variant's
    (``gate_own`` keeps its gate on its own outputs).
    """
    t = table.copy()
    t["risk"], t["risk_low"], t["risk_high"] = t["tpr"], t["tpr_low"], t["tpr_high"]
    t["risk_variant"], t["risk_attack"] = t["variant"], t["attack"]
    t["risk_fpr"], t["risk_fpr_target"] = t["fpr"], t["fpr_target"]
    t["gate_own"] = t["gate"]
    by_name = {v.name: v for v in variants}
    tpr = t["tpr"].astype(float)
    for i in t.index:  # a loop over variants (a handful)
        source = by_name[t.at[i, "variant"]]
        rows = [
            j
            for j in t.index
            if np.isfinite(tpr[j]) and derivable(source, by_name[t.at[j, "variant"]])
        ]
        if not rows:
            continue
        top = max(rows, key=lambda j: tpr[j])
        if tpr[top] > tpr[i]:
            for col, src in (
                ("risk", "tpr"),
                ("risk_low", "tpr_low"),
                ("risk_high", "tpr_high"),
                ("risk_variant", "variant"),
                ("risk_attack", "attack"),
                ("risk_fpr", "fpr"),
                ("risk_fpr_target", "fpr_target"),
            ):
                t.at[i, col] = t.at[top, src]
        if any(t.at[j, "gate"] == "above" for j in rows) and t.at[i, "gate"] != "above":
            t.at[i, "gate"], t.at[i, "passes"] = "above", False
        if source.kind != "original" and t.at[i, "risk_variant"] != t.at[i, "variant"]:
            t.at[i, "notes"] = [
                *t.at[i, "notes"],
                f"an attacker who {post_processing(by_name[t.at[top, 'variant']])} himself "
                f"gets from this variant what {t.at[top, 'variant']} showed (TPR "
                f"{tpr[top]:.3f} with {t.at[top, 'attack']}, against {tpr[i]:.3f} on its own "
                "outputs): its risk is stated at that",
            ]
    return t


def _named_of(runs: list) -> dict[str, Any]:
    """Members named at the default FDR (:mod:`tabmia.named`), summed over the variant's
    repeats, and how many of them wrongly; None where a repeat has no list."""
    found = [getattr(r, "named", None) for r in runs]
    counts = [c for c in found if c is not None]
    if len(counts) < len(found):
        return {"named": None, "named_wrong": None}
    return {
        "named": int(sum(c["n_named"] for c in counts)),
        "named_wrong": int(sum(c["n_wrong"] for c in counts)),
    }


def pareto_front(
    risk: np.ndarray, utility: np.ndarray, higher_is_better: bool = True
) -> np.ndarray:
    """Which points no other point dominates (risk no higher and utility no worse, one of
    them strictly). Vectorised over pairs.

    Returns
    -------
    ndarray of bool
    """
    u = utility if higher_is_better else -utility
    u = np.where(np.isfinite(u), u, -np.inf)
    no_worse = (risk[None, :] <= risk[:, None]) & (u[None, :] >= u[:, None])
    better = (risk[None, :] < risk[:, None]) | (u[None, :] > u[:, None])
    return np.asarray(~(no_worse & better).any(axis=1), dtype=bool)


def best_variant(table: pd.DataFrame) -> str | None:
    """The passing variant with the least utility lost (the highest utility; the lowest
    log-loss where ``utility`` is a log-loss, told by a negative change being good: the
    table's utility column follows the run's metric), ties to the lower TPR; None where
    none passes. The original is a candidate: where it passes, it is the answer (no fix
    is needed at this limit)."""
    orig = table[table["kind"] == "original"]
    if not orig.empty and bool(orig["passes"].iloc[0]):
        return str(orig["variant"].iloc[0])
    passing = table[table["passes"] & table["utility"].notna()]
    if passing.empty:
        return None
    log_loss = bool(
        np.isclose(passing["utility"], passing["log_loss"], equal_nan=False).all()
    ) and not bool(np.isclose(passing["utility"], passing["roc_auc"], equal_nan=False).all())
    key = passing["utility"] if not log_loss else -passing["utility"]
    order = pd.DataFrame({"u": key, "r": -passing["tpr"]}).sort_values(["u", "r"], ascending=False)
    return str(passing.loc[order.index[0], "variant"])
