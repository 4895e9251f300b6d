"""Bertran et al. (NeurIPS 2023), Table 2: quantile regression (QMIA) vs LiRA on tabular data.

Precision at 1% FPR (OpenML tasks, ~5k rows) and at 0.5% FPR (ACS NY 2018 tasks, ~20k
rows) of :class:`tabmia.attacks.quantile.QuantileAttack` (one CatBoost quantile
regressor on the target's hinge score) and :class:`tabmia.attacks.lira.LiRAAttack`
with 16 / 32 (/ 64) CatBoost shadow models, against a CatBoost target tuned by 5-fold
cross-validation on its training data.

Split (per seed), ``--split quarter`` (default): the target trains on a quarter of the
records (the members); another quarter are held-out non-members; the attacker's public
records are the other half. ``--split paper`` follows the paper's code
(amazon-science/quantile-mia, ``tabular_QMIA``): the target trains on half (the
private set), 40% are public, 10% held out; candidates = private + held out (5:1).
QMIA trains its regressor on the public records; offline LiRA's shadows train on
random halves of them. Candidates: all members and all held-out records.

Precision at 1% FPR is the paper's (``get_rates`` in the paper's analysis code):
``TPR / (TPR + FPR)`` at the oracle threshold on the candidates, a ratio of rates that
does not depend on the member / non-member ratio (0.5 = chance); here the threshold
with the best TPR among those with FPR <= 1%. ``precision_counts`` (``TP / (TP + FP)``)
and the precision at the attack's own threshold (set on public data) are kept too.

Data: the exact benchmark files of OpenML 361057 (wine), 361064
(kdd_ipums_la_97-small), 361067 (phoneme) and 361070 (eye_movements) from the data
home (no analogues); further tasks of the same suite can be added (``--datasets``).
ACS (folktables) tasks are read when present, else the loader's message is reported.

Run: ``python -m benchmarks.quantile_table2 [--seeds N] [--quick] [--datasets ...]``.

``--protocol paper --paper-code DIR`` runs the paper's public scripts under their own
protocol beside tabmia on the same targets instead
(:mod:`benchmarks._quantile_table2_paper`; results ``quantile_table2_paper.*``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

from benchmarks._common import (
    load_note,
    mean_std,
    missing_data_exit,
    pct,
    prepare_run,
    present_datasets,
    results_dir,
    write_results,
)
from benchmarks._quantile_table2_tasks import (
    ALL_CHOICES,
    DATASETS,
    PAPER,
    PAPER_TASKS,
    load,
    operating_point,
)

NAME = "quantile_table2"
#: Our rows compared with the paper's "Ours" row.
PAPER_ROW = {"QMIA pinball": "QMIA (ours)", "QMIA gaussian": "QMIA (ours)",
             "QMIA gaussian, no label": "QMIA (ours)"}

#: Target tuning grid (5-fold CV, accuracy); a small budget instead of the paper's Optuna.
GRID = {"depth": [4, 6], "learning_rate": [0.05, 0.15]}
TARGET_ITERATIONS = 200


def tune_target(X: Any, y: np.ndarray, seed: int, quick: bool) -> tuple[Any, dict[str, Any]]:
    """CatBoost tuned by 5-fold CV (accuracy) on the target's training records."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from tabmia.shadow import catboost_classifier

    iters = 30 if quick else TARGET_ITERATIONS
    base = catboost_classifier(iterations=iters, thread_count=1, random_seed=seed)
    grid = {"depth": [4], "learning_rate": [0.1]} if quick else GRID
    search = GridSearchCV(base, grid, cv=StratifiedKFold(5, shuffle=True, random_state=seed),
                          scoring="accuracy", n_jobs=1, refit=True)
    search.fit(X, y)
    return search.best_estimator_, {"best_params": search.best_params_,
                                    "cv_accuracy": float(search.best_score_)}


def split_records(n: int, seed: int, how: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(members, held-out non-members, public) row indices of one seed."""
    from tabmia.experiment import split_membership

    if how == "paper":  # the paper's code: 50% private, then 80/20 public / held out
        perm = np.random.RandomState(seed).permutation(n)
        n_tr, n_pub = n // 2, int(0.4 * n)
        return perm[:n_tr], perm[n_tr + n_pub:], perm[n_tr:n_tr + n_pub]
    split = split_membership(n, train_size=n // 4, public_size=n // 2, random_state=seed)
    return split.train, split.nonmembers, split.public


def run_seed(data: dict[str, Any], seed: int, *, shadows: list[int], n_trials: int,
             quick: bool, n_jobs: int, split: str, log: Any) -> dict[str, Any]:
    from tabmia.attacks import ScoreAttack
    from tabmia.attacks.lira import LiRAAttack
    from tabmia.attacks.quantile import QuantileAttack
    from tabmia.metrics import UnresolvableFPRError, auc

    X, y, fpr = data["X"], data["y"], data["fpr"]
    train, held, public = split_records(y.shape[0], seed, split)
    t0 = time.perf_counter()
    Xtr, ytr = X.iloc[train], y[train]
    target, tuning = tune_target(Xtr, ytr, seed, quick)
    tuning["seconds"] = time.perf_counter() - t0
    Xpub, ypub = X.iloc[public], y[public]
    cand = np.r_[train, held]
    Xc, yc = X.iloc[cand], y[cand]
    member = np.r_[np.ones(train.size, bool), np.zeros(held.size, bool)]
    acc = {"train": float(target.score(Xtr, ytr)),
           "test": float(target.score(X.iloc[held], y[held]))}
    log(f"  seed {seed}: target {tuning['best_params']}, CV acc {tuning['cv_accuracy']:.3f}, "
        f"train {acc['train']:.3f} / test {acc['test']:.3f} ({tuning['seconds']:.0f} s)")

    quick_kw = {"params": {"iterations": 30, "depth": 3}} if quick else {}
    qkw = {"statistic": "hinge", "fpr": fpr, "n_jobs": 1, "random_state": seed}
    attacks: dict[str, Any] = {
        "Marginal (hinge)": ScoreAttack(target, statistic="hinge", fpr=fpr),
        "QMIA pinball": QuantileAttack(target, mode="pinball", **qkw, **quick_kw),
        "QMIA gaussian": QuantileAttack(target, mode="gaussian", **qkw, **quick_kw),
        # the regressor input of the paper's code (features only, no label)
        "QMIA gaussian, no label": QuantileAttack(target, mode="gaussian",
                                                  label_as_feature=False, **qkw, **quick_kw),
    }
    if n_trials > 0:
        attacks[f"QMIA gaussian, Optuna ({n_trials} trials)"] = QuantileAttack(
            target, mode="gaussian", n_trials=n_trials, **qkw)
    out: dict[str, Any] = {"seed": seed, "accuracy": acc, "tuning": tuning, "attacks": {}}
    scores = {}
    with tempfile.TemporaryDirectory(prefix="tabmia-qt2-") as cache:
        for k in shadows:  # one cache: 32 shadows top up the first 16, 64 the first 32
            attacks[f"LiRA (n={k})"] = LiRAAttack(
                target, n_shadow=k, online=False, pkeep=0.5, n_jobs=n_jobs,
                cache_dir=cache, fpr=fpr, random_state=seed)
        for name, attack in attacks.items():
            t1 = time.perf_counter()
            attack.fit(Xpub, ypub)
            s = attack.decision_function(Xc, yc)
            row: dict[str, Any] = {"auc": auc(member, s), "seconds": time.perf_counter() - t1}
            try:
                if (~member).sum() * fpr < 1:
                    raise UnresolvableFPRError(f"{fpr} below 1/{(~member).sum()}")
                row.update(operating_point(member, s, fpr))
            except UnresolvableFPRError:
                row["precision"] = row["precision_counts"] = row["tpr"] = None
            flag = s >= attack.threshold_
            tpr_own, fpr_own = float(flag[member].mean()), float(flag[~member].mean())
            row["precision_at_threshold"] = (
                tpr_own / (tpr_own + fpr_own) if tpr_own + fpr_own > 0 else None)
            row["fpr_at_threshold"] = fpr_own
            out["attacks"][name] = row
            scores[name] = s
            log(f"    {name}: precision@{fpr:g} FPR "
                f"{row['precision'] if row['precision'] is None else round(row['precision'], 3)}, "
                f"AUC {row['auc']:.3f} ({row['seconds']:.0f} s)")
    if seed == 0:
        out["_roc"] = (member, scores)
    return out


def markdown(report: dict[str, Any]) -> str:
    cfg = report["config"]
    lines = [
        "Bertran, Tang, Kearns, Morgenstern, Roth, Wu, *Scalable Membership Inference Attacks "
        "via Quantile Regression* (NeurIPS 2023): Table 2 with tabmia.",
        "",
        f"Command: `{cfg['command']}`; seeds: {cfg['seeds']}; wall time "
        f"{report['wall_seconds']:.0f} s; CatBoost on CPU ({cfg['catboost_device']}).",
        (f"Split per seed (`--split {cfg['split']}`): "
         + ("target trains on 50% of the records (members; the paper's private half), "
            "40% attacker public, 10% held-out non-members (the paper's code); candidates "
            "5:1 members : non-members." if cfg["split"] == "paper" else
            "target trains on 25% of the records (members), 25% held-out non-members, 50% "
            "attacker public; candidates balanced.")),
        f"Target: CatBoost ({TARGET_ITERATIONS} iterations) tuned by 5-fold CV accuracy on "
        f"its training records over depth {GRID['depth']} x learning_rate "
        f"{GRID['learning_rate']} (the paper: Optuna). QMIA: `QuantileAttack(mode=..., "
        "statistic=\"hinge\")` at its defaults (5-fold cross-fit, `n_trials=0`, "
        "`DEFAULT_CATBOOST_PARAMS`, the label as a feature); `QMIA gaussian` is the library default, `no label` is the "
        "regressor input of the paper's code (features only)"
        + (f"; `Optuna` tunes the Gaussian regressor with {cfg['n_trials']} trials of "
           "5-fold CV NLL over the paper's Table 5 ranges" if cfg["n_trials"] else "")
        + ". LiRA: `LiRAAttack(online=False)` "
        "(offline: the attacker has the same public records as QMIA), shadows = the tuned "
        "target's recipe on random halves of the public records, global variance below 64 "
        f"shadows; shadow counts here: {cfg['shadows']}, on seeds {cfg['shadow_seeds']}"
        + ("" if 64 in cfg["shadows"] else " (64 left out for the CPU budget)") + ". "
        "Marginal (hinge) = one global threshold on the hinge score (Yeom-style baseline).",
        "Precision at 1% FPR (0.5% ACS) is the paper's (`get_rates` in its analysis code): "
        "TPR / (TPR + FPR) at the oracle threshold on the candidates, here the best TPR "
        "among thresholds with FPR <= 1%; it does not depend on the member : non-member "
        "ratio (0.5 = chance). On the balanced split it equals TP / (TP + FP). The precision "
        "at the attack's own threshold (set on public data, no oracle) is in the second "
        "table. n/a where 1% is below 1/(number of non-members). Values in %, mean ± std "
        "over seeds. The choice of QMIA defaults is measured in "
        "`quantile_table2_probe.md`.",
        "",
    ]
    for key, note in report["not_present"].items():
        lines += [f"**{key}: not present** in the data home, skipped. Loader message:", "",
                  "```", note.strip(), "```", ""]
    keys = list(report["datasets"])
    attacks = list(dict.fromkeys(a for ds in report["datasets"].values()
                                 for s in ds["seeds"] for a in s["attacks"]))
    if keys:
        lines += [
            "## Precision at 1% FPR (OpenML) / 0.5% FPR (ACS): tabmia [paper Table 2]",
            "",
            "| attack | " + " | ".join(keys) + " |",
            "|---|" + "---|" * len(keys),
        ]
        for name in attacks:
            cells = []
            for key in keys:
                rows = [s["attacks"][name] for s in report["datasets"][key]["seeds"]
                        if name in s["attacks"]]
                cell = pct(r["precision"] for r in rows)
                if len(rows) < len(report["datasets"][key]["seeds"]):
                    cell += f" ({len(rows)} seeds)"
                paper = PAPER.get(PAPER_ROW.get(name, name), {}).get(key)
                cells.append(cell + (f" [{paper:.1f}]" if paper is not None else ""))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        for name in PAPER:
            if name not in attacks and name not in PAPER_ROW.values():
                cells = [f"[{PAPER[name][k]:.1f}]" if k in PAPER[name] else "" for k in keys]
                lines.append(f"| {name} (paper only) | " + " | ".join(cells) + " |")
        lines += [
            "",
            "## TPR at the same FPR, AUC, time",
            "",
            "| data set | attack | TPR | AUC | TP / (TP + FP) | precision at its own threshold "
            "| FPR at its own threshold | fit + score s |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for key in keys:
            for name in attacks:
                rows = [s["attacks"][name] for s in report["datasets"][key]["seeds"]
                        if name in s["attacks"]]
                lines.append(
                    f"| {key} | {name} | {pct(r['tpr'] for r in rows)} | "
                    f"{mean_std(r['auc'] for r in rows)} | "
                    f"{pct(r.get('precision_counts') for r in rows)} | "
                    f"{pct(r['precision_at_threshold'] for r in rows)} | "
                    f"{pct(r['fpr_at_threshold'] for r in rows)} | "
                    f"{np.mean([r['seconds'] for r in rows]):.0f} |"
                )
        lines += ["", "## Data sets and targets", "",
                  "| data set | source | records | target train / test acc. | "
                  "tuned params (seed 0) | ROC |",
                  "|---|---|---|---|---|---|"]
        for key in keys:
            ds = report["datasets"][key]
            s0 = ds["seeds"][0]
            lines.append(
                f"| {key} | {ds['note']} | {ds['n_records']:,} | "
                f"{mean_std(s['accuracy']['train'] for s in ds['seeds'])} / "
                f"{mean_std(s['accuracy']['test'] for s in ds['seeds'])} | "
                f"{s0['tuning']['best_params']} | `{ds.get('roc_png') or ''}` |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=ALL_CHOICES)
    parser.add_argument("--shadows", nargs="+", type=int, default=[16, 32, 64],
                        help="LiRA shadow counts (the paper: 16 32 64)")
    parser.add_argument("--n-trials", type=int, default=0,
                        help="add a Gaussian QMIA row tuned by this many Optuna trials")
    parser.add_argument("--split", choices=("quarter", "paper"), default="quarter",
                        help="quarter: 25%% target / 25%% held out / 50%% public; paper: "
                        "50%% target / 40%% public / 10%% held out (the paper's code)")
    parser.add_argument("--shadow-seeds", type=int, default=None,
                        help="run LiRA on the first N seeds only (CPU budget)")
    parser.add_argument("--n-jobs", type=int, default=2, help="parallel shadow trainings")
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (unused here)")
    parser.add_argument("--protocol", choices=("tabmia", "paper"), default="tabmia",
                        help="tabmia: this script's split and grid-tuned target (default); "
                        "paper: the paper's public scripts and their protocol beside tabmia "
                        "on the same targets (needs --paper-code; results: "
                        "quantile_table2_paper.*)")
    parser.add_argument("--paper-code", default=None, metavar="DIR",
                        help="local checkout of github.com/amazon-science/quantile-mia "
                        "(this machine cannot fetch it; keep it in .paper_code/, ignored)")
    parser.add_argument("--paper-threads", type=int, default=0,
                        help="--protocol paper: cap the paper scripts' CatBoost threads (4) "
                        "and Optuna workers (30) at this (0: as written)")
    parser.add_argument("--trial-scale", type=float, default=None,
                        help="--protocol paper: scale every Optuna trial count (the scripts' "
                        "100 / 200 and tabmia's) for a stated reduced budget")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="--protocol paper: combine runs of disjoint seeds into one report")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="--protocol paper: seeds first-seed .. first-seed + seeds - 1")
    args = parser.parse_args(argv)
    prepare_run(args)
    if args.protocol == "paper":
        from benchmarks._quantile_table2_paper import main as paper_main

        if args.datasets == list(DATASETS):
            args.datasets = list(PAPER_TASKS)
        if args.shadows == [16, 32, 64]:
            args.shadows = [16, 64]
        return paper_main(args, argv)
    from tabmia.shadow import gpu_available

    t_start = time.perf_counter()
    load_start = os.getloadavg()
    seeds = list(range(args.seeds))
    shadow_seeds = len(seeds) if args.shadow_seeds is None else args.shadow_seeds
    shadows = [4, 8] if args.quick else sorted(args.shadows)
    n_trials = 0 if args.quick else args.n_trials
    report: dict[str, Any] = {"datasets": {}, "not_present": {}}
    for key, data in present_datasets(args.datasets, lambda key: load(key, args.quick), report):
        print(f"{key}: {data['note']}, {data['X'].shape[0]:,} records", flush=True)
        t0 = time.perf_counter()
        runs = [run_seed(data, s, shadows=shadows if s < shadow_seeds else [],
                         n_trials=n_trials, quick=args.quick,
                         n_jobs=1 if args.quick else args.n_jobs, split=args.split,
                         log=lambda m: print(m, flush=True)) for s in seeds]
        member, roc = runs[0].pop("_roc")
        roc_png = None
        try:
            import pandas as pd

            from tabmia.report import plot_roc

            frame = pd.concat([pd.DataFrame({"attack": a, "repeat": 0, "member": member,
                                             "score": s}) for a, s in roc.items()],
                              ignore_index=True)
            png = results_dir() / f"{NAME}_roc_{key}.png"
            plot_roc(frame, png, title=f"{key}: QMIA vs LiRA (seed 0)")
            roc_png = png.name
        except Exception as exc:  # noqa: BLE001 - a plot must not lose the numbers
            print(f"ROC plot failed: {exc}", file=sys.stderr)
        report["datasets"][key] = {"note": data["note"], "fpr": data["fpr"],
                                   "n_records": int(data["y"].shape[0]), "seeds": runs,
                                   "roc_png": roc_png, "seconds": time.perf_counter() - t0}
    missing_data_exit(report["not_present"], args.datasets)
    report["wall_seconds"] = time.perf_counter() - t_start
    report["load"] = {"start": load_start, "end": os.getloadavg()}
    report["config"] = {
        "command": "python -m benchmarks.quantile_table2 "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "seeds": seeds, "shadows": shadows, "shadow_seeds": seeds[:shadow_seeds],
        "n_trials": n_trials, "quick": args.quick, "split": args.split,
        "catboost_device": "GPU" if gpu_available("catboost") else "no GPU",
        "grid": GRID, "target_iterations": TARGET_ITERATIONS,
    }
    report["paper_precision_pct"] = PAPER
    json_path, md_path = write_results(NAME, report, markdown(report) + load_note(report["load"]))
    print(f"wrote {json_path} and {md_path} ({report['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
