"""Tables, verdicts and plots of ``benchmarks/named_fdr.py`` from its checkpointed rows."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._common import load_note, results_dir, write_results

NAME = "named_fdr"
#: the lists that promise FDR <= q (the others are shown for comparison)
PROMISING = ("bh", "storey", "bonferroni", "by")


def _rows(work: Path) -> tuple[pd.DataFrame, dict]:
    frames, seconds = [], {}
    for path in sorted(work.glob("*.pkl")):
        state = pickle.loads(path.read_bytes())
        frames.append(pd.DataFrame(state["rows"]))
        seconds[path.stem] = {"seeds": len(state["done"]), "seconds": state["seconds"]}
    rows = pd.concat(frames, ignore_index=True)
    rows["fdp"] = np.where(rows["n_named"] > 0, rows["n_wrong"] / rows["n_named"].clip(lower=1), 0)
    rows["power"] = (rows["n_named"] - rows["n_wrong"]) / rows["n_members"].clip(lower=1)
    return rows, seconds


def _fdr_cells(rows: pd.DataFrame) -> pd.DataFrame:
    keep = rows[rows["method"].isin((*PROMISING, "threshold", "top10%"))]
    keys = ["dataset", "attack", "method", "share", "q"]
    g = keep.groupby(keys, dropna=False)
    out = g.agg(
        seeds=("seed", "nunique"),
        mean_fdp=("fdp", "mean"),
        sd_fdp=("fdp", "std"),
        mean_named=("n_named", "mean"),
        mean_wrong=("n_wrong", "mean"),
        power=("power", "mean"),
    ).reset_index()
    # one seed has no spread: no bound, and no verdict on the cell
    half = 1.96 * out["sd_fdp"] / np.sqrt(out["seeds"])
    out["fdp_upper95"] = out["mean_fdp"] + half
    promised = out["method"].isin(PROMISING) & (out["seeds"] >= 2)
    out["holds"] = np.where(promised, out["fdp_upper95"] <= out["q"] + 0.01, np.nan)
    # shown: the upper bound within q + 0.01; broken: even the lower bound over q
    out["verdict"] = np.select(
        [~promised, out["holds"] == 1, out["mean_fdp"] - half > out["q"]],
        ["", "shown", "broken"],
        default="too few seeds",
    )
    return out


def _promise_lines(promised: pd.DataFrame) -> list[str]:
    """How many promising cells are shown, broken, or open, by method."""

    def cells(frame: pd.DataFrame) -> str:
        return ", ".join(
            f"{r.dataset}/{r.attack}/{r.method}/share {r.share:g}/q {r.q:g} "
            f"({r.seeds} seeds, mean FDP {r.mean_fdp:.3f})"
            for r in frame.itertuples()
        )

    broken = promised[promised["verdict"] == "broken"]
    open_ = promised[promised["verdict"] == "too few seeds"]
    by_method = ", ".join(
        f"{m}: {int((g['verdict'] == 'shown').sum())} of {len(g)} shown, "
        f"{int((g['verdict'] == 'broken').sum())} broken"
        for m, g in promised.groupby("method")
    )
    return [
        f"**Cells that promise FDR <= q** (BH, Storey, Bonferroni-BH, BY; at least 2 seeds): "
        f"{len(promised)}. Shown (upper 95% bound of the mean FDP at most q + 0.01): "
        f"{int((promised['verdict'] == 'shown').sum())}; broken (lower bound over q): "
        f"{len(broken)}" + (f" ({cells(broken)})" if len(broken) else "") + "; too few seeds "
        f"to tell: {len(open_)}" + (f" ({cells(open_)})" if len(open_) else "") + ".",
        "",
        f"By method: {by_method}.",
    ]


def _null(rows: pd.DataFrame) -> pd.DataFrame:
    null = rows[rows["method"] == "null"]
    out = (
        null.assign(nobody=null["n_named"] == 0)
        .groupby(["dataset", "attack", "q"])
        .agg(seeds=("seed", "nunique"), nobody_named=("nobody", "mean"))
        .reset_index()
    )
    out["holds"] = out["nobody_named"] >= 1 - out["q"] - 1.96 * np.sqrt(
        out["q"] * (1 - out["q"]) / out["seeds"]
    )
    return out


def _resampled(rows: pd.DataFrame) -> pd.DataFrame:
    keys = ["dataset", "attack", "share", "q"]
    pred = rows[rows["method"] == "resampled"].groupby(keys)["n_named"].mean()
    real = rows[rows["method"] == "bh"].groupby(keys)["n_named"].mean()
    out = pd.concat({"predicted_from_share_0.5": pred, "actual": real}, axis=1).dropna()
    return out.reset_index()


def _bands(rows: pd.DataFrame) -> pd.DataFrame:
    band = rows[rows["method"] == "persons"]
    if band.empty:
        return band
    g = band.groupby(["dataset", "attack", "q", "band"])
    out = g.agg(
        seeds=("seed", "nunique"),
        patients=("n_cand", "mean"),
        members=("n_members", "mean"),
        named=("n_named", "sum"),
        wrong=("n_wrong", "sum"),
        mean_fdp=("fdp", "mean"),
    ).reset_index()
    out["pooled_fdp"] = out["wrong"] / out["named"].clip(lower=1)
    return out


def _plot(cells: pd.DataFrame) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    datasets = sorted(cells["dataset"].unique())
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.5 * len(datasets), 4), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        part = cells[(cells["dataset"] == ds) & (cells["method"] == "bh")]
        for (attack, share), line in part.groupby(["attack", "share"]):
            ax.plot(line["q"], line["mean_fdp"], marker="o", label=f"{attack} {share:g}")
        ax.plot([0, 0.2], [0, 0.2], "k--", lw=1, label="FDP = q")
        ax.set(title=ds, xlabel="q", ylabel="mean realised FDP (BH)")
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path = results_dir() / f"{NAME}_fdp.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    names.append(path.name)
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.5 * len(datasets), 4), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        part = cells[(cells["dataset"] == ds) & (cells["q"].isin([0.1, 0.01]))]
        part = part[part["method"].isin(["bh", "threshold"])]
        for (attack, method), line in part.groupby(["attack", "method"]):
            ax.plot(
                line["share"],
                line["mean_fdp"],
                marker="o" if method == "bh" else "x",
                label=f"{attack} {'BH q=0.1' if method == 'bh' else 'threshold FPR 1%'}",
            )
        ax.axhline(0.1, color="k", ls="--", lw=1)
        ax.set(title=ds, xlabel="member share", ylabel="mean realised FDP")
        ax.legend(fontsize=6)
    fig.tight_layout()
    path = results_dir() / f"{NAME}_threshold.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    names.append(path.name)
    return names


def _md_table(frame: pd.DataFrame, floats: int = 3) -> str:
    shown = frame.copy()
    for c in ("q", "share"):
        if c in shown:
            shown[c] = shown[c].map(lambda v: "" if pd.isna(v) else f"{v:g}")
    for c in shown.columns:
        if shown[c].dtype.kind == "f":
            shown[c] = shown[c].map(lambda v: "" if pd.isna(v) else f"{v:.{floats}f}")
    head = "| " + " | ".join(map(str, shown.columns)) + " |\n"
    head += "|" + "---|" * len(shown.columns) + "\n"
    return head + "".join("| " + " | ".join(map(str, r)) + " |\n" for r in shown.to_numpy())


def report(work: Path) -> None:
    rows, seconds = _rows(work)
    cells = _fdr_cells(rows)
    null = _null(rows)
    resampled = _resampled(rows)
    bands = _bands(rows)
    plots = _plot(cells)
    promised = cells[cells["method"].isin(PROMISING) & cells["holds"].notna()]
    combos = (
        cells[cells["method"].isin(["bonferroni", "by"])]
        .pivot_table(
            index=["dataset", "attack", "share", "q"], columns="method", values="mean_named"
        )
        .reset_index()
    )
    load = {"start": os.getloadavg(), "end": os.getloadavg()}
    md = [
        "Whom an attacker can name: the realised false-discovery proportion of the named list "
        "(conformal p-values against the attacker's public records, Benjamini-Hochberg) "
        "over seeds. Script: `benchmarks/named_fdr.py` (its docstring has the design).",
        "",
        "Seeds run: "
        + ", ".join(f"{k} {v['seeds']} ({v['seconds'] / 60:.0f} min)" for k, v in seconds.items())
        + ".",
        "",
        *_promise_lines(promised),
        "",
        f"**Null model** (never saw a candidate): nobody named in at least 1 - q of the seeds "
        f"(within 1.96 binomial s.e.) in {int(null['holds'].sum())} of {len(null)} cells; "
        f"lowest share {null['nobody_named'].min():.3f}.",
        "",
        "## Mean realised FDP, q = 0.1 (BH per attack; combinations; threshold at FPR 1 %; top 10 %)",
        "",
        _md_table(
            cells[(cells["q"].isin([0.1, 0.01])) | cells["q"].isna()][
                [
                    "dataset",
                    "attack",
                    "method",
                    "share",
                    "q",
                    "seeds",
                    "mean_fdp",
                    "fdp_upper95",
                    "mean_named",
                    "mean_wrong",
                    "power",
                    "verdict",
                ]
            ]
        ),
        "## Every promising cell",
        "",
        _md_table(
            promised[
                [
                    "dataset",
                    "attack",
                    "method",
                    "share",
                    "q",
                    "seeds",
                    "mean_fdp",
                    "fdp_upper95",
                    "mean_named",
                    "power",
                    "verdict",
                ]
            ]
        ),
        "A top-k list of the BH list's own size is the BH list: both take the k candidates "
        "with the smallest p-values, the highest scores (up to ties). What BH adds is the "
        "choice of k with its error bounded; a list of a size fixed in advance (top 10 % "
        "above) and flagging at the per-record threshold (FPR 1 %) have no such bound: their "
        "FDP above grows as the member share falls.",
        "",
        "## Null model: share of seeds naming nobody",
        "",
        _md_table(null),
        "## Combinations over attacks: mean named (Bonferroni-BH against BY)",
        "",
        _md_table(combos, 1),
        "## Named count at another member share: resampled from the share-0.5 candidates "
        "against the count at that share",
        "",
        _md_table(resampled, 1),
    ]
    if len(bands):
        md += [
            "## Patients (diabetes130) by record-count band, over seeds (BH bounds the FDR of the whole list, not within a band: a band's share is shown, not promised; pooled_fdp = wrong / named summed over seeds, mean_fdp = the mean of each seed's)",
            "",
            _md_table(bands),
        ]
    # file names, as the other benchmark pages give their figures (the site shows them)
    md += [f"Figures: `{plots[0]}` (FDP), `{plots[1]}` (threshold)", load_note(load)]
    write_results(
        NAME,
        {
            "seeds": seconds,
            "fdr_cells": cells.to_dict("records"),
            "null": null.to_dict("records"),
            "resampled": resampled.to_dict("records"),
            "bands": bands.to_dict("records") if len(bands) else [],
            "combinations": combos.to_dict("records"),
            "plots": plots,
        },
        "\n".join(md),
    )


def _simultaneous_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (data set, attack, share, alpha): the share of seeds whose bound fails for some
    k, against alpha, and the pointwise bound's; how the bound reads at the BH lists."""
    g = rows.groupby(["dataset", "attack", "share", "alpha"])
    out = g.agg(
        seeds=("seed", "nunique"),
        violated=("violated", "mean"),
        pointwise_violated=("pointwise_violated", "mean"),
        **{
            f"{what}@{q}": (f"{what}@{q}", "mean")
            for q in ("0.1", "0.2")
            for what in ("named", "wrong", "bound")
        },
    ).reset_index()
    se = np.sqrt(out["alpha"] * (1 - out["alpha"]) / out["seeds"])
    out["holds"] = out["violated"] <= out["alpha"] + 1.96 * se
    return out


def report_simultaneous(work: Path) -> None:
    """``results/named_fdr_simultaneous.{json,md}`` from the ``--simultaneous`` checkpoint."""
    state = pickle.loads((work / "simultaneous.pkl").read_bytes())
    rows = pd.DataFrame(state["rows"])
    cells = _simultaneous_cells(rows)
    pooled = (
        rows.groupby("alpha")
        .agg(
            seed_cells=("violated", "size"),
            violated=("violated", "mean"),
            pointwise_violated=("pointwise_violated", "mean"),
        )
        .reset_index()
    )
    load = {"start": os.getloadavg(), "end": os.getloadavg()}
    seeds = {
        k: {"seeds": len(v["seeds"]), "seconds": v["seconds"]} for k, v in state["done"].items()
    }
    n_hold = int(cells["holds"].sum())
    # how much it says: at the BH lists of q = 0.1 (alpha 0.05), the bound against the truth
    lists = rows[(rows["alpha"] == 0.05) & (rows["named@0.1"] > 0)]
    tight = {
        "lists": len(lists),
        "below_length": float((lists["bound@0.1"] < lists["named@0.1"]).mean()),
        "named": int(lists["named@0.1"].sum()),
        "wrong": int(lists["wrong@0.1"].sum()),
        "bound": int(lists["bound@0.1"].sum()),
    }
    md = [
        "Simultaneous bounds on the non-members among the first k named, every k at once "
        "(`tabmia.named.fdp_bounds`: closed testing with Simes, Goeman-Solari, through "
        "Hommel's h; any dependence for the Bonferroni combination), against the truth. Script: "
        "`benchmarks/named_fdr.py --simultaneous` (its docstring has the design).",
        "",
        "Sized to about 15 minutes on a shared 2-core machine: loss and the calibrated attack "
        "only (not LiRA / RMIA), no resampling, "
        + ", ".join(
            f"{k} {v['seeds']} seeds ({v['seconds'] / 60:.1f} min)" for k, v in seeds.items()
        )
        + " (the FDR benchmark `named_fdr.md` runs 200). Share 0.0 is the null model "
        "(every candidate a non-member).",
        "",
        f"**Verdict**: the share of seeds in which the bound fails for some k is at most alpha "
        f"(within 1.96 binomial s.e.) in {n_hold} of {len(cells)} cells; largest share "
        f"{cells['violated'].max():.3f} (alpha {', '.join(f'{a:g}' for a in sorted(cells['alpha'].unique()))}). "
        f"The pointwise bound (each k's binomial quantile, not simultaneous) fails in up to "
        f"{cells['pointwise_violated'].max():.3f} of the seeds of a cell.",
        "",
        f"**How much it says** (alpha 0.05, the {tight['lists']} BH lists at q = 0.1 that name "
        f"someone): {tight['named']} named, {tight['wrong']} of them non-members, bound "
        f"{tight['bound']}; the bound is below the list's length in "
        f"{100 * tight['below_length']:.0f} % of the lists. What limits it: a conformal p-value "
        "is at least 1 / (public + 1) (250-600 public records or patients here) while a "
        "name is certified only below alpha / h (h Hommel's, about the non-members among "
        "the 330-780 candidates, more where the signal is weak); a Bonferroni combination "
        "doubles the smallest p-value and divides alpha by sum 1/i.",
        "",
        "## Pooled over cells",
        "",
        _md_table(pooled),
        "## Every cell (named@q, wrong@q, bound@q: mean over seeds of the BH list's length at "
        "q, of its non-members, and of the bound on them)",
        "",
        _md_table(cells),
        load_note(load),
    ]
    write_results(
        f"{NAME}_simultaneous",
        {
            "seeds": seeds,
            "cells": cells.to_dict("records"),
            "pooled": pooled.to_dict("records"),
            "at_bh_lists": tight,
        },
        "\n".join(md),
    )
