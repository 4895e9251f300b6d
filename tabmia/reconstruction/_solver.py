"""The training set as a constraint program (OR-Tools CP-SAT), after Ferry et al. (2024).

Unknowns: ``n`` records, each a bin per feature (a thermometer of booleans, one per
threshold: "the value exceeds it") and a class. For every tree each record follows one
path from the root (a boolean per node: it reaches the node), and every node holds as
many records, and every leaf as many of each class, as the file stores. Without bagging
every tree saw every record once. With bagging each tree saw each record a number of
times (0 when out of its bag): a leaf's class counts weigh records by that multiplicity,
its record count counts the distinct in-bag ones, and the objective prefers likely
multiplicities (each Poisson with mean ``draws / n``), the paper's bagging variant.
Records are interchangeable: without bagging record 0 onwards fill the first tree's
leaves in order, and within a leaf (with bagging: overall) they are kept in
lexicographic order.

The model is built constraint by constraint (CP-SAT's Python API has no array form).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from tabmia.reconstruction._forest import ForestStructure, TreeNodes

__all__ = ["Solution", "solve_forest"]

#: CP-SAT objective coefficients are integers: log-probabilities times this.
_LOG_SCALE = 1000


@dataclass(frozen=True)
class Solution:
    """What the solver returned: the records' bins and class indices (None without a
    solution), its status name and the seconds spent building and solving."""

    bins: np.ndarray | None
    labels: np.ndarray | None
    status: str
    seconds: float
    n_variables: int


def _import_cp_model() -> Any:
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:
        raise ImportError(
            "reconstructing a training set needs OR-Tools' CP-SAT solver: "
            "pip install 'tabmia[reconstruct]' (or pip install ortools)"
        ) from exc
    return cp_model


class _Program:
    """The CP-SAT model of one forest's training set."""

    def __init__(self, cp_model: Any, forest: ForestStructure, thresholds: list[np.ndarray]):
        self.cp = cp_model
        self.model = cp_model.CpModel()
        self.forest = forest
        self.thresholds = thresholds
        self.objective: list[Any] = []  # terms to minimise (the bagging variant's)
        n, m = forest.n_records, len(forest.classes)
        new = self.model.new_bool_var
        # above[k][f][j]: record k's value of feature f exceeds the feature's j-th threshold
        self.above = [
            [[new(f"x{k}_{f}>{j}") for j in range(len(t))] for f, t in enumerate(thresholds)]
            for k in range(n)
        ]
        self.label = [[new(f"y{k}={c}") for c in range(m)] for k in range(n)]
        # what the first tree fixes (without bagging): bits by (feature, threshold), labels
        self.known: list[dict[tuple[int, int], int]] = [{} for _ in range(n)]
        self.known_label = [-1] * n
        for k in range(n):
            self.model.add_exactly_one(self.label[k])
            for bits in self.above[k]:
                for lower, higher in itertools.pairwise(bits):
                    self.model.add_implication(higher, lower)  # thresholds ascend
        root = forest.trees[0].class_counts[0] if not forest.bootstrap else None
        if root is not None:  # without bagging the root holds every record once
            for c in range(m):
                self.model.add(sum(self.label[k][c] for k in range(n)) == int(root[c]))

    def route(self, tree: TreeNodes) -> dict[int, list[Any]]:
        """``node -> [reaches(record k) or None for k]``, each record on exactly one path.

        None where the record cannot reach the node: a bit or the label fixed by the first
        tree (:meth:`place_in_first_tree`) rules it out, which keeps the program small."""
        n = self.forest.n_records
        one = self.model.new_constant(1)
        reach: dict[int, list[Any]] = {0: [one] * n}
        for node in range(len(tree.left)):  # parents come before their children
            left, right = int(tree.left[node]), int(tree.right[node])
            if left < 0:
                continue
            f = int(tree.feature[node])
            j = int(np.searchsorted(self.thresholds[f], tree.threshold[node]))
            for child, side in ((left, 0), (right, 1)):
                reach[child] = [
                    self.model.new_bool_var("")
                    if reach[node][k] is not None and self._may(k, f, j, side, tree, child)
                    else None
                    for k in range(n)
                ]
            for k in range(n):
                if reach[node][k] is None:
                    continue
                lr = [x for x in (reach[left][k], reach[right][k]) if x is not None]
                self.model.add(sum(lr) == reach[node][k])
                above = self.above[k][f][j]
                if reach[left][k] is not None:
                    self.model.add_implication(reach[left][k], above.Not())
                if reach[right][k] is not None:
                    self.model.add_implication(reach[right][k], above)
        return reach

    def _may(self, k: int, f: int, j: int, side: int, tree: TreeNodes, child: int) -> bool:
        """Whether record k may take ``side`` at a split on (f, j) into ``child``."""
        if self.known[k].get((f, j), side) != side:
            return False
        label = self.known_label[k]
        return tree.left[child] >= 0 or label < 0 or tree.class_counts[child][label] > 0

    def _fix(self, k: int, f: int, j: int, value: int) -> None:
        """Record k's value of feature f is above its j-th threshold (1) or not (0)."""
        bits = range(j + 1) if value else range(j, len(self.thresholds[f]))
        for i in bits:  # the thermometer: above threshold j means above every lower one
            self.known[k][(f, i)] = value
        self.model.add(self.above[k][f][j] == value)

    def place_in_first_tree(self, tree: TreeNodes) -> list[range]:
        """Without bagging, records in consecutive blocks, one per leaf of the first tree
        (any training set can be so ordered): that tree's paths and pure leaves then fix
        bits and labels, and the tree needs no routing variables."""
        paths: dict[int, list[tuple[int, int, int]]] = {0: []}
        for node in range(len(tree.left)):
            if tree.left[node] >= 0:
                f = int(tree.feature[node])
                j = int(np.searchsorted(self.thresholds[f], tree.threshold[node]))
                paths[int(tree.left[node])] = [*paths[node], (f, j, 0)]
                paths[int(tree.right[node])] = [*paths[node], (f, j, 1)]
        blocks, start = [], 0
        for leaf in tree.leaves:
            block = range(start, start + int(tree.n_records[leaf]))
            counts = tree.class_counts[leaf]
            for k in block:
                for f, j, side in paths[int(leaf)]:
                    self._fix(k, f, j, side)
            for c, count in enumerate(counts):
                self.model.add(sum(self.label[k][c] for k in block) == int(count))
                if count == counts.sum():
                    for k in block:
                        self.known_label[k] = c
            blocks.append(block)
            start = block.stop
        return blocks

    def _both(self, a: Any, b: Any) -> Any:
        """A boolean equal to ``a and b``."""
        both = self.model.new_bool_var("")
        self.model.add_implication(both, a)
        self.model.add_implication(both, b)
        self.model.add_bool_or([a.Not(), b.Not(), both])
        return both

    def exact_counts(self, tree: TreeNodes, reach: dict[int, list[Any]]) -> None:
        """Without bagging: every node's record count, every leaf's class counts."""
        for node, reaches in reach.items():
            self.model.add(sum(r for r in reaches if r is not None) == int(tree.n_records[node]))
        for leaf in tree.leaves:
            counts = tree.class_counts[leaf]
            present = [(k, r) for k, r in enumerate(reach[leaf]) if r is not None]
            for c, count in enumerate(counts):
                if count == 0 or count == counts.sum():  # a pure leaf fixes the class
                    for k, r in present:
                        lit = self.label[k][c] if count else self.label[k][c].Not()
                        self.model.add_implication(r, lit)
                else:
                    both = [self._both(r, self.label[k][c]) for k, r in present]
                    self.model.add(sum(both) == int(count))

    def bagged_counts(self, tree: TreeNodes, reach: dict[int, list[Any]]) -> None:
        """With bagging: per leaf and record, whether it is in the bag there and its
        multiplicity per class (linear links only: they propagate better than products);
        every leaf's distinct in-bag records and its classes weighed by multiplicity."""
        n, model = self.forest.n_records, self.model
        top = int(tree.class_counts[tree.leaves].sum(axis=1).max())  # a record lands once
        draws = int(tree.class_counts[0].sum())
        times: list[list[Any]] = [[] for _ in range(n)]
        for leaf in tree.leaves:
            counts = tree.class_counts[leaf]
            here = [model.new_bool_var("") for _ in range(n)]  # in the bag, in this leaf
            model.add(sum(here) == int(tree.n_records[leaf]))
            weights = {
                c: [model.new_int_var(0, top, "") for _ in range(n)] for c in np.flatnonzero(counts)
            }
            for c, w in weights.items():
                model.add(sum(w) == int(counts[c]))
            for k in range(n):
                model.add_implication(here[k], reach[leaf][k])
                total = sum(w[k] for w in weights.values())
                model.add(total >= here[k])
                model.add(total <= top * here[k])
                for c, w in weights.items():
                    model.add(w[k] <= top * self.label[k][c])
                times[k].append(total)
        multiplicity = [model.new_int_var(0, top, "") for _ in range(n)]
        for k in range(n):
            model.add(multiplicity[k] == sum(times[k]))
        model.add(sum(multiplicity) == draws)
        self._likely_multiplicities(multiplicity, top, draws / n)

    def _likely_multiplicities(self, times: list[Any], top: int, rate: float) -> None:
        """Add ``-log P(q)`` of each multiplicity (Poisson(rate)) to the objective."""
        cost = [
            round(_LOG_SCALE * (math.lgamma(q + 1) - q * math.log(rate))) for q in range(top + 1)
        ]
        cost = [c - min(cost) for c in cost]
        for q in times:
            term = self.model.new_int_var(0, max(cost), "")
            self.model.add_element(q, cost, term)
            self.objective.append(term)

    def restrict_bins(self, feature: int, allowed: np.ndarray) -> None:
        """Forbid every bin of ``feature`` outside ``allowed``."""
        n_bins = len(self.thresholds[feature]) + 1
        for b in sorted(set(range(n_bins)) - {int(a) for a in allowed}):
            for bits in (record[feature] for record in self.above):
                # bin b: above threshold b - 1 and not above threshold b
                clause = ([bits[b - 1].Not()] if b > 0 else []) + (
                    [bits[b]] if b < n_bins - 1 else []
                )
                self.model.add_bool_or(clause)

    def lexicographic_records(self, blocks: list[range]) -> None:
        """Within each block, record k's booleans (class, then bins) lexicographically
        <= record k+1's."""
        vectors = [
            [*self.label[k], *(b for bits in self.above[k] for b in bits)]
            for k in range(self.forest.n_records)
        ]
        pairs = [(vectors[k], vectors[k + 1]) for block in blocks for k in block[:-1]]
        for a, b in pairs:
            equal_so_far = self.model.new_constant(1)
            for i, (x, y) in enumerate(zip(a, b)):
                self.model.add_bool_or([equal_so_far.Not(), x.Not(), y])  # x <= y
                if i == len(a) - 1:
                    break
                still = self.model.new_bool_var("")
                self.model.add_bool_or([equal_so_far.Not(), x.Not(), still])
                self.model.add_bool_or([equal_so_far.Not(), y, still])
                equal_so_far = still


def solve_forest(
    forest: ForestStructure,
    thresholds: list[np.ndarray],
    *,
    one_hot_groups: tuple[tuple[int, ...], ...] = (),
    allowed_bins: dict[int, np.ndarray] | None = None,
    time_limit: float = 60.0,
    work_limit: float | None = None,
    n_jobs: int = 1,
    random_state: int = 0,
) -> Solution:
    """Build and solve the program; records as bins per feature and class indices.

    ``one_hot_groups``: features (0 / 1, split below 1) of which each record has exactly one
    above its thresholds; ``allowed_bins``: per feature, the only bins its values can fall in;
    ``work_limit``: CP-SAT's deterministic time limit for the search.
    """
    cp_model = _import_cp_model()
    start = time.perf_counter()
    program = _Program(cp_model, forest, thresholds)
    for group in one_hot_groups:
        for k in range(forest.n_records):
            program.model.add_exactly_one([program.above[k][f][0] for f in group])
    for f, allowed in (allowed_bins or {}).items():
        program.restrict_bins(f, allowed)
    blocks = [range(forest.n_records)]
    if not forest.bootstrap:
        blocks = program.place_in_first_tree(forest.trees[0])
    for t, tree in enumerate(forest.trees):
        if forest.bootstrap:
            program.bagged_counts(tree, program.route(tree))
        elif t > 0:
            program.exact_counts(tree, program.route(tree))
    program.lexicographic_records(blocks)
    if program.objective:
        program.model.minimize(sum(program.objective))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.0, time_limit - (time.perf_counter() - start))
    if work_limit is not None:
        solver.parameters.max_deterministic_time = work_limit
    solver.parameters.num_workers = n_jobs
    solver.parameters.random_seed = random_state
    status = solver.solve(program.model)
    name = solver.status_name(status)
    n_variables = len(program.model.proto.variables)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Solution(None, None, name, time.perf_counter() - start, n_variables)
    bins = np.array(
        [
            [sum(solver.boolean_value(b) for b in bits) for bits in record]
            for record in program.above
        ],
        dtype=np.int64,
    ).reshape(forest.n_records, forest.n_features)
    labels = np.array(
        [[solver.boolean_value(c) for c in record].index(True) for record in program.label]
    )
    return Solution(bins, labels, name, time.perf_counter() - start, n_variables)
