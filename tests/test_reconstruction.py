"""Training sets rebuilt from a tree model's file (issue 49, item 4): a forest without
bootstrap and a tree give their training records back, the result's rates are those of
an optimal pairing, unsupported models are refused by name, and ``tabmia audit
--reconstruct`` measures it (without the flag, a note says it may)."""

from __future__ import annotations

import json
import sys
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from tabmia.cli import main
from tabmia.reconstruction import may_be_reconstructible, reconstruct_training_set
from tabmia.reconstruction._bins import bin_records

pytest.importorskip("ortools")


def _binary_data(n: int = 30, p: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 2, size=(n, p))
    y = (X[:, 0] ^ X[:, 1]) | (rng.rand(n) < 0.2)
    return X, y.astype(int)


def _as_multiset(bins: np.ndarray, labels: np.ndarray) -> list[tuple[int, ...]]:
    return sorted(map(tuple, np.column_stack([bins, labels]).tolist()))


def test_a_forest_without_bootstrap_gives_its_training_set_back():
    X, y = _binary_data()
    forest = RandomForestClassifier(8, bootstrap=False, random_state=0).fit(X, y)
    result = reconstruct_training_set(forest, X, y, time_limit=60)
    assert result.found and result.status in ("OPTIMAL", "FEASIBLE")
    assert (result.n_exact, result.n_true) == (30, 30)
    assert result.exact_share == 1.0 and result.label_accuracy == 1.0
    # the records themselves, not only the score: the same multiset of records
    true_bins = bin_records(X, result.thresholds)
    assert _as_multiset(result.bins, result.labels) == _as_multiset(true_bins, y)
    assert np.array_equal(result.values().round(), result.values())  # 0 / 1 bins: 0 and 1
    assert "30 of 30 records recovered exactly" in result.sentence()


def test_a_full_depth_tree_gives_its_training_set_back():
    """Every leaf of this tree tests all three features, so its counts fix the records."""
    grid = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
    X = np.repeat(grid, [1, 2, 3, 1, 2, 3, 1, 2], axis=0)
    y = X[:, 0] ^ X[:, 1] ^ X[:, 2]
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    result = reconstruct_training_set(tree, X, y, time_limit=30)
    assert (result.n_exact, result.n_true) == (len(X), len(X))


def test_a_tree_reconstruction_fits_every_stored_count():
    """A tree leaves features off a record's path open, but what it returns fits every
    count: the reconstructed records land in the leaves with the stored class counts."""
    X, y = _binary_data(n=40, p=5, seed=1)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    result = reconstruct_training_set(tree, X, y, time_limit=30)
    leaves = tree.apply(result.values())
    for leaf in np.unique(tree.apply(X)):
        stored = np.rint(tree.tree_.value[leaf, 0] * tree.tree_.weighted_n_node_samples[leaf])
        rebuilt = np.bincount(result.labels[leaves == leaf], minlength=2)
        assert np.array_equal(stored, rebuilt)
    assert 0 < result.n_exact <= 40
    assert set(result.feature_accuracy) <= {f"x{f}" for f in range(5)}


def test_extra_trees_with_known_binary_domains():
    X, y = _binary_data()
    forest = ExtraTreesClassifier(5, random_state=0).fit(X, y)
    assert may_be_reconstructible(forest)
    result = reconstruct_training_set(forest, X, y, domains=dict.fromkeys(range(6), [0, 1]))
    assert result.n_exact == 30


def test_a_pipeline_is_read_through_its_steps_and_names():
    X, y = _binary_data()
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(6)])
    pipe = Pipeline(
        [
            ("scale", StandardScaler()),
            ("rf", RandomForestClassifier(5, bootstrap=False, random_state=0)),
        ]
    )
    pipe.fit(frame, y)
    result = reconstruct_training_set(pipe, frame, y, time_limit=60)
    assert result.n_exact == 30
    assert result.feature_names == list(frame.columns)
    assert set(result.to_dict()) >= {"n_exact", "seconds", "status", "sentence"}


def test_a_bagged_forest_is_tried_and_says_so():
    X, y = _binary_data(n=20, p=4)
    forest = RandomForestClassifier(2, max_depth=2, random_state=0).fit(X, y)
    assert not may_be_reconstructible(forest)
    result = reconstruct_training_set(forest, X, y, time_limit=2)
    assert result.tried and result.bootstrap
    assert "bagged RandomForestClassifier" in result.sentence()
    if not result.found:
        assert "a time limit, not a proof" in result.sentence()


def test_too_large_a_program_is_not_tried_and_says_why():
    X, y = _binary_data()
    forest = RandomForestClassifier(3, bootstrap=False, random_state=0).fit(X, y)
    result = reconstruct_training_set(forest, X, y, max_variables=10)
    assert not result.tried and result.status == "NOT_TRIED"
    assert "max_variables" in result.reason and "not tried" in result.sentence()


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (LogisticRegression(), "LogisticRegression is not a scikit-learn decision tree"),
        (GradientBoostingClassifier(n_estimators=2), "GradientBoostingClassifier is not"),
        (DecisionTreeRegressor(), "DecisionTreeRegressor is not"),
        (DecisionTreeClassifier(class_weight="balanced"), "class_weight"),
    ],
)
def test_unsupported_models_are_refused_by_name(model, message):
    X, y = _binary_data(n=31)
    model.fit(X, y)
    with pytest.raises(ValueError, match=message):
        reconstruct_training_set(model)


def test_unfitted_and_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="not fitted"):
        reconstruct_training_set(RandomForestClassifier())
    X, y = _binary_data()
    forest = RandomForestClassifier(2, bootstrap=False, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="takes 6"):
        reconstruct_training_set(forest, X[:, :3], y, time_limit=10)
    with pytest.raises(ValueError, match="without y_train"):
        reconstruct_training_set(forest, X, None, time_limit=10)


def test_missing_ortools_names_the_extra(monkeypatch):
    X, y = _binary_data()
    forest = RandomForestClassifier(2, bootstrap=False, random_state=0).fit(X, y)
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    with pytest.raises(ImportError, match=r"tabmia\[reconstruct\]"):
        reconstruct_training_set(forest)


# ---------------------------------------------------------------------- the CLI
@pytest.fixture(scope="module")
def tree_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("reconstruct")
    rng = np.random.RandomState(3)
    # distinct records: none of --population is a training record
    X = pd.DataFrame(rng.randint(0, 2, size=(200, 8))).drop_duplicates().to_numpy()[:120]
    y = (X[:, 0] ^ X[:, 1]) | (rng.rand(len(X)) < 0.2)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)]).assign(label=y.astype(int))
    train, pop = frame.iloc[:30], frame.iloc[30:]
    train.to_csv(d / "train.csv", index=False)
    pop.to_csv(d / "pop.csv", index=False)
    forest = RandomForestClassifier(10, bootstrap=False, random_state=0)
    joblib.dump(forest.fit(train.drop(columns="label"), train["label"]), d / "forest.joblib")
    bagged = RandomForestClassifier(10, bootstrap=True, random_state=0)
    joblib.dump(bagged.fit(train.drop(columns="label"), train["label"]), d / "bagged.joblib")
    logistic = LogisticRegression().fit(train.drop(columns="label"), train["label"])
    joblib.dump(logistic, d / "logistic.joblib")
    return d


def _audit(d, model: str, *extra: str, out=None) -> tuple[int, str, str]:
    argv = [
        "audit",
        "--model-file",
        str(d / model),
        "--train",
        str(d / "train.csv"),
        "--population",
        str(d / "pop.csv"),
        "--label",
        "label",
        "--attacks",
        "loss",
        "--public-size",
        "40",
        "--quiet",
        "--out",
        str(out or d / "out"),
        *extra,
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pickle warning
        return main(argv), "", ""


def test_audit_reconstruct_measures_and_reports(tree_files, tmp_path, capsys):
    code, _, _ = _audit(tree_files, "forest.joblib", "--reconstruct", out=tmp_path)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    found = json.loads((tmp_path / "results.json").read_text())["reconstruction"]
    # what the API measures with the same solver seed and the binary columns --population
    # shows; these 30 records are not all pinned down by 10 trees, so it is not 30 of 30
    train = pd.read_csv(tree_files / "train.csv")
    api = reconstruct_training_set(
        joblib.load(tree_files / "forest.joblib"),
        train.drop(columns="label"),
        train["label"],
        domains=dict.fromkeys(range(8), [0, 1]),
        random_state=0,
        time_limit=120,
    )
    assert (found["n_exact"], found["n_true"], found["bootstrap"]) == (api.n_exact, 30, False)
    assert found["n_exact"] >= 25
    printed = " ".join(captured.out.split())  # the terminal wraps its lines
    assert f"{api.n_exact} of 30 records recovered exactly" in printed
    verdict = json.loads((tmp_path / "results.json").read_text())["verdict"]
    assert f"Reconstruction from the model file: {found['sentence']}" in verdict
    assert "Reconstruction from the model file" in (tmp_path / "report.html").read_text()


def test_audit_without_the_flag_notes_it_once(tree_files, tmp_path, capsys):
    code, _, _ = _audit(tree_files, "forest.joblib", out=tmp_path)
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "may be reconstructible" in line]
    assert code == 0 and len(notes) == 1 and notes[0].startswith("tabmia: note:")
    assert "--reconstruct measures it" in notes[0]
    assert "reconstruction" not in json.loads((tmp_path / "results.json").read_text())


def test_audit_of_a_bagged_forest_claims_no_reconstructible_training_set(
    tree_files, tmp_path, capsys
):
    """A bagged forest claims no reconstructible training set (its reconstruction is not
    measured: benchmarks/results/tree_reconstruction_bagged.md), and every forest audit's
    stderr stays free of a note that would follow each default forest."""
    code, _, _ = _audit(tree_files, "bagged.joblib", out=tmp_path)
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0 and "may be reconstructible" not in err and "bagged" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--reconstruct"], "--reconstruct: LogisticRegression is not"),
        (["--reconstruct", "--reconstruct-time", "0"], None),
    ],
)
def test_audit_reconstruct_refusals_are_one_error_line(tree_files, tmp_path, capsys, argv, message):
    model = "logistic.joblib" if message else "forest.joblib"
    code, _, _ = _audit(tree_files, model, *argv, out=tmp_path / "never")
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("tabmia: error:")]
    assert code == 2 and len(errors) == 1, err
    assert (message or "--reconstruct-time must be positive") in errors[0]
    assert not (tmp_path / "never").exists()


def test_reconstruct_is_refused_in_the_built_in_game(capsys, tmp_path):
    code = main(["audit", "--reconstruct", "--out", str(tmp_path / "x"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--reconstruct applies to an audit of your own model" in err
