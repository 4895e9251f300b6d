"""A torch MLP classifier with a scikit-learn API, and a trainer that fits many at once.

:class:`TorchMLPClassifier` is the multilayer perceptron of the membership inference
literature (Shokri et al.; Jayaraman et al.: 2x256 ReLU, Adam, batch 200, lr 0.005) as a
scikit-learn classifier. :func:`fit_mlps_batched` trains K of them as one network with
stacked weights ``(K, d_in, h)``: each model draws minibatches from its own rows with its
own generator and keeps its own Adam state, so model ``k`` ends with the same weights as
``TorchMLPClassifier(random_state=seeds[k]).fit(X[masks[k]], y[masks[k]])`` up to float
rounding (reductions over a stacked tensor may sum in another order: ~1e-7 apart).
:func:`gradient_norms` gives the per-record norm of the loss gradient with respect to all
parameters (Watson et al.'s gradient-norm score).

torch is imported inside the functions that need it: importing this module is cheap.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

__all__ = ["TorchMLPClassifier", "fit_mlps_batched", "gradient_norms", "auto_group_size"]

_ACTIVATIONS = ("relu", "tanh", "logistic", "identity")
_SEED_MAX = 2**31 - 1
_BETA1, _BETA2, _EPS = 0.9, 0.999, 1e-8
#: Records per forward pass at prediction time.
_PREDICT_CHUNK = 65536


# ---------------------------------------------------------------------------- helpers
def _as_float32(X: Any, name: str = "X") -> np.ndarray:
    """``X`` (numpy, sparse or numeric DataFrame) as a C-contiguous float32 matrix."""
    if isinstance(X, pd.DataFrame):
        bad = [
            str(c)
            for c, dt in X.dtypes.items()
            if not (pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt))
        ]
        if bad:
            raise ValueError(
                f"{name} has non-numeric columns {bad[:10]}; TorchMLPClassifier takes numeric "
                "features only. Encode them first, e.g. make_pipeline(make_column_transformer("
                "(OneHotEncoder(), categorical_columns), remainder='passthrough'), "
                "TorchMLPClassifier())"
            )
        arr = X.to_numpy(dtype=np.float32, na_value=np.nan)
    elif sp.issparse(X):
        arr = X.toarray().astype(np.float32, copy=False)
    else:
        try:
            arr = np.asarray(X, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric: {exc}") from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_records, n_features), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} has no records")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return np.ascontiguousarray(arr)


def _to_tensor(arr: np.ndarray, device: Any) -> Any:
    """``torch.from_numpy`` that copies read-only arrays (joblib memmaps) first."""
    import torch

    if not arr.flags.writeable:
        arr = arr.copy()
    return torch.from_numpy(arr).to(device)


def _seed_from(random_state: Any) -> int:
    """An integer torch seed from an int, a RandomState / Generator or None."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint32)[0] >> 1)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        value = int(random_state)
        if value < 0:
            raise ValueError(f"random_state must be >= 0, got {value}")
        return value
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(_SEED_MAX))
    return int(check_random_state(random_state).randint(_SEED_MAX))


def _derived_seed(random_state: Any) -> int:
    """A seed for continued training, distinct from the one ``fit`` used."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        state = np.random.SeedSequence([int(random_state), 1]).generate_state(1, np.uint32)
        return int(state[0] >> 1)
    return _seed_from(random_state)


def _layer_sizes(n_in: int, hidden: Sequence[int], n_out: int) -> list[tuple[int, int]]:
    widths = [int(n_in), *[int(h) for h in hidden], int(n_out)]
    return list(zip(widths[:-1], widths[1:]))


def _activation_fn(name: str) -> Any:
    import torch

    return {
        "relu": torch.relu,
        "tanh": torch.tanh,
        "logistic": torch.sigmoid,
        "identity": lambda h: h,
    }[name]


def _activation_module(name: str) -> Any:
    from torch import nn

    return {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid, "identity": nn.Identity}[
        name
    ]()


def _init_weights(sizes: list[tuple[int, int]], generator: Any) -> list[Any]:
    """``[W1, b1, W2, b2, ...]`` with ``W`` of shape (fan_in, fan_out), on the CPU.

    Same distribution as ``torch.nn.Linear``'s default: ``U(-1/sqrt(fan_in),
    1/sqrt(fan_in))`` for weights and biases, drawn from ``generator``.
    """
    import torch

    out = []
    for fan_in, fan_out in sizes:
        bound = 1.0 / math.sqrt(fan_in)
        w = torch.rand((fan_in, fan_out), generator=generator, dtype=torch.float32)
        b = torch.rand((fan_out,), generator=generator, dtype=torch.float32)
        out.append(w.mul_(2.0 * bound).sub_(bound))
        out.append(b.mul_(2.0 * bound).sub_(bound))
    return out


def _available_memory(device: Any) -> int:
    """Bytes free on ``device`` (CUDA: ``mem_get_info``; CPU: MemAvailable)."""
    import torch

    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def auto_group_size(
    n_features: int,
    hidden_layer_sizes: Sequence[int],
    n_classes: int,
    batch_size: int,
    device: Any = "auto",
    *,
    n_records: int = 0,
    fraction: float | None = None,
) -> int:
    """How many MLPs fit in one batched network on ``device``.

    Per model: parameters, gradients and two Adam moments (4 copies), the minibatch
    gathered from the pool and the activations and their gradients. The budget is
    half the free GPU memory (a quarter of the available RAM on a CPU) minus the pool
    itself.

    Parameters
    ----------
    n_features, n_classes : int
        Input and output widths.
    hidden_layer_sizes : sequence of int
        Hidden widths.
    batch_size : int
        Minibatch size.
    device : str or torch.device, default="auto"
        Where the group trains.
    n_records : int, default=0
        Pool size (the pool is copied to the device once).
    fraction : float, default=None
        Share of the free memory to use (0.5 on CUDA, 0.25 on the CPU).

    Returns
    -------
    int
        At least 1.
    """
    from tabmia._device import resolve_device

    dev = resolve_device(device)
    sizes = _layer_sizes(n_features, hidden_layer_sizes, n_classes)
    n_params = sum(i * o + o for i, o in sizes)
    widths = sum(o for _, o in sizes)
    per_model = 4 * (4 * n_params + batch_size * (n_features + 4 * widths + 4))
    if fraction is None:
        fraction = 0.5 if dev.type == "cuda" else 0.25
    budget = fraction * _available_memory(dev) - 4 * n_records * (n_features + 2)
    return max(1, int(budget // max(per_model, 1)))


# --------------------------------------------------------------- the batched trainer core
def _forward_stacked(params: list[Any], x: Any, activation: str) -> Any:
    """Logits ``(K, B, C)`` of K stacked MLPs on ``x`` of shape ``(K, B, d)``."""
    import torch

    act = _activation_fn(activation)
    n_layers = len(params) // 2
    h = x
    for i in range(n_layers):
        h = torch.baddbmm(params[2 * i + 1].unsqueeze(1), h, params[2 * i])
        if i < n_layers - 1:
            h = act(h)
    return h


def _adam_step(p: Any, g: Any, m: Any, v: Any, neg_step: Any, inv_bc2_sqrt: Any) -> None:
    """One Adam update of stacked tensors, in place (torch.optim.Adam's formula).

    ``m <- b1 m + (1 - b1) g``; ``v <- b2 v + (1 - b2) g^2``;
    ``p <- p - lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)``, with per-model
    ``neg_step = -lr / bc1`` and ``inv_bc2_sqrt = 1 / sqrt(bc2)`` broadcast over each
    model's slice.
    """
    import torch

    m.lerp_(g, 1.0 - _BETA1)
    v.mul_(_BETA2).addcmul_(g, g, value=1.0 - _BETA2)
    denom = v.sqrt().mul_(inv_bc2_sqrt).add_(_EPS)
    torch.div(m, denom, out=denom)
    p.addcmul_(denom, neg_step)


def _train_stacked(
    X_t: Any,
    y_t: Any,
    rows: list[np.ndarray],
    generators: list[Any],
    params: list[Any],
    *,
    activation: str,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    progress: Any = None,
) -> np.ndarray:
    """Train K stacked MLPs in place; return the per-model loss curve ``(K, epochs)``.

    Model ``k`` sees the records ``rows[k]`` of the pool ``X_t``: each epoch, a fresh
    permutation of them from ``generators[k]``, cut into minibatches of
    ``batch_size`` (the last one partial). Models with fewer minibatches sit out the
    remaining steps of an epoch (no Adam step). The loss of model ``k`` is its mean
    cross-entropy over its minibatch, so its gradient does not depend on the others;
    Adam (torch's formula, L2 ``weight_decay`` added to the gradient) is elementwise
    with a per-model step count. With K = 1 this is exactly
    :meth:`TorchMLPClassifier.fit`.
    """
    import torch
    import torch.nn.functional as F  # noqa: N812

    device = X_t.device
    K = len(rows)
    n_k = np.array([r.size for r in rows], dtype=np.int64)
    if (n_k == 0).any():
        raise ValueError("a model in the group has no training records")
    width = int(min(batch_size, n_k.max()))
    n_steps = int(math.ceil(n_k.max() / width))
    t_idx = np.arange(n_steps)[None, :]
    counts = np.clip(n_k[:, None] - t_idx * batch_size, 0, batch_size).astype(np.int64)
    active = counts > 0  # (K, S)
    counts_t = torch.as_tensor(np.maximum(counts, 1), dtype=torch.float32, device=device)
    n_k_t = torch.as_tensor(n_k, dtype=torch.float32, device=device)

    exp_avg = [torch.zeros_like(p) for p in params]
    exp_avg_sq = [torch.zeros_like(p) for p in params]
    step = np.zeros(K, dtype=np.float64)
    curve = np.zeros((K, epochs), dtype=np.float64)
    shapes = [(K,) + (1,) * (p.dim() - 1) for p in params]

    for epoch in range(epochs):
        idx = np.zeros((K, n_steps * width), dtype=np.int64)
        valid = np.zeros((K, n_steps * width), dtype=bool)
        for k in range(K):  # a loop over models, not records
            perm = torch.randperm(int(n_k[k]), generator=generators[k]).numpy()
            idx[k, : n_k[k]] = rows[k][perm]
            valid[k, : n_k[k]] = True
        idx_t = torch.from_numpy(idx).to(device).view(K, n_steps, width)
        valid_t = torch.from_numpy(valid).to(device).view(K, n_steps, width)
        epoch_loss = torch.zeros(K, dtype=torch.float32, device=device)
        for t in range(n_steps):
            ib = idx_t[:, t]
            xb = X_t[ib]
            yb = y_t[ib]
            logits = _forward_stacked(params, xb, activation)
            n_classes = logits.shape[-1]
            ce = F.cross_entropy(
                logits.reshape(-1, n_classes), yb.reshape(-1), reduction="none"
            ).view(K, width)
            # padding entries (past a model's last record) count as exact zeros
            summed = torch.where(valid_t[:, t], ce, 0.0).sum(dim=1)
            per_model = summed / counts_t[:, t]
            grads = torch.autograd.grad(per_model.sum(), params)
            act_np = active[:, t]
            step += act_np
            safe = np.maximum(step, 1.0)
            neg_step = np.where(act_np, -lr / (1.0 - _BETA1**safe), 0.0)
            inv_bc2_sqrt = 1.0 / np.sqrt(1.0 - _BETA2**safe)
            coef = torch.as_tensor(
                np.stack([neg_step, inv_bc2_sqrt]), dtype=torch.float32, device=device
            )
            all_active = bool(act_np.all())
            with torch.no_grad():
                epoch_loss += summed.detach()
                for p, g, m, v, shape in zip(params, grads, exp_avg, exp_avg_sq, shapes):
                    if weight_decay:
                        g = g.add(p, alpha=weight_decay)
                    if all_active:
                        _adam_step(p, g, m, v, coef[0].view(shape), coef[1].view(shape))
                        continue
                    # the last steps of an epoch: only the models that still have a
                    # minibatch move (a loop over models, on views of their slices)
                    one = (1,) + shape[1:]
                    for k in np.flatnonzero(act_np):
                        sl = slice(int(k), int(k) + 1)
                        _adam_step(
                            p[sl], g[sl], m[sl], v[sl],
                            coef[0, sl].view(one), coef[1, sl].view(one),
                        )
        curve[:, epoch] = (epoch_loss / n_k_t).cpu().numpy()
        if progress is not None:
            progress(epoch, curve[:, epoch])
    return curve


def _stack_to_device(per_model: list[list[Any]], device: Any) -> list[Any]:
    import torch

    n_tensors = len(per_model[0])
    return [
        torch.stack([w[i] for w in per_model]).to(device).requires_grad_(True)
        for i in range(n_tensors)
    ]


# ------------------------------------------------------------------ the estimator
class TorchMLPClassifier(ClassifierMixin, BaseEstimator):
    """Multilayer perceptron classifier in torch, trained with Adam on minibatches.

    The target and shadow model of the membership inference papers on Purchase-100
    and Texas-100 (2x256 ReLU, Adam, batch 200, lr 0.005), with a scikit-learn API.
    Many of them with the same settings train at once with :func:`fit_mlps_batched`
    (what :class:`tabmia.shadow.ShadowPopulation` does for this estimator).

    Parameters
    ----------
    hidden_layer_sizes : sequence of int, default=(256, 256)
        Width of each hidden layer.
    activation : {"relu", "tanh", "logistic", "identity"}, default="relu"
        Hidden-layer activation.
    epochs : int, default=100
        Passes over the training records.
    batch_size : int, default=200
        Minibatch size; the last minibatch of an epoch holds the remainder.
    lr : float, default=0.005
        Adam learning rate (betas 0.9, 0.999; eps 1e-8).
    weight_decay : float, default=0.0
        L2 penalty added to the gradient (``torch.optim.Adam``'s ``weight_decay``).
    warm_start : bool, default=False
        When True and the model is fitted, ``fit`` continues from the current weights
        (with a fresh Adam state) instead of re-initialising. See also
        :meth:`fine_tune`.
    device : {"auto", "cpu", "cuda", "cuda:N"} or torch.device, default="auto"
        Where to train and predict; resolved into ``device_`` by ``fit``. CUDA that is
        not available warns and falls back to the CPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the model's own ``torch.Generator`` (weight initialisation, then the
        minibatch order of every epoch). torch's global generator is never touched.
    verbose : bool, default=False
        Print the training loss after every epoch.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Labels in output column order.
    n_features_in_ : int
        Number of input features.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when fit on a DataFrame with string column names.
    module_ : torch.nn.Sequential
        The network (``Linear`` / activation layers) returning logits.
    device_ : torch.device
        Device the network lives on.
    loss_curve_ : ndarray of shape (epochs,)
        Mean training cross-entropy of each epoch (of the latest ``fit`` /
        ``fine_tune``).
    n_iter_ : int
        Epochs run by the latest ``fit`` / ``fine_tune``.

    Notes
    -----
    Inputs are converted to dense float32; sparse matrices are densified batch by
    batch at prediction time but whole at training time. Pickling stores the weights
    on the CPU, so a model trained on a GPU loads on a CPU-only machine (it goes back
    to the GPU when one is present).

    Examples
    --------
    >>> import numpy as np
    >>> from tabmia.shadow import TorchMLPClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)).astype("float32")
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = TorchMLPClassifier(hidden_layer_sizes=(16,), epochs=20, batch_size=20,
    ...                          random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:3]).shape
    (3, 2)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        "hidden_layer_sizes": ["array-like", Interval(numbers.Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(_ACTIVATIONS))],
        "epochs": [Interval(numbers.Integral, 0, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="left")],
        "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "device": "no_validation",
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        hidden_layer_sizes: Sequence[int] = (256, 256),
        activation: str = "relu",
        epochs: int = 100,
        batch_size: int = 200,
        lr: float = 0.005,
        weight_decay: float = 0.0,
        warm_start: bool = False,
        device: Any = "auto",
        random_state: Any = None,
        verbose: bool = False,
    ) -> None:
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ helpers
    def _hidden(self) -> tuple[int, ...]:
        hidden = tuple(int(h) for h in np.atleast_1d(self.hidden_layer_sizes))
        if any(h < 1 for h in hidden):
            raise ValueError(
                f"hidden_layer_sizes must hold positive widths, got {self.hidden_layer_sizes!r}"
            )
        return hidden

    def _record_features(self, X: Any) -> None:
        self.n_features_in_ = int(X.shape[1])
        if isinstance(X, pd.DataFrame) and all(isinstance(c, str) for c in X.columns):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _check_X(self, X: Any) -> np.ndarray:  # noqa: N802
        names = getattr(self, "feature_names_in_", None)
        if isinstance(X, pd.DataFrame) and names is not None:
            missing = [c for c in names if c not in X.columns]
            if missing:
                raise ValueError(f"X is missing columns seen in fit: {missing[:10]}")
            X = X[list(names)]
        arr = _as_float32(X)
        if arr.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {arr.shape[1]} features, but TorchMLPClassifier was fit with "
                f"{self.n_features_in_}"
            )
        return arr

    def _encode(self, y: Any, classes: np.ndarray, name: str = "y") -> np.ndarray:
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {y.shape}")
        sorter = np.argsort(classes, kind="stable")
        pos = np.clip(np.searchsorted(classes, y, sorter=sorter), 0, classes.size - 1)
        bad = classes[sorter[pos]] != y
        if bad.any():
            raise ValueError(
                f"{name} holds labels outside classes_ {list(classes[:20])}: "
                f"{list(pd.unique(pd.Series(y[bad]))[:10])}"
            )
        return sorter[pos].astype(np.int64)

    def _set_weights(self, weights: list[Any], sizes: list[tuple[int, int]]) -> None:
        """Build ``module_`` on ``device_`` from ``[W1 (in, out), b1, ...]``."""
        from torch import nn

        layers: list[Any] = []
        for i, (fan_in, fan_out) in enumerate(sizes):
            lin = nn.Linear(fan_in, fan_out, device="meta")
            lin.weight = nn.Parameter(weights[2 * i].detach().t().contiguous().clone())
            lin.bias = nn.Parameter(weights[2 * i + 1].detach().clone())
            layers.append(lin)
            if i < len(sizes) - 1:
                layers.append(_activation_module(self._activation_))
        module = nn.Sequential(*layers).to(self.device_)
        module.eval()
        for p in module.parameters():
            p.requires_grad_(False)
        self.module_ = module
        self._sizes_ = sizes

    def _get_weights(self) -> list[Any]:
        """``[W1 (in, out), b1, ...]`` of the fitted network, on the CPU."""
        out = []
        for layer in self.module_:
            if hasattr(layer, "weight"):
                out.append(layer.weight.detach().t().contiguous().cpu())
                out.append(layer.bias.detach().cpu())
        return out

    # --------------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any, classes: Any = None) -> TorchMLPClassifier:
        """Train the network on ``(X, y)``.

        Parameters
        ----------
        X : array-like, sparse matrix or numeric DataFrame of shape (n, d)
            Training records.
        y : array-like of shape (n,)
            Labels.
        classes : array-like, default=None
            All labels the model should have an output for, in output column order
            (``classes_``), e.g. when ``y`` is a subset that misses some. Default:
            ``np.unique(y)``.

        Returns
        -------
        self
        """
        import torch

        from tabmia._device import resolve_device

        self._validate_params()
        resume = self.warm_start and hasattr(self, "module_")
        if resume:
            return self._continue(X, y, epochs=self.epochs, lr=self.lr, seed=None)
        Xf = _as_float32(X)
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            y_arr = y_arr.ravel()
        if y_arr.shape[0] != Xf.shape[0]:
            raise ValueError(f"X has {Xf.shape[0]} records but y has {y_arr.shape[0]} labels")
        if classes is None:
            cls = np.unique(y_arr)
        else:
            cls = np.asarray(classes)
            if cls.ndim != 1 or pd.unique(pd.Series(cls)).size != cls.size:
                raise ValueError(f"classes must be 1-D and unique, got {classes!r}")
        y_idx = self._encode(y_arr, cls)
        if cls.size < 2:
            raise ValueError(f"y has a single class {cls!r}; a classifier needs at least 2")
        self.classes_ = cls
        self._record_features(X)
        self._activation_ = self.activation
        self.device_ = resolve_device(self.device)
        seed = _seed_from(self.random_state)
        gen = torch.Generator().manual_seed(seed)
        sizes = _layer_sizes(Xf.shape[1], self._hidden(), cls.size)
        params = _stack_to_device([_init_weights(sizes, gen)], self.device_)
        self._train(Xf, y_idx, params, gen, sizes, epochs=self.epochs, lr=self.lr)
        return self

    def _train(
        self,
        Xf: np.ndarray,
        y_idx: np.ndarray,
        params: list[Any],
        gen: Any,
        sizes: list[tuple[int, int]],
        *,
        epochs: int,
        lr: float,
    ) -> None:
        X_t = _to_tensor(Xf, self.device_)
        y_t = _to_tensor(y_idx, self.device_)

        def progress(epoch: int, losses: np.ndarray) -> None:
            if self.verbose:
                print(f"epoch {epoch + 1}/{epochs}: loss {losses[0]:.5f}", flush=True)

        curve = _train_stacked(
            X_t,
            y_t,
            [np.arange(Xf.shape[0])],
            [gen],
            params,
            activation=self._activation_,
            epochs=int(epochs),
            batch_size=int(self.batch_size),
            lr=float(lr),
            weight_decay=float(self.weight_decay),
            progress=progress,
        )
        self._set_weights([p[0] for p in params], sizes)
        self.loss_curve_ = curve[0]
        self.n_iter_ = int(epochs)

    def _continue(
        self, X: Any, y: Any, *, epochs: int, lr: float, seed: Any
    ) -> TorchMLPClassifier:
        import torch

        from tabmia._device import resolve_device

        check_is_fitted(self, "module_")
        Xf = self._check_X(X)
        y_idx = self._encode(y, self.classes_)
        if y_idx.shape[0] != Xf.shape[0]:
            raise ValueError(f"X has {Xf.shape[0]} records but y has {y_idx.shape[0]} labels")
        if self.device is not None and str(self.device) != "auto":
            self.device_ = resolve_device(self.device)
        gen = torch.Generator().manual_seed(
            _seed_from(seed) if seed is not None else _derived_seed(self.random_state)
        )
        params = _stack_to_device([self._get_weights()], self.device_)
        self._train(Xf, y_idx, params, gen, self._sizes_, epochs=epochs, lr=lr)
        return self

    def fine_tune(
        self,
        X: Any,
        y: Any,
        *,
        epochs: int | None = None,
        lr: float | None = None,
        random_state: Any = None,
    ) -> TorchMLPClassifier:
        """Continue training the fitted network on ``(X, y)``, in place.

        The weights are kept and a fresh Adam state starts; ``classes_`` stays (every
        label in ``y`` must be in it). This is what Watson et al.'s calibration by
        forgetting needs: copy the fitted target and fine-tune the copy on other
        records, e.g. ``ref = copy.deepcopy(target).fine_tune(X_pub, y_pub, epochs=5)``
        (``sklearn.base.clone`` would drop the weights).

        Parameters
        ----------
        X : array-like, sparse matrix or numeric DataFrame of shape (n, d)
            Records to continue on.
        y : array-like of shape (n,)
            Their labels.
        epochs : int, default=None
            Epochs to run; ``self.epochs`` when None.
        lr : float, default=None
            Learning rate; ``self.lr`` when None.
        random_state : int, RandomState instance or None, default=None
            Seeds the minibatch order. When None, a seed derived from
            ``self.random_state`` (different from the one ``fit`` used).

        Returns
        -------
        self
        """
        self._validate_params()
        epochs = self.epochs if epochs is None else int(epochs)
        if epochs < 0:
            raise ValueError(f"epochs must be >= 0, got {epochs}")
        lr = self.lr if lr is None else float(lr)
        return self._continue(X, y, epochs=epochs, lr=lr, seed=random_state)

    # ---------------------------------------------------------------- predict
    def decision_function(self, X: Any) -> np.ndarray:
        """Logits, shape ``(n, n_classes)`` (also for two classes), float32."""
        import torch

        check_is_fitted(self, "module_")
        Xf = self._check_X(X)
        out = np.empty((Xf.shape[0], self.classes_.size), dtype=np.float32)
        with torch.no_grad():
            for start in range(0, Xf.shape[0], _PREDICT_CHUNK):
                stop = min(start + _PREDICT_CHUNK, Xf.shape[0])
                xb = _to_tensor(Xf[start:stop], self.device_)
                out[start:stop] = self.module_(xb).to("cpu").numpy()
        return out

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, shape ``(n, n_classes)``, float64 (softmax of the logits)."""
        return _softmax(self.decision_function(X).astype(np.float64))

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log-probabilities, shape ``(n, n_classes)``, float64."""
        z = self.decision_function(X).astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable label of each record."""
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]

    # ------------------------------------------------------------------ pickle
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        module = state.pop("module_", None)
        if module is not None:
            state["_module_weights"] = [
                t.numpy().copy() for t in self._get_weights()
            ]
        device = state.get("device_")
        if device is not None:
            state["device_"] = str(device)
        return state

    def __setstate__(self, state: dict) -> None:
        weights = state.pop("_module_weights", None)
        device = state.get("device_")
        self.__dict__.update(state)
        if device is not None or weights is not None:
            import torch

            dev = torch.device(device) if device is not None else torch.device("cpu")
            if dev.type == "cuda" and not torch.cuda.is_available():
                dev = torch.device("cpu")
            self.device_ = dev
            if weights is not None:
                self._set_weights([torch.from_numpy(w) for w in weights], self._sizes_)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


# ------------------------------------------------------------- many models at once
def fit_mlps_batched(
    X: Any,
    y_idx: Any,
    masks: Any,
    seeds: Any,
    params: TorchMLPClassifier | dict | None = None,
    device: Any = "auto",
    *,
    classes: Any = None,
    max_group_size: int | None = None,
    verbose: bool = False,
) -> list[TorchMLPClassifier]:
    """Train K MLPs with the same settings as one batched network.

    Model ``k`` trains on the records ``masks[k]`` of the pool with seed
    ``seeds[k]``, and ends with the weights of
    ``TorchMLPClassifier(**params, random_state=seeds[k]).fit(X[masks[k]],
    classes[y_idx[masks[k]]], classes=classes)``: the same initialisation (drawn from
    its own generator), the same minibatch order (a permutation of its own rows per
    epoch from that generator, the last minibatch partial), its own Adam state. The
    layers are stacked into ``(K, d_in, h)`` tensors and run with ``torch.baddbmm``;
    models are trained in groups as large as the device memory allows.

    Parameters
    ----------
    X : array-like, sparse matrix or numeric DataFrame of shape (n, d)
        The pool of records (copied once to the device as float32).
    y_idx : array-like of int of shape (n,)
        Class index of each record, in ``[0, n_classes)``.
    masks : array-like of bool of shape (K, n)
        ``masks[k, i]``: record ``i`` trains model ``k``.
    seeds : array-like of int of shape (K,)
        One seed per model.
    params : TorchMLPClassifier or dict, default=None
        Settings shared by all models (``random_state`` and ``device`` ignored).
    device : str or torch.device, default="auto"
        Where to train ("auto": CUDA when present).
    classes : array-like of shape (n_classes,), default=None
        Labels of the output columns; ``arange(y_idx.max() + 1)`` when None.
    max_group_size : int, default=None
        Most models trained together; None: as many as fit in memory
        (:func:`auto_group_size`).
    verbose : bool, default=False
        tqdm progress over epochs of each group.

    Returns
    -------
    list of TorchMLPClassifier
        K fitted models, ``random_state=seeds[k]``, on ``device``.
    """
    import torch

    from tabmia._device import resolve_device

    if params is None:
        params = {}
    if isinstance(params, TorchMLPClassifier):
        params = params.get_params(deep=False)
    params = {k: v for k, v in dict(params).items() if k not in ("random_state", "device")}
    template = TorchMLPClassifier(**params)
    template._validate_params()
    Xf = _as_float32(X)
    n = Xf.shape[0]
    y_idx = np.asarray(y_idx)
    if y_idx.shape != (n,) or y_idx.dtype.kind not in "iu":
        raise ValueError(
            f"y_idx must hold {n} integer class indices, got {y_idx.dtype} {y_idx.shape}"
        )
    classes = np.arange(int(y_idx.max()) + 1) if classes is None else np.asarray(classes)
    if y_idx.min() < 0 or y_idx.max() >= classes.size:
        raise ValueError(f"y_idx holds indices outside [0, {classes.size - 1}]")
    masks = np.asarray(masks, dtype=bool)
    seeds = np.asarray(seeds).ravel()
    if masks.ndim != 2 or masks.shape[1] != n:
        raise ValueError(f"masks must have shape (K, {n}), got {masks.shape}")
    if seeds.shape[0] != masks.shape[0]:
        raise ValueError(f"{masks.shape[0]} masks but {seeds.shape[0]} seeds")
    if not masks.any(axis=1).all():
        raise ValueError("every model needs at least one training record (a mask is empty)")
    dev = resolve_device(device)
    hidden = template._hidden()
    sizes = _layer_sizes(Xf.shape[1], hidden, classes.size)
    K = masks.shape[0]
    group = (
        auto_group_size(Xf.shape[1], hidden, classes.size, template.batch_size, dev, n_records=n)
        if max_group_size is None
        else int(max_group_size)
    )
    group = max(1, min(group, K))
    X_t = _to_tensor(Xf, dev)
    y_t = _to_tensor(y_idx.astype(np.int64), dev)
    models: list[TorchMLPClassifier] = []
    for start in range(0, K, group):
        ks = range(start, min(start + group, K))
        gens = [torch.Generator().manual_seed(int(seeds[k])) for k in ks]
        stacked = _stack_to_device([_init_weights(sizes, g) for g in gens], dev)
        rows = [np.flatnonzero(masks[k]) for k in ks]
        bar = None
        progress = None
        if verbose:
            from tqdm.auto import tqdm

            bar = tqdm(total=template.epochs, desc=f"MLPs {ks[0]}-{ks[-1]}", leave=False)
            progress = _bar_callback(bar)
        curve = _train_stacked(
            X_t,
            y_t,
            rows,
            gens,
            stacked,
            activation=template.activation,
            epochs=int(template.epochs),
            batch_size=int(template.batch_size),
            lr=float(template.lr),
            weight_decay=float(template.weight_decay),
            progress=progress,
        )
        if bar is not None:
            bar.close()
        for j, k in enumerate(ks):
            model = TorchMLPClassifier(**params, random_state=int(seeds[k]), device=device)
            model.classes_ = classes
            model.n_features_in_ = Xf.shape[1]
            if isinstance(X, pd.DataFrame) and all(isinstance(c, str) for c in X.columns):
                model.feature_names_in_ = np.asarray(X.columns, dtype=object)
            model._activation_ = template.activation
            model.device_ = dev
            model._set_weights([p[j] for p in stacked], sizes)
            model.loss_curve_ = curve[j]
            model.n_iter_ = int(template.epochs)
            models.append(model)
        del stacked
    return models


def _bar_callback(bar: Any) -> Any:
    def update(_epoch: int, _losses: np.ndarray) -> None:
        bar.update(1)

    return update


# ---------------------------------------------------------------- gradient norms
_ELEMENTWISE = ("ReLU", "Tanh", "Sigmoid", "Identity", "GELU", "SiLU", "ELU", "LeakyReLU",
                "Softplus")


def _is_plain_mlp(module: Any) -> bool:
    from torch import nn

    if not isinstance(module, nn.Sequential):
        return False
    for layer in module:
        if isinstance(layer, nn.Linear):
            continue
        if type(layer).__name__ in _ELEMENTWISE and not list(layer.parameters()):
            continue
        return False
    return True


def gradient_norms(
    model: Any, X: Any, y_idx: Any, *, batch_size: int | None = None
) -> np.ndarray:
    """Per-record norm of the gradient of the loss with respect to all parameters.

    ``||d/dtheta CE(f_theta(x_i), y_i)||_2`` for every record: Watson et al.'s
    gradient-norm score (a member tends to have a small gradient).

    For an MLP (a :class:`TorchMLPClassifier`, or an ``nn.Sequential`` of ``Linear``
    layers and parameter-free elementwise activations) the norms come from one
    forward and backward pass: the per-record gradient of a linear layer is the outer
    product of its input ``a`` and the loss gradient ``delta`` at its output, so its
    squared norm is ``(||a||^2 + 1) ||delta||^2`` (weight and bias). Other
    ``nn.Module`` objects use ``torch.func.vmap`` over ``torch.func.grad``.

    Parameters
    ----------
    model : TorchMLPClassifier or torch.nn.Module
        Fitted model; a module must map a float32 batch to logits.
    X : array-like, sparse matrix or numeric DataFrame of shape (n, d)
        Records.
    y_idx : array-like of int of shape (n,)
        Class index (column of the logits) of each record's label.
    batch_size : int, default=None
        Records per pass (default: 8192 for MLPs; chosen from the parameter count
        otherwise).

    Returns
    -------
    ndarray of shape (n,)
        Float64 gradient norms.
    """
    if isinstance(model, TorchMLPClassifier):
        check_is_fitted(model, "module_")
        module = model.module_
        Xf = model._check_X(X)
        device = model.device_
    else:
        module = model
        Xf = _as_float32(X)
        try:
            device = next(module.parameters()).device
        except StopIteration as exc:
            raise ValueError("model has no parameters") from exc
    y = np.asarray(y_idx)
    if y.shape != (Xf.shape[0],) or y.dtype.kind not in "iu":
        raise ValueError(
            f"y_idx must hold {Xf.shape[0]} integer class indices, got {y.dtype} {y.shape}"
        )
    plain = _is_plain_mlp(module)
    n_params = sum(p.numel() for p in module.parameters())
    if batch_size is None:
        batch_size = 8192 if plain else max(1, min(4096, int(2**25 // max(n_params, 1))))
    out = np.empty(Xf.shape[0], dtype=np.float64)
    was_training = module.training
    module.eval()
    try:
        for start in range(0, Xf.shape[0], batch_size):
            stop = min(start + batch_size, Xf.shape[0])
            xb = _to_tensor(Xf[start:stop], device)
            yb = _to_tensor(y[start:stop].astype(np.int64), device)
            if plain:
                sq = _mlp_grad_sq_norms(module, xb, yb)
            else:
                sq = _vmap_grad_sq_norms(module, xb, yb)
            out[start:stop] = sq.double().sqrt().cpu().numpy()
    finally:
        module.train(was_training)
    return out


def _mlp_grad_sq_norms(module: Any, xb: Any, yb: Any) -> Any:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from torch import nn

    inputs, outputs, has_bias = [], [], []
    with torch.enable_grad():
        h = xb
        for layer in module:
            if isinstance(layer, nn.Linear):
                bias = layer.bias.detach() if layer.bias is not None else None
                inputs.append(h.detach())
                z = F.linear(h, layer.weight.detach(), bias)
                if not z.requires_grad:  # first layer: make its output the graph's leaf
                    z.requires_grad_(True)
                outputs.append(z)
                has_bias.append(bias is not None)
                h = z
            else:
                h = layer(h)
        loss = F.cross_entropy(h, yb, reduction="sum")
        deltas = torch.autograd.grad(loss, outputs)
    sq = torch.zeros(xb.shape[0], dtype=torch.float64, device=xb.device)
    for a, d, bias in zip(inputs, deltas, has_bias):
        d2 = d.double().pow(2).sum(dim=1)
        a2 = a.double().pow(2).sum(dim=1)
        sq += (a2 + 1.0) * d2 if bias else a2 * d2
    return sq


def _vmap_grad_sq_norms(module: Any, xb: Any, yb: Any) -> Any:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in module.named_parameters()}
    buffers = {k: v.detach() for k, v in module.named_buffers()}

    def loss_fn(p: dict, x: Any, t: Any) -> Any:
        out = functional_call(module, (p, buffers), (x.unsqueeze(0),))
        return F.cross_entropy(out, t.unsqueeze(0))

    grads = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, xb, yb)
    sq = torch.zeros(xb.shape[0], dtype=torch.float64, device=xb.device)
    for g in grads.values():
        sq += g.double().reshape(g.shape[0], -1).pow(2).sum(dim=1)
    return sq
