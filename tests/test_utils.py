"""The small shared helpers: softmax, (n, 1) labels, categorical dtypes, seeding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tabmia._array import is_categorical_dtype, log_softmax, ravel_column, softmax
from tabmia._seeding import derived_seed, seed_estimator, seed_from


def test_softmax_and_log_softmax_are_stable_and_consistent():
    z = np.array([[1000.0, 1000.0, -1000.0], [0.0, np.log(3.0), 0.0]], dtype=np.float32)
    p = softmax(z)
    assert p.dtype == np.float64
    np.testing.assert_allclose(p, [[0.5, 0.5, 0.0], [0.2, 0.6, 0.2]], atol=1e-12)
    np.testing.assert_allclose(np.exp(log_softmax(z)), p, atol=1e-12)
    assert log_softmax(z)[0, 2] == pytest.approx(-2000.0 - np.log(2.0))
    z64 = z.astype(np.float64)
    softmax(z64)
    np.testing.assert_array_equal(z64, z.astype(np.float64))  # input left alone


def test_ravel_column_flattens_only_a_single_column():
    assert ravel_column([[1], [2], [3]]).shape == (3,)
    assert ravel_column(pd.DataFrame({"y": [1, 2]})).tolist() == [1, 2]
    assert ravel_column([1, 2]).shape == (2,)
    assert ravel_column(np.zeros((3, 2))).shape == (3, 2)


def test_is_categorical_dtype():
    frame = pd.DataFrame({
        "cat": pd.Categorical(["a", "b"]),
        "obj": np.array(["a", "b"], dtype=object),
        "str": pd.array(["a", "b"], dtype="string"),
        "int": [1, 2],
        "float": [1.0, 2.0],
        "bool": [True, False],
    })
    assert [c for c in frame if is_categorical_dtype(frame[c].dtype)] == ["cat", "obj", "str"]


def test_seed_from_and_derived_seed():
    assert seed_from(7) == 7
    assert seed_from(np.random.RandomState(0)) == seed_from(np.random.RandomState(0))
    assert seed_from(np.random.default_rng(1)) == seed_from(np.random.default_rng(1))
    assert 0 <= seed_from(None) < 2**31
    assert derived_seed(7) == derived_seed(7) != 7
    with pytest.raises(ValueError, match="random_state must be >= 0"):
        seed_from(-1)


def test_seed_estimator_sets_nested_seeds():
    pipe = make_pipeline(StandardScaler(), LogisticRegression(random_state=1))
    seed_estimator(pipe, 5)
    assert pipe.get_params()["logisticregression__random_state"] == 5
    seed_estimator(object(), 5)  # nothing to seed: left alone


def test_seed_estimator_seeds_catboost_only_when_asked():
    catboost = pytest.importorskip("catboost")
    model = catboost.CatBoostClassifier(iterations=3, verbose=0)
    seed_estimator(model, 3, catboost_seed=False)
    assert "random_seed" not in model.get_params()
    seed_estimator(model, 3)
    assert model.get_params()["random_seed"] == 3
