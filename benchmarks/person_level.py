"""Audits of persons, not rows, on diabetes130 (issue 39): what the row split mis-states, record-
against person-level TPR, and the person-level FPR promise by number of records.

diabetes130 holds 101,766 encounters of 71,518 patients (up to 40 each). Each seed draws whole
patients up to ``--records`` encounters (``subsample_persons``), and plays the membership game
twice on them with the same seed:

- **row split** (no groups, as tabmia did before): members, non-members and public records are
  drawn encounter by encounter, so a patient's encounters land on several sides;
- **person split** (``groups=`` the patient ids): a patient is a member or not as a whole.

(a) Row split against person split, loss and offline LiRA: the share of "non-member" encounters
whose patient has member encounters, and the FPR each attack's own threshold delivers on them
against the clean non-members.
(b) Person split: record-level against person-level TPR at 1% and 0.1% FPR at the attacks' own
thresholds (chosen from the public records / public patients only), Clopper-Pearson intervals
with the counts pooled over seeds, for loss, LiRA (offline, online), RMIA and quantile.
(c) The person-level FPR delivered to fresh non-member patients by number of records (1, 2-3,
4+), pooled over seeds and attacks' repeats, against the one-sided binomial band (99.5%) of the
promised FPR: inside means the count does not exceed the band's upper end.

Targets: CatBoost and a random forest (tabmia's ``catboost`` and ``random_forest`` recipes).

Run: ``python -m benchmarks.person_level [--seeds 5] [--records 12000] [--quick]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from benchmarks._common import load_note, prepare_run, write_results

NAME = "person_level"
FPRS = (0.01, 0.001)
TARGETS = ("catboost", "random_forest")
BANDS = (("1", 1, 1), ("2-3", 2, 3), ("4+", 4, 10**9))


def _attacks(n_shadow: int, quick: bool) -> dict[str, Any]:
    from tabmia.attacks import LiRAAttack, LossAttack, QuantileAttack, RMIAAttack

    q = {"params": {"iterations": 60}} if quick else {}
    return {
        "loss": LossAttack(fpr=FPRS[0]),
        "lira": LiRAAttack(n_shadow=n_shadow, fpr=FPRS[0]),
        "lira_online": LiRAAttack(n_shadow=n_shadow, online=True, fpr=FPRS[0]),
        "rmia": RMIAAttack(fpr=FPRS[0]),
        "quantile": QuantileAttack(fpr=FPRS[0], **q),
    }


def _cp(k: int, n: int) -> list[float]:
    from tabmia.metrics import clopper_pearson

    lo, hi = clopper_pearson(np.array([k]), np.array([n]), 0.95)
    return [float(lo[0]), float(hi[0])]


def _record_rates(result: Any, alpha: float) -> pd.DataFrame:
    """Per attack: record-level flags at a threshold aimed at ``alpha``, chosen from the
    calibration scores (the public records' null scores) of each repeat."""
    from tabmia.thresholds import select_threshold

    rows = []
    for (repeat, attack), part in result.scores.groupby(["repeat", "attack"], sort=False):
        cal = result.calibration
        null = cal.loc[(cal["repeat"] == repeat) & (cal["attack"] == attack), "score"]
        thr = select_threshold(null.to_numpy(float), goal="fpr", fpr=alpha)
        flagged = part["score"].to_numpy(float) >= thr
        member = part["member"].to_numpy(bool)
        rows.append({"attack": attack, "tp": int((flagged & member).sum()),
                     "n_members": int(member.sum()), "fp": int((flagged & ~member).sum()),
                     "n_nonmembers": int((~member).sum())})
    return pd.DataFrame(rows).groupby("attack", sort=False).sum()


def _person_rates(persons: Any) -> pd.DataFrame:
    m = persons.metrics
    return m.groupby("attack", sort=False)[["tp", "n_members", "fp", "n_nonmembers"]].sum()


def _bands(persons: Any, alpha: float) -> list[dict[str, Any]]:
    s = persons.scores
    non = s[~s["member"].astype(bool)]
    out = []
    for attack, part in non.groupby("attack", sort=False):
        for label, lo, hi in BANDS:
            sel = part[(part["n_records"] >= lo) & (part["n_records"] <= hi)]
            n, k = len(sel), int(sel["flagged"].sum())
            upper = int(stats.binom.ppf(0.995, n, alpha)) if n else 0
            out.append({"attack": attack, "band": label, "fpr": alpha, "n_persons": n,
                        "flagged": k, "delivered": k / n if n else float("nan"),
                        "band_upper": upper, "inside": bool(k <= upper),
                        "interval": _cp(k, n) if n else [float("nan")] * 2})
    return out


def _contamination(result: Any, groups: np.ndarray) -> list[dict[str, Any]]:
    """Row split: non-member encounters whose patient has member encounters, and the FPR
    each attack's own threshold delivers to them and to the clean non-members."""
    out = []
    for (repeat, attack), part in result.scores.groupby(["repeat", "attack"], sort=False):
        split = result.splits[int(repeat)]
        member_patients = pd.Index(pd.unique(groups[split.train]))
        non = part[~part["member"].astype(bool)]
        dirty = member_patients.get_indexer(groups[non["record"].to_numpy()]) >= 0
        flagged = non["flagged"].to_numpy(bool)
        out.append({"repeat": int(repeat), "attack": attack, "n_nonmembers": len(non),
                    "contaminated": int(dirty.sum()),
                    "fp_contaminated": int(flagged[dirty].sum()),
                    "fp_clean": int(flagged[~dirty].sum()),
                    "tp": int(part.loc[part["member"].astype(bool), "flagged"].sum()),
                    "n_members": int(part["member"].sum())})
    return out


def run(seeds: int, n_records: int, n_shadow: int, quick: bool) -> dict[str, Any]:
    from tabmia.datasets import load_diabetes130
    from tabmia.experiment import MembershipExperiment, game_seeds, subsample_persons
    from tabmia.persons import person_result
    from tabmia.recipes import make_model

    bunch = load_diabetes130()
    X_all, y_all, g_all = bunch.data, np.asarray(bunch.target), np.asarray(bunch.groups)
    payload: dict[str, Any] = {"seeds": seeds, "records": n_records, "n_shadow": n_shadow,
                               "fprs": list(FPRS), "targets": {}}
    for target in TARGETS:
        rows_a, rec, per, bands, times = [], {}, {}, [], []
        for seed in game_seeds(0, seeds):
            X, y, g = subsample_persons(X_all, y_all, g_all, n_records, seed)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = make_model(target, X)
                attacks = _attacks(n_shadow, quick)
                rows_only = {k: attacks[k] for k in ("loss", "lira")}
                row = MembershipExperiment(est, rows_only, train_size=1 / 3, public_size=0.5,
                                           fprs=FPRS, random_state=seed).run(X, y)
                grouped = MembershipExperiment(est, attacks, train_size=1 / 3,
                                               public_size=0.5, fprs=FPRS,
                                               random_state=seed).run(X, y, groups=g)
                persons = {a: person_result(grouped, fpr=a) for a in FPRS}
            times.append(time.perf_counter() - t0)
            rows_a += [{"seed": seed, "split": "row", **r} for r in _contamination(row, g)]
            rows_a += [{"seed": seed, "split": "person", **r}
                       for r in _contamination(grouped, g) if r["attack"] in rows_only]
            for alpha in FPRS:
                rec[alpha] = rec.get(alpha, 0) + _record_rates(grouped, alpha)
                per[alpha] = per.get(alpha, 0) + _person_rates(persons[alpha])
                bands += [{"seed": seed, **b} for b in _bands(persons[alpha], alpha)]
            print(f"{target} seed {seed}: {times[-1]:.0f} s", flush=True)
        table_b = []
        for alpha in FPRS:
            for attack in rec[alpha].index:
                r, p = rec[alpha].loc[attack], per[alpha].loc[attack]
                table_b.append({
                    "attack": attack, "fpr": alpha,
                    "record_tpr": r["tp"] / r["n_members"], "record_tpr_ci": _cp(r["tp"], r["n_members"]),
                    "record_fpr": r["fp"] / r["n_nonmembers"], "record_counts": r.to_dict(),
                    "person_tpr": p["tp"] / p["n_members"], "person_tpr_ci": _cp(p["tp"], p["n_members"]),
                    "person_fpr": p["fp"] / p["n_nonmembers"], "person_counts": p.to_dict(),
                })
        payload["targets"][target] = {"a_row_vs_person": rows_a, "b_record_vs_person": table_b,
                                      "c_person_fpr_by_band": bands, "seconds": times}
    return payload


def _markdown(payload: dict[str, Any]) -> str:
    out = [f"diabetes130, {payload['seeds']} seeds, whole patients up to {payload['records']} "
           f"encounters per seed; train 1/3 of the patients, public half of the rest; LiRA "
           f"with {payload['n_shadow']} shadows, RMIA 4 reference models; thresholds from the "
           "public records / patients only. Intervals: 95% Clopper-Pearson, counts pooled "
           "over seeds.", ""]
    for target, res in payload["targets"].items():
        a = pd.DataFrame(res["a_row_vs_person"])
        g = a.groupby(["split", "attack"], sort=False).sum(numeric_only=True)
        out += [f"## {target}", "", "### (a) row split against person split", "",
                "| split | attack | non-member encounters of member patients | FPR on them | "
                "FPR on clean non-members | TPR |", "|---|---|---|---|---|---|"]
        for (split, attack), r in g.iterrows():
            clean = r["n_nonmembers"] - r["contaminated"]
            dirty = (f"{r['fp_contaminated'] / r['contaminated']:.3f}" if r["contaminated"]
                     else "—")
            out.append(f"| {split} | {attack} | {r['contaminated']}/{r['n_nonmembers']} "
                       f"({r['contaminated'] / r['n_nonmembers']:.1%}) | {dirty} | "
                       f"{r['fp_clean'] / clean:.3f} | {r['tp'] / r['n_members']:.3f} |")
        out += ["", "### (b) record-level against person-level TPR at the attacks' own thresholds",
                "", "| attack | FPR | record TPR [95%] | record FPR | patient TPR [95%] | "
                "patient FPR |", "|---|---|---|---|---|---|"]
        for r in res["b_record_vs_person"]:
            out.append(
                f"| {r['attack']} | {r['fpr']:g} | {r['record_tpr']:.3f} [{r['record_tpr_ci'][0]:.3f}, "
                f"{r['record_tpr_ci'][1]:.3f}] | {r['record_fpr']:.4f} | {r['person_tpr']:.3f} "
                f"[{r['person_tpr_ci'][0]:.3f}, {r['person_tpr_ci'][1]:.3f}] | {r['person_fpr']:.4f} |")
        c = pd.DataFrame(res["c_person_fpr_by_band"])
        cg = c.groupby(["fpr", "attack", "band"], sort=False)[["n_persons", "flagged"]].sum()
        out += ["", "### (c) person-level FPR delivered to fresh non-member patients, by records",
                "", "| FPR | attack | records | patients | flagged | delivered [95%] | "
                "within the 99.5% binomial band |", "|---|---|---|---|---|---|---|"]
        for (alpha, attack, band), r in cg.iterrows():
            n, k = int(r["n_persons"]), int(r["flagged"])
            upper = int(stats.binom.ppf(0.995, n, alpha)) if n else 0
            lo, hi = _cp(k, n) if n else (float("nan"), float("nan"))
            out.append(f"| {alpha:g} | {attack} | {band} | {n} | {k} | {k / n if n else float('nan'):.4f} "
                       f"[{lo:.4f}, {hi:.4f}] | {'yes' if k <= upper else 'NO'} (≤ {upper}) |")
        out += ["", f"Seconds per seed (both games): {', '.join(f'{t:.0f}' for t in res['seconds'])}", ""]
    return "\n".join(out)


def main() -> None:
    """Run the benchmark and write ``results/person_level.{json,md}``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--records", type=int, default=12000)
    parser.add_argument("--n-shadow", type=int, default=8)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    prepare_run(args)
    import os

    load = {"start": os.getloadavg()}
    if args.quick:
        args.seeds, args.records, args.n_shadow = 1, 6000, 4
    payload = run(args.seeds, args.records, args.n_shadow, args.quick)
    load["end"] = os.getloadavg()
    payload["load"] = load
    write_results(NAME, payload, _markdown(payload) + "\n" + load_note(load))


if __name__ == "__main__":
    main()
