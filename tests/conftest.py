"""Test setup: offline data home, and no network for any test."""

from __future__ import annotations

import os

# One BLAS/OpenMP thread per process: joblib workers and the test process share 2 cores
# in CI, and oversubscribed BLAS threads spin-wait (seen: a 1 s MLP fit taking 99 s).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import socket
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if SHARED_DATA.is_dir():
    os.environ.setdefault("TABMIA_DATA", str(SHARED_DATA))


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    """Keep BLAS at one thread even where numpy was imported before this file."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """Fail any test that opens a non-loopback connection."""
    real_connect = socket.socket.connect

    def guarded(self, address, *args, **kwargs):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (
            host.startswith("127.") or host in ("localhost", "::1") or host.startswith("/")
        ):
            raise RuntimeError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture(autouse=True, scope="session")
def _results_json_follow_their_schema():
    """Every results.json a test writes is checked against its published JSON Schema
    (tabmia.schema): a field the schema requires and the writer drops fails that test."""
    import json

    import tabmia.schema

    write = tabmia.schema.write_results

    def checked(path, payload):
        written = write(path, payload)
        tabmia.schema.validate_results(json.loads(Path(path).read_text()))
        return written

    tabmia.schema.write_results = checked
    yield
    tabmia.schema.write_results = write


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data, or skip when this checkout has none beside it."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def write_audit_files():
    """Writer of a breast-cancer forest audit into a folder (label column "diagnosis")."""
    return _write_audit_files


def _write_audit_files(folder: Path) -> tuple:
    """``model.joblib``, ``train.csv`` (300 records drawn at random) and ``pop.csv`` (the
    other 269, never trained on) in ``folder``; returns the ``(train, pop)`` frames.

    A random split, as an honest audit's: the data set's own order is not random (its
    first 300 rows hold 49% malignant tumours, the rest 25%), which the audit's label
    check rightly flags."""
    import joblib
    import numpy as np
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    df = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "diagnosis"})
    df = df.iloc[np.random.RandomState(0).permutation(len(df))].reset_index(drop=True)
    train, pop = df.iloc[:300], df.iloc[300:]
    model = RandomForestClassifier(n_estimators=10, random_state=0)
    joblib.dump(model.fit(train.drop(columns="diagnosis"), train["diagnosis"]),
                folder / "model.joblib")
    train.to_csv(folder / "train.csv", index=False)
    pop.to_csv(folder / "pop.csv", index=False)
    return train, pop
