"""The words and the picture of a what-if run: the summary, the markdown report and the
privacy-utility frontier plot."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia.whatif.frontier import SELECTION_CAVEAT, best_variant

__all__ = ["markdown_report", "plot_frontier", "summary_text"]


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
    if "named" in t and t["named"].notna().any():
        out += [
            "",
            "Members an attacker with the public data could name at FDR 10 % "
            "(tabmia.named; of them non-members):",
            "",
        ]
        out += ["| variant | named | of them non-members |", "|---|---|---|"]
        out += [
            f"| {r['variant']} | {'' if pd.isna(r['named']) else int(r['named'])} | "
            f"{'' if pd.isna(r['named_wrong']) else int(r['named_wrong'])} |"
            for _, r in t.iterrows()
        ]
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
