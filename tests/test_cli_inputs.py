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
from tabmia.cli._inputs import UsageError, apply_categories, model_categories
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
    # item 5: files that are not what their flag expects, told apart by content
    train.to_csv(d / "table.joblib", index=False)  # a CSV under a model's name
    (d / "image.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    (d / "blob.csv").write_bytes(bytes(range(256)) * 4)
    pd.read_csv(d / "pop_proba.csv").assign(**{"1": 0.6}).to_csv(d / "sums_over_1.csv",
                                                                   index=False)
    _pickle_elsewhere(d)
    return d


def _pickle_elsewhere(d: Path) -> None:
    """Models whose class cannot be imported here: one from a module of the saving
    process's own, one defined in its ``__main__``."""
    import subprocess
    import sys

    (d / "saver").mkdir()
    (d / "saver" / "tabmia_test_models.py").write_text("class Scorer:\n    pass\n")
    code = ("import sys, joblib\nsys.path.insert(0, {saver!r})\nimport tabmia_test_models\n"
            "class Local:\n    pass\n"
            "joblib.dump(tabmia_test_models.Scorer(), {d!r} + '/own_module.joblib')\n"
            "joblib.dump(Local(), {d!r} + '/main_class.joblib')\n")
    subprocess.run([sys.executable, "-c", code.format(saver=str(d / "saver"), d=str(d))],
                   check=True)


def _bad(d: Path) -> list[tuple[str, list[str], str]]:
    own = ["--model-file", str(d / "model.joblib"), "--train", str(d / "train.csv"),
           "--label", LABEL]
    pop = ["--population", str(d / "pop.csv")]
    probas = ["--train", str(d / "train.csv"), "--population", str(d / "pop.csv"), "--label",
              LABEL, "--train-proba", str(d / "train_proba.csv"), "--population-proba",
              str(d / "pop_proba.csv")]
    return [
        ("one-row population", [*own, "--population", str(d / "pop1.csv")],
         "has 1 record(s); it needs at least 40"),
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
                          "--label", LABEL, *pop], "a CSV / text table (a data file), not a model"),
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
        # item 3: an --fpr the calibration records cannot promise, refused before training
        ("fpr unresolvable, own model", [*own, *pop, "--public-size", "30", "--fpr", "0.01"],
         "loss: fpr=0.01 cannot be promised from 30 calibration records"),
        ("fpr unresolvable, game", ["--public-size", "50", "--fpr", "0.01", "--attacks",
                                    "lira"],
         "lira: fpr=0.01 cannot be promised from 50 calibration records (the 50 public"),
        # item 4: every flag acts or is refused, naming the mode
        ("seeds with a model file", [*own, *pop, "--seeds", "3"],
         "--seeds applies to the built-in game"),
        ("seeds 1 with a model file", [*own, *pop, "--seeds", "1"], "--seeds applies to the"),
        ("dataset with a model file", [*own, *pop, "--dataset", "adult"],
         "--dataset applies to the built-in game (--dataset, --model); an audit of your own "
         "model (--model-file) does not use it"),
        ("model with a model file", [*own, *pop, "--model", "catboost"], "--model applies"),
        ("train-size with a model file", [*own, *pop, "--train-size", "0.3"],
         "--train-size applies"),
        ("max-records with a model file", [*own, *pop, "--max-records", "100"],
         "--max-records applies"),
        ("prior with probabilities", [*probas, "--prior", "2"],
         "(--train-proba / --population-proba) does not use it"),
        ("categorical with probabilities", [*probas, "--categorical", "mean radius"],
         "--categorical applies to a --model-file"),
        ("recipe in the game", ["--recipe", "catboost"],
         "--recipe applies to an audit of your own model"),
        ("label in the game", ["--label", LABEL], "--label applies to an audit of your own"),
        ("max-members in the game", ["--max-members", "50"], "--max-members applies"),
        ("n-shadow without lira", ["--n-shadow", "8"],
         "--n-shadow sets LiRA's shadow models, but none of the attacks (loss) has any"),
        ("cache-dir without shadows", ["--cache-dir", str(d / "cache")],
         "--cache-dir sets where shadow / reference models are kept"),
        ("n-shadow 100000", ["--attacks", "lira", "--n-shadow", "100000"],
         "lira: 100000 shadow models (--n-shadow or the attack spec) is more than the ceiling "
         "of 1024 and the 142 public records they train on: a typo? Pass --force"),
        ("n-shadow above the public records", ["--attacks", "lira", "--max-records", "100",
                                               "--n-shadow", "40"],
         "more than the 25 public records"),
        ("spec above the ceiling", ["--attacks", "rmia:n_reference=5000"],
         "rmia:n_reference=5000: 5000 reference models"),
        ("probabilities that are not", [*probas[:-1], str(d / "sums_over_1.csv")],
         "cannot score the --train and --population records: the target returned rows that "
         "do not sum to 1"),
        # item 5: files told apart by their content
        ("csv named as a model", ["--model-file", str(d / "table.joblib"), "--train",
                                  str(d / "train.csv"), "--label", LABEL, *pop],
         "table.joblib: a CSV / text table (a data file), not a model"),
        ("png as training data", ["--model-file", str(d / "model.joblib"), "--train",
                                  str(d / "image.csv"), "--label", LABEL, *pop],
         "image.csv: a PNG image, not a CSV or parquet table"),
        ("png as a model", ["--model-file", str(d / "image.csv"), "--train",
                            str(d / "train.csv"), "--label", LABEL, *pop],
         "image.csv: a PNG image, not a model"),
        ("binary as training data", ["--model-file", str(d / "model.joblib"), "--train",
                                     str(d / "blob.csv"), "--label", LABEL, *pop],
         "blob.csv: a binary file, not a CSV or parquet table"),
        ("class of an unimportable module", ["--model-file", str(d / "own_module.joblib"),
                                             "--train", str(d / "train.csv"), "--label", LABEL,
                                             *pop],
         "the model needs class Scorer from module 'tabmia_test_models', which is not "
         "importable here"),
        ("class of the saving script", ["--model-file", str(d / "main_class.joblib"),
                                        "--train", str(d / "train.csv"), "--label", LABEL, *pop],
         "the model's class Local was defined in the script that saved it (__main__)"),
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
                     "--label", LABEL, "--attacks", "loss,confidence", "--fpr", "0.05", "--quiet",
                     "--out", str(tmp_path / "o")])
    assert code == 0
    err = capsys.readouterr().err
    # one tabmia line, once (not a Python warning, not once per attack)
    assert err.count("12 of the 212") == 1
    assert "tabmia: warning: 12 of the 212 --population records repeat records of --train" in err
    assert not [w for w in caught if issubclass(w.category, DuplicateRecordsWarning)]
    payload = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [w[:14] for w in payload["context"]["warnings"]] == ["12 of the 212 "]


def test_audit_model_warns_on_shared_records():
    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(y))  # a random split: nothing else to warn
    X, y = X[order], y[order]
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


# ------------------------------------------------------- issue 16: plausibility
def _own(d: Path, train: str = "train.csv", pop: str = "pop.csv", *extra: str) -> list[str]:
    return ["audit", "--model-file", str(d / "model.joblib"), "--train", str(d / train),
            "--population", str(d / pop), "--label", LABEL, "--quiet", *extra]


def _warnings(out: Path) -> list[str]:
    return json.loads((out / "results.json").read_text())["context"].get("warnings", [])


def _findings(out: Path) -> list[str]:
    """The plausibility findings' messages: results.json keeps them in the verdict state."""
    return [f["message"] for f in
            json.loads((out / "results.json").read_text())["state"]["findings"]]


def test_swapped_train_and_population_warn_before_and_after_the_attacks(files, tmp_path,
                                                                         capsys):
    out = tmp_path / "o"
    code = main(_own(files, "pop.csv", "train.csv", "--attacks", "loss", "--fpr", "0.05",
                     "--out", str(out)))
    err = capsys.readouterr().err
    assert code == 0
    lines = [line for line in err.splitlines() if line.startswith("tabmia: warning:")]
    assert lines[1].startswith("tabmia: warning: the model fits its training records worse "
                               "than the population records: accuracy 0.9")
    assert "(one-sided Welch t-test, p = " in lines[1]
    assert "swapped" in lines[1]
    assert lines[2].startswith("tabmia: warning: AUC below 0.5 beyond chance: loss 0.")
    assert [w[:30] for w in _findings(out)] == [lines[1][17:47], lines[2][17:47]]
    assert _warnings(out) == []  # in the verdict, not among the header's warnings


def test_wrong_training_labels_warn(files, tmp_path, capsys):
    train = pd.read_csv(files / "train.csv").assign(**{LABEL: 1})  # one class
    train.to_csv(tmp_path / "t.csv", index=False)
    out = tmp_path / "o"
    assert main(_own(files, "", "pop.csv", "--attacks", "loss", "--fpr", "0.05", "--out",
                     str(out))[:4] + [str(tmp_path / "t.csv")] + _own(files)[5:] + [
        "--attacks", "loss", "--fpr", "0.05", "--out", str(out)]) == 0
    checks = [w.split(" (")[0][:40] for w in _findings(out)]
    assert checks[0].startswith("the model fits its training records")
    assert checks[1].startswith("the labels of the training records")
    assert "1: 100.0%" in _findings(out)[1]
    capsys.readouterr()


def test_honest_own_model_audit_has_no_warning(files, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(_own(files, "train.csv", "pop.csv", "--attacks", "loss,entropy", "--fpr",
                     "0.05", "--out", str(out))) == 0
    assert _warnings(out) == []
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "runs any code" in err[0]  # the pickle warning only


def test_public_size_far_below_the_fpr_is_refused(files, tmp_path, capsys):
    """Issue 16 item 3: one calibration record promised FPR 0.5 and flagged 265 of 284
    non-members. The default FPR's fallback stops at a floor (the attacks refuse, with
    UnresolvableFPRError, a fallback above their maximum fallback FPR); the CLI turns
    that into one error line naming --public-size."""
    out = tmp_path / "o"
    code = main(["audit", "--public-size", "1", "--attacks", "loss", "--quiet", "--out",
                 str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("tabmia: error: "), err
    assert "--public-size" in err[0]
    assert not out.exists()


def test_flags_in_a_config_file_must_act_too(files, tmp_path, capsys):
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(f"attacks: [loss]\nn_references: 8\nout: {tmp_path / 'o'}\n")
    assert main(["audit", "--config", str(cfg), "--quiet"]) == 2
    assert "--n-references sets RMIA's" in capsys.readouterr().err


def test_force_lifts_the_shadow_ceiling():
    from argparse import Namespace

    from tabmia.cli._checks import check_model_counts
    from tabmia.attacks import LiRAAttack

    attacks = {"lira": LiRAAttack(n_shadow=2000)}
    with pytest.raises(UsageError, match="ceiling of 1024"):
        check_model_counts(Namespace(force=False), attacks, 5000)
    check_model_counts(Namespace(force=True), attacks, 5000)
    check_model_counts(Namespace(force=False), {"lira": LiRAAttack(n_shadow=1024)}, 5000)


def test_probability_columns_match_by_class_name_in_any_order(files, tmp_path, capsys):
    common = ["audit", "--train", str(files / "train.csv"), "--population",
              str(files / "pop.csv"), "--label", LABEL, "--train-proba",
              str(files / "train_proba.csv"), "--attacks", "loss,loss_class", "--fpr", "0.05",
              "--quiet"]
    pd.read_csv(files / "pop_proba.csv")[["1", "0"]].to_csv(tmp_path / "p.csv", index=False)
    assert main([*common, "--population-proba", str(files / "pop_proba.csv"), "--out",
                 str(tmp_path / "a")]) == 0
    assert main([*common, "--population-proba", str(tmp_path / "p.csv"), "--out",
                 str(tmp_path / "b")]) == 0
    a, b = (pd.read_csv(tmp_path / x / "scores.csv.gz")["score"] for x in "ab")
    assert np.array_equal(a, b)
    pd.read_csv(files / "pop_proba.csv").rename(columns={"1": "2"}).to_csv(
        tmp_path / "q.csv", index=False)
    capsys.readouterr()
    assert main([*common, "--population-proba", str(tmp_path / "q.csv"), "--out",
                 str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "--train-proba columns ['0', '1'] and --population-proba columns ['0', '2'] name " \
           "different classes" in err


def test_one_hot_probabilities_are_accepted_as_a_label_only_model(files, tmp_path, capsys):
    paths = {}
    for name in ("train", "pop"):
        p = pd.read_csv(files / f"{name}_proba.csv")
        hard = (p["1"] > 0.5).astype(float)
        pd.DataFrame({"0": 1.0 - hard, "1": hard}).to_csv(tmp_path / f"{name}.csv", index=False)
        paths[name] = str(tmp_path / f"{name}.csv")
    out = tmp_path / "o"
    assert main(["audit", "--train", str(files / "train.csv"), "--population",
                 str(files / "pop.csv"), "--label", LABEL, "--train-proba", paths["train"],
                 "--population-proba", paths["pop"], "--attacks", "loss", "--fpr", "0.05",
                 "--quiet", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "tabmia: warning: the model's probabilities are one-hot (0/1) on all 569 " \
           "records: a label-only model" in err
    assert "tabmia audit --label-only" in err
    assert len(_findings(out)) == 1


# ------------------------------------------------------------- issue 16: Ctrl-C
def _interrupt_rmia(monkeypatch):
    from tabmia.attacks.rmia import RMIAAttack

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(RMIAAttack, "_fit", interrupted)


def test_ctrl_c_is_one_line_status_130_and_the_rerun_resumes(files, tmp_path, capsys,
                                                              monkeypatch):
    cache, out = tmp_path / "cache", tmp_path / "out"
    argv = [*_own(files), "--recipe", "logistic_regression", "--attacks", "lira,rmia",
            "--n-shadow", "4", "--n-references", "2", "--fpr", "0.05", "--cache-dir",
            str(cache), "--out", str(out)]
    with monkeypatch.context() as patch:
        _interrupt_rmia(patch)  # LiRA's 4 shadows are trained, then Ctrl-C
        assert main(argv) == 130
    err = capsys.readouterr().err.splitlines()
    assert "Traceback" not in "\n".join(err)
    assert err[-1] == (f"tabmia: interrupted: nothing written to {out}; 4 shadow / reference "
                       f"model(s) kept in {cache}: the same command trains only the missing "
                       f"ones: tabmia {' '.join(argv)}")
    assert not out.exists()
    assert main(argv) == 0
    context = json.loads((out / "results.json").read_text())["context"]
    assert context["shadow models from --cache-dir"] == 4


def test_ctrl_c_without_a_cache_suggests_one(files, tmp_path, capsys, monkeypatch):
    _interrupt_rmia(monkeypatch)
    argv = [*_own(files), "--recipe", "logistic_regression", "--attacks", "rmia",
            "--n-references", "2", "--fpr", "0.05", "--out", str(tmp_path / "o")]
    assert main(argv) == 130
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("tabmia: interrupted: nothing written to ")
    assert last.endswith(f"tabmia {' '.join(argv)} --cache-dir tabmia-cache")
    assert "were not kept" in last


# --------------------------------------------------------- issue 16: warnings
def test_every_warning_is_one_tabmia_line_once(capsys):
    from tabmia.cli._outputs import one_line_warnings, recorded_warnings

    site = "/usr/lib/python3/site-packages/sklearn/linear_model/_logistic.py"
    with one_line_warnings(), recorded_warnings(DuplicateRecordsWarning) as kept:
        for _ in range(3):  # once per attack
            warnings.warn("9 of 39 candidate records ...", DuplicateRecordsWarning)
        warnings.warn_explicit("lbfgs failed to converge", UserWarning, site, 10)
    err = capsys.readouterr().err.splitlines()
    assert err == ["tabmia: warning: 9 of 39 candidate records ...",
                   "tabmia: warning: UserWarning from sklearn: lbfgs failed to converge"]
    assert kept == ["9 of 39 candidate records ..."]


def test_duplicate_records_warning_once_per_audit(tmp_path, capsys, monkeypatch):
    import tabmia.datasets

    data = load_breast_cancer(as_frame=True)
    doubled = pd.concat([data.data, data.data], ignore_index=True)  # every record twice
    bunch = type(data)(data=doubled, target=np.r_[data.target, data.target])
    monkeypatch.setattr(tabmia.datasets, "load_dataset", lambda name: bunch)
    assert main(["audit", "--attacks", "loss,confidence,entropy", "--fpr", "0.05", "--quiet",
                 "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err.splitlines()
    dup = [line for line in err if "candidate records are among the public records" in line]
    assert len(dup) == 1 and dup[0].startswith("tabmia: warning: ")
    assert all(line.startswith("tabmia: ") for line in err), err


# -------------------------------------------------------- issue 16: the recipe
def test_preset_recipe_on_a_native_categorical_catboost_model_is_refused(categorical,
                                                                         tmp_path, capsys):
    catboost = pytest.importorskip("catboost")
    d, train, _ = categorical
    model = catboost.CatBoostClassifier(iterations=10, verbose=0, thread_count=1,
                                        cat_features=["colour", "size"],
                                        allow_writing_files=False)
    joblib.dump(model.fit(train.drop(columns="y"), train["y"]), tmp_path / "m.joblib")
    argv = ["audit", "--model-file", str(tmp_path / "m.joblib"), "--train",
            str(d / "train.csv"), "--population", str(d / "pop.csv"), "--label", "y",
            "--recipe", "catboost", "--attacks", "lira", "--quiet", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert ("tabmia: error: --recipe catboost is a preset that one-hot encodes categorical "
            "columns, but") in err
    assert "CatBoostClassifier that takes categorical features natively (colour, size)" in err
    assert "--recipe FILE.joblib" in err

    from tabmia.cli._checks import check_recipe_matches

    check_recipe_matches(model, "catboost", "m.joblib", force=True)  # --force: as asked
    check_recipe_matches(model, str(tmp_path / "recipe.joblib"), "m.joblib", force=False)
