"""The shadow scheduler: jobs and threads on the CPU, one job per GPU (GPUs mocked)."""

from __future__ import annotations

import threading
import time

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

import tabmia.backends as backends
from tabmia.backends import BACKENDS, Backend
from tabmia.shadow import ShadowPopulation
from tabmia.shadow._schedule import gpu_slot, plan_jobs

CORES = joblib.cpu_count()


@pytest.fixture
def pool():
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    return X, y


# ------------------------------------------------------------------------ CPU
def test_cpu_work_spreads_over_the_cores():
    pytest.importorskip("catboost")
    from tabmia.shadow import catboost_classifier

    forest = RandomForestClassifier()
    assert plan_jobs(forest, None, 64).n_jobs == CORES  # default: every core
    assert plan_jobs(forest, -1, 64).n_jobs == CORES
    one = plan_jobs(forest, 1, 64)
    assert one.n_jobs == 1 and one.threads == CORES  # a forest's trees are seeded one by one
    # CatBoost's models change with their thread count: one thread per job, always
    assert plan_jobs(catboost_classifier(), 1, 64).threads == 1
    assert plan_jobs(forest, None, 1).n_jobs == 1  # never more jobs than tasks
    plan = plan_jobs(LogisticRegression(), None, 64)
    assert plan.gpus == () and plan.threads == max(1, CORES // plan.n_jobs)


def test_thread_dependent_models_get_one_thread_per_job():
    pytest.importorskip("torch")
    from tabmia.shadow import TorchMLPClassifier

    assert not BACKENDS["torch"].thread_invariant
    assert plan_jobs(TorchMLPClassifier(device="cpu"), 1, 8).threads == 1


def test_a_parallel_config_sets_the_default_jobs():
    with joblib.parallel_config(backend="threading", n_jobs=3):
        assert plan_jobs(LogisticRegression(), None, 64).n_jobs == 3


def test_default_n_jobs_uses_the_cores_and_gives_the_same_scores(pool):
    X, y = pool
    default = ShadowPopulation(LogisticRegression(), n_models=4, random_state=0).fit(X, y)
    assert default.n_jobs_ == min(4, CORES)
    one = ShadowPopulation(LogisticRegression(), n_models=4, random_state=0, n_jobs=1).fit(X, y)
    assert one.n_jobs_ == 1
    np.testing.assert_array_equal(default.statistics_, one.statistics_)


# ------------------------------------------------------------------------ GPU
def test_catboost_gpu_work_runs_one_job_per_gpu(monkeypatch):
    pytest.importorskip("catboost")
    from tabmia.shadow import catboost_classifier

    monkeypatch.setattr(backends, "_catboost_gpus", lambda: 2)
    on_gpus = catboost_classifier(device="cuda")
    for n_jobs, jobs in ((None, 2), (-1, 2), (8, 2), (1, 1)):
        plan = plan_jobs(on_gpus, n_jobs, 16)
        assert (plan.n_jobs, plan.gpus, plan.backend) == (jobs, ("cuda:0", "cuda:1"), "catboost")
    assert plan_jobs(catboost_classifier(device="cuda:1"), -1, 16).gpus == ("cuda:1",)
    assert plan_jobs(catboost_classifier(device="cuda:1"), -1, 16).n_jobs == 1
    monkeypatch.setattr(backends, "_catboost_gpus", lambda: 1)
    assert plan_jobs(catboost_classifier(device="cuda"), -1, 16).n_jobs == 1


def test_gpu_slot_holds_each_device_alone():
    """Eight tasks over two GPUs from four threads: never two at once on one GPU."""
    spans: list[tuple[str, float, float]] = []
    lock = threading.Lock()

    def task(k):
        with gpu_slot(("cuda:0", "cuda:1"), first=k) as device:
            start = time.perf_counter()
            time.sleep(0.03)
            with lock:
                spans.append((device, start, time.perf_counter()))

    threads = [threading.Thread(target=task, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _assert_no_overlap(spans, {"cuda:0", "cuda:1"})
    with gpu_slot(()) as device:
        assert device is None


def _assert_no_overlap(spans, devices):
    assert {d for d, _s, _e in spans} == devices
    for device in devices:
        mine = sorted((s, e) for d, s, e in spans if d == device)
        for (_s0, e0), (s1, _e1) in zip(mine, mine[1:]):
            assert s1 >= e0, f"two jobs on {device} at once"


# A model of a fake library with a device parameter: it records where and when it
# trained. Registered as a back end, it goes through the real scheduler.
SPANS: list[tuple[str, float, float]] = []


class RecordingGPUModel(ClassifierMixin, BaseEstimator):
    def __init__(self, device="cpu", random_state=None):
        self.device = device
        self.random_state = random_state

    def fit(self, X, y):
        start = time.perf_counter()
        time.sleep(0.02)
        self.model_ = LogisticRegression().fit(X, y)
        self.classes_ = self.model_.classes_
        SPANS.append((self.device, start, time.perf_counter()))
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


@pytest.fixture
def fake_gpu_backend(monkeypatch, tmp_path):
    gpus = {"n": 2}
    # locks of their own: on a GPU machine, real GPU tests in other pytest-xdist workers
    # hold the machine's locks of the real devices meanwhile
    import tabmia.shadow._schedule as schedule

    monkeypatch.setattr(schedule, "_lock_folder", lambda: tmp_path)
    fake = Backend(name="fakegpu", label="FakeGPU", modules=("tests",), factory=None,
                   device_params=("device",), execution_params=frozenset({"device"}),
                   gpu_min_rows=0, probe=lambda: gpus["n"])
    monkeypatch.setattr(backends, "BACKENDS", {"fakegpu": fake, **BACKENDS})
    SPANS.clear()
    return gpus


@pytest.mark.parametrize("n_gpus", [2, 1])
def test_gpu_jobs_never_share_a_device_and_n_jobs_minus_one_works(pool, fake_gpu_backend,
                                                                   n_gpus):
    X, y = pool
    fake_gpu_backend["n"] = n_gpus
    assert backends.backend_of(RecordingGPUModel()).name == "fakegpu"
    with joblib.parallel_config(backend="threading"):  # the spans are kept in this process
        pop = ShadowPopulation(RecordingGPUModel(device="cuda"), n_models=8, random_state=0,
                               n_jobs=-1).fit(X, y)
    assert pop.n_jobs_ == n_gpus
    devices = {f"cuda:{i}" for i in range(n_gpus)}
    assert len(SPANS) == 8
    _assert_no_overlap(SPANS, devices)
    cpu = ShadowPopulation(RecordingGPUModel(device="cpu"), n_models=8, random_state=0,
                           n_jobs=1).fit(X, y)
    np.testing.assert_array_equal(pop.statistics_, cpu.statistics_)


@pytest.mark.gpu
def test_catboost_shadows_on_every_gpu_one_at_a_time(pool):
    """On a real GPU machine: n_jobs=-1 runs one CatBoost job per GPU (8 jobs on one GPU
    aborted with CUDA out of memory before the scheduler)."""
    pytest.importorskip("catboost")
    from tabmia.shadow import catboost_classifier

    n_gpus = BACKENDS["catboost"].gpu_count()
    if n_gpus == 0:
        pytest.skip("CatBoost sees no GPU")
    X, y = pool
    pop = ShadowPopulation(catboost_classifier(device="cuda", iterations=20), n_models=8,
                           random_state=0, n_jobs=-1).fit(X, y)
    assert pop.n_jobs_ == min(8, n_gpus)
    assert np.isfinite(pop.statistics_).all()
    assert {m.get_params()["task_type"] for m in pop.models_} == {"GPU"}
