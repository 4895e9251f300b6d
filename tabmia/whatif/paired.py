"""Paired intervals of a what-if run: the change in TPR and in utility against the original.

Every variant was audited on the same candidates as the original, so the change in TPR has
a *paired* bootstrap interval: the same members are resampled for both (within each
repeat, in blocks). Utility is measured on the held-out records, the same for every
variant, with a paired bootstrap over them. Intervals are percentile intervals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["paired_tpr_difference", "paired_utility_difference", "utility_values"]


def _block_indices(sizes: list[int], n_bootstrap: int, rng: np.random.RandomState) -> np.ndarray:
    """``(n_bootstrap, sum(sizes))`` indices resampling each block (repeat) within itself."""
    parts, offset = [], 0
    for n in sizes:
        parts.append(offset + rng.randint(0, max(n, 1), size=(n_bootstrap, n)))
        offset += n
    return np.hstack(parts) if parts else np.zeros((n_bootstrap, 0), dtype=np.intp)


def _member_flags(run: Any) -> pd.DataFrame:
    """Members' flags of one run: index ``record``, one bool column per attack."""
    s = run.scores
    members = s[s["member"].astype(bool)]
    return members.pivot_table(
        index="record", columns="attack", values="flagged", aggfunc="max"
    ).astype(bool)


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    a = (1.0 - confidence) / 2.0
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(finite, [a, 1.0 - a])
    return float(lo), float(hi)


def paired_tpr_difference(
    base_runs: list[Any], runs: list[Any], *, n_bootstrap: int, confidence: float, random_state: int
) -> dict[str, Any]:
    """Change in TPR (largest over attacks, at their own thresholds) against the base,
    with a paired bootstrap interval over the members both audits scored.

    Members are paired by their row in the training data within each repeat; a person-cap
    variant scores only the records it kept, and the pair is made on those. Per attack the
    same is given for attacks both ran.

    Returns
    -------
    dict
        ``delta``, ``low``, ``high`` (the largest TPR), ``n_paired`` (members), and
        ``per_attack`` ({attack: (delta, low, high)}).
    """
    base_blocks, var_blocks, sizes = [], [], []
    for b, v in zip(base_runs, runs):
        fb, fv = _member_flags(b), _member_flags(v)
        common = fb.index.intersection(fv.index)
        base_blocks.append(fb.loc[common])
        var_blocks.append(fv.loc[common])
        sizes.append(common.size)
    fb_all = pd.concat(base_blocks, ignore_index=True).fillna(False).to_numpy(bool).T
    fv_all = pd.concat(var_blocks, ignore_index=True).fillna(False).to_numpy(bool).T
    attacks_b = list(base_blocks[0].columns)
    attacks_v = list(var_blocks[0].columns)
    idx = _block_indices(sizes, n_bootstrap, np.random.RandomState(random_state))
    # (attacks, replicates, members) flags resampled, then each replicate's TPR
    tpr_b = fb_all[:, idx].mean(axis=2)
    tpr_v = fv_all[:, idx].mean(axis=2)
    point = float(fv_all.mean(axis=1).max() - fb_all.mean(axis=1).max())
    delta = tpr_v.max(axis=0) - tpr_b.max(axis=0)
    low, high = _interval(delta, confidence)
    per_attack = {}
    for a in attacks_v:
        if a in attacks_b:
            i, j = attacks_b.index(a), attacks_v.index(a)
            d = tpr_v[j] - tpr_b[i]
            per_attack[a] = (float(fv_all[j].mean() - fb_all[i].mean()), *_interval(d, confidence))
    return {
        "delta": point,
        "low": low,
        "high": high,
        "n_paired": int(sum(sizes)),
        "per_attack": per_attack,
    }


def _weighted_auc(score: np.ndarray, positive: np.ndarray, W: np.ndarray) -> np.ndarray:
    """ROC AUC of ``score`` for ``positive`` under each row of weights ``W`` (ties 1/2),
    shape ``(replicates,)``: sorted once, cumulated negative weight below each record."""
    order = np.argsort(score, kind="stable")
    s, pos = score[order], positive[order]
    Wp, Wn = W[:, order] * pos, W[:, order] * ~pos
    start = np.searchsorted(s, s, side="left")
    end = np.searchsorted(s, s, side="right")
    cum = np.concatenate([np.zeros((W.shape[0], 1)), np.cumsum(Wn, axis=1)], axis=1)
    below = cum[:, start]
    tied = cum[:, end] - below
    num = (Wp * (below + 0.5 * tied)).sum(axis=1)
    den = Wp.sum(axis=1) * Wn.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def utility_values(
    y: np.ndarray,
    output: np.ndarray,
    pred: np.ndarray,
    W: np.ndarray,
    metric: str,
    label_only: bool,
) -> np.ndarray:
    """Utility ``metric`` of one repeat's held-out records under each row of weights ``W``.

    ``roc_auc``: of the positive class's output (binary) or the mean one-vs-rest AUC
    (macro, 3+ classes), from what the variant outputs (a label-only variant's labels);
    ``accuracy``: of its decisions; ``log_loss``: mean cross-entropy (NaN for a label-only
    variant, which gives no probabilities).

    Returns
    -------
    ndarray of shape (replicates,)
    """
    total = W.sum(axis=1)
    pred = np.ravel(pred)  # CatBoost's multi-class predict returns a column
    if metric == "accuracy":
        return (W @ (pred == y).astype(float)) / total
    if metric == "log_loss":
        if label_only:
            return np.full(W.shape[0], np.nan)
        p = np.clip(output[np.arange(y.size), y], 1e-15, 1.0)
        return (W @ -np.log(p)) / total
    if output.shape[1] == 2:
        return _weighted_auc(output[:, 1], y == 1, W)
    aucs = [
        _weighted_auc(output[:, c], y == c, W) for c in range(output.shape[1]) if (y == c).any()
    ]
    return np.nanmean(np.vstack(aucs), axis=0)


def _utility_boot(runs: list[Any], metric: str, idx_parts: list[np.ndarray]) -> np.ndarray:
    """Per replicate, the metric averaged over repeats (each repeat's own resample)."""
    values = []
    for run, idx in zip(runs, idx_parts):
        n = run.utility_y.size
        B = idx.shape[0]
        W = np.bincount((idx + n * np.arange(B)[:, None]).ravel(), minlength=B * n).reshape(B, n)
        values.append(
            utility_values(
                run.utility_y,
                run.utility_output,
                run.utility_pred,
                W.astype(float),
                metric,
                run.label_only,
            )
        )
    return np.mean(np.vstack(values), axis=0)


def paired_utility_difference(
    base_runs: list[Any],
    runs: list[Any],
    metric: str,
    *,
    n_bootstrap: int,
    confidence: float,
    random_state: int,
) -> dict[str, float]:
    """Utility of the variant, and its change against the base, with a paired bootstrap
    interval over the held-out records (resampled within each repeat, the same records
    for both).

    Returns
    -------
    dict
        ``value`` (the variant's), ``base``, ``delta``, ``low``, ``high``.
    """
    rng = np.random.RandomState(random_state)
    parts = [rng.randint(0, r.utility_y.size, size=(n_bootstrap, r.utility_y.size)) for r in runs]
    ones = [np.arange(r.utility_y.size)[None, :] for r in runs]
    value = float(_utility_boot(runs, metric, ones)[0])
    base = float(_utility_boot(base_runs, metric, ones)[0])
    delta = _utility_boot(runs, metric, parts) - _utility_boot(base_runs, metric, parts)
    low, high = _interval(delta, confidence)
    return {"value": value, "base": base, "delta": value - base, "low": low, "high": high}
