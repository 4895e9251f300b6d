"""How much of its training set a tree model's own file gives back (issue 49, item 4).

Protocol, after Ferry, Fukasawa, Pascal & Vidal, "Trained Random Forests Completely
Reveal your Dataset" (ICML 2024), at their scale: per data set (COMPAS, Adult, German
credit) and seed, ``--n-records`` records drawn at random from the whole data set,
binarised as the paper does (each categorical column one-hot over its three most common
values plus "other"; each numeric column cut at its tertiles, or at its minimum where
the tertiles coincide, the bins one-hot), train:

- a decision tree (``max_depth=None``);
- random forests WITHOUT bootstrap (``bootstrap=False``: every tree sees every record)
  of 1, 5 and 10 trees grown in full;
- a bagged random forest (``bootstrap=True``, 5 trees, ``max_depth=5``): the paper's
  bagging variant, each record's multiplicity per tree an unknown too.

Then :func:`tabmia.reconstruction.reconstruct_training_set` rebuilds the training set
from the model alone (the attacker knows the one-hot groups, so every column is 0 / 1
and each group has exactly one 1), with one CP-SAT worker, its search limited to
``--work-limit`` units of CP-SAT's deterministic time (so that a busy machine changes the
seconds, not the outcome) and the whole solve to ``--time-limit`` wall seconds, and pairs it with the true records (optimal assignment): records
recovered exactly (label and every binary column: each is in a one-hot group), per-column
accuracy against the best constant guess (each column's most common value), label
accuracy, solver status, wall seconds and CPU seconds (this process: building the
program in Python and the one solver thread). The true records are used only for that scoring.

Run: ``nice -n 10 python -m benchmarks.tree_reconstruction [--seeds 0] [--work-limit 10] [--time-limit 150]
[--quick]``, about 10 minutes (writes ``results/tree_reconstruction.{json,md}``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._common import load_note, prepare_run, write_results

NAME = "tree_reconstruction"
DATASETS = ("compas", "adult", "german_credit")


def binarise(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[list[int]]]:
    """0 / 1 columns and the one-hot groups (column indices) they come in."""
    columns: dict[str, np.ndarray] = {}
    groups: list[list[int]] = []
    for name in frame.columns:
        values = frame[name]
        if isinstance(values.dtype, pd.CategoricalDtype) or values.dtype == object:
            top = values.value_counts().index[:3].tolist()
            labels = values.astype(object).where(values.isin(top), "other")
        else:
            cuts = np.unique(values.quantile([1 / 3, 2 / 3]).to_numpy())
            if len(cuts) == 1 and cuts[0] == values.max():
                cuts = np.array([values.min()])
            labels = pd.Series(
                np.searchsorted(cuts, values.to_numpy(), side="left"), index=values.index
            )
        start = len(columns)
        for value in sorted(labels.unique(), key=str):
            columns[f"{name}={value}"] = (labels == value).to_numpy().astype(np.int8)
        groups.append(list(range(start, len(columns))))
    return pd.DataFrame(columns, index=frame.index), groups


#: ``--bagged-probe``: bagged forests far smaller than the protocol's, to find the size
#: at which the bagging variant still returns records within the same limits
BAGGED_PROBE = ((1, 3), (3, 3), (1, None))


def models(quick: bool, bagged_probe: bool = False) -> list[tuple[str, Any]]:
    """The tree models of the protocol, by row name."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    if bagged_probe:
        return [
            (
                f"forest bagged, {n_trees} trees, depth {depth}",
                RandomForestClassifier(n_trees, bootstrap=True, max_depth=depth),
            )
            for n_trees, depth in BAGGED_PROBE
        ]

    rows: list[tuple[str, Any]] = [("tree, depth None", DecisionTreeClassifier())]
    shapes = [(1, None), (5, None)] if quick else [(1, None), (5, None), (10, None)]
    for n_trees, depth in shapes:
        rows.append(
            (
                f"forest no bootstrap, {n_trees} trees, depth {depth}",
                RandomForestClassifier(n_trees, bootstrap=False, max_depth=depth),
            )
        )
    rows.append(
        ("forest bagged, 5 trees, depth 5", RandomForestClassifier(5, bootstrap=True, max_depth=5))
    )
    return rows


def one_row(
    data: str,
    seed: int,
    name: str,
    model: Any,
    X: pd.DataFrame,
    y: np.ndarray,
    groups: list[list[int]],
    time_limit: float,
    work_limit: float,
) -> dict[str, Any]:
    """Train ``model`` on the records, rebuild them from it, and score the rebuild."""
    from tabmia.reconstruction import reconstruct_training_set

    model.set_params(random_state=seed).fit(X, y)
    cpu = time.process_time()
    result = reconstruct_training_set(
        model,
        X,
        y,
        one_hot_groups=groups,
        time_limit=time_limit,
        work_limit=work_limit,
        n_jobs=1,
        random_state=seed,
    )
    cpu = time.process_time() - cpu
    accuracy = list((result.feature_accuracy or {}).values())
    baseline = list((result.baseline_feature_accuracy or {}).values())
    return {
        "data": data,
        "seed": seed,
        "model": name,
        "n_records": len(X),
        "n_columns": X.shape[1],
        "n_columns_split": len(accuracy),
        "n_nodes": sum(e.tree_.node_count for e in getattr(model, "estimators_", [model])),
        "status": result.status,
        "seconds": round(result.seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "n_exact": result.n_exact,
        "exact_share": result.exact_share,
        "column_accuracy": float(np.mean(accuracy)) if accuracy else None,
        "baseline_column_accuracy": float(np.mean(baseline)) if baseline else None,
        "label_accuracy": result.label_accuracy,
        "n_variables": result.n_variables,
        "sentence": result.sentence(),
    }


def _cell(value: Any, digits: int = 3) -> str:
    return (
        "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    )


def markdown(
    rows: list[dict[str, Any]], args: argparse.Namespace, load: dict[str, Any], seconds: float
) -> str:
    """The results table, with the protocol's settings and the machine's load."""
    lines = [
        f"Training sets rebuilt from a tree model's own file with CP-SAT (Ferry et al., ICML "
        f"2024): {args.n_records} records per data set, binarised (one-hot groups known to "
        f"the attacker), seeds {list(args.seeds)}, one CP-SAT worker, search limited to "
        f"{args.work_limit:g} units of deterministic time and the solve to "
        f"{args.time_limit:g} wall seconds, under `nice`. Exact: the record's label and every column some tree "
        "splits on or that is in a one-hot group (here: every column; records paired one to "
        "one, optimally). Column accuracy: mean over those columns; baseline: each column's "
        "most common value. A "
        "reconstruction not found within the limit (UNKNOWN) proves nothing.",
        "",
        "| data | model | nodes | columns | status | wall s (CPU s) | exact | "
        "column acc. (baseline) | label acc. |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        exact = "-" if r["n_exact"] is None else f"{r['n_exact']}/{r['n_records']}"
        status = r["status"]
        if status == "UNKNOWN":  # which limit stopped it: the wall clock depends on the load
            # a solve with less CPU than its work limit ran out of wall clock (deterministic
            # time tracks CPU seconds), however short of the limit its wall seconds are:
            # building the program in Python took the rest
            starved = r["cpu_seconds"] < args.work_limit
            if r["seconds"] >= args.time_limit - 1 or starved:
                status += " (wall limit" + (", CPU-starved)" if starved else ")")
            else:
                status += " (work limit)"
        lines.append(
            f"| {r['data']} | {r['model']} | {r['n_nodes']} | {r['n_columns']} | {status} | "
            f"{r['seconds']:.1f} ({r['cpu_seconds']:.1f}) | {exact} | "
            f"{_cell(r['column_accuracy'])} ({_cell(r['baseline_column_accuracy'])}) | "
            f"{_cell(r['label_accuracy'])} |"
        )
    bagged = [r for r in rows if r["model"].startswith("forest bagged")]
    if bagged:
        solved = [r for r in bagged if r["n_exact"] is not None]
        lines.append(
            "\nBagged forests (the paper's bagging variant): each record's multiplicity in "
            "each tree is a further unknown (likely multiplicities preferred), a leaf's "
            "class counts weigh records by it, and the first tree no longer holds every "
            "record once, so the symmetry break that solves the forests without bootstrap "
            "in seconds (records filling the first tree's leaves in order) is lost. "
            + (
                f"{len(solved)} of {len(bagged)} bagged forests gave a reconstruction here: "
                + "; ".join(
                    f"{r['data']} {r['model']}: {r['n_exact']}/{r['n_records']} exact"
                    for r in solved
                )
                + ". "
                if solved
                else f"None of the {len(bagged)} bagged forests gave a reconstruction "
                "within the limits: the share of records they give back is not measured "
                "(an UNKNOWN is not a zero), and tabmia claims none for bagged forests. "
            )
            + "Where wall seconds far exceed CPU seconds, other jobs starved the solver "
            "and the wall-clock limit, not the search, ended it."
        )
    lines.append(f"\nWhole run: {seconds:.0f} s." + load_note(load))
    return "\n".join(lines)


def rewrite_markdown(name: str = NAME) -> None:
    """The markdown again from the committed json (its machine, load and rows)."""
    import json

    from benchmarks._common import results_dir

    payload = json.loads((results_dir() / f"{name}.json").read_text())
    machine, args = payload["machine"], argparse.Namespace(**payload["config"])
    header = (
        f"# {name}\n\nMachine: {machine.get('cpu_model', machine['processor'])}, "
        f"{machine['cpu_count']} cores, {machine.get('mem_total_gb', '?')} GB, GPU: "
        f"{machine['gpu'] or 'none'}; Python {machine['python']}; {machine['date']}\n\n"
        "Versions: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items() if v) + "\n\n"
    )
    text = markdown(payload["rows"], args, payload["load"], payload["seconds"])
    (results_dir() / f"{name}.md").write_text(header + text.rstrip() + "\n")


def main(argv: list[str] | None = None) -> int:
    """Run the protocol and write its json and markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--n-records", type=int, default=100)
    parser.add_argument("--time-limit", type=float, default=150.0)
    parser.add_argument("--work-limit", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="fewer forests, for a smoke run")
    parser.add_argument(
        "--bagged-probe",
        action="store_true",
        help="only small bagged forests; writes results/tree_reconstruction_bagged[_N].*",
    )
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--out", default=None, help="write the results here instead")
    parser.add_argument(
        "--rewrite-md", action="store_true", help="only rebuild the markdown from the json"
    )
    args = parser.parse_args(argv)
    prepare_run(args)
    name = NAME
    if args.bagged_probe:  # the protocol's 100 records, or the size in the name
        name += "_bagged" + ("" if args.n_records == 100 else f"_{args.n_records}")
    if args.rewrite_md:
        rewrite_markdown(name)
        return 0
    from tabmia.datasets import load_dataset

    load = {"start": os.getloadavg()}
    start = time.perf_counter()
    rows = []
    for data in args.datasets:
        bunch = load_dataset(data)
        X_all, groups = binarise(bunch.data)
        y_all = pd.Series(bunch.target).astype("category").cat.codes.to_numpy()
        for seed in args.seeds:
            pick = np.random.RandomState(seed).choice(len(X_all), args.n_records, replace=False)
            X, y = X_all.iloc[pick].reset_index(drop=True), y_all[pick]
            for name, model in models(args.quick, args.bagged_probe):
                row = one_row(
                    data, seed, name, model, X, y, groups, args.time_limit, args.work_limit
                )
                print(
                    f"{data} seed {seed} {name}: {row['status']} {row['seconds']:.1f} s, "
                    f"exact {row['n_exact']}",
                    file=sys.stderr,
                    flush=True,
                )
                rows.append(row)
    seconds = time.perf_counter() - start
    load["end"] = os.getloadavg()
    payload = {
        "protocol": __doc__,
        "config": vars(args),
        "load": load,
        "seconds": seconds,
        "rows": rows,
    }
    write_results(name, payload, markdown(rows, args, load, seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
