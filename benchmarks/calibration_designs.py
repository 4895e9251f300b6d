"""Which calibration design keeps the FPR promise at the least cost in attack power?

The shadow attacks calibrate their threshold on public records scored like a fresh
non-member. Two designs do that (``tabmia/attacks/_reference.py``):

- *OUT models* (the default): every public record trains some models and is scored by
  the models that did not train on it; a candidate is scored by as many models, drawn
  the same way. Every public record calibrates, and the models train on up to 3/4 of
  the public records.
- *hold-out* (``calibration_share > 0``): that share of the public records trains no
  model and calibrates alone; candidates are scored by every model.

Each is run on the benchmark's default game (``tabmia benchmark``: the CatBoost preset
target trains on half of the data set, the attacker holds a quarter, the candidates
are the last quarter and as many training records, ``--prior 1``) on the two exact
OpenML tasks where the old design lost most (361064 kdd_ipums_la_97-small, 361067
phoneme), with 16 shadows (64 where named; 4 RMIA references), 3 seeds. Two rows compare
LiRA's global and per-example variance at 64 shadows. Reported per design: precision
at 1% FPR on the oracle ROC (``TPR / (TPR + 0.01)``, balanced candidates: chance level
0.5), and, at the attack's own threshold (chosen without the candidates' membership),
the TPR and the FPR delivered on the non-member candidates with how many seeds landed
inside the split-conformal 95% band (:func:`tabmia.thresholds.conformal_fpr_band`) for
the number of calibration scores.

Run: ``python -m benchmarks.calibration_designs [--seeds 3] [--work DIR]`` (the cells
and shadow models are kept in ``--work``: a rerun reuses them).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import load_note, mean_std, use_shared_data, write_results

NAME = "calibration_designs"
DATASETS = ("openml:361064", "openml:361067")
FPR = 0.01
#: (label, attack spec); the runner passes the target's training-set size as
#: ``shadow_train_size`` to specs that do not set the models' share themselves.
DESIGNS = (
    ("offline LiRA, OUT models, shadows on 3/4 of the public records (default)", "lira"),
    ("offline LiRA, OUT models, shadows on 1/2", "lira:shadow_train_size=0.5"),
    ("offline LiRA, 1/2 held out, shadows on 1/2 of the rest (tabmia 0.1 default)",
     "lira:calibration_share=0.5:shadow_train_size=0.5"),
    ("offline LiRA, 8% held out (~100 records), shadows on 3/4 of the rest",
     "lira:calibration_share=0.08"),
    ("online LiRA, shadows on 1/2 of the pool (default)", "lira_online"),
    ("online LiRA, shadows on 2/3 of the pool (the target's size here)",
     "lira_online:shadow_train_size=0.667"),
    ("offline LiRA, 64 shadows, global variance (default)", "lira:n_shadow=64"),
    ("offline LiRA, 64 shadows, per-example variance", "lira:n_shadow=64:variance=per_example"),
    ("RMIA, 4 references on 1/2 of the public records (default)", "rmia"),
    ("RMIA, 4 references on 3/4 (one OUT reference per record)",
     "rmia:shadow_train_size=0.75"),
)


def read_cells(work: Path) -> dict[tuple[str, str], list[dict]]:
    """The stored cells of a ``run_benchmark`` folder, by (resolved data set, attack)."""
    by_key: dict[tuple[str, str], list[dict]] = {}
    for meta_path in sorted(Path(work, "cells").glob("*.json")):
        cell = json.loads(meta_path.read_text())
        with np.load(meta_path.with_suffix(".npz")) as data:
            cell["member"], cell["scores"] = data["member"], data["scores"]
        by_key.setdefault((cell["settings"]["dataset"], cell["attack"]), []).append(cell)
    return by_key


def _summarise(cells: list[dict]) -> dict:
    from tabmia.metrics import tpr_at_fpr
    from tabmia.thresholds import conformal_fpr_band

    prec, tpr_own, fpr_own, inside = [], [], [], 0
    for c in cells:
        m, s = np.asarray(c["member"], bool), np.asarray(c["scores"], float)
        t = tpr_at_fpr(m, s, FPR)
        prec.append(t / (t + FPR))
        flagged = s >= c["threshold"]
        tpr_own.append(float(flagged[m].mean()))
        fpr_own.append(float(flagged[~m].mean()))
        lo, hi = conformal_fpr_band(int(c["n_calibration"]), float(c["fpr_target"]),
                                    int((~m).sum()))
        inside += lo <= fpr_own[-1] <= hi
    return {"precision_at_1pct": prec, "tpr_own": tpr_own, "fpr_own": fpr_own,
            "seeds_inside_band": inside, "n_seeds": len(cells),
            "n_calibration": [int(c["n_calibration"]) for c in cells],
            "shadow_train_size": [c.get("shadow_train_size") for c in cells],
            "fit_seconds": [float(c["fit_seconds"]) for c in cells]}


def main(argv: list[str] | None = None) -> None:
    from tabmia.benchmark import run_benchmark

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--work", default=os.path.expanduser("~/.cache/tabmia-bench/" + NAME))
    args = parser.parse_args(argv)
    use_shared_data()
    load = {"start": os.getloadavg()}
    t0 = time.perf_counter()
    res = run_benchmark(list(DATASETS), model="catboost", attacks=[s for _, s in DESIGNS],
                        seeds=args.seeds, fprs=(FPR,), out_dir=Path(args.work), prior=1.0,
                        html=False)
    load["end"] = os.getloadavg()
    by_key = read_cells(Path(args.work))
    resolved = {n: e["resolved"] for n, e in res.results["datasets"].items()}
    table: dict[str, dict[str, dict]] = {}
    for label, spec in DESIGNS:
        for name, key in resolved.items():
            table.setdefault(label, {})[name] = _summarise(by_key.get((key, spec), []))
    lines = [
        "Precision at 1% FPR on the oracle ROC (balanced candidates: chance 0.5), mean ± "
        "std over seeds; at the attack's own threshold: TPR, delivered FPR on the "
        "non-member candidates (promised 0.01), and seeds inside the split-conformal 95% "
        "band. Game: CatBoost preset target on 1/2 of the data, public 1/4, candidates "
        f"1/4 + as many members; 16 shadows unless named / 4 RMIA references; {args.seeds} "
        "seeds.\n",
        "| design | data set | precision @ 1% | own TPR | own FPR | in band | calibration "
        "records | records per model |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, per in table.items():
        for name, r in per.items():
            lines.append(
                f"| {label} | {name} | {mean_std(r['precision_at_1pct'])} | "
                f"{mean_std(r['tpr_own'])} | {np.mean(r['fpr_own']):.4f} | "
                f"{r['seeds_inside_band']}/{r['n_seeds']} | {int(np.mean(r['n_calibration']))} | "
                f"{int(np.mean([v for v in r['shadow_train_size'] if v is not None] or [0]))} |")
    lines.append(f"\nWall time {time.perf_counter() - t0:.0f} s (cells reused from "
                 f"`--work` when present: {res.reused}).")
    write_results(NAME, {"datasets": list(DATASETS), "seeds": args.seeds, "fpr": FPR,
                         "designs": dict(DESIGNS), "results": table, "load": load},
                  "\n".join(lines) + load_note(load))


if __name__ == "__main__":
    main()
