"""``--device`` and the other runner settings reach everything that trains, or are reported.

GPUs are mocked: the libraries "see" two of them, and every fit that would run on one
records its device and trains on the CPU instead.
"""

from __future__ import annotations

import importlib.util

import pytest

import tabmia.backends as backends
from tabmia.cli import main
from tabmia.recipes import MODEL_NAMES

pytestmark = pytest.mark.filterwarnings("ignore:device=.*CUDA is not available")

ATTACKS = "lira,rmia,loss:threshold_goal=max_advantage"  # shadows, references, a proxy
N_SHADOW, N_REFERENCE = 4, 2


class _Fits:
    """Where each model of the run was set to train (spies on the training calls)."""

    def __init__(self, monkeypatch):
        self.devices: list[str] = []
        self.batched: list[tuple[int, str]] = []
        self._spy_catboost(monkeypatch)
        self._spy_torch(monkeypatch)

    def _spy_catboost(self, monkeypatch):
        pytest.importorskip("catboost")
        from tabmia.shadow import CatBoostAuto

        real = CatBoostAuto.fit
        fits = self

        def fit(model, X, y=None, **kwargs):
            fits.devices.append(backends.training_device(model)[0])
            saved = dict(model._init_params)  # CatBoost refuses set_params once fitted
            model._init_params.update(task_type="CPU")
            model._init_params.pop("devices", None)
            try:
                return real(model, X, y, **kwargs)
            finally:
                model._init_params.clear()
                model._init_params.update(saved)

        monkeypatch.setattr(CatBoostAuto, "fit", fit)

    def _spy_torch(self, monkeypatch):
        pytest.importorskip("torch")
        import tabmia.shadow.batched as batched
        from tabmia.shadow import TorchMLPClassifier

        real_fit, real_batched = TorchMLPClassifier.fit, batched.fit_mlps_batched
        fits = self

        def fit(model, X, y, classes=None):
            fits.devices.append(str(model.device))
            saved, model.device = model.device, "cpu"
            try:
                return real_fit(model, X, y, classes=classes)
            finally:
                model.device = saved

        def fit_batched(X, y_idx, masks, seeds, params=None, device="auto", **kwargs):
            fits.batched.append((len(masks), str(device)))
            return real_batched(X, y_idx, masks, seeds, params, "cpu", **kwargs)

        monkeypatch.setattr(TorchMLPClassifier, "fit", fit)
        monkeypatch.setattr(batched, "fit_mlps_batched", fit_batched)


@pytest.fixture
def two_gpus(monkeypatch):
    import tabmia._device as device_mod

    monkeypatch.setattr(backends, "gpu_present", lambda: True)
    for probe in ("_catboost_gpus", "_torch_gpus", "_xgboost_gpus"):
        monkeypatch.setattr(backends, probe, lambda: 2)
    # torch devices are resolved in tabmia._device (backends' torch probe wraps it): on a
    # machine with one real GPU, "cuda:1" must still be one of the two mocked ones
    monkeypatch.setattr(device_mod, "_torch_gpus", lambda: 2)
    if importlib.util.find_spec("torch") is not None:
        import tabmia.shadow.batched as batched

        # group sizes read the mocked GPU's free memory
        monkeypatch.setattr(batched, "_available_memory", lambda device: 8 * 2**30)


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_device_reaches_target_shadow_reference_and_proxy_models(model, two_gpus, monkeypatch,
                                                                 tmp_path, capsys):
    fits = _Fits(monkeypatch)
    code = main(["audit", "--model", model, "--attacks", ATTACKS, "--device", "cuda:1",
                 "--n-shadow", str(N_SHADOW), "--n-references", str(N_REFERENCE),
                 "--n-jobs", "1", "--quiet", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 0, err
    if model == "catboost":
        # the target, its proxy, the LiRA shadows and the RMIA reference models
        assert set(fits.devices) == {"cuda:1"}
        assert len(fits.devices) >= 2 + N_SHADOW + N_REFERENCE
    elif model == "mlp":
        assert fits.devices == ["cuda:1"] * 2  # the target and its proxy
        # shadows and references: one batched network each, on the GPU
        assert len(fits.batched) == 2 and {d for _k, d in fits.batched} == {"cuda:1"}
        assert N_SHADOW in [k for k, _d in fits.batched]
    else:  # scikit-learn recipes have no device: said once
        assert fits.devices == [] and fits.batched == []
        notes = [line for line in err.splitlines() if "--device cuda:1" in line]
        assert len(notes) == 1 and notes[0].startswith("tabmia: note:")
        assert "nor by the model" in notes[0]
    assert "--device" not in err or model not in ("catboost", "mlp")


def test_cuda_without_a_gpu_says_so_once_and_trains_batched_on_the_cpu(monkeypatch, tmp_path,
                                                                       capsys):
    monkeypatch.setattr(backends, "gpu_present", lambda: False)
    fits = _Fits(monkeypatch)
    code = main(["audit", "--model", "mlp", "--attacks", "lira", "--device", "cuda",
                 "--n-shadow", "4", "--n-jobs", "1", "--quiet", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0, err
    gpu_notes = [line for line in err.splitlines() if "GPU" in line]
    assert gpu_notes == [gpu_notes[0]] and gpu_notes[0].startswith(
        "tabmia: note: --device cuda: no GPU is present")
    assert "Warning" not in err
    assert fits.devices == ["cpu"] and fits.batched == [(4, "cpu")]


def test_a_device_nothing_uses_is_a_note(tmp_path, capsys):
    """--device reaches the model and the attacks that take one; where neither has a
    device notion it is named once (attack flags no attack takes are refused instead)."""
    code = main(["audit", "--model", "random_forest", "--attacks", "loss,confidence",
                 "--device", "cpu", "--quiet", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0, err
    notes = [line for line in err.splitlines() if "--device" in line]
    assert notes == ["tabmia: note: --device cpu: not used by the chosen attacks "
                     "(loss, confidence) nor by the model"]
    main(["audit", "--model", "random_forest", "--attacks", "loss,quantile", "--device", "cpu",
          "--quiet", "--out", str(tmp_path / "o2")])
    assert "--device" not in capsys.readouterr().err  # the quantile attack takes it


def test_a_device_outside_the_vocabulary_is_a_usage_error(tmp_path, capsys):
    assert main(["audit", "--device", "gpu", "--out", str(tmp_path / "o")]) == 2
    assert "tabmia: error: --device: device must be 'auto', 'cpu', 'cuda' or 'cuda:N'" in (
        capsys.readouterr().err)


def test_the_mlp_recipe_without_torch_is_a_usage_error(monkeypatch, tmp_path, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    assert main(["audit", "--model", "mlp", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tabmia: error: --model mlp: the mlp recipe is a torch MLP")
    assert "Traceback" not in err


def test_tabmia_benchmark_reports_unused_settings_and_resolves_cuda(monkeypatch, tmp_path):
    """``run_benchmark``'s device goes to the target recipe and the attacks; CUDA without a
    GPU is the CPU, said once; a runner setting nothing uses is named (run notes, which
    the command line prints as ``tabmia: note:`` lines)."""
    from tabmia.benchmark import run_benchmark
    from tabmia.exceptions import RunNote

    monkeypatch.setattr(backends, "gpu_present", lambda: False)
    with pytest.warns(RunNote) as notes:
        result = run_benchmark(["breast_cancer"], model="logistic_regression",
                               attacks=["loss"], seeds=1, quick=True, n_jobs=2,
                               device="cuda", out_dir=tmp_path / "b", progress=False,
                               html=False)
    assert result.results["settings"]["device"] == "cpu"
    assert [str(n.message) for n in notes if n.category is RunNote] == [
        "device cuda: no GPU is present; training and scoring run on the CPU",
        "n_jobs=2: not used by the chosen attacks (loss)",
    ]
    with pytest.raises(ValueError, match="device must be"):
        run_benchmark(["breast_cancer"], attacks=["loss"], device="gpu",
                      out_dir=tmp_path / "c", progress=False)
