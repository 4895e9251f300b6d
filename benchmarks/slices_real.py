"""Which groups leak more on real data (issue 40): the per-slice report of
:mod:`tabmia.slices` on Adult (sex, race), COMPAS (race) and diabetes130 (race, age), for a
random forest and a CatBoost target.

Protocol, per data set: at most ``--records`` records drawn once (seed 0; diabetes130: whole
patients, ``subsample_persons``, and the patients passed as ``groups`` so that a patient is a
member or not as a whole); the slice labels computed on those records with
:func:`tabmia.slices.slice_labels` (one column per slicing, categories as they are, labels
held by fewer than 50 records merged into "other"; diabetes130's missing race as "missing");
then :class:`tabmia.experiment.MembershipExperiment` with ``n_repeats=--seeds`` (a new split
and a new target per repeat; train 1/3 of the records, the attacker's public records half of
the rest, the other half the non-member candidates) and ``slices=`` that frame, for the loss
attack and offline LiRA (``--n-shadow`` shadows), both with their threshold chosen on the
public records for FPR 1%. :func:`tabmia.slices.slice_report` pools the repeats (counts add;
the permutation test is stratified by repeat) and corrects the disparity test over every
(attack, slicing, slice) of the data set × target.

Per data set × target the result gives the per-slice table (TPR at the attack's own threshold,
the FPR that threshold delivers to the slice's non-members, the TPR / FPR at a threshold
calibrated on the slice's own public records where the slice has enough of them, the AUC, all
with 95% intervals, and counts) and the test's outcome: the slices it names, with the
difference of membership advantage and its interval, or "no disparity shown" with the
difference it would find with 80% power.

Run: ``nice -n 5 python -m benchmarks.slices_real [--seeds 5] [--records 6000] [--quick]``
(``--quick``: 1 seed, 2,000 records, 4 shadows, 999 permutations, 50 bootstraps).
"""

from __future__ import annotations

import argparse
import os
import re
import time
import warnings
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._common import load_note, prepare_run, write_results

NAME = "slices_real"
FPR = 0.01
TARGETS = ("random_forest", "catboost")
#: data set -> (loader, slicing columns)
DATASETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "adult": ("load_adult", ("sex", "race")),
    "compas": ("load_compas", ("race",)),
    "diabetes130": ("load_diabetes130", ("race", "age")),
}


def _attacks(n_shadow: int) -> dict[str, Any]:
    from tabmia.attacks import LiRAAttack, LossAttack

    return {"loss": LossAttack(fpr=FPR), "lira": LiRAAttack(n_shadow=n_shadow, fpr=FPR)}


def load(name: str, n_records: int) -> dict[str, Any]:
    """A data set's records (at most ``n_records``, seed 0), persons and slice frame."""
    from tabmia import datasets as ds
    from tabmia.experiment import subsample, subsample_persons
    from tabmia.slices import slice_labels

    loader, columns = DATASETS[name]
    bunch = getattr(ds, loader)()
    X_all, y_all = bunch.data.reset_index(drop=True), np.asarray(bunch.target)
    groups = getattr(bunch, "groups", None)
    if groups is not None:
        X, y, g = subsample_persons(X_all, y_all, np.asarray(groups), n_records, 0)
    else:
        (X, y), g = subsample(X_all, y_all, n_records, 0), None
    X = X.reset_index(drop=True)
    frame, notes, counts = pd.DataFrame(index=X.index), [], {}
    for col in columns:  # labels computed on the records drawn
        values = X[col]
        if values.isna().any():
            values = values.astype(object).where(values.notna(), "missing")
        labels = slice_labels(pd.DataFrame({col: values}), columns=[col])
        frame[labels.name] = labels.labels
        assert "slice:" + labels.name == labels.column  # the scores' column
        notes += list(labels.notes)
        counts[labels.name] = {str(k): int(v) for k, v in labels.counts().items()}
    return {"X": X, "y": y, "groups": g, "slices": frame, "notes": notes, "counts": counts,
            "n_total": len(y_all), "n_persons": None if g is None else int(np.unique(g).size)}


def run_cell(data: dict[str, Any], target: str, args: argparse.Namespace) -> dict[str, Any]:
    """One data set × target: the experiment over the repeats, then the slice report."""
    from tabmia.experiment import MembershipExperiment
    from tabmia.recipes import make_model
    from tabmia.slices import slice_report

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        experiment = MembershipExperiment(
            make_model(target, data["X"]), _attacks(args.n_shadow), train_size=1 / 3,
            public_size=0.5, n_repeats=args.seeds, fprs=(FPR,), random_state=0,
        )
        result = experiment.run(data["X"], data["y"], groups=data["groups"],
                                slices=data["slices"])
    t_run = time.perf_counter() - t0
    expected = {"slice:" + c for c in data["slices"].columns}
    assert expected <= set(result.scores.columns), (expected, list(result.scores.columns))
    assert result.calibration is not None and expected <= set(result.calibration.columns)
    t1 = time.perf_counter()
    report = slice_report(result, n_permutations=args.permutations,
                          n_bootstrap=args.bootstraps, random_state=0)
    t_report = time.perf_counter() - t1
    m = result.metrics
    overall = (
        m.groupby("attack", sort=False)
        .agg(auc=("auc", "mean"), tp=("tp", "sum"), n_members=("n_members", "sum"),
             fp=("fp", "sum"), n_nonmembers=("n_nonmembers", "sum"))
        .reset_index()
        .to_dict("records")
    )
    acc = result.target_accuracy
    train_acc, test_acc = _accuracy(result, data["X"], data["y"])
    kinds = Counter(
        f"{w.category.__name__}: {re.sub(r'[0-9]+', 'N', str(w.message).splitlines()[0])[:160]}"
        for w in caught
    )
    return {
        "report": report.to_dict(),
        "overall": overall,
        "train_accuracy": train_acc,
        "test_accuracy": test_acc,
        "target_accuracy_as_reported": {
            "train": float(acc["train_accuracy"].mean()),
            "test": float(acc["test_accuracy"].mean()),
        },
        "findings": [str(f) for f in (result.findings or [])],
        "warnings": dict(kinds.most_common(12)),
        "seconds_experiment": t_run,
        "seconds_report": t_report,
    }


def _accuracy(result: Any, X: pd.DataFrame, y: np.ndarray) -> tuple[float, float]:
    """Mean train / test accuracy of the repeats' targets, predictions flattened.

    ``result.target_accuracy`` compares ``predict``'s output with the labels as they
    come, and a multiclass CatBoost predicts a column ``(n, 1)``, which broadcasts against
    ``(n,)``; flattening gives the accuracy itself.
    """
    train, test = [], []
    for target, split in zip(result.targets, result.splits):
        for rows, out in ((split.train, train), (split.nonmembers, test)):
            pred = np.ravel(target.predict(X.iloc[rows]))
            out.append(float(np.mean(pred == y[rows])))
    return float(np.mean(train)), float(np.mean(test))


# -------------------------------------------------------------------- control
#: Public records per slice and repeat in the control (candidates: twice as many).
CONTROL_PUBLIC = (150, 250, 350, 1500)
CONTROL_LEAKS = (0.0, 1.0, 2.0)


def size_control(runs: int, permutations: int) -> dict[str, Any]:
    """The same leak in every slice, slices of different size (simulated scores).

    Every slice's candidates and public records score N(0, 1), members ``leak`` higher:
    the same ROC curve everywhere, so no slice leaks more. The slices differ only in
    how many public records they have (:data:`CONTROL_PUBLIC` per repeat, 5 repeats),
    hence in the FPR their conformal thresholds deliver (``floor((n + 1) α) / (n + 1)``:
    0.67% with 150 records, 1.0% with 1,500 at α = 1%).
    """
    from tabmia.slices import slice_report_from_frames
    from tabmia.thresholds import threshold_at_fpr

    lab = np.array([f"public {n}" for n in CONTROL_PUBLIC])
    out = []
    for leak in CONTROL_LEAKS:
        alarms, named, rates = 0, Counter(), []
        for run in range(runs):
            rng = np.random.default_rng(70_000 + run)
            scores, cal = [], []
            for r in range(5):
                j = np.repeat(np.arange(lab.size), 2 * np.asarray(CONTROL_PUBLIC))
                member = rng.random(j.size) < 0.5
                s = rng.normal(0.0, 1.0, j.size) + leak * member
                jc = np.repeat(np.arange(lab.size), CONTROL_PUBLIC)
                c = rng.normal(0.0, 1.0, jc.size)
                thr = threshold_at_fpr(c, FPR)
                scores.append(pd.DataFrame({"repeat": r, "member": member, "score": s,
                                            "flagged": s >= thr, "slice:g": lab[j]}))
                cal.append(pd.DataFrame({"repeat": r, "score": c, "slice:g": lab[jc]}))
            rep = slice_report_from_frames(
                pd.concat(scores, ignore_index=True), pd.concat(cal, ignore_index=True), FPR,
                n_permutations=permutations, n_bootstrap=0, random_state=run,
            )
            alarms += rep.disparity
            named.update(rep.named["slice"].tolist())
            tab = rep.table
            rates.append(tab[tab["slice"] != "overall"][["slice", "fpr_cal", "tpr_cal"]])
        mean = pd.concat(rates).groupby("slice", sort=False).mean()
        out.append({"leak": leak, "runs": runs, "alarms": alarms,
                    "named": {str(k): int(v) for k, v in named.items()},
                    "fpr_cal": mean["fpr_cal"].to_dict(), "tpr_cal": mean["tpr_cal"].to_dict()})
    return {"public_per_slice": list(CONTROL_PUBLIC), "repeats": 5, "permutations": permutations,
            "leaks_sd": list(CONTROL_LEAKS), "results": out}


def _control_md(ctrl: dict[str, Any]) -> list[str]:
    from tabmia.metrics import clopper_pearson

    slices = [f"public {n}" for n in ctrl["public_per_slice"]]
    out = [
        "## Control: the same leak in every slice, slices of different size (simulated)",
        "",
        f"4 slices whose scores follow one law (N(0, 1), members shifted by the leak): no slice "
        f"leaks more. They differ only in public records per repeat "
        f"({', '.join(map(str, ctrl['public_per_slice']))}; candidates twice as many, half "
        f"members), {ctrl['repeats']} repeats pooled, {ctrl['permutations']} permutations, FPR "
        f"{FPR:g}. A conformal threshold from n public records delivers FPR "
        "floor((n+1)α)/(n+1) on average, less than α for small n, and scatters the more the "
        "fewer they are; tabmia.slices calibrates every slice on one common count and draws "
        "the thresholds in its null, so that neither passes for a disparity.",
        "",
        "| leak (sd) | runs alarming [95%] | slices named (runs) | mean calibrated FPR by "
        "slice | mean calibrated TPR by slice |",
        "|---|---|---|---|---|",
    ]
    for r in ctrl["results"]:
        lo, hi = clopper_pearson(r["alarms"], r["runs"])
        named = ", ".join(f"{k} ({v})" for k, v in sorted(r["named"].items())) or "none"
        fpr = " / ".join(f"{r['fpr_cal'][s]:.4f}" for s in slices)
        tpr = " / ".join(f"{r['tpr_cal'][s]:.3f}" for s in slices)
        out.append(f"| {r['leak']:g} | {r['alarms']}/{r['runs']} = {r['alarms'] / r['runs']:.0%} "
                   f"[{lo:.0%}, {hi:.0%}] | {named} | {fpr} | {tpr} |")
    out += ["", "A run alarms when the test names any slice; at level 5% it may in 5% of "
            "the runs, with a leak or without one, and no slice size should be favoured."]
    return out


def _ordinal(k: int) -> str:
    return f"{k}{'st' if k == 1 else 'nd' if k == 2 else 'rd' if k == 3 else 'th'}"


# ------------------------------------------------------------------- markdown
def _ci(v: Any, lo: Any, hi: Any, digits: int = 3) -> str:
    if v is None or not np.isfinite(v):
        return "—"
    if lo is None or hi is None:
        return f"{v:.{digits}f}"
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| attack | slicing | slice | members / non-members / public | TPR own thr. [95%] | "
        "FPR delivered [95%] | TPR calibrated [95%] | FPR calibrated [95%] | AUC [95%] |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        above = " ↑" if r.get("fpr_above_target") else ""
        ok = r["calibration"] == "resolvable"
        cal_tpr = _ci(r["tpr_cal"], r["tpr_cal_low"], r["tpr_cal_high"]) if ok else (
            "not resolvable" if r["calibration"] == "not resolvable" else r["calibration"])
        cal_fpr = _ci(r["fpr_cal"], r["fpr_cal_low"], r["fpr_cal_high"]) if ok else "—"
        slice_ = f"**{r['slice']}**" if r["slice"] == "overall" else str(r["slice"])
        out.append(
            f"| {r['attack']} | {r['slicing'][len('slice:'):]} | {slice_} | {r['n_members']} / "
            f"{r['n_nonmembers']} / {r['n_calibration']} | {_ci(r['tpr'], r['tpr_low'], r['tpr_high'])}"
            f" | {_ci(r['fpr'], r['fpr_low'], r['fpr_high'])}{above} | {cal_tpr} | {cal_fpr} | "
            f"{_ci(r['auc'], r['auc_low'], r['auc_high'])} |"
        )
    return out


def outcomes(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (attack, slicing): the named slices with their difference, or the null with its
    power (the smallest / largest difference found with 80% power)."""
    tests = pd.DataFrame(report["tests"])
    table = pd.DataFrame(report["table"])
    out = []
    for o in report["omnibus"]:
        row: dict[str, Any] = {"attack": o["attack"], "slicing": o["slicing"][len("slice:"):],
                               "metric": o["metric"], "p_omnibus": o["p_value"],
                               "p_omnibus_adjusted": o["p_adjusted"], "rejected": o["rejected"],
                               "named": [], "detectable": None}
        if len(tests):
            sub = tests[(tests["attack"] == o["attack"]) & (tests["slicing"] == o["slicing"])
                        & (tests["metric"] == o["metric"])]
            # named as the report names (issue 46): the test rejects at equal FPR and the
            # simultaneous interval excludes 0
            hits = sub[sub["named"].fillna(False).astype(bool)]
            row["named"] = [
                {k: h[k] for k in ("slice", "difference", "difference_low", "difference_high",
                                   "tpr_slice", "tpr_rest", "fpr_slice", "fpr_rest",
                                   "p_adjusted")}
                for h in hits.to_dict("records")
            ]
            compared = table[(table["attack"] == o["attack"]) & (table["slicing"] == o["slicing"])
                             & (table["slice"] != "overall")]
            if o["metric"] == "calibrated advantage":
                compared = compared[compared["calibration"] == "resolvable"]
            for h in row["named"]:  # its rank by public records among the slices compared
                n_cal = compared.loc[compared["slice"] == h["slice"], "n_calibration"]
                h["public_rank"] = int(1 + (compared["n_calibration"] > n_cal.iloc[0]).sum())
                h["n_compared"] = len(compared)
            # power as the report states it: at equal FPR, from thresholds that flag some
            # candidates, for a difference a slice can reach (issue 46)
            reach = sub["detectable_difference"] < 1.0 - sub["tpr_rest"]
            mdd = sub.loc[reach, "detectable_difference"].dropna()
            flagged = int(sub["tp_slice"].sum() + sub["fp_slice"].sum()) if len(sub) else 0
            if o["metric"] != "calibrated advantage" or not flagged or not len(mdd):
                row["detectable"] = [0.0, 0.0]
            else:
                row["detectable"] = [float(mdd.min()), float(mdd.max())]
        out.append(row)
    return out


def _outcome_lines(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| attack | slicing | compared | omnibus p (Holm) | outcome |", "|---|---|---|---|---|"]
    for r in rows:
        p = ("not tested" if r["p_omnibus"] is None
             else f"{r['p_omnibus']:.2g} ({r['p_omnibus_adjusted']:.2g})")
        if r["named"]:
            what = "; ".join(
                f"**{h['slice']}** named: advantage difference {h['difference']:+.3f} "
                f"[{h['difference_low']:+.3f}, {h['difference_high']:+.3f}] (TPR "
                f"{h['tpr_slice']:.1%} vs {h['tpr_rest']:.1%} at FPR {h['fpr_slice']:.1%} vs "
                f"{h['fpr_rest']:.1%}; adjusted p {h['p_adjusted']:.2g})"
                for h in r["named"]
            )
        elif r["p_omnibus"] is None:
            what = "not tested"
        else:
            what = "no disparity shown" + _power(r["detectable"], long=True)
        out.append(f"| {r['attack']} | {r['slicing']} | {r['metric']} | {p} | {what} |")
    return out


def _power(d: list[float] | None, long: bool = False) -> str:
    """The difference found with 80% power, in words (none when nothing is flagged)."""
    if d is None:
        return ""
    if d[1] <= 0.0:
        return ("; no power claimed: no two slices compared at equal FPR, or their "
                "thresholds flag no candidate" if long else " (no power claimed)")
    span = f"{d[0]:.3f}" + (f" to {d[1]:.3f}" if d[1] - d[0] > 5e-4 else "")
    return (f"; 80% power for a difference of {span} (by slice)" if long
            else f" (80% power at {span})")


def _as_reported(cell: dict[str, Any]) -> str:
    """What ``target_accuracy`` said, where it differs (a column of predictions)."""
    rep = cell["target_accuracy_as_reported"]
    if abs(rep["train"] - cell["train_accuracy"]) + abs(rep["test"] - cell["test_accuracy"]) < 1e-9:
        return ""
    return (f"; `ExperimentResult.target_accuracy` says {rep['train']:.3f} / {rep['test']:.3f}: "
            "the target predicts an (n, 1) column, compared with (n,) labels by broadcasting")


def _crossing(payload: dict[str, Any]) -> list[str]:
    """Named slices whose difference interval reaches 0 (two procedures, said)."""
    out = []
    for ds_name, d in payload["datasets"].items():
        for target, cell in d["targets"].items():
            for r in cell["outcomes"]:
                out += [f"{ds_name} × {target}, {r['attack']}, {h['slice']}" for h in r["named"]
                        if h["difference_low"] <= 0.0]
    return out


def markdown(payload: dict[str, Any]) -> str:
    """The results page."""
    s = payload["settings"]
    out = [
        f"{s['seeds']} repeats (seeds {', '.join(map(str, s['game_seeds']))} = "
        f"`game_seeds(0, {s['seeds']})`: a new split and target each) on at most {s['records']:,} records per data set (drawn once, seed 0); train "
        "1/3, public half of the rest, the other half non-member candidates. Attacks: loss and "
        f"offline LiRA ({s['n_shadow']} shadows), thresholds from the public records for FPR "
        f"{FPR:g}. `slice_report`: repeats pooled, {s['permutations']} permutations, "
        f"{s['bootstraps']} bootstraps per AUC, Holm, alpha 0.05, 95% intervals "
        "(Clopper-Pearson for rates, bootstrap for AUCs, MOVER-Wilson for differences). "
        "The test compares the *calibrated advantage* (TPR − FPR at each slice's own "
        "calibrated threshold) of a slice with the rest's; slices too small to calibrate FPR "
        "1% (fewer than 99 public records in some repeat) are left out of it. ↑: the slice's "
        "FPR at the attack's own threshold is shown above 1% (Holm). The tables' AUCs are of "
        "the scores stacked over the repeats (`slice_report`'s definition): LiRA's scores "
        "change scale from repeat to repeat (new shadows), so its stacked AUC is below the "
        "mean of its per-repeat AUCs given on each target's first line.",
        "",
        "## Summary",
        "",
        "| data set | target | attack | slicing | outcome |",
        "|---|---|---|---|---|",
    ]
    for ds_name, d in payload["datasets"].items():
        for target, cell in d["targets"].items():
            for r in cell["outcomes"]:
                if r["named"]:
                    what = ", ".join(
                        f"{h['slice']} {h['difference']:+.3f} [{h['difference_low']:+.3f}, "
                        f"{h['difference_high']:+.3f}]" for h in r["named"])
                elif r["p_omnibus"] is None:
                    what = "not tested"
                else:
                    what = "no disparity shown" + _power(r["detectable"])
                out.append(f"| {ds_name} | {target} | {r['attack']} | {r['slicing']} | {what} |")
    if payload.get("control"):
        r = {x["leak"]: x for x in payload["control"]["results"]}
        top = max(r)
        ranks = [f"{h['slice']} ({ds_name} × {target}, {r_['attack']}): {_ordinal(h['public_rank'])}"
                 f" of {h['n_compared']}"
                 for ds_name, d in payload["datasets"].items()
                 for target, cell in d["targets"].items()
                 for r_ in cell["outcomes"] for h in r_["named"]]
        out += ["", f"Control (below): with the *same* leak in every slice, the test named a "
                f"slice in {r[top]['alarms']}/{r[top]['runs']} simulated runs (leak {top:g} "
                f"sd; no leak: {r[0.0]['alarms']}/{r[0.0]['runs']}). By public records, among "
                "the slices compared, the named slices rank: "
                + ("; ".join(ranks) if ranks else "none named")
                + "."]
    crossing = _crossing(payload)
    if crossing:
        out += ["", "The permutation test names a slice; the difference's interval (MOVER-Wilson, "
                "95%, not adjusted for the number of comparisons) is a separate, approximate "
                "procedure, and reaches 0 for: " + "; ".join(crossing) + "."]
    for ds_name, d in payload["datasets"].items():
        persons = (f", {d['n_persons']:,} patients" if d["n_persons"] else "")
        out += ["", f"## {ds_name}", "",
                f"{d['n_records']:,} of {d['n_total']:,} records{persons}. Slices: "
                + "; ".join(f"{k}: " + ", ".join(f"{s} ({n})" for s, n in v.items())
                            for k, v in d["slice_counts"].items()) + "."]
        if d["slice_notes"]:
            out += ["", "Labels: " + " ".join(d["slice_notes"])]
        for target, cell in d["targets"].items():
            ov = "; ".join(
                f"{o['attack']} AUC {o['auc']:.3f} (mean of the repeats), TPR "
                f"{o['tp'] / o['n_members']:.3f} at FPR {o['fp'] / o['n_nonmembers']:.4f}"
                for o in cell["overall"])
            out += ["", f"### {ds_name} × {target}", "",
                    f"Target accuracy train {cell['train_accuracy']:.3f}, test "
                    f"{cell['test_accuracy']:.3f} (mean over repeats{_as_reported(cell)}); "
                    f"{ov} (counts pooled). "
                    f"{cell['seconds_experiment']:.0f} s for the experiment, "
                    f"{cell['seconds_report']:.0f} s for the report.", ""]
            out += _table(cell["report"]["table"])
            out += ["", "Disparity test:", "", *_outcome_lines(cell["outcomes"])]
            out += ["", "The report's own words:", ""]
            out += [f"- {line}" for line in cell["report"]["lines"]]
            if cell["findings"]:
                out += ["", "Plausibility findings: " + "; ".join(cell["findings"])]
            if cell["warnings"]:
                out += ["", "Warnings (count): " + "; ".join(
                    f"{w.rstrip('.')}… ({n})" for w, n in cell["warnings"].items())]
    if payload.get("control"):
        out += ["", *_control_md(payload["control"])]
    out += ["", f"Wall time {payload['seconds']:.0f} s"
            + (f" ({payload['control']['seconds']:.0f} s of it the control)."
               if payload.get("control") else ".")]
    return "\n".join(out)


def _game_seeds(n: int) -> list[int]:
    """The seeds of the repeats (split and target of each), as the experiment draws them."""
    from tabmia.experiment import game_seeds

    return game_seeds(0, n)


def main() -> None:
    """Run the benchmark and write ``results/slices_real.{json,md}``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--records", type=int, default=6000)
    parser.add_argument("--n-shadow", type=int, default=8)
    parser.add_argument("--permutations", type=int, default=9999)
    parser.add_argument("--bootstraps", type=int, default=200)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--control-runs", type=int, default=100,
                        help="runs per leak of the equal-leak, unequal-size control (0: none)")
    parser.add_argument("--quick", action="store_true",
                        help="1 seed, 2,000 records, 4 shadows, 999 permutations, 50 bootstraps")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    prepare_run(args)
    if args.quick:
        args.seeds, args.records, args.n_shadow = 1, 2000, 4
        args.permutations, args.bootstraps = 999, 50
        args.control_runs = min(args.control_runs, 10)
    load_avg = {"start": os.getloadavg()}
    t0 = time.perf_counter()
    payload: dict[str, Any] = {
        "settings": {"seeds": args.seeds, "records": args.records, "n_shadow": args.n_shadow,
                     "permutations": args.permutations, "bootstraps": args.bootstraps,
                     "fpr": FPR, "train_size": "1/3", "public_size": 0.5, "quick": args.quick,
                     "random_state": 0, "subsample_seed": 0,
                     "game_seeds": _game_seeds(args.seeds)},
        "datasets": {},
    }
    for ds_name in args.datasets.split(","):
        data = load(ds_name, args.records)
        d = payload["datasets"][ds_name] = {
            "slicings": list(data["slices"].columns), "n_records": len(data["y"]),
            "n_total": data["n_total"], "n_persons": data["n_persons"],
            "slice_counts": data["counts"], "slice_notes": data["notes"], "targets": {},
        }
        for target in args.targets.split(","):
            cell = run_cell(data, target, args)
            cell["outcomes"] = outcomes(cell["report"])
            d["targets"][target] = cell
            named = sum(len(r["named"]) for r in cell["outcomes"])
            print(f"{ds_name} × {target}: {cell['seconds_experiment']:.0f} s + "
                  f"{cell['seconds_report']:.0f} s, {named} slice(s) named", flush=True)
    if args.control_runs > 0:
        t1 = time.perf_counter()
        payload["control"] = size_control(args.control_runs, 999)
        payload["control"]["seconds"] = time.perf_counter() - t1
        print(f"control: {payload['control']['seconds']:.0f} s", flush=True)
    payload["seconds"] = time.perf_counter() - t0
    load_avg["end"] = os.getloadavg()
    payload["load"] = load_avg
    write_results(NAME, payload, markdown(payload) + load_note(load_avg))


if __name__ == "__main__":
    main()
