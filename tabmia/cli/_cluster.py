"""``tabmia audit --cluster``: train and score the shadow / reference models on a cluster.

The shadow engine runs its models through joblib (:mod:`tabmia.shadow.population`,
:mod:`tabmia.shadow._scoring`), so a cluster is a joblib back end for the duration of
the audit: a Dask scheduler (``tcp://host:8786``) through ``distributed.Client``, or
Ray (``ray`` for the local or ``RAY_ADDRESS`` instance, ``ray://host:10001`` for a
remote one) through ``ray.util.joblib``. Scores are the same as on this machine.

Connecting has one time limit, :data:`CONNECT_TIMEOUT_S`, for the whole of it: the TCP
connection and the client's handshake. The address's port is probed first, so a port
where nothing listens fails at once; an address that accepts the connection and never
answers (a half-open tunnel, another service on the port) fails when the limit is
spent. ``distributed.Client`` waits for the scheduler's handshake without a limit of its
own (its ``timeout`` covers the TCP connection, which such an address accepts), so the
client is made on a daemon thread that is given up on at the limit: it never keeps the
process from exiting, and a client that connects after all is closed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

from tabmia.cli._inputs import UsageError, first_line

__all__ = ["CONNECT_TIMEOUT_S", "check_cluster_address", "cluster_backend"]

#: Seconds that connecting to ``--cluster``'s address may take in all (the TCP
#: connection and the client's handshake, Dask's or Ray's) before it is reported
#: unreachable. Starting a local Ray instance (``--cluster ray`` without
#: ``RAY_ADDRESS``) is no connection and has no limit.
CONNECT_TIMEOUT_S = 30.0

# the schemes whose address is a TCP host:port that can be probed (Dask's tcp / tls, and
# a Ray client's ray://); others (inproc, ucx) are left to the client
_TCP_SCHEMES = ("tcp", "tls", "ray")

T = TypeVar("T")


def check_cluster_address(address: str | None) -> None:
    """Refuse an address that is no cluster address, before anything is loaded.

    Raises
    ------
    UsageError
        When ``address`` is neither ``ray``, ``ray://host:port`` nor a Dask scheduler
        address (``tcp://host:8786``, ``host:8786``).
    """
    if address is None or address == "ray" or address.startswith("ray://"):
        return
    if "://" not in address and ":" not in address:
        raise UsageError(
            f"--cluster {address!r}: give a Dask scheduler address "
            "(tcp://host:8786), 'ray' or ray://host:port"
        )


@contextlib.contextmanager
def cluster_backend(address: str | None) -> Iterator[None]:
    """joblib's back end set to the cluster at ``address`` for the block (None: nothing).

    Raises
    ------
    UsageError
        When the address is malformed, its client library is not installed, or the
        cluster cannot be reached within :data:`CONNECT_TIMEOUT_S` seconds.
    """
    if address is None:
        yield
        return
    check_cluster_address(address)
    import joblib

    if address == "ray" or address.startswith("ray://"):
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError as exc:
            raise UsageError(
                f'--cluster {address} needs ray (pip install "tabmia[cluster]")'
            ) from exc
        target = os.environ.get("RAY_ADDRESS") if address == "ray" else address
        if target in (None, "", "auto", "local"):
            # a local instance is started (or found) here: nothing to time out
            _ray_init(ray, address, None)
        else:
            deadline = time.monotonic() + CONNECT_TIMEOUT_S
            _probe(address, target, deadline)
            _within(
                lambda: _ray_init(ray, address, None if address == "ray" else address),
                lambda _: ray.shutdown(),
                deadline,
                address,
                "Ray",
            )
        register_ray()
        try:
            with joblib.parallel_config(backend="ray"):
                yield
        finally:
            ray.shutdown()
        return
    try:
        from distributed import Client
    except ImportError as exc:
        raise UsageError(
            f'--cluster {address} needs dask.distributed (pip install "tabmia[cluster]")'
        ) from exc
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    _probe(address, address, deadline)
    client = _within(
        # distributed's own timeout covers its connection attempts; the handshake that
        # follows is bounded by _within alone
        lambda: Client(address, timeout=max(1.0, deadline - time.monotonic())),
        lambda late: late.close(),
        deadline,
        address,
        "the Dask scheduler",
    )
    with client, joblib.parallel_config(backend="dask"):
        yield


def _ray_init(ray: Any, address: str, target: str | None) -> None:
    try:
        ray.init(address=target, log_to_driver=False, ignore_reinit_error=True)
    except Exception as exc:  # whatever ray raises on a bad address
        raise UsageError(f"--cluster {address}: cannot connect: {first_line(exc)}") from exc


def _host_port(target: str) -> tuple[str, int] | None:
    """The TCP ``(host, port)`` of a cluster address, or None where it has none to probe."""
    url = urlsplit(target if "://" in target else f"tcp://{target}")
    if url.scheme not in _TCP_SCHEMES:
        return None
    try:
        port = url.port
    except ValueError:  # a port that is no number: the client names the error
        return None
    if url.hostname is None or port is None:
        return None
    return url.hostname, port


def _probe(address: str, target: str, deadline: float) -> None:
    """Open and close a TCP connection to ``target``'s host and port: a refused port (or
    an unknown host) fails at once instead of after the client's retries."""
    where = _host_port(target)
    if where is None:
        return
    host, port = where
    try:
        with socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic())):
            pass
    except ConnectionRefusedError as exc:
        raise UsageError(
            f"--cluster {address}: nothing listens on {host}:{port} (connection refused)"
        ) from exc
    except TimeoutError as exc:  # socket.timeout is TimeoutError
        raise UsageError(
            f"--cluster {address}: no answer from {host}:{port} within "
            f"{CONNECT_TIMEOUT_S:g} s (CONNECT_TIMEOUT_S)"
        ) from exc
    except OSError as exc:  # an unknown host, an unreachable network
        raise UsageError(
            f"--cluster {address}: cannot reach {host}:{port}: {first_line(exc)}"
        ) from exc


def _within(
    connect: Callable[[], T],
    close: Callable[[T], Any],
    deadline: float,
    address: str,
    what: str,
) -> T:
    """``connect()``, given up on at ``deadline`` (``time.monotonic()``).

    It runs on a daemon thread: one stuck in a handshake that never comes neither holds
    this call past the deadline nor keeps the process from exiting. What it connects
    after the deadline is closed by ``close``.
    """
    lock = threading.Lock()
    done: list[Any] = []  # [("ok", value)] or [("error", exception)]
    gave_up = threading.Event()

    def run() -> None:
        try:
            outcome: tuple[str, Any] = ("ok", connect())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome = ("error", exc)
        with lock:
            late = gave_up.is_set()
            if not late:
                done.append(outcome)
        if late and outcome[0] == "ok":
            with contextlib.suppress(Exception):  # nobody waits for it any more
                close(outcome[1])

    thread = threading.Thread(target=run, name="tabmia-cluster-connect", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        if not done:
            gave_up.set()
    if not done:
        raise UsageError(
            f"--cluster {address}: {what} did not answer within {CONNECT_TIMEOUT_S:g} s "
            "(CONNECT_TIMEOUT_S): the address accepts connections but no cluster "
            "answers there (another service on the port, a half-open tunnel?)"
        )
    kind, value = done[0]
    if kind == "ok":
        return value
    if isinstance(value, UsageError):
        raise value
    if isinstance(value, (OSError, TimeoutError, ValueError)):
        raise UsageError(
            f"--cluster {address}: cannot reach {what}: {first_line(value)}"
        ) from value
    raise value
