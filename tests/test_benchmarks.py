"""The paper-table benchmark scripts run end to end (``--quick``) and stop clearly on missing data.

Each script's ``main(argv)`` runs in-process (no interpreter start-up per script) into a
temporary results folder (``--out``) with one torch thread (``--threads 1``: on a shared
2-core machine several times faster than two); the fixture restores torch's thread count.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("catboost")

from benchmarks import _common  # noqa: E402

# script -> (small data set for --quick, a data set name whose file is absent from an
# empty data home, the file the loader should name)
SCRIPTS = {
    "watson_table2": ("hepatitis", "credit", "german_credit"),
    "jayaraman_ppv": ("adult", "purchase100", "purchase100"),
    "lira_tables": ("adult", "texas100", "texas100"),
    "quantile_table2": ("361067", "acs_income", "psam_p36.csv"),
}


@pytest.fixture(autouse=True)
def _restore_globals():
    """``--out`` repoints the shared results folder and ``--threads`` torch's thread
    count; put both back after each test."""
    import torch

    saved, threads = _common.RESULTS, torch.get_num_threads()
    yield
    _common.set_results_dir(saved)
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_quick_run_writes_results(name, tmp_path, shared_data):
    dataset = SCRIPTS[name][0]
    module = importlib.import_module(f"benchmarks.{name}")
    rc = module.main(["--quick", "--seeds", "2", "--datasets", dataset,
                      "--out", str(tmp_path), "--threads", "1"])
    assert rc == 0
    payload = json.loads((tmp_path / f"{name}.json").read_text())
    assert payload["benchmark"] == name
    assert payload["machine"]["versions"]["tabmia"]
    assert dataset in payload["datasets"]
    md = (tmp_path / f"{name}.md").read_text()
    assert md.startswith(f"# {name}")
    assert "±" in md  # mean ± std over the seeds
    assert list(tmp_path.glob(f"{name}_roc_*.png")), "no ROC plot written"
    # nothing went to the committed results folder
    assert _common.RESULTS == Path(tmp_path).resolve()


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_missing_data_stops_with_loader_message(name, tmp_path, monkeypatch, capsys):
    _, dataset, expected_file = SCRIPTS[name]
    empty = tmp_path / "empty_home"
    empty.mkdir()
    monkeypatch.setenv("TABMIA_DATA", str(empty))
    monkeypatch.setenv("TABMIA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TABMIA_OFFLINE", "1")
    module = importlib.import_module(f"benchmarks.{name}")
    with pytest.raises(SystemExit) as info:
        module.main(["--quick", "--datasets", dataset, "--out", str(tmp_path / "out"),
                     "--threads", "1"])
    assert info.value.code not in (0, None)
    err = capsys.readouterr().err
    assert "not present" in err
    assert str(empty) in err and expected_file in err, err
    assert not (tmp_path / "out" / f"{name}.json").exists()


def test_scaling_quick_run_compares_backends(tmp_path, shared_data):
    """benchmarks/scaling.py times the same population on every backend and checks the
    scores match the in-process run (it stops otherwise)."""
    from benchmarks import scaling

    assert scaling.main(["--quick", "--out", str(tmp_path)]) == 0
    payload = json.loads((tmp_path / "scaling.json").read_text())
    backends = {(r["backend"], r["workers"]) for r in payload["rows"]}
    assert {("in-process (n_jobs=1)", 1), ("joblib loky", 2), ("dask LocalCluster", 1),
            ("dask LocalCluster", 2), ("ray (local)", 2)} <= backends
    assert all(r["identical_scores"] for r in payload["rows"])
    assert "| dask LocalCluster | 2 |" in (tmp_path / "scaling.md").read_text()


def test_scaling_audit_data_and_growth_rule():
    """benchmarks/scaling_audit.py: the credit-shaped records, and the linear-growth check
    it reports per phase."""
    from benchmarks.scaling_audit import credit_like, growth

    frame = credit_like(4000, seed=1)
    assert frame.shape == (4000, 24) and frame["default"].isin([0, 1]).all()
    assert 0.1 < frame["default"].mean() < 0.35
    assert frame.select_dtypes(exclude="number").columns.tolist() == ["SEX", "EDUCATION",
                                                                       "MARRIAGE"]
    rows = [{"records": 10, "phases": {"fit": {"seconds": 1.0}, "score": {"seconds": 1.0},
                                       "setup: data": {"seconds": 1.0}}},
            {"records": 100, "phases": {"fit": {"seconds": 9.0}, "score": {"seconds": 20.0},
                                        "setup: data": {"seconds": 50.0}}}]
    verdict = {g["phase"]: g["no_worse_than_linear"] for g in growth(rows)}
    assert verdict == {"fit": True, "score": False}
