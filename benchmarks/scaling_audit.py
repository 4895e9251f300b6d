"""``tabmia audit`` at scale: time and peak memory per phase, and the shadow phase on 1 vs 2 jobs.

Part 1 -- size. A credit-shaped synthetic data set (:func:`credit_like`: the 23 columns of
the Taiwan credit-default data, categorical sex / education / marriage, a ~22% default
rate from a noisy logistic rule) of 10^4, 10^5 and 10^6 records (``--sizes ... 10000000``
for 10^7). Half trains a CatBoost target (the ``catboost`` recipe: one-hot encoding, 300
iterations), the other half is the population, both written as parquet (``--format
csv`` for CSV), in a process of its own; then, in this process,

    tabmia audit --model-file target.joblib --train train.parquet \\
        --population population.parquet --label default --recipe catboost \\
        --attacks loss,lira,rmia,quantile --n-shadow 16

runs with the default ``--n-jobs`` (every core). Phases are marked by wrapping each
attack's ``fit`` and ``decision_function``; the memory of this process and of its joblib
worker processes (proportional set sizes added up: a page shared by k processes counts
1/k in each, so shared libraries and the records joblib memory-maps into its workers
count once) is sampled every 0.2 s and its maximum kept per phase.

Part 2 -- jobs. ``tabmia audit --dataset adult --model mlp --attacks lira --device cpu``
with ``--n-jobs 1`` and ``--n-jobs 2``: the shadow phase (LiRA's ``fit``: 16 MLP shadows
trained batched, one network per job), and the same command with ``--device cuda`` on a
machine without a GPU (its ``tabmia: note:`` line is recorded).

Part 3 -- profile (``--profile N``): the same audit of N records once more under cProfile;
the functions that took the most time (their own time, and with what they call) are
listed per phase of the audit, to find what grows faster than the records.

Run: ``python -m benchmarks.scaling_audit`` (``--sizes 10000 100000`` for fewer sizes,
``--skip-jobs`` / ``--skip-sizes`` for one part, ``--quick`` for a smoke run, ``--out DIR``
to write elsewhere). Timings need an otherwise idle machine; the load average is
recorded. A 10^7-record audit needs about 10 GB of disk for its inputs and hours on 2
cores: run it under ``timeout``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from benchmarks._common import load_note, set_results_dir, use_shared_data, write_results


# ----------------------------------------------------------------------- data
def credit_like(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` records shaped like the Taiwan credit-default data, label column ``default``."""
    rng = np.random.default_rng(seed)
    limit = np.round(np.exp(rng.normal(11.7, 0.9, n)), -3)
    age = np.clip(rng.normal(35, 9, n), 21, 79).astype(int)
    frame = pd.DataFrame({
        "LIMIT_BAL": limit,
        "SEX": rng.choice(["male", "female"], n, p=[0.4, 0.6]),
        "EDUCATION": rng.choice(["graduate school", "university", "high school", "other"], n,
                                p=[0.35, 0.47, 0.16, 0.02]),
        "MARRIAGE": rng.choice(["married", "single", "other"], n, p=[0.45, 0.53, 0.02]),
        "AGE": age,
    })
    status = rng.normal(0, 1, n)
    for k in range(6):  # repayment status: -2 .. 8 months late, correlated over months
        late = np.round(status + rng.normal(0, 0.6, n) - 0.3)
        frame[f"PAY_{k}"] = np.clip(late, -2, 8).astype(int)
    usage = np.clip(rng.beta(2, 3, n), 0, 1)
    for k in range(1, 7):
        frame[f"BILL_AMT{k}"] = np.round(limit * np.clip(usage + rng.normal(0, 0.05, n), 0, 1.2))
    for k in range(1, 7):
        frame[f"PAY_AMT{k}"] = np.round(np.exp(rng.normal(7.5, 1.3, n)))
    logit = (-1.6 + 0.9 * status - 0.35 * np.log(limit / 1e5) + 0.6 * (usage - 0.4)
             - 0.01 * (age - 35) + rng.logistic(0, 0.8, n) * 0.5)
    frame["default"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return frame


# --------------------------------------------------------------- measurement
class PhaseRecorder:
    """Time and peak memory (this process and its children) per named phase."""

    def __init__(self, interval: float = 0.2) -> None:
        self.phase = "start"
        self.phases: dict[str, dict[str, float]] = {}
        self._t0 = time.perf_counter()
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PhaseRecorder:
        self._open(self.phase)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._close()
        self._stop.set()
        self._thread.join()

    def enter(self, name: str) -> None:
        self._close()
        self.phase = name
        self._open(name)

    def _open(self, name: str) -> None:
        entry = self.phases.setdefault(name, {"seconds": 0.0, "peak_mb": 0.0, "main_mb": 0.0})
        entry["_start"] = time.perf_counter()
        self._note(entry)

    def _close(self) -> None:
        entry = self.phases[self.phase]
        entry["seconds"] += time.perf_counter() - entry.pop("_start")
        self._note(entry)

    @staticmethod
    def _note(entry: dict[str, float]) -> None:
        total, main = memory_mb(with_main=True)
        entry["peak_mb"] = max(entry["peak_mb"], total)
        entry["main_mb"] = max(entry["main_mb"], main)

    def _sample(self) -> None:
        while not self._stop.wait(self._interval):
            entry = self.phases.get(self.phase)
            if entry is not None:
                self._note(entry)

    def table(self) -> dict[str, dict[str, float]]:
        return {k: {"seconds": v["seconds"], "peak_mb": v["peak_mb"], "main_mb": v["main_mb"]}
                for k, v in self.phases.items()}


def _held(proc: Any) -> int:
    """Memory a process holds: its proportional set size (a page shared by k processes
    -- libraries, the memory-mapped records joblib hands its workers -- counts 1/k in
    each), its resident set where the system cannot tell."""
    try:
        return int(proc.memory_full_info().pss)
    except (AttributeError, OSError):
        return int(proc.memory_info().rss)


def memory_mb(with_main: bool = False) -> Any:
    """Memory held by this process plus its (joblib worker) children, in MB (PSS); with
    ``with_main``, also this process's own share, as ``(total, main)``."""
    try:
        import psutil
    except ImportError:  # this process only
        import resource

        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        return (own, own) if with_main else own
    me = psutil.Process()
    main = total = _held(me)
    for child in me.children(recursive=True):
        try:
            total += _held(child)
        except psutil.Error:  # a worker that just exited
            pass
    return (total / 2**20, main / 2**20) if with_main else total / 2**20


@contextlib.contextmanager
def attack_phases(recorder: PhaseRecorder, seen: dict[str, Any]):
    """Mark each attack's ``fit`` and ``decision_function`` as a phase (outermost call)."""
    from tabmia.attacks import LiRAAttack, LossAttack, QuantileAttack, RMIAAttack

    saved = []
    depth = {"n": 0}

    def wrap(cls: type, method: str, label: str) -> None:
        real = getattr(cls, method)
        saved.append((cls, method, cls.__dict__.get(method)))

        def wrapper(self, *args, **kwargs):
            outer = depth["n"] == 0
            depth["n"] += 1
            if outer:
                recorder.enter(label)
            try:
                return real(self, *args, **kwargs)
            finally:
                depth["n"] -= 1
                if outer:
                    pop = getattr(self, "population_", None)
                    if pop is not None and hasattr(pop, "n_jobs_"):
                        seen[cls.__name__] = {"jobs": pop.n_jobs_, "models": pop.n_trained_}
                    recorder.enter("audit: split, checks, target queries")

        setattr(cls, method, wrapper)

    for cls, name in ((LossAttack, "loss"), (LiRAAttack, "lira"), (RMIAAttack, "rmia"),
                      (QuantileAttack, "quantile")):
        wrap(cls, "fit", f"{name}: fit")
        wrap(cls, "decision_function", f"{name}: score")
    import tabmia.audit as audit

    # audit_model's phase runs from its first look at the records (shared_mask) to its
    # last step (check_attack_scores). Not a wrapper of audit_model itself: a wrapper's
    # call passes the records in a tuple that lives as long as the call, which kept the
    # records audit_model frees after the split in memory through every attack
    real_shared_mask, real_check_scores = audit.shared_mask, audit.check_attack_scores

    def shared_mask(X_train, y_train, X_population, y_population):
        recorder.enter("audit: split, checks, target queries")
        return real_shared_mask(X_train, y_train, X_population, y_population)

    def check_attack_scores(scores):
        try:
            return real_check_scores(scores)
        finally:
            recorder.enter("metrics, tables, report files")

    audit.shared_mask, audit.check_attack_scores = shared_mask, check_attack_scores
    try:
        yield
    finally:
        audit.shared_mask, audit.check_attack_scores = real_shared_mask, real_check_scores
        for cls, method, original in reversed(saved):
            if original is None:
                delattr(cls, method)
            else:
                setattr(cls, method, original)


def run_cli(argv: list[str], recorder: PhaseRecorder, seen: dict[str, Any]) -> tuple[int, str]:
    """``tabmia`` in this process with phases marked; (exit status, stderr)."""
    from tabmia.cli import main

    err = io.StringIO()
    with attack_phases(recorder, seen), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


# ----------------------------------------------------------------- part 1
def write_inputs(n: int, folder: Path, fmt: str) -> tuple[Path, Path]:
    """The records of :func:`credit_like`, half training (members) and half population."""
    data = credit_like(n, seed=0)
    paths = []
    for name, part in (("train", data.iloc[: n // 2]), ("population", data.iloc[n // 2:])):
        path = folder / f"{name}.{fmt}"
        if fmt == "parquet":
            part.to_parquet(path, index=False)
        else:
            part.to_csv(path, index=False)
        paths.append(path)
    return paths[0], paths[1]


def audit_argv(folder: Path, train: Path, population: Path, attacks: str, n_shadow: int
               ) -> list[str]:
    return ["audit", "--model-file", str(folder / "target.joblib"), "--train", str(train),
            "--population", str(population), "--label", "default", "--recipe", "catboost",
            "--attacks", attacks, "--n-shadow", str(n_shadow), "--quiet",
            "--out", str(folder / "out")]


def make_inputs(n: int, folder: Path, fmt: str) -> tuple[Path, Path, dict[str, float]]:
    """The input files and ``target.joblib`` of an audit of ``n`` records; seconds per step."""
    import joblib

    from tabmia.recipes import make_model

    t0 = time.perf_counter()
    train, population = write_inputs(n, folder, fmt)
    t1 = time.perf_counter()
    members = pd.read_parquet(train) if fmt == "parquet" else pd.read_csv(train)
    X_train = members.drop(columns="default")
    joblib.dump(make_model("catboost", X_train).fit(X_train, members["default"]),
                folder / "target.joblib")
    return train, population, {"setup: make data, write inputs": t1 - t0,
                               "setup: train the target (catboost recipe)":
                                   time.perf_counter() - t1}


def size_case(n: int, n_shadow: int, folder: Path, log: Callable[[str], None], *,
              fmt: str = "parquet", attacks: str = "loss,lira,rmia,quantile") -> dict[str, Any]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # the data and the target are made in a process of their own, which has exited
    # before the audit starts: the audit's memory is then its own (made here, the
    # setup's 6.7 GB at 10^7 records stayed in this process throughout the audit)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        train, population, setup = pool.submit(make_inputs, n, folder, fmt).result()
    load_before = os.getloadavg()
    with PhaseRecorder() as rec:
        rec.enter("read and check inputs")  # until audit_model starts
        seen: dict[str, Any] = {}
        code, err = run_cli(audit_argv(folder, train, population, attacks, n_shadow), rec, seen)
    if code != 0:
        raise SystemExit(f"tabmia audit failed on {n} records:\n{err}")
    phases = {name: {"seconds": seconds, "peak_mb": None}  # another process's memory
              for name, seconds in setup.items()}
    phases.update(rec.table())
    phases.pop("start", None)
    total = sum(p["seconds"] for k, p in phases.items() if not k.startswith("setup:"))
    peak = max(p["peak_mb"] for k, p in phases.items() if not k.startswith("setup:"))
    log(f"  {n:,} records: {total:.0f} s, peak {peak:.0f} MB")
    return {"records": n, "members": n // 2, "population": n - n // 2, "n_shadow": n_shadow,
            "format": fmt, "attacks": attacks,
            "phases": phases, "total_s": total,
            "peak_mb": max(p["peak_mb"] for k, p in phases.items() if not k.startswith("setup:")),
            "shadow_jobs": seen,
            "load_before": load_before, "load_after": os.getloadavg(),
            "notes": [line for line in err.splitlines() if line.startswith("tabmia:")]}


def profile_case(n: int, n_shadow: int, folder: Path, log: Callable[[str], None], *,
                 fmt: str, attacks: str, top: int = 12) -> dict[str, Any]:
    """One more audit of ``n`` records under cProfile: the costliest functions per phase."""
    import cProfile
    import pstats

    import joblib

    from tabmia.recipes import make_model

    train, population = write_inputs(n, folder, fmt)
    members = pd.read_parquet(train) if fmt == "parquet" else pd.read_csv(train)
    X_train = members.drop(columns="default")
    joblib.dump(make_model("catboost", X_train).fit(X_train, members["default"]),
                folder / "target.joblib")
    del members, X_train
    load_before = os.getloadavg()
    profiler = cProfile.Profile()
    seen: dict[str, Any] = {}
    with PhaseRecorder() as rec:
        rec.enter("read and check inputs")
        profiler.enable()
        try:
            code, err = run_cli(audit_argv(folder, train, population, attacks, n_shadow),
                                rec, seen)
        finally:
            profiler.disable()
    if code != 0:
        raise SystemExit(f"tabmia audit failed on {n} records under the profiler:\n{err}")
    stats = pstats.Stats(profiler)
    rows = []
    for (file, line, func), (_cc, calls, own, cum, _callers) in stats.stats.items():
        if "/tabmia/" not in file and own < 0.5:  # tabmia's own, and any heavy library call
            continue
        where = file.split("/tabmia/")[-1] if "/tabmia/" in file else Path(file).name
        rows.append({"function": f"{where}:{line}({func})", "calls": calls,
                     "own_s": own, "cumulative_s": cum, "file": file})
    by_own = sorted(rows, key=lambda r: -r["own_s"])[:top]
    by_cum = sorted((r for r in rows if "/tabmia/" in r["file"]),
                    key=lambda r: -r["cumulative_s"])[:2 * top]
    log(f"  profiled {n:,} records")
    for r in rows:
        r.pop("file")
    return {"records": n, "phases": rec.table(), "by_own_time": by_own,
            "by_cumulative_time": by_cum, "load_before": load_before,
            "load_after": os.getloadavg()}


def growth(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase of ``tabmia audit`` (not the setup), time ratio between consecutive sizes
    against the ratio of records."""
    out = []
    for a, b in zip(rows, rows[1:]):
        scale = b["records"] / a["records"]
        for phase, pb in b["phases"].items():
            pa = a["phases"].get(phase)
            if phase.startswith("setup:") or pa is None or pa["seconds"] < 0.05:
                continue
            ratio = pb["seconds"] / pa["seconds"]
            out.append({"from": a["records"], "to": b["records"], "phase": phase,
                        "records_ratio": scale, "time_ratio": ratio,
                        "no_worse_than_linear": ratio <= scale * 1.1})
    return out


# ----------------------------------------------------------------- part 2
def _start_workers() -> float:
    """Start the joblib worker processes and import torch in them; seconds it took.

    Paid once per process (a ``tabmia audit`` run pays it once), so it is kept out of
    the shadow phases compared here and reported on its own.
    """
    from tabmia.shadow import ShadowPopulation, TorchMLPClassifier

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 2
    t0 = time.perf_counter()
    ShadowPopulation(TorchMLPClassifier(hidden_layer_sizes=(4,), epochs=1, device="cpu"),
                     n_models=2, random_state=0, n_jobs=2, keep_models=False).fit(X, y)
    return time.perf_counter() - t0


def jobs_case(max_records: int | None, folder: Path, log: Callable[[str], None]
              ) -> tuple[float, list[dict[str, Any]]]:
    startup = _start_workers()
    log(f"  worker start-up (2 workers, torch imported): {startup:.1f} s")
    rows = []
    base = ["audit", "--dataset", "adult", "--model", "mlp", "--attacks", "lira", "--quiet"]
    if max_records is not None:
        base += ["--max-records", str(max_records)]
    for device, n_jobs in (("cpu", "1"), ("cpu", "2"), ("cuda", None)):
        argv = base + ["--device", device, "--out", str(folder / f"adult-{device}-{n_jobs}")]
        if n_jobs is not None:
            argv += ["--n-jobs", n_jobs]
        load_before = os.getloadavg()
        seen: dict[str, Any] = {}
        with PhaseRecorder() as rec:
            code, err = run_cli(argv, rec, seen)
        if code != 0:
            raise SystemExit(f"tabmia {' '.join(argv)} failed:\n{err}")
        phases = rec.table()
        shown = [a for a in argv if not a.startswith(str(folder)) and a != "--out"]
        row = {"command": "tabmia " + " ".join(shown),
               "device": device, "n_jobs": n_jobs or "default",
               "shadow_phase_s": phases["lira: fit"]["seconds"],
               "shadow_jobs": seen.get("LiRAAttack", {}).get("jobs"),
               "peak_mb": max(p["peak_mb"] for p in phases.values()), "phases": phases,
               "notes": [line for line in err.splitlines() if line.startswith("tabmia:")],
               "load_before": load_before, "load_after": os.getloadavg()}
        log(f"  adult mlp lira --device {device} --n-jobs {row['n_jobs']}: shadow phase "
            f"{row['shadow_phase_s']:.1f} s on {row['shadow_jobs']} job(s)")
        rows.append(row)
    rows[1]["speedup_vs_1_job"] = rows[0]["shadow_phase_s"] / rows[1]["shadow_phase_s"]
    return startup, rows


# ----------------------------------------------------------------- part 4
def _scores_table(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "scores.csv.gz")


def cluster_case(n: int, n_shadow: int, folder: Path, log: Callable[[str], None]
                 ) -> list[dict[str, Any]]:
    """The LiRA part of the audit of ``n`` records here and on a ``LocalCluster`` of 1 and
    2 single-threaded worker processes (``--cluster tcp://...``): time per phase, and the
    scores compared with the local run's."""
    import joblib
    from distributed import LocalCluster

    from tabmia.recipes import make_model

    train, population = write_inputs(n, folder, "parquet")
    members = pd.read_parquet(train)
    X_train = members.drop(columns="default")
    joblib.dump(make_model("catboost", X_train).fit(X_train, members["default"]),
                folder / "target.joblib")
    del members, X_train
    rows: list[dict[str, Any]] = []
    local: pd.DataFrame | None = None
    for workers in (None, 1, 2):
        where = "here" if workers is None else f"cluster-{workers}"
        argv = audit_argv(folder, train, population, "lira", n_shadow)
        argv[argv.index("--out") + 1] = str(folder / where)
        argv += ["--n-jobs", "2"]
        load_before = os.getloadavg()
        seen: dict[str, Any] = {}
        with contextlib.ExitStack() as stack:
            if workers is not None:
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address=None))
                argv += ["--cluster", cluster.scheduler_address]
            with PhaseRecorder() as rec:
                code, err = run_cli(argv, rec, seen)
        if code != 0:
            raise SystemExit(f"tabmia audit on {where} failed:\n{err}")
        scores = _scores_table(folder / where)
        if local is None:
            local = scores
        phases = rec.table()
        row = {"where": "this machine, joblib processes" if workers is None
               else f"LocalCluster, {workers} worker{'s' if workers > 1 else ''}",
               "workers": workers, "records": n, "n_shadow": n_shadow,
               "shadow_fit_s": phases["lira: fit"]["seconds"],
               "candidate_scoring_s": phases["lira: score"]["seconds"],
               "total_s": sum(v["seconds"] for v in phases.values()),
               "identical_scores": bool(scores.equals(local)),
               "load_before": load_before, "load_after": os.getloadavg()}
        log(f"  {row['where']}: shadows {row['shadow_fit_s']:.1f} s, scoring "
            f"{row['candidate_scoring_s']:.1f} s, identical {row['identical_scores']}")
        rows.append(row)
    return rows


# ----------------------------------------------------------------- report
def _markdown(p: dict[str, Any]) -> str:
    lines = [
        "## tabmia audit on a credit-shaped data set: time and peak memory per phase",
        "",
        "Synthetic Taiwan-credit-shaped records (23 columns, 3 categorical, ~22% defaults); "
        "half train the CatBoost target (`catboost` recipe), half are the population, "
        f"written as {p.get('format', 'csv')}. "
        f"`tabmia audit --model-file ... --recipe catboost --attacks {p.get('attacks', 'loss,lira,rmia')} "
        f"--n-shadow {p['n_shadow']}` with the default `--n-jobs`, in one process. Peak "
        "memory: proportional set size of this process plus its joblib workers, summed "
        "(pages shared between them counted once); in brackets, where recorded, this "
        "process's own share (the rest is the workers'). The setup phases make the data and the "
        "target in a process of their own, which has exited before the audit starts (older "
        "rows, measured before that change, say so in their findings); they are not part "
        "of `tabmia audit` and left out of its total, peak and growth.",
        "",
    ]
    sizes = p.get("sizes", [])
    if sizes:
        phases = list(dict.fromkeys(k for r in sizes for k in r["phases"]))
        lines += ["| phase | " + " | ".join(f"{r['records']:,} records: s / peak MB"
                                            for r in sizes) + " |",
                  "|---|" + "---:|" * len(sizes)]
        for phase in phases:
            cells = []
            for r in sizes:
                v = r["phases"].get(phase)
                # "(this process N)": its own share, where the run recorded it
                own = f" (this process {v['main_mb']:,.0f})" if v and v.get("main_mb") else ""
                cells.append("-" if v is None else f"{v['seconds']:.1f} / " + (
                    "-" if v["peak_mb"] is None else f"{v['peak_mb']:,.0f}{own}"))
            lines.append(f"| {phase} | " + " | ".join(cells) + " |")
        lines.append("| **total of tabmia audit** (setup excluded) | " + " | ".join(
            f"**{r['total_s']:.0f} / {r['peak_mb']:,.0f}**" for r in sizes) + " |")
        lines += ["", "Shadow jobs used: " + "; ".join(
            f"{r['records']:,}: " + ", ".join(f"{k} {v['models']} models on {v['jobs']} jobs"
                                              for k, v in r["shadow_jobs"].items())
            for r in sizes) + "."]
        slow = [g for g in p["growth"] if not g["no_worse_than_linear"]]
        lines += ["", "Growth (time ratio per phase between consecutive sizes, against the "
                  "records ratio; 10% slack for noise): "
                  + ("every phase no worse than linear." if not slow else
                     "worse than linear: " + "; ".join(
                         f"{g['phase']} {g['from']:,} -> {g['to']:,}: x{g['time_ratio']:.1f} "
                         f"for x{g['records_ratio']:.0f} records" for g in slow) + ".")]
        largest = sizes[-1]
        lines += ["", f"Peak memory at {largest['records']:,} records: "
                  f"{largest['peak_mb']:,.0f} MB ("
                  + ("under" if largest["peak_mb"] < 8192 else "over") + " 8 GB)."]
        lines += ["", "Load average before / after each size: " + "; ".join(
            f"{r['records']:,}: {r['load_before'][0]:.1f} / {r['load_after'][0]:.1f}"
            for r in sizes) + f" on {p['cores']} cores."]
    jobs = p.get("jobs", [])
    if jobs:
        lines += ["", "## The shadow phase on 1 vs 2 jobs (Adult, mlp recipe, LiRA 16 shadows)",
                  "", "The shadow phase is LiRA's `fit`: 16 MLP shadows (the `mlp` recipe: "
                  "one-hot encoding, 2x256 ReLU, 100 epochs) trained batched, one network per "
                  "job, one torch thread per job. The joblib workers were started (torch "
                  f"imported in them) before these runs, in {p['worker_startup_s']:.1f} s: "
                  "a `tabmia audit` run pays that once.",
                  "", "| command | shadow phase s (LiRA fit) | shadow jobs | speed-up | peak MB "
                  "| notes | load before / after |", "|---|---:|---:|---:|---:|---|---|"]
        for r in jobs:
            speed = f"{r['speedup_vs_1_job']:.2f}x" if "speedup_vs_1_job" in r else "-"
            notes = "<br>".join(r["notes"]) or "-"
            lines.append(f"| `{r['command']}` | {r['shadow_phase_s']:.1f} | {r['shadow_jobs']} "
                         f"| {speed} | {r['peak_mb']:,.0f} | {notes} | "
                         f"{r['load_before'][0]:.1f} / {r['load_after'][0]:.1f} |")
    prof = p.get("profile")
    if prof:
        lines += ["", f"## Where the time goes: cProfile of the audit at {prof['records']:,} "
                  "records", "",
                  "The same audit once more under cProfile (which slows Python-level code, "
                  "so these seconds run above the table's). It sees this process only: the "
                  "models' training and scoring in joblib's workers show up as waiting "
                  "(`time.sleep`, lock waits). Load average before / after: "
                  f"{prof['load_before'][0]:.1f} / {prof['load_after'][0]:.1f}.", "",
                  "| function (own time: not counting what it calls) | calls | own s | "
                  "with callees s |", "|---|---:|---:|---:|"]
        lines += [f"| `{r['function']}` | {r['calls']:,} | {r['own_s']:.1f} | "
                  f"{r['cumulative_s']:.1f} |" for r in prof["by_own_time"]]
        lines += ["", "| tabmia function (with what it calls) | calls | with callees s |",
                  "|---|---:|---:|"]
        lines += [f"| `{r['function']}` | {r['calls']:,} | {r['cumulative_s']:.1f} |"
                  for r in prof["by_cumulative_time"]]
    cluster = p.get("cluster")
    if cluster:
        c0 = cluster[0]
        lines += ["", f"## The LiRA part of a {c0['records']:,}-record audit on a dask cluster",
                  "", f"`tabmia audit ... --attacks lira --n-shadow {c0['n_shadow']} --n-jobs 2` "
                  "(catboost recipe, the records above) here with joblib's processes, then "
                  "with `--cluster tcp://...` on a `dask.distributed.LocalCluster` of 1 and 2 "
                  "single-threaded worker processes started for the run (start-up not timed). "
                  "With one worker the two jobs run in turn. Scores compared with the local "
                  "run's `scores.csv.gz`, value for value.", "",
                  "| where | shadows trained (LiRA fit) s | candidates scored (LiRA score) s "
                  "| whole audit s | scores identical to the local run | load before / after |",
                  "|---|---:|---:|---:|---|---|"]
        lines += [f"| {r['where']} | {r['shadow_fit_s']:.1f} | {r['candidate_scoring_s']:.1f} | "
                  f"{r['total_s']:.0f} | {'yes' if r['identical_scores'] else 'NO'} | "
                  f"{r['load_before'][0]:.1f} / {r['load_after'][0]:.1f} |" for r in cluster]
    kept = [f"{r['records']:,}" for r in sizes if r.get("kept_from_earlier_run")]
    if kept:
        lines += ["", "Sizes kept from an earlier run of this script (`--merge-sizes`): "
                  + ", ".join(kept) + " records (each with its own load averages)."]
    if p.get("kept_from_earlier_run"):
        lines += ["", "Parts kept from an earlier run of this script (`--skip-...`): "
                  + ", ".join(p["kept_from_earlier_run"]) + "."]
    return "\n".join(lines)


def _keep_skipped_part(payload: dict[str, Any]) -> None:
    """A part skipped by this run keeps its rows from the results file already there
    (each row carries its own load averages), so the two parts can run separately."""
    import json

    from benchmarks._common import results_dir

    path = results_dir() / "scaling_audit.json"
    if not path.exists():
        return
    before = json.loads(path.read_text())
    for keys in (("sizes", "growth", "n_shadow", "format", "attacks"), ("jobs", "worker_startup_s"),
                 ("profile",), ("cluster",)):
        if keys[0] not in payload and keys[0] in before:
            payload.update({k: before[k] for k in keys if k in before})
            payload.setdefault("kept_from_earlier_run", []).append(keys[0])


def _merged_sizes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` and the sizes of the results file already written that they do not
    measure again, smallest first."""
    import json

    from benchmarks._common import results_dir

    path = results_dir() / "scaling_audit.json"
    earlier = json.loads(path.read_text()).get("sizes", []) if path.exists() else []
    done = {r["records"] for r in rows}
    kept = [dict(r, kept_from_earlier_run=True) for r in earlier if r["records"] not in done]
    return sorted(kept + rows, key=lambda r: r["records"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--n-shadow", type=int, default=16)
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    parser.add_argument("--attacks", default="loss,lira,rmia,quantile")
    parser.add_argument("--profile", type=int, default=None, metavar="N",
                        help="also profile one audit of N records (cProfile)")
    parser.add_argument("--cluster", type=int, default=None, metavar="N",
                        help="also run the LiRA part of an audit of N records on a dask "
                             "LocalCluster of 1 and 2 workers")
    parser.add_argument("--skip-sizes", action="store_true")
    parser.add_argument("--merge-sizes", action="store_true",
                        help="keep the sizes of the results file already there that this run "
                             "does not measure (one long size run on its own, then merged)")
    parser.add_argument("--skip-jobs", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2,000 and 10,000 records, 4 shadows, Adult cut to 2,000")
    parser.add_argument("--out", default=None, help="write the results into this folder")
    args = parser.parse_args(argv)
    if args.out:
        set_results_dir(args.out)
    use_shared_data()
    if args.quick:
        args.sizes, args.n_shadow = [2_000, 10_000], 4
    load_start = os.getloadavg()
    payload: dict[str, Any] = {"quick": args.quick, "n_shadow": args.n_shadow,
                               "cores": os.cpu_count(), "format": args.format,
                               "attacks": args.attacks}
    with tempfile.TemporaryDirectory(prefix="tabmia-scaling-") as tmp:
        if not args.skip_sizes:
            payload["sizes"] = []
            for n in args.sizes:
                print(f"size {n:,} ...", flush=True)
                folder = Path(tmp) / str(n)
                folder.mkdir()
                payload["sizes"].append(size_case(n, args.n_shadow, folder, print,
                                                  fmt=args.format, attacks=args.attacks))
            if args.merge_sizes:
                payload["sizes"] = _merged_sizes(payload["sizes"])
            payload["growth"] = growth(payload["sizes"])
        if args.profile:
            print(f"profile {args.profile:,} ...", flush=True)
            folder = Path(tmp) / f"profile-{args.profile}"
            folder.mkdir()
            payload["profile"] = profile_case(args.profile, args.n_shadow, folder, print,
                                              fmt=args.format, attacks=args.attacks)
        if args.cluster:
            print(f"cluster {args.cluster:,} ...", flush=True)
            folder = Path(tmp) / f"cluster-{args.cluster}"
            folder.mkdir()
            payload["cluster"] = cluster_case(args.cluster, 8, folder, print)
        if not args.skip_jobs:
            print("Adult, mlp, lira: --n-jobs 1 vs 2 ...", flush=True)
            payload["worker_startup_s"], payload["jobs"] = jobs_case(
                2_000 if args.quick else None, Path(tmp), print)
    payload["load"] = {"start": load_start, "end": os.getloadavg()}
    _keep_skipped_part(payload)
    md = _markdown(payload) + load_note(payload["load"])
    json_path, md_path = write_results("scaling_audit", payload, md)
    print(f"wrote {json_path} and {md_path}")


if __name__ == "__main__":
    main()
