"""What every layer that touches torch shares: records as float32 matrices and tensors,
and per-record gradient norms of a torch module.

torch is imported inside the functions that need it: importing this module is cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from tabmia._rows import n_rows, take_rows

__all__ = ["as_float32", "to_tensor", "module_gradient_norms", "module_logits"]


def as_float32(X: Any, name: str = "X") -> np.ndarray:
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


def to_tensor(arr: np.ndarray, device: Any) -> Any:
    """``torch.from_numpy`` that copies read-only arrays (joblib memmaps) first."""
    import torch

    if not arr.flags.writeable:
        arr = arr.copy()
    return torch.from_numpy(arr).to(device)


def module_logits(module: Any, X: Any, device: Any, batch_size: int) -> np.ndarray:
    """The logits of a torch ``module`` on records ``X`` (numpy, sparse or DataFrame), in
    batches of ``batch_size`` on ``device``, in eval mode and without gradients (the
    module's training mode is restored)."""
    import torch

    n = n_rows(X)
    out = []
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            for start in range(0, n, batch_size):
                part = take_rows(X, slice(start, min(start + batch_size, n)))
                if sp.issparse(part):
                    part = part.toarray()
                if isinstance(part, pd.DataFrame):
                    part = part.to_numpy(dtype=np.float32)
                xb = torch.as_tensor(np.asarray(part, dtype=np.float32), device=device)
                out.append(module(xb).detach().to("cpu").double().numpy())
    finally:
        module.train(was_training)
    return np.concatenate(out, axis=0)


def module_gradient_norms(
    module: Any,
    Xf: np.ndarray,
    y_idx: Any,
    *,
    device: Any = None,
    batch_size: int | None = None,
) -> np.ndarray:
    """Per-record norm of the gradient of the loss with respect to all parameters.

    ``||d/dtheta CE(module(x_i), y_i)||_2`` for every record: Watson et al.'s
    gradient-norm score (a member tends to have a small gradient).

    For an MLP (an ``nn.Sequential`` of ``Linear`` layers and parameter-free
    elementwise activations) the norms come from one forward and backward pass: the
    per-record gradient of a linear layer is the outer product of its input ``a`` and
    the loss gradient ``delta`` at its output, so its squared norm is
    ``(||a||^2 + 1) ||delta||^2`` (weight and bias). Other modules use
    ``torch.func.vmap`` over ``torch.func.grad``.

    Parameters
    ----------
    module : torch.nn.Module
        Maps a float32 batch to logits.
    Xf : ndarray of float32 of shape (n, d)
        Records (:func:`as_float32`).
    y_idx : array-like of int of shape (n,)
        Class index (column of the logits) of each record's label.
    device : torch.device, default=None
        Where the module is (by default, where its first parameter is).
    batch_size : int, default=None
        Records per pass (default: 8192 for MLPs; chosen from the parameter count
        otherwise).

    Returns
    -------
    ndarray of shape (n,)
        Float64 gradient norms.
    """
    if device is None:
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
            xb = to_tensor(Xf[start:stop], device)
            yb = to_tensor(y[start:stop].astype(np.int64), device)
            if plain:
                sq = _mlp_grad_sq_norms(module, xb, yb)
            else:
                sq = _vmap_grad_sq_norms(module, xb, yb)
            out[start:stop] = sq.double().sqrt().cpu().numpy()
    finally:
        module.train(was_training)
    return out


def _is_plain_mlp(module: Any) -> bool:
    from torch import nn

    elementwise = (
        nn.ReLU,
        nn.Tanh,
        nn.Sigmoid,
        nn.Identity,
        nn.GELU,
        nn.SiLU,
        nn.ELU,
        nn.LeakyReLU,
        nn.Softplus,
    )
    if not isinstance(module, nn.Sequential):
        return False
    for layer in module:
        if isinstance(layer, nn.Linear):
            continue
        if type(layer) in elementwise and not list(layer.parameters()):
            continue
        return False
    return True


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
    for a, d, with_bias in zip(inputs, deltas, has_bias):
        d2 = d.double().pow(2).sum(dim=1)
        a2 = a.double().pow(2).sum(dim=1)
        sq += (a2 + 1.0) * d2 if with_bias else a2 * d2
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
