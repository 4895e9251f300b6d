"""TorchMLPClassifier, the batched MLP trainer and per-record gradient norms."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch")

from sklearn.base import clone  # noqa: E402

from tabmia.shadow import TorchMLPClassifier, fit_mlps_batched, gradient_norms  # noqa: E402
from tabmia.shadow._stacked import init_weights as _init_weights  # noqa: E402
from tabmia.shadow._stacked import layer_sizes as _layer_sizes  # noqa: E402


def cuda(test):
    """A test that needs a CUDA GPU: marked ``gpu``, skipped without one."""
    skip = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
    return pytest.mark.gpu(skip(test))


SMALL = dict(hidden_layer_sizes=(16, 8), epochs=5, batch_size=32, lr=0.01)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 10)).astype(np.float32)
    y = rng.integers(0, 3, size=200)
    masks = rng.random((3, 200)) < 0.5
    return X, y, masks


def _weights(model):
    return [p.detach().cpu().numpy() for p in model.module_.parameters()]


def _assert_same_weights(a, b, atol=1e-5):
    wa, wb = _weights(a), _weights(b)
    assert len(wa) == len(wb)
    for u, v in zip(wa, wb):
        np.testing.assert_allclose(u, v, rtol=0, atol=atol)


# ----------------------------------------------------------------- batched trainer
@pytest.mark.parametrize(
    "extra",
    [
        {},
        # 500 > rows per model: one partial minibatch per epoch
        {"batch_size": 500, "activation": "tanh", "weight_decay": 1e-3},
    ],
)
def test_batched_equals_each_model_alone(problem, extra):
    X, y, masks = problem
    params = {**SMALL, **extra}
    seeds = [11, 22, 33]
    batched = fit_mlps_batched(X, y, masks, seeds, params, "cpu", classes=np.arange(3))
    assert len(batched) == 3
    for k in range(3):
        alone = TorchMLPClassifier(**params, random_state=seeds[k], device="cpu").fit(
            X[masks[k]], y[masks[k]], classes=np.arange(3)
        )
        _assert_same_weights(batched[k], alone)
        np.testing.assert_allclose(batched[k].loss_curve_, alone.loss_curve_, atol=1e-5)
        assert batched[k].random_state == seeds[k]
        np.testing.assert_array_equal(batched[k].classes_, np.arange(3))


def test_batched_group_size_does_not_change_models(problem):
    X, y, masks = problem
    one_group = fit_mlps_batched(X, y, masks, [1, 2, 3], SMALL, "cpu")
    singles = fit_mlps_batched(X, y, masks, [1, 2, 3], SMALL, "cpu", max_group_size=1)
    for a, b in zip(one_group, singles):
        _assert_same_weights(a, b)


def test_batched_accepts_estimator_template_and_labels(problem):
    X, y, masks = problem
    labels = np.array(["a", "b", "c"])
    template = TorchMLPClassifier(**SMALL, random_state=999)
    models = fit_mlps_batched(X, y, masks, [5, 6, 7], template, classes=labels)
    assert [m.random_state for m in models] == [5, 6, 7]
    assert set(models[0].predict(X)) <= set(labels)
    with pytest.raises(ValueError, match="masks must have shape"):
        fit_mlps_batched(X, y, masks[:, :10], [1, 2, 3], SMALL)
    with pytest.raises(ValueError, match="seeds"):
        fit_mlps_batched(X, y, masks, [1, 2], SMALL)
    empty = masks.copy()
    empty[1] = False
    with pytest.raises(ValueError, match="empty"):
        fit_mlps_batched(X, y, empty, [1, 2, 3], SMALL)


def test_training_is_adam(problem):
    """The hand-written stacked Adam matches torch.optim.Adam on the same batches."""
    X, y, _ = problem
    clf = TorchMLPClassifier(**SMALL, random_state=5, device="cpu").fit(X, y)
    gen = torch.Generator().manual_seed(5)
    w = _init_weights(_layer_sizes(10, (16, 8), 3), gen)
    net = torch.nn.Sequential(
        torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8), torch.nn.ReLU(),
        torch.nn.Linear(8, 3),
    )
    with torch.no_grad():
        for i, lin in enumerate(m for m in net if isinstance(m, torch.nn.Linear)):
            lin.weight.copy_(w[2 * i].T)
            lin.bias.copy_(w[2 * i + 1])
    opt = torch.optim.Adam(net.parameters(), lr=SMALL["lr"])
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    for _ in range(SMALL["epochs"]):
        perm = torch.randperm(X.shape[0], generator=gen)
        for s in range(0, X.shape[0], SMALL["batch_size"]):
            idx = perm[s : s + SMALL["batch_size"]]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(Xt[idx]), yt[idx]).backward()
            opt.step()
    for a, b in zip(clf.module_.parameters(), net.parameters()):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), atol=1e-5)


# -------------------------------------------------------------------- estimator API
def test_clone_and_params_round_trip():
    clf = TorchMLPClassifier(hidden_layer_sizes=(7,), epochs=3, lr=0.1, random_state=4)
    params = clf.get_params()
    assert params["hidden_layer_sizes"] == (7,) and params["device"] == "auto"
    twin = clone(clf)
    assert twin.get_params() == params and twin is not clf
    assert TorchMLPClassifier().set_params(**params).get_params() == params
    assert TorchMLPClassifier().get_params()["hidden_layer_sizes"] == (256, 256)


def test_deterministic_with_random_state(problem):
    X, y, _ = problem
    a = TorchMLPClassifier(**SMALL, random_state=3).fit(X, y)
    b = TorchMLPClassifier(**SMALL, random_state=3).fit(X, y)
    c = TorchMLPClassifier(**SMALL, random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))
    state = torch.random.get_rng_state()
    TorchMLPClassifier(**SMALL, random_state=None).fit(X, y)
    assert torch.equal(state, torch.random.get_rng_state()), "touched torch's global RNG"


def test_overfits_small_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 20)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.normal(scale=1.5, size=240) > 0).astype(int)
    clf = TorchMLPClassifier(hidden_layer_sizes=(64, 64), epochs=60, random_state=0)
    clf.fit(X[:120], y[:120])
    train_acc, test_acc = clf.score(X[:120], y[:120]), clf.score(X[120:], y[120:])
    assert train_acc > 0.97 and train_acc > test_acc + 0.1
    assert clf.loss_curve_.shape == (60,) and clf.loss_curve_[-1] < clf.loss_curve_[0]


def test_outputs(problem):
    X, y, _ = problem
    labels = np.array(["x", "y", "z"])[y]
    clf = TorchMLPClassifier(**SMALL, random_state=0).fit(X, labels)
    proba = clf.predict_proba(X)
    logits = clf.decision_function(X)
    assert proba.shape == (200, 3) and proba.dtype == np.float64
    assert logits.shape == (200, 3) and logits.dtype == np.float32
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), proba, atol=1e-9)
    assert set(clf.predict(X)) <= {"x", "y", "z"}
    assert clf.device_.type in ("cpu", "cuda") and clf.n_features_in_ == 10


def test_input_types(problem):
    X, y, _ = problem
    cols = [f"f{i}" for i in range(10)]
    frame = pd.DataFrame(X, columns=cols)
    a = TorchMLPClassifier(**SMALL, random_state=0).fit(frame, y)
    b = TorchMLPClassifier(**SMALL, random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.predict_proba(frame), b.predict_proba(X), atol=1e-6)
    assert list(a.feature_names_in_) == cols
    np.testing.assert_allclose(a.predict_proba(frame[cols[::-1]]), a.predict_proba(frame))
    cat = frame.assign(c=pd.Categorical(["u", "v"] * 100))
    with pytest.raises(ValueError, match="non-numeric columns"):
        TorchMLPClassifier(**SMALL).fit(cat, y)
    with pytest.raises(ValueError, match="NaN"):
        TorchMLPClassifier(**SMALL).fit(np.where(X > 2, np.nan, X), y)
    with pytest.raises(ValueError, match="features"):
        a.predict_proba(X[:, :5])
    with pytest.raises(ValueError, match="single class"):
        TorchMLPClassifier(**SMALL).fit(X, np.zeros(200))


def test_pickle_round_trip_and_gpu_pickles_load_on_cpu(problem):
    X, y, _ = problem
    clf = TorchMLPClassifier(**SMALL, random_state=0).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    state = clf.__getstate__()
    assert "module_" not in state
    state["device_"] = "cuda:0"  # as pickled on a GPU machine
    loaded = TorchMLPClassifier.__new__(TorchMLPClassifier)
    if torch.cuda.is_available():
        loaded.__setstate__(state)
    else:
        with pytest.warns(RuntimeWarning, match="'cuda:0'.*CUDA is not available"):
            loaded.__setstate__(state)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert loaded.device_.type == expected
    np.testing.assert_allclose(loaded.predict_proba(X), clf.predict_proba(X), atol=1e-6)
    unfitted = pickle.loads(pickle.dumps(TorchMLPClassifier(epochs=2)))
    assert unfitted.epochs == 2 and not hasattr(unfitted, "module_")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA fallback")
def test_cuda_without_cuda_warns_and_uses_cpu(problem):
    X, y, _ = problem
    with pytest.warns(RuntimeWarning, match="CUDA is not available"):
        clf = TorchMLPClassifier(**SMALL, device="cuda", random_state=0).fit(X, y)
    assert clf.device_.type == "cpu"
    assert clf.predict_proba(X).shape == (200, 3)


def test_fine_tune_and_warm_start(problem):
    X, y, _ = problem
    base = TorchMLPClassifier(**SMALL, random_state=0).fit(X[:100], y[:100])
    before = _weights(base)
    tuned = copy.deepcopy(base).fine_tune(X[100:], y[100:], epochs=3)
    for u, v in zip(before, _weights(base)):  # the original is untouched
        np.testing.assert_array_equal(u, v)
    assert any(not np.allclose(u, v) for u, v in zip(before, _weights(tuned)))
    assert tuned.n_iter_ == 3 and tuned.loss_curve_.shape == (3,)
    again = copy.deepcopy(base).fine_tune(X[100:], y[100:], epochs=3)
    for u, v in zip(_weights(tuned), _weights(again)):  # deterministic
        np.testing.assert_array_equal(u, v)
    with pytest.raises(ValueError, match="outside classes_"):
        copy.deepcopy(base).fine_tune(X[:5], np.array([0, 1, 2, 7, 1]))
    warm = copy.deepcopy(base).set_params(warm_start=True, epochs=2).fit(X[100:], y[100:])
    assert warm.n_iter_ == 2
    assert any(not np.allclose(u, v) for u, v in zip(before, _weights(warm)))
    # a fresh fit re-initialises: same as fitting from scratch
    cold = copy.deepcopy(base).fit(X[:100], y[:100])
    for u, v in zip(before, _weights(cold)):
        np.testing.assert_array_equal(u, v)


# -------------------------------------------------------------------- gradient norms
def test_gradient_norms_match_per_record_loop(problem):
    X, y, _ = problem
    clf = TorchMLPClassifier(**SMALL, random_state=0).fit(X, y)
    norms = gradient_norms(clf, X, y)
    assert norms.shape == (200,) and norms.dtype == np.float64 and (norms > 0).all()
    net = copy.deepcopy(clf.module_)
    for p in net.parameters():
        p.requires_grad_(True)
    expected = []
    for i in range(5):  # on the model's device: CUDA where the machine has it
        net.zero_grad()
        loss = torch.nn.functional.cross_entropy(
            net(torch.from_numpy(X[i : i + 1]).to(clf.device_)),
            torch.from_numpy(y[i : i + 1]).to(clf.device_),
        )
        loss.backward()
        expected.append(torch.sqrt(sum((p.grad**2).sum() for p in net.parameters())).item())
    np.testing.assert_allclose(norms[:5], expected, rtol=1e-5)
    # a generic module goes through torch.func.vmap and agrees
    wrapped = torch.nn.Sequential(torch.nn.Flatten(), *copy.deepcopy(clf.module_))
    np.testing.assert_allclose(gradient_norms(wrapped, X[:5], y[:5]), expected, rtol=1e-5)
    np.testing.assert_allclose(gradient_norms(clf, X, y, batch_size=7), norms, rtol=1e-6)
    with pytest.raises(ValueError, match="integer class indices"):
        gradient_norms(clf, X, y.astype(float))


def _mixed_frame(n=300, seed=0):
    """Numbers and a category whose rare levels some random halves miss."""
    rng = np.random.default_rng(seed)
    levels = list("abcdefghijklmnop")
    frame = pd.DataFrame({
        "x": rng.normal(size=n),
        "c": pd.Categorical(rng.choice(levels, n, p=[0.3, 0.2, 0.1, 0.1] + [0.3 / 12] * 12)),
    })
    return frame, rng.integers(0, 3, n)


def _encoded_mlp(**mlp):
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    prep = make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["c"]),
        (StandardScaler(), ["x"]))
    return Pipeline([("prep", prep), ("mlp", TorchMLPClassifier(**{**SMALL, **mlp}))])


def test_batched_pipeline_equals_each_pipeline_alone():
    """A Pipeline ending in the MLP trains batched: each model fits its own copy of the
    encoding on its own rows (so encodings of different widths meet in one network)
    and ends with the predictions of that Pipeline fitted alone."""
    X, y = _mixed_frame()
    rng = np.random.default_rng(1)
    masks = rng.random((4, len(y))) < 0.3
    seeds = [5, 6, 7, 8]
    recipe = _encoded_mlp()
    models = fit_mlps_batched(X, y, masks, seeds, recipe, "cpu", classes=np.arange(3))
    widths = {m[-1].n_features_in_ for m in models}
    assert len(widths) > 1  # the encodings differ in width
    for k, model in enumerate(models):
        alone = clone(recipe).set_params(mlp__random_state=seeds[k]).fit(X[masks[k]], y[masks[k]])
        assert model[-1].n_features_in_ == alone[-1].n_features_in_
        _assert_same_weights(model[-1], alone[-1], atol=1e-5)
        np.testing.assert_allclose(model.predict_proba(X), alone.predict_proba(X), atol=1e-5)


def test_import_tabmia_shadow_does_not_import_torch():
    code = (
        "import sys, tabmia, tabmia.shadow; "
        "assert 'torch' not in sys.modules, 'torch imported'; "
        "assert 'catboost' not in sys.modules, 'catboost imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------- GPU
@cuda
def test_batched_on_gpu_matches_cpu(problem):
    X, y, masks = problem
    on_gpu = fit_mlps_batched(X, y, masks, [1, 2, 3], SMALL, "cuda")
    on_cpu = fit_mlps_batched(X, y, masks, [1, 2, 3], SMALL, "cpu")
    for a, b in zip(on_gpu, on_cpu):
        assert a.device_.type == "cuda"
        _assert_same_weights(a, b, atol=1e-4)


@cuda
def test_batched_on_gpu_repeats_itself(problem):
    """What CUDA promises: the same seeds on the same device give the same weights
    (not bitwise those of training each model alone)."""
    X, y, masks = problem
    first = fit_mlps_batched(X, y, masks, [1, 2, 3], SMALL, "cuda")
    again = fit_mlps_batched(X, y, masks, [1, 2, 3], SMALL, "cuda")
    for a, b in zip(first, again):
        _assert_same_weights(a, b, atol=0.0)


@cuda
def test_gpu_model_pickles_to_cpu_tensors(problem):
    X, y, _ = problem
    clf = TorchMLPClassifier(**SMALL, device="cuda", random_state=0).fit(X, y)
    state = clf.__getstate__()
    assert all(isinstance(w, np.ndarray) for w in state["_module_weights"])
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(back.predict_proba(X), clf.predict_proba(X), atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradient_norms(clf, X[:10], y[:10]).shape == (10,)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA fallback")
def test_unpickling_a_cuda_model_without_cuda_warns(problem):
    X, y, _ = problem
    clf = TorchMLPClassifier(**SMALL, random_state=0).fit(X, y)
    expected = clf.predict_proba(X)
    clf.device_ = torch.device("cuda")  # as fitted on a GPU machine (weights stay here)
    blob = pickle.dumps(clf)
    with pytest.warns(RuntimeWarning, match="'cuda'.*CUDA is not available"):
        back = pickle.loads(blob)
    assert back.device_ == torch.device("cpu")
    np.testing.assert_allclose(back.predict_proba(X), expected, atol=1e-6)
    clf.device_ = torch.device("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pickle.loads(pickle.dumps(clf))


def test_old_module_path_still_imports():
    from tabmia.shadow import mlp, torch_mlp

    assert mlp.TorchMLPClassifier is torch_mlp.TorchMLPClassifier is TorchMLPClassifier
    assert mlp.gradient_norms is gradient_norms and mlp.fit_mlps_batched is fit_mlps_batched


# ------------------------------------------------------- training options and Adam
def _adam_state(seed, shape=(4, 6, 5)):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g) for _ in range(4)]  # p, grad, m, v


def test_masked_adam_step_leaves_models_that_sit_out_exactly_as_they_were():
    from tabmia.shadow._stacked import _adam_step, _masked_adam_step

    p, g, m, v = _adam_state(0)
    v = v.abs()
    active = torch.tensor([True, False, True, False]).view(4, 1, 1)
    neg, inv = torch.full((4, 1, 1), -0.01), torch.full((4, 1, 1), 1.3)
    coef = [torch.where(active, neg, 0.0), inv, torch.where(active, 0.1, 0.0),
            torch.where(active, 0.999, 1.0), torch.where(active, 1 - 0.999, 0.0)]
    masked = [t.clone() for t in (p, g, m, v)]
    _masked_adam_step(masked[0], masked[1], masked[2], masked[3], *coef)
    full = [t.clone() for t in (p, g, m, v)]
    _adam_step(full[0], full[1], full[2], full[3], neg, inv)
    for after, before, stepped in zip(masked, (p, g, m, v), full):
        assert torch.equal(after[~active.view(4)], before[~active.view(4)])
        assert torch.equal(after[active.view(4)], stepped[active.view(4)])


def test_fused_formula_is_the_eager_step():
    """The expression graph torch.compile fuses on CUDA is the eager step's formula."""
    from tabmia.shadow._stacked import _adam_math, _masked_adam_step

    p, g, m, v = _adam_state(1)
    v = v.abs()
    coef = [torch.full((4, 1, 1), c) for c in (-0.01, 1.3, 0.1, 0.999, 1 - 0.999)]
    eager = [t.clone() for t in (p, g, m, v)]
    _masked_adam_step(*eager, *coef)
    formula = [t.clone() for t in (p, g, m, v)]
    _adam_math(*formula, *coef)
    for a, b in zip(eager, formula):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("options", [{"matmul_precision": "tf32"},
                                     {"matmul_precision": "bfloat16"},
                                     {"fused_step": True}])
def test_gpu_training_options_change_nothing_on_the_cpu(problem, options):
    X, y, masks = problem
    plain = fit_mlps_batched(X, y, masks, [1, 2, 3], SMALL, "cpu")
    optioned = fit_mlps_batched(X, y, masks, [1, 2, 3], {**SMALL, **options}, "cpu")
    for a, b in zip(plain, optioned):
        _assert_same_weights(a, b, atol=0.0)
    assert torch.backends.cuda.matmul.allow_tf32 is False  # restored after training


def test_unknown_matmul_precision_is_refused(problem):
    X, y, _ = problem
    with pytest.raises(ValueError, match="matmul_precision"):
        TorchMLPClassifier(**SMALL, matmul_precision="fp8").fit(X, y)


@cuda
@pytest.mark.parametrize("options", [{"matmul_precision": "tf32", "fused_step": True},
                                     {"matmul_precision": "bfloat16", "fused_step": True}])
def test_fast_gpu_training_stays_within_its_accuracy_budget(options):
    """The budget: predictions of the fast modes agree with float32 training on >= 95 %
    of records and their mean log-loss differs by < 0.05 (a 2x32 MLP, 20 epochs)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 20)).astype(np.float32)
    y = (X[:, :3].sum(axis=1) + 0.5 * rng.normal(size=2000) > 0).astype(int)
    masks = rng.random((4, 2000)) < 0.5
    params = dict(hidden_layer_sizes=(32, 32), epochs=20, batch_size=64, lr=0.005)
    exact = fit_mlps_batched(X, y, masks, [1, 2, 3, 4], params, "cuda")
    fast = fit_mlps_batched(X, y, masks, [1, 2, 3, 4], {**params, **options}, "cuda")
    for a, b in zip(exact, fast):
        pa, pb = a.predict_proba(X), b.predict_proba(X)
        assert (pa.argmax(1) == pb.argmax(1)).mean() >= 0.95
        loss = [-np.log(p[np.arange(len(y)), y] + 1e-12).mean() for p in (pa, pb)]
        assert abs(loss[0] - loss[1]) < 0.05
