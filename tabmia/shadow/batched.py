"""Train many MLPs with the same settings as one batched network, sized to the device.

:func:`fit_mlps_batched` trains K :class:`~tabmia.shadow.TorchMLPClassifier` models as
one network with stacked weights ``(K, d_in, h)``: each model draws minibatches from its
own rows with its own generator and keeps its own Adam state, so model ``k`` ends with
the weights of ``TorchMLPClassifier(random_state=seeds[k]).fit(X[masks[k]],
y[masks[k]])``: on the CPU equal to those of training it alone, on CUDA the same for the
same seed and device but not bitwise equal to training alone (a batched matrix product
adds in another order than a single one, and training amplifies the difference). A
Pipeline ending in the MLP trains the same way, each model with its own copy of the
preprocessing fitted on its own rows. :func:`auto_group_size` says how many fit in the
device's memory at once.

torch is imported inside the functions that need it: importing this module is cheap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tabmia._torch import as_float32, to_tensor
from tabmia.shadow._stacked import init_stacked, layer_sizes, train_stacked
from tabmia.shadow.torch_mlp import TorchMLPClassifier

__all__ = ["fit_mlps_batched", "auto_group_size"]


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
    own_pool_rows: int = 0,
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
    own_pool_rows : int, default=0
        Rows of each model's own pool (a Pipeline's per-model preprocessed records).
    fraction : float, default=None
        Share of the free memory to use (0.5 on CUDA, 0.25 on the CPU).

    Returns
    -------
    int
        At least 1.
    """
    from tabmia._device import resolve_device

    dev = resolve_device(device)
    sizes = layer_sizes(n_features, hidden_layer_sizes, n_classes)
    n_params = sum(i * o + o for i, o in sizes)
    widths = sum(o for _, o in sizes)
    per_model = 4 * (
        4 * n_params + batch_size * (n_features + 4 * widths + 4) + own_pool_rows * (n_features + 2)
    )
    if fraction is None:
        fraction = 0.5 if dev.type == "cuda" else 0.25
    budget = fraction * _available_memory(dev) - 4 * n_records * (n_features + 2)
    return max(1, int(budget // max(per_model, 1)))


def _split_recipe(params: Any) -> tuple[Any, dict]:
    """``(the Pipeline when it has steps before the MLP, else None; the MLP's parameters)``."""
    from sklearn.pipeline import Pipeline

    if params is None:
        return None, {}
    if isinstance(params, Pipeline):
        last = params.steps[-1][1]
        if not isinstance(last, TorchMLPClassifier):
            raise ValueError(
                f"a Pipeline recipe must end in a TorchMLPClassifier, got {type(last).__name__}"
            )
        return (params if len(params.steps) > 1 else None), last.get_params(deep=False)
    if isinstance(params, TorchMLPClassifier):
        return None, params.get_params(deep=False)
    return None, dict(params)


def fit_mlps_batched(
    X: Any,
    y_idx: Any,
    masks: Any,
    seeds: Any,
    params: Any = None,
    device: Any = "auto",
    *,
    classes: Any = None,
    max_group_size: int | None = None,
    verbose: bool = False,
) -> list[Any]:
    """Train K MLPs with the same settings as one batched network.

    Model ``k`` trains on the records ``masks[k]`` of the pool with seed
    ``seeds[k]``, and ends with the weights of
    ``TorchMLPClassifier(**params, random_state=seeds[k]).fit(X[masks[k]],
    classes[y_idx[masks[k]]], classes=classes)``: the same initialisation (drawn from
    its own generator), the same minibatch order (a permutation of its own rows per
    epoch from that generator, the last minibatch partial), its own Adam state. The
    layers are stacked into ``(K, d_in, h)`` tensors and run with ``torch.baddbmm``;
    models are trained in groups as large as the device memory allows.

    What this promises: on the CPU, the weights of training each model alone (equal up
    to float32 rounding, tested); on CUDA, the same scores again for the same seeds on
    the same device, but not bitwise the weights of training alone (a batched matrix
    product adds in another order, and training amplifies the difference).

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame of shape (n, d)
        The pool of records (copied once to the device as float32). Numeric, unless
        ``params`` is a Pipeline whose steps before the MLP encode it.
    y_idx : array-like of int of shape (n,)
        Class index of each record, in ``[0, n_classes)``.
    masks : array-like of bool of shape (K, n)
        ``masks[k, i]``: record ``i`` trains model ``k``.
    seeds : array-like of int of shape (K,)
        One seed per model.
    params : TorchMLPClassifier, Pipeline ending in one, or dict, default=None
        Settings shared by all models (``random_state`` and ``device`` ignored). A
        Pipeline: model ``k`` gets its own copy of the steps before the MLP (every
        ``random_state`` in it set to ``seeds[k]``), fitted on its own rows, as
        ``Pipeline.fit`` would; the models returned are then fitted Pipelines.
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
    list of TorchMLPClassifier or Pipeline
        K fitted models, ``random_state=seeds[k]``, on ``device``.
    """
    from tabmia._device import resolve_device
    from tabmia.target import n_rows

    pipeline, params = _split_recipe(params)
    params = {k: v for k, v in params.items() if k not in ("random_state", "device")}
    template = TorchMLPClassifier(**params)
    template._validate_params()
    n = n_rows(X)
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
    K = masks.shape[0]
    if pipeline is None:
        pools: Any = _SharedPool(X, y_idx, dev)
    else:
        pools = _OwnPools(X, y_idx, classes, pipeline, dev)
    hidden = template._hidden()
    group = (
        auto_group_size(
            pools.width(masks, seeds),
            hidden,
            classes.size,
            template.batch_size,
            dev,
            n_records=pools.shared_rows,
            own_pool_rows=pools.own_rows(masks),
        )
        if max_group_size is None
        else int(max_group_size)
    )
    group = max(1, min(group, K))
    models: list[Any] = []
    for start in range(0, K, group):
        ks = list(range(start, min(start + group, K)))
        X_t, y_t, rows, widths, pipelines = pools.group(masks[ks], seeds[ks])
        mlps = _train_group(
            X_t,
            y_t,
            rows,
            seeds[ks],
            template,
            params,
            classes,
            widths,
            device,
            dev,
            verbose=verbose,
            first=ks[0],
        )
        if pipelines is None:
            if isinstance(X, pd.DataFrame) and all(isinstance(c, str) for c in X.columns):
                for mlp in mlps:
                    mlp.feature_names_in_ = np.asarray(X.columns, dtype=object)
            models += mlps
        else:
            for pipe, mlp in zip(pipelines, mlps):
                pipe.steps[-1] = (pipe.steps[-1][0], mlp)
            models += pipelines
    return models


class _SharedPool:
    """One pool for every model (a plain MLP recipe): copied to the device once."""

    def __init__(self, X: Any, y_idx: np.ndarray, dev: Any) -> None:
        self.Xf = as_float32(X)
        self.shared_rows = self.Xf.shape[0]
        self.X_t = to_tensor(self.Xf, dev)
        self.y_t = to_tensor(y_idx.astype(np.int64), dev)

    def width(self, masks: np.ndarray, seeds: np.ndarray) -> int:
        return self.Xf.shape[1]

    def own_rows(self, masks: np.ndarray) -> int:
        return 0

    def group(self, masks: np.ndarray, seeds: np.ndarray) -> tuple:
        rows = [np.flatnonzero(m) for m in masks]
        return self.X_t, self.y_t, rows, [self.Xf.shape[1]] * len(rows), None


class _OwnPools:
    """Each model's own copy of a Pipeline's preprocessing, fitted on its own rows.

    A group's training records are stacked as ``(K, max rows, max width)`` (each
    model's rows first, zero padding after): model ``k`` trains on ``fit_transform`` of
    its rows, as ``Pipeline.fit`` would give its last step. Encodings of different
    widths (a OneHotEncoder that sees other categories in each model's rows) are padded
    with zero columns, whose first-layer weights start at zero and get zero gradients:
    they stay zero, and are cut off after training.
    """

    shared_rows = 0

    def __init__(
        self, X: Any, y_idx: np.ndarray, classes: np.ndarray, pipeline: Any, dev: Any
    ) -> None:
        self.X, self.y_idx, self.labels = X, y_idx, classes[y_idx]
        self.pipeline, self.dev = pipeline, dev
        self._width: int | None = None

    def _fit_steps(self, mask: np.ndarray, seed: int) -> tuple[Any, np.ndarray, np.ndarray]:
        """A seeded copy of the Pipeline with its steps before the MLP fitted on ``mask``."""
        from tabmia._estimators import clone_unfitted
        from tabmia._seeding import seed_estimator
        from tabmia.target import take_rows

        pipe = clone_unfitted(self.pipeline)
        seed_estimator(pipe, int(seed))
        rows = np.flatnonzero(mask)
        Xt = as_float32(pipe[:-1].fit_transform(take_rows(self.X, rows), self.labels[rows]))
        return pipe, Xt, rows

    def width(self, masks: np.ndarray, seeds: np.ndarray) -> int:
        if self._width is None:  # the encoded width, from one model's copy
            self._width = self._fit_steps(masks[0], int(seeds[0]))[1].shape[1]
        return self._width

    def own_rows(self, masks: np.ndarray) -> int:
        return int(masks.sum(axis=1).max())

    def group(self, masks: np.ndarray, seeds: np.ndarray) -> tuple:
        fitted, blocks, rows = [], [], []
        for mask, seed in zip(masks, seeds):  # a loop over models
            steps, Xt, idx = self._fit_steps(mask, int(seed))
            fitted.append(steps)
            blocks.append((Xt, self.y_idx[idx]))
            rows.append(np.arange(Xt.shape[0]))
        widths = [b[0].shape[1] for b in blocks]
        m = max(r.size for r in rows)
        X_np = np.zeros((len(blocks), m, max(widths)), dtype=np.float32)
        y_np = np.zeros((len(blocks), m), dtype=np.int64)
        for j, (Xt, yk) in enumerate(blocks):
            X_np[j, : Xt.shape[0], : Xt.shape[1]] = Xt
            y_np[j, : yk.size] = yk
        return to_tensor(X_np, self.dev), to_tensor(y_np, self.dev), rows, widths, fitted


def _train_group(
    X_t: Any,
    y_t: Any,
    rows: list[np.ndarray],
    seeds: np.ndarray,
    template: TorchMLPClassifier,
    params: dict,
    classes: np.ndarray,
    widths: list[int],
    device: Any,
    dev: Any,
    *,
    verbose: bool,
    first: int,
) -> list[TorchMLPClassifier]:
    """Train one group as a stacked network; the fitted MLPs.

    Model ``j`` has ``widths[j]`` inputs; narrower models are padded to the widest with
    zero first-layer weights (zero inputs there: they stay zero) and cut back after.
    """
    import torch

    hidden = template._hidden()
    wide = max(widths)
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    sizes = [layer_sizes(width, hidden, classes.size) for width in widths]
    stacked = [t.to(dev).requires_grad_(True) for t in init_stacked(sizes, gens, wide)]
    bar = progress = None
    if verbose:
        from tqdm.auto import tqdm

        bar = tqdm(total=template.epochs, desc=f"MLPs {first}-{first + len(rows) - 1}", leave=False)
        progress = _bar_callback(bar)
    curve = train_stacked(
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
        matmul_precision=template.matmul_precision,
        fused_step=bool(template.fused_step),
    )
    if bar is not None:
        bar.close()
    models = []
    for j, (seed, width) in enumerate(zip(seeds, widths)):
        model = TorchMLPClassifier(**params, random_state=int(seed), device=device)
        model.classes_ = classes
        model.n_features_in_ = width
        model._activation_ = template.activation
        model.device_ = dev
        weights = [p[j] for p in stacked]
        weights[0] = weights[0][:width]
        model._set_weights(weights, layer_sizes(width, hidden, classes.size))
        model.loss_curve_ = curve[j]
        model.n_iter_ = int(template.epochs)
        models.append(model)
    return models


def _bar_callback(bar: Any) -> Any:
    def update(_epoch: int, _losses: np.ndarray) -> None:
        bar.update(1)

    return update
