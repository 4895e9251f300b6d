"""Purchase-100 (Shokri et al. 2017) from its original distribution file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ._archive import find_or_fetch, shokri_mirrors
from ._common import shokri_bunch, shokri_labels
from ._npz_cache import cache_file_for, load_npz_cache, save_npz_cache, source_signature

__all__ = ["PURCHASE_URLS", "fetch_purchase100"]

PathLike = str | os.PathLike

PURCHASE_URLS = shokri_mirrors("dataset_purchase.tgz")
# the one file's paths relative to the data home, in search order
_LAYOUTS = [
    ("purchase100/dataset_purchase",),
    ("purchase100/dataset_purchase.csv",),
    ("purchase100/dataset_purchase.gz",),
    ("purchase100/dataset_purchase.csv.gz",),
]
_N_FEATURES = 600
_CHUNK = 20_000


def _parse(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Parse ``label,f1,...,f600`` lines into (uint8 features, int64 labels 0..99)."""
    X_parts, y_parts = [], []
    for chunk in pd.read_csv(path, header=None, chunksize=_CHUNK, dtype=np.int64):
        arr = chunk.to_numpy()
        if arr.shape[1] != _N_FEATURES + 1:
            raise ValueError(
                f"{path}: expected {_N_FEATURES + 1} columns (label + {_N_FEATURES} features), "
                f"got {arr.shape[1]}"
            )
        feats = arr[:, 1:]
        if feats.min() < 0 or feats.max() > 1:
            raise ValueError(f"{path}: features must be binary (0/1)")
        X_parts.append(feats.astype(np.uint8))
        y_parts.append(arr[:, 0])
    X = np.concatenate(X_parts) if X_parts else np.zeros((0, _N_FEATURES), np.uint8)
    y = np.concatenate(y_parts) if y_parts else np.zeros(0, np.int64)
    return X, shokri_labels(y, path)


def fetch_purchase100(
    data_home: PathLike | None = None,
    *,
    download: bool = False,
    return_X_y: bool = False,
) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Purchase-100: 197,324 shoppers x 600 binary product features, 100 classes.

    Reads the file distributed by Shokri et al. (``dataset_purchase`` inside
    ``dataset_purchase.tgz``): comma-separated lines, first value the class
    label 1..100, then 600 binary features.  Looked for as
    ``<home>/purchase100/dataset_purchase`` (also ``.csv``, ``.gz``,
    ``.csv.gz``).  After the first parse a compressed ``.npz`` cache is stored
    in the cache home (never in a read-only data home) and used while the
    source file is unchanged.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    download : bool, default=False
        If missing, download ``dataset_purchase.tgz`` (no published checksum)
        into the data home (cache home when read-only) and extract it.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``data``: ``numpy.uint8`` array (n, 600); ``target``: int64 labels
        0..99 (file labels minus one).

    Raises
    ------
    DataNotFoundError
        Naming every path looked for.
    """
    (path,) = find_or_fetch(
        _LAYOUTS,
        data_home=data_home,
        download=download,
        urls=PURCHASE_URLS,
        archive="purchase100/dataset_purchase.tgz",
        members={"dataset_purchase": "purchase100/dataset_purchase"},
        what="Purchase-100 (Shokri et al. 2017)",
        hint=(
            "Expected the original file 'dataset_purchase' from dataset_purchase.tgz "
            f"({PURCHASE_URLS[0]}): lines 'label,f1,...,f600', labels 1..100."
        ),
    )

    signature = source_signature(path)
    cache = cache_file_for(path, "purchase100", data_home)
    cached = load_npz_cache(cache, signature)
    if cached is not None:
        X, y = cached["X"], cached["y"]
        how = f"loaded from cache {cache}"
    else:
        X, y = _parse(path)
        written = save_npz_cache(cache, {"X": X, "y": y}, signature)
        how = "parsed" + (
            f" and cached to {cache}" if written else " (no writable cache directory)"
        )
    descr = (
        "Purchase-100\n============\n\n"
        "Source: Shokri et al. (2017), 'Membership Inference Attacks against Machine Learning "
        "Models'; Kaggle Acquire Valued Shoppers purchase histories clustered into 100 classes.\n"
        f"File read: {path}\nProcessing: {how}; labels shifted from 1..100 to 0..99.\n"
        "Status: exact (original distribution file).\n"
    )
    return shokri_bunch(X, y, descr, path, return_X_y)
