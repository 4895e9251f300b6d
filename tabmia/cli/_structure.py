"""``tabmia audit`` on a tree model's file: its structural findings, the checks that a
white-box attack (``--attacks leaf``) has a tree model to read, and the report's
Structure section."""

from __future__ import annotations

import argparse
import warnings
from typing import Any

from tabmia.attacks import membership_tags
from tabmia.cli._inputs import UsageError
from tabmia.exceptions import RunNote
from tabmia.structure import is_tree_model, structural_findings

__all__ = ["check_white_box", "structure_findings", "structure_section"]


def _structure_limits(args: argparse.Namespace) -> list[str]:
    return [
        lim.name for lim in getattr(args, "fail_above", ()) if lim.metric.startswith("structure:")
    ]


def check_white_box(args: argparse.Namespace, attacks: dict[str, Any], model: Any) -> None:
    """Refuse white-box attacks and structural limits without a tree model's file."""
    white = [n for n, a in attacks.items() if membership_tags(a).white_box]
    limits = _structure_limits(args)
    if not white and not limits:
        return
    what = f"--attacks {','.join(white)} read" if white else f"--fail-above {limits[0]} reads"
    if model is None:
        given = "predicted labels" if getattr(args, "train_pred", None) else "probabilities"
        raise UsageError(
            f"{what} the model's trees and the counts their leaves store: they need "
            f"--model-file of a tree model, not precomputed {given}"
        )
    if not is_tree_model(model):
        raise UsageError(
            f"{what} a tree model's leaves, but --model-file holds a "
            f"{type(getattr(model, 'steps', [[None, model]])[-1][1]).__name__}: scikit-learn "
            "trees, forests, boosting, XGBoost, LightGBM or CatBoost (bare or a Pipeline's "
            "last step)"
        )


def structure_findings(model: Any, X: Any, y: Any) -> Any:
    """The structural findings of a tree model on its training records; None for any
    other model."""
    if model is None or not is_tree_model(model):
        return None
    try:
        return structural_findings(model, X, y)
    except ValueError as exc:  # a tree whose splits tabmia does not read (categorical)
        # the findings come unasked: the audit goes on without them, and says so
        warnings.warn(
            f"no Structure section: cannot read the model's leaves ({exc})",
            RunNote,
            stacklevel=2,
        )
        return None


def structure_section(findings: Any) -> tuple[list[str], Any]:
    """What report.html shows of the structure: the findings' sentences and a table of
    the distribution of each record's smallest leaf."""
    import pandas as pd

    s = findings.summary
    rows = [
        ("model", f"{s['family']}, {s['n_trees']} trees"),
        ("stored count", s["count_kind"]),
        ("records audited (training records)", s["n_records"]),
        (
            "smallest leaf a record falls in: 5% / 25% / 50% / 75% of records at most",
            " / ".join(f"{v:g}" for v in s["occupancy_quantiles"].values()),
        ),
        (
            "typical occupancy of a record's leaves (geometric mean, median record)",
            f"{s['median_occupancy']:.3g}",
        ),
        (f"record-tree pairs in a leaf of fewer than {s['k']} (small)", f"{100 * s['small']:.3g}%"),
        ("records alone in their leaf in most trees (alone)", f"{100 * s['alone']:.3g}%"),
        (
            "records whose label a small pure leaf gives in most trees (disclosure)",
            "not stored" if s["disclosure"] is None else f"{100 * s['disclosure']:.3g}%",
        ),
        ("mean share of its own leaves a record holds (influence)", f"{s['influence']:.3g}"),
    ]
    table = pd.DataFrame(rows, columns=["finding", "value"])
    return findings.lines(), table
