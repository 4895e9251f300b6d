"""Command line: ``tabmia audit`` (and ``tabmia benchmark``, in :mod:`tabmia._cli_benchmark`).

Two ways to run it:

- **Built-in game** (default): train a target recipe (``--model``) on part of a data set
  (``--dataset``, default the embedded breast-cancer data) and attack it.
- **Your own model**: ``--model-file`` (joblib / pickle / skops) with ``--train`` (the
  records it was trained on) and ``--population`` (records from the same population it
  did not train on) as CSV or parquet, and ``--label``. For models trained elsewhere,
  ``--train-proba`` / ``--population-proba`` give their probabilities instead of a model
  file. ``--recipe`` names the unfitted training recipe that shadow-based attacks need.

Either way it prints a results table and writes ``results.json``, ``results.md``,
``scores.csv.gz``, ``roc.png`` and a self-contained ``report.html`` to ``--out``. Every
flag can also come from ``--config FILE`` (YAML or TOML; flags on the command line win).
Bad input prints one line starting with ``tabmia: error:`` and exits with status 2;
nothing is written unless the run finished.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["main", "build_parser"]

#: Attacks that need only the target's outputs (the default with precomputed
#: probabilities, or a model file given without ``--recipe``).
SCORE_ATTACKS = "loss,loss_class,confidence,entropy,modified_entropy"
#: Default where shadow / reference models can be trained (the built-in game, or
#: ``--recipe``): the score attacks plus LiRA and RMIA, the strongest at low FPR.
DEFAULT_ATTACKS = SCORE_ATTACKS + ",lira,rmia"
# attack parameters that take the unfitted training recipe
_RECIPE_PARAMS = ("shadow_estimator", "reference_estimator", "proxy_estimator")


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, status 2
        print(f"tabmia: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in str(text).split(",") if v.strip())
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

    parser = _Parser(prog="tabmia", description="Membership inference audits of tabular models.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    audit = sub.add_parser(
        "audit",
        help="attack a model and report how many training records an attacker singles out",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    audit.add_argument("--config", type=Path, default=None,
                       help="YAML or TOML file whose keys mirror these flags")
    game = audit.add_argument_group("built-in game")
    game.add_argument("--dataset", default="breast_cancer",
                      help="data set name for tabmia.datasets.load_dataset (default breast_cancer)")
    game.add_argument("--model", default="random_forest", choices=MODEL_NAMES,
                      help="target recipe trained on the members (default random_forest)")
    game.add_argument("--seeds", type=int, default=1, help="repeats of the game (default 1)")
    game.add_argument("--train-size", type=_fraction_or_count, default=0.5,
                      help="target training set: fraction or count (default 0.5)")
    game.add_argument("--public-size", type=_fraction_or_count, default=0.5,
                      help="attacker's share of the records left (default 0.5)")
    game.add_argument("--prior", type=float, default=None,
                      help="non-members per member among candidates (default: all members)")
    game.add_argument("--max-records", type=int, default=None,
                      help="subsample the data set to this many records first")
    own = audit.add_argument_group("your own model and data")
    own.add_argument("--model-file", type=Path, default=None,
                     help="fitted model (.joblib/.pkl: loading executes code in it; .skops)")
    own.add_argument("--trust-types", action="store_true",
                     help="accept the non-default types a .skops file lists")
    own.add_argument("--train", type=Path, default=None, help="training records (CSV/parquet)")
    own.add_argument("--population", type=Path, default=None,
                     help="records from the same population, not trained on (CSV/parquet)")
    own.add_argument("--label", default=None, help="label column in --train and --population")
    own.add_argument("--train-proba", type=Path, default=None,
                     help="model probabilities for --train rows (CSV, one column per class)")
    own.add_argument("--population-proba", type=Path, default=None,
                     help="model probabilities for --population rows (CSV)")
    own.add_argument("--recipe", default=None,
                     help=f"unfitted training recipe for shadow attacks: {', '.join(MODEL_NAMES)}, "
                     "or a joblib file of an unfitted estimator")
    own.add_argument("--max-members", type=int, default=None,
                     help="score at most this many training records")
    attacks = audit.add_argument_group("attacks and reporting")
    attacks.add_argument("--attacks", default=None,
                         help=f"comma-separated, from: {', '.join(ATTACK_NAMES)} (default "
                         f"{DEFAULT_ATTACKS}; without a training recipe {SCORE_ATTACKS})")
    attacks.add_argument("--fpr", type=float, default=0.01,
                         help="FPR each attack's threshold promises (default 0.01)")
    attacks.add_argument("--fprs", type=_floats, default=(0.01, 0.001),
                         help="FPR levels for TPR in the table (default 0.01,0.001)")
    attacks.add_argument("--gammas", type=_floats, default=(1.0, 10.0, 100.0),
                         help="priors for PPV (default 1,10,100)")
    attacks.add_argument("--epsilon", type=float, default=None,
                         help="a DP epsilon to compare the attacks against")
    attacks.add_argument("--delta", type=float, default=1e-5, help="DP delta (default 1e-5)")
    attacks.add_argument("--n-jobs", type=int, default=None, help="parallel jobs for shadow models")
    attacks.add_argument("--device", default="auto", help="auto, cpu or cuda (torch parts)")
    attacks.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    attacks.add_argument("--top-k", type=int, default=20, help="riskiest records listed (default 20)")
    attacks.add_argument("--show-records", action="store_true",
                         help="show the riskiest records' contents in the report (masked by default)")
    attacks.add_argument("--out", type=Path, default=Path("tabmia-report"),
                         help="output folder (default ./tabmia-report)")
    attacks.add_argument("--quiet", action="store_true", help="print only the table")
    from tabmia._cli_benchmark import add_benchmark_parser

    add_benchmark_parser(sub, _floats, _fraction_or_count)
    return parser


# ----------------------------------------------------------------- config file
def _read_config(path: Path, section: str = "audit") -> dict[str, Any]:
    if not path.is_file():
        raise UsageError(f"--config {path}: no such file")
    text = path.read_text()
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except ImportError as exc:
        raise UsageError(f"--config {path}: reading it needs {exc.name} (pip install pyyaml)") from exc
    except Exception as exc:  # noqa: BLE001 - any parse error is the user's
        raise UsageError(f"--config {path}: cannot parse: {str(exc).splitlines()[0]}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"--config {path}: expected a mapping of flag names to values")
    data = data.get(section, data)
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "config", None) is None:
        return args
    config = _read_config(args.config, args.command)
    audit = parser._subparsers._group_actions[0].choices[args.command]  # type: ignore[union-attr]
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
            raise UsageError(f"--config {args.config}: {key}={value!r} is not one of {list(action.choices)}")
        defaults[key] = value
    audit.set_defaults(**defaults)
    return parser.parse_args(argv)


# -------------------------------------------------------------------- inputs
def _read_table(path: Path, flag: str) -> Any:
    import pandas as pd

    if not path.is_file():
        raise UsageError(f"{flag} {path}: no such file")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except ImportError as exc:
        raise UsageError(f"{flag} {path}: reading parquet needs pyarrow (pip install pyarrow)") from exc
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"{flag} {path}: cannot read: {str(exc).splitlines()[0]}") from exc


def _load_model(path: Path, trust_types: bool) -> Any:
    if not path.is_file():
        raise UsageError(f"--model-file {path}: no such file")
    if path.suffix.lower() == ".skops":
        try:
            import skops.io as sio
        except ImportError as exc:
            raise UsageError("--model-file: .skops files need skops (pip install skops)") from exc
        untrusted = sio.get_untrusted_types(file=path)
        if untrusted and not trust_types:
            raise UsageError(
                f"--model-file {path}: it contains types skops does not trust by default "
                f"({', '.join(untrusted[:5])}{' ...' if len(untrusted) > 5 else ''}); "
                "check them and pass --trust-types"
            )
        return sio.load(path, trusted=untrusted)
    warnings.warn(
        f"loading {path} runs any code the file contains (pickle/joblib): only audit files "
        "you trust", UserWarning, stacklevel=2,
    )
    import joblib

    try:
        return joblib.load(path)
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"--model-file {path}: cannot load: {str(exc).splitlines()[0]}") from exc


def _split_label(df: Any, label: str, flag: str) -> tuple[Any, Any]:
    if label not in df.columns:
        raise UsageError(f"{flag}: label column {label!r} not found (columns: {list(df.columns)[:12]})")
    return df.drop(columns=[label]), df[label].to_numpy()


def _recipe(args: argparse.Namespace, X: Any) -> Any:
    from tabmia.recipes import MODEL_NAMES, make_model

    if args.recipe is None:
        return None
    if args.recipe in MODEL_NAMES:
        return make_model(args.recipe, X)
    path = Path(args.recipe)
    if not path.is_file():
        raise UsageError(f"--recipe {args.recipe}: neither a recipe name ({', '.join(MODEL_NAMES)}) nor a file")
    recipe = _load_model(path, args.trust_types)
    if not hasattr(recipe, "fit"):
        raise UsageError(f"--recipe {path}: the object has no fit method")
    return recipe


def _make_attacks(
    args: argparse.Namespace, recipe: Any = None, *, can_train: bool = True
) -> dict[str, Any]:
    """The attacks named by ``--attacks``; by default the score attacks, plus LiRA and
    RMIA when shadow models can be trained (``can_train``)."""
    from tabmia._attack_builder import build_attacks

    chosen = args.attacks
    if chosen is None:
        chosen = DEFAULT_ATTACKS if can_train else SCORE_ATTACKS
    names = [a.strip() for a in str(chosen).split(",") if a.strip()]
    if not names:
        raise UsageError("--attacks is empty")
    params: dict[str, Any] = {"fpr": args.fpr, "n_jobs": args.n_jobs, "device": args.device}
    if recipe is not None:
        params.update({p: recipe for p in _RECIPE_PARAMS})
    try:  # specs may carry parameters, e.g. lira:n_shadow=64
        return build_attacks(names, **params)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


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
    if args.epsilon is not None and args.epsilon < 0:
        raise UsageError("--epsilon must be >= 0")
    if args.top_k < 1:
        raise UsageError("--top-k must be >= 1")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} exists and is not a folder")
    own = [args.model_file, args.train, args.population, args.train_proba, args.population_proba]
    if any(v is not None for v in own):
        if args.train is None or args.population is None or args.label is None:
            raise UsageError("auditing your own model needs --train, --population and --label")
        probas = (args.train_proba is not None, args.population_proba is not None)
        if args.model_file is None and not all(probas):
            raise UsageError("give --model-file, or both --train-proba and --population-proba")
        if args.model_file is not None and any(probas):
            raise UsageError("give either --model-file or the --*-proba files, not both")
        if any(probas) and not all(probas):
            raise UsageError("--train-proba and --population-proba go together")


# ---------------------------------------------------------------------- runs
def _built_in_game(args: argparse.Namespace) -> tuple[Any, dict[str, Any], Any]:
    import numpy as np

    from tabmia.datasets import DataNotFoundError, load_dataset
    from tabmia.experiment import MembershipExperiment
    from tabmia.recipes import make_model
    from tabmia.target import n_rows, take_rows

    try:
        bunch = load_dataset(args.dataset)
    except DataNotFoundError as exc:
        raise UsageError(str(exc).splitlines()[0]) from exc
    except (ValueError, KeyError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from exc
    X, y = bunch.data, np.asarray(bunch.target)
    if args.max_records is not None:
        if args.max_records < 20:
            raise UsageError("--max-records must be at least 20")
        if n_rows(X) > args.max_records:
            rng = np.random.RandomState(args.random_state)
            idx = np.sort(rng.choice(n_rows(X), args.max_records, replace=False))
            X, y = take_rows(X, idx), y[idx]
    model = make_model(args.model, X)
    experiment = MembershipExperiment(
        model, _make_attacks(args, recipe=None), train_size=args.train_size,
        public_size=args.public_size, prior=args.prior, n_repeats=args.seeds, fprs=args.fprs,
        gammas=args.gammas, random_state=args.random_state, verbose=not args.quiet,
    )
    result = experiment.run(X, y)
    split, acc = result.splits[0], result.target_accuracy
    context = {
        "data": args.dataset, "target": args.model, "members": len(split.members),
        "non-members": len(split.nonmembers), "attacker public records": len(split.public),
        "seeds": args.seeds, "train accuracy": f"{acc['train_accuracy'].mean():.3f}",
        "held-out accuracy": f"{acc['test_accuracy'].mean():.3f}",
    }
    records = take_rows(X, split.train) if hasattr(X, "iloc") else None
    if records is not None:
        records = records.reset_index(drop=True)
        # riskiest_records reports dataset row indices: index the contents the same way
        records.index = split.train
        records = records.reindex(range(n_rows(X)))
    return result, context, records


def _own_model(args: argparse.Namespace) -> tuple[Any, dict[str, Any], Any]:
    import numpy as np

    from tabmia.audit import audit_model
    from tabmia.target import PrecomputedProbabilities, TargetModel

    train_df = _read_table(args.train, "--train")
    pop_df = _read_table(args.population, "--population")
    X_tr, y_tr = _split_label(train_df, args.label, "--train")
    X_pop, y_pop = _split_label(pop_df, args.label, "--population")
    missing = [c for c in X_tr.columns if c not in X_pop.columns]
    if missing:
        raise UsageError(f"--population lacks columns of --train: {missing[:10]}")
    if args.model_file is not None:
        model = _load_model(args.model_file, args.trust_types)
        try:
            target = TargetModel(model, device=args.device)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--model-file {args.model_file}: {exc}") from exc
    else:
        p_tr = _read_table(args.train_proba, "--train-proba")
        p_pop = _read_table(args.population_proba, "--population-proba")
        if list(p_tr.columns) != list(p_pop.columns):
            raise UsageError("--train-proba and --population-proba have different columns")
        if len(p_tr) != len(X_tr) or len(p_pop) != len(X_pop):
            raise UsageError("each --*-proba file needs one row per record of its data file")
        labels = np.unique(np.r_[y_tr, y_pop])
        classes = _proba_classes(list(p_tr.columns), labels)
        import pandas as pd

        X_all = pd.concat([X_tr, X_pop[list(X_tr.columns)]], ignore_index=True)
        proba = np.vstack([p_tr.to_numpy(float), p_pop.to_numpy(float)])
        try:
            target = TargetModel(PrecomputedProbabilities(X_all, proba), classes=classes)
        except ValueError as exc:
            raise UsageError(f"--*-proba: {exc}") from exc
    try:
        target.encode_labels(np.r_[y_tr, y_pop], name=f"label column {args.label!r}")
        target.predict_proba(X_tr.iloc[:5])
    except ValueError as exc:
        raise UsageError(str(exc).splitlines()[0]) from exc
    result = audit_model(
        target, X_tr, y_tr, X_pop, y_pop, _make_attacks(args, recipe=_recipe(args, X_tr),
                                                 can_train=args.recipe is not None),
        max_members=args.max_members, fprs=args.fprs, gammas=args.gammas,
        random_state=args.random_state, verbose=not args.quiet,
    )
    split = result.splits[0]
    context = {
        "model": str(args.model_file or "precomputed probabilities"), "training records": len(X_tr),
        "members scored": len(split.members), "non-member candidates": len(split.nonmembers),
        "attacker public records": len(split.public),
    }
    return result, context, X_tr.reset_index(drop=True)


def _proba_classes(columns: list[str], labels: Any) -> Any:
    import numpy as np

    by_text = {str(v): v for v in labels}
    if not all(c in by_text for c in columns):
        raise UsageError(
            f"--*-proba columns {columns[:10]} must be the class labels {list(by_text)[:10]}"
        )
    return np.array([by_text[c] for c in columns])


def run_audit(args: argparse.Namespace) -> int:
    """Run ``tabmia audit`` with parsed arguments; returns the exit status."""
    from tabmia.metrics import UnresolvableFPRError
    from tabmia.report import markdown_table, results_table

    _check_args(args)
    t0 = time.perf_counter()
    try:
        if args.train is not None:
            result, context, records = _own_model(args)
        else:
            result, context, records = _built_in_game(args)
    except UnresolvableFPRError as exc:
        raise UsageError(f"{str(exc).splitlines()[0]} (raise --fpr or give more records)") from exc
    elapsed = time.perf_counter() - t0
    table = results_table(result.metrics, fprs=args.fprs, gammas=args.gammas)
    header = "tabmia audit: " + "; ".join(f"{k}: {v}" for k, v in context.items()) + "\n"
    md = header + "\n" + markdown_table(table)
    print(md)
    _write_outputs(args, result, md, context, records, elapsed)
    print(f"wrote {args.out}/report.html, results.json, results.md, scores.csv.gz, roc.png "
          f"({elapsed:.1f} s)")
    return 0


def _write_outputs(args: argparse.Namespace, result: Any, md: str, context: dict[str, Any],
                   records: Any, elapsed: float) -> None:
    """Write every file into a temporary folder, then move them into --out together."""
    import tabmia
    from tabmia.report import plot_roc
    from tabmia.report.html import write_html_report

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out, prefix=".partial-") as tmp:
        tmp_path = Path(tmp)
        payload = {
            "tabmia_version": tabmia.__version__,
            "command": " ".join(sys.argv),
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "context": context,
            "seconds": elapsed,
            "target_accuracy": (result.target_accuracy.to_dict(orient="records")
                                if result.target_accuracy is not None else None),
            "metrics": json.loads(result.metrics.to_json(orient="records")),
        }
        (tmp_path / "results.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
        (tmp_path / "results.md").write_text(md)
        result.scores.to_csv(tmp_path / "scores.csv.gz", index=False)
        plot_roc(result.scores, tmp_path / "roc.png")
        write_html_report(
            result, tmp_path / "report.html", context=context, epsilon=args.epsilon,
            delta=args.delta, fprs=args.fprs, gammas=args.gammas, top_k=args.top_k,
            records=records, show_records=args.show_records,
        )
        for f in tmp_path.iterdir():
            shutil.move(str(f), args.out / f.name)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tabmia`` command."""
    try:
        args = _parse(argv)
        if args.command == "audit":
            return run_audit(args)
        if args.command == "benchmark":
            from tabmia._cli_benchmark import run_benchmark_command

            return run_benchmark_command(args, UsageError)
    except UsageError as exc:
        print(f"tabmia: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse: --help (0) or a one-line usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else 2
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
