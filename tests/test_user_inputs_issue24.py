"""What a user hit in issue 24 (item 5): each mistake ends in one clear error."""

from __future__ import annotations

import pickle
import warnings

import joblib
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from tabmia.attacks import CalibratedAttack, QuantileAttack, ScoreAttack
from tabmia.cli import main


@pytest.mark.parametrize("cls, default", [(ScoreAttack, "loss"), (CalibratedAttack, "loss"),
                                          (QuantileAttack, "hinge")])
def test_statistic_and_the_old_score_keyword_together_raise(cls, default):
    # the default's own name given explicitly is still "both given"
    with pytest.raises(TypeError, match="give statistic only"):
        cls(statistic=default, score="entropy")
    with pytest.raises(TypeError, match="give statistic only"):
        cls(statistic="entropy", score="entropy")
    # the old keyword alone still works, with its warning; a clone or a pickle of the
    # default still takes it
    with pytest.warns(FutureWarning, match="renamed 'statistic'"):
        assert cls(score="entropy").statistic == "entropy"
    for copy in (clone(cls()), pickle.loads(pickle.dumps(cls()))):
        assert copy.statistic == default
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert clone(cls()).get_params()["statistic"] == default


# ------------------------------------------------------------------ the command line


@pytest.fixture()
def own_model(tmp_path):
    X, y = make_classification(300, n_features=4, random_state=0)
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y=y)
    frame[:150].to_csv(tmp_path / "train.csv", index=False)
    frame[150:].to_csv(tmp_path / "population.csv", index=False)
    frame[150:160].to_csv(tmp_path / "tiny.csv", index=False)
    joblib.dump(LogisticRegression().fit(X[:150], y[:150]), tmp_path / "model.joblib")
    return tmp_path


def _one_error(capsys, code, *needles):
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    # one error line; anything else said is a tabmia line too (loading a joblib warns)
    errors = [line for line in err if line.startswith("tabmia: error:")]
    assert len(errors) == 1 and all(line.startswith("tabmia: ") for line in err), err
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.mark.parametrize("extra, needles", [
    (["--attacks", "loss", "--recipe", "logistic_regression"],
     ["--recipe", "none of the attacks (loss) trains any"]),
    (["--unresolved", "pass"], ["--unresolved", "no --fail-above"]),
    (["--epsilon", "0"], ["--epsilon must be > 0"]),
])
def test_flags_that_cannot_act_are_refused_before_anything_runs(own_model, tmp_path, capsys,
                                                                 extra, needles):
    out = tmp_path / "out"
    code = main(["audit", "--model-file", str(own_model / "model.joblib"), "--trust-types",
                 "--train", str(own_model / "train.csv"), "--population",
                 str(own_model / "population.csv"), "--label", "y", *extra, "--out", str(out)])
    _one_error(capsys, code, *needles)
    assert not out.exists()


def test_a_population_too_small_names_the_number_needed(own_model, tmp_path, capsys):
    code = main(["audit", "--model-file", str(own_model / "model.joblib"), "--trust-types",
                 "--train", str(own_model / "train.csv"), "--population",
                 str(own_model / "tiny.csv"), "--label", "y", "--out", str(tmp_path / "o")])
    # half of the population is the attacker's: 40 records leave the 20 candidates needed
    _one_error(capsys, code, "--population has 10 record(s); it needs at least 40")
    code = main(["audit", "--model-file", str(own_model / "model.joblib"), "--trust-types",
                 "--train", str(own_model / "train.csv"), "--population",
                 str(own_model / "tiny.csv"), "--label", "y", "--public-size", "5",
                 "--out", str(tmp_path / "o")])
    _one_error(capsys, code, "it needs at least 25")


def test_benchmark_without_a_loadable_data_set_is_an_error_and_writes_nothing(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TABMIA_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("TABMIA_OFFLINE", "1")
    monkeypatch.setenv("TABMIA_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "bench"
    code = main(["benchmark", "--datasets", "eye_movements", "--attacks", "loss", "--quick",
                 "--out", str(out), "--quiet"])
    _one_error(capsys, code, "no data set could be loaded", "eye_movements")
    assert not out.exists()
