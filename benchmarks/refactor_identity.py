"""Bit-identity of attack outputs across a refactoring (issue 18: "this changes no result").

Fits every attack class (LossAttack, ScoreAttack with each statistic, CalibratedAttack,
LiRAAttack offline and online, RMIAAttack, QuantileAttack, MerlinAttack, MorganAttack)
with small settings against three targets:

- ``breast_cancer``: a random forest on the embedded breast-cancer data (numpy records);
- ``adult``: a gradient-boosting pipeline (one-hot categories) on 2,000 Adult records
  (a DataFrame with categorical columns; needs the data home, ``../shared/data``);
- ``breast_cancer_mlp``: tabmia's torch MLP (logit outputs, gradient norms; needs torch).

For each attack it records a sha256 of ``decision_function`` on the candidates (float64
bytes), ``threshold_``, ``fpr_`` and ``n_calibration_``; then the game runners
(``MembershipExperiment``, ``audit_model``, ``run_benchmark``) and the command line
(``tabmia audit`` on the built-in game and on a model file with ``--recipe``, ``tabmia
benchmark --quick``): the sha256 of their score columns and their metric numbers without
timings. Run it once on the tree before the change and once after, then compare::

    PYTHONPATH=<old tree> python benchmarks/refactor_identity.py --out before.json
    PYTHONPATH=<new tree> python benchmarks/refactor_identity.py --out after.json
    python benchmarks/refactor_identity.py --compare before.json after.json

``--n-jobs 2`` runs the attacks with reference models and the commands on two jobs (the
parallel training and scoring paths); compare it with a ``--n-jobs 1`` file to show that
the jobs change nothing. The comparison writes ``benchmarks/results/refactor_identity.{json,md}`` and exits 1 when
anything differs. Only public API present on both sides is used.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
# appended: the tree on PYTHONPATH (the one measured) comes first
sys.path.append(str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._common import machine_info, use_shared_data, write_results  # noqa: E402

SEED = 0
#: Jobs of the attacks with reference models and of the commands (``--n-jobs``): 1 by
#: default; 2 puts the models' training and scoring on the parallel paths. (The quantile
#: attack's ``n_jobs`` is CatBoost's thread count, on which its models depend: kept at 1.)
N_JOBS = 1
# keys of the CLI's results.json (at any depth) that hold times, dates or machine facts
_VOLATILE = ("seconds", "date", "machine", "load_average", "command", "wall", "versions",
             "elapsed", "tabmia_version", "out", "cache_dir", "files")


def _digest(values: Any) -> str:
    arr = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
    return hashlib.sha256(arr.tobytes()).hexdigest()


def _number(value: Any) -> Any:
    return None if value is None else repr(float(value))


# ------------------------------------------------------------------------ targets
def _games() -> dict[str, Callable[[], dict[str, Any]]]:
    return {"breast_cancer": _breast_cancer, "adult": _adult, "breast_cancer_mlp": _mlp}


def _split(n: int, n_train: int, n_public: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    perm = np.random.RandomState(SEED).permutation(n)
    return perm[:n_train], perm[n_train:n_train + n_public], perm[n_train + n_public:]


def _game(X: Any, y: np.ndarray, target: Any, n_train: int, n_public: int) -> dict[str, Any]:
    from tabmia.target import concat_rows, take_rows

    train, public, rest = _split(len(y), n_train, n_public)
    target.fit(take_rows(X, train), y[train])
    members = train[: rest.size]
    cand = np.r_[members, rest]
    return {"target": target, "X": X, "y": y, "X_pub": take_rows(X, public), "y_pub": y[public],
            "X_cand": concat_rows([take_rows(X, members), take_rows(X, rest)]),
            "y_cand": y[cand], "n_train": int(train.size)}


def _breast_cancer() -> dict[str, Any]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_breast_cancer(return_X_y=True)
    return _game(X, y, RandomForestClassifier(n_estimators=50, random_state=SEED), 250, 200)


def _adult() -> dict[str, Any]:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline

    from tabmia.datasets import load_dataset
    from tabmia.recipes import tabular_preprocessor
    from tabmia.target import take_rows

    bunch = load_dataset("adult")
    idx = np.sort(np.random.RandomState(SEED).choice(len(bunch.target), 2000, replace=False))
    X, y = take_rows(bunch.data, idx).reset_index(drop=True), np.asarray(bunch.target)[idx]
    model = Pipeline([("prepare", tabular_preprocessor()),
                      ("model", HistGradientBoostingClassifier(max_iter=50, random_state=SEED))])
    return _game(X, y, model, 800, 700)


def _mlp() -> dict[str, Any]:
    import torch
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from tabmia.shadow import TorchMLPClassifier

    torch.set_num_threads(1)
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    model = TorchMLPClassifier(hidden_layer_sizes=(32,), epochs=30, batch_size=32, lr=0.01,
                               device="cpu", random_state=SEED)
    return _game(X, y, model, 250, 200)


# ------------------------------------------------------------------------ attacks
def _attacks(game: str) -> dict[str, Any]:
    from tabmia.attacks import (
        CalibratedAttack, LiRAAttack, LossAttack, MerlinAttack, MorganAttack, QuantileAttack,
        RMIAAttack, ScoreAttack,
    )
    from tabmia.scores import SCORE_NAMES

    common = {"fpr": 0.05, "random_state": SEED}
    quick_quantile = {"n_trials": 0, "cv": 2, "params": {"iterations": 40, "depth": 3}}
    out: dict[str, Any] = {
        "loss": LossAttack(**common),
        "loss_class": LossAttack(class_based=True, **common),
        "loss_max_advantage": LossAttack(threshold_goal="max_advantage", random_state=SEED),
        **{f"score_{s}": ScoreAttack(statistic=s, **common) for s in SCORE_NAMES},
        "calibrated_loss": CalibratedAttack(n_reference=2, n_jobs=N_JOBS, **common),
        "calibrated_confidence": CalibratedAttack(statistic="confidence", n_reference=2,
                                                  n_jobs=N_JOBS, **common),
        "lira_offline": LiRAAttack(n_shadow=4, n_jobs=N_JOBS, **common),
        "lira_offline_hinge_sized": LiRAAttack(n_shadow=8, statistic="hinge",
                                               shadow_train_size=150, n_jobs=N_JOBS,
                                               **common),
        "lira_offline_holdout": LiRAAttack(n_shadow=4, calibration_share=0.25, n_jobs=N_JOBS,
                                           **common),
        "lira_online": LiRAAttack(n_shadow=4, online=True, n_jobs=N_JOBS, **common),
        "rmia": RMIAAttack(n_reference=2, n_jobs=N_JOBS, **common),
        # n_jobs is CatBoost's thread count here, on which its models depend: kept at 1
        "quantile": QuantileAttack(n_jobs=1, device="cpu", **quick_quantile, **common),
        "quantile_logit_pinball": QuantileAttack(mode="pinball", statistic="logit", n_jobs=1,
                                                 device="cpu", **quick_quantile, **common),
        "merlin": MerlinAttack(n_noise=8, noise_scale="std", sigma=0.1, **common),
        "morgan": MorganAttack(n_noise=8, noise_scale="std", sigma=0.1, n_thresholds=10,
                               **common),
    }
    if game == "breast_cancer_mlp":
        out["calibrated_gradient_norm"] = CalibratedAttack(
            statistic="gradient_norm", n_reference=2, n_jobs=N_JOBS, **common)
        out["calibrated_forgetting"] = CalibratedAttack(
            calibration="forgetting", n_reference=2, forgetting_epochs=2, **common)
    return out


def _fit_attack(attack: Any, data: dict[str, Any]) -> dict[str, Any]:
    from sklearn.base import clone

    attack = clone(attack).set_params(target=data["target"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if attack.get_params().get("online"):
            known = np.r_[np.ones(len(data["y_pub"]), bool), np.zeros(len(data["y_cand"]), bool)]
            from tabmia.target import concat_rows

            attack.fit(concat_rows([data["X_pub"], data["X_cand"]]),
                       np.r_[data["y_pub"], data["y_cand"]], known_nonmembers=known)
        else:
            attack.fit(data["X_pub"], data["y_pub"])
        scores = attack.decision_function(data["X_cand"], data["y_cand"])
    return {"decision_function": _digest(scores), "threshold_": _number(attack.threshold_),
            "fpr_": _number(getattr(attack, "fpr_", None)),
            "n_calibration_": int(getattr(attack, "n_calibration_", -1)),
            "first_scores": [_number(s) for s in scores[:3]]}


# ------------------------------------------------------------------------ runners
def _frame_digest(frame: Any) -> dict[str, Any]:
    out = {}
    for col in frame.columns:
        values = frame[col].to_numpy()
        if values.dtype.kind in "biuf":
            out[col] = _digest(values.astype(np.float64))
        else:
            out[col] = hashlib.sha256("\n".join(map(str, values)).encode()).hexdigest()
    return out


def _metric_rows(frame: Any) -> list[dict[str, Any]]:
    keep = [c for c in frame.columns if "seconds" not in c]
    return json.loads(frame[keep].to_json(orient="records", double_precision=15))


def _runners() -> dict[str, Any]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    from tabmia.attacks import LiRAAttack, LossAttack, RMIAAttack
    from tabmia.audit import audit_model
    from tabmia.experiment import MembershipExperiment

    X, y = load_breast_cancer(return_X_y=True)
    attacks = {"loss": LossAttack(), "lira": LiRAAttack(n_shadow=4, n_jobs=N_JOBS),
               "lira_online": LiRAAttack(n_shadow=4, online=True, n_jobs=N_JOBS),
               "rmia": RMIAAttack(n_reference=2, n_jobs=N_JOBS)}
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = MembershipExperiment(RandomForestClassifier(n_estimators=30), attacks,
                                   n_repeats=2, random_state=SEED, fpr_fallback=True).run(X, y)
        out["MembershipExperiment"] = {
            "scores": _frame_digest(res.scores), "metrics": _metric_rows(res.metrics),
            "target_accuracy": _metric_rows(res.target_accuracy)}
        perm = np.random.RandomState(SEED).permutation(len(y))
        tr, pop = perm[:300], perm[300:]
        model = RandomForestClassifier(n_estimators=30, random_state=SEED).fit(X[tr], y[tr])
        res = audit_model(model, X[tr], y[tr], X[pop], y[pop], attacks, random_state=SEED,
                          fpr_fallback=True)
        out["audit_model"] = {
            "scores": _frame_digest(res.scores), "metrics": _metric_rows(res.metrics),
            "target_accuracy": _metric_rows(res.target_accuracy)}
    return out


def _strip(obj: Any) -> Any:
    """``obj`` without the keys that hold times, dates, paths or machine facts."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items()
                if not any(word in str(k) for word in _VOLATILE)}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _read(path: Path, tmp: Path) -> Any:
    """A results.json with the run's temporary folder named ``<tmp>``."""
    return json.loads(path.read_text().replace(str(tmp), "<tmp>"))


def _cli(argv: list[str]) -> int:
    from tabmia.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def _cli_runs() -> dict[str, Any]:
    import joblib
    import pandas as pd
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        rc = _cli(["audit", "--out", str(tmp_path / "game"), "--quiet",
                   "--n-jobs", str(N_JOBS)])
        game = _read(tmp_path / "game" / "results.json", tmp_path)
        out["audit_built_in_game"] = {"exit": rc, **{k: _strip(game[k]) for k in (
            "context", "verdict", "target_accuracy", "at_own_threshold", "metrics")}}
        df = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "diagnosis"})
        df = df.iloc[np.random.RandomState(0).permutation(len(df))].reset_index(drop=True)
        train, pop = df.iloc[:300], df.iloc[300:]
        model = RandomForestClassifier(n_estimators=10, random_state=0)
        joblib.dump(model.fit(train.drop(columns="diagnosis"), train["diagnosis"]),
                    tmp_path / "model.joblib")
        train.to_csv(tmp_path / "train.csv", index=False)
        pop.to_csv(tmp_path / "pop.csv", index=False)
        rc = _cli(["audit", "--model-file", str(tmp_path / "model.joblib"), "--train",
                   str(tmp_path / "train.csv"), "--population", str(tmp_path / "pop.csv"),
                   "--label", "diagnosis", "--recipe", "random_forest", "--n-shadow", "8",
                   "--attacks", "loss,lira,lira_online,rmia,merlin", "--out",
                   str(tmp_path / "own"), "--quiet", "--n-jobs", str(N_JOBS)])
        own = _read(tmp_path / "own" / "results.json", tmp_path)
        out["audit_model_file"] = {"exit": rc, **{k: _strip(own[k]) for k in (
            "context", "verdict", "target_accuracy", "at_own_threshold", "metrics")}}
        scores = pd.read_csv(tmp_path / "own" / "scores.csv.gz")
        out["audit_model_file"]["scores_csv"] = _frame_digest(scores)
        rc = _cli(["benchmark", "--datasets", "breast_cancer", "--quick", "--out",
                   str(tmp_path / "bench"), "--quiet", "--n-jobs", str(N_JOBS), "--model",
                   "random_forest", "--no-html"])
        bench = _read(tmp_path / "bench" / "results.json", tmp_path)
        out["benchmark_quick"] = {"exit": rc, "datasets": _strip(bench["datasets"]),
                                  "failed": bench["failed"]}
    return out


# ------------------------------------------------------------------------ main
def run(out_path: Path) -> dict[str, Any]:
    import tabmia

    use_shared_data()
    t0 = time.perf_counter()
    result: dict[str, Any] = {"tabmia_from": str(Path(tabmia.__file__).resolve().parents[1]),
                              "games": {}, "skipped": {}}
    for name, make in _games().items():
        try:
            data = make()
        except (ImportError, FileNotFoundError) as exc:
            result["skipped"][name] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            continue
        result["games"][name] = {a: _fit_attack(attack, data)
                                 for a, attack in _attacks(name).items()}
        print(f"{name}: {len(result['games'][name])} attacks", file=sys.stderr, flush=True)
    result["runners"] = _runners()
    result["cli"] = _cli_runs()
    result["machine"] = machine_info()
    result["seconds"] = time.perf_counter() - t0
    out_path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        diffs = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                diffs.append(f"{where}/{k}: only in {'after' if k in b else 'before'}")
            else:
                diffs += _differences(a[k], b[k], f"{where}/{k}")
        return diffs
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def compare(before_path: Path, after_path: Path) -> int:
    before, after = (json.loads(p.read_text()) for p in (before_path, after_path))
    checked = {k: before[k] for k in ("games", "skipped", "runners", "cli")}
    diffs = _differences(checked, {k: after[k] for k in checked})
    n_attacks = sum(len(g) for g in before["games"].values())
    payload = {"before": before_path.name, "after": after_path.name, "identical": not diffs,
               "differences": diffs, "n_attack_fits": n_attack_fits(before),
               "games": sorted(before["games"]), "skipped": before["skipped"],
               "before_seconds": before["seconds"], "after_seconds": after["seconds"],
               "machine": after["machine"]}
    md = "\n".join([
        "# Refactoring identity (issue 18)", "",
        f"`{before_path.name}` (the tree before) against `{after_path.name}` (after): "
        f"{n_attacks} attack fits on {len(before['games'])} targets "
        f"({', '.join(sorted(before['games']))}), the game runners (MembershipExperiment, "
        "audit_model) and the command line (tabmia audit on the built-in game and on a model "
        "file, tabmia benchmark --quick).", "",
        "**Identical**: every decision_function hash, threshold_, fpr_, n_calibration_, score "
        "column and metric number is the same." if not diffs else
        f"**{len(diffs)} differences**:", "",
        *[f"- `{d}`" for d in diffs[:50]],
        "", f"Skipped targets: {before['skipped'] or 'none'}.",
        "", "Reproduce: see the module docstring of `benchmarks/refactor_identity.py`.", ""])
    write_results("refactor_identity", payload, md)
    print(md)
    return 1 if diffs else 0


def n_attack_fits(result: dict[str, Any]) -> int:
    return sum(len(g) for g in result["games"].values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write this tree's hashes here")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="jobs of every attack and command (default 1)")
    args = parser.parse_args()
    global N_JOBS
    N_JOBS = args.n_jobs
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give --out FILE or --compare BEFORE AFTER")
    run(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
