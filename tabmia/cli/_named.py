"""``tabmia audit --fdr``: the named list of the audit (:mod:`tabmia.named`), its lines,
its ``results.json`` entry, ``named.csv.gz`` and the report's table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tabmia.datasets import person_noun
from tabmia.named import DEFAULT_Q, named_members

__all__ = ["named_of", "named_table", "write_named"]


def named_of(args: argparse.Namespace, result: Any, state: Any) -> Any:
    """The audit's named list at ``--fdr`` (withheld where ``state`` cannot tell), at the
    PPV prior of ``--gammas`` (the largest)."""
    q = getattr(args, "fdr", None) or DEFAULT_Q
    gammas = getattr(args, "gammas", None)
    return named_members(
        result,
        q,
        prior=max(gammas) if gammas else None,
        state=state,
        random_state=getattr(args, "random_state", 0),
        noun=person_noun(getattr(args, "dataset", None)),
    )


def write_named(named: Any, folder: Path) -> None:
    """``named.csv.gz``: every named candidate of every list (id, truth, p-value, rank)."""
    named.names.to_csv(
        folder / "named.csv.gz", index=False, compression={"method": "gzip", "compresslevel": 6}
    )


def named_table(named: Any, top_k: int) -> tuple[Any, Any]:
    """What report.html shows: one row per list (named, wrong, realised FDP, the bound on
    the wrong for every k at once, members named, status) and the headline list's first
    ``top_k`` names (id, member, p-value)."""
    import pandas as pd

    summary = named.summary()
    if summary.empty:
        return summary, summary
    lists = pd.DataFrame(
        {
            "list": [
                a if a != "combined" else f"combined ({m})"
                for a, m in zip(summary["attack"], summary["method"], strict=True)
            ],
            "named": summary["n_named"].astype(int),
            "of them non-members": summary["n_wrong"].astype(int),
            "realised FDP [95%]": [
                "-" if pd.isna(f) else f"{f:.3f} [{lo:.3f}, {hi:.3f}]"
                for f, lo, hi in zip(
                    summary["fdp"], summary["fdp_low"], summary["fdp_high"], strict=True
                )
            ],
            "non-members at most (95%, every k)": [
                "-" if pd.isna(b) else int(b)
                for b in summary.get("n_wrong_bound", pd.Series(float("nan"), summary.index))
            ],
            "members named [95%]": [
                f"{int(r)}/{int(n)}: {v:.3f} [{lo:.3f}, {hi:.3f}]"
                for r, n, v, lo, hi in zip(
                    summary["n_right"],
                    summary["n_members"],
                    summary["members_named"],
                    summary["members_named_low"],
                    summary["members_named_high"],
                    strict=True,
                )
            ],
            "status": [
                s if not why else f"{s}: {why}"
                for s, why in zip(summary["status"], summary["reason"].fillna(""), strict=True)
            ],
        }
    )
    attack, _, method = named.headline.partition(":")
    names = named.names
    head = names[(names["attack"] == attack) & (names["method"] == (method or "bh"))]
    unit = "person" if named.unit == "person" else "record (row)"
    shown = pd.DataFrame(
        {
            "rank": head["rank"].to_numpy(),
            unit: head["id"].to_numpy(),
            "seed": head["repeat"].to_numpy(),
            "member (truth)": head["member"].map({True: "yes", False: "no"}).to_numpy(),
            "p-value": [f"{p:.4g}" for p in head["p_value"]],
            "contents": "••• masked",
        }
    ).head(top_k)
    return lists, shown
