"""Jayaraman et al. (PETS 2021), Tables 3, 4, 6 and 7: PPV of Yeom, Yeom CBT, Merlin, Morgan.

Protocol (Section 6-7 of the paper, tabmia's API):

- target: the paper's MLP, 2 x 256 ReLU, Adam, batch 200, lr 0.005
  (:class:`tabmia.shadow.TorchMLPClassifier`), records L2-normalised (paper, Sec. 6);
- a seeded split (:func:`tabmia.experiment.split_membership`) of each data set into the
  target's training set (the members), the attacker's public records and a pool of
  non-members;
- attacks: Yeom (:class:`~tabmia.attacks.LossAttack`), Yeom class-based thresholds
  (``class_based=True``), Merlin (T = 100, sigma = 0.01, Gaussian noise on every
  feature) and Morgan (:mod:`tabmia.attacks.merlin`);
- thresholds from the public records only (Procedure 5.1): ``threshold_goal="max_ppv",
  prior=gamma`` (a proxy model trained on half of the public records gives simulated
  members / non-members) and ``threshold_goal="fpr", fpr=0.01`` (the paper's Fixed FPR);
- for each gamma in {0.1, 0.5, 1, 2, 10}: a candidate set with gamma non-members per
  member drawn from the members and the non-member pool; PPV = TP / (TP + FP) on it.

Purchase-100 and Texas-100 (the paper's data) are used when present in the data home;
today the health stand-in for Texas-100 is Diabetes 130-US hospitals (one-hot) and the
census one is Adult, with the same MLP recipe and smaller training sets on CPU.

Run: ``python -m benchmarks.jayaraman_ppv [--seeds N] [--quick] [--datasets ...]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from benchmarks._common import (
    device_note,
    load_numeric,
    mean_std,
    missing_data_exit,
    paper_mlp,
    pct,
    prepare_run,
    present_datasets,
    results_dir,
    take_dense,
    write_results,
)

NAME = "jayaraman_ppv"
DATASETS = ("purchase100", "texas100", "diabetes130", "adult")
GAMMAS = (0.1, 0.5, 1.0, 2.0, 10.0)
ATTACKS = ("Yeom", "Yeom CBT", "Merlin", "Morgan")

#: Paper recipe per data set: training records and epochs (Appendix A).
PAPER_RECIPE = {"purchase100": (10_000, 100), "texas100": (10_000, 30)}
#: Training records of the stand-in data sets on CPU (the paper: 10,000).
STANDIN_TRAIN = {"adult": 2_000, "diabetes130": 1_500}

# ----------------------------------------------------------------- paper numbers
# Percentages, balanced prior (gamma = 1); (FPR, TPR, Adv, PPV); None = the paper's "-"
# (no threshold reaches the goal). Table 3 (Purchase-100X) and Table 7 (Texas-100).
PAPER_G1 = {
    "Purchase-100X (T3)": {
        ("Yeom", "max_ppv"): (35.3, 95.5, 60.2, 73.0),
        ("Yeom", "fpr"): None,
        ("Yeom CBT", "max_ppv"): (0.1, 0.3, 0.2, 73.4),
        ("Yeom CBT", "fpr"): (0.1, 0.3, 0.2, 73.4),
        ("Merlin", "max_ppv"): (0.0, 0.1, 0.1, 93.4),
        ("Merlin", "fpr"): (0.7, 4.2, 3.4, 85.0),
        ("Morgan", "max_ppv"): (0.0, 0.1, 0.1, 98.0),
    },
    "Texas-100 (T7)": {
        ("Yeom", "max_ppv"): (26.6, 85.8, 59.2, 76.1),
        ("Yeom", "fpr"): None,
        ("Yeom CBT", "max_ppv"): (1.0, 11.2, 10.2, 92.0),
        ("Yeom CBT", "fpr"): (1.3, 12.5, 11.2, 91.2),
        ("Merlin", "max_ppv"): (0.0, 0.3, 0.3, 92.0),
        ("Merlin", "fpr"): (0.8, 5.7, 4.9, 87.8),
        ("Morgan", "max_ppv"): (0.0, 0.6, 0.5, 95.7),
    },
}
# Table 6: maximum PPV (%) against gamma, (Yeom, Merlin, Morgan); None = not run.
PAPER_T6 = {
    "Purchase-100X": {
        0.1: (96.5, 99.3, 100.0), 0.5: (84.5, 97.2, 100.0), 1.0: (73.0, 93.4, 98.0),
        2.0: (57.6, 84.0, 99.1), 10.0: (21.2, 69.7, 97.5),
    },
    "Texas-100": {
        0.1: (97.0, 99.2, 100.0), 0.5: (86.4, 95.0, 98.4), 1.0: (76.1, 92.0, 95.7),
        2.0: (62.4, 87.7, 97.4), 10.0: None,
    },
}
# Table 2: target train / test accuracy.
PAPER_ACC = {"Purchase-100X": (1.00, 0.71), "Texas-100": (1.00, 0.53)}


# ------------------------------------------------------------------ experiment
def _attacks(n_noise: int) -> dict[str, Any]:
    from tabmia.attacks import LossAttack
    from tabmia.attacks.merlin import MerlinAttack, MorganAttack

    noise = {"n_noise": n_noise, "sigma": 0.01, "noise_scale": "absolute", "binary_flip": 0.0}
    return {
        "Yeom": LossAttack(),
        "Yeom CBT": LossAttack(class_based=True),
        "Merlin": MerlinAttack(**noise),
        "Morgan": MorganAttack(**noise, n_thresholds=50),
    }


def _rates(flag: np.ndarray, member: np.ndarray, gamma: float) -> dict[str, float]:
    from tabmia.metrics import ppv

    tp, fp = int((flag & member).sum()), int((flag & ~member).sum())
    tpr, fpr = tp / member.sum(), fp / (~member).sum()
    gamma_set = (~member).sum() / member.sum()
    return {
        "tp": tp, "fp": fp, "tpr": tpr, "fpr": fpr, "adv": tpr - fpr,
        # TP / (TP + FP) on this candidate set; the base rate when nothing is flagged
        "ppv": ppv(tpr, fpr, gamma_set), "flagged": tp + fp, "gamma_set": float(gamma_set),
        "n_members": int(member.sum()), "n_nonmembers": int((~member).sum()),
    }


def run_seed(
    data: dict[str, Any], seed: int, *, n_train: int, n_public: int, n_pool: int,
    epochs: int, n_noise: int, gammas: tuple[float, ...], log: Any,
) -> dict[str, Any]:
    """One target, every attack and threshold, every gamma."""
    from sklearn.base import clone

    from tabmia.attacks.merlin import morgan_search
    from tabmia.experiment import split_membership
    from tabmia.scores import logit_confidence_from_logits
    from tabmia.thresholds import select_threshold

    X, y = data["X"], data["y"]
    n = X.shape[0]
    need = n_train + n_public + n_pool
    if need > n:
        raise ValueError(f"need {need} records, the data set has {n}")
    rng = np.random.RandomState(seed)
    rows = rng.choice(n, need, replace=False)
    split = split_membership(need, train_size=n_train, public_size=n_public, random_state=seed)
    tr, pub, pool = rows[split.train], rows[split.public], rows[split.nonmembers]
    Xtr, ytr = take_dense(X, tr), y[tr]
    Xpub, ypub = take_dense(X, pub), y[pub]
    Xpool, ypool = take_dense(X, pool), y[pool]
    seen = np.unique(ytr)  # every record's label must be one the target saw
    Xpool, ypool = Xpool[np.isin(ypool, seen)], ypool[np.isin(ypool, seen)]
    Xpub, ypub = Xpub[np.isin(ypub, seen)], ypub[np.isin(ypub, seen)]
    t0 = time.perf_counter()
    target = paper_mlp(epochs, seed).fit(Xtr, ytr)
    acc = {
        "train": float(np.mean(target.predict(Xtr) == ytr)),
        "test": float(np.mean(target.predict(Xpool) == ypool)),
        "fit_seconds": time.perf_counter() - t0,
    }
    log(f"  seed {seed}: target train acc {acc['train']:.3f}, test acc {acc['test']:.3f} "
        f"({acc['fit_seconds']:.1f} s)")
    Xc = np.concatenate([Xtr, Xpool])
    yc = np.r_[ytr, ypool]
    member = np.r_[np.ones(len(ytr), bool), np.zeros(len(ypool), bool)]

    # candidate sets, one per gamma: gamma non-members per member
    sets = {}
    m_idx, nm_idx = np.flatnonzero(member), np.flatnonzero(~member)
    for g in gammas:
        n_m = int(min(m_idx.size, np.floor(nm_idx.size / g)))
        n_nm = int(min(nm_idx.size, round(n_m * g)))
        r = np.random.RandomState([seed, int(round(100 * g))])
        sets[g] = np.r_[r.choice(m_idx, n_m, replace=False), r.choice(nm_idx, n_nm, replace=False)]

    # Procedure 5.1, once per seed: a proxy of the target's recipe trained on half of
    # the public records; each attack is fitted against it on a quarter and scores the
    # proxy's simulated members (as many of its training records) and non-members (the
    # last quarter). The same simulated scores give the max-PPV threshold of every prior.
    t0 = time.perf_counter()
    perm = np.random.RandomState(seed + 7919).permutation(len(ypub))
    half = len(ypub) // 2
    rest = perm[half:]
    p_fit, p_out = rest[: rest.size // 2], rest[rest.size // 2:]
    p_in = perm[:half][: p_out.size]
    proxy = paper_mlp(epochs, seed + 7919).fit(Xpub[perm[:half]], ypub[perm[:half]])
    proxy_seconds = time.perf_counter() - t0

    protos = _attacks(n_noise)
    base = dict(target=target, random_state=seed)
    scores: dict[str, np.ndarray] = {}
    fixed: dict[str, Any] = {}
    simulated: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    seconds: dict[str, float] = {}
    for name in ("Yeom", "Yeom CBT", "Merlin"):
        t0 = time.perf_counter()
        a = clone(protos[name]).set_params(**base, threshold_goal="fpr", fpr=0.01)
        fixed[name] = a.fit(Xpub, ypub)
        scores[name] = a.decision_function(Xc, yc)  # independent of the goal and prior
        # (its own threshold is not used: any resolvable fpr will do)
        pa = clone(protos[name]).set_params(target=proxy, random_state=seed,
                                            threshold_goal="fpr", fpr=0.25)
        pa.fit(Xpub[p_fit], ypub[p_fit])
        if name == "Merlin":  # Morgan needs the proxy's losses and ratios too
            loss_out, ratio_out = pa.loss_and_ratio(Xpub[p_out], ypub[p_out])
            loss_in, ratio_in = pa.loss_and_ratio(Xpub[p_in], ypub[p_in])
            simulated[name] = (ratio_out, ratio_in)
        else:
            simulated[name] = (pa.decision_function(Xpub[p_out], ypub[p_out]),
                               pa.decision_function(Xpub[p_in], ypub[p_in]))
        seconds[name] = time.perf_counter() - t0
    # Morgan on the target: the target's loss (as MorganAttack computes it) and the
    # Merlin ratio (the fixed-FPR Merlin above: same noise model and seed as Morgan's)
    y_idx = np.searchsorted(target.classes_, yc)
    loss_c = np.logaddexp(0.0, -logit_confidence_from_logits(target.decision_function(Xc), y_idx))
    ratio_c = scores["Merlin"]

    out: dict[str, Any] = {"seed": seed, "accuracy": acc, "proxy_seconds": proxy_seconds,
                           "attacks": {}}
    for name in ATTACKS:
        res: dict[str, Any] = {"fpr": {}, "max_ppv": {}, "library_max_ppv": {}}
        for g in gammas:
            idx = sets[g]
            if name == "Morgan":
                f = morgan_search(loss_in, ratio_in, loss_out, ratio_out, goal="max_ppv",
                                  prior=g, n_thresholds=50)
                flag = (loss_c >= f["phi_L"]) & (loss_c <= f["phi_U"]) & (ratio_c >= f["phi_M"])
                r = _rates(flag[idx], member[idx], g)
                r["phi"] = [f["phi_L"], f["phi_U"], f["phi_M"]]
            else:
                neg, pos = simulated[name]
                thr = select_threshold(neg, pos, goal="max_ppv", prior=g)
                r = _rates(scores[name][idx] >= thr, member[idx], g)
                r["phi"] = thr
                rf = _rates(scores[name][idx] >= fixed[name].threshold_, member[idx], g)
                rf["phi"] = fixed[name].threshold_
                res["fpr"][g] = rf
            res["max_ppv"][g] = r
        # cross-check at gamma = 1: the attack's own fit(threshold_goal="max_ppv")
        t0 = time.perf_counter()
        a = clone(protos[name]).set_params(**base, threshold_goal="max_ppv", prior=1.0)
        a.fit(Xpub, ypub)
        idx = sets[1.0] if 1.0 in sets else np.arange(member.size)
        if name == "Morgan":
            flag = (loss_c >= a.phi_L_) & (loss_c <= a.phi_U_) & (ratio_c >= a.phi_M_)
            res["library_max_ppv"][1.0] = _rates(flag[idx], member[idx], 1.0)
            inside = (loss_c >= a.phi_L_) & (loss_c <= a.phi_U_)
            scores[name] = np.where(inside, ratio_c, ratio_c - 2.0)  # its decision_function
        else:
            flag = scores[name][idx] >= a.threshold_
            res["library_max_ppv"][1.0] = _rates(flag, member[idx], 1.0)
        res["seconds"] = seconds.get(name, 0.0) + time.perf_counter() - t0
        g1 = res["max_ppv"].get(1.0, {})
        log(f"    {name}: max-PPV@gamma=1 PPV {g1.get('ppv', float('nan')):.3f} "
            f"TPR {g1.get('tpr', float('nan')):.4f} ({res['seconds']:.1f} s)")
        out["attacks"][name] = res
    out["_roc"] = (member, scores)
    return out


# --------------------------------------------------------------------- output
def _paper_g1(attack: str, goal: str) -> str:
    goal = "max_ppv" if goal == "library_max_ppv" else goal
    cells = []
    for table in PAPER_G1.values():
        if (attack, goal) not in table:
            cells.append("")
            continue
        v = table[(attack, goal)]
        cells.append("- (no threshold)" if v is None else f"{v[0]} / {v[1]} / {v[3]}")
    return " | ".join(cells)


def markdown(report: dict[str, Any]) -> str:
    cfg = report["config"]
    lines = [
        "Jayaraman, Wang, Knipmeyer, Gu, Evans, *Revisiting Membership Inference Under "
        "Realistic Assumptions* (PETS 2021): Tables 3, 4, 6, 7 with tabmia.",
        "",
        f"Command: `{cfg['command']}`; seeds: {cfg['seeds']}; "
        f"wall time {report['wall_seconds']:.0f} s.",
        f"Target MLP: 2 x 256 ReLU, Adam, batch 200, lr 0.005 (the paper's), trained on "
        f"{cfg['device']}.",
        "Attacks: Yeom = `LossAttack`; Yeom CBT = `LossAttack(class_based=True)`; Merlin = "
        f"`MerlinAttack(n_noise={cfg['n_noise']}, sigma=0.01, binary_flip=0)`; Morgan = "
        f"`MorganAttack(n_noise={cfg['n_noise']}, sigma=0.01, binary_flip=0, n_thresholds=50)`.",
        "Thresholds from the public records only (Procedure 5.1). **max PPV**: one proxy MLP "
        "of the target's recipe per seed, trained on half of the public records; each attack "
        "is fitted against the proxy on a quarter and scores the proxy's simulated members "
        "and non-members (the last quarter); `tabmia.thresholds.select_threshold(goal="
        "\"max_ppv\", prior=gamma)` (Morgan: `tabmia.attacks.merlin.morgan_search`) picks the "
        "threshold for each gamma from those scores, the computation `fit(threshold_goal="
        "\"max_ppv\", prior=gamma)` does, with one proxy shared by all priors. **max PPV "
        "(fit)**: the attack's own `fit(threshold_goal=\"max_ppv\", prior=1)` (its own proxy), "
        "as a cross-check at gamma = 1. **fixed FPR 1%**: `fit(threshold_goal=\"fpr\", "
        "fpr=0.01)` (split-conformal on the public non-members; not defined for Morgan).",
        "Candidate sets: for each gamma, gamma non-members per member drawn from the target's "
        "training set and a pool of non-members; PPV = TP / (TP + FP) on that set (the base "
        "rate 1/(1+gamma) when nothing is flagged). All rates in %, mean ± std over seeds.",
        "",
    ]
    for key, note in report["not_present"].items():
        lines += [f"**{key}: not present** in the data home, skipped. Loader message:", "",
                  "```", note.strip(), "```", ""]
    for key, ds in report["datasets"].items():
        c = ds["config"]
        lines += [
            f"## {key}",
            "",
            f"{c['note']}; {c['n_features']} features after encoding; L2-normalised rows.",
            f"Sizes: {c['n_train']:,} training records (members), {c['n_public']:,} public "
            f"records, {c['n_pool']:,} non-member pool; {c['epochs']} epochs. "
            + c["differs"],
            "",
            f"Target accuracy: train {mean_std([s['accuracy']['train'] for s in ds['seeds']])}, "
            f"test {mean_std([s['accuracy']['test'] for s in ds['seeds']])} "
            "(paper, Table 2: Purchase-100X 1.00 / 0.71, Texas-100 1.00 / 0.53).",
            "",
            "### Balanced prior (gamma = 1): compare Tables 3, 4, 7",
            "",
            "| attack | threshold | FPR | TPR | Adv | PPV | members identified | paper "
            "Purchase-100X (T3) FPR / TPR / PPV | paper Texas-100 (T7) FPR / TPR / PPV |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name in ATTACKS:
            for goal, label in (("max_ppv", "max PPV"), ("library_max_ppv", "max PPV (fit)"),
                                ("fpr", "fixed FPR 1%")):
                runs = [s["attacks"][name][goal].get(1.0) for s in ds["seeds"]
                        if name in s["attacks"]]
                runs = [r for r in runs if r]
                if not runs:
                    continue
                lines.append(
                    f"| {name} | {label} | {pct(r['fpr'] for r in runs)} | "
                    f"{pct(r['tpr'] for r in runs)} | {pct(r['adv'] for r in runs)} | "
                    f"{pct(r['ppv'] for r in runs)} | "
                    f"{np.mean([r['tp'] for r in runs]):.1f} of {runs[0]['n_members']:,} | "
                    f"{_paper_g1(name, goal)} |"
                )
        gammas = cfg["gammas"]
        lines += [
            "",
            "### PPV against the prior gamma: compare Table 6 (max PPV)",
            "",
            "| attack | threshold | " + " | ".join(f"gamma={g:g}" for g in gammas) + " |",
            "|---|---|" + "---|" * len(gammas),
        ]
        for name in ATTACKS:
            for goal, label in (("max_ppv", "max PPV"), ("fpr", "fixed FPR 1%")):
                cells = []
                for g in gammas:
                    runs = [s["attacks"][name][goal].get(g) for s in ds["seeds"]]
                    runs = [r for r in runs if r]
                    cells.append(pct(r["ppv"] for r in runs) if runs else "")
                if any(cells):
                    lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
        for paper_name, rows in PAPER_T6.items():
            for i, att in enumerate(("Yeom", "Merlin", "Morgan")):
                cells = [
                    ("-" if rows.get(g) is None else f"{rows[g][i]:.1f}") if g in rows else ""
                    for g in gammas
                ]
                lines.append(
                    f"| *paper {paper_name}: {att}* | max PPV | " + " | ".join(cells) + " |")
        sizes = ", ".join(
            f"gamma={g:g}: {ds['seeds'][0]['attacks']['Yeom']['max_ppv'][g]['n_members']:,} + "
            f"{ds['seeds'][0]['attacks']['Yeom']['max_ppv'][g]['n_nonmembers']:,}"
            for g in gammas
        )
        lines += ["", f"Candidate sets (members + non-members): {sizes}.", ""]
        if ds.get("roc_png"):
            lines += [f"Log-log ROC (seed {cfg['seeds'][0]}, all candidates): "
                      f"`{ds['roc_png']}`", ""]
    return "\n".join(lines)


def _sizes(name: str, args: argparse.Namespace, n_avail: int) -> tuple[int, int, int, int, str]:
    if args.quick:
        n_train, epochs = 150, 4
    elif args.train_size:
        n_train, epochs = args.train_size, args.epochs or 30
    elif name in PAPER_RECIPE:
        n_train, epochs = PAPER_RECIPE[name]
    else:  # CPU budget: Merlin's 101 queries per record on 595 features dominate
        n_train, epochs = STANDIN_TRAIN.get(name, 2_000), 30
    if args.epochs:
        epochs = args.epochs
    n_public = 2 * n_train  # the proxy trains on half: as many records as the target
    n_pool = min(5 * n_train, n_avail - n_train - n_public)
    differs = (
        "Paper: 10,000 training records, 100 epochs (Purchase-100X) / 30 (Texas-100); "
        f"here {n_train:,} records and {epochs} epochs on CPU; gamma = 10 uses "
        f"{n_pool // 10:,} members (the pool holds {n_pool:,} non-members)."
    )
    if name in PAPER_RECIPE and (n_train, epochs) == PAPER_RECIPE[name]:
        differs = "Paper's recipe (10,000 training records)."
    return n_train, n_public, n_pool, epochs, differs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--train-size", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: fastest on a shared 2-core box)")
    args = parser.parse_args(argv)
    prepare_run(args)

    t_start = time.perf_counter()
    seeds = list(range(args.seeds))
    n_noise = 10 if args.quick else 100
    gammas = GAMMAS
    report: dict[str, Any] = {"datasets": {}, "not_present": {}}
    for key, data in present_datasets(args.datasets, load_numeric, report):
        n_avail = data["X"].shape[0]
        n_train, n_public, n_pool, epochs, differs = _sizes(key, args, n_avail)
        print(f"{key}: {n_avail:,} records, {data['n_features']} features; train {n_train}, "
              f"public {n_public}, pool {n_pool}, {epochs} epochs", flush=True)
        runs = [
            run_seed(data, s, n_train=n_train, n_public=n_public, n_pool=n_pool,
                     epochs=epochs, n_noise=n_noise, gammas=gammas,
                     log=lambda m: print(m, flush=True))
            for s in seeds
        ]
        roc_png = None
        member, roc = runs[0].pop("_roc")
        for r in runs[1:]:
            r.pop("_roc")
        try:
            import pandas as pd

            from tabmia.report import plot_roc

            frame = pd.concat(
                [pd.DataFrame({"attack": a, "repeat": 0, "member": member, "score": s})
                 for a, s in roc.items()], ignore_index=True,
            )
            png = results_dir() / f"{NAME}_roc_{key}.png"
            plot_roc(frame, png, title=f"{key}: Yeom / Merlin / Morgan (gamma=1 thresholds)")
            roc_png = png.name
        except Exception as exc:  # noqa: BLE001 - a plot must not lose the numbers
            print(f"ROC plot failed: {exc}", file=sys.stderr)
        report["datasets"][key] = {
            "config": {"n_train": n_train, "n_public": n_public, "n_pool": n_pool,
                       "epochs": epochs, "note": data["note"], "n_features": data["n_features"],
                       "differs": differs},
            "seeds": runs,
            "roc_png": roc_png,
        }
    missing_data_exit(report["not_present"], args.datasets, name=NAME)
    report["wall_seconds"] = time.perf_counter() - t_start
    report["config"] = {
        "command": "python -m benchmarks.jayaraman_ppv "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "seeds": seeds, "gammas": list(gammas), "n_noise": n_noise, "quick": args.quick,
        "device": device_note(),
    }
    report["paper"] = {
        "gamma1": {k: {f"{a}|{g}": v for (a, g), v in t.items()} for k, t in PAPER_G1.items()},
        "table6": PAPER_T6, "accuracy": PAPER_ACC,
    }
    json_path, md_path = write_results(NAME, report, markdown(report))
    print(f"wrote {json_path} and {md_path} ({report['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
