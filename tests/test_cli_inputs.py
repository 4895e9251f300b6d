"""`tabmia audit` inputs: every wrong input is one error line, duplicated records are
caught, native-categorical models load from CSV, long audits are configurable and resume."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

from tabmia import DuplicateRecordsWarning
from tabmia._cli_inputs import UsageError, apply_categories, model_categories
from tabmia._records import row_hashes, shared_mask
from tabmia.attacks import LossAttack
from tabmia.audit import audit_model
from tabmia.cli import main
from tabmia.recipes import make_model

LABEL = "diagnosis"


@pytest.fixture(scope="module")
def files(tmp_path_factory, write_audit_files):
    d = tmp_path_factory.mktemp("cli-inputs")
    train, pop = write_audit_files(d)
    X = train.drop(columns=LABEL)
    joblib.dump(make_model("logistic_regression", X).fit(X, train[LABEL]), d / "pipe.joblib")
    pop.iloc[:1].to_csv(d / "pop1.csv", index=False)
    pd.concat([pop.iloc[:200], train.iloc[:12]]).to_csv(d / "pop_partial.csv", index=False)
    model = joblib.load(d / "model.joblib")
    for name, frame in (("train", train), ("pop", pop)):
        pd.DataFrame(model.predict_proba(frame.drop(columns=LABEL)), columns=["0", "1"]).to_csv(
            d / f"{name}_proba.csv", index=False)
    (d / "garbage.joblib").write_bytes(b"\x00\x01 not a pickle")
    (d / "a_folder").mkdir()
    (d / "a_file").write_text("x")
    pop.assign(**{LABEL: pop[LABEL].astype(float).where(np.arange(len(pop)) != 3)}).to_csv(
        d / "pop_nan.csv", index=False)
    text = pop.assign(**{LABEL: np.where(pop[LABEL] == 1, "benign", "malignant")})
    text.loc[text.index[5], LABEL] = None
    text.to_csv(d / "pop_text_nan.csv", index=False)
    renamed = train.rename(columns={"mean radius": "radius \u00e9"})
    renamed.to_csv(d / "latin1.csv", index=False, encoding="latin-1")
    (d / "dup_columns.csv").write_text(f"a,a,{LABEL}\n1,2,0\n3,4,1\n")
    return d


def _bad(d: Path) -> list[tuple[str, list[str], str]]:
    own = ["--model-file", str(d / "model.joblib"), "--train", str(d / "train.csv"),
           "--label", LABEL]
    pop = ["--population", str(d / "pop.csv")]
    probas = ["--train", str(d / "train.csv"), "--population", str(d / "pop.csv"), "--label",
              LABEL, "--train-proba", str(d / "train_proba.csv"), "--population-proba",
              str(d / "pop_proba.csv")]
    return [
        ("one-row population", [*own, "--population", str(d / "pop1.csv")], "at least 2"),
        ("max-members 0", [*own, *pop, "--max-members", "0"], "--max-members must be >= 1"),
        ("max-members -5", [*own, *pop, "--max-members", "-5"], "--max-members must be >= 1"),
        ("n-jobs 0", [*own, *pop, "--n-jobs", "0"], "--n-jobs must not be 0"),
        ("lira without recipe", ["--model-file", str(d / "pipe.joblib"), "--train",
                                 str(d / "train.csv"), "--label", LABEL, *pop, "--attacks", "lira"],
         "--recipe"),
        ("merlin on probabilities", [*probas, "--attacks", "merlin"], "need --model-file"),
        ("out unwritable", [*own, *pop, "--out", "/proc/tabmia-out"], "cannot write in /proc"),
        ("out under a file", [*own, *pop, "--out", str(d / "a_file" / "sub")], "is a file"),
        ("train-size 0", ["--train-size", "0"], "--train-size must be a fraction"),
        ("train-size 1.5", ["--train-size", "1.5"], "--train-size must be a fraction"),
        ("train-size 100000", ["--train-size", "100000"], "outside [1, 569]"),
        ("garbage joblib", ["--model-file", str(d / "garbage.joblib"), "--train",
                            str(d / "train.csv"), "--label", LABEL, *pop], "not a joblib or pickle"),
        ("csv as model", ["--model-file", str(d / "train.csv"), "--train", str(d / "train.csv"),
                          "--label", LABEL, *pop], "a data file, not a model"),
        ("folder as model", ["--model-file", str(d / "a_folder"), "--train", str(d / "train.csv"),
                             "--label", LABEL, *pop], "a folder, not a model file"),
        ("NaN label", [*own, "--population", str(d / "pop_nan.csv")], "is empty in 1 row(s)"),
        ("NaN text label", [*own, "--population", str(d / "pop_text_nan.csv")],
         "is empty in 1 row(s)"),
        ("latin-1 csv", ["--model-file", str(d / "model.joblib"), "--train", str(d / "latin1.csv"),
                         "--label", LABEL, *pop], "pass --encoding"),
        ("duplicate columns", ["--model-file", str(d / "model.joblib"), "--train",
                               str(d / "dup_columns.csv"), "--label", LABEL, *pop],
         "duplicate column names ['a']"),
        ("population is the training file", [*own, "--population", str(d / "train.csv")],
         "300 of its 300 records"),
        ("n-shadow 2", ["--n-shadow", "2"], "--n-shadow must be >= 4"),
        ("threads 0", ["--threads", "0"], "--threads must be >= 1"),
        ("n-references 1", ["--n-references", "1"], "--n-references must be >= 2"),
        ("unknown categorical", [*own, *pop, "--categorical", "colour"], "no column 'colour'"),
    ]


CASES = [c[0] for c in _bad(Path("."))]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_error_line(files, case, tmp_path, capsys):
    _, args, message = next(c for c in _bad(files) if c[0] == case)
    out = tmp_path / "never"
    # a case's own --attacks comes later and wins
    argv = ["audit", "--attacks", "loss", *args, "--quiet"] + (
        [] if "--out" in args else ["--out", str(out)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pickle warning
        code = main(argv)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("tabmia: error:")]
    assert code == 2, err
    assert len(errors) == 1 and message in errors[0], err
    assert "Traceback" not in err and "np.str_" not in err and "np.int64" not in err
    assert not out.exists()
    assert not list(files.glob(".tabmia-probe-*"))


def test_label_messages_use_plain_values(files, tmp_path, capsys):
    pd.read_csv(files / "pop.csv").assign(**{LABEL: "benign"}).to_csv(tmp_path / "p.csv",
                                                                        index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["audit", "--model-file", str(files / "model.joblib"), "--train",
                     str(files / "train.csv"), "--population", str(tmp_path / "p.csv"),
                     "--label", LABEL, "--attacks", "loss", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "never saw: ['benign']" in err and "classes are [0, 1]" in err, err


def test_latin1_reads_with_encoding(files, tmp_path):
    X = pd.read_csv(files / "latin1.csv", encoding="latin-1")
    joblib.dump(RandomForestClassifier(n_estimators=5, random_state=0).fit(
        X.drop(columns=LABEL), X[LABEL]), tmp_path / "m.joblib")
    pop = pd.read_csv(files / "pop.csv").rename(columns={"mean radius": "radius \u00e9"})
    pop.to_csv(tmp_path / "p.csv", sep=";", index=False, encoding="latin-1")
    with pytest.raises(UnicodeDecodeError):
        pd.read_csv(tmp_path / "p.csv", sep=";")
    X.to_csv(tmp_path / "t.csv", sep=";", index=False, encoding="latin-1")
    with pytest.warns(UserWarning, match="runs any code"):
        code = main(["audit", "--model-file", str(tmp_path / "m.joblib"), "--train",
                     str(tmp_path / "t.csv"), "--population", str(tmp_path / "p.csv"), "--label",
                     LABEL, "--encoding", "latin-1", "--sep", ";", "--attacks", "loss", "--fpr",
                     "0.05", "--quiet", "--out", str(tmp_path / "o")])
    assert code == 0


# --------------------------------------------------------------- duplicates
def test_partial_overlap_warns_and_is_recorded(files, tmp_path, capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["audit", "--model-file", str(files / "model.joblib"), "--train",
                     str(files / "train.csv"), "--population", str(files / "pop_partial.csv"),
                     "--label", LABEL, "--attacks", "loss", "--fpr", "0.05", "--quiet",
                     "--out", str(tmp_path / "o")])
    assert code == 0
    err = capsys.readouterr().err
    assert "tabmia: warning: 12 of the 212 --population records repeat records of --train" in err
    assert not [w for w in caught if issubclass(w.category, DuplicateRecordsWarning)]
    payload = json.loads((tmp_path / "o" / "results.json").read_text())
    assert payload["context"]["warning"].startswith("12 of the 212")


def test_audit_model_warns_on_shared_records():
    X, y = load_breast_cancer(return_X_y=True)
    model = LogisticRegression(max_iter=3000).fit(X[:300], y[:300])
    X_pop, y_pop = np.r_[X[300:], X[:7]], np.r_[y[300:], y[:7]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        audit_model(model, X[:300], y[:300], X_pop, y_pop, {"loss": LossAttack(fpr=0.05)})
    messages = [str(w.message) for w in caught if w.category is DuplicateRecordsWarning]
    assert messages[0].startswith("7 of 300 training records also appear")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DuplicateRecordsWarning)
        audit_model(model, X[:300], y[:300], X[300:], y[300:], {"loss": LossAttack(fpr=0.05)})


def test_decision_function_warns_on_public_candidates():
    X, y = load_breast_cancer(return_X_y=True)
    model = LogisticRegression(max_iter=3000).fit(X[:300], y[:300])
    attack = LossAttack(model, fpr=0.05).fit(X[300:], y[300:])
    with pytest.warns(DuplicateRecordsWarning, match="^9 of 39 candidate records"):
        attack.decision_function(np.r_[X[:30], X[300:309]], np.r_[y[:30], y[300:309]])
    flipped = 1 - y[300:309]  # same features, other label: other records
    with warnings.catch_warnings():
        warnings.simplefilter("error", DuplicateRecordsWarning)
        attack.decision_function(np.r_[X[:30], X[300:309]], np.r_[y[:30], flipped])


def test_shared_mask_compares_values_not_dtypes():
    a = pd.DataFrame({"x": [1, 2, 3], "z": ["a", "b", "c"]})
    b = pd.DataFrame({"z": ["c", "b", "q"], "x": [3.0, 2.0, 1.0]})
    assert shared_mask(a, [0, 1, 1], b, np.array([1.0, 0.0, 1.0])).tolist() == [False, False, True]
    dense = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0], [0.0, 1.5, 0.0]])
    h = row_hashes(sp.csr_matrix(dense))
    assert h[0] == h[2] and h[0] != h[1]
    assert (row_hashes(sp.csc_matrix(dense)) == h).all()


# --------------------------------------------------------------- categoricals
@pytest.fixture(scope="module")
def categorical(tmp_path_factory):
    d = tmp_path_factory.mktemp("categorical")
    rng = np.random.RandomState(0)
    n = 400
    df = pd.DataFrame({
        "num": rng.randn(n).round(3),
        "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], n)),
    })
    df["y"] = ((df["colour"] == "red").to_numpy() ^ (rng.rand(n) < 0.2)).astype(int)
    train, pop = df.iloc[:200], df.iloc[200:]
    train.to_csv(d / "train.csv", index=False)
    pop.to_csv(d / "pop.csv", index=False)
    return d, train, pop


def _native_models():
    out = []
    for module, build in (
        ("xgboost", lambda m: m.XGBClassifier(n_estimators=8, enable_categorical=True,
                                              tree_method="hist", n_jobs=1)),
        ("lightgbm", lambda m: m.LGBMClassifier(n_estimators=8, verbose=-1, n_jobs=1)),
    ):
        out.append(pytest.param(module, build, id=module))
    return out


@pytest.mark.parametrize(("module", "build"), _native_models())
def test_native_categorical_model_from_csv(categorical, module, build, tmp_path, capsys):
    lib = pytest.importorskip(module)
    d, train, pop = categorical
    model = build(lib).fit(train.drop(columns="y"), train["y"])
    joblib.dump(model, tmp_path / "m.joblib")
    flags = ["--model-file", str(tmp_path / "m.joblib"), "--train", str(d / "train.csv"),
             "--population", str(d / "pop.csv"), "--label", "y", "--attacks", "loss",
             "--fpr", "0.05", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["audit", *flags, "--out", str(tmp_path / "o")]) == 0, capsys.readouterr().err
    scores = pd.read_csv(tmp_path / "o" / "scores.csv.gz")
    members = scores[scores["source"] == "train"].sort_values("record")
    p = model.predict_proba(train.drop(columns="y"))[np.arange(200), train["y"].to_numpy()]
    assert np.allclose(members["score"], np.log(p), atol=1e-6)  # the categories were restored


def test_declared_categorical_columns(categorical):
    d, train, pop = categorical
    frames = [pd.read_csv(d / "train.csv"), pd.read_csv(d / "pop.csv").iloc[:5]]
    frames[1].loc[frames[1].index[0], "size"] = "XL"  # only in the population
    out = apply_categories(None, frames, ["size"], ["--train", "--population"])
    assert [o["size"].dtype.categories.tolist() for o in out] == [["L", "M", "S", "XL"]] * 2
    assert out[1]["size"].iloc[0] == "XL"
    assert not isinstance(out[0]["colour"].dtype, pd.CategoricalDtype)  # not declared
    with pytest.raises(UsageError, match="no column 'shape' in --train"):
        apply_categories(None, frames, ["shape"], ["--train", "--population"])


def test_stored_categories_are_refused_for_unknown_values(categorical, tmp_path):
    xgb = pytest.importorskip("xgboost")
    d, train, _ = categorical
    model = xgb.XGBClassifier(n_estimators=4, enable_categorical=True, tree_method="hist",
                              n_jobs=1).fit(train.drop(columns="y"), train["y"])
    assert model_categories(model)["colour"] == ["blue", "green", "red"]
    frame = pd.read_csv(d / "pop.csv").drop(columns="y").iloc[:3]
    frame.loc[frame.index[1], "colour"] = "purple"
    with pytest.raises(UsageError, match=r"--population: column 'colour' has values .*'purple'"):
        apply_categories(model, [frame], [], ["--population"])


def test_missing_recipe_message_names_the_wrapped_model():
    from tabmia.attacks import LiRAAttack
    from tabmia.target import TargetModel

    X, y = load_breast_cancer(return_X_y=True)
    model = make_model("logistic_regression").fit(X[:300], y[:300])
    attack = LiRAAttack(TargetModel(model), n_shadow=4)
    with pytest.raises(ValueError, match="TargetModel wrapping a fitted Pipeline") as info:
        attack.fit(X[300:], y[300:])
    assert "not a scikit-learn estimator" not in str(info.value)
