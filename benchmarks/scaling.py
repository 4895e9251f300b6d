"""Wall time of a shadow population on 1 vs 2 workers: joblib processes and a dask cluster.

The same :class:`tabmia.shadow.ShadowPopulation` (CatBoost shadows on the Adult
DataFrame, one thread each, the shadow recipe LiRA and RMIA use on tabular data) is
trained, and then scores candidates (``statistics``: the Adult records repeated to
at least 3 x 65,536 rows, so that they go to the workers in several chunks),

- in-process, one model after another (``n_jobs=1``);
- by joblib's default process pool (loky), ``n_jobs=2``;
- on a ``dask.distributed.LocalCluster`` of 1 and of 2 single-threaded worker
  processes, through ``joblib.parallel_config(backend="dask")`` (``n_jobs=2`` both
  times: with one job joblib would run the tasks here, not on the cluster);
- on a local Ray instance of 2 CPUs, through ``backend="ray"`` (when ray is
  installed; a 1-CPU Ray pool cannot host 2 jobs, and 1 job runs in-process).

Every run must give the same ``statistics_`` array, and the same scores of the
candidates, as the in-process run (checked; a difference stops the benchmark). Each configuration is timed ``--repeats`` times
(median reported); the cluster's start-up is outside the timed region, the first
batch of tasks (imports in fresh workers) inside it.

Run: ``python -m benchmarks.scaling`` (``--quick``: 4 small models).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import joblib
import numpy as np

from benchmarks import _common


def _population(n_models: int, iterations: int, n_jobs: int):
    from tabmia.shadow import ShadowPopulation, catboost_classifier

    recipe = catboost_classifier(iterations=iterations, depth=6, thread_count=1,
                                 task_type="CPU")
    return ShadowPopulation(recipe, n_models=n_models, random_state=0, n_jobs=n_jobs,
                            keep_models=True)


def candidates(X: Any, y: np.ndarray, rows: int = 3 * 65_536) -> tuple[Any, np.ndarray]:
    """The records repeated to at least ``rows`` rows (three chunks of scoring by default)."""
    from tabmia.target import concat_rows

    times = max(1, -(-rows // len(y)))
    return concat_rows([X] * times), np.tile(y, times)


def _timed(fit: Callable[[], Any], repeats: int, cand: tuple[Any, np.ndarray]
           ) -> tuple[list[float], list[float], np.ndarray, np.ndarray]:
    times, score_times, stats, scored = [], [], None, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        pop = fit()
        times.append(time.perf_counter() - t0)
        stats = pop.statistics_
        t0 = time.perf_counter()
        scored = pop.statistics(*cand)
        score_times.append(time.perf_counter() - t0)
    return times, score_times, stats, scored


def run(X: Any, y: np.ndarray, *, n_models: int, iterations: int, repeats: int,
        log: Callable[[str], None], candidate_rows: int = 3 * 65_536) -> list[dict[str, Any]]:
    """Time every configuration; returns one row per configuration."""
    rows: list[dict[str, Any]] = []
    cand = candidates(X, y, candidate_rows)

    def record(name: str, workers: int, fit: Callable[[], Any], reference: Any):
        times, score_times, stats, scored = _timed(fit, repeats, cand)
        same = reference is None or (np.array_equal(stats, reference[0])
                                     and np.array_equal(scored, reference[1]))
        if not same:
            raise SystemExit(f"scaling: {name} with {workers} worker(s) gave different scores")
        rows.append({"backend": name, "workers": workers, "seconds": times,
                     "median_s": statistics.median(times), "identical_scores": bool(same),
                     "candidates": len(cand[1]), "scoring_seconds": score_times,
                     "scoring_median_s": statistics.median(score_times)})
        log(f"  {name}, {workers} worker(s): {statistics.median(times):.1f} s, scoring "
            f"{len(cand[1]):,} candidates {statistics.median(score_times):.1f} s")
        return stats, scored

    ref = record("in-process (n_jobs=1)", 1,
                 lambda: _population(n_models, iterations, 1).fit(X, y), None)
    record("joblib loky", 2, lambda: _population(n_models, iterations, 2).fit(X, y), ref)

    try:
        import distributed
    except ImportError:
        log("  dask.distributed not installed: dask rows skipped")
    else:
        for workers in (1, 2):
            with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                          processes=True, protocol="tcp://",
                                          host="127.0.0.1", dashboard_address=None) as cluster, \
                    distributed.Client(cluster):
                with joblib.parallel_config(backend="dask"):
                    record("dask LocalCluster", workers,
                           lambda: _population(n_models, iterations, 2).fit(X, y), ref)

    try:
        import ray
        from ray.util.joblib import register_ray
    except ImportError:
        log("  ray not installed: ray rows skipped")
    else:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False)
        try:
            register_ray()
            with joblib.parallel_config(backend="ray"):
                record("ray (local)", 2,
                       lambda: _population(n_models, iterations, 2).fit(X, y), ref)
        finally:
            ray.shutdown()
    return rows


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    base = rows[0]["median_s"]
    lines = [
        "Shadow training of one `ShadowPopulation` on 1 vs 2 workers "
        "(`python -m benchmarks.scaling" + (" --quick" if meta["quick"] else "") + "`).",
        "",
        f"Data: Adult ({meta['n_rows']:,} records, DataFrame with category columns). "
        f"Shadows: {meta['n_models']} CatBoost models (`catboost_classifier`, "
        f"{meta['iterations']} iterations, depth 6, one thread each), each on a random half "
        f"of the records; seed 0. Then every model scores {rows[0]['candidates']:,} "
        "candidates (the records repeated; `statistics`, in chunks of 65,536 records, each "
        "chunk a task with all the models). Median of "
        f"{meta['repeats']} runs; cluster start-up not "
        "timed (the first run includes the workers' imports). Every configuration gave "
        "training scores and candidate scores identical to the in-process run. Dask rows "
        "use `n_jobs=2` (with one worker it runs both jobs in turn).",
        "",
        "| backend | workers | training median s | runs (s) | speed-up vs in-process | "
        "scoring candidates s | speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    score_base = rows[0]["scoring_median_s"]
    for r in rows:
        runs = ", ".join(f"{t:.1f}" for t in r["seconds"])
        lines.append(f"| {r['backend']} | {r['workers']} | {r['median_s']:.1f} | {runs} | "
                     f"{base / r['median_s']:.2f}x | {r['scoring_median_s']:.1f} | "
                     f"{score_base / r['scoring_median_s']:.2f}x |")
    lines += ["", f"Load average before the run: {meta['load_before']}; after: "
              f"{meta.get('load_after', '?')} (2 cores: above 2, other jobs shared the CPU "
              "and the speed-ups understate what the workers give).",
              "", "Over the network (the dask rows): joblib's Dask back end scatters each "
              "argument of a task larger than 1 kB once per call, so the pool records go to "
              "each worker once for all its models (not once per model), the fitted models "
              "travel together as one object once per worker for scoring, and each chunk of "
              "candidates moves once, to the worker that scores it; what comes back is one "
              "float32 row per model and record."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 small models (smoke test)")
    parser.add_argument("--n-models", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = parser.parse_args(argv)
    if args.out:
        _common.set_results_dir(args.out)
    _common.use_shared_data()
    from tabmia.datasets import DataNotFoundError, load_adult

    try:
        X, y = load_adult(return_X_y=True)
    except DataNotFoundError as exc:
        print(f"scaling: Adult not present in the data home:\n{exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    n_models, iterations, repeats = args.n_models, args.iterations, args.repeats
    candidate_rows = 3 * 65_536
    if args.quick:  # the candidates too: one chunk, scored where the driver runs
        X, y = X.iloc[:2000], y[:2000]
        n_models, iterations, repeats, candidate_rows = 4, 20, 1, 2000
    meta = {"quick": args.quick, "n_rows": len(X), "n_models": n_models,
            "iterations": iterations, "repeats": repeats, "seed": 0,
            "load_before": round(os.getloadavg()[0], 2)}
    rows = run(X, np.asarray(y), n_models=n_models, iterations=iterations, repeats=repeats,
               log=print, candidate_rows=candidate_rows)
    meta["load_after"] = round(os.getloadavg()[0], 2)
    _common.write_results("scaling", {"config": meta, "rows": rows}, markdown(rows, meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
