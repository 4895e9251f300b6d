"""The words and the picture of a what-if run: the summary, the markdown report and the
privacy-utility frontier plot."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia._columns import PERSON
from tabmia.whatif._display import FrontierDisplay
from tabmia.whatif.frontier import SELECTION_CAVEAT, best_variant

__all__ = ["markdown_report", "plot_frontier", "summary_text", "units_sentence"]


def _num(x: Any, digits: int = 3) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if not np.isfinite(v) else f"{v:.{digits}f}"


def _signed(x: Any) -> str:
    v = float(x)
    return "n/a" if not np.isfinite(v) else f"{v:+.3f}"


def _units(result: Any) -> dict[str, Any]:
    """What a risk counts, per seed of the original's audit: members and non-member
    candidates, as records, and as persons where the run has person ids."""
    run = result.runs_of("original")[0]
    s = run.scores[run.scores["attack"] == run.scores["attack"].iloc[0]]
    member = s["member"].astype(bool).to_numpy()
    out: dict[str, Any] = {
        "members": int(member.sum()),
        "nonmembers": int((~member).sum()),
        "persons": PERSON in s and s[PERSON].notna().any(),
    }
    if out["persons"]:
        out["member_persons"] = int(s.loc[member, PERSON].nunique())
        out["nonmember_persons"] = int(s.loc[~member, PERSON].nunique())
    return out


def units_sentence(result: Any) -> str:
    """The unit every TPR and FPR of the run counts, and how many (per seed)."""
    u = _units(result)
    n_rep = len({r.repeat for r in result.runs})
    per = " per seed" if n_rep > 1 else ""
    text = (
        f"Unit: records. Every TPR counts member records ({u['members']}{per}), every FPR "
        f"non-member candidate records ({u['nonmembers']}{per})"
    )
    if u["persons"]:
        text += (
            f", of {u['member_persons']} member and {u['nonmember_persons']} non-member "
            f"persons{per}; the person-level risk (a person flagged when the person rule "
            "flags their records, its threshold calibrated on public persons) is in the "
            "columns person TPR / person FPR"
        )
    return text + "."


def _post_processing_sentence(t: pd.DataFrame, result: Any) -> str | None:
    """The original's risk stated at a hardening's, in words; None when its own is larger."""
    from tabmia.whatif.frontier import post_processing

    o = t[t["kind"] == "original"].iloc[0]
    if o["risk_variant"] == o["variant"]:
        return None
    h = t.set_index("variant").loc[o["risk_variant"]]
    return (
        f"Post-processing is an attack on the original: an attacker who "
        f"{post_processing(result.variant(o['risk_variant']))} himself singles out "
        f"{int(round(h['tpr'] * h['n_members']))} of {int(h['n_members'])} member records, TPR "
        f"{_num(h['tpr'])} [{_num(h['tpr_low'])}, {_num(h['tpr_high'])}] ({h['attack']} as "
        f"measured on {o['risk_variant']}, its threshold delivering FPR {_num(h['fpr'])} for "
        f"{_num(h['fpr_target'])} promised), against {_num(o['tpr'])} [{_num(o['tpr_low'])}, "
        f"{_num(o['tpr_high'])}] ({o['attack']}, FPR {_num(o['fpr'])}) on the original's "
        "outputs as they are. The original's risk is at least that: the frontier places it "
        "there"
        + (", above the gate." if o["gate"] == "above" and o["gate_own"] != "above" else ".")
    )


def summary_text(result: Any, table: pd.DataFrame | None = None) -> str:
    """What the run shows, in words: the unit, what passes, the best variant with its
    costs and intervals (none where the original passes), the original's risk under
    post-processing, the selection caveat, the DP claims and the notes."""
    t = result.frontier() if table is None else table
    s = result.settings
    metric, limit = s["utility_metric"], s["limit"]
    pct = f"{100 * float(s['confidence']):g}%"
    n_rep = len({r.repeat for r in result.runs})
    lines = [
        f"{len(t)} variants audited with the same attacks on the same public records and "
        f"candidates ({n_rep} seed{'s' if n_rep > 1 else ''}); utility ({metric}) on "
        "held-out records no attack scored.",
        units_sentence(result),
    ]
    post = _post_processing_sentence(t, result)
    if post:
        lines.append(post)
    passing = t.loc[t["passes"], "variant"].tolist()
    lines.append(f"Pass the gate {limit}: " + (", ".join(passing) if passing else "none") + ".")
    best = best_variant(t)
    orig = t.iloc[0]
    if best is None:
        lines.append("No variant passes: none of these fixes shows the risk under the limit.")
    elif best == "original":
        lines.append(
            "The original already passes: no fix is needed at this limit, so no variant is "
            "named best (the original is a candidate too)."
        )
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
            f"(paired over {int(b['n_paired'])} member records)."
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
    persons = bool((t["n_member_persons"] > 0).any()) if "n_member_persons" in t else False
    head = (
        "| variant | kind | strongest attack | TPR, records [CI] | FPR delivered (promised) | "
        "risk stated [CI] (measured on) | "
        + ("TPR, persons [CI] | FPR, persons | " if persons else "")
        + f"ΔTPR [CI] | {metric} | Δ{metric} [CI] | gate | front | ε (one-run lower bound, claim) |"
    )
    out += [head, "|" + "---|" * (head.count("|") - 1)]
    for _, r in t.iterrows():
        eps = (
            f"{r['epsilon']:g} ({_num(r['dp_epsilon_lower'])}, {r['dp_claim']})"
            if r["epsilon"] is not None and np.isfinite(float(r["epsilon"]))
            else ""
        )
        stated = f"{_num(r['risk'])} [{_num(r['risk_low'])}, {_num(r['risk_high'])}]" + (
            f" ({r['risk_variant']}, {r['risk_attack']}, FPR {_num(r['risk_fpr'])})"
            if r["risk_variant"] != r["variant"]
            else ""
        )
        person = (
            f"{_num(r['person_tpr'])} [{_num(r['person_tpr_low'])}, {_num(r['person_tpr_high'])}] | "
            f"{_num(r['person_fpr'])} | "
            if persons
            else ""
        )
        out.append(
            f"| {r['variant']} | {r['kind']} | {r['attack']} | {_num(r['tpr'])} "
            f"[{_num(r['tpr_low'])}, {_num(r['tpr_high'])}] | {_num(r['fpr'])} ({_num(r['fpr_target'])}) | "
            f"{stated} | {person}"
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
    out += [
        "",
        "FPR delivered by each attack's own threshold on the non-member candidate records:",
        "",
    ]
    out += [
        "| variant | attack | promised | delivered [CI] | flagged / non-member records |",
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


def plot_frontier(result: Any, *, path: Any = None, ax: Any = None) -> Any:
    """The privacy-utility frontier of a what-if run (:class:`FrontierDisplay`'s figure),
    saved to ``path`` (PNG) where given.

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
    fig = FrontierDisplay.from_result(result, ax=ax).figure_
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
