"""Watson et al.'s difficulty calibration: reference models and forgetting."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from tabmia.attacks.calibrated import CalibratedAttack
from tabmia.attacks.loss import LossAttack, ScoreAttack
from tabmia.exceptions import DuplicateRecordsWarning
from tabmia.metrics import auc

SEEDS = (0, 1, 2)
N = 2000


@pytest.fixture(scope="module")
def games() -> list[dict]:
    """Overfit forests on data with 10% flipped labels: hard and easy records."""
    out = []
    for seed in SEEDS:
        X, y = make_classification(n_samples=4 * N, n_features=10, n_informative=6,
                                   flip_y=0.1, random_state=seed)
        mem, non, pub = np.arange(N), np.arange(N, 2 * N), np.arange(2 * N, 4 * N)
        target = RandomForestClassifier(n_estimators=30, random_state=seed).fit(X[mem], y[mem])
        cand = np.r_[mem, non]
        member = np.r_[np.ones(N, bool), np.zeros(N, bool)]
        out.append({"X": X, "y": y, "pub": pub, "cand": cand, "member": member,
                    "target": target, "seed": seed})
    return out


def _scores(attack, g):
    X, y = g["X"], g["y"]
    attack.fit(X[g["pub"]], y[g["pub"]])
    return attack.decision_function(X[g["cand"]], y[g["cand"]])


def test_calibration_beats_the_uncalibrated_score(games):
    aucs = {"loss": [], "cal_loss": [], "conf": [], "cal_conf": []}
    fprs = []
    for g in games:
        t = g["target"]
        aucs["loss"].append(auc(g["member"], _scores(LossAttack(t), g)))
        cal = CalibratedAttack(t, n_reference=4, random_state=g["seed"])
        s = _scores(cal, g)
        aucs["cal_loss"].append(auc(g["member"], s))
        fprs.append(np.mean(s[~g["member"]] >= cal.threshold_))
        # Watson's confidence: max_i log p_i (uncalibrated: the same, thresholded)
        aucs["conf"].append(auc(g["member"], _scores(ScoreAttack(t, statistic="confidence"), g)))
        aucs["cal_conf"].append(auc(g["member"], _scores(
            CalibratedAttack(t, statistic="confidence", n_reference=4, random_state=g["seed"]), g)))
    mean = {k: float(np.mean(v)) for k, v in aucs.items()}
    # measured: loss 0.71 -> calibrated 0.75
    assert mean["cal_loss"] > mean["loss"] + 0.02, mean
    assert mean["cal_conf"] > mean["conf"], mean
    assert np.mean(fprs) <= 0.02, fprs  # threshold promised 1% on fresh non-members


def test_score_is_target_minus_mean_of_out_references(games):
    g = games[0]
    a = CalibratedAttack(g["target"], n_reference=4, random_state=0)
    a.fit(g["X"][g["pub"]], g["y"][g["pub"]])
    floor = np.log(a.proba_floor_)
    assert 0 < a.proba_floor_ < 1 / 30  # the forest gives some records probability 0

    def log_p(model, X, y):
        return np.maximum(np.log(np.maximum(model.predict_proba(X)[np.arange(len(y)), y],
                                            1e-300)), floor)

    # a fresh record: the references out_model_masks draws for it (two of the four)
    X_new, y_new = make_classification(n_samples=40, n_features=10, n_informative=6,
                                       random_state=7)
    every = np.array([log_p(m, X_new, y_new) for m in a.reference_models_])
    fresh = a.out_model_masks(X_new, y_new)
    assert (fresh.sum(axis=0) == 2).all()
    expected = log_p(g["target"], X_new, y_new) - (every * fresh).sum(0) / 2
    assert np.allclose(a.decision_function(X_new, y_new), expected)
    # a public record that trained references: only those that did not train on it
    X, y = g["X"], g["y"]
    pool = g["pub"]
    rows = pool[:40]
    own = np.array([log_p(m, X[rows], y[rows]) for m in a.reference_models_])
    out = ~a.in_masks_[:, :40]
    expected = log_p(g["target"], X[rows], y[rows]) - (own * out).sum(0) / out.sum(0)
    with pytest.warns(DuplicateRecordsWarning):  # public records as candidates
        assert np.allclose(a.decision_function(X[rows], y[rows]), expected)
    assert a.reference_scores_.shape == (4, pool.size)
    # every public record calibrates the threshold, scored by its OUT references
    assert a.calibration_index_.size == 0
    own_all = np.array([log_p(m, X[pool], y[pool]) for m in a.reference_models_])
    out_all = ~a.in_masks_
    expected = log_p(g["target"], X[pool], y[pool]) - (own_all * out_all).sum(0) / out_all.sum(0)
    # (the references' scores are stored as float32)
    assert np.allclose(a.calibration_scores_, expected, atol=1e-6)


def test_chance_level_when_the_target_never_saw_the_candidates():
    aucs = []
    for seed in SEEDS:
        X, y = make_classification(n_samples=6000, n_features=10, n_informative=6,
                                   flip_y=0.1, random_state=10 + seed)
        target = RandomForestClassifier(n_estimators=30, random_state=seed).fit(X[:1500], y[:1500])
        cand = np.arange(1500, 3500)
        a = CalibratedAttack(target, n_reference=2, random_state=seed).fit(X[3500:], y[3500:])
        aucs.append(auc(np.r_[np.ones(1000, bool), np.zeros(1000, bool)],
                        a.decision_function(X[cand], y[cand])))
    assert abs(np.mean(aucs) - 0.5) < 0.05, aucs


def test_gradient_norm_and_forgetting_on_a_torch_mlp():
    pytest.importorskip("torch")
    from tabmia.shadow import TorchMLPClassifier

    X, y = make_classification(n_samples=1400, n_features=8, n_informative=5, flip_y=0.15,
                               random_state=3)
    X = X.astype(np.float32)
    mem, non, pub = np.arange(200), np.arange(200, 400), np.arange(400, 1400)
    target = TorchMLPClassifier(hidden_layer_sizes=(128,), epochs=200, batch_size=50,
                                lr=0.01, device="cpu", random_state=0).fit(X[mem], y[mem])
    before = target.predict_proba(X[:50])
    cand = np.r_[mem, non]
    member = np.r_[np.ones(200, bool), np.zeros(200, bool)]
    loss_auc = auc(member, LossAttack(target).fit(X[pub], y[pub]).decision_function(
        X[cand], y[cand]))
    gn = CalibratedAttack(target, statistic="gradient_norm", n_reference=2, random_state=0)
    s = gn.fit(X[pub], y[pub]).decision_function(X[cand], y[cand])
    assert np.all(np.isfinite(s)) and auc(member, s) > loss_auc  # measured 0.69 vs 0.60
    fg = CalibratedAttack(target, calibration="forgetting", n_reference=2, random_state=0)
    s = fg.fit(X[pub], y[pub]).decision_function(X[cand], y[cand])
    assert np.all(np.isfinite(s)) and auc(member, s) > loss_auc  # measured 0.62 vs 0.60
    assert fg.population_ is None and len(fg.reference_models_) == 2
    # the copies were fine-tuned; the target itself was not touched
    assert not np.allclose(fg.reference_models_[0].predict_proba(X[:50]), before)
    assert np.array_equal(target.predict_proba(X[:50]), before)
    fg2 = CalibratedAttack(target, calibration="forgetting", statistic="gradient_norm",
                           n_reference=2, forgetting_epochs=3, random_state=0)
    assert np.all(np.isfinite(fg2.fit(X[pub], y[pub]).decision_function(X[cand], y[cand])))


def test_torch_only_options_refuse_other_targets(games):
    g = games[0]
    X, y, pub = g["X"], g["y"], g["pub"]
    with pytest.raises(ValueError, match="gradient_norm"):
        CalibratedAttack(g["target"], statistic="gradient_norm").fit(X[pub], y[pub])
    with pytest.raises(ValueError, match="forgetting"):
        CalibratedAttack(g["target"], calibration="forgetting").fit(X[pub], y[pub])
