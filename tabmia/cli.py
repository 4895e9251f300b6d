"""Command line: ``tabmia audit``.

``tabmia audit`` plays the membership game on a data set: it trains a target on part
of it, runs the chosen attacks, prints a results table and writes ``results.json``,
``results.md``, ``scores.csv.gz`` and a log-log ROC plot. Bad input prints one line
starting with ``tabmia: error:`` and exits with status 2; no output file is written
unless the run finished.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "build_parser"]

DEFAULT_ATTACKS = "loss,loss_class,confidence,entropy,modified_entropy"


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return values


def _fraction_or_count(text: str) -> float | int:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a fraction or a count, got {text!r}") from exc
    return int(value) if value >= 1 and value.is_integer() else value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tabmia`` command."""
    from tabmia.recipes import ATTACK_NAMES, MODEL_NAMES

    parser = argparse.ArgumentParser(
        prog="tabmia", description="Membership inference audits of tabular models."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    audit = sub.add_parser(
        "audit",
        help="attack a model and report how many training records an attacker singles out",
        description=(
            "Train a target on part of a data set, attack it, print a results table and "
            "write results.json, results.md, scores.csv.gz and roc.png to --out."
        ),
    )
    audit.add_argument(
        "--dataset", default="breast_cancer",
        help="data set name (tabmia.datasets.load_dataset), default: breast_cancer (embedded)",
    )
    audit.add_argument("--model", default="random_forest", choices=MODEL_NAMES,
                       help="target recipe trained on the members (default: random_forest)")
    audit.add_argument("--attacks", default=DEFAULT_ATTACKS,
                       help=f"comma-separated attacks from: {', '.join(ATTACK_NAMES)} "
                       f"(default: {DEFAULT_ATTACKS})")
    audit.add_argument("--seeds", type=int, default=1, help="repeats of the game (default 1)")
    audit.add_argument("--random-state", type=int, default=0, help="seed of the first repeat")
    audit.add_argument("--train-size", type=_fraction_or_count, default=0.5,
                       help="target training set: fraction or count (default 0.5)")
    audit.add_argument("--public-size", type=_fraction_or_count, default=0.5,
                       help="attacker's share of the remaining records (default 0.5)")
    audit.add_argument("--prior", type=float, default=None,
                       help="non-members per member among candidates (default: all members)")
    audit.add_argument("--fpr", type=float, default=0.01,
                       help="FPR each attack's threshold promises (default 0.01)")
    audit.add_argument("--fprs", type=_floats, default=(0.01, 0.001),
                       help="FPR levels for TPR in the table (default 0.01,0.001)")
    audit.add_argument("--gammas", type=_floats, default=(1.0, 10.0),
                       help="priors for PPV in the table (default 1,10)")
    audit.add_argument("--max-records", type=int, default=None,
                       help="subsample the data set to this many records first")
    audit.add_argument("--n-jobs", type=int, default=None, help="parallel jobs for shadow models")
    audit.add_argument("--out", type=Path, default=Path("tabmia-report"),
                       help="output folder (default ./tabmia-report)")
    audit.add_argument("--quiet", action="store_true", help="print only the table")
    return parser


def _load(args: argparse.Namespace) -> tuple[Any, Any, str]:
    from tabmia.datasets import DataNotFoundError, load_dataset

    try:
        bunch = load_dataset(args.dataset)
    except DataNotFoundError as exc:
        raise UsageError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from exc
    except (ValueError, KeyError) as exc:
        raise UsageError(str(exc)) from exc
    X, y = bunch.data, bunch.target
    if args.max_records is not None:
        import numpy as np

        from tabmia.target import n_rows, take_rows

        if args.max_records < 20:
            raise UsageError("--max-records must be at least 20")
        if n_rows(X) > args.max_records:
            idx = np.sort(
                np.random.RandomState(args.random_state).choice(n_rows(X), args.max_records, replace=False)
            )
            X, y = take_rows(X, idx), np.asarray(y)[idx]
    return X, y, bunch.get("DESCR", "").splitlines()[0] if bunch.get("DESCR") else args.dataset


def _attacks(args: argparse.Namespace) -> dict[str, Any]:
    from tabmia.recipes import make_attack

    names = [a.strip() for a in args.attacks.split(",") if a.strip()]
    if not names:
        raise UsageError("--attacks is empty")
    attacks = {}
    for name in names:
        try:
            attacks[name] = make_attack(name, fpr=args.fpr, n_jobs=args.n_jobs)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    return attacks


def _check_args(args: argparse.Namespace) -> None:
    if args.seeds < 1:
        raise UsageError("--seeds must be >= 1")
    if not 0.0 < args.fpr < 1.0:
        raise UsageError(f"--fpr must be in (0, 1), got {args.fpr}")
    if any(not 0.0 < f < 1.0 for f in args.fprs):
        raise UsageError("--fprs values must be in (0, 1)")
    if any(g <= 0 for g in args.gammas):
        raise UsageError("--gammas values must be > 0")
    if args.prior is not None and args.prior <= 0:
        raise UsageError("--prior must be > 0")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} exists and is not a folder")


def run_audit(args: argparse.Namespace) -> int:
    """Run ``tabmia audit`` with parsed arguments; returns the exit status."""
    from tabmia.experiment import MembershipExperiment
    from tabmia.metrics import UnresolvableFPRError
    from tabmia.recipes import make_model
    from tabmia.report import markdown_table, plot_roc, results_table

    _check_args(args)
    attacks = _attacks(args)
    X, y, title = _load(args)
    model = make_model(args.model, X)
    experiment = MembershipExperiment(
        model, attacks, train_size=args.train_size, public_size=args.public_size,
        prior=args.prior, n_repeats=args.seeds, fprs=args.fprs, gammas=args.gammas,
        random_state=args.random_state, verbose=not args.quiet,
    )
    t0 = time.perf_counter()
    try:
        result = experiment.run(X, y)
    except UnresolvableFPRError as exc:
        raise UsageError(f"{exc} (lower --fpr's demands or use a larger data set)") from exc
    elapsed = time.perf_counter() - t0
    table = results_table(result.metrics, fprs=args.fprs, gammas=args.gammas)
    acc = result.target_accuracy
    header = (
        f"tabmia audit: {args.dataset} ({title}); target {args.model}; "
        f"{len(result.splits[0].members)} members vs {len(result.splits[0].nonmembers)} "
        f"non-members; attacker public records: {len(result.splits[0].public)}; "
        f"seeds: {args.seeds}\n"
        f"target accuracy: train {acc['train_accuracy'].mean():.3f}, "
        f"held-out {acc['test_accuracy'].mean():.3f}\n"
    )
    md = header + "\n" + markdown_table(table)
    print(md)
    _write_outputs(args, result, md, elapsed, plot_roc)
    print(f"wrote {args.out}/results.json, results.md, scores.csv.gz, roc.png ({elapsed:.1f} s)")
    return 0


def _write_outputs(args: argparse.Namespace, result: Any, md: str, elapsed: float, plot_roc: Any) -> None:
    """Write every file into a temporary folder, then move them into --out together."""
    import tabmia

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out, prefix=".partial-") as tmp:
        tmp_path = Path(tmp)
        payload = {
            "tabmia_version": tabmia.__version__,
            "command": " ".join(sys.argv),
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                       if k != "func"},
            "seconds": elapsed,
            "target_accuracy": result.target_accuracy.to_dict(orient="records"),
            "metrics": json.loads(result.metrics.to_json(orient="records")),
        }
        (tmp_path / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
        (tmp_path / "results.md").write_text(md)
        result.scores.to_csv(tmp_path / "scores.csv.gz", index=False)
        plot_roc(result.scores, tmp_path / "roc.png")
        for f in tmp_path.iterdir():
            shutil.move(str(f), args.out / f.name)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tabmia`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "audit":
            return run_audit(args)
    except UsageError as exc:
        print(f"tabmia: error: {exc}", file=sys.stderr)
        return 2
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
