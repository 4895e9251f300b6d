"""Loading and checking what ``tabmia audit`` is given, before anything runs.

Every problem becomes a :class:`UsageError` naming the flag and the file; the command
prints it as one ``tabmia: error:`` line and exits with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmia._memory import release_freed_memory
from tabmia._records import shared_mask
from tabmia.datasets import DataNotFoundError, load_dataset
from tabmia.target import PrecomputedLabels, PrecomputedProbabilities, TargetModel, n_rows, plain

#: Share of the population that may repeat training records before the audit is
#: refused as given the wrong file (the training file again, a superset of it).
MAX_SHARED_FRACTION = 0.5
#: Leading bytes of file types, and what they are called in messages.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PAR1", "a parquet file"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\x1f\x8b", "gzip-compressed"),
    (b"BZh", "bzip2-compressed"),
    (b"\xfd7zXZ\x00", "xz-compressed"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"\x80", "a pickle"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x7fELF", "an executable"),
    (b"\x89HDF", "an HDF5 file"),
    (b"\x93NUMPY", "a numpy .npy file"),
    (b"\xff\xfe", "UTF-16 text"),
    (b"\xfe\xff", "UTF-16 text"),
)
#: pandas' name of each compression sniff() recognises
_COMPRESSION = {
    "gzip-compressed": "gzip",
    "bzip2-compressed": "bz2",
    "xz-compressed": "xz",
    "zstd-compressed": "zstd",
    "a zip archive": "zip",
}
# a text file's first line holding one of these is a table, not a protocol-0 pickle
_SEPARATORS = (",", ";", "\t")


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def missing_data_line(exc: BaseException) -> str:
    """A :class:`~tabmia.exceptions.DataNotFoundError` as one line: where it looked, and
    the loader's hints on where to place the file (``TABMIA_DATA``) and how to fetch it."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    hints = [
        line[0].lower() + line[1:].rstrip(".")
        for line in lines[1:]
        if line.startswith(("Place ", "Download"))
    ]
    return "; ".join([lines[0], *hints])


#: Endings of a --data value that is a file, not a data set's name.
DATA_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq", ".gz")


def add_data_flags(parser: argparse.ArgumentParser) -> None:
    """The flags :func:`read_data_flag` reads: ``--data``, ``--label``, ``--encoding``,
    ``--sep``."""
    parser.add_argument(
        "--data",
        required=True,
        help="data set name for tabmia.datasets.load_dataset, or a CSV / parquet file "
        "(with --label)",
    )
    parser.add_argument("--label", default=None, help="label column of a --data file")
    parser.add_argument("--encoding", default="utf-8", help="text encoding of a CSV --data")
    parser.add_argument("--sep", default=",", help="field separator of a CSV --data")


def read_data_flag(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """``--data``: a file (with ``--label``) or a data set's name, as ``(X, y, bunch)``;
    ``bunch`` is the loader's result for a named data set (None for a file). One
    ``tabmia: error:`` line for a file without ``--label``, a missing data file (with the
    loader's hints) or an unknown name."""
    import numpy as np

    path = Path(args.data)
    if path.is_file() or path.suffix.lower() in DATA_FILE_SUFFIXES or path.is_dir():
        if args.label is None:
            raise UsageError(f"--data {args.data}: a file needs --label (its label column)")
        df = read_table(path, "--data", encoding=args.encoding, sep=args.sep)
        X, y = split_label(df, args.label, "--data")
        return X, np.asarray(y), None
    try:
        bunch = load_dataset(args.data)
    except DataNotFoundError as exc:
        raise UsageError(f"--data {args.data}: {missing_data_line(exc)}") from exc
    except (ValueError, KeyError) as exc:
        raise UsageError(f"--data {args.data}: {first_line(exc)}") from exc
    return bunch.data, np.asarray(bunch.target), bunch


# ------------------------------------------------------------------ content
def sniff(path: Path) -> str:
    """What a file is by its first bytes: a name from ``_MAGIC``, ``"text"`` or
    ``"a binary file"``."""
    with open(path, "rb") as fh:
        head = fh.read(8192)
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return "a binary file" if b"\x00" in head else "text"


def _is_table_text(path: Path, kind: str) -> bool:
    """A text file (compressed or not) whose first line is split by a separator."""
    opener = {"gzip-compressed": "gzip", "bzip2-compressed": "bz2", "xz-compressed": "lzma"}
    try:
        if kind == "text":
            head = path.read_bytes()[:4096]
        elif kind in opener:
            import importlib

            with importlib.import_module(opener[kind]).open(path, "rb") as fh:
                head = fh.read(4096)
        else:
            return False
    except (OSError, EOFError, ValueError):
        return False
    if b"\x00" in head or head.startswith(b"\x80"):
        return False
    first = head.decode("latin-1").splitlines()[0] if head.strip() else ""
    return any(sep in first for sep in _SEPARATORS)


# ------------------------------------------------------------------ tables
# each Arrow column freed as soon as pandas holds it, so a file is not held twice over
# (pandas 3 passes these to pyarrow's to_pandas; earlier pandas has no such parameter)
_PARQUET_READ: dict[str, Any] = (
    {"to_pandas_kwargs": {"self_destruct": True, "split_blocks": True}}
    if "to_pandas_kwargs" in inspect.signature(pd.read_parquet).parameters
    else {}
)


def read_table(path: Path, flag: str, *, encoding: str = "utf-8", sep: str | None = None) -> Any:
    """A CSV (``sep``, ``encoding``) or parquet file as a DataFrame, with unique columns."""
    if not path.is_file():
        raise UsageError(f"{flag} {path}: {'a folder' if path.is_dir() else 'no such file'}")
    kind = sniff(path)
    if kind == "UTF-16 text" and not encoding.lower().replace("-", "").startswith("utf16"):
        raise UsageError(f"{flag} {path}: UTF-16 text; pass --encoding utf-16")
    if kind not in ("text", "a parquet file", "UTF-16 text", *_COMPRESSION):
        raise UsageError(f"{flag} {path}: {kind}, not a CSV or parquet table")
    parquet = kind == "a parquet file"
    if path.suffix.lower() in (".parquet", ".pq") and not parquet:
        raise UsageError(f"{flag} {path}: named parquet but {kind}, not a parquet file")
    try:
        if parquet:  # by content: a parquet file under another name reads as parquet
            df = pd.read_parquet(path, **_PARQUET_READ)
        else:
            sep = "," if sep is None else sep
            read = {"sep": sep, "encoding": encoding, "compression": _COMPRESSION.get(kind)}
            header = pd.read_csv(path, header=None, nrows=1, **read)
            names = [str(v) for v in header.iloc[0]] if len(header) else []
            dups = sorted({n for n in names if names.count(n) > 1})
            if dups:
                raise UsageError(f"{flag} {path}: duplicate column names {dups[:10]}")
            df = pd.read_csv(path, **read)
    except UsageError:
        raise
    except ImportError as exc:
        raise UsageError(
            f"{flag} {path}: reading parquet needs pyarrow (pip install pyarrow)"
        ) from exc
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{flag} {path}: not {encoding} text (byte {exc.object[exc.start : exc.start + 1]!r} "
            f"at offset {exc.start}); pass --encoding, e.g. --encoding latin-1"
        ) from exc
    except LookupError as exc:
        raise UsageError(f"--encoding {encoding}: {first_line(exc)}") from exc
    except Exception as exc:  # any parse error is the user's file
        raise UsageError(f"{flag} {path}: cannot read: {first_line(exc)}") from exc
    dups = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
    if dups:
        raise UsageError(f"{flag} {path}: duplicate column names {dups[:10]}")
    if df.empty:
        raise UsageError(f"{flag} {path}: no records")
    release_freed_memory()  # the reader's buffers: twice the table, kept by Arrow's pool
    return df


def read_probabilities(
    train_proba: Path,
    population_proba: Path,
    X_train: Any,
    y_train: Any,
    X_population: Any,
    y_population: Any,
    *,
    labels_only: bool = False,
    **read: Any,
) -> Any:
    """A target of precomputed probabilities, one CSV column per class named by its label.

    The two files may order the class columns differently: they are matched by name.
    ``labels_only`` (``--label-only``) reads them as the labels they encode (one-hot rows
    of a label-only model).
    """
    p_tr = read_table(train_proba, "--train-proba", **read)
    p_pop = read_table(population_proba, "--population-proba", **read)
    names_tr, names_pop = [str(c) for c in p_tr.columns], [str(c) for c in p_pop.columns]
    if sorted(names_tr) != sorted(names_pop):
        raise UsageError(
            f"--train-proba columns {names_tr[:10]} and --population-proba "
            f"columns {names_pop[:10]} name different classes"
        )
    p_pop.columns = names_pop
    p_pop = p_pop[names_tr]  # the same class order in both
    if len(p_tr) != n_rows(X_train) or len(p_pop) != n_rows(X_population):
        raise UsageError(
            f"each --*-proba file needs one row per record of its data file "
            f"(--train-proba {len(p_tr)} rows for {n_rows(X_train)} records, "
            f"--population-proba {len(p_pop)} for {n_rows(X_population)})"
        )
    labels = pd.unique(
        pd.Series(np.r_[np.asarray(y_train, dtype=object), np.asarray(y_population, dtype=object)])
    )
    by_text = {str(v): v for v in labels}
    if not all(c in by_text for c in names_tr):
        raise UsageError(
            f"--*-proba columns {names_tr[:10]} must be the class labels {list(by_text)[:10]}"
        )
    classes = np.array([by_text[c] for c in names_tr])
    X_all = pd.concat([X_train, X_population], ignore_index=True)
    try:
        proba = np.vstack([p_tr.to_numpy(float), p_pop.to_numpy(float)])
        return TargetModel(
            PrecomputedProbabilities(X_all, proba), classes=classes, labels_only=labels_only
        )
    except ValueError as exc:
        raise UsageError(f"--*-proba: {first_line(exc)}") from exc


def read_predictions(
    train_pred: Path,
    population_pred: Path,
    X_train: Any,
    y_train: Any,
    X_population: Any,
    y_population: Any,
    **read: Any,
) -> Any:
    """A label-only target of precomputed predicted labels: one column, one row per record.

    The column may have a header or not. Labels are matched to the ``--label`` column's
    labels by their text (a CSV reads "1" as a number, a label column may hold text);
    a predicted label that no record has is kept as a class of its own.
    """
    labels = pd.unique(
        pd.Series(np.r_[np.asarray(y_train, dtype=object), np.asarray(y_population, dtype=object)])
    )
    by_text = {str(v): v for v in labels}
    parts = []
    for path, flag, X in (
        (train_pred, "--train-pred", X_train),
        (population_pred, "--population-pred", X_population),
    ):
        table = read_table(path, flag, **read)
        if table.shape[1] != 1:
            raise UsageError(
                f"{flag} {path}: {table.shape[1]} columns; give one column of "
                "predicted labels, one row per record"
            )
        header = str(table.columns[0])
        if len(table) == n_rows(X) - 1 and header in by_text:  # no header: the first label
            table = pd.read_csv(
                path,
                header=None,
                sep=read.get("sep") or ",",
                encoding=read.get("encoding", "utf-8"),
            )
        if len(table) != n_rows(X):
            hint = (
                f" (without a header line, its first line {header!r} must be a label of "
                "the --label column)"
                if len(table) == n_rows(X) - 1
                else ""
            )
            raise UsageError(
                f"{flag} {path}: {len(table)} rows for {n_rows(X)} records{hint}; "
                "give one predicted label per record of its data file, in its order"
            )
        column = table.iloc[:, 0]
        if column.isna().any():
            rows = plain(np.flatnonzero(column.isna().to_numpy())[:5])
            raise UsageError(
                f"{flag} {path}: {int(column.isna().sum())} empty predicted label(s) (rows {rows})"
            )
        parts.append(np.array([by_text.get(str(v), v) for v in column.tolist()], dtype=object))
    predicted = np.r_[parts[0], parts[1]]
    if not pd.Series(predicted).isin(labels).any():
        raise UsageError(
            f"--*-pred: the predicted labels {plain(pd.unique(pd.Series(predicted))[:5])} "
            f"are none of the --label column's labels {plain(labels[:10])}"
        )
    # predicted labels no record has, of another type: kept as objects
    with contextlib.suppress(TypeError, ValueError):
        predicted = predicted.astype(np.asarray(labels).dtype)
    X_all = pd.concat([X_train, X_population], ignore_index=True)
    try:
        return TargetModel(PrecomputedLabels(X_all, predicted, classes=labels))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--*-pred: {first_line(exc)}") from exc


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
    out = [f.copy(deep=False) for f in frames]  # columns are replaced, not written into
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
