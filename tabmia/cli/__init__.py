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

from tabmia.cli._args import given_flags, settle_fprs
from tabmia.cli._audit_args import add_audit_parser
from tabmia.cli._inputs import UsageError
from tabmia.cli._outputs import one_line_warnings
from tabmia.cli.audit import run_audit
from tabmia.cli.benchmark import add_benchmark_parser, run_benchmark_command
from tabmia.cli.dpaudit import add_dpaudit_parser, run_dpaudit_command
from tabmia.cli.whatif import add_whatif_parser, run_whatif_command

__all__ = ["main", "build_parser", "run_audit_argv", "UsageError"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, status 2
        print(f"tabmia: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tabmia`` command."""
    parser = _Parser(prog="tabmia", description="Membership inference audits of tabular models.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_audit_parser(sub, __doc__)
    add_benchmark_parser(sub)
    add_whatif_parser(sub)
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
                return run_benchmark_command(args, UsageError)
            if args.command == "dpaudit":
                return run_dpaudit_command(args)
            if args.command == "whatif":
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
