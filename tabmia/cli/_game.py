"""``tabmia audit``'s built-in game: train ``--model`` on part of ``--dataset`` and attack it.

The data set's own persons (diabetes130: its patients) and default slicings come from the
data set registry (:func:`tabmia.datasets.person_noun`,
:func:`tabmia.datasets.default_slicings`).
"""

from __future__ import annotations

import argparse
import contextlib
import warnings
from typing import Any

import numpy as np
import pandas as pd

from tabmia import datasets
from tabmia.cli._checks import check_model_counts
from tabmia.cli._inputs import UsageError, first_line, missing_data_line
from tabmia.cli._persons import built_in_persons, check_person_attacks, check_public_persons
from tabmia.cli._setup import (
    _cache_context,
    _join_cluster,
    _make_attacks,
    _set_threads,
    _takes_device,
    _thread_limits,
)
from tabmia.cli._slices import slice_frame_of, slice_specs
from tabmia.cli._structure import check_white_box, structure_findings
from tabmia.datasets import DataNotFoundError, person_noun
from tabmia.exceptions import RunNote
from tabmia.experiment import (
    MembershipExperiment,
    split_membership,
    subsample,
    subsample_persons,
)
from tabmia.recipes import make_model
from tabmia.target import n_rows, take_rows

__all__ = ["built_in_game"]


def built_in_game(
    args: argparse.Namespace, cluster: contextlib.ExitStack | None = None
) -> tuple[Any, dict[str, Any], Any]:
    """Play the membership game on ``--dataset``: the result, the report's context and
    the training records' contents (indexed by data set row; None without columns)."""
    bunch, X, y, groups = _load_records(args)
    sizes = _split_sizes(args, X, groups)
    try:
        model = _set_threads(make_model(args.model, X, device=args.device), args.threads)
    except ValueError as exc:  # e.g. the mlp recipe without torch
        raise UsageError(f"--model {args.model}: {exc}") from exc
    attacks = _make_attacks(args, recipe=None, device_taken=_takes_device(model))
    check_white_box(args, attacks, model)
    if groups is not None:
        check_person_attacks(attacks)
        check_public_persons(
            attacks, int(pd.unique(groups[sizes.public]).size), person_noun(args.dataset)
        )
    slices = slice_frame_of(
        X,
        slice_specs(args, args.dataset),
        args.dataset,
        fill_missing=getattr(args, "slice_by", None) is None,
        label=(str(getattr(bunch.target, "name", None) or "target"), y),
    )
    check_model_counts(args, attacks, len(sizes.public))
    _join_cluster(args, cluster)
    experiment = MembershipExperiment(
        model,
        attacks,
        train_size=args.train_size,
        public_size=args.public_size,
        prior=args.prior,
        n_repeats=args.seeds,
        fprs=args.fprs,
        gammas=args.gammas,
        random_state=args.random_state,
        verbose=not args.quiet,
        fpr_fallback=not args.fpr_given,
    )
    with _thread_limits(args):
        result = experiment.run(X, y, groups=groups, slices=slices)
    split = result.splits[0]
    # the first seed's target on its own training records
    result.structure = structure_findings(
        result.targets[0], take_rows(X, split.train), np.asarray(y)[split.train]
    )
    return result, _context(args, result, groups), _training_records(X, split.train)


def _load_records(args: argparse.Namespace) -> tuple[Any, Any, Any, np.ndarray | None]:
    """The data set, its records and labels (``--max-records`` of them) and person ids."""
    try:
        # looked up in its module when called, where tests put a data set of their own
        bunch = datasets.load_dataset(args.dataset)
    except DataNotFoundError as exc:
        raise UsageError(missing_data_line(exc)) from exc
    except (ValueError, KeyError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from exc
    if args.max_records is not None and args.max_records < 20:
        raise UsageError("--max-records must be at least 20")
    groups = built_in_persons(args, bunch)
    if groups is None:
        X, y = subsample(bunch.data, np.asarray(bunch.target), args.max_records, args.random_state)
        return bunch, X, y, None
    X, y, groups = subsample_persons(
        bunch.data, np.asarray(bunch.target), groups, args.max_records, args.random_state
    )
    noun = person_noun(args.dataset)
    warnings.warn(
        f"{args.dataset}: the audit's unit is the person ({noun}: "
        f"{pd.unique(groups).size} {noun} with {len(groups)} records); persons are "
        "split whole and the verdict counts them; --group-column none audits records",
        RunNote,
        stacklevel=1,
    )
    return bunch, X, y, groups


def _split_sizes(args: argparse.Namespace, X: Any, groups: np.ndarray | None) -> Any:
    """The game's split of this data set, checked before anything trains."""
    try:
        return split_membership(
            n_rows(X),
            train_size=args.train_size,
            public_size=args.public_size,
            prior=args.prior,
            random_state=0,
            groups=groups,
        )
    except ValueError as exc:
        message = first_line(exc)
        for name in ("train_size", "public_size", "prior"):
            message = message.replace(name, "--" + name.replace("_", "-"))
        raise UsageError(f"{message} (the data set has {n_rows(X)} records)") from exc


def _context(args: argparse.Namespace, result: Any, groups: Any) -> dict[str, Any]:
    """The report header's facts of the game."""
    split, acc = result.splits[0], result.target_accuracy
    assert acc is not None  # the built-in game trains its targets
    return {
        "data": args.dataset,
        "target": args.model,
        "members": len(split.members),
        "non-members": len(split.nonmembers),
        "attacker public records": len(split.public),
        "seeds": args.seeds,
        "train accuracy": f"{acc['train_accuracy'].mean():.3f}",
        "held-out accuracy": f"{acc['test_accuracy'].mean():.3f}",
        **_cache_context(args, result),
        **({} if groups is None else {"persons": person_noun(args.dataset)}),
    }


def _training_records(X: Any, train: np.ndarray) -> Any:
    """The first seed's training records, indexed by data set row (None without columns)."""
    records = take_rows(X, train) if hasattr(X, "iloc") else None
    if records is not None:
        records = records.reset_index(drop=True)
        # riskiest_records reports dataset row indices: index the contents the same way
        records.index = train
        records = records.reindex(range(n_rows(X)))
    return records
