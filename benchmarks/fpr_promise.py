"""Does the FPR that ``threshold_goal="fpr"`` promises hold on fresh non-members?

Protocol, per seed, on Adult (one-hot, numeric columns scaled to [0, 1]):

- a seeded shuffle splits the records into the target's training set (members),
  the attacker's public records and fresh non-members that neither the target nor
  any attack's ``fit`` sees;
- four targets: a random forest, histogram gradient boosting, logistic regression
  and a torch MLP (:class:`tabmia.shadow.TorchMLPClassifier`); shadow / reference
  models are clones of the target's recipe;
- every attack that offers the goal is fitted on the public records with
  ``fpr=0.01``; the 5% threshold is the split-conformal threshold at 5% of the same
  calibration scores (``threshold_at_fpr(attack.calibration_scores_, 0.05)``: what
  ``fit`` with ``fpr=0.05`` chooses, except that LiRA's ``proba_clip="auto"`` search
  aims at the 1% point);
- online LiRA is fitted on a pool of the public records, the members and the fresh
  non-members, told which pool records are the public ones (``known_nonmembers``);
  its FPR is measured on the fresh non-members in the pool (the online promise);
- the delivered FPR (share of fresh non-members flagged) is compared with the band
  :func:`tabmia.thresholds.conformal_fpr_band` allows for the number of calibration
  scores, at a Bonferroni level over all cells (family-wise 95%), and the mean over
  seeds with the band of the mean (simulated from the same beta-binomial model).
  A cell is "discrete" when the calibration score the threshold sits on is tied
  (a forest's counted probabilities, Merlin's ratio): ties can only lower the FPR,
  so only the upper end of the band binds there;
- Morgan refuses the goal (checked: its ``fit`` raises);
- "public records duplicated" rows: offline LiRA and RMIA fitted on every public
  record twice (identical copies, one IN / OUT mask per record: docs/calibration.md);
  their band is that of the distinct calibration records, as copies add none.

Run: ``nice -n 5 python -m benchmarks.fpr_promise [--seeds 5] [--quick]``.
``--only duplicated`` runs just the duplicated rows and merges them into the
committed results (same configuration required), recording which rows were rerun
when.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any, Callable

import numpy as np

from benchmarks._common import load_note, use_shared_data, write_results

NAME = "fpr_promise"
FPRS = (0.01, 0.05)
FAMILY_LEVEL = 0.95
#: Attacks fitted on every public record twice, and the attacks they copy.
DUPLICATED = {"LiRA offline, public records duplicated": "LiRA offline",
              "RMIA, public records duplicated": "RMIA"}


# --------------------------------------------------------------------- recipes
def make_targets(quick: bool) -> dict[str, Callable[[int], Any]]:
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    from tabmia.shadow import TorchMLPClassifier

    trees = 30 if quick else 50
    return {
        "forest": lambda s: RandomForestClassifier(n_estimators=trees, random_state=s),
        "gradient_boosting": lambda s: HistGradientBoostingClassifier(
            max_iter=trees, random_state=s),
        "logistic_regression": lambda s: LogisticRegression(max_iter=2000),
        "mlp": lambda s: TorchMLPClassifier(
            hidden_layer_sizes=(128, 128), epochs=5 if quick else 30, batch_size=200,
            lr=0.005, device="cpu", random_state=s),
    }


def make_attacks(n_shadow: int, n_reference: int, n_noise: int, n_jobs: int,
                 quick: bool) -> dict[str, Callable[[Any, int], Any]]:
    from tabmia.attacks import (
        CalibratedAttack,
        LiRAAttack,
        LossAttack,
        MerlinAttack,
        QuantileAttack,
        RMIAAttack,
        ScoreAttack,
    )

    shadows = {"n_jobs": n_jobs}
    quantile_params = {"iterations": 40 if quick else 200, "depth": 4}
    attacks = {
        "Loss": lambda t, s: LossAttack(t),
        "Loss class-based": lambda t, s: LossAttack(t, class_based=True),
        "Confidence": lambda t, s: ScoreAttack(t, statistic="confidence"),
        "Quantile": lambda t, s: QuantileAttack(t, cv=2, params=quantile_params, n_jobs=n_jobs,
                                                random_state=s),
        "LiRA offline": lambda t, s: LiRAAttack(t, n_shadow=n_shadow, random_state=s, **shadows),
        "LiRA offline 3/4": lambda t, s: LiRAAttack(t, n_shadow=n_shadow, shadow_train_size=0.75,
                                                    random_state=s, **shadows),
        "LiRA offline hold-out": lambda t, s: LiRAAttack(t, n_shadow=n_shadow,
                                                         calibration_share=0.5,
                                                         random_state=s, **shadows),
        "LiRA online": lambda t, s: LiRAAttack(t, n_shadow=n_shadow, online=True, pkeep=0.25,
                                               random_state=s, **shadows),
        "RMIA": lambda t, s: RMIAAttack(t, n_reference=n_reference, random_state=s, **shadows),
        "Calibrated": lambda t, s: CalibratedAttack(t, n_reference=n_reference, random_state=s,
                                                    **shadows),
        "Merlin": lambda t, s: MerlinAttack(t, n_noise=n_noise, sigma=0.1, noise_scale="std",
                                            ties="half", random_state=s),
    }
    attacks.update({name: attacks[like] for name, like in DUPLICATED.items()})
    return attacks


# ------------------------------------------------------------------------ bands
def tied_at_threshold(calibration: np.ndarray, threshold: float, copies: int = 1) -> bool:
    """The calibration score the threshold sits on is shared by several records (more
    than the ``copies`` of one record, whose scores are equal by design)."""
    below = calibration[calibration < threshold]
    return below.size > 0 and int(np.sum(calibration == below.max())) > copies


def mean_band(n_cals: list[int], fpr: float, n_fresh: list[int], level: float,
              rng: np.random.RandomState, draws: int = 200_000) -> tuple[float, float]:
    """Central ``level`` interval of the mean delivered FPR over independent seeds."""
    total = np.zeros(draws)
    for n, m in zip(n_cals, n_fresh):
        k = math.ceil((n + 1) * (1.0 - fpr) - 1e-9)
        f = rng.beta(n + 1 - k, k, size=draws)
        total += rng.binomial(m, f) / m
    total /= len(n_cals)
    tail = (1.0 - level) / 2.0
    return float(np.quantile(total, tail)), float(np.quantile(total, 1.0 - tail))


# ------------------------------------------------------------------------- runs
def run_cell(name: str, attack: Any, X: np.ndarray, y: np.ndarray, splits: dict[str, np.ndarray]
             ) -> dict[str, Any]:
    from tabmia.thresholds import threshold_at_fpr

    pub, fresh, train = splits["public"], splits["fresh"], splits["train"]
    n_distinct = pub.size
    if name in DUPLICATED:
        pub = np.r_[pub, pub]
    t0 = time.perf_counter()
    attack.set_params(fpr=FPRS[0])
    if getattr(attack, "_fit_includes_candidates", False):
        pool = np.r_[pub, train, fresh]
        known = np.r_[np.ones(pub.size, bool), np.zeros(train.size + fresh.size, bool)]
        attack.fit(X[pool], y[pool], known_nonmembers=known)
    else:
        attack.fit(X[pub], y[pub])
    scores = attack.decision_function(X[fresh], y[fresh])
    cal = np.asarray(attack.calibration_scores_, dtype=np.float64)
    # the band counts distinct calibration records: a copy's score repeats its record's
    n_cal = int(cal.size) if name not in DUPLICATED else int(cal.size * n_distinct / pub.size)
    out = {"n_calibration": n_cal, "n_calibration_scores": int(cal.size),
           "n_fresh": int(fresh.size), "seconds": time.perf_counter() - t0, "fpr": {}}
    for fpr in FPRS:
        thr = attack.threshold_ if fpr == FPRS[0] else threshold_at_fpr(cal, fpr)
        out["fpr"][str(fpr)] = {
            "delivered": float(np.mean(scores >= thr)),
            "discrete": tied_at_threshold(cal, thr, copies=2 if name in DUPLICATED else 1),
        }
    return out


def morgan_refuses(target: Any, X: np.ndarray, y: np.ndarray) -> str:
    from tabmia.attacks import MorganAttack

    try:
        MorganAttack(target, n_noise=2, threshold_goal="fpr").fit(X, y)
    except ValueError as exc:
        return str(exc)
    raise AssertionError("MorganAttack accepted threshold_goal='fpr'")


def split(n: int, seed: int, n_train: int, n_public: int, n_fresh: int) -> dict[str, np.ndarray]:
    perm = np.random.RandomState(seed).permutation(n)
    a, b = n_train, n_train + n_public
    return {"train": perm[:a], "public": perm[a:b], "fresh": perm[b:b + n_fresh]}


def evaluate(cells: list[dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    """Band and inside/outside flag of every cell and of every mean over seeds."""
    from tabmia.thresholds import conformal_fpr_band

    n_cells = len(cells) * len(FPRS)
    level = 1.0 - (1.0 - FAMILY_LEVEL) / max(n_cells, 1)
    for c in cells:
        for fpr in FPRS:
            d = c["fpr"][str(fpr)]
            lo, hi = conformal_fpr_band(c["n_calibration"], fpr, c["n_fresh"], level=level)
            lo95, hi95 = conformal_fpr_band(c["n_calibration"], fpr, c["n_fresh"])
            d.update(band=[lo, hi], band_95=[lo95, hi95],
                     above=d["delivered"] > hi,
                     inside=d["delivered"] <= hi and (d["discrete"] or d["delivered"] >= lo),
                     inside_95=lo95 <= d["delivered"] <= hi95)
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for c in cells:
        for fpr in FPRS:
            groups.setdefault((c["attack"], c["target"], fpr), []).append(c)
    rng = np.random.RandomState(0)
    g_level = 1.0 - (1.0 - FAMILY_LEVEL) / max(len(groups), 1)
    summary = []
    for (attack, target, fpr), cs in groups.items():
        vals = [c["fpr"][str(fpr)]["delivered"] for c in cs]
        discrete = any(c["fpr"][str(fpr)]["discrete"] for c in cs)
        lo, hi = mean_band([c["n_calibration"] for c in cs], fpr, [c["n_fresh"] for c in cs],
                           g_level, rng)
        mean = float(np.mean(vals))
        summary.append({
            "attack": attack, "target": target, "fpr": fpr, "per_seed": vals, "mean": mean,
            "mean_band": [lo, hi], "discrete": discrete,
            "inside": mean <= hi and (discrete or mean >= lo),
            "cells_inside": int(sum(c["fpr"][str(fpr)]["inside"] for c in cs)),
            "n_calibration": [c["n_calibration"] for c in cs],
        })
    return {"cell_level": level, "group_level": g_level, "summary": summary}


def markdown(report: dict[str, Any]) -> str:
    cfg = report["config"]
    ev = report["evaluation"]
    n_cells = sum(len(s["per_seed"]) for s in ev["summary"])
    lines = [
        f"Adult, {len(cfg['seeds'])} seeds ({', '.join(map(str, cfg['seeds']))}); per seed "
        f"{cfg['n_train']:,} members (target training set), {cfg['n_public']:,} public records "
        f"for `fit`, {cfg['n_fresh']:,} fresh non-members never seen by the target or `fit`. "
        f"{cfg['n_shadow']} LiRA shadows (online: pkeep 0.25, the pool is public + members + "
        f"fresh), {cfg['n_reference']} RMIA / Calibrated references, Merlin {cfg['n_noise']} "
        "queries (ties='half'). LiRA, RMIA and Calibrated calibrate on every public record, "
        "each scored by the models that did not train on it, and score each fresh record "
        "by as many models drawn the same way (docs/calibration.md); their models train on "
        "half the public records, 'LiRA offline 3/4' on three quarters (each record OUT for a "
        "quarter of the shadows); 'LiRA offline hold-out' holds `calibration_share=0.5` of "
        "the public records out of every shadow instead (n_cal is half the public records); "
        "online LiRA calibrates on the pool's public records. Rows '..., public records "
        "duplicated' fit on every public record twice (copies share one IN/OUT mask); their "
        "band is that of the distinct calibration records, and a tie only counts as "
        "'discrete' beyond the two copies of one record.",
        "",
        "Delivered FPR (%) on the fresh non-members per seed; band: the beta-binomial range "
        "of split-conformal calibration for that attack's calibration-set size and the "
        f"number of fresh non-members, at a Bonferroni level over the {n_cells} "
        f"cells (per cell {100 * ev['cell_level']:.4f}%; family-wise 95%). Mean: mean over "
        f"seeds, with the band of the mean (per row {100 * ev['group_level']:.3f}%). "
        "'discrete': the threshold sits on a tied calibration score (ties only lower the "
        "FPR; only the upper end binds). Inside: every cell and the mean inside their "
        "bands (below allowed when discrete).",
        "",
        "| attack | target | promised | per seed (%) | cell band (%) | cells inside | mean (%) | "
        "band of the mean (%) | inside |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cells = {(c["attack"], c["target"], c["seed"]): c for c in report["cells"]}
    for s in ev["summary"]:
        bands = [cells[(s["attack"], s["target"], seed)]["fpr"][str(s["fpr"])]["band"]
                 for seed in cfg["seeds"] if (s["attack"], s["target"], seed) in cells]
        lo = min(b[0] for b in bands)
        hi = max(b[1] for b in bands)
        ok = s["inside"] and s["cells_inside"] == len(s["per_seed"])
        lines.append(
            f"| {s['attack']} | {s['target']} | {100 * s['fpr']:g}% | "
            + " ".join(f"{100 * v:.2f}" for v in s["per_seed"])
            + f" | {100 * lo:.2f}-{100 * hi:.2f} | {s['cells_inside']}/{len(s['per_seed'])} | "
            f"{100 * s['mean']:.2f} | {100 * s['mean_band'][0]:.2f}-{100 * s['mean_band'][1]:.2f} | "
            + ("yes" if ok else "**NO**") + (" (discrete)" if s["discrete"] else "") + " |"
        )
    n95 = sum(c["fpr"][str(f)]["inside_95"] for c in report["cells"] for f in FPRS)
    ntot = len(report["cells"]) * len(FPRS)
    nab = sum(c["fpr"][str(f)]["above"] for c in report["cells"] for f in FPRS)
    cont = [c["fpr"][str(f)] for c in report["cells"] for f in FPRS
            if not c["fpr"][str(f)]["discrete"]]
    c_in = sum(d["inside_95"] for d in cont)
    c_hi = sum(d["delivered"] > d["band_95"][1] for d in cont)
    lines += [
        "",
        f"Cells above their Bonferroni band: {nab} of {ntot}. Inside the per-cell 95% band "
        f"(no multiplicity correction): {n95} of {ntot}; of the {len(cont)} cells whose "
        f"threshold is not on a tied score, {c_in} ({100 * c_in / max(len(cont), 1):.1f}%; "
        f"95% expected of a calibrated attack) with {c_hi} above it (2.5% expected) and "
        f"{len(cont) - c_in - c_hi} below.",
        "",
        "MorganAttack refuses `threshold_goal=\"fpr\"` (checked on every target): "
        f"\"{report['morgan_refusal']}\"",
        "",
        f"Wall time {report['seconds'] / 60:.1f} min, n_jobs={cfg['n_jobs']}, torch threads "
        f"{cfg['torch_threads']}.",
    ]
    first = report.get("first_run_machine", {})
    for rerun in report.get("reruns", []):
        lines.append(
            f"Rows rerun on {rerun['date']} (tabmia {rerun['commit']}, {rerun['seconds'] / 60:.1f} "
            f"min, load {'/'.join(f'{v:.1f}' for v in rerun['load']['start'])} at start; the "
            "machine above): "
            f"{', '.join(rerun['attacks'])}; merged into the run of {rerun['merged_into']} "
            f"(on {first.get('cpu_model', 'another machine')}, {first.get('cpu_count', '?')} "
            "cores), whose other rows were not rerun (their cells, wall time and load come "
            "from that run's code and machine).")
    timing = {}
    for c in report["cells"]:
        timing.setdefault(c["attack"], []).append(c["seconds"])
    lines.append("Mean fit + score seconds per cell: " + ", ".join(
        f"{k} {np.mean(v):.1f}" for k, v in timing.items()) + ".")
    return "\n".join(lines) + load_note(report["load"])


def merge_into_committed(report: dict[str, Any], rerun: list[str]) -> dict[str, Any]:
    """The committed results with the rows of ``rerun`` replaced by this run's cells.

    Refuses a committed run of another configuration (seeds, sizes, models), and records
    the rerun (rows, date, commit, load) so that the tables say which rows are newer.
    """
    import json
    import subprocess

    from benchmarks._common import machine_info, results_dir

    path = results_dir() / f"{NAME}.json"
    old = json.loads(path.read_text())
    keys = ("seeds", "n_train", "n_public", "n_fresh", "n_shadow", "n_reference", "quick")
    differ = [k for k in keys if old["config"].get(k) != report["config"].get(k)]
    if differ:
        raise SystemExit(f"fpr_promise: {path} was run with other settings ({differ}): "
                         "rerun every row instead of --only")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False, cwd=os.path.dirname(__file__)).stdout.strip()
    merged = {k: v for k, v in old.items() if k not in ("benchmark", "machine", "evaluation")}
    merged["cells"] = [c for c in old["cells"] if c["attack"] not in rerun] + report["cells"]
    merged["reruns"] = [r for r in old.get("reruns", []) if set(r["attacks"]) - set(rerun)] + [{
        "attacks": rerun, "date": machine_info()["date"], "commit": commit or "unknown",
        "seconds": report["seconds"], "load": report["load"],
        "merged_into": old["machine"]["date"],
    }]
    merged.setdefault("first_run_machine", old["machine"])
    return merged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a small smoke run")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--targets", nargs="*", default=None)
    ap.add_argument("--attacks", nargs="*", default=None)
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    ap.add_argument("--only", choices=["duplicated"], default=None,
                    help="run only these rows and merge them into the results already there")
    args = ap.parse_args(argv)
    use_shared_data()
    if args.out:
        from benchmarks._common import set_results_dir

        set_results_dir(args.out)
    import torch

    torch.set_num_threads(1)
    from benchmarks._common import load_numeric

    try:
        data = load_numeric("adult", l2_normalise=False)
    except Exception as exc:  # noqa: BLE001 - a missing data set stops the run clearly
        print(f"fpr_promise: Adult is not in the data home: {exc}", file=sys.stderr)
        return 1
    X, y = np.asarray(data["X"], dtype=np.float32), np.asarray(data["y"])
    if args.quick:
        n_train, n_public, n_fresh, n_shadow, n_ref, n_noise = 1000, 2000, 2000, 4, 2, 6
    else:
        n_train, n_public, n_fresh, n_shadow, n_ref, n_noise = 5000, 10000, 5000, 8, 4, 20
    seeds = list(range(args.seeds))
    targets = make_targets(args.quick)
    attacks = make_attacks(n_shadow, n_ref, n_noise, args.n_jobs, args.quick)
    if args.targets:
        targets = {k: v for k, v in targets.items() if k in args.targets}
    if args.attacks:
        attacks = {k: v for k, v in attacks.items() if k in args.attacks}
    if args.only == "duplicated":
        attacks = {k: v for k, v in attacks.items() if k in DUPLICATED}
    load = {"start": list(os.getloadavg())}
    t_start = time.perf_counter()
    cells, refusal = [], ""
    for seed in seeds:
        splits = split(y.size, 1000 + seed, n_train, n_public, n_fresh)
        for tname, make_target in targets.items():
            target = make_target(seed).fit(X[splits["train"]], y[splits["train"]])
            refusal = morgan_refuses(target, X[splits["public"]], y[splits["public"]])
            for aname, make_attack in attacks.items():
                cell = run_cell(aname, make_attack(target, seed), X, y, splits)
                cell.update(attack=aname, target=tname, seed=seed)
                cells.append(cell)
                f1, f5 = (cell["fpr"][str(f)]["delivered"] for f in FPRS)
                print(f"seed {seed} {tname:>19} {aname:>16}: FPR {100 * f1:.2f}% / "
                      f"{100 * f5:.2f}% ({cell['seconds']:.1f} s)", flush=True)
    load["end"] = list(os.getloadavg())
    report = {
        "config": {"dataset": "adult", "seeds": seeds, "split_seeds": [1000 + s for s in seeds],
                   "n_train": n_train, "n_public": n_public, "n_fresh": n_fresh,
                   "n_shadow": n_shadow, "n_reference": n_ref, "n_noise": n_noise,
                   "fprs": list(FPRS), "n_jobs": args.n_jobs, "quick": args.quick,
                   "torch_threads": torch.get_num_threads(), "note": data.get("note", "")},
        "cells": cells,
        "morgan_refusal": refusal,
        "load": load,
        "seconds": time.perf_counter() - t_start,
    }
    if args.only:
        report = merge_into_committed(report, list(attacks))
    report["evaluation"] = evaluate(report["cells"], seeds)
    write_results(NAME, report, markdown(report))
    bad = [s for s in report["evaluation"]["summary"]
           if not (s["inside"] and s["cells_inside"] == len(s["per_seed"]))]
    for s in bad:
        print(f"outside: {s['attack']} / {s['target']} at {s['fpr']}: {s['per_seed']}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
