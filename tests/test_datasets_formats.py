"""Loaders on tiny files built in each real layout: ACS (folktables), OpenML cache,
tabular-benchmark HF layout, analogues, Purchase-100, Texas-100.

No network: socket use fails the test and ``TABMIA_OFFLINE`` is set.
"""

from __future__ import annotations

import gzip
import importlib
import io
import os
import socket
import sys
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the package may not be installed in the venv
    sys.path.insert(0, str(ROOT))

import tabmia.datasets as tds  # noqa: E402
from tabmia.datasets import DataNotFoundError, _openml_cache, load_dataset, purchase, texas  # noqa: E402  # noqa: E402

tds_openml = importlib.import_module("tabmia.datasets.openml")


@pytest.fixture(autouse=True)
def no_network(monkeypatch, tmp_path_factory):
    """Fail on any socket use; isolate caches and HOME from the real ones."""
    attempts: list[str] = []

    def _blocked(*args, **kwargs):
        attempts.append(repr(args[:2]))
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", _blocked)
    monkeypatch.setattr(socket.socket, "connect_ex", _blocked)
    monkeypatch.setattr(socket, "create_connection", _blocked)
    monkeypatch.setattr(socket, "getaddrinfo", _blocked)
    monkeypatch.setenv("TABMIA_OFFLINE", "1")
    monkeypatch.setenv("TABMIA_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.delenv("TABMIA_DATA", raising=False)
    yield
    assert not attempts, f"network access attempted: {attempts}"


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


# =========================================================================== ACS

ACS_COLUMNS = [
    "RT", "SERIALNO", "DIVISION", "SPORDER", "PUMA", "REGION", "ST", "ADJINC", "PWGTP", "AGEP",
    "CIT", "COW", "DEAR", "DEYE", "DREM", "MAR", "MIG", "MIL", "JWMNP", "JWTR", "SCHL", "SEX",
    "WKHP", "ANC", "DIS", "ESP", "ESR", "FER", "GCL", "HINS2", "NATIVITY", "OCCP", "PINCP",
    "POBP", "POVPIP", "POWPUMA", "PUBCOV", "RAC1P", "RELP", "SOCP", "NAICSP",
]  # fmt: skip


def make_psam(path: Path, n: int = 50, seed: int = 56) -> pd.DataFrame:
    """A small person file in the Census PUMS layout (Wyoming, FIPS 56)."""
    rng = np.random.default_rng(seed)
    age = rng.integers(5, 85, n)
    adult = age > 16
    esr = np.where(adult, rng.choice([1, 1, 1, 3, 6], n), np.nan)
    works = esr == 1
    df = pd.DataFrame(
        {
            "RT": "P",
            "SERIALNO": [f"2018HU{1000000 + i:07d}" for i in range(n)],
            "DIVISION": 8,
            "SPORDER": 1,
            "PUMA": rng.choice([100, 200, 300, 400, 500], n),
            "REGION": 4,
            "ST": 56,
            "ADJINC": 1013097,
            "PWGTP": rng.integers(0, 60, n),
            "AGEP": age,
            "CIT": rng.choice([1, 4, 5], n),
            "COW": np.where(works, rng.integers(1, 9, n), np.nan),
            "DEAR": rng.choice([1, 2], n),
            "DEYE": rng.choice([1, 2], n),
            "DREM": np.where(age >= 5, rng.choice([1, 2], n), np.nan),
            "MAR": rng.integers(1, 6, n),
            "MIG": rng.choice([1, 1, 2, 3], n),
            "MIL": np.where(adult, rng.integers(1, 5, n), np.nan),
            "JWMNP": np.where(works, rng.integers(1, 60, n), np.nan),
            "JWTR": np.where(works, rng.integers(1, 12, n), np.nan),
            "SCHL": rng.integers(1, 25, n),
            "SEX": rng.choice([1, 2], n),
            "WKHP": np.where(works, rng.integers(5, 60, n), np.nan),
            "ANC": rng.integers(1, 5, n),
            "DIS": rng.choice([1, 2], n),
            "ESP": np.where(age < 16, rng.integers(1, 9, n), np.nan),
            "ESR": esr,
            "FER": np.where((age > 15) & (age < 51), rng.choice([1, 2], n), np.nan),
            "GCL": np.where(age > 29, rng.choice([1, 2], n), np.nan),
            "HINS2": rng.choice([1, 2], n),
            "NATIVITY": rng.choice([1, 2], n),
            "OCCP": np.where(works, rng.choice([10, 2310, 4720, 9130], n), np.nan),
            "PINCP": np.where(age > 15, rng.integers(0, 120_000, n), np.nan),
            "POBP": rng.choice([56, 8, 303], n),
            "POVPIP": rng.integers(0, 502, n),
            "POWPUMA": np.where(works, rng.choice([100, 300], n), np.nan),
            "PUBCOV": rng.choice([1, 2], n),
            "RAC1P": rng.choice([1, 1, 2, 6, 8], n),
            "RELP": rng.integers(0, 18, n),
            "SOCP": np.where(works, "411011", ""),
            "NAICSP": np.where(works, "4MS", ""),
        }
    )[ACS_COLUMNS]
    path.parent.mkdir(parents=True, exist_ok=True)
    # Census files write integers without decimals and leave missing values empty.
    out = df.copy()
    for c in out.columns:
        if out[c].dtype.kind == "f":
            out[c] = out[c].map(lambda v: "" if pd.isna(v) else str(int(v)))
    out.to_csv(path, index=False)
    return df


def expected_rows(df: pd.DataFrame, task: str) -> pd.DataFrame:
    if task == "ACSIncome":
        return df[(df.AGEP > 16) & (df.PINCP > 100) & (df.WKHP > 0) & (df.PWGTP >= 1)]
    if task == "ACSPublicCoverage":
        return df[(df.AGEP < 65) & (df.PINCP <= 30000)]
    if task == "ACSTravelTime":
        return df[(df.AGEP > 16) & (df.PWGTP >= 1) & (df.ESR == 1)]
    if task == "ACSMobility":
        return df[(df.AGEP > 18) & (df.AGEP < 35)]
    return df  # ACSEmployment: no filter


@pytest.fixture
def acs_home(tmp_path):
    df = make_psam(tmp_path / "acs" / "2018" / "1-Year" / "psam_p56.csv")
    return tmp_path, df


@pytest.mark.parametrize(
    "task,target_of",
    [
        ("ACSIncome", lambda d: d.PINCP > 50000),
        ("ACSPublicCoverage", lambda d: d.PUBCOV == 1),
        ("ACSTravelTime", lambda d: d.JWMNP > 20),
        ("ACSMobility", lambda d: d.MIG == 1),
        ("ACSEmployment", lambda d: d.ESR == 1),
    ],
)
def test_fetch_acs_tasks(acs_home, task, target_of):
    home, df = acs_home
    b = tds.fetch_acs(task, "WY", 2018, data_home=home)
    exp = expected_rows(df, task)
    assert len(exp) > 3, "fixture must leave rows for every task"
    assert b.data.shape[0] == len(exp)
    assert b.target.tolist() == target_of(exp).astype(int).tolist()
    assert b.source_path == home / "acs" / "2018" / "1-Year" / "psam_p56.csv"
    for c in b.categorical_features:
        assert isinstance(b.data[c].dtype, pd.CategoricalDtype)
    assert "AGEP" not in b.categorical_features
    assert b.data["AGEP"].tolist() == exp["AGEP"].astype(float).tolist()
    assert len(b.group) == len(exp)


def test_fetch_acs_income_flags_code_columns(acs_home):
    home, _ = acs_home
    b = load_dataset("acs:ACSIncome:WY:2018", data_home=home)
    assert set(b.categorical_features) == {
        "COW",
        "SCHL",
        "MAR",
        "OCCP",
        "POBP",
        "RELP",
        "SEX",
        "RAC1P",
    }
    assert set(b.feature_names) - set(b.categorical_features) == {"AGEP", "WKHP"}
    assert b.target_names == ["PINCP <= 50000", "PINCP > 50000"]


def test_fetch_acs_read_only_home_is_not_written(acs_home):
    home, _ = acs_home
    before = snapshot(home)
    for d in [home, *[p for p in home.rglob("*") if p.is_dir()]]:
        d.chmod(0o555)
    try:
        b = tds.fetch_acs("ACSIncome", "wy", data_home=home)
        assert b.data.shape[0] > 0
    finally:
        for d in [home, *[p for p in home.rglob("*") if p.is_dir()]]:
            d.chmod(0o755)
    assert snapshot(home) == before


def test_fetch_acs_missing_file_names_exact_path(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        tds.fetch_acs("ACSIncome", "WY", 2018, data_home=tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "acs" / "2018" / "1-Year" / "psam_p56.csv") in msg
    assert "download=True" in msg
    assert list(tmp_path.iterdir()) == []  # folktables' makedirs never ran
    with pytest.raises(DataNotFoundError, match="TABMIA_OFFLINE"):
        tds.fetch_acs("ACSMobility", "CA", 2016, data_home=tmp_path, download=True)
    with pytest.raises(DataNotFoundError) as err2:
        tds.fetch_acs("ACSMobility", "CA", 2016, data_home=tmp_path)
    assert str(tmp_path / "acs" / "2016" / "1-Year" / "ss16pca.csv") in str(err2.value)
    with pytest.raises(ValueError):
        tds.fetch_acs("ACSIncome", "XX", data_home=tmp_path)
    with pytest.raises(ValueError):
        tds.fetch_acs("ACSNope", "WY", data_home=tmp_path)


# =========================================================================== OpenML cache

TASK_XML = """<oml:task xmlns:oml="http://openml.org/openml">
<oml:task_id>{tid}</oml:task_id><oml:task_name>Task {tid}</oml:task_name>
<oml:task_type_id>1</oml:task_type_id><oml:task_type>Supervised Classification</oml:task_type>
<oml:input name="source_data"><oml:data_set><oml:data_set_id>{did}</oml:data_set_id>
<oml:target_feature>label</oml:target_feature></oml:data_set></oml:input>
<oml:input name="estimation_procedure"><oml:estimation_procedure><oml:id>1</oml:id>
<oml:type>crossvalidation</oml:type>
<oml:data_splits_url>https://api.openml.org/api_splits/get/{tid}/Task_{tid}_splits.arff</oml:data_splits_url>
<oml:parameter name="number_repeats">1</oml:parameter><oml:parameter name="number_folds">10</oml:parameter>
</oml:estimation_procedure></oml:input></oml:task>"""

DESCRIPTION_XML = """<oml:data_set_description xmlns:oml="http://openml.org/openml">
<oml:id>{did}</oml:id><oml:name>eye_movements</oml:name><oml:version>1</oml:version>
<oml:format>ARFF</oml:format><oml:upload_date>2022-06-01T00:00:00</oml:upload_date>
<oml:file_id>1</oml:file_id><oml:url>https://api.openml.org/data/v1/download/1/eye.arff</oml:url>
<oml:default_target_attribute>label</oml:default_target_attribute><oml:status>active</oml:status>
</oml:data_set_description>"""

FEATURE_XML = (
    "<oml:feature><oml:index>{i}</oml:index><oml:name>{name}</oml:name>"
    "<oml:data_type>{dtype}</oml:data_type>{nominal}<oml:is_target>{target}</oml:is_target>"
    "<oml:is_ignore>false</oml:is_ignore><oml:is_row_identifier>false</oml:is_row_identifier>"
    "<oml:number_of_missing_values>0</oml:number_of_missing_values></oml:feature>"
)


def make_openml_cache(
    root: Path, tid: int = 361070, did: int = 44130, n: int = 24, *, arff: bool = True
) -> Path:
    """An openml-python cache folder (``<root>/org/openml/www/...``) for one task."""
    server = root / "org" / "openml" / "www"
    (server / "tasks" / str(tid)).mkdir(parents=True)
    (server / "tasks" / str(tid) / "task.xml").write_text(TASK_XML.format(tid=tid, did=did))
    ddir = server / "datasets" / str(did)
    ddir.mkdir(parents=True)
    (ddir / "description.xml").write_text(DESCRIPTION_XML.format(did=did))
    feats = [
        FEATURE_XML.format(i=0, name="fixDur", dtype="numeric", nominal="", target="false"),
        FEATURE_XML.format(
            i=1, name="nextWordRegress", dtype="nominal", target="false",
            nominal="<oml:nominal_value>0</oml:nominal_value><oml:nominal_value>1</oml:nominal_value>",
        ),
        FEATURE_XML.format(
            i=2, name="label", dtype="nominal", target="true",
            nominal="<oml:nominal_value>0</oml:nominal_value><oml:nominal_value>1</oml:nominal_value>",
        ),
    ]  # fmt: skip
    (ddir / "features.xml").write_text(
        '<oml:data_features xmlns:oml="http://openml.org/openml">'
        + "".join(feats)
        + "</oml:data_features>"
    )
    if arff:
        rows = "\n".join(f"{100 + i * 7.5},{i % 2},{(i // 2) % 2}" for i in range(n))
        (ddir / "dataset.arff").write_text(
            "@RELATION eye_movements\n@ATTRIBUTE fixDur NUMERIC\n@ATTRIBUTE nextWordRegress {0,1}\n"
            f"@ATTRIBUTE label {{0,1}}\n@DATA\n{rows}\n"
        )
    return root


def test_openml_cache_is_copied_and_read_offline(tmp_path):
    home = tmp_path / "home"
    make_openml_cache(home / "openml")
    before = snapshot(home)
    for d in [home, *[p for p in home.rglob("*") if p.is_dir()]]:
        d.chmod(0o555)  # a read-only shared cache
    try:
        b = tds.fetch_openml_task(361070, data_home=home)
    finally:
        for d in [home, *[p for p in home.rglob("*") if p.is_dir()]]:
            d.chmod(0o755)
    assert b.origin == "openml-cache"
    assert b.data.shape == (24, 2) and b.target.value_counts().to_dict() == {0: 12, 1: 12}
    assert b.categorical_features == ["nextWordRegress"]
    assert isinstance(b.data["nextWordRegress"].dtype, pd.CategoricalDtype)
    assert "exact OpenML version" in b.DESCR
    assert snapshot(home) == before  # no pickle caches or renames in the original
    import openml  # config restored afterwards

    assert Path(openml.config.get_cache_directory()).parts[-3:] == ("org", "openml", "www")
    assert str(home) not in openml.config.get_cache_directory()


def test_openml_incomplete_cache_is_left_intact(tmp_path):
    home = tmp_path / "home"
    make_openml_cache(
        home / "openml", arff=False
    )  # data file missing: openml would delete the folder
    before = snapshot(home)
    with pytest.raises(DataNotFoundError) as err:
        tds.fetch_openml_task(361070, data_home=home)
    assert snapshot(home) == before
    msg = str(err.value)
    assert str(home / "tabular-benchmark" / "clf_num" / "eye_movements.csv.gz") in msg
    assert "lacks task 361070" in msg and "TABMIA_OFFLINE" in msg


def test_openml_cache_blocks_network_even_without_offline_flag(monkeypatch, tmp_path):
    monkeypatch.delenv("TABMIA_OFFLINE")
    make_openml_cache(tmp_path / "openml", arff=False)
    assert _openml_cache.load_task_from_cache(tmp_path / "openml", 361070) is None
    # download step: the probe fails (socket guard raises OSError) -> reported, no openml call
    monkeypatch.setattr(tds_openml, "openml_reachable", lambda *a, **k: False)
    with pytest.raises(DataNotFoundError, match="unreachable"):
        tds.fetch_openml_task(361070, data_home=tmp_path)


# =========================================================================== HF layout


def test_hf_layout_clf_num_and_clf_cat(tmp_path):
    bench = tmp_path / "tabular-benchmark"
    rng = np.random.default_rng(0)
    num = pd.DataFrame(
        {"lineNo": np.arange(10.0), "prevFixDur": rng.random(10), "label": [0, 1] * 5}
    )
    (bench / "clf_num").mkdir(parents=True)
    num.to_csv(bench / "clf_num" / "eye_movements.csv.gz", index=False)
    b = tds.fetch_openml_task(361070, data_home=tmp_path)
    assert (
        b.origin == "hf" and b.data.shape == (10, 2) and b.feature_names == ["lineNo", "prevFixDur"]
    )
    assert b.target.tolist() == [0, 1] * 5 and b.categorical_features == []
    assert b.source_path == bench / "clf_num" / "eye_movements.csv.gz" and "exact" in b.DESCR

    cat = pd.DataFrame(
        {"date": rng.random(6), "day": [1, 2, 3, 4, 5, 6], "class": ["UP", "DOWN"] * 3}
    )
    (bench / "clf_cat").mkdir()
    cat.to_csv(bench / "clf_cat" / "electricity.csv", index=False)
    c = load_dataset("openml:361110", data_home=tmp_path)
    assert c.categorical_features == ["day"] and c.target_names == ["DOWN", "UP"]
    assert c.target.tolist() == [1, 0] * 3
    X, y = tds.fetch_openml_task(361110, data_home=tmp_path, return_X_y=True)
    assert X.shape == (6, 2) and len(y) == 6


# =========================================================================== analogues


def test_analogues_from_original_layouts(tmp_path):
    rng = np.random.default_rng(1)
    wine_cols = ["fixed acidity", "volatile acidity", "citric acid", "residual sugar", "chlorides",
                 "free sulfur dioxide", "total sulfur dioxide", "density", "pH", "sulphates", "alcohol"]  # fmt: skip
    for color, q in [("red", [5, 6, 7, 8, 5, 5]), ("white", [6, 7, 5, 5, 6, 9, 4])]:
        df = pd.DataFrame(rng.random((len(q), 11)), columns=wine_cols).assign(quality=q)
        path = tmp_path / "wine_quality" / f"winequality-{color}.csv.gz"
        path.parent.mkdir(exist_ok=True)
        df.to_csv(path, sep=";", index=False)
    with pytest.raises(DataNotFoundError, match="analogue=True") as err:
        tds.fetch_openml_task(361057, data_home=tmp_path)
    assert str(tmp_path / "tabular-benchmark" / "clf_num" / "wine.csv.gz") in str(err.value)
    w = tds.fetch_openml_task(361057, data_home=tmp_path, analogue=True, random_state=3)
    assert w.origin == "analogue" and "ANALOGUE" in w.DESCR
    assert w.data.shape == (8, 11) and w.target.value_counts().to_dict() == {0: 4, 1: 4}
    w2 = tds.fetch_openml_task(361057, data_home=tmp_path, analogue=True, random_state=3)
    pd.testing.assert_frame_equal(w.data, w2.data)

    from tabmia.datasets._analogues import KDD_NUMERIC_FEATURES

    n = 12
    kdd = pd.DataFrame({c: rng.integers(0, 50, n).astype(str) for c in KDD_NUMERIC_FEATURES})
    kdd["sex"] = "Male"
    kdd["class"] = [
        "Driver",
        "",
        "Bus_or_streetcar",
        "",
        "Passenger",
        "",
        "",
        "Walked_only",
        "",
        "",
        "Other",
        "",
    ]
    kdd.loc[0, "rent"] = ""  # a missing numeric value: row dropped
    kdd.to_csv(tmp_path / "kdd_ipums_la_97_small.csv", index=False)
    (tmp_path / "kdd_ipums_la_97_small").mkdir()
    kdd.to_csv(tmp_path / "kdd_ipums_la_97_small" / "kdd_ipums_la_97-small.csv.gz", index=False)
    k = tds.fetch_openml_task(361064, data_home=tmp_path, analogue=True)
    assert k.data.shape == (6, 20) and k.target.value_counts().to_dict() == {0: 3, 1: 3}
    assert k.target_names == ["N", "P"]

    (tmp_path / "phoneme").mkdir()
    ph = pd.DataFrame(rng.normal(size=(9, 5)), columns=[f"V{i}" for i in range(1, 6)])
    ph["Class"] = [1, 1, 1, 1, 1, 1, 2, 2, 2]
    ph.to_csv(tmp_path / "phoneme" / "phoneme_openml.csv.gz", index=False)
    p = load_dataset("openml:361067", data_home=tmp_path, analogue=True, random_state=0)
    assert p.data.shape == (6, 5) and p.target.value_counts().to_dict() == {0: 3, 1: 3}


# =========================================================================== Purchase-100


def make_purchase(path: Path, n: int = 30, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(1, 101, n)
    feats = rng.integers(0, 2, (n, 600))
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [",".join(map(str, [lab, *row])) for lab, row in zip(labels, feats, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return feats, labels


def test_purchase100_parse_and_cache(tmp_path):
    feats, labels = make_purchase(tmp_path / "purchase100" / "dataset_purchase")
    b = tds.fetch_purchase100(data_home=tmp_path)
    assert b.data.dtype == np.uint8 and b.data.shape == (30, 600)
    np.testing.assert_array_equal(b.data, feats)
    np.testing.assert_array_equal(b.target, labels - 1)
    assert b.target.min() >= 0 and b.target.max() <= 99 and len(b.feature_names) == 600
    cache_root = Path(os.environ["TABMIA_CACHE"]) / "purchase100"
    assert len(list(cache_root.glob("dataset_purchase-*.npz"))) == 1
    assert "cached to" in b.DESCR
    again = load_dataset("purchase100", data_home=tmp_path)
    assert "loaded from cache" in again.DESCR
    np.testing.assert_array_equal(again.data, b.data)
    # a changed source invalidates the cache
    feats2, labels2 = make_purchase(tmp_path / "purchase100" / "dataset_purchase", n=31, seed=1)
    third = tds.fetch_purchase100(data_home=tmp_path)
    assert third.data.shape == (31, 600) and "parsed" in third.DESCR


def test_purchase100_gz_and_read_only_home(monkeypatch, tmp_path):
    make_purchase(tmp_path / "src")
    home = tmp_path / "home"
    (home / "purchase100").mkdir(parents=True)
    with gzip.open(home / "purchase100" / "dataset_purchase.csv.gz", "wb") as fh:
        fh.write((tmp_path / "src").read_bytes())
    monkeypatch.delenv("TABMIA_CACHE")
    before = snapshot(home)
    for d in (home, home / "purchase100"):
        d.chmod(0o555)
    try:
        b = tds.fetch_purchase100(data_home=home)
    finally:
        for d in (home, home / "purchase100"):
            d.chmod(0o755)
    assert b.data.shape == (30, 600)
    assert snapshot(home) == before  # cache went to ~/.cache/tabmia, not the data home
    assert list((Path(os.environ["HOME"]) / ".cache" / "tabmia" / "purchase100").glob("*.npz"))


def test_purchase100_missing_names_paths_and_download_offline(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        tds.fetch_purchase100(data_home=tmp_path)
    assert str(tmp_path / "purchase100" / "dataset_purchase") in str(err.value)
    with pytest.raises(DataNotFoundError, match="TABMIA_OFFLINE"):
        tds.fetch_purchase100(data_home=tmp_path, download=True)


def test_purchase100_download_from_local_archive(monkeypatch, tmp_path):
    make_purchase(tmp_path / "build" / "dataset_purchase", n=12)
    tgz = tmp_path / "mirror" / "dataset_purchase.tgz"
    tgz.parent.mkdir()
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(tmp_path / "build" / "dataset_purchase", arcname="./dataset_purchase")
    monkeypatch.delenv("TABMIA_OFFLINE")
    monkeypatch.setattr(purchase, "PURCHASE_URLS", ((tmp_path / "nope.tgz").as_uri(), tgz.as_uri()))
    home = tmp_path / "home"
    b = tds.fetch_purchase100(data_home=home, download=True)
    assert b.data.shape == (12, 600)
    assert (home / "purchase100" / "dataset_purchase").is_file()


# =========================================================================== Texas-100


def make_texas(
    folder: Path, n: int = 20, d: int = 6169, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    feats = (rng.random((n, d)) < 0.01).astype(np.uint8)
    labels = rng.integers(1, 101, n)
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    np.savetxt(buf, feats, fmt="%d", delimiter=",")
    (folder / "feats").write_text(buf.getvalue())
    (folder / "labels").write_text("\n".join(map(str, labels)) + "\n")
    return feats, labels


@pytest.mark.parametrize("layout", ["texas100", "texas100/texas/100"])
def test_texas100_layouts_and_cache(tmp_path, layout):
    feats, labels = make_texas(tmp_path / layout)
    b = tds.fetch_texas100(data_home=tmp_path)
    assert sp.issparse(b.data) and b.data.format == "csr" and b.data.dtype == np.uint8
    assert b.data.shape == (20, 6169)
    np.testing.assert_array_equal(b.data.toarray(), feats)
    np.testing.assert_array_equal(b.target, labels - 1)
    assert b.source_path == tmp_path / layout / "feats"
    again = load_dataset("texas100", data_home=tmp_path)
    assert "loaded from cache" in again.DESCR
    assert (again.data != b.data).nnz == 0


def test_texas100_missing_names_paths(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        tds.fetch_texas100(data_home=tmp_path)
    msg = str(err.value)
    assert (
        str(tmp_path / "texas100" / "feats") in msg and str(tmp_path / "texas100" / "labels") in msg
    )
    assert str(tmp_path / "texas100" / "texas" / "100" / "feats") in msg


def test_texas100_download_from_local_archive(monkeypatch, tmp_path):
    make_texas(tmp_path / "build" / "texas" / "100", n=5, d=50)
    tgz = tmp_path / "dataset_texas.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(tmp_path / "build" / "texas", arcname="texas")
    monkeypatch.delenv("TABMIA_OFFLINE")
    monkeypatch.setattr(texas, "TEXAS_URLS", (tgz.as_uri(),))
    b = tds.fetch_texas100(data_home=tmp_path / "home", download=True)
    assert b.data.shape == (5, 50)
    assert (tmp_path / "home" / "texas100" / "texas" / "100" / "labels").is_file()
