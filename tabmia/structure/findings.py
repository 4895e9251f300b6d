"""Structural findings: how small the leaves a record falls in are, tree by tree.

A tree model's prediction for a record is made of its leaves; a leaf that holds few
training records is shaped by each of them. :func:`structural_findings` measures, for
each record (usually the training records), how many training records share its leaf
in each tree, and summarises the model by their distribution. The findings order
models and records by how much the file singles records out; they are not a membership
test (a leaf of one record says that record was alone there, not that a given candidate
is that record): :class:`tabmia.attacks.LeafAttack` is the test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tabmia.structure.leaves import TreeLeaves, read_trees

__all__ = ["StructureFindings", "structural_findings", "FINDING_NAMES"]

#: The per-model findings a gate limit can name (``structure:<name>=<limit>``).
FINDING_NAMES: tuple[str, ...] = ("alone", "small", "disclosure", "influence")

_CHUNK_CELLS = 4_000_000  # record x tree cells per chunk: ~32 MB per float64 gather


@dataclass
class StructureFindings:
    """Per-record and per-model structural findings of a tree model.

    Attributes
    ----------
    records : DataFrame
        One row per record: ``min_occupancy`` (the fewest training records in any leaf it
        falls in), ``mean_log_occupancy`` (mean over trees of ``log`` occupancy),
        ``share_small`` (share of trees where its leaf
        holds fewer than ``k``), ``share_alone`` (share of trees where it holds at most
        one), ``alone_in_most`` (alone in more than half of the trees), ``share_disclosed``
        (share of trees where its leaf holds fewer than ``k`` records, all of its class;
        NaN where the file stores no class counts), ``influence`` (mean over trees of
        ``1 / occupancy``: its own share of its leaves, where it is a training record).
    summary : dict
        Per model: ``family``, ``n_trees``, ``n_records``, ``k``, ``count_kind``,
        ``exact``, ``occupancy_quantiles`` (of ``min_occupancy``), ``median_occupancy``
        (the geometric mean occupancy of the median record),
        ``small`` (mean ``share_small``), ``alone`` (share of records alone in most
        trees), ``disclosure`` (share of records whose label a small pure leaf gives in
        most trees, or None), ``influence`` (mean ``influence``).
    """

    records: pd.DataFrame
    summary: dict[str, Any]

    def value(self, name: str) -> float | None:
        """The per-model finding ``name`` (one of :data:`FINDING_NAMES`)."""
        if name not in FINDING_NAMES:
            raise ValueError(f"unknown structural finding {name!r}; one of {FINDING_NAMES}")
        v = self.summary[name]
        return None if v is None else float(v)

    def lines(self) -> list[str]:
        """The findings as sentences, each beside its number."""
        s = self.summary
        q = s["occupancy_quantiles"]
        out = [
            f"{100 * s['alone']:.3g}% of the {s['n_records']} records audited sit alone in "
            f"their leaf in most of the model's {s['n_trees']} trees: the file singles them "
            "out (structure:alone).",
            f"A record's leaf holds fewer than {s['k']} training records in "
            f"{100 * s['small']:.3g}% of record-tree pairs (structure:small); the smallest "
            f"leaf a record falls in holds {q['5%']:g} training records or fewer for 5% of "
            f"records, {q['50%']:g} or fewer for half of them.",
        ]
        if s["disclosure"] is None:
            out.append(
                f"{s['family']} stores no per-class counts: class disclosure is not measured."
            )
        else:
            out.append(
                f"{100 * s['disclosure']:.3g}% of records fall, in most trees, in a leaf of "
                f"fewer than {s['k']} training records all of their class: the file gives "
                "their label to anyone who knows their features (structure:disclosure)."
            )
        if not s["exact"]:
            out.append(
                f"{s['family']} stores {s['count_kind'].split(':')[0]}, a sum of hessians "
                "and not a count of records: the occupancies above are estimates."
            )
        out.append(
            "These are findings about the model file, not a membership test: they say "
            "which records the file singles out, not that an attacker can tell them from "
            "non-members (the leaf attack measures that)."
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary and sentences (``results.json``'s ``structure``)."""
        return {**self.summary, "lines": self.lines()}


class _NodeTables:
    """Per-node values of every finding, so that a record's findings are gathers from
    these tables at its leaves (one take per finding) instead of arithmetic over each
    record x tree cell.

    ``flags`` holds, per node and class, bit 0 ``count < k``, bit 1 ``count <= 1`` and
    bit 2 "fewer than k records, all of this class" (class disclosure).
    """

    def __init__(self, leaves: TreeLeaves, k: int, with_classes: bool) -> None:
        counts = leaves.counts if leaves.exact else np.rint(leaves.counts)
        safe = np.maximum(counts, 1.0)
        self.occupancy = counts.astype(np.float32)
        # float64 like the per-cell arithmetic they replace, so that no finding moves
        self.log = np.log(safe)
        self.inverse = 1.0 / safe
        small = counts < k
        flags = small.astype(np.uint8) | ((counts <= 1).astype(np.uint8) << 1)
        cc = leaves.class_counts if with_classes else None
        self.n_classes = 1 if cc is None else cc.shape[1]
        if cc is not None:
            pure = np.isclose(cc, counts[:, None]) & (counts[:, None] > 0) & small[:, None]
            flags = flags[:, None] | (pure.astype(np.uint8) << 2)
        self.flags = np.ascontiguousarray(flags).ravel()
        # int32 indices halve the memory traffic of the gathers where they fit
        fits = self.flags.size < np.iinfo(np.int32).max
        self.index_dtype = np.int32 if fits else np.int64


def _mean_over_trees(values: np.ndarray) -> np.ndarray:
    # small integer flags sum exactly in float64 without a float copy of the cells
    return values.sum(axis=1, dtype=np.float64) / values.shape[1]


def _per_record_tables(
    leaves: TreeLeaves, tables: _NodeTables, X: Any, y_idx: np.ndarray | None
) -> dict[str, np.ndarray]:
    nodes = leaves.leaves(X, dtype=tables.index_dtype)
    if y_idx is None:
        cells = nodes
    else:
        cells = nodes * tables.n_classes + y_idx.astype(nodes.dtype)[:, None]
    flags = tables.flags[cells]
    out = {
        "min_occupancy": tables.occupancy[nodes].min(axis=1).astype(np.float64),
        "mean_log_occupancy": _mean_over_trees(tables.log[nodes]),
        "share_small": _mean_over_trees(flags & 1),
        "share_alone": _mean_over_trees((flags >> 1) & 1),
        "influence": _mean_over_trees(tables.inverse[nodes]),
        "share_disclosed": (
            np.full(nodes.shape[0], np.nan) if y_idx is None else _mean_over_trees((flags >> 2) & 1)
        ),
    }
    return out


def _per_record(
    leaves: TreeLeaves, X: Any, y_idx: np.ndarray | None, k: int
) -> dict[str, np.ndarray]:
    """The findings from each record's own count estimate (XGBoost's cover over the
    record's hessian), which no per-node table holds."""
    nodes = leaves.leaves(X)
    counts = np.rint(leaves.leaf_counts(X, nodes))
    return {
        "min_occupancy": counts.min(axis=1),
        "mean_log_occupancy": np.log(np.maximum(counts, 1.0)).mean(axis=1),
        "share_small": (counts < k).mean(axis=1),
        "share_alone": (counts <= 1).mean(axis=1),
        "influence": (1.0 / np.maximum(counts, 1.0)).mean(axis=1),
        "share_disclosed": np.full(counts.shape[0], np.nan),
    }


def structural_findings(
    model: Any,
    X: Any,
    y: Any = None,
    *,
    k: int = 5,
    leaves: TreeLeaves | None = None,
) -> StructureFindings:
    """Per-record leaf occupancy and the model's distribution of it.

    Parameters
    ----------
    model : estimator, Pipeline or TargetModel
        A fitted tree model (:func:`tabmia.structure.read_trees`).
    X : array-like or DataFrame of shape (n, d)
        The records to place, usually the model's training records.
    y : array-like of shape (n,), default=None
        Their labels, for class disclosure (a leaf's class counts); without them, or
        where the file stores no class counts, class disclosure is not measured.
    k : int, default=5
        A leaf of fewer than ``k`` training records is "small".
    leaves : TreeLeaves, default=None
        ``read_trees(model)``, when already read.

    Returns
    -------
    StructureFindings
    """
    from tabmia.target import n_rows, take_rows

    if k < 2:
        raise ValueError(f"k must be >= 2, got {k}")
    leaves = read_trees(model) if leaves is None else leaves
    y_idx = None
    if y is not None and leaves.class_counts is not None:
        classes = np.asarray(model.classes_)
        labels = np.asarray(y)
        y_idx = np.minimum(np.searchsorted(classes, labels), classes.size - 1)
        if np.any(classes[y_idx] != labels):
            raise ValueError("y holds labels the model never saw")
    n = n_rows(X)
    tables = None
    if leaves._record_counts is None:
        tables = _NodeTables(leaves, k, with_classes=y_idx is not None)
    step = max(1, _CHUNK_CELLS // max(leaves.n_trees, 1))
    parts = []
    for start in range(0, n, step):
        rows = np.arange(start, min(n, start + step))
        chunk = X if rows.size == n else take_rows(X, rows)
        y_rows = None if y_idx is None else y_idx[rows]
        if tables is None:
            parts.append(_per_record(leaves, chunk, y_rows, k))
        else:
            parts.append(_per_record_tables(leaves, tables, chunk, y_rows))
    records = pd.DataFrame({key: np.concatenate([p[key] for p in parts]) for key in parts[0]})
    records["alone_in_most"] = records["share_alone"] > 0.5
    disclosed = records["share_disclosed"]
    summary = {
        "family": leaves.family,
        "n_trees": int(leaves.n_trees),
        "n_records": int(n),
        "k": int(k),
        "count_kind": leaves.count_kind,
        "exact": bool(leaves.exact),
        "occupancy_quantiles": {
            f"{int(100 * p)}%": float(np.quantile(records["min_occupancy"], p))
            for p in (0.05, 0.25, 0.5, 0.75)
        },
        "median_occupancy": float(np.exp(np.median(records["mean_log_occupancy"]))),
        "small": float(records["share_small"].mean()),
        "alone": float(records["alone_in_most"].mean()),
        "disclosure": None if disclosed.isna().all() else float((disclosed > 0.5).mean()),
        "influence": float(records["influence"].mean()),
    }
    return StructureFindings(records=records, summary=summary)
