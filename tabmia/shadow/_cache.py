"""The on-disk cache of a shadow population: what identifies it, and its files.

A manifest describes the setup (estimator, pool fingerprint, seeds, ...); one ``.npz``
per model holds its statistics row (and a ``.joblib`` its fitted model when kept), so
an interrupted fit resumes and a larger ``n_models`` tops the cache up.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from tabmia._records import row_hashes
from tabmia.backends import execution_params

_FORMAT = "tabmia.ShadowPopulation/1"


def _describe(obj: Any) -> str:
    """A stable text description of an estimator's settings (no memory addresses).

    Parameters that change how a model is computed, not which model (device, threads,
    verbosity: :func:`tabmia.backends.execution_params`), are left out, so that a cache
    filled on a GPU machine serves a CPU one.
    """
    if hasattr(obj, "get_params") and not isinstance(obj, type):
        params = obj.get_params(deep=False)
        skip = execution_params()
        inner = ", ".join(f"{k}={_describe(v)}" for k, v in sorted(params.items()) if k not in skip)
        return f"{type(obj).__module__}.{type(obj).__qualname__}({inner})"
    if isinstance(obj, (list, tuple)):
        inner = ", ".join(_describe(v) for v in obj)
        return f"[{inner}]" if isinstance(obj, list) else f"({inner})"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in sorted(obj.items())) + "}"
    if isinstance(obj, np.ndarray):
        return f"array({obj.tolist()!r})"
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"{getattr(obj, '__module__', '')}.{obj.__qualname__}"
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(obj))


def _fingerprint(X: Any, y: np.ndarray) -> str:
    """SHA-256 of the pool's records and labels."""
    h = hashlib.sha256()
    if isinstance(X, pd.DataFrame):
        h.update(repr([str(c) for c in X.columns]).encode())
        h.update(repr([str(t) for t in X.dtypes]).encode())
        h.update(row_hashes(X).tobytes())
    elif sp.issparse(X):
        csr = sp.csr_matrix(X, copy=True)
        csr.sum_duplicates()
        csr.sort_indices()
        h.update(f"sparse{csr.shape}{csr.dtype}".encode())
        for part in (csr.data, csr.indices, csr.indptr):
            h.update(np.ascontiguousarray(part).tobytes())
    else:
        arr = np.asarray(X)
        h.update(f"{arr.shape}{arr.dtype}".encode())
        if arr.dtype.kind == "O":
            h.update(row_hashes(arr.reshape(arr.shape[0], -1)).tobytes())
        else:
            h.update(np.ascontiguousarray(arr).tobytes())
    h.update(pd.util.hash_pandas_object(pd.Series(y), index=False).to_numpy().tobytes())
    return h.hexdigest()


class _Cache:
    """Per-model result files plus a manifest under ``cache_dir``."""

    def __init__(self, path: Any) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.manifest_path = self.path / "manifest.json"

    def read_manifest(self) -> dict | None:
        if not self.manifest_path.exists():
            return None
        try:
            manifest = json.loads(self.manifest_path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(
                f"cache_dir {str(self.path)!r}: manifest.json cannot be read ({exc}); "
                "empty the folder or use another cache_dir"
            ) from exc
        if manifest.get("format") != _FORMAT:
            raise ValueError(
                f"cache_dir {str(self.path)!r} holds no tabmia shadow population of this "
                f"format (format {manifest.get('format')!r}, expected {_FORMAT!r})"
            )
        return manifest

    def check(self, cached: dict, current: dict, *, adopt_seed: bool) -> None:
        keys = [k for k in current if k != "format"]
        if adopt_seed:
            keys.remove("seed_entropy")
        diff = [k for k in keys if cached.get(k) != current[k]]
        if diff:
            detail = "; ".join(_describe_difference(k, cached.get(k), current[k]) for k in diff)
            raise ValueError(
                f"cache_dir {str(self.path)!r} holds a shadow population of another setup "
                f"({detail}). Refusing to mix them: use another cache_dir, or empty this one"
            )

    def write_manifest(self, manifest: dict) -> None:
        text = json.dumps(manifest, indent=1).encode()
        self._atomic(self.manifest_path, lambda fh: fh.write(text))

    def files(self, k: int) -> tuple[Path, Path]:
        return self.path / f"model_{k:05d}.npz", self.path / f"model_{k:05d}.joblib"

    def load(
        self, k: int, seed: int, mask_hash: str, n: int, need_model: bool
    ) -> tuple[np.ndarray, Any] | None:
        npz, model_file = self.files(k)
        if not npz.exists() or (need_model and not model_file.exists()):
            return None
        try:
            with np.load(npz, allow_pickle=False) as data:
                row = np.asarray(data["statistics"], dtype=np.float32)
                cached_seed = int(data["seed"])
                cached_hash = str(data["in_mask_sha"])
        except Exception as exc:  # noqa: BLE001 - a truncated file: train again
            warnings.warn(f"{npz} is unreadable ({exc}); training model {k} again", stacklevel=3)
            return None
        if cached_seed != seed or cached_hash != mask_hash or row.shape != (n,):
            raise ValueError(
                f"{npz} was written for another population (seed {cached_seed} vs {seed}, "
                f"in_mask {cached_hash} vs {mask_hash}, {row.shape[0]} vs {n} records): "
                "refusing to mix; empty the cache_dir"
            )
        model = None
        if need_model:
            import joblib

            try:
                model = joblib.load(model_file)
            except Exception as exc:  # noqa: BLE001
                warnings.warn(
                    f"{model_file} is unreadable ({exc}); training model {k} again", stacklevel=3
                )
                return None
        return row, model

    def save(self, k: int, seed: int, mask_hash: str, row: np.ndarray, model: Any) -> None:
        npz, model_file = self.files(k)
        if model is not None:
            import joblib

            self._atomic(model_file, lambda fh: joblib.dump(model, fh))
        self._atomic(
            npz,
            lambda fh: np.savez(
                fh, statistics=row, seed=np.int64(seed), in_mask_sha=np.str_(mask_hash)
            ),
        )

    @staticmethod
    def _atomic(path: Path, write: Any) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            write(fh)
        os.replace(tmp, path)


def _describe_difference(key: str, cached: Any, now: Any) -> str:
    """``key: cached ..., now ...`` showing where two long values start to differ."""
    a, b = repr(cached), repr(now)
    if len(a) > 100 or len(b) > 100:
        start = next((i for i, (u, v) in enumerate(zip(a, b)) if u != v), min(len(a), len(b)))
        lo = max(0, start - 40)
        a = ("..." if lo else "") + a[lo : start + 50] + ("..." if len(a) > start + 50 else "")
        b = ("..." if lo else "") + b[lo : start + 50] + ("..." if len(b) > start + 50 else "")
    return f"{key}: cached {a}, now {b}"
