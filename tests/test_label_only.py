"""Label-only targets and attacks: models that answer with their decision only.

- ``TargetModel`` takes a predict-only model, precomputed labels and one-hot outputs
  declared label-only, and refuses probabilities from them;
- attacks that need probabilities refuse a label-only target in one line naming the
  attacks that work;
- the label-only attacks query in rounds of one batched ``predict`` each, count their
  queries, sit at chance on records the target never saw (mixed-type records), and the
  shadow-calibrated noise robustness beats the gap attack on an overfit model;
- the rays of the boundary search move numeric, 0/1 and categorical columns as documented.

The FPR promise of the label-only attacks is checked with every other attack's in
tests/test_fpr_promise.py; the command line's label-only mode in tests/test_cli_label_only.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.svm import LinearSVC

from tabmia.attacks import (
    BoundaryDistanceAttack,
    CalibratedRobustnessAttack,
    GapAttack,
    LiRAAttack,
    LossAttack,
    MerlinAttack,
    NoiseRobustnessAttack,
)
from tabmia.attacks.base import label_only_attacks
from tabmia.exceptions import LabelOnlyTargetError
from tabmia.metrics import auc, tpr_at_fpr
from tabmia.perturb import TabularRays
from tabmia.recipes import make_model
from tabmia.target import PrecomputedLabels, PrecomputedProbabilities, TargetModel

LABEL_ATTACKS = ["BoundaryDistanceAttack", "CalibratedRobustnessAttack", "GapAttack",
                 "NoiseRobustnessAttack"]


@pytest.fixture(scope="module")
def numeric():
    X, y = make_classification(n_samples=2000, n_features=8, n_informative=5, flip_y=0.2,
                               random_state=0)
    return X, y


class CountingModel:
    """A predict-only model that counts its ``predict`` calls and rows."""

    def __init__(self, model):
        self.model = model
        self.classes_ = model.classes_
        self.calls, self.rows = 0, 0

    def predict(self, X):
        self.calls += 1
        self.rows += len(X)
        return self.model.predict(X)


def _mixed(seed: int, n: int = 2400):
    """Numeric, 0/1 and categorical columns with label noise (memorised by a forest)."""
    X, y = make_classification(n_samples=n, n_features=6, n_informative=4, flip_y=0.2,
                               random_state=seed)
    df = pd.DataFrame(X[:, :4], columns=list("abcd"))
    df["colour"] = pd.Categorical(np.array(["red", "green", "blue"])[
        np.digitize(X[:, 4], [-0.5, 0.5])])
    df["flag"] = (X[:, 5] > 0).astype(int)
    return df, y


# ------------------------------------------------------------------ targets
def test_label_only_targets_answer_labels_and_refuse_probabilities(numeric):
    X, y = numeric
    svc = LinearSVC().fit(X[:500], y[:500])  # predict, no predict_proba
    t = TargetModel(svc)
    assert t.outputs == "labels" and "LinearSVC has predict but no predict_proba" in t.labels_reason
    assert np.array_equal(t.predict(X[:50]), svc.predict(X[:50]))
    assert np.array_equal(t.predict_indices(X[:50]), svc.predict(X[:50]))
    assert t.n_queries_ == 100
    for method in (t.predict_proba, t.predict_logits):
        with pytest.raises(LabelOnlyTargetError, match="answers with labels only"):
            method(X[:5])
    # precomputed labels: looked up by content; classes the union with the given ones
    words = np.array(["no", "yes"])[svc.predict(X[:300])]
    pre = TargetModel(PrecomputedLabels(X[:300], words, classes=["maybe", "no", "yes"]))
    assert pre.outputs == "labels" and list(pre.classes_) == ["maybe", "no", "yes"]
    assert list(pre.predict(X[[5, 2]])) == list(words[[5, 2]])
    with pytest.raises(ValueError, match="cannot score new or perturbed records"):
        pre.predict(X[300:302])
    # one-hot probabilities declared label-only read as their labels
    onehot = np.eye(2)[svc.predict(X[:300])]
    hot = TargetModel(PrecomputedProbabilities(X[:300], onehot), labels_only=True)
    assert hot.outputs == "labels" and hot.labels_reason == "declared with labels_only=True"
    assert np.array_equal(hot.predict_indices(X[:300]), svc.predict(X[:300]))
    # a probability model declared label-only answers through its own predict
    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X[:500], y[:500])
    assert np.array_equal(TargetModel(forest, labels_only=True).predict(X[:40]),
                          forest.predict(X[:40]))
    assert TargetModel(forest).outputs == "proba"
    # a callable declared label-only returns labels; labels outside classes are refused
    f = TargetModel(lambda Z: np.where(Z[:, 0] > 0, "b", "a"), classes=["a", "b"],
                    labels_only=True)
    assert set(f.predict(X[:20])) <= {"a", "b"}
    g = TargetModel(lambda Z: np.full(len(Z), "c"), classes=["a", "b"], labels_only=True)
    with pytest.raises(ValueError, match="predicted labels contains labels the target never saw"):
        g.predict(X[:3])
    with pytest.raises(ValueError, match="no classes_"):
        TargetModel(LinearSVC())  # unfitted


def test_attacks_that_need_probabilities_refuse_a_label_only_target(numeric):
    X, y = numeric
    svc = LinearSVC().fit(X[:500], y[:500])
    assert label_only_attacks() == LABEL_ATTACKS
    for attack in (LossAttack(svc), MerlinAttack(svc, n_noise=4),
                   LiRAAttack(svc, n_shadow=4, shadow_estimator=LinearSVC())):
        with pytest.raises(LabelOnlyTargetError) as err:
            attack.fit(X[500:900], y[500:900])
        message = str(err.value)
        assert "\n" not in message
        assert f"{type(attack).__name__} needs the target's probabilities" in message
        assert "attacks that work from labels: " + ", ".join(LABEL_ATTACKS) in message
    # shadow models that give labels only serve the label-only attacks, not LiRA
    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X[:500], y[:500])
    with pytest.raises(ValueError, match="LinearSVC has no predict_proba: LiRAAttack's shadow"):
        LiRAAttack(forest, n_shadow=4, shadow_estimator=LinearSVC()).fit(X[500:900], y[500:900])
    # the label-only attacks run on it, and on saved labels where they query no new record
    assert GapAttack(svc, fpr=0.05).fit(X[500:900], y[500:900]).n_queries_ == 400
    saved = TargetModel(PrecomputedLabels(X, svc.predict(X)))
    GapAttack(saved, fpr=0.05).fit(X[500:900], y[500:900])
    with pytest.raises(ValueError, match="cannot score new or perturbed records"):
        NoiseRobustnessAttack(saved, n_noise=4, fpr=0.05).fit(X[500:900], y[500:900])


# ------------------------------------------------------------------ queries
def test_every_query_round_is_one_predict_call(numeric):
    X, y = numeric
    svc = CountingModel(LinearSVC().fit(X[:500], y[:500]))
    pub, cand = np.arange(500, 1000), np.arange(1000, 1300)
    nr = NoiseRobustnessAttack(svc, n_noise=20, fpr=0.05, random_state=0).fit(X[pub], y[pub])
    assert (svc.calls, svc.rows) == (1, 500 * 21) == (1, nr.n_queries_)
    nr.decision_function(X[cand], y[cand])
    assert (svc.calls, svc.rows) == (2, 800 * 21) and nr.queries_per_record_ == 21
    svc.calls = svc.rows = 0
    bd = BoundaryDistanceAttack(svc, n_directions=5, n_grid=4, n_bisect=3, fpr=0.05,
                                random_state=0).fit(X[pub], y[pub])
    # clean records, the grid, three bisection rounds: five calls
    assert svc.calls == 5 and svc.rows == bd.n_queries_ <= 500 * bd.queries_per_record_
    assert bd.queries_per_record_ == 1 + 5 * (4 + 3)
    svc.calls = 0
    cr = CalibratedRobustnessAttack(svc, n_shadow=4, n_noise=10, fpr=0.05,
                                    shadow_estimator=LinearSVC(), random_state=0)
    cr.fit(X[pub], y[pub])
    cr.decision_function(X[cand], y[cand])
    # the target: one round for the public records, one for the candidates; each of the
    # four (predict-only) shadows one for the pool and one for the candidates
    assert svc.calls == 2 and cr.n_queries_ == 800 * 11
    assert cr.n_shadow_queries_ == 4 * 800 * 11
    # max_batch_rows bounds the rows per call without changing a score
    small = NoiseRobustnessAttack(svc, n_noise=20, fpr=0.05, max_batch_rows=2100,
                                  random_state=0).fit(X[pub], y[pub])
    assert np.array_equal(small.decision_function(X[cand], y[cand]),
                          nr.decision_function(X[cand], y[cand]))


@pytest.mark.parametrize("make", [
    lambda t, s: NoiseRobustnessAttack(t, n_noise=24, random_state=s),
    lambda t, s: CalibratedRobustnessAttack(t, n_shadow=4, n_noise=16, random_state=s),
    lambda t, s: BoundaryDistanceAttack(t, n_directions=6, n_grid=6, n_bisect=3,
                                        random_state=s),
], ids=["noise_robustness", "noise_robustness_calibrated", "boundary_distance"])
def test_chance_level_on_mixed_records_the_target_never_saw(make):
    aucs = []
    for seed in range(3):
        X, y = _mixed(seed)
        target = make_model("random_forest", X).set_params(
            model__n_estimators=30, model__random_state=seed).fit(X.iloc[:400], y[:400])
        attack = make(target, seed).fit(X.iloc[400:1400], y[400:1400])
        # "members" drawn from the population, never from the training set
        s = attack.decision_function(X.iloc[1400:2400], y[1400:2400])
        aucs.append(auc(np.r_[np.ones(500, bool), np.zeros(500, bool)], s))
    assert abs(np.mean(aucs) - 0.5) < 0.04, aucs


def test_calibrated_noise_robustness_beats_the_gap_attack_on_an_overfit_model():
    X, y = make_classification(n_samples=1600, n_features=8, n_informative=5, flip_y=0.2,
                               random_state=0)
    train, pub, out = np.arange(300), np.arange(300, 1300), np.arange(1300, 1600)
    target = RandomForestClassifier(n_estimators=100, random_state=0).fit(X[train], y[train])
    cand = np.r_[train, out]
    member = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    gap = GapAttack(target).fit(X[pub], y[pub]).decision_function(X[cand], y[cand])
    cal = CalibratedRobustnessAttack(target, n_shadow=8, n_noise=32, random_state=0)
    s = cal.fit(X[pub], y[pub]).decision_function(X[cand], y[cand])
    # the gap attack's 0/1 score flags every correctly labelled non-member with the members
    assert tpr_at_fpr(member, gap, 0.05) == 0.0
    assert tpr_at_fpr(member, s, 0.05) >= 0.12
    assert auc(member, s) > auc(member, gap) + 0.01


def _breast_cancer_forest():
    """An overfit random forest of breast-cancer records, its members and public records."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.RandomState(0).permutation(y.size)
    X, y = X[order], y[order]
    return RandomForestClassifier(random_state=0).fit(X[:250], y[:250]), X, y


def test_an_attack_whose_threshold_flags_nobody_says_so_at_fit():
    """The gap attack on an overfit forest at 1% FPR: nearly every public record is
    labelled right, so the threshold lies above the highest score, 1; fit warns, sets
    ``flags_nobody_``, and indeed no record, member or not, is flagged."""
    import warnings

    from tabmia.exceptions import FlagsNobodyWarning

    target, X, y = _breast_cancer_forest()
    with pytest.warns(FlagsNobodyWarning) as seen:
        gap = GapAttack(target, fpr=0.01).fit(X[250:], y[250:])
    assert len(seen) == 1 and gap.flags_nobody_ and gap.threshold_ > 1.0
    assert str(seen[0].message).startswith(
        "GapAttack flags nobody: its threshold lies above 1, the highest score it can give, "
        "at fpr=0.01: 95.3% of its 319 calibration records reach that score"
    )
    assert not gap.predict(X[:250], y[:250]).any()  # not one member
    # attacks that flag records: no word, flags_nobody_ False
    gap_weak = GapAttack(DummyClassifier(strategy="constant", constant=0).fit(X, y), fpr=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FlagsNobodyWarning)
        loss = LossAttack(target, fpr=0.05).fit(X[250:], y[250:])
        gap_weak.fit(X[250:], y[250:])
    assert not loss.flags_nobody_ and not gap_weak.flags_nobody_
    assert gap_weak.predict(X[:250], y[:250]).any()  # the records labelled right (class 0)


# --------------------------------------------------------------------- rays
def test_rays_move_each_column_kind_as_documented():
    X = pd.DataFrame({
        "num": [0.0, 1.0, 2.0, 3.0], "flag": [0, 1, 0, 1],
        "ok": pd.Series([True, False, True, False]),
        "colour": pd.Categorical(["red", "blue", "red", "green"]),
    })
    rays = TabularRays(n_directions=2).fit(X)
    assert rays.n_coordinates_ == 3 + 3  # num, flag, ok; one per colour seen
    rays.directions_ = np.zeros((2, 6))
    rays.directions_[0, 0] = 1.0  # num only
    colour = rays._blocks["colour"][0]
    cats = list(rays._blocks["colour"][1])
    rays.directions_[1, [1, 2]] = [1.0, -1.0]  # flag up, ok down
    rays.directions_[1, colour.start + cats.index("green")] = 1.0
    moved = rays.move(X, np.array([0, 0, 1]), np.array([0, 1, 1]), np.array([2.0, 0.4, 1.5]))
    assert list(moved.columns) == list(X.columns) and len(moved) == 3
    std = X["num"].std(ddof=0)
    assert moved["num"].tolist() == pytest.approx([2.0 * std, 0.0, 1.0])
    # 0/1 columns flip once the step passes 1/2, keeping their dtype
    assert moved["flag"].tolist() == [0, 0, 1] and moved["flag"].dtype == X["flag"].dtype
    assert moved["ok"].tolist() == [True, True, False] and moved["ok"].dtype == bool
    # a category changes once its coordinate passes the record's own (1): step 1.5, not 0.4
    assert moved["colour"].tolist() == ["red", "red", "green"]
    assert moved["colour"].dtype == X["colour"].dtype
    # a category unseen in public data stays until a coordinate passes 1
    new = X.assign(colour=pd.Categorical(["purple"] * 4, categories=["red", "blue", "green",
                                                                     "purple"]))
    far = rays.move(new, np.array([0, 0]), np.array([1, 1]), np.array([0.5, 2.0]))
    assert far["colour"].tolist() == ["purple", "green"]
    with pytest.raises(TypeError, match="sparse"):
        import scipy.sparse as sp

        TabularRays().fit(sp.csr_matrix(np.eye(3)))


# ---------------------------------------------------------------- benchmark
def test_benchmark_quick_run_writes_results_and_says_when_art_did_not_run(
        tmp_path, shared_data, monkeypatch):
    import json

    from benchmarks import _common, label_only

    monkeypatch.setenv("TABMIA_DATA", str(shared_data))
    saved = _common.RESULTS
    try:
        rc = label_only.main(["--quick", "--seeds", "1", "--datasets", "german_credit",
                              "--art-python", str(tmp_path / "no-python"), "--out",
                              str(tmp_path)])
    finally:
        _common.set_results_dir(saved)
    assert rc == 0
    payload = json.loads((tmp_path / "label_only.json").read_text())
    cell = payload["results"]["german_credit"][0]
    assert set(label_only.LABEL_ONLY) <= set(cell["attacks"])
    assert all(cell["attacks"][a]["n_queries"] > 0 for a in label_only.LABEL_ONLY)
    assert "no Python at" in cell["art"]["error"]
    md = (tmp_path / "label_only.md").read_text()
    assert "ART: did not run (no Python at" in md
    assert "Noise robustness against the gap attack at 1% FPR" in md
