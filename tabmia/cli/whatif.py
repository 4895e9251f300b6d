"""``tabmia whatif``: candidate fixes of a model re-audited side by side.

Trains the target (``--recipe``: a preset name or a joblib file of an unfitted estimator)
on a share of the data (``--train-size``), and audits it and its variants with the same
attacks on the same public records and candidates: retrained with other parameters
(``--variants regularise`` or ``--variant retrain:max_depth=4``, ``--variant
grid:max_depth=4/8:min_samples_leaf=1/10``), the same model behind a hardened output
(``harden``: ``--variant harden:round=2``, ``harden:top_k=1``, ``harden:labels_only``),
DP training (``dp``: ``--variant dp:logistic_regression:epsilon=1``), at most k records
per person (``cap``: ``--variant cap:1``; data with person ids). Utility is measured on
held-out records. Prints which variants pass ``--limit`` and the one that passes with the
least utility lost (none where the original passes), and writes ``report.html``,
``results.md``, ``results.json``, ``frontier.csv``,
``fpr_delivered.csv`` and ``frontier.png`` to ``--out``; finished variants are kept in
``--out``/run and a rerun skips them. Exit status: 0 when a variant passes, 1 when none
does, 2 for bad input (one ``tabmia: error:`` line, before anything is trained).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from tabmia import whatif as w
from tabmia._attack_builder import _value, build_attacks
from tabmia._groups import person_codes
from tabmia.cli._args import add_command, names
from tabmia.cli._inputs import (
    UsageError,
    add_data_flags,
    check_out_folder,
    first_line,
    read_data_flag,
)
from tabmia.cli._setup import _recipe
from tabmia.experiment import subsample, subsample_persons
from tabmia.gate import parse_limits
from tabmia.recipes import MODEL_NAMES
from tabmia.structure import NotATreeModelError
from tabmia.target import take_rows
from tabmia.whatif import PRESETS, UTILITY_METRICS, resolve_variants, whatif
from tabmia.whatif._dp import dp_unavailable

__all__ = ["add_whatif_parser", "parse_variant", "run_whatif_command"]


def add_whatif_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``whatif`` on the ``tabmia`` subparsers."""
    p = add_command(
        sub,
        "whatif",
        doc=__doc__,
        help="re-audit candidate fixes of a model side by side: a privacy-utility frontier",
    )
    add_data_flags(p)
    p.add_argument(
        "--recipe",
        default="random_forest",
        help=f"the target's training recipe: {', '.join(MODEL_NAMES)}, or a joblib file of an "
        "unfitted estimator (loading it runs code in it); default random_forest",
    )
    p.add_argument(
        "--variants",
        type=names,
        default=None,
        help="presets, comma-separated: "
        + "; ".join(f"{k}: {v}" for k, v in PRESETS.items())
        + " (default regularise,harden,dp; without diffprivlib regularise,harden)",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="SPEC",
        help="one more variant (repeatable): retrain:PARAM=VALUE[:...], grid:PARAM=V1/V2[:...], "
        "harden:round=D | harden:top_k=K | harden:labels_only, "
        "dp:MODEL:epsilon=E[:delta=D] (MODEL: logistic_regression, gaussian_nb, random_forest, "
        "mlp), cap:K",
    )
    p.add_argument(
        "--attacks",
        default="loss,lira:n_shadow=8",
        help="attack specs, comma-separated (default loss,lira:n_shadow=8)",
    )
    p.add_argument("--fpr", type=float, default=0.01, help="FPR every attack's threshold promises")
    p.add_argument("--limit", default="tpr@0.01=0.05", help="the gate (default tpr@0.01=0.05)")
    p.add_argument(
        "--utility-metric",
        default="roc_auc",
        choices=UTILITY_METRICS,
        help="what utility lost means (default roc_auc)",
    )
    p.add_argument(
        "--train-size",
        type=float,
        default=0.5,
        help="share of the records that train the target (default 0.5)",
    )
    p.add_argument(
        "--utility-fraction",
        type=float,
        default=0.3,
        help="share of the other records held out for utility (default 0.3)",
    )
    p.add_argument("--max-records", type=int, default=None, help="subsample the data first")
    p.add_argument(
        "--no-groups",
        action="store_true",
        help="ignore the person ids a data set carries (diabetes130's patients)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of every split, target and attack")
    p.add_argument("--bootstrap", type=int, default=1000, help="paired bootstrap replicates")
    p.add_argument("--threads", type=int, default=None, help="CatBoost threads of a preset recipe")
    p.add_argument("--trust-types", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--out",
        type=Path,
        default=Path("tabmia-whatif"),
        help="output folder (default ./tabmia-whatif)",
    )
    return p


def parse_variant(text: str) -> list[Any]:
    """The variants of one ``--variant`` spec.

    Raises
    ------
    UsageError
        Naming what is wrong with the spec.

    Returns
    -------
    list of Variant
    """
    kind, *parts = [s.strip() for s in text.split(":")]
    try:
        if kind == "cap":
            if len(parts) != 1:
                raise ValueError("expected cap:K")
            return [w.cap(int(parts[0]))]
        if kind == "harden":
            if parts == ["labels_only"]:
                return [w.harden(labels_only=True)]
            kw: dict[str, Any] = {k: int(v) for k, v in _pairs(parts).items()}
            return [w.harden(**kw)]
        if kind == "dp":
            if not parts:
                raise ValueError("expected dp:MODEL:epsilon=E")
            model, kw = parts[0], _pairs(parts[1:])
            if "epsilon" not in kw:
                raise ValueError("a DP variant needs epsilon=E")
            return [w.dp(model, **{k: _value(v) for k, v in kw.items()})]
        if kind == "retrain":
            return [w.retrain(**{k: _value(v) for k, v in _pairs(parts).items()})]
        if kind == "grid":
            return w.grid(
                {k: [_value(x) for x in v.split("/") if x] for k, v in _pairs(parts).items()}
            )
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--variant {text}: {first_line(exc)}") from exc
    raise UsageError(
        f"--variant {text}: unknown kind {kind!r}; use retrain, grid, harden, dp or cap"
    )


def _pairs(parts: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"expected PARAM=VALUE, got {part!r}")
        if key in out:
            raise ValueError(f"{key} given twice")
        out[key] = value
    return out


def _load(args: argparse.Namespace) -> tuple[Any, Any, Any, str]:
    import numpy as np

    X, y, bunch = read_data_flag(args)
    groups = None if bunch is None or args.no_groups else bunch.get("groups")
    y = np.asarray(y)
    if groups is None:
        X, y = subsample(X, y, args.max_records, args.seed)
    else:
        X, y, groups = subsample_persons(X, y, np.asarray(groups), args.max_records, args.seed)
    if np.unique(y).size < 2:
        raise UsageError(f"--data {args.data}: the label has fewer than 2 classes")
    return X, y, groups, str(args.data)


def _split(n: int, share: float, seed: int, groups: Any) -> tuple[Any, Any]:
    """Sorted (training rows, population rows), persons kept whole."""
    import numpy as np

    codes = person_codes(groups) if groups is not None else np.arange(n)
    n_units = int(codes.max()) + 1
    chosen = np.random.RandomState(seed).permutation(n_units)[: int(round(share * n_units))]
    train = np.isin(codes, chosen)
    return np.flatnonzero(train), np.flatnonzero(~train)


def _write(out: Path, files: dict[str, str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{name}.")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, out / name)


def run_whatif_command(args: argparse.Namespace) -> int:
    """Run ``tabmia whatif`` with parsed arguments; returns the exit status."""
    import numpy as np

    # --- every check before anything is trained ---------------------------------------
    if not 0.0 < args.train_size < 1.0:
        raise UsageError(f"--train-size must be in (0, 1), got {args.train_size:g}")
    if not 0.0 < args.utility_fraction < 1.0:
        raise UsageError(f"--utility-fraction must be in (0, 1), got {args.utility_fraction:g}")
    if args.max_records is not None and args.max_records < 50:
        raise UsageError(f"--max-records must be at least 50, got {args.max_records}")
    try:
        parse_limits(args.limit)
    except ValueError as exc:
        raise UsageError(f"--limit {args.limit}: {first_line(exc)}") from exc
    check_out_folder(args.out)
    if args.variants is None:  # the DP preset where its library imports
        args.variants = ("regularise", "harden") + (
            ("dp",) if dp_unavailable("logistic_regression") is None else ()
        )
    specs: list[Any] = [v for v in args.variants if v != "none"]  # --variants none: only --variant
    for text in args.variant:
        specs.extend(parse_variant(text))
    try:
        attacks = build_attacks(args.attacks, fpr=args.fpr, random_state=args.seed)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--attacks {args.attacks}: {first_line(exc)}") from exc
    X, y, groups, data = _load(args)
    recipe = _recipe(args, X)
    train, pop = _split(len(y), args.train_size, args.seed, groups)
    g = (None, None) if groups is None else (np.asarray(groups)[train], np.asarray(groups)[pop])
    try:  # the variants checked against the recipe: before anything is trained
        resolve_variants(
            specs or "original",
            recipe,
            classes=np.unique(y),
            has_proba=hasattr(recipe, "predict_proba"),
            has_groups=groups is not None,
        )
    except ValueError as exc:
        raise UsageError(first_line(exc)) from exc
    try:
        result = _run_whatif(args, recipe, X, y, train, pop, attacks, specs, g)
    except NotATreeModelError as exc:  # a white-box attack on a variant without trees
        raise UsageError(
            f"--attacks {args.attacks}: {first_line(exc)}; a white-box attack (leaf) needs "
            "every variant to be a tree model"
        ) from exc
    md = result.to_markdown()
    table = result.frontier()
    print(md)
    result.plot(args.out / "frontier.png")
    payload = {
        "command": getattr(args, "command_line", None),
        "data": data,
        "recipe": args.recipe,
        "seed": args.seed,
        "limit": args.limit,
        "best": result.best(),
        "summary": result.summary().split("\n"),
        "frontier": json.loads(table.to_json(orient="records")),
    }
    _write(
        args.out,
        {
            "results.md": md,
            "results.json": json.dumps(payload, indent=2) + "\n",
            "frontier.csv": table.drop(columns=["notes"]).to_csv(index=False),
            "fpr_delivered.csv": result.delivered_fpr().to_csv(index=False),
            "report.html": result.to_html(command=getattr(args, "command_line", None)),
        },
    )
    print(
        f"wrote {args.out}/report.html, results.md, results.json, frontier.csv, "
        "fpr_delivered.csv, frontier.png",
        file=sys.stderr,
    )
    return 0 if bool(table["passes"].any()) else 1


def _run_whatif(
    args: Any, recipe: Any, X: Any, y: Any, train: Any, pop: Any, attacks: Any, specs: Any, g: Any
) -> Any:
    """The variants' audits (:func:`tabmia.whatif.whatif`) with the command's settings."""
    return whatif(
        recipe,
        take_rows(X, train),
        y[train],
        take_rows(X, pop),
        y[pop],
        attacks,
        variants=specs or "original",
        groups_train=g[0],
        groups_population=g[1],
        limit=args.limit,
        utility_metric=args.utility_metric,
        utility_fraction=args.utility_fraction,
        n_bootstrap=args.bootstrap,
        random_state=args.seed,
        output_dir=args.out / "run",
        progress=sys.stderr.isatty(),
    )
