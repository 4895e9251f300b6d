"""Wall time of shadow populations: K MLPs batched vs one by one, and CatBoost shadows.

MLPs: Purchase-100-shaped data (600 binary features drawn Bernoulli(0.2), 100 classes
from a random linear teacher), the 2x256 ReLU MLP of the papers (Adam, lr 0.005,
batch 200), 10,000 training rows per model: a pool of 20,000 records, each record IN
for half the models (pairs of complementary halves). K = 1, 8, 64 models, trained

- batched: :func:`tabmia.shadow.fit_mlps_batched`, all K as one stacked network;
- one by one: ``TorchMLPClassifier.fit`` per model (same seeds and rows).

Time is linear in epochs, so each case is timed over a few epochs (stated) and the
100-epoch time of the papers' protocol is reported as measured seconds per epoch x 100,
labelled *extrapolated*. GPU rows run only where ``torch.cuda.is_available()``.

CatBoost: :class:`tabmia.shadow.ShadowPopulation` of ``catboost_classifier`` shadows on
the Adult DataFrame (category columns passed as ``cat_features`` automatically), CPU,
and GPU where CatBoost sees one.

Jobs on this machine: the same ``ShadowPopulation`` with ``n_jobs=1`` and with the
scheduler's default (every core; :mod:`tabmia.shadow._schedule`), for batched MLP
shadows and CatBoost shadows, with identical scores checked.

CatBoost size sweep: one model (300 iterations, depth 6, 30 features) on 2*10^4, 2*10^5
and 10^6 rows, on all CPU cores here and on the GPU where CatBoost sees one; the H100
figures of the same sweep are quoted next to it with their provenance (the rule of
``device="auto"`` in :mod:`tabmia.backends` starts from them).

Run: ``python -m benchmarks.shadow_speed`` (``--quick`` for a small smoke run, ``--out
DIR`` to write elsewhere).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._common import SHARED_DATA, set_results_dir, write_results

#: The same measurements on one NVIDIA H100 80GB with 16 CPU cores (main at 6acecaf,
#: 2026-11-23; ../shared/measurements/2026-11-23-h100/), quoted where this machine has
#: no GPU.
H100 = {
    "provenance": "measured on one NVIDIA H100 80GB (16 CPU cores) at main 6acecaf, "
                  "2026-11-23 (../shared/measurements/2026-11-23-h100/)",
    "catboost_size_sweep": [
        {"rows": 20_000, "cpu_s": 1.26, "cpu_threads": 16, "gpu_s": 1.84},
        {"rows": 200_000, "cpu_s": 3.00, "cpu_threads": 16, "gpu_s": 1.66},
        {"rows": 1_000_000, "cpu_s": 9.45, "cpu_threads": 16, "gpu_s": 2.25},
    ],
    "mlp_s_per_model_epoch": [
        {"K": 1, "cpu_1_thread_batched": 0.25, "cuda_batched": 0.16, "cuda_one_by_one": 0.16},
        {"K": 8, "cpu_1_thread_batched": 0.23, "cuda_batched": 0.02, "cuda_one_by_one": 0.14},
        {"K": 64, "cpu_1_thread_batched": 0.25, "cuda_batched": 0.0037,
         "cuda_one_by_one": 0.14},
    ],
    "catboost_parallel_gpu": "8 CatBoost shadows (20k x 20, 300 it.): 8 CPU jobs 4.3 s; one "
                             "GPU job 12.0 s; 8 GPU jobs aborted (SIGABRT, CUDA error 2: out "
                             "of memory); 8 GPU jobs with gpu_ram_part=0.1: 32.7 s",
}


def purchase_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Binary features Bernoulli(0.2), 100 classes from a noisy random linear teacher."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, 600)) < 0.2).astype(np.float32)
    teacher = rng.normal(size=(600, 100)).astype(np.float32)
    logits = X @ teacher + rng.gumbel(scale=2.0, size=(n, 100)).astype(np.float32)
    return X, np.argmax(logits, axis=1)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def time_mlps(
    X: np.ndarray,
    y: np.ndarray,
    K: int,
    epochs: int,
    device: str,
    params: dict[str, Any],
    repeats: int = 1,
) -> list[dict[str, Any]]:
    """Batched and one-by-one time of K MLPs for ``epochs`` epochs, interleaved repeats."""
    import torch

    from tabmia.shadow import TorchMLPClassifier, draw_in_masks, fit_mlps_batched

    masks = draw_in_masks(max(K, 2), X.shape[0], random_state=0)[:K]
    seeds = np.arange(1, K + 1)
    run = {**params, "epochs": epochs}

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def batched() -> Any:
        return fit_mlps_batched(X, y, masks, seeds, run, device, classes=np.arange(100))[0]

    def one_by_one() -> Any:
        first = None
        for k in range(K):  # a loop over models: the baseline being measured
            model = TorchMLPClassifier(**run, random_state=int(seeds[k]), device=device)
            model.fit(X[masks[k]], y[masks[k]], classes=np.arange(100))
            first = model if first is None else first
        return first

    times: dict[str, list[tuple[float, float, float]]] = {"batched": [], "one by one": []}
    firsts = {}
    for _ in range(repeats):  # interleaved, so both modes see the same machine load
        for mode, func in (("batched", batched), ("one by one", one_by_one)):
            load = _load()
            sync()
            w0, c0 = time.perf_counter(), time.process_time()
            firsts[mode] = func()
            sync()
            times[mode].append((time.perf_counter() - w0, time.process_time() - c0, load))
    rows = [_row(mode, K, epochs, device, times[mode], masks) for mode in times]
    diff = max(
        float((a.detach().cpu() - b.detach().cpu()).abs().max())
        for a, b in zip(
            firsts["batched"].module_.parameters(), firsts["one by one"].module_.parameters()
        )
    )
    for r in rows:
        r["max_abs_weight_diff_model0"] = diff
    rows[0]["speedup_wall"] = rows[1]["wall_s_min"] / rows[0]["wall_s_min"]
    rows[0]["speedup_cpu"] = rows[1]["cpu_s_min"] / rows[0]["cpu_s_min"]
    return rows


def _row(
    mode: str,
    K: int,
    epochs: int,
    device: str,
    times: list[tuple[float, float, float]],
    masks: np.ndarray,
) -> dict[str, Any]:
    walls = [t[0] for t in times]
    cpus = [t[1] for t in times]
    wall = min(walls)
    per_epoch = wall / epochs
    return {
        "model": "MLP 600-256-256-100",
        "mode": mode,
        "K": K,
        "device": device,
        "rows_per_model_mean": float(masks.sum(axis=1).mean()),
        "epochs_timed": epochs,
        "repeats": len(times),
        "wall_s_all": walls,
        "wall_s_min": wall,
        "cpu_s_all": cpus,
        "cpu_s_min": min(cpus),
        "s_per_model_epoch": per_epoch / K,
        "extrapolated_100_epochs_s": per_epoch * 100,
        "load_avg_1min_before": [t[2] for t in times],
        "status": "measured",
    }


def adult_frame(n: int | None) -> tuple[pd.DataFrame, np.ndarray, str]:
    path = SHARED_DATA / "adult" / "adult.csv.gz"
    if path.exists():
        frame = pd.read_csv(path)
        source = "UCI Adult (../shared/data/adult/adult.csv.gz)"
    else:  # synthetic stand-in with the same column kinds
        rng = np.random.default_rng(0)
        m = 48842
        frame = pd.DataFrame(
            {
                "age": rng.integers(17, 90, m),
                "workclass": rng.choice(["Private", "Self-emp", "Gov", None], m),
                "education": rng.choice(["HS-grad", "Bachelors", "Masters", "Some"], m),
                "hours-per-week": rng.integers(1, 99, m),
                "income": rng.choice(["<=50K", ">50K"], m, p=[0.76, 0.24]),
                "split": "train",
            }
        )
        source = "synthetic Adult-like (the shared Adult file was missing)"
    if n is not None:
        frame = frame.iloc[:n]
    y = frame.pop("income").str.rstrip(".").to_numpy()
    frame = frame.drop(columns=["split"], errors="ignore")
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col]):
            frame[col] = frame[col].astype("category")
    return frame.reset_index(drop=True), y, source


def time_catboost(
    frame: pd.DataFrame, y: np.ndarray, K: int, iterations: int, task_type: str, n_jobs: int
) -> dict[str, Any]:
    from tabmia.shadow import ShadowPopulation, catboost_classifier

    threads = max(1, (os.cpu_count() or 1) // n_jobs)
    est = catboost_classifier(
        iterations=iterations, depth=6, thread_count=threads, task_type=task_type
    )
    load = _load()
    t0 = time.perf_counter()
    pop = ShadowPopulation(est, n_models=K, random_state=0, n_jobs=n_jobs, keep_models=False)
    pop.fit(frame, y)
    wall = time.perf_counter() - t0
    gap = float(pop.statistics_[pop.in_masks_].mean() - pop.statistics_[~pop.in_masks_].mean())
    return {
        "model": f"CatBoost depth 6, {iterations} iterations",
        "K": K,
        "device": task_type,
        "n_jobs": n_jobs,
        "thread_count": threads,
        "n_records_pool": int(len(frame)),
        "wall_s": wall,
        "s_per_model": wall / K,
        "in_minus_out_mean_logit": gap,
        "load_avg_1min_before": load,
        "status": "measured",
    }


def time_jobs(
    label: str, recipe: Any, X: Any, y: np.ndarray, K: int, repeats: int
) -> list[dict[str, Any]]:
    """ShadowPopulation of ``recipe`` with ``n_jobs=1`` and with the default (every core).

    Runs interleaved, fastest repeat reported; the scores of both must be identical.
    """
    import joblib

    from tabmia.shadow import ShadowPopulation
    from tabmia.shadow._schedule import plan_jobs

    # warm-up (not timed): start the worker processes, import the libraries in them
    small = min(len(y), 400)
    ShadowPopulation(recipe, n_models=2, random_state=0, keep_models=False).fit(
        X[:small], y[:small])
    times: dict[str, list[tuple[float, float]]] = {"1": [], "all cores": []}
    stats: dict[str, np.ndarray] = {}
    jobs: dict[str, int] = {}
    for _ in range(repeats):
        for name, n_jobs in (("1", 1), ("all cores", None)):
            load = _load()
            t0 = time.perf_counter()
            pop = ShadowPopulation(recipe, n_models=K, random_state=0, n_jobs=n_jobs,
                                   keep_models=False).fit(X, y)
            times[name].append((time.perf_counter() - t0, load))
            stats[name], jobs[name] = pop.statistics_, pop.n_jobs_
    same = bool(np.array_equal(stats["1"], stats["all cores"]))
    rows = []
    for name in times:
        plan = plan_jobs(recipe, 1 if name == "1" else None, K)
        walls = [t[0] for t in times[name]]
        rows.append({
            "model": label, "K": K, "n_jobs": name, "jobs_used": jobs[name],
            "threads_per_job": plan.threads, "cores": joblib.cpu_count(),
            "wall_s_all": walls, "wall_s_min": min(walls),
            "load_avg_1min_before": [t[1] for t in times[name]],
            "identical_scores": same, "status": "measured",
        })
    rows[1]["speedup"] = rows[0]["wall_s_min"] / rows[1]["wall_s_min"]
    return rows


def time_catboost_size(n_rows: int, task_type: str) -> dict[str, Any]:
    """One CatBoost model, 300 iterations, depth 6, on ``n_rows`` x 30 synthetic rows."""
    from catboost import CatBoostClassifier
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_rows, n_features=30, n_informative=15,
                               random_state=0)
    X = X.astype(np.float32)
    model = CatBoostClassifier(iterations=300, depth=6, task_type=task_type, verbose=0,
                               allow_writing_files=False, random_seed=0, thread_count=-1)
    load = _load()
    t0 = time.perf_counter()
    model.fit(X, y)
    wall = time.perf_counter() - t0
    return {"rows": n_rows, "device": task_type, "threads": os.cpu_count(), "wall_s": wall,
            "load_avg_1min_before": load, "status": "measured"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads for the MLP timings (default 1: on a machine shared "
        "with other jobs, OpenMP threads spin-wait for each other and inflate times at "
        "random; 0 keeps torch's default)",
    )
    parser.add_argument("--out", default=None, help="write the results into this folder")
    args = parser.parse_args(argv)
    if args.out:
        set_results_dir(args.out)

    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)

    from tabmia.shadow import gpu_available

    rows_per_model = 1000 if args.quick else 10000
    pool = 2 * rows_per_model
    X, y = purchase_like(pool)
    params = {"hidden_layer_sizes": (256, 256), "batch_size": 200, "lr": 0.005}
    # (K, epochs timed, interleaved repeats)
    plan = [(1, 1, 3), (8, 1, 2), (64, 1, 1)]
    torch_threads = torch.get_num_threads()
    # warm-up (torch kernels, allocator): not timed
    time_mlps(X[:400], y[:400], 2, 1, "cpu", params)
    mlp_rows: list[dict[str, Any]] = []
    for K, epochs, repeats in plan:
        print(f"MLP K={K} cpu, {epochs} epoch(s) x {repeats} ...", flush=True)
        mlp_rows += time_mlps(X, y, K, epochs, "cpu", params, repeats)
    cuda = torch.cuda.is_available()
    for K, _epochs, _repeats in plan:
        if cuda:
            print(f"MLP K={K} cuda ...", flush=True)
            mlp_rows += time_mlps(X, y, K, 5 if not args.quick else 1, "cuda", params, 2)
        else:
            for mode in ("batched", "one by one"):
                mlp_rows.append(
                    {"model": "MLP 600-256-256-100", "mode": mode, "K": K, "device": "cuda",
                     "status": "not measured: no GPU in this session"}
                )

    frame, labels, source = adult_frame(2000 if args.quick else None)
    cb_K, cb_iter = (2, 20) if args.quick else (4, 200)
    cb_rows = []
    # warm-up: start the joblib worker processes and import CatBoost in them (not timed)
    time_catboost(frame.iloc[:400], labels[:400], 2, 2, "CPU", 2)
    for n_jobs in (1, 2):
        print(f"CatBoost K={cb_K} CPU n_jobs={n_jobs} ...", flush=True)
        cb_rows.append(time_catboost(frame, labels, cb_K, cb_iter, "CPU", n_jobs))
    if gpu_available("catboost"):
        print("CatBoost GPU ...", flush=True)
        cb_rows.append(time_catboost(frame, labels, cb_K, cb_iter, "GPU", 1))
    else:
        cb_rows.append(
            {"model": f"CatBoost depth 6, {cb_iter} iterations", "K": cb_K, "device": "GPU",
             "status": "not measured: no GPU in this session"}
        )

    # ---- jobs on this machine: n_jobs=1 vs every core, through the scheduler
    from tabmia.shadow import TorchMLPClassifier, catboost_classifier

    jobs_rows: list[dict[str, Any]] = []
    mlp_K, mlp_epochs = (4, 1) if args.quick else (8, 2)
    X_small, y_small = purchase_like(1000 if args.quick else 4000, seed=1)
    mlp = TorchMLPClassifier(hidden_layer_sizes=(256, 256), batch_size=200, lr=0.005,
                             epochs=mlp_epochs, device="cpu")
    print(f"jobs: {mlp_K} MLPs, n_jobs=1 vs all cores ...", flush=True)
    jobs_rows += time_jobs(f"MLP 600-256-256-100, {mlp_epochs} epochs, "
                           f"{len(y_small) // 2} rows per model", mlp, X_small, y_small,
                           mlp_K, 1 if args.quick else 2)
    cb_recipe = catboost_classifier(iterations=cb_iter, depth=6, device="cpu")  # threads unset
    print(f"jobs: {cb_K} CatBoost shadows, n_jobs=1 vs all cores ...", flush=True)
    jobs_rows += time_jobs(f"CatBoost depth 6, {cb_iter} iterations, Adult, threads from "
                           "the scheduler", cb_recipe, frame, labels, cb_K, 1)

    # ---- CatBoost size sweep: where the GPU starts to pay
    sweep_rows: list[dict[str, Any]] = []
    sizes = (2_000, 20_000) if args.quick else (20_000, 200_000, 1_000_000)
    for n in sizes:
        print(f"CatBoost size sweep: {n:,} rows, CPU ...", flush=True)
        sweep_rows.append(time_catboost_size(n, "CPU"))
        if gpu_available("catboost"):
            sweep_rows.append(time_catboost_size(n, "GPU"))
        else:
            sweep_rows.append({"rows": n, "device": "GPU",
                               "status": "not measured: no GPU in this session"})

    payload = {
        "quick": args.quick,
        "mlp_setup": {
            "data": "Purchase-100-shaped synthetic: 600 Bernoulli(0.2) binary features, "
            "100 classes from a random linear teacher plus Gumbel noise",
            "pool_records": pool,
            "rows_per_model": f"~{rows_per_model} (each record IN for half the models)",
            "architecture": "600-256-256-100 ReLU, Adam lr 0.005, batch 200",
            "epochs_timed": {str(K): e for K, e, _r in plan},
            "repeats": {str(K): r for K, _e, r in plan},
            "torch_threads": torch_threads,
            "note": "time is linear in epochs; extrapolated_100_epochs_s = measured "
            "s_per_epoch (fastest repeat) x 100 (the papers' 100 epochs) and is an "
            "extrapolation. cpu_s = process CPU time (all threads of this process), less "
            "sensitive than wall time to other jobs on a shared machine",
        },
        "mlp": mlp_rows,
        "catboost_setup": {"data": source, "n_records_pool": int(len(frame))},
        "catboost": cb_rows,
        "jobs": jobs_rows,
        "catboost_size_sweep": sweep_rows,
        "quoted_h100": H100,
    }
    json_path, md_path = write_results("shadow_speed", payload, _markdown(payload))
    print(f"wrote {json_path} and {md_path}")


def _fmt(x: Any, spec: str = ".1f") -> str:
    return format(x, spec) if isinstance(x, (int, float)) else "-"


def _markdown(p: dict[str, Any]) -> str:
    s = p["mlp_setup"]
    lines = [
        "## K Purchase-shaped MLPs: batched vs one by one",
        "",
        f"{s['data']}; pool of {s['pool_records']:,} records, {s['rows_per_model']} "
        f"training rows per model; {s['architecture']}; torch intra-op threads: "
        f"{s['torch_threads']} (one thread: on this 2-core machine, when shared with "
        "other jobs, two OpenMP threads spin-waited for each other and inflated single "
        "runs up to 10x at random).",
        "",
        "Timed over the epochs in the table (training time is linear in epochs); batched "
        "and one-by-one runs interleaved, the fastest repeat reported. CPU s is this "
        "process's CPU time (all threads), less sensitive than wall time to other jobs on "
        "a shared machine. The last column is **extrapolated**: measured seconds "
        "per epoch x 100 (the papers' 100 epochs); it was not run.",
        "",
        "| K | device | mode | epochs x repeats | wall s (min) | CPU s (min) | "
        "s per model-epoch | speedup wall / CPU | load avg | 100 epochs s (extrapolated) |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in p["mlp"]:
        if r["status"] != "measured":
            lines.append(
                f"| {r['K']} | {r['device']} | {r['mode']} | - | {r['status']} "
                "| - | - | - | - | - |"
            )
            continue
        speed = (
            f"{r['speedup_wall']:.2f} / {r['speedup_cpu']:.2f}" if "speedup_wall" in r else "-"
        )
        loads = ", ".join(str(v) for v in r["load_avg_1min_before"])
        lines.append(
            f"| {r['K']} | {r['device']} | {r['mode']} | {r['epochs_timed']} x "
            f"{r['repeats']} | {_fmt(r['wall_s_min'])} | {_fmt(r['cpu_s_min'])} | "
            f"{_fmt(r['s_per_model_epoch'], '.2f')} | {speed} | {loads} | "
            f"{_fmt(r['extrapolated_100_epochs_s'], ',.0f')} |"
        )
    diffs = {
        r["K"]: r["max_abs_weight_diff_model0"]
        for r in p["mlp"]
        if "max_abs_weight_diff_model0" in r
    }
    lines += ["", "Every repeat (wall s / CPU s):", ""]
    for r in p["mlp"]:
        if r["status"] == "measured":
            reps = ", ".join(
                f"{w:.1f} / {c:.1f}" for w, c in zip(r["wall_s_all"], r["cpu_s_all"])
            )
            lines.append(f"- K={r['K']} {r['device']} {r['mode']}: {reps}")
    lines += [
        "",
        "K=1 runs the same code either way (TorchMLPClassifier.fit is the batched trainer "
        "with one model): its two rows differ by noise only.",
        "",
        "Batched and one-by-one training give the same models: largest absolute weight "
        "difference of model 0 after the timed epochs: "
        + ", ".join(f"K={k}: {v:.1e}" for k, v in diffs.items())
        + ".",
        "",
        "## CatBoost shadows (ShadowPopulation)",
        "",
        f"{p['catboost_setup']['data']}, pool of {p['catboost_setup']['n_records_pool']:,} "
        "records (category columns passed as cat_features automatically), each shadow on "
        "half of it.",
        "",
        "| K | device | n_jobs x thread_count | wall s | s per model | IN - OUT mean logit "
        "| load avg |",
        "|---:|---|---|---:|---:|---:|---:|",
    ]
    for r in p["catboost"]:
        if r["status"] != "measured":
            lines.append(f"| {r['K']} | {r['device']} | - | {r['status']} | - | - | - |")
            continue
        lines.append(
            f"| {r['K']} | {r['device']} | {r['n_jobs']} x {r['thread_count']} | "
            f"{_fmt(r['wall_s'])} | {_fmt(r['s_per_model'], '.2f')} | "
            f"{_fmt(r['in_minus_out_mean_logit'], '.3f')} | {r['load_avg_1min_before']} |"
        )
    loads = [r["load_avg_1min_before"] for r in p["catboost"] if "load_avg_1min_before" in r]
    # the load average counts this benchmark itself (about 1)
    busy = bool(loads) and max(loads) > (os.cpu_count() or 1)
    lines += [
        "",
        ("The machine was shared with other jobs while this ran (see the load averages): "
         if busy else "The machine was otherwise idle (see the load averages); ")
        + "CatBoost timings are single runs, not means over repeats.",
    ]
    lines += _jobs_markdown(p) + _sweep_markdown(p)
    return "\n".join(lines)


def _jobs_markdown(p: dict[str, Any]) -> list[str]:
    rows = p.get("jobs", [])
    lines = [
        "",
        "## Jobs on this machine: n_jobs=1 vs every core",
        "",
        "The same ShadowPopulation with `n_jobs=1` and with the default (`n_jobs=None`: "
        "one job per core, `tabmia.shadow._schedule`); MLPs train batched, one network per "
        "job, one torch thread each; CatBoost gets one thread per job (its models change "
        "with the thread count, so the scores of both rows must be identical). "
        "Interleaved runs, fastest reported; "
        "worker start-up is outside the timed region.",
        "",
        "| model | K | n_jobs | jobs used x threads | wall s (min) | speedup | identical "
        "scores | load avg |",
        "|---|---:|---|---|---:|---:|---|---|",
    ]
    for r in rows:
        speed = f"{r['speedup']:.2f}x" if "speedup" in r else "-"
        loads = ", ".join(str(v) for v in r["load_avg_1min_before"])
        lines.append(
            f"| {r['model']} | {r['K']} | {r['n_jobs']} | {r['jobs_used']} x "
            f"{r['threads_per_job']} | {_fmt(r['wall_s_min'], '.2f')} | {speed} | "
            f"{'yes' if r['identical_scores'] else 'NO'} | {loads} |"
        )
    return lines


def _sweep_markdown(p: dict[str, Any]) -> list[str]:
    q = p["quoted_h100"]
    lines = [
        "",
        "## CatBoost size sweep: where a GPU starts to pay",
        "",
        "One CatBoostClassifier, 300 iterations, depth 6, 30 features "
        "(`make_classification`), all CPU cores (`thread_count=-1`) or the GPU.",
        "",
        "| rows | device | wall s | load avg |",
        "|---:|---|---:|---:|",
    ]
    for r in p.get("catboost_size_sweep", []):
        if r["status"] != "measured":
            lines.append(f"| {r['rows']:,} | {r['device']} | {r['status']} | - |")
            continue
        lines.append(f"| {r['rows']:,} | {r['device']} ({r['threads']} cores) | "
                     f"{_fmt(r['wall_s'], '.2f')} | {r['load_avg_1min_before']} |")
    lines += [
        "",
        f"Quoted, not measured here: the same sweep {q['provenance']}.",
        "",
        "| rows | CPU s (16 threads) | GPU s |",
        "|---:|---:|---:|",
    ]
    for r in q["catboost_size_sweep"]:
        lines.append(f"| {r['rows']:,} | {r['cpu_s']:.2f} | {r['gpu_s']:.2f} |")
    lines += [
        "",
        "`device=\"auto\"` puts CatBoost and XGBoost on a GPU from "
        "`tabmia.backends.GPU_MIN_ROWS` = 100,000 training rows: between the 2*10^4 rows "
        "where the GPU was slower and the 2*10^5 where it was faster.",
        "",
        f"Parallel CatBoost GPU jobs, quoted: {q['catboost_parallel_gpu']}. Hence one "
        "CatBoost job per GPU (tabmia.shadow._schedule).",
        "",
        "Batched MLPs, quoted (seconds per model-epoch, 10k rows each, 600-256-256-100):",
        "",
        "| K | CPU 1 thread, batched | CUDA batched | CUDA one by one |",
        "|---:|---:|---:|---:|",
    ]
    for r in q["mlp_s_per_model_epoch"]:
        lines.append(f"| {r['K']} | {r['cpu_1_thread_batched']} | {r['cuda_batched']} | "
                     f"{r['cuda_one_by_one']} |")
    lines += ["", "On CUDA, batched weights are not bitwise those of training alone (max |w| "
              "difference 0.54 after 5 epochs, K=8 and 64, same source); the same seed on "
              "the same device gave identical LiRA scores twice."]
    return lines


if __name__ == "__main__":
    main()
