"""report.html's section on a differential privacy claim: the claim checked per attack,
then each attack's PPV against the largest the claim allows."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from tabmia.claims import membership_claim_check
from tabmia.metrics import (
    dp_consistency,
    dp_ppv_bound,
    empirical_epsilon,
    ppv,
    ppv_interval,
    ppv_resolved,
)
from tabmia.report._page import table_html
from tabmia.report.verdict import own_threshold_summary


def _interval(v: float, lo: float, hi: float, digits: int = 3) -> str:
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _verdict_class(text: str) -> str:
    return {"yes": "yes", "no": "no"}.get(str(text).split(":")[0], "unresolved")


#: The DP table's decisive column (first after the attack, so no layout can hide it).
DP_VERDICT_COLUMN = "consistent with the claim?"


def _claim_cell(claim: Any, rates: dict[str, Any], n_neg: int, blind: bool = False) -> str:
    """The DP table's decisive cell: yes, no, or cannot tell and what would tell (an
    attack that flags nobody because its scores tie shows nothing: never "yes")."""
    if claim.state == "refuted":
        return "no: the claim cannot hold"
    if claim.state == "consistent" and blind:
        return "cannot tell: its scores tie where its threshold falls (it flags nobody)"
    if claim.state == "consistent":
        return "yes"
    if rates["verdict"] == "not resolved":
        return f"cannot tell: not resolved by {n_neg} non-members"
    if claim.needed is None:
        return "cannot tell: no game of feasible size can refute it"
    return f"cannot tell: a game this small cannot refute it (needs ≥ {claim.needed} {claim.unit})"


def _dp_section(
    metrics: pd.DataFrame,
    epsilon: float,
    delta: float,
    gammas: tuple[float, ...],
    persons: tuple[Any, str] | None = None,
    blind: frozenset[str] = frozenset(),
) -> str:
    """Two tables that fit the page: the DP check per attack, then PPV against its bound.

    For a person-level audit (``persons``: its :class:`~tabmia.report.dp_claim.ClaimAnswer`
    and what its persons are called), the claim, about records, is checked on the
    record-level rates (``metrics`` are the records' where the answer has them), with the
    persons' reading of it through group privacy above the table; without record-level
    rates the persons' are checked against the group claim of the largest person."""
    claim, title = "", f"(ε = {epsilon:g}, δ = {delta:g})"
    if persons is not None:
        answer, noun = persons
        said = html.escape(answer.lines(noun)[-1])
        if answer.records is None:
            p = answer.persons
            if p["promises_nothing"]:
                return (
                    f"<h2>Against a differential privacy claim {title}</h2><p class='note'>"
                    f"The audit's unit is the person. {said} A person-level DP claim (each "
                    "person's contribution bounded) can be checked.</p>"
                )
            epsilon, delta = p["epsilon"], p["delta"]
            claim = f"<p class='note'>The audit's unit is the person: {said}</p>"
        else:
            claim = (
                "<p class='note'>The audit's unit is the person, but a DP claim is about "
                f"records: the table checks the record-level rates of the same audit. {said}</p>"
            )
    summary = own_threshold_summary(metrics)
    n_seeds = int(summary["n_seeds"].max())
    checks, ppvs = [], []
    for name, r in summary.iterrows():
        tp, n_pos, fp, n_neg = (int(r[k]) for k in ("tp", "n_members", "fp", "n_nonmembers"))
        check = dp_consistency(tp, n_pos, fp, n_neg, epsilon, delta)
        eps = empirical_epsilon(tp, n_pos, fp, n_neg, delta=delta)
        checks.append(
            {
                "attack": name,
                DP_VERDICT_COLUMN: _claim_cell(
                    membership_claim_check(tp, n_pos, fp, n_neg, epsilon, delta),
                    check,
                    n_neg,
                    blind=name in blind,
                ),
                "members flagged: TPR [95%]": f"{tp}/{n_pos}: "
                + _interval(r["tpr"], r["tpr_low"], r["tpr_high"], 4),
                "non-members flagged: FPR [95%]": f"{fp}/{n_neg}: "
                + _interval(r["fpr"], r["fpr_low"], r["fpr_high"], 4),
                "largest TPR the claim allows, at the measured FPR / at its upper bound": f"{check['tpr_bound']:.4f} / {check['tpr_bound_at_fpr_high']:.4f}",
                "ε lower bound (95%)": f"{eps['epsilon_lower']:.2f}",
            }
        )
        row = {"attack": name}
        for g in gammas:
            lo, hi = ppv_interval(tp, n_pos, fp, n_neg, g)
            text = _interval(ppv(r["tpr"], r["fpr"], g), lo, hi)
            if tp + fp == 0:
                text = "nothing flagged"
            elif not ppv_resolved(fp, lo, hi):
                text += f" not resolved by {n_neg} non-members"
            row[f"PPV γ={g:g} measured"] = text
            row[f"PPV γ={g:g} bound"] = (
                f"{dp_ppv_bound(max(r['fpr'], 1e-12), epsilon, delta, g):.3f}"
            )
        ppvs.append(row)
    pooled = f" Counts pooled over {n_seeds} seeds." if n_seeds > 1 else ""
    return (
        f"<h2>Against a differential privacy claim {title}</h2>"
        + claim
        + "<p class='note'>(ε, δ)-DP training allows at most TPR ≤ e<sup>ε</sup>·FPR + δ (and "
        "1 − FPR ≤ e<sup>ε</sup>(1 − TPR) + δ) for any attack: the trade-off bounds of "
        "Jayaraman et al. (PETS 2021), Thm 4.1/4.2, at each attack's own threshold. "
        "<b>no</b>: even the TPR's 95% lower bound is above the bound at the FPR's 95% upper "
        "bound, so the claim cannot hold; <b>cannot tell</b>: either the measured TPR is above "
        "the bound at the measured FPR, but within what the number of non-members can tell "
        "apart, or the game is too small for any attack to refute the claim (even one "
        "flagging every member and no non-member), with the members and non-members that "
        "could; <b>yes</b>: the measured rates are within the bound, in a game that could "
        f"have refuted it.{pooled}</p>"
        + table_html(
            pd.DataFrame(checks), css_class="fit", cell_class={DP_VERDICT_COLUMN: _verdict_class}
        )
        + "<h3>PPV against the largest PPV the claim allows (Thm 4.2, at the measured FPR)</h3>"
        + table_html(pd.DataFrame(ppvs), css_class="fit")
    )
