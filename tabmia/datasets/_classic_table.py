"""The classic data sets as one table: where each lies, how it reads, what it means.

Every file-based data set of :mod:`tabmia.datasets.classic` is one
:class:`_Spec` row of ``_SPECS`` read by the one loader :func:`_load`; the
quirks a row cannot express (Adult's download and UCI split, Diabetes 130's
identifiers, COMPAS's filter, ...) are small hooks named in the row.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from tabmia.exceptions import DataNotFoundError

from ._classic_columns import (
    ADULT_CATEGORICAL,
    ADULT_COLUMNS,
    AUSTRALIAN_CATEGORICAL,
    AUSTRALIAN_COLUMNS,
    BANK_CATEGORICAL,
    CLEVELAND_CATEGORICAL,
    CLEVELAND_COLUMNS,
    COMPAS_CATEGORICAL,
    COMPAS_FEATURES,
    GERMAN_CATEGORICAL,
    GERMAN_COLUMNS,
    HEPATITIS_CATEGORICAL,
    HEPATITIS_COLUMNS,
    PIMA_COLUMNS,
    STATLOG_CATEGORICAL,
    STATLOG_COLUMNS,
    TAIWAN_CATEGORICAL,
)
from ._common import encode_labels, make_bunch, to_categorical
from ._home import (
    download_or_raise,
    find_data_file,
    get_data_home,
    get_download_home,
    missing_data_error,
    search_roots,
)

PathLike = str | os.PathLike
Result: TypeAlias = Bunch | tuple[pd.DataFrame, pd.Series]

_ADULT_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
# SHA-256 of the original UCI files (decompressed adult.data.gz / adult.test.gz of the
# shared data; md5 5d7c39d7... / 35238206... as published for the UCI files).
_ADULT_SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}

# --------------------------------------------------------------------------- shared steps


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


def _gz_or_plain(relpath: str) -> str:
    """One slot: ``relpath.gz`` first, then ``relpath``."""
    return f"{relpath}.gz|{relpath}"


def _files(*relpaths: str) -> tuple[tuple[str, ...], ...]:
    """Layouts of one file each, in order of preference, gzipped or plain."""
    return tuple((_gz_or_plain(p),) for p in relpaths)


def _dropna(df: pd.DataFrame, processing: str, drop: bool) -> tuple[pd.DataFrame, str]:
    if not drop:
        return df, processing
    n0 = len(df)
    df = df.dropna().reset_index(drop=True)
    return df, processing + f"; dropped {n0 - len(df)} rows with missing values"


# Options hook: (spec, frame, processing so far, **loader options)
# -> (spec specialised to the options, frame, processing, extra Bunch fields).
Prepare = Callable[..., tuple["_Spec", pd.DataFrame, str, dict[str, Any]]]


@dataclass(frozen=True)
class _Spec:
    """One file-based data set: where it lies, how each layout reads, what it means.

    ``layouts[i]`` lists the file slots of layout ``i`` (see :func:`_find_first`);
    ``csv[i]`` the :func:`pandas.read_csv` arguments for its first file and
    ``fix[i]`` an optional frame fix-up bringing it to the common columns;
    ``processing[i]`` how layout ``i`` was read.  ``classes`` is the label
    order (ints are compared as int64, strings stripped); ``target_names``
    overrides the names derived from ``classes``.  ``tail`` ends the
    processing note of the description.
    """

    what: str
    hint: str
    layouts: tuple[tuple[str, ...], ...]
    target: str
    classes: tuple[Any, ...]
    categorical: tuple[str, ...]
    title: str
    source: str
    processing: tuple[str, ...]
    csv: tuple[dict[str, Any], ...] = ({},)
    fix: tuple[Callable[[pd.DataFrame], pd.DataFrame] | None, ...] = (None,)
    target_names: tuple[str, ...] | None = None
    tail: str = ""
    status: str = "exact"
    prepare: Prepare | None = None
    read: Callable[..., tuple[pd.DataFrame, Path, str]] | None = None


def _read_layouts(spec: _Spec, data_home: PathLike | None, **_: Any):
    layout, paths = _find_first(spec.layouts, data_home, what=spec.what, hint=spec.hint)
    df = pd.read_csv(paths[0], **spec.csv[layout])
    fix = spec.fix[layout] if layout < len(spec.fix) else None
    return (fix(df) if fix else df), paths[0], spec.processing[layout]


def _load(spec: _Spec, data_home: PathLike | None, *, return_X_y: bool, **options: Any) -> Result:
    """The one loader: locate, read, apply the options, split, encode, describe."""
    df, path, processing = (spec.read or _read_layouts)(spec, data_home, **options)
    extra: dict[str, Any] = {}
    if spec.prepare is not None:
        spec, df, processing, extra = spec.prepare(spec, df, processing, **options)
    X = df.drop(columns=[spec.target]).reset_index(drop=True)
    to_categorical(X, [c for c in spec.categorical if c in X.columns])
    raw = df[spec.target].reset_index(drop=True)
    if all(isinstance(c, (int, np.integer)) for c in spec.classes):
        raw = raw.astype(np.int64)
    else:
        raw = raw.str.strip()
    y, names = encode_labels(raw, list(spec.classes), name=spec.target)
    descr = _descr(
        spec.title,
        source=spec.source,
        path=path,
        processing=processing + spec.tail,
        status=spec.status,
    )
    return make_bunch(
        X,
        y,
        feature_names=list(X.columns),
        categorical_features=list(spec.categorical),
        target_names=list(spec.target_names) if spec.target_names else names,
        descr=descr,
        source_path=path,
        return_X_y=return_X_y,
        **extra,
    )


# --------------------------------------------------------------------------- data-set quirks


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


def _read_adult(spec: _Spec, data_home: PathLike | None, *, download: bool = False, **_: Any):
    """Merged table or the two UCI files, downloading the latter if asked."""
    try:
        layout, paths = _find_first(
            spec.layouts, data_home, what=spec.what, hint=spec.hint, roots=search_roots(data_home)
        )
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
                    what=spec.what,
                    data_home=get_data_home(data_home),
                    hint=spec.hint,
                )
            )
        layout = 1
    if layout == 0:
        df = pd.read_csv(paths[0], na_values="?", skipinitialspace=True)
        if "split" not in df.columns:
            df["split"] = "unknown"
        return df, paths[0], "read merged table"
    train = _read_uci_adult(paths[0]).assign(split="train")
    test = _read_uci_adult(paths[1]).assign(split="test")
    df = pd.concat([train, test], ignore_index=True)
    return df, paths[0], f"read UCI files {paths[0].name} + {paths[1].name} (test rows appended)"


def _prepare_adult(spec, df, processing, *, drop_missing: bool = True, **_: Any):
    df["income"] = df["income"].astype(str).str.strip().str.rstrip(".")
    if drop_missing:
        n_raw = len(df)
        df = df.dropna(subset=ADULT_COLUMNS).reset_index(drop=True)
        processing += f"; dropped {n_raw - len(df)} rows with missing values"
    split = df.pop("split").to_numpy(dtype=object)
    for col in df.columns:
        if col not in [*ADULT_CATEGORICAL, "income"] and not df[col].isna().any():
            df[col] = df[col].astype(np.int64)
    return spec, df, processing, {"split": split}


def _german_uci(df: pd.DataFrame) -> pd.DataFrame:
    df["class"] = df["class"].map({1: "good", 2: "bad"})
    return df


def _hepatitis_uci(df: pd.DataFrame) -> pd.DataFrame:
    df["Class"] = df["Class"].map({1: "DIE", 2: "LIVE"})
    return df[[*HEPATITIS_COLUMNS, "Class"]]


def _drop_missing(spec, df, processing, *, drop_missing: bool = False, **_: Any):
    df, processing = _dropna(df, processing, drop_missing)
    return spec, df, processing, {}


def _drop_id(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=[c for c in ("ID",) if c in df.columns])


_DIABETES_ID_CODES = ("admission_type_id", "discharge_disposition_id", "admission_source_id")


def _prepare_diabetes130(spec, df, processing, *, binary=False, **_: Any):
    encounter = df.pop("encounter_id").to_numpy()
    extra = {"groups": df.pop("patient_nbr").to_numpy(), "encounter_id": encounter}
    raw = df["readmitted"] = df["readmitted"].astype(str).str.strip()
    classes: tuple[Any, ...]
    names: tuple[str, ...] | None
    if binary is False:
        classes, names, tdesc = ("NO", ">30", "<30"), None, "3 classes: 0 = NO, 1 = >30, 2 = <30"
    elif binary is True or binary == "<30":
        df["readmitted"] = (raw == "<30").astype(np.int64)
        classes, names = (0, 1), ("NO or >30", "<30")
        tdesc = "binary: 1 = readmitted <30 days, 0 = NO or >30"
    elif binary == "any":
        df["readmitted"] = (raw != "NO").astype(np.int64)
        classes, names = (0, 1), ("NO", "<30 or >30")
        tdesc = "binary: 1 = readmitted (<30 or >30), 0 = NO"
    else:
        raise ValueError(f"binary must be False, True, '<30' or 'any', got {binary!r}")
    categorical = tuple(
        c
        for c in df.columns
        if c != "readmitted"
        and (c in _DIABETES_ID_CODES or not pd.api.types.is_numeric_dtype(df[c]))
    )
    spec = replace(spec, classes=classes, target_names=names, categorical=categorical)
    processing += f"; target readmitted, {tdesc}"
    return spec, df, processing, extra


def _prepare_cleveland(spec, df, processing, *, binary: bool = True, **_: Any):
    num = df["num"].astype(np.int64)
    if binary:
        df["num"] = (num > 0).astype(np.int64)
        spec = replace(spec, classes=(0, 1), target_names=("no disease", "disease"))
    else:
        df["num"] = num
    return spec, df, "target num" + (" > 0 -> 1" if binary else " (0-4)"), {}


def _prepare_compas(spec, df, processing, *, propublica_filter: bool = True, **_: Any):
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
    return spec, df[[*COMPAS_FEATURES, "two_year_recid"]], processing, {"decile_score": decile}


# --------------------------------------------------------------------------- the table

_SPECS: dict[str, _Spec] = {
    "adult": _Spec(
        what="UCI Adult",
        hint=(
            "Expected adult/adult.csv.gz (merged table, columns as in the UCI files plus "
            "'split') or the UCI files adult/adult.data[.gz] and adult/adult.test[.gz]."
        ),
        layouts=(
            (_gz_or_plain("adult/adult.csv"),),
            (_gz_or_plain("adult/adult.data"), _gz_or_plain("adult/adult.test")),
        ),
        target="income",
        classes=("<=50K", ">50K"),
        categorical=tuple(ADULT_CATEGORICAL),
        title="UCI Adult (Census Income)",
        source="UCI ML Repository #2 (Kohavi & Becker, 1994 CPS extract)",
        processing=("read merged table", "read UCI files"),
        tail="; target income>50K -> 1, categorical columns as category dtype",
        status="exact (original UCI records)",
        read=_read_adult,
        prepare=_prepare_adult,
    ),
    "german_credit": _Spec(
        what="Statlog German Credit",
        hint=(
            "Expected german_credit/credit-g.csv.gz (OpenML credit-g layout) "
            "or german_credit/german.data.gz (UCI)."
        ),
        layouts=_files("german_credit/credit-g.csv", "german_credit/german.data"),
        csv=({}, {"sep": r"\s+", "header": None, "names": GERMAN_COLUMNS}),
        fix=(None, _german_uci),
        target="class",
        classes=("good", "bad"),
        categorical=tuple(GERMAN_CATEGORICAL),
        title="Statlog German Credit (credit-g)",
        source="UCI ML Repository #144 (Hofmann); OpenML id 31 layout",
        processing=(
            "read OpenML credit-g layout",
            "read UCI german.data; attribute codes (A11, ...) kept as category values",
        ),
        tail="; target bad -> 1, good -> 0",
    ),
    "hepatitis": _Spec(
        what="Hepatitis",
        hint=(
            "Expected hepatitis/hepatitis.csv.gz (OpenML layout) or "
            "hepatitis/hepatitis.data.gz (UCI)."
        ),
        layouts=_files("hepatitis/hepatitis.csv", "hepatitis/hepatitis.data"),
        csv=(
            {"na_values": "?"},
            {"header": None, "names": ["Class", *HEPATITIS_COLUMNS], "na_values": "?"},
        ),
        fix=(None, _hepatitis_uci),
        target="Class",
        classes=("LIVE", "DIE"),
        categorical=tuple(HEPATITIS_CATEGORICAL),
        title="Hepatitis",
        source="UCI ML Repository #46 (Gong/Cestnik); OpenML id 55 layout",
        processing=(
            "read OpenML layout",
            "read UCI hepatitis.data; nominal codes 1/2 kept as category values",
        ),
        tail="; target DIE -> 1, LIVE -> 0",
        prepare=_drop_missing,
    ),
    "taiwan_default": _Spec(
        what="Default of credit card clients (Taiwan)",
        hint=(
            "Expected the CSV conversion of the UCI XLS with columns ID, "
            "LIMIT_BAL, ..., default.payment.next.month."
        ),
        layouts=_files("taiwan_default/UCI_Credit_Card.csv"),
        fix=(_drop_id,),
        target="default.payment.next.month",
        classes=(0, 1),
        target_names=("no default", "default"),
        categorical=tuple(TAIWAN_CATEGORICAL),
        title="Default of credit card clients (Taiwan)",
        source="UCI ML Repository #350 (Yeh & Lien 2009), CSV conversion UCI_Credit_Card.csv",
        processing=("dropped ID; SEX, EDUCATION, MARRIAGE as category dtype",),
    ),
    "give_me_some_credit": _Spec(
        what="Give Me Some Credit",
        hint=(
            "Expected the Kaggle competition file cs-training.csv (row "
            "id, SeriousDlqin2yrs, 10 features)."
        ),
        layouts=_files("give_me_some_credit/cs-training.csv"),
        csv=({"index_col": 0},),
        target="SeriousDlqin2yrs",
        classes=(0, 1),
        target_names=("no serious delinquency", "serious delinquency in 2 years"),
        categorical=(),
        title="Give Me Some Credit",
        source=(
            "Kaggle competition 'Give Me Some Credit' (2011), "
            "cs-training.csv; competition terms apply"
        ),
        processing=("row-id column dropped",),
        prepare=_drop_missing,
    ),
    "diabetes130": _Spec(
        what="Diabetes 130-US hospitals",
        hint="Expected diabetic_data.csv from the UCI dataset_diabetes.zip (UCI #296).",
        layouts=_files("diabetes130/diabetic_data.csv"),
        csv=({"keep_default_na": False, "na_values": ["?", ""], "low_memory": False},),
        target="readmitted",
        classes=("NO", ">30", "<30"),
        categorical=(),  # every text column and the id codes (set per load)
        title="Diabetes 130-US hospitals for years 1999-2008",
        source="UCI ML Repository #296 (Strack et al. 2014), diabetic_data.csv",
        processing=("identifiers removed (returned as encounter_id / groups)",),
        prepare=_prepare_diabetes130,
    ),
    "heart_cleveland": _Spec(
        what="Heart disease (Cleveland)",
        hint=(
            "Expected cleveland_heart.csv.gz (14 named columns) or UCI processed.cleveland.data."
        ),
        layouts=_files(
            "cleveland_heart/cleveland_heart.csv",
            "cleveland_heart/processed.cleveland.data",
        ),
        csv=({"na_values": "?"}, {"header": None, "names": CLEVELAND_COLUMNS, "na_values": "?"}),
        target="num",
        classes=(0, 1, 2, 3, 4),
        categorical=tuple(CLEVELAND_CATEGORICAL),
        title="Heart disease (Cleveland)",
        source="UCI ML Repository #45, processed.cleveland.data",
        processing=("", ""),
        prepare=_prepare_cleveland,
    ),
    "heart_statlog": _Spec(
        what="Statlog (Heart)",
        hint="Expected statlog_heart.csv.gz (14 named columns) or UCI heart.dat.",
        layouts=_files("statlog_heart/statlog_heart.csv", "statlog_heart/heart.dat"),
        csv=({}, {"sep": r"\s+", "header": None, "names": STATLOG_COLUMNS}),
        target="class",
        classes=(1, 2),
        target_names=("absence", "presence"),
        categorical=tuple(STATLOG_CATEGORICAL),
        title="Statlog (Heart)",
        source="UCI ML Repository #145, heart.dat",
        processing=("target class 2 (presence) -> 1, 1 (absence) -> 0",) * 2,
    ),
    "bank_marketing": _Spec(
        what="Bank Marketing",
        hint="Expected the UCI file bank-full.csv (';'-separated, 17 columns).",
        layouts=_files("bank_marketing/bank-full.csv"),
        csv=({"sep": ";"},),
        target="y",
        classes=("no", "yes"),
        categorical=tuple(BANK_CATEGORICAL),
        title="Bank Marketing (bank-full)",
        source="UCI ML Repository #222 (Moro et al. 2014), bank-full.csv",
        processing=("target y yes -> 1; 9 categorical columns as category dtype",),
        status="exact (values; file re-saved unquoted)",
    ),
    "compas": _Spec(
        what="COMPAS two-year recidivism",
        hint="Expected ProPublica's compas-scores-two-years.csv (53 columns).",
        layouts=_files("compas/compas-scores-two-years.csv"),
        csv=({"low_memory": False},),
        target="two_year_recid",
        classes=(0, 1),
        target_names=("no recidivism", "recidivism within 2 years"),
        categorical=tuple(COMPAS_CATEGORICAL),
        title="COMPAS two-year recidivism",
        source="ProPublica compas-analysis, compas-scores-two-years.csv (ProPublica data terms)",
        processing=(f"features {', '.join(COMPAS_FEATURES)}",),
        prepare=_prepare_compas,
    ),
    "pima_diabetes": _Spec(
        what="Pima Indians Diabetes",
        hint="Expected pima_diabetes.csv.gz (with header) or the header-less 9-column original.",
        layouts=(
            (_gz_or_plain("pima_diabetes/pima_diabetes.csv"),),
            (
                "pima_diabetes/pima-indians-diabetes_noheader.csv.gz|"
                "pima_diabetes/pima-indians-diabetes_noheader.csv|"
                "pima_diabetes/pima-indians-diabetes.data|pima_diabetes/pima-indians-diabetes.csv",
            ),
        ),
        csv=({}, {"header": None, "names": PIMA_COLUMNS}),
        target="Outcome",
        classes=(0, 1),
        target_names=("no diabetes", "diabetes"),
        categorical=(),
        title="Pima Indians Diabetes",
        source="NIDDK via UCI (withdrawn); Kaggle column names",
        processing=("none (zeros encoding missing values are kept)",) * 2,
    ),
    "australian_credit": _Spec(
        what="Statlog Australian Credit",
        hint="Expected australian_credit.csv.gz (A1..A14,class) or UCI australian.dat.",
        layouts=_files(
            "australian_credit/australian_credit.csv",
            "australian_credit/australian.dat",
        ),
        csv=(
            {"skipinitialspace": True},
            {"sep": r"\s+", "header": None, "names": AUSTRALIAN_COLUMNS},
        ),
        target="class",
        classes=(0, 1),
        target_names=("rejected", "approved"),
        categorical=tuple(AUSTRALIAN_CATEGORICAL),
        title="Statlog (Australian Credit Approval)",
        source="UCI ML Repository #143 (Quinlan), australian.dat",
        processing=("8 categorical attributes as category dtype",) * 2,
    ),
}
