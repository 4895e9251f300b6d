"""ACS PUMS prediction tasks (folktables) from Census person files.

Files are laid out the way folktables expects them under ``<home>/acs``:
``<home>/acs/<year>/<horizon>/psam_p<FIPS>.csv`` for 2017 and later
(``ss<yy>p<state>.csv`` before 2017), e.g. ``acs/2018/1-Year/psam_p56.csv``
for Wyoming.  folktables itself is imported only when a file is loaded.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ._common import make_bunch, to_categorical
from ._home import (
    ENV_OFFLINE,
    get_data_home,
    get_download_home,
    missing_data_error,
    offline_mode,
    search_roots,
)

__all__ = ["ACS_CATEGORICAL", "ACS_TASKS", "STATE_FIPS", "acs_person_relpath", "fetch_acs"]

PathLike = str | os.PathLike

# Same codes as folktables.load_acs._STATE_CODES (2-digit FIPS; PR = 72).
STATE_FIPS = {
    "AL": "01", "AK": "02", "AZ": "04", "AR": "05", "CA": "06", "CO": "08", "CT": "09",
    "DE": "10", "FL": "12", "GA": "13", "HI": "15", "ID": "16", "IL": "17", "IN": "18",
    "IA": "19", "KS": "20", "KY": "21", "LA": "22", "ME": "23", "MD": "24", "MA": "25",
    "MI": "26", "MN": "27", "MS": "28", "MO": "29", "MT": "30", "NE": "31", "NV": "32",
    "NH": "33", "NJ": "34", "NM": "35", "NY": "36", "NC": "37", "ND": "38", "OH": "39",
    "OK": "40", "OR": "41", "PA": "42", "RI": "44", "SC": "45", "SD": "46", "TN": "47",
    "TX": "48", "UT": "49", "VT": "50", "VA": "51", "WA": "53", "WV": "54", "WI": "55",
    "WY": "56", "PR": "72",
}  # fmt: skip

# folktables task objects supported, with readable names for the 0/1 target.
ACS_TASKS = {
    "ACSIncome": ["PINCP <= 50000", "PINCP > 50000"],
    "ACSPublicCoverage": ["no public coverage", "public coverage (PUBCOV == 1)"],
    "ACSTravelTime": ["JWMNP <= 20", "JWMNP > 20"],
    "ACSMobility": ["moved (MIG != 1)", "same residence (MIG == 1)"],
    "ACSEmployment": ["not employed", "employed (ESR == 1)"],
    "ACSEmploymentFiltered": ["not employed", "employed (ESR == 1)"],
    "ACSHealthInsurance": ["no HINS2", "HINS2 == 1"],
    "ACSIncomePovertyRatio": ["POVPIP >= 250", "POVPIP < 250"],
}

# PUMS variables that are codes, not quantities (flagged categorical when used as features).
ACS_CATEGORICAL = {
    "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "SEX", "RAC1P", "DIS", "ESP", "CIT",
    "MIG", "MIL", "ANC", "NATIVITY", "DEAR", "DEYE", "DREM", "ESR", "ST", "FER", "PUMA",
    "JWTR", "POWPUMA", "GCL", "RACAIAN", "RACASN", "RACBLK", "RACNH", "RACPI", "RACSOR",
    "RACWHT",
}  # fmt: skip


def acs_person_relpath(state: str, year: int = 2018, horizon: str = "1-Year") -> str:
    """Path of a state's person file relative to the data home, as folktables lays it out.

    Parameters
    ----------
    state : str
        Two-letter postal code (``"WY"``).
    year : int
        Survey year (>= 2014).
    horizon : {"1-Year", "5-Year"}

    Returns
    -------
    str
        e.g. ``"acs/2018/1-Year/psam_p56.csv"``.
    """
    state = state.upper()
    if state not in STATE_FIPS:
        raise ValueError(f"unknown state {state!r}; expected one of {sorted(STATE_FIPS)}")
    if int(year) >= 2017:
        fname = f"psam_p{STATE_FIPS[state]}.csv"
    else:
        fname = f"ss{str(year)[-2:]}p{state.lower()}.csv"
    return f"acs/{int(year)}/{horizon}/{fname}"


def fetch_acs(
    task: str,
    state: str,
    year: int = 2018,
    data_home: PathLike | None = None,
    *,
    horizon: str = "1-Year",
    download: bool = False,
    return_X_y: bool = False,
) -> Bunch | tuple[pd.DataFrame, pd.Series]:
    """Load a folktables ACS task for one state and year.

    Parameters
    ----------
    task : str
        folktables task name: ``"ACSIncome"``, ``"ACSPublicCoverage"``,
        ``"ACSTravelTime"``, ``"ACSMobility"``, ``"ACSEmployment"`` (also
        ``"ACSEmploymentFiltered"``, ``"ACSHealthInsurance"``,
        ``"ACSIncomePovertyRatio"``).
    state : str
        Two-letter state code, e.g. ``"WY"``.
    year : int, default=2018
        Survey year (>= 2014).
    data_home : str or path-like, optional
        Data home; the person file is ``<home>/acs/<year>/<horizon>/psam_pXX.csv``.
    horizon : {"1-Year", "5-Year"}, default="1-Year"
    download : bool, default=False
        If the file is missing, let folktables download it from the Census
        Bureau into ``<home>/acs`` (or into the cache home when the data home
        is read-only).  Never attempted when ``TABMIA_OFFLINE`` is set.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``data``: the task's features after folktables' row filter
        (``df_to_pandas``); code variables (COW, SCHL, MAR, OCCP, POBP, RELP,
        SEX, RAC1P, ...) as ``category`` dtype, quantities (AGEP, WKHP, PINCP,
        POVPIP, JWMNP) as float.  Missing values are 0, as produced by
        folktables' postprocessing.  ``target``: the task's 0/1 label.  Extra
        field ``group``: the task's group variable (RAC1P).

    Raises
    ------
    DataNotFoundError
        If the person file is missing and not downloaded; the message names the
        exact ``psam_pXX.csv`` path(s).
    """
    if task not in ACS_TASKS:
        raise ValueError(f"unknown ACS task {task!r}; expected one of {list(ACS_TASKS)}")
    if horizon not in ("1-Year", "5-Year"):
        raise ValueError(f"horizon must be '1-Year' or '5-Year', got {horizon!r}")
    if int(year) < 2014:
        raise ValueError("folktables supports survey years >= 2014")
    state = state.upper()
    rel = acs_person_relpath(state, year, horizon)
    home = get_data_home(data_home)
    roots = search_roots(data_home)
    looked = [r / rel for r in roots]
    found = next((p for p in looked if p.is_file()), None)
    what = f"ACS PUMS {year} {horizon} person file for {state} ({task})"
    hint = (
        "Download the state's person CSV (csv_p<state>.zip) from "
        f"https://www2.census.gov/programs-surveys/acs/data/pums/{year}/{horizon}/ and unzip it "
        "there, or pass download=True."
    )
    if found is not None:
        root_dir = found.parents[2]  # <root>/acs
        fetch = False
    elif not download:
        raise missing_data_error(
            looked,
            what=what,
            data_home=home,
            hint=hint,
            download_note="Download not attempted (download=False).",
        )
    elif offline_mode():
        raise missing_data_error(
            looked, what=what, data_home=home, hint=hint,
            download_note=f"Download not attempted: {ENV_OFFLINE} is set.",
        )  # fmt: skip
    else:
        dl_home = get_download_home(data_home)
        if dl_home is None:
            raise missing_data_error(
                looked, what=what, data_home=home, hint=hint,
                download_note="Download not possible: no writable data home or cache directory.",
            )  # fmt: skip
        root_dir = dl_home / "acs"
        found = dl_home / rel
        if found not in looked:
            looked.append(found)
        fetch = True

    import folktables  # lazy: optional dependency

    source = folktables.ACSDataSource(
        survey_year=str(int(year)), horizon=horizon, survey="person", root_dir=str(root_dir)
    )
    try:
        raw = source.get_data(states=[state], download=fetch)
    except (OSError, ValueError) as exc:
        if not fetch:
            raise
        raise missing_data_error(
            looked, what=what, data_home=home, hint=hint,
            download_note=f"Download through folktables failed: {type(exc).__name__}: {exc}",
        ) from None  # fmt: skip
    problem = getattr(folktables, task)
    X, y_df, group_df = problem.df_to_pandas(raw)
    X = X.reset_index(drop=True)
    categorical = [c for c in X.columns if c in ACS_CATEGORICAL]
    for col in categorical:
        X[col] = X[col].round().astype(np.int64)
    to_categorical(X, categorical)
    y = y_df.iloc[:, 0].astype(np.int64).rename(problem.target).reset_index(drop=True)
    descr = (
        f"folktables {task}, {state} {year} {horizon}\n\n"
        f"Source: US Census Bureau ACS PUMS person file, read with folktables "
        f"(Ding et al. 2021).\nFile read: {found}\n"
        f"Processing: folktables' {task} row filter and features (df_to_pandas); missing values "
        "are 0 as produced by folktables' postprocessing; code variables as category dtype.\n"
        "Status: exact folktables task on the given file.\n"
    )
    return make_bunch(
        X,
        y,
        feature_names=[str(c) for c in X.columns],
        categorical_features=categorical,
        target_names=ACS_TASKS[task],
        descr=descr,
        source_path=found,
        return_X_y=return_X_y,
        group=group_df.iloc[:, 0].to_numpy(),
    )
