"""`tabmia audit` for long runs: shadow counts, a resumable cache, progress, threads."""

from __future__ import annotations

import json
import warnings

import pytest

from tabmia.cli.audit import _make_attacks, _recipe, _thread_limits
from tabmia.cli import _parse, main

LABEL = "diagnosis"


@pytest.fixture(scope="module")
def own(tmp_path_factory, write_audit_files):
    d = tmp_path_factory.mktemp("long")
    write_audit_files(d)
    return d


def _flags(d, *extra):
    return ["audit", "--model-file", str(d / "model.joblib"), "--train", str(d / "train.csv"),
            "--population", str(d / "pop.csv"), "--label", LABEL, "--recipe",
            "logistic_regression", "--fpr", "0.05", *extra]


def _run(argv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pickle warning
        return main(argv)


def test_shadow_counts_reach_the_attacks(own, tmp_path):
    args = _parse(_flags(own, "--n-shadow", "6", "--n-references", "3", "--cache-dir",
                         str(tmp_path / "c"), "--attacks", "lira,rmia,calibrated"))
    attacks = _make_attacks(args, recipe=_recipe(args, None), can_train=True)
    assert attacks["lira"].n_shadow == 6
    assert attacks["rmia"].n_reference == 3 and attacks["calibrated"].n_reference == 3
    assert {a.cache_dir for a in attacks.values()} == {str(tmp_path / "c")}


def test_cache_dir_resumes_an_interrupted_run(own, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "out"
    argv = _flags(own, "--attacks", "lira,rmia", "--n-shadow", "4", "--n-references", "2",
                  "--cache-dir", str(cache), "--out", str(out), "--quiet")

    def context():
        return json.loads((out / "results.json").read_text())["context"]

    assert _run(argv) == 0
    payload = json.loads((out / "results.json").read_text())
    assert payload["config"]["n_shadow"] == 4 and payload["config"]["n_references"] == 2
    lira_files = sorted(cache.glob("LiRAAttack-*/model_*.npz"))
    assert len(lira_files) == 4  # --n-shadow reached LiRA
    n_models = len(list(cache.glob("*/model_*.npz")))
    assert context()["shadow models trained"] == n_models
    assert context()["shadow models from --cache-dir"] == 0
    for f in lira_files[:2]:  # as if the run had stopped before these two finished
        f.unlink()
        f.with_suffix(".joblib").unlink()
    assert _run(argv) == 0
    assert context()["shadow models trained"] == 2
    assert context()["shadow models from --cache-dir"] == n_models - 2
    assert _run(argv) == 0
    assert context()["shadow models trained"] == 0


def test_progress_bar_names_the_seed_and_quiet_silences_it(own, tmp_path, capsys):
    argv = _flags(own, "--attacks", "lira", "--n-shadow", "4")
    assert _run([*argv, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "seed 0: lira shadows" in err and "4/4" in err
    assert _run([*argv, "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert "shadows" not in capsys.readouterr().err


def test_config_file_sets_long_audit_flags(own, tmp_path):
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(
        f"model_file: {own / 'model.joblib'}\ntrain: {own / 'train.csv'}\n"
        f"population: {own / 'pop.csv'}\nlabel: {LABEL}\nrecipe: catboost\nattacks: [lira, rmia]\n"
        f"fpr: 0.05\nn-shadow: 4\nn_references: 3\nthreads: 1\ncache_dir: {tmp_path / 'c'}\n"
        f"quiet: true\nout: {tmp_path / 'o'}\n")
    args = _parse(["audit", "--config", str(cfg)])
    assert (args.n_shadow, args.n_references, args.threads) == (4, 3, 1)
    assert _recipe(args, None).get_params()["model__thread_count"] == 1
    assert _parse(["audit", "--config", str(cfg), "--n-shadow", "6"]).n_shadow == 6  # flags win
    assert _run(["audit", "--config", str(cfg)]) == 0
    assert len(list((tmp_path / "c").glob("LiRAAttack-*/model_*.npz"))) == 4


def test_threads_limit_blas(own):
    from threadpoolctl import threadpool_info

    args = _parse(_flags(own, "--threads", "2"))  # the test session holds them at 1
    with _thread_limits(args):
        assert {p["num_threads"] for p in threadpool_info()} == {2}
