"""K MLPs as one network with stacked weights ``(K, d_in, h)``, trained by minibatch Adam.

The core of :class:`~tabmia.shadow.TorchMLPClassifier` (K = 1) and of
:func:`~tabmia.shadow.fit_mlps_batched`: each model draws its minibatches from its own
rows with its own generator and keeps its own Adam state.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = [
    "MATMUL_PRECISIONS",
    "layer_sizes",
    "init_weights",
    "init_stacked",
    "train_stacked",
    "stack_to_device",
    "thread_map",
]

_BETA1, _BETA2, _EPS = 0.9, 0.999, 1e-8

#: Arithmetic of the training matrix products: ``"float32"`` (exact float32, the
#: default), ``"tf32"`` (TensorFloat-32 tensor cores on Ampere and newer GPUs: 10-bit
#: mantissa products, float32 sums) or ``"bfloat16"`` (autocast of the forward pass to
#: bfloat16, float32 weights, Adam state and loss). Only the GPU paths differ; on the
#: CPU ``"tf32"`` is float32.
MATMUL_PRECISIONS = ("float32", "tf32", "bfloat16")


def thread_map(func: Callable[[int], Any], n: int, workers: int | None = None) -> list[Any]:
    """``[func(0), ..., func(n - 1)]``, on up to ``workers`` threads (None: the cores).

    Per-model random draws (weights, minibatch orders) come from each model's own CPU
    generator; torch releases the GIL while it draws, so models draw at once and every
    model's numbers stay those of drawing alone.
    """
    workers = min(n, os.cpu_count() or 1, 32) if workers is None else min(n, int(workers))
    if workers <= 1:
        return [func(i) for i in range(n)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(func, range(n)))


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


def init_stacked(
    sizes: list[list[tuple[int, int]]], generators: list[Any], width: int
) -> list[Any]:
    """Initial weights of K models stacked as ``[W1 (K, width, h1), b1 (K, h1), ...]``.

    Model ``k`` gets exactly :func:`init_weights` ``(sizes[k], generators[k])``, drawn
    into its slice (on threads, see :func:`thread_map`); a model with fewer inputs
    than ``width`` has zero first-layer rows past its own (zero inputs there: they
    stay zero).
    """
    import torch

    first = sizes[0]
    K = len(sizes)
    stacked = []
    for i, (_fan_in, fan_out) in enumerate(first):
        rows = width if i == 0 else first[i][0]
        stacked.append(torch.zeros((K, rows, fan_out), dtype=torch.float32))
        stacked.append(torch.zeros((K, fan_out), dtype=torch.float32))

    def draw(k: int) -> None:
        for i, (fan_in, fan_out) in enumerate(sizes[k]):
            bound = 1.0 / math.sqrt(fan_in)
            w = stacked[2 * i][k, :fan_in]
            b = stacked[2 * i + 1][k]
            torch.rand((fan_in, fan_out), generator=generators[k], out=w)
            torch.rand((fan_out,), generator=generators[k], out=b)
            w.mul_(2.0 * bound).sub_(bound)
            b.mul_(2.0 * bound).sub_(bound)

    thread_map(draw, K)
    return stacked


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
    m.lerp_(g, 1.0 - _BETA1)
    v.mul_(_BETA2).addcmul_(g, g, value=1.0 - _BETA2)
    _apply_moments(p, m, v, neg_step, inv_bc2_sqrt)


def _masked_adam_step(
    p: Any,
    g: Any,
    m: Any,
    v: Any,
    neg_step: Any,
    inv_bc2_sqrt: Any,
    lerp_w: Any,
    beta2: Any,
    one_minus_beta2: Any,
) -> None:
    """:func:`_adam_step` where only some models step: per-model coefficients.

    A model that sits the step out has ``lerp_w = 0``, ``beta2 = 1``,
    ``one_minus_beta2 = 0`` and ``neg_step = 0``: its ``m``, ``v`` and ``p`` are left
    exactly as they were. A model that steps gets the same float32 arithmetic as in
    :func:`_adam_step` (``lerp`` with a weight, ``v * b2 + ((1 - b2) g) g``).
    """
    m.lerp_(g, lerp_w)
    v.mul_(beta2).addcmul_(g.mul(one_minus_beta2), g)
    _apply_moments(p, m, v, neg_step, inv_bc2_sqrt)


def _apply_moments(p: Any, m: Any, v: Any, neg_step: Any, inv_bc2_sqrt: Any) -> None:
    """``p <- p + neg_step * m / (sqrt(v) * inv_bc2_sqrt + eps)``, in place: the update
    both eager steps end with, once their moments are updated."""
    import torch

    denom = v.sqrt().mul_(inv_bc2_sqrt).add_(_EPS)
    torch.div(m, denom, out=denom)
    p.addcmul_(denom, neg_step)


def _adam_math(
    p: Any,
    g: Any,
    m: Any,
    v: Any,
    neg_step: Any,
    inv_bc2_sqrt: Any,
    lerp_w: Any,
    beta2: Any,
    one_minus_beta2: Any,
) -> None:
    # the masked step as one expression graph, for torch.compile to fuse
    m.copy_(m + lerp_w * (g - m))
    v.copy_(v * beta2 + one_minus_beta2 * g * g)
    p.copy_(p + neg_step * (m / (v.sqrt() * inv_bc2_sqrt + _EPS)))


@functools.lru_cache(maxsize=1)
def _fused_adam() -> Any:
    """The masked Adam step compiled into one kernel per tensor (CUDA)."""
    import torch

    return torch.compile(_adam_math, dynamic=False, fullgraph=True)


@contextlib.contextmanager
def _matmul_precision(precision: str, device: Any) -> Iterator[Any]:
    """Matrix-product arithmetic for the block; yields the autocast context factory."""
    import torch

    if precision not in MATMUL_PRECISIONS:
        raise ValueError(f"matmul_precision must be one of {MATMUL_PRECISIONS}, got {precision!r}")
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    try:
        if precision == "bfloat16" and device.type == "cuda":
            yield functools.partial(torch.autocast, device_type=device.type, dtype=torch.bfloat16)
        else:
            yield contextlib.nullcontext
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def _epoch_orders(
    rows: list[np.ndarray], generators: list[Any], n_k: np.ndarray, length: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each model's minibatch order for one epoch: ``(K, length)`` indices and validity.

    Model ``k`` takes a fresh permutation of its rows from its own generator (padding
    past its last row is invalid).
    """
    import torch

    K = len(rows)
    idx = np.zeros((K, length), dtype=np.int64)
    valid = np.zeros((K, length), dtype=bool)

    def draw(k: int) -> None:
        perm = torch.randperm(int(n_k[k]), generator=generators[k]).numpy()
        idx[k, : n_k[k]] = rows[k][perm]
        valid[k, : n_k[k]] = True

    thread_map(draw, K)
    return idx, valid


def _adam_schedule(
    step: np.ndarray, active: np.ndarray, lr: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per-step, per-model Adam coefficients of one epoch; ``step`` advances in place.

    Returns ``coef`` of shape ``(S, 5, K)`` (float32): ``-lr / bc1`` (0 for a model
    that sits the step out), ``1 / sqrt(bc2)``, the ``lerp`` weight ``1 - b1`` (or 0),
    ``b2`` (or 1) and ``1 - b2`` (or 0); and ``all_active`` of shape ``(S,)``.
    """
    K, S = active.shape
    coef = np.empty((S, 5, K), dtype=np.float64)
    for t in range(S):  # a loop over the epoch's steps, not records
        act = active[:, t]
        step += act
        safe = np.maximum(step, 1.0)
        coef[t, 0] = np.where(act, -lr / (1.0 - _BETA1**safe), 0.0)
        coef[t, 1] = 1.0 / np.sqrt(1.0 - _BETA2**safe)
        coef[t, 2] = np.where(act, 1.0 - _BETA1, 0.0)
        coef[t, 3] = np.where(act, _BETA2, 1.0)
        coef[t, 4] = np.where(act, 1.0 - _BETA2, 0.0)
    return coef.astype(np.float32), np.asarray(active.all(axis=0))


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
    matmul_precision: str = "float32",
    fused_step: bool = False,
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

    ``matmul_precision`` (:data:`MATMUL_PRECISIONS`) sets the matrix products'
    arithmetic; ``fused_step`` compiles each Adam update into one kernel per tensor
    (``torch.compile``; CUDA only, the CPU steps eagerly): float32 like the eager step,
    but its rounding may differ in the last bit. Each epoch's minibatch orders and Adam
    coefficients go to the device once, so the host never waits for a step to finish.
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
    fused = _fused_adam() if fused_step and device.type == "cuda" else None

    with _matmul_precision(matmul_precision, device) as autocast:
        for epoch in range(epochs):
            idx, valid = _epoch_orders(rows, generators, n_k, n_steps * width)
            idx_t = torch.from_numpy(idx).to(device).view(K, n_steps, width)
            valid_t = torch.from_numpy(valid).to(device).view(K, n_steps, width)
            coef_np, all_active = _adam_schedule(step, active, lr)
            coef_t = torch.from_numpy(coef_np).to(device)
            epoch_loss = torch.zeros(K, dtype=torch.float32, device=device)
            for t in range(n_steps):
                ib = idx_t[:, t]
                xb = X_t[model_index, ib] if own_pools else X_t[ib]
                yb = y_t[model_index, ib] if own_pools else y_t[ib]
                with autocast():
                    logits = _forward_stacked(params, xb, activation)
                n_classes = logits.shape[-1]
                ce = F.cross_entropy(
                    logits.float().reshape(-1, n_classes), yb.reshape(-1), reduction="none"
                ).view(K, width)
                # padding entries (past a model's last record) count as exact zeros
                summed = torch.where(valid_t[:, t], ce, 0.0).sum(dim=1)
                per_model = summed / counts_t[:, t]
                grads = torch.autograd.grad(per_model.sum(), params)
                coef = coef_t[t]
                with torch.no_grad():
                    epoch_loss += summed.detach()
                    for p, g, m, v, shape in zip(params, grads, exp_avg, exp_avg_sq, shapes):
                        if weight_decay:
                            g = g.add(p, alpha=weight_decay)
                        per_model_coef = [c.view(shape) for c in coef]
                        if fused is not None:
                            fused(p, g, m, v, *per_model_coef)
                        elif all_active[t]:
                            _adam_step(p, g, m, v, *per_model_coef[:2])
                        else:
                            # the last steps of an epoch: the models without a
                            # minibatch keep their weights and Adam state exactly
                            _masked_adam_step(p, g, m, v, *per_model_coef)
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
