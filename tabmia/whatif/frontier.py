"""The privacy-utility frontier of a what-if run: paired intervals, the gate, the table,
the plot and the text.

Risk is the largest TPR over a variant's attacks, each at its own threshold (chosen from
the public records alone for the FPR it promises), pooled over repeats; the FPR each
threshold delivered on the non-member candidates is reported beside it. Every variant
was audited on the same candidates as the original, so the change in TPR has a *paired*
bootstrap interval: the same members are resampled for both (within each repeat).
Utility is measured on the held-out records, the same for every variant, with a paired
bootstrap over them. Intervals are percentile intervals at the run's ``confidence``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import clopper_pearson

__all__ = [
    "audit_result",
    "best_variant",
    "delivered_fpr_table",
    "frontier_table",
    "markdown_report",
    "paired_tpr_difference",
    "paired_utility_difference",
    "pareto_front",
    "plot_frontier",
    "summary_text",
    "utility_values",
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


# ------------------------------------------------------------------- bootstrap
def _block_indices(sizes: list[int], n_boot: int, rng: np.random.RandomState) -> np.ndarray:
    """``(n_boot, sum(sizes))`` indices resampling each block (repeat) within itself."""
    parts, offset = [], 0
    for n in sizes:
        parts.append(offset + rng.randint(0, max(n, 1), size=(n_boot, n)))
        offset += n
    return np.hstack(parts) if parts else np.zeros((n_boot, 0), dtype=np.intp)


def _member_flags(run: Any) -> pd.DataFrame:
    """Members' flags of one run: index ``record``, one bool column per attack."""
    s = run.scores
    members = s[s["member"].astype(bool)]
    return members.pivot_table(
        index="record", columns="attack", values="flagged", aggfunc="max"
    ).astype(bool)


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    a = (1.0 - confidence) / 2.0
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(finite, [a, 1.0 - a])
    return float(lo), float(hi)


def paired_tpr_difference(
    base_runs: list[Any], runs: list[Any], *, n_boot: int, confidence: float, random_state: int
) -> dict[str, Any]:
    """Change in TPR (largest over attacks, at their own thresholds) against the base,
    with a paired bootstrap interval over the members both audits scored.

    Members are paired by their row in the training data within each repeat; a person-cap
    variant scores only the records it kept, and the pair is made on those. Per attack the
    same is given for attacks both ran.

    Returns
    -------
    dict
        ``delta``, ``low``, ``high`` (the largest TPR), ``n_paired`` (members), and
        ``per_attack`` ({attack: (delta, low, high)}).
    """
    base_blocks, var_blocks, sizes = [], [], []
    for b, v in zip(base_runs, runs):
        fb, fv = _member_flags(b), _member_flags(v)
        common = fb.index.intersection(fv.index)
        base_blocks.append(fb.loc[common])
        var_blocks.append(fv.loc[common])
        sizes.append(common.size)
    fb_all = pd.concat(base_blocks, ignore_index=True).fillna(False).to_numpy(bool).T
    fv_all = pd.concat(var_blocks, ignore_index=True).fillna(False).to_numpy(bool).T
    attacks_b = list(base_blocks[0].columns)
    attacks_v = list(var_blocks[0].columns)
    idx = _block_indices(sizes, n_boot, np.random.RandomState(random_state))
    # (attacks, replicates, members) flags resampled, then each replicate's TPR
    tpr_b = fb_all[:, idx].mean(axis=2)
    tpr_v = fv_all[:, idx].mean(axis=2)
    point = float(fv_all.mean(axis=1).max() - fb_all.mean(axis=1).max())
    delta = tpr_v.max(axis=0) - tpr_b.max(axis=0)
    low, high = _interval(delta, confidence)
    per_attack = {}
    for a in attacks_v:
        if a in attacks_b:
            i, j = attacks_b.index(a), attacks_v.index(a)
            d = tpr_v[j] - tpr_b[i]
            per_attack[a] = (float(fv_all[j].mean() - fb_all[i].mean()), *_interval(d, confidence))
    return {
        "delta": point,
        "low": low,
        "high": high,
        "n_paired": int(sum(sizes)),
        "per_attack": per_attack,
    }


def _weighted_auc(score: np.ndarray, positive: np.ndarray, W: np.ndarray) -> np.ndarray:
    """ROC AUC of ``score`` for ``positive`` under each row of weights ``W`` (ties 1/2),
    shape ``(replicates,)``: sorted once, cumulated negative weight below each record."""
    order = np.argsort(score, kind="stable")
    s, pos = score[order], positive[order]
    Wp, Wn = W[:, order] * pos, W[:, order] * ~pos
    start = np.searchsorted(s, s, side="left")
    end = np.searchsorted(s, s, side="right")
    cum = np.concatenate([np.zeros((W.shape[0], 1)), np.cumsum(Wn, axis=1)], axis=1)
    below = cum[:, start]
    tied = cum[:, end] - below
    num = (Wp * (below + 0.5 * tied)).sum(axis=1)
    den = Wp.sum(axis=1) * Wn.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def utility_values(
    y: np.ndarray,
    output: np.ndarray,
    pred: np.ndarray,
    W: np.ndarray,
    metric: str,
    label_only: bool,
) -> np.ndarray:
    """Utility ``metric`` of one repeat's held-out records under each row of weights ``W``.

    ``roc_auc``: of the positive class's output (binary) or the mean one-vs-rest AUC
    (macro, 3+ classes), from what the variant outputs (a label-only variant's labels);
    ``accuracy``: of its decisions; ``log_loss``: mean cross-entropy (NaN for a label-only
    variant, which gives no probabilities).

    Returns
    -------
    ndarray of shape (replicates,)
    """
    total = W.sum(axis=1)
    pred = np.ravel(pred)  # CatBoost's multi-class predict returns a column
    if metric == "accuracy":
        return (W @ (pred == y).astype(float)) / total
    if metric == "log_loss":
        if label_only:
            return np.full(W.shape[0], np.nan)
        p = np.clip(output[np.arange(y.size), y], 1e-15, 1.0)
        return (W @ -np.log(p)) / total
    if output.shape[1] == 2:
        return _weighted_auc(output[:, 1], y == 1, W)
    aucs = [
        _weighted_auc(output[:, c], y == c, W) for c in range(output.shape[1]) if (y == c).any()
    ]
    return np.nanmean(np.vstack(aucs), axis=0)


def _utility_boot(runs: list[Any], metric: str, idx_parts: list[np.ndarray]) -> np.ndarray:
    """Per replicate, the metric averaged over repeats (each repeat's own resample)."""
    values = []
    for run, idx in zip(runs, idx_parts):
        n = run.utility_y.size
        B = idx.shape[0]
        W = np.bincount((idx + n * np.arange(B)[:, None]).ravel(), minlength=B * n).reshape(B, n)
        values.append(
            utility_values(
                run.utility_y,
                run.utility_output,
                run.utility_pred,
                W.astype(float),
                metric,
                run.label_only,
            )
        )
    return np.mean(np.vstack(values), axis=0)


def paired_utility_difference(
    base_runs: list[Any],
    runs: list[Any],
    metric: str,
    *,
    n_boot: int,
    confidence: float,
    random_state: int,
) -> dict[str, float]:
    """Utility of the variant, and its change against the base, with a paired bootstrap
    interval over the held-out records (resampled within each repeat, the same records
    for both).

    Returns
    -------
    dict
        ``value`` (the variant's), ``base``, ``delta``, ``low``, ``high``.
    """
    rng = np.random.RandomState(random_state)
    parts = [rng.randint(0, r.utility_y.size, size=(n_boot, r.utility_y.size)) for r in runs]
    ones = [np.arange(r.utility_y.size)[None, :] for r in runs]
    value = float(_utility_boot(runs, metric, ones)[0])
    base = float(_utility_boot(base_runs, metric, ones)[0])
    delta = _utility_boot(runs, metric, parts) - _utility_boot(base_runs, metric, parts)
    low, high = _interval(delta, confidence)
    return {"value": value, "base": base, "delta": value - base, "low": low, "high": high}


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
    ``models_trained``, ``models_used``, ``label_only``, ``notes``; ``on_front`` marks the
    Pareto front (no other variant has both lower TPR and higher utility).

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
        dt = paired_tpr_difference(base, runs, n_boot=B, confidence=conf, random_state=seed)
        du = paired_utility_difference(
            base, runs, metric, n_boot=B, confidence=conf, random_state=seed
        )
        ones = [np.arange(x.utility_y.size)[None, :] for x in runs]
        gate = variant_gate(result, v.name)
        dp = runs[0].dp_check or {}
        notes = list(dict.fromkeys(n for x in runs for n in x.notes))
        rows.append(
            {
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
                "notes": notes,
            }
        )
    table = pd.DataFrame(rows)
    higher = metric != "log_loss"
    table["on_front"] = pareto_front(
        table["tpr"].to_numpy(float), table["utility"].to_numpy(float), higher
    )
    return table


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
    none passes."""
    passing = table[table["passes"] & table["utility"].notna()]
    if passing.empty:
        return None
    log_loss = bool(
        np.isclose(passing["utility"], passing["log_loss"], equal_nan=False).all()
    ) and not bool(np.isclose(passing["utility"], passing["roc_auc"], equal_nan=False).all())
    key = passing["utility"] if not log_loss else -passing["utility"]
    order = pd.DataFrame({"u": key, "r": -passing["tpr"]}).sort_values(["u", "r"], ascending=False)
    return str(passing.loc[order.index[0], "variant"])


# ------------------------------------------------------------------------ words
def _num(x: Any, digits: int = 3) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if not np.isfinite(v) else f"{v:.{digits}f}"


def _signed(x: Any) -> str:
    v = float(x)
    return "n/a" if not np.isfinite(v) else f"{v:+.3f}"


def summary_text(result: Any, table: pd.DataFrame | None = None) -> str:
    """What the run shows, in words: what passes, the best variant with its costs and
    intervals, the selection caveat, the DP claims and the notes."""
    t = result.frontier() if table is None else table
    s = result.settings
    metric, limit = s["utility_metric"], s["limit"]
    pct = f"{100 * float(s['confidence']):g}%"
    n_rep = len({r.repeat for r in result.runs})
    lines = [
        f"{len(t)} variants audited with the same attacks on the same public records and "
        f"candidates ({n_rep} seed{'s' if n_rep > 1 else ''}); utility ({metric}) on "
        "held-out records no attack scored.",
    ]
    passing = t.loc[t["passes"], "variant"].tolist()
    lines.append(f"Pass the gate {limit}: " + (", ".join(passing) if passing else "none") + ".")
    best = best_variant(t)
    orig = t.iloc[0]
    if best is None:
        lines.append("No variant passes: none of these fixes shows the risk under the limit.")
    elif best == "original":
        lines.append("The original already passes: no fix is needed at this limit.")
    else:
        b = t.set_index("variant").loc[best]
        lines.append(
            f"Best passing variant: {best} ({b['description']}): {metric} {_num(b['utility'])} "
            f"against {_num(orig['utility'])} for the original, a change of "
            f"{_signed(b['delta_utility'])} [{_signed(b['delta_utility_low'])}, "
            f"{_signed(b['delta_utility_high'])}] ({pct}, paired over the held-out records); "
            f"TPR {_num(b['tpr'])} [{_num(b['tpr_low'])}, {_num(b['tpr_high'])}] "
            f"({b['attack']}, its threshold delivering FPR {_num(b['fpr'])} for "
            f"{_num(b['fpr_target'])} promised), a change of {_signed(b['delta_tpr'])} "
            f"[{_signed(b['delta_tpr_low'])}, {_signed(b['delta_tpr_high'])}] "
            f"(paired over {int(b['n_paired'])} members)."
        )
    lines.append(SELECTION_CAVEAT)
    for _, row in t[t["kind"] == "dp"].iterrows():
        run = result.runs_of(row["variant"])[0]
        if run.dp_check:
            lines.append(f"DP claim of {row['variant']}: {run.dp_check['sentence']}")
    said: dict[str, list[str]] = {}
    for _, row in t.iterrows():
        for note in row["notes"]:
            said.setdefault(note.rstrip("."), []).append(str(row["variant"]))
    for note, who in said.items():  # a note several variants share is said once
        lines.append(f"Note ({', '.join(who)}): {note}.")
    return "\n".join(lines)


def markdown_report(result: Any) -> str:
    """The summary, the frontier table, the FPRs delivered and the costs, as Markdown."""
    t = result.frontier()
    metric = result.settings["utility_metric"]
    out = ["## What-if: candidate fixes re-audited", "", *summary_text(result, t).split("\n"), ""]
    out += [
        f"| variant | kind | strongest attack | TPR [CI] | FPR delivered (promised) | ΔTPR [CI] | "
        f"{metric} | Δ{metric} [CI] | gate | front | ε (one-run lower bound, claim) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in t.iterrows():
        eps = (
            f"{r['epsilon']:g} ({_num(r['dp_epsilon_lower'])}, {r['dp_claim']})"
            if r["epsilon"] is not None and np.isfinite(float(r["epsilon"]))
            else ""
        )
        out.append(
            f"| {r['variant']} | {r['kind']} | {r['attack']} | {_num(r['tpr'])} "
            f"[{_num(r['tpr_low'])}, {_num(r['tpr_high'])}] | {_num(r['fpr'])} ({_num(r['fpr_target'])}) | "
            f"{_signed(r['delta_tpr'])} [{_signed(r['delta_tpr_low'])}, {_signed(r['delta_tpr_high'])}] | "
            f"{_num(r['utility'])} | {_signed(r['delta_utility'])} [{_signed(r['delta_utility_low'])}, "
            f"{_signed(r['delta_utility_high'])}] | {r['gate']} | {'yes' if r['on_front'] else ''} | {eps} |"
        )
    out += ["", "FPR delivered by each attack's own threshold on the non-member candidates:", ""]
    out += [
        "| variant | attack | promised | delivered [CI] | flagged / non-members |",
        "|---|---|---|---|---|",
    ]
    for _, r in result.delivered_fpr().iterrows():
        out.append(
            f"| {r['variant']} | {r['attack']} | {_num(r['fpr_target'], 4)} | {_num(r['fpr'], 4)} "
            f"[{_num(r['fpr_low'], 4)}, {_num(r['fpr_high'], 4)}] | {r['fp']} / {r['n_nonmembers']} |"
        )
    out += [
        "",
        "Cost:",
        "",
        "| variant | seconds | shadow models trained / used |",
        "|---|---|---|",
    ]
    for _, r in t.iterrows():
        out.append(
            f"| {r['variant']} | {r['seconds']:.1f} | {r['models_trained']} / {r['models_used']} |"
        )
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------- plot
_KIND_STYLE = {
    "original": ("black", "*"),
    "retrain": ("tab:blue", "o"),
    "harden": ("tab:orange", "s"),
    "dp": ("tab:green", "D"),
    "cap": ("tab:purple", "^"),
}


def plot_frontier(result: Any, *, path: Any = None, ax: Any = None) -> Any:
    """Risk (largest TPR at the attacks' own thresholds, with its interval) against utility,
    one point per variant, filled where it passes the gate; the gate's limit as a line and
    the Pareto front joined.

    Parameters
    ----------
    result : WhatIfResult
    path : str or path, default=None
        Where to save the figure (PNG); nothing saved when None.
    ax : matplotlib Axes, default=None
        Draw there; a new figure when None.

    Returns
    -------
    matplotlib Figure
    """
    import matplotlib

    if ax is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from tabmia.gate import parse_limits

    t = result.frontier()
    metric = result.settings["utility_metric"]
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
    else:
        fig = ax.figure
    for _, r in t.iterrows():
        color, marker = _KIND_STYLE.get(r["kind"], ("gray", "o"))
        x, y = float(r["utility"]), float(r["tpr"])
        if not np.isfinite(x):
            continue
        ax.errorbar(
            x,
            y,
            yerr=[[y - r["tpr_low"]], [r["tpr_high"] - y]],
            fmt="none",
            ecolor=color,
            alpha=0.5,
        )
        ax.scatter(
            [x],
            [y],
            color=color if r["passes"] else "white",
            edgecolors=color,
            marker=marker,
            s=60,
            zorder=3,
        )
        ax.annotate(r["variant"], (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    front = t[t["on_front"] & np.isfinite(t["utility"].astype(float))].sort_values("utility")
    ax.plot(front["utility"], front["tpr"], color="gray", lw=1, ls="--", label="Pareto front")
    for limit in parse_limits(result.settings["limit"]):
        if limit.metric == "tpr":
            ax.axhline(limit.limit, color="tab:red", lw=1, label=f"gate {limit}")
    for kind, (color, marker) in _KIND_STYLE.items():
        if (t["kind"] == kind).any():
            ax.scatter([], [], color=color, marker=marker, label=kind)
    ax.set_xlabel(
        f"utility: {metric} on held-out records"
        + (" (lower is better)" if metric == "log_loss" else "")
    )
    ax.set_ylabel("TPR at the attack's own threshold (largest)")
    ax.set_title("Privacy-utility frontier (filled: passes the gate)", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
