"""How much of the true training set a reconstruction gives back.

Reconstructed records come in no particular order, so each true record is paired with
one reconstructed record by an optimal assignment (fewest features and labels wrong in
total, :func:`scipy.optimize.linear_sum_assignment`); a true record is recovered exactly
when its partner has its label and its bin on every feature the forest splits on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Recovery", "match_records"]


@dataclass(frozen=True)
class Recovery:
    """The pairing and what it recovered (features no tree splits on are NaN: the file
    says nothing of them)."""

    partner: np.ndarray
    exact: np.ndarray
    feature_accuracy: np.ndarray
    label_accuracy: float
    baseline_feature_accuracy: np.ndarray


def match_records(
    true_bins: np.ndarray,
    true_labels: np.ndarray,
    bins: np.ndarray,
    labels: np.ndarray,
    informative: np.ndarray,
) -> Recovery:
    """Pair every true record with a reconstructed one and score the pairs.

    ``informative`` marks the features some tree splits on; the others are left out
    of every count. ``baseline_feature_accuracy`` is what the best constant guess (each
    feature's most common true bin) gets right: the per-feature accuracy a reconstruction
    has to beat to say anything about individual records.
    """
    from scipy.optimize import linear_sum_assignment

    used = np.flatnonzero(informative)
    wrong = (true_bins[:, None, used] != bins[None, :, used]).sum(axis=2)
    wrong = wrong + (true_labels[:, None] != labels[None, :])
    rows, cols = linear_sum_assignment(wrong)
    partner = np.full(len(true_bins), -1)
    partner[rows] = cols
    hit = true_bins[rows] == bins[cols]
    exact = np.zeros(len(true_bins), dtype=bool)
    exact[rows] = hit[:, used].all(axis=1) & (true_labels[rows] == labels[cols])
    n_true = len(true_bins)
    # a true record left without a partner (more true than reconstructed) counts as wrong
    feature_accuracy = np.where(informative, hit.sum(axis=0) / n_true, np.nan)
    label_accuracy = float((true_labels[rows] == labels[cols]).sum() / n_true)
    baseline = np.array(
        [
            np.unique(true_bins[:, f], return_counts=True)[1].max() / n_true
            for f in range(true_bins.shape[1])
        ]
    )
    baseline = np.where(informative, baseline, np.nan)
    return Recovery(partner, exact, feature_accuracy, label_accuracy, baseline)
