"""Persons on the grouped hold-out path, and the person rules compared (issue 46): the FPR
promise of LiRA with person ids and ``calibration_share=0.25``, and the power of each person
rule at equal FPR, on diabetes130 by patient.

Each seed draws whole patients up to ``--records`` encounters (``subsample_persons``) and plays
the membership game by patient (``groups=``) against a random forest (tabmia's
``random_forest`` recipe): train 1/3 of the patients, public half of the rest. Attacks: loss,
and offline LiRA with ``--n-shadow`` shadows holding a quarter of the public patients out of
every shadow to calibrate (``calibration_share=0.25``: the grouped hold-out path).

(a) **The FPR promise on the hold-out path.** Record level: the encounters of fresh
non-member patients that the attack's own threshold (aimed at 1%) flags, pooled over seeds,
against the split-conformal band: given ``n`` calibration scores, a fresh non-member is
flagged with probability ``Beta(l, n + 1 - l)``, ``l = floor(alpha (n + 1))``, so the count
flagged among ``m`` is beta-binomial; the seeds' counts are summed (their distributions
convolved) and the band is the one-sided 99% upper end. Person level (default rule): the
non-member patients flagged by number of encounters (1, 2-3, 4+) against the one-sided 99.5%
binomial band of the promised FPR, as ``benchmarks/person_level.py`` counts them.

(b) **The person rules at equal FPR.** Every rule of :data:`tabmia.persons.PERSON_RULES`
calibrated on the same public patients per record-count band: member patients flagged (TPR)
and non-member patients flagged (FPR), pooled over seeds, by number of encounters.

(c) **A memorised heavy person.** The same scores, with every member encounter given to one
person (one patient owning all of the training records, as in issue 46's case): that person's
p-value under each rule, against the public patients of the band it was calibrated in.

Run: ``python -m benchmarks.person_level_holdout [--seeds 5] [--records 12000]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from benchmarks._common import load_note, prepare_run, write_results

NAME = "person_level_holdout"
ALPHA = 0.01
BANDS = (("1", 1, 1), ("2-3", 2, 3), ("4+", 4, 10**9))


def _attacks(n_shadow: int) -> dict[str, Any]:
    from tabmia.attacks import LiRAAttack, LossAttack

    return {
        "loss": LossAttack(fpr=ALPHA),
        "lira_holdout": LiRAAttack(n_shadow=n_shadow, calibration_share=0.25, fpr=ALPHA, n_jobs=1),
    }


def _cp(k: int, n: int) -> list[float]:
    from tabmia.metrics import clopper_pearson

    lo, hi = clopper_pearson(np.array([k]), np.array([n]), 0.95)
    return [float(lo[0]), float(hi[0])]


def _conformal_pmf(n_cal: int, m: int, alpha: float) -> np.ndarray:
    """Distribution of the count of ``m`` fresh non-members flagged by a split-conformal
    threshold on ``n_cal`` calibration scores."""
    ell = int(np.floor(alpha * (n_cal + 1)))
    return stats.betabinom.pmf(np.arange(m + 1), m, ell, n_cal + 1 - ell)


def _record_cells(result: Any) -> list[dict[str, Any]]:
    """Per (seed, attack): the candidates' non-member encounters flagged at the attack's own
    threshold, and the number of calibration scores it was chosen from."""
    cal = result.calibration
    rows = []
    for (repeat, attack), part in result.scores.groupby(["repeat", "attack"], sort=False):
        non = part[~part["member"].astype(bool)]
        n_cal = int(((cal["repeat"] == repeat) & (cal["attack"] == attack)).sum())
        rows.append(
            {
                "attack": attack,
                "n_cal": n_cal,
                "n_nonmembers": len(non),
                "fp": int(non["flagged"].sum()),
                "tp": int(part.loc[part["member"].astype(bool), "flagged"].sum()),
                "n_members": int(part["member"].sum()),
            }
        )
    return rows


def _person_cells(persons: Any, rule: str) -> list[dict[str, Any]]:
    s = persons.scores
    out = []
    for attack, part in s.groupby("attack", sort=False):
        for label, lo, hi in BANDS:
            sel = part[(part["n_records"] >= lo) & (part["n_records"] <= hi)]
            member = sel["member"].to_numpy(bool)
            flagged = sel["flagged"].to_numpy(bool)
            out.append(
                {
                    "attack": attack,
                    "rule": rule,
                    "band": label,
                    "n_members": int(member.sum()),
                    "tp": int((flagged & member).sum()),
                    "n_nonmembers": int((~member).sum()),
                    "fp": int((flagged & ~member).sum()),
                }
            )
    return out


def _heavy_person(result: Any, rule: str) -> list[dict[str, Any]]:
    """Each attack's p-value for one person owning every member encounter."""
    from tabmia.persons import person_scores

    scores = result.scores.copy()
    scores["person"] = scores["person"].astype(object)
    scores.loc[scores["member"].astype(bool), "person"] = "heavy"
    cand, public = person_scores(scores, result.calibration, fpr=ALPHA, rule=rule)
    out = []
    for (repeat, attack), part in cand.groupby(["repeat", "attack"], sort=False):
        row = part[part["person"] == "heavy"].iloc[0]
        pub = public[(public["repeat"] == repeat) & (public["attack"] == attack)]
        out.append(
            {
                "repeat": int(repeat),
                "attack": attack,
                "rule": rule,
                "n_records": int(row["n_records"]),
                "band": row["band"],
                "p_value": float(row["p_value"]),
                "flagged": bool(row["flagged"]),
                "max_public_records": int(pub["n_records"].max()),
            }
        )
    return out


def run(seeds: int, n_records: int, n_shadow: int) -> dict[str, Any]:
    """Every seed's cells: record and person flags by rule, and the heavy person's p-values."""
    from tabmia.datasets import load_diabetes130
    from tabmia.experiment import MembershipExperiment, game_seeds, subsample_persons
    from tabmia.persons import DEFAULT_RULE, PERSON_RULES, person_result
    from tabmia.recipes import make_model

    bunch = load_diabetes130()
    X_all, y_all, g_all = bunch.data, np.asarray(bunch.target), np.asarray(bunch.groups)
    records, persons, heavy, times, aucs = [], [], [], [], []
    for seed in game_seeds(0, seeds):
        t0 = time.perf_counter()
        X, y, g = subsample_persons(X_all, y_all, g_all, n_records, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make_model("random_forest", X)
            result = MembershipExperiment(
                est,
                _attacks(n_shadow),
                train_size=1 / 3,
                public_size=0.5,
                fprs=(ALPHA,),
                random_state=seed,
            ).run(X, y, groups=g)
            by_rule = {rule: person_result(result, rule=rule, fpr=ALPHA) for rule in PERSON_RULES}
        records += [{"seed": seed, **r} for r in _record_cells(result)]
        for rule, res in by_rule.items():
            persons += [{"seed": seed, **c} for c in _person_cells(res, rule)]
            heavy += [{"seed": seed, **h} for h in _heavy_person(result, rule)]
        aucs += [
            {"seed": seed, "attack": a, "auc": float(v)}
            for a, v in zip(result.metrics["attack"], result.metrics["auc"])
        ]
        times.append(time.perf_counter() - t0)
        print(f"seed {seed}: {times[-1]:.0f} s", flush=True)
    return {
        "seeds": seeds,
        "records": n_records,
        "n_shadow": n_shadow,
        "fpr": ALPHA,
        "default_rule": DEFAULT_RULE,
        "record_cells": records,
        "person_cells": persons,
        "heavy_person": heavy,
        "record_auc": aucs,
        "seconds": times,
    }


def _record_table(payload: dict[str, Any]) -> list[str]:
    rec = pd.DataFrame(payload["record_cells"])
    out = [
        "## (a) the FPR promise on the hold-out path",
        "",
        f"Record level, at the attacks' own thresholds (aimed at {ALPHA:g}), pooled over "
        "seeds: non-member encounters flagged against the split-conformal band (one-sided "
        "99%, seeds' beta-binomial counts convolved).",
        "",
        "| attack | calibration scores per seed | non-member encounters | flagged | "
        "delivered [95%] | conformal band | P(count ≥ observed) | inside |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for attack, part in rec.groupby("attack", sort=False):
        pmf = np.array([1.0])
        for r in part.itertuples():
            pmf = np.convolve(pmf, _conformal_pmf(int(r.n_cal), int(r.n_nonmembers), ALPHA))
        cdf = np.cumsum(pmf)
        upper = int(np.searchsorted(cdf, 0.99))
        k, n = int(part["fp"].sum()), int(part["n_nonmembers"].sum())
        p_tail = float(pmf[k:].sum())
        lo, hi = _cp(k, n)
        out.append(
            f"| {attack} | {', '.join(str(int(v)) for v in part['n_cal'])} | {n} | {k} | "
            f"{k / n:.4f} [{lo:.4f}, {hi:.4f}] | ≤ {upper} | {p_tail:.3f} | "
            f"{'yes' if k <= upper else 'NO'} |"
        )
    per = pd.DataFrame(payload["person_cells"])
    per = per[per["rule"] == payload["default_rule"]]
    out += [
        "",
        f"Person level ({payload['default_rule']} rule, the default): non-member "
        "patients flagged, by encounters, against the one-sided 99.5% binomial band.",
        "",
        "| attack | encounters | patients | flagged | delivered [95%] | inside |",
        "|---|---|---|---|---|---|",
    ]
    for (attack, band), r in (
        per.groupby(["attack", "band"], sort=False)[["n_nonmembers", "fp"]].sum().iterrows()
    ):
        n, k = int(r["n_nonmembers"]), int(r["fp"])
        upper = int(stats.binom.ppf(0.995, n, ALPHA)) if n else 0
        lo, hi = _cp(k, n) if n else (float("nan"), float("nan"))
        out.append(
            f"| {attack} | {band} | {n} | {k} | {k / n if n else float('nan'):.4f} "
            f"[{lo:.4f}, {hi:.4f}] | {'yes' if k <= upper else 'NO'} (≤ {upper}) |"
        )
    return out


def _rules_table(payload: dict[str, Any]) -> list[str]:
    per = pd.DataFrame(payload["person_cells"])
    out = [
        "",
        "## (b) the person rules at equal FPR",
        "",
        f"Each rule calibrated on the same public patients per band at {ALPHA:g}; pooled "
        "over seeds. TPR: member patients flagged; FPR: non-member patients flagged.",
        "",
        "| attack | rule | TPR all [95%] | TPR 1 | TPR 2-3 | TPR 4+ | FPR all |",
        "|---|---|---|---|---|---|---|",
    ]
    g = per.groupby(["attack", "rule", "band"], sort=False)[
        ["n_members", "tp", "n_nonmembers", "fp"]
    ].sum()
    for (attack, rule), part in g.groupby(level=[0, 1], sort=False):
        tot = part.sum()
        lo, hi = _cp(int(tot["tp"]), int(tot["n_members"]))
        cells = [
            f"{r['tp'] / r['n_members']:.3f}" if r["n_members"] else "—" for _, r in part.iterrows()
        ]
        out.append(
            f"| {attack} | {rule} | {tot['tp'] / tot['n_members']:.3f} [{lo:.3f}, "
            f"{hi:.3f}] | {' | '.join(cells)} | {tot['fp'] / tot['n_nonmembers']:.4f} |"
        )
    heavy = pd.DataFrame(payload["heavy_person"])
    out += [
        "",
        "## (c) one person owning every member encounter",
        "",
        "Per seed, the heavy person's p-value under each rule (flagged when ≤ "
        f"{ALPHA:g}); its band, and the most encounters any public patient has.",
        "",
        "| attack | rule | encounters | band | most public encounters | p-values by seed | "
        "flagged |",
        "|---|---|---|---|---|---|---|",
    ]
    for (attack, rule), part in heavy.groupby(["attack", "rule"], sort=False):
        out.append(
            f"| {attack} | {rule} | {int(part['n_records'].median())} | "
            f"{', '.join(sorted(set(part['band'])))} | "
            f"{int(part['max_public_records'].max())} | "
            f"{', '.join(f'{p:.3g}' for p in part['p_value'])} | "
            f"{int(part['flagged'].sum())} of {len(part)} |"
        )
    auc = pd.DataFrame(payload["record_auc"]).groupby("attack", sort=False)["auc"]
    out += [
        "",
        "Record-level AUC (mean over seeds): "
        + ", ".join(f"{a} {v:.3f}" for a, v in auc.mean().items()),
        "",
    ]
    return out


def _markdown(payload: dict[str, Any]) -> str:
    head = [
        f"diabetes130 by patient, {payload['seeds']} seeds, whole patients up to "
        f"{payload['records']} encounters per seed; random forest target, train 1/3 of the "
        "patients, public half of the rest; LiRA offline with "
        f"{payload['n_shadow']} shadows and calibration_share=0.25 (a quarter of the public "
        "patients held out of every shadow). Intervals: 95% Clopper-Pearson, counts pooled "
        "over seeds.",
        "",
    ]
    tail = ["Seconds per seed: " + ", ".join(f"{t:.0f}" for t in payload["seconds"]), ""]
    return "\n".join(head + _record_table(payload) + _rules_table(payload) + tail)


def main() -> None:
    """Run the benchmark and write ``results/person_level_holdout.{json,md}``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--records", type=int, default=12000)
    parser.add_argument("--n-shadow", type=int, default=8)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    prepare_run(args)
    load = {"start": os.getloadavg()}
    payload = run(args.seeds, args.records, args.n_shadow)
    load["end"] = os.getloadavg()
    payload["load"] = load
    write_results(NAME, payload, _markdown(payload) + "\n" + load_note(load))


if __name__ == "__main__":
    main()
