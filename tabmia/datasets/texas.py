"""Texas-100 (Shokri et al. 2017) from its original distribution files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils import Bunch

from ._archive import find_or_fetch, shokri_mirrors
from ._common import shokri_bunch, shokri_labels
from ._npz_cache import cache_file_for, load_npz_cache, save_npz_cache, source_signature

__all__ = ["TEXAS_URLS", "fetch_texas100"]

PathLike = str | os.PathLike

TEXAS_URLS = shokri_mirrors("dataset_texas.tgz")
# (features, labels) layouts relative to the data home, in search order.
_LAYOUTS = [
    ("texas100/feats", "texas100/labels"),
    ("texas100/feats.gz", "texas100/labels.gz"),
    ("texas100/texas/100/feats", "texas100/texas/100/labels"),
    ("texas100/texas/100/feats.gz", "texas100/texas/100/labels.gz"),
]
_CHUNK = 5_000


def _parse(feats: Path, labels: Path) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse comma-separated binary feature lines and one-int-per-line labels."""
    blocks = []
    n_cols = None
    for chunk in pd.read_csv(feats, header=None, chunksize=_CHUNK, dtype=np.float32):
        arr = chunk.to_numpy()
        if n_cols is None:
            n_cols = arr.shape[1]
        elif arr.shape[1] != n_cols:
            raise ValueError(f"{feats}: rows have different numbers of features")
        if np.isnan(arr).any() or not np.isin(arr, (0.0, 1.0)).all():
            raise ValueError(f"{feats}: features must be binary (0/1)")
        blocks.append(sp.csr_matrix(arr.astype(np.uint8)))
    X = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, 0), dtype=np.uint8)
    y = pd.read_csv(labels, header=None, dtype=np.int64).iloc[:, 0].to_numpy()
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{labels}: {y.shape[0]} labels for {X.shape[0]} feature rows")
    return X.astype(np.uint8), shokri_labels(y, labels)


def fetch_texas100(
    data_home: PathLike | None = None,
    *,
    download: bool = False,
    return_X_y: bool = False,
) -> Bunch | tuple[sp.csr_matrix, np.ndarray]:
    """Texas-100: 67,330 hospital discharge records x 6,169 binary features, 100 classes.

    Reads the files distributed by Shokri et al. (``texas/100/feats`` and
    ``texas/100/labels`` inside ``dataset_texas.tgz``): ``feats`` has one
    comma-separated line of 0/1 values per record, ``labels`` one integer
    1..100 per line.  Looked for as ``<home>/texas100/feats`` +
    ``<home>/texas100/labels``, or with the archive's ``texas/100/`` subfolder
    (``<home>/texas100/texas/100/feats``); ``.gz`` also accepted.  After the
    first parse a compressed CSR ``.npz`` cache is stored in the cache home
    (never in a read-only data home) and used while the sources are unchanged.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    download : bool, default=False
        If missing, download ``dataset_texas.tgz`` (no published checksum) into
        the data home (cache home when read-only) and extract the two files.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``data``: ``scipy.sparse.csr_matrix`` of uint8, shape (n, 6169);
        ``target``: int64 labels 0..99 (file labels minus one).

    Raises
    ------
    DataNotFoundError
        Naming every path looked for.
    """
    feats, labels = find_or_fetch(
        _LAYOUTS,
        data_home=data_home,
        download=download,
        urls=TEXAS_URLS,
        archive="texas100/dataset_texas.tgz",
        members={
            "texas/100/feats": "texas100/texas/100/feats",
            "texas/100/labels": "texas100/texas/100/labels",
        },
        what="Texas-100 (Shokri et al. 2017)",
        hint=(
            "Expected the original files texas/100/feats and texas/100/labels from "
            f"dataset_texas.tgz ({TEXAS_URLS[0]}), placed as texas100/feats and "
            "texas100/labels."
        ),
    )
    signature = source_signature(feats, labels)
    cache = cache_file_for(feats, "texas100", data_home)
    cached = load_npz_cache(cache, signature)
    if cached is not None:
        X = sp.csr_matrix(
            (cached["data"], cached["indices"], cached["indptr"]), shape=tuple(cached["shape"])
        )
        y = cached["y"]
        how = f"loaded from cache {cache}"
    else:
        X, y = _parse(feats, labels)
        arrays = {
            "data": X.data,
            "indices": X.indices,
            "indptr": X.indptr,
            "shape": np.asarray(X.shape, dtype=np.int64),
            "y": y,
        }
        written = save_npz_cache(cache, arrays, signature)
        how = "parsed" + (
            f" and cached to {cache}" if written else " (no writable cache directory)"
        )
    descr = (
        "Texas-100\n=========\n\n"
        "Source: Shokri et al. (2017), 'Membership Inference Attacks against Machine Learning "
        "Models'; Texas Department of State Health Services hospital discharge data, 100 most "
        "frequent procedures as classes.\n"
        f"Files read: {feats} and {labels}\nProcessing: {how}; labels "
        f"shifted from 1..100 to 0..99.\n"
        "Status: exact (original distribution files).\n"
    )
    return shokri_bunch(X, y, descr, feats, return_X_y, labels_path=labels)
