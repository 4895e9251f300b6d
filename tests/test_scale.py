"""Scoring many candidates: parallel chunks over records, a memory budget, the same scores."""

from __future__ import annotations

import contextlib
import time
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import tabmia._memory as memory
import tabmia.attacks._reference as reference
import tabmia.shadow._scoring as scoring
from tabmia._memory import chunk_bounds, parse_memory, resolve_max_memory, total_memory
from tabmia.attacks import LiRAAttack, QuantileAttack, RMIAAttack
from tabmia.cli import main
from tabmia.shadow import ShadowPopulation
from tabmia.shadow._training import _statistic_row

#: A small batch for the tests: chunks are cut at whole batches of the models' own, so
#: that a few hundred records make several chunks (these models score rows one by one)
BATCH = 64


@pytest.fixture
def small_batches(monkeypatch):
    """Batches of 64 rows, and budgets below the 1 MiB floor taken as given, so that a
    few hundred records make a chunk per batch."""
    monkeypatch.setattr(scoring, "_chunk_rows", lambda n_classes: BATCH)
    monkeypatch.setattr(reference, "_chunk_rows", lambda n_classes: BATCH)
    monkeypatch.setattr(memory, "_MIN_BYTES", 1)


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("text, expected", [
    ("1048576", 2**20), (3 * 2**20, 3 * 2**20), ("8MB", 8 * 2**20), ("8 MiB", 8 * 2**20),
    ("1.5g", int(1.5 * 2**30)), ("1MB", 2**20),  # the 1 MiB floor itself
])
def test_memory_sizes(text, expected):
    assert parse_memory(text) == expected


def test_memory_shares_and_default():
    assert parse_memory("50%") == total_memory() // 2 or abs(parse_memory("50%") - total_memory() / 2) <= 1
    # the default bounds scoring's working memory: 256 MiB a core, 2 GiB at least,
    # half of the machine at most (the records and the training need the rest)
    import os

    expected = min(total_memory() // 2, max(2**31, (os.cpu_count() or 1) * 2**28))
    assert resolve_max_memory(None) == expected <= total_memory() // 2


@pytest.mark.parametrize("bad, words", [
    ("abc", "is not a memory size"), ("0", "positive"), ("-1GB", "is not a memory size"),
    ("512k", "below the least memory budget, 1 MiB"), (1, "below the least memory budget"),
    ("0%", "above 0%"), ("101%", "at most 100%"), ("10000TB", "more than this machine"),
    (True, "must be a size"), ([1], "must be a size"),
])
def test_bad_memory_sizes_are_named(bad, words):
    with pytest.raises(ValueError, match=words):
        parse_memory(bad)


def test_chunks_cover_the_rows_in_whole_batches():
    chunks = chunk_bounds(1000, 100, 10 * 2**10, multiple=BATCH)
    assert chunks[0] == slice(0, 64) and chunks[-1].stop == 1000
    assert all(c.start % BATCH == 0 for c in chunks)
    assert np.array_equal(np.concatenate([np.arange(1000)[c] for c in chunks]), np.arange(1000))
    # a budget that fits everything: one chunk on one job, two per job on two
    assert chunk_bounds(1000, 100, 2**30, multiple=BATCH) == [slice(0, 1000)]
    assert len(chunk_bounds(1000, 100, 2**30, parts=2, multiple=BATCH)) == 4
    # a budget below that caps every chunk
    capped = chunk_bounds(1000, 100, 2 * 100 * 128, parts=2, multiple=BATCH)
    assert max(c.stop - c.start for c in capped) == 128 and capped[-1].stop == 1000


@pytest.mark.parametrize("backend", [None, "loky"])
def test_statistics_in_parallel_chunks_equal_one_model_after_another(
    small_batches, monkeypatch, backend
):
    X, y = _data(1200)
    pool, cand = slice(0, 200), slice(200, None)
    pop = ShadowPopulation(LogisticRegression(), n_models=5, random_state=0, n_jobs=1)
    pop.fit(X[pool], y[pool])
    before = np.stack([_statistic_row(m, X[cand], y[cand], pop.classes_, pop.statistic)
                       for m in pop.models_])
    sequential = pop.statistics(X[cand], y[cand])
    threads = []
    share = scoring._score_share
    monkeypatch.setattr(scoring, "_score_share",
                        lambda *a, **k: threads.append(1) or share(*a, **k))
    pop.n_jobs = 2
    config = joblib.parallel_config(backend=backend) if backend else contextlib.nullcontext()
    with config:
        parallel = pop.statistics(X[cand], y[cand], max_memory=4096)
    # on threads by default; in joblib's worker processes once a back end is chosen
    assert len(threads) == (2 if backend is None else 0)
    assert len(chunk_bounds(1000, scoring.record_bytes(X), 4096, parts=2, multiple=BATCH)) > 8
    assert np.array_equal(sequential, before) and np.array_equal(parallel, before)


def test_records_with_categories_are_scored_in_processes(small_batches, monkeypatch):
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = _data(800, seed=4)
    frame = pd.DataFrame({"a": X[:, 0], "b": pd.Categorical(np.where(X[:, 1] > 0, "u", "v"))})
    pop = ShadowPopulation(
        HistGradientBoostingClassifier(max_iter=5, categorical_features="from_dtype"),
        n_models=2, random_state=0, n_jobs=1,
    ).fit(frame.iloc[:200], y[:200])
    sequential = pop.statistics(frame.iloc[200:], y[200:])
    threads = []
    share = scoring._score_share
    monkeypatch.setattr(scoring, "_score_share",
                        lambda *a, **k: threads.append(1) or share(*a, **k))
    pop.n_jobs = 2
    # their values are converted in Python (holding the GIL): processes, not threads
    assert np.array_equal(pop.statistics(frame.iloc[200:], y[200:], max_memory=4096), sequential)
    assert threads == []


@pytest.mark.parametrize("n_models, n, jobs", [
    (8, 500, 2), (9, 500, 2), (5, 64, 2), (3, 1000, 3), (2, 130, 2), (16, 10_000, 4),
])
def test_thread_shares_cover_every_model_and_record_once_in_equal_runs(n_models, n, jobs):
    shares = scoring.thread_shares(n_models, n, BATCH, jobs)
    seen = np.zeros((n_models, n), dtype=int)
    batches = []
    for pieces in shares:
        for k, rows in pieces:
            assert rows.start % BATCH == 0 and rows.stop > rows.start
            seen[k, rows] += 1
        batches.append(sum(-(-(r.stop - r.start) // BATCH) for _, r in pieces))
    assert (seen == 1).all()
    assert len(shares) == jobs and max(batches) - min(batches) <= 1


class _OneCallerAtATime(LogisticRegression):
    """A model whose predictions go wrong when two threads ask it at once."""

    def predict_proba(self, X):
        if getattr(self, "busy_", False):
            raise RuntimeError("predict_proba entered by two threads at once")
        self.busy_ = True
        try:
            time.sleep(getattr(self, "delay_", 0.0))
            return super().predict_proba(X)
        finally:
            self.busy_ = False


def test_threads_never_share_a_model_at_once(small_batches):
    X, y = _data(1000, seed=3)
    pop = ShadowPopulation(_OneCallerAtATime(), n_models=3, random_state=0, n_jobs=1)
    pop.fit(X[:200], y[:200])
    sequential = pop.statistics(X[200:], y[200:])
    # 3 models x 13 batches on 2 threads: model 1 ends the first thread's share and
    # starts the second's; slow there, the first thread reaches it while the second
    # still scores it
    shares = scoring.thread_shares(3, 800, BATCH, 2)
    assert shares[0][-1][0] == shares[1][0][0] == 1
    pop.models_[1].delay_ = 0.05
    pop.n_jobs = 2
    assert np.array_equal(pop.statistics(X[200:], y[200:]), sequential)


def test_attacks_score_alike_whatever_the_budget_and_jobs(small_batches, monkeypatch):
    calls = []
    statistics = ShadowPopulation.statistics
    monkeypatch.setattr(ShadowPopulation, "statistics",
                        lambda self, *a, **k: calls.append(1) or statistics(self, *a, **k))
    X, y = _data(1500, seed=1)
    target = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X[:500], y[:500])
    public, cand = slice(500, 800), slice(800, None)
    for attack in (LiRAAttack(target, shadow_estimator=LogisticRegression(), n_shadow=4,
                              random_state=0, n_jobs=1),
                   RMIAAttack(target, reference_estimator=LogisticRegression(), n_reference=4,
                              random_state=0, n_jobs=1)):
        attack.fit(X[public], y[public])
        whole = attack.decision_function(X[cand], y[cand])
        attack.set_params(max_memory=4096)  # one batch per chunk
        calls.clear()
        chunked = attack.decision_function(X[cand], y[cand])
        assert len(calls) > 1  # the candidates went in chunks
        attack.population_.n_jobs = 2  # on two jobs, the target queried meanwhile
        parallel = attack.decision_function(X[cand], y[cand])
        assert np.array_equal(whole, chunked) and np.array_equal(whole, parallel), attack


def test_quantile_scores_alike_in_chunks(small_batches):
    X, y = _data(900, seed=2)
    target = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X[:300], y[:300])
    attack = QuantileAttack(target, params={"iterations": 20, "depth": 3}, cv=2,
                            random_state=0).fit(X[300:600], y[300:600])
    whole = attack.decision_function(X[600:], y[600:])
    attack.target_.batch_size = BATCH  # chunks follow the target's batch
    attack.set_params(max_memory=4096)
    assert np.array_equal(attack.decision_function(X[600:], y[600:]), whole)


def test_a_bad_budget_is_refused_before_training():
    X, y = _data(200)
    target = DecisionTreeClassifier(random_state=0).fit(X[:100], y[:100])
    with pytest.raises(ValueError, match="is not a memory size"):
        LiRAAttack(target, n_shadow=4, max_memory="lots").fit(X[100:], y[100:])


@pytest.mark.parametrize("value", ["lots", "0", "200%"])
def test_cli_bad_max_memory_is_one_line_exit_2(value, tmp_path, capsys):
    code = main(["audit", "--max-memory", value, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("tabmia: error: argument --max-memory")


@pytest.mark.parametrize("value", ["1", "1KB", "0.00001%"])
def test_cli_budget_below_the_floor_is_refused_naming_it(value, tmp_path, capsys):
    """A budget no chunk could keep is refused before anything loads, not exceeded."""
    code = main(["audit", "--max-memory", value, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"tabmia: error: argument --max-memory: '{value}' is below the "
                             "least memory budget, 1 MiB (1048576 bytes)")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("make", [
    lambda t: LiRAAttack(t, n_shadow=4, max_memory=1),
    lambda t: RMIAAttack(t, n_reference=2, max_memory="1KB"),
    lambda t: QuantileAttack(t, max_memory=1),
])
def test_python_budget_below_the_floor_is_refused_before_training(make):
    X, y = _data(200)
    target = DecisionTreeClassifier(random_state=0).fit(X[:100], y[:100])
    attack = make(target)
    with pytest.raises(ValueError, match=r"below the least memory budget, 1 MiB"):
        attack.fit(X[100:], y[100:])
    assert not hasattr(attack, "population_") and not hasattr(attack, "regressors_")


def test_a_budget_one_batch_exceeds_is_said_with_the_memory_held(small_batches):
    """Above the floor, a chunk is still one batch of the models' at least: a budget
    below it is exceeded, said once (a run note) with the memory the batch held."""
    from tabmia.exceptions import MemoryBudgetWarning, RunNote

    X, y = _data(600)
    pop = ShadowPopulation(LogisticRegression(), n_models=4, random_state=0, n_jobs=1)
    pop.fit(X[:200], y[:200])
    expected = pop.statistics(X[200:], y[200:])
    # 64 records of 3 copies x 32 bytes plus 4 models' float32 scores: 7 KiB
    row_bytes = 3 * scoring.record_bytes(X) + 4 * 4
    assert BATCH * row_bytes == 7 * 2**10
    with pytest.warns(MemoryBudgetWarning) as seen:
        chunked = pop.statistics(X[200:], y[200:], max_memory=4096)
    assert issubclass(MemoryBudgetWarning, RunNote) and len(seen) == 1
    assert str(seen[0].message).startswith(
        f"max_memory: scoring 4 models holds 7 KiB at once ({BATCH} records of {row_bytes} "
        "bytes), above the 4 KiB the memory budget gives it: a chunk of records is never "
        f"smaller than one batch of the models' own ({BATCH} records, or all of them where "
        "fewer)"
    )
    assert np.array_equal(chunked, expected)  # the same scores
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryBudgetWarning)  # a budget that fits: no word
        pop.statistics(X[200:], y[200:], max_memory=2 * BATCH * row_bytes)


def test_a_dask_cluster_trains_and_scores_like_this_process(small_batches):
    """The shadow phase and the candidates' scoring on a LocalCluster of two workers
    (through joblib's Dask back end) give this process's scores. Thread workers keep
    this test fast; ``tests/test_benchmarks.py`` runs worker processes (scaling --quick)."""
    distributed = pytest.importorskip("distributed")
    import joblib

    X, y = _data(900, seed=3)
    pool, cand = slice(0, 200), slice(200, None)
    local = ShadowPopulation(LogisticRegression(), n_models=4, random_state=0, n_jobs=1)
    local.fit(X[pool], y[pool])
    expected = local.statistics(X[cand], y[cand])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, joblib.parallel_config(backend="dask"), \
            distributed.get_task_stream(client) as tasks:
        remote = ShadowPopulation(LogisticRegression(), n_models=4, random_state=0, n_jobs=2)
        remote.fit(X[pool], y[pool])
        scored = remote.statistics(X[cand], y[cand], max_memory=4096)
    assert np.array_equal(remote.statistics_, local.statistics_)
    assert np.array_equal(scored, expected)
    names = " ".join(str(t.get("key")) for t in tasks.data)
    assert "_train_one" in names and "_score_chunk" in names  # both ran on the cluster


def test_cli_audit_on_a_dask_scheduler_scores_like_here(tmp_path):
    """``tabmia audit --cluster ADDRESS`` trains and scores the reference models on that
    scheduler, with the scores of a run on this machine."""
    distributed = pytest.importorskip("distributed")
    import joblib
    import pandas as pd
    from sklearn.datasets import load_breast_cancer

    df = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "diagnosis"})
    df.iloc[:250].to_csv(tmp_path / "train.csv", index=False)
    df.iloc[250:].to_csv(tmp_path / "population.csv", index=False)
    model = DecisionTreeClassifier(max_depth=4, random_state=0)
    joblib.dump(model, tmp_path / "recipe.joblib")
    joblib.dump(model.fit(df.iloc[:250, :-1], df.iloc[:250, -1]), tmp_path / "model.joblib")
    argv = ["audit", "--model-file", str(tmp_path / "model.joblib"), "--train",
            str(tmp_path / "train.csv"), "--population", str(tmp_path / "population.csv"),
            "--label", "diagnosis", "--recipe", str(tmp_path / "recipe.joblib"),
            "--attacks", "rmia", "--n-references", "2", "--fpr", "0.05", "--quiet"]
    assert main(argv + ["--out", str(tmp_path / "here")]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, distributed.get_task_stream(client) as tasks:
        address = cluster.scheduler_address
        assert main(argv + ["--out", str(tmp_path / "there"), "--cluster", address]) == 0
    assert any("_train_one" in str(t.get("key")) for t in tasks.data)
    here, there = (pd.read_csv(tmp_path / d / "scores.csv.gz") for d in ("here", "there"))
    pd.testing.assert_frame_equal(here, there)
    # the report's header says where the models trained
    import json

    trained = [json.loads((tmp_path / d / "results.json").read_text())["context"]
               ["models trained on"] for d in ("here", "there")]
    assert trained == ["this machine", f"the cluster at {address}"]


def test_cli_bad_cluster_address_is_one_line_exit_2(tmp_path, capsys):
    assert main(["audit", "--cluster", "nohost", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "give a Dask scheduler address" in err[0]


@pytest.mark.parametrize(
    "values",
    [
        pd.Series(["a", "b", None, "a"], dtype="category"),
        pd.Series([1, 2, None, 1]).astype("Int64").astype("category"),
        pd.Series(pd.Categorical([1.0, 2.5, np.nan, 1.0])),
        pd.Series(pd.Categorical([True, False, True])),
        pd.Series(pd.Categorical([1, "1", 2, "x"])),  # "1" twice once written out
        pd.Series(["x", "y", None, "z"], dtype="string"),
        pd.Series(["x", 3, None, 2.5], dtype=object),
    ],
)
def test_quantile_text_categories_are_those_of_str_per_value(values):
    # the columnar conversion gives CatBoost the text one Python object per value gave
    from tabmia.attacks._quantile_features import _as_text

    per_value = values.astype(object).where(values.notna(), "__nan__").astype(str)
    assert _as_text(values).tolist() == per_value.tolist()


def test_parquet_reads_as_pandas_reads_it_and_freed_memory_is_released(tmp_path):
    from tabmia.cli._inputs import read_table

    frame = pd.DataFrame(
        {"x": np.arange(5.0), "n": np.arange(5), "s": ["a", "b", None, "a", "c"]}
    )
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    got = read_table(tmp_path / "t.parquet", "--train")
    pd.testing.assert_frame_equal(got, pd.read_parquet(tmp_path / "t.parquet"))
    memory.release_freed_memory()  # twice: nothing left to release is no error
    memory.release_freed_memory()


def _column_refs(frame: pd.DataFrame) -> list:
    """Weak references to the arrays that hold a frame's columns (its memory, not the
    frame object: a shallow copy or a column selection shares them)."""
    import weakref

    return [weakref.ref(block.values) for block in frame._mgr.blocks]


def _shuffled_breast_cancer() -> tuple[pd.DataFrame, pd.Series]:
    """Breast cancer records in a seeded random order (the file is sorted by label, and
    a split of it in file order fails the label check)."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    order = np.random.RandomState(0).permutation(len(y))
    return X.iloc[order].reset_index(drop=True), y.iloc[order].reset_index(drop=True)


def _alive_at_play(monkeypatch, refs: dict[str, list]) -> dict[str, bool]:
    """Whether any array of each named frame is still held when the attacks start."""
    import gc

    import tabmia.experiment as experiment

    alive: dict[str, bool] = {}
    real_play = experiment.MembershipRound.play

    def play(self, *args, **kwargs):
        gc.collect()
        alive.update({k: any(r() is not None for r in v) for k, v in refs.items()})
        return real_play(self, *args, **kwargs)

    monkeypatch.setattr(experiment.MembershipRound, "play", play)
    return alive


def test_audit_model_lets_go_of_handed_over_records(monkeypatch):
    # neither the population's nor the training records are needed past the split: a
    # caller that hands them over (as tabmia audit does) gets their memory back before
    # the attacks train
    from sklearn.ensemble import RandomForestClassifier

    from tabmia.attacks import LossAttack
    from tabmia.audit import audit_model

    X, y = _shuffled_breast_cancer()
    X_train, y_train, X_pop, y_pop = X[:280].copy(), y[:280], X[280:].copy(), y[280:]
    model = RandomForestClassifier(20, random_state=0).fit(X_train, y_train)
    alive = _alive_at_play(
        monkeypatch, {"training": _column_refs(X_train), "population": _column_refs(X_pop)}
    )
    handed = [X_train, X_pop]
    del X_train, X_pop
    result = audit_model(model, handed.pop(0), y_train, handed.pop(0), y_pop,
                         {"loss": LossAttack()}, random_state=0)
    assert alive == {"training": False, "population": False}
    assert result.target_accuracy["test_accuracy"].iloc[0] > 0.5  # measured before the attacks


@pytest.mark.parametrize("show_records", [False, True])
def test_cli_audit_holds_the_records_through_the_attacks_only_to_show_them(
    tmp_path, monkeypatch, show_records
):
    # tabmia audit reads the files, checks them and hands the records to audit_model; the
    # training records stay in this process only where --show-records puts their contents
    # into the report
    import joblib
    from sklearn.ensemble import RandomForestClassifier

    import tabmia.audit as audit

    X, y = _shuffled_breast_cancer()
    data = X.assign(label=y)
    data[:280].to_csv(tmp_path / "train.csv", index=False)
    data[280:].to_csv(tmp_path / "pop.csv", index=False)
    joblib.dump(RandomForestClassifier(20, random_state=0).fit(X[:280], y[:280]),
                tmp_path / "model.joblib")
    refs: dict[str, list] = {}
    real_shared_mask = audit.shared_mask

    def shared_mask(X_train, y_train, X_population, y_population):
        # the first look audit_model takes at the records the command hands it
        refs.update(training=_column_refs(X_train), population=_column_refs(X_population))
        return real_shared_mask(X_train, y_train, X_population, y_population)

    monkeypatch.setattr(audit, "shared_mask", shared_mask)
    alive = _alive_at_play(monkeypatch, refs)
    argv = ["audit", "--model-file", str(tmp_path / "model.joblib"), "--trust-types",
            "--train", str(tmp_path / "train.csv"), "--population", str(tmp_path / "pop.csv"),
            "--label", "label", "--attacks", "loss", "--quiet", "--out", str(tmp_path / "o")]
    assert main(argv + (["--show-records"] if show_records else [])) == 0
    assert alive["population"] is False
    if not show_records:  # with it, the report needs the records' contents
        assert alive["training"] is False
    html = (tmp_path / "o" / "report.html").read_text()
    assert ("record contents: " in html) == show_records
    # without --show-records no content reaches the page (the named list masks its rows,
    # and here, the loss attack's scores tied, it names nobody)
    assert show_records or "Riskiest training records" not in html


@pytest.mark.parametrize("keep_attacks", [True, False])
def test_audit_model_lets_each_attack_go_once_it_has_scored(monkeypatch, keep_attacks):
    # a shadow attack's state per public record (LiRA: every shadow's score on each)
    # is not held while the next attack trains, nor are the candidates while the score
    # frames are joined, unless the caller asks for the fitted attacks
    import gc
    import weakref

    import tabmia.audit as audit
    from tabmia.attacks import LossAttack

    X, y = _shuffled_breast_cancer()
    model = LogisticRegression(max_iter=5000).fit(X[:280], y[:280])
    lira_state: list = []
    real_lira_fit, real_loss_fit = LiRAAttack.fit, LossAttack.fit

    def lira_fit(self, *args, **kwargs):
        out = real_lira_fit(self, *args, **kwargs)
        lira_state.append(weakref.ref(self.population_.statistics_))
        return out

    seen: dict[str, bool] = {}

    def loss_fit(self, *args, **kwargs):
        gc.collect()
        seen["lira state while loss trains"] = lira_state[0]() is not None
        return real_loss_fit(self, *args, **kwargs)

    candidates: list = []
    real_play = audit.MembershipRound.play

    def play(self, *args, **kwargs):
        candidates.extend(_column_refs(self.X_candidates))
        return real_play(self, *args, **kwargs)

    real_check = audit.check_attack_scores

    def check_attack_scores(scores):
        gc.collect()
        seen["candidates while frames join"] = any(r() is not None for r in candidates)
        return real_check(scores)

    monkeypatch.setattr(LiRAAttack, "fit", lira_fit)
    monkeypatch.setattr(LossAttack, "fit", loss_fit)
    monkeypatch.setattr(audit.MembershipRound, "play", play)
    monkeypatch.setattr(audit, "check_attack_scores", check_attack_scores)
    result = audit.audit_model(
        model, X[:280], y[:280], X[280:], y[280:],
        {"lira": LiRAAttack(n_shadow=4, fpr=0.1), "loss": LossAttack()},
        random_state=0, keep_attacks=keep_attacks,
    )
    assert seen == {
        "lira state while loss trains": keep_attacks,
        "candidates while frames join": False,
    }
    assert len(result.attacks) == (2 if keep_attacks else 0)
    counts = result.metrics.set_index("attack")[["n_models", "n_models_trained"]]
    assert counts.loc["lira"].tolist() == [4, 4]
    assert counts.loc["loss"].isna().all()
    # the verdict still names what the shadows were trained as, once they are gone
    from tabmia.report.verdict import shadow_recipe

    assert shadow_recipe(result) == "the target's own recipe (an unfitted clone)"
