"""Whom an attacker can name (issue 48): does the named list keep its false-discovery rate?

Each seed draws, from one data set, disjoint sets of records (of patients, for diabetes130):
the target's members ``M``, the attacker's public records ``P``, a non-member pool ``O`` and
the training set ``Z`` of a *null* target. A random forest is trained on ``M`` (the target)
and on ``Z`` (a model that never saw any candidate). Each attack is fitted once on ``P``
against each model; the candidates ``M`` and ``O`` are scored once, and every cell below
reuses those scores (one target per seed for every member share and ``q``):

- **FDR**: for member shares 0.1, 0.5, 0.9 a candidate set of ``n_cand`` records (persons)
  is drawn from ``M`` and ``O``; each candidate's conformal p-value against the attack's
  public calibration scores (:func:`tabmia.thresholds.conformal_pvalues`; a patient's:
  :func:`tabmia.persons.person_scores`, against the public patients of its record-count
  band) and Benjamini-Hochberg at q = 0.05, 0.1, 0.2 give the named list; its realised
  false-discovery proportion (0 where nobody is named) is averaged over seeds, with the
  upper end of its 95 % normal interval. Also the adaptive list (Storey's pi0), the
  combinations over attacks (Bonferroni-adjusted smallest p-value, then BH or
  Benjamini-Yekutieli), the per-record threshold at FPR 1 % (its FDP uncontrolled), and a
  top-k list of a fixed size (10 % of the candidates: same ordering, no error control).
- **Null model**: the same lists against the null target (every candidate a non-member):
  the share of seeds in which nobody is named (BH promises at least 1 - q).
- **Resampled share**: the count :func:`tabmia.named.named_members` predicts at shares 0.1
  and 0.9 by resampling the share-0.5 candidates, against the count at those shares.
- **Persons** (diabetes130): named patients per record-count band.

Targets are random forests of 20 trees. Loss and the calibrated attack (2 reference
models) run every seed; offline LiRA (8 shadows) and RMIA (4 reference models) every
10th seed, up to ``--shadow-seeds`` of them; the null model is attacked by loss and the
calibrated attack only.

Run: ``nice -n 10 python -m benchmarks.named_fdr --dataset adult --seeds 200`` (one data
set per process, rows checkpointed under ``--work``), then ``--report`` to aggregate.

**Simultaneous bounds** (``--simultaneous``, its own results ``named_fdr_simultaneous``):
the same seeds' games with loss and the calibrated attack only (no resampling), for each
member share: the bound of :func:`tabmia.named.fdp_bounds` on the non-members among the
first ``k`` candidates by p-value, for every ``k`` at once, at alpha = 0.05 and 0.1, against
the truth; a seed *violates* it where some ``k`` has more non-members than the bound. It
holds where the share of violating seeds is at most alpha (within 1.96 binomial s.e.).
Beside it the pointwise bound (each ``k``'s binomial 1 - alpha quantile of ``n p_(k)``)
that is *not* simultaneous, and, at the BH lists of q = 0.1 and 0.2, the bound against the
number actually wrong. Run: ``nice -n 10 python -m benchmarks.named_fdr --simultaneous
--seeds 60`` (every data set, one process).
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

NAME = "named_fdr"
SHARES = (0.1, 0.5, 0.9)
QS = (0.05, 0.1, 0.2)
FPR = 0.01
CHEAP = ("loss", "calibrated")
SHADOW = ("lira", "rmia")
#: records (adult, german) or patients (diabetes130) per seed: M, P, O, Z
SIZES = {
    "adult": (600, 500, 600, 600),
    "german_credit": (300, 250, 300, 150),
    "diabetes130": (700, 600, 700, 300),
}
BANDS = (("1", 1, 1), ("2-3", 2, 3), ("4+", 4, 10**9))


def _attacks(names: tuple[str, ...]) -> dict[str, Any]:
    from tabmia.attacks import CalibratedAttack, LiRAAttack, LossAttack, RMIAAttack

    make = {
        "loss": lambda: LossAttack(fpr=FPR),
        "calibrated": lambda: CalibratedAttack(n_reference=2, fpr=FPR, n_jobs=1),
        "lira": lambda: LiRAAttack(n_shadow=8, fpr=FPR, n_jobs=1),
        "rmia": lambda: RMIAAttack(n_reference=4, fpr=FPR, n_jobs=1),
    }
    return {n: make[n]() for n in names}


def _model(seed: int) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=20, n_jobs=1, random_state=seed)


def _load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    from tabmia.datasets import load_dataset

    bunch = load_dataset(name)
    frame = bunch.data
    X = np.column_stack(
        [
            frame[c].cat.codes.to_numpy(float)
            if isinstance(frame[c].dtype, pd.CategoricalDtype)
            else pd.to_numeric(frame[c], errors="coerce").fillna(-1).to_numpy(float)
            if frame[c].dtype != object
            else pd.factorize(frame[c])[0].astype(float)
            for c in frame.columns
        ]
    )
    y = pd.factorize(np.asarray(bunch.target))[0]
    groups = getattr(bunch, "groups", None) if name == "diabetes130" else None
    return X, y, None if groups is None else np.asarray(groups)


def _draw(n_units: int, sizes: tuple[int, ...], rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(n_units)[: sum(sizes)]
    return np.split(order, np.cumsum(sizes)[:-1])


def _play(X, y, groups, seed: int, names: tuple[str, ...], dataset: str) -> dict[str, Any]:
    """One seed: each attack's scores (candidates M + O) and calibration, target and null."""
    rng = np.random.default_rng(seed)
    sizes = SIZES[dataset]
    if groups is None:
        parts = _draw(len(y), sizes, rng)
        unit_of = None
    else:  # whole patients; each part's records
        persons, codes = np.unique(groups, return_inverse=True)
        picked = _draw(len(persons), sizes, rng)
        parts = [np.flatnonzero(np.isin(codes, p)) for p in picked]
        unit_of = codes
    M, P, pool, Z = parts
    cand = np.r_[M, pool]
    out: dict[str, Any] = {"member": np.r_[np.ones(len(M), bool), np.zeros(len(pool), bool)]}
    if unit_of is not None:
        out["person"], out["public_person"] = unit_of[cand], unit_of[P]
    for label, train in (("target", M), ("null", Z)):
        model = _model(seed).fit(X[train], y[train])
        # the null model: the cheap attacks (its reference attacks cost as much again)
        for name, attack in _attacks(names if label == "target" else CHEAP).items():
            attack.set_params(target=model)
            if "random_state" in attack.get_params():
                attack.set_params(random_state=seed)
            fit_kw = {} if unit_of is None else {"groups": unit_of[P]}
            attack.fit(X[P], y[P], **fit_kw)
            out[(label, name, "score")] = attack.decision_function(X[cand], y[cand])
            out[(label, name, "cal")] = np.asarray(attack.calibration_scores_)
            rows = getattr(attack, "calibration_rows_", None)
            out[(label, name, "cal_rows")] = None if rows is None else np.asarray(rows)
    return out


def _pvalues(play: dict[str, Any], label: str, name: str) -> tuple[np.ndarray, np.ndarray, Any]:
    """(p-values, member) per unit: records, or patients (person_scores, band-calibrated);
    with the patients' record counts (None for records)."""
    from tabmia.persons import person_scores
    from tabmia.thresholds import conformal_pvalues

    score, cal = play[(label, name, "score")], play[(label, name, "cal")]
    if "person" not in play:
        return conformal_pvalues(score, cal), play["member"], None
    rows = play[(label, name, "cal_rows")]
    public_person = play["public_person"] if rows is None else play["public_person"][rows]
    scores = pd.DataFrame(
        {"attack": name, "person": play["person"], "member": play["member"], "score": score}
    )
    calib = pd.DataFrame({"attack": name, "person": public_person, "score": cal})
    persons, _ = person_scores(scores, calib, fpr=FPR)
    return (
        persons["p_value"].to_numpy(float),
        persons["member"].to_numpy(bool),
        persons["n_records"].to_numpy(int),
    )


def _candidates(member: np.ndarray, share: float, n_cand: int, rng) -> np.ndarray:
    mem, non = np.flatnonzero(member), np.flatnonzero(~member)
    k = int(round(share * n_cand))
    return np.r_[rng.choice(mem, k, replace=False), rng.choice(non, n_cand - k, replace=False)]


def _cells(play: dict[str, Any], names: tuple[str, ...], seed: int, dataset: str) -> list[dict]:
    """Every (share, q, list) row of one seed."""
    from tabmia.named import bonferroni_min, fdr_select
    from tabmia.named._lists import _select, counts_at_share

    rng = np.random.default_rng(10_000 + seed)
    pv = {n: _pvalues(play, "target", n) for n in names}
    member = next(iter(pv.values()))[1]
    n_units = min(int(member.sum()), int((~member).sum()))
    n_cand = int(n_units / max(SHARES))
    rows: list[dict] = []
    for share in SHARES:
        idx = _candidates(member, share, n_cand, rng)
        m = member[idx]
        lists = {(n, "bh"): pv[n][0][idx] for n in names}
        lists.update({(n, "storey"): pv[n][0][idx] for n in names})
        for group, attacks in (("cheap", CHEAP), ("all", names)):
            if len(attacks) < 2 or (group == "all" and names == CHEAP):
                continue
            pmin = bonferroni_min(np.column_stack([pv[n][0][idx] for n in attacks]), axis=1)
            lists[(f"combined_{group}", "bonferroni")] = pmin
            lists[(f"combined_{group}", "by")] = pmin
        for q in QS:
            for (attack, method), p in lists.items():
                sel = _select(p, q, method)
                rows.append(_row(dataset, seed, share, q, attack, method, sel, m))
                if method == "bh" and share == 0.5 and not attack.startswith("combined"):
                    for other in (0.1, 0.9):
                        at = counts_at_share(m, p, q, "bh", other, n_resamples=100, rng=rng)
                        rows.append(
                            {
                                **_row(
                                    dataset, seed, other, q, attack, "resampled", sel[:0], m[:0]
                                ),
                                "n_named": at["n_named"],
                                "n_wrong": at["n_wrong"],
                            }
                        )
        for attack in names:
            p = pv[attack][0][idx]
            rows.append(_row(dataset, seed, share, FPR, attack, "threshold", p <= FPR, m))
            top = np.zeros(len(p), bool)
            top[np.argsort(p, kind="stable")[: max(1, len(p) // 10)]] = True
            rows.append(_row(dataset, seed, share, np.nan, attack, "top10%", top, m))
    for attack in CHEAP:  # the null model: every candidate a non-member
        p, _, _ = _pvalues(play, "null", attack)
        for q in QS:
            sel = fdr_select(p, q)
            rows.append(_row(dataset, seed, 0.0, q, attack, "null", sel, np.zeros(len(p), bool)))
    if "person" in play:
        rows += _band_rows(pv, names, seed, dataset)
    return rows


def _band_rows(pv, names, seed, dataset) -> list[dict]:
    """Patients at the game's own share (all of M and O), BH at each q, FDP per band."""
    from tabmia.named import fdr_select

    rows = []
    for attack in names:
        p, member, k = pv[attack]
        for q in QS:
            sel = fdr_select(p, q)
            for band, lo, hi in BANDS:
                inb = (k >= lo) & (k <= hi)
                rows.append(
                    {
                        **_row(
                            dataset,
                            seed,
                            float(member.mean()),
                            q,
                            attack,
                            "persons",
                            sel[inb],
                            member[inb],
                        ),
                        "band": band,
                    }
                )
    return rows


def _row(dataset, seed, share, q, attack, method, sel, member) -> dict:
    return {
        "dataset": dataset,
        "seed": seed,
        "share": share,
        "q": q,
        "attack": attack,
        "method": method,
        "n_cand": int(len(member)),
        "n_members": int(member.sum()),
        "n_named": int(sel.sum()),
        "n_wrong": int((sel & ~member).sum()),
    }


BOUND_ALPHAS = (0.05, 0.1)


def _bound_rows(play: dict[str, Any], seed: int, dataset: str) -> list[dict]:
    """One seed's simultaneous-bound checks: per member share, attack and alpha, whether
    the bound fails for some k, and how it reads at the BH lists."""
    from scipy.stats import binom

    from tabmia.named import bonferroni_min, fdp_bounds, fdr_select

    rng = np.random.default_rng(20_000 + seed)
    pv = {n: _pvalues(play, "target", n) for n in CHEAP}
    member = pv[CHEAP[0]][1]
    n_cand = int(min(int(member.sum()), int((~member).sum())) / max(SHARES))
    games = []
    for share in SHARES:
        idx = _candidates(member, share, n_cand, rng)
        lists = {n: (pv[n][0][idx], "prds") for n in CHEAP}
        pmin = bonferroni_min(np.column_stack([pv[n][0][idx] for n in CHEAP]), axis=1)
        lists["combined_cheap"] = (pmin, "arbitrary")
        games += [(share, a, p, member[idx], dep) for a, (p, dep) in lists.items()]
    for attack in CHEAP:  # the null model: every candidate a non-member
        p = _pvalues(play, "null", attack)[0]
        games.append((0.0, attack, p, np.zeros(len(p), bool), "prds"))
    rows = []
    for share, attack, p, m, dep in games:
        order = np.argsort(p, kind="stable")
        wrong = np.cumsum(~m[order])  # non-members among the first k
        for alpha in BOUND_ALPHAS:
            bound = fdp_bounds(p, alpha, dependence=dep)
            pointwise = binom.ppf(1 - alpha, len(p), p[order])
            row = {
                "dataset": dataset,
                "seed": seed,
                "share": share,
                "attack": attack,
                "alpha": alpha,
                "n_cand": len(p),
                "violated": bool(np.any(wrong > bound)),
                "pointwise_violated": bool(np.any(wrong > pointwise)),
            }
            for q in (0.1, 0.2):
                k = int(fdr_select(p, q).sum())
                row[f"named@{q:g}"] = k
                row[f"wrong@{q:g}"] = int(wrong[k - 1]) if k else 0
                row[f"bound@{q:g}"] = int(bound[k - 1]) if k else 0
            rows.append(row)
    return rows


def run_simultaneous(seeds: int, work: Path) -> None:
    """The simultaneous-bound check on every data set, checkpointed in ``work``."""
    from benchmarks._common import use_shared_data

    use_shared_data()
    warnings.simplefilter("ignore")
    work.mkdir(parents=True, exist_ok=True)
    path = work / "simultaneous.pkl"
    state = pickle.loads(path.read_bytes()) if path.exists() else {"rows": [], "done": {}}
    for dataset in SIZES:
        X, y, groups = _load(dataset)
        done = state["done"].setdefault(dataset, {"seeds": [], "seconds": 0.0})
        for seed in range(seeds):
            if seed in done["seeds"]:
                continue
            t0 = time.perf_counter()
            play = _play(X, y, groups, seed, CHEAP, dataset)
            state["rows"] += _bound_rows(play, seed, dataset)
            done["seeds"].append(seed)
            done["seconds"] += time.perf_counter() - t0
            path.write_bytes(pickle.dumps(state))
            print(f"{dataset} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)


def run(dataset: str, seeds: int, shadow_seeds: int, work: Path) -> None:
    """Play ``seeds`` seeds of ``dataset``, each checkpointed in ``work`` (resumable)."""
    from benchmarks._common import use_shared_data

    use_shared_data()
    warnings.simplefilter("ignore")
    X, y, groups = _load(dataset)
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{dataset}.pkl"
    state = (
        pickle.loads(path.read_bytes())
        if path.exists()
        else {"rows": [], "done": [], "seconds": 0.0}
    )
    for seed in range(seeds):
        if seed in state["done"]:
            continue
        t0 = time.perf_counter()
        # every 10th seed (up to shadow_seeds of them) also plays LiRA and RMIA, so a
        # run cut short holds both kinds in proportion
        shadow = seed % 10 == 0 and seed // 10 < shadow_seeds
        names = CHEAP + SHADOW if shadow else CHEAP
        play = _play(X, y, groups, seed, names, dataset)
        state["rows"] += _cells(play, names, seed, dataset)
        state["done"].append(seed)
        state["seconds"] += time.perf_counter() - t0
        path.write_bytes(pickle.dumps(state))
        print(f"{dataset} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)


def main() -> None:
    """Run one data set, or aggregate the checkpoints (``--report``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=sorted(SIZES))
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--shadow-seeds", type=int, default=20)
    parser.add_argument("--work", default=os.environ.get("NAMED_FDR_WORK", "/tmp/named_fdr"))
    parser.add_argument("--report", action="store_true", help="aggregate the checkpoints")
    parser.add_argument(
        "--simultaneous",
        action="store_true",
        help="check the simultaneous FDP bounds on every data set, then write their results",
    )
    args = parser.parse_args()
    if args.simultaneous:
        from benchmarks._named_fdr_report import report_simultaneous

        run_simultaneous(args.seeds, Path(args.work))
        report_simultaneous(Path(args.work))
    elif args.report:
        from benchmarks._named_fdr_report import report

        report(Path(args.work))
    else:
        run(args.dataset, args.seeds, args.shadow_seeds, Path(args.work))


if __name__ == "__main__":
    main()
