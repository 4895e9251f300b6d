"""Loaders for small classic tabular data sets (credit, census, health).

Each loader reads ``<data home>/<folder>/<file>`` with the folder names used in
the shared data directory (``adult/``, ``german_credit/``, ...), accepts the
file gzipped or plain, returns a :class:`sklearn.utils.Bunch` (or ``(X, y)``
with ``return_X_y=True``) whose ``data`` is a DataFrame with categorical
columns as pandas ``category`` dtype, and whose ``target`` is an ``int64``
Series ``0..k-1`` named after the original label column (``target_names[i]``
is the original label of code ``i``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ._common import encode_labels, make_bunch, to_categorical
from ._errors import DataNotFoundError
from ._home import (
    download_or_raise,
    find_data_file,
    get_data_home,
    get_download_home,
    missing_data_error,
    search_roots,
)

__all__ = [
    "load_adult",
    "load_australian_credit",
    "load_bank_marketing",
    "load_breast_cancer",
    "load_compas",
    "load_diabetes130",
    "load_german_credit",
    "load_give_me_some_credit",
    "load_heart_disease",
    "load_hepatitis",
    "load_pima_diabetes",
    "load_taiwan_default",
]

PathLike = str | os.PathLike
Result = Bunch | tuple[pd.DataFrame, pd.Series]


def _gz_or_plain(*relpaths: str) -> list[str]:
    """Candidates ``x.gz`` then ``x`` for each relative path (``.gz`` ones kept as given)."""
    out: list[str] = []
    for rel in relpaths:
        if rel.endswith(".gz"):
            out += [rel, rel[:-3]]
        else:
            out += [rel + ".gz", rel]
    return out


def _find_first(
    layouts: Sequence[Sequence[str]],
    data_home: PathLike | None,
    *,
    what: str,
    hint: str,
    roots: Sequence[Path] | None = None,
) -> tuple[int, list[Path]]:
    """Find the first layout whose files all exist.

    Parameters
    ----------
    layouts : sequence of sequences of str
        Each layout is a list of "slots"; each slot is ``"a|b|c"``, alternative
        relative paths for one file.
    data_home, what, hint
        As for :func:`find_data_file`.
    roots : sequence of pathlib.Path, optional
        Directories to search (default: the data home only).

    Returns
    -------
    layout_index : int
    paths : list of pathlib.Path
        One resolved path per slot.
    """
    home = get_data_home(data_home)
    roots = list(roots) if roots else [home]
    looked: list[Path] = []
    for i, layout in enumerate(layouts):
        found: list[Path] = []
        for slot in layout:
            try:
                found.append(
                    find_data_file(slot.split("|"), home, extra_roots=roots[1:], what=what)
                )
            except DataNotFoundError as exc:
                looked += [p for p in exc.paths if p not in looked]
                break
        else:
            return i, found
    raise missing_data_error(looked, what=what, data_home=home, hint=hint)


def _descr(title: str, *, source: str, path: Path, processing: str, status: str) -> str:
    return (
        f"{title}\n{'=' * len(title)}\n\n"
        f"Source: {source}\n"
        f"File read: {path}\n"
        f"Processing: {processing}\n"
        f"Status: {status}\n"
    )


def _split_xy(
    df: pd.DataFrame, target_col: str, categorical: Sequence[str]
) -> tuple[pd.DataFrame, pd.Series]:
    X = df.drop(columns=[target_col]).reset_index(drop=True)
    to_categorical(X, [c for c in categorical if c in X.columns])
    return X, df[target_col].reset_index(drop=True)


# --------------------------------------------------------------------------- breast cancer


def load_breast_cancer(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Wisconsin diagnostic breast cancer data (569 x 30), shipped with scikit-learn.

    Parameters
    ----------
    data_home : str or path-like, optional
        Ignored (the data ships with scikit-learn); accepted for a uniform API.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: 0 = malignant, 1 = benign (scikit-learn's encoding).
    """
    from sklearn.datasets import load_breast_cancer as _sk_load

    raw = _sk_load(as_frame=True)
    X = raw.data.reset_index(drop=True)
    y = raw.target.astype(np.int64).rename("target")
    try:
        path = Path(str(resources.files("sklearn.datasets.data") / "breast_cancer.csv"))
    except (ModuleNotFoundError, TypeError):  # pragma: no cover
        path = None
    descr = _descr(
        "Breast cancer Wisconsin (diagnostic)",
        source="scikit-learn sklearn.datasets.load_breast_cancer (UCI #17)",
        path=path if path is not None else Path("<sklearn>"),
        processing="none; returned as a DataFrame (30 numeric features).",
        status="exact",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=[],
        target_names=[str(t) for t in raw.target_names],
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------------- adult

ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]
ADULT_CATEGORICAL = [
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
]
_ADULT_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
# SHA-256 of the original UCI files (decompressed adult.data.gz / adult.test.gz of the
# shared data; md5 5d7c39d7... / 35238206... as published for the UCI files).
_ADULT_SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}


def _read_uci_adult(path: Path) -> pd.DataFrame:
    df = pd.read_csv(
        path,
        header=None,
        names=ADULT_COLUMNS,
        sep=",",
        skipinitialspace=True,
        na_values="?",
        comment="|",  # adult.test starts with "|1x3 Cross validator"
        skip_blank_lines=True,
    )
    return df.dropna(how="all")


def load_adult(
    data_home: PathLike | None = None,
    *,
    drop_missing: bool = True,
    download: bool = False,
    return_X_y: bool = False,
) -> Result:
    """UCI Adult (1994 census income), train and test files merged (48,842 rows).

    Looks for ``<home>/adult/adult.csv[.gz]`` (merged table with a ``split``
    column), else the UCI layout ``<home>/adult/adult.data[.gz]`` +
    ``adult.test[.gz]``.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home (default: ``TABMIA_DATA`` or ``~/.cache/tabmia``).
    drop_missing : bool, default=True
        Drop the 3,620 rows with a missing value (``?`` in the UCI files),
        leaving 45,222 rows.
    download : bool, default=False
        If no local copy exists, download the two UCI files (SHA-256 checked)
        into the data home, or into the cache home when the data home is
        read-only.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``data``: 14 features (8 categorical); ``target``: ``income`` as 0/1
        (1 = ``>50K``; the ``.`` suffix of adult.test is removed); extra field
        ``split`` (``"train"``/``"test"``, the original UCI split) per row.
    """
    what = "UCI Adult"
    hint = (
        "Expected adult/adult.csv.gz (merged table, columns as in the UCI files plus 'split') "
        "or the UCI files adult/adult.data[.gz] and adult/adult.test[.gz]."
    )
    roots = search_roots(data_home)
    layouts = [
        ["adult/adult.csv.gz|adult/adult.csv"],
        ["adult/adult.data.gz|adult/adult.data", "adult/adult.test.gz|adult/adult.test"],
    ]
    try:
        layout, paths = _find_first(layouts, data_home, what=what, hint=hint, roots=roots)
    except DataNotFoundError as exc:
        if not download:
            raise DataNotFoundError(
                f"{exc}\nDownload not attempted (pass download=True to fetch the UCI files "
                f"from {_ADULT_URL}).",
                exc.paths,
            ) from None
        dl_home = get_download_home(data_home)
        paths = []
        for name in ("adult.data", "adult.test"):
            dest = None if dl_home is None else dl_home / "adult" / name
            if dest is not None and dest.is_file():
                paths.append(dest)
                continue
            paths.append(
                download_or_raise(
                    _ADULT_URL + name,
                    dest,
                    sha256=_ADULT_SHA256[name],
                    looked=exc.paths,
                    what=what,
                    data_home=get_data_home(data_home),
                    hint=hint,
                )
            )
        layout = 1

    if layout == 0:
        df = pd.read_csv(paths[0], na_values="?", skipinitialspace=True)
        if "split" not in df.columns:
            df["split"] = "unknown"
        source = paths[0]
        processing = "read merged table"
    else:
        train = _read_uci_adult(paths[0]).assign(split="train")
        test = _read_uci_adult(paths[1]).assign(split="test")
        df = pd.concat([train, test], ignore_index=True)
        source = paths[0]
        processing = f"read UCI files {paths[0].name} + {paths[1].name} (test rows appended)"

    df["income"] = df["income"].astype(str).str.strip().str.rstrip(".")
    n_raw = len(df)
    if drop_missing:
        df = df.dropna(subset=ADULT_COLUMNS).reset_index(drop=True)
        processing += f"; dropped {n_raw - len(df)} rows with missing values"
    split = df.pop("split").to_numpy(dtype=object)
    y, names = encode_labels(df.pop("income"), ["<=50K", ">50K"], name="income")
    X = df.reset_index(drop=True)
    for col in X.columns:
        if col not in ADULT_CATEGORICAL and not X[col].isna().any():
            X[col] = X[col].astype(np.int64)
    to_categorical(X, ADULT_CATEGORICAL)
    descr = _descr(
        "UCI Adult (Census Income)",
        source="UCI ML Repository #2 (Kohavi & Becker, 1994 CPS extract)",
        path=source,
        processing=processing + "; target income>50K -> 1, categorical columns as category dtype",
        status="exact (original UCI records)",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=ADULT_CATEGORICAL,
        target_names=names,
        descr=descr,
        source_path=source,
        return_X_y=return_X_y,
        split=split,
    )


# --------------------------------------------------------------------------- german credit

GERMAN_COLUMNS = [
    "checking_status",
    "duration",
    "credit_history",
    "purpose",
    "credit_amount",
    "savings_status",
    "employment",
    "installment_commitment",
    "personal_status",
    "other_parties",
    "residence_since",
    "property_magnitude",
    "age",
    "other_payment_plans",
    "housing",
    "existing_credits",
    "job",
    "num_dependents",
    "own_telephone",
    "foreign_worker",
    "class",
]
GERMAN_CATEGORICAL = [
    "checking_status",
    "credit_history",
    "purpose",
    "savings_status",
    "employment",
    "personal_status",
    "other_parties",
    "property_magnitude",
    "other_payment_plans",
    "housing",
    "job",
    "own_telephone",
    "foreign_worker",
]


def load_german_credit(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Statlog German Credit (1,000 x 20), OpenML ``credit-g`` layout.

    Reads ``<home>/german_credit/credit-g.csv[.gz]`` (OpenML/Weka labels), else
    the UCI file ``german_credit/german.data[.gz]`` (attribute codes such as
    ``A11`` kept as category values, same column names and order).

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: 0 = good, 1 = bad credit risk (700 / 300).
    """
    what = "Statlog German Credit"
    hint = (
        "Expected german_credit/credit-g.csv.gz (OpenML credit-g layout) "
        "or german_credit/german.data.gz (UCI)."
    )
    layout, (path,) = _find_first(
        [
            ["german_credit/credit-g.csv.gz|german_credit/credit-g.csv"],
            ["german_credit/german.data.gz|german_credit/german.data"],
        ],
        data_home,
        what=what,
        hint=hint,
    )
    if layout == 0:
        df = pd.read_csv(path)
        df["class"] = df["class"].str.strip()
        processing = "read OpenML credit-g layout"
    else:
        df = pd.read_csv(path, sep=r"\s+", header=None, names=GERMAN_COLUMNS)
        df["class"] = df["class"].map({1: "good", 2: "bad"})
        processing = "read UCI german.data; attribute codes (A11, ...) kept as category values"
    X, raw_y = _split_xy(df, "class", GERMAN_CATEGORICAL)
    y, names = encode_labels(raw_y, ["good", "bad"], name="class")
    descr = _descr(
        "Statlog German Credit (credit-g)",
        source="UCI ML Repository #144 (Hofmann); OpenML id 31 layout",
        path=path,
        processing=processing + "; target bad -> 1, good -> 0",
        status="exact",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=GERMAN_CATEGORICAL,
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------------- hepatitis

HEPATITIS_COLUMNS = [
    "AGE",
    "SEX",
    "STEROID",
    "ANTIVIRALS",
    "FATIGUE",
    "MALAISE",
    "ANOREXIA",
    "LIVER_BIG",
    "LIVER_FIRM",
    "SPLEEN_PALPABLE",
    "SPIDERS",
    "ASCITES",
    "VARICES",
    "BILIRUBIN",
    "ALK_PHOSPHATE",
    "SGOT",
    "ALBUMIN",
    "PROTIME",
    "HISTOLOGY",
]
HEPATITIS_CATEGORICAL = [
    "SEX",
    "STEROID",
    "ANTIVIRALS",
    "FATIGUE",
    "MALAISE",
    "ANOREXIA",
    "LIVER_BIG",
    "LIVER_FIRM",
    "SPLEEN_PALPABLE",
    "SPIDERS",
    "ASCITES",
    "VARICES",
    "HISTOLOGY",
]


def load_hepatitis(
    data_home: PathLike | None = None,
    *,
    drop_missing: bool = False,
    return_X_y: bool = False,
) -> Result:
    """Hepatitis (155 x 19), OpenML ``hepatitis`` (id 55) layout.

    Reads ``<home>/hepatitis/hepatitis.csv[.gz]`` (OpenML/Weka nominal labels),
    else the UCI file ``hepatitis/hepatitis.data[.gz]`` (class first, codes
    1/2 kept as category values, ``?`` = missing).

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    drop_missing : bool, default=False
        Drop rows with a missing value (75 of 155 rows have one).
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: 0 = LIVE, 1 = DIE (123 / 32).
    """
    what = "Hepatitis"
    hint = (
        "Expected hepatitis/hepatitis.csv.gz (OpenML layout) or hepatitis/hepatitis.data.gz (UCI)."
    )
    layout, (path,) = _find_first(
        [
            ["hepatitis/hepatitis.csv.gz|hepatitis/hepatitis.csv"],
            ["hepatitis/hepatitis.data.gz|hepatitis/hepatitis.data"],
        ],
        data_home,
        what=what,
        hint=hint,
    )
    if layout == 0:
        df = pd.read_csv(path, na_values="?")
        processing = "read OpenML layout"
    else:
        df = pd.read_csv(path, header=None, names=["Class"] + HEPATITIS_COLUMNS, na_values="?")
        df["Class"] = df["Class"].map({1: "DIE", 2: "LIVE"})
        df = df[HEPATITIS_COLUMNS + ["Class"]]
        processing = "read UCI hepatitis.data; nominal codes 1/2 kept as category values"
    if drop_missing:
        n0 = len(df)
        df = df.dropna().reset_index(drop=True)
        processing += f"; dropped {n0 - len(df)} rows with missing values"
    X, raw_y = _split_xy(df, "Class", HEPATITIS_CATEGORICAL)
    y, names = encode_labels(raw_y.str.strip(), ["LIVE", "DIE"], name="Class")
    descr = _descr(
        "Hepatitis",
        source="UCI ML Repository #46 (Gong/Cestnik); OpenML id 55 layout",
        path=path,
        processing=processing + "; target DIE -> 1, LIVE -> 0",
        status="exact",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=HEPATITIS_CATEGORICAL,
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------------- taiwan default

TAIWAN_CATEGORICAL = ["SEX", "EDUCATION", "MARRIAGE"]


def load_taiwan_default(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Default of credit card clients, Taiwan (30,000 x 23; Yeh & Lien 2009, UCI #350).

    Reads ``<home>/taiwan_default/UCI_Credit_Card.csv[.gz]`` (the common CSV
    conversion of the UCI XLS: ``ID``, 23 named features, target
    ``default.payment.next.month``).

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: 1 = default next month (6,636 of 30,000).
    """
    path = find_data_file(
        _gz_or_plain("taiwan_default/UCI_Credit_Card.csv"),
        data_home,
        what="Default of credit card clients (Taiwan)",
        hint=(
            "Expected the CSV conversion of the UCI XLS with columns ID, "
            "LIMIT_BAL, ..., default.payment.next.month."
        ),
    )
    df = pd.read_csv(path)
    df = df.drop(columns=[c for c in ("ID",) if c in df.columns])
    target = "default.payment.next.month"
    X, raw_y = _split_xy(df, target, TAIWAN_CATEGORICAL)
    y, _ = encode_labels(raw_y.astype(np.int64), [0, 1], name=target)
    names = ["no default", "default"]
    descr = _descr(
        "Default of credit card clients (Taiwan)",
        source="UCI ML Repository #350 (Yeh & Lien 2009), CSV conversion UCI_Credit_Card.csv",
        path=path,
        processing="dropped ID; SEX, EDUCATION, MARRIAGE as category dtype",
        status="exact",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=TAIWAN_CATEGORICAL,
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------------- give me some credit


def load_give_me_some_credit(
    data_home: PathLike | None = None,
    *,
    drop_missing: bool = False,
    return_X_y: bool = False,
) -> Result:
    """Give Me Some Credit (Kaggle 2011 training file, 150,000 x 10).

    Reads ``<home>/give_me_some_credit/cs-training.csv[.gz]`` (first unnamed
    column is a row id and is dropped).

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    drop_missing : bool, default=False
        Drop rows with a missing ``MonthlyIncome`` or ``NumberOfDependents``.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: ``SeriousDlqin2yrs`` (10,026 positives).
    """
    path = find_data_file(
        _gz_or_plain("give_me_some_credit/cs-training.csv"),
        data_home,
        what="Give Me Some Credit",
        hint=(
            "Expected the Kaggle competition file cs-training.csv (row "
            "id, SeriousDlqin2yrs, 10 features)."
        ),
    )
    df = pd.read_csv(path, index_col=0)
    processing = "row-id column dropped"
    if drop_missing:
        n0 = len(df)
        df = df.dropna()
        processing += f"; dropped {n0 - len(df)} rows with missing values"
    X, raw_y = _split_xy(df, "SeriousDlqin2yrs", [])
    y, _ = encode_labels(raw_y.astype(np.int64), [0, 1], name="SeriousDlqin2yrs")
    names = ["no serious delinquency", "serious delinquency in 2 years"]
    descr = _descr(
        "Give Me Some Credit",
        source=(
            "Kaggle competition 'Give Me Some Credit' (2011), "
            "cs-training.csv; competition terms apply"
        ),
        path=path,
        processing=processing,
        status="exact",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=[],
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------------- diabetes 130


def load_diabetes130(
    data_home: PathLike | None = None,
    *,
    binary: bool | Literal["<30", "any"] = False,
    return_X_y: bool = False,
) -> Result:
    """Diabetes 130-US hospitals 1999-2008 (101,766 encounters; Strack et al. 2014).

    Reads ``<home>/diabetes130/diabetic_data.csv[.gz]``.  ``encounter_id`` and
    ``patient_nbr`` are identifiers, not features: they are removed from
    ``data`` and returned as the extra fields ``encounter_id`` and ``groups``
    (patient number; several encounters can belong to one patient, which
    matters when splitting members from non-members).  ``?`` is missing;
    ``"None"`` (test not taken) is kept as a category.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    binary : {False, True, "<30", "any"}, default=False
        Target ``readmitted``.  ``False``: three classes, 0 = ``NO``,
        1 = ``>30``, 2 = ``<30``.  ``True`` or ``"<30"``: 1 = readmitted within
        30 days (``<30``), 0 = ``NO`` or ``>30`` (the usual clinical target).
        ``"any"``: 1 = readmitted at all (``<30`` or ``>30``), 0 = ``NO``.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        47 features (39 categorical: 36 text columns and 3 id codes).
    """
    path = find_data_file(
        _gz_or_plain("diabetes130/diabetic_data.csv"),
        data_home,
        what="Diabetes 130-US hospitals",
        hint="Expected diabetic_data.csv from the UCI dataset_diabetes.zip (UCI #296).",
    )
    df = pd.read_csv(path, keep_default_na=False, na_values=["?", ""], low_memory=False)
    encounter = df.pop("encounter_id").to_numpy()
    groups = df.pop("patient_nbr").to_numpy()
    raw = df.pop("readmitted").astype(str).str.strip()
    if binary is False:
        y, names = encode_labels(raw, ["NO", ">30", "<30"], name="readmitted")
        tdesc = "3 classes: 0 = NO, 1 = >30, 2 = <30"
    elif binary is True or binary == "<30":
        y = (raw == "<30").astype(np.int64).rename("readmitted")
        names = ["NO or >30", "<30"]
        tdesc = "binary: 1 = readmitted <30 days, 0 = NO or >30"
    elif binary == "any":
        y = (raw != "NO").astype(np.int64).rename("readmitted")
        names = ["NO", "<30 or >30"]
        tdesc = "binary: 1 = readmitted (<30 or >30), 0 = NO"
    else:
        raise ValueError(f"binary must be False, True, '<30' or 'any', got {binary!r}")
    id_codes = ["admission_type_id", "discharge_disposition_id", "admission_source_id"]
    categorical = [
        c for c in df.columns if c in id_codes or not pd.api.types.is_numeric_dtype(df[c])
    ]
    X = df.reset_index(drop=True)
    to_categorical(X, categorical)
    descr = _descr(
        "Diabetes 130-US hospitals for years 1999-2008",
        source="UCI ML Repository #296 (Strack et al. 2014), diabetic_data.csv",
        path=path,
        processing=(
            f"identifiers removed (returned as encounter_id / groups); target readmitted, {tdesc}"
        ),
        status="exact",
    )
    return make_bunch(
        X,
        y.reset_index(drop=True),
        feature_names=list(X.columns),
        categorical_features=categorical,
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
        groups=groups,
        encounter_id=encounter,
    )


# --------------------------------------------------------------------------- heart disease

CLEVELAND_COLUMNS = [
    "age",
    "sex",
    "cp",
    "trestbps",
    "chol",
    "fbs",
    "restecg",
    "thalach",
    "exang",
    "oldpeak",
    "slope",
    "ca",
    "thal",
    "num",
]
CLEVELAND_CATEGORICAL = ["sex", "cp", "fbs", "restecg", "exang", "slope", "thal"]
STATLOG_COLUMNS = [
    "age",
    "sex",
    "chest_pain",
    "resting_bp",
    "chol",
    "fbs",
    "restecg",
    "max_hr",
    "exang",
    "oldpeak",
    "slope",
    "ca",
    "thal",
    "class",
]
STATLOG_CATEGORICAL = ["sex", "chest_pain", "fbs", "restecg", "exang", "slope", "thal"]


def load_heart_disease(
    data_home: PathLike | None = None,
    *,
    variant: Literal["cleveland", "statlog"] = "cleveland",
    binary: bool = True,
    return_X_y: bool = False,
) -> Result:
    """Heart disease: UCI Cleveland processed subset (303) or Statlog Heart (270).

    ``variant="cleveland"`` reads ``<home>/cleveland_heart/cleveland_heart.csv[.gz]``
    (else the UCI file ``processed.cleveland.data[.gz]``); ``variant="statlog"``
    reads ``<home>/statlog_heart/statlog_heart.csv[.gz]`` (else UCI
    ``heart.dat[.gz]``).

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    variant : {"cleveland", "statlog"}
        Which data set.
    binary : bool, default=True
        Cleveland only: ``True`` gives 1 = disease (``num`` > 0), ``False``
        keeps ``num`` 0-4.  Statlog is always binary (1 = presence).
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        13 features (7 categorical).
    """
    if variant == "cleveland":
        layout, (path,) = _find_first(
            [
                ["cleveland_heart/cleveland_heart.csv.gz|cleveland_heart/cleveland_heart.csv"],
                [
                    "cleveland_heart/processed.cleveland.data.gz|cleveland_heart/processed.cleveland.data"
                ],
            ],
            data_home,
            what="Heart disease (Cleveland)",
            hint=(
                "Expected cleveland_heart.csv.gz (14 named columns) or "
                "UCI processed.cleveland.data."
            ),
        )
        if layout == 0:
            df = pd.read_csv(path, na_values="?")
        else:
            df = pd.read_csv(path, header=None, names=CLEVELAND_COLUMNS, na_values="?")
        num = df["num"].astype(np.int64)
        if binary:
            df["num"] = (num > 0).astype(np.int64)
            names = ["no disease", "disease"]
        else:
            df["num"] = num
            names = ["0", "1", "2", "3", "4"]
        X, y = _split_xy(df, "num", CLEVELAND_CATEGORICAL)
        categorical = CLEVELAND_CATEGORICAL
        title, src = "Heart disease (Cleveland)", "UCI ML Repository #45, processed.cleveland.data"
        processing = "target num" + (" > 0 -> 1" if binary else " (0-4)")
    elif variant == "statlog":
        layout, (path,) = _find_first(
            [
                ["statlog_heart/statlog_heart.csv.gz|statlog_heart/statlog_heart.csv"],
                ["statlog_heart/heart.dat.gz|statlog_heart/heart.dat"],
            ],
            data_home,
            what="Statlog (Heart)",
            hint="Expected statlog_heart.csv.gz (14 named columns) or UCI heart.dat.",
        )
        if layout == 0:
            df = pd.read_csv(path)
        else:
            df = pd.read_csv(path, sep=r"\s+", header=None, names=STATLOG_COLUMNS)
        X, raw_y = _split_xy(df, "class", STATLOG_CATEGORICAL)
        y, _ = encode_labels(raw_y.astype(np.int64), [1, 2], name="class")
        names = ["absence", "presence"]
        categorical = STATLOG_CATEGORICAL
        title, src = "Statlog (Heart)", "UCI ML Repository #145, heart.dat"
        processing = "target class 2 (presence) -> 1, 1 (absence) -> 0"
    else:
        raise ValueError(f"variant must be 'cleveland' or 'statlog', got {variant!r}")
    descr = _descr(title, source=src, path=path, processing=processing, status="exact")
    return make_bunch(
        X,
        y.astype(np.int64),
        feature_names=list(X.columns),
        categorical_features=categorical,
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------------- bank marketing

BANK_CATEGORICAL = [
    "job",
    "marital",
    "education",
    "default",
    "housing",
    "loan",
    "contact",
    "month",
    "poutcome",
]


def load_bank_marketing(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Bank Marketing, full table (45,211 x 16; Moro et al. 2014, UCI #222).

    Reads ``<home>/bank_marketing/bank-full.csv[.gz]`` (``;``-separated).
    Note: ``duration`` is only known after the call and leaks the target (see
    the UCI description); drop it for a realistic model.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: ``y``, 1 = subscribed (5,289 of 45,211).
    """
    path = find_data_file(
        _gz_or_plain("bank_marketing/bank-full.csv"),
        data_home,
        what="Bank Marketing",
        hint="Expected the UCI file bank-full.csv (';'-separated, 17 columns).",
    )
    df = pd.read_csv(path, sep=";")
    X, raw_y = _split_xy(df, "y", BANK_CATEGORICAL)
    y, names = encode_labels(raw_y.str.strip(), ["no", "yes"], name="y")
    descr = _descr(
        "Bank Marketing (bank-full)",
        source="UCI ML Repository #222 (Moro et al. 2014), bank-full.csv",
        path=path,
        processing="target y yes -> 1; 9 categorical columns as category dtype",
        status="exact (values; file re-saved unquoted)",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=BANK_CATEGORICAL,
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------------- compas

COMPAS_FEATURES = [
    "sex",
    "age",
    "age_cat",
    "race",
    "juv_fel_count",
    "juv_misd_count",
    "juv_other_count",
    "priors_count",
    "c_charge_degree",
]
COMPAS_CATEGORICAL = ["sex", "age_cat", "race", "c_charge_degree"]


def load_compas(
    data_home: PathLike | None = None,
    *,
    propublica_filter: bool = True,
    return_X_y: bool = False,
) -> Result:
    """COMPAS two-year recidivism (ProPublica ``compas-scores-two-years.csv``).

    Reads ``<home>/compas/compas-scores-two-years.csv[.gz]`` (7,214 rows).
    Features are the defendant attributes commonly used (``sex``, ``age``,
    ``age_cat``, ``race``, juvenile counts, ``priors_count``,
    ``c_charge_degree``); outcome-derived columns (``is_recid``, ``r_*``,
    ``decile_score`` ...) are not features.  The COMPAS decile score is returned
    as the extra field ``decile_score``.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    propublica_filter : bool, default=True
        Apply ProPublica's filter (``|days_b_screening_arrest| <= 30``,
        ``is_recid != -1``, ``c_charge_degree != "O"``, ``score_text != "N/A"``),
        giving 6,172 rows.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: ``two_year_recid`` (0/1).
    """
    path = find_data_file(
        _gz_or_plain("compas/compas-scores-two-years.csv"),
        data_home,
        what="COMPAS two-year recidivism",
        hint="Expected ProPublica's compas-scores-two-years.csv (53 columns).",
    )
    df = pd.read_csv(path, low_memory=False)
    processing = f"features {', '.join(COMPAS_FEATURES)}"
    if propublica_filter:
        n0 = len(df)
        keep = (
            df["days_b_screening_arrest"].between(-30, 30)
            & (df["is_recid"] != -1)
            & (df["c_charge_degree"] != "O")
            & (df["score_text"].astype(str) != "N/A")
        )
        df = df[keep]
        processing += f"; ProPublica filter kept {len(df)} of {n0} rows"
    decile = df["decile_score"].to_numpy()
    df = df[COMPAS_FEATURES + ["two_year_recid"]]
    X, raw_y = _split_xy(df, "two_year_recid", COMPAS_CATEGORICAL)
    y, _ = encode_labels(raw_y.astype(np.int64), [0, 1], name="two_year_recid")
    names = ["no recidivism", "recidivism within 2 years"]
    descr = _descr(
        "COMPAS two-year recidivism",
        source="ProPublica compas-analysis, compas-scores-two-years.csv (ProPublica data terms)",
        path=path,
        processing=processing,
        status="exact",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=COMPAS_CATEGORICAL,
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
        decile_score=decile,
    )


# --------------------------------------------------------------------------- pima

PIMA_COLUMNS = [
    "Pregnancies",
    "Glucose",
    "BloodPressure",
    "SkinThickness",
    "Insulin",
    "BMI",
    "DiabetesPedigreeFunction",
    "Age",
    "Outcome",
]


def load_pima_diabetes(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Pima Indians Diabetes (768 x 8; NIDDK).

    Reads ``<home>/pima_diabetes/pima_diabetes.csv[.gz]`` (Kaggle header), else
    the header-less ``pima-indians-diabetes_noheader.csv[.gz]`` /
    ``pima-indians-diabetes.data``.  Zeros in Glucose, BloodPressure,
    SkinThickness, Insulin and BMI encode missing values, as in the original;
    they are left unchanged.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: ``Outcome`` (268 of 768 positive).
    """
    layout, (path,) = _find_first(
        [
            ["pima_diabetes/pima_diabetes.csv.gz|pima_diabetes/pima_diabetes.csv"],
            [
                "pima_diabetes/pima-indians-diabetes_noheader.csv.gz|"
                "pima_diabetes/pima-indians-diabetes_noheader.csv|"
                "pima_diabetes/pima-indians-diabetes.data|pima_diabetes/pima-indians-diabetes.csv"
            ],
        ],
        data_home,
        what="Pima Indians Diabetes",
        hint="Expected pima_diabetes.csv.gz (with header) or the header-less 9-column original.",
    )
    if layout == 0:
        df = pd.read_csv(path)
    else:
        df = pd.read_csv(path, header=None, names=PIMA_COLUMNS)
    X, raw_y = _split_xy(df, "Outcome", [])
    y, _ = encode_labels(raw_y.astype(np.int64), [0, 1], name="Outcome")
    names = ["no diabetes", "diabetes"]
    descr = _descr(
        "Pima Indians Diabetes",
        source="NIDDK via UCI (withdrawn); Kaggle column names",
        path=path,
        processing="none (zeros encoding missing values are kept)",
        status="exact",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=[],
        target_names=names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------------- australian

AUSTRALIAN_COLUMNS = [f"A{i}" for i in range(1, 15)] + ["class"]
AUSTRALIAN_CATEGORICAL = ["A1", "A4", "A5", "A6", "A8", "A9", "A11", "A12"]


def load_australian_credit(
    data_home: PathLike | None = None, *, return_X_y: bool = False
) -> Result:
    """Statlog Australian Credit Approval (690 x 14; Quinlan, UCI #143).

    Reads ``<home>/australian_credit/australian_credit.csv[.gz]`` (header
    ``A1..A14,class``), else the UCI ``australian.dat[.gz]`` (space-separated).
    The 8 categorical attributes (A1, A4, A5, A6, A8, A9, A11, A12 per
    ``australian.doc``) are category dtype.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``target``: ``class`` 0/1 (383 / 307; 1 = approved).
    """
    layout, (path,) = _find_first(
        [
            ["australian_credit/australian_credit.csv.gz|australian_credit/australian_credit.csv"],
            ["australian_credit/australian.dat.gz|australian_credit/australian.dat"],
        ],
        data_home,
        what="Statlog Australian Credit",
        hint="Expected australian_credit.csv.gz (A1..A14,class) or UCI australian.dat.",
    )
    if layout == 0:
        df = pd.read_csv(path, skipinitialspace=True)
    else:
        df = pd.read_csv(path, sep=r"\s+", header=None, names=AUSTRALIAN_COLUMNS)
    X, raw_y = _split_xy(df, "class", AUSTRALIAN_CATEGORICAL)
    y, _ = encode_labels(raw_y.astype(np.int64), [0, 1], name="class")
    descr = _descr(
        "Statlog (Australian Credit Approval)",
        source="UCI ML Repository #143 (Quinlan), australian.dat",
        path=path,
        processing="8 categorical attributes as category dtype",
        status="exact",
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=AUSTRALIAN_CATEGORICAL,
        target_names=["rejected", "approved"],
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
    )
