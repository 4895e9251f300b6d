"""report.html's sections beside the attacks' tables: whom an attacker could name, the
training set rebuilt from the model file, and person risk."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from tabmia.report._page import table_html


def _named_html(lines: list[str], lists: pd.DataFrame, names: pd.DataFrame) -> str:
    """Whom an attacker could name (:mod:`tabmia.named`), as HTML."""
    esc = html.escape
    out = (
        "<h2>Whom an attacker could name</h2><ul>"
        + "".join(f"<li>{esc(line)}</li>" for line in lines)
        + "</ul><p class='note'>Each candidate's conformal p-value against the attacker's "
        "public records (the null its threshold is chosen from), Benjamini-Hochberg at "
        "the false-discovery rate; across attacks the Bonferroni-adjusted smallest "
        "p-value. The audit knows who the members are: the realised false-discovery "
        "proportion (non-members named / named) is shown with its interval. It is the "
        "attacker's list, not a list of everyone at risk.</p>"
    )
    if len(lists):
        out += "<div class='wide'>" + table_html(lists, css_class="fit") + "</div>"
    if len(names):
        out += (
            f"<h3>Named (first {len(names)})</h3><p class='note'>Row index in the data "
            "(or person id), whether the model trained on it, its p-value. Contents are "
            "masked.</p><div class='wide'>" + table_html(names, css_class="fit") + "</div>"
        )
    return out


def _reconstruction_section(found: dict[str, Any]) -> str:
    """The training set rebuilt from the model's file: the sentence and its numbers."""
    esc = html.escape
    rows = {
        "model": found["model"] + (" (bagged)" if found["bootstrap"] else ""),
        "trees": found["n_trees"],
        "training records the file counts": found["n_records"],
        "solver status": found["status"],
        "seconds": f"{found['seconds']:.1f} (limit {found['time_limit']:g})",
    }
    if found.get("n_exact") is not None:
        rows["records recovered exactly"] = f"{found['n_exact']} of {found['n_true']}"
        rows["labels right"] = f"{found['label_accuracy']:.3f}"
    table = pd.DataFrame({"": list(rows), "value": [str(v) for v in rows.values()]})
    return (
        f"<h2>Reconstruction from the model file</h2><p>{esc(found['sentence'])}</p>"
        + table_html(table, css_class="fit")
        + "<p class='note'>The training set rebuilt with a constraint solver from the trees' "
        "splits and the per-node training counts the file stores (Ferry et al., ICML 2024), "
        "at the resolution of the model's thresholds, and paired one to one with the "
        "--train records. A reconstruction not found within the time limit proves "
        "nothing.</p>"
    )


def _person_section(risk: pd.DataFrame, exposed: pd.DataFrame, context: dict[str, Any]) -> str:
    """The distribution of person risk and the most exposed persons, as HTML."""
    noun = str(context.get("persons", "persons"))
    shares = risk.assign(
        who=np.where(risk["member"].astype(bool), f"member {noun}", f"non-member {noun}"),
        cell=[
            f"{s:.3f} ({a}/{n})"
            for s, a, n in zip(risk["share"], risk["n_at_level"], risk["n_persons"])
        ],
        level=[f"p ≤ {p:g}" for p in risk["p_at_most"]],
    ).pivot_table(index=["attack", "who"], columns="level", values="cell", aggfunc="first")
    shown = exposed.drop(columns=[c for c in ("repeat",) if c in exposed]).copy()
    for c in ("score", "p_value"):
        if c in shown:
            shown[c] = shown[c].map(lambda v: f"{v:.4g}")
    return (
        f"<h2>Person risk: how many {html.escape(noun)} stand out</h2><p class='note'>Each "
        f"person's p-value under the hypothesis that it is no member, calibrated on the "
        f"attacker's public {html.escape(noun)} with as many records; a non-member reaches p ≤ a "
        f"level at most that often. Cells: share of {html.escape(noun)} at or below the level "
        "(count / all), pooled over seeds.</p>"
        + table_html(shares.reset_index(), css_class="fit")
        + f"<h2>Most exposed {html.escape(noun)}</h2><p class='note'>The {html.escape(noun)} "
        "each attack scores highest, with their number of records and whether the model "
        f"trained on them. {html.escape(noun).capitalize()} whose scores tie share a rank, and "
        "'tied' says how many share the score: the attack does not tell them apart (they are "
        "listed fewest records first, then by id).</p><div class='wide'>"
        + table_html(shown, css_class="fit")
        + "</div>"
    )
