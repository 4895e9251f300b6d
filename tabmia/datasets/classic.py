"""Loaders for small classic tabular data sets (credit, census, health).

Each loader reads ``<data home>/<folder>/<file>`` with the folder names used in
the shared data directory (``adult/``, ``german_credit/``, ...), accepts the
file gzipped or plain, returns a :class:`sklearn.utils.Bunch` (or ``(X, y)``
with ``return_X_y=True``) whose ``data`` is a DataFrame with categorical
columns as pandas ``category`` dtype, and whose ``target`` is an ``int64``
Series ``0..k-1`` named after the original label column (``target_names[i]``
is the original label of code ``i``).

Every file-based data set is one row of the table in
:mod:`tabmia.datasets._classic_table` (where its files may lie, how each
layout is read, its target and categorical columns) read by one loader; the
public ``load_*`` functions only name their options and documentation.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np

from tabmia._docstrings import Substitution

from ._classic_table import (  # noqa: F401  (column tables re-exported for callers)
    _SPECS,
    ADULT_CATEGORICAL,
    ADULT_COLUMNS,
    AUSTRALIAN_CATEGORICAL,
    BANK_CATEGORICAL,
    CLEVELAND_CATEGORICAL,
    COMPAS_CATEGORICAL,
    COMPAS_FEATURES,
    GERMAN_CATEGORICAL,
    HEPATITIS_CATEGORICAL,
    STATLOG_CATEGORICAL,
    TAIWAN_CATEGORICAL,
    PathLike,
    Result,
    _descr,
    _load,
    _read_uci_adult,
)
from ._common import make_bunch

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


#: The loaders' shared docstring lines: ``{data_home}`` opens the Parameters section
#: with the data home, ``{return_X_y}`` closes it and opens Returns with its type.
_loader_docs = Substitution(
    data_home="""
    Parameters
    ----------
    data_home : str or path-like, optional
        Data home.
    """,
    return_X_y="""
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
    """,
)


# --------------------------------------------------------------------------- public loaders


@_loader_docs
def load_breast_cancer(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Wisconsin diagnostic breast cancer data (569 x 30), shipped with scikit-learn.

    Parameters
    ----------
    data_home : str or path-like, optional
        Ignored (the data ships with scikit-learn); accepted for a uniform API.
    {return_X_y}
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


@_loader_docs
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
    {return_X_y}
        ``data``: 14 features (8 categorical); ``target``: ``income`` as 0/1
        (1 = ``>50K``; the ``.`` suffix of adult.test is removed); extra field
        ``split`` (``"train"``/``"test"``, the original UCI split) per row.
    """
    return _load(
        _SPECS["adult"],
        data_home,
        return_X_y=return_X_y,
        drop_missing=drop_missing,
        download=download,
    )


@_loader_docs
def load_german_credit(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Statlog German Credit (1,000 x 20), OpenML ``credit-g`` layout.

    Reads ``<home>/german_credit/credit-g.csv[.gz]`` (OpenML/Weka labels), else
    the UCI file ``german_credit/german.data[.gz]`` (attribute codes such as
    ``A11`` kept as category values, same column names and order).

    {data_home}
    {return_X_y}
        ``target``: 0 = good, 1 = bad credit risk (700 / 300).
    """
    return _load(_SPECS["german_credit"], data_home, return_X_y=return_X_y)


@_loader_docs
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

    {data_home}
    drop_missing : bool, default=False
        Drop rows with a missing value (75 of 155 rows have one).
    {return_X_y}
        ``target``: 0 = LIVE, 1 = DIE (123 / 32).
    """
    return _load(_SPECS["hepatitis"], data_home, return_X_y=return_X_y, drop_missing=drop_missing)


@_loader_docs
def load_taiwan_default(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Default of credit card clients, Taiwan (30,000 x 23; Yeh & Lien 2009, UCI #350).

    Reads ``<home>/taiwan_default/UCI_Credit_Card.csv[.gz]`` (the common CSV
    conversion of the UCI XLS: ``ID``, 23 named features, target
    ``default.payment.next.month``).

    {data_home}
    {return_X_y}
        ``target``: 1 = default next month (6,636 of 30,000).
    """
    return _load(_SPECS["taiwan_default"], data_home, return_X_y=return_X_y)


@_loader_docs
def load_give_me_some_credit(
    data_home: PathLike | None = None,
    *,
    drop_missing: bool = False,
    return_X_y: bool = False,
) -> Result:
    """Give Me Some Credit (Kaggle 2011 training file, 150,000 x 10).

    Reads ``<home>/give_me_some_credit/cs-training.csv[.gz]`` (first unnamed
    column is a row id and is dropped).

    {data_home}
    drop_missing : bool, default=False
        Drop rows with a missing ``MonthlyIncome`` or ``NumberOfDependents``.
    {return_X_y}
        ``target``: ``SeriousDlqin2yrs`` (10,026 positives).
    """
    return _load(
        _SPECS["give_me_some_credit"],
        data_home,
        return_X_y=return_X_y,
        drop_missing=drop_missing,
    )


@_loader_docs
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

    {data_home}
    binary : {False, True, "<30", "any"}, default=False
        Target ``readmitted``.  ``False``: three classes, 0 = ``NO``,
        1 = ``>30``, 2 = ``<30``.  ``True`` or ``"<30"``: 1 = readmitted within
        30 days (``<30``), 0 = ``NO`` or ``>30`` (the usual clinical target).
        ``"any"``: 1 = readmitted at all (``<30`` or ``>30``), 0 = ``NO``.
    {return_X_y}
        47 features (39 categorical: 36 text columns and 3 id codes).
    """
    return _load(_SPECS["diabetes130"], data_home, return_X_y=return_X_y, binary=binary)


@_loader_docs
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

    {data_home}
    variant : {"cleveland", "statlog"}
        Which data set.
    binary : bool, default=True
        Cleveland only: ``True`` gives 1 = disease (``num`` > 0), ``False``
        keeps ``num`` 0-4.  Statlog is always binary (1 = presence).
    {return_X_y}
        13 features (7 categorical).
    """
    if variant == "cleveland":
        return _load(_SPECS["heart_cleveland"], data_home, return_X_y=return_X_y, binary=binary)
    if variant == "statlog":
        return _load(_SPECS["heart_statlog"], data_home, return_X_y=return_X_y)
    raise ValueError(f"variant must be 'cleveland' or 'statlog', got {variant!r}")


@_loader_docs
def load_bank_marketing(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Bank Marketing, full table (45,211 x 16; Moro et al. 2014, UCI #222).

    Reads ``<home>/bank_marketing/bank-full.csv[.gz]`` (``;``-separated).
    Note: ``duration`` is only known after the call and leaks the target (see
    the UCI description); drop it for a realistic model.

    {data_home}
    {return_X_y}
        ``target``: ``y``, 1 = subscribed (5,289 of 45,211).
    """
    return _load(_SPECS["bank_marketing"], data_home, return_X_y=return_X_y)


@_loader_docs
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

    {data_home}
    propublica_filter : bool, default=True
        Apply ProPublica's filter (``|days_b_screening_arrest| <= 30``,
        ``is_recid != -1``, ``c_charge_degree != "O"``, ``score_text != "N/A"``),
        giving 6,172 rows.
    {return_X_y}
        ``target``: ``two_year_recid`` (0/1).
    """
    return _load(
        _SPECS["compas"],
        data_home,
        return_X_y=return_X_y,
        propublica_filter=propublica_filter,
    )


@_loader_docs
def load_pima_diabetes(data_home: PathLike | None = None, *, return_X_y: bool = False) -> Result:
    """Pima Indians Diabetes (768 x 8; NIDDK).

    Reads ``<home>/pima_diabetes/pima_diabetes.csv[.gz]`` (Kaggle header), else
    the header-less ``pima-indians-diabetes_noheader.csv[.gz]`` /
    ``pima-indians-diabetes.data``.  Zeros in Glucose, BloodPressure,
    SkinThickness, Insulin and BMI encode missing values, as in the original;
    they are left unchanged.

    {data_home}
    {return_X_y}
        ``target``: ``Outcome`` (268 of 768 positive).
    """
    return _load(_SPECS["pima_diabetes"], data_home, return_X_y=return_X_y)


@_loader_docs
def load_australian_credit(
    data_home: PathLike | None = None, *, return_X_y: bool = False
) -> Result:
    """Statlog Australian Credit Approval (690 x 14; Quinlan, UCI #143).

    Reads ``<home>/australian_credit/australian_credit.csv[.gz]`` (header
    ``A1..A14,class``), else the UCI ``australian.dat[.gz]`` (space-separated).
    The 8 categorical attributes (A1, A4, A5, A6, A8, A9, A11, A12 per
    ``australian.doc``) are category dtype.

    {data_home}
    {return_X_y}
        ``target``: ``class`` 0/1 (383 / 307; 1 = approved).
    """
    return _load(_SPECS["australian_credit"], data_home, return_X_y=return_X_y)
