"""Person ids from the split to the attacks (issue 39): a person's records stay on one side
of every split, share one IN/OUT mask in the shadow models, are held out and cross-fitted
together; with one record per person nothing changes; shared persons make the audit
"cannot tell"; bad ids get one clear error."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.tree import DecisionTreeClassifier

from tabmia import PlausibilityWarning
from tabmia.attacks import LiRAAttack, LossAttack, QuantileAttack, RMIAAttack
from tabmia.audit import audit_model
from tabmia.experiment import MembershipExperiment, split_membership
from tabmia.game import membership_game
from tabmia.gate import evaluate_gate
from tabmia.metrics import make_membership_scorer
from tabmia.report.state import CANNOT_TELL, verdict_state


@pytest.fixture(scope="module")
def persons():
    """1,600 records of 500 persons (1 to 7 records each) and a forest on 250 of them."""
    rng = np.random.RandomState(0)
    sizes = rng.randint(1, 8, 500)
    groups = np.repeat(np.arange(500), sizes)[:1600]
    X, y = make_classification(n_samples=groups.size, n_features=8, flip_y=0.05,
                               random_state=0)
    train = groups < 250
    model = RandomForestClassifier(n_estimators=20, random_state=0).fit(X[train], y[train])
    return X, y, groups, train, model


def _attacks():
    return {
        "loss": LossAttack(fpr=0.05),
        "lira": LiRAAttack(n_shadow=4, fpr=0.05, calibration_share=0.25),
        "lira_online": LiRAAttack(n_shadow=4, online=True, fpr=0.05),
        "rmia": RMIAAttack(n_reference=2, fpr=0.05),
        "quantile": QuantileAttack(fpr=0.05, cv=3, params={"iterations": 20}),
    }


def test_split_keeps_each_person_on_one_side(persons):
    _, y, groups, _, _ = persons
    split = split_membership(y.size, groups=groups, random_state=3, prior=2.0)
    sides = [split.train, split.nonmembers, split.public]
    for i, a in enumerate(sides):
        for b in sides[i + 1:]:
            assert not set(groups[a]) & set(groups[b])
    assert set(split.members) <= set(split.train)
    # every record of a chosen person comes along
    for part in sides:
        chosen = np.isin(groups, groups[part])
        assert np.array_equal(np.flatnonzero(chosen), np.sort(part))


def test_one_record_per_person_changes_nothing(persons):
    X, y, _, _, _ = persons
    est = RandomForestClassifier(n_estimators=10, random_state=0)
    plain = MembershipExperiment(est, _attacks(), random_state=0).run(X, y)
    grouped = MembershipExperiment(est, _attacks(), random_state=0).run(
        X, y, groups=[f"p{i}" for i in range(y.size)])
    assert np.array_equal(plain.scores["score"], grouped.scores["score"])
    cols = [c for c in plain.metrics if not c.endswith("_seconds")]
    assert plain.metrics[cols].equals(grouped.metrics[cols])
    assert "person" in grouped.scores and "person" not in plain.calibration
    # the calibration scores are kept with or without persons (docs: records, persons and
    # slices): the same records and scores either way
    cols = ["repeat", "attack", "record", "score"]
    assert plain.calibration[cols].equals(grouped.calibration[cols])


def test_audit_keeps_persons_whole_in_every_attack(persons):
    X, y, groups, train, model = persons
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_model(model, X[train], y[train], X[~train], y[~train], _attacks(),
                             groups_train=groups[train], groups_population=groups[~train])
    assert result.findings == ()
    scores, cal = result.scores, result.calibration
    assert scores.groupby("person")["member"].nunique().max() == 1
    # public persons (calibration) and candidate persons never meet
    assert not set(cal["person"]) & set(scores["person"])
    # LiRA's held-out calibration holds whole persons out of every shadow
    lira = next(a for a in result.attacks
                if isinstance(a, LiRAAttack) and a.calibration_share > 0)
    held = cal.loc[cal["attack"] == "lira", "person"].to_numpy()
    assert held.size == lira.calibration_rows_.size
    public = groups[~train][result.splits[0].public]
    assert set(held).isdisjoint(np.delete(public, lira.calibration_rows_))


@pytest.mark.parametrize("attack", [LiRAAttack(n_shadow=6, fpr=0.05),
                                    RMIAAttack(n_reference=4, fpr=0.05)])
def test_a_persons_records_share_one_mask(persons, attack):
    X, y, groups, train, model = persons
    pub = ~train
    attack.set_params(target=model, random_state=0).fit(X[pub], y[pub], groups=groups[pub])
    masks, codes = attack.in_masks_, groups[pub]
    first = np.unique(codes, return_index=True)[1]
    # every column equals the first column of its person
    by_person = masks[:, first][:, np.searchsorted(codes[first], codes)] if np.all(
        np.diff(codes) >= 0) else None
    assert by_person is not None and np.array_equal(masks, by_person)
    assert 0 < masks.mean() < 1


def test_quantile_folds_keep_persons_whole(persons):
    X, y, groups, train, model = persons
    pub = ~train
    attack = QuantileAttack(model, fpr=0.05, cv=3, params={"iterations": 20}, random_state=0)
    attack.fit(X[pub], y[pub], groups=groups[pub])
    folds = GroupKFold(n_splits=3, shuffle=True, random_state=0)  # the contract, not the seed
    for _, held in folds.split(X[pub], groups=groups[pub]):
        assert not set(groups[pub][held]) & set(np.delete(groups[pub], held))
    assert np.array_equal(attack.calibration_rows_, np.arange(pub.sum()))


def test_shared_persons_make_the_audit_cannot_tell(persons):
    X, y, groups, train, model = persons
    leaked = groups[~train].copy()
    leaked[:30] = groups[train][0]  # 30 population records of a member person
    with pytest.warns(PlausibilityWarning, match="1 persons have records among both"):
        result = audit_model(model, X[train], y[train], X[~train], y[~train],
                             {"loss": LossAttack(fpr=0.05)}, groups_train=groups[train],
                             groups_population=leaked)
    state = verdict_state(result)
    assert state.state == CANNOT_TELL and state.causes == ("shared_persons",)
    gate = evaluate_gate(result, "auc=0.99")
    assert gate.exit_status == 3 and gate.blocked_by == ("shared_persons",)


@pytest.mark.parametrize("bad, match", [
    (lambda g: np.where(np.arange(g.size) == 3, np.nan, g.astype(float)), "1 missing"),
    (lambda g: g[:-1], "person ids for"),
])
def test_bad_person_ids_get_one_clear_error(persons, bad, match):
    X, y, groups, train, model = persons
    with pytest.raises(ValueError, match=match):
        audit_model(model, X[train], y[train], X[~train], y[~train],
                    {"loss": LossAttack(fpr=0.05)}, groups_train=bad(groups[train]),
                    groups_population=groups[~train])
    with pytest.raises(ValueError, match="both groups_train and groups_population"):
        audit_model(model, X[train], y[train], X[~train], y[~train],
                    {"loss": LossAttack(fpr=0.05)}, groups_train=groups[train])


def test_grid_search_routes_groups_to_the_attack(persons):
    X, y, groups, train, model = persons
    # the game keeps the persons, shuffled with the records
    Xg, yg, g = membership_game(X[train], y[train], X[~train], y[~train],
                                groups_members=groups[train], groups_nonmembers=groups[~train],
                                random_state=0)
    Xp, yp = membership_game(X[train], y[train], X[~train], y[~train], random_state=0)
    assert np.array_equal(Xg, Xp) and np.array_equal(yg, yp)
    order = np.r_[np.flatnonzero(train), np.flatnonzero(~train)]
    perm = np.random.RandomState(0).permutation(order.size)
    assert np.array_equal(g, groups[order][perm]) and np.array_equal(Xg, X[order][perm])
    with pytest.raises(ValueError, match="both groups_members and groups_nonmembers"):
        membership_game(X[train], y[train], X[~train], y[~train], groups_members=groups[train])
    with pytest.raises(ValueError, match="groups_nonmembers has 3 person ids"):
        membership_game(X[train], y[train], X[~train], y[~train],
                        groups_members=groups[train], groups_nonmembers=groups[:3])
    seen = []

    class Spy(LossAttack):
        def fit(self, X, y, groups=None):
            seen.append(None if groups is None else np.asarray(groups).size)
            return super().fit(X, y, groups=groups)

    with sklearn.config_context(enable_metadata_routing=True):
        attack = Spy(model, fpr=0.05).set_fit_request(groups=True)
        search = GridSearchCV(attack, {"class_based": [False, True]}, cv=GroupKFold(3),
                              scoring=make_membership_scorer("auc", fpr=0.05))
        search.fit(Xg, yg, groups=g)
    assert seen and all(n is not None for n in seen)


def test_a_model_that_never_saw_the_persons_sits_at_chance_at_person_level(persons):
    """'Members' the model never trained on: person-level rates and AUC at chance."""
    from tabmia.persons import person_result

    X, y, groups, train, _ = persons
    rng = np.random.RandomState(1)
    unseen = RandomForestClassifier(n_estimators=20, random_state=0).fit(
        *make_classification(n_samples=800, n_features=8, flip_y=0.05, random_state=0))
    fake_members = np.isin(groups, rng.permutation(np.unique(groups))[:200])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_model(unseen, X[fake_members], y[fake_members], X[~fake_members],
                             y[~fake_members], {"loss": LossAttack(fpr=0.05)},
                             groups_train=groups[fake_members],
                             groups_population=groups[~fake_members])
    persons = person_result(result)
    row = persons.metrics.iloc[0]
    assert row["auc_low"] <= 0.5 <= row["auc_high"]
    assert row["tpr_low"] <= 0.05 <= row["tpr_high"] or row["tpr"] <= row["fpr_high"]
    assert row["fpr"] <= row["fpr_high"] and row["fpr_low"] <= 0.05


@pytest.mark.parametrize("attack", [LiRAAttack(n_shadow=6, fpr=0.05),
                                    RMIAAttack(n_reference=4, fpr=0.05)])
def test_a_candidate_persons_records_share_one_out_set(persons, attack):
    """Issue 46, case 10: a public person's records share one IN/OUT mask, so a candidate
    person's records are scored by one OUT set too (drawn from the person's records'
    content, not from their membership), as many models as a public record is OUT for;
    a person of one record keeps its own draw."""
    X, y, groups, train, model = persons
    pub, cand = ~train & (groups % 2 == 0), ~train & (groups % 2 == 1)
    attack.set_params(target=model, random_state=0).fit(X[pub], y[pub], groups=groups[pub])
    codes = groups[cand]
    masks = attack.out_model_masks(X[cand], y[cand], groups=codes)
    per_person = pd.DataFrame(masks.T).groupby(codes).nunique()
    assert (per_person == 1).all().all()
    assert set(masks.sum(axis=0)) == set((~attack.in_masks_).sum(axis=0))
    # the scores follow the masks: a person of one record scores as before, others not
    k = np.bincount(codes)[codes]
    alone = attack.decision_function(X[cand], y[cand])
    together = attack.decision_function(X[cand], y[cand], groups=codes)
    assert np.array_equal(alone[k == 1], together[k == 1])
    assert not np.array_equal(alone[k > 1], together[k > 1])
    records = attack.out_model_masks(X[cand], y[cand])
    assert not np.array_equal(records[:, k > 1], masks[:, k > 1])


def _fresh_persons(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1,500 persons (half with one record, the rest 2-8), each person's records close to
    one another (features and label share the person's effect)."""
    rng = np.random.default_rng(seed)
    k = np.where(rng.random(1_500) < 0.5, 1, rng.integers(2, 9, 1_500))
    groups = np.repeat(np.arange(1_500), k)
    X = rng.normal(0, 1, (1_500, 5))[groups] + 0.3 * rng.normal(0, 1, (groups.size, 5))
    noise = 0.5 * rng.normal(0, 1, groups.size) + np.repeat(rng.normal(0, 1, 1_500), k)
    return X, (X[:, 0] + noise > 0).astype(int), groups


@pytest.mark.parametrize("share", [0.25, 0.0])
def test_fpr_promise_with_person_ids_holds_for_records_and_persons(share):
    """Issue 46, case 10: LiRA with person ids, on the grouped hold-out path
    (calibration_share=0.25) and on the default one: fresh non-member records and persons
    are flagged within the promise, pooled over 6 games (record level: the split-conformal
    band of the calibration scores, persons: the binomial band, one-sided 99.9%)."""
    from scipy import stats

    from tabmia.persons import person_result

    alpha, records, persons_rows = 0.1, [], []
    for seed in range(6):
        X, y, groups = _fresh_persons(seed)
        attack = LiRAAttack(n_shadow=4, fpr=alpha, calibration_share=share, n_jobs=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = MembershipExperiment(
                DecisionTreeClassifier(min_samples_leaf=3), {"lira": attack}, train_size=1 / 3,
                public_size=0.5, fprs=(alpha,), random_state=seed).run(X, y, groups=groups)
        non = result.scores[~result.scores["member"].astype(bool)]
        records.append((len(result.calibration), len(non), int(non["flagged"].sum())))
        people = person_result(result, fpr=alpha).scores
        people = people[~people["member"].astype(bool)]
        persons_rows.append(people[["n_records", "flagged"]])
    pmf = np.array([1.0])
    for n_cal, m, _ in records:  # the seeds' beta-binomial counts, convolved
        ell = int(np.floor(alpha * (n_cal + 1)))
        pmf = np.convolve(pmf, stats.betabinom.pmf(np.arange(m + 1), m, ell, n_cal + 1 - ell))
    fp = sum(r[2] for r in records)
    assert fp <= np.searchsorted(np.cumsum(pmf), 0.999), (fp, records)
    people = pd.concat(persons_rows)
    for many in (False, True):
        part = people[(people["n_records"] > 1) == many]
        assert part["flagged"].sum() <= stats.binom.ppf(0.999, len(part), alpha), many
        assert part["flagged"].sum() >= stats.binom.ppf(0.001, len(part), alpha), many
