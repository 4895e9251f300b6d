"""``tabmia audit --cluster``: train and score the shadow / reference models on a cluster.

The shadow engine runs its models through joblib (:mod:`tabmia.shadow.population`,
:mod:`tabmia.shadow._scoring`), so a cluster is a joblib back end for the duration of
the audit: a Dask scheduler (``tcp://host:8786``) through ``distributed.Client``, or
Ray (``ray`` for the local or ``RAY_ADDRESS`` instance, ``ray://host:10001`` for a
remote one) through ``ray.util.joblib``. Scores are the same as on this machine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from tabmia.cli._inputs import UsageError, first_line

__all__ = ["cluster_backend"]

#: Seconds to wait for a Dask scheduler before the address is reported unreachable.
_CONNECT_TIMEOUT_S = 30


@contextlib.contextmanager
def cluster_backend(address: str | None) -> Iterator[None]:
    """joblib's back end set to the cluster at ``address`` for the block (None: nothing)."""
    if address is None:
        yield
        return
    import joblib

    if address == "ray" or address.startswith("ray://"):
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError as exc:
            raise UsageError(
                f'--cluster {address} needs ray (pip install "tabmia[cluster]")'
            ) from exc
        try:
            ray.init(
                address=None if address == "ray" else address,
                log_to_driver=False,
                ignore_reinit_error=True,
            )
        except Exception as exc:  # whatever ray raises on a bad address
            raise UsageError(f"--cluster {address}: cannot connect: {first_line(exc)}") from exc
        register_ray()
        try:
            with joblib.parallel_config(backend="ray"):
                yield
        finally:
            ray.shutdown()
        return
    if "://" not in address and ":" not in address:
        raise UsageError(
            f"--cluster {address!r}: give a Dask scheduler address "
            "(tcp://host:8786), 'ray' or ray://host:port"
        )
    try:
        from distributed import Client
    except ImportError as exc:
        raise UsageError(
            f'--cluster {address} needs dask.distributed (pip install "tabmia[cluster]")'
        ) from exc
    try:
        client = Client(address, timeout=_CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(
            f"--cluster {address}: cannot reach the Dask scheduler: {first_line(exc)}"
        ) from exc
    with client, joblib.parallel_config(backend="dask"):
        yield
