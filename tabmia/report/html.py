"""One self-contained HTML audit report (plots embedded as base64 PNG).

The page's pieces are public for the other reports made of them (``tabmia
benchmark``'s ``report.html``): :func:`page_head` (the document head, the style sheet
and the title), :func:`table_html` and :func:`png_img`.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

import numpy as np
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
from tabmia.report.dp_claim import blind_attacks, claim_answer
from tabmia.report.plots import plot_roc, plot_score_histograms
from tabmia.report.state import CANNOT_TELL, SHOWN, verdict_state
from tabmia.report.tables import format_scores, results_table
from tabmia.report.verdict import finding_role, own_threshold_summary, verdict_lines

__all__ = ["riskiest_records", "write_html_report", "page_head", "table_html", "png_img"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;
color:#1d232a;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin:1.2em 0 .3em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}th,td{border:1px solid #d0d7de;padding:3px 6px;
text-align:right}th{background:#f3f5f7;font-weight:600}td:first-child,th:first-child{text-align:left}
.note{color:#57606a;font-size:.9em}.figs{display:flex;flex-wrap:wrap;gap:1em}.figs img{max-width:100%;box-sizing:border-box;
border:1px solid #eee}.masked{color:#8c959f;letter-spacing:.1em}.key{display:inline-block;
background:#f3f5f7;border-radius:4px;padding:2px 8px;margin:2px 6px 2px 0}
.verdict{background:#f6f8fa;border-left:4px solid #0969da;padding:.2em 1em .6em;margin-top:1em}
.verdict h2{border:none;margin-top:.6em}.verdict li{margin:.3em 0}.risk{font-size:1.08em;font-weight:600}
.gate{border-left-color:#8250df}
.state{display:inline-block;font-weight:700;text-transform:uppercase;letter-spacing:.04em;
padding:2px 10px;border-radius:4px;margin:.6em 0 .2em;color:#fff;background:#1a7f37}
.state.shown{background:#cf222e}.state.cannot{background:#9a6700}
.verdict.cannot{border-left-color:#9a6700}.verdict.shown{border-left-color:#cf222e}
.finding{background:#fff8c5;border:1px solid #d4a72c;border-radius:4px;padding:.4em .8em;
margin:.5em 0}.finding.blocks{background:#ffebe9;border-color:#cf222e}
.finding.accepted{background:#f6f8fa;border-color:#8c959f}.finding b{font-family:monospace}
.fit th{font-size:.95em}
td.yes{background:#dafbe1;font-weight:600}td.no{background:#ffebe9;font-weight:600}
td.unresolved{background:#fff8c5;font-weight:600}
td.detail{text-align:left;color:#57606a;font-size:.9em;border-top:none}
.wide{overflow-x:auto}footer{margin-top:2em}code{font-size:.85em;word-break:break-all}
@page{size:A4;margin:12mm}
@media print{body{max-width:none;margin:0;padding:0;font-size:10pt}.wide{overflow:visible}
.wide th,.wide td{overflow-wrap:anywhere}.wide td:first-child{overflow-wrap:normal}
table{font-size:7pt;width:100%}th,td{padding:2px 3px}
.figs{display:block}.figs img{max-width:100%;break-inside:avoid}h2,h3{break-after:avoid}
tr,.verdict{break-inside:avoid}}
"""


def page_head(title: str) -> str:
    """The start of a report page: its head with the style sheet, and ``title`` as its
    first heading."""
    title = html.escape(title)
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}"
        f"</title><style>{_CSS}</style></head><body><h1>{title}</h1>"
    )


def png_img(png: bytes, alt: str) -> str:
    """An ``<img>`` holding the PNG image ``png`` (base64, so the page stands alone)."""
    data = base64.b64encode(png).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>"


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def table_html(
    df: pd.DataFrame,
    *,
    css_class: str = "",
    cell_class: dict[str, Any] | None = None,
    details: Any = None,
) -> str:
    """A table of strings; ``cell_class`` maps a column to a function giving each of its
    cells a CSS class (e.g. the DP verdict's colour); ``details`` (one string per row)
    follow their row as a full-width row, so long text widens no column."""
    cell_class = cell_class or {}
    details = [None] * len(df) if details is None else list(details)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for row, detail in zip(df.itertuples(index=False), details):
        cells = []
        for col, v in zip(df.columns, row):
            cls = cell_class[col](v) if col in cell_class else ""
            cells.append(f"<td class='{cls}'>" if cls else "<td>")
            cells.append(f"{html.escape(str(v))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
        if detail is not None:
            rows.append(
                f"<tr><td class='detail' colspan='{len(df.columns)}'>"
                f"{html.escape(str(detail))}</td></tr>"
            )
    table_class = f" class='{css_class}'" if css_class else ""
    return (
        f"<table{table_class}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def riskiest_records(scores: pd.DataFrame, *, top_k: int = 20, repeat: int = 0) -> pd.DataFrame:
    """Training records ranked by the strongest evidence of membership across attacks.

    For each attack, a member's score is turned into its empirical tail probability
    among that attack's non-member candidate scores (the fraction of non-members
    scoring at least as high; small = stands out). Records are ranked by their
    smallest tail probability over attacks; ties (many records share the smallest
    possible tail, ``1 / (n_nonmembers + 1)``) by the number of attacks that flag the
    record at their own threshold (more first), then by the mean tail probability.

    Returns
    -------
    DataFrame
        ``record``, ``tail_probability`` (smallest over attacks), ``strongest_attack``
        (an attack reaching it, one that flags the record where there is one),
        ``n_flagged`` and ``flagged_by`` (the attacks whose own threshold flags the
        record, ``"none"`` if none does), ``mean_tail_probability`` and one score column
        per attack, ``top_k`` rows.
    """
    data = scores[scores["repeat"] == repeat]
    tails, flagged, score_cols = {}, {}, {}
    for name, g in data.groupby("attack", sort=False):
        neg = np.sort(g.loc[~g["member"], "score"].to_numpy(float))
        mem = g[g["member"]]
        s = mem["score"].to_numpy(float)
        tail = (neg.size - np.searchsorted(neg, s, side="left") + 1) / (neg.size + 1)
        tails[name] = pd.Series(tail, index=mem["record"].to_numpy())
        flagged[name] = pd.Series(mem["flagged"].to_numpy(bool), index=mem["record"].to_numpy())
        score_cols[name] = pd.Series(s, index=mem["record"].to_numpy())
    tail_df = pd.DataFrame(tails)
    flag_df = pd.DataFrame(flagged).reindex(tail_df.index).fillna(False).astype(bool)
    names = np.asarray(tail_df.columns, dtype=object)
    flags = flag_df.to_numpy()
    # tails differ by at least 1 / (n + 1): the nudge only breaks ties towards a flagging attack
    strongest = np.nanargmin(tail_df.to_numpy() - flags * 1e-9, axis=1)
    out = pd.DataFrame(
        {
            "record": tail_df.index,
            "tail_probability": tail_df.min(axis=1).to_numpy(),
            "strongest_attack": names[strongest],
            "n_flagged": flags.sum(axis=1),
            "flagged_by": [", ".join(names[row]) or "none" for row in flags],
            "mean_tail_probability": tail_df.mean(axis=1).to_numpy(),
        }
    )
    for name, col in score_cols.items():
        out[f"score: {name}"] = col.reindex(tail_df.index).to_numpy()
    out = out.sort_values(
        ["tail_probability", "n_flagged", "mean_tail_probability", "record"],
        ascending=[True, False, True, True],
        kind="stable",
    )
    return out.head(top_k).reset_index(drop=True)


def _format_scores(shown: pd.DataFrame, thresholds: dict[str, float]) -> dict[str, str]:
    """Print each ``score: <attack>`` column of ``shown`` in place so that every printed
    score is on the same side of the printed threshold as the score itself
    (:func:`~tabmia.report.tables.format_scores`); returns new column names that carry
    the threshold, rounded.

    A threshold set just above a score (a float's width above 1 or 0:
    1.0000000000000002, 4.9e-324) reads as "flagged > 1" where no shown score lies
    between the rounded value and the threshold; others keep the digits that separate
    the shown scores (at least 4 significant)."""
    names = {}
    for col in [c for c in shown.columns if c.startswith("score: ")]:
        name = col[len("score: ") :]
        t = thresholds.get(name)
        t = float(t) if t is not None and np.isfinite(t) else np.nan
        values = shown[col].to_numpy(float)
        shown[col], printed = format_scores(values, t)
        if not np.isfinite(t):
            names[col] = f"{name} score"
            continue
        names[col] = f"{name} (flagged ≥ {printed})"
        digits = len(printed.lstrip("-").replace(".", "").split("e")[0].lstrip("0"))
        if digits <= 6 and (abs(t) >= 1e-12 or t == 0):
            continue  # short, and not a float's width off zero
        rounded = 0.0 if abs(t) < 1e-12 else float(f"{t:.4g}")
        if rounded < t and not ((values > rounded) & (values < t)).any():
            # flagged <=> score > rounded on every shown row: print against that rule
            shown[col] = format_scores(values, float(np.nextafter(rounded, np.inf)))[0]
            names[col] = f"{name} (flagged > {rounded:g})"
    return names


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


def write_html_report(
    result: Any,
    path: str | Path,
    *,
    title: str = "Membership inference audit",
    context: dict[str, Any] | None = None,
    epsilon: float | None = None,
    delta: float = 1e-5,
    fprs: tuple[float, ...] = (0.01, 0.001),
    gammas: tuple[float, ...] = (1.0, 10.0, 100.0),
    top_k: int = 20,
    records: pd.DataFrame | None = None,
    show_records: bool = False,
    command: str | None = None,
    version: str | None = None,
    date: str | None = None,
    gate: list[str] | None = None,
    accept_warnings: Any = (),
    person_tables: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    slice_section: tuple[list[str], pd.DataFrame, Any] | None = None,
    records_result: Any = None,
    reconstruction: dict[str, Any] | None = None,
    structure_section: tuple[list[str], pd.DataFrame] | None = None,
    named_section: tuple[list[str], pd.DataFrame, pd.DataFrame] | None = None,
) -> Path:
    """Write the audit as one HTML file with embedded plots.

    The page opens with a verdict in plain language (:func:`tabmia.report.verdict.verdict_lines`):
    what was attacked, how many training records the strongest attack singles out at its
    own threshold, with intervals, and what PPV and the ε bound mean. It ends with the
    tabmia version, the command line and the date.

    Parameters
    ----------
    result : ExperimentResult
        From :class:`tabmia.experiment.MembershipExperiment` or :func:`tabmia.audit.audit_model`.
    path : str or Path
        Output file.
    context : dict, default=None
        Key facts shown at the top (data, model, sizes).
    epsilon, delta : float
        A DP guarantee to compare the measured attacks against.
    top_k : int, default=20
        Number of riskiest training records listed.
    records : DataFrame, default=None
        The training records by row position; their contents are shown only with
        ``show_records=True`` (masked otherwise).
    command, version, date : str, default=None
        Shown in the footer; ``version`` defaults to tabmia's, ``date`` to now (UTC).
    gate : list of str, default=None
        The privacy gate's lines (:meth:`tabmia.gate.GateResult.lines`), shown after the
        verdict.
    accept_warnings : iterable of str, default=()
        Findings the user overrides by name (:func:`tabmia.report.state.verdict_state`).
    person_tables : (DataFrame, DataFrame), default=None
        For a person-level ``result`` (``unit == "person"``): the distribution of person
        risk and the most exposed persons (:func:`tabmia.persons.person_risk`,
        :func:`tabmia.persons.most_exposed`), shown in place of the riskiest records.
    slice_section : (list of str, DataFrame, Figure), default=None
        Which groups leak more (:func:`tabmia.slices.slice_report`): the disparity test's
        sentences, the per-slice table and its figure, shown after the attacks' tables.
    records_result : ExperimentResult, default=None
        For a person-level ``result``: the record-level audit it was made from, whose
        rates a DP claim (about records) is judged from.
    reconstruction : dict, default=None
        The training set rebuilt from the model file
        (:meth:`tabmia.reconstruction.ReconstructionResult.to_dict`), shown after the
        attacks' tables.
    structure_section : (list of str, DataFrame), default=None
        A tree model file's structural findings
        (:class:`tabmia.structure.StructureFindings`): their sentences and table, shown
        as the report's Structure section.
    named_section : (list of str, DataFrame, DataFrame), default=None
        Whom an attacker could name at a false-discovery rate (:mod:`tabmia.named`): its
        sentences, one row per list and the first names of the headline list (contents
        masked), shown in place of the riskiest records.

    The verdict box opens with the audit's state (risk shown, risk not shown, cannot
    tell) and holds every plausibility finding, each marked as what it does: makes the
    verdict cannot-tell, was accepted by the user, or notes what the attacks see.
    """
    import datetime

    import tabmia

    path = Path(path)
    if "tp" in result.metrics:  # every ε in the page is for the δ given here
        result = result.with_delta(delta)
    metrics = result.metrics
    n_seeds = int(metrics["repeat"].nunique())
    seed0 = metrics.loc[metrics["repeat"] == 0, "seed"].iloc[0] if "seed" in metrics else None
    shown_seed = (
        f"seed 0 of {n_seeds}" + (f" (random seed {seed0})" if seed0 is not None else "")
        if n_seeds > 1
        else ""
    )
    version = version or tabmia.__version__
    date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    esc = html.escape
    table = results_table(metrics, fprs=fprs, gammas=gammas)
    parts = [page_head(title), f"<p class='note'>tabmia {esc(version)} · {esc(date)}</p>"]
    if context:
        parts.append(
            "<p>"
            + "".join(
                f"<span class='key'><b>{esc(str(k))}</b>: {esc(str(v))}</span>"
                for k, v in context.items()
            )
            + "</p>"
        )
    state = verdict_state(result, accept_warnings=accept_warnings)
    lines = verdict_lines(
        result,
        context=context,
        gammas=gammas,
        epsilon=epsilon,
        delta=delta,
        state=state,
        with_findings=False,
        records=records_result,
    )
    look = {SHOWN: "shown", CANNOT_TELL: "cannot"}.get(state.state, "")
    findings = "".join(
        f"<div class='finding {'blocks' if f.check in state.blocking else ''}"
        f"{'accepted' if f.check in state.accepted else ''}'><b>{esc(f.check)}</b> "
        f"({esc(finding_role(f, state))}): {esc(f.message)}.</div>"
        for f in state.findings
    )
    parts.append(
        f"<section class='verdict {look}'><h2>Verdict</h2>"
        f"<p class='state {look}'>{esc(state.state)}</p>"
        f"<p class='risk'>{esc(lines[0])}</p>{findings}<ul>"
        + "".join(f"<li>{esc(line)}</li>" for line in lines[1:])
        + "</ul></section>"
    )
    if gate:
        parts.append(
            "<section class='verdict gate'><h2>Privacy gate</h2><ul>"
            + "".join(f"<li>{esc(line)}</li>" for line in gate)
            + "</ul></section>"
        )
    spread = (
        "value [95% interval] (bootstrap for AUC, Clopper-Pearson for rates, both rates' "
        "Clopper-Pearson bounds propagated for PPV)"
        if n_seeds == 1
        else f"mean ± std over {n_seeds} seeds; flagged counts per seed"
    )
    oracle = ["attack", "AUC"] + [c for c in table.columns if "oracle" in c] + ["seconds"]
    achieved = [c for c in table.columns if c not in oracle[1:]]
    parts.append(
        "<h2>What each attack achieves at its own threshold</h2>"
        + table_html(table[achieved], css_class="fit")
        + "<h2>ROC curve: AUC and TPR at an oracle threshold</h2>"
        + table_html(table[oracle], css_class="fit")
        + (
            f"<p class='note'>Cells: {spread}. <b>Own threshold</b>: the records each attack flags "
            "at the threshold it chose from its public data, without the candidates' membership — "
            "what an attacker achieves. PPV, advantage and ε are of those decisions; a PPV whose "
            "interval the non-members cannot narrow (none flagged, or wider than 0.5) is marked "
            "not resolved. <b>TPR@FPR (oracle threshold)</b>: points of the ROC curve, whose "
            "thresholds are set with the membership labels — a reference for what a perfectly "
            "calibrated attacker could reach, not an attack's result; not resolved below "
            "1/(number of non-members).</p>"
        )
    )
    fig_seed = f" — {shown_seed}" if shown_seed else ""
    thresholds = (
        dict(
            zip(
                metrics.loc[metrics["repeat"] == 0, "attack"],
                metrics.loc[metrics["repeat"] == 0, "threshold"],
            )
        )
        if "threshold" in metrics
        else None
    )
    roc = plot_roc(result.scores, title=f"ROC (log-log){fig_seed}")
    hist = plot_score_histograms(result.scores, thresholds=thresholds, title=shown_seed or None)
    parts.append(
        f"<h2>ROC curves (log-log) and score distributions{esc(fig_seed)}</h2><div class='figs'>"
    )
    parts.append(png_img(_png(roc), "ROC curves"))
    parts.append(png_img(_png(hist), "Score histograms") + "</div>")
    parts.append(
        "<p class='note'>Histograms: each attack's scores of members and non-members "
        "(density); the dashed line is the attack's own threshold (records on it or to "
        "its right are flagged). Each panel uses the first scale, named on its x-axis, "
        "on which both groups spread over the bins: the scores themselves, an asinh "
        "scale (linear near zero, logarithmic in the tails) for scores spanning orders "
        "of magnitude, or the scores' rank among all candidates.</p>"
    )
    if slice_section is not None:
        lines_s, table_s, figure_s = slice_section
        units = (  # a person-level audit's slices count persons
            str((context or {}).get("persons", "persons"))
            if getattr(result, "unit", "record") == "person"
            else "records"
        )
        parts.append(
            "<h2>Which groups leak more (slices)</h2><ul>"
            + "".join(f"<li>{esc(line)}</li>" for line in lines_s)
            + "</ul><div class='wide'>"
            + table_html(table_s, css_class="fit")
            + "</div>"
            + png_img(_png(figure_s), "Per-slice TPR and delivered FPR")
            + "<p class='note'>Each slice as the attack was fitted (its threshold set from "
            f"all public {units}): members flagged and the FPR delivered to the slice's "
            "non-members; then the TPR at a threshold calibrated on the slice's own public "
            f"{units} to the attack's FPR ('not resolvable' where the slice has too few, or "
            "where the attack's scores tie at its top so that the threshold flags nobody). A "
            "group is named more exposed only when the disparity test, corrected for the "
            "number of slices, says so at equal FPR and the simultaneous interval of its "
            "excess lies above 0.</p>"
        )
    if reconstruction is not None:
        parts.append(_reconstruction_section(reconstruction))
    if structure_section is not None:
        lines_t, table_t = structure_section
        parts.append(
            "<h2>Structure: what the model file stores about its training records</h2><ul>"
            + "".join(f"<li>{esc(line)}</li>" for line in lines_t)
            + "</ul>"
            + table_html(table_t, css_class="fit")
            + "<p class='note'>Each training record placed in every tree of the model file: "
            "the count of training records its leaf stores (occupancy). Findings about the "
            "file, not a membership test (the leaf attack, <code>--attacks leaf</code>, is "
            "one); see the user guide's white-box page.</p>"
        )
    if epsilon is not None:
        person_claim, dp_result = None, result
        if getattr(result, "unit", "record") == "person":
            if records_result is not None and "tp" in records_result.metrics:
                records_result = records_result.with_delta(delta)
                dp_result = records_result
            answer = claim_answer(result, epsilon, delta, records=records_result)
            person_claim = (answer, str((context or {}).get("persons", "persons")))
        parts.append(
            _dp_section(
                dp_result.metrics,
                epsilon,
                delta,
                gammas,
                person_claim,
                frozenset(blind_attacks(dp_result)),
            )
        )
    if named_section is not None:
        parts.append(_named_html(*named_section))
    if getattr(result, "unit", "record") == "person" or "record" not in result.scores:
        if person_tables is not None:
            parts.append(_person_section(*person_tables, context or {}))
        return _finish(path, parts, version, date, command)
    if named_section is not None and not (show_records and records is not None):
        # the named list replaces the riskiest records; --show-records keeps their table,
        # the one place the report shows training records' contents
        return _finish(path, parts, version, date, command)
    risky = riskiest_records(result.scores, top_k=top_k)
    # short headers and no count column (the list of flagging attacks shows it): one
    # column per attack must fit the page
    shown = risky.drop(columns="n_flagged").rename(
        columns={
            "tail_probability": "lowest tail p",
            "strongest_attack": "most unusual by",
            "flagged_by": "flagged by (own threshold)",
            "mean_tail_probability": "mean tail p",
        }
    )
    for c in shown.columns:
        if "tail p" in c:
            shown[c] = shown[c].map(lambda v: f"{v:.4g}")
    shown = shown.rename(columns=_format_scores(shown, thresholds or {}))
    details = None
    if records is not None:
        if show_records:
            contents = records.iloc[risky["record"].to_numpy()].astype(str)
            # name=value pairs in a full-width row under each record: they wrap on any
            # page, where a column per feature (30 for breast cancer) cannot fit one
            details = (
                "record contents: "
                + contents.apply(lambda c: f"{c.name}=" + c).agg("; ".join, axis=1)
            ).to_numpy()
        else:
            shown["contents"] = "••• masked"
    parts.append(
        f"<h2>Riskiest training records (top {len(shown)}{esc(fig_seed)})</h2><p class='note'>Row "
        "index in the training data; tail p (tail probability) = share of non-member "
        "candidates an attack scores at least as high (small = the record stands out; it "
        "uses the candidates' membership, so it ranks records rather than measuring an "
        "attack). Ties are broken by the number of attacks whose own threshold flags the "
        "record, then by the mean tail probability. Each attack's column holds its score, "
        "its header the attack's own threshold. Record contents are masked unless the "
        "audit ran with --show-records. With many attacks the table scrolls sideways on a narrow "
        "screen; in print it fits the page.</p><div class='wide'>"
        + table_html(shown, css_class="fit", details=details)
        + "</div>"
    )
    return _finish(path, parts, version, date, command)


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


def _finish(path: Path, parts: list[str], version: str, date: str, command: str | None) -> Path:
    """The footer, and the page written."""
    esc = html.escape
    footer = f"tabmia {esc(version)} · generated {esc(date)}"
    if command:
        footer += f"<br>command: <code>{esc(command)}</code>"
    parts.append(f"<footer class='note'><hr>{footer}</footer></body></html>")
    path.write_text("".join(parts), encoding="utf-8")
    return path


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
