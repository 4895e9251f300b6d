"""The tasks of :mod:`benchmarks.quantile_table2` (Bertran et al., NeurIPS 2023, Table 2),
the paper's published numbers, the loader and the operating point at an FPR: what that
benchmark and its paper-protocol runner (:mod:`benchmarks._quantile_table2_paper`) share,
kept here so that neither imports the other's module for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PAPER_TASKS = ("361057", "361064", "361067", "361070")
EXTRA_TASKS = ("361065", "361066")  # MagicTelescope, bank-marketing (clf_num)
ACS = {"acs_coverage": "ACSPublicCoverage", "acs_income": "ACSIncome",
       "acs_travel": "ACSTravelTime", "acs_mobility": "ACSMobility"}
DATASETS = PAPER_TASKS + tuple(ACS)
ALL_CHOICES = DATASETS + EXTRA_TASKS + ("361055", "361062", "361063", "361275", "361277", "361278",
                          "361111", "361283", "361286")
#: Other suite tasks are sampled down to the paper's OpenML scale (~5,000 records).
EXTRA_SAMPLE = 5_000

# Table 2: precision (%) at 1% FPR (OpenML) / 0.5% FPR (ACS NY).
PAPER = {
    "LiRA (n=16)": {"361057": 70.33, "361064": 85.44, "361067": 85.52, "361070": 73.33,
                    "acs_coverage": 66.07, "acs_income": 50.71, "acs_travel": 66.07,
                    "acs_mobility": 72.74},
    "LiRA (n=32)": {"361057": 76.22, "361064": 88.52, "361067": 89.62, "361070": 78.35,
                    "acs_coverage": 66.28, "acs_income": 52.53, "acs_travel": 67.52,
                    "acs_mobility": 68.84},
    "LiRA (n=64)": {"361057": 82.73, "361064": 90.31, "361067": 89.46, "361070": 79.57,
                    "acs_coverage": 69.23, "acs_income": 50.24, "acs_travel": 65.64,
                    "acs_mobility": 65.26},
    "QMIA (ours)": {"361057": 83.35, "361064": 88.05, "361067": 87.35, "361070": 86.54,
                    "acs_coverage": 67.31, "acs_income": 56.35, "acs_travel": 63.98,
                    "acs_mobility": 85.27},
}


def load(key: str, quick: bool) -> dict[str, Any]:
    """A data set as a DataFrame (CatBoost takes categoricals natively) and int labels."""
    from tabmia import datasets as ds

    if key in ACS:
        b = ds.fetch_acs(ACS[key], "NY", 2018)
        X, y = b.data, np.asarray(b.target)
        note, fpr = f"ACS NY 2018 {ACS[key]} (folktables)", 0.005
        if X.shape[0] > 20_000:  # the paper: ~20,000 records
            idx = np.random.RandomState(0).choice(X.shape[0], 20_000, replace=False)
            X, y = X.iloc[idx].reset_index(drop=True), y[idx]
    else:
        b = ds.fetch_openml_task(int(key), download=False)
        if b.origin != "hf":
            raise ds.DataNotFoundError(
                f"OpenML {key}: the exact benchmark file is not in the data home (found "
                f"{b.origin!r}); this benchmark uses no analogues",
                paths=[])
        X, y = b.data.reset_index(drop=True), np.asarray(b.target)
        name = ds.SUITE_TASKS[int(key)].name if int(key) in ds.SUITE_TASKS else key
        status = "exact benchmark file"
        note, fpr = f"OpenML {key} ({name}): {status}", 0.01
        if key not in PAPER_TASKS and X.shape[0] > EXTRA_SAMPLE:
            idx = np.random.RandomState(0).choice(X.shape[0], EXTRA_SAMPLE, replace=False)
            X, y = X.iloc[idx].reset_index(drop=True), y[idx]
            note += f" ({EXTRA_SAMPLE:,}-record sample of {b.data.shape[0]:,})"
    if quick:
        idx = np.random.RandomState(0).choice(X.shape[0], min(600, X.shape[0]), replace=False)
        X, y = X.iloc[idx].reset_index(drop=True), y[idx]
    return {"X": X, "y": y, "note": note, "fpr": fpr}


def operating_point(member: np.ndarray, s: np.ndarray, fpr: float) -> dict[str, float]:
    """Best-TPR threshold with FPR <= fpr on the candidates: TPR, FPR, both precisions."""
    from sklearn.metrics import roc_curve

    fprs, tprs, _ = roc_curve(member, s, drop_intermediate=False)
    ok = np.flatnonzero(fprs <= fpr + 1e-12)
    i = ok[np.argmax(tprs[ok])]
    tp, fp = tprs[i] * member.sum(), fprs[i] * (~member).sum()
    rate = tprs[i] + fprs[i]
    return {"tpr": float(tprs[i]), "fpr": float(fprs[i]),
            "precision": float(tprs[i] / rate) if rate > 0 else None,
            "precision_counts": float(tp / (tp + fp)) if tp + fp > 0 else None}
