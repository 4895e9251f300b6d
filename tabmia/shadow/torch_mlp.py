"""A torch multilayer perceptron classifier with a scikit-learn API.

:class:`TorchMLPClassifier` is the multilayer perceptron of the membership inference
literature (Shokri et al.; Jayaraman et al.: 2x256 ReLU, Adam, batch 200, lr 0.005) as a
scikit-learn classifier. torch is imported inside the methods that need it: importing
this module is cheap.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from tabmia._array import log_softmax, ravel_column, softmax
from tabmia._seeding import derived_seed, seed_from
from tabmia._torch import as_float32, module_gradient_norms, to_tensor
from tabmia.shadow._stacked import (
    MATMUL_PRECISIONS,
    init_weights,
    layer_sizes,
    stack_to_device,
    train_stacked,
)

__all__ = ["TorchMLPClassifier"]

_ACTIVATIONS = ("relu", "tanh", "logistic", "identity")
#: Records per forward pass at prediction time.
_PREDICT_CHUNK = 65536


def _activation_module(name: str) -> Any:
    from torch import nn

    return {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid, "identity": nn.Identity}[
        name
    ]()


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
    matmul_precision : {"float32", "tf32", "bfloat16"}, default="float32"
        Arithmetic of the training matrix products on a GPU: exact float32;
        TensorFloat-32 tensor cores (products rounded to a 10-bit mantissa, float32
        sums); or the forward pass autocast to bfloat16 (weights, gradients, Adam state
        and loss stay float32). On the CPU every choice trains in float32. Prediction
        is always float32.
    fused_step : bool, default=False
        On CUDA, compile each Adam update into one kernel per weight tensor
        (``torch.compile``, Triton): the same float32 formula read and written in one
        pass instead of eight, so large batched groups spend a third of the memory
        traffic on the optimizer; results may differ from the eager step in the last
        bit. Ignored on the CPU.
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
    feature_names_in_ : ndarray of shape (n_features,)
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
    on the CPU, so a model trained on a GPU loads on a CPU-only machine, with a
    ``RuntimeWarning`` (it goes back to the GPU when one is present).

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

    #: What tabmia's target adapter takes from it beyond ``predict_proba``
    #: (:attr:`tabmia.target.TargetModel.outputs`): its logits (``decision_function``)
    #: and per-record gradient norms (:meth:`gradient_norms`).
    __tabmia_outputs__ = ("logits", "gradient_norm")

    _parameter_constraints: dict = {
        "hidden_layer_sizes": ["array-like", Interval(numbers.Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(_ACTIVATIONS))],
        "epochs": [Interval(numbers.Integral, 0, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="left")],
        "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "device": "no_validation",
        "matmul_precision": [StrOptions(set(MATMUL_PRECISIONS))],
        "fused_step": ["boolean"],
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
        matmul_precision: str = "float32",
        fused_step: bool = False,
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
        self.matmul_precision = matmul_precision
        self.fused_step = fused_step
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
        arr = as_float32(X)
        if arr.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {arr.shape[1]} features, but TorchMLPClassifier was fit with "
                f"{self.n_features_in_}"
            )
        return arr

    def _encode(self, y: Any, classes: np.ndarray, name: str = "y") -> np.ndarray:
        y = ravel_column(y)
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
        layers: Any = self.module_  # torch types a layer's attributes as Tensor | Module
        for layer in layers:
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
        Xf = as_float32(X)
        y_arr = ravel_column(y)
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
        seed = seed_from(self.random_state)
        gen = torch.Generator().manual_seed(seed)
        sizes = layer_sizes(Xf.shape[1], self._hidden(), cls.size)
        params = stack_to_device([init_weights(sizes, gen)], self.device_)
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
        X_t = to_tensor(Xf, self.device_)
        y_t = to_tensor(y_idx, self.device_)

        def progress(epoch: int, losses: np.ndarray) -> None:
            if self.verbose:
                print(f"epoch {epoch + 1}/{epochs}: loss {losses[0]:.5f}", flush=True)

        curve = train_stacked(
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
            matmul_precision=self.matmul_precision,
            fused_step=bool(self.fused_step),
        )
        self._set_weights([p[0] for p in params], sizes)
        self.loss_curve_ = curve[0]
        self.n_iter_ = int(epochs)

    def _continue(self, X: Any, y: Any, *, epochs: int, lr: float, seed: Any) -> TorchMLPClassifier:
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
            seed_from(seed) if seed is not None else derived_seed(self.random_state)
        )
        params = stack_to_device([self._get_weights()], self.device_)
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
                xb = to_tensor(Xf[start:stop], self.device_)
                out[start:stop] = self.module_(xb).to("cpu").numpy()
        return out

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, shape ``(n, n_classes)``, float64 (softmax of the logits)."""
        return softmax(self.decision_function(X))

    def gradient_norms(self, X: Any, y_idx: Any, *, batch_size: int | None = None) -> np.ndarray:
        """Per-record norm of the loss gradient with respect to all parameters, float64
        (:func:`tabmia.shadow.gradient_norms`); ``y_idx`` are column indices of
        ``classes_``."""
        check_is_fitted(self, "module_")
        return module_gradient_norms(
            self.module_, self._check_X(X), y_idx, device=self.device_, batch_size=batch_size
        )

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log-probabilities, shape ``(n, n_classes)``, float64."""
        return log_softmax(self.decision_function(X))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable label of each record."""
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]

    # ------------------------------------------------------------------ pickle
    def __getstate__(self) -> dict:
        """Pickle the weights as CPU arrays, not the torch module."""
        state = self.__dict__.copy()
        module = state.pop("module_", None)
        if module is not None:
            state["_module_weights"] = [t.numpy().copy() for t in self._get_weights()]
        device = state.get("device_")
        if device is not None:
            state["device_"] = str(device)
        return state

    def __setstate__(self, state: dict) -> None:
        """Rebuild the torch module from the pickled weights."""
        weights = state.pop("_module_weights", None)
        device = state.get("device_")
        self.__dict__.update(state)
        if device is not None or weights is not None:
            import torch

            from tabmia._device import resolve_device

            # a model pickled on a GPU machine: back to that GPU, or the CPU with a
            # warning (its index is not checked: the weights load either way)
            self.device_ = (
                resolve_device(device, check_index=False)
                if device is not None
                else torch.device("cpu")
            )
            if weights is not None:
                self._set_weights([torch.from_numpy(w) for w in weights], self._sizes_)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
