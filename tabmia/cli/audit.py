"""``tabmia audit``: check the parsed arguments, run one of the two modes, report.

:func:`run_audit` checks the parsed arguments, plays the membership game on a data set
(``--dataset``, :mod:`tabmia.cli._game`) or audits a given model (``--model-file`` /
``--*-proba`` with ``--train`` and ``--population``, :mod:`tabmia.cli._own_model`),
prints the results table and hands the files to :mod:`tabmia.cli._outputs`.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from typing import Any

import tabmia.report.verdict
from tabmia._columns import PERSON
from tabmia.cli._checks import more_records_hint
from tabmia.cli._game import built_in_game
from tabmia.cli._gate import aim_at_gate_fdr, aim_at_gate_fpr, evaluate_cli_gate, report_gate
from tabmia.cli._inputs import UsageError, first_line
from tabmia.cli._mlflow import check_mlflow_flags, log_to_mlflow
from tabmia.cli._named import named_of
from tabmia.cli._outputs import (
    fpr_fallback_notes,
    recorded_warnings,
    shown,
    terminal_summary,
    wrapped,
    write_outputs,
)
from tabmia.cli._own_model import own_model
from tabmia.cli._persons import to_persons
from tabmia.cli._setup import (
    DEFAULT_ATTACKS,
    LABEL_ATTACKS,
    SCORE_ATTACKS,
    _check_args,
    _resolve_device,
)

# the set-up helpers tests reach through this module
from tabmia.cli._setup import _make_attacks as _make_attacks
from tabmia.cli._setup import _recipe as _recipe
from tabmia.cli._setup import _thread_limits as _thread_limits
from tabmia.cli._slices import slice_specs, slices_report
from tabmia.exceptions import (
    AuditTooSmallError,
    DuplicateRecordsWarning,
    PlausibilityWarning,
    TargetOutputsError,
    UnresolvableFPRError,
)
from tabmia.report import markdown_table, results_table
from tabmia.report.tables import summary_table
from tabmia.report.verdict import shadow_recipe, verdict_state

__all__ = ["DEFAULT_ATTACKS", "LABEL_ATTACKS", "SCORE_ATTACKS", "run_audit"]


def run_audit(args: argparse.Namespace) -> int:
    """Run ``tabmia audit`` with parsed arguments; returns the exit status."""
    _check_audit_args(args)
    t0 = time.perf_counter()
    try:
        with (
            fpr_fallback_notes() as fallbacks,
            recorded_warnings(PlausibilityWarning, DuplicateRecordsWarning) as warned,
            contextlib.ExitStack() as cluster,
        ):
            # --cluster is joined once the checks pass (_join_cluster), left at the end
            _resolve_device(args)
            if args.train is not None:
                result, context, records = own_model(args, cluster)
            else:
                result, context, records = built_in_game(args, cluster)
    except UnresolvableFPRError as exc:  # raised by an attack's fit before it trains
        what = f"{exc.attack}: {exc.reason}" if exc.attack and exc.reason else first_line(exc)
        raise UsageError(f"{what}; {more_records_hint(args)}") from exc
    except (AuditTooSmallError, TargetOutputsError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from exc
    elapsed = time.perf_counter() - t0
    reconstruction = context.pop("reconstruction", None)
    context = _header_context(args, result, context, fallbacks, warned)
    records_result = result.with_delta(args.delta)
    # with persons the unit is the person: the verdict, the table and the gate read them
    result = to_persons(args, records_result, context).with_delta(args.delta)
    persons = result is not records_result and result.unit == "person"
    slice_report = slices_report(args, result)  # of persons, where the unit is the person
    table = results_table(result.metrics, fprs=args.fprs, gammas=args.gammas)
    header = "tabmia audit: " + "; ".join(f"{k}: {shown(v)}" for k, v in context.items()) + "\n"
    state = verdict_state(result, accept_warnings=args.accept_warnings)
    # looked up when called: a test plants a contradiction there
    verdict = tabmia.report.verdict.verdict_lines(
        result,
        context=context,
        gammas=args.gammas,
        epsilon=args.epsilon,
        delta=args.delta,
        state=state,
        records=records_result if persons else None,
    )
    if slice_report is not None:
        verdict += slice_report.lines()
    if reconstruction is not None:
        verdict.append(f"Reconstruction from the model file: {reconstruction.sentence()}")
    named = named_of(args, result, state)  # whom an attacker could name (tabmia.named)
    verdict += named.lines(context.get("persons") if persons else None)
    md = (
        header
        + "\n## Verdict\n\n"
        + f"**{state.state.capitalize()}**\n\n"
        + "".join(f"- {line}\n" for line in verdict)
        + "\n## Attacks\n\n"
        + markdown_table(table)
    )
    print(terminal_summary(header, state, verdict, summary_table(result.metrics)))
    gate = evaluate_cli_gate(
        args, result, slices=slice_report, structure=records_result.structure, named=named
    )
    write_outputs(
        args,
        result,
        md,
        context,
        records,
        elapsed,
        verdict,
        gate=gate,
        state=state,
        records_result=records_result if persons else None,
        slice_report=slice_report,
        reconstruction=reconstruction,
        structure=records_result.structure,
        named=named,
    )
    _print_done(args, elapsed, persons)
    return report_gate(gate)


def _check_audit_args(args: argparse.Namespace) -> None:
    """Refuse what cannot run before anything is read or trained."""
    check_mlflow_flags(args)
    _check_args(args)
    if not 0.0 <= args.delta < 1.0:
        raise UsageError(f"--delta must be in [0, 1), got {args.delta}")
    aim_at_gate_fpr(args)
    aim_at_gate_fdr(args)
    if any(lim.metric == "slice_tpr" for lim in getattr(args, "fail_above", ())) and not (
        slice_specs(args, args.dataset if args.train is None else None)
    ):
        raise UsageError(
            "--fail-above slice:tpr@... limits the worst slice, but the audit has no slices: "
            "add --slice-by COL"
        )


def _header_context(
    args: argparse.Namespace,
    result: Any,
    context: dict[str, Any],
    fallbacks: list[str],
    warned: list[str],
) -> dict[str, Any]:
    """The run mode's context with what the header adds: the data, the person ids, the
    run's notes and warnings (those not already findings), the shadow recipe."""
    if args.train is not None and "data" not in context:
        context = {"data": str(args.train), **context}
    if PERSON in result.scores.columns and getattr(args, "group_column", None):
        # the header names the column; the verdict calls them "persons"
        context.setdefault("person ids", f"column {args.group_column!r}")
    if fallbacks:
        context["notes"] = list(fallbacks)
    found = {f.message for f in result.findings}  # shown in the verdict, as findings
    if any(w not in found for w in warned):
        context["warnings"] = [w for w in warned if w not in found]
    recipe = shadow_recipe(result)  # the class shadow models were trained as
    if recipe is not None:
        context["shadow recipe"] = (
            f"the target's own recipe ({args.model})"
            if args.train is None
            else f"--recipe {args.recipe}: {recipe}"
        )
        if context.get("shadow models trained", 1):  # not all of them from --cache-dir
            address = getattr(args, "cluster", None)
            context["models trained on"] = (
                "this machine" if address is None else f"the cluster at {address}"
            )
    return context


def _print_done(args: argparse.Namespace, elapsed: float, persons: bool) -> None:
    """The closing lines: the files written and, with ``--mlflow``, the run logged."""
    print(
        wrapped(
            f"wrote {args.out}/report.html, results.json, results.md, scores.csv.gz, "
            + ("persons.csv.gz, " if persons else "")
            + "named.csv.gz, "
            + f"roc.png ({elapsed:.1f} s)"
        )
    )
    run_id = log_to_mlflow(args)
    if run_id is not None:
        print(wrapped(f"logged to MLflow experiment {args.mlflow!r}: run {run_id}"))
