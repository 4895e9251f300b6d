"""Merlin and Morgan: signal on an overfit MLP, batching, noise model, ties, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from tabmia.attacks.loss import LossAttack
from tabmia.attacks.merlin import (
    DegenerateRatioWarning,
    MerlinAttack,
    MorganAttack,
    morgan_search,
)
from tabmia.metrics import auc, rates_at_threshold
from tabmia.perturb import TabularNoise
from tabmia.scores import logit_confidence
from tabmia.target import TargetModel


pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _mlp(seed: int) -> MLPClassifier:
    return MLPClassifier(
        (128,), learning_rate_init=0.01, max_iter=500, tol=1e-6, n_iter_no_change=1000,
        alpha=0.0, random_state=seed,
    )


def _mlp_game(seed: int, n_train: int = 600, n_public: int = 2000):
    """An MLP that memorises 600 records with 20% noisy labels (train acc ~1, test ~0.5)."""
    X, y = make_classification(
        2 * n_train + n_public, n_features=20, n_informative=10, n_classes=4,
        n_clusters_per_class=2, flip_y=0.2, random_state=seed,
    )
    X = (X - X.min(0)) / (X.max(0) - X.min(0))  # features in [0, 1], as in the paper
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        target = _mlp(seed).fit(X[:n_train], y[:n_train])
    pub = slice(n_train, n_train + n_public)
    out = slice(n_train + n_public, None)
    cand_X = np.r_[X[:n_train], X[out]]
    cand_y = np.r_[y[:n_train], y[out]]
    members = np.r_[np.ones(n_train, bool), np.zeros(len(y) - n_train - n_public, bool)]
    return target, (X[pub], y[pub]), (cand_X, cand_y, members)


@pytest.fixture(scope="module")
def mlp_games():
    return [_mlp_game(seed) for seed in range(4)]


def test_merlin_ratio_higher_for_members(mlp_games):
    for seed, (target, (Xp, yp), (Xc, yc, m)) in enumerate(mlp_games[:2]):
        attack = MerlinAttack(target, n_noise=50, sigma=0.05, random_state=seed).fit(Xp, yp)
        s = attack.decision_function(Xc, yc)
        assert s[m].mean() > s[~m].mean() + 0.05
        assert auc(m, s) > 0.62, auc(m, s)
        assert attack.tie_fraction_ < 0.01  # a neural network: noise always moves the loss


def test_morgan_ppv_exceeds_loss_attack_at_max_ppv(mlp_games):
    """Pooled over 4 seeds (2,400 members, 2,400 non-members, prior 1): the records
    Morgan flags at its max-PPV thresholds are members more often than those the
    loss attack flags at its own max-PPV threshold (both chosen on proxy models)."""
    tp = {"morgan": 0, "loss": 0}
    fp = {"morgan": 0, "loss": 0}
    for seed, (target, (Xp, yp), (Xc, yc, m)) in enumerate(mlp_games):
        morgan = MorganAttack(target, n_noise=50, sigma=0.05, random_state=seed).fit(Xp, yp)
        loss = LossAttack(target, threshold_goal="max_ppv", random_state=seed).fit(Xp, yp)
        for name, attack in (("morgan", morgan), ("loss", loss)):
            r = rates_at_threshold(m, attack.decision_function(Xc, yc), attack.threshold_)
            tp[name] += r["tp"]
            fp[name] += r["fp"]
    ppv = {k: tp[k] / max(1, tp[k] + fp[k]) for k in tp}
    assert tp["morgan"] >= 10, tp
    assert ppv["morgan"] > ppv["loss"] + 0.1, (tp, fp)
    assert ppv["morgan"] > 0.7, (tp, fp)


def test_morgan_predict_is_the_three_threshold_rule(mlp_games):
    target, (Xp, yp), (Xc, yc, m) = mlp_games[0]
    attack = MorganAttack(target, n_noise=20, sigma=0.05, random_state=0).fit(Xp, yp)
    loss, ratio = attack.loss_and_ratio(Xc, yc)
    rule = (attack.phi_L_ <= loss) & (loss <= attack.phi_U_) & (ratio >= attack.phi_M_)
    assert np.array_equal(attack.predict(Xc, yc), rule)
    assert attack.threshold_ == attack.phi_M_
    s = attack.decision_function(Xc, yc)
    inside = (attack.phi_L_ <= loss) & (loss <= attack.phi_U_)
    assert np.allclose(s[inside], ratio[inside]) and np.all(s[~inside] <= -1.0)
    assert 0 < attack.proxy_ppv_ <= 1 and attack.proxy_tpr_ > 0
    assert hasattr(attack.proxy_, "coefs_")  # a clone of the target's recipe, trained


def test_morgan_search_finds_the_planted_region():
    rng = np.random.default_rng(0)
    n = 2000
    loss_out = rng.uniform(0, 2, n)
    ratio_out = rng.integers(0, 11, n) / 10
    loss_in = rng.uniform(0, 2, n)
    ratio_in = rng.integers(0, 11, n) / 10
    # members in loss [0.5, 1.0] with ratio >= 0.8 are plentiful; non-members avoid it
    hot = rng.choice(n, 400, replace=False)
    loss_in[hot] = rng.uniform(0.55, 0.95, 400)
    ratio_in[hot] = rng.choice([0.8, 0.9, 1.0], 400)
    bad = (loss_out > 0.5) & (loss_out < 1.0) & (ratio_out >= 0.8)
    loss_out[bad] += 1.0
    found = morgan_search(loss_in, ratio_in, loss_out, ratio_out, n_thresholds=41)
    assert found["ppv"] == 1.0 and found["fpr"] == 0.0
    assert found["phi_M"] == pytest.approx(0.8)
    assert 0.45 <= found["phi_L"] <= 0.56 and 0.94 <= found["phi_U"] <= 1.05
    assert found["tpr"] >= 400 / n


def _reference_merlin(target, noise, X, y):
    """Algorithm 1, one record at a time, with the attack's T drawn perturbations."""
    T = noise.gauss_.shape[0]
    ratios = np.empty(len(y))
    for i in range(len(y)):
        copies = X[i] + noise.gauss_  # numeric features: x + sigma * N(0, I), T times
        batch = np.vstack([X[i : i + 1], copies])
        lc = logit_confidence(target.predict_proba(batch), np.full(T + 1, y[i]))
        loss = np.logaddexp(0.0, -lc)  # -log p_y, computed without rounding to 0
        ratios[i] = np.count_nonzero(loss[1:] > loss[0]) / T
    return ratios


def test_batched_equals_per_record_loop(mlp_games):
    target, (Xp, yp), (Xc, yc, _) = mlp_games[0]
    T = 12
    attack = MerlinAttack(target, n_noise=T, sigma=0.05, random_state=0).fit(Xp[:300], yp[:300])
    Xs, ys = Xc[:150], yc[:150]
    batched = attack.decision_function(Xs, ys)
    ref = _reference_merlin(target, attack.noise_, Xs, attack.target_.encode_labels(ys))
    assert np.array_equal(batched, ref)
    # noise per copy is N(0, sigma^2), independent across copies and features
    assert attack.noise_.gauss_.shape == (T, Xs.shape[1])
    assert attack.noise_.gauss_.std() == pytest.approx(0.05, rel=0.2)
    # the query batch size, the record's position and its neighbours change nothing
    small = clone(attack).set_params(max_batch_rows=1).fit(Xp[:300], yp[:300])
    assert np.array_equal(small.decision_function(Xs, ys), batched)
    perm = np.random.default_rng(0).permutation(len(ys))
    assert np.array_equal(attack.decision_function(Xs[perm], ys[perm]), batched[perm])
    assert attack.decision_function(Xs[7:8], ys[7:8])[0] == batched[7]


class _CountingModel:
    """A fitted classifier that records the size of every predict_proba call."""

    def __init__(self, model):
        self.model = model
        self.classes_ = model.classes_
        self.calls = []

    def predict_proba(self, X):
        self.calls.append(X.shape[0])
        return self.model.predict_proba(X)


def test_one_query_per_chunk():
    X, y = make_classification(700, n_features=8, random_state=0)
    counted = _CountingModel(LogisticRegression().fit(X[:200], y[:200]))
    attack = MerlinAttack(counted, n_noise=10, sigma=0.1, random_state=0).fit(X[200:500], y[200:500])
    assert counted.calls == [300 * 11]  # all public records and copies, one call
    counted.calls.clear()
    attack.decision_function(X[500:], y[500:])
    assert counted.calls == [200 * 11]
    counted.calls.clear()
    attack.set_params(max_batch_rows=150 * 11).decision_function(X[500:], y[500:])
    assert counted.calls == [150 * 11, 50 * 11]


def test_tree_target_ties_are_reported_and_handled():
    """A random forest is piecewise constant: noise of 1% of each feature's std rarely
    crosses a split, so most copies tie. fit warns; with the strict count
    ("loss increases", Algorithm 1) flat records get ratio 0; ties="half" makes them
    0.5; noise in units of each feature's std with a larger sigma moves the loss."""
    X, y = load_breast_cancer(return_X_y=True)
    target = RandomForestClassifier(n_estimators=50, random_state=0).fit(X[:250], y[:250])
    Xp, yp, Xc, yc = X[250:450], y[250:450], X[450:], y[450:]
    with pytest.warns(DegenerateRatioWarning, match="noise_scale='std'"):
        strict = MerlinAttack(target, n_noise=20, noise_scale="std", random_state=0).fit(Xp, yp)
    assert strict.tie_fraction_ > 0.5
    half = MerlinAttack(target, n_noise=20, noise_scale="std", ties="half", random_state=0)
    with pytest.warns(DegenerateRatioWarning):
        half.fit(Xp, yp)
    s_strict = strict.decision_function(Xc, yc)
    s_half = half.decision_function(Xc, yc)
    flat = s_strict == 0
    assert flat.mean() > 0.5
    _, ratio = half.loss_and_ratio(Xc, yc)
    assert np.array_equal(ratio, s_half)
    assert np.all(s_half >= s_strict) and np.median(s_half[flat]) >= 0.45
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateRatioWarning)
        scaled = MerlinAttack(target, n_noise=20, noise_scale="std", sigma=0.5, random_state=0)
        scaled.fit(Xp, yp)
    assert scaled.tie_fraction_ < 0.5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": -0.1}, "sigma"),
        ({"sigma": float("nan")}, "sigma"),
        ({"n_noise": 0}, "n_noise"),
        ({"noise_scale": "relative"}, "noise_scale"),
        ({"binary_flip": 1.5}, "binary_flip"),
        ({"categorical_flip": -0.1}, "categorical_flip"),
        ({"ties": "ignore"}, "ties"),
        ({"max_batch_rows": 0}, "max_batch_rows"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    X, y = make_classification(300, n_features=5, random_state=0)
    target = LogisticRegression().fit(X[:100], y[:100])
    for cls in (MerlinAttack, MorganAttack):
        with pytest.raises(ValueError, match=match):
            cls(target, **kwargs).fit(X[100:], y[100:])


def test_bad_records_raise():
    X, y = make_classification(300, n_features=5, random_state=0)
    target = LogisticRegression().fit(X[:100], y[:100])
    attack = MerlinAttack(target, n_noise=5, fpr=0.05, random_state=0).fit(X[100:], y[100:])
    with pytest.raises(ValueError, match="columns"):
        attack.decision_function(X[:10, :3], y[:10])
    with pytest.raises(ValueError, match="never saw"):
        attack.decision_function(X[:10], np.full(10, 5))
    with pytest.raises(TypeError, match="DataFrame"):
        MerlinAttack(target).fit(np.array([["a"] * 5] * 200, dtype=object), y[:200])
    with pytest.raises(ValueError, match="proxy"):
        MorganAttack(TargetModel(target.predict_proba, classes=[0, 1]), n_noise=5).fit(X[100:], y[100:])


def test_merlin_determinism_and_clone(mlp_games):
    target, (Xp, yp), (Xc, yc, _) = mlp_games[0]
    a = MerlinAttack(target, n_noise=10, sigma=0.05, random_state=5).fit(Xp[:300], yp[:300])
    b = MerlinAttack(target, n_noise=10, sigma=0.05, random_state=5).fit(Xp[:300], yp[:300])
    assert np.array_equal(a.decision_function(Xc, yc), b.decision_function(Xc, yc))
    assert np.array_equal(a.decision_function(Xc, yc), a.decision_function(Xc, yc))
    c = clone(a)
    assert c.target is target and not hasattr(c, "noise_")


# ----------------------------------------------------------------- noise model
def test_noise_model_numpy_numeric_and_binary():
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(0, 5, 1000), rng.integers(0, 2, 1000)]
    T = 400
    noise = TabularNoise(sigma=0.1, noise_scale="std", binary_flip=0.05).fit(X).draw(T, seed=1)
    assert list(noise.roles_) == ["numeric", "binary"]
    batch = noise.noisy_batch(X[:64]).reshape(64, T + 1, 2)
    assert np.array_equal(batch[:, 0], X[:64])  # clean row first
    delta = batch[:, 1:, 0] - batch[:, :1, 0]
    assert delta.std() == pytest.approx(0.1 * X[:, 0].std(), rel=0.05)
    assert set(np.unique(batch[:, :, 1])) <= {0.0, 1.0}
    flipped = (batch[:, 1:, 1] != batch[:, :1, 1]).mean()
    assert flipped == pytest.approx(0.05, abs=0.01)
    paper = TabularNoise(sigma=0.01, binary_flip=0.0).fit(X)  # Gaussian on binary too
    assert list(paper.roles_) == ["numeric", "numeric"]


def test_noise_model_dataframe():
    rng = np.random.default_rng(0)
    n = 500
    df = pd.DataFrame(
        {
            "city": pd.Categorical(rng.choice(["a", "b", "c"], n, p=[0.7, 0.2, 0.1])),
            "job": rng.choice(["x", "y"], n).astype(object),
            "flag": rng.random(n) < 0.5,
            "dummy": rng.integers(0, 2, n),
            "income": rng.normal(50, 10, n),
            "age": rng.integers(20, 70, n),
        }
    )
    noise = TabularNoise(sigma=0.1, noise_scale="std", categorical_flip=0.3, binary_flip=0.1).fit(df)
    assert list(noise.roles_) == ["categorical", "categorical", "binary", "binary", "numeric", "numeric"]
    T = 200
    out = noise.draw(T, seed=0).noisy_batch(df.iloc[:64])
    assert len(out) == 64 * (T + 1) and list(out.columns) == list(df.columns)
    assert out["city"].dtype == df["city"].dtype and out["flag"].dtype == bool
    clean = out.iloc[:: T + 1].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        clean.drop(columns=["income", "age"]), df.iloc[:64].drop(columns=["income", "age"]).reset_index(drop=True)
    )
    assert set(out["city"].unique()) <= {"a", "b", "c"} and set(out["job"].unique()) <= {"x", "y"}
    copies = np.arange(len(out)) % (T + 1) != 0
    orig = np.repeat(df["city"].to_numpy()[:64], T + 1)
    changed = (out["city"].to_numpy() != orig)[copies].mean()
    # redrawn with probability 0.3 from a marginal that repeats the value w.p. ~0.54
    assert 0.08 < changed < 0.2
    assert set(np.unique(out["dummy"])) <= {0, 1}


def test_noise_model_sparse_binary():
    rng = np.random.default_rng(0)
    dense = (rng.random((300, 200)) < 0.05).astype(float)
    X = sp.csr_matrix(dense)
    noise = TabularNoise(binary_flip=0.02).fit(X)
    assert np.all(noise.roles_ == "binary")
    T = 50
    out = noise.draw(T, seed=0).noisy_batch(X[:64])
    assert sp.issparse(out) and out.shape == (64 * (T + 1), 200)
    arr = out.toarray().reshape(64, T + 1, 200)
    assert np.array_equal(arr[:, 0], dense[:64])
    assert set(np.unique(arr)) <= {0.0, 1.0}
    rate = (arr[:, 1:] != arr[:, :1]).mean()
    assert rate == pytest.approx(0.02, rel=0.2)
    # a sparse numeric column gets Gaussian noise on its non-zeros only
    Xn = X.tolil()
    Xn[:, 0] = rng.normal(3, 1, (300, 1))
    noise = TabularNoise(sigma=0.1, binary_flip=0.0).fit(Xn.tocsr()).draw(5, seed=0)
    out = noise.noisy_batch(Xn.tocsr()[:64])
    assert out.nnz == 6 * Xn.tocsr()[:64].nnz  # zeros stay zero
    dense_ref = Xn.tocsr()[:64].toarray()
    got = out.toarray().reshape(64, 6, 200)
    nz = dense_ref != 0
    assert np.allclose(got[:, 1:][:, :, nz.any(0)][..., :1] - dense_ref[:, None, :1], noise.gauss_[None, :, :1])


def test_merlin_on_dataframe_pipeline():
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 900
    df = pd.DataFrame(
        {
            "city": pd.Categorical(rng.choice(["a", "b", "c"], n)),
            "income": rng.normal(50, 10, n),
            "owner": rng.random(n) < 0.3,
        }
    )
    y = (df["income"] + 10 * (df["city"] == "a") + rng.normal(0, 5, n) > 55).astype(int)
    pre = ColumnTransformer(
        [("c", OneHotEncoder(handle_unknown="ignore"), ["city"]),
         ("n", StandardScaler(), ["income", "owner"])]
    )
    target = make_pipeline(pre, LogisticRegression()).fit(df.iloc[:300], y[:300])
    attack = MerlinAttack(target, n_noise=10, noise_scale="std", sigma=0.1, fpr=0.05, random_state=0)
    attack.fit(df.iloc[300:700], y[300:700])
    s = attack.decision_function(df.iloc[700:], y[700:])
    assert s.shape == (200,) and np.all((s >= 0) & (s <= 1))


def test_morgan_refuses_the_fpr_goal():
    """Morgan's three thresholds come from a proxy: it must not promise an FPR."""
    X, y = make_classification(1200, n_features=6, n_classes=3, n_informative=4, random_state=0)
    target = LogisticRegression().fit(X[:300], y[:300])
    with pytest.raises(ValueError, match="MorganAttack cannot promise an FPR"):
        MorganAttack(target, n_noise=5, threshold_goal="fpr", fpr=0.05).fit(X[300:], y[300:])