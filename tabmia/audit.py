"""Audit a model that is already trained: the user's own model and data.

The auditor has the fitted model, its training records (the members) and records from
the same population it did not train on. Part of the population becomes the
attacker's public data, the rest the non-member candidates; every attack is fitted on
the public part and scores the training records and the non-member candidates.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from tabmia._groups import check_groups, person_codes
from tabmia._records import shared_mask
from tabmia.exceptions import DuplicateRecordsWarning, PlausibilityWarning, RunNote
from tabmia.experiment import ExperimentResult, MembershipRound
from tabmia.metrics import check_audit_size
from tabmia.plausibility import check_attack_scores, check_inputs, check_persons
from tabmia.settings import RunSettings
from tabmia.slices import slice_labels
from tabmia.splits import MembershipSplit, record_meta, slice_frame
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
    groups_train: Any = None,
    groups_population: Any = None,
    slices: Any = None,
    settings: RunSettings | None = None,
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

    groups_train, groups_population : array-like, default=None
        Person id of each training / population record (both or neither; scikit-learn's
        ``groups``). The population is then split into public records and non-member
        candidates person by person, ``max_members`` samples persons, the attacks keep
        persons whole (:meth:`BaseMembershipAttack.fit
        <tabmia.attacks.base.BaseMembershipAttack.fit>`), ``scores`` gets a ``person``
        column and the result a ``calibration`` frame, from which
        :func:`tabmia.persons.person_result` audits persons. Persons with records on
        both sides are a finding (``shared_persons``) that makes the audit "cannot tell".
    slices : str, list of (str or tuple of str), or (array-like, array-like), default=None
        Group labels for :mod:`tabmia.slices` (fairlearn's ``sensitive_features``):
        column names of ``X_train`` and ``X_population`` (DataFrames), each a slicing
        (a tuple of names: their intersection), labelled by
        :func:`tabmia.slices.slice_labels` over both (numeric columns cut into named
        bands, rare values merged into "other": a :class:`~tabmia.exceptions.RunNote`
        says so); or the labels of the training and of the population records. Carried
        as ``slice:<name>`` columns of ``scores`` and ``calibration``; the model never
        sees them beyond its own columns. :func:`tabmia.slices.slice_report` reads them.
    settings : RunSettings, default=None
        The run's settings in one object (:class:`tabmia.settings.RunSettings`), in place
        of ``fprs``, ``gammas``, ``random_state``, ``verbose``, ``fpr_fallback`` and
        ``keep_attacks`` (which must then keep their defaults); it also gives the attacks
        that take them their ``n_jobs``, ``device`` and ``max_memory``. A runner builds it
        once and hands it to each audit it makes.

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
    settings = _run_settings(
        settings,
        fprs=fprs,
        gammas=gammas,
        random_state=random_state,
        verbose=verbose,
        fpr_fallback=fpr_fallback,
        keep_attacks=keep_attacks,
    )
    y_train, y_population, X_population = _checked_records(
        attacks, public_fraction, X_train, y_train, X_population, y_population
    )
    persons = _checked_persons(
        groups_train, groups_population, n_rows(X_train), n_rows(X_population)
    )
    meta_train, meta_pop, slice_notes = _slice_frames(slices, X_train, X_population)
    for note in slice_notes:
        warnings.warn(f"slices: {note}", RunNote, stacklevel=2)
    _warn_shared(X_train, y_train, X_population, y_population)
    rng = check_random_state(settings.random_state)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    members, nonmembers, public = _drawn_split(
        rng, persons, n_rows(X_train), n_rows(X_population), public_fraction, max_members
    )
    check_audit_size(members.size, nonmembers.size)
    findings = _input_findings(
        target,
        (X_train, y_train, X_population, y_population),
        persons,
        settings,
        check_plausibility,
    )
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
    game = _round(
        target,
        seed,
        (X_train, y_train, X_population, y_population),
        (members, nonmembers, public),
        persons,
        (meta_train, meta_pop),
    )
    del X_train, X_population  # the round holds its public records and candidates
    frames, rows, fitted = game.play(attacks, settings=settings)
    kept = game.calibration
    del game  # its candidates and public records, before the frames are joined
    # -- plausibility of the results: an AUC below chance (tabmia.plausibility) -------
    scores = pd.concat(frames, ignore_index=True)
    del frames
    after = check_attack_scores(scores)
    for finding in after:
        warnings.warn(str(finding), PlausibilityWarning, stacklevel=2)
    # ----------------------------------------------------------------------------------
    split = MembershipSplit(train=members, members=members, nonmembers=nonmembers, public=public)
    calibration = pd.concat(kept, ignore_index=True) if kept else None
    return ExperimentResult(
        scores=scores,
        metrics=pd.DataFrame(rows),
        targets=[target],
        splits=[split],
        target_accuracy=accuracy,
        attacks=fitted,
        findings=tuple(findings) + tuple(after),
        calibration=calibration,
    )


def _run_settings(settings: RunSettings | None, **keywords: Any) -> RunSettings:
    """``settings``, or the settings of ``keywords`` (``audit_model``'s); settings beside a
    keyword changed from its default are refused, so that no value is silently dropped."""
    if settings is None:
        return RunSettings(**keywords)
    defaults = inspect.signature(audit_model).parameters
    given = [k for k, v in keywords.items() if not _is_default(v, defaults[k].default)]
    if given:
        raise ValueError(
            f"give {', '.join(given)} in settings (a RunSettings) or as keywords, not both"
        )
    return settings


def _is_default(value: Any, default: Any) -> bool:
    """``value`` is ``default`` or equal to it and of its type (an array never is)."""
    return value is default or (type(value) is type(default) and value == default)


def _checked_records(
    attacks: Any,
    public_fraction: float,
    X_train: Any,
    y_train: Any,
    X_population: Any,
    y_population: Any,
) -> tuple[np.ndarray, np.ndarray, Any]:
    """The labels as arrays and the population's columns in the training records' order,
    after the checks of what ``audit_model`` was given."""
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
    return y_train, y_population, X_population


def _warn_shared(X_train: Any, y_train: Any, X_population: Any, y_population: Any) -> None:
    """Warn where training records (features and label) are also population records."""
    shared = shared_mask(X_train, y_train, X_population, y_population)
    if shared.any():
        warnings.warn(
            f"{int(shared.sum())} of {shared.size} training records also appear in the "
            "population data (same features and label): a record cannot be both a member "
            "and a non-member, so the results understate what an attacker learns. Remove "
            "them from the population data",
            DuplicateRecordsWarning,
            stacklevel=3,
        )


def _drawn_split(
    rng: np.random.RandomState,
    persons: tuple[np.ndarray, np.ndarray] | None,
    n_train: int,
    n_population: int,
    public_fraction: float,
    max_members: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(members, non-member candidates, public records), drawn from ``rng``."""
    # population and members are drawn person by person (each record its own person
    # without groups: the same draws as before groups existed)
    pop_codes = person_codes(persons[1]) if persons else np.arange(n_population)
    train_codes = person_codes(persons[0]) if persons else np.arange(n_train)
    n_pop = int(pop_codes.max()) + 1 if pop_codes.size else 0
    perm = rng.permutation(n_pop)
    n_public = int(round(public_fraction * n_pop))
    if n_public < 1 or n_public >= n_pop:
        what = "persons" if persons else "records"
        raise ValueError(f"{n_pop} population {what} cannot be split into public and candidates")
    public = np.flatnonzero(np.isin(pop_codes, perm[:n_public]))
    nonmembers = np.flatnonzero(np.isin(pop_codes, perm[n_public:]))
    members = np.arange(n_train)
    n_train_persons = int(train_codes.max()) + 1 if train_codes.size else 0
    if max_members is not None and n_train_persons > max_members:
        kept = rng.choice(n_train_persons, max_members, replace=False)
        members = np.flatnonzero(np.isin(train_codes, kept))
    return members, nonmembers, public


def _input_findings(
    target: Any,
    data: tuple[Any, Any, Any, Any],
    persons: tuple[np.ndarray, np.ndarray] | None,
    settings: RunSettings,
    check_plausibility: bool,
) -> list:
    """The plausibility findings of the inputs, before any attack, each warned of
    (:mod:`tabmia.plausibility`)."""
    # an int seed gives the label test's Monte Carlo tables the same draws as a CLI
    # pre-check with that seed, so both report one message
    random_state = settings.random_state
    check_seed = random_state if isinstance(random_state, (int, np.integer)) else 0
    findings = check_inputs(target, *data, random_state=check_seed) if check_plausibility else []
    if persons:
        findings = [*findings, *check_persons(*persons)]
    for finding in findings:
        warnings.warn(str(finding), PlausibilityWarning, stacklevel=3)
    return findings


def _round(
    target: Any,
    seed: int,
    data: tuple[Any, np.ndarray, Any, np.ndarray],
    split: tuple[np.ndarray, np.ndarray, np.ndarray],
    persons: tuple[np.ndarray, np.ndarray] | None,
    meta: tuple[pd.DataFrame | None, pd.DataFrame | None],
) -> MembershipRound:
    """The audit's one round: the training records ``members`` and the population's
    ``nonmembers`` as candidates, the population's ``public`` records as public data."""
    X_train, y_train, X_population, y_population = data
    members, nonmembers, public = split
    member = np.r_[np.ones(members.size, bool), np.zeros(nonmembers.size, bool)]
    return MembershipRound(
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
            **_stacked_meta(members, nonmembers, persons, *meta),
        },
        train_size=n_rows(X_train),
        target=target,
        public_columns={
            "record": public,
            **record_meta(public, persons[1] if persons else None, meta[1]),
        },
    )


def _checked_persons(
    groups_train: Any, groups_population: Any, n_train: int, n_population: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Both person-id arrays, checked, or None; one without the other is refused."""
    if groups_train is None and groups_population is None:
        return None
    if groups_train is None or groups_population is None:
        raise ValueError(
            "give both groups_train and groups_population (the person ids of the training "
            "and of the population records), or neither"
        )
    return (
        check_groups(groups_train, n_train, name="groups_train"),
        check_groups(groups_population, n_population, name="groups_population"),
    )


def _slice_frames(
    slices: Any, X_train: Any, X_population: Any
) -> tuple[pd.DataFrame | None, pd.DataFrame | None, tuple[str, ...]]:
    """The training and population records' group labels (``slices`` of audit_model),
    one column per slicing, and the notes on what was banded or merged.

    Columns of both frames are labelled together (:func:`tabmia.slices.slice_labels`:
    numeric columns cut into named bands, rare values and combinations merged into
    "other"), so that a band means the same on both sides."""
    if slices is None:
        return None, None, ()
    n_train, n_pop = n_rows(X_train), n_rows(X_population)
    if (
        isinstance(slices, tuple)
        and len(slices) == 2
        and not any(isinstance(part, (str, tuple)) for part in slices)
    ):
        return slice_frame(slices[0], n_train), slice_frame(slices[1], n_pop), ()
    specs = [slices] if isinstance(slices, str) else list(slices)
    both = []
    for what, X in (("X_train", X_train), ("X_population", X_population)):
        if not isinstance(X, pd.DataFrame):
            raise ValueError(
                f"slices={specs!r} names columns, but {what} is not a DataFrame: pass the "
                "labels as (train_labels, population_labels)"
            )
        both.append(X)
    labels, notes = {}, []
    for spec in specs:
        columns = [spec] if isinstance(spec, str) else list(spec)
        for what, X in (("X_train", X_train), ("X_population", X_population)):
            missing = [c for c in columns if c not in X.columns]
            if missing:
                raise ValueError(f"slice column {missing[0]!r} is not a column of {what}")
        made = slice_labels(
            pd.concat([X_train[columns], X_population[columns]], ignore_index=True), columns
        )
        labels[made.name] = made.labels.to_numpy()
        notes += list(made.notes)
    frame = pd.DataFrame(labels)
    train = frame.iloc[:n_train].reset_index(drop=True)
    pop = frame.iloc[n_train:].reset_index(drop=True)
    return train, pop, tuple(notes)


def _stacked_meta(
    members: np.ndarray,
    nonmembers: np.ndarray,
    persons: tuple[np.ndarray, np.ndarray] | None,
    meta_train: pd.DataFrame | None,
    meta_pop: pd.DataFrame | None,
) -> dict[str, Any]:
    """The candidates' ``person`` and ``slice:<name>`` columns: members, then non-members."""
    head = record_meta(members, persons[0] if persons else None, meta_train)
    tail = record_meta(nonmembers, persons[1] if persons else None, meta_pop)
    return {k: _concat(v, tail[k]) for k, v in head.items()}


def _concat(a: Any, b: Any) -> np.ndarray:
    """Two columns end to end, kept as objects where their types differ."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype and not (a.dtype.kind in "iuf" and b.dtype.kind in "iuf"):
        return np.concatenate([a.astype(object), b.astype(object)])
    return np.concatenate([a, b])


def _accuracy(target: Any, X: Any, y: np.ndarray) -> float:
    """Accuracy of the arg-max class; NaN where the model's classes do not cover ``y``."""
    model = as_target(target)
    predicted = model.predict(X)
    try:
        return float(np.mean(predicted == y))
    except (TypeError, ValueError):
        return float("nan")
