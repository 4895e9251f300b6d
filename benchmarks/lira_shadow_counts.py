"""Do more shadows help LiRA on the benchmark's default game, beyond seed noise?

Offline and online LiRA with 16, 32 and 64 CatBoost shadows on the default game of
``tabmia benchmark`` (the setup of ``calibration_designs``) over more seeds than the
benchmark table, so that a difference between shadow counts can be told from the
spread between seeds: per data set, the mean precision at 1% FPR (oracle ROC,
balanced candidates) of each count and the paired difference 64 - 16 with its
standard error over seeds. The shadows of a seed are shared between the counts (16 of
them are the first 16 of the 64), so the difference is paired. A second game gives the
attacker twice as many public records as the target's training set, to tell whether
offline LiRA is held back by the number of its shadows or by their size.

Run: ``python -m benchmarks.lira_shadow_counts [--seeds 10] [--work DIR]``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import load_note, mean_std, use_shared_data, write_results
from benchmarks.calibration_designs import DATASETS, FPR, read_cells

NAME = "lira_shadow_counts"
COUNTS = (16, 32, 64)
#: The benchmark's default game, and one where the attacker holds twice as many public
#: records as the target trained on (so offline shadows can be as large as the target).
GAMES = {
    "default (target 1/2, public 1/4)": {"train_size": 0.5, "public_size": 0.5},
    "large public (target 1/4, public 1/2)": {"train_size": 0.25, "public_size": 2 / 3},
}


def _compare(cells: dict, dataset: str, specs: dict, mode: str, tpr_at_fpr) -> dict:
    """Per-seed precision of each shadow count, and the paired 64 - 16 difference."""
    prec: dict[int, dict[int, float]] = {}
    sizes = set()
    for n in COUNTS:
        prec[n] = {}
        for c in cells.get((dataset, specs[(mode, n)]), []):
            t = tpr_at_fpr(np.asarray(c["member"], bool), c["scores"], FPR)
            prec[n][c["settings"]["seed"]] = t / (t + FPR)
            sizes.add(c.get("shadow_train_size"))
    seeds = sorted(set(prec[COUNTS[0]]) & set(prec[COUNTS[-1]]))
    diff = np.array([prec[COUNTS[-1]][s] - prec[COUNTS[0]][s] for s in seeds])
    se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
    return {"precision": {n: [prec[n][s] for s in seeds if s in prec[n]] for n in COUNTS},
            "seeds": seeds, "diff_64_16": diff.tolist(), "diff_se": se,
            "shadow_train_size": "/".join(str(v) for v in sorted(x for x in sizes if x))}


def main(argv: list[str] | None = None) -> None:
    from tabmia.benchmark import run_benchmark
    from tabmia.metrics import tpr_at_fpr

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--work", default=os.path.expanduser("~/.cache/tabmia-bench/" + NAME))
    args = parser.parse_args(argv)
    use_shared_data()
    specs = {(mode, n): f"{mode}:n_shadow={n}" for mode in ("lira", "lira_online")
             for n in COUNTS}
    load = {"start": os.getloadavg()}
    t0 = time.perf_counter()
    table: dict = {}
    lines = [
        f"Precision at 1% FPR on the oracle ROC (balanced candidates), mean ± std over "
        f"{args.seeds} seeds; 64 - 16: the mean paired difference ± its standard error. "
        "CatBoost preset target; offline shadows on up to 3/4 of the public records (the "
        "target's training-set size where the public records allow), online on 1/2 of the "
        "pool.\n",
        "| game | attack | data set | records per shadow | "
        + " | ".join(f"{n} shadows" for n in COUNTS) + " | 64 - 16 |",
        "|---|---|---|---|" + "---|" * len(COUNTS) + "---|",
    ]
    for game, sizes in GAMES.items():
        work = Path(args.work) / game.split()[0].replace(" ", "")
        res = run_benchmark(list(DATASETS), model="catboost", attacks=list(specs.values()),
                            seeds=args.seeds, fprs=(FPR,), out_dir=work, prior=1.0,
                            html=False, **sizes)
        cells = read_cells(work)
        for name, entry in res.results["datasets"].items():
            for mode in ("lira", "lira_online"):
                row = _compare(cells, entry["resolved"], specs, mode, tpr_at_fpr)
                table.setdefault(game, {}).setdefault(name, {})[mode] = row
                lines.append(
                    f"| {game} | {mode} | {name} | {row['shadow_train_size']} | "
                    + " | ".join(mean_std(row["precision"][n]) for n in COUNTS)
                    + f" | {np.mean(row['diff_64_16']):+.3f} ± {row['diff_se']:.3f} |")
    load["end"] = os.getloadavg()
    lines.append(f"\nWall time {time.perf_counter() - t0:.0f} s.")
    write_results(NAME, {"datasets": list(DATASETS), "seeds": args.seeds, "fpr": FPR,
                         "counts": list(COUNTS), "games": GAMES, "results": table,
                         "load": load},
                  "\n".join(lines) + load_note(load))


if __name__ == "__main__":
    main()
