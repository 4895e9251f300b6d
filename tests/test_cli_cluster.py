"""``tabmia audit --cluster``: one time limit for the connection, refusals before it.

An address that accepts the TCP connection and never answers (a half-open tunnel,
another service on the port) fails within ``CONNECT_TIMEOUT_S``; a port where nothing
listens fails at once; ``--cluster`` with attacks that train no models is refused before
any connection. Every failure is one ``tabmia: error:`` line and exit status 2. The
listeners are local (127.0.0.1): no test leaves this machine.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import types

import pytest

import tabmia.cli._cluster as cluster
from tabmia.cli import main

#: The time limit these tests set (seconds), and the slack allowed above it for the rest
#: of the run (the built-in game's data and attacks, before the connection).
LIMIT = 1.0
SLACK = 4.0


@pytest.fixture
def silent_listener():
    """``tcp://127.0.0.1:PORT`` of a listener that accepts connections and never answers;
    yields ``(address, accepted)``, the connections it accepted so far."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed at the end of the test
                return
            accepted.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}", accepted
    server.close()
    for conn in accepted:  # a client still waiting for its handshake gives up
        conn.close()


@pytest.fixture
def refused_address():
    """``tcp://127.0.0.1:PORT`` of a port that was just freed: nothing listens there."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"tcp://127.0.0.1:{port}"


class _HandshakeNeverComes:
    """A stand-in for ``distributed.Client`` that connects and waits for the scheduler's
    first message, as the real one does (without distributed installed)."""

    def __init__(self, address: str, timeout: float) -> None:
        host, port = address.rsplit("//", 1)[-1].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.recv(1)  # returns only when the listener closes the connection

    def close(self) -> None:
        self.sock.close()


def _audit(address: str, tmp_path, *extra: str) -> list[str]:
    return ["audit", "--cluster", address, "--out", str(tmp_path / "o"), "--quiet", *extra]


def _lira(address: str, tmp_path) -> list[str]:
    return _audit(address, tmp_path, "--attacks", "lira", "--n-shadow", "4")


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tabmia: error: --cluster "), err
    return err[0]


def test_an_address_that_never_answers_fails_within_the_limit(
    silent_listener, tmp_path, capsys, monkeypatch
):
    """The client is stuck in its handshake: the audit gives up at the limit."""
    address, accepted = silent_listener
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", LIMIT)
    monkeypatch.setitem(
        sys.modules, "distributed", types.SimpleNamespace(Client=_HandshakeNeverComes)
    )
    t0 = time.perf_counter()
    code = main(_lira(address, tmp_path))
    elapsed = time.perf_counter() - t0
    line = _one_error_line(capsys)
    assert code == 2 and f"did not answer within {LIMIT:g} s" in line
    assert LIMIT <= elapsed < LIMIT + SLACK
    assert len(accepted) == 2  # the probe's connection, then the client's
    assert not (tmp_path / "o").exists()


def test_a_dask_client_stuck_in_its_handshake_is_given_up(
    silent_listener, tmp_path, capsys, monkeypatch
):
    """distributed's Client waits for the scheduler's handshake past its own timeout;
    the limit holds all the same, and the waiting client keeps nothing from exiting."""
    pytest.importorskip("distributed")
    address, _ = silent_listener
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", LIMIT)
    t0 = time.perf_counter()
    code = main(_lira(address, tmp_path))
    elapsed = time.perf_counter() - t0
    line = _one_error_line(capsys)
    assert code == 2 and "the Dask scheduler did not answer within" in line
    assert LIMIT <= elapsed < LIMIT + SLACK
    waiting = [t for t in threading.enumerate() if t.name == "tabmia-cluster-connect"]
    assert waiting and all(t.daemon for t in waiting)


def test_a_refused_port_fails_at_once(refused_address, tmp_path, capsys):
    """Nothing listens there: refused by the probe, not after the client's retries."""
    t0 = time.perf_counter()
    code = main(_lira(refused_address, tmp_path))
    elapsed = time.perf_counter() - t0
    line = _one_error_line(capsys)
    assert code == 2 and "(connection refused)" in line
    assert elapsed < SLACK < cluster.CONNECT_TIMEOUT_S
    t0 = time.perf_counter()
    with (
        pytest.raises(cluster.UsageError, match="connection refused"),
        cluster.cluster_backend(refused_address),
    ):
        pass
    assert time.perf_counter() - t0 < 1.0  # the connection attempt alone


@pytest.mark.parametrize("attacks", ["loss", "gap", "loss,entropy"])
def test_cluster_with_attacks_that_train_no_models_is_refused_before_connecting(
    attacks, silent_listener, tmp_path, capsys
):
    """The attacks are known before the cluster is joined: no connection is made."""
    address, accepted = silent_listener
    code = main(_audit(address, tmp_path, "--attacks", attacks))
    line = _one_error_line(capsys)
    assert code == 2 and "--cluster sets where shadow / reference models train" in line
    assert f"none of the attacks ({attacks.replace(',', ', ')})" in line
    time.sleep(0.1)  # a connection would have been accepted by now
    assert accepted == []


def test_a_malformed_address_is_refused_before_anything_runs(tmp_path, capsys):
    """Refused before the data set is looked for (it does not exist here)."""
    assert main(_audit("nohost", tmp_path, "--dataset", "no_such_data")) == 2
    assert "give a Dask scheduler address" in _one_error_line(capsys)


def test_the_report_says_where_the_models_trained(tmp_path):
    """Here: "this machine"; an audit that trains no model says nothing of it. (On a
    cluster: tests/test_scale.py::test_cli_audit_on_a_dask_scheduler_scores_like_here.)"""
    base = ["audit", "--quiet", "--fpr", "0.05", "--n-shadow", "4"]
    assert main([*base, "--attacks", "lira", "--out", str(tmp_path / "lira")]) == 0
    context = json.loads((tmp_path / "lira" / "results.json").read_text())["context"]
    assert context["models trained on"] == "this machine"
    header = (tmp_path / "lira" / "results.md").read_text().splitlines()[0]
    assert "models trained on: this machine" in header
    assert "models trained on" in (tmp_path / "lira" / "report.html").read_text()
    assert main(["audit", "--quiet", "--attacks", "loss", "--out", str(tmp_path / "loss")]) == 0
    context = json.loads((tmp_path / "loss" / "results.json").read_text())["context"]
    assert "models trained on" not in context
