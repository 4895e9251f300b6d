"""One self-contained HTML audit report (plots embedded as base64 PNG).

The page's pieces are public for the other reports made of them (``tabmia
benchmark``'s ``report.html``): :func:`page_head` (the document head, the style sheet
and the title), :func:`table_html` and :func:`png_img` (kept in
:mod:`tabmia.report._page`). The sections beside the attacks' tables are written by
:mod:`tabmia.report._dp_html` (a DP claim), :mod:`tabmia.report._sections` (named
members, reconstruction, persons) and :mod:`tabmia.report._riskiest` (the riskiest
records).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

# DP_VERDICT_COLUMN: the DP table's decisive column, imported from here by its tests
from tabmia.report._dp_html import DP_VERDICT_COLUMN, _dp_section  # noqa: F401
from tabmia.report._page import _png, page_head, png_img, table_html
from tabmia.report._riskiest import riskiest_records, riskiest_records_html
from tabmia.report._sections import _named_html, _person_section, _reconstruction_section
from tabmia.report.dp_claim import blind_attacks, claim_answer
from tabmia.report.plots import AttackRocDisplay, ScoreHistogramDisplay
from tabmia.report.state import CANNOT_TELL, SHOWN, verdict_state
from tabmia.report.tables import results_table
from tabmia.report.verdict import finding_role, verdict_lines

__all__ = ["riskiest_records", "write_html_report", "page_head", "table_html", "png_img"]


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
    parts = [page_head(title), f"<p class='note'>tabmia {esc(version)} · {esc(date)}</p>"]
    if context:
        parts.append(_context_html(context))
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
    parts.append(_verdict_html(state, lines))
    if gate:
        parts.append(_gate_html(gate))
    parts.append(_attack_tables_html(results_table(metrics, fprs=fprs, gammas=gammas), n_seeds))
    fig_seed = f" — {shown_seed}" if shown_seed else ""
    thresholds = _own_thresholds(metrics)
    parts.append(_figures_html(result, thresholds, shown_seed, fig_seed))
    if slice_section is not None:
        parts.append(_slice_html(*slice_section, result, context))
    if reconstruction is not None:
        parts.append(_reconstruction_section(reconstruction))
    if structure_section is not None:
        parts.append(_structure_html(*structure_section))
    if epsilon is not None:
        parts.append(_claim_html(result, epsilon, delta, gammas, context, records_result))
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
    parts.append(
        riskiest_records_html(
            result.scores,
            thresholds or {},
            top_k=top_k,
            records=records,
            show_records=show_records,
            fig_seed=fig_seed,
        )
    )
    return _finish(path, parts, version, date, command)


def _context_html(context: dict[str, Any]) -> str:
    """The key facts at the top of the page (data, model, sizes)."""
    esc = html.escape
    return (
        "<p>"
        + "".join(
            f"<span class='key'><b>{esc(str(k))}</b>: {esc(str(v))}</span>"
            for k, v in context.items()
        )
        + "</p>"
    )


def _gate_html(gate: list[str]) -> str:
    """The privacy gate's lines, after the verdict."""
    return (
        "<section class='verdict gate'><h2>Privacy gate</h2><ul>"
        + "".join(f"<li>{html.escape(line)}</li>" for line in gate)
        + "</ul></section>"
    )


def _verdict_html(state: Any, lines: list[str]) -> str:
    """The verdict box: the audit's state, its first sentence, every plausibility finding
    marked as what it does, then the other sentences."""
    esc = html.escape
    look = {SHOWN: "shown", CANNOT_TELL: "cannot"}.get(state.state, "")
    findings = "".join(
        f"<div class='finding {'blocks' if f.check in state.blocking else ''}"
        f"{'accepted' if f.check in state.accepted else ''}'><b>{esc(f.check)}</b> "
        f"({esc(finding_role(f, state))}): {esc(f.message)}.</div>"
        for f in state.findings
    )
    return (
        f"<section class='verdict {look}'><h2>Verdict</h2>"
        f"<p class='state {look}'>{esc(state.state)}</p>"
        f"<p class='risk'>{esc(lines[0])}</p>{findings}<ul>"
        + "".join(f"<li>{esc(line)}</li>" for line in lines[1:])
        + "</ul></section>"
    )


def _attack_tables_html(table: pd.DataFrame, n_seeds: int) -> str:
    """What each attack achieves at its own threshold, then its ROC curve's points."""
    spread = (
        "value [95% interval] (bootstrap for AUC, Clopper-Pearson for rates, both rates' "
        "Clopper-Pearson bounds propagated for PPV)"
        if n_seeds == 1
        else f"mean ± std over {n_seeds} seeds; flagged counts per seed"
    )
    oracle = ["attack", "AUC"] + [c for c in table.columns if "oracle" in c] + ["seconds"]
    achieved = [c for c in table.columns if c not in oracle[1:]]
    return (
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


def _own_thresholds(metrics: pd.DataFrame) -> dict[str, float] | None:
    """Each attack's own threshold in the first repeat (None where the metrics have none)."""
    if "threshold" not in metrics:
        return None
    first = metrics["repeat"] == 0
    return dict(zip(metrics.loc[first, "attack"], metrics.loc[first, "threshold"]))


def _figures_html(
    result: Any, thresholds: dict[str, float] | None, shown_seed: str, fig_seed: str
) -> str:
    """The ROC curves and the score histograms of the first repeat, with their note."""
    roc = AttackRocDisplay.from_result(result, title=f"ROC (log-log){fig_seed}")
    hist = ScoreHistogramDisplay.from_result(
        result, thresholds=thresholds, title=shown_seed or None
    )
    return (
        f"<h2>ROC curves (log-log) and score distributions{html.escape(fig_seed)}</h2>"
        "<div class='figs'>"
        + png_img(_png(roc.figure_), "ROC curves")
        + png_img(_png(hist.figure_), "Score histograms")
        + "</div>"
        + "<p class='note'>Histograms: each attack's scores of members and non-members "
        "(density); the dashed line is the attack's own threshold (records on it or to "
        "its right are flagged). Each panel uses the first scale, named on its x-axis, "
        "on which both groups spread over the bins: the scores themselves, an asinh "
        "scale (linear near zero, logarithmic in the tails) for scores spanning orders "
        "of magnitude, or the scores' rank among all candidates.</p>"
    )


def _slice_html(
    lines: list[str],
    table: pd.DataFrame,
    figure: Any,
    result: Any,
    context: dict[str, Any] | None,
) -> str:
    """Which groups leak more: the disparity test's sentences, the table, the figure."""
    esc = html.escape
    units = (  # a person-level audit's slices count persons
        str((context or {}).get("persons", "persons"))
        if getattr(result, "unit", "record") == "person"
        else "records"
    )
    return (
        "<h2>Which groups leak more (slices)</h2><ul>"
        + "".join(f"<li>{esc(line)}</li>" for line in lines)
        + "</ul><div class='wide'>"
        + table_html(table, css_class="fit")
        + "</div>"
        + png_img(_png(figure), "Per-slice TPR and delivered FPR")
        + "<p class='note'>Each slice as the attack was fitted (its threshold set from "
        f"all public {units}): members flagged and the FPR delivered to the slice's "
        "non-members; then the TPR at a threshold calibrated on the slice's own public "
        f"{units} to the attack's FPR ('not resolvable' where the slice has too few, or "
        "where the attack's scores tie at its top so that the threshold flags nobody). A "
        "group is named more exposed only when the disparity test, corrected for the "
        "number of slices, says so at equal FPR and the simultaneous interval of its "
        "excess lies above 0.</p>"
    )


def _structure_html(lines: list[str], table: pd.DataFrame) -> str:
    """A tree model file's structural findings: their sentences and table."""
    return (
        "<h2>Structure: what the model file stores about its training records</h2><ul>"
        + "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        + "</ul>"
        + table_html(table, css_class="fit")
        + "<p class='note'>Each training record placed in every tree of the model file: "
        "the count of training records its leaf stores (occupancy). Findings about the "
        "file, not a membership test (the leaf attack, <code>--attacks leaf</code>, is "
        "one); see the user guide's white-box page.</p>"
    )


def _claim_html(
    result: Any,
    epsilon: float,
    delta: float,
    gammas: tuple[float, ...],
    context: dict[str, Any] | None,
    records_result: Any,
) -> str:
    """The DP claim's section; a person-level audit's claim is judged on the rates of
    the record-level audit it was made from, where it has them."""
    person_claim, dp_result = None, result
    if getattr(result, "unit", "record") == "person":
        if records_result is not None and "tp" in records_result.metrics:
            records_result = records_result.with_delta(delta)
            dp_result = records_result
        answer = claim_answer(result, epsilon, delta, records=records_result)
        person_claim = (answer, str((context or {}).get("persons", "persons")))
    return _dp_section(
        dp_result.metrics,
        epsilon,
        delta,
        gammas,
        person_claim,
        frozenset(blind_attacks(dp_result)),
    )


def _finish(path: Path, parts: list[str], version: str, date: str, command: str | None) -> Path:
    """The footer, and the page written."""
    esc = html.escape
    footer = f"tabmia {esc(version)} · generated {esc(date)}"
    if command:
        footer += f"<br>command: <code>{esc(command)}</code>"
    parts.append(f"<footer class='note'><hr>{footer}</footer></body></html>")
    path.write_text("".join(parts), encoding="utf-8")
    return path
