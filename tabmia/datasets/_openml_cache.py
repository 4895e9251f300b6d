"""Read an OpenML task from a local openml-python cache, or download it.

openml-python deletes a task's or data set's cache folder when anything goes
wrong while reading it, and renames files in place; a shared (possibly
read-only) cache must therefore never be handed to it directly.  The folders
of the requested task and its data set are copied into a temporary directory
first, and openml is pointed at that copy with every network entry point
blocked, so reading a cache never touches the network.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = [
    "OfflineBlockedError",
    "find_cache_server_dir",
    "load_task_from_cache",
    "load_task_online",
    "openml_reachable",
]

_SERVER_SUBDIR = Path("org") / "openml" / "www"


class OfflineBlockedError(FileNotFoundError):
    """Raised by the patched openml network functions while reading a cache."""


def find_cache_server_dir(cache_root: Path) -> Path | None:
    """Locate the per-server cache folder (the one holding ``tasks/`` and ``datasets/``).

    Accepts an openml *root* cache directory (``<root>/org/openml/www/...``) or
    the server folder itself.
    """
    for cand in (cache_root / _SERVER_SUBDIR, cache_root):
        if (cand / "tasks").is_dir() or (cand / "datasets").is_dir():
            return cand
    return None


def _dataset_id_from_task_xml(task_xml: Path) -> int | None:
    text = task_xml.read_text(encoding="utf8", errors="replace")
    m = re.search(r"<oml:data_set_id>\s*(\d+)\s*</oml:data_set_id>", text)
    return int(m.group(1)) if m else None


@contextlib.contextmanager
def _openml_config(root: Path, *, offline: bool) -> Iterator[Any]:
    """Point openml at ``root`` (and optionally block its network calls); restore afterwards."""
    import openml
    from openml import _api_calls

    cfg = openml.config
    old_root = cfg.get_config_as_dict()["cachedir"]
    old_retries = cfg.connection_n_retries
    patched: list[tuple[Any, str, Any]] = []

    def _blocked(*args: Any, **kwargs: Any) -> Any:
        raise OfflineBlockedError("network access blocked while reading a local OpenML cache")

    try:
        cfg.set_root_cache_directory(str(root))
        cfg.connection_n_retries = 1
        if offline:
            for name in ("_send_request", "_download_minio_file", "_download_minio_bucket"):
                if hasattr(_api_calls, name):
                    patched.append((_api_calls, name, getattr(_api_calls, name)))
                    setattr(_api_calls, name, _blocked)
        yield openml
    finally:
        for mod, name, orig in patched:
            setattr(mod, name, orig)
        cfg.set_root_cache_directory(str(old_root))
        cfg.connection_n_retries = old_retries


def _read_task(openml: Any, task_id: int) -> tuple[pd.DataFrame, pd.Series, list[bool], int, str]:
    task = openml.tasks.get_task(
        task_id,
        download_splits=False,
        download_data=True,
        download_qualities=False,
        download_features_meta_data=True,
    )
    ds = openml.datasets.get_dataset(
        task.dataset_id,
        download_data=True,
        download_qualities=False,
        download_features_meta_data=True,
    )
    X, y, categorical, _names = ds.get_data(target=task.target_name)
    return X, pd.Series(y, name=task.target_name), list(categorical), int(task.dataset_id), ds.name


def load_task_from_cache(
    cache_root: Path, task_id: int, work_dir: Path | None = None
) -> tuple[pd.DataFrame, pd.Series, list[bool], int, str] | None:
    """Load ``task_id`` from a local openml cache without network access.

    Parameters
    ----------
    cache_root : pathlib.Path
        openml root cache directory (or its server folder); never modified.
    task_id : int
        OpenML task id.
    work_dir : pathlib.Path, optional
        Writable directory for the temporary copy (default: system temp).

    Returns
    -------
    tuple or None
        ``(X, y, categorical_indicator, dataset_id, dataset_name)``, or ``None``
        when the cache lacks the task or its data set (or they are unreadable).
    """
    server = find_cache_server_dir(cache_root)
    if server is None:
        return None
    task_dir = server / "tasks" / str(task_id)
    if not (task_dir / "task.xml").is_file():
        return None
    did = _dataset_id_from_task_xml(task_dir / "task.xml")
    if did is None or not (server / "datasets" / str(did)).is_dir():
        return None
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tabmia-openml-", dir=work_dir) as tmp:
        copy_server = Path(tmp) / _SERVER_SUBDIR
        shutil.copytree(task_dir, copy_server / "tasks" / str(task_id))
        shutil.copytree(server / "datasets" / str(did), copy_server / "datasets" / str(did))
        for sub in (copy_server, *copy_server.rglob("*")):
            if sub.is_dir():
                os.chmod(sub, 0o755)
            else:
                os.chmod(sub, 0o644)
        try:
            with _openml_config(Path(tmp), offline=True) as openml:
                return _read_task(openml, task_id)
        except Exception:  # noqa: BLE001 - incomplete/corrupt cache or a blocked download -> not usable
            return None


def openml_reachable(host: str = "www.openml.org", timeout: float = 3.0) -> bool:
    """Quick TCP probe of the OpenML server (port 443)."""
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def load_task_online(
    cache_root: Path, task_id: int
) -> tuple[pd.DataFrame, pd.Series, list[bool], int, str]:
    """Download ``task_id`` with openml into the writable cache ``cache_root``.

    Raises whatever openml raises on failure.
    """
    cache_root.mkdir(parents=True, exist_ok=True)
    with _openml_config(cache_root, offline=False) as openml:
        return _read_task(openml, task_id)
