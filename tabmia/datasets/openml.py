"""Tasks of the tabular-benchmark suites (Grinsztajn et al. 2022) by OpenML task id.

Search order for :func:`fetch_openml_task`:

1. the benchmark's own CSV in the Hugging Face layout,
   ``<home>/tabular-benchmark/<clf_num|clf_cat>/<name>.csv[.gz]`` (last column
   is the label);
2. an openml-python cache under ``<home>/openml`` (copied to a temporary
   directory before use, read with network access blocked);
3. a download through openml-python into a writable cache directory (skipped
   when ``download=False``, when ``TABMIA_OFFLINE`` is set, or when
   openml.org is unreachable).

The exact benchmark files of all suite tasks in the shared data home load by
default, including 361057 (wine), 361064 (kdd_ipums_la_97-small) and 361067
(phoneme), whose HF-layout files have anonymous columns ``f0..fN``.  For those
three, ``analogue=True`` is a fallback for a data home without the exact file:
it rebuilds the benchmark version from the original data (see
:mod:`tabmia.datasets._analogues`); the exact file always wins when present.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
from sklearn.utils import Bunch

from ._analogues import ANALOGUE_BUILDERS, build_analogue
from ._common import encode_labels, make_bunch, to_categorical
from ._home import (
    ENV_OFFLINE,
    get_cache_home,
    get_data_home,
    get_download_home,
    missing_data_error,
    offline_mode,
)
from ._openml_cache import load_task_from_cache, load_task_online, openml_reachable
from ._suite import SUITE_TASKS, SuiteTask, hf_relpaths

__all__ = ["SUITE_TASKS", "fetch_openml_task", "list_suite_tasks"]

PathLike = str | os.PathLike

# Categorical columns of the clf_cat HF files, deduced by comparison with the clf_num
# version of the same data set (columns only in clf_cat) and, for compas, its 0/1 dummies.
_HF_CATEGORICAL = {
    ("clf_cat", "electricity"): ["day"],
    ("clf_cat", "eye_movements"): ["P1stFixation", "P2stFixation", "nextWordRegress"],
    ("clf_cat", "default-of-credit-card-clients"): ["x2"],
    ("clf_cat", "compas-two-years"): [
        "sex",
        "age_cat_25-45",
        "age_cat_Greaterthan45",
        "age_cat_Lessthan25",
        "race_African-American",
        "race_Caucasian",
        "c_charge_degree_F",
        "c_charge_degree_M",
    ],
}


def list_suite_tasks(suite: str | None = None) -> pd.DataFrame:
    """The task table as a DataFrame (optionally only ``"clf_num"`` or ``"clf_cat"``)."""
    rows = [t.__dict__ for t in SUITE_TASKS.values() if suite is None or t.suite == suite]
    return pd.DataFrame(rows).set_index("task_id").sort_index()


def _encode_target(y: pd.Series) -> tuple[pd.Series, list[str]]:
    if isinstance(y.dtype, pd.CategoricalDtype):
        y = y.astype(object)
    return encode_labels(y.reset_index(drop=True))


def _from_hf(path: Path, task: SuiteTask) -> tuple[pd.DataFrame, pd.Series, list[str]]:
    df = pd.read_csv(path)
    X = df.iloc[:, :-1].copy()
    y = df.iloc[:, -1]
    known = [c for c in _HF_CATEGORICAL.get((task.suite, task.name), []) if c in X.columns]
    other = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    categorical = known + other
    categorical = list(dict.fromkeys(categorical))
    to_categorical(X, categorical)
    return X, y, categorical


def fetch_openml_task(
    task_id: int,
    data_home: PathLike | None = None,
    *,
    analogue: bool = False,
    random_state: int | None = 0,
    download: bool = True,
    return_X_y: bool = False,
) -> Bunch | tuple[pd.DataFrame, pd.Series]:
    """Load an OpenML task of the tabular-benchmark suites (or any OpenML task by id).

    Parameters
    ----------
    task_id : int
        OpenML task id, e.g. 361070 (eye_movements).  Ids outside the suite
        table skip step 1 (no HF file name known).
    data_home : str or path-like, optional
        Data home (default: ``TABMIA_DATA`` or ``~/.cache/tabmia``).
    analogue : bool, default=False
        For 361057, 361064 and 361067: if the exact benchmark file is missing,
        rebuild an analogue from the original data (numerical features,
        binarised target, missing rows dropped, classes balanced by seeded
        undersampling).  Ignored for other tasks.
    random_state : int or None, default=0
        Seed of the undersampling used by ``analogue=True``.
    download : bool, default=True
        Allow step 3 (download through openml-python).  Never attempted when
        ``TABMIA_OFFLINE`` is set.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``data``: features DataFrame; ``target``: int64 Series of class codes
        (``target_names`` holds the original labels, sorted); ``DESCR`` says
        which source was used and whether the data is exact or an analogue;
        extra fields ``task_id`` and ``origin`` (``"hf"``, ``"openml-cache"``,
        ``"openml-download"`` or ``"analogue"``).

    Raises
    ------
    DataNotFoundError
        If no source works.  The message names the HF-layout paths and the
        cache folder looked for and, for the analogue tasks, mentions
        ``analogue=True``.
    """
    task_id = int(task_id)
    home = get_data_home(data_home)
    task = SUITE_TASKS.get(task_id)
    looked: list[Path] = []
    notes: list[str] = []
    title = f"OpenML task {task_id}" + (f" ({task.suite}/{task.name})" if task else "")

    # 1. the benchmark's own file (HF layout)
    if task is not None:
        for rel in hf_relpaths(task):
            cand = home / rel
            looked.append(cand)
            if cand.is_file():
                X, y_raw, categorical = _from_hf(cand, task)
                y, names = _encode_target(y_raw)
                descr = (
                    f"{title}\n\nSource: tabular-benchmark (Grinsztajn et al. 2022), Hugging Face "
                    f"inria-soda/tabular-benchmark file {task.suite}/{task.name}.csv"
                    f" (OpenML data set {task.dataset_id}).\nFile read: {cand}\n"
                    "Processing: none (last column is the label; labels "
                    "encoded 0..k-1 in sorted order).\n"
                    f"Status: exact benchmark version. Task-id mapping: {task.status}.\n"
                )
                return _result(X, y, categorical, names, descr, cand, return_X_y, task_id, "hf")

    # 2. a local openml cache (copied before use, no network)
    cache_root = home / "openml"
    looked.append(cache_root / "org" / "openml" / "www" / "tasks" / str(task_id) / "task.xml")
    if cache_root.is_dir():
        loaded = load_task_from_cache(cache_root, task_id, work_dir=get_cache_home(data_home))
        if loaded is not None:
            return _from_openml(
                loaded, title, cache_root, "openml-cache", return_X_y, task_id, task
            )
        notes.append(f"The OpenML cache {cache_root} lacks task {task_id} or its data set.")

    # analogue (before the network: the caller asked for it explicitly)
    if analogue and task_id in ANALOGUE_BUILDERS:
        X, y, names, src, how = build_analogue(task_id, data_home, random_state)
        descr = (
            f"{title}\n\nSource: original data of the benchmark task, file {src}.\n"
            f"Processing: {how}.\n"
            "Status: ANALOGUE - rebuilt the way the benchmark was built; same shape and class "
            "balance as the benchmark, not its exact rows. Not the exact benchmark file.\n"
        )
        return _result(X, y, [], names, descr, src, return_X_y, task_id, "analogue")

    # 3. download through openml
    if not download:
        notes.append("Download not attempted (download=False).")
    elif offline_mode():
        notes.append(f"Download through openml not attempted: {ENV_OFFLINE} is set.")
    else:
        dl_home = get_download_home(data_home)
        if dl_home is None:
            notes.append("Download through openml not possible: no writable cache directory.")
        elif not openml_reachable():
            notes.append("Download through openml not possible: www.openml.org is unreachable.")
        else:
            try:
                loaded = load_task_online(dl_home / "openml", task_id)
            except Exception as exc:  # noqa: BLE001 - openml raises many exception types
                notes.append(f"Download through openml failed: {type(exc).__name__}: {exc}")
            else:
                return _from_openml(
                    loaded, title, dl_home / "openml", "openml-download", return_X_y, task_id, task
                )

    if task_id in ANALOGUE_BUILDERS:
        notes.append(
            "The exact benchmark file is not available for this task; pass analogue=True to "
            "rebuild an analogue from the original data (numeric features, binarised target, "
            "balanced by seeded undersampling)."
        )
    hint = (
        "Put the benchmark CSV (Hugging Face "
        "inria-soda/tabular-benchmark layout) at the first path, "
        f"or an openml-python cache under {cache_root}."
    )
    raise missing_data_error(
        looked, what=title, data_home=home, hint=hint, download_note="\n".join(notes)
    )


def _from_openml(
    loaded: tuple[pd.DataFrame, pd.Series, list[bool], int, str],
    title: str,
    root: Path,
    origin: str,
    return_X_y: bool,
    task_id: int,
    task: SuiteTask | None,
) -> Bunch | tuple[pd.DataFrame, pd.Series]:
    X, y_raw, indicator, did, dname = loaded
    X = X.reset_index(drop=True)
    categorical = [c for c, is_cat in zip(X.columns, indicator, strict=True) if is_cat]
    to_categorical(X, categorical)
    y, names = _encode_target(y_raw)
    where = (
        "local openml cache (read from a temporary copy)"
        if origin == "openml-cache"
        else "openml download"
    )
    descr = (
        f"{title}\n\nSource: OpenML task {task_id}, data set {did} "
        f"({dname}), via {where} at {root}.\n"
        "Processing: labels encoded 0..k-1 in sorted order; "
        "categorical features as category dtype.\n"
        "Status: exact OpenML version"
        + (f"; task-id mapping {task.status}" if task is not None else "")
        + ".\n"
    )
    return _result(X, y, categorical, names, descr, root, return_X_y, task_id, origin)


def _result(
    X: pd.DataFrame,
    y: pd.Series,
    categorical: list[str],
    names: list[str],
    descr: str,
    source: Path,
    return_X_y: bool,
    task_id: int,
    origin: str,
) -> Bunch | tuple[pd.DataFrame, pd.Series]:
    return make_bunch(
        X.reset_index(drop=True),
        y.reset_index(drop=True),
        feature_names=[str(c) for c in X.columns],
        categorical_features=categorical,
        target_names=names,
        descr=descr,
        source_path=source,
        return_X_y=return_X_y,
        task_id=task_id,
        origin=origin,
    )
