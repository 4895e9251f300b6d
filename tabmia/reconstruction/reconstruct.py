"""``reconstruct_training_set``: a tree model's training set from its own file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tabmia.reconstruction._bins import bin_records, feature_thresholds
from tabmia.reconstruction._forest import ForestStructure, read_forest, split_model
from tabmia.reconstruction._matching import match_records
from tabmia.reconstruction._solver import solve_forest
from tabmia.reconstruction.result import ReconstructionResult

__all__ = ["reconstruct_training_set"]


def reconstruct_training_set(
    model: Any,
    X_train: Any = None,
    y_train: Any = None,
    *,
    one_hot_groups: Sequence[Sequence[int]] = (),
    domains: Mapping[int, Any] | None = None,
    time_limit: float = 60.0,
    work_limit: float | None = None,
    max_variables: int = 2_000_000,
    n_jobs: int = 1,
    random_state: int | None = 0,
) -> ReconstructionResult:
    """Rebuild a tree model's training set from its structure and stored counts.

    A scikit-learn classification tree stores, per node, how many training records
    reached it and, per leaf, how many of each class. For a single tree or a forest
    trained without bootstrap (every tree saw every record once) those counts pin down
    the training set at the resolution of the model's thresholds, up to what no tree
    splits on. The records are found with OR-Tools' CP-SAT solver, after Ferry,
    Fukasawa, Pascal & Vidal, "Trained Random Forests Completely Reveal your Dataset"
    (ICML 2024). A bagged forest (``bootstrap=True``) is tried with each record's
    multiplicity per tree as a further unknown, preferring likely multiplicities (the
    paper's bagging variant); expect fewer records back.

    Parameters
    ----------
    model : estimator
        A fitted ``DecisionTreeClassifier``, ``ExtraTreeClassifier``,
        ``RandomForestClassifier`` or ``ExtraTreesClassifier``, bare or as the last step
        of a :class:`~sklearn.pipeline.Pipeline` (records are then reconstructed as the
        last step sees them, after the steps before it).
    X_train, y_train : array-like, default=None
        The true training set, to measure what was recovered (an auditor holds it; the
        reconstruction itself never reads it). Without them the result holds the
        reconstructed records and no recovery rates.
    one_hot_groups : sequence of sequences of int, default=()
        Column indices (of the last step's input) of one-hot groups: each record has
        exactly one 1 in each. An attacker who knows the encoding adds this; every column
        in a group holds 0 / 1 (its domain is set so).
    domains : mapping of int to array-like, default=None
        Per column index (of the last step's input), the values it can take, where they
        are known without the training set (a binary column: ``[0, 1]``; a schema's
        categories). The records' bins are restricted to those these values fall in:
        without it an extra-trees forest's random thresholds between 0 and 1 leave a
        binary column's middle bins open.
    time_limit : float, default=60.0
        Seconds for building and solving the program together.
    work_limit : float, default=None
        A limit on the solver's search in CP-SAT's deterministic time (its own work
        units, roughly seconds of one quiet core), which, unlike ``time_limit``, gives
        the same outcome on a busy machine; ``time_limit`` still applies. The presolve
        and the building of the program are not counted.
    max_variables : int, default=2_000_000
        Not tried (the result says so) when the program would need more booleans than
        this, a rough count of records times nodes.
    n_jobs : int, default=1
        CP-SAT's workers.
    random_state : int, RandomState instance or None, default=0
        Seeds the solver's search.

    Returns
    -------
    ReconstructionResult

    Raises
    ------
    ValueError
        For a model other than those above, or one trained with sample or class weights
        (its file stores weights, not counts); for ``X_train`` / ``y_train`` that do not
        fit the model, or an invalid one-hot group.
    ImportError
        Without OR-Tools (``pip install 'tabmia[reconstruct]'``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randint(0, 2, size=(20, 4)); y = X[:, 0] ^ X[:, 1]
    >>> forest = RandomForestClassifier(5, bootstrap=False, random_state=0).fit(X, y)
    >>> result = reconstruct_training_set(forest, X, y, time_limit=30)
    >>> result.n_exact, result.n_true
    (20, 20)
    """
    from sklearn.utils import check_random_state

    forest = read_forest(model)
    n_features = forest.n_features
    groups = tuple(tuple(int(f) for f in g) for g in one_hot_groups)
    if any(not 0 <= f < n_features for g in groups for f in g):
        raise ValueError(f"one_hot_groups: a column index outside 0..{n_features - 1}")
    grouped = tuple(f for g in groups for f in g)
    thresholds = feature_thresholds(forest, grouped)
    for f in grouped:
        if thresholds[f].min() <= 0 or thresholds[f].max() >= 1:
            raise ValueError(f"one_hot_groups: the model splits column {f} as if not 0 / 1")
    allowed = _allowed_bins(
        {**dict(domains or {}), **{f: [0, 1] for f in grouped}}, thresholds, n_features
    )
    names = _feature_names(model, n_features)
    n_bool = forest.n_records * sum(len(t.left) for t in forest.trees)
    base: dict[str, Any] = {
        "model": forest.kind,
        "n_trees": len(forest.trees),
        "n_records": forest.n_records,
        "bootstrap": forest.bootstrap,
        "time_limit": float(time_limit),
        "feature_names": names,
        "thresholds": thresholds,
    }
    if n_bool > max_variables:
        return ReconstructionResult(
            **base,
            tried=False,
            reason=(
                f"{forest.n_records} records x {n_bool // forest.n_records} nodes make "
                f"about {n_bool:,} unknowns, above max_variables={max_variables:,}; "
                "reconstruction is measured at the scale of hundreds of records"
            ),
            status="NOT_TRIED",
            seconds=0.0,
            n_variables=0,
        )
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    solution = solve_forest(
        forest,
        thresholds,
        one_hot_groups=groups,
        allowed_bins=allowed,
        time_limit=time_limit,
        work_limit=work_limit,
        n_jobs=n_jobs,
        random_state=seed,
    )
    found: dict[str, Any] = {
        "tried": True,
        "reason": None,
        "status": solution.status,
        "seconds": solution.seconds,
        "n_variables": solution.n_variables,
    }
    if solution.bins is None or solution.labels is None:
        return ReconstructionResult(**base, **found)
    labels = forest.classes[solution.labels]
    if X_train is None:
        return ReconstructionResult(**base, **found, bins=solution.bins, labels=labels)
    true_bins, true_labels = _true_records(model, forest, thresholds, X_train, y_train)
    informative = np.array([t.size > 0 for t in thresholds])
    recovery = match_records(true_bins, true_labels, solution.bins, solution.labels, informative)
    return ReconstructionResult(
        **base,
        **found,
        bins=solution.bins,
        labels=labels,
        n_true=len(true_bins),
        exact=recovery.exact,
        partner=recovery.partner,
        feature_accuracy=_by_name(names, recovery.feature_accuracy),
        baseline_feature_accuracy=_by_name(names, recovery.baseline_feature_accuracy),
        label_accuracy=recovery.label_accuracy,
    )


def _allowed_bins(
    domains: Mapping[int, Any], thresholds: list[np.ndarray], n_features: int
) -> dict[int, np.ndarray]:
    """Per column of ``domains``, the bins its known values fall in."""
    allowed = {}
    for f, values in domains.items():
        if not 0 <= int(f) < n_features:
            raise ValueError(f"domains: a column index outside 0..{n_features - 1}: {f}")
        values = np.asarray(values, dtype=float).ravel()
        if not values.size:
            raise ValueError(f"domains: column {f} has no values")
        column = np.zeros((values.size, n_features))
        column[:, int(f)] = values
        allowed[int(f)] = np.unique(bin_records(column, thresholds)[:, int(f)])
    return allowed


def _feature_names(model: Any, n_features: int) -> list[str]:
    """The last step's input names: its ``feature_names_in_``, the steps' output names,
    else ``x0, x1, ...``."""
    before, last = split_model(model)
    names = getattr(last, "feature_names_in_", None)
    if names is None and before is not None:
        try:
            names = before.get_feature_names_out()
        except (AttributeError, ValueError):
            names = None
    if names is None or len(names) != n_features:
        return [f"x{f}" for f in range(n_features)]
    return [str(n) for n in names]


def _true_records(
    model: Any, forest: ForestStructure, thresholds: list[np.ndarray], X: Any, y: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The true training set as bins (after the Pipeline's steps) and class indices."""
    if y is None:
        raise ValueError("X_train was given without y_train: both are needed to measure")
    before, _ = split_model(model)
    X_seen = before.transform(X) if before is not None else X
    X_seen = np.asarray(X_seen.toarray() if hasattr(X_seen, "toarray") else X_seen, dtype=float)
    y = np.asarray(y).ravel()
    if X_seen.ndim != 2 or X_seen.shape[1] != forest.n_features:
        raise ValueError(
            f"X_train has {X_seen.shape[-1]} features as the model sees them; the model "
            f"takes {forest.n_features}"
        )
    if len(y) != len(X_seen):
        raise ValueError(f"X_train has {len(X_seen)} records and y_train {len(y)} labels")
    unknown = ~np.isin(y, forest.classes)
    if unknown.any():
        raise ValueError(f"y_train holds labels the model never saw: {np.unique(y[unknown])[:5]}")
    return bin_records(X_seen, thresholds), np.searchsorted(forest.classes, y)


def _by_name(names: list[str], values: np.ndarray) -> dict[str, float]:
    return {n: float(v) for n, v in zip(names, values) if not np.isnan(v)}
