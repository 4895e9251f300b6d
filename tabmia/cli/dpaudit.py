"""``tabmia dpaudit``: check a claimed epsilon of a training recipe with one training run.

Draws canary records from the data (``--canaries``, each put into the training set
with probability 1/2), trains the recipe (``--recipe``: a preset name or a joblib
file of an unfitted estimator, e.g. a diffprivlib model) once on the other records
plus the included canaries, guesses from the trained model which canaries it
trained on, abstaining where unsure, and turns the right guesses into an epsilon
lower bound at ``--delta`` with ``--confidence`` (Steinke, Nasr & Jagielski 2023).
Prints the verdict on ``--epsilon`` and writes ``results.json`` and ``results.md``
to ``--out``. Bad input prints one ``tabmia: error:`` line and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from tabmia import __version__
from tabmia.claims import check_claimed_epsilon
from tabmia.cli._args import add_command, fraction_or_count
from tabmia.cli._inputs import (
    UsageError,
    add_data_flags,
    check_out_folder,
    first_line,
    read_data_flag,
)
from tabmia.cli._setup import _recipe
from tabmia.dp import CANARY_KINDS, GUESS_STRATEGIES, OneRunAudit
from tabmia.recipes import MODEL_NAMES
from tabmia.scores import SCORE_NAMES
from tabmia.target import n_rows, take_rows

__all__ = ["add_dpaudit_parser", "run_dpaudit_command"]


def _guesses(text: str) -> str | tuple[int, int]:
    if text in GUESS_STRATEGIES:
        return text
    parts = text.split(",")
    try:
        rule = tuple(int(p) for p in parts)
    except ValueError:
        rule = ()
    if len(rule) != 2 or min(rule) < 0 or sum(rule) < 1:
        raise argparse.ArgumentTypeError(
            f"expected {' or '.join(GUESS_STRATEGIES)} or K_PLUS,K_MINUS (two counts), got {text!r}"
        )
    return (rule[0], rule[1])


def add_dpaudit_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``dpaudit`` on the ``tabmia`` subparsers."""
    p = add_command(
        sub,
        "dpaudit",
        doc=__doc__,
        help="check a claimed DP epsilon of a training recipe from one training run",
    )
    p.add_argument(
        "--recipe",
        required=True,
        help=f"training recipe: {', '.join(MODEL_NAMES)}, or a joblib file of an "
        "unfitted estimator (loading it runs code in it)",
    )
    add_data_flags(p)
    p.add_argument("--epsilon", type=float, default=None, help="the claimed epsilon to check")
    p.add_argument("--delta", type=float, default=1e-5, help="the claim's delta (default 1e-5)")
    p.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="confidence of the lower bound (default 0.95)",
    )
    p.add_argument(
        "--canaries",
        type=fraction_or_count,
        default=None,
        help="canaries: a count or a fraction of the records (default 1000, or half "
        "the records if fewer)",
    )
    p.add_argument(
        "--canary-type",
        default="outliers",
        choices=CANARY_KINDS,
        help="real records, records with a flipped label, or outliers (numeric "
        "features beyond the data's range) with a random label (default outliers)",
    )
    p.add_argument(
        "--score",
        default="loss",
        choices=SCORE_NAMES,
        help="membership score of a canary from the model's output (default loss)",
    )
    p.add_argument(
        "--guesses",
        type=_guesses,
        default="bonferroni",
        help="how many canaries to guess in / out: bonferroni (best of a fixed grid, "
        "corrected), holdout (chosen on half the canaries) or K_PLUS,K_MINUS "
        "(default bonferroni)",
    )
    p.add_argument(
        "--max-records",
        type=int,
        default=None,
        help="subsample the data to this many records first",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the canaries and their inclusion")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CatBoost threads of a preset recipe (default: the library's)",
    )
    p.add_argument("--trust-types", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--out",
        type=Path,
        default=Path("tabmia-dpaudit"),
        help="output folder (default ./tabmia-dpaudit)",
    )
    return p


def _check(args: argparse.Namespace) -> None:
    if not 0.0 < args.confidence < 1.0:
        raise UsageError(f"--confidence must be in (0, 1), got {args.confidence:g}")
    if not 0.0 <= args.delta < 1.0:
        raise UsageError(f"--delta must be in [0, 1), got {args.delta:g}")
    if args.epsilon is not None:
        try:
            check_claimed_epsilon(args.epsilon, "--epsilon")
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    if args.canaries is not None and (
        (isinstance(args.canaries, int) and args.canaries < 2) or args.canaries <= 0
    ):
        raise UsageError(
            f"--canaries must be a fraction in (0, 1) or a count >= 2, got {args.canaries:g}"
        )
    if args.max_records is not None and args.max_records < 20:
        raise UsageError(f"--max-records must be at least 20, got {args.max_records}")
    check_out_folder(args.out)


def _load_data(args: argparse.Namespace) -> tuple[Any, Any, str]:
    import numpy as np

    X, y, _ = read_data_flag(args)
    if args.max_records is not None and n_rows(X) > args.max_records:
        rng = np.random.RandomState(args.seed)
        index = np.sort(rng.choice(n_rows(X), args.max_records, replace=False))
        X, y = take_rows(X, index), y[index]
    if np.unique(y).size < 2:
        raise UsageError(f"--data {args.data}: the label has fewer than 2 classes")
    return X, y, str(args.data)


def _markdown(result: Any, data: str, recipe: str) -> str:
    rows = [
        (
            "epsilon lower bound",
            f"{result.epsilon_lower:.3f} (delta = {result.delta:g}, "
            f"{100 * result.confidence:g} % confidence)",
        ),
        (
            "claimed epsilon",
            "none" if result.claimed_epsilon is None else f"{result.claimed_epsilon:g}",
        ),
        ("the claim", _claim_cell(result.claim_check)),
        ("p-value of the claim", "n/a" if result.p_value is None else f"{result.p_value:.3g}"),
        (
            "guesses right",
            f"{result.n_correct} of {result.n_guesses} (accuracy "
            f"{result.accuracy:.3f}, interval {result.accuracy_low:.3f}-"
            f"{result.accuracy_high:.3f})",
        ),
        (
            "rule",
            f"{result.k_plus} highest scores guessed in, {result.k_minus} lowest out, "
            f"the rest abstained; chosen by {result.guesses}"
            + (f" over {result.n_rules} rules" if result.n_rules > 1 else ""),
        ),
        (
            "canaries",
            f"{result.n_canaries} ({result.context.get('canaries')}), "
            f"{result.n_included} trained on",
        ),
        (
            "mu-GDP lower bound",
            f"{result.mu_lower:.3f}"
            + (
                ""
                if result.epsilon_lower_gdp is None
                else f" (epsilon {result.epsilon_lower_gdp:.3f} at this delta if "
                "the training's privacy curve is Gaussian)"
            ),
        ),
    ]
    table = "| | |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    return f"tabmia dpaudit: recipe {recipe}; data {data}\n\n{result.sentence()}\n\n{table}"


def _claim_cell(check: Any) -> str:
    if check is None:
        return "no claim given"
    words = {
        "refuted": "refuted",
        "consistent": "not refuted (this audit could have)",
        "cannot_tell": "cannot tell",
    }[check.state]
    if check.needed is not None:
        words += f" (at least {check.needed} {check.unit} could refute it)"
    return words


def _write(out: Path, payload: dict[str, Any], md: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("results.json", json.dumps(payload, indent=2) + "\n"), ("results.md", md)):
        fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{name}.")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, out / name)


def run_dpaudit_command(args: argparse.Namespace) -> int:
    """Run ``tabmia dpaudit`` with parsed arguments; returns the exit status."""
    _check(args)
    X, y, data = _load_data(args)
    recipe = _recipe(args, X)
    audit = OneRunAudit(
        recipe,
        n_canaries=args.canaries,
        canaries=args.canary_type,
        score=args.score,
        guesses=args.guesses,
        delta=args.delta,
        confidence=args.confidence,
        claimed_epsilon=args.epsilon,
        random_state=args.seed,
    )
    try:
        audit.split_sizes(n_rows(X))
    except ValueError as exc:
        raise UsageError(first_line(exc)) from exc
    try:
        result = audit.run(X, y)
    except Exception as exc:  # the user's recipe failing on the user's data
        raise UsageError(
            f"--recipe {args.recipe} could not be trained or queried on --data {data}: "
            f"{type(exc).__name__}: {first_line(exc)}"
        ) from exc
    md = _markdown(result, data, args.recipe)
    print(md)
    payload = {
        "tabmia_version": __version__,
        "command": getattr(args, "command_line", None),
        "data": data,
        "recipe": args.recipe,
        "seed": args.seed,
        "result": result.to_dict(),
    }
    _write(args.out, payload, md)
    print(f"wrote {args.out}/results.json, results.md", file=sys.stderr)
    return 0
