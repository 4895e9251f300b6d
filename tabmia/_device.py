"""One device vocabulary for every part of tabmia that can use a GPU.

``device`` is ``"auto"`` (a GPU when the library sees one, the CPU otherwise),
``"cpu"``, ``"cuda"`` or ``"cuda:N"``. :func:`resolve_device_name` is the one place that
resolves it; :func:`resolve_device` turns the result into a ``torch.device``. How each
library sees a GPU and which of its parameters take the device is in
:mod:`tabmia.backends`. Asking for CUDA where the library sees none warns and falls back
to the CPU.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["resolve_device_name", "resolve_device", "cuda_available"]

_CUDA = re.compile(r"cuda(?::(\d+))?")


def _device_error(device: Any) -> ValueError:
    return ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def resolve_device_name(
    device: Any,
    *,
    n_gpus: Callable[[], int],
    library: str = "torch",
    check_index: bool = True,
    stacklevel: int = 2,
) -> str:
    """Resolve ``device`` to ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` for one library.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"}, torch.device or None
        The requested device; None means ``"auto"``.
    n_gpus : callable returning int
        How many CUDA devices ``library`` can use; called only when needed, so asking
        for the CPU never probes a driver.
    library : str, default="torch"
        Named in the warning.
    check_index : bool, default=True
        Refuse ``"cuda:N"`` when ``N`` is not below ``n_gpus()``.
    stacklevel : int, default=2
        Of the fallback warning, as in :func:`warnings.warn`.

    Returns
    -------
    str
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Raises
    ------
    ValueError
        If ``device`` is outside the vocabulary, or names a GPU index that does not
        exist.
    """
    if device is not None and type(device).__module__ == "torch" and hasattr(device, "type"):
        device = str(device)
    if device is None or (isinstance(device, str) and device == "auto"):
        return "cuda" if n_gpus() > 0 else "cpu"
    if not isinstance(device, str):
        raise _device_error(device)
    if device == "cpu":
        return "cpu"
    match = _CUDA.fullmatch(device)
    if match is None:
        raise _device_error(device)
    count = n_gpus()
    if count <= 0:
        warnings.warn(
            f"device={device!r} requested but CUDA is not available to {library}; using the CPU",
            RuntimeWarning,
            stacklevel=stacklevel + 1,
        )
        return "cpu"
    if check_index and match.group(1) is not None and int(match.group(1)) >= count:
        raise ValueError(
            f"device={device!r} but {library} sees {count} CUDA device(s), "
            f"numbered 0 to {count - 1}"
        )
    return device


def _torch_gpus() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def cuda_available() -> bool:
    """Whether torch is importable and sees a CUDA device."""
    return _torch_gpus() > 0


def resolve_device(device: Any = "auto", *, check_index: bool = True) -> Any:
    """``device`` (see :func:`resolve_device_name`) as a ``torch.device``.

    ``"auto"`` picks CUDA when torch sees it and the CPU otherwise; CUDA where there
    is none warns and falls back to the CPU.
    """
    import torch

    name = resolve_device_name(
        device, n_gpus=_torch_gpus, library="torch", check_index=check_index, stacklevel=3
    )
    return torch.device(name)
