"""tabmia where models live (issue 50): models from an MLflow registry, the ``tabmia``
evaluator plugin and its promotion gate, against a real MLflow tracking server.

The server runs on 127.0.0.1 (a free port) with a SQLite backend store in a temporary
folder, for this module only. A leaky forest and a regularised one are registered; the
evaluator audits both, MLflow's threshold gate rejects the first and accepts the second,
exactly as tabmia's own gate decides; ``tabmia audit --model-uri`` audits the same two
from ``models:/`` URIs with the scores of the same fitted objects audited from a file.
Skipped where MLflow (the ``mlflow`` extra, in the ``test`` extra) is not installed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed")

from mlflow.models import infer_signature  # noqa: E402

from tabmia.cli import main  # noqa: E402
from tabmia.mlflow import (  # noqa: E402
    GATE_METRIC,
    TabmiaEvaluator,
    gate_thresholds,
    load_mlflow_model,
    register_evaluator,
)
from tabmia.schema import validate_results  # noqa: E402

#: sklearn's tree storage: trusted for skops, the format MLflow saves scikit-learn in.
TRUSTED = ["sklearn.tree._tree.Tree"]
LIMITS = "tpr@0.05=0.2,auc=0.65"
#: Small and fast: the loss attack and LiRA with four shadow models.
AUDIT = {"attacks": "loss,lira", "n_shadow": 4, "random_state": 0}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mlflow_command() -> list[str]:
    script = Path(sys.executable).with_name("mlflow")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mlflow"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A tracking server with a SQLite store on a free local port; its URI."""
    folder = tmp_path_factory.mktemp("mlflow-server")
    port = _free_port()
    log = (folder / "server.log").open("w")
    proc = subprocess.Popen(
        [*_mlflow_command(), "server",
         "--backend-store-uri", f"sqlite:///{folder / 'store.db'}",
         "--default-artifact-root", str(folder / "artifacts"),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        # no job runners (GenAI scorers' queue): two fewer processes on CI's two cores
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
    )  # fmt: skip
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # the first start creates the store's tables
        while True:
            if proc.poll() is not None:
                pytest.fail("mlflow server exited: " + (folder / "server.log").read_text()[-2000:])
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("mlflow server did not answer in 300 s")
            time.sleep(0.5)
        yield uri
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and its worker, started here
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.fixture
def tracking(server, monkeypatch):
    """This test's MLflow client speaks to the module's server (the CLI's too)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server)
    mlflow.set_tracking_uri(server)
    register_evaluator()  # where tabmia's entry point was not installed
    yield server
    mlflow.set_tracking_uri(None)


@pytest.fixture(scope="module")
def registry(server, tmp_path_factory):
    """A leaky forest (every tree grown out) and a regularised one, fitted on the same
    300 noisy records, registered as credit-leaky (alias champion) and credit-regular;
    the files and frames the audits read."""
    folder = tmp_path_factory.mktemp("registry")
    X, y = make_classification(n_samples=900, n_features=8, n_informative=4, flip_y=0.3,
                               random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)]).assign(label=y)
    train, population = frame.iloc[:300], frame.iloc[300:]
    features = train.drop(columns="label")
    models = {
        "leaky": RandomForestClassifier(n_estimators=20, random_state=0),
        "regular": RandomForestClassifier(n_estimators=20, max_depth=3, min_samples_leaf=40,
                                          random_state=0),
    }
    mlflow.set_tracking_uri(server)
    mlflow.set_experiment("models")
    for name, model in models.items():
        model.fit(features, train["label"])
        joblib.dump(model, folder / f"{name}.joblib")
        joblib.dump(clone(model), folder / f"{name}_recipe.joblib")  # its shadows' recipe
        with mlflow.start_run():
            mlflow.sklearn.log_model(
                model, name="model", registered_model_name=f"credit-{name}",
                skops_trusted_types=TRUSTED, pip_requirements=["scikit-learn"],
                signature=infer_signature(features, model.predict_proba(features)),
            )  # fmt: skip
    mlflow.MlflowClient().set_registered_model_alias("credit-leaky", "champion", "1")
    mlflow.set_tracking_uri(None)
    train.to_csv(folder / "train.csv", index=False)
    population.to_csv(folder / "population.csv", index=False)
    return {"folder": folder, "train": train, "population": population, "models": models}


def _evaluate(registry, uri, name):
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            uri, registry["train"], targets="label", model_type="classifier",
            evaluators=["tabmia"],
            evaluator_config={"tabmia": {
                "population": registry["population"], "limits": LIMITS,
                "recipe": str(registry["folder"] / f"{name}_recipe.joblib"), **AUDIT}},
        )  # fmt: skip
    return result, run.info.run_id


def _results_json(run_id, folder):
    path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="results.json",
                                               dst_path=str(folder))
    return json.loads(Path(path).read_text())


def test_evaluator_gate_rejects_the_leaky_forest_and_accepts_the_regularised(
    tracking, registry, tmp_path
):
    client = mlflow.MlflowClient()
    outcomes = {}
    for name, uri in [("leaky", "models:/credit-leaky@champion"),
                      ("regular", "models:/credit-regular/1")]:
        result, run_id = _evaluate(registry, uri, name)
        payload = _results_json(run_id, tmp_path / name)
        assert validate_results(payload) == 2
        # MLflow's gate on the evaluator's metric agrees with tabmia's own gate
        try:
            mlflow.validate_evaluation_results(gate_thresholds(), result)
            outcomes[name] = "accepted"
        except mlflow.models.evaluation.validation.ModelValidationFailedException:
            outcomes[name] = "rejected"
        assert (outcomes[name] == "accepted") == payload["gate"]["passed"]
        assert result.metrics[GATE_METRIC] == float(payload["gate"]["passed"])
        # the run holds the metrics (each an interval's bounds too) and the evidence files
        logged = client.get_run(run_id).data
        for attack in ("loss", "lira"):
            assert logged.metrics[f"tabmia/record/{attack}/auc"] == pytest.approx(
                next(m["auc"] for m in payload["metrics"] if m["attack"] == attack))
            for key in ("tpr_own", "tpr_own_low", "tpr_own_high", "fpr_own_high",
                        "fpr_promised", "tpr_at_fpr_0.01", "epsilon_lower"):
                assert f"tabmia/record/{attack}/{key}" in logged.metrics
        verdict = payload["state"]["state"].replace(" ", "_")
        assert logged.metrics[f"tabmia/verdict/{verdict}"] == 1.0
        assert logged.tags["tabmia.verdict"] == payload["state"]["state"]
        files = {f.path for f in client.list_artifacts(run_id)}
        assert {"report.html", "results.json"} <= files
    assert outcomes == {"leaky": "rejected", "regular": "accepted"}


def test_cli_audits_registry_uris_with_the_scores_of_the_fitted_objects(
    tracking, registry, tmp_path, capsys
):
    folder = registry["folder"]
    # LiRA (shadows from the model's own recipe) on one, the loss attack on both
    for name, uri, attacks in [("leaky", "models:/credit-leaky@champion", "loss,lira"),
                               ("regular", "models:/credit-regular/1", "loss")]:
        shadows = (["--recipe", str(folder / f"{name}_recipe.joblib"), "--n-shadow", "4"]
                   if "lira" in attacks else [])
        common = ["audit", "--train", str(folder / "train.csv"),
                  "--population", str(folder / "population.csv"), "--label", "label",
                  "--attacks", attacks, *shadows, "--random-state", "0", "--quiet"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # loading a joblib file warns that it runs code
            assert main([*common, "--model-uri", uri, "--out", str(tmp_path / "uri")]) == 0
            assert main([*common, "--model-file", str(folder / f"{name}.joblib"),
                         "--out", str(tmp_path / "file")]) == 0
        read = [pd.read_csv(tmp_path / d / "scores.csv.gz") for d in ("uri", "file")]
        pd.testing.assert_frame_equal(read[0], read[1])
        payload = json.loads((tmp_path / "uri" / "results.json").read_text())
        assert payload["context"]["model"].startswith(f"{uri} (MLflow sklearn flavour")
        # the attacks see probabilities; the forest's file also gave a Structure section,
        # so the strongest view of the evidence file is white-box
        assert {a["sees"] for a in payload["attacker"]["attacks"]} == {"probabilities"}
        assert payload["attacker"]["sees"] == "white-box" and payload["structure"]
    assert "(MLflow sklearn flavour, audited with its probabilities)" in capsys.readouterr().out


def test_cli_logs_an_audit_as_an_mlflow_run(tracking, registry, tmp_path, capsys):
    folder = registry["folder"]
    argv = ["audit", "--model-uri", "models:/credit-regular/1", "--train",
            str(folder / "train.csv"), "--population", str(folder / "population.csv"),
            "--label", "label", "--attacks", "loss", "--quiet", "--out", str(tmp_path / "a"),
            "--mlflow", "audits", "--fail-above", "auc=0.65"]
    assert main(argv) == 0
    run_line = [line for line in capsys.readouterr().out.splitlines() if "logged to MLflow" in line]
    run_id = run_line[0].rsplit(" ", 1)[-1]
    run = mlflow.MlflowClient().get_run(run_id)
    assert mlflow.get_experiment(run.info.experiment_id).name == "audits"
    assert run.data.metrics[GATE_METRIC] == 1.0
    assert "tabmia/record/loss/auc" in run.data.metrics
    assert "models:/credit-regular/1" in run.data.params["tabmia.command"]
    files = {f.path for f in mlflow.MlflowClient().list_artifacts(run_id)}
    assert {"report.html", "results.json", "results.md"} <= files


# --------------------------------------------------- pyfunc models (local folders)
class _LabelsOnly(mlflow.pyfunc.PythonModel):
    """A pyfunc that answers with the forest's decisions only."""

    def load_context(self, context):
        self.model = joblib.load(context.artifacts["forest"])

    def predict(self, context, model_input):
        return self.model.predict(model_input)


@pytest.fixture(scope="module")
def forest_files(tmp_path_factory, write_audit_files):
    folder = tmp_path_factory.mktemp("pyfunc")
    write_audit_files(folder)  # model.joblib, train.csv, pop.csv (label "diagnosis")
    return folder


def test_pyfunc_with_predict_only_is_audited_label_only_and_says_so(forest_files, capsys):
    folder = forest_files
    mlflow.pyfunc.save_model(folder / "labels", python_model=_LabelsOnly(),
                             artifacts={"forest": str(folder / "model.joblib")},
                             pip_requirements=["scikit-learn"])
    loaded = load_mlflow_model(str(folder / "labels"))
    assert (loaded.flavor, loaded.outputs) == ("python_function", "labels")
    assert "label-only" in loaded.note
    out = folder / "out-labels"
    code = main(["audit", "--model-uri", str(folder / "labels"), "--train",
                 str(folder / "train.csv"), "--population", str(folder / "pop.csv"),
                 "--label", "diagnosis", "--attacks", "gap", "--quiet", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    # the header says it (wrapped at the terminal's width, which differs between runners)
    assert "whose predict gives labels only" in " ".join(captured.out.split())
    payload = json.loads((out / "results.json").read_text())
    assert payload["context"]["outputs"].startswith("labels only")
    assert payload["state"]["labels_only"] is True
    assert payload["attacker"]["sees"] == "labels"
    # a probability attack is refused on it, naming why
    code = main(["audit", "--model-uri", str(folder / "labels"), "--train",
                 str(folder / "train.csv"), "--population", str(folder / "pop.csv"),
                 "--label", "diagnosis", "--attacks", "loss", "--quiet",
                 "--out", str(folder / "refused")])
    assert code == 2
    assert "labels only" in capsys.readouterr().err.strip().splitlines()[-1]


def test_pyfunc_logged_to_answer_predict_proba_is_audited_with_probabilities(forest_files):
    from tabmia.audit import audit_model
    from tabmia.attacks import LossAttack

    folder = forest_files
    forest = joblib.load(folder / "model.joblib")
    for fn in ("predict_proba", "predict"):
        mlflow.sklearn.save_model(forest, folder / fn, pyfunc_predict_fn=fn,
                                  skops_trusted_types=TRUSTED, pip_requirements=["scikit-learn"])
    # through the generic pyfunc interface (a platform that serves pyfunc only)
    proba = load_mlflow_model(str(folder / "predict_proba"), flavor="python_function")
    labels = load_mlflow_model(str(folder / "predict"), flavor="python_function")
    native = load_mlflow_model(str(folder / "predict"))
    assert (proba.outputs, labels.outputs, native.flavor) == ("proba", "labels", "sklearn")
    train = pd.read_csv(folder / "train.csv")
    pop = pd.read_csv(folder / "pop.csv")
    X, y = train.drop(columns="diagnosis"), train["diagnosis"].to_numpy()
    np.testing.assert_array_equal(proba.model.predict_proba(X), forest.predict_proba(X))
    assert not hasattr(labels.model, "predict_proba")
    results = [
        audit_model(m, X, y, pop.drop(columns="diagnosis"), pop["diagnosis"].to_numpy(),
                    {"loss": LossAttack()}, random_state=0, verbose=False)
        for m in (proba.model, forest)
    ]
    pd.testing.assert_frame_equal(results[0].scores, results[1].scores)


def test_torch_model_is_audited_with_its_logits(forest_files):
    torch = pytest.importorskip("torch")
    from tabmia.target import TargetModel

    folder = forest_files
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(30, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    mlflow.pytorch.save_model(net, str(folder / "net"), pip_requirements=["torch"],
                              input_example=np.zeros((2, 30), dtype=np.float32))
    loaded = load_mlflow_model(str(folder / "net"))  # MLflow's default: a torch.export program
    assert (loaded.flavor, loaded.outputs) == ("pytorch", "proba")
    X = pd.read_csv(folder / "train.csv").drop(columns="diagnosis")
    np.testing.assert_allclose(TargetModel(loaded.model, classes=[0, 1]).predict_logits(X),
                               TargetModel(net, classes=[0, 1]).predict_logits(X), rtol=1e-5)
    out = folder / "out-net"
    assert main(["audit", "--model-uri", str(folder / "net"), "--train",
                 str(folder / "train.csv"), "--population", str(folder / "pop.csv"),
                 "--label", "diagnosis", "--attacks", "loss", "--quiet", "--out", str(out)]) == 0
    payload = json.loads((out / "results.json").read_text())
    assert payload["context"]["model"].endswith("(MLflow pytorch flavour, audited with its logits)")


def test_evaluator_is_a_classifier_plugin_and_refuses_missing_population(tracking, registry):
    assert TabmiaEvaluator.can_evaluate(model_type="classifier", evaluator_config={})
    assert not TabmiaEvaluator.can_evaluate(model_type="regressor", evaluator_config={})
    assert "tabmia" in mlflow.models.list_evaluators()
    with mlflow.start_run(), pytest.raises(mlflow.exceptions.MlflowException,
                                           match="needs 'population'"):
        mlflow.models.evaluate("models:/credit-regular/1", registry["train"], targets="label",
                               model_type="classifier", evaluators=["tabmia"],
                               evaluator_config={"tabmia": {"attacks": "loss"}})


def test_bad_uri_is_one_error_line(forest_files, capsys):
    code = main(["audit", "--model-uri", str(forest_files / "nowhere"), "--train",
                 str(forest_files / "train.csv"), "--population", str(forest_files / "pop.csv"),
                 "--label", "diagnosis", "--quiet", "--out", str(forest_files / "bad")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("tabmia: error: --model-uri ")
    assert "MLflow cannot find the model" in err[-1]
    assert not (forest_files / "bad").exists()


def test_evaluator_config_keys_are_the_commands_flags():
    from tabmia.mlflow._evaluator import _flags

    assert _flags({"limits": ["auc=0.6", "tpr@0.01=0.1"], "accept_warnings": ["ties"],
                   "n_shadow": 4, "show_records": True, "quiet": False}) == [
        "--accept-warning", "ties", "--n-shadow", "4", "--show-records",
        "--fail-above", "auc=0.6,tpr@0.01=0.1"]
    with pytest.raises(mlflow.exceptions.MlflowException, match="'n_shadows' is no flag"):
        _flags({"n_shadows": 4})
    with pytest.raises(mlflow.exceptions.MlflowException, match="set by the evaluator"):
        _flags({"train": "x.csv"})
