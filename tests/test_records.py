"""Record hashing: one routine (tabmia._records) behind pool keys, quantile folds and cache keys."""

import numpy as np
import pandas as pd
import scipy.sparse as sp

from tabmia._records import fold_hashes, record_hashes, row_hashes
from tabmia.shadow.pool import record_keys


def _frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "cat": pd.Categorical(rng.choice(list("abc"), n)),
        "i": rng.integers(0, 3, n),
        "f": rng.integers(0, 2, n) / 2.0,
    })
    return df, rng.integers(0, 2, n)


def test_equal_records_hash_equal_and_labels_count():
    df, y = _frame()
    twice = pd.concat([df, df], ignore_index=True)
    for h in (fold_hashes(twice, np.r_[y, y]), record_keys(twice, np.r_[y, y])):
        assert np.array_equal(h[: len(df)], h[len(df):])
    flipped = fold_hashes(df, 1 - y)
    assert not np.any(flipped == fold_hashes(df, y))
    assert np.array_equal(record_keys(df, y), record_hashes(df, y.astype(np.int64)))


def test_fold_hashes_spread_records_over_folds():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3))
    counts = np.bincount((fold_hashes(X, np.zeros(3000)) % np.uint64(4)).astype(int), minlength=4)
    assert counts.min() > 600  # 750 expected per fold


def test_sparse_hashes_ignore_storage_and_leave_the_input_alone():
    dense = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0], [0.0, 1.5, 0.0]])
    # row 2 stored with an explicit zero and its entry split in two duplicates
    messy = sp.csr_matrix(
        (np.array([1.5, 2.0, 0.0, 1.0, 0.5]), np.array([1, 0, 0, 1, 1]), np.array([0, 1, 2, 5])),
        shape=(3, 3),
    )
    before = (messy.data.copy(), messy.indices.copy())
    h = row_hashes(messy)
    assert h[0] == h[2] and h[0] != h[1]
    assert np.array_equal(h, row_hashes(sp.csc_matrix(dense)))
    assert np.array_equal(messy.data, before[0]) and np.array_equal(messy.indices, before[1])
    assert np.array_equal(fold_hashes(messy, [0, 0, 0]), fold_hashes(sp.csr_matrix(dense), [0, 0, 0]))


def test_hashes_reused_computes_each_labelled_table_once(monkeypatch):
    import tabmia._records as records

    calls = []
    real = records.row_hashes
    monkeypatch.setattr(records, "row_hashes", lambda X: calls.append(1) or real(X))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = rng.integers(0, 2, 50)
    plain = records.record_hashes(X, y)
    with records.hashes_reused():
        first = records.record_hashes(X, y)
        again = records.record_hashes(X, y.copy())  # equal labels, another array
        assert np.array_equal(first, plain) and np.array_equal(again, plain)
        again[:] = 0  # callers get copies: the memo keeps its own
        other = records.record_hashes(X, 1 - y)
        assert np.array_equal(records.record_hashes(X, y), plain)
    assert not np.array_equal(other, plain)
    assert len(calls) == 1 + 2  # outside the block, then once per labelling inside
    records.record_hashes(X, y)  # the memo ended with the block
    assert len(calls) == 4


def test_decision_function_hashes_the_candidates_once(monkeypatch):
    from sklearn.ensemble import HistGradientBoostingClassifier

    import tabmia._records as records
    from tabmia.attacks import LiRAAttack

    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
    target = HistGradientBoostingClassifier(max_iter=10).fit(X[:200], y[:200])
    attack = LiRAAttack(
        target, shadow_estimator=HistGradientBoostingClassifier(max_iter=10), n_shadow=4,
        random_state=0,
    ).fit(X[200:400], y[200:400])
    seen = []
    real = records.row_hashes
    monkeypatch.setattr(records, "row_hashes", lambda X: seen.append(len(X)) or real(X))
    attack.decision_function(X[400:], y[400:])
    # the pool look-up and the duplicate-of-public check share one pass over the candidates
    assert seen == [200]
