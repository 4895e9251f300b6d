"""K MLPs as one network with stacked weights ``(K, d_in, h)``, trained by minibatch Adam.

The core of :class:`~tabmia.shadow.TorchMLPClassifier` (K = 1) and of
:func:`~tabmia.shadow.fit_mlps_batched`: each model draws its minibatches from its own
rows with its own generator and keeps its own Adam state.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["layer_sizes", "init_weights", "train_stacked", "stack_to_device"]

_BETA1, _BETA2, _EPS = 0.9, 0.999, 1e-8


def layer_sizes(n_in: int, hidden: Sequence[int], n_out: int) -> list[tuple[int, int]]:
    widths = [int(n_in), *[int(h) for h in hidden], int(n_out)]
    return list(itertools.pairwise(widths))


def _activation_fn(name: str) -> Any:
    import torch

    return {
        "relu": torch.relu,
        "tanh": torch.tanh,
        "logistic": torch.sigmoid,
        "identity": lambda h: h,
    }[name]


def init_weights(sizes: list[tuple[int, int]], generator: Any) -> list[Any]:
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


def train_stacked(
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

    Model ``k`` sees the records ``rows[k]`` of the pool ``X_t`` (shape ``(n, d)``,
    labels ``y_t`` of shape ``(n,)``), or of its own pool ``X_t[k]`` when every model has
    one (``X_t`` of shape ``(K, n, d)``, ``y_t`` of shape ``(K, n)``): each epoch, a fresh
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
    own_pools = X_t.dim() == 3
    model_index = torch.arange(K, device=device).view(K, 1)
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
            xb = X_t[model_index, ib] if own_pools else X_t[ib]
            yb = y_t[model_index, ib] if own_pools else y_t[ib]
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
                    one = (1, *shape[1:])
                    for k in np.flatnonzero(act_np).tolist():
                        sl = slice(int(k), int(k) + 1)
                        _adam_step(
                            p[sl], g[sl], m[sl], v[sl],
                            coef[0, sl].view(one), coef[1, sl].view(one),
                        )
        curve[:, epoch] = (epoch_loss / n_k_t).cpu().numpy()
        if progress is not None:
            progress(epoch, curve[:, epoch])
    return curve


def stack_to_device(per_model: list[list[Any]], device: Any) -> list[Any]:
    import torch

    n_tensors = len(per_model[0])
    return [
        torch.stack([w[i] for w in per_model]).to(device).requires_grad_(True)
        for i in range(n_tensors)
    ]
