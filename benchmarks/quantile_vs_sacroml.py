"""tabmia's QuantileAttack vs SACRO-ML 2.0.1's QMIA on the same Adult target.

Protocol (per seed, 3 seeds)
----------------------------
- UCI Adult (``shared/data/adult/adult.csv.gz``: train + test files merged, 48,842 rows),
  rows with a missing value dropped (45,222 left); categorical columns as integer codes
  (14 numeric columns; ``split`` dropped; SACRO-ML needs one numeric matrix, and on a
  one-hot matrix its regressor degenerates and the attack refuses to run); label
  ``income == ">50K"``.
- Random split: 10,000 target-training records (members), 10,000 public non-members
  (the attacker's data; SACRO-ML's ``X_test``), and the other 25,222 records as *fresh*
  non-members neither attack has seen.
- Target: ``RandomForestClassifier(n_estimators=50, random_state=seed)`` (fully grown trees).
  The same pickled model is attacked by both tools.
- SACRO-ML: ``QMIAAttack(alpha=0.01)`` run on ``Target(model, X_train=members, X_test=public)``
  in its own virtual environment (subprocess). Its quantile model
  (``HistGradientBoostingRegressor(loss="quantile")``) is fitted on the public records and
  its FPR is reported in-sample on those same records; here its ``quantile_model`` is
  applied to the fresh non-members and to the members (margin = hinge - threshold,
  member when margin > 0, its own rule).
- tabmia: ``QuantileAttack(target, fpr=0.01, random_state=seed)`` (hinge score, 3-fold
  cross-fitting, 10 Optuna trials) fitted on the same public records, in three
  configurations: pinball at the single level 0.99 (the default), pinball on a grid of
  levels (alphas 0.01-0.5, 5 trials), and the Gaussian mean/spread model; member when
  ``decision_function >= threshold_``. The grid and the Gaussian model matter here: the
  forest gives probability 1.0 to ~28% of non-members, an atom at the top of the score
  that one quantile cannot split (see ``QuantileAttack``'s notes).
- Reported: FPR delivered on the fresh non-members at the attack's own decision rule
  (with its 95% Clopper-Pearson interval), the same rule's TPR on members, AUC and
  TPR at 1% FPR from the ROC of members vs fresh non-members, and wall time.

Setup: ``python3 -m venv /tmp/sacro_q && /tmp/sacro_q/bin/pip install torch==2.13.0 &&
/tmp/sacro_q/bin/pip install sacroml`` (path overridable with ``SACRO_PYTHON``).

Run: ``python -m benchmarks.quantile_vs_sacroml``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier

from benchmarks._common import SHARED_DATA, load_note, write_results

SACRO_PYTHON = os.environ.get("SACRO_PYTHON", "/tmp/sacro_q/bin/python")
ALPHA = 0.01

#: tabmia configurations: the default (one quantile at alpha), a quantile grid reaching
#: past the atom a forest's probability 1.0 puts in the score, and the Gaussian model.
TABMIA_CONFIGS: dict[str, dict[str, Any]] = {
    "tabmia_pinball": {"mode": "pinball"},
    "tabmia_pinball_grid": {"mode": "pinball", "alphas": [0.01, 0.05, 0.1, 0.2, 0.35, 0.5],
                            "n_trials": 5},
    "tabmia_gaussian": {"mode": "gaussian"},
}
TOOL_NAMES = {
    "sacroml": "SACRO-ML QMIA(alpha=0.01)",
    "tabmia_pinball": "tabmia pinball, alphas=[0.01]",
    "tabmia_pinball_grid": "tabmia pinball, alphas=[0.01..0.5], 5 trials",
    "tabmia_gaussian": "tabmia gaussian",
}

_SACRO_RUNNER = textwrap.dedent(
    """
    import json, sys, time, logging
    import joblib, numpy as np
    logging.disable(logging.WARNING)
    from sacroml.attacks.qmia_attack import QMIAAttack
    from sacroml.attacks.target import Target
    from sacroml.attacks import utils
    from sacroml.version import __version__ as sacro_version

    d = np.load(sys.argv[1])
    model = joblib.load(sys.argv[2])
    out_dir = sys.argv[3]
    t0 = time.perf_counter()
    target = Target(model=model, X_train=d["X_tr"], y_train=d["y_tr"],
                    X_test=d["X_pub"], y_test=d["y_pub"])
    attack = QMIAAttack(alpha=float(sys.argv[4]), output_dir=out_dir, write_report=False)
    attack.attack(target)
    fit_s = time.perf_counter() - t0
    def margins(X, y):
        s = utils.qmia_hinge_score(model.predict_proba(X), y)
        return s - attack.quantile_model.predict(np.column_stack((X, y)))
    t0 = time.perf_counter()
    m_mem = margins(d["X_tr"], d["y_tr"])
    m_fresh = margins(d["X_fresh"], d["y_fresh"])
    score_s = time.perf_counter() - t0
    m_pub = margins(d["X_pub"], d["y_pub"])
    np.savez(sys.argv[5], members=m_mem, fresh=m_fresh, public=m_pub)
    json.dump({"fit_s": fit_s, "score_s": score_s, "version": sacro_version,
               "reported_public_fpr": attack.attack_metrics[0]["observed_public_fpr"]},
              open(sys.argv[6], "w"))
    """
)


def load_adult() -> tuple[pd.DataFrame, np.ndarray]:
    """UCI Adult with missing rows dropped: (features DataFrame with category columns, y)."""
    df = pd.read_csv(SHARED_DATA / "adult" / "adult.csv.gz")
    df = df.dropna().drop(columns=["split"]).reset_index(drop=True)
    y = (df.pop("income") == ">50K").to_numpy().astype(np.int64)
    for c in df.columns:
        if df[c].dtype == object or pd.api.types.is_string_dtype(df[c].dtype):
            df[c] = df[c].astype("category")
    return df, y


def adult_numeric() -> tuple[np.ndarray, np.ndarray]:
    """Adult as a float64 matrix: categorical columns as integer codes (14 columns).

    Integer codes, not one-hot: on the one-hot matrix the forest gives 1.0 to the true
    class of so many public records that SACRO-ML's quantile regressor collapses to a
    constant and QMIAAttack refuses to run ("degenerated to a near-constant predictor").
    """
    df, y = load_adult()
    cols = [
        df[c].cat.codes.to_numpy() if isinstance(df[c].dtype, pd.CategoricalDtype)
        else df[c].to_numpy()
        for c in df.columns
    ]
    return np.column_stack(cols).astype(np.float64), y


def _roc_numbers(members: np.ndarray, fresh: np.ndarray) -> dict[str, float]:
    from tabmia.metrics import auc, tpr_at_fpr

    m = np.r_[np.ones(members.size, bool), np.zeros(fresh.size, bool)]
    s = np.r_[members, fresh]
    return {"auc": auc(m, s), "tpr_at_1pct": tpr_at_fpr(m, s, 0.01)}


def _rule_numbers(flag_mem: np.ndarray, flag_fresh: np.ndarray) -> dict[str, Any]:
    from tabmia.metrics import clopper_pearson

    k, n = int(flag_fresh.sum()), flag_fresh.size
    lo, hi = clopper_pearson(k, n)
    return {"fresh_fpr": k / n, "fresh_fpr_ci95": [lo, hi], "fresh_fp": k,
            "n_fresh": n, "tpr": float(flag_mem.mean())}


def run_seed(X: np.ndarray, y: np.ndarray, seed: int, n_trials: int, work: Path) -> dict:
    from tabmia.attacks.quantile import QuantileAttack

    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    tr, pub, fresh = perm[:10_000], perm[10_000:20_000], perm[20_000:]
    target = RandomForestClassifier(n_estimators=50, random_state=seed, n_jobs=-1)
    target.fit(X[tr], y[tr])
    row: dict[str, Any] = {
        "seed": seed,
        "target_train_acc": float(target.score(X[tr], y[tr])),
        "target_fresh_acc": float(target.score(X[fresh], y[fresh])),
    }

    # --- SACRO-ML, in its own environment
    data_path, model_path = work / f"data{seed}.npz", work / f"rf{seed}.joblib"
    out_npz, out_json = work / f"sacro{seed}.npz", work / f"sacro{seed}.json"
    np.savez(data_path, X_tr=X[tr], y_tr=y[tr], X_pub=X[pub], y_pub=y[pub],
             X_fresh=X[fresh], y_fresh=y[fresh])
    joblib.dump(target, model_path)
    runner = work / "sacro_runner.py"
    runner.write_text(_SACRO_RUNNER)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [SACRO_PYTHON, str(runner), str(data_path), str(model_path), str(work / "out"),
         str(ALPHA), str(out_npz), str(out_json)],
        capture_output=True, text=True,
    )
    if proc.returncode:
        raise RuntimeError(f"SACRO-ML run failed:\n{proc.stderr[-4000:]}")
    wall = time.perf_counter() - t0
    info = json.loads(out_json.read_text())
    mg = np.load(out_npz)
    sacro = {
        **_rule_numbers(mg["members"] > 0, mg["fresh"] > 0),
        **_roc_numbers(mg["members"], mg["fresh"]),
        "public_fpr_in_sample": float(np.mean(mg["public"] > 0)),
        "reported_public_fpr": info["reported_public_fpr"],
        "fit_s": info["fit_s"], "subprocess_wall_s": wall, "version": info["version"],
    }

    # --- tabmia, three configurations
    for name, kwargs in TABMIA_CONFIGS.items():
        kw = dict(kwargs)
        if "n_trials" not in kw:
            kw["n_trials"] = n_trials
        t0 = time.perf_counter()
        kw.setdefault("cv", 3)  # as its committed results (the default is now 5)
        attack = QuantileAttack(target, fpr=ALPHA, random_state=seed, **kw)
        attack.fit(X[pub], y[pub])
        fit_s = time.perf_counter() - t0
        s_mem = attack.decision_function(X[tr], y[tr])
        s_fresh = attack.decision_function(X[fresh], y[fresh])
        row[name] = {
            **_rule_numbers(s_mem >= attack.threshold_, s_fresh >= attack.threshold_),
            **_roc_numbers(s_mem, s_fresh),
            "oof_public_fpr": float(np.mean(attack.oof_scores_ >= attack.threshold_)),
            "fit_s": fit_s, "best_params": attack.best_params_, "kwargs": kw,
        }
    row["sacroml"] = sacro
    return row


def _markdown(rows: list[dict], n_trials: int) -> str:
    lines = [
        "Adult (45,222 rows after dropping missing; categorical columns as integer codes, "
        "14 columns), "
        "RandomForestClassifier(n_estimators=50) trained on 10,000 records; both attacks "
        "fit on the same 10,000 public non-members; FPR measured on 25,222 fresh "
        f"non-members. Requested alpha = {ALPHA}. tabmia: QuantileAttack(fpr=0.01, cv=3, "
        f"hinge score), Optuna n_trials={n_trials} unless stated. SACRO-ML "
        f"{rows[0]['sacroml']['version']}: QMIAAttack(alpha=0.01), in its own venv.",
        "",
        "| seed | tool | FPR on fresh (95% CI) | FPR it reports | TPR at its rule | AUC | "
        "TPR @ 1% FPR | fit s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for key, name in TOOL_NAMES.items():
            v = r[key]
            rep = v["public_fpr_in_sample"] if key == "sacroml" else v["oof_public_fpr"]
            lo, hi = v["fresh_fpr_ci95"]
            lines.append(
                f"| {r['seed']} | {name} | {v['fresh_fpr']:.5f} ({lo:.5f}-{hi:.5f}) | "
                f"{rep:.5f} | {v['tpr']:.4f} | {v['auc']:.4f} | {v['tpr_at_1pct']:.4f} | "
                f"{v['fit_s']:.1f} |"
            )
    lines += ["", "Mean ± std over seeds:", "",
              "| tool | FPR on fresh | TPR at its rule | AUC | TPR @ 1% FPR | fit s |",
              "|---|---|---|---|---|---|"]
    for key, name in TOOL_NAMES.items():
        col = lambda k, d=4: _ms([r[key][k] for r in rows], d)  # noqa: E731
        lines.append(
            f"| {name} | {col('fresh_fpr', 5)} | {col('tpr')} | {col('auc')} | "
            f"{col('tpr_at_1pct')} | {col('fit_s', 1)} |"
        )
    lines += [
        "",
        "'FPR it reports': SACRO-ML's `observed_public_fpr`, measured in-sample on the "
        "records its regressor trained on; tabmia's out-of-fold FPR on the public records "
        "(the threshold is set there by the split-conformal rule). The 95% intervals are "
        "for the fresh-set count only; a threshold calibrated on 10,000 non-members "
        "delivers an FPR that itself varies by about ±0.002 (95%) around 0.01 from one "
        "public sample to another.",
        "",
        "Reading: the forest gives probability 1.0 to the true class of ~28% of the "
        "non-members, an atom at the top of the hinge score. A single 0.99 quantile cannot "
        "split it: SACRO-ML's in-sample rule and tabmia's calibrated single-quantile rule "
        "both flag far fewer than 1% of fresh non-members (and almost no members). tabmia's "
        "quantile grid and Gaussian model order the atom's records and deliver the "
        "requested 1% on fresh data, with 2.5-4% TPR.",
    ]
    return "\n".join(lines)


def _ms(values: list[float], digits: int) -> str:
    v = np.asarray(values, dtype=float)
    sd = v.std(ddof=1) if v.size > 1 else 0.0
    return f"{v.mean():.{digits}f} ± {sd:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-trials", type=int, default=10)
    parser.add_argument("--markdown-only", action="store_true",
                        help="rewrite the .md from the existing results JSON")
    parser.add_argument("--note", default=None,
                        help="with --markdown-only: a note on the run to record")
    args = parser.parse_args()
    if args.markdown_only:
        from benchmarks._common import RESULTS

        payload = json.loads((RESULTS / "quantile_vs_sacroml.json").read_text())
        payload.pop("benchmark")
        machine = payload.pop("machine")
        payload.setdefault("run_date", machine.get("date"))
        if args.note:
            payload["note"] = args.note
        md = _markdown(payload["runs"], args.n_trials)
        if "load_average_1_5_15min" in payload:
            md += load_note(payload["load_average_1_5_15min"])
        if payload.get("note"):
            md += "\n\nNote: " + payload["note"]
        write_results("quantile_vs_sacroml", payload, md)
        return
    if not Path(SACRO_PYTHON).exists():
        raise SystemExit(f"SACRO-ML's python not found at {SACRO_PYTHON} (see the docstring)")
    X, y = adult_numeric()
    load_start = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            rows.append(run_seed(X, y, seed, args.n_trials, Path(tmp)))
            print(f"seed {seed} done in {time.perf_counter() - t0:.0f}s:",
                  {k: rows[-1][k]["fresh_fpr"] for k in TOOL_NAMES}, flush=True)
    load = {"start": load_start, "end": os.getloadavg()}
    payload = {
        "load_average_1_5_15min": load,
        "protocol": {"data": "adult (dropna, categorical as integer codes)", "n_members": 10_000,
                     "n_public": 10_000, "n_fresh": int(len(y) - 20_000), "alpha": ALPHA,
                     "target": "RandomForestClassifier(n_estimators=50)",
                     "tabmia": {k: f"QuantileAttack(fpr=0.01, cv=3, n_trials={args.n_trials}, "
                                f"**{v})" for k, v in TABMIA_CONFIGS.items()},
                     "sacroml": "QMIAAttack(alpha=0.01)"},
        "runs": rows,
    }
    write_results("quantile_vs_sacroml", payload, _markdown(rows, args.n_trials) + load_note(load))


if __name__ == "__main__":
    main()
