"""LiRA (Carlini et al.): statistics, offline / online attacks, thresholds.

Statistical checks use 2,000 members and 2,000 non-members per seed (so 1% FPR is 20
non-members) and compare means over three seeded repetitions; everything is seeded,
so the numbers are reproducible.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

from tabmia.attacks.lira import VARIANCE_FLOOR_SHARE, LiRAAttack, offline_score, online_score
from tabmia.attacks.loss import LossAttack
from tabmia.exceptions import DuplicateRecordsWarning
from tabmia.metrics import auc, tpr_at_fpr
from tabmia.scores import membership_score
from tabmia.shadow import PoolIndex, masked_moments, pooled_variance

SEEDS = (0, 1, 2)
N = 2000  # members = non-members = N; public = 2 N


def _game(seed: int) -> dict:
    X, y = make_classification(
        n_samples=4 * N, n_features=10, n_informative=6, flip_y=0.1, random_state=seed
    )
    mem, non, pub = np.arange(N), np.arange(N, 2 * N), np.arange(2 * N, 4 * N)
    target = RandomForestClassifier(n_estimators=30, random_state=seed).fit(X[mem], y[mem])
    cand = np.r_[mem, non]
    member = np.r_[np.ones(N, bool), np.zeros(N, bool)]
    return {"X": X, "y": y, "pub": pub, "cand": cand, "member": member, "target": target,
            "seed": seed}


@pytest.fixture(scope="module")
def games() -> list[dict]:
    return [_game(s) for s in SEEDS]


@pytest.fixture(scope="module")
def results(games) -> list[dict]:
    """Scores of LOSS, offline LiRA and online LiRA on each seeded game."""
    out = []
    for g in games:
        X, y, pub, cand = g["X"], g["y"], g["pub"], g["cand"]
        loss = LossAttack(g["target"]).fit(X[pub], y[pub])
        off = LiRAAttack(g["target"], n_shadow=8, random_state=g["seed"]).fit(X[pub], y[pub])
        pool = np.r_[pub[:N], cand]
        on = LiRAAttack(g["target"], n_shadow=8, online=True, random_state=g["seed"])
        on.fit(X[pool], y[pool], known_nonmembers=np.arange(pool.size) < N)
        out.append({
            "loss": loss.decision_function(X[cand], y[cand]),
            "offline": off.decision_function(X[cand], y[cand]),
            "online": on.decision_function(X[cand], y[cand]),
            "off_attack": off, "on_attack": on,
        })
    return out


# ------------------------------------------------------------------ statistics
def test_masked_moments_match_a_loop():
    rng = np.random.default_rng(0)
    stats = rng.normal(size=(7, 50)).astype(np.float32)
    mask = rng.random((7, 50)) < 0.5
    mask[:, 0] = False  # no entry
    mask[:, 1] = False
    mask[3, 1] = True  # one entry
    c, mu, ssd = masked_moments(stats, mask, chunk=16)
    for i in range(50):
        v = stats[mask[:, i], i].astype(np.float64)
        assert c[i] == v.size
        if v.size:
            assert mu[i] == pytest.approx(v.mean(), abs=1e-12)
            assert ssd[i] == pytest.approx(((v - v.mean()) ** 2).sum(), abs=1e-10)
        else:
            assert np.isnan(mu[i]) and ssd[i] == 0
    ok = c >= 2
    assert pooled_variance(c, ssd) == pytest.approx(ssd[ok].sum() / (c[ok] - 1).sum())


def test_gaussian_scores_match_scipy_and_do_not_saturate():
    t = np.array([0.0, 1.0, 5.0, 12.0, 20.0, 40.0])
    mu, var, c = np.zeros(6), np.ones(6), np.full(6, 10**9)
    s = offline_score(t, mu, var, c)
    assert np.allclose(s, -norm.logsf(t), rtol=1e-6)
    # norm.cdf rounds every record > ~8.3 sd above its mean to 1.0: four ties;
    # the log-space score keeps them apart, strictly increasing
    assert (norm.cdf(t) == 1.0).sum() >= 3
    assert np.all(np.diff(s) > 0) and np.all(np.isfinite(s))
    llr = online_score(t, mu + 2, 2 * var, c, mu, var, c)
    expected = norm.logpdf(t, 2, np.sqrt(2)) - norm.logpdf(t, 0, 1)
    assert np.allclose(llr, expected, rtol=1e-6)


def test_predictive_variance_uses_the_number_of_shadows():
    # k OUT scores give a predictive sd of sigma * sqrt(1 + 1/k)
    s = offline_score(np.array([2.0]), np.array([0.0]), np.array([1.0]), np.array([4]))
    assert s[0] == pytest.approx(-norm.logsf(2.0 / np.sqrt(1.25)))


def test_pool_index_finds_rows_and_merges_duplicates():
    X = np.array([[0.0, 1.0], [2.0, 3.0], [0.0, 1.0], [5.0, 5.0]])
    y = np.array([1, 0, 1, 0])
    masks = np.array([[True, False, False, True], [False, True, True, False]])
    idx = PoolIndex(X, y, masks)
    assert idx.n_duplicates == 1
    # rows 0 and 2 are one record: IN for both models
    assert idx.in_masks[:, 0].all() and idx.in_masks[:, 2].all()
    pos = idx.lookup(np.array([[2.0, 3.0], [0.0, 1.0], [0.0, 1.0], [9.0, 9.0]]),
                     np.array([0, 1, 0, 0]))
    assert list(pos) == [1, 0, -1, -1]  # same features, other label: another record


# ----------------------------------------------------------------- the attack
def test_lira_beats_loss_at_low_fpr_on_an_overfit_forest(games, results):
    tpr = {k: np.mean([tpr_at_fpr(g["member"], r[k], 0.01) for g, r in zip(games, results)])
           for k in ("loss", "offline", "online")}
    aucs = {k: np.mean([auc(g["member"], r[k]) for g, r in zip(games, results)])
            for k in ("loss", "offline", "online")}
    # measured (mean of 3 seeds): LOSS 0.00, offline ~0.18, online ~0.21 TPR at 1% FPR
    assert tpr["offline"] > tpr["loss"] + 0.1, tpr
    assert aucs["offline"] > aucs["loss"], aucs


def test_online_is_at_least_offline_at_low_fpr(games, results):
    off = np.mean([tpr_at_fpr(g["member"], r["offline"], 0.01) for g, r in zip(games, results)])
    on = np.mean([tpr_at_fpr(g["member"], r["online"], 0.01) for g, r in zip(games, results)])
    assert on >= off, (on, off)


def test_offline_scores_do_not_tie_at_the_top(games, results):
    for r in results:
        s = r["offline"]
        top = np.sort(s)[-100:]
        # a few records share their (target score, OUT scores) exactly (a forest's
        # probabilities are counts); the p-value itself never saturates
        assert np.unique(top).size >= 80
        assert np.all(np.isfinite(s))


def test_thresholds_keep_their_fpr_on_fresh_non_members(games, results):
    # offline: calibrated on held-out public records; online: the pool's public records
    for scores, attack in (("offline", "off_attack"), ("online", "on_attack")):
        fprs = [np.mean(r[scores][~g["member"]] >= r[attack].threshold_)
                for g, r in zip(games, results)]
        assert np.mean(fprs) <= 0.02, (scores, fprs)  # promised 0.01; 2,000 non-members


def test_clip_is_searched_for_count_valued_probabilities(results):
    a = results[0]["off_attack"]
    assert a.proba_clip_ is not None and 0 < a.proba_clip_ <= 0.25
    assert a.proba_clip_ in a.clip_search_ and len(a.clip_search_) >= 2
    assert a.variance_ == "global"  # "auto"


def test_no_clip_for_continuous_probabilities():
    X, y = make_classification(n_samples=600, n_features=6, random_state=0)
    target = LogisticRegression().fit(X[:200], y[:200])
    a = LiRAAttack(target, n_shadow=4, fpr=0.05, random_state=0).fit(X[200:], y[200:])
    assert a.proba_clip_ is None and a.clip_search_ == {}
    fixed = LiRAAttack(target, n_shadow=4, fpr=0.05, proba_clip=0.01, random_state=0)
    assert fixed.fit(X[200:], y[200:]).proba_clip_ == 0.01


def test_chance_level_when_the_target_never_saw_the_candidates():
    aucs = []
    for seed in SEEDS:
        X, y = make_classification(n_samples=6000, n_features=10, n_informative=6,
                                   flip_y=0.1, random_state=10 + seed)
        target = RandomForestClassifier(n_estimators=30, random_state=seed).fit(X[:1500], y[:1500])
        fake, non, pub = np.arange(1500, 2500), np.arange(2500, 3500), np.arange(3500, 6000)
        cand = np.r_[fake, non]
        lab = np.r_[np.ones(1000, bool), np.zeros(1000, bool)]
        for online in (False, True):
            a = LiRAAttack(target, n_shadow=6, online=online, random_state=seed)
            pool = np.r_[pub, cand] if online else pub
            known = {"known_nonmembers": np.arange(pool.size) < pub.size} if online else {}
            a.fit(X[pool], y[pool], **known)
            aucs.append(auc(lab, a.decision_function(X[cand], y[cand])))
    assert abs(np.mean(aucs) - 0.5) < 0.05, aucs
    assert max(abs(a - 0.5) for a in aucs) < 0.08, aucs


def test_online_records_outside_the_pool_warn_and_stay_finite(games, results):
    a = results[0]["on_attack"]
    X_new, y_new = make_classification(n_samples=50, n_features=10, n_informative=6,
                                       random_state=99)
    with pytest.warns(UserWarning, match="not in the pool"):
        s = a.decision_function(X_new, y_new)
    assert s.shape == (50,) and np.all(np.isfinite(s))
    assert np.isfinite(a.shift_) and a.shift_ > 0


def test_pool_records_use_only_their_out_shadows(games, results):
    g, a = games[0], results[0]["off_attack"]
    X, y, pub = g["X"], g["y"], g["pub"]
    rows = pub[:20]
    with pytest.warns(DuplicateRecordsWarning):
        s = a.decision_function(X[rows], y[rows])
    # the same number by hand: OUT shadows of each public record, global variance
    stats = np.clip(a.population_.statistics_[:, :20].astype(np.float64),
                    -a._clip, a._clip)
    out = ~a.in_masks_[:, :20]
    t = np.clip(membership_score("logit", a.target_.predict_proba(X[rows]), y[rows]),
                -a._clip, a._clip)
    for i in range(20):
        v = stats[out[:, i], i]
        sd = np.sqrt(a.global_var_out_ * (1 + 1 / v.size))
        assert s[i] == pytest.approx(-norm.logsf(t[i], v.mean(), sd), rel=1e-6, abs=1e-9)
    # every public record calibrates the threshold, scored so
    assert a.calibration_index_.size == 0 and a.calibration_scores_.size == pub.size
    assert np.allclose(a.calibration_scores_[:20], s)


def test_fresh_candidates_are_scored_by_as_many_shadows_as_a_public_record(games, results):
    g, a = games[0], results[0]["off_attack"]
    X, y, cand = g["X"], g["y"], g["cand"]
    out = a.out_model_masks(X[cand], y[cand])
    n_out = round(a.n_shadow * (1 - a.pkeep_))
    assert (out.sum(axis=0) == n_out).all()
    assert (a.out_model_masks(X[g["pub"]], y[g["pub"]]).sum(axis=0) == n_out).all()
    # each shadow scores about its share of the candidates, whatever their membership
    member = g["member"]
    assert np.allclose(out[:, member].mean(axis=1), 1 - a.pkeep_, atol=0.05)
    assert np.allclose(out[:, ~member].mean(axis=1), 1 - a.pkeep_, atol=0.05)

def test_cache_dir_reloads_the_shadows(tmp_path):
    X, y = make_classification(n_samples=800, n_features=6, random_state=1)
    target = RandomForestClassifier(n_estimators=10, random_state=0).fit(X[:200], y[:200])
    kw = dict(n_shadow=4, fpr=0.05, random_state=0, cache_dir=tmp_path)
    a = LiRAAttack(target, **kw).fit(X[200:], y[200:])
    b = LiRAAttack(target, **kw).fit(X[200:], y[200:])
    assert a.population_.n_trained_ == 4 and b.population_.n_trained_ == 0
    assert np.array_equal(a.decision_function(X[:100], y[:100]),
                          b.decision_function(X[:100], y[:100]))


def test_hinge_statistic_and_per_example_variance_run():
    X, y = make_classification(n_samples=900, n_features=6, n_classes=3, n_informative=4,
                               random_state=2)
    target = RandomForestClassifier(n_estimators=20, random_state=0).fit(X[:300], y[:300])
    a = LiRAAttack(target, n_shadow=4, statistic="hinge", variance="per_example", fpr=0.05,
                   random_state=0).fit(X[300:], y[300:])
    assert a.variance_ == "per_example"
    s = a.decision_function(X[:300], y[:300])
    assert s.shape == (300,) and np.all(np.isfinite(s))

    # the variances by hand from the shadows' statistics on the pool (the public
    # records), with masked sums instead of masked_moments
    pub = np.arange(300, 900)
    pool = pub[np.setdiff1d(np.arange(pub.size), a.calibration_index_)]
    stats = a.population_.statistics_.astype(np.float64)
    if a._clip is not None:
        stats = np.clip(stats, -a._clip, a._clip)
    out = ~a.in_masks_
    c = out.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = (stats * out).sum(axis=0) / c
    ssd = (np.where(out, stats - mu, 0.0) ** 2).sum(axis=0)
    two = c >= 2
    global_var = ssd[two].sum() / (c[two] - 1).sum()
    assert np.allclose(a.global_var_out_, global_var)
    with np.errstate(invalid="ignore", divide="ignore"):
        own = np.where(two, ssd / (c - 1), global_var)
    per_example = np.maximum(own, VARIANCE_FLOOR_SHARE * global_var)
    # the pool records with OUT shadows, scored by the attack and by hand
    rows = np.flatnonzero(c >= 1)
    t = membership_score("hinge", a.target_.predict_proba(X[pool[rows]]), y[pool[rows]])
    if a._clip is not None:
        t = np.clip(t, -a._clip, a._clip)
    sd = np.sqrt(per_example[rows] * (1 + 1 / c[rows]))
    expected = -norm.logsf(t, mu[rows], sd)
    with pytest.warns(DuplicateRecordsWarning):  # pool records are public records
        scored = a.decision_function(X[pool[rows]], y[pool[rows]])
    assert np.allclose(scored, expected, rtol=1e-6, atol=1e-9)
    # the per-example variances matter: the global one gives other scores
    sd_global = np.sqrt(global_var * (1 + 1 / c[rows]))
    assert not np.allclose(expected, -norm.logsf(t, mu[rows], sd_global), rtol=1e-3)


def test_too_few_shadows_raise():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    target = LogisticRegression().fit(X[:100], y[:100])
    with pytest.raises(ValueError, match="without OUT or IN shadows"):
        LiRAAttack(target, n_shadow=3, pkeep=0.25, online=True, fpr=0.05).fit(
            X[100:], y[100:], known_nonmembers=np.ones(200, bool))
    with pytest.raises(ValueError, match="n_shadow"):
        LiRAAttack(target, n_shadow=1).fit(X[100:], y[100:])
    assert LiRAAttack(online=True)._fit_includes_candidates
    assert not LiRAAttack()._fit_includes_candidates


def test_clip_is_searched_for_a_logit_target():
    """An MLP target gives logits (nothing saturates) but heavy-tailed scores: "auto"
    lets the attacker's shadows choose between no bound and a grid of bounds."""
    pytest.importorskip("torch")
    from tabmia.shadow import TorchMLPClassifier

    X, y = make_classification(n_samples=1200, n_features=10, n_informative=6,
                               flip_y=0.1, random_state=0)
    X = X.astype(np.float32)
    recipe = TorchMLPClassifier(hidden_layer_sizes=(32,), epochs=30, batch_size=50,
                                device="cpu", random_state=0)
    target = TorchMLPClassifier(**recipe.get_params()).fit(X[:300], y[:300])
    a = LiRAAttack(target, shadow_estimator=recipe, n_shadow=8, fpr=0.05,
                   random_state=0).fit(X[300:900], y[300:900])
    assert a.target_.has_logits
    assert None in a.clip_search_ and len(a.clip_search_) >= 3
    best = max(a.clip_search_.values())
    assert a.clip_search_[a.proba_clip_] == best
    assert min(e for e in a.clip_search_ if e is not None) == pytest.approx(1e-6)
    # the chosen bound is what the scores use
    s = a.decision_function(X[:300], y[:300])
    assert np.all(np.isfinite(s))
