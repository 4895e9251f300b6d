"""Per-slice membership rates and the disparity test (tabmia.slices, issue 40).

Frames are hand-built in the shape of docs/records_persons_slices.md: ``scores`` (one
row per repeat, attack, candidate: member, score, flagged, slice:<name>) and
``calibration`` (one row per repeat, attack, public calibration record: score,
slice:<name>), the attack's threshold chosen on the calibration scores.
"""

from __future__ import annotations

import json
import math
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tabmia import metrics as M
from tabmia.slices import (
    SliceRiskDisplay,
    slice_labels,
    slice_report,
    slice_report_from_frames,
)
from tabmia.thresholds import conformal_fpr_band, threshold_at_fpr


def simulate(
    rng: np.random.Generator,
    *,
    n_slices: int = 8,
    n_candidates: int = 240,
    n_calibration: int = 200,
    fpr: float = 0.05,
    shift: np.ndarray | None = None,
    scale: np.ndarray | None = None,
    leak: np.ndarray | None = None,
    repeats: int = 1,
    attack: str = "Loss",
    column: str = "slice:g",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Scores of slices of different difficulty (``shift``, ``scale``); members of a slice
    score ``leak`` standard deviations higher (0: the target leaks nothing there)."""
    shift = np.zeros(n_slices) if shift is None else shift
    scale = np.ones(n_slices) if scale is None else scale
    leak = np.zeros(n_slices) if leak is None else leak
    lab = np.array([f"s{j}" for j in range(n_slices)])
    scores, cal = [], []
    for r in range(repeats):
        j = np.repeat(np.arange(n_slices), n_candidates)
        member = rng.random(j.size) < 0.5
        s = rng.normal(shift[j], scale[j]) + leak[j] * scale[j] * member
        jc = np.repeat(np.arange(n_slices), n_calibration)
        c = rng.normal(shift[jc], scale[jc])
        t = threshold_at_fpr(c, fpr)
        scores.append(pd.DataFrame({"repeat": r, "attack": attack, "record": np.arange(j.size),
                                    "member": member, "score": s, "flagged": s >= t,
                                    column: lab[j]}))
        cal.append(pd.DataFrame({"repeat": r, "attack": attack, "record": np.arange(jc.size),
                                 "score": c, column: lab[jc]}))
    return pd.concat(scores, ignore_index=True), pd.concat(cal, ignore_index=True)


DIFFICULT = {"shift": np.linspace(-1.5, 1.5, 8), "scale": np.linspace(0.7, 1.5, 8)}


# ------------------------------------------------------------------- slice labels
def test_numeric_columns_are_cut_into_named_bands_and_small_combinations_merged():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({
        "age": rng.integers(17, 91, 2000),
        "sex": rng.choice(["F", "M"], 2000),
        "race": rng.choice(["A", "B", "C"], 2000, p=[0.6, 0.385, 0.015]),
    })
    one = slice_labels(df, "age", bands=4)
    assert one.name == "age" and one.column == "slice:age"
    assert len(one.bands["age"]) == 3 and one.counts().size == 4
    assert all(lab.startswith("age ") and "-" in lab for lab in one.counts().index)
    # each band holds the values between its name's bounds, and the bands are in order
    for lab in one.counts().index:
        lo, hi = map(int, lab.split()[1].split("-"))
        held = df["age"][one.labels == lab]
        assert held.min() == lo and held.max() == hi
    lows = [int(lab.split()[1].split("-")[0]) for lab in one.counts().index]
    assert lows == sorted(lows)
    assert "quantile bands" in one.notes[0] and "age" in one.notes[0]

    both = slice_labels(df, ["sex", "race"], min_support=50)
    assert both.name == "sex×race"
    assert set(both.merged) == {"sex=F & race=C", "sex=M & race=C"}
    assert "other" in both.counts().index
    assert any("merged into 'other'" in n for n in both.notes)
    assert both.counts().sum() == len(df) and both.labels.index.equals(df.index)

    arr = slice_labels(np.array(["x", "y", "x", "y"] * 20), min_support=1)
    assert list(arr.counts().index) == ["x", "y"]


@pytest.mark.parametrize(
    "data, columns, match",
    [
        (pd.DataFrame({"a": [1, 2] * 50}), "b", r"slice column 'b' is not in the data"),
        (pd.DataFrame({"a": ["x"] * 100}), "a", r"slice column 'a' has one value \('x'\)"),
        (pd.DataFrame({"a": [1.0, np.nan] * 50}), "a", r"slice column 'a' has 50 missing"),
        (pd.Series(["u", None] * 50, name="sex"), None, r"slice column 'sex' has 50 missing"),
    ],
)
def test_bad_slice_columns_raise_one_clear_line(data, columns, match):
    with pytest.raises(ValueError, match=match) as info:
        slice_labels(data, columns)
    assert "\n" not in str(info.value)


def test_report_refuses_missing_and_nan_slice_columns():
    scores, cal = simulate(np.random.default_rng(1), n_slices=3)
    with pytest.raises(ValueError, match=r"slice column 'slice:age' is not in the scores") as e:
        slice_report_from_frames(scores, cal, 0.05, slices="age")
    assert "\n" not in str(e.value)
    bad = scores.assign(**{"slice:g": scores["slice:g"].where(scores.index % 7 > 0)})
    with pytest.raises(ValueError, match=r"slice column 'slice:g' of the scores has \d+ missing"):
        slice_report_from_frames(bad, cal, 0.05)
    with pytest.raises(ValueError, match="no slice:<name> column"):
        slice_report_from_frames(scores.drop(columns="slice:g"), cal, 0.05)


# --------------------------------------------------------------- per-slice rates
def test_per_slice_calibrated_threshold_keeps_its_fpr_promise_on_fresh_nonmembers():
    rng = np.random.default_rng(2)
    fpr, n_cal = 0.05, 2000
    scores, cal = simulate(rng, n_slices=4, n_candidates=6000, n_calibration=n_cal, fpr=fpr,
                           shift=np.array([-1.0, 0.0, 0.5, 1.5]))
    rep = slice_report_from_frames(scores, cal, fpr, n_permutations=199, n_bootstrap=0)
    per = rep.table[rep.table["slice"] != "overall"]
    assert (per["calibration"] == "resolvable").all()
    level = 1 - 0.05 / len(per)  # Bonferroni over the slices
    for r in per.itertuples():
        lo, hi = conformal_fpr_band(n_cal, fpr, int(r.n_nonmembers), level=level)
        assert lo <= r.fpr_cal <= hi, (r.slice, r.fpr_cal, lo, hi)
    # ... which the global threshold does not: the easy slice gets far more than 5%
    assert per["fpr"].max() > 0.1 and per["fpr"].min() < 0.01
    assert per["fpr_above_target"].any()


def test_unresolvable_slices_are_said_and_their_number_is_nan():
    rng = np.random.default_rng(3)
    scores, cal = simulate(rng, n_slices=3, n_candidates=400, n_calibration=300, fpr=0.01)
    small = cal["slice:g"] == "s2"
    cal = pd.concat([cal[~small], cal[small].iloc[:50]])  # 50 < 99 public records
    rep = slice_report_from_frames(scores, cal, 0.01, n_permutations=199, n_bootstrap=0)
    row = rep.table.set_index("slice").loc["s2"]
    assert row["calibration"] == "not resolvable" and math.isnan(row["tpr_cal"])
    assert rep.table.set_index("slice").loc["s0", "calibration"] == "resolvable"
    text = " ".join(rep.lines())
    assert "'s2'" in text and "not resolvable" in text and "needs 99" in text
    # the test compares the two slices that resolve the goal
    tested = rep.tests[rep.tests["hypothesis"]]
    assert set(tested["slice"]) == {"s0", "s1"}
    assert (tested["metric"] == "calibrated advantage").all()


def test_overall_row_equals_the_unsliced_computation():
    rng = np.random.default_rng(4)
    scores, cal = simulate(rng, n_slices=5, repeats=2, leak=np.full(5, 0.3))
    scores["slice:h"] = np.where(scores["score"] > 0, "hi", "lo")
    cal["slice:h"] = np.where(cal["score"] > 0, "hi", "lo")
    rep = slice_report_from_frames(scores, cal, 0.05, n_permutations=199, n_bootstrap=50)
    overall = rep.table[rep.table["slice"] == "overall"].set_index("slicing")
    m = scores["member"].to_numpy()
    s = scores["score"].to_numpy()
    f = scores["flagged"].to_numpy()
    for col in ("slice:g", "slice:h"):
        o = overall.loc[col]
        assert o["n_members"] == m.sum() and o["n_nonmembers"] == (~m).sum()
        assert o["tp"] == (m & f).sum() and o["fp"] == (~m & f).sum()
        assert o["auc"] == pytest.approx(M.auc(m, s))
        lo, hi = M.clopper_pearson(int((m & f).sum()), int(m.sum()))
        assert (o["tpr_low"], o["tpr_high"]) == pytest.approx((lo, hi))
        # the overall calibrated threshold is the attack's own: the same flags
        assert o["tp_cal"] == o["tp"] and o["fp_cal"] == o["fp"]
        # the slices add up to the overall counts
        per = rep.table[(rep.table["slicing"] == col) & (rep.table["slice"] != "overall")]
        assert per["tp"].sum() == o["tp"] and per["n_members"].sum() == o["n_members"]
    assert overall.loc["slice:g", "auc_low"] == overall.loc["slice:h", "auc_low"]


# ------------------------------------------------------------ the disparity test
def test_null_alarm_rate_with_eight_slices_of_different_difficulty():
    """A target that leaks nothing: alarms in at most 5% of runs (+ binomial slack)."""
    runs, alarms, omnibus = 200, 0, 0
    for seed in range(runs):
        scores, cal = simulate(np.random.default_rng(1000 + seed), n_candidates=160,
                               n_calibration=120, **DIFFICULT)
        rep = slice_report_from_frames(scores, cal, 0.05, n_permutations=199, n_bootstrap=0,
                                       random_state=seed)
        alarms += rep.disparity
        omnibus += bool(rep.omnibus["rejected"].any())
    limit = stats.binom.ppf(0.99, runs, 0.05)  # 18 of 200
    assert alarms <= limit, f"{alarms} alarms in {runs} null runs"
    assert omnibus <= limit


def test_planted_disparity_is_found_and_sized():
    leak = np.zeros(8)
    leak[3] = 1.2
    scores, cal = simulate(np.random.default_rng(5), n_candidates=400, n_calibration=300,
                           leak=leak, **DIFFICULT)
    rep = slice_report_from_frames(scores, cal, 0.05, n_permutations=999, n_bootstrap=0)
    assert rep.disparity
    named = rep.named
    assert list(named["slice"]) == ["s3"]
    hit = named.iloc[0]
    assert hit["metric"] == "calibrated advantage"
    assert 0 < hit["difference_low"] < hit["difference"] < hit["difference_high"]
    assert hit["tpr_difference_low"] > 0
    lines = rep.lines()
    assert any("'s3' is more exposed" in line for line in lines)


def test_no_disparity_states_the_power():
    scores, cal = simulate(np.random.default_rng(6), n_slices=4, n_candidates=500)
    rep = slice_report_from_frames(scores, cal, 0.05, n_permutations=199, n_bootstrap=0)
    assert not rep.disparity
    text = " ".join(rep.lines())
    assert "no disparity shown" in text and "80% power" in text
    mdd = rep.tests.loc[rep.tests["hypothesis"], "detectable_difference"]
    assert (mdd > 0).all() and (mdd < 0.3).all()


def test_without_calibration_the_own_threshold_advantage_is_tested_but_names_no_slice():
    """At the attack's own threshold the slices are not at equal FPR (an equal leak moves
    the advantage there too): the test may say the target leaks, never which slice more."""
    leak = np.zeros(4)
    leak[0] = 1.5
    scores, _ = simulate(np.random.default_rng(7), n_slices=4, n_candidates=500, leak=leak)
    rep = slice_report_from_frames(scores, None, 0.05, n_permutations=499, n_bootstrap=0)
    assert (rep.table["calibration"] == "no calibration").all()
    assert rep.omnibus["metric"].tolist() == ["advantage"]
    assert list(rep.tests.loc[rep.tests["significant"], "slice"]) == ["s0"]
    assert rep.named.empty and not rep.disparity
    text = " ".join(rep.lines())
    assert "more exposed:" not in text and "not compared at equal FPR" in text
    assert "power" not in text.replace("no power is claimed", "")
    assert any("own threshold" in n for n in rep.notes)


def test_slice_report_reads_an_experiment_result_and_writes_json_and_a_plot(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    scores, cal = simulate(np.random.default_rng(8), n_slices=3, repeats=2)
    scores2, cal2 = simulate(np.random.default_rng(9), n_slices=3, repeats=2, attack="RMIA")
    metrics = pd.DataFrame({"repeat": [0, 1, 0, 1], "attack": ["Loss", "Loss", "RMIA", "RMIA"],
                            "fpr_target": [0.05] * 4})
    result = SimpleNamespace(scores=pd.concat([scores, scores2]),
                             calibration=pd.concat([cal, cal2]), metrics=metrics)
    rep = slice_report(result, n_permutations=199, n_bootstrap=20)
    assert set(rep.table["attack"]) == {"Loss", "RMIA"}
    assert (rep.table["fpr_target"] == 0.05).all()
    assert (rep.table.loc[rep.table["slice"] != "overall", "calibration"] == "resolvable").all()
    payload = json.dumps(rep.to_dict())
    assert "calibrated advantage" in payload and "NaN" not in payload
    display = SliceRiskDisplay.from_report(rep)
    assert len(display.ax_) == 2
    display.figure_.savefig(tmp_path / "slices.png")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2)
    assert display.plot(ax=axes).figure_ is fig
    plt.close("all")


def test_with_a_real_attack_on_a_model():
    """End to end: frames from LossAttack's own threshold and calibration scores."""
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    from tabmia.attacks import LossAttack

    X, y = make_classification(n_samples=3000, n_features=8, random_state=0)
    group = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0)
    train, public, held = np.arange(0, 1000), np.arange(1000, 2000), np.arange(2000, 3000)
    target = RandomForestClassifier(n_estimators=30, random_state=0).fit(X[train], y[train])
    attack = LossAttack(target, fpr=0.05).fit(X[public], y[public])
    cand = np.r_[train[:500], held[:500]]
    s = attack.decision_function(X[cand], y[cand])
    scores = pd.DataFrame({"member": np.r_[np.ones(500, bool), np.zeros(500, bool)],
                           "score": s, "flagged": s >= attack.threshold_,
                           "slice:quadrant": group[cand]})
    cal = pd.DataFrame({"score": attack.calibration_scores_, "slice:quadrant": group[public]})
    rep = slice_report_from_frames(scores, cal, attack.fpr_, n_permutations=199,
                                   n_bootstrap=0)
    overall = rep.table[rep.table["slice"] == "overall"].iloc[0]
    assert overall["tp_cal"] == overall["tp"] and overall["fp_cal"] == overall["fp"]
    assert len(rep.table) == 5 and rep.lines()


def test_equal_leak_in_slices_of_different_sizes_raises_no_alarm():
    """Every slice leaks alike; their public records differ (150 to 1,500). A per-slice
    threshold from 150 records would deliver 1/151 instead of 1% and make the largest slice
    look more exposed (benchmarks/results/slices_real.md); the calibration kept to a whole
    multiple of 1/FPR delivers the goal in every slice."""
    sizes, runs, alarms = np.array([149, 249, 349, 1499]), 80, 0
    lab = np.array([f"s{j}" for j in range(sizes.size)])
    for seed in range(runs):
        rng = np.random.default_rng(3000 + seed)
        j = np.repeat(np.arange(sizes.size), 600)
        member = rng.random(j.size) < 0.5
        s = rng.normal(0, 1, j.size) + 1.0 * member
        jc = np.repeat(np.arange(sizes.size), sizes)
        c = rng.normal(0, 1, jc.size)
        t = threshold_at_fpr(c, 0.01)
        scores = pd.DataFrame({"attack": "a", "member": member, "score": s, "flagged": s >= t,
                               "slice:g": lab[j]})
        cal = pd.DataFrame({"attack": "a", "score": c, "slice:g": lab[jc]})
        rep = slice_report_from_frames(scores, cal, 0.01, n_permutations=199, n_bootstrap=0,
                                       random_state=seed)
        alarms += rep.disparity
    limit = stats.binom.ppf(0.99, runs, 0.05)
    assert alarms <= limit, f"{alarms} alarms in {runs} runs of an equal leak"


# ------------------------------------------------------- issue 46: what a name claims
def _small_leaky_slice(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One slice of 40 candidates whose members score 1.5 sd higher, five of 1,500 that
    leak nothing: the test rejects at small counts where the excess is not resolved."""
    rng = np.random.default_rng(seed)
    sizes, lab = [40] + [1500] * 5, np.array([f"s{j}" for j in range(6)])
    j = np.repeat(np.arange(6), sizes)
    member = rng.random(j.size) < 0.5
    s = rng.normal(0, 1, j.size) + np.where(j == 0, 1.5, 0.0) * member
    jc = np.repeat(np.arange(6), 199)
    c = rng.normal(0, 1, jc.size)
    t = threshold_at_fpr(c, 0.05)
    return (pd.DataFrame({"member": member, "score": s, "flagged": s >= t, "slice:g": lab[j]}),
            pd.DataFrame({"score": c, "slice:g": lab[jc]}))


def test_a_named_slice_comes_with_a_simultaneous_interval_above_zero():
    """Issue 46, item 6: 's0' was named "more exposed" beside a 95% interval of -0.035 to
    0.471 (seed 8). A name now needs the simultaneous interval (Bonferroni over the
    comparisons, the level of Holm's first step) printed beside it to exclude 0."""
    scores, cal = _small_leaky_slice(8)
    rep = slice_report_from_frames(scores, cal, 0.05, n_permutations=999, n_bootstrap=0,
                                   random_state=8)
    tested = rep.tests[rep.tests["hypothesis"]]
    assert (tested["metric"] == "calibrated advantage").all()
    hit = tested.set_index("slice").loc["s0"]
    assert hit["significant"] and hit["p_adjusted"] <= 0.05  # the test points at s0 ...
    m = int(rep.tests["hypothesis"].sum())
    assert hit["interval_level"] == pytest.approx(1 - 0.05 / m)
    assert hit["difference_low"] < 0 < hit["difference_high"]  # ... the size is unresolved
    assert rep.named.empty and not rep.disparity
    text = " ".join(rep.lines())
    assert "more exposed" not in text and "not named" in text
    # where it is resolved the sentence prints the interval that decided it
    named = 0
    for seed in range(8):
        scores, cal = _small_leaky_slice(seed)
        rep = slice_report_from_frames(scores, cal, 0.05, n_permutations=999, n_bootstrap=0,
                                       random_state=seed)
        for row in rep.named.itertuples():
            named += 1
            assert row.difference_low > 0
            line = next(x for x in rep.lines() if "is more exposed" in x)
            low, high = map(float, re.search(r"each at [\d.]+%\): (-?[\d.]+) to (-?[\d.]+)",
                                             line).groups())
            assert (low, high) == pytest.approx((row.difference_low, row.difference_high),
                                                abs=5e-4)
            assert "calibrated to FPR 0.05 in each slice" in line
    assert named >= 3


def _tied(rng, n, top_share, member=None, leak_share=0.0):
    """Loss-attack-like scores: a share at exactly 0 (the top: a forest's records at loss
    0), the rest below it; members reach the top ``leak_share`` more often."""
    share = top_share + (leak_share * member if member is not None else 0.0)
    return np.where(rng.random(n) < share, 0.0, -np.abs(rng.normal(0, 1, n)) - 1e-3)


def test_slices_whose_thresholds_tie_at_the_top_are_not_resolvable_and_claim_no_power():
    """Issue 46, item 11: the loss attack on an overfit forest ties at the top (loss 0) in
    every slice; every calibrated threshold lies above the tie and flags nobody, and the
    report claimed "with 80% power, a slice whose TPR exceeds the rest's by 0.011 at equal
    FPR"."""
    rng = np.random.default_rng(11)
    lab = np.array(["A", "B", "C", "D"])
    j = np.repeat(np.arange(4), 800)
    member = rng.random(j.size) < 0.5
    s = _tied(rng, j.size, 0.3, member, 0.2)
    jc = np.repeat(np.arange(4), 400)
    c = _tied(rng, jc.size, 0.3)
    t = threshold_at_fpr(c, 0.1)
    scores = pd.DataFrame({"member": member, "score": s, "flagged": s >= t, "slice:g": lab[j]})
    cal = pd.DataFrame({"score": c, "slice:g": lab[jc]})
    rep = slice_report_from_frames(scores, cal, 0.1, n_permutations=199, n_bootstrap=0)
    per = rep.table[rep.table["slice"] != "overall"]
    assert (per["calibration"] == "not resolvable").all()
    assert (per["unresolvable_reason"] == "ties").all()
    text = " ".join(rep.lines())
    assert "power, a slice" not in text and "no power is claimed" in text
    assert "tie at the top" in text and not rep.disparity


def test_a_slice_is_not_compared_at_equal_fpr_with_slices_whose_threshold_flags_nobody():
    """Issue 46, item 11: at 10% the loss attack named one slice with "TPR 22.0% vs 0.0% at
    FPR 10.7% vs 0.0%": the other slices' thresholds sat on the top tie."""
    rng = np.random.default_rng(12)
    lab = np.array(["A", "B", "C", "D"])
    top = np.array([0.03, 0.3, 0.3, 0.3])  # slice A's top tie is under the 10% goal
    j = np.repeat(np.arange(4), 800)
    member = rng.random(j.size) < 0.5
    s = _tied(rng, j.size, top[j], member, 0.2)
    jc = np.repeat(np.arange(4), 400)
    c = _tied(rng, jc.size, top[jc])
    t = threshold_at_fpr(c, 0.1)
    scores = pd.DataFrame({"member": member, "score": s, "flagged": s >= t, "slice:g": lab[j]})
    cal = pd.DataFrame({"score": c, "slice:g": lab[jc]})
    rep = slice_report_from_frames(scores, cal, 0.1, n_permutations=199, n_bootstrap=0)
    per = rep.table[rep.table["slice"] != "overall"].set_index("slice")
    assert per.loc["A", "calibration"] == "resolvable"
    assert (per.loc[["B", "C", "D"], "unresolvable_reason"] == "ties").all()
    assert not rep.disparity
    assert "more exposed:" not in " ".join(rep.lines())


def test_the_metric_frame_reaches_the_user():
    """fairlearn's MetricFrame of each (attack, slicing): by_group, difference(), ratio()."""
    scores, cal = simulate(np.random.default_rng(13), n_slices=3, n_candidates=400)
    rep = slice_report_from_frames(scores, cal, 0.05, n_permutations=199, n_bootstrap=0)
    mf = rep.metric_frame()
    assert mf is rep.metric_frame("Loss", "g") is rep.metric_frame(slicing="slice:g")
    per = rep.table[rep.table["slice"] != "overall"].set_index("slice")
    by = mf.by_group
    assert list(by.index) == list(per.index)
    assert np.allclose(by["TPR"], per["tpr"]) and np.allclose(by["FPR"], per["fpr"])
    assert np.allclose(by["TPR calibrated"], per["tpr_cal"])
    assert mf.difference()["TPR"] == pytest.approx(per["tpr"].max() - per["tpr"].min())
    assert mf.ratio()["FPR"] == pytest.approx(per["fpr"].min() / per["fpr"].max())
    with pytest.raises(ValueError, match="name one of: Loss / g"):
        rep.metric_frame("RMIA")


def test_person_counts_are_said_as_persons():
    """Issue 46, item 9: slice lines said "public records" where the counts were persons."""
    rng = np.random.default_rng(14)
    scores, cal = simulate(rng, n_slices=3, n_candidates=400, n_calibration=300, fpr=0.01)
    small = cal["slice:g"] == "s2"
    cal = pd.concat([cal[~small], cal[small].iloc[:50]])
    rep = slice_report_from_frames(scores, cal, 0.01, n_permutations=199, n_bootstrap=0,
                                   unit="person")
    text = " ".join(rep.lines())
    assert "50 public persons in the slice" in text and "public records" not in text
    assert (rep.table["unit"] == "person").all() and rep.to_dict()["settings"]["unit"] == "person"


def test_the_figure_keeps_a_dozen_long_slice_names_and_its_legend_whole():
    """Issue 46, item 6: at the report's width the figure cut its labels and its legend
    sat on the data. Every tick label and the legend lie inside the figure, the legend
    off every panel, and the figure is as wide as the report (1100 px at 110 dpi)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(15)
    races = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "missing"]
    labs = np.array([f"sex={s} & race={r}" for s in ("Female", "Male") for r in races])
    frames, cals = [], []
    for attack in ("loss", "lira_online", "rmia", "quantile"):
        scores, cal = simulate(rng, n_slices=12, n_candidates=200, n_calibration=199,
                               attack=attack, column="slice:sex×race")
        scores["slice:sex×race"] = labs[scores["slice:sex×race"].str[1:].astype(int)]
        cal["slice:sex×race"] = labs[cal["slice:sex×race"].str[1:].astype(int)]
        frames.append(scores)
        cals.append(cal)
    rep = slice_report_from_frames(pd.concat(frames), pd.concat(cals), 0.05,
                                   n_permutations=199, n_bootstrap=0)
    fig = rep.plot().figure_
    assert fig.get_figwidth() * 110 == pytest.approx(1100)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    inside = lambda b: (b.x0 >= box.x0 - 1 and b.x1 <= box.x1 + 1  # noqa: E731
                        and b.y0 >= box.y0 - 1 and b.y1 <= box.y1 + 1)
    labels = [t for a in fig.axes for t in a.get_yticklabels() if t.get_visible()]
    assert {t.get_text() for t in labels} >= set(labs)
    assert all(inside(t.get_window_extent(renderer)) for t in labels)
    # every panel with all it draws (its tick labels, title, axis label)
    assert all(inside(a.get_tightbbox(renderer)) for a in fig.axes)
    legends = fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]
    assert len(legends) == 1 and inside(legends[0].get_window_extent(renderer))
    legend_box = legends[0].get_window_extent(renderer)
    assert not any(legend_box.overlaps(a.get_window_extent(renderer)) for a in fig.axes)
    plt.close(fig)
