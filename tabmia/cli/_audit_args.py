"""``tabmia audit``'s flags, one argument group at a time, in the order ``--help`` shows them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tabmia.cli._args import (
    Accumulate,
    add_command,
    add_fpr_arguments,
    add_run_arguments,
    add_split_arguments,
    fdr_level,
    floats,
    memory_size,
    names,
    risk_limits,
    warning_names,
)
from tabmia.cli._cluster import CONNECT_TIMEOUT_S
from tabmia.cli._mlflow import add_mlflow_arguments
from tabmia.cli._setup import DEFAULT_ATTACKS, LABEL_ATTACKS, SCORE_ATTACKS
from tabmia.datasets import DEFAULT_SLICINGS, PERSON_NOUNS
from tabmia.metrics import DEFAULT_DELTA
from tabmia.recipes import ATTACK_PRESETS, MODEL_NAMES

__all__ = ["add_audit_parser"]


def add_audit_parser(sub: Any, doc: str) -> argparse.ArgumentParser:
    """Add ``tabmia audit`` (its help text from ``doc``) to the sub-command parsers."""
    audit = add_command(
        sub,
        "audit",
        doc=doc,
        help="attack a model and report how many training records an attacker singles out",
    )
    audit.add_argument(
        "--config", type=Path, default=None, help="YAML or TOML file whose keys mirror these flags"
    )
    _add_game_arguments(audit)
    own = _add_own_model_arguments(audit)
    _add_person_arguments(audit)
    attacks = _add_attack_arguments(audit)
    _add_run_arguments(attacks)
    add_mlflow_arguments(own, attacks)
    _add_gate_arguments(audit)
    return audit


def _add_game_arguments(audit: argparse.ArgumentParser) -> None:
    """The built-in game: a data set, a target recipe, the split."""
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


def _add_own_model_arguments(audit: argparse.ArgumentParser) -> Any:
    """Your own model and data; returns the group (``--model-uri`` joins it)."""
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
    return own


def _add_person_arguments(audit: argparse.ArgumentParser) -> None:
    """Persons (``--group-column``, ``--person-rule``) and slices (``--slice-by``)."""
    persons = audit.add_argument_group("persons (several records per person)")
    persons.add_argument(
        "--group-column",
        default=None,
        metavar="COL",
        help="column of --train and --population holding each record's person id (a "
        "patient, a customer); it is no model input. The audit's unit becomes the "
        "person: persons are split whole, shadow models keep them whole, and the verdict, "
        "the report and the gate count persons. A built-in data set that carries persons "
        + f"({', '.join(f'{name}: its {noun}' for name, noun in PERSON_NOUNS.items())}) "
        + "uses them unless given 'none'",
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
        "cut into named bands. Default for the built-in credit and health data sets: "
        + "; ".join(f"{name} {','.join(cols)}" for name, cols in DEFAULT_SLICINGS.items())
        + ". 'none' turns slices off",
    )


def _add_attack_arguments(audit: argparse.ArgumentParser) -> Any:
    """Which attacks, at which FPRs and priors; returns the group."""
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
    return attacks


def _add_run_arguments(attacks: Any) -> None:
    """How the attacks run (jobs, memory, cluster) and what the report lists and where."""
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


def _add_gate_arguments(audit: argparse.ArgumentParser) -> None:
    """The privacy gate: ``--fail-above`` limits and what decides an unresolved one."""
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
