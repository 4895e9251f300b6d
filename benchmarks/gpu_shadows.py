"""Shadow training on a GPU: batched MLPs near the hardware, and where boosting pays on it.

Run only on a machine with a CUDA GPU (sections write their own JSON, so each can run in
its own session of a rented machine); ``--render`` merges what was written into
``results/gpu_shadows.json`` / ``.md`` and adds the GPU rows to ``shadow_speed.json``.

Sections:

- ``profile``: :func:`tabmia.shadow.fit_mlps_batched` of K Purchase-shaped MLPs
  (600-256-256-100, 10k rows each, Adam lr 0.005, batch 200) under ``torch.profiler``,
  for each training mode: the top CUDA kernels and the host's share of the wall time.
- ``lira``: online LiRA end to end (the setup of
  ``../shared/measurements/2026-11-23-h100/``): a 2x256 MLP target trained on 10k
  Purchase-shaped records for 50 epochs, K shadows of the same recipe on the 20k
  candidate pool, 2,000 of the non-members known to the attacker; shadow fit time
  (training and scoring the pool) and AUC / TPR at 0.1 % and 1 % FPR on the other
  18,000 candidates, per mode and seed. The target is the same float32 model in every
  mode: only the shadows' arithmetic changes.
- ``boosting``: one CatBoost / XGBoost model (depth 6, 300 iterations, 30 features,
  binary) on 10^4 to 10^6 rows on the GPU and on 2 and 16 CPU threads: the crossover
  behind ``device="auto"`` (:data:`tabmia.backends.GPU_MIN_ROWS`).

Modes: ``fp32`` (the defaults: float32 products, eager Adam), ``tf32-fused``
(``matmul_precision="tf32", fused_step=True``), ``bf16-fused``.

Run: ``python -m benchmarks.gpu_shadows --section lira --seeds 0 1 2`` etc., then
``python -m benchmarks.gpu_shadows --render``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

from benchmarks._common import RESULTS, machine_info, write_results
from benchmarks.shadow_speed import purchase_like

MODES = {
    "fp32": {},
    "tf32-fused": {"matmul_precision": "tf32", "fused_step": True},
    "bf16-fused": {"matmul_precision": "bfloat16", "fused_step": True},
}
MLP = {"hidden_layer_sizes": (256, 256), "batch_size": 200, "lr": 0.005}


def _sync() -> None:
    import torch

    torch.cuda.synchronize()


def profile_mode(mode: str, K: int, epochs: int) -> dict[str, Any]:
    """Wall time of ``epochs`` epochs of K MLPs, and one profiled epoch's top kernels."""
    from torch.profiler import ProfilerActivity, profile

    from tabmia.shadow import draw_in_masks, fit_mlps_batched

    X, y = purchase_like(20_000)
    masks = draw_in_masks(K, X.shape[0], random_state=0)
    seeds = np.arange(1, K + 1)
    params = {**MLP, **MODES[mode]}
    # warm-up: kernels, the allocator and (fused) compilation, not timed
    fit_mlps_batched(X, y, masks, seeds, {**params, "epochs": 1}, "cuda", classes=np.arange(100))
    _sync()
    t0 = time.perf_counter()
    fit_mlps_batched(X, y, masks, seeds, {**params, "epochs": epochs}, "cuda",
                     classes=np.arange(100))
    _sync()
    wall = time.perf_counter() - t0
    print(f"{mode}: K={K}, {epochs} epochs: wall_s {wall:.2f}", flush=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fit_mlps_batched(X, y, masks, seeds, {**params, "epochs": 1}, "cuda",
                         classes=np.arange(100))
        _sync()
    events = prof.key_averages()
    cuda_total = sum(e.self_device_time_total for e in events) / 1e6
    top = sorted(events, key=lambda e: e.self_device_time_total, reverse=True)[:8]
    return {
        "mode": mode, "K": K, "epochs": epochs, "wall_s": wall, "s_per_epoch": wall / epochs,
        "profiled_epoch_gpu_busy_s": cuda_total,
        "top_kernels": [{"name": e.key[:70], "gpu_s": e.self_device_time_total / 1e6,
                         "calls": e.count} for e in top],
        "kernel_launches": int(sum(e.count for e in events if e.key == "cudaLaunchKernel")),
    }


def lira_case(mode: str, seed: int, K: int, epochs: int) -> dict[str, Any]:
    """Online LiRA with K MLP shadows against a float32 MLP target (see module doc)."""
    from sklearn.metrics import roc_auc_score

    from tabmia.attacks import LiRAAttack
    from tabmia.metrics import tpr_at_fpr
    from tabmia.shadow import TorchMLPClassifier

    n = 10_000
    X, y = purchase_like(4 * n, seed=seed)
    Xm, ym, Xn, yn = X[:n], y[:n], X[n:2 * n], y[n:2 * n]
    target = TorchMLPClassifier(**MLP, epochs=epochs, device="cuda", random_state=seed)
    target.fit(Xm, ym, classes=np.arange(100))
    shadow = TorchMLPClassifier(**MLP, **MODES[mode], epochs=epochs, device="cuda")
    Xc, yc = np.vstack([Xm, Xn]), np.concatenate([ym, yn])
    member = np.r_[np.ones(n), np.zeros(n)]
    known = np.zeros(2 * n, dtype=bool)
    known[n:n + 2000] = True
    attack = LiRAAttack(target, shadow_estimator=shadow, n_shadow=K, online=True,
                        random_state=seed, fpr=0.01)
    _sync()
    t0 = time.perf_counter()
    attack.fit(Xc, yc, known_nonmembers=known)
    _sync()
    fit_s = time.perf_counter() - t0
    scores = attack.decision_function(Xc, yc)
    keep = ~known
    m, s = member[keep], scores[keep]
    return {
        "mode": mode, "seed": seed, "K": K, "epochs": epochs, "shadow_fit_s": fit_s,
        "auc": float(roc_auc_score(m, s)),
        "tpr_at_0.1%": float(tpr_at_fpr(m, s, fpr=0.001)),
        "tpr_at_1%": float(tpr_at_fpr(m, s, fpr=0.01)),
        "target_train_acc": float((target.predict(Xm) == ym).mean()),
        "target_test_acc": float((target.predict(Xn) == yn).mean()),
    }


def boosting_case(library: str, rows: int, device: str, threads: int) -> dict[str, Any]:
    """Fit time of one boosted model of 300 depth-6 trees on ``rows`` synthetic rows."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=rows, n_features=30, n_informative=12,
                               random_state=0)
    X = X.astype(np.float32)
    if library == "catboost":
        from catboost import CatBoostClassifier

        params: dict[str, Any] = {"iterations": 300, "depth": 6, "verbose": 0,
                                  "allow_writing_files": False, "thread_count": threads}
        if device == "gpu":
            params.update(task_type="GPU", devices="0")
        model: Any = CatBoostClassifier(**params)
    else:
        from xgboost import XGBClassifier

        model = XGBClassifier(n_estimators=300, max_depth=6, tree_method="hist",
                              n_jobs=threads, device="cuda" if device == "gpu" else "cpu")
    if device == "gpu":  # the first GPU fit pays for the context: not timed
        model.fit(X[:2000], y[:2000])
    t0 = time.perf_counter()
    model.fit(X, y)
    return {"library": library, "rows": rows, "device": device,
            "cpu_threads": threads, "wall_s": time.perf_counter() - t0}


def _piece(section: str) -> str:
    return str(RESULTS / f"gpu_shadows_{section}.json")


def _save(section: str, rows: list[dict[str, Any]], args: dict[str, Any]) -> None:
    machine = machine_info()
    machine["load_avg"] = os.getloadavg()
    with open(_piece(section), "w") as fh:
        json.dump({"section": section, "args": args, "machine": machine, "rows": rows}, fh,
                  indent=2)
    print(f"wrote {_piece(section)}", flush=True)


def render() -> None:
    """Merge the section files into gpu_shadows.json / .md and shadow_speed.json."""
    pieces = {}
    for section in ("e2e", "profile", "lira", "boosting"):
        if os.path.exists(_piece(section)):
            with open(_piece(section)) as fh:
                pieces[section] = json.load(fh)
    lines = ["The header above names the machine that merged the sections; each section "
             "names the GPU machine it ran on.\n"]
    for section, piece in pieces.items():
        m = piece["machine"]
        lines.append(f"## {section}\n\nRun on {m['gpu']} with {m['cpu_count']} CPU cores "
                     f"({m['date']}; torch {m['versions'].get('torch')}, catboost "
                     f"{m['versions'].get('catboost')}, xgboost {m['versions'].get('xgboost')}; "
                     f"load {', '.join(f'{x:.1f}' for x in m['load_avg'])}).\n")
        if "note" in piece["args"]:
            lines.append(f"Note: {piece['args']['note']}\n")
        lines += _TABLES[section](piece["rows"])
        lines.append("")
    payload = {"sections": pieces}
    write_results("gpu_shadows", payload, "\n".join(lines))
    speed_path = RESULTS / "shadow_speed.json"
    if speed_path.exists() and pieces:
        speed = json.loads(speed_path.read_text())
        speed["measured_on_gpu"] = {
            "note": "GPU rows measured by benchmarks/gpu_shadows.py (see gpu_shadows.md)",
            **{s: {"gpu": p["machine"]["gpu"], "date": p["machine"]["date"], "rows": p["rows"]}
               for s, p in pieces.items()},
        }
        speed_path.write_text(json.dumps(speed, indent=2) + "\n")


def _e2e_table(rows: list[dict[str, Any]]) -> list[str]:
    return [f"- `{r['what']}`: {r['result']}" for r in rows]


def _profile_table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| mode | K | epochs | wall s (with weight set-up) | s per epoch | "
           "GPU time of a profiled 1-epoch fit s | kernel launches | top GPU ops (s) |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        tops = "; ".join(f"{t['name'][:40]} ({t['gpu_s']:.2f})" for t in r.get("top_kernels", [])[:4])
        busy = r.get("profiled_epoch_gpu_busy_s")
        out.append(f"| {r['mode']} | {r['K']} | {r['epochs']} | {r['wall_s']:.1f} | "
                   f"{r['s_per_epoch']:.2f} | {'-' if busy is None else f'{busy:.2f}'} | "
                   f"{r.get('kernel_launches', '-')} | {tops or r.get('note', '-')} |")
    return out


def _lira_table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| mode | seed | K | epochs | shadow fit s | AUC | TPR @ 0.1 % | TPR @ 1 % |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['mode']} | {r['seed']} | {r['K']} | {r['epochs']} | "
                   f"{r['shadow_fit_s']:.1f} | {r['auc']:.4f} | {r['tpr_at_0.1%']:.4f} | "
                   f"{r['tpr_at_1%']:.4f} |")
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_mode.setdefault(r["mode"], []).append(r)
    out += ["", "| mode | seeds | shadow fit s (mean) | AUC mean +- sd | TPR @ 0.1 % mean +- sd |",
            "|---|---:|---:|---:|---:|"]
    for mode, rs in by_mode.items():
        auc = np.array([r["auc"] for r in rs])
        tpr = np.array([r["tpr_at_0.1%"] for r in rs])
        fit = np.mean([r["shadow_fit_s"] for r in rs])
        sd = (lambda a: a.std(ddof=1) if a.size > 1 else float("nan"))
        out.append(f"| {mode} | {len(rs)} | {fit:.1f} | {auc.mean():.4f} +- {sd(auc):.4f} | "
                   f"{tpr.mean():.4f} +- {sd(tpr):.4f} |")
    return out


def _boosting_table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| library | rows | GPU s | CPU 2 threads s | CPU 16 threads s |",
           "|---|---:|---:|---:|---:|"]
    cells: dict[tuple[str, int], dict[str, float]] = {}
    for r in rows:
        key = "gpu" if r["device"] == "gpu" else f"cpu{r['cpu_threads']}"
        cells.setdefault((r["library"], r["rows"]), {})[key] = r["wall_s"]
    for (lib, n), c in sorted(cells.items()):
        out.append(f"| {lib} | {n:,} | {c.get('gpu', float('nan')):.2f} | "
                   f"{c.get('cpu2', float('nan')):.2f} | {c.get('cpu16', float('nan')):.2f} |")
    return out


_TABLES = {"e2e": _e2e_table, "profile": _profile_table, "lira": _lira_table, "boosting": _boosting_table}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", choices=("profile", "lira", "boosting"))
    parser.add_argument("--render", action="store_true")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--K", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--libraries", nargs="+", default=["catboost", "xgboost"])
    parser.add_argument("--rows", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args(argv)
    if args.render:
        render()
        return
    rows: list[dict[str, Any]] = []
    if args.section == "profile":
        for mode in args.modes:
            rows.append(profile_mode(mode, args.K, args.epochs))
            print(json.dumps(rows[-1])[:400], flush=True)
    elif args.section == "lira":
        for seed in args.seeds:
            for mode in args.modes:
                rows.append(lira_case(mode, seed, args.K, args.epochs))
                print(json.dumps(rows[-1]), flush=True)
                _save("lira", rows, vars(args))
    elif args.section == "boosting":
        for lib in args.libraries:
            for n in args.rows:
                for device, threads in (("gpu", 16), ("cpu", 2), ("cpu", 16)):
                    rows.append(boosting_case(lib, n, device, threads))
                    print(json.dumps(rows[-1]), flush=True)
                    _save("boosting", rows, vars(args))
    else:
        parser.error("give --section or --render")
    _save(args.section, rows, vars(args))


if __name__ == "__main__":
    main()
