"""tabmia.whatif (issue 41): candidate fixes re-audited with the same attacks on the same records.

Small forests on scikit-learn's breast cancer data, LiRA with 4 shadows: the whole file runs
in well under half a minute on 2 cores.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.metrics import accuracy_score, log_loss, roc_auc_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from tabmia.attacks import LiRAAttack, LossAttack
from tabmia.audit import audit_model
from tabmia.whatif import (
    HardenedOutput,
    cap,
    combine,
    grid,
    harden,
    harden_proba,
    reaudit,
    resolve_variants,
    retrain,
    whatif,
)
from tabmia.whatif.frontier import pareto_front
from tabmia.whatif.paired import _weighted_auc, utility_values
from tabmia.whatif.variants import preset_variants, with_params

FPR = 0.05
LIMIT = "tpr@0.05=0.3"


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    perm = np.random.RandomState(0).permutation(len(y))
    return X[perm[:250]], y[perm[:250]], X[perm[250:]], y[perm[250:]]


def _attacks():
    return {"loss": LossAttack(fpr=FPR), "lira": LiRAAttack(n_shadow=4, fpr=FPR)}


def _forest():
    return RandomForestClassifier(n_estimators=10, random_state=0)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    X_tr, y_tr, X_pop, y_pop = _data()
    target = _forest().fit(X_tr, y_tr)
    out = tmp_path_factory.mktemp("whatif")
    variants = [retrain(max_depth=3), harden(round=2), harden(round=1), harden(labels_only=True)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = whatif(target, X_tr, y_tr, X_pop, y_pop, _attacks(), variants=variants,
                        limit=LIMIT, random_state=3, output_dir=out, n_bootstrap=200)
    return {"result": result, "target": target, "out": out, "variants": variants,
            "data": (X_tr, y_tr, X_pop, y_pop)}


# ------------------------------------------------------------------ identity, pairing
def test_original_equals_audit_model_score_for_score(run):
    result = run["result"]
    X_tr, y_tr, X_pop, y_pop = run["data"]
    rows = result.settings["audit_rows"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = audit_model(run["target"], X_tr, y_tr, X_pop[rows], y_pop[rows], _attacks(),
                             random_state=3)
    mine = result.runs_of("original")[0]
    pd.testing.assert_frame_equal(mine.scores.reset_index(drop=True), direct.scores)
    cols = ["attack", "tp", "fp", "n_members", "n_nonmembers", "fpr_target", "auc"]
    pd.testing.assert_frame_equal(mine.metrics[cols], direct.metrics[cols])


def test_same_random_state_and_population_give_the_same_split():
    X_tr, y_tr, X_pop, y_pop = _data()
    splits = []
    for model in (_forest(), LogisticRegression(max_iter=3000)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = audit_model(model.fit(X_tr, y_tr), X_tr, y_tr, X_pop, y_pop,
                              {"loss": LossAttack(fpr=FPR)}, random_state=7)
        splits.append(res.splits[0])
    assert np.array_equal(splits[0].public, splits[1].public)
    assert np.array_equal(splits[0].nonmembers, splits[1].nonmembers)


def test_every_variant_scores_the_same_candidates(run):
    result = run["result"]
    key = ["record", "source", "member"]
    base = result.runs_of("original")[0].scores
    base = base[base["attack"] == "loss"][key].reset_index(drop=True)
    for v in result.variants:
        s = result.runs_of(v.name)[0].scores
        s = s[s["attack"] == s["attack"].iloc[0]][key].reset_index(drop=True)
        pd.testing.assert_frame_equal(s, base)


def test_utility_records_are_held_out_of_every_audit(run):
    s = run["result"].settings
    assert np.intersect1d(s["audit_rows"], s["utility_rows"]).size == 0
    assert s["audit_rows"].size + s["utility_rows"].size == run["data"][3].size


# ------------------------------------------------------------------ hardening
def test_harden_proba_rounds_and_keeps_rows_summing_to_one():
    p = np.array([[0.333, 0.333, 0.334], [0.051, 0.949, 0.0], [0.5, 0.25, 0.25]])
    r = harden_proba(p, round=1)
    assert np.allclose(r.sum(axis=1), 1.0)
    assert np.allclose(r * 10, np.round(r * 10))
    assert r.argmax(axis=1).tolist() == p.argmax(axis=1).tolist()
    t = harden_proba(p, top_k=1)
    assert np.allclose(t.sum(axis=1), 1.0)
    assert t[2].tolist() == [0.5, 0.25, 0.25] and t[1].tolist()[1] == 0.949


def test_hardened_output_wraps_a_fitted_model_without_refitting():
    X, y, *_ = _data()
    model = _forest().fit(X, y)
    h = HardenedOutput(model, round=1)
    assert not hasattr(h, "estimator_")  # nothing refitted
    assert np.allclose(h.predict_proba(X), harden_proba(model.predict_proba(X), round=1))
    assert np.array_equal(h.predict(X), model.predict(X))
    copy = clone(h)  # a shadow recipe: unfitted inner model, same hardening
    assert copy.round == 1 and not hasattr(copy.estimator, "estimators_")
    label = HardenedOutput(model, labels_only=True)
    assert not hasattr(label, "predict_proba")


def test_shadows_of_a_hardened_target_see_hardened_outputs():
    X, y, X_pop, y_pop = _data()
    target = HardenedOutput(_forest().fit(X, y), round=1)
    attack = LiRAAttack(target, n_shadow=4, fpr=FPR, random_state=0).fit(X_pop, y_pop)
    pop = attack.population_
    assert isinstance(pop.estimator_, HardenedOutput) and pop.estimator_.round == 1
    for model in pop.models_:
        assert isinstance(model, HardenedOutput)
        p = model.predict_proba(X_pop)
        assert np.allclose(p * 10, np.round(p * 10))


def test_hardenings_reuse_the_originals_shadows_and_scores_equal_retraining(run):
    result = run["result"]
    orig, r2, r1 = (result.runs_of(v)[0] for v in ("original", "round2", "round1"))
    assert orig.models_trained == 4 == orig.models_used
    assert r2.models_trained == 0 and r1.models_trained == 0 and r1.models_used == 4
    assert any("4 of its 4 shadow models are the original's" in n for n in r1.notes)
    X_tr, y_tr, X_pop, y_pop = run["data"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = whatif(run["target"], X_tr, y_tr, X_pop, y_pop, _attacks(),
                       variants=[harden(round=1)], limit=LIMIT, random_state=3,
                       share_shadows=False, n_bootstrap=50)
    assert alone.runs_of("round1")[0].models_trained == 4  # trained its own
    pd.testing.assert_frame_equal(alone.runs_of("round1")[0].scores, r1.scores)


def test_population_of_a_hardened_recipe_is_the_inner_population_rescored(tmp_path):
    from tabmia.shadow import ShadowPopulation
    from tabmia.shadow._training import _statistic_row

    def logistic():  # probabilities that rounding to one decimal changes
        return Pipeline([("scale", StandardScaler()), ("lr", LogisticRegression())])

    X, y, *_ = _data()
    settings = dict(n_models=4, statistic="logit", random_state=5, cache_dir=tmp_path)
    raw = ShadowPopulation(logistic(), **settings).fit(X, y)
    hard = ShadowPopulation(HardenedOutput(logistic(), round=1), **settings).fit(X, y)
    assert raw.n_trained_ == 4 and hard.n_trained_ == 0  # the raw population's models
    assert isinstance(hard.estimator_, HardenedOutput)
    for inner, model, row in zip(raw.models_, hard.models_, hard.statistics_):
        assert model.round == 1  # the inner model loaded from the raw population's cache
        assert np.array_equal(model.estimator.predict_proba(X), inner.predict_proba(X))
        assert np.array_equal(row, _statistic_row(model, X, y, np.array([0, 1]), "logit"))
    # trained afresh (another folder): the same inner models and the same statistics
    fresh = ShadowPopulation(HardenedOutput(logistic(), round=1),
                             **{**settings, "cache_dir": tmp_path / "other"}).fit(X, y)
    assert fresh.n_trained_ == 4
    assert np.array_equal(fresh.statistics_, hard.statistics_)
    assert not np.array_equal(raw.statistics_, hard.statistics_)  # rounding shows


def test_label_only_variant_is_audited_with_label_attacks_and_says_so(run):
    lo = run["result"].runs_of("labels_only")[0]
    assert lo.label_only and set(lo.attacks) == {"gap", "noise_robustness"}
    assert any("labels only" in n and "loss, lira" in n for n in lo.notes)
    assert np.isnan(run["result"].frontier().set_index("variant").loc["labels_only", "log_loss"])


# ------------------------------------------------------------------ the frontier
def test_frontier_table_gate_and_best(run):
    result = run["result"]
    t = result.frontier()
    assert list(t["variant"]) == [v.name for v in result.variants]
    orig = t.iloc[0]
    assert orig["delta_tpr"] == 0 and orig["delta_utility"] == 0
    for _, r in t.iterrows():
        gate = result.gate(r["variant"])
        assert r["gate_own"] == gate.outcome
        if r["risk_variant"] == r["variant"] and r["gate"] == gate.outcome:
            assert r["passes"] == gate.passed
        assert r["delta_tpr_low"] <= r["delta_tpr"] + 1e-12 <= r["delta_tpr_high"] + 2e-12
    best = result.best()
    if bool(orig["passes"]):  # the original is a candidate: no fix is named best
        assert best == "original"
    elif best is not None:
        passing = t[t["passes"]]
        assert t.set_index("variant").loc[best, "utility"] == passing["utility"].max()
    text = result.summary()
    assert "selection" in text and "reaudit" in text
    fpr = result.delivered_fpr()
    assert set(fpr["variant"]) == set(t["variant"]) and (fpr["fpr_target"] == FPR).all()
    md = result.to_markdown()
    assert "| variant |" in md and "FPR delivered" in md


def test_plot_is_written(run, tmp_path):
    path = tmp_path / "frontier.png"
    run["result"].plot(path)
    assert path.stat().st_size > 1000


def test_frontier_display_draws_on_the_callers_axes(run):
    import matplotlib.pyplot as plt

    from tabmia.whatif import FrontierDisplay

    result = run["result"]
    fig, ax = plt.subplots()
    display = FrontierDisplay.from_result(result, ax=ax)
    assert display.ax_ is ax and display.figure_ is fig
    table = result.frontier()
    front = table[table["on_front"] & np.isfinite(table["utility"].astype(float))]
    assert sorted(display.front_line_.get_xdata()) == sorted(front["utility"])
    # the figure WhatIfResult.plot returns is the display's, in a figure of its own
    own = result.plot()
    assert own is not fig and own.axes[0].get_title() == ax.get_title()
    plt.close("all")


def test_rerun_loads_every_finished_variant(run):
    X_tr, y_tr, X_pop, y_pop = run["data"]
    again = whatif(run["target"], X_tr, y_tr, X_pop, y_pop, _attacks(), variants=run["variants"],
                   limit=LIMIT, random_state=3, output_dir=run["out"], n_bootstrap=200)
    assert all(r.from_store for r in again.runs)
    pd.testing.assert_frame_equal(again.frontier().drop(columns="seconds"),
                                  run["result"].frontier().drop(columns="seconds"))


def test_combine_pools_seeds(run):
    both = combine([run["result"], run["result"]])
    a = both.audit("original")
    assert sorted(a.scores["repeat"].unique()) == [0, 1]
    assert both.frontier().iloc[0]["n_paired"] == 2 * 250


# ------------------------------------------------------------------ paired statistics
def test_weighted_auc_and_utilities_match_sklearn():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 200)
    score = np.round(rng.uniform(size=200) + 0.3 * y, 1)  # ties
    assert np.isclose(_weighted_auc(score, y == 1, np.ones((1, 200)))[0], roc_auc_score(y, score))
    w = rng.randint(0, 3, size=200)  # integer weights = repeated records
    rep = np.repeat(np.arange(200), w)
    assert np.isclose(_weighted_auc(score, y == 1, w[None, :].astype(float))[0],
                      roc_auc_score(y[rep], score[rep]))
    proba = np.column_stack([1 - score / 1.4, score / 1.4])
    pred = proba.argmax(axis=1)
    ones = np.ones((1, 200))
    assert np.isclose(utility_values(y, proba, pred, ones, "accuracy", False)[0],
                      accuracy_score(y, pred))
    assert np.isclose(utility_values(y, proba, pred, ones, "log_loss", False)[0], log_loss(y, proba))


def test_pareto_front():
    risk = np.array([0.1, 0.05, 0.2, 0.05])
    util = np.array([0.9, 0.8, 0.95, 0.7])
    assert pareto_front(risk, util).tolist() == [True, True, True, False]


# ------------------------------------------------------------------ person cap
def test_person_cap_scores_the_records_kept():
    rng = np.random.RandomState(1)
    X, y = load_breast_cancer(return_X_y=True)
    groups = rng.randint(0, 200, size=len(y))  # about 3 records per person
    persons = np.unique(groups)
    train_p = np.isin(groups, persons[:90])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = whatif(_forest(), X[train_p], y[train_p], X[~train_p], y[~train_p],
                     {"loss": LossAttack(fpr=FPR)}, variants=[cap(1)], limit=LIMIT,
                     groups_train=groups[train_p], groups_population=groups[~train_p],
                     random_state=0, n_bootstrap=50)
    s = res.runs_of("cap1")[0].scores
    members = s[s["member"]]["record"].to_numpy()
    g_train = groups[train_p]
    assert np.unique(g_train[members], return_counts=True)[1].max() == 1
    assert members.size == np.unique(g_train).size
    t = res.frontier().set_index("variant")
    assert t.loc["cap1", "n_paired"] == members.size
    assert "person" in s.columns


# ------------------------------------------------------------------ checks before training
class _NoFit(RandomForestClassifier):
    """A recipe whose training fails: an error raised before training never reaches it."""

    def fit(self, X, y, sample_weight=None):
        raise AssertionError("trained")


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        ([retrain(max_leaf=3)], "does not take"),
        ("dropout", "unknown variant preset"),
        ([], "no variants"),
        ([harden(top_k=1)], "hides nothing"),
        ([cap(1)], "person ids"),
    ],
)
def test_bad_variants_fail_before_training(variants, message):
    X_tr, y_tr, X_pop, y_pop = _data()
    with pytest.raises(ValueError, match=message) as info:
        whatif(_NoFit(), X_tr, y_tr, X_pop, y_pop, _attacks(), variants=variants)
    assert "\n" not in str(info.value)


def test_empty_grid_and_rounding_a_label_only_model():
    with pytest.raises(ValueError, match="empty"):
        grid({})
    with pytest.raises(ValueError, match="empty"):
        grid({"max_depth": []})
    X_tr, y_tr, X_pop, y_pop = _data()
    with pytest.raises(ValueError, match="labels only"):
        whatif(RidgeClassifier().fit(X_tr, y_tr), X_tr, y_tr, X_pop, y_pop, _attacks(),
               variants=[harden(round=2)])


def test_pipeline_parameters_target_the_last_step():
    pipe = Pipeline([("scale", StandardScaler()), ("model", _forest())])
    assert with_params(pipe, {"max_depth": 4}) == {"model__max_depth": 4}
    assert with_params(pipe, {"model__max_depth": 4}) == {"model__max_depth": 4}
    names = [v.name for v in grid({"max_depth": [3, 5], "min_samples_leaf": [1, 10]})]
    assert len(names) == 4 and len(set(names)) == 4


def test_presets_map_each_library_to_its_grid():
    from catboost import CatBoostClassifier
    from sklearn.ensemble import HistGradientBoostingClassifier

    for model, param in [(_forest(), "max_depth"), (HistGradientBoostingClassifier(), "l2_regularization"),
                         (LogisticRegression(), "C"), (CatBoostClassifier(), "depth")]:
        pipe = Pipeline([("scale", StandardScaler()), ("model", model)])
        found = preset_variants("regularise", pipe, 2, False)
        assert len(found) >= 2 and any(param in v.params for v in found)
        resolve_variants(found, pipe, classes=np.array([0, 1]), has_proba=True, has_groups=False)
    assert [v.name for v in preset_variants("harden", _forest(), 3, False)] == [
        "round2", "top1", "labels_only"]


def test_reaudit_on_fresh_records(run):
    X, y = load_breast_cancer(return_X_y=True)
    perm = np.random.RandomState(0).permutation(len(y))
    # fresh records: a real audit keeps them apart; here the population again, a new seed
    X_pop, y_pop = X[perm[250:]], y[perm[250:]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = reaudit(run["result"], X_pop, y_pop, variant="max_depth=3")
    assert [v.name for v in again.variants] == ["original", "max_depth=3"]
    assert again.settings["random_state"] == 4


# ------------------------------------------------------------------ issue 46
def _with_round1_at(result, share):
    """``result`` with round1's loss attack flagging ``share`` of the members (what an
    attacker who rounds the original's outputs himself would get, were it that strong)."""
    from dataclasses import replace

    from tabmia.metrics import clopper_pearson
    from tabmia.whatif import WhatIfResult

    runs = []
    for r in result.runs:
        if r.variant == "round1":
            m = r.metrics.copy()
            at = m["attack"] == "loss"
            m.loc[at, "tp"] = (share * m.loc[at, "n_members"]).round().astype(int)
            m.loc[at, "tpr"] = m.loc[at, "tp"] / m.loc[at, "n_members"]
            lo, hi = clopper_pearson(m.loc[at, "tp"].to_numpy(), m.loc[at, "n_members"].to_numpy())
            m.loc[at, "tpr_low"], m.loc[at, "tpr_high"] = lo, hi
            r = replace(r, metrics=m)
        runs.append(r)
    return WhatIfResult(result.variants, runs, result.classes, result.settings, result.inputs)


def test_the_original_is_stated_at_the_largest_risk_of_its_hardenings(run, tmp_path):
    """Item 3: rounding is a function of the original's output, so an attacker can round it
    himself: the original's stated risk is at least any hardening's, on the frontier too."""
    res = _with_round1_at(run["result"], 0.8)
    t = res.frontier().set_index("variant")
    o, h = t.loc["original"], t.loc["round1"]
    assert h["tpr"] == pytest.approx(0.8) and o["tpr"] < h["tpr"]
    assert o["risk"] == h["tpr"] and o["risk_variant"] == "round1" and o["risk_attack"] == "loss"
    assert o["risk_fpr"] == h["fpr"] and o["risk_low"] == h["tpr_low"]
    assert (t["risk"] <= o["risk"]).all() or (t[t["kind"] == "harden"]["tpr"] <= o["risk"]).all()
    assert o["gate"] == "above" and not o["passes"] and h["gate"] == "above"
    text = res.summary()
    assert (
        "an attacker who rounds the outputs to 1 decimal himself singles out 200 of 250 "
        "member records, TPR 0.800" in text
    )
    assert "its threshold delivering FPR" in text and "the frontier places it there" in text
    assert res.best() != "original"
    assert "risk stated" in res.to_markdown()
    res.plot(tmp_path / "f.png")
    # without it, the original stands at its own risk
    own = run["result"].frontier().set_index("variant").loc["original"]
    hard = run["result"].frontier().query("kind == 'harden'")["tpr"].max()
    assert own["risk"] == max(own["tpr"], hard)


def test_no_best_variant_when_the_original_passes():
    """Item 8: the original is a candidate; where it passes, no fix is named best."""
    from tabmia.whatif.frontier import best_variant

    t = pd.DataFrame({
        "variant": ["original", "max_depth=6"], "kind": ["original", "retrain"],
        "passes": [True, True], "utility": [0.80, 0.82], "tpr": [0.02, 0.01],
        "roc_auc": [0.80, 0.82], "log_loss": [0.5, 0.4],
    })
    assert best_variant(t) == "original"
    assert best_variant(t.assign(passes=[False, True])) == "max_depth=6"


def test_every_unresolved_variant_says_why_and_the_unit_is_said(run):
    """Item 8: a variant the gate cannot decide carries the reason; the unit and counts are
    in the words and the table."""
    res = run["result"]
    t = res.frontier()
    for _, r in t[t["gate"] == "unresolved"].iterrows():
        assert any("is unresolved for it" in n for n in r["notes"]), r["variant"]
    text = res.summary()
    assert "Unit: records. Every TPR counts member records (250)" in text
    assert "TPR, records" in res.to_markdown()


def test_person_data_gives_person_level_risk_and_the_cap_owns_its_label_shift():
    """Item 8: with person ids the table carries the person-level risk (as tabmia audit
    reports it) and the words count persons; a cap's label shift is the cap's, not the
    data's."""
    rng = np.random.RandomState(1)
    X, y = load_breast_cancer(return_X_y=True)
    groups = rng.randint(0, 200, size=len(y))
    groups = np.where(y == 1, groups, groups % 40)  # persons with many records: one label
    persons = np.unique(groups)
    train_p = np.isin(groups, persons[::2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = whatif(_forest(), X[train_p], y[train_p], X[~train_p], y[~train_p],
                     {"loss": LossAttack(fpr=FPR)}, variants=[cap(1)], limit=LIMIT,
                     groups_train=groups[train_p], groups_population=groups[~train_p],
                     random_state=0, n_bootstrap=50)
    t = res.frontier().set_index("variant")
    n_persons = np.unique(groups[train_p]).size
    assert (t["n_member_persons"] == n_persons).all()
    assert t["person_tpr"].between(0, 1).all() and t["person_attack"].notna().all()
    text = res.summary()
    assert f"of {n_persons} member and" in text and "person-level risk" in text
    assert "TPR, persons" in res.to_markdown()
    cap_notes = " ".join(t.loc["cap1", "notes"])
    assert "the population may come from another distribution" not in cap_notes
    if "label" in cap_notes:
        assert "changed the members' label mix, not the data" in cap_notes


def test_the_guide_links_into_the_api():
    """Item 9: the what-if guide links the API page and names its entry points as
    cross-references that resolve to public names of tabmia.whatif."""
    import re
    from pathlib import Path

    import tabmia.whatif as w

    guide = (Path(__file__).resolve().parents[1] / "docs/user_guide/whatif.md").read_text()
    assert "{doc}`the tabmia.whatif API page <../api/tabmia_whatif>`" in guide
    refs = re.findall(r"\{py:(?:func|class)\}`~?tabmia\.whatif\.(\w+)`", guide)
    assert {"whatif", "WhatIfResult", "reaudit", "harden", "grid"} <= set(refs)
    assert set(refs) <= set(w.__all__)
