"""Run the quantile paper's public tabular scripts on our data (their data loading adapted).

Bertran et al. (NeurIPS 2023) published ``tabular_QMIA/training_ACS.py`` (the target:
CatBoost tuned by 100 Optuna trials) and ``tabular_QMIA/qmia_ACS.py`` (the Gaussian
quantile regressor: 200 Optuna trials) in amazon-science/quantile-mia. This machine
cannot reach GitHub, so the benchmark takes a local checkout (``--paper-code DIR``, kept
in the ignored ``.paper_code/`` folder; never copied into the package).

The scripts are run unmodified with :func:`runpy.run_path`. Only their data loading is
replaced: they import ``folktables`` and call ``ACSDataSource(...).get_data(...)`` and
``<task>.df_to_numpy(...)``; a stand-in ``folktables`` module answers those calls with
the OpenML task's ``(X, y)``. Everything else (the 50 / 40 / 10 split with
``random_state=42``, the search spaces, trial counts, the score, the CSV hand-over from
one script to the other) is theirs. The split and the target are read back from the
scripts' globals so tabmia attacks the very same target on the very same records.

Their code seeds neither Optuna sampler nor the numpy generator behind the target
search's inner splits; :func:`run_paper_scripts` seeds numpy's global generator with the
seed, the samplers stay unseeded (as written), so a rerun does not repeat the numbers.

Threads: the scripts hard-code 4 CatBoost threads for the target and 30 parallel Optuna
trials for the regressor, written for a large machine. On a small shared one that
oversubscription stalls CatBoost's thread barriers (on 2 cores, wine's 100-trial target
search took 21 s at load 1; at load 10-13 it took over 13 minutes with its 4 threads and
198 s with 1), so ``threads`` may cap both; CatBoost's result does not
depend on its thread count, and with one Optuna worker the trials run in sequence
instead of 30 at a time (TPE then sees every earlier trial).
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import time
import types
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["PAPER_SCRIPTS", "check_paper_code", "paper_target", "run_paper_scripts"]

PAPER_SCRIPTS = ("tabular_QMIA/training_ACS.py", "tabular_QMIA/qmia_ACS.py")
_TASK_CLASSES = ("ACSEmployment", "ACSIncome", "ACSMobility", "ACSPublicCoverage",
                 "ACSTravelTime")


def check_paper_code(root: str | Path) -> Path:
    """The checkout's folder, or a clear error naming what is missing."""
    root = Path(root).expanduser().resolve()
    missing = [s for s in PAPER_SCRIPTS if not (root / s).is_file()]
    if missing:
        raise FileNotFoundError(
            f"--paper-code {root}: not a checkout of amazon-science/quantile-mia (missing "
            f"{', '.join(missing)}); clone https://github.com/amazon-science/quantile-mia "
            "into .paper_code/quantile-mia (ignored by git) and pass that folder")
    return root


def _stand_in_folktables(X: np.ndarray, y: np.ndarray) -> types.ModuleType:
    """A ``folktables`` whose data source and tasks hand out ``(X, y)``."""
    mod = types.ModuleType("folktables")

    class ACSDataSource:  # the scripts' only data-source calls
        def __init__(self, **kwargs: Any) -> None:
            pass

        def get_data(self, **kwargs: Any) -> None:
            return None

    class _Task:
        @staticmethod
        def df_to_numpy(_frame: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            return X.copy(), y.copy(), np.zeros(y.shape[0])

    mod.ACSDataSource = ACSDataSource
    for name in _TASK_CLASSES:
        setattr(mod, name, _Task)
    return mod


@contextlib.contextmanager
def _thread_cap(threads: int | None, trial_scale: float | None) -> Iterator[None]:
    """CatBoost threads and Optuna workers capped at ``threads`` and trial counts scaled
    by ``trial_scale`` (None: as written); progress to stderr every 25 trials."""
    import catboost
    import optuna

    if threads is None:
        threads = 10**6

    originals = {n: getattr(catboost, n) for n in ("CatBoostClassifier", "CatBoostRegressor")}
    capped = {}
    for n, cls in originals.items():
        def __init__(self: Any, *args: Any, _cls: Any = cls, **kw: Any) -> None:
            if "thread_count" in kw:
                kw["thread_count"] = min(int(kw["thread_count"]), threads)
            _cls.__init__(self, *args, **kw)
        capped[n] = type(n, (cls,), {"__init__": __init__})
    optimize = optuna.study.Study.optimize

    def capped_optimize(self: Any, *args: Any, **kw: Any) -> Any:
        if kw.get("n_jobs", 1) not in (None, 1):
            kw["n_jobs"] = min(int(kw["n_jobs"]), threads)
        if trial_scale is not None and kw.get("n_trials"):
            kw["n_trials"] = max(1, round(kw["n_trials"] * trial_scale))
        t0, total = time.perf_counter(), kw.get("n_trials")

        def progress(study: Any, trial: Any) -> None:
            if (trial.number + 1) % 25 == 0:
                print(f"      paper script: trial {trial.number + 1} / {total}, "
                      f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

        kw["callbacks"] = [*(kw.get("callbacks") or []), progress]
        return optimize(self, *args, **kw)

    for n, cls in capped.items():
        setattr(catboost, n, cls)
    optuna.study.Study.optimize = capped_optimize
    try:
        yield
    finally:
        for n, cls in originals.items():
            setattr(catboost, n, cls)
        optuna.study.Study.optimize = optimize


@contextlib.contextmanager
def _script_context(folder: Path, X: np.ndarray, y: np.ndarray,
                    threads: int | None, trial_scale: float | None) -> Iterator[None]:
    old_cwd, old_argv = os.getcwd(), sys.argv
    old_mod = sys.modules.get("folktables")
    sys.modules["folktables"] = _stand_in_folktables(X, y)
    os.chdir(folder)  # the scripts hand a CSV to each other in the working folder
    try:
        with _thread_cap(threads, trial_scale):
            yield
    finally:
        os.chdir(old_cwd)
        sys.argv = old_argv
        if old_mod is None:
            sys.modules.pop("folktables", None)
        else:
            sys.modules["folktables"] = old_mod


def run_paper_scripts(root: Path, X: np.ndarray, y: np.ndarray, seed: int,
                      workdir: Path, threads: int | None = None,
                      trial_scale: float | None = None) -> dict[str, Any]:
    """Both scripts on ``(X, y)`` for ``--seed seed``; their split, target and output.

    ``threads`` caps their CatBoost threads and Optuna workers, ``trial_scale`` scales
    their trial counts (100 and 200) for a stated reduced budget (None: as written).

    Returns
    -------
    dict
        ``split`` (the scripts' private / public / held-out arrays), ``target_params``
        (the search's best trial), ``target_scores`` (their P(class 1) on the
        candidates), ``qmia`` (score, mu, log_sigma, membership: their output CSV),
        ``regressor_params`` and ``seconds`` per script.
    """
    import pandas as pd

    workdir.mkdir(parents=True, exist_ok=True)
    argv = ["--seed", str(seed), "--state", "OPENML", "--task", "income"]
    out: dict[str, Any] = {"seconds": {}}
    with _script_context(workdir, X, y, threads, trial_scale):
        np.random.seed(seed)  # their target search draws inner splits from it
        t0 = time.perf_counter()
        sys.argv = [PAPER_SCRIPTS[0], *argv]
        g = runpy.run_path(str(root / PAPER_SCRIPTS[0]), run_name="__main__")
        out["seconds"]["training_ACS"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        sys.argv = [PAPER_SCRIPTS[1], *argv]
        q = runpy.run_path(str(root / PAPER_SCRIPTS[1]), run_name="__main__")
        out["seconds"]["qmia_ACS"] = time.perf_counter() - t0
        frame = pd.read_csv(workdir / f"ACS_OPENML_income_qmia_{seed}.csv")
    out["split"] = {k: g[k] for k in ("X_train", "y_train", "X_val", "y_val",
                                      "X_test_us", "y_test_us")}
    out["target_params"] = dict(g["study"].best_trial.params)
    out["target_trials"] = len(g["study"].trials)
    out["target_scores"] = np.asarray(g["y_score_test"], dtype=np.float64)
    out["regressor_params"] = dict(q["study"].best_trial.params)
    out["regressor_trials"] = len(q["study"].trials)
    out["qmia"] = {"score": frame["score"].to_numpy(float), "mu": frame["mu"].to_numpy(float),
                   "log_sigma": frame["log_sigma"].to_numpy(float),
                   "member": frame["membership"].to_numpy() == "in"}
    return out


def paper_target(params: dict[str, Any], X_train: np.ndarray, y_train: np.ndarray,
                 threads: int | None = None) -> Any:
    """The target ``training_ACS.py``'s ``detailed_objective`` trains, as a model object.

    Same parameters, threads and seed as the script, so the model is the script's; the
    caller checks its probabilities against the script's output.
    """
    from catboost import CatBoostClassifier

    n = 4 if threads is None else min(4, threads)
    clf = CatBoostClassifier(**params, thread_count=n, random_seed=42, verbose=0)
    return clf.fit(X_train, y_train)
