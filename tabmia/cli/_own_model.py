"""``tabmia audit`` of your own model: ``--train`` and ``--population`` files with a model
(``--model-file`` / ``--model-uri``), its probabilities (``--*-proba``) or its predicted
labels (``--*-pred``), read, checked and audited through :func:`tabmia.audit.audit_model`.
"""

from __future__ import annotations

import argparse
import contextlib
import warnings
from typing import Any

import numpy as np
import pandas as pd

import tabmia.audit
from tabmia.attacks import membership_tags
from tabmia.cli._checks import check_model_counts, check_recipe_matches
from tabmia.cli._inputs import (
    UsageError,
    apply_categories,
    check_shared,
    first_line,
    read_predictions,
    read_probabilities,
    read_table,
    split_label,
)
from tabmia.cli._mlflow import model_source, uri_model
from tabmia.cli._model_file import load_model
from tabmia.cli._persons import (
    check_person_attacks,
    check_public_persons,
    keep_person_column,
    person_columns,
)
from tabmia.cli._reconstruct import reconstruction_step
from tabmia.cli._setup import (
    LABEL_ATTACKS,
    _cache_context,
    _join_cluster,
    _label_reason,
    _make_attacks,
    _recipe,
    _takes_device,
    _thread_limits,
)
from tabmia.cli._slices import slice_frame_of, slice_specs
from tabmia.cli._structure import check_white_box, structure_findings
from tabmia.exceptions import DuplicateRecordsWarning, PlausibilityWarning
from tabmia.metrics import MIN_AUDIT_RECORDS, check_audit_size
from tabmia.plausibility import check_inputs, check_persons
from tabmia.target import TargetModel

__all__ = ["own_model"]


def own_model(
    args: argparse.Namespace, cluster: contextlib.ExitStack | None = None
) -> tuple[Any, dict[str, Any], Any]:
    """Audit the user's model on ``--train`` / ``--population``: the result, the report's
    context and the training records' contents (empty without ``--show-records``)."""
    read = {"encoding": args.encoding, "sep": args.sep}
    X_tr, y_tr, X_pop, y_pop, groups, specs, slices = _read_records(args, read)
    public_fraction = _check_population(args, X_tr, X_pop)
    n_public = int(round(public_fraction * len(X_pop)))  # as audit_model splits
    shared_note = check_shared(X_tr, y_tr, X_pop, y_pop)
    target, source, X_tr, X_pop, reconstruction = _target_of(
        args, read, (X_tr, y_tr, X_pop, y_pop), groups, specs
    )
    attacks, labels_only = _attacks_for(args, target, source, X_tr, groups[0] is not None)
    check_model_counts(args, attacks, n_public)
    if shared_note is not None:
        warnings.warn(shared_note, DuplicateRecordsWarning, stacklevel=1)
    findings = _input_findings(
        args, target, source, (X_tr, y_tr, X_pop, y_pop), groups, attacks, public_fraction
    )
    n_train = len(X_tr)
    structure = structure_findings(target.model if source is not None else None, X_tr, y_tr)
    # the training records' contents reach the report only with --show-records (masked
    # otherwise): without it they are handed over like the population's records, and
    # audit_model frees both once the candidates and public records hold their copies
    # (at ten million records, each about a gigabyte held through every attack)
    records = X_tr.reset_index(drop=True) if args.show_records else X_tr.iloc[:0].copy()
    handed = [X_tr, X_pop]
    del X_tr, X_pop
    _join_cluster(args, cluster)
    with _thread_limits(args), warnings.catch_warnings():
        # reported just above; audit_model's own findings repeat those above word for word
        # (the same seed), so they are shown once, and add the attacks' (an AUC below chance)
        warnings.simplefilter("ignore", DuplicateRecordsWarning)
        # looked up in its module when called (a test replaces it to prove no audit ran)
        result = tabmia.audit.audit_model(
            target,
            handed.pop(0),
            y_tr,
            handed.pop(0),
            y_pop,
            attacks,
            max_members=args.max_members,
            fprs=args.fprs,
            gammas=args.gammas,
            random_state=args.random_state,
            verbose=not args.quiet,
            fpr_fallback=not args.fpr_given,
            public_fraction=public_fraction,
            check_plausibility=False,  # checked above
            keep_attacks=False,  # the report needs their scores and counts, not them
            groups_train=groups[0],
            groups_population=groups[1],
            slices=slices,
        )
    # the verdict and the gate decide from every finding: the inputs' (checked above, so
    # the model is queried once for them) before the attacks' own
    # (audit_model checks the persons too: their finding is kept once)
    checked = {f.check for f in findings}
    result.findings = tuple(findings) + tuple(f for f in result.findings if f.check not in checked)
    result.structure = structure
    context = _context(args, result, target, source, n_train, labels_only)
    if reconstruction is not None:  # taken out again by run_audit, before the header
        context["reconstruction"] = reconstruction
    return result, context, records


def _read_records(args: argparse.Namespace, read: dict[str, Any]) -> tuple[Any, ...]:
    """``--train`` and ``--population``: records (population columns in training order),
    labels, person ids of each, the slicings asked for and the slice labels of each."""
    X_tr, y_tr = split_label(read_table(args.train, "--train", **read), args.label, "--train")
    X_pop, y_pop = split_label(
        read_table(args.population, "--population", **read), args.label, "--population"
    )
    X_tr, X_pop, groups_tr, groups_pop = person_columns(args, X_tr, X_pop)
    specs = slice_specs(args)
    for flag, frame in (("--train", X_tr), ("--population", X_pop)):
        missing = [c for spec in specs for c in spec if c not in frame.columns and c != args.label]
        if missing:
            raise UsageError(f"--slice-by: {flag} has no column {missing[0]!r}")
    # labelled over both files, so that a band or a merged label means the same on both
    both = slice_frame_of(
        pd.concat([X_tr, X_pop], ignore_index=True),
        specs,
        "--train",
        label=(args.label, np.r_[y_tr, y_pop]),
    )
    slices = None if both is None else (both.iloc[: len(X_tr)], both.iloc[len(X_tr) :])
    missing = [c for c in X_tr.columns if c not in X_pop.columns]
    if missing:
        raise UsageError(f"--population lacks columns of --train: {missing[:10]}")
    X_pop = X_pop[list(X_tr.columns)]
    return X_tr, y_tr, X_pop, y_pop, (groups_tr, groups_pop), specs, slices


def _check_population(args: argparse.Namespace, X_tr: Any, X_pop: Any) -> float:
    """The attacker's public share of ``--population``, once the files are big enough."""
    need = _population_needed(args.public_size)
    if len(X_pop) < need:
        raise UsageError(
            f"--population has {len(X_pop)} record(s); it needs at least {need}: "
            f"{MIN_AUDIT_RECORDS} non-member candidates plus the attacker's public records "
            f"(--public-size {args.public_size:g})"
        )
    public_fraction = _public_fraction(args.public_size, len(X_pop))
    n_public = int(round(public_fraction * len(X_pop)))  # as audit_model splits
    check_audit_size(min(len(X_tr), args.max_members or len(X_tr)), len(X_pop) - n_public)
    return public_fraction


def _target_of(
    args: argparse.Namespace,
    read: dict[str, Any],
    data: tuple[Any, Any, Any, Any],
    groups: tuple[Any, Any],
    specs: list[tuple[str, ...]],
) -> tuple[Any, Any, Any, Any, Any]:
    """The audited target (a model, probabilities or predicted labels), checked on the
    labels and a few records; the model's source, the records as it takes them and
    ``--reconstruct``'s result (a model file only, else None)."""
    X_tr, y_tr, X_pop, y_pop = data
    reconstruction = None
    source, classes = model_source(args), None  # --model-file or --model-uri
    if source is not None:
        if args.model_file is not None:
            model = load_model(args.model_file, args.trust_types)
        else:
            model, classes, source = uri_model(args, (y_tr, y_pop))
        # a slice column the model does not take (a sensitive attribute kept out of it)
        # labels the records only
        taken = getattr(model, "feature_names_in_", None)
        X_tr, X_pop = keep_person_column(args, taken, [X_tr, X_pop], list(groups))
        if taken is not None and specs:
            unused = [
                c for spec in specs for c in spec if c not in set(taken) and c in X_tr.columns
            ]
            X_tr, X_pop = X_tr.drop(columns=unused), X_pop.drop(columns=unused)
        check_recipe_matches(model, args.recipe, source, args.force)
        X_tr, X_pop = apply_categories(
            model, [X_tr, X_pop], list(args.categorical), ["--train", "--population"]
        )
        reconstruction = reconstruction_step(args, model, X_tr, y_tr, X_pop)
        try:
            target = TargetModel(
                model, classes=classes, device=args.device, labels_only=args.label_only
            )
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{_model_flag(args)} {source}: {exc}") from exc
    elif args.train_pred is not None:
        target = read_predictions(
            args.train_pred, args.population_pred, X_tr, y_tr, X_pop, y_pop, **read
        )
    else:
        target = read_probabilities(
            args.train_proba,
            args.population_proba,
            X_tr,
            y_tr,
            X_pop,
            y_pop,
            labels_only=args.label_only,
            **read,
        )
    _check_target_reads(args, target, source, X_tr, y_tr, y_pop)
    return target, source, X_tr, X_pop, reconstruction


def _check_target_reads(
    args: argparse.Namespace, target: Any, source: Any, X_tr: Any, y_tr: Any, y_pop: Any
) -> None:
    """The target knows both files' labels and scores a few training records."""
    for flag, y in (("--train", y_tr), ("--population", y_pop)):
        try:  # apart: np.r_ of int and str labels would turn them all into text
            target.encode_labels(y, name=f"{flag}: label column {args.label!r}")
        except ValueError as exc:
            raise UsageError(first_line(exc)) from exc
    try:
        target.predict_indices(X_tr.iloc[:5])
    except Exception as exc:  # whatever the model raises on these records
        where = source or args.train_pred or "--train-proba"
        raise UsageError(
            f"{where}: cannot score --train records: {first_line(exc)}" + _categorical_hint(exc)
        ) from exc


def _attacks_for(
    args: argparse.Namespace, target: Any, source: Any, X_tr: Any, persons: bool
) -> tuple[dict[str, Any], bool]:
    """The attacks the flags ask for that this target allows, and whether it gives
    labels only."""
    recipe = _recipe(args, X_tr)
    labels_only = target.outputs == "labels"
    default = None
    if labels_only:
        default = LABEL_ATTACKS if source is not None else "gap"
        if source is not None and recipe is not None:
            default += ",noise_robustness_calibrated"
    attacks = _make_attacks(
        args,
        recipe=recipe,
        can_train=args.recipe is not None,
        device_taken=_takes_device(recipe) or _takes_device(target.model),
        default=default,
        label_only_target=target if labels_only else None,
    )
    check_white_box(args, attacks, target.model if source is not None else None)
    if persons:
        check_person_attacks(attacks)
    perturbing = [n for n, a in attacks.items() if membership_tags(a).queries_perturbed_records]
    if perturbing and source is None:
        given = "predicted labels" if args.train_pred is not None else "probabilities"
        raise UsageError(
            f"--attacks {','.join(perturbing)} query perturbed records: they need "
            f"--model-file, not precomputed {given}"
        )
    return attacks, labels_only


def _input_findings(
    args: argparse.Namespace,
    target: Any,
    source: Any,
    data: tuple[Any, Any, Any, Any],
    groups: tuple[Any, Any],
    attacks: dict[str, Any],
    public_fraction: float,
) -> list[Any]:
    """The plausibility findings on the inputs (and persons), each warned."""
    X_tr, y_tr, X_pop, y_pop = data
    groups_tr, groups_pop = groups
    try:  # every record scored once: a model that fails on some, or implausible inputs
        findings = check_inputs(target, X_tr, y_tr, X_pop, y_pop, random_state=args.random_state)
    except Exception as exc:  # whatever the model raises on these records
        where = source or "--train-proba / --population-proba"
        raise UsageError(
            f"{where}: cannot score the --train and --population records: "
            f"{first_line(exc)}" + _categorical_hint(exc)
        ) from exc
    if groups_tr is not None:
        findings = [*findings, *check_persons(groups_tr, groups_pop)]
        if not any(f.check == "shared_persons" for f in findings):  # else records are audited
            n_persons = int(pd.unique(groups_pop).size)
            check_public_persons(attacks, int(round(public_fraction * n_persons)), "persons")
    for finding in findings:
        warnings.warn(str(finding), PlausibilityWarning, stacklevel=1)
    return findings


def _context(
    args: argparse.Namespace,
    result: Any,
    target: Any,
    source: Any,
    n_train: int,
    labels_only: bool,
) -> dict[str, Any]:
    """The report header's facts of the audit of one's own model."""
    split = result.splits[0]
    given = "precomputed predicted labels" if args.train_pred else "precomputed probabilities"
    return {
        "model": str(source or given),
        **({"outputs": f"labels only ({_label_reason(args, target)})"} if labels_only else {}),
        "training records": n_train,
        "members scored": len(split.members),
        "non-member candidates": len(split.nonmembers),
        "attacker public records": len(split.public),
        **_cache_context(args, result),
    }


def _model_flag(args: argparse.Namespace) -> str:
    return "--model-file" if args.model_file is not None else "--model-uri"


def _population_needed(public_size: float | int) -> int:
    """Fewest --population records that leave ``MIN_AUDIT_RECORDS`` non-member candidates
    and at least one public record, split as :func:`_public_fraction` and audit_model do."""
    if not isinstance(public_size, float):
        return int(public_size) + MIN_AUDIT_RECORDS
    n = MIN_AUDIT_RECORDS + 1
    while n - round(public_size * n) < MIN_AUDIT_RECORDS or round(public_size * n) < 1:
        n += 1  # at most about MIN_AUDIT_RECORDS / (1 - public_size) steps
    return n


def _public_fraction(public_size: float | int, n_population: int) -> float:
    """``--public-size`` (a fraction, or a count of --population records) as a fraction."""
    if isinstance(public_size, float):
        return public_size
    if public_size >= n_population:
        raise UsageError(
            f"--public-size {public_size} leaves none of the {n_population} "
            "--population records as non-member candidates"
        )
    return public_size / n_population


def _categorical_hint(exc: BaseException) -> str:
    text = str(exc).lower()
    if "categor" in text:
        return " (a native-categorical model: name its columns with --categorical, or give parquet)"
    return ""
