"""The membership game's draws: the split into members, non-members and public records
(by record, or by person with ``groups``), the seeds of its repeats, the subsample of a
data set, and the records' persons and slices as columns (docs: records, persons and
slices). Re-exported by :mod:`tabmia.experiment`, whose rounds play them.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from tabmia._columns import PERSON, SLICE_PREFIX
from tabmia.target import n_rows, take_rows

__all__ = [
    "MembershipSplit",
    "game_seeds",
    "record_meta",
    "slice_frame",
    "split_membership",
    "subsample",
    "subsample_persons",
]


@dataclass(frozen=True)
class MembershipSplit:
    """Row indices of one membership game.

    Attributes
    ----------
    train : ndarray
        Records the target trains on (all members).
    members : ndarray
        Members among the candidates (a subset of ``train``).
    nonmembers : ndarray
        Non-member candidates (never seen by the target, unknown to the attacker).
    public : ndarray
        The attacker's public records (never seen by the target).
    """

    train: np.ndarray
    members: np.ndarray
    nonmembers: np.ndarray
    public: np.ndarray


def _size(value: Any, total: int, name: str) -> int:
    if isinstance(value, (Integral, np.integer)) and not isinstance(value, bool):
        out = int(value)
    elif isinstance(value, (Real, np.floating)) and 0.0 < float(value) < 1.0:
        out = int(round(float(value) * total))
    else:
        raise ValueError(f"{name} must be an int >= 1 or a fraction in (0, 1), got {value!r}")
    if not 1 <= out <= total:
        raise ValueError(f"{name}={value!r} gives {out} records, outside [1, {total}]")
    return out


def split_membership(
    n_records: int,
    *,
    train_size: float | int = 0.5,
    public_size: float | int = 0.5,
    prior: float | None = None,
    random_state: Any = None,
    groups: Any = None,
) -> MembershipSplit:
    """Seeded split of ``n_records`` rows into target-train, candidates and public.

    Parameters
    ----------
    n_records : int
        Number of rows in the data set.
    train_size : float or int, default=0.5
        Target training set: a fraction of all rows, or a count.
    public_size : float or int, default=0.5
        Attacker's public records: a fraction of the rows left after training, or a
        count. The rest are the non-member candidates.
    prior : float, default=None
        Non-members per member among the candidates (``gamma``). ``None`` uses every
        training record as a candidate; otherwise members (or non-members) are
        subsampled to reach the ratio.
    random_state : int, RandomState instance or None
        Seed of the split.
    groups : array-like of shape (n_records,), default=None
        Person id of each record (scikit-learn's ``groups``). A person's records then
        all land on one side, as in ``GroupShuffleSplit``: all members or all
        non-members, all public or all candidates; the sizes and the prior count
        persons, not records.
    """
    rng = check_random_state(random_state)
    if groups is not None:
        return _split_persons(n_records, groups, rng, train_size, public_size, prior)
    perm = rng.permutation(n_records)
    n_train = _size(train_size, n_records, "train_size")
    rest = perm[n_train:]
    if rest.size < 2:
        raise ValueError("train_size leaves fewer than 2 records for candidates and public data")
    n_public = _size(public_size, rest.size, "public_size")
    if n_public >= rest.size:
        raise ValueError("public_size leaves no non-member candidates")
    train, public, nonmembers = perm[:n_train], rest[:n_public], rest[n_public:]
    members = train
    if prior is not None:
        if prior <= 0:
            raise ValueError(f"prior must be > 0, got {prior}")
        want_members = int(round(nonmembers.size / prior))
        if want_members <= members.size:
            members = members[: max(want_members, 1)]
        else:
            nonmembers = nonmembers[: max(int(round(members.size * prior)), 1)]
    return MembershipSplit(np.sort(train), np.sort(members), np.sort(nonmembers), np.sort(public))


def _split_persons(
    n_records: int,
    groups: Any,
    rng: np.random.RandomState,
    train_size: float | int,
    public_size: float | int,
    prior: float | None,
) -> MembershipSplit:
    """:func:`split_membership` over persons: the persons are split, each record follows."""
    from tabmia._groups import check_groups, person_codes

    codes = person_codes(check_groups(groups, n_records))
    n_persons = int(codes.max()) + 1 if codes.size else 0
    persons = split_membership(
        n_persons, train_size=train_size, public_size=public_size, prior=prior, random_state=rng
    )
    side = np.full(n_persons, -1, dtype=np.int8)
    for code, part in enumerate((persons.train, persons.members, persons.nonmembers)):
        side[part] = np.maximum(side[part], code)  # members are a subset of train
    side[persons.public] = 3
    of = side[codes]
    return MembershipSplit(
        np.flatnonzero((of == 0) | (of == 1)),
        np.flatnonzero(of == 1),
        np.flatnonzero(of == 2),
        np.flatnonzero(of == 3),
    )


def record_meta(rows: np.ndarray, groups: Any, slices: pd.DataFrame | None) -> dict[str, Any]:
    """The ``person`` and ``slice:<name>`` columns of the records at ``rows`` (none when
    neither is given)."""
    out: dict[str, Any] = {}
    if groups is not None:
        out[PERSON] = np.asarray(groups)[rows]
    if slices is not None:
        for name in slices.columns:
            out[SLICE_PREFIX + str(name)] = slices[name].iloc[rows].to_numpy()
    return out


def game_seeds(random_state: Any, n: int) -> list[int]:
    """The seeds of ``n`` repeats of the game, drawn from ``random_state``.

    Seed ``i`` plays the same split and target in :class:`MembershipExperiment`,
    ``tabmia audit --seeds`` and ``tabmia benchmark``; the first ``k`` seeds do not
    depend on ``n``.
    """
    rng = check_random_state(random_state)
    return [int(s) for s in rng.randint(np.iinfo(np.int32).max, size=n)]


def subsample(X: Any, y: np.ndarray, max_records: int | None, random_state: int) -> tuple[Any, Any]:
    """At most ``max_records`` records of ``(X, y)``, drawn (in their order) with
    ``random_state``; all of them when there are no more. ``tabmia audit --max-records``
    and ``tabmia benchmark`` draw the same ones."""
    n = n_rows(X)
    if max_records is None or n <= max_records:
        return X, y
    idx = np.sort(np.random.RandomState(random_state).choice(n, max_records, replace=False))
    return take_rows(X, idx), y[idx]


def subsample_persons(
    X: Any, y: np.ndarray, groups: np.ndarray, max_records: int | None, random_state: int
) -> tuple[Any, np.ndarray, np.ndarray]:
    """At most ``max_records`` records of whole persons, drawn with ``random_state``
    (persons in a random order, each taken while its records still fit): :func:`subsample`
    of a data set that carries person ids (``tabmia audit``, ``tabmia benchmark``)."""
    from tabmia._groups import check_groups, person_codes

    groups = check_groups(groups, n_rows(X))
    if max_records is None or n_rows(X) <= max_records:
        return X, y, groups
    codes = person_codes(groups)
    sizes = np.bincount(codes)
    order = np.random.RandomState(random_state).permutation(sizes.size)
    fits = np.cumsum(sizes[order]) <= max_records
    rows = np.flatnonzero(np.isin(codes, order[fits]))
    return take_rows(X, rows), y[rows], groups[rows]


def slice_frame(slices: Any, n_records: int) -> pd.DataFrame | None:
    """``slices`` as a frame of group labels, one row per record (None stays None).

    Raises
    ------
    ValueError
        For another number of rows, or missing (NaN) labels.
    """
    if slices is None:
        return None
    if isinstance(slices, pd.DataFrame):
        frame = slices.reset_index(drop=True)
    elif isinstance(slices, pd.Series):
        frame = slices.reset_index(drop=True).to_frame(name=str(slices.name or "slice"))
    else:
        arr = np.asarray(slices)
        frame = pd.DataFrame(arr if arr.ndim == 2 else {"slice": arr})
        frame.columns = [str(c) for c in frame.columns]
    if len(frame) != n_records:
        raise ValueError(f"slices has {len(frame)} rows for {n_records} records")
    missing = frame.isna().sum()
    if missing.any():
        name = str(missing.idxmax())
        raise ValueError(
            f"slice column {name!r} has {int(missing.max())} missing (NaN) labels: give "
            "every record its group (or a label such as 'unknown')"
        )
    return frame
