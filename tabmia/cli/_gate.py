"""``tabmia audit --fail-above``: the privacy gate's flags, its line per limit and its exit
status (the decision itself is :mod:`tabmia.gate`'s)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from tabmia.cli._inputs import UsageError
from tabmia.gate import evaluate_gate
from tabmia.named import DEFAULT_Q

__all__ = ["aim_at_gate_fdr", "aim_at_gate_fpr", "evaluate_cli_gate", "report_gate"]


def aim_at_gate_fpr(args: argparse.Namespace) -> None:
    """Refuse a metric limited twice; aim every attack's threshold at the FPR of a
    ``tpr@<fpr>`` limit.

    Without ``--fpr`` the limit's FPR becomes the audit's (as the default would: where
    an attack's calibration records cannot promise it, the attack aims higher and the
    gate reports it unresolved); a different ``--fpr`` is a usage error.
    """
    limits = getattr(args, "fail_above", ())
    names = [lim.name for lim in limits]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # each --fail-above parsed alone: repeats meet only here, before any work
        raise UsageError(f"--fail-above: {twice[0]} is limited twice; give each metric one limit")
    fprs = sorted({lim.fpr for lim in limits if lim.metric in ("tpr", "slice_tpr")})
    if not fprs:
        return
    if len(fprs) > 1:
        raise UsageError(
            f"--fail-above: TPR limits at FPRs {', '.join(f'{f:g}' for f in fprs)}; "
            "each attack has one threshold, so give one tpr@<fpr> limit per audit"
        )
    if getattr(args, "fpr_given", True) and not math.isclose(args.fpr, fprs[0]):
        raise UsageError(
            f"--fail-above tpr@{fprs[0]:g} needs each attack's threshold aimed at "
            f"FPR {fprs[0]:g}, but --fpr is {args.fpr:g}: drop --fpr or make them equal"
        )
    args.fpr = fprs[0]


def aim_at_gate_fdr(args: argparse.Namespace) -> None:
    """Set ``--fdr`` from a ``named@<q>`` limit (a different ``--fdr`` is a usage error),
    else to its default."""
    qs = sorted({lim.fpr for lim in getattr(args, "fail_above", ()) if lim.metric == "named"})
    given = getattr(args, "fdr", None)
    if len(qs) > 1:
        raise UsageError(
            f"--fail-above: named limits at FDRs {', '.join(f'{q:g}' for q in qs)}; "
            "the audit draws one named list, so give one named@<q> limit"
        )
    if qs and given is not None and not math.isclose(given, qs[0]):
        raise UsageError(
            f"--fail-above named@{qs[0]:g} reads the list at FDR {qs[0]:g}, but --fdr is "
            f"{given:g}: drop --fdr or make them equal"
        )
    args.fdr = qs[0] if qs else (DEFAULT_Q if given is None else given)


def evaluate_cli_gate(
    args: argparse.Namespace,
    result: Any,
    slices: Any = None,
    structure: Any = None,
    named: Any = None,
) -> Any:
    """The gate's result for ``--fail-above`` (None without it); ``slices``, the audit's
    slice report, for a ``slice:tpr@`` limit; ``structure``, a tree model's structural
    findings, for a ``structure:`` limit; ``named``, its named list, for a ``named@``
    limit."""
    limits = getattr(args, "fail_above", ())
    if not limits:
        return None
    if slices is None and any(lim.metric == "slice_tpr" for lim in limits):
        raise UsageError(
            "--fail-above slice:tpr@...: the audit has no slices to limit (--slice-by COL)"
        )
    if structure is None and any(lim.metric.startswith("structure:") for lim in limits):
        raise UsageError(
            "--fail-above structure:...: the audit has no structural findings (they need "
            "--model-file of a tree model)"
        )
    return evaluate_gate(
        result,
        limits,
        unresolved=args.unresolved,
        delta=args.delta,
        accept_warnings=getattr(args, "accept_warnings", ()),
        slices=slices,
        structure=structure,
        named=named,
    )


def report_gate(gate: Any) -> int:
    """Print one ``tabmia: gate:`` line per limit and the decision; the exit status."""
    if gate is None:
        return 0
    for line in gate.lines():
        print(f"tabmia: gate: {line}", file=sys.stderr)
    return gate.exit_status
