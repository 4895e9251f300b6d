"""DP variants of tabmia.whatif: diffprivlib's models on a public encoding, each ε claim checked
by the one-run DP audit, a claim far below the truth refuted; Opacus' DP-SGD MLP."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from tabmia.attacks import LossAttack
from tabmia.whatif import dp, whatif

# diffprivlib, imported under this scikit-learn (tabmia/whatif/_diffprivlib.py); skipped without it
pytest.importorskip("tabmia.whatif._diffprivlib")


def _split(X, y, n_train):
    perm = np.random.RandomState(0).permutation(len(y))
    return X[perm[:n_train]], y[perm[:n_train]], X[perm[n_train:]], y[perm[n_train:]]


def test_every_dp_model_is_audited_and_its_claim_not_refuted():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, y_tr, X_pop, y_pop = _split(X, y, 250)
    variants = [dp("logistic_regression", epsilon=1.0), dp("gaussian_nb", epsilon=1.0),
                dp("random_forest", epsilon=4.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = whatif(RandomForestClassifier(n_estimators=10, random_state=0), X_tr, y_tr, X_pop,
                     y_pop, {"loss": LossAttack(fpr=0.05)}, variants=variants,
                     limit="tpr@0.05=0.3", random_state=0, n_bootstrap=50)
    t = res.frontier().set_index("variant")
    for v in variants:
        check = res.runs_of(v.name)[0].dp_check
        assert check is not None and check["state"] != "refuted"
        assert check["epsilon"] == v.epsilon and check["epsilon_lower"] <= v.epsilon
        assert t.loc[v.name, "epsilon"] == v.epsilon and t.loc[v.name, "dp_claim"] == check["state"]
    assert "DP claim of dp_logistic_regression_eps1" in res.summary()


def test_a_claim_far_below_the_truth_is_refuted():
    from tabmia.whatif._diffprivlib import LogisticRegression

    # a DP logistic regression memorises flipped labels in 60 dimensions at ε = 50
    rng = np.random.RandomState(0)
    X = rng.normal(size=(600, 60))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    X_tr, y_tr, X_pop, y_pop = _split(X, y, 300)
    truth = LogisticRegression(epsilon=50.0, data_norm=1.0, C=1e3, max_iter=500)
    claims = [dp(truth, epsilon=0.1, name="claims_0.1"), dp(truth, epsilon=50.0, name="claims_50")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = whatif(truth, X_tr, y_tr, X_pop, y_pop, {"loss": LossAttack(fpr=0.05)},
                     variants=claims, limit="tpr@0.05=0.3", random_state=0, n_bootstrap=50,
                     dp_audit={"canaries": "flipped", "n_canaries": 250})
    wrong = res.runs_of("claims_0.1")[0].dp_check
    right = res.runs_of("claims_50")[0].dp_check
    assert wrong["state"] == "refuted" and wrong["epsilon_lower"] > 0.1
    assert right["state"] != "refuted"


def test_dp_sgd_mlp_trains_at_its_epsilon():
    pytest.importorskip("opacus")
    from tabmia.whatif._opacus import DPSGDClassifier

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    a = DPSGDClassifier(epsilon=2.0, epochs=2, random_state=0).fit(X, y)
    b = DPSGDClassifier(epsilon=2.0, epochs=2, random_state=0).fit(X, y)
    assert a.epsilon_spent_ <= 2.0 + 1e-6
    assert np.allclose(a.predict_proba(X[:20]), b.predict_proba(X[:20]))
    assert a.predict_proba(X).shape == (len(y), 2)
