"""QuantileAttack: calibrated FPR, quantile grid, tuning, input forms, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from tabmia.attacks.quantile import DEFAULT_CATBOOST_PARAMS, QuantileAttack
from tabmia.metrics import auc, clopper_pearson
from tabmia.thresholds import threshold_at_fpr

pytest.importorskip("catboost")

FAST = {"n_trials": 0, "cv": 2, "params": {"iterations": 60, "depth": 4, "learning_rate": 0.1}}


def _overfit_gb(seed: int, n_public: int, n_fresh: int):
    """An overfit gradient-boosting target; its public records and fresh non-members."""
    n_train = 600
    X, y = make_classification(
        n_train + n_public + n_fresh, n_features=10, n_informative=6, n_classes=3,
        flip_y=0.2, random_state=seed,
    )
    target = GradientBoostingClassifier(
        n_estimators=60, max_depth=6, random_state=seed
    ).fit(X[:n_train], y[:n_train])
    pub = slice(n_train, n_train + n_public)
    fresh = slice(n_train + n_public, None)
    return target, (X[:n_train], y[:n_train]), (X[pub], y[pub]), (X[fresh], y[fresh])


@pytest.fixture(scope="module")
def games():
    return [_overfit_gb(seed, n_public=20000, n_fresh=5000) for seed in range(3)]


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_pinball_fpr_on_fresh_nonmembers(games, alpha):
    """Pooled over 3 seeds (15,000 fresh non-members), the delivered FPR's 95%
    Clopper-Pearson interval contains the requested alpha; each seed's 99.9% interval
    does too. The threshold was set on out-of-fold public scores (20,000 records)."""
    k_total = n_total = 0
    for seed, (target, members, (Xp, yp), (Xf, yf)) in enumerate(games):
        attack = QuantileAttack(target, mode="pinball", fpr=alpha, random_state=seed,
                                **FAST).fit(Xp, yp)
        flagged = attack.predict(Xf, yf)
        k, n = int(flagged.sum()), flagged.size
        lo, hi = clopper_pearson(k, n, confidence=0.999)
        assert lo <= alpha <= hi, (seed, k / n)
        k_total += k
        n_total += n
        # the attack has power on this overfit target
        s_mem = attack.decision_function(*members)
        assert (s_mem >= attack.threshold_).mean() > 2 * alpha
    lo, hi = clopper_pearson(k_total, n_total, confidence=0.95)
    assert lo <= alpha <= hi, k_total / n_total


def test_gaussian_fpr_on_fresh_nonmembers_every_level(games):
    """One Gaussian model serves every FPR: thresholds from its out-of-fold
    calibration scores deliver each alpha on fresh non-members (pooled 95% CP)."""
    alphas = (0.01, 0.05)
    k = dict.fromkeys(alphas, 0)
    n_total = 0
    for seed, (target, _, (Xp, yp), (Xf, yf)) in enumerate(games):
        attack = QuantileAttack(target, mode="gaussian", random_state=seed, **FAST).fit(Xp, yp)
        s = attack.decision_function(Xf, yf)
        n_total += s.size
        for a in alphas:
            k[a] += int((s >= threshold_at_fpr(attack.calibration_scores_, a)).sum())
    for a in alphas:
        lo, hi = clopper_pearson(k[a], n_total, confidence=0.95)
        assert lo <= a <= hi, (a, k[a] / n_total)


@pytest.fixture(scope="module")
def small_game():
    return _overfit_gb(7, n_public=1500, n_fresh=500)


def test_calibration_is_out_of_fold(small_game):
    target, members, (Xp, yp), _ = small_game
    attack = QuantileAttack(target, fpr=0.05, random_state=0, **FAST).fit(Xp, yp)
    assert np.array_equal(attack.calibration_scores_, attack.oof_scores_)
    assert len(attack.estimators_) == FAST["cv"]
    in_sample = attack.decision_function(Xp, yp)
    assert not np.allclose(in_sample, attack.oof_scores_)
    assert attack.threshold_ == threshold_at_fpr(attack.oof_scores_, 0.05)


def test_multiquantile_grid_matches_paper_rule(small_game):
    """decision >= -log(a) exactly when s >= q_{1-a}(x, y), for every a of the grid;
    predicted quantiles never cross; exp(-score_samples) is the nominal p-value."""
    target, members, (Xp, yp), (Xf, yf) = small_game
    alphas = [0.01, 0.05, 0.2]
    attack = QuantileAttack(target, mode="pinball", alphas=alphas, fpr=0.05, random_state=0,
                            **FAST).fit(Xp, yp)
    assert np.allclose(attack.alphas_, sorted(alphas))
    q = attack.predicted_quantiles(Xf, yf)
    assert q.shape == (len(yf), 3)
    assert np.all(np.diff(q, axis=1) <= 0)  # q_{0.99} >= q_{0.95} >= q_{0.8}
    s = attack._target_scores(Xf, attack.target_.encode_labels(yf))
    d = attack.decision_function(Xf, yf)
    for k, a in enumerate(attack.alphas_):
        near = np.abs(s - q[:, k]) < 1e-9
        assert np.array_equal((d >= -np.log(a))[~near], (s >= q[:, k])[~near])
    assert np.allclose(np.exp(-attack.score_samples(Xf, yf)), np.exp(-d))
    # monotone in the score for a fixed record: raising s raises the decision
    raw = attack._raw_candidates(Xf, attack.target_.encode_labels(yf))
    d_up = attack._decision(s + 0.5, raw)
    assert np.all(d_up >= attack._decision(s, raw))
    # better than chance against members
    m = np.r_[np.ones(len(members[1]), bool), np.zeros(len(yf), bool)]
    assert auc(m, np.r_[attack.decision_function(*members), d]) > 0.6


def test_tuning_is_seeded_and_starts_from_defaults(small_game):
    import optuna

    target, _, (Xp, yp), (Xf, yf) = small_game
    Xp, yp = Xp[:600], yp[:600]
    before = optuna.logging.get_verbosity()
    kw = {"n_trials": 3, "cv": 2, "fpr": 0.05, "random_state": 3}
    a1 = QuantileAttack(target, **kw).fit(Xp, yp)
    a2 = QuantileAttack(target, **kw).fit(Xp, yp)
    assert optuna.logging.get_verbosity() == before
    assert len(a1.study_.trials) == 3
    assert a1.study_.trials[0].params == DEFAULT_CATBOOST_PARAMS
    assert a1.best_params_ == a2.best_params_
    assert np.array_equal(a1.decision_function(Xf, yf), a2.decision_function(Xf, yf))
    for t in a1.study_.trials[1:]:
        p = t.params
        assert 1 <= p["depth"] <= 10 and 1 <= p["iterations"] <= 1000
        assert 1e-6 <= p["learning_rate"] <= 1 and 1e-2 <= p["subsample"] <= 1
        assert 1e-2 <= p["l2_leaf_reg"] <= 1e6


@pytest.mark.parametrize("n_trials, expected", [(0, 200), (7, 7)])
def test_paper_tuning_reaches_the_tuner_with_the_paper_budget(small_game, monkeypatch,
                                                              n_trials, expected):
    """tuning="paper" with n_trials=0 asks for the paper code's 200 trials (not run here)."""
    from tabmia.attacks import quantile
    from tabmia.attacks._quantile_tuning import n_trials_of

    seen = {}

    def fake_tuner(attack, pool, s, first, y=None):
        seen.update(tuning=attack.tuning, trials=n_trials_of(attack.tuning, attack.n_trials),
                    n=s.size, y=y)
        return dict(FAST["params"]), None

    monkeypatch.setattr(quantile, "tune_catboost", fake_tuner)
    target, _, (Xp, yp), _ = small_game
    attack = QuantileAttack(target, tuning="paper", n_trials=n_trials, cv=2, fpr=0.05,
                            random_state=0).fit(Xp[:400], yp[:400])
    assert seen["tuning"] == "paper" and seen["trials"] == expected and seen["n"] == 400
    assert np.array_equal(seen["y"], yp[:400])  # the split is stratified by the label
    assert attack.best_params_ == FAST["params"]


def test_paper_tuning_searches_the_paper_code_space_on_one_holdout(small_game):
    from tabmia.attacks._quantile_tuning import PAPER_CODE_SPACE, fixed_params

    target, _, (Xp, yp), _ = small_game
    kw = {"tuning": "paper", "n_trials": 2, "cv": 2, "fpr": 0.05, "random_state": 1,
          "n_jobs": 1}
    gauss = QuantileAttack(target, **kw).fit(Xp[:500], yp[:500])
    first = gauss.study_.trials[0].params
    assert first == {k: v for k, v in DEFAULT_CATBOOST_PARAMS.items() if k in PAPER_CODE_SPACE}
    assert len(gauss.study_.trials) == 2
    assert set(gauss.study_.trials[1].params) == set(PAPER_CODE_SPACE)  # no subsample
    assert gauss.best_params_["posterior_sampling"] is True  # the paper code's regressor
    assert fixed_params("paper", "pinball") == {} == fixed_params("cv", "gaussian")


def _degenerate_game():
    """A tree target whose 0 / 1 probabilities leave the regressor scores at two extremes:
    with l2_leaf_reg 1e-4 and posterior sampling, CatBoost's training degenerates (NaN)."""
    from sklearn.tree import DecisionTreeClassifier

    X, y = make_classification(200, 5, random_state=0)
    target = DecisionTreeClassifier(random_state=0).fit(X[:100], y[:100])
    degenerate = {"depth": 4, "l2_leaf_reg": 1e-4, "learning_rate": 0.06, "iterations": 220,
                  "posterior_sampling": True}
    return target, X[100:], y[100:], degenerate


def test_fixed_params_that_degenerate_raise_the_documented_error():
    from tabmia.exceptions import DegenerateRegressorError

    target, Xp, yp, degenerate = _degenerate_game()
    with pytest.raises(DegenerateRegressorError, match="l2_leaf_reg': 0.0001.*non-finite"):
        QuantileAttack(target, params=degenerate, random_state=0, n_jobs=1).fit(Xp, yp)


def test_tuned_settings_that_degenerate_give_way_to_the_next_best_trial(small_game,
                                                                        monkeypatch):
    """The final cross-fit trains on other records and seeds than the trial did: when the
    best settings degenerate there, the next best trial's are used, with a note."""
    from tabmia.attacks._quantile_tuning import ranked_trial_params
    from tabmia.exceptions import DegenerateRegressorError, RunNote

    target, _, (Xp, yp), (Xf, yf) = small_game
    real = QuantileAttack._cross_fit
    refused = []

    def cross_fit(self, params, pool, s, split_seed, model_seed, keep):
        if keep and not refused:  # the final fit's first settings: the best trial's
            refused.append(params)
            raise DegenerateRegressorError("degenerate")
        return real(self, params, pool, s, split_seed, model_seed, keep)

    monkeypatch.setattr(QuantileAttack, "_cross_fit", cross_fit)
    with pytest.warns(RunNote, match="next best trial"):
        attack = QuantileAttack(target, n_trials=3, cv=2, fpr=0.05, random_state=3,
                                n_jobs=1).fit(Xp[:600], yp[:600])
    ranked = ranked_trial_params(attack.study_, {})
    assert refused == [attack.study_.best_params] == [ranked[0]]
    assert attack.best_params_ == ranked[1]
    assert np.all(np.isfinite(attack.decision_function(Xf[:200], yf[:200])))


def test_tuning_loss_ignores_a_constant_shift_and_ranks_by_fit():
    """The pinball tuning loss is taken after the calibration shift: a regressor off by a
    constant scores the same as the true quantile, one that ignores x scores worse."""
    from scipy import stats

    from tabmia.attacks._quantile_tuning import calibrated_pinball, cv_loss

    rng = np.random.RandomState(0)
    x = rng.uniform(-2, 2, 20000)
    s = 3 * x + rng.standard_normal(x.size)
    q_true = 3 * x + stats.norm.ppf(0.99)
    a = np.array([0.01])
    assert calibrated_pinball(s, q_true + 5.0, 0.99) == pytest.approx(
        calibrated_pinball(s, q_true, 0.99), rel=1e-9)
    flat = np.full_like(s, np.quantile(s, 0.99))
    assert cv_loss("pinball", a, s, q_true[:, None]) < 0.5 * cv_loss("pinball", a, s, flat[:, None])
    # Gaussian NLL: the right mean and spread beat a global one
    good = np.column_stack([3 * x, np.zeros_like(x)])
    glob = np.column_stack([np.full_like(x, s.mean()), np.full_like(x, np.log(s.std()))])
    assert cv_loss("gaussian", a, s, good) < cv_loss("gaussian", a, s, glob)


def test_deterministic_thread_invariant_and_clone(small_game):
    target, _, (Xp, yp), (Xf, yf) = small_game
    a1 = QuantileAttack(target, fpr=0.05, random_state=0, n_jobs=1, **FAST).fit(Xp, yp)
    a2 = QuantileAttack(target, fpr=0.05, random_state=0, n_jobs=2, **FAST).fit(Xp, yp)
    assert np.array_equal(a1.decision_function(Xf, yf), a2.decision_function(Xf, yf))
    c = clone(a1)
    assert c.target is target and not hasattr(c, "threshold_")


def test_label_is_a_categorical_feature_for_multiclass(small_game):
    target, _, (Xp, yp), _ = small_game
    attack = QuantileAttack(target, fpr=0.05, random_state=0, **FAST).fit(Xp, yp)
    d = Xp.shape[1]
    assert attack.estimators_[0].get_cat_feature_indices() == [d]
    no_label = QuantileAttack(target, fpr=0.05, label_as_feature=False, random_state=0, **FAST)
    assert no_label.fit(Xp, yp).estimators_[0].get_cat_feature_indices() == []


def _frame(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], size=n)
    size = rng.normal(size=n)
    age = rng.integers(18, 80, size=n)
    logit = 1.5 * size + (colour == "red") - 0.02 * (age - 50) + rng.normal(size=n)
    y = np.where(logit > 0.3, "yes", "no")
    X = pd.DataFrame({"colour": pd.Categorical(colour), "size": size, "age": age})
    return X, y


def test_dataframe_with_categorical_columns():
    X, y = _frame(2400, 0)
    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), ["colour"])], remainder="passthrough"
    )
    target = make_pipeline(pre, RandomForestClassifier(n_estimators=30, random_state=0))
    target.fit(X.iloc[:800], y[:800])
    attack = QuantileAttack(target, fpr=0.05, random_state=0, **FAST).fit(X.iloc[800:2000], y[800:2000])
    assert attack.estimators_[0].get_cat_feature_indices() == [0]  # colour; binary label numeric
    s = attack.decision_function(X.iloc[2000:], y[2000:])
    assert s.shape == (400,) and np.all(np.isfinite(s))
    with pytest.raises(ValueError, match="columns"):
        attack.decision_function(X.iloc[2000:].drop(columns="age").assign(other=1.0), y[2000:])


def test_sparse_input_multiclass():
    X, y = make_classification(1600, n_features=30, n_informative=8, n_classes=4, random_state=0)
    Xs = sp.csr_matrix(np.where(X > 0.8, 1.0, 0.0))
    target = RandomForestClassifier(n_estimators=30, random_state=0).fit(Xs[:500], y[:500])
    attack = QuantileAttack(target, fpr=0.05, random_state=0, **FAST).fit(Xs[500:1300], y[500:1300])
    s = attack.decision_function(Xs[1300:], y[1300:])
    assert s.shape == (300,) and np.all(np.isfinite(s))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"alphas": [0.0, 0.1]}, "alphas"),
        ({"alphas": [0.1, 0.1]}, "distinct"),
        ({"alphas": []}, "empty"),
        ({"params": {"loss_function": "RMSE"}}, "must not set"),
        ({"cv": 1}, "cv"),
        ({"n_trials": -1}, "n_trials"),
        ({"mode": "median"}, "mode"),
        ({"statistic": "margin"}, "statistic"),
        ({"device": "tpu"}, "device"),
        ({"tuning": "optuna"}, "tuning"),
        ({"tuning": "paper"}, "params fixes them"),
    ],
)
def test_bad_parameters_raise(small_game, kwargs, match):
    target, _, (Xp, yp), _ = small_game
    with pytest.raises(ValueError, match=match):
        QuantileAttack(target, **{"mode": "pinball", **FAST, **kwargs}).fit(Xp[:200], yp[:200])


def test_bad_records_raise(small_game):
    target, _, (Xp, yp), _ = small_game
    with pytest.raises(ValueError, match="never saw"):
        QuantileAttack(target, **FAST).fit(Xp[:300], np.full(300, 7))
    with pytest.raises(ValueError, match="records"):
        QuantileAttack(target, **FAST).fit(Xp[:300], yp[:200])
    with pytest.raises(ValueError, match="fpr=0.001"):  # 300 records cannot promise 1e-3
        QuantileAttack(target, fpr=0.001, **FAST).fit(Xp[:300], yp[:300])
    with pytest.raises(ValueError, match="target is None"):
        QuantileAttack(None, **FAST).fit(Xp[:300], yp[:300])


@pytest.mark.gpu
def test_gpu_training_when_available(small_game):
    from tabmia.backends import BACKENDS

    if BACKENDS["catboost"].gpu_count() == 0:
        pytest.skip("CatBoost sees no GPU")
    target, _, (Xp, yp), (Xf, yf) = small_game
    attack = QuantileAttack(target, fpr=0.05, device="gpu", random_state=0, **FAST).fit(Xp, yp)
    assert attack.device_ == "gpu"
    assert np.all(np.isfinite(attack.decision_function(Xf, yf)))
    # MultiQuantile is CPU-only in CatBoost: straight to the CPU, one warning, no failed fit
    with pytest.warns(UserWarning, match="MultiQuantile on the CPU only") as seen:
        pinball = QuantileAttack(target, mode="pinball", alphas=[0.05, 0.1], device="cuda",
                                 random_state=0, **FAST).fit(Xp, yp)
    assert pinball.device_ == "cpu" and len(seen) == 1


def test_device_vocabulary_cuda_falls_back_to_the_cpu_with_a_warning(small_game, monkeypatch):
    import tabmia.backends as backends

    monkeypatch.setattr(backends, "_catboost_gpus", lambda: 0)
    target, _, (Xp, yp), _ = small_game
    for device in ("cuda", "cuda:1", "gpu"):
        with pytest.warns(RuntimeWarning, match="CUDA is not available to CatBoost"):
            attack = QuantileAttack(target, device=device, **FAST).fit(Xp[:300], yp[:300])
        assert attack.device_ == "cpu"


def test_cli_quantile_on_cuda_runs_on_a_cpu_machine(tmp_path, capsys, monkeypatch):
    import tabmia.backends as backends
    from tabmia.cli import main

    monkeypatch.setattr(backends, "_catboost_gpus", lambda: 0)
    monkeypatch.setattr(backends, "gpu_present", lambda: False)
    code = main(["audit", "--attacks", "quantile", "--device", "cuda", "--quiet",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert (tmp_path / "out" / "results.json").is_file()
    # one note that no GPU is present, no per-fit fallback warning
    assert sum("no GPU is present" in line for line in err.splitlines()) == 1
    assert "Warning" not in err


class _RecordedRegressors:
    """Spy on QuantileAttack._make_regressor: records the GPU each fit was given and
    builds a CPU regressor instead (there is no GPU here)."""

    def __init__(self, monkeypatch):
        self.gpus = []
        real = QuantileAttack._make_regressor

        def spy(attack, params, seed, gpu):
            self.gpus.append(gpu)
            return real(attack, params, seed, None)

        monkeypatch.setattr(QuantileAttack, "_make_regressor", spy)


def test_pinball_grid_goes_straight_to_the_cpu_on_a_gpu(small_game, monkeypatch):
    """MultiQuantile is CPU-only in CatBoost: no GPU fit is tried, one warning per fit
    when the GPU was asked for, none under "auto"."""
    import warnings

    import tabmia.backends as backends

    monkeypatch.setattr(backends, "_catboost_gpus", lambda: 1)
    spy = _RecordedRegressors(monkeypatch)
    target, _, (Xp, yp), _ = small_game
    grid = dict(mode="pinball", alphas=[0.05, 0.1], random_state=0, **FAST)
    with pytest.warns(UserWarning, match="MultiQuantile on the CPU only") as seen:
        attack = QuantileAttack(target, device="cuda", **grid).fit(Xp[:300], yp[:300])
    assert len(seen) == 1 and attack.device_ == "cpu" and attack.gpus_ == ()
    assert spy.gpus == [None, None]  # cv=2 fits, both on the CPU from the start
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert QuantileAttack(target, **grid).fit(Xp[:300], yp[:300]).device_ == "cpu"


def test_gpu_fits_hold_a_gpu_and_auto_waits_for_size(small_game, monkeypatch):
    import tabmia.backends as backends

    monkeypatch.setattr(backends, "_catboost_gpus", lambda: 2)
    spy = _RecordedRegressors(monkeypatch)
    target, _, (Xp, yp), _ = small_game
    attack = QuantileAttack(target, device="cuda", random_state=0, **FAST).fit(Xp[:300], yp[:300])
    assert attack.device_ == "gpu" and attack.gpus_ == ("cuda:0", "cuda:1")
    assert spy.gpus == ["cuda:0", "cuda:0"]  # one fit after the other, each holding a GPU
    spy.gpus.clear()
    pinned = QuantileAttack(target, device="cuda:1", random_state=0, **FAST).fit(Xp[:300], yp[:300])
    assert pinned.gpus_ == ("cuda:1",) and spy.gpus == ["cuda:1", "cuda:1"]
    # "auto": 150 rows per regressor are far below the size where a GPU pays
    assert QuantileAttack(target, random_state=0, **FAST).fit(Xp[:300], yp[:300]).device_ == "cpu"
    assert backends.BACKENDS["catboost"].resolve("auto", n_rows=backends.auto_gpu_rows()) == "cuda"
