"""The membership design of a shadow population: seeds and IN/OUT masks.

Which pool record trains which model, and the seed of each model, derived from one
integer so that a longer population extends a shorter one.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["draw_in_masks"]

_SEED_MASK = (1 << 31) - 1


def _base_entropy(random_state: Any) -> int:
    """A non-negative integer all seeds and masks derive from."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
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


def draw_in_masks(
    n_models: int, n_records: int, *, pkeep: float = 0.5, random_state: Any = None
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

    Returns
    -------
    ndarray of bool of shape (n_models, n_records)
    """
    return _draw_masks(_base_entropy(random_state), n_models, n_records, pkeep)


def _draw_masks(entropy: int, n_models: int, n_records: int, pkeep: float) -> np.ndarray:
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
