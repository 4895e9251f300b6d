"""Data home, download helper, registry, offline errors and the classic loaders on tiny fixtures.

No test touches the network: an autouse guard makes every socket attempt fail
(and fails the test), and ``TABMIA_OFFLINE`` is set.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import socket
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the package may not be installed in the venv
    sys.path.insert(0, str(ROOT))

import tabmia.datasets as tds  # noqa: E402
from tabmia.datasets import DataNotFoundError, _classic_table, _home, classic, load_dataset  # noqa: E402  # noqa: E402

# --------------------------------------------------------------------------- guards


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


def write_gz(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf8", newline="") as fh:
        fh.write(text)
    return path


# --------------------------------------------------------------------------- data home


def test_get_data_home_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("TABMIA_DATA", str(tmp_path / "env"))
    assert tds.get_data_home(tmp_path / "arg") == tmp_path / "arg"
    assert tds.get_data_home() == tmp_path / "env"
    monkeypatch.delenv("TABMIA_DATA")
    assert tds.get_data_home() == Path(os.environ["HOME"]) / ".cache" / "tabmia"


def test_is_writable_dir_honours_mode_bits_even_for_root(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    assert _home.is_writable_dir(ro)
    ro.chmod(0o555)
    try:
        assert not _home.is_writable_dir(ro)
        assert not _home.is_writable_dir(ro / "missing" / "deeper")
    finally:
        ro.chmod(0o755)
    assert _home.is_writable_dir(tmp_path / "not" / "yet")


def test_cache_home_choice(monkeypatch, tmp_path):
    home = tmp_path / "data"
    home.mkdir()
    assert tds.get_cache_home(home) == Path(os.environ["TABMIA_CACHE"])
    monkeypatch.delenv("TABMIA_CACHE")
    assert tds.get_cache_home(home) == home  # writable data home
    home.chmod(0o555)
    try:
        assert tds.get_cache_home(home) == Path(os.environ["HOME"]) / ".cache" / "tabmia"
    finally:
        home.chmod(0o755)


def test_find_data_file_first_existing_and_error_lists_paths(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "b.csv").write_text("1")
    found = _home.find_data_file(["x/a.csv", "x/b.csv"], tmp_path, what="X")
    assert found == tmp_path / "x" / "b.csv"
    with pytest.raises(DataNotFoundError) as err:
        _home.find_data_file(["y/a.csv", "y/a.csv.gz"], tmp_path, what="Y", hint="put it there")
    msg = str(err.value)
    assert str(tmp_path / "y" / "a.csv") in msg and str(tmp_path / "y" / "a.csv.gz") in msg
    assert "put it there" in msg and "TABMIA_DATA" in msg
    assert isinstance(err.value, FileNotFoundError)
    assert err.value.paths == [tmp_path / "y" / "a.csv", tmp_path / "y" / "a.csv.gz"]


# --------------------------------------------------------------------------- download helper


def test_download_file_atomic_with_sha256(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"hello world\n" * 100)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    dest = tmp_path / "home" / "sub" / "file.bin"
    out = _home.download_file(src.as_uri(), dest, sha256=digest)
    assert out == dest and dest.read_bytes() == src.read_bytes()

    bad = tmp_path / "home" / "sub" / "bad.bin"
    with pytest.raises(ValueError, match="SHA-256 mismatch"):
        _home.download_file(src.as_uri(), bad, sha256="0" * 64)
    assert not bad.exists()
    assert not [p for p in bad.parent.iterdir() if p.name.endswith(".part")]


def test_download_refuses_read_only_dir(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"x")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(PermissionError):
            _home.download_file(src.as_uri(), ro / "f.bin")
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


def test_download_or_raise_offline_names_path(tmp_path):
    dest = tmp_path / "adult" / "adult.data"
    with pytest.raises(DataNotFoundError) as err:
        _home.download_or_raise(
            "https://example.invalid/adult.data", dest, sha256=None,
            looked=[dest], what="Adult", data_home=tmp_path,
        )  # fmt: skip
    assert str(dest) in str(err.value) and "TABMIA_OFFLINE" in str(err.value)


def test_download_failure_becomes_data_not_found(monkeypatch, tmp_path):
    monkeypatch.delenv("TABMIA_OFFLINE")
    dest = tmp_path / "d" / "f.csv"
    with pytest.raises(DataNotFoundError) as err:
        _home.download_or_raise(
            (tmp_path / "does-not-exist").as_uri(), dest, sha256=None,
            looked=[dest], what="F", data_home=tmp_path,
        )  # fmt: skip
    assert str(dest) in str(err.value) and "failed" in str(err.value)
    assert not dest.exists()


# --------------------------------------------------------------------------- registry & offline errors

FILE_BACKED = [n for n in tds.DATASETS if n != "breast_cancer"] + [
    "openml:361070",
    "openml:361057",
    "acs:ACSIncome:WY",
    "acs:ACSPublicCoverage:CA:2017",
]


@pytest.mark.parametrize("name", FILE_BACKED)
def test_every_loader_raises_data_not_found_on_empty_home(name, tmp_path):
    home = tmp_path / "empty"
    home.mkdir()
    with pytest.raises(DataNotFoundError) as err:
        load_dataset(name, data_home=home)
    assert str(home) in str(err.value)
    assert list(home.iterdir()) == []  # nothing created in the data home


def test_registry_names_and_unknown():
    names = tds.available_datasets()
    for n in [
        "breast_cancer", "adult", "german_credit", "hepatitis", "taiwan_default",
        "give_me_some_credit", "diabetes130", "heart_cleveland", "heart_statlog",
        "bank_marketing", "compas", "pima_diabetes", "australian_credit", "purchase100",
        "texas100", "openml:<task_id>", "acs:<Task>:<STATE>[:<year>]",
    ]:  # fmt: skip
        assert n in names
    with pytest.raises(ValueError, match="valid names: breast_cancer"):
        load_dataset("nope")
    with pytest.raises(ValueError, match="task id"):
        load_dataset("openml:abc")
    with pytest.raises(ValueError, match="ACS tasks"):
        load_dataset("acs:ACSFoo:WY")


def test_resolve_task_ids_and_suite_names():
    resolve = tds.resolve_dataset_name
    assert resolve("361070") == resolve("openml:361070") == "openml:361070"
    assert resolve("eye_movements") == resolve("Eye_Movements") == "openml:361070"
    assert resolve("openml:eye_movements") == "openml:361070"
    # names in both suites pick the clf_num task; clf_cat stays reachable by id
    assert resolve("electricity") == "openml:361060"
    assert resolve("default-of-credit-card-clients") == "openml:361275"
    assert resolve("361111") == "openml:361111"
    assert resolve("compas-two-years") == "openml:361286"  # clf_cat only
    # fixed names win over suite names and stay as they are
    assert resolve("bank_marketing") == "bank_marketing"
    assert resolve("bank-marketing") == "openml:361066"
    assert resolve("acs:ACSIncome:NY") == "acs:ACSIncome:NY"
    with pytest.raises(ValueError, match="valid names: .*<task_id>"):
        resolve("eye_movement")
    with pytest.raises(ValueError, match="year must be an integer"):
        resolve("acs:ACSIncome:NY:later")


@pytest.mark.parametrize("name", ["361070", "eye_movements"])
def test_load_dataset_resolves_ids_and_names_to_the_task_loader(name, tmp_path):
    home = tmp_path / "empty"
    home.mkdir()
    with pytest.raises(DataNotFoundError, match=r"OpenML task 361070 \(clf_num/eye_movements\)"):
        load_dataset(name, data_home=home, download=False)


def test_breast_cancer():
    b = load_dataset("breast_cancer")
    assert b.data.shape == (569, 30) and isinstance(b.data, pd.DataFrame)
    assert b.target.value_counts().to_dict() == {1: 357, 0: 212}
    assert b.categorical_features == [] and b.source_path.name == "breast_cancer.csv"
    X, y = tds.load_breast_cancer(return_X_y=True)
    assert X.shape == (569, 30) and len(y) == 569


# --------------------------------------------------------------------------- adult fixtures

ADULT_ROWS = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K",
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, >50K",
    "38, ?, 215646, HS-grad, 9, Divorced, ?, Not-in-family, White, Male, 0, 0, 40, United-States, <=50K",
]
ADULT_TEST_ROWS = [
    "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, United-States, <=50K.",
    "44, Private, 160323, Some-college, 10, Married-civ-spouse, Machine-op-inspct, Husband, Black, Male, 7688, 0, 40, ?, >50K.",
    "38, Private, 89814, HS-grad, 9, Married-civ-spouse, Farming-fishing, Husband, White, Male, 0, 0, 50, United-States, >50K.",
]


def _write_uci_adult(folder: Path, gz: bool = True) -> None:
    data = "\n".join(ADULT_ROWS) + "\n\n"
    test = "|1x3 Cross validator\n" + "\n".join(ADULT_TEST_ROWS) + "\n\n"
    if gz:
        write_gz(folder / "adult.data.gz", data)
        write_gz(folder / "adult.test.gz", test)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "adult.data").write_text(data)
        (folder / "adult.test").write_text(test)


def test_adult_uci_layout(tmp_path):
    _write_uci_adult(tmp_path / "adult")
    b = tds.load_adult(data_home=tmp_path, drop_missing=False)
    assert b.data.shape == (6, 14)
    assert b.target.tolist() == [0, 1, 0, 0, 1, 1]  # '.' suffix of adult.test handled
    assert list(b.split) == ["train"] * 3 + ["test"] * 3
    assert b.target_names == ["<=50K", ">50K"]
    assert set(b.categorical_features) == set(classic.ADULT_CATEGORICAL)
    for c in b.categorical_features:
        assert isinstance(b.data[c].dtype, pd.CategoricalDtype)
    assert b.data["workclass"].isna().sum() == 1
    assert b.source_path == tmp_path / "adult" / "adult.data.gz"
    dropped = tds.load_adult(data_home=tmp_path)
    assert dropped.data.shape == (4, 14) and dropped.target.tolist() == [0, 1, 0, 1]
    assert dropped.data["age"].dtype == np.int64
    assert "UCI" in dropped.DESCR and "dropped 2 rows" in dropped.DESCR


def test_adult_merged_csv_layout(tmp_path):
    df = pd.DataFrame(
        [r.split(", ") for r in ADULT_ROWS + [t.rstrip(".") for t in ADULT_TEST_ROWS]],
        columns=classic.ADULT_COLUMNS,
    ).replace("?", "")
    df["split"] = ["train"] * 3 + ["test"] * 3
    write_gz(tmp_path / "adult" / "adult.csv.gz", df.to_csv(index=False))
    b = load_dataset("adult", data_home=tmp_path)
    assert b.data.shape == (4, 14) and b.target.tolist() == [0, 1, 0, 1]
    assert list(b.split) == ["train", "train", "test", "test"]
    assert b.frame.shape == (4, 15) and b.source_path.name == "adult.csv.gz"


def test_adult_download_from_local_mirror(monkeypatch, tmp_path):
    mirror = tmp_path / "mirror"
    _write_uci_adult(mirror, gz=False)
    sha = {
        n: hashlib.sha256((mirror / n).read_bytes()).hexdigest()
        for n in ("adult.data", "adult.test")
    }
    monkeypatch.setattr(_classic_table, "_ADULT_URL", mirror.as_uri() + "/")
    monkeypatch.setattr(_classic_table, "_ADULT_SHA256", sha)
    monkeypatch.delenv("TABMIA_OFFLINE")
    home = tmp_path / "home"
    with pytest.raises(DataNotFoundError, match="download=True"):
        tds.load_adult(data_home=home)
    b = tds.load_adult(data_home=home, download=True, drop_missing=False)
    assert b.data.shape == (6, 14)
    assert (home / "adult" / "adult.data").is_file() and (home / "adult" / "adult.test").is_file()
    # read-only data home: the download goes to the cache home instead
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        b2 = tds.load_adult(data_home=ro, download=True, drop_missing=False)
        assert list(ro.iterdir()) == []
        assert str(b2.source_path).startswith(os.environ["TABMIA_CACHE"])
    finally:
        ro.chmod(0o755)


def test_adult_download_offline_names_paths(monkeypatch, tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        tds.load_adult(data_home=tmp_path, download=True)
    msg = str(err.value)
    assert str(tmp_path / "adult" / "adult.csv.gz") in msg
    assert str(tmp_path / "adult" / "adult.data.gz") in msg and "TABMIA_OFFLINE" in msg


# --------------------------------------------------------------------------- other classic fixtures


def test_german_credit_uci_fallback(tmp_path):
    rows = [
        "A11 6 A34 A43 1169 A65 A75 4 A93 A101 4 A121 67 A143 A152 2 A173 1 A192 A201 1",
        "A12 48 A32 A43 5951 A61 A73 2 A92 A101 2 A121 22 A143 A152 1 A173 1 A191 A201 2",
    ]
    write_gz(tmp_path / "german_credit" / "german.data.gz", "\n".join(rows) + "\n")
    b = tds.load_german_credit(data_home=tmp_path)
    assert b.data.shape == (2, 20) and b.target.tolist() == [0, 1]
    assert b.target_names == ["good", "bad"]
    assert b.data["checking_status"].cat.categories.tolist() == ["A11", "A12"]
    assert len(b.categorical_features) == 13


def test_hepatitis_uci_fallback(tmp_path):
    rows = [
        "2,30,2,1,2,2,2,2,1,2,2,2,2,2,1.00,85,18,4.0,?,1",
        "1,50,1,1,2,1,2,2,1,2,2,2,2,2,0.90,135,42,3.5,?,1",
    ]
    write_gz(tmp_path / "hepatitis" / "hepatitis.data.gz", "\n".join(rows) + "\n")
    b = tds.load_hepatitis(data_home=tmp_path)
    assert b.data.shape == (2, 19) and b.target.tolist() == [0, 1]  # 2=LIVE, 1=DIE
    assert b.data["PROTIME"].isna().all()
    with pytest.raises(DataNotFoundError):
        tds.load_hepatitis(data_home=tmp_path / "nowhere")


def test_heart_uci_fallbacks(tmp_path):
    write_gz(
        tmp_path / "cleveland_heart" / "processed.cleveland.data.gz",
        "63.0,1.0,1.0,145.0,233.0,1.0,2.0,150.0,0.0,2.3,3.0,0.0,6.0,0\n"
        "67.0,1.0,4.0,160.0,286.0,0.0,2.0,108.0,1.0,1.5,2.0,?,3.0,2\n",
    )
    b = load_dataset("heart_cleveland", data_home=tmp_path)
    assert b.target.tolist() == [0, 1] and b.data["ca"].isna().sum() == 1
    assert b.data["cp"].cat.categories.tolist() == [1, 4]
    b5 = tds.load_heart_disease(data_home=tmp_path, binary=False)
    assert b5.target.tolist() == [0, 2]
    write_gz(
        tmp_path / "statlog_heart" / "heart.dat.gz",
        "70.0 1.0 4.0 130.0 322.0 0.0 2.0 109.0 0.0 2.4 2.0 3.0 3.0 2\n"
        "67.0 0.0 3.0 115.0 564.0 0.0 2.0 160.0 0.0 1.6 2.0 0.0 7.0 1\n",
    )
    s = load_dataset("heart_statlog", data_home=tmp_path)
    assert s.target.tolist() == [1, 0] and s.target_names == ["absence", "presence"]
    with pytest.raises(ValueError):
        tds.load_heart_disease(data_home=tmp_path, variant="hungarian")


def test_diabetes130_binary_options(tmp_path):
    header = "encounter_id,patient_nbr,race,gender,age,weight,admission_type_id,time_in_hospital,max_glu_serum,readmitted"
    rows = [
        "1,10,Caucasian,Female,[0-10),?,6,1,None,NO",
        "2,10,?,Female,[10-20),?,1,3,>300,>30",
        "3,11,AfricanAmerican,Male,[20-30),[75-100),1,2,None,<30",
    ]
    write_gz(tmp_path / "diabetes130" / "diabetic_data.csv.gz", "\n".join([header] + rows) + "\n")
    b = tds.load_diabetes130(data_home=tmp_path)
    assert b.target.tolist() == [0, 1, 2] and b.target_names == ["NO", ">30", "<30"]
    assert "encounter_id" not in b.data and list(b.groups) == [10, 10, 11]
    assert b.data["race"].isna().sum() == 1
    assert "None" in b.data["max_glu_serum"].cat.categories  # "None" = not measured, not missing
    assert "admission_type_id" in b.categorical_features
    assert tds.load_diabetes130(data_home=tmp_path, binary=True).target.tolist() == [0, 0, 1]
    assert tds.load_diabetes130(data_home=tmp_path, binary="any").target.tolist() == [0, 1, 1]
    with pytest.raises(ValueError):
        tds.load_diabetes130(data_home=tmp_path, binary="sometimes")


def test_small_csv_loaders(tmp_path):
    write_gz(
        tmp_path / "pima_diabetes" / "pima-indians-diabetes_noheader.csv.gz",
        "6,148,72,35,0,33.6,0.627,50,1\n1,85,66,29,0,26.6,0.351,31,0\n",
    )
    p = tds.load_pima_diabetes(data_home=tmp_path)
    assert p.data.shape == (2, 8) and p.target.tolist() == [1, 0]
    write_gz(
        tmp_path / "australian_credit" / "australian.dat.gz",
        "1 22.08 11.46 2 4 4 1.585 0 0 0 1 2 100 1213 0\n0 22.67 7 2 8 4 0.165 0 0 0 0 2 160 1 1\n",
    )
    a = tds.load_australian_credit(data_home=tmp_path)
    assert a.data.shape == (2, 14) and a.target.tolist() == [0, 1]
    assert a.categorical_features == classic.AUSTRALIAN_CATEGORICAL
    write_gz(
        tmp_path / "bank_marketing" / "bank-full.csv.gz",
        '"age";"job";"marital";"education";"default";"balance";"housing";"loan";"contact";"day";"month";"duration";"campaign";"pdays";"previous";"poutcome";"y"\n'
        '58;"management";"married";"tertiary";"no";2143;"yes";"no";"unknown";5;"may";261;1;-1;0;"unknown";"no"\n'
        '33;"technician";"single";"tertiary";"no";0;"yes";"no";"cellular";21;"nov";654;1;-1;0;"unknown";"yes"\n',
    )
    bm = tds.load_bank_marketing(data_home=tmp_path)
    assert bm.data.shape == (2, 16) and bm.target.tolist() == [0, 1]
    assert isinstance(bm.data["job"].dtype, pd.CategoricalDtype)
    write_gz(
        tmp_path / "taiwan_default" / "UCI_Credit_Card.csv.gz",
        "ID,LIMIT_BAL,SEX,EDUCATION,MARRIAGE,AGE,default.payment.next.month\n1,20000.0,2,2,1,24,1\n2,120000.0,2,2,2,26,0\n",
    )
    t = tds.load_taiwan_default(data_home=tmp_path)
    assert list(t.data.columns) == ["LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE"]
    assert t.target.tolist() == [1, 0]
    write_gz(
        tmp_path / "give_me_some_credit" / "cs-training.csv.gz",
        ",SeriousDlqin2yrs,RevolvingUtilizationOfUnsecuredLines,age,MonthlyIncome\n1,1,0.76,45,9120\n2,0,0.95,40,\n",
    )
    g = tds.load_give_me_some_credit(data_home=tmp_path)
    assert g.data.shape == (2, 3) and g.target.tolist() == [1, 0]
    assert tds.load_give_me_some_credit(data_home=tmp_path, drop_missing=True).data.shape == (1, 3)


def test_compas_propublica_filter(tmp_path):
    cols = ["id", "sex", "age", "age_cat", "race", "juv_fel_count", "decile_score", "juv_misd_count",
            "juv_other_count", "priors_count", "days_b_screening_arrest", "c_charge_degree",
            "is_recid", "score_text", "two_year_recid"]  # fmt: skip
    rows = [
        [1, "Male", 69, "Greater than 45", "Other", 0, 1, 0, 0, 0, -1, "F", 0, "Low", 0],
        [2, "Male", 34, "25 - 45", "African-American", 0, 3, 0, 0, 0, -1, "F", 1, "Low", 1],
        [
            3,
            "Female",
            24,
            "Less than 25",
            "Caucasian",
            0,
            4,
            0,
            1,
            4,
            45,
            "F",
            1,
            "Low",
            1,
        ],  # > 30 days
        [
            4,
            "Male",
            23,
            "Less than 25",
            "Caucasian",
            0,
            8,
            1,
            0,
            1,
            0,
            "O",
            0,
            "High",
            0,
        ],  # charge O
        [5, "Male", 43, "25 - 45", "Other", 0, 1, 0, 0, 2, 0, "M", -1, "Low", 0],  # is_recid -1
    ]
    df = pd.DataFrame(rows, columns=cols)
    write_gz(tmp_path / "compas" / "compas-scores-two-years.csv.gz", df.to_csv(index=False))
    b = tds.load_compas(data_home=tmp_path)
    assert b.data.shape == (2, 9) and b.target.tolist() == [0, 1]
    assert list(b.decile_score) == [1, 3]
    assert tds.load_compas(data_home=tmp_path, propublica_filter=False).data.shape == (5, 9)


def test_package_exports_every_classic_loader():
    """tabmia.datasets lists its loaders by name (linters and autosummary read no starred
    list): the list must not drift from the module that defines them."""
    from tabmia.datasets import classic

    assert set(classic.__all__) <= set(tds.__all__)


def test_registry_keeps_the_audit_defaults_of_built_in_data_sets():
    """The default slicings and person nouns an audit reads live beside the loaders: each
    names a registered data set, and a data set without them gets none / "persons"."""
    assert set(tds.DEFAULT_SLICINGS) <= set(tds.DATASETS)
    assert set(tds.PERSON_NOUNS) <= set(tds.DATASETS)
    assert tds.default_slicings("adult") == ("sex", "race")
    assert tds.default_slicings("breast_cancer") == ()
    assert tds.default_slicings(None) == ()
    assert tds.person_noun("diabetes130") == "patients"
    assert tds.person_noun("adult") == "persons"
    assert tds.person_noun(None) == "persons"
