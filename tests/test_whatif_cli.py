"""``tabmia whatif``: a small run writes its tables and plot; bad variants are one
``tabmia: error:`` line and exit status 2, before anything is trained or written."""

from __future__ import annotations

import json
import warnings

import joblib
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import RidgeClassifier

from tabmia.cli import main


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    path = tmp_path_factory.mktemp("data") / "cancer.csv"
    X.assign(target=y).to_csv(path, index=False)
    return path


def _whatif(csv, out, *variants, extra=()):
    args = ["whatif", "--data", str(csv), "--label", "target", "--recipe", "random_forest",
            "--attacks", "loss", "--fpr", "0.05", "--limit", "tpr@0.05=0.3", "--bootstrap", "50",
            "--variants", "none", *[f"--variant={v}" for v in variants], *extra, "--out", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main(args)


def test_a_small_run_writes_the_frontier(csv, tmp_path, capsys):
    out = tmp_path / "out"
    code = _whatif(csv, out, "harden:round=1", "retrain:max_depth=3")
    assert code in (0, 1)
    printed = capsys.readouterr().out
    assert "Pass the gate tpr@0.05=0.3" in printed and "selection" in printed
    for name in ("results.md", "results.json", "frontier.csv", "fpr_delivered.csv", "frontier.png",
                 "report.html"):
        assert (out / name).is_file(), name
    page = (out / "report.html").read_text()  # issue 46: a report like the audit's
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    assert "Unit: records" in page and "round1" in page and "risk stated" in page
    table = pd.read_csv(out / "frontier.csv")
    assert list(table["variant"]) == ["original", "round1", "max_depth=3"]
    payload = json.loads((out / "results.json").read_text())
    assert payload["best"] == (None if code == 1 else payload["best"])
    assert len(list((out / "run" / "variants").glob("*.joblib"))) == 3


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ("retrain:max_leaf=3", "does not take"),
        ("grid:max_depth=", "empty"),
        ("harden:top_k=1", "hides nothing"),
        ("harden:round=two", "--variant harden:round=two"),
        ("cap:1", "person ids"),
        ("dp:svm:epsilon=1", "unknown DP model"),
        ("prune:depth=2", "unknown kind"),
        # values scikit-learn refuses only in fit: refused before the original trains
        ("grid:max_depth=4/-1", "'max_depth' parameter of RandomForestClassifier must be"),
        ("retrain:max_depth=-1", "variant max_depth=-1: The 'max_depth' parameter"),
        ("retrain:criterion=purity", "'criterion' parameter"),
    ],
)
def test_bad_variants_are_one_error_line(csv, tmp_path, capsys, variant, message):
    out = tmp_path / "out"
    assert _whatif(csv, out, variant) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tabmia: error:") and message in err[0]
    assert not out.exists()


def test_rounding_a_label_only_recipe_is_refused(csv, tmp_path, capsys):
    recipe = tmp_path / "ridge.joblib"
    joblib.dump(RidgeClassifier(), recipe)
    out = tmp_path / "out"
    code = main(["whatif", "--data", str(csv), "--label", "target", "--recipe", str(recipe),
                 "--attacks", "gap", "--variants", "none", "--variant", "harden:round=2",
                 "--out", str(out)])
    assert code == 2
    err = [e for e in capsys.readouterr().err.splitlines() if e.startswith("tabmia: error:")]
    assert len(err) == 1 and "labels only" in err[0]  # beside the note on loading a joblib file
    assert not out.exists()


def test_german_credit_run(tmp_path, capsys):
    from tabmia.datasets import DataNotFoundError, load_german_credit

    try:
        load_german_credit()
    except DataNotFoundError:
        pytest.skip("german_credit is not in the data home")
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["whatif", "--data", "german_credit", "--attacks", "loss", "--variants", "none",
                     "--variant", "harden:labels_only", "--bootstrap", "50", "--out", str(out)])
    assert code in (0, 1)
    assert "labels_only" in (out / "results.md").read_text()


def test_the_originals_audit_is_tabmia_audit_score_for_score(tmp_path):
    """Issue 41's identity: the original variant of ``whatif`` and the ``tabmia audit``
    command, given the same model, recipe, records, attacks and seed, score alike."""
    import numpy as np
    from sklearn.base import clone
    from sklearn.ensemble import RandomForestClassifier

    from tabmia._attack_builder import build_attacks
    from tabmia.whatif import whatif

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X_tr, y_tr, X_pop, y_pop = X.iloc[:250], y.iloc[:250], X.iloc[250:], y.iloc[250:]
    target = RandomForestClassifier(n_estimators=20, random_state=0).fit(X_tr, y_tr)
    attacks = build_attacks(["loss", "lira"], fpr=0.05, n_shadow=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = whatif(target, X_tr, y_tr, X_pop, y_pop, attacks, variants="original",
                        limit="tpr@0.05=0.3", random_state=3, n_bootstrap=20)
    mine = result.runs_of("original")[0].scores.reset_index(drop=True)

    # the records whatif audited (its utility hold-out aside), as the command reads them
    rows = result.settings["audit_rows"]
    X_tr.assign(target=y_tr).to_csv(tmp_path / "train.csv", index=False)
    X_pop.iloc[rows].assign(target=y_pop.iloc[rows]).to_csv(tmp_path / "population.csv",
                                                            index=False)
    joblib.dump(target, tmp_path / "model.joblib")
    joblib.dump(clone(target), tmp_path / "recipe.joblib")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["audit", "--model-file", str(tmp_path / "model.joblib"),
                     "--recipe", str(tmp_path / "recipe.joblib"),
                     "--train", str(tmp_path / "train.csv"),
                     "--population", str(tmp_path / "population.csv"), "--label", "target",
                     "--attacks", "loss,lira", "--n-shadow", "4", "--fpr", "0.05",
                     "--random-state", "3", "--quiet", "--out", str(tmp_path / "audit")])
    assert code == 0
    theirs = pd.read_csv(tmp_path / "audit" / "scores.csv.gz")
    assert len(theirs) == len(mine) and set(theirs["attack"]) == {"loss", "lira"}
    for col in ("attack", "member", "record", "flagged"):
        assert theirs[col].tolist() == mine[col].tolist(), col
    # the command writes scores as text, to the last digit a float64 needs
    np.testing.assert_allclose(theirs["score"], mine["score"], rtol=1e-12, atol=0)


def test_ctrl_c_says_which_variants_were_kept(csv, tmp_path, capsys, monkeypatch):
    """Issue 46 (item 9): an interrupted what-if keeps its finished variants and reuses them;
    the line must say so, never "nothing written"."""
    import tabmia.whatif._variant_audit as variant_audit

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    out = tmp_path / "out"
    monkeypatch.setattr(variant_audit, "_train", interrupted)  # the retrained variant
    assert _whatif(csv, out, "harden:round=1", "retrain:max_depth=3") == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "nothing written" not in last
    assert "2 finished variant run(s) kept in" in last and "loads them" in last
    monkeypatch.undo()
    assert _whatif(csv, out, "harden:round=1", "retrain:max_depth=3") in (0, 1)
    assert "nothing written" not in capsys.readouterr().err
