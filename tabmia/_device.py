"""Device resolution for estimators that run torch (skorch's convention)."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["resolve_device", "cuda_available"]


def cuda_available() -> bool:
    """Whether torch is importable and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(device: Any = "auto") -> Any:
    """Turn ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a torch.device into a torch.device.

    ``"auto"`` picks CUDA when present and the CPU otherwise. Asking for CUDA where
    there is none warns and falls back to the CPU.
    """
    import torch

    if isinstance(device, torch.device):
        requested = device
    elif device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    elif isinstance(device, str):
        try:
            requested = torch.device(device)
        except RuntimeError as exc:
            raise ValueError(
                f"device must be 'auto', 'cpu' or 'cuda[:N]', got {device!r}"
            ) from exc
    else:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {device!r}")
    if requested.type == "cuda" and not torch.cuda.is_available():
        warnings.warn(
            f"device={str(requested)!r} requested but CUDA is not available; using the CPU",
            RuntimeWarning,
            stacklevel=2,
        )
        return torch.device("cpu")
    return requested
