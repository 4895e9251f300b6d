"""`tabmia benchmark` / :func:`tabmia.benchmark.run_benchmark`: tables, skipped data
sets, resumable cells, attack specs, config files and bad input.

Runs on the embedded breast-cancer data plus a small tabular-benchmark file written
into a temporary data home (no shared data, no network needed).
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from sklearn.datasets import make_classification

from tabmia._attack_builder import build_attack, build_attacks, parse_attack_spec
from tabmia.benchmark import run_benchmark
from tabmia.cli import main

ATTACKS = ["loss", "lira:n_shadow=4", "rmia"]


@pytest.fixture()
def data_home(tmp_path, monkeypatch):
    """A data home holding only task 361067's benchmark file (a synthetic stand-in)."""
    home = tmp_path / "home"
    folder = home / "tabular-benchmark" / "clf_num"
    folder.mkdir(parents=True)
    X, y = make_classification(400, n_features=5, n_informative=3, random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)]).assign(label=y)
    frame.to_csv(folder / "phoneme.csv", index=False)
    monkeypatch.setenv("TABMIA_DATA", str(home))
    monkeypatch.setenv("TABMIA_OFFLINE", "1")
    monkeypatch.setenv("TABMIA_CACHE", str(tmp_path / "cache"))
    return home


def _rows(md: str, title: str) -> list[list[str]]:
    """The rows (header first) of the markdown table under ``## title``."""
    block = md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.startswith("|") and "---" not in ln]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]


def _number(cell: str) -> float:
    return float(re.sub(r"[*]", "", cell).split(" ± ")[0])


def test_quick_benchmark_tables_and_skipped_task(data_home, tmp_path, capsys):
    out = tmp_path / "bench"
    code = main(["benchmark", "--datasets", "breast_cancer,361067,eye_movements",
                 "--model", "logistic_regression", "--attacks", ",".join(ATTACKS),
                 "--fpr", "0.01,0.0001", "--quick", "--out", str(out), "--quiet"])
    assert code == 0
    assert {"results.json", "results.md", "report.html", "roc_breast_cancer.png",
            "roc_361067.png"} <= {p.name for p in out.iterdir()}
    md = (out / "results.md").read_text()
    for title in ("AUC", "TPR at 0.01 FPR", "Precision at 0.01 FPR"):
        header, *rows = _rows(md, title)
        assert header == ["data set", *ATTACKS]
        assert [r[0] for r in rows] == ["breast_cancer", "361067"]
        # precision is undefined (n/a) where an attack flags nobody at that FPR
        values = [_number(c) for r in rows for c in r[1:] if not c == "n/a" or "Precision" not in title]
        assert values and all(0.0 <= v <= 1.0 for v in values)
        for r in rows:  # the best of each row is bold (where any attack scored above 0)
            nums = {c: _number(c) for c in r[1:] if c not in ("n/a", "n/r")}
            if len(nums) > 1 and max(nums.values()) > 0:
                bold = [v for c, v in nums.items() if c.startswith("**")]
                assert bold and all(v == max(nums.values()) for v in bold)
    # 125 non-members cannot resolve an FPR of 1e-4
    assert all(c == "n/r" for r in _rows(md, "TPR at 0.0001 FPR")[1:] for c in r[1:])
    assert "**eye_movements**: not available, skipped" in md
    payload = json.loads((out / "results.json").read_text())
    assert list(payload["datasets"]) == ["breast_cancer", "361067"]
    assert payload["datasets"]["361067"]["resolved"] == "openml:361067"
    assert "OpenML task 361070" in payload["skipped"]["eye_movements"]
    assert str(data_home) in payload["skipped"]["eye_movements"]
    loss = payload["datasets"]["breast_cancer"]["attacks"]["loss"]
    assert 0.0 <= loss["auc"]["mean"] <= 1.0 and len(loss["auc"]["per_seed"]) == 1
    assert loss["tpr@0.0001"]["per_seed"] == ["n/r"]
    acc = payload["datasets"]["breast_cancer"]["target_accuracy"]
    assert 0.5 < acc["test"]["mean"] <= acc["train"]["mean"] <= 1.0
    assert payload["settings"]["attack_params"]["lira:n_shadow=4"]["n_shadow"] == "4"
    assert "data:image/png;base64," in (out / "report.html").read_text()
    assert "eye_movements" in capsys.readouterr().err


def test_second_run_recomputes_nothing_and_a_new_seed_only_itself(data_home, tmp_path):
    out = tmp_path / "bench"
    attacks = ["loss", "lira:n_shadow=4"]
    kw = dict(model="logistic_regression", fprs=(0.05,), out_dir=out, max_records=200,
              progress=False)
    first = run_benchmark(["breast_cancer", "openml:361067"], attacks=attacks, seeds=1, **kw)
    assert (first.computed, first.reused) == (4, 0)
    assert len(list((out / "cells").glob("*.json"))) == 4
    stamps = {p: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}

    again = run_benchmark(["breast_cancer", "phoneme"], attacks=attacks, seeds=1, **kw)
    assert (again.computed, again.reused) == (0, 4)
    assert {p: p.stat().st_mtime_ns for p in (out / "cells").iterdir()} == stamps
    assert again.results["datasets"]["breast_cancer"]["attacks"] == \
        first.results["datasets"]["breast_cancer"]["attacks"]
    # other FPR levels come from the stored scores
    wider = run_benchmark(["breast_cancer", "361067"], attacks=attacks, seeds=1,
                          **{**kw, "fprs": (0.05, 0.02)})
    assert wider.computed == 0 and "tpr@0.02" in wider.results["datasets"]["361067"]["attacks"]["loss"]
    # a second seed computes only its own cells; the first seed's stay as they were
    more = run_benchmark(["breast_cancer", "361067"], attacks=attacks, seeds=2, **kw)
    assert (more.computed, more.reused) == (4, 4)
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    auc = more.results["datasets"]["breast_cancer"]["attacks"]["loss"]["auc"]["per_seed"]
    assert auc[0] == first.results["datasets"]["breast_cancer"]["attacks"]["loss"]["auc"]["mean"]


def test_config_file_and_flags_winning(data_home, tmp_path):
    out = tmp_path / "bench"
    config = tmp_path / "bench.toml"
    config.write_text('[benchmark]\ndatasets = ["breast_cancer"]\nmodel = "logistic_regression"\n'
                      'attacks = ["loss", "entropy"]\nquick = true\nseeds = 2\n')
    assert main(["benchmark", "--config", str(config), "--attacks", "loss",
                 "--out", str(out), "--quiet"]) == 0
    payload = json.loads((out / "results.json").read_text())
    assert payload["settings"]["attacks"] == ["loss"]
    assert payload["settings"]["model"] == "logistic_regression"


@pytest.mark.parametrize("argv,message", [
    (["--datasets", "nope"], "unknown data set name 'nope'"),
    (["--datasets", "breast_cancer", "--attacks", "lira:n_shadows=4"], "takes no parameter n_shadows"),
    (["--datasets", "breast_cancer", "--attacks", "lira:n_shadow=1"], "n_shadow"),
    (["--datasets", "breast_cancer", "--attacks", "foo"], "unknown attack 'foo'"),
    (["--datasets", "breast_cancer", "--fpr", "2"], "FPR levels must be in (0, 1)"),
    (["--datasets", "breast_cancer", "--seeds", "0"], "seeds must be an int >= 1"),
    ([], "--datasets is required"),
])
def test_bad_input_one_error_line_nothing_written(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TABMIA_OFFLINE", "1")
    out = tmp_path / "bench"
    assert main(["benchmark", *argv, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tabmia: error:") and message in err[0]
    assert not out.exists()


def test_attack_specs():
    spec = parse_attack_spec("quantile:mode=pinball:n_trials=0")
    assert (spec.name, spec.params) == ("quantile", {"mode": "pinball", "n_trials": 0})
    assert parse_attack_spec("lira:online=true").params == {"online": True}
    assert parse_attack_spec("lira:n_shadow=64:online=false").canonical == \
        parse_attack_spec("lira:online=false:n_shadow=64").canonical
    attack = build_attack("lira:n_shadow=64", fpr=0.05, n_jobs=2)
    assert (attack.n_shadow, attack.fpr, attack.n_jobs) == (64, 0.05, 2)
    # quick settings sit under the spec's own parameters
    assert build_attack("lira", fast=True).n_shadow == 4
    assert build_attack("lira:n_shadow=8", fast=True).n_shadow == 8
    assert list(build_attacks("loss, lira:n_shadow=16,lira:n_shadow=32")) == [
        "loss", "lira:n_shadow=16", "lira:n_shadow=32"]
    for bad, msg in [("lira:n_shadow", "expected param=value"), ("lira:target=1", "no parameter"),
                     ("quantile:mode=median", "mode"), ("loss,loss", "given twice")]:
        with pytest.raises(ValueError, match=msg):
            build_attacks(bad)


def test_audit_takes_attack_specs(tmp_path):
    out = tmp_path / "rep"
    assert main(["audit", "--attacks", "loss,lira:n_shadow=4", "--model", "logistic_regression",
                 "--max-records", "300", "--fpr", "0.05", "--out", str(out), "--quiet"]) == 0
    names = {m["attack"] for m in json.loads((out / "results.json").read_text())["metrics"]}
    assert names == {"loss", "lira:n_shadow=4"}
