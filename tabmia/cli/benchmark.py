"""``tabmia benchmark``: the membership game over many data sets and attacks.

Every data set x seed trains a target (``--model``) and runs every attack of
``--attacks`` against it; the tables have the data sets as rows and the attacks as
columns (AUC, TPR and precision at each of ``--fprs``, wall time), mean ± std over seeds;
``--fpr`` is the FPR each attack's threshold promises, as in ``tabmia audit``.
Attack specs take parameters: ``lira:n_shadow=64``, ``quantile:mode=pinball``.
Finished cells are stored under ``--out``/cells and not recomputed by a re-run with the
same settings. Writes ``results.json``, ``results.md``, ``roc_<data set>.png`` and
``report.html`` to ``--out``. Every flag can also come from ``--config FILE`` (YAML or
TOML; flags on the command line win).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tabmia.benchmark import DEFAULT_ATTACKS, QUICK_MAX_RECORDS, run_benchmark
from tabmia.cli._args import (
    add_command,
    add_fpr_arguments,
    add_run_arguments,
    add_split_arguments,
    names,
)
from tabmia.cli._inputs import missing_data_line
from tabmia.datasets import DataNotFoundError
from tabmia.recipes import ATTACK_PRESETS, MODEL_NAMES

__all__ = ["add_benchmark_parser", "run_benchmark_command"]


def add_benchmark_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``benchmark`` on the ``tabmia`` subparsers."""
    p = add_command(
        sub,
        "benchmark",
        doc=__doc__,
        help="run attacks against targets on many data sets; tables per metric",
    )
    p.add_argument(
        "--config",
        type=Path,
        default=None,
        help="YAML or TOML file whose keys mirror these flags (a 'benchmark' "
        "section or top-level keys)",
    )
    p.add_argument(
        "--datasets",
        type=names,
        default=None,
        help="comma-separated: openml:361070, 361070, eye_movements, "
        "acs:ACSIncome:NY, adult, ... (names in both tabular-benchmark suites "
        "pick clf_num)",
    )
    p.add_argument(
        "--model",
        default="catboost",
        choices=MODEL_NAMES,
        help="target recipe; shadow models copy it (default catboost)",
    )
    p.add_argument(
        "--attacks",
        type=names,
        default=list(DEFAULT_ATTACKS),
        help=f"comma-separated specs name[:param=value ...], names from: "
        f"{', '.join(ATTACK_PRESETS)} (default {','.join(DEFAULT_ATTACKS)})",
    )
    p.add_argument("--seeds", type=int, default=3, help="repeats of the game (default 3)")
    add_fpr_arguments(
        p,
        fprs_default=None,
        fprs_help="FPR levels for TPR / precision in the tables (default: --fpr; "
        "--fpr A,B, the form before --fprs, reads as --fpr A --fprs A,B)",
    )
    add_split_arguments(
        p,
        prior_help="non-member candidates per member (1: balanced; default: every member)",
        max_records_help="subsample each data set to this many records first",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: 1 seed, at most {QUICK_MAX_RECORDS} records, few shadows",
    )
    add_run_arguments(p)
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("tabmia-benchmark"),
        help="output folder (default ./tabmia-benchmark)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar, no table")
    return p


def run_benchmark_command(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    """Run ``tabmia benchmark`` with parsed arguments; returns the exit status."""
    if not args.datasets:
        raise usage_error("--datasets is required (on the command line or in --config)")
    if args.n_jobs is not None and args.n_jobs == 0:
        raise usage_error("--n-jobs must not be 0")
    try:
        result = run_benchmark(
            args.datasets,
            args.model,
            args.attacks,
            args.seeds,
            args.fprs,
            args.out,
            threshold_fpr=args.fpr,
            train_size=args.train_size,
            public_size=args.public_size,
            prior=args.prior,
            max_records=args.max_records,
            quick=args.quick,
            n_jobs=args.n_jobs,
            device=args.device,
            random_state=args.random_state,
            progress=not args.quiet,
            html=not args.no_html,
            command="tabmia " + " ".join(sys.argv[1:]),
        )
    except DataNotFoundError as exc:
        raise usage_error(missing_data_line(exc)) from exc
    except (ValueError, FileNotFoundError) as exc:
        raise usage_error(str(exc).splitlines()[0]) from exc
    res = result.results
    if not args.quiet:
        md = (args.out / "results.md").read_text()
        # the first metric table is the headline; the rest is in the file
        sections = md.split("\n## ")
        print("## " + sections[1] if len(sections) > 1 else md)
    ok = len(res["datasets"])
    files = "results.json, results.md" + ("" if args.no_html else ", report.html")
    print(
        f"wrote {args.out}/{files} and {ok} ROC plot(s): "
        f"{result.computed} cells computed, {result.reused} reused, "
        f"{len(result.failed)} failed, {len(res['skipped'])} data set(s) skipped "
        f"({res['wall_seconds']:.1f} s)"
    )
    if result.failed:
        print(
            f"tabmia: {len(result.failed)} cell(s) failed; see {args.out}/results.md",
            file=sys.stderr,
        )
        return 1
    return 0
