"""``benchmarks/dp_one_run.py`` runs end to end (``--quick``) and says what it skipped."""

from __future__ import annotations

import importlib.util
import json

import pytest

from benchmarks import _common


@pytest.fixture(autouse=True)
def _restore_results_dir():
    saved = _common.RESULTS
    yield
    _common.set_results_dir(saved)


def test_quick_run_writes_results(tmp_path):
    pytest.importorskip("torch")
    from benchmarks import dp_one_run

    assert dp_one_run.main(["--quick", "--dataset", "breast_cancer", "--out", str(tmp_path),
                            "--threads", "1"]) == 0
    payload = json.loads((tmp_path / "dp_one_run.json").read_text())
    assert payload["machine"]["versions"]["tabmia"]
    mechanisms = payload["known_mechanisms"]
    assert {round(r["true_epsilon"], 3) for r in mechanisms} >= {1.0, 4.0}
    assert all(r["share_at_or_under"] >= 0.9 for r in mechanisms)
    models = {r["model"] for r in payload["models"]["rows"]}
    assert "1-NN (not private)" in models
    kinds = {r["canaries"] for r in payload["models"]["rows"]}
    assert kinds == {"records", "flipped", "outliers", "membership game"}
    skipped = payload["models"]["skipped"]
    if importlib.util.find_spec("diffprivlib") is None:
        assert "diffprivlib LR eps=1" in skipped
    md = (tmp_path / "dp_one_run.md").read_text()
    assert md.startswith("# dp_one_run") and "## Checks" in md
