"""Compressed ``.npz`` caches of parsed text files, validated against their source.

A cache records the size and modification time of the source file(s); it is
used only while they match.  Caches live in the cache home
(:func:`tabmia.datasets._home.get_cache_home`) -- never in a read-only data
home -- under ``<cache home>/<kind>/<source name>-<hash of source path>.npz``.
When no writable cache home exists, nothing is written.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ._home import get_cache_home, is_writable_dir

__all__ = ["cache_file_for", "load_npz_cache", "save_npz_cache", "source_signature"]


def source_signature(*paths: Path) -> np.ndarray:
    """``[size, mtime_ns]`` of each source file, as an int64 array."""
    sig = []
    for p in paths:
        st = Path(p).stat()
        sig += [st.st_size, st.st_mtime_ns]
    return np.asarray(sig, dtype=np.int64)


def cache_file_for(
    source: Path, kind: str, data_home: str | os.PathLike | None = None
) -> Path | None:
    """Where the cache of ``source`` goes, or ``None`` if there is no writable cache home."""
    home = get_cache_home(data_home)
    if home is None:
        return None
    key = hashlib.sha1(str(Path(source).absolute()).encode("utf8")).hexdigest()[:12]
    return home / kind / f"{Path(source).name}-{key}.npz"


def load_npz_cache(cache: Path | None, signature: np.ndarray) -> dict[str, np.ndarray] | None:
    """Arrays of a valid cache (same source signature), else ``None``."""
    if cache is None or not cache.is_file():
        return None
    try:
        with np.load(cache, allow_pickle=False) as npz:
            if "_signature" not in npz.files or not np.array_equal(npz["_signature"], signature):
                return None
            return {k: npz[k] for k in npz.files if k != "_signature"}
    except (OSError, ValueError, KeyError):
        return None


def save_npz_cache(cache: Path | None, arrays: dict[str, Any], signature: np.ndarray) -> bool:
    """Write ``arrays`` atomically to ``cache`` (``np.savez_compressed``); never raises.

    Returns
    -------
    bool
        Whether the cache was written.
    """
    if cache is None or not is_writable_dir(cache.parent):
        return False
    tmp: Path | None = None
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.name}.", suffix=".part")
        tmp = Path(name)
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, _signature=signature, **arrays)
        os.replace(tmp, cache)
        return True
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        warnings.warn(f"could not write cache {cache}: {exc}", RuntimeWarning, stacklevel=2)
        return False
