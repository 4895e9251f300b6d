"""The one device vocabulary and its mappings to torch, CatBoost and XGBoost."""

from __future__ import annotations

import warnings

import pytest

import tabmia._device as device_mod
import tabmia.backends as backends
from tabmia._device import resolve_device_name


def catboost_device_params(device):
    """CatBoost's device parameters for ``device``, without the unset ones."""
    settings = backends.BACKENDS["catboost"].device_settings(device, n_rows=10**9)
    return {k: v for k, v in settings.items() if v is not None}


def _count(n):
    return lambda: n


def _never():
    raise AssertionError("the GPU count was probed for a CPU request")


@pytest.mark.parametrize(
    ("device", "n_gpus", "expected"),
    [
        ("auto", 0, "cpu"),
        (None, 0, "cpu"),
        ("auto", 2, "cuda"),
        ("cuda", 1, "cuda"),
        ("cuda:1", 2, "cuda:1"),
        ("cuda:0", 1, "cuda:0"),
    ],
)
def test_vocabulary_resolves(device, n_gpus, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_device_name(device, n_gpus=_count(n_gpus)) == expected


def test_cpu_never_probes_a_driver():
    assert resolve_device_name("cpu", n_gpus=_never) == "cpu"


@pytest.mark.parametrize("device", ["cuda", "cuda:3"])
def test_cuda_without_a_gpu_warns_and_falls_back(device):
    with pytest.warns(RuntimeWarning, match=f"'{device}'.*CUDA is not available to XGBoost"):
        assert resolve_device_name(device, n_gpus=_count(0), library="XGBoost") == "cpu"


def test_missing_gpu_index_is_refused_unless_unchecked():
    with pytest.raises(ValueError, match=r"'cuda:2'.*sees 2 CUDA device\(s\)"):
        resolve_device_name("cuda:2", n_gpus=_count(2))
    assert resolve_device_name("cuda:2", n_gpus=_count(1), check_index=False) == "cuda:2"


@pytest.mark.parametrize("device", ["gpu", "GPU", "tpu", "cuda:", "cuda:x", "cuda:-1", 0, 1.5])
def test_outside_the_vocabulary_is_refused(device):
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu', 'cuda' or 'cuda:N'"):
        resolve_device_name(device, n_gpus=_count(1))


def test_torch_devices_are_accepted():
    torch = pytest.importorskip("torch")
    assert device_mod.resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert device_mod.resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert device_mod.resolve_device("auto").type == expected


@pytest.mark.parametrize(
    ("device", "n_gpus", "expected"),
    [
        ("cpu", 4, {"task_type": "CPU"}),
        ("auto", 0, {"task_type": "CPU"}),
        ("auto", 1, {"task_type": "GPU"}),
        ("cuda", 2, {"task_type": "GPU"}),
        ("cuda:1", 2, {"task_type": "GPU", "devices": "1"}),
    ],
)
def test_catboost_params(monkeypatch, device, n_gpus, expected):
    monkeypatch.setattr(backends, "_catboost_gpus", _count(n_gpus))
    assert catboost_device_params(device) == expected


def test_catboost_params_fall_back_and_refuse(monkeypatch):
    monkeypatch.setattr(backends, "_catboost_gpus", _count(0))
    with pytest.warns(RuntimeWarning, match="CUDA is not available to CatBoost"):
        assert catboost_device_params("cuda:0") == {"task_type": "CPU"}
    with pytest.raises(ValueError, match="device must be"):
        catboost_device_params("gpu")


def test_catboost_gpu_count_is_an_int():
    count = backends.BACKENDS["catboost"].gpu_count()
    assert isinstance(count, int) and count >= 0


def test_catboost_classifier_takes_the_device(monkeypatch):
    pytest.importorskip("catboost")
    from tabmia.shadow import catboost_classifier

    monkeypatch.setattr(backends, "_catboost_gpus", _count(2))
    params = catboost_classifier(device="cuda:1", iterations=5).get_params()
    assert params["task_type"] == "GPU" and params["devices"] == "1"
    assert catboost_classifier(device="cpu").get_params()["task_type"] == "CPU"
    # an explicit CatBoost parameter still wins
    assert catboost_classifier(device="cuda", task_type="CPU").get_params()["task_type"] == "CPU"


def test_xgboost_classifier_takes_the_device(monkeypatch):
    pytest.importorskip("xgboost")
    from tabmia.shadow import xgboost_classifier

    assert xgboost_classifier(device="cpu").get_params()["device"] == "cpu"
    monkeypatch.setattr(backends, "_xgboost_gpus", _count(2))
    assert xgboost_classifier(device="cuda:1").get_params()["device"] == "cuda:1"
    monkeypatch.setattr(backends, "_xgboost_gpus", _count(0))
    with pytest.warns(RuntimeWarning, match="CUDA is not available to XGBoost"):
        assert xgboost_classifier(device="cuda").get_params()["device"] == "cpu"
    with pytest.raises(ValueError, match="device must be"):
        xgboost_classifier(device="gpu")
