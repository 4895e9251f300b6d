"""A memory budget for scoring many records: how it is written, and how many rows fit in it.

``max_memory`` (the attacks' parameter, ``tabmia audit --max-memory``) is the working
memory that scoring candidates may hold at once, beyond the records themselves: the
models' statistics on a chunk of candidates, their masks and moments, and each worker's
copy of its chunk. It is written as a number of bytes, a size with a unit (``"8GB"``,
``"512 MiB"``, ``"1.5g"``) or a share of this machine's memory (``"25%"``); None means
256 MiB per core, at least 2 GiB and at most half of this machine's memory
(:func:`resolve_max_memory`).

Where the budget has a floor: a budget below 1 MiB (:data:`_MIN_BYTES`) is refused
when it is parsed, before any training. Above it, a chunk of records is never smaller
than one batch of the models' own (up to 65,536 records, so that chunking leaves the
models' inputs as they were): where that batch needs more than the budget, which
depends on the models, the records' columns and the jobs and is known only when they
are scored, scoring holds what the batch needs and says so once
(:func:`warn_over_budget`, a :class:`~tabmia.exceptions.MemoryBudgetWarning`).
"""

from __future__ import annotations

import math
import os
import re
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils import gen_batches

from tabmia._rows import n_rows, take_rows
from tabmia.exceptions import MemoryBudgetWarning

__all__ = [
    "chunk_bounds",
    "parse_memory",
    "record_bytes",
    "release_freed_memory",
    "resolve_max_memory",
    "total_memory",
    "warn_over_budget",
]

# decimal and binary units alike, the way people write them ("8GB", "8G", "8GiB")
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_PATTERN = re.compile(
    r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE
)
_SHARE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
#: The default budget: this much per core, never below the floor (nor above half of
#: this machine's memory).
_DEFAULT_PER_CORE = 2**28
_DEFAULT_FLOOR = 2**31
#: The least budget taken (1 MiB); a smaller one is refused. Below it, per-call overheads
#: dominate any chunk, and one batch of the models' records (65,536 records with up to
#: 128 classes) needs more as soon as a record and its scores take 16 bytes.
_MIN_BYTES = 2**20
#: Chunks per parallel job when the models score in worker processes (a joblib back end
#: chosen; on threads the work is cut by :func:`tabmia.shadow._scoring.thread_shares`),
#: when the records allow that many whole batches: two, so
#: that a job slowed by other work holds the others up by half its share, while the
#: models, sent with every chunk, travel only twice per job (8 HGB models: 1.8 MB, 0.09 s
#: of pickling per chunk, a tenth of the chunk's scoring). Three shrinking waves of one
#: chunk per job (half, three tenths, a fifth of the rows) were measured no faster
#: (benchmarks/reference_scoring.py, 2026-11-25: LiRA 1.73x, RMIA 1.70x against 1.75x, 1.72x).
_CHUNKS_PER_JOB = 2
#: Records sampled to estimate one record's size in a DataFrame with object columns.
_SAMPLE_ROWS = 1000


def total_memory() -> int:
    """Bytes of physical memory on this machine."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        import psutil

        return int(psutil.virtual_memory().total)


def release_freed_memory() -> None:
    """Hand memory that this process has freed but its allocators keep back to the system.

    Arrow's pool (pandas' string columns, parquet reading) keeps the pages of freed
    buffers for its next allocation, and glibc's ``malloc`` keeps large freed blocks in
    its heap once its mmap threshold has grown; neither is reused by the other, so a
    ten-million-record audit held gigabytes it no longer used. Called between the phases
    of an audit and at the end of a worker's task; it does not change any result.
    """
    import sys

    pyarrow = sys.modules.get("pyarrow")  # only where something has used it
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # another C library (musl): nothing to trim
            pass


def parse_memory(value: Any, name: str = "max_memory", *, least: int | None = None) -> int:
    """Bytes from a memory size: an int of bytes, ``"8GB"``, ``"512MiB"`` or ``"25%"``.

    Parameters
    ----------
    value : int, float or str
        Bytes (a number), a size with a unit k / m / g / t (powers of 1024, with or
        without ``B`` / ``iB``), or a percentage of this machine's memory.
    name : str, default="max_memory"
        What the value is called in error messages ("": the value alone).
    least : int, default=None
        The least number of bytes taken: by default 1 MiB (``_MIN_BYTES``), the floor
        of a budget the user gives; 1 for a share of one that was already checked
        (half of it for one step of the scoring).

    Returns
    -------
    int
        Bytes, at least ``least``.

    Raises
    ------
    ValueError
        When ``value`` is none of these, not positive, below ``least`` (by default the
        least budget, 1 MiB) or more than this machine's memory.
    """
    what = f"{name}={value!r}" if name else repr(value)
    if isinstance(value, bool):
        raise ValueError(
            f"{name or 'a memory size'} must be a size such as '8GB' or '25%', got {value!r}"
        )
    if isinstance(value, (Integral, Real)):
        size = float(value)
    elif isinstance(value, str):
        share = _SHARE.match(value)
        match = _PATTERN.match(value)
        if share is not None:
            pct = float(share.group(1))
            if not 0 < pct <= 100:
                raise ValueError(
                    f"{what}: a share of the machine's memory must be above 0% and at most 100%"
                )
            size = total_memory() * pct / 100.0
        elif match is not None:
            size = float(match.group(1)) * _UNITS[match.group(2).lower()]
        else:
            raise ValueError(
                f"{what} is not a memory size: write bytes (1000000000), a size "
                "with a unit ('8GB', '512MB', '1.5G') or a share of this machine's memory "
                "('25%')"
            )
    else:
        raise ValueError(
            f"{name or 'a memory size'} must be a size such as '8GB' or '25%', "
            f"got {type(value).__name__} {value!r}"
        )
    if not math.isfinite(size) or size <= 0:
        raise ValueError(f"{what} must be a positive memory size")
    if size > total_memory():
        raise ValueError(
            f"{what} is more than this machine's memory ({total_memory() / 2**30:.1f} GiB)"
        )
    floor = _MIN_BYTES if least is None else max(1, int(least))
    if size < floor:
        # a budget that scoring could not keep: refused rather than silently exceeded
        raise ValueError(
            f"{what} is below the least memory budget, {_size_text(floor)} "
            f"({floor} bytes): records are scored in chunks of at least one batch "
            "of the models' own (up to 65,536 records), which takes more on almost any "
            "data; give at least 1MB"
        )
    return max(1, int(size))


def resolve_max_memory(value: Any, *, least: int | None = None) -> int:
    """The budget in bytes: ``value`` parsed (at least ``least``, by default 1 MiB:
    :func:`parse_memory`), or the default for None.

    The default is 256 MiB per core, at least 2 GiB and at most half of this machine's
    memory. It bounds the working memory of scoring only; the records, the models and
    their training hold the rest, which a ten-million-record audit needs (half of a
    24 GB machine's memory as the budget, LiRA's scoring there peaked 5.2 GB above the
    loss attack's). The scores do not depend on the chunks.
    """
    if value is None:
        cores = os.cpu_count() or 1
        return min(total_memory() // 2, max(_DEFAULT_FLOOR, cores * _DEFAULT_PER_CORE))
    return parse_memory(value, least=least)


def record_bytes(X: Any) -> int:
    """Bytes one record of ``X`` takes in memory (at least 8).

    Numeric columns count their item size; strings and other Python objects are
    measured on a sample of records (pandas' deep memory usage).
    """
    n = n_rows(X)
    if isinstance(X, pd.DataFrame):
        sample = take_rows(X, slice(0, min(n, _SAMPLE_ROWS)))
        used = float(sample.memory_usage(index=False, deep=True).sum())
        return max(8, int(math.ceil(used / max(n_rows(sample), 1))))
    if sp.issparse(X):
        return max(8, int(math.ceil((X.data.nbytes + X.indices.nbytes) / max(n, 1))))
    arr = np.asarray(X) if not isinstance(X, np.ndarray) else X
    if arr.dtype == object:
        sample = pd.DataFrame(arr[: min(n, _SAMPLE_ROWS)].reshape(min(n, _SAMPLE_ROWS), -1))
        used = float(sample.memory_usage(index=False, deep=True).sum())
        return max(8, int(math.ceil(used / max(n_rows(sample), 1))))
    per_row = arr.itemsize * (int(np.prod(arr.shape[1:])) if arr.ndim > 1 else 1)
    return max(8, per_row)


def chunk_bounds(
    n: int, row_bytes: int, budget: int, *, parts: int = 1, multiple: int = 1
) -> list[slice]:
    """Consecutive slices of ``n`` rows, each small enough for ``budget`` bytes.

    Parameters
    ----------
    n : int
        Rows to cover.
    row_bytes : int
        Bytes one row needs while it is worked on.
    budget : int
        Bytes that all the chunks worked on at once may hold.
    parts : int, default=1
        Chunks worked on at once (parallel jobs): each gets ``budget / parts``, and
        there are up to two chunks per job when ``n`` allows ``multiple`` rows each.
    multiple : int, default=1
        Chunk sizes are rounded down to a multiple of this (a model's own batch, so
        that chunking leaves its batches as they were), never below it.

    Returns
    -------
    list of slice
    """
    if n <= 0:
        return []
    parts = max(1, int(parts))
    multiple = max(1, int(multiple))
    fit = max(1, budget // max(1, parts * int(row_bytes)))
    rows = max(multiple, fit // multiple * multiple)
    if parts > 1:
        # a few chunks per job, of whole batches (_CHUNKS_PER_JOB)
        share = -(-n // (_CHUNKS_PER_JOB * parts))
        rows = min(rows, -(-share // multiple) * multiple)
    return list(gen_batches(n, rows))


def warn_over_budget(
    n: int,
    row_bytes: int,
    budget: int,
    *,
    parts: int = 1,
    multiple: int = 1,
    at_once: int | None = None,
    what: str = "scoring",
) -> int:
    """Say once when the chunks of :func:`chunk_bounds` hold more than ``budget``.

    A chunk is never smaller than ``multiple`` rows (one batch of the models' own), so
    a budget below what one batch per part needs is exceeded: a
    :class:`~tabmia.exceptions.MemoryBudgetWarning` names the memory held. The message
    depends on the rows only where fewer than one batch are scored, so that the calls
    of one audit say it once.

    Parameters
    ----------
    n, row_bytes, budget, parts, multiple
        As for :func:`chunk_bounds`.
    at_once : int, default=None
        Chunks worked on at once; by default one per part, at most one per chunk
        (threads that share the models of one chunk work on ``parts`` pieces at once).
    what : str, default="scoring"
        What holds the memory, in the message.

    Returns
    -------
    int
        Bytes the chunks worked on at once hold.
    """
    chunks = chunk_bounds(n, row_bytes, budget, parts=parts, multiple=multiple)
    if not chunks:
        return 0
    rows = max(c.stop - c.start for c in chunks)
    if at_once is None:
        at_once = min(max(1, int(parts)), len(chunks))
    used = at_once * rows * int(row_bytes)
    if used > budget:
        jobs = f" on each of {at_once} jobs" if at_once > 1 else ""
        warnings.warn(
            f"max_memory: {what} holds {_size_text(used)} at once ({rows} records of "
            f"{int(row_bytes)} bytes{jobs}), above the {_size_text(budget)} the memory "
            "budget gives it: a chunk of records is never smaller than one batch of the "
            f"models' own ({int(multiple)} records, or all of them where fewer). The "
            "scores are the same; raise max_memory (--max-memory) to stay within it",
            MemoryBudgetWarning,
            stacklevel=3,
        )
    return used


def _size_text(n_bytes: float) -> str:
    """Bytes for a message: ``"26.0 MiB"``, ``"1 MiB"``, ``"512 bytes"``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= size:
            return f"{n_bytes / size:.3g} {unit}"
    return f"{int(n_bytes)} bytes"
