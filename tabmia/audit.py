"""Audit a model that is already trained: the user's own model and data.

The auditor has the fitted model, its training records (the members) and records from
the same population it did not train on. Part of the population becomes the
attacker's public data, the rest the non-member candidates; every attack is fitted on
the public part and scores the training records and the non-member candidates.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from tabmia._records import shared_mask
from tabmia.exceptions import DuplicateRecordsWarning, PlausibilityWarning
from tabmia.experiment import ExperimentResult, MembershipRound, MembershipSplit
from tabmia.metrics import check_audit_size
from tabmia.plausibility import check_attack_scores, check_inputs
from tabmia.target import as_target, concat_rows, n_rows, take_rows

__all__ = ["audit_model"]


def audit_model(
    target: Any,
    X_train: Any,
    y_train: Any,
    X_population: Any,
    y_population: Any,
    attacks: dict[str, Any],
    *,
    public_fraction: float = 0.5,
    max_members: int | None = None,
    fprs: tuple[float, ...] = (0.01, 0.001),
    gammas: tuple[float, ...] = (1.0, 10.0, 100.0),
    random_state: Any = 0,
    verbose: bool = False,
    fpr_fallback: bool = False,
    check_plausibility: bool = True,
    keep_attacks: bool = True,
) -> ExperimentResult:
    """Run attacks against a fitted model on its own training records.

    Parameters
    ----------
    target : object
        The fitted model (anything :class:`tabmia.target.TargetModel` accepts).
    X_train, y_train : records and labels the model was trained on (members).
    X_population, y_population : records from the same population it did not train on.
    attacks : dict of str -> attack
        Unfitted attacks; each gets ``target`` set.
    public_fraction : float, default=0.5
        Share of the population records given to the attacker as public data; the
        rest are non-member candidates.
    max_members : int, default=None
        Score at most this many training records (a seeded sample).
    fprs, gammas : tuples
        Reporting levels (see :func:`tabmia.metrics.attack_metrics`).
    random_state : int, RandomState instance or None, default=0
        Seeds the population split and the attacks.
    fpr_fallback : bool, default=False
        An attack whose calibration records cannot promise its ``fpr`` aims at the
        smallest FPR they can promise instead of raising (see
        :func:`tabmia.experiment.run_attacks`).
    check_plausibility : bool, default=True
        Run :func:`tabmia.plausibility.check_inputs` on the records first (one query of
        the model on each) and warn of what it finds; False where the caller has just
        run it (``tabmia audit`` does, to report a model that fails on the records).
    keep_attacks : bool, default=True
        Keep the fitted attacks in the result's ``attacks``. False lets each go once it
        has scored the candidates, as ``tabmia audit`` does: a shadow attack holds state
        per public record (LiRA: every shadow's score on each and their moments), which
        the attacks after it would train beside.

    The game is one :class:`~tabmia.experiment.MembershipRound`, played as every
    runner plays its seeds. Shadow and reference models are trained on as many records as the model was (the
    size of ``X_train``), as far as the public records allow (see
    :func:`tabmia.experiment.run_attacks`).

    Raises
    ------
    tabmia.metrics.AuditTooSmallError
        With fewer than :data:`tabmia.metrics.MIN_AUDIT_RECORDS` members or non-member
        candidates.

    Warns
    -----
    DuplicateRecordsWarning
        When training records (features and label) also appear in the population.
    PlausibilityWarning
        When the inputs or results look like no honest audit's: the model fits its
        training records worse than the population's, the label distributions differ
        beyond chance, the outputs are one-hot, or an attack's AUC is below 0.5 beyond
        chance (:mod:`tabmia.plausibility`).

    Returns
    -------
    ExperimentResult
        One repeat; ``findings`` holds every plausibility finding, which makes the
        verdict and the gate "cannot tell" where the inputs contradict themselves
        (:mod:`tabmia.report.state`); ``target_accuracy`` has the model's accuracy on the training
        records and on all population records. In ``scores``, ``record`` is the row
        position in the training file for members and in the population file for
        non-members; ``source`` says which.
    """
    if not isinstance(attacks, dict) or not attacks:
        raise ValueError("attacks must be a non-empty dict of name -> attack")
    if not 0.0 < public_fraction < 1.0:
        raise ValueError(f"public_fraction must be in (0, 1), got {public_fraction}")
    y_train, y_population = np.asarray(y_train), np.asarray(y_population)
    for name, n, y in (
        ("training", n_rows(X_train), y_train),
        ("population", n_rows(X_population), y_population),
    ):  # counts, not the records: a loop variable would hold them past the split
        if n != y.shape[0]:
            raise ValueError(f"the {name} data has {n} records but {y.shape[0]} labels")
    if isinstance(X_train, pd.DataFrame) and isinstance(X_population, pd.DataFrame):
        missing = [c for c in X_train.columns if c not in X_population.columns]
        if missing:
            raise ValueError(f"the population data lacks training columns {missing[:10]}")
        X_population = X_population[list(X_train.columns)]
    shared = shared_mask(X_train, y_train, X_population, y_population)
    if shared.any():
        warnings.warn(
            f"{int(shared.sum())} of {shared.size} training records also appear in the "
            "population data (same features and label): a record cannot be both a member "
            "and a non-member, so the results understate what an attacker learns. Remove "
            "them from the population data",
            DuplicateRecordsWarning,
            stacklevel=2,
        )
    rng = check_random_state(random_state)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    n_pop = n_rows(X_population)
    perm = rng.permutation(n_pop)
    n_public = int(round(public_fraction * n_pop))
    if n_public < 1 or n_public >= n_pop:
        raise ValueError(f"{n_pop} population records cannot be split into public and candidates")
    public, nonmembers = np.sort(perm[:n_public]), np.sort(perm[n_public:])
    members = np.arange(n_rows(X_train))
    if max_members is not None and members.size > max_members:
        members = np.sort(rng.choice(members, max_members, replace=False))
    check_audit_size(members.size, nonmembers.size)
    # -- plausibility of the inputs, before any attack (tabmia.plausibility) ---------
    # an int seed gives the label test's Monte Carlo tables the same draws as a CLI
    # pre-check with that seed, so both report one message
    check_seed = random_state if isinstance(random_state, (int, np.integer)) else 0
    findings = (
        check_inputs(target, X_train, y_train, X_population, y_population, random_state=check_seed)
        if check_plausibility
        else []
    )
    for finding in findings:
        warnings.warn(str(finding), PlausibilityWarning, stacklevel=2)
    # ----------------------------------------------------------------------------------
    # the model's accuracy now, not after the attacks: neither the population's records
    # nor the training records are needed past the split, and a caller that hands them
    # over frees them here (the candidates hold a copy of those they score)
    accuracy = pd.DataFrame(
        [
            {
                "repeat": 0,
                "train_accuracy": _accuracy(target, X_train, y_train),
                "test_accuracy": _accuracy(target, X_population, y_population),
            }
        ]
    )
    member = np.r_[np.ones(members.size, bool), np.zeros(nonmembers.size, bool)]
    game = MembershipRound(
        seed=seed,
        X_public=take_rows(X_population, public),
        y_public=y_population[public],
        X_candidates=concat_rows(
            [
                # every training record, in order: no copy of them before the one concat makes
                X_train if members.size == n_rows(X_train) else take_rows(X_train, members),
                take_rows(X_population, nonmembers),
            ]
        ),
        y_candidates=np.r_[y_train[members], y_population[nonmembers]],
        member=member,
        columns={
            "record": np.r_[members, nonmembers],
            # a category, not ten million strings copied into every attack's frame
            "source": pd.Categorical.from_codes(
                (~member).astype(np.int8), categories=["train", "population"]
            ),
        },
        train_size=n_rows(X_train),
        target=target,
    )
    del X_train, X_population  # the round holds its public records and candidates
    frames, rows, fitted = game.play(
        attacks,
        fprs=fprs,
        gammas=gammas,
        verbose=verbose,
        fpr_fallback=fpr_fallback,
        keep_attacks=keep_attacks,
    )
    del game  # its candidates and public records, before the frames are joined
    # -- plausibility of the results: an AUC below chance (tabmia.plausibility) -------
    scores = pd.concat(frames, ignore_index=True)
    del frames
    after = check_attack_scores(scores)
    for finding in after:
        warnings.warn(str(finding), PlausibilityWarning, stacklevel=2)
    # ----------------------------------------------------------------------------------
    split = MembershipSplit(train=members, members=members, nonmembers=nonmembers, public=public)
    return ExperimentResult(
        scores=scores,
        metrics=pd.DataFrame(rows),
        targets=[target],
        splits=[split],
        target_accuracy=accuracy,
        attacks=fitted,
        findings=tuple(findings) + tuple(after),
    )


def _accuracy(target: Any, X: Any, y: np.ndarray) -> float:
    """Accuracy of the arg-max class; NaN where the model's classes do not cover ``y``."""
    model = as_target(target)
    predicted = model.predict(X)
    try:
        return float(np.mean(predicted == y))
    except (TypeError, ValueError):
        return float("nan")
