"""Command line: ``tabmia audit`` (and ``tabmia benchmark``, in :mod:`tabmia.cli.benchmark`).

Two ways to run it:

- **Built-in game** (default): train a target recipe (``--model``) on part of a data set
  (``--dataset``, default the embedded breast-cancer data) and attack it.
- **Your own model**: ``--model-file`` (joblib / pickle / skops) with ``--train`` (the
  records it was trained on) and ``--population`` (records from the same population it
  did not train on) as CSV or parquet, and ``--label``. For models trained elsewhere,
  ``--train-proba`` / ``--population-proba`` give their probabilities instead of a model
  file, or ``--train-pred`` / ``--population-pred`` their predicted labels. ``--recipe``
  names the unfitted training recipe that shadow-based attacks need.
- **Label-only models**: a model file whose model has ``predict`` but no
  ``predict_proba``, predicted labels (``--*-pred``), or ``--label-only`` (the model, or
  its one-hot probabilities, answers with its label only) run the attacks that work
  from labels (gap, noise robustness, boundary distance; the gap attack alone from
  saved labels).

Either way it prints a results table and writes ``results.json``, ``results.md``,
``scores.csv.gz``, ``roc.png`` and a self-contained ``report.html`` to ``--out``. Every
flag can also come from ``--config FILE`` (YAML or TOML; flags on the command line win).
Bad input prints one line starting with ``tabmia: error:`` and exits with status 2;
nothing is written unless the run finished.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn

from tabmia.cli._args import (
    Accumulate,
    add_command,
    add_fpr_arguments,
    add_run_arguments,
    add_split_arguments,
    fdr_level,
    floats,
    given_flags,
    memory_size,
    names,
    risk_limits,
    settle_fprs,
    warning_names,
)
from tabmia.cli._inputs import UsageError
from tabmia.cli._mlflow import add_mlflow_arguments
from tabmia.cli._outputs import one_line_warnings
from tabmia.cli.audit import DEFAULT_ATTACKS, LABEL_ATTACKS, SCORE_ATTACKS, run_audit
from tabmia.metrics import DEFAULT_DELTA

__all__ = ["main", "build_parser", "run_audit_argv", "UsageError"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, status 2
        print(f"tabmia: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tabmia`` command."""
    from tabmia.cli._cluster import CONNECT_TIMEOUT_S
    from tabmia.recipes import ATTACK_PRESETS, MODEL_NAMES

    parser = _Parser(prog="tabmia", description="Membership inference audits of tabular models.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    audit = add_command(
        sub,
        "audit",
        doc=__doc__,
        help="attack a model and report how many training records an attacker singles out",
    )
    audit.add_argument(
        "--config", type=Path, default=None, help="YAML or TOML file whose keys mirror these flags"
    )
    game = audit.add_argument_group("built-in game")
    game.add_argument(
        "--dataset",
        default="breast_cancer",
        help="data set name for tabmia.datasets.load_dataset (default breast_cancer)",
    )
    game.add_argument(
        "--model",
        default="random_forest",
        choices=MODEL_NAMES,
        help="target recipe trained on the members (default random_forest)",
    )
    game.add_argument("--seeds", type=int, default=1, help="repeats of the game (default 1)")
    add_split_arguments(
        game,
        prior_help="non-members per member among candidates (default: all members)",
        max_records_help="subsample the data set to this many records first",
    )
    own = audit.add_argument_group("your own model and data")
    own.add_argument(
        "--model-file",
        type=Path,
        default=None,
        help="fitted model (.joblib/.pkl: loading executes code in it; .skops)",
    )
    own.add_argument(
        "--trust-types",
        action="store_true",
        help="accept the non-default types a .skops file lists",
    )
    own.add_argument(
        "--reconstruct",
        action="store_true",
        help="with a --model-file that is a scikit-learn decision tree or a forest without "
        "bootstrap (a bagged forest is tried too): rebuild its training set from the "
        "model's stored per-node counts (OR-Tools CP-SAT; pip install 'tabmia[reconstruct]') "
        "and report how many --train records come back exactly, and how fast",
    )
    own.add_argument(
        "--reconstruct-time",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="time limit of --reconstruct's solver (default 120)",
    )
    own.add_argument("--train", type=Path, default=None, help="training records (CSV/parquet)")
    own.add_argument(
        "--population",
        type=Path,
        default=None,
        help="records from the same population, not trained on (CSV/parquet)",
    )
    own.add_argument("--label", default=None, help="label column in --train and --population")
    own.add_argument(
        "--train-proba",
        type=Path,
        default=None,
        help="model probabilities for --train rows (CSV, one column per class)",
    )
    own.add_argument(
        "--population-proba",
        type=Path,
        default=None,
        help="model probabilities for --population rows (CSV)",
    )
    own.add_argument(
        "--train-pred",
        type=Path,
        default=None,
        help="the model's predicted labels for --train rows (CSV, one column, "
        "one row per record): a label-only model",
    )
    own.add_argument(
        "--population-pred",
        type=Path,
        default=None,
        help="the model's predicted labels for --population rows (CSV)",
    )
    own.add_argument(
        "--label-only",
        action="store_true",
        help="the model (or its probabilities, one-hot) answers with its label "
        "only: run the attacks that work from labels",
    )
    own.add_argument(
        "--recipe",
        default=None,
        help=f"unfitted training recipe for shadow attacks: {', '.join(MODEL_NAMES)}, "
        "or a joblib file of an unfitted estimator",
    )
    own.add_argument(
        "--max-members", type=int, default=None, help="score at most this many training records"
    )
    own.add_argument(
        "--encoding",
        default="utf-8",
        help="text encoding of the CSV files (default utf-8; e.g. latin-1)",
    )
    own.add_argument("--sep", default=",", help="CSV field separator (default ,)")
    own.add_argument(
        "--categorical",
        type=names,
        default=(),
        help="COL[,COL...]: columns a native-categorical model (XGBoost / LightGBM "
        "enable_categorical) takes as pandas categories; columns whose categories "
        "the model stored are restored without it",
    )
    persons = audit.add_argument_group("persons (several records per person)")
    persons.add_argument(
        "--group-column",
        default=None,
        metavar="COL",
        help="column of --train and --population holding each record's person id (a "
        "patient, a customer); it is no model input. The audit's unit becomes the "
        "person: persons are split whole, shadow models keep them whole, and the verdict, "
        "the report and the gate count persons. A built-in data set that carries persons "
        "(diabetes130: its patients) uses them unless given 'none'",
    )
    persons.add_argument(
        "--person-rule",
        default=None,
        choices=("combined", "max", "stouffer", "mean"),
        help="how a person's record scores combine into one (default combined: the more "
        "extreme of max and stouffer; max: the most exposed record, adjusted for the "
        "number of records; stouffer: a p-value combination, every record's evidence "
        "summed; mean: the mean score); needs --group-column or a data set's own persons",
    )
    persons.add_argument(
        "--slice-by",
        default=None,
        metavar="COL[,COL...]",
        help="groups to compare (which leak more): each column a slicing, COL*COL their "
        "intersection (combinations too small merged into 'other', said); numeric columns "
        "cut into named bands. Default for the built-in credit and health data sets: adult "
        "sex,race; compas race,sex; diabetes130 race,age; german_credit age,personal_status. "
        "'none' turns slices off",
    )
    attacks = audit.add_argument_group("attacks and reporting")
    attacks.add_argument(
        "--attacks",
        default=None,
        help=f"comma-separated, from: {', '.join(ATTACK_PRESETS)} (default "
        f"{DEFAULT_ATTACKS}; without a training recipe {SCORE_ATTACKS}; "
        f"for a label-only model {LABEL_ATTACKS}, and "
        "noise_robustness_calibrated with --recipe)",
    )
    add_fpr_arguments(
        attacks,
        fprs_default=(0.01, 0.001),
        fprs_help="FPR levels for TPR in the table (default 0.01,0.001)",
    )
    attacks.add_argument(
        "--gammas",
        type=floats,
        default=(1.0, 10.0, 100.0),
        help="priors for PPV (default 1,10,100)",
    )
    attacks.add_argument(
        "--epsilon", type=float, default=None, help="a DP epsilon to compare the attacks against"
    )
    attacks.add_argument(
        "--delta",
        type=float,
        default=DEFAULT_DELTA,
        help=f"DP delta (default {DEFAULT_DELTA:g}, as in Python)",
    )
    attacks.add_argument("--n-shadow", type=int, default=16, help="LiRA shadow models (default 16)")
    attacks.add_argument(
        "--n-references", type=int, default=4, help="RMIA / Calibrated reference models (default 4)"
    )
    attacks.add_argument(
        "--force",
        action="store_true",
        help="train shadow / reference counts above the ceiling (more than "
        "1024, or than the public records) and use a preset --recipe on a "
        "native-categorical model",
    )
    attacks.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="keep every trained shadow / reference model's scores here: a "
        "rerun (an interrupted one too) trains only the missing models",
    )
    add_run_arguments(attacks, n_jobs_help="parallel jobs for shadow models (-1: all cores)")
    attacks.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS / OpenMP / CatBoost threads per process (default: the libraries')",
    )
    attacks.add_argument(
        "--max-memory",
        type=memory_size,
        default=None,
        help="memory that scoring candidates may hold at once: 8GB, 512MB, 25%% "
        "(default: 256 MiB per core, at least 2 GiB, at most half of this machine's "
        "memory); candidates are scored "
        "in chunks that fit it, with the same results. At least 1 MiB; a chunk is "
        "never smaller than one batch of the models (up to 65,536 records), and a "
        "budget that one batch exceeds is said in a note with the memory used",
    )
    attacks.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="train and score the shadow / reference models on a cluster: a "
        "Dask scheduler (tcp://host:8786) or Ray (ray, ray://host:10001); "
        "same scores as on this machine. An address that does not answer within "
        f"{CONNECT_TIMEOUT_S:g} s is an error",
    )
    attacks.add_argument(
        "--top-k", type=int, default=20, help="riskiest records listed (default 20)"
    )
    attacks.add_argument(
        "--fdr",
        type=fdr_level,
        default=None,
        metavar="Q",
        help="false-discovery rate of the named list: the members an attacker with the "
        "public data could name, at most a share Q of such claims wrong (default 0.1, or "
        "the q of a --fail-above named@<q> limit)",
    )
    attacks.add_argument(
        "--show-records",
        action="store_true",
        help="show the riskiest records' contents in the report (masked by default); "
        "with --train, the training records then stay in memory through the attacks",
    )
    attacks.add_argument(
        "--out",
        type=Path,
        default=Path("tabmia-report"),
        help="output folder (default ./tabmia-report)",
    )
    attacks.add_argument(
        "--quiet", action="store_true", help="print only the table (no progress bars)"
    )
    add_mlflow_arguments(own, attacks)
    gate = audit.add_argument_group(
        "privacy gate",
        "exit status 0: the audit shows every limit met (upper 95% bound at "
        "or under it); 1: it shows one exceeded (lower bound over it); 3: it cannot tell; "
        "2 stays a usage error",
    )
    gate.add_argument(
        "--fail-above",
        type=risk_limits,
        action=Accumulate,
        default=(),
        metavar="METRIC=LIMIT",
        help="fail when the audit shows the risk above the limit; repeatable or "
        "comma-separated: tpr@<fpr>=<limit> (TPR at each attack's own threshold, "
        "which then aims at <fpr>), named@<q>=<limit> (members named at FDR <q>: a "
        "count, or a share of the members in (0, 1)), auc=<limit>, epsilon=<limit>, "
        "slice:tpr@<fpr>=<limit> (the worst slice's TPR at a threshold calibrated on "
        "that slice's own public records to <fpr>; needs slices: --slice-by); on a tree "
        "model's file, structure:<finding>=<share> (alone, small, disclosure, influence: the "
        "share of training records the file singles out, e.g. structure:alone=0.01)",
    )
    gate.add_argument(
        "--unresolved",
        choices=("fail", "pass"),
        default="fail",
        help="what a limit the audit cannot resolve returns: fail (exit 3, "
        "default) or pass (exit 0); inputs that contradict themselves fail "
        "either way",
    )
    gate.add_argument(
        "--accept-warning",
        type=warning_names,
        action=Accumulate,
        default=(),
        metavar="NAME",
        dest="accept_warnings",
        help="a finding you have checked and override: fit_gap, label_shift, "
        "auc_below_chance, shared_persons (the inputs contradict themselves), ties (every "
        "attack's scores tie at its FPR: the gate then reads the tie-break bound), "
        "fpr_not_kept, or label_only (a label-only audit of a model that also gives "
        "probabilities may pass the gate); it no longer makes the verdict and the gate "
        "cannot-tell; one the audit did not raise is said; recorded in results.json and "
        "the report; repeatable or comma-separated",
    )
    from tabmia.cli.benchmark import add_benchmark_parser

    add_benchmark_parser(sub)
    from tabmia.cli.whatif import add_whatif_parser

    add_whatif_parser(sub)
    from tabmia.cli.dpaudit import add_dpaudit_parser

    add_dpaudit_parser(sub)
    return parser


# ----------------------------------------------------------------- config file
def _read_config(path: Path, section: str = "audit") -> dict[str, Any]:
    if not path.is_file():
        raise UsageError(f"--config {path}: no such file")
    text = path.read_text()
    try:
        if path.suffix.lower() == ".toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # Python 3.10: tomllib's own package
                import tomli as tomllib

            data = tomllib.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except ImportError as exc:
        raise UsageError(
            f"--config {path}: reading it needs {exc.name} (pip install {'pyyaml' if exc.name == 'yaml' else exc.name})"
        ) from exc
    except Exception as exc:  # any parse error is the user's
        raise UsageError(f"--config {path}: cannot parse: {str(exc).splitlines()[0]}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"--config {path}: expected a mapping of flag names to values")
    data = data.get(section, data)
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    args = _parse_with_config(argv)
    if args.command in ("audit", "benchmark"):
        # the audit refuses an FPR the user asked for when unresolvable; the default falls back
        settle_fprs(args, several_fpr=args.command == "benchmark")
    return args


def _parse_with_config(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    # the flags the user set (command line or config file): a flag that cannot act is refused
    args.given = given_flags(build_parser(), argv)
    if getattr(args, "config", None) is None:
        return args
    config = _read_config(args.config, args.command)
    audit = parser._subparsers._group_actions[0].choices[args.command]  # type: ignore[union-attr,index]
    known = {a.dest: a for a in audit._actions}
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise UsageError(f"--config {args.config}: unknown keys {unknown}")
    defaults = {}
    for key, value in config.items():
        action = known[key]
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        if action.type is not None and not isinstance(value, bool):
            try:
                value = action.type(str(value))
            except (argparse.ArgumentTypeError, ValueError) as exc:
                raise UsageError(f"--config {args.config}: {key}: {exc}") from exc
        if action.choices is not None and value not in action.choices:
            raise UsageError(
                f"--config {args.config}: {key}={value!r} is not one of {list(action.choices)}"
            )
        defaults[key] = value
    audit.set_defaults(**defaults)
    given = args.given | set(defaults)
    args = parser.parse_args(argv)
    args.given = given
    return args


def run_audit_argv(argv: list[str], command_line: str) -> int:
    """Run ``tabmia audit`` on ``argv`` (the flags after ``audit``) as :func:`main` does,
    but raise :class:`UsageError` on bad input instead of printing it: the MLflow
    evaluator's way in, so that its audit is the command's (results.json and gate too).
    ``command_line`` is what the report records as the command."""
    import contextlib
    import io

    with one_line_warnings():
        error = io.StringIO()
        try:
            with contextlib.redirect_stderr(error):
                args = _parse(["audit", *argv])
        except SystemExit as exc:  # argparse's one-line error
            text = error.getvalue().strip().removeprefix("tabmia: error: ")
            raise UsageError(text or f"invalid flags {argv}") from exc
        args.command_line = command_line
        return run_audit(args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tabmia`` command."""
    # the report records what was run: argv when called from Python, else the process's
    command_line = "tabmia " + shlex.join(sys.argv[1:] if argv is None else argv)
    args = None
    try:
        with one_line_warnings():
            args = _parse(argv)
            args.command_line = command_line
            if args.command == "audit":
                return run_audit(args)
            if args.command == "benchmark":
                from tabmia.cli.benchmark import run_benchmark_command

                return run_benchmark_command(args, UsageError)
            if args.command == "dpaudit":
                from tabmia.cli.dpaudit import run_dpaudit_command

                return run_dpaudit_command(args)
            if args.command == "whatif":
                from tabmia.cli.whatif import run_whatif_command

                return run_whatif_command(args)
    except UsageError as exc:
        print(f"tabmia: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse: --help (0) or a one-line usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else 2
    except KeyboardInterrupt:
        print(f"tabmia: interrupted: {_interrupted(args, command_line)}", file=sys.stderr)
        return 130
    return 2


def _interrupted(args: argparse.Namespace | None, command_line: str) -> str:
    """What an interrupted run kept, and the command that resumes it."""
    out = getattr(args, "out", None)
    if getattr(args, "command", None) == "whatif" and out is not None:
        # each finished variant is one file under --out/run: a rerun loads it
        done = list((Path(out) / "run" / "variants").glob("*.joblib"))
        if done:
            return (
                f"no report written; {len(done)} finished variant run(s) kept in {out}/run: "
                f"the same command loads them and runs only the others: {command_line}"
            )
        return f"no report written and no variant finished; rerun: {command_line}"
    said = f"nothing written to {out}" if out is not None else "nothing written"
    cache = getattr(args, "cache_dir", None)
    if not getattr(args, "trains_models", False):  # set once the attacks are known
        return f"{said}; rerun: {command_line}"
    if cache is None:
        return (
            f"{said}; the shadow / reference models trained so far were not kept. "
            f"Keep them next time with --cache-dir (an interrupted run then resumes "
            f"there): {command_line} --cache-dir tabmia-cache"
        )
    kept = len(list(Path(cache).glob("**/model_*.npz"))) if Path(cache).is_dir() else 0
    return (
        f"{said}; {kept} shadow / reference model(s) kept in {cache}: the same command "
        f"trains only the missing ones: {command_line}"
    )
