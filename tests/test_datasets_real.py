"""Load every real data set in the shared data directory and check it against PROVENANCE.md.

Uses ``TABMIA_DATA=<repo>/../shared/data``; skipped only when that directory
does not exist.  The directory is read-only: a module fixture checks that no
file or folder in it was created or modified.  No network.
"""

from __future__ import annotations

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
from tabmia.datasets import DataNotFoundError, load_dataset  # noqa: E402

SHARED = Path(__file__).parents[1].parent / "shared" / "data"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} not present")


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module", autouse=True)
def shared_data_untouched():
    before = _snapshot(SHARED)
    yield
    assert _snapshot(SHARED) == before, "the shared data directory was modified"


@pytest.fixture(autouse=True)
def env(monkeypatch, tmp_path_factory):
    """Point TABMIA_DATA at the shared data; fail on any socket use; private caches."""
    attempts: list[str] = []

    def _blocked(*args, **kwargs):
        attempts.append(repr(args[:2]))
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", _blocked)
    monkeypatch.setattr(socket, "create_connection", _blocked)
    monkeypatch.setattr(socket, "getaddrinfo", _blocked)
    monkeypatch.setenv("TABMIA_DATA", str(SHARED))
    monkeypatch.setenv("TABMIA_OFFLINE", "1")
    monkeypatch.setenv("TABMIA_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    yield
    assert not attempts, f"network access attempted: {attempts}"


def counts(y) -> dict:
    return {int(k): int(v) for k, v in pd.Series(np.asarray(y)).value_counts().sort_index().items()}


# (registry name, kwargs, shape of data, label counts by code) -- numbers from each PROVENANCE.md
REAL = [
    ("adult", {"drop_missing": False}, (48842, 14), {0: 37155, 1: 11687}),
    ("adult", {}, (48842 - 3620, 14), None),
    ("german_credit", {}, (1000, 20), {0: 700, 1: 300}),
    ("hepatitis", {}, (155, 19), {0: 123, 1: 32}),
    ("taiwan_default", {}, (30000, 23), {0: 23364, 1: 6636}),
    ("give_me_some_credit", {}, (150000, 10), {0: 139974, 1: 10026}),
    ("diabetes130", {}, (101766, 47), {0: 54864, 1: 35545, 2: 11357}),
    ("diabetes130", {"binary": True}, (101766, 47), {0: 54864 + 35545, 1: 11357}),
    ("diabetes130", {"binary": "any"}, (101766, 47), {0: 54864, 1: 35545 + 11357}),
    ("heart_cleveland", {}, (303, 13), {0: 164, 1: 139}),
    ("heart_cleveland", {"binary": False}, (303, 13), {0: 164, 1: 55, 2: 36, 3: 35, 4: 13}),
    ("heart_statlog", {}, (270, 13), {0: 150, 1: 120}),
    ("bank_marketing", {}, (45211, 16), {0: 39922, 1: 5289}),
    ("compas", {"propublica_filter": False}, (7214, 9), {0: 3963, 1: 3251}),
    ("compas", {}, (6172, 9), None),  # ProPublica's filtered count
    ("pima_diabetes", {}, (768, 8), {0: 500, 1: 268}),
    ("australian_credit", {}, (690, 14), {0: 383, 1: 307}),
    ("breast_cancer", {}, (569, 30), {0: 212, 1: 357}),
]


@pytest.mark.parametrize("name,kwargs,shape,label_counts", REAL, ids=lambda v: str(v)[:30])
def test_real_classic(name, kwargs, shape, label_counts):
    b = load_dataset(name, **kwargs)
    assert b.data.shape == shape
    if label_counts is not None:
        assert counts(b.target) == label_counts
    assert len(b.target) == shape[0] and b.feature_names == list(b.data.columns)
    for c in b.categorical_features:
        assert isinstance(b.data[c].dtype, pd.CategoricalDtype), c
    if name != "breast_cancer":
        assert b.source_path.is_relative_to(SHARED)
    assert b.DESCR and "Status: exact" in b.DESCR


def test_real_adult_details():
    b = tds.load_adult(drop_missing=False)
    assert (b.split == "train").sum() == 32561 and (b.split == "test").sum() == 16281
    assert int(b.data.isna().any(axis=1).sum()) == 3620 and int(b.data.isna().sum().sum()) == 6465
    train = b.target[b.split == "train"]
    assert counts(train) == {0: 24720, 1: 7841}
    # the UCI layout in the same folder gives the same table
    uci_home = SHARED  # adult.csv.gz is preferred there; read the UCI pair directly
    from tabmia.datasets.classic import _read_uci_adult

    raw = pd.concat(
        [_read_uci_adult(uci_home / "adult" / f) for f in ("adult.data.gz", "adult.test.gz")]
    )
    assert len(raw) == 48842
    assert (raw["income"].str.rstrip(".") == ">50K").sum() == 11687


def test_real_hepatitis_missing_and_german_stats():
    h = tds.load_hepatitis()
    assert int(h.data.isna().sum().sum()) == 167 and int(h.data.isna().any(axis=1).sum()) == 75
    assert tds.load_hepatitis(drop_missing=True).data.shape == (80, 19)
    g = tds.load_german_credit()
    assert round(g.data["duration"].mean(), 3) == 20.903
    assert round(g.data["credit_amount"].mean(), 3) == 3271.258


def test_real_give_me_some_credit_missing():
    b = tds.load_give_me_some_credit()
    assert int(b.data["MonthlyIncome"].isna().sum()) == 29731
    assert int(b.data["NumberOfDependents"].isna().sum()) == 3924


# --------------------------------------------------------------------------- tabular benchmark

HF_EXACT = [
    (361070, (7608, 20), {0: 3804, 1: 3804}),
    (361055, (16714, 10), {0: 8357, 1: 8357}),
    (361060, (38474, 7), {0: 19237, 1: 19237}),
    (361062, (10082, 26), {0: 5041, 1: 5041}),
    (361063, (13488, 16), {0: 6744, 1: 6744}),
    (361065, (13376, 10), {0: 6688, 1: 6688}),
    (361066, (10578, 7), {0: 5289, 1: 5289}),
    (361273, (71090, 7), {0: 35545, 1: 35545}),
    (361275, (13272, 20), {0: 6636, 1: 6636}),
    (361277, (20634, 8), {0: 10317, 1: 10317}),
    (361278, (10000, 22), {0: 5000, 1: 5000}),
    (361110, (38474, 8), {0: 19237, 1: 19237}),
    (361111, (7608, 23), {0: 3804, 1: 3804}),
    (361283, (13272, 21), {0: 6636, 1: 6636}),
    (361286, (4966, 11), {0: 2483, 1: 2483}),
]


@pytest.mark.parametrize("task_id,shape,label_counts", HF_EXACT, ids=lambda v: str(v)[:12])
def test_real_tabular_benchmark_exact(task_id, shape, label_counts):
    b = tds.fetch_openml_task(task_id)
    assert b.origin == "hf" and b.data.shape == shape and counts(b.target) == label_counts
    task = tds.SUITE_TASKS[task_id]
    assert (task.n_samples, task.n_features) == shape  # table agrees with the HF card
    assert "exact benchmark version" in b.DESCR


def test_real_eye_movements_361070():
    b = load_dataset("openml:361070")
    assert b.source_path == SHARED / "tabular-benchmark" / "clf_num" / "eye_movements.csv.gz"
    assert b.feature_names[:2] == ["lineNo", "assgNo"] and "label" not in b.feature_names
    assert not b.data.isna().any().any()


@pytest.mark.parametrize("name", ["361070", "eye_movements", "openml:eye_movements"])
def test_real_eye_movements_by_task_id_and_suite_name(name):
    b = load_dataset(name)
    assert b.task_id == 361070 and b.origin == "hf" and b.data.shape == (7608, 20)


THREE_ADDED = [(361057, (2554, 11), 1277), (361064, (5188, 20), 2594), (361067, (3172, 5), 1586)]
ANALOGUE_SOURCES = {361057: "wine_quality", 361064: "kdd_ipums_la_97_small", 361067: "phoneme"}


@pytest.mark.parametrize("task_id,shape,per_class", THREE_ADDED)
def test_real_exact_files_of_the_three_added_tasks(task_id, shape, per_class):
    b = tds.fetch_openml_task(task_id)
    name = tds.SUITE_TASKS[task_id].name
    assert b.origin == "hf" and b.source_path == SHARED / "tabular-benchmark" / "clf_num" / f"{name}.csv.gz"
    assert "exact benchmark version" in b.DESCR
    assert b.data.shape == shape and counts(b.target) == {0: per_class, 1: per_class}
    assert b.feature_names == [f"f{i}" for i in range(shape[1])]
    assert not b.data.isna().any().any()
    # the exact file wins over analogue=True, which only fills in for a missing file
    assert tds.fetch_openml_task(task_id, analogue=True).origin == "hf"
    assert load_dataset(f"openml:{task_id}").data.shape == shape


@pytest.mark.parametrize("task_id,shape,per_class", THREE_ADDED)
def test_real_analogues_when_the_exact_file_is_missing(task_id, shape, per_class, tmp_path, monkeypatch):
    # a data home with the originals but without tabular-benchmark/
    src = ANALOGUE_SOURCES[task_id]
    (tmp_path / src).symlink_to(SHARED / src, target_is_directory=True)
    monkeypatch.setenv("TABMIA_DATA", str(tmp_path))
    name = tds.SUITE_TASKS[task_id].name
    with pytest.raises(DataNotFoundError) as err:
        tds.fetch_openml_task(task_id)
    assert str(tmp_path / "tabular-benchmark" / "clf_num" / f"{name}.csv.gz") in str(err.value)
    assert "analogue=True" in str(err.value)
    b = tds.fetch_openml_task(task_id, analogue=True, random_state=0)
    assert b.origin == "analogue" and "analogue" in b.DESCR.lower()
    assert b.data.shape == shape and counts(b.target) == {0: per_class, 1: per_class}
    assert not b.data.isna().any().any()
    assert all(pd.api.types.is_numeric_dtype(b.data[c]) for c in b.data.columns)
    other = tds.fetch_openml_task(task_id, analogue=True, random_state=1)
    assert other.data.shape == shape  # another seed, same size


# --------------------------------------------------------------------------- not in the shared data


def test_real_missing_sets_name_exact_paths():
    with pytest.raises(DataNotFoundError) as err:
        tds.fetch_acs("ACSIncome", "WY", 2018)
    assert str(SHARED / "acs" / "2018" / "1-Year" / "psam_p56.csv") in str(err.value)
    with pytest.raises(DataNotFoundError) as err:
        load_dataset("acs:ACSPublicCoverage:MA:2019")
    assert str(SHARED / "acs" / "2019" / "1-Year" / "psam_p25.csv") in str(err.value)
    with pytest.raises(DataNotFoundError) as err:
        tds.fetch_purchase100()
    assert str(SHARED / "purchase100" / "dataset_purchase") in str(err.value)
    with pytest.raises(DataNotFoundError) as err:
        tds.fetch_texas100()
    assert str(SHARED / "texas100" / "feats") in str(err.value)
    assert str(SHARED / "texas100" / "labels") in str(err.value)


def test_shared_data_is_treated_as_read_only():
    from tabmia.datasets._home import is_writable_dir

    if SHARED.stat().st_mode & 0o222:
        pytest.skip("shared data directory is writable here")
    assert not is_writable_dir(SHARED)  # even for root
    assert tds.get_cache_home(SHARED) != SHARED
