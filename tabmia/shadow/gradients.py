"""Per-record norm of the loss gradient with respect to a torch model's parameters.

Watson et al.'s gradient-norm score; the computation is
:func:`tabmia._torch.module_gradient_norms` (the target adapter takes it too). torch is
imported inside the functions that need it: importing this module is cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabmia._torch import as_float32, module_gradient_norms
from tabmia.shadow.torch_mlp import TorchMLPClassifier

__all__ = ["gradient_norms"]


def gradient_norms(model: Any, X: Any, y_idx: Any, *, batch_size: int | None = None) -> np.ndarray:
    """Per-record norm of the gradient of the loss with respect to all parameters.

    ``||d/dtheta CE(f_theta(x_i), y_i)||_2`` for every record: Watson et al.'s
    gradient-norm score (a member tends to have a small gradient). For an MLP the norms
    come from one forward and backward pass; other ``nn.Module`` objects use
    ``torch.func.vmap`` over ``torch.func.grad`` (:func:`~tabmia._torch.module_gradient_norms`).

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
        return model.gradient_norms(X, y_idx, batch_size=batch_size)
    return module_gradient_norms(model, as_float32(X), y_idx, batch_size=batch_size)
