"""ShadowPopulation: membership matrix, parallel training, cache, cluster, estimators."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from tabmia.scores import membership_score
from tabmia.shadow import ShadowPopulation, draw_in_masks
from tabmia.target import TargetModel


class CountingLR(LogisticRegression):
    """LogisticRegression that counts its fits (in this process) and can fail on demand."""

    fits = 0
    fail_at: int | None = None

    def fit(self, X, y, sample_weight=None):
        if CountingLR.fail_at is not None and CountingLR.fits >= CountingLR.fail_at:
            raise RuntimeError("simulated crash")
        CountingLR.fits += 1
        return super().fit(X, y, sample_weight=sample_weight)


@pytest.fixture(autouse=True)
def _reset_counter():
    CountingLR.fits = 0
    CountingLR.fail_at = None
    yield
    CountingLR.fail_at = None


@pytest.fixture(scope="module")
def pool():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.8, size=300) > 0).astype(int)
    return X, y


# ------------------------------------------------------------------ membership matrix
def test_every_record_in_for_exactly_half_the_models(pool):
    X, y = pool
    pop = ShadowPopulation(LogisticRegression(), n_models=6, random_state=0).fit(X, y)
    assert pop.in_masks_.shape == (6, 300) and pop.in_masks_.dtype == bool
    np.testing.assert_array_equal(pop.in_masks_.sum(axis=0), 3)
    assert 100 < pop.in_masks_.sum(axis=1).min() and pop.in_masks_.sum(axis=1).max() < 200
    # not the same split for every pair
    assert not np.array_equal(pop.in_masks_[0], pop.in_masks_[2])


def test_masks_and_seeds_grow_by_keeping_the_first_models():
    small = draw_in_masks(4, 1000, random_state=3)
    large = draw_in_masks(10, 1000, random_state=3)
    np.testing.assert_array_equal(large[:4], small)
    np.testing.assert_array_equal(large.sum(axis=0), 5)
    quarter = draw_in_masks(8, 1000, pkeep=0.25, random_state=3)
    np.testing.assert_array_equal(quarter.sum(axis=0), 2)
    odd = draw_in_masks(5, 1000, random_state=3)  # last pair cut: 2 or 3 of 5
    assert set(np.unique(odd.sum(axis=0))) == {2, 3}
    with pytest.raises(ValueError, match="pkeep"):
        draw_in_masks(4, 10, pkeep=0.123456789)


def test_statistics_shape_dtype_and_values(pool):
    X, y = pool
    pop = ShadowPopulation(LogisticRegression(), n_models=4, statistic="loss",
                           random_state=0).fit(X, y)
    assert pop.statistics_.shape == (4, 300) and pop.statistics_.dtype == np.float32
    assert pop.seeds_.shape == (4,) and len(set(pop.seeds_.tolist())) == 4
    assert len(pop.models_) == 4 and pop.n_trained_ == 4
    expected = membership_score("loss", pop.models_[1].predict_proba(X), y)
    np.testing.assert_allclose(pop.statistics_[1], expected, rtol=1e-6)
    # members score higher than non-members on average
    ins = pop.statistics_[pop.in_masks_].mean()
    outs = pop.statistics_[~pop.in_masks_].mean()
    assert ins > outs
    np.testing.assert_array_equal(pop.statistics(X, y), pop.statistics_)
    proba = pop.proba(X[:7])
    assert proba.shape == (4, 7, 2) and proba.dtype == np.float32
    # each clone got its own seed
    assert [m.random_state for m in pop.models_] == pop.seeds_.tolist()


def test_n_jobs_does_not_change_results(pool):
    X, y = pool
    est = DecisionTreeClassifier(max_depth=4, max_features=0.5)
    one = ShadowPopulation(est, n_models=4, random_state=1, n_jobs=1).fit(X, y)
    two = ShadowPopulation(est, n_models=4, random_state=1, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.statistics_, two.statistics_)
    np.testing.assert_array_equal(one.in_masks_, two.in_masks_)
    np.testing.assert_array_equal(one.seeds_, two.seeds_)
    other = ShadowPopulation(est, n_models=4, random_state=2).fit(X, y)
    assert not np.array_equal(one.statistics_, other.statistics_)


def test_n_jobs_does_not_change_blas_results_with_multithreaded_blas():
    """Float results of BLAS calls depend on its thread count; the tests run with one
    BLAS thread (conftest), users often with many. With 2 BLAS threads here and one
    per worker, sklearn MLP shadows differed by up to 0.17 before each fit was pinned
    to one BLAS thread."""
    from sklearn.datasets import make_classification
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    X, y = make_classification(2000, 40, n_informative=20, n_classes=3, random_state=0)
    X = X.astype(np.float32)  # float32 GEMM: the case seen to differ
    est = MLPClassifier((128, 128), max_iter=10, random_state=0)
    with threadpool_limits(limits=2, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning
        one = ShadowPopulation(est, n_models=2, random_state=0, n_jobs=1).fit(X, y)
        two = ShadowPopulation(est, n_models=2, random_state=0, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.statistics_, two.statistics_)


def test_keep_models_false(pool):
    X, y = pool
    pop = ShadowPopulation(LogisticRegression(), n_models=2, keep_models=False,
                           random_state=0).fit(X, y)
    assert pop.models_ is None and pop.statistics_.shape == (2, 300)
    with pytest.raises(ValueError, match="keep_models=False"):
        pop.statistics(X, y)


# ------------------------------------------------------------------------ cache
def test_cache_resumes_and_tops_up(pool, tmp_path):
    X, y = pool
    make = lambda k: ShadowPopulation(CountingLR(), n_models=k, random_state=0,  # noqa: E731
                                      cache_dir=tmp_path, n_jobs=1)
    first = make(4).fit(X, y)
    assert CountingLR.fits == 4 and (tmp_path / "manifest.json").exists()
    assert sorted(p.name for p in tmp_path.glob("model_*.npz")) == [
        f"model_{k:05d}.npz" for k in range(4)
    ]
    # an interrupted run: two result files lost
    for k in (1, 3):
        (tmp_path / f"model_{k:05d}.npz").unlink()
    CountingLR.fits = 0
    resumed = make(4).fit(X, y)
    assert CountingLR.fits == 2 and resumed.n_trained_ == 2
    np.testing.assert_array_equal(resumed.statistics_, first.statistics_)
    np.testing.assert_array_equal(resumed.statistics(X, y), first.statistics_)
    # top up from 4 to 6 models: only 2 trained, the first 4 unchanged
    CountingLR.fits = 0
    grown = make(6).fit(X, y)
    assert CountingLR.fits == 2 and grown.n_trained_ == 2
    np.testing.assert_array_equal(grown.statistics_[:4], first.statistics_)
    np.testing.assert_array_equal(grown.in_masks_[:4], first.in_masks_)
    np.testing.assert_array_equal(grown.in_masks_.sum(axis=0), 3)
    fresh = ShadowPopulation(CountingLR(), n_models=6, random_state=0).fit(X, y)
    np.testing.assert_array_equal(grown.statistics_, fresh.statistics_)
    # fewer models than cached: nothing to train; random_state=None adopts the cache's seed
    CountingLR.fits = 0
    again = ShadowPopulation(CountingLR(), n_models=5, cache_dir=tmp_path, n_jobs=1).fit(X, y)
    assert CountingLR.fits == 0 and again.n_trained_ == 0
    np.testing.assert_array_equal(again.statistics_, grown.statistics_[:5])


def test_cache_survives_a_crash_mid_run(pool, tmp_path):
    X, y = pool
    CountingLR.fail_at = 3
    # in-process (n_jobs=1): the fit counter lives in this process
    pop = ShadowPopulation(CountingLR(), n_models=6, random_state=0, cache_dir=tmp_path,
                           n_jobs=1)
    with pytest.raises(RuntimeError, match="simulated crash"):
        pop.fit(X, y)
    assert len(list(tmp_path.glob("model_*.npz"))) == 3
    CountingLR.fail_at = None
    CountingLR.fits = 0
    pop.fit(X, y)
    assert CountingLR.fits == 3 and pop.n_trained_ == 3
    reference = ShadowPopulation(LogisticRegression(), n_models=6, random_state=0).fit(X, y)
    np.testing.assert_allclose(pop.statistics_, reference.statistics_, rtol=1e-6)


def test_cache_keep_models_false_then_true(pool, tmp_path):
    X, y = pool
    ShadowPopulation(CountingLR(), n_models=2, random_state=0, cache_dir=tmp_path,
                     keep_models=False, n_jobs=1).fit(X, y)
    assert not list(tmp_path.glob("*.joblib"))
    CountingLR.fits = 0
    pop = ShadowPopulation(CountingLR(), n_models=2, random_state=0, cache_dir=tmp_path,
                           n_jobs=1).fit(X, y)
    assert CountingLR.fits == 2 and len(pop.models_) == 2  # models were needed
    CountingLR.fits = 0
    pop = ShadowPopulation(CountingLR(), n_models=2, random_state=0, cache_dir=tmp_path,
                           n_jobs=1).fit(X, y)
    assert CountingLR.fits == 0 and isinstance(pop.models_[0], CountingLR)


def test_cache_manifest_mismatch_raises(pool, tmp_path):
    X, y = pool
    ShadowPopulation(LogisticRegression(), n_models=2, random_state=0,
                     cache_dir=tmp_path).fit(X, y)
    cases = [
        (dict(), (X + 1, y), "data_sha256"),
        (dict(), (X[:200], y[:200]), "n_records"),
        (dict(estimator=LogisticRegression(C=0.5)), (X, y), "estimator"),
        (dict(estimator=DecisionTreeClassifier()), (X, y), "estimator"),
        (dict(statistic="hinge"), (X, y), "statistic"),
        (dict(random_state=1), (X, y), "seed_entropy"),
        (dict(pkeep=0.25), (X, y), "pkeep"),
    ]
    for change, data, field in cases:
        kwargs = dict(estimator=LogisticRegression(), n_models=2, random_state=0,
                      cache_dir=tmp_path)
        kwargs.update(change)
        with pytest.raises(ValueError, match=f"another setup.*{field}"):
            ShadowPopulation(**kwargs).fit(*data)
    # execution settings are not part of the setup
    ShadowPopulation(LogisticRegression(verbose=0, n_jobs=1), n_models=2, random_state=0,
                     cache_dir=tmp_path, n_jobs=2).fit(X, y)
    (tmp_path / "manifest.json").write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="format"):
        ShadowPopulation(LogisticRegression(), n_models=2, cache_dir=tmp_path).fit(X, y)


# --------------------------------------------------------------------- joblib / dask
class WorkerProbeTree(DecisionTreeClassifier):
    """DecisionTreeClassifier that records the dask worker it was fit on (threads only)."""

    workers: list = []

    def fit(self, X, y, sample_weight=None, check_input=True):
        from distributed import get_worker

        try:
            WorkerProbeTree.workers.append(get_worker().address)
        except ValueError:
            WorkerProbeTree.workers.append(None)
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


@pytest.mark.parametrize("processes", [False, True])
def test_dask_cluster_gives_identical_statistics(pool, processes):
    distributed = pytest.importorskip("distributed")
    X, y = pool
    local = ShadowPopulation(DecisionTreeClassifier(max_depth=3), n_models=4,
                             random_state=0).fit(X, y)
    # loopback TCP: the test setup refuses other addresses (dask's own IP lookup included)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            WorkerProbeTree.workers = []
            with joblib.parallel_config(backend="dask"):
                remote = ShadowPopulation(WorkerProbeTree(max_depth=3), n_models=4,
                                          random_state=0, n_jobs=-1).fit(X, y)
    if not processes:  # the fits ran on the cluster's workers, not here
        assert len(WorkerProbeTree.workers) == 4 and None not in WorkerProbeTree.workers
    np.testing.assert_array_equal(remote.statistics_, local.statistics_)
    np.testing.assert_array_equal(remote.in_masks_, local.in_masks_)


class PidProbeTree(DecisionTreeClassifier):
    """DecisionTreeClassifier that records the process it was fit in."""

    def fit(self, X, y, sample_weight=None, check_input=True):
        self.fit_pid_ = os.getpid()
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


def test_ray_cluster_gives_identical_statistics(pool, monkeypatch):
    """Shadow training on Ray through joblib's registered "ray" backend."""
    ray = pytest.importorskip("ray")
    from ray.util.joblib import register_ray

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    X, y = pool
    local = ShadowPopulation(DecisionTreeClassifier(max_depth=3), n_models=4,
                             random_state=0).fit(X, y)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)
    try:
        register_ray()
        with joblib.parallel_config(backend="ray"):
            remote = ShadowPopulation(PidProbeTree(max_depth=3), n_models=4,
                                      random_state=0, n_jobs=2).fit(X, y)
    finally:
        ray.shutdown()
    # the fits ran in Ray's worker processes, not here
    assert os.getpid() not in {m.fit_pid_ for m in remote.models_}
    np.testing.assert_array_equal(remote.statistics_, local.statistics_)
    np.testing.assert_array_equal(remote.in_masks_, local.in_masks_)


# -------------------------------------------------------------------- estimators
class _FitOnly(BaseEstimator):
    """An estimator that learns but answers nothing."""

    def fit(self, X, y):
        return self


def test_refuses_frozen_estimator_and_the_target(pool):
    from sklearn.frozen import FrozenEstimator

    X, y = pool
    target = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="FrozenEstimator"):
        ShadowPopulation(FrozenEstimator(target), n_models=2).fit(X, y)
    with pytest.raises(ValueError, match="target object itself"):
        ShadowPopulation(target, n_models=2, target=target).fit(X, y)
    with pytest.raises(ValueError, match="target object itself"):
        ShadowPopulation(target, n_models=2, target=TargetModel(target)).fit(X, y)
    # an unfitted copy of the target's recipe is the intended use
    ShadowPopulation(clone(target), n_models=2, target=target, random_state=0).fit(X, y)
    # a recipe with predict only (the label-only attacks' shadows) is scored from its
    # labels as one-hot rows: its loss statistic takes two values
    labels_only = ShadowPopulation(SVC(), n_models=2, random_state=0).fit(X, y)
    assert np.unique(np.round(labels_only.statistics_, 6)).size <= 2
    with pytest.raises(ValueError, match="neither predict_proba nor predict"):
        ShadowPopulation(_FitOnly(), n_models=2).fit(X, y)
    with pytest.raises(ValueError, match="labels"):
        ShadowPopulation(LogisticRegression(), n_models=2).fit(X, y[:-1])


def test_clone_keeps_target_by_reference(pool):
    X, y = pool
    target = LogisticRegression().fit(X, y)
    pop = ShadowPopulation(LogisticRegression(), n_models=2, target=target)
    twin = clone(pop)
    assert twin.target is target and twin.estimator is not pop.estimator


def test_pipeline_on_dataframe_with_categorical_columns():
    rng = np.random.default_rng(0)
    n = 240
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "hours": rng.normal(40, 8, n),
            "job": pd.Categorical(rng.choice(["a", "b", "c"], n)),
            "city": pd.Categorical(rng.choice(["x", "y"], n)),
        }
    )
    y = np.where((frame["age"] > 45) ^ (frame["job"] == "a"), ">50K", "<=50K")
    pipe = make_pipeline(
        make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), ["job", "city"]),
            remainder=StandardScaler(),
        ),
        LogisticRegression(),
    )
    pop = ShadowPopulation(pipe, n_models=4, random_state=0).fit(frame, y)
    assert pop.statistics_.shape == (4, n) and np.isfinite(pop.statistics_).all()
    np.testing.assert_array_equal(pop.classes_, ["<=50K", ">50K"])
    np.testing.assert_array_equal(pop.statistics(frame, y), pop.statistics_)
    twin = ShadowPopulation(pipe, n_models=4, random_state=0, n_jobs=2).fit(frame, y)
    np.testing.assert_array_equal(twin.statistics_, pop.statistics_)


def test_classes_missing_from_a_shadow_subset():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = rng.integers(0, 3, 120)
    y[7] = 3  # a class with a single record: half the models never see it
    pop = ShadowPopulation(DecisionTreeClassifier(max_depth=3), n_models=4, statistic="logit",
                           classes=[0, 1, 2, 3, 4], random_state=0).fit(X, y)
    assert np.isfinite(pop.statistics_).all()
    proba = pop.proba(X)
    assert proba.shape == (4, 120, 5)
    missing = ~pop.in_masks_[:, 7]
    assert missing.sum() == 2
    np.testing.assert_array_equal(proba[missing][:, :, 3], 0.0)
    np.testing.assert_array_equal(proba[:, :, 4], 0.0)  # a class no record has
    # the record of the rare class: far more "member" under the models that saw it
    assert pop.statistics_[~missing, 7].min() > pop.statistics_[missing, 7].max()
    np.testing.assert_allclose(proba.sum(axis=2), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="never saw"):
        ShadowPopulation(LogisticRegression(), n_models=2, classes=[0, 1]).fit(X, y)


def test_invalid_parameters(pool):
    X, y = pool
    with pytest.raises(ValueError, match="statistic"):
        ShadowPopulation(LogisticRegression(), statistic="nope").fit(X, y)
    with pytest.raises(ValueError, match="n_models"):
        ShadowPopulation(LogisticRegression(), n_models=0).fit(X, y)
    with pytest.raises(ValueError, match="pkeep"):
        ShadowPopulation(LogisticRegression(), pkeep=0.3183098861837907).fit(X, y)
    with pytest.raises(ValueError, match="estimator is None"):
        ShadowPopulation().fit(X, y)


def test_zero_features_are_refused_on_every_pandas(pool, monkeypatch):
    """pandas 3.0 cannot hash a frame without columns; the 0-feature case must still be
    sklearn's clear error, not a pandas length mismatch."""
    import tabmia._records as records

    _X, y = pool
    real = pd.util.hash_pandas_object

    def broken(frame, **kwargs):  # pandas 3.0.6 on a frame without columns
        if frame.shape[1] == 0:
            raise ValueError("Length of values (0) does not match length of index (300)")
        return real(frame, **kwargs)

    monkeypatch.setattr(records.pd.util, "hash_pandas_object", broken)
    empty = np.empty((300, 0))
    hashes = records.row_hashes(empty)
    assert hashes.shape == (300,) and (hashes == hashes[0]).all()
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(300, 0\)\) while a minimum"):
        ShadowPopulation(LogisticRegression(), n_models=2).fit(empty, y)


# --------------------------------------------------------------- MLP shadows
def test_mlp_population_is_batched_and_equals_models_alone(pool):
    torch = pytest.importorskip("torch")
    from tabmia.shadow import TorchMLPClassifier

    X, y = pool
    est = TorchMLPClassifier(hidden_layer_sizes=(16,), epochs=4, batch_size=32)
    pop = ShadowPopulation(est, n_models=4, random_state=0, statistic="hinge",
                           device="cpu").fit(X, y)
    assert pop.device_ == torch.device("cpu")
    assert pop.statistics_.shape == (4, 300) and pop.statistics_.dtype == np.float32
    for k in (0, 3):
        alone = clone(est).set_params(random_state=int(pop.seeds_[k])).fit(
            X[pop.in_masks_[k]], y[pop.in_masks_[k]]
        )
        expected = membership_score("hinge", alone.predict_proba(X), y,
                                    logits=alone.decision_function(X).astype(np.float64))
        np.testing.assert_allclose(pop.statistics_[k], expected, atol=1e-4)
    two = ShadowPopulation(est, n_models=4, random_state=0, statistic="hinge", n_jobs=2,
                           device="cpu").fit(X, y)
    np.testing.assert_allclose(two.statistics_, pop.statistics_, atol=1e-5)
    np.testing.assert_allclose(pop.statistics(X, y), pop.statistics_, atol=1e-6)


def test_mlp_population_cache(pool, tmp_path):
    pytest.importorskip("torch")
    from tabmia.shadow import TorchMLPClassifier

    X, y = pool
    est = TorchMLPClassifier(hidden_layer_sizes=(8,), epochs=2)
    first = ShadowPopulation(est, n_models=2, random_state=0, cache_dir=tmp_path).fit(X, y)
    grown = ShadowPopulation(est, n_models=4, random_state=0, cache_dir=tmp_path).fit(X, y)
    assert grown.n_trained_ == 2
    np.testing.assert_array_equal(grown.statistics_[:2], first.statistics_)
    assert isinstance(grown.models_[0], TorchMLPClassifier)
    np.testing.assert_allclose(grown.statistics(X, y), grown.statistics_, atol=1e-6)


def test_mlp_pipeline_population_is_batched_and_equals_models_alone(monkeypatch):
    """The CLI's mlp recipe is Pipeline(encoding, TorchMLPClassifier): its shadows train
    batched (one network per job), each with its own encoding, as if trained alone."""
    pytest.importorskip("torch")
    import tabmia.shadow.batched as batched
    from tabmia.recipes import make_model

    from tests.test_mlp import _mixed_frame

    X, y = _mixed_frame(200)
    recipe = make_model("mlp", X, device="cpu").set_params(
        model__epochs=3, model__hidden_layer_sizes=(8,))
    calls = []
    real = batched.fit_mlps_batched

    def spy(X_, y_idx, masks, *args, **kwargs):
        calls.append(masks.shape[0])
        return real(X_, y_idx, masks, *args, **kwargs)

    monkeypatch.setattr(batched, "fit_mlps_batched", spy)
    pop = ShadowPopulation(recipe, n_models=4, random_state=0, n_jobs=1).fit(X, y)
    assert calls == [4]  # one batched network for the four models
    for k in (0, 3):
        alone = clone(recipe).set_params(model__random_state=int(pop.seeds_[k]))
        alone.fit(X[pop.in_masks_[k]], y[pop.in_masks_[k]])
        expected = membership_score("logit", alone.predict_proba(X), y)
        np.testing.assert_allclose(pop.statistics_[k], expected, atol=1e-4)
    np.testing.assert_allclose(pop.statistics(X, y), pop.statistics_, atol=1e-6)


# -------------------------------------------------------------------- boosting
def test_boosting_factories_default_to_the_cpu_and_fit(pool):
    """Without a row count, "auto" is the CPU on any machine (a GPU only pays for large
    data); with one, the GPU from GPU_MIN_ROWS rows where the library sees one."""
    pytest.importorskip("catboost")
    pytest.importorskip("xgboost")
    from tabmia.shadow import (
        catboost_classifier,
        gpu_available,
        lightgbm_classifier,
        xgboost_classifier,
    )

    X, y = pool
    cb = catboost_classifier(iterations=20, thread_count=1)
    xgb = xgboost_classifier(n_estimators=10, n_jobs=1)
    assert cb.get_params()["allow_writing_files"] is False
    assert cb.get_params()["thread_count"] == 1
    assert cb.get_params()["task_type"] == "CPU" and xgb.get_params()["device"] == "cpu"
    assert xgb.get_params()["tree_method"] == "hist"
    for model in (cb, xgb, lightgbm_classifier(n_estimators=10, n_jobs=1)):
        fitted = clone(model).fit(X, y)
        assert fitted.predict_proba(X).shape == (300, 2)
    assert gpu_available("lightgbm") is False
    with pytest.raises(ValueError, match="library"):
        gpu_available("sklearn")


def test_boosting_factories_auto_rule_with_a_mocked_gpu(monkeypatch):
    pytest.importorskip("catboost")
    pytest.importorskip("xgboost")
    import tabmia.backends as backends
    from tabmia.shadow import catboost_classifier, gpu_available, xgboost_classifier

    monkeypatch.setattr(backends, "_catboost_gpus", lambda: 1)
    monkeypatch.setattr(backends, "_xgboost_gpus", lambda: 1)
    big = backends.auto_gpu_rows()
    small = big - 1
    assert gpu_available("catboost") and gpu_available("xgboost")
    assert catboost_classifier(n_rows=big).get_params()["task_type"] == "GPU"
    assert catboost_classifier(n_rows=small).get_params()["task_type"] == "CPU"
    assert catboost_classifier().get_params()["task_type"] == "CPU"
    assert xgboost_classifier(n_rows=big).get_params()["device"] == "cuda"
    assert xgboost_classifier(n_rows=small).get_params()["device"] == "cpu"


def _adult_like(n=300, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "workclass": pd.Categorical(rng.choice(["Private", "State-gov", None], n)),
            "education": rng.choice(["Bachelors", "HS-grad", "Masters"], n).astype(object),
            "hours": rng.normal(40, 8, n),
        }
    )
    y = np.where((frame["age"] > 45) | (frame["education"] == "Masters"), ">50K", "<=50K")
    return frame, y


def test_catboost_auto_detects_categorical_columns_and_pickles():
    pytest.importorskip("catboost")
    import pickle

    from tabmia.shadow import CatBoostAuto, catboost_classifier

    frame, y = _adult_like()
    model = catboost_classifier(iterations=30, thread_count=1, random_seed=0).fit(frame, y)
    assert isinstance(model, CatBoostAuto)
    assert sorted(model.get_cat_feature_indices()) == [1, 2]
    proba = model.predict_proba(frame)
    assert proba.shape == (300, 2) and model.score(frame, y) > 0.8
    back = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(back.predict_proba(frame), proba)
    assert type(clone(model)) is CatBoostAuto


def test_catboost_shadows_on_a_dataframe():
    pytest.importorskip("catboost")
    from tabmia.shadow import catboost_classifier

    frame, y = _adult_like()
    est = catboost_classifier(iterations=20, thread_count=1)
    pop = ShadowPopulation(est, n_models=2, random_state=0).fit(frame, y)
    again = ShadowPopulation(est, n_models=2, random_state=0).fit(frame, y)
    assert np.isfinite(pop.statistics_).all()
    np.testing.assert_array_equal(pop.statistics_, again.statistics_)  # seeded per model
    assert [m.get_params()["random_seed"] for m in pop.models_] == pop.seeds_.tolist()


def test_catboost_shadows_on_adult(shared_data, tmp_path):
    pytest.importorskip("catboost")
    from tabmia.shadow import catboost_classifier

    path = Path(shared_data) / "adult" / "adult.csv.gz"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    frame = pd.read_csv(path, nrows=2000)
    y = frame.pop("income").str.rstrip(".").to_numpy()
    frame = frame.drop(columns="split")
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col]):
            frame[col] = frame[col].astype("category")
    est = catboost_classifier(iterations=30, thread_count=os.cpu_count() or 1)
    pop = ShadowPopulation(est, n_models=2, random_state=0, cache_dir=tmp_path).fit(frame, y)
    assert pop.statistics_.shape == (2, 2000) and np.isfinite(pop.statistics_).all()
    assert pop.statistics_[pop.in_masks_].mean() > pop.statistics_[~pop.in_masks_].mean()


def test_mlp_population_device_defers_to_the_estimator(pool):
    torch = pytest.importorskip("torch")
    from tabmia.shadow import TorchMLPClassifier

    if torch.cuda.is_available():
        pytest.skip("checks the no-CUDA fallback")
    X, y = pool
    est = TorchMLPClassifier(hidden_layer_sizes=(4,), epochs=1, device="cuda")
    with pytest.warns(RuntimeWarning, match="CUDA is not available"):
        pop = ShadowPopulation(est, n_models=2, random_state=0).fit(X, y)
    assert pop.device_.type == "cpu" and pop.models_[0].device_.type == "cpu"


@pytest.mark.gpu
def test_mlp_population_on_cuda_repeats_itself(pool):
    """On CUDA, batched shadows are not bitwise those trained alone, but the same seed on
    the same device gives the same scores."""
    torch = pytest.importorskip("torch")
    from tabmia.shadow import TorchMLPClassifier

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    X, y = pool
    est = TorchMLPClassifier(hidden_layer_sizes=(16,), epochs=3, batch_size=32, device="cuda")
    first = ShadowPopulation(est, n_models=4, random_state=0, n_jobs=-1).fit(X, y)
    again = ShadowPopulation(est, n_models=4, random_state=0, n_jobs=-1).fit(X, y)
    assert first.device_.type == "cuda" and first.n_jobs_ == min(4, torch.cuda.device_count())
    np.testing.assert_array_equal(first.statistics_, again.statistics_)
