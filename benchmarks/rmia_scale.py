"""RMIA's pairwise count at scale: 10^5 candidates x 10^5 population records.

``Pr_z[LR(x, z) >= gamma]`` for every candidate is computed from one sort of the
population's log-ratios and one binary search per candidate (no ``n x z`` matrix).
This script measures

1. the counting kernel :func:`tabmia.attacks.rmia.rmia_fraction` on synthetic
   log-ratios, 10^5 x 10^5: time and peak traced memory (``tracemalloc``), next to what
   the ``n x z`` comparison would hold (10^10 booleans) and the time of that brute
   force on a 10^4 x 10^4 slice;
2. the whole attack: :class:`tabmia.attacks.rmia.RMIAAttack` (4 logistic-regression
   reference models + 1 to tune ``a``) fit on 10^5 public records, so 10^5 population
   records, then ``decision_function`` on 10^5 candidates: times, peak traced memory of
   the scoring call, and the process's peak resident memory (``getrusage``).

Run: ``python benchmarks/rmia_scale.py``.
"""

from __future__ import annotations

import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import load_note, write_results  # noqa: E402

N = 100_000


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def kernel() -> dict:
    from tabmia.attacks.rmia import rmia_fraction

    rng = np.random.default_rng(0)
    rx = rng.normal(size=N)
    rz = rng.normal(size=N)
    rmia_fraction(rx[:10], rz[:10])  # warm-up
    tracemalloc.start()
    t0 = time.perf_counter()
    frac = rmia_fraction(rx, rz, 1.0)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # brute force on a 10^4 x 10^4 slice (the full one would hold 10^10 comparisons)
    m = 10_000
    t0 = time.perf_counter()
    brute = (rx[:m, None] >= rz[None, :m]).mean(axis=1)
    brute_s = time.perf_counter() - t0
    assert np.array_equal(brute, rmia_fraction(rx[:m], rz[:m]))
    return {
        "n_candidates": N,
        "n_population": N,
        "seconds": seconds,
        "peak_traced_mb": peak / 2**20,
        "inputs_mb": (rx.nbytes + rz.nbytes) / 2**20,
        "n_x_z_bool_matrix_gb": N * N / 2**30,
        "brute_force_1e4x1e4_seconds": brute_s,
        "brute_force_1e5x1e5_seconds_extrapolated": brute_s * 100,
        "mean_share": float(frac.mean()),
    }


def attack() -> dict:
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    from tabmia.attacks.rmia import RMIAAttack

    X, y = make_classification(n_samples=2 * N + 20_000, n_features=20, n_informative=10,
                               flip_y=0.05, random_state=0)
    X = X.astype(np.float32)
    train, public, cand = X[:20_000], slice(20_000, 20_000 + N), slice(20_000 + N, None)
    target = LogisticRegression(max_iter=200).fit(train, y[:20_000])
    a = RMIAAttack(target, reference_estimator=LogisticRegression(max_iter=200),
                   n_reference=4, random_state=0, n_jobs=2)
    t0 = time.perf_counter()
    a.fit(X[public], y[public])
    fit_s = time.perf_counter() - t0
    Xc, yc = X[cand], y[cand]
    a.decision_function(Xc[:10], yc[:10])  # warm-up
    tracemalloc.start()
    t0 = time.perf_counter()
    s = a.decision_function(Xc, yc)
    score_s = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the counting step alone, on this attack's own ratios
    r = a.score_samples(Xc, yc)
    t0 = time.perf_counter()
    a._decision(r, a.population_log_ratios_)
    count_s = time.perf_counter() - t0
    return {
        "n_public": N,
        "n_population": int(a.population_log_ratios_.size),
        "n_candidates": int(s.size),
        "n_reference_models": a.population_.n_models,
        "a": a.a_,
        "fit_seconds": fit_s,
        "decision_function_seconds": score_s,
        "counting_seconds": count_s,
        "decision_function_peak_traced_mb": peak / 2**20,
        "candidate_matrix_mb": Xc.nbytes / 2**20,
        "process_peak_rss_mb": _peak_rss_mb(),
    }


def main() -> None:
    load = {"start": os.getloadavg()}
    k = kernel()
    print(k, flush=True)
    a = attack()
    print(a, flush=True)
    md = [
        "RMIA's pairwise count, 10^5 candidates x 10^5 population records.",
        "",
        "| what | value |",
        "|---|---|",
        f"| counting kernel (synthetic log-ratios), time | {k['seconds']:.3f} s |",
        f"| counting kernel, peak traced memory | {k['peak_traced_mb']:.1f} MB "
        f"(inputs {k['inputs_mb']:.1f} MB) |",
        f"| the n x z comparison matrix it avoids | {k['n_x_z_bool_matrix_gb']:.1f} GB of booleans |",
        f"| brute force on a 10^4 x 10^4 slice | {k['brute_force_1e4x1e4_seconds']:.2f} s "
        f"(x100 for 10^5 x 10^5: ~{k['brute_force_1e5x1e5_seconds_extrapolated']:.0f} s) |",
        f"| RMIAAttack.fit on 10^5 public records ({a['n_reference_models']} logistic "
        f"regressions) | {a['fit_seconds']:.1f} s |",
        f"| RMIAAttack.decision_function on 10^5 candidates vs {a['n_population']} z | "
        f"{a['decision_function_seconds']:.2f} s (count step {a['counting_seconds']:.3f} s) |",
        f"| decision_function, peak traced memory | {a['decision_function_peak_traced_mb']:.1f} MB "
        f"(candidate matrix itself {a['candidate_matrix_mb']:.1f} MB) |",
        f"| process peak resident memory | {a['process_peak_rss_mb']:.0f} MB |",
    ]
    load["end"] = os.getloadavg()
    write_results("rmia_scale", {"kernel": k, "attack": a, "load_average": load},
                  "\n".join(md) + load_note(load))


if __name__ == "__main__":
    main()
