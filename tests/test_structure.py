"""tabmia.structure: every tree family's stored leaf counts equal a recount from the
training records; the findings order models as their leaf sizes do."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.ensemble._forest import _generate_sample_indices
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from tabmia.structure import NotATreeModelError, read_trees, structural_findings


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(400, n_features=8, n_informative=5, n_classes=3,
                               random_state=0)
    return X.astype(np.float32), y


def _recount(nodes, n_nodes, weights=None):
    out = np.zeros(n_nodes)
    np.add.at(out, nodes.ravel(), 1.0 if weights is None else weights.ravel())
    return out


def _check_exact(leaves, X, y=None, in_bag=None):
    """Stored counts of the leaves reached equal a recount of the records each tree
    trained on (``in_bag``: per tree, how often each record was drawn)."""
    nodes = leaves.leaves(X)
    weights = None if in_bag is None else (in_bag > 0).astype(float).T
    recount = _recount(nodes, leaves.counts.size, weights)
    reached = np.unique(nodes)
    assert np.array_equal(leaves.counts[reached], recount[reached])
    assert np.array_equal(leaves.leaf_counts(X, nodes), leaves.counts[nodes])
    if y is not None and leaves.class_counts is not None:
        per_class = np.zeros_like(leaves.class_counts)
        np.add.at(per_class, (nodes.ravel(), np.repeat(y, nodes.shape[1])), 1.0)
        assert np.allclose(leaves.class_counts[reached], per_class[reached])


def _lib(name):
    return pytest.importorskip(name)


SKLEARN = {
    "tree": lambda: DecisionTreeClassifier(random_state=0),
    "forest_without_bootstrap": lambda: RandomForestClassifier(
        20, bootstrap=False, max_features=0.5, random_state=0),
    "extra_trees": lambda: ExtraTreesClassifier(20, random_state=0),
    "gradient_boosting": lambda: GradientBoostingClassifier(n_estimators=5, random_state=0),
    "hist_gradient_boosting": lambda: HistGradientBoostingClassifier(
        max_iter=5, early_stopping=False),
    "pipeline": lambda: make_pipeline(StandardScaler(), ExtraTreesClassifier(5, random_state=0)),
}


@pytest.mark.parametrize("name", SKLEARN)
def test_sklearn_counts_equal_a_recount(name, data):
    X, y = data
    model = SKLEARN[name]().fit(X, y)
    leaves = read_trees(model)
    _check_exact(leaves, X, y)
    assert leaves.exact and np.all(leaves.inclusion == 1.0)


def test_bootstrap_forest_counts_its_in_bag_records(data):
    X, y = data
    forest = RandomForestClassifier(10, random_state=0).fit(X, y)
    in_bag = np.stack([
        np.bincount(_generate_sample_indices(t.random_state, len(X), len(X), None), minlength=len(X))
        for t in forest.estimators_
    ])
    leaves = read_trees(forest)
    _check_exact(leaves, X, in_bag=in_bag)
    assert np.allclose(leaves.inclusion, 1 - (1 - 1 / len(X)) ** len(X))
    assert "bootstrap" in leaves.count_kind


@pytest.mark.parametrize("n_classes", [2, 3])
def test_lightgbm_and_catboost_counts_equal_a_recount(n_classes, data):
    X, y = data
    y = y % n_classes
    lgb, cb = _lib("lightgbm"), _lib("catboost")
    for model in (lgb.LGBMClassifier(n_estimators=5, min_child_samples=5, n_jobs=1, verbose=-1),
                  cb.CatBoostClassifier(iterations=5, depth=4, verbose=0, thread_count=1)):
        model.fit(X, y)
        _check_exact(read_trees(model), X)


def test_xgboost_cover_is_a_hessian_sum_and_said_so(data):
    X, y = data
    xgb = _lib("xgboost")
    binary = xgb.XGBClassifier(n_estimators=4, max_depth=3, n_jobs=1).fit(X, y > 0)
    leaves = read_trees(binary)
    assert not leaves.exact and "NOT a count" in leaves.count_kind
    nodes = leaves.leaves(X)
    # the first round predicts alike for every record: cover / hessian is the count there
    estimate = leaves.leaf_counts(X, nodes)
    assert np.allclose(estimate[:, 0], _recount(nodes[:, :1], leaves.counts.size)[nodes[:, 0]],
                       rtol=1e-4)
    assert not np.allclose(leaves.counts[nodes[:, 0]], estimate[:, 0])  # cover is no count
    regression = xgb.XGBRegressor(n_estimators=3, max_depth=3, n_jobs=1).fit(X, y)
    _check_exact(read_trees(regression), X)
    multi = xgb.XGBClassifier(n_estimators=2, max_depth=3, n_jobs=1).fit(X, y)
    m_leaves = read_trees(multi)
    m_nodes = m_leaves.leaves(X)
    first = m_leaves.leaf_counts(X, m_nodes)[:, :3]  # round 0: one tree per class
    assert np.allclose(first, np.stack([
        _recount(m_nodes[:, k:k + 1], m_leaves.counts.size)[m_nodes[:, k]] for k in range(3)
    ], axis=1), rtol=1e-3)


def test_not_a_tree_model_is_refused(data):
    X, y = data
    with pytest.raises(NotATreeModelError, match="not a tree model"):
        read_trees(LogisticRegression().fit(X, y))


def test_findings_order_forests_by_leaf_size(data):
    X, y = data
    found = {
        leaf: structural_findings(
            RandomForestClassifier(20, min_samples_leaf=leaf, random_state=0).fit(X, y), X, y
        ).summary
        for leaf in (1, 5, 20)
    }
    assert found[20]["alone"] == found[20]["small"] == 0.0
    assert found[20]["occupancy_quantiles"]["5%"] >= 20
    for name in ("alone", "small", "disclosure", "influence"):
        assert found[1][name] >= found[5][name] >= found[20][name]
    assert found[1]["small"] > 0.2 and found[1]["disclosure"] > 0.1


def test_findings_per_record_and_sentences(data):
    X, y = data
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    found = structural_findings(tree, X, y)
    rec = found.records
    assert len(rec) == len(X) and np.all(rec["min_occupancy"] >= 1)
    # a fully grown tree: every training record in a pure leaf
    assert np.all(rec["share_disclosed"][rec["min_occupancy"] < 5] == 1.0)
    assert found.summary["alone"] == pytest.approx(np.mean(rec["share_alone"] > 0.5))
    lines = found.lines()
    assert f"{100 * found.summary['alone']:.3g}%" in lines[0]
    assert "not a membership test" in lines[-1]
    boost = structural_findings(
        HistGradientBoostingClassifier(max_iter=3, early_stopping=False).fit(X, y), X, y)
    assert boost.summary["disclosure"] is None and boost.value("disclosure") is None
    assert any("no per-class counts" in line for line in boost.lines())


def test_findings_equal_a_direct_computation_over_every_cell(data, monkeypatch):
    """The per-node tables (and records in several chunks) give what arithmetic over
    each record x tree cell gives."""
    import tabmia.structure.findings as findings

    X, y = data
    forest = RandomForestClassifier(15, min_samples_leaf=2, random_state=0).fit(X[:300], y[:300])
    monkeypatch.setattr(findings, "_CHUNK_CELLS", 15 * 70)  # 70 records a chunk
    rec = structural_findings(forest, X, y, k=4).records
    leaves = read_trees(forest)
    nodes = leaves.leaves(X)
    counts = leaves.counts[nodes]
    own = leaves.class_counts[nodes, y[:, None]]
    np.testing.assert_array_equal(rec["min_occupancy"], counts.min(axis=1))
    np.testing.assert_allclose(rec["influence"], (1 / counts).mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(rec["mean_log_occupancy"], np.log(counts).mean(axis=1),
                               rtol=1e-12)
    np.testing.assert_array_equal(rec["share_small"], (counts < 4).mean(axis=1))
    np.testing.assert_array_equal(rec["share_alone"], (counts <= 1).mean(axis=1))
    disclosed = (np.isclose(own, counts) & (counts < 4)).mean(axis=1)
    np.testing.assert_array_equal(rec["share_disclosed"], disclosed)
    assert 0 < disclosed.mean() < 1 and 0 < rec["share_small"].mean() < 1
