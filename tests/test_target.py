"""The target adapter: every kind of model, fixed class order, clear errors."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from tabmia.target import PrecomputedProbabilities, TargetModel, as_target


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3,
                               random_state=0)
    return X, np.array(["a", "b", "c"])[y]


def test_sklearn_model_class_order_and_query_count(data):
    X, y = data
    model = LogisticRegression(max_iter=500).fit(X, y)
    t = TargetModel(model, batch_size=64)
    p = t.predict_proba(X)
    assert p.shape == (300, 3) and np.allclose(p, model.predict_proba(X))
    assert list(t.classes_) == ["a", "b", "c"]
    assert t.n_queries_ == 300
    assert np.array_equal(t.encode_labels(["c", "a"]), [2, 0])


def test_unseen_labels_wrong_columns_and_no_predict_proba(data):
    X, y = data
    t = TargetModel(LogisticRegression(max_iter=500).fit(X, y))
    with pytest.raises(ValueError, match="labels the target never saw: \\['z'\\]"):
        t.encode_labels(["a", "z"])
    with pytest.raises(ValueError, match="X has 5 columns but the target was trained on 6"):
        t.predict_proba(X[:, :5])
    with pytest.raises(TypeError, match="no predict_proba"):
        TargetModel(object())
    with pytest.raises(ValueError, match="no classes_"):
        TargetModel(LogisticRegression())  # unfitted


def test_outputs_that_are_not_probabilities_are_refused(data):
    X, _ = data
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        TargetModel(lambda Z: np.full((len(Z), 2), 3.0), classes=[0, 1]).predict_proba(X)
    with pytest.raises(ValueError, match="do not sum to 1"):
        TargetModel(lambda Z: np.full((len(Z), 2), 0.2), classes=[0, 1]).predict_proba(X)
    with pytest.raises(ValueError, match="shape"):
        TargetModel(lambda Z: np.full((len(Z), 3), 1 / 3), classes=[0, 1]).predict_proba(X)
    with pytest.raises(ValueError, match="NaN"):
        TargetModel(lambda Z: np.full((len(Z), 2), np.nan), classes=[0, 1]).predict_proba(X)


def test_callable_binary_column_and_precomputed(data):
    X, _ = data
    t = TargetModel(lambda Z: np.full(len(Z), 0.25), classes=[0, 1])
    assert np.allclose(t.predict_proba(X[:4]), [[0.75, 0.25]] * 4)
    proba = np.random.default_rng(0).dirichlet(np.ones(3), size=300)
    pre = TargetModel(PrecomputedProbabilities(X, proba))
    idx = np.array([5, 0, 299])
    assert np.allclose(pre.predict_proba(X[idx]), proba[idx])
    with pytest.raises(ValueError, match="not among the records"):
        pre.predict_proba(X[:2] + 1e-3)


def test_dataframe_pipeline_and_boosters():
    from catboost import CatBoostClassifier
    from lightgbm import LGBMClassifier
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from xgboost import XGBClassifier

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200),
                       "c": pd.Categorical(rng.choice(["u", "v", "w"], 200))})
    y = (df["x"] > 0).astype(int).to_numpy()
    pipe = make_pipeline(
        ColumnTransformer([("c", OneHotEncoder(), ["c"]), ("x", StandardScaler(), ["x"])]),
        LogisticRegression(),
    ).fit(df, y)
    t = as_target(pipe)
    assert t.predict_proba(df).shape == (200, 2)
    with pytest.raises(ValueError, match="missing columns"):
        t.predict_proba(df[["x"]])
    Xn = df[["x"]].to_numpy()
    for model in (XGBClassifier(n_estimators=5), LGBMClassifier(n_estimators=5, verbose=-1),
                  CatBoostClassifier(iterations=5, verbose=0, allow_writing_files=False)):
        p = as_target(model.fit(Xn, y)).predict_proba(Xn)
        assert p.shape == (200, 2) and np.allclose(p.sum(1), 1)


def test_torch_module_logits():
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(4, 3))
    t = TargetModel(net, classes=[0, 1, 2], device="cpu", batch_size=7)
    X = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    logits = t.predict_logits(X)
    ref = net(torch.as_tensor(X)).detach().numpy()
    assert np.allclose(logits, ref, atol=1e-6) and t.has_logits
    assert np.allclose(t.predict_proba(X).sum(1), 1)
    with pytest.raises(ValueError, match="classes is required"):
        TargetModel(net)


def test_unpickled_catboost_is_still_a_usable_target():
    """CatBoost restores n_features_in_ = 0 after pickling (joblib workers, the shadow
    cache); the adapter must not read that as "trained on 0 columns"."""
    import pickle

    from catboost import CatBoostClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    model = CatBoostClassifier(iterations=5, verbose=0, allow_writing_files=False).fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    p = as_target(restored).predict_proba(X)
    assert p.shape == (100, 2) and np.allclose(p, model.predict_proba(X))
