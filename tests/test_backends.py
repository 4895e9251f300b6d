"""The model back ends: one record per library, and what reads it.

Every GPU here is mocked (a probe returning a count): the rules are tested on a CPU
machine, and nothing trains on a GPU.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import tabmia.backends as backends
from tabmia.backends import (
    BACKENDS,
    GPU_MIN_ROWS,
    backend_of,
    execution_params,
    has_device,
    set_device,
    set_threads,
    training_device,
)


def _gpus(monkeypatch, n, *probes):
    for probe in probes or ("_catboost_gpus", "_xgboost_gpus", "_torch_gpus"):
        monkeypatch.setattr(backends, probe, lambda: n)


def _models():
    """One unfitted model per back end (skipping libraries that are not installed)."""
    from tabmia.shadow import catboost_classifier

    out = {"sklearn": RandomForestClassifier(n_estimators=5),
           "catboost": catboost_classifier(iterations=5)}
    try:
        from tabmia.shadow import xgboost_classifier

        out["xgboost"] = xgboost_classifier(n_estimators=5)
    except ImportError:
        pass
    try:
        from tabmia.shadow import lightgbm_classifier

        out["lightgbm"] = lightgbm_classifier(n_estimators=5)
    except ImportError:
        pass
    try:
        from tabmia.shadow import TorchMLPClassifier

        out["torch"] = TorchMLPClassifier()
    except ImportError:
        pass
    return out


def test_every_model_finds_its_back_end():
    for name, model in _models().items():
        assert backend_of(model).name == name
        assert backend_of(make_pipeline(StandardScaler(), model)).name == "sklearn"  # the Pipeline
    assert backend_of(object()).name == "sklearn"  # unknown libraries: no device, n_jobs threads


def test_each_factory_builds_its_model():
    for name, backend in BACKENDS.items():
        if backend.factory is None:
            continue
        pytest.importorskip({"torch": "torch"}.get(name, name))
        model = backend.make(device="cpu")
        assert backend_of(model) is backend


def test_execution_params_keep_the_cache_keys_of_before():
    """The cache fingerprint leaves these out; a shrinking set would orphan caches."""
    before = {"verbose", "verbosity", "silent", "logging_level", "device", "n_jobs", "nthread",
              "thread_count", "task_type", "devices", "allow_writing_files", "train_dir",
              "gpu_ram_part", "used_ram_limit"}
    assert before <= execution_params()
    for backend in BACKENDS.values():
        assert set(backend.device_params) <= execution_params()
        assert set(backend.thread_params) <= execution_params()


@pytest.mark.parametrize(("n_rows", "expected"), [
    (None, "cpu"), (2 * 10**4, "cpu"), ("threshold - 1", "cpu"), ("threshold", "cuda"),
    (10**7, "cuda"),
])
def test_auto_uses_the_gpu_only_from_the_size_where_it_pays(monkeypatch, n_rows, expected):
    _gpus(monkeypatch, 1)
    threshold = backends.auto_gpu_rows()
    if isinstance(n_rows, str):
        n_rows = threshold - 1 if n_rows.endswith("- 1") else threshold
    for name in ("catboost", "xgboost"):
        assert BACKENDS[name].resolve("auto", n_rows=n_rows) == expected
    assert BACKENDS["lightgbm"].resolve("auto", n_rows=10**7) == "cpu"
    assert BACKENDS["sklearn"].resolve("cuda", n_rows=10**7) == "cpu"


@pytest.mark.parametrize(("cores", "threshold"), [(1, GPU_MIN_ROWS), (2, GPU_MIN_ROWS),
                                                  (5, GPU_MIN_ROWS), (16, 320_000)])
def test_auto_gpu_size_grows_with_the_cores_it_competes_with(monkeypatch, cores, threshold):
    """On many cores, parallel CPU jobs beat one GPU fit at a time up to larger data."""
    import joblib

    monkeypatch.setattr(joblib, "cpu_count", lambda *a, **k: cores)
    assert backends.auto_gpu_rows() == threshold
    _gpus(monkeypatch, 1)
    assert BACKENDS["catboost"].resolve("auto", n_rows=threshold - 1) == "cpu"
    assert BACKENDS["catboost"].resolve("auto", n_rows=threshold) == "cuda"


def test_auto_below_the_size_probes_no_driver(monkeypatch):
    def never():
        raise AssertionError("a GPU probe ran")

    monkeypatch.setattr(backends, "_catboost_gpus", never)
    assert BACKENDS["catboost"].resolve("auto", n_rows=10) == "cpu"
    assert BACKENDS["catboost"].resolve("cpu") == "cpu"


def test_auto_without_a_gpu_is_the_cpu_and_cuda_warns(monkeypatch):
    _gpus(monkeypatch, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert BACKENDS["catboost"].resolve("auto", n_rows=10**7) == "cpu"
    with pytest.warns(RuntimeWarning, match="CUDA is not available to CatBoost"):
        assert BACKENDS["catboost"].resolve("cuda") == "cpu"
    with pytest.raises(ValueError, match="device must be"):
        BACKENDS["lightgbm"].resolve("gpu")


def test_set_device_reaches_nested_models(monkeypatch):
    pytest.importorskip("catboost")
    pytest.importorskip("torch")
    from tabmia.shadow import TorchMLPClassifier, catboost_classifier

    _gpus(monkeypatch, 2)
    cat = make_pipeline(StandardScaler(), catboost_classifier(iterations=5))
    assert set_device(cat, "cuda:1") == ["catboost"]
    params = cat[-1].get_params()
    assert params["task_type"] == "GPU" and params["devices"] == "1"
    assert training_device(cat)[0] == "cuda:1"
    assert set_device(cat, "cpu") == ["catboost"]
    assert cat[-1].get_params()["task_type"] == "CPU" and cat[-1].get_params()["devices"] is None
    assert training_device(cat) == ("cpu", BACKENDS["catboost"])
    mlp = make_pipeline(StandardScaler(), TorchMLPClassifier())
    assert set_device(mlp, "cuda") == ["torch"] and mlp[-1].device == "cuda"
    assert set_device(mlp, "auto") == ["torch"] and mlp[-1].device == "auto"
    assert training_device(mlp)[0] == "cuda"  # "auto" on a machine whose torch sees GPUs
    forest = make_pipeline(StandardScaler(), RandomForestClassifier())
    assert set_device(forest, "cuda") == [] and not has_device(forest)
    assert has_device(cat) and has_device(mlp)


def test_set_threads_sets_the_library_parameter_and_keeps_explicit_ones():
    pytest.importorskip("catboost")
    from tabmia.shadow import catboost_classifier

    cat = catboost_classifier(iterations=5)
    assert set_threads(cat, 3, only_unset=True) == ["catboost"]
    assert cat.get_params()["thread_count"] == 3
    assert set_threads(cat, 1, only_unset=True) == []  # the user's (here: our) 3 stays
    forest = make_pipeline(StandardScaler(), RandomForestClassifier())
    assert set_threads(forest, 2) == ["sklearn"] and forest[-1].n_jobs == 2
    # outside the ensembles n_jobs often does nothing (LogisticRegression: deprecated)
    logistic = LogisticRegression()
    assert set_threads(logistic, 2) == [] and logistic.n_jobs is None
    assert set_threads(forest, None) == []


def test_thread_invariant_back_ends_fit_the_same_model_with_any_thread_count():
    """The scheduler gives spare cores only to these: their models must not change."""
    from sklearn.base import clone

    X, y = make_classification(n_samples=600, n_features=10, random_state=0)
    for name, recipe in _models().items():
        if not BACKENDS[name].thread_invariant:
            continue
        preds = []
        for threads in (1, 2):
            model = clone(recipe)
            assert set_threads(model, threads) == [name]
            model.set_params(**{"random_seed" if name == "catboost" else "random_state": 0})
            preds.append(model.fit(X, y).predict_proba(X))
        np.testing.assert_array_equal(preds[0], preds[1])


def test_catboost_probe_prints_nothing():
    """CatBoost's own GPU count prints "Error 35 (CUDA driver version ...)" on machines
    without a driver; tabmia asks it once and quietly."""
    pytest.importorskip("catboost")
    code = "import tabmia.backends as b; print(b.BACKENDS['catboost'].gpu_count())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr == "" and out.stdout.strip().isdigit()


def test_import_tabmia_backends_stays_light():
    code = ("import sys, tabmia.backends; "
            "assert not {'torch', 'catboost', 'xgboost', 'lightgbm'} & set(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_release_fit_state_keeps_the_model_and_drops_the_training_state():
    catboost = pytest.importorskip("catboost")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from tabmia.backends import release_fit_state

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "c": rng.choice(list("xyz"), 300)})
    y = (X["a"] + (X["c"] == "x") > 0.5).astype(int)
    model = catboost.CatBoostClassifier(iterations=20, verbose=False, cat_features=["c"])
    model.fit(X, y)
    light = release_fit_state(model)
    assert light is not model and light.is_fitted()
    assert np.array_equal(light.predict_proba(X), model.predict_proba(X))
    unfitted = catboost.CatBoostClassifier(iterations=20)
    assert release_fit_state(unfitted) is unfitted
    linear = LogisticRegression().fit(X[["a"]], y)
    assert release_fit_state(linear) is linear
    pipe = make_pipeline(StandardScaler(), catboost.CatBoostClassifier(iterations=20, verbose=False))
    pipe.fit(X[["a"]], y)
    last = pipe.steps[-1][1]
    assert release_fit_state(pipe) is pipe and pipe.steps[-1][1] is not last
    assert np.array_equal(pipe.predict_proba(X[["a"]]), last.predict_proba(StandardScaler().fit_transform(X[["a"]])))
