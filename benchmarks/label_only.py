"""Label-only attacks on an overfit random forest: Adult and German credit, 3 seeds.

What an attacker who sees only the model's decision learns about its training set: the
gap attack (Yeom et al., the baseline), noise robustness (Choquette-Choo et al.) plain
and calibrated against shadow models, and the boundary distance along random rays (Li &
Zhang's attack for tabular records), against a random forest (100 fully grown trees,
one-hot categories) trained on part of each data set. For reference, two attacks that
see the forest's probabilities (the loss attack and offline LiRA with as many shadows as
the calibrated robustness), and ART's label-only attacks (``LabelOnlyGapAttack``,
``LabelOnlyDecisionBoundary``: HopSkipJump) on the same fitted forest, run in their own
environment (``--art-python``; never a tabmia dependency). ART takes numeric arrays, so
it attacks the forest behind the pipeline's encoding (one-hot categories, standardised
numbers) and moves one-hot columns continuously; its HopSkipJump runs record by record,
so it scores a subsample of the candidates (``--art-records``), and every attack is also
reported on that subsample for a paired comparison.

Per data set and attack: TPR at 1% FPR (oracle ROC) and AUC, each seed's value with its
95% interval (Clopper-Pearson, bootstrap), the mean over seeds, the records flagged at
the attack's own threshold (chosen from public records only, aimed at 1% FPR), queries
to the target and time.

Run: ``python -m benchmarks.label_only [--seeds 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import load_note, mean_std, present_datasets, prepare_run, write_results

NAME = "label_only"
FPRS = (0.01, 0.001)
#: data set -> (members, public records, non-member candidates) per seed
SIZES = {"adult": (1500, 2500, 1500), "german_credit": (300, 400, 300)}
QUICK_SIZES = {"adult": (300, 300, 300), "german_credit": (250, 250, 250)}
N_SHADOW = 16
#: HopSkipJump's budget per record, about the boundary-distance attack's
#: (1 + 16 * (8 + 6) = 225 queries)
HSJ = {"max_iter": 5, "max_eval": 200, "init_eval": 20, "init_size": 20}
LABEL_ONLY = ("gap", "noise_robustness", "noise_robustness_calibrated", "boundary_distance")


def _attacks(n_shadow: int, quick: bool) -> dict[str, Any]:
    from tabmia.attacks import (
        BoundaryDistanceAttack,
        CalibratedRobustnessAttack,
        GapAttack,
        LiRAAttack,
        LossAttack,
        NoiseRobustnessAttack,
    )

    noise = {"n_noise": 20} if quick else {}
    return {
        "gap": GapAttack(),
        "noise_robustness": NoiseRobustnessAttack(**noise),
        "noise_robustness_calibrated": CalibratedRobustnessAttack(n_shadow=n_shadow, **noise),
        "boundary_distance": BoundaryDistanceAttack(**({"n_directions": 4} if quick else {})),
        "loss (probabilities)": LossAttack(),
        "lira offline (probabilities)": LiRAAttack(n_shadow=n_shadow),
    }


def _split(n: int, sizes: tuple[int, int, int], seed: int) -> tuple[np.ndarray, ...]:
    perm = np.random.RandomState(seed).permutation(n)
    a, b, c = sizes
    if a + b + c > n:
        raise ValueError(f"{a + b + c} records asked for, the data set has {n}")
    return np.sort(perm[:a]), np.sort(perm[a:a + b]), np.sort(perm[a + b:a + b + c])


def _art(model: Any, X: Any, y: np.ndarray, member: np.ndarray, n_art: int, seed: int,
         python: str, timeout: float) -> dict[str, Any]:
    """ART's two label-only attacks on the forest behind the pipeline, in ART's venv;
    stopped after ``timeout`` seconds (ART's HopSkipJump can stall on a forest's
    piecewise-constant decision: it then counts as not run for that seed)."""
    if not Path(python).is_file():
        return {"error": f"no Python at {python} (a venv with adversarial-robustness-toolbox)"}
    prepare, forest = model[:-1], model[-1]
    x = np.asarray(prepare.transform(X), dtype=np.float64)
    rng = np.random.RandomState(seed)
    half = n_art // 2
    rows = np.sort(np.r_[rng.choice(np.flatnonzero(member), half, replace=False),
                         rng.choice(np.flatnonzero(~member), half, replace=False)])
    job = {"model": forest, "x": x, "y": np.searchsorted(forest.classes_, y),
           "n_classes": forest.classes_.size, "clip": (float(x.min()), float(x.max())),
           "boundary_rows": rows, "hsj": HSJ}
    with tempfile.TemporaryDirectory() as tmp:
        import joblib

        joblib.dump(job, Path(tmp) / "in.joblib")
        script = Path(__file__).with_name("_art_label_only.py")
        try:
            run = subprocess.run([python, str(script), str(Path(tmp) / "in.joblib"),
                                  str(Path(tmp) / "out.json")], capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"did not finish within {timeout:.0f} s (stopped)"}
        if run.returncode != 0:
            return {"error": run.stderr.strip().splitlines()[-1] if run.stderr.strip()
                    else f"exit status {run.returncode}"}
        return json.loads((Path(tmp) / "out.json").read_text())


def _metrics(member: np.ndarray, scores: np.ndarray, seed: int) -> dict[str, Any]:
    from tabmia.metrics import attack_metrics

    fprs = tuple(f for f in FPRS if f * (~member).sum() >= 1)
    return attack_metrics(member, scores, fprs=fprs, gammas=(1.0,), random_state=seed)


def _cell(name: str, X: Any, y: np.ndarray, sizes: tuple, seed: int, args: Any) -> dict:
    """One seed on one data set: every attack on all candidates and on ART's subsample."""
    from tabmia.exceptions import RunNote
    from tabmia.experiment import run_attacks
    from tabmia.recipes import make_model
    from tabmia.settings import RunSettings
    from tabmia.target import concat_rows, take_rows

    train, public, out = _split(len(y), sizes, seed)
    model = make_model("random_forest", X).set_params(model__random_state=seed)
    model.fit(take_rows(X, train), y[train])
    X_cand = concat_rows([take_rows(X, train), take_rows(X, out)])
    y_cand = np.r_[y[train], y[out]]
    member = np.r_[np.ones(train.size, bool), np.zeros(out.size, bool)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frames, rows, fitted = run_attacks(
            model, _attacks(args.n_shadow, args.quick), take_rows(X, public), y[public],
            X_cand, y_cand, member, seed=seed, settings=RunSettings(fprs=FPRS, gammas=(1.0,)),
            train_size=train.size,
        )
    cell = {"seed": seed, "notes": sorted({str(w.message) for w in caught
                                           if issubclass(w.category, RunNote)}), "train_accuracy": float(np.mean(model.predict(take_rows(X, train))
                                                          == y[train])),
            "test_accuracy": float(np.mean(model.predict(take_rows(X, out)) == y[out])),
            "attacks": {}, "scores": {}}
    for frame, row, attack in zip(frames, rows, fitted):
        keep = {k: row[k] for k in row if not k.startswith(("ppv", "precision"))}
        keep["queries_per_record"] = getattr(attack, "queries_per_record_", 1)
        keep["shadow_queries"] = getattr(attack, "n_shadow_queries_", None)
        cell["attacks"][row["attack"]] = keep
        cell["scores"][row["attack"]] = frame["score"].to_numpy()
    art = _art(model, X_cand, y_cand, member, args.art_records, seed, args.art_python,
               args.art_timeout)
    cell["art"] = {k: v for k, v in art.items() if k not in ("gap", "boundary")}
    if "error" not in art:
        if not np.array_equal(np.asarray(art["gap"]["scores"]), cell["scores"]["gap"]):
            cell["art"]["gap_differs"] = True  # same decision rule: it should not
        rows_art = np.asarray(art["boundary"]["rows"])
        cell["art"]["rows"] = int(rows_art.size)
        cell["attacks"]["ART LabelOnlyGapAttack"] = {
            **_metrics(member, np.asarray(art["gap"]["scores"]), seed),
            "n_queries": art["gap"]["queries"], "queries_per_record": 1,
            "fit_seconds": 0.0, "score_seconds": art["gap"]["seconds"]}
        sub = {"ART LabelOnlyDecisionBoundary": np.asarray(art["boundary"]["scores"])}
        sub.update({k: v[rows_art] for k, v in cell["scores"].items()})
        cell["subsample"] = {k: _metrics(member[rows_art], s, seed) for k, s in sub.items()}
        cell["subsample"]["ART LabelOnlyDecisionBoundary"].update(
            n_queries=art["boundary"]["queries"], seconds=art["boundary"]["seconds"])
    del cell["scores"]
    return cell


def _pooled_tpr(cells: list, attack: str, key: str = "attacks") -> str:
    """TPR at 1% FPR pooled over seeds (sum of true positives), with its 95% interval."""
    from tabmia.metrics import clopper_pearson

    tp = n = seeds = 0
    for c in cells:
        m = c.get(key, {}).get(attack)
        if m is None:
            continue  # not run on this seed (ART stopped): pooled over the others
        if m.get("tpr@0.01") is None:
            return "n/a"
        tp += round(m["tpr@0.01"] * m["n_members"])
        n += m["n_members"]
        seeds += 1
    if n == 0:
        return "n/a"
    lo, hi = clopper_pearson(tp, n)
    some = "" if seeds == len(cells) else f" ({seeds} of {len(cells)} seeds)"
    return f"{tp / n:.3f} [{lo:.3f}, {hi:.3f}]{some}"


def _per_seed(cells: list, attack: str, metric: str, key: str = "attacks") -> str:
    out = []
    for c in cells:
        m = c.get(key, {}).get(attack)
        if m is None or m.get(metric) is None:
            out.append("n/a")
        else:
            out.append(f"{m[metric]:.3f} [{m[metric + '_low']:.3f}, {m[metric + '_high']:.3f}]")
    return "; ".join(out)


def _table(name: str, cells: list) -> list[str]:
    attacks = list(dict.fromkeys(a for c in cells for a in c["attacks"]))
    lines = [f"\n### {name}\n",
             f"Target accuracy: train {mean_std([c['train_accuracy'] for c in cells])}, "
             f"held out {mean_std([c['test_accuracy'] for c in cells])}.\n",
             "| attack | TPR @ 1% FPR, per seed [95% CI] | pooled over seeds | AUC, per seed "
             "[95% CI] | AUC mean ± std | flagged at own threshold (members / non-members) "
             "| queries per record | queries (target, per seed) | seconds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in attacks:
        rows = [c["attacks"][a] for c in cells if a in c["attacks"]]
        own = ("; ".join(f"{r['tp']}/{r['fp']}" for r in rows) if "tp" in rows[0] else "n/a")
        secs = mean_std([r["fit_seconds"] + r["score_seconds"] for r in rows])
        lines.append(
            f"| {a} | {_per_seed(cells, a, 'tpr@0.01')} | {_pooled_tpr(cells, a)} | "
            f"{_per_seed(cells, a, 'auc')} | {mean_std([r['auc'] for r in rows])} | {own} | "
            f"{rows[0]['queries_per_record']} | {int(np.mean([r['n_queries'] for r in rows]))}"
            f" | {secs} |")
    errors = [f"seed {c['seed']}: {c['art']['error']}" for c in cells if "error" in c["art"]]
    if errors:
        lines.append(f"\nART not run on: {'; '.join(errors)}.")
    ran = [c for c in cells if "subsample" in c]
    if ran:
        cells = ran
        n = cells[0]["art"]["rows"]
        lines += [f"\nOn ART's subsample ({n} candidates per seed, half members; HopSkipJump "
                  f"budget {HSJ}; seeds {[c['seed'] for c in cells]}):\n",
                  "| attack | TPR @ 1% FPR, per seed [95% CI] | pooled | AUC mean ± std | "
                  "queries per record |", "|---|---|---|---|---|"]
        for a in cells[0]["subsample"]:
            rows = [c["subsample"][a] for c in cells]
            q = (f"{np.mean([r['n_queries'] for r in rows]) / n:.0f}" if "n_queries" in rows[0]
                 else str(cells[0]["attacks"][a]["queries_per_record"]))
            lines.append(f"| {a} | {_per_seed(cells, a, 'tpr@0.01', 'subsample')} | "
                         f"{_pooled_tpr(cells, a, 'subsample')} | "
                         f"{mean_std([r['auc'] for r in rows])} | {q} |")
    return lines


def _verdict(results: dict) -> list[str]:
    """Whether noise robustness beats the gap attack at TPR @ 1% FPR, per data set."""
    out = ["\n## Noise robustness against the gap attack at 1% FPR\n"]
    for name, cells in results.items():
        for attack in ("noise_robustness_calibrated", "noise_robustness"):
            wins = [c["attacks"][attack]["tpr@0.01_low"] > c["attacks"]["gap"]["tpr@0.01_high"]
                    for c in cells]
            above = [c["attacks"][attack]["tpr@0.01"] > c["attacks"]["gap"]["tpr@0.01"]
                     for c in cells]
            out.append(f"- {name}, {attack}: TPR above the gap attack's in {sum(above)} of "
                       f"{len(cells)} seeds; its 95% interval entirely above the gap attack's "
                       f"in {sum(wins)} of {len(cells)}.")
    return out


def main(argv: list[str] | None = None) -> int:
    from tabmia.datasets import load_dataset

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", nargs="+", default=list(SIZES))
    parser.add_argument("--n-shadow", type=int, default=N_SHADOW)
    parser.add_argument("--art-python", default=os.environ.get(
        "TABMIA_ART_PYTHON", "/work/venvs/art/bin/python"))
    parser.add_argument("--art-records", type=int, default=200,
                        help="candidates ART's HopSkipJump scores per seed (half members)")
    parser.add_argument("--art-timeout", type=float, default=600.0,
                        help="seconds ART's attacks may take per seed before they are stopped")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a smoke run")
    parser.add_argument("--out", default=None)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    prepare_run(args)
    if args.quick:
        args.n_shadow, args.art_records = min(args.n_shadow, 4), min(args.art_records, 20)
    load = {"start": os.getloadavg()}
    t0 = time.perf_counter()
    report: dict[str, Any] = {"not_present": {}}
    results: dict[str, list] = {}
    for name, bunch in present_datasets(args.datasets, load_dataset, report):
        X, y = bunch.data, np.asarray(bunch.target)
        sizes = (QUICK_SIZES if args.quick else SIZES)[name]
        results[name] = []
        for seed in range(args.seeds):
            t = time.perf_counter()
            results[name].append(_cell(name, X, y, sizes, seed, args))
            print(f"{name} seed {seed}: {time.perf_counter() - t:.0f} s", file=sys.stderr,
                  flush=True)
    if not results:
        print("no data set present", file=sys.stderr)
        return 2
    load["end"] = os.getloadavg()
    arts = [c["art"] for cells in results.values() for c in cells]
    art = next((a for a in arts if "art_version" in a), arts[0] if arts else {})
    lines = [
        __doc__.split("\n\n")[1].replace("\n", " ") + "\n",
        f"Seeds: {args.seeds}; sizes (members, public, non-members) "
        f"{QUICK_SIZES if args.quick else SIZES}; "
        f"{args.n_shadow} shadows for the calibrated robustness and LiRA; the label-only "
        "attacks at their defaults (noise: 100 copies, sigma 1 std, flips 0.2; boundary: 16 "
        "directions, 8 grid steps to 4, 6 bisections). TPR @ 1% FPR and AUC: oracle ROC "
        "over all candidates (members and as many non-members); intervals: 95% "
        "Clopper-Pearson (TPR), bootstrap (AUC).",
        "ART: " + (f"adversarial-robustness-toolbox {art['art_version']}" if "art_version" in art
                   else f"did not run ({art.get('error', 'no cell')})") + ".",
    ]
    for name, cells in results.items():
        lines += _table(name, cells)
        notes = sorted({n for c in cells for n in c["notes"]})
        lines += [f"\nNotes: {'; '.join(notes)}"] if notes else []
    lines += _verdict(results)
    lines.append(f"\nWall time {time.perf_counter() - t0:.0f} s.")
    write_results(NAME, {"datasets": list(results), "seeds": args.seeds, "sizes": SIZES,
                         "n_shadow": args.n_shadow, "hsj": HSJ, "quick": args.quick,
                         "results": results, "load": load, **report},
                  "\n".join(lines) + load_note(load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
