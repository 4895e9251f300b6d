"""Query rounds of the label-only attacks: every round is one batched ``predict``.

A round sends the records of a chunk (all of them by default) together with all their
perturbed copies to the model in one call, and reads back labels only. The functions
take the model as a ``predict`` callable and the truth in the same label space, so the
target (label indices) and shadow models (raw labels) share them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval

from tabmia.perturb import NOISE_CONSTRAINTS, TabularNoise, TabularRays
from tabmia.target import n_rows, take_rows

__all__ = [
    "LabelQueriesMixin",
    "ROBUSTNESS_CONSTRAINTS",
    "record_chunks",
    "robustness_counts",
    "boundary_distances",
    "empirical_logit",
]

#: Parameter constraints of the noise robustness attacks.
ROBUSTNESS_CONSTRAINTS = {
    **NOISE_CONSTRAINTS,
    "max_batch_rows": [None, Interval(Integral, 1, None, closed="left")],
}


class LabelQueriesMixin:
    """What every label-only attack shares: it works from labels, and counts its queries."""

    target_: Any  # set by the attack's fit (BaseMembershipAttack)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.membership_tags.target_outputs = "labels"
        return tags

    @property
    def n_queries_(self) -> int:
        """Records (clean and perturbed) sent to the target so far, ``fit`` included."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "threshold_")
        return int(self.target_.n_queries_)


def record_chunks(n: int, rows_per_record: int, max_batch_rows: int | None) -> Iterator[slice]:
    """Slices of the ``n`` records whose rounds fit in ``max_batch_rows`` rows (one slice
    of all records when None)."""
    if max_batch_rows is None:
        yield slice(0, n)
        return
    per_chunk = max(1, int(max_batch_rows) // max(1, rows_per_record))
    for start in range(0, n, per_chunk):
        yield slice(start, min(start + per_chunk, n))


def fitted_noise(X: Any, attack: Any) -> TabularNoise:
    """The noise model of ``attack``'s parameters fitted on ``X``, its bank drawn."""
    noise = TabularNoise(
        sigma=attack.sigma,
        noise_scale=attack.noise_scale,
        categorical_flip=attack.categorical_flip,
        binary_flip=attack.binary_flip,
    ).fit(X)
    return noise.draw(attack.n_noise, attack._draw_seed())


def robustness_counts(
    predict: Callable[[Any], np.ndarray],
    noise: TabularNoise,
    X: Any,
    truth: np.ndarray,
    *,
    max_batch_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Whether the model labels each record right, and how many of its copies keep the label.

    Parameters
    ----------
    predict : callable
        ``predict(records) -> labels`` (one call per round).
    noise : TabularNoise
        Fitted, with its ``T`` perturbations drawn.
    X : array, sparse matrix or DataFrame of shape (n, d)
        Records.
    truth : ndarray of shape (n,)
        Their labels, in the space ``predict`` answers in.
    max_batch_rows : int, default=None
        Rows per call; None sends all records and copies at once.

    Returns
    -------
    correct : ndarray of bool of shape (n,)
        The clean record is labelled right.
    kept : ndarray of int of shape (n,)
        Noisy copies (of ``T``) labelled right.
    """
    n, T = n_rows(X), noise.n_copies_
    correct = np.empty(n, dtype=bool)
    kept = np.empty(n, dtype=np.int64)
    for sl in record_chunks(n, T + 1, max_batch_rows):
        m = sl.stop - sl.start
        labels = np.asarray(predict(noise.noisy_batch(take_rows(X, sl)))).reshape(m, T + 1)
        right = labels == truth[sl, None]
        correct[sl] = right[:, 0]
        kept[sl] = right[:, 1:].sum(axis=1)
    return correct, kept


def empirical_logit(correct: np.ndarray, kept: np.ndarray, n_noise: int) -> np.ndarray:
    """``log((k + 1/2) / (T - k + 1/2))`` of the copies kept (``k = 0`` when the clean
    record is labelled wrong): finite at 0 and ``T``, symmetric about one half."""
    k = np.where(correct, kept, 0).astype(np.float64)
    return np.log(k + 0.5) - np.log(n_noise - k + 0.5)


def boundary_distances(
    predict: Callable[[Any], np.ndarray],
    rays: TabularRays,
    X: Any,
    truth: np.ndarray,
    *,
    grid: np.ndarray,
    n_bisect: int,
    max_batch_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The step along each ray at which the label first changes, found by bisection.

    Round 0 labels the clean records; round 1 every ray of every correctly labelled
    record at every step of ``grid``; the first grid step whose label is wrong and the
    one before it bracket a change, which ``n_bisect`` more rounds halve (only rays with
    a bracket are queried). A ray whose label never changes on the grid is censored.

    Returns
    -------
    correct : ndarray of bool of shape (n,)
        The clean record is labelled right.
    distance : ndarray of shape (n, n_directions)
        The upper end of the final bracket along each ray; ``inf`` where the label never
        changed on the grid, ``0`` for every ray of a record labelled wrong.
    """
    n, K, G = n_rows(X), rays.n_directions, grid.size
    correct = np.empty(n, dtype=bool)
    distance = np.zeros((n, K))
    for sl in record_chunks(n, 1 + K * G, max_batch_rows):
        Xc, tc = take_rows(X, sl), truth[sl]
        right = np.asarray(predict(Xc)) == tc
        correct[sl] = right
        rec = np.flatnonzero(right)
        if rec.size == 0:
            continue
        # grid round: record r, direction k, step g at row (r * K + k) * G + g
        rows = np.repeat(rec, K * G)
        dirs = np.tile(np.repeat(np.arange(K), G), rec.size)
        steps = np.tile(grid, rec.size * K)
        flipped = np.asarray(predict(rays.move(Xc, rows, dirs, steps))) != tc[rows]
        flipped = flipped.reshape(rec.size * K, G)
        found = flipped.any(axis=1)
        first = np.argmax(flipped, axis=1)
        hi = grid[first]
        lo = np.where(first > 0, grid[np.maximum(first - 1, 0)], 0.0)
        ray_rec, ray_dir = np.repeat(rec, K), np.tile(np.arange(K), rec.size)
        active = np.flatnonzero(found)
        for _ in range(n_bisect):  # a loop over rounds; each round is one query
            if active.size == 0:
                break
            mid = 0.5 * (lo[active] + hi[active])
            wrong = (
                np.asarray(predict(rays.move(Xc, ray_rec[active], ray_dir[active], mid)))
                != tc[ray_rec[active]]
            )
            hi[active] = np.where(wrong, mid, hi[active])
            lo[active] = np.where(wrong, lo[active], mid)
        block = np.where(found, hi, np.inf).reshape(rec.size, K)
        out = np.zeros((sl.stop - sl.start, K))
        out[rec] = block
        distance[sl] = out
    return correct, distance
