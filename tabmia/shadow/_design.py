"""The membership design of a shadow population: seeds and IN/OUT masks.

Which pool record trains which model, and the seed of each model, derived from one
integer so that a longer population extends a shorter one. Identical records of a
pool (same features and label) are one record: they are drawn one mask, so a model
either trained on every copy or on none, and a record is OUT only for models that
saw no copy of it (as many models as a distinct record is OUT for).
"""

from __future__ import annotations

import hashlib
import math
import numbers
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pandas as pd

from tabmia._array import ravel_column
from tabmia.shadow.pool import record_keys
from tabmia.target import n_rows

__all__ = ["draw_in_masks", "draw_record_in_masks", "record_groups"]

_SEED_MASK = (1 << 31) - 1


def _base_entropy(random_state: Any) -> int:
    """A non-negative integer all seeds and masks derive from."""
    if random_state is None:
        # a SeedSequence made without entropy draws one int
        return int(cast(int, np.random.SeedSequence().entropy))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    raise ValueError(
        f"random_state must be None, an int, a RandomState or a Generator, got {random_state!r}"
    )


def _model_seeds(entropy: int, n_models: int) -> np.ndarray:
    """Seed of model ``k``: depends on ``(entropy, k)`` only, so a longer list extends a shorter."""
    return np.array(
        [
            int(np.random.SeedSequence(entropy, spawn_key=(0, k)).generate_state(1, np.uint32)[0])
            & _SEED_MASK
            for k in range(n_models)
        ],
        dtype=np.int64,
    )


def _pkeep_block(pkeep: float) -> tuple[int, int]:
    """``(n_in, block)``: ``pkeep = n_in / block`` in lowest terms (block <= 64)."""
    frac = Fraction(float(pkeep)).limit_denominator(64)
    if not 0 < frac < 1 or abs(float(frac) - float(pkeep)) > 1e-9:
        raise ValueError(
            f"pkeep must be a fraction in (0, 1) with a denominator of at most 64 "
            f"(0.5, 0.25, 1/3, ...), got {pkeep!r}"
        )
    return frac.numerator, frac.denominator


def record_groups(X: Any, y_idx: Any) -> np.ndarray:
    """Group code per record, shared by identical records (same features and label).

    Codes count from 0 in order of first appearance (from the records' content hashes,
    no pairwise comparison), so records that are all distinct get ``0, 1, ..., n - 1``
    and grouped masks equal ungrouped ones.

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame of shape (n, d)
        Records.
    y_idx : array-like of int of shape (n,)
        Their labels as class indices.

    Returns
    -------
    ndarray of int of shape (n,)
    """
    codes, _ = pd.factorize(record_keys(X, y_idx))
    return codes.astype(np.intp, copy=False)


def draw_in_masks(
    n_models: int,
    n_records: int,
    *,
    pkeep: float = 0.5,
    random_state: Any = None,
    groups: Any = None,
) -> np.ndarray:
    """Membership matrix: which record trains which model.

    Models come in blocks of ``b`` (``pkeep = a / b`` in lowest terms; ``b = 2`` for
    ``pkeep=0.5``). Within a block, every record is IN for a uniformly random ``a``
    of the ``b`` models (Carlini et al.'s scheme, applied per block), independently
    across records and blocks. So every record is IN for exactly ``pkeep *
    n_models`` models whenever ``n_models`` is a multiple of ``b`` (for
    ``pkeep=0.5``: the two models of a pair have complementary halves of the pool),
    and drawing more models keeps the earlier rows: block ``j`` depends only on the
    seed and ``j``. With ``n_models`` not a multiple of ``b``, the last block is cut
    and a record is IN for ``floor`` or ``ceil`` of ``pkeep * n_models`` models.

    Parameters
    ----------
    n_models, n_records : int
        Matrix shape.
    pkeep : float, default=0.5
        Share of the models each record trains.
    random_state : int, RandomState, Generator or None
        Seed.
    groups : array-like of int of shape (n_records,), default=None
        Group code per record (:func:`record_groups`): records of one group get one
        mask (a copy of a record is that record). None: every record its own group.

    Returns
    -------
    ndarray of bool of shape (n_models, n_records)
    """
    return _draw_masks(_base_entropy(random_state), n_models, n_records, pkeep, groups)


def _draw_masks(
    entropy: int, n_models: int, n_records: int, pkeep: float, groups: Any = None
) -> np.ndarray:
    if groups is not None:
        codes = np.asarray(groups)
        if codes.shape != (n_records,) or (codes.size and (codes.min() < 0)):
            raise ValueError(
                f"groups must hold one code >= 0 per record ({n_records}), got shape {codes.shape}"
            )
        n_groups = int(codes.max()) + 1 if codes.size else 0
        # one draw per group, column j of the draw being what record j gets when all
        # records are distinct (codes 0..n-1): grouping changes nothing there
        return _draw_masks(entropy, n_models, n_groups, pkeep)[:, codes]
    n_in, block = _pkeep_block(pkeep)
    masks = np.empty((n_models, n_records), dtype=bool)
    for b in range(math.ceil(n_models / block)):  # a loop over blocks of models
        rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(1, b)))
        # each column of the argsort is a uniform random permutation of the block
        order = np.argsort(rng.random((block, n_records)), axis=0)
        lo, hi = b * block, min((b + 1) * block, n_models)
        masks[lo:hi] = (order < n_in)[: hi - lo]
    return masks


def _mask_hash(mask: np.ndarray) -> str:
    return hashlib.sha256(np.packbits(mask).tobytes() + str(mask.size).encode()).hexdigest()[:24]


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64 whose output bits are well mixed."""
    with np.errstate(over="ignore"):
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def draw_record_in_masks(
    record_keys: np.ndarray, n_models: int, *, pkeep: float = 0.5, seed: int = 0
) -> np.ndarray:
    """IN masks for records outside a pool, drawn as :func:`draw_in_masks` draws a pool's.

    Each record gets, per block of models, a uniformly random ``a`` of the ``b`` models
    as "IN" (``pkeep = a / b``), exactly the distribution of a pool record's mask, but
    no model trained on it: the models its mask calls OUT are the ones that score it,
    so that it is scored by as many models, and models of the same kind, as a pool
    record is by the models that were OUT for it. The draw is a function of the
    record's key (its content hash) and ``seed``: the same record always gets the
    same mask, whatever else is scored with it, and the mask does not depend on
    whether the record is a member of anything.

    Parameters
    ----------
    record_keys : ndarray of uint64 of shape (n,)
        Content hashes of the records (:func:`tabmia.shadow.record_keys`).
    n_models : int
        Number of models in the population.
    pkeep : float, default=0.5
        The population's ``pkeep``.
    seed : int, default=0
        Seed of the draw.

    Returns
    -------
    ndarray of bool of shape (n_models, n)
    """
    n_in, block = _pkeep_block(pkeep)
    keys = np.asarray(record_keys, dtype=np.uint64)
    n_rows = math.ceil(n_models / block) * block
    with np.errstate(over="ignore"):
        base = _mix64(keys ^ _mix64(np.array([seed], dtype=np.uint64)))
        draws = _mix64(base[None, :] + _GOLDEN * np.arange(1, n_rows + 1, dtype=np.uint64)[:, None])
    masks = np.empty((n_rows, keys.size), dtype=bool)
    for lo in range(0, n_rows, block):  # a loop over blocks of models
        # each column of the argsort is a uniform random permutation of the block
        order = np.argsort(draws[lo : lo + block], axis=0)
        masks[lo : lo + block] = order < n_in
    return masks[:n_models]


def _check_pool(X: Any, y: Any) -> tuple[int, np.ndarray]:
    """The pool's size and its labels as one array, refused when they cannot train."""
    n = n_rows(X)
    y_arr = ravel_column(y)
    if y_arr.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y_arr.shape}")
    if y_arr.shape[0] != n:
        raise ValueError(f"X has {n} records but y has {y_arr.shape[0]} labels")
    if n < 2:
        raise ValueError(f"X has {n} records; a shadow population needs a pool")
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] == 0:  # sklearn's wording
        raise ValueError(
            f"Found array with 0 feature(s) (shape=({n}, 0)) while a minimum "
            "of 1 is required by ShadowPopulation."
        )
    return n, y_arr
