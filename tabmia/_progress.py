"""What progress bars say: a label set by the caller around a unit of work.

The command line runs several attacks over several seeds; each trains its own shadow
models. The label (e.g. ``"seed 0: lira"``) lets their bars say whose models they
count without every attack passing it down.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["progress_label", "progress_desc"]

_LABEL: contextvars.ContextVar[str | None] = contextvars.ContextVar("tabmia_progress", default=None)


@contextmanager
def progress_label(label: str) -> Iterator[None]:
    """Prefix the progress bars started inside the block with ``label``."""
    token = _LABEL.set(label)
    try:
        yield
    finally:
        _LABEL.reset(token)


def progress_desc(what: str) -> str:
    """``"<label> <what>"`` inside :func:`progress_label`, else ``what``."""
    label = _LABEL.get()
    return f"{label} {what}" if label else what
