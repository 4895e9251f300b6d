"""Reference-model attacks' scoring on 5 x 10^5 candidates: n_jobs=1 against n_jobs=2.

Credit-shaped synthetic records (:func:`benchmarks.scaling_audit.credit_like`, the
categorical columns as integer codes) of ``--records`` (10^6): a HistGradientBoosting
target trained on half, the attacker's public records a quarter, the candidates the
other half (members and non-members alike: none is a public record, so every
candidate is scored by the shadows). Offline LiRA with 8 HGB shadows and RMIA with 8
HGB reference models (plus the one that tunes ``a``) are fitted once; then each
attack's ``decision_function`` on the candidates is timed with the population's
``n_jobs`` set to 1 and to 2, interleaved (1, 2, 1, 2, ...: a busy machine slows both
alike), and the median of each kept. ``OMP_NUM_THREADS=1``, so the jobs are the only
parallelism (the target's own queries run in this process, on one thread, either way).

Identity: the scores on 2 jobs are compared bit for bit with those on 1 job, and the
shadows' statistics with one model after another in this process (the code path before
parallel scoring).

Run: ``python benchmarks/reference_scoring.py`` (``--records 100000 --repeats 1`` for
a smoke run; ``--out DIR`` writes elsewhere).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import (  # noqa: E402
    cpu_seconds,
    load_note,
    set_results_dir,
    write_results,
)
from benchmarks.scaling_audit import credit_like  # noqa: E402

N_MODELS = 8


def data(n: int) -> dict[str, Any]:
    frame = credit_like(n, seed=0)
    y = frame.pop("default").to_numpy()
    for col in ("SEX", "EDUCATION", "MARRIAGE"):
        frame[col] = frame[col].astype("category").cat.codes
    X = frame.to_numpy(dtype=np.float64)
    half, quarter = n // 2, n // 4
    members = np.arange(half)
    return {"X_train": X[:half], "y_train": y[:half],
            "X_public": X[half:half + quarter], "y_public": y[half:half + quarter],
            # candidates: half members, half the non-members the attacker does not hold
            "X_cand": np.vstack([X[members[:quarter]], X[half + quarter:]]),
            "y_cand": np.concatenate([y[members[:quarter]], y[half + quarter:]])}


def one_after_another(pop: Any, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The shadows' statistics as before parallel scoring: each model in turn, here."""
    from tabmia.shadow._training import _statistic_row

    y_idx = np.searchsorted(pop.classes_, y)
    return np.stack([_statistic_row(m, X, y_idx, pop.classes_, pop.statistic)
                     for m in pop.models_])


def _spin(seconds: float) -> None:
    start = time.process_time()
    while time.process_time() - start < seconds:  # CPU work, nothing else
        pass


def parallel_check(seconds: float = 2.0) -> dict[str, float]:
    """What two jobs buy on this machine now: two tasks of ``seconds`` of pure CPU work
    on 1 job and on 2 (2x on two free cores; 1x when other jobs leave one core's worth)."""
    from joblib import Parallel, delayed

    Parallel(n_jobs=2)(delayed(_spin)(0.05) for _ in range(2))  # workers started
    wall = {}
    for jobs in (1, 2):
        t0 = time.perf_counter()
        Parallel(n_jobs=jobs)(delayed(_spin)(seconds) for _ in range(2))
        wall[jobs] = time.perf_counter() - t0
    return {"one_job_s": wall[1], "two_jobs_s": wall[2], "speedup": wall[1] / wall[2]}


def case(name: str, attack: Any, d: dict[str, Any], repeats: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    attack.fit(d["X_public"], d["y_public"])
    fit_s = time.perf_counter() - t0
    pop = attack.population_
    times: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[float]] = {1: [], 2: []}
    scores: dict[int, np.ndarray] = {}
    for _ in range(repeats):
        for jobs in (1, 2):
            pop.n_jobs = jobs
            c0, t0 = cpu_seconds(), time.perf_counter()
            scores[jobs] = attack.decision_function(d["X_cand"], d["y_cand"])
            times[jobs].append(time.perf_counter() - t0)
            cpu[jobs].append(cpu_seconds() - c0)
            print(f"  {name} n_jobs={jobs}: {times[jobs][-1]:.1f} s", flush=True)
    X_c, y_c = d["X_cand"][:200_000], d["y_cand"][:200_000]
    pop.n_jobs = 2
    same_stats = bool(np.array_equal(pop.statistics(X_c, y_c), one_after_another(pop, X_c, y_c)))
    med = {j: statistics.median(t) for j, t in times.items()}
    return {"attack": name, "models": pop.n_models, "fit_s": fit_s,
            "seconds_1_job": times[1], "seconds_2_jobs": times[2],
            "cpu_seconds_1_job": cpu[1], "cpu_seconds_2_jobs": cpu[2],
            "median_1_job": med[1], "median_2_jobs": med[2], "speedup": med[1] / med[2],
            "identical_scores_1_vs_2_jobs": bool(np.array_equal(scores[1], scores[2])),
            "identical_statistics_vs_one_model_after_another": same_stats,
            "candidates": int(d["y_cand"].size), "public": int(d["y_public"].size)}


def categorical_case(n: int, repeats: int) -> dict[str, Any]:
    """Records with category columns: 4 CatBoost shadows score the candidates (a DataFrame,
    the three categorical columns as pandas categories) on 1 job, on 2 jobs as tabmia
    does (worker processes: such values are converted in Python, holding the GIL) and on
    2 threads (forced, by patching the rule), interleaved."""
    from contextlib import nullcontext
    from unittest import mock

    import pandas as pd

    import tabmia.shadow._scoring as scoring
    from tabmia.shadow import ShadowPopulation, catboost_classifier

    frame = credit_like(n, seed=0)
    y = frame.pop("default").to_numpy()
    for col in ("SEX", "EDUCATION", "MARRIAGE"):
        frame[col] = frame[col].astype("category")
    half, quarter = n // 2, n // 4
    pop = ShadowPopulation(catboost_classifier("cpu", iterations=200), n_models=4,
                           random_state=0, n_jobs=2)
    pop.fit(frame.iloc[half:half + quarter // 4], y[half:half + quarter // 4])
    X_c = pd.concat([frame.iloc[:quarter], frame.iloc[half + quarter:]])
    y_c = np.concatenate([y[:quarter], y[half + quarter:]])
    settings = {"1 job": (1, nullcontext), "2 jobs (processes)": (2, nullcontext),
                "2 threads (forced)": (2, lambda: mock.patch.object(
                    scoring, "_converted_in_python", lambda X: False))}
    times: dict[str, list[float]] = {k: [] for k in settings}
    stats: dict[str, np.ndarray] = {}
    for _ in range(repeats):
        for name, (jobs, patch) in settings.items():
            pop.n_jobs = jobs
            with patch():
                t0 = time.perf_counter()
                stats[name] = pop.statistics(X_c, y_c)
                times[name].append(time.perf_counter() - t0)
            print(f"  CatBoost, categories, {name}: {times[name][-1]:.2f} s", flush=True)
    first = stats["1 job"]
    return {"candidates": int(y_c.size), "models": 4, "seconds": times,
            "median": {k: statistics.median(v) for k, v in times.items()},
            "identical": all(bool(np.array_equal(first, v)) for v in stats.values())}


def main(argv: list[str] | None = None) -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    from tabmia.attacks import LiRAAttack, RMIAAttack

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.out:
        set_results_dir(args.out)
    load = {"start": os.getloadavg()}
    d = data(args.records)
    target = HistGradientBoostingClassifier(random_state=0).fit(d["X_train"], d["y_train"])
    recipe = HistGradientBoostingClassifier()
    rows = []
    for name, attack in (
        ("LiRA offline", LiRAAttack(target, shadow_estimator=recipe, n_shadow=N_MODELS,
                                    random_state=0, n_jobs=2)),
        ("RMIA", RMIAAttack(target, reference_estimator=recipe, n_reference=N_MODELS,
                            random_state=0, n_jobs=2)),
    ):
        print(f"{name} ...", flush=True)
        before = os.getloadavg()
        row = case(name, attack, d, args.repeats)
        row["load_before"], row["load_after"] = before, os.getloadavg()
        row["parallel_check"] = parallel_check()
        rows.append(row)
    print("CatBoost shadows, categorical records ...", flush=True)
    cat = categorical_case(args.records, args.repeats)
    load["end"] = os.getloadavg()
    md = [
        f"`decision_function` on {rows[0]['candidates']:,} candidates (half members) of "
        f"{args.records:,} credit-shaped records; {rows[0]['public']:,} public records; HGB "
        f"target, HGB shadows / reference models; `OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS')}`; {args.repeats} interleaved repeats per "
        "setting, median shown.",
        "",
        "| attack | models | fit s (2 jobs) | n_jobs=1 s | n_jobs=2 s | speed-up | identical "
        "scores 1 vs 2 jobs | statistics identical to one model after another | load "
        "before / after | pure CPU work, 2 jobs vs 1 (right after) |",
        "|---|---:|---:|---:|---:|---:|---|---|---|---:|",
    ]
    for r in rows:
        md.append(
            f"| {r['attack']} | {r['models']} | {r['fit_s']:.1f} | {r['median_1_job']:.1f} | "
            f"{r['median_2_jobs']:.1f} | {r['speedup']:.2f}x | "
            f"{'yes' if r['identical_scores_1_vs_2_jobs'] else 'NO'} | "
            f"{'yes' if r['identical_statistics_vs_one_model_after_another'] else 'NO'} | "
            f"{r['load_before'][0]:.1f} / {r['load_after'][0]:.1f} | "
            f"{r['parallel_check']['speedup']:.2f}x |")
    md += ["", "Each run's wall seconds (CPU seconds of this process and its workers): "
           + "; ".join(
               f"{r['attack']}: 1 job " + ", ".join(
                   f"{t:.1f} ({c:.1f})" for t, c in zip(r["seconds_1_job"], r["cpu_seconds_1_job"]))
               + ", 2 jobs " + ", ".join(
                   f"{t:.1f} ({c:.1f})" for t, c in zip(r["seconds_2_jobs"], r["cpu_seconds_2_jobs"]))
               for r in rows) + ". On a machine shared with other jobs (load above the core "
           "count) the two jobs get less than two cores, and the speed-up falls with it; the "
           "CPU seconds say how much work each setting did. The last column is what two jobs "
           "bought at that moment on work that is nothing but CPU (two tasks of 2 s, on 1 "
           "job and on 2): the most any parallel code could gain then."]
    med = cat["median"]
    md += ["", "## Records with categorical columns: scored in processes, not on threads", "",
           f"4 CatBoost shadows (`catboost_classifier`, 200 iterations) score "
           f"{cat['candidates']:,} candidates given as a DataFrame whose three categorical "
           "columns are pandas categories (`ShadowPopulation.statistics`). Such values are "
           "converted in Python, holding the GIL (CatBoost: strings, then hashes), so tabmia "
           "scores these records in worker processes; the last column forces threads. "
           f"Median of {args.repeats} interleaved repeats; statistics identical in all three: "
           f"{'yes' if cat['identical'] else 'NO'}.", "",
           "| 1 job s | 2 jobs s (processes, what tabmia does) | 2 threads s (forced) |",
           "|---:|---:|---:|",
           f"| {med['1 job']:.2f} | {med['2 jobs (processes)']:.2f} | "
           f"{med['2 threads (forced)']:.2f} |"]
    write_results("reference_scoring", {"records": args.records, "repeats": args.repeats,
                                        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                                        "rows": rows, "categorical": cat,
                                        "load_average": load},
                  "\n".join(md) + load_note(load))


if __name__ == "__main__":
    main()
