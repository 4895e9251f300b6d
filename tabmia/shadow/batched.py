"""Train many MLPs with the same settings as one batched network, sized to the device.

:func:`fit_mlps_batched` trains K :class:`~tabmia.shadow.TorchMLPClassifier` models as
one network with stacked weights ``(K, d_in, h)``: each model draws minibatches from its
own rows with its own generator and keeps its own Adam state, so model ``k`` ends with
the same weights as ``TorchMLPClassifier(random_state=seeds[k]).fit(X[masks[k]],
y[masks[k]])`` up to float rounding (reductions over a stacked tensor may sum in another
order). :func:`auto_group_size` says how many fit in the device's memory at once.

torch is imported inside the functions that need it: importing this module is cheap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tabmia.shadow._inputs import as_float32, to_tensor
from tabmia.shadow._stacked import init_weights, layer_sizes, stack_to_device, train_stacked
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
    sizes = layer_sizes(n_features, hidden_layer_sizes, n_classes)
    n_params = sum(i * o + o for i, o in sizes)
    widths = sum(o for _, o in sizes)
    per_model = 4 * (4 * n_params + batch_size * (n_features + 4 * widths + 4))
    if fraction is None:
        fraction = 0.5 if dev.type == "cuda" else 0.25
    budget = fraction * _available_memory(dev) - 4 * n_records * (n_features + 2)
    return max(1, int(budget // max(per_model, 1)))


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
    Xf = as_float32(X)
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
    sizes = layer_sizes(Xf.shape[1], hidden, classes.size)
    K = masks.shape[0]
    group = (
        auto_group_size(Xf.shape[1], hidden, classes.size, template.batch_size, dev, n_records=n)
        if max_group_size is None
        else int(max_group_size)
    )
    group = max(1, min(group, K))
    X_t = to_tensor(Xf, dev)
    y_t = to_tensor(y_idx.astype(np.int64), dev)
    models: list[TorchMLPClassifier] = []
    for start in range(0, K, group):
        ks = range(start, min(start + group, K))
        gens = [torch.Generator().manual_seed(int(seeds[k])) for k in ks]
        stacked = stack_to_device([init_weights(sizes, g) for g in gens], dev)
        rows = [np.flatnonzero(masks[k]) for k in ks]
        bar = None
        progress = None
        if verbose:
            from tqdm.auto import tqdm

            bar = tqdm(total=template.epochs, desc=f"MLPs {ks[0]}-{ks[-1]}", leave=False)
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
