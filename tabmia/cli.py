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
import shlex
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, NoReturn

from tabmia._cli_inputs import (
    UsageError,
    apply_categories,
    check_count,
    check_out_folder,
    check_shared,
    check_size,
    first_line,
    load_model,
    read_table,
    split_label,
)
from tabmia.exceptions import FPRFallbackWarning

__all__ = ["main", "build_parser", "UsageError"]

#: Attacks that need only the target's outputs (the default with precomputed
#: probabilities, or a model file given without ``--recipe``).
SCORE_ATTACKS = "loss,loss_class,confidence,entropy,modified_entropy"
#: Default where shadow / reference models can be trained (the built-in game, or
#: ``--recipe``): the score attacks plus LiRA and RMIA, the strongest at low FPR.
DEFAULT_ATTACKS = SCORE_ATTACKS + ",lira,rmia"
# attack parameters that take the unfitted training recipe
_RECIPE_PARAMS = ("shadow_estimator", "reference_estimator", "proxy_estimator")


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


def _names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in str(text).split(",") if v.strip())


def _fraction_or_count(text: str) -> float | int:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a fraction or a count, got {text!r}") from exc
    return int(value) if value >= 1 and value.is_integer() else value


#: FPR the audit's thresholds aim at unless --fpr says otherwise.
DEFAULT_FPR = 0.01

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
    own.add_argument("--encoding", default="utf-8",
                     help="text encoding of the CSV files (default utf-8; e.g. latin-1)")
    own.add_argument("--sep", default=",", help="CSV field separator (default ,)")
    own.add_argument("--categorical", type=_names, default=(),
                     help="COL[,COL...]: columns a native-categorical model (XGBoost / LightGBM "
                     "enable_categorical) takes as pandas categories; columns whose categories "
                     "the model stored are restored without it")
    attacks = audit.add_argument_group("attacks and reporting")
    attacks.add_argument("--attacks", default=None,
                         help=f"comma-separated, from: {', '.join(ATTACK_NAMES)} (default "
                         f"{DEFAULT_ATTACKS}; without a training recipe {SCORE_ATTACKS})")
    attacks.add_argument("--fpr", type=float, default=None,
                         help="FPR each attack's threshold promises (default 0.01, or the "
                              "smallest an attack's calibration records can promise, said so)")
    attacks.add_argument("--fprs", type=_floats, default=(0.01, 0.001),
                         help="FPR levels for TPR in the table (default 0.01,0.001)")
    attacks.add_argument("--gammas", type=_floats, default=(1.0, 10.0, 100.0),
                         help="priors for PPV (default 1,10,100)")
    attacks.add_argument("--epsilon", type=float, default=None,
                         help="a DP epsilon to compare the attacks against")
    attacks.add_argument("--delta", type=float, default=1e-5, help="DP delta (default 1e-5)")
    attacks.add_argument("--n-shadow", type=int, default=16,
                         help="LiRA shadow models (default 16)")
    attacks.add_argument("--n-references", type=int, default=4,
                         help="RMIA / Calibrated reference models (default 4)")
    attacks.add_argument("--cache-dir", type=Path, default=None,
                         help="keep every trained shadow / reference model's scores here: a "
                         "rerun (an interrupted one too) trains only the missing models")
    attacks.add_argument("--n-jobs", type=int, default=None,
                         help="parallel jobs for shadow models (-1: all cores)")
    attacks.add_argument("--threads", type=int, default=None,
                         help="BLAS / OpenMP / CatBoost threads per process (default: the libraries')")
    attacks.add_argument("--device", default="auto", help="auto, cpu or cuda (torch parts)")
    attacks.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    attacks.add_argument("--top-k", type=int, default=20, help="riskiest records listed (default 20)")
    attacks.add_argument("--show-records", action="store_true",
                         help="show the riskiest records' contents in the report (masked by default)")
    attacks.add_argument("--out", type=Path, default=Path("tabmia-report"),
                         help="output folder (default ./tabmia-report)")
    attacks.add_argument("--quiet", action="store_true",
                         help="print only the table (no progress bars)")
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
    args = _parse_with_config(argv)
    if args.command == "audit":
        # an FPR the user asked for is refused when unresolvable; the default falls back
        args.fpr_given = args.fpr is not None
        if args.fpr is None:
            args.fpr = DEFAULT_FPR
    return args


def _parse_with_config(argv: list[str] | None) -> argparse.Namespace:
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
def _recipe(args: argparse.Namespace, X: Any) -> Any:
    from tabmia.recipes import MODEL_NAMES, make_model

    if args.recipe is None:
        return None
    if args.recipe in MODEL_NAMES:
        return _set_threads(make_model(args.recipe, X), args.threads)
    path = Path(args.recipe)
    if not path.is_file():
        raise UsageError(f"--recipe {args.recipe}: neither a recipe name ({', '.join(MODEL_NAMES)}) nor a file")
    recipe = load_model(path, args.trust_types, flag="--recipe")
    if not hasattr(recipe, "fit"):
        raise UsageError(f"--recipe {path}: the object has no fit method")
    return _set_threads(recipe, args.threads)


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
    params: dict[str, Any] = {
        "fpr": args.fpr, "n_jobs": args.n_jobs, "device": args.device, "n_shadow": args.n_shadow,
        "n_reference": args.n_references, "verbose": not args.quiet,
        "cache_dir": None if args.cache_dir is None else str(args.cache_dir),
    }
    if recipe is not None:
        params.update({p: recipe for p in _RECIPE_PARAMS})
    try:  # specs may carry parameters, e.g. lira:n_shadow=64
        out = build_attacks(names, **params)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    needs = [n for n, a in out.items() if _needs_recipe(a)]
    if needs and recipe is None and not can_train:
        raise UsageError(
            f"--attacks {','.join(needs)} train shadow / reference models: give the model's "
            "training recipe with --recipe (a preset name or a joblib file of the unfitted "
            "estimator)"
        )
    return out


def _needs_recipe(attack: Any) -> bool:
    params = attack.get_params(deep=False)
    if params.get("calibration", "reference") != "reference":
        return False
    return any(p in params for p in ("shadow_estimator", "reference_estimator"))


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
    check_size(args.train_size, "--train-size")
    check_size(args.public_size, "--public-size")
    check_count(args.max_members, "--max-members")
    check_count(args.n_shadow, "--n-shadow", 4)  # two OUT shadows per record
    check_count(args.n_references, "--n-references", 2)  # an OUT reference per record
    check_count(args.threads, "--threads")
    if args.n_jobs == 0:
        raise UsageError("--n-jobs must not be 0 (-1: all cores, N >= 1: N jobs)")
    if args.cache_dir is not None and args.cache_dir.exists() and not args.cache_dir.is_dir():
        raise UsageError(f"--cache-dir {args.cache_dir} exists and is not a folder")
    check_out_folder(args.out)
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
    from tabmia.experiment import MembershipExperiment, split_membership
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
    try:  # the sizes against this data set, before anything trains
        split_membership(n_rows(X), train_size=args.train_size, public_size=args.public_size,
                         prior=args.prior, random_state=0)
    except ValueError as exc:
        message = first_line(exc)
        for name in ("train_size", "public_size", "prior"):
            message = message.replace(name, "--" + name.replace("_", "-"))
        raise UsageError(f"{message} (the data set has {n_rows(X)} records)") from exc
    model = _set_threads(make_model(args.model, X), args.threads)
    experiment = MembershipExperiment(
        model, _make_attacks(args, recipe=None), train_size=args.train_size,
        public_size=args.public_size, prior=args.prior, n_repeats=args.seeds, fprs=args.fprs,
        gammas=args.gammas, random_state=args.random_state, verbose=not args.quiet,
        fpr_fallback=not args.fpr_given,
    )
    with _thread_limits(args):
        result = experiment.run(X, y)
    split, acc = result.splits[0], result.target_accuracy
    context = {
        "data": args.dataset, "target": args.model, "members": len(split.members),
        "non-members": len(split.nonmembers), "attacker public records": len(split.public),
        "seeds": args.seeds, "train accuracy": f"{acc['train_accuracy'].mean():.3f}",
        "held-out accuracy": f"{acc['test_accuracy'].mean():.3f}", **_cache_context(args, result),
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
    from tabmia.exceptions import DuplicateRecordsWarning
    from tabmia.target import PrecomputedProbabilities, TargetModel

    read = {"encoding": args.encoding, "sep": args.sep}
    X_tr, y_tr = split_label(read_table(args.train, "--train", **read), args.label, "--train")
    X_pop, y_pop = split_label(read_table(args.population, "--population", **read), args.label,
                               "--population")
    missing = [c for c in X_tr.columns if c not in X_pop.columns]
    if missing:
        raise UsageError(f"--population lacks columns of --train: {missing[:10]}")
    X_pop = X_pop[list(X_tr.columns)]
    if len(X_pop) < 2:
        raise UsageError(f"--population has {len(X_pop)} record; it needs at least 2 (half "
                         "become the attacker's data, half the non-member candidates)")
    shared_note = check_shared(X_tr, y_tr, X_pop, y_pop)
    if args.model_file is not None:
        model = load_model(args.model_file, args.trust_types)
        X_tr, X_pop = apply_categories(model, [X_tr, X_pop], list(args.categorical),
                                       ["--train", "--population"])
        try:
            target = TargetModel(model, device=args.device)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--model-file {args.model_file}: {exc}") from exc
    else:
        p_tr = read_table(args.train_proba, "--train-proba", **read)
        p_pop = read_table(args.population_proba, "--population-proba", **read)
        if list(p_tr.columns) != list(p_pop.columns):
            raise UsageError("--train-proba and --population-proba have different columns")
        if len(p_tr) != len(X_tr) or len(p_pop) != len(X_pop):
            raise UsageError("each --*-proba file needs one row per record of its data file")
        labels = np.unique(np.r_[y_tr, y_pop])
        classes = _proba_classes(list(p_tr.columns), labels)
        import pandas as pd

        X_all = pd.concat([X_tr, X_pop], ignore_index=True)
        proba = np.vstack([p_tr.to_numpy(float), p_pop.to_numpy(float)])
        try:
            target = TargetModel(PrecomputedProbabilities(X_all, proba), classes=classes)
        except ValueError as exc:
            raise UsageError(f"--*-proba: {exc}") from exc
    for flag, y in (("--train", y_tr), ("--population", y_pop)):
        try:  # apart: np.r_ of int and str labels would turn them all into text
            target.encode_labels(y, name=f"{flag}: label column {args.label!r}")
        except ValueError as exc:
            raise UsageError(first_line(exc)) from exc
    try:
        target.predict_proba(X_tr.iloc[:5])
    except Exception as exc:  # noqa: BLE001 - whatever the model raises on these records
        where = args.model_file or "--train-proba"
        raise UsageError(f"{where}: cannot score --train records: {first_line(exc)}"
                         + _categorical_hint(exc)) from exc
    recipe = _recipe(args, X_tr)
    attacks = _make_attacks(args, recipe=recipe, can_train=args.recipe is not None)
    perturbing = [n for n, a in attacks.items()
                  if type(a).__name__ in ("MerlinAttack", "MorganAttack")]
    if perturbing and args.model_file is None:
        raise UsageError(f"--attacks {','.join(perturbing)} query perturbed records: they need "
                         "--model-file, not precomputed probabilities")
    if shared_note is not None:
        print(f"tabmia: warning: {shared_note}", file=sys.stderr)
    with _thread_limits(args), warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicateRecordsWarning)  # reported just above
        result = audit_model(
            target, X_tr, y_tr, X_pop, y_pop, attacks, max_members=args.max_members,
            fprs=args.fprs, gammas=args.gammas, random_state=args.random_state,
            verbose=not args.quiet, fpr_fallback=not args.fpr_given,
        )
    split = result.splits[0]
    context = {
        "model": str(args.model_file or "precomputed probabilities"), "training records": len(X_tr),
        "members scored": len(split.members), "non-member candidates": len(split.nonmembers),
        "attacker public records": len(split.public), **_cache_context(args, result),
    }
    if shared_note is not None:
        context["warning"] = shared_note
    return result, context, X_tr.reset_index(drop=True)


def _categorical_hint(exc: BaseException) -> str:
    text = str(exc).lower()
    if "categor" in text:
        return " (a native-categorical model: name its columns with --categorical, or give parquet)"
    return ""


def _thread_limits(args: argparse.Namespace) -> Any:
    """BLAS / OpenMP thread limit of this process for ``--threads``."""
    from contextlib import nullcontext

    if args.threads is None:
        return nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=args.threads)


def _set_threads(estimator: Any, threads: int | None) -> Any:
    """CatBoost's ``thread_count`` (nested too) set to ``--threads``."""
    if threads is None or not hasattr(estimator, "get_params"):
        return estimator
    keys = [k for k in estimator.get_params(deep=True)
            if k == "thread_count" or k.endswith("__thread_count")]
    if keys:
        estimator.set_params(**{k: threads for k in keys})
    return estimator


def _cache_context(args: argparse.Namespace, result: Any) -> dict[str, Any]:
    """How many shadow / reference models this run trained and how many the cache gave."""
    pops = [getattr(a, "population_", None) for a in result.attacks]
    pops = [p for p in pops if p is not None and hasattr(p, "n_trained_")]
    if args.cache_dir is None or not pops:
        return {}
    trained = sum(p.n_trained_ for p in pops)
    total = sum(p.statistics_.shape[0] for p in pops)
    return {"shadow models trained": trained, "shadow models from --cache-dir": total - trained}


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
    from tabmia.metrics import AuditTooSmallError, UnresolvableFPRError
    from tabmia.report import markdown_table, results_table
    from tabmia.report.verdict import verdict_lines

    _check_args(args)
    if not 0.0 <= args.delta < 1.0:
        raise UsageError(f"--delta must be in [0, 1), got {args.delta}")
    t0 = time.perf_counter()
    recorder = warnings.catch_warnings(record=True)
    caught = recorder.__enter__()
    try:
        warnings.simplefilter("always", FPRFallbackWarning)
        if args.train is not None:
            result, context, records = _own_model(args)
        else:
            result, context, records = _built_in_game(args)
    except UnresolvableFPRError as exc:
        raise UsageError(f"{str(exc).splitlines()[0]} (raise --fpr or give more records)") from exc
    except AuditTooSmallError as exc:
        raise UsageError(str(exc).splitlines()[0]) from exc
    finally:
        recorder.__exit__(None, None, None)
        fallbacks = _report_fpr_fallbacks(caught)
    elapsed = time.perf_counter() - t0
    if args.train is not None and "data" not in context:
        context = {"data": str(args.train), **context}
    if fallbacks:
        context["FPR not promisable"] = "; ".join(fallbacks)
    result = result.with_delta(args.delta)
    table = results_table(result.metrics, fprs=args.fprs, gammas=args.gammas)
    header = "tabmia audit: " + "; ".join(f"{k}: {v}" for k, v in context.items()) + "\n"
    verdict = verdict_lines(result, context=context, gammas=args.gammas, epsilon=args.epsilon,
                            delta=args.delta)
    md = (header + "\n## Verdict\n\n" + "".join(f"- {line}\n" for line in verdict)
          + "\n## Attacks\n\n" + markdown_table(table))
    print(md)
    _write_outputs(args, result, md, context, records, elapsed, verdict)
    print(f"wrote {args.out}/report.html, results.json, results.md, scores.csv.gz, roc.png "
          f"({elapsed:.1f} s)")
    return 0


def _report_fpr_fallbacks(caught: list[warnings.WarningMessage]) -> list[str]:
    """Print each attack's FPR fallback once as a note; re-issue every other warning."""
    notes: list[str] = []
    for w in caught:
        if issubclass(w.category, FPRFallbackWarning):
            if str(w.message) not in notes:
                notes.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for note in notes:
        print(f"tabmia: note: {note}", file=sys.stderr)
    return notes


def _write_outputs(args: argparse.Namespace, result: Any, md: str, context: dict[str, Any],
                   records: Any, elapsed: float, verdict: list[str] | None = None) -> None:
    """Write every file into a temporary folder, then move them into --out together."""
    import datetime

    import tabmia
    from tabmia.report import plot_roc
    from tabmia.report.html import write_html_report

    # the process's command line, with the entry point (console script or cli.py) as `tabmia`
    command = getattr(args, "command_line", None) or "tabmia " + shlex.join(sys.argv[1:])
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md += f"\ntabmia {tabmia.__version__}, {date}; command: `{command}`\n"
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out, prefix=".partial-") as tmp:
        tmp_path = Path(tmp)
        payload = {
            "tabmia_version": tabmia.__version__,
            "command": command,
            "date": date,
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "context": context,
            "seconds": elapsed,
            "verdict": verdict,
            "target_accuracy": (result.target_accuracy.to_dict(orient="records")
                                if result.target_accuracy is not None else None),
            # what each attack flags at its own threshold, per seed (the attacker's result)
            "at_own_threshold": json.loads(result.at_own_threshold().to_json(orient="records")),
            "metrics": json.loads(result.metrics.to_json(orient="records")),
        }
        (tmp_path / "results.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
        (tmp_path / "results.md").write_text(md)
        result.scores.to_csv(tmp_path / "scores.csv.gz", index=False)
        plot_roc(result.scores, tmp_path / "roc.png",
                 title="ROC (log-log)" + (f", seed 0 of {args.seeds}" if args.seeds > 1 else ""))
        write_html_report(
            result, tmp_path / "report.html", context=context, epsilon=args.epsilon,
            delta=args.delta, fprs=args.fprs, gammas=args.gammas, top_k=args.top_k,
            records=records, show_records=args.show_records, command=command,
            version=tabmia.__version__, date=date,
        )
        for f in tmp_path.iterdir():
            shutil.move(str(f), args.out / f.name)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tabmia`` command."""
    try:
        args = _parse(argv)
        # the report records what was run: argv when called from Python, else the process's
        args.command_line = "tabmia " + shlex.join(sys.argv[1:] if argv is None else argv)
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
