"""Loading and checking what ``tabmia audit`` is given, before anything runs.

Every problem becomes a :class:`UsageError` naming the flag and the file; the command
prints it as one ``tabmia: error:`` line and exits with status 2.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmia.target import plain

#: Share of the population that may repeat training records before the audit is
#: refused as given the wrong file (the training file again, a superset of it).
MAX_SHARED_FRACTION = 0.5
#: Suffixes of data files, refused where a model file is expected.
_DATA_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq", ".json", ".xlsx", ".gz")


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# ------------------------------------------------------------------ tables
def read_table(path: Path, flag: str, *, encoding: str = "utf-8", sep: str | None = None) -> Any:
    """A CSV (``sep``, ``encoding``) or parquet file as a DataFrame, with unique columns."""
    if not path.is_file():
        raise UsageError(f"{flag} {path}: {'a folder' if path.is_dir() else 'no such file'}")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        else:
            sep = "," if sep is None else sep
            header = pd.read_csv(path, header=None, nrows=1, sep=sep, encoding=encoding)
            names = [str(v) for v in header.iloc[0]] if len(header) else []
            dups = sorted({n for n in names if names.count(n) > 1})
            if dups:
                raise UsageError(f"{flag} {path}: duplicate column names {dups[:10]}")
            df = pd.read_csv(path, sep=sep, encoding=encoding)
    except UsageError:
        raise
    except ImportError as exc:
        raise UsageError(f"{flag} {path}: reading parquet needs pyarrow (pip install pyarrow)") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{flag} {path}: not {encoding} text (byte {exc.object[exc.start:exc.start + 1]!r} "
            f"at offset {exc.start}); pass --encoding, e.g. --encoding latin-1"
        ) from exc
    except LookupError as exc:
        raise UsageError(f"--encoding {encoding}: {first_line(exc)}") from exc
    except Exception as exc:  # noqa: BLE001 - any parse error is the user's file
        raise UsageError(f"{flag} {path}: cannot read: {first_line(exc)}") from exc
    dups = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
    if dups:
        raise UsageError(f"{flag} {path}: duplicate column names {dups[:10]}")
    if df.empty:
        raise UsageError(f"{flag} {path}: no records")
    return df


def split_label(df: Any, label: str, flag: str) -> tuple[Any, Any]:
    """Features and label column; refuses a missing column or missing labels."""
    if label not in df.columns:
        raise UsageError(
            f"{flag}: label column {label!r} not found (columns: {plain(df.columns[:12])})"
        )
    y = df[label]
    missing = y.isna().to_numpy()
    if missing.any():
        rows = plain(np.flatnonzero(missing)[:5])
        raise UsageError(
            f"{flag}: label column {label!r} is empty in {int(missing.sum())} row(s) "
            f"(rows {rows}{' ...' if missing.sum() > 5 else ''})"
        )
    return df.drop(columns=[label]), y.to_numpy()


# ------------------------------------------------------------------ models
def load_model(path: Path, trust_types: bool, flag: str = "--model-file") -> Any:
    """A fitted model from a joblib / pickle or ``.skops`` file."""
    if path.is_dir():
        raise UsageError(f"{flag} {path}: a folder, not a model file")
    if not path.is_file():
        raise UsageError(f"{flag} {path}: no such file")
    suffixes = "".join(path.suffixes).lower()
    if path.suffix.lower() in _DATA_SUFFIXES or suffixes.endswith((".csv.gz", ".tsv.gz")):
        raise UsageError(
            f"{flag} {path}: a data file, not a model: give the fitted model saved with "
            "joblib.dump / pickle.dump (.joblib, .pkl) or skops (.skops)"
        )
    if path.suffix.lower() == ".skops":
        try:
            import skops.io as sio
        except ImportError as exc:
            raise UsageError(f"{flag}: .skops files need skops (pip install skops)") from exc
        try:
            untrusted = sio.get_untrusted_types(file=path)
            if untrusted and not trust_types:
                raise UsageError(
                    f"{flag} {path}: it contains types skops does not trust by default "
                    f"({', '.join(untrusted[:5])}{' ...' if len(untrusted) > 5 else ''}); "
                    "check them and pass --trust-types"
                )
            return sio.load(path, trusted=untrusted)
        except UsageError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise UsageError(f"{flag} {path}: not a readable .skops file ({first_line(exc)})") from exc
    warnings.warn(
        f"loading {path} runs any code the file contains (pickle/joblib): only audit files "
        "you trust", UserWarning, stacklevel=3,
    )
    import joblib

    try:
        return joblib.load(path)
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"{flag} {path}: the model needs the package {exc.name!r}, not installed here"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - garbage, truncated or foreign files
        raise UsageError(
            f"{flag} {path}: not a joblib or pickle file of a model "
            f"({type(exc).__name__}: {first_line(exc)})"
        ) from exc


# ----------------------------------------------------------------- outputs
def check_out_folder(out: Path) -> None:
    """Refuse an ``--out`` that cannot be created or written, leaving nothing behind."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    probe = out
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"--out {out}: {probe} is a file, not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(dir=probe, prefix=".tabmia-probe-"))
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write in {probe} ({exc.strerror})") from exc


# ------------------------------------------------------------------- checks
def check_count(value: Any, flag: str, minimum: int = 1) -> None:
    """Refuse a count flag below ``minimum``."""
    if value is not None and value < minimum:
        raise UsageError(f"{flag} must be >= {minimum}, got {value}")


def check_size(value: float | int, flag: str) -> None:
    """A fraction in (0, 1) or a whole count >= 1."""
    if isinstance(value, int) and value >= 1:
        return
    if isinstance(value, float) and 0.0 < value < 1.0:
        return
    raise UsageError(f"{flag} must be a fraction in (0, 1) or a count >= 1, got {value:g}")


def shared_records(X_train: Any, y_train: Any, X_pop: Any, y_pop: Any) -> tuple[int, int]:
    """``(training records found in the population, population records that repeat a
    training record)``."""
    from tabmia._records import shared_mask

    in_pop = shared_mask(X_train, y_train, X_pop, y_pop)
    if not in_pop.any():
        return 0, 0
    return int(in_pop.sum()), int(shared_mask(X_pop, y_pop, X_train, y_train).sum())


def check_shared(X_train: Any, y_train: Any, X_pop: Any, y_pop: Any) -> str | None:
    """Refuse a population that is mostly training records; describe a partial overlap."""
    n_train, n_pop = shared_records(X_train, y_train, X_pop, y_pop)
    if n_train == 0:
        return None
    if n_pop >= MAX_SHARED_FRACTION * len(X_pop) or n_train >= MAX_SHARED_FRACTION * len(X_train):
        raise UsageError(
            f"--population repeats training records: {n_pop} of its {len(X_pop)} records "
            f"(same features and label) are among the {len(X_train)} of --train; give records "
            "the model was not trained on"
        )
    return (
        f"{n_pop} of the {len(X_pop)} --population records repeat records of --train (same "
        "features and label); they count as non-members, so the results understate the "
        "risk: remove them"
    )


# ------------------------------------------------------------- categoricals
def model_categories(model: Any) -> dict[str, list[Any]]:
    """Categories a native-categorical XGBoost / LightGBM model stored, by column."""
    out: dict[str, list[Any]] = {}
    booster = None
    try:
        booster = model.get_booster()
    except Exception:  # noqa: BLE001 - not an XGBoost model, or unfitted
        booster = None
    if booster is not None:
        names = booster.feature_names or []
        types = booster.feature_types or []
        try:
            stored = dict(booster.get_categories(export_to_arrow=True).to_arrow())
        except Exception:  # noqa: BLE001 - older XGBoost: types only
            stored = {}
        for name, kind in zip(names, types):
            if kind == "c":
                cats = stored.get(name)
                out[name] = cats.to_pylist() if cats is not None else []
        return out
    booster = getattr(model, "booster_", None)
    pandas_cats = getattr(booster, "pandas_categorical", None)
    if booster is not None and pandas_cats:
        try:
            infos = booster.dump_model(num_iteration=0)["feature_infos"]
        except Exception:  # noqa: BLE001
            return out
        cat_cols = [c for c, info in infos.items() if info.get("values")]
        if len(cat_cols) == len(pandas_cats):
            out = {c: list(cats) for c, cats in zip(cat_cols, pandas_cats)}
    return out


def apply_categories(
    model: Any, frames: list[Any], declared: list[str], flags: list[str]
) -> list[Any]:
    """Cast categorical columns to the pandas category dtype the model was trained with.

    Columns the model stores categories for get those categories; ``declared``
    (``--categorical``) columns it does not get the union of the values in ``frames``.
    """
    stored = model_categories(model) if model is not None else {}
    columns = list(dict.fromkeys([*stored, *declared]))
    for col in columns:
        for frame, flag in zip(frames, flags):
            if col not in frame.columns:
                raise UsageError(f"--categorical {col}: no column {col!r} in {flag}")
    out = [f.copy() for f in frames]
    for col in columns:
        cats = stored.get(col) or []
        if not cats:
            values = pd.concat([f[col] for f in frames], ignore_index=True).dropna()
            cats = sorted(pd.unique(values).tolist(), key=str)
        for frame, flag in zip(out, flags):
            values = frame[col]
            is_text = pd.api.types.is_string_dtype(values) or values.dtype == object
            if isinstance(cats[0], str) and not is_text:  # CSV read "1", "2" as numbers
                values = values.astype(str).where(values.notna())
            elif not isinstance(cats[0], str) and is_text:
                values = pd.to_numeric(values, errors="coerce")
            lost = values.notna() & ~values.isin(cats)
            if lost.any():
                raise UsageError(
                    f"{flag}: column {col!r} has values the model's categories lack: "
                    f"{plain(pd.unique(values[lost])[:5])} (categories {plain(cats[:10])})"
                )
            frame[col] = values.astype(pd.CategoricalDtype(cats))
    return out
