"""``tabmia audit``'s two run modes: the built-in game and your own model.

:func:`run_audit` checks the parsed arguments, builds the attacks, plays the
membership game on a data set (``--dataset``) or audits a given model
(``--model-file`` / ``--*-proba`` with ``--train`` and ``--population``),
prints the results table and hands the files to :mod:`tabmia.cli._outputs`.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings
from typing import Any

from tabmia._columns import PERSON
from tabmia.cli._checks import (
    check_model_counts,
    check_recipe_matches,
    more_records_hint,
)
from tabmia.cli._gate import aim_at_gate_fdr, aim_at_gate_fpr, evaluate_cli_gate, report_gate
from tabmia.cli._inputs import (
    UsageError,
    apply_categories,
    check_shared,
    first_line,
    load_model,
    missing_data_line,
    read_predictions,
    read_probabilities,
    read_table,
    split_label,
)
from tabmia.cli._mlflow import check_mlflow_flags, log_to_mlflow, model_source, uri_model
from tabmia.cli._named import named_of
from tabmia.cli._outputs import (
    fpr_fallback_notes,
    recorded_warnings,
    shown,
    terminal_summary,
    wrapped,
    write_outputs,
)
from tabmia.cli._persons import (
    PERSON_NOUNS,
    built_in_persons,
    check_person_attacks,
    check_public_persons,
    keep_person_column,
    person_columns,
    to_persons,
)
from tabmia.cli._reconstruct import reconstruction_step
from tabmia.cli._setup import (
    DEFAULT_ATTACKS,
    LABEL_ATTACKS,
    SCORE_ATTACKS,
    _cache_context,
    _check_args,
    _join_cluster,
    _label_reason,
    _make_attacks,
    _recipe,
    _resolve_device,
    _set_threads,
    _takes_device,
    _thread_limits,
)
from tabmia.cli._slices import slice_frame_of, slice_specs, slices_report
from tabmia.cli._structure import check_white_box, structure_findings

__all__ = ["DEFAULT_ATTACKS", "LABEL_ATTACKS", "SCORE_ATTACKS", "run_audit"]


# ---------------------------------------------------------------------- runs
def _built_in_game(
    args: argparse.Namespace, cluster: contextlib.ExitStack | None = None
) -> tuple[Any, dict[str, Any], Any]:
    import numpy as np
    import pandas as pd

    from tabmia.datasets import DataNotFoundError, load_dataset
    from tabmia.exceptions import RunNote
    from tabmia.experiment import (
        MembershipExperiment,
        split_membership,
        subsample,
        subsample_persons,
    )
    from tabmia.recipes import make_model
    from tabmia.target import n_rows, take_rows

    try:
        bunch = load_dataset(args.dataset)
    except DataNotFoundError as exc:
        raise UsageError(missing_data_line(exc)) from exc
    except (ValueError, KeyError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from exc
    if args.max_records is not None and args.max_records < 20:
        raise UsageError("--max-records must be at least 20")
    groups = built_in_persons(args, bunch)
    if groups is None:
        X, y = subsample(bunch.data, np.asarray(bunch.target), args.max_records, args.random_state)
    else:
        X, y, groups = subsample_persons(
            bunch.data, np.asarray(bunch.target), groups, args.max_records, args.random_state
        )
        noun = PERSON_NOUNS.get(args.dataset, "persons")
        warnings.warn(
            f"{args.dataset}: the audit's unit is the person ({noun}: "
            f"{pd.unique(groups).size} {noun} with {len(groups)} records); persons are "
            "split whole and the verdict counts them; --group-column none audits records",
            RunNote,
            stacklevel=1,
        )
    try:  # the sizes against this data set, before anything trains
        sizes = split_membership(
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
    try:
        model = _set_threads(make_model(args.model, X, device=args.device), args.threads)
    except ValueError as exc:  # e.g. the mlp recipe without torch
        raise UsageError(f"--model {args.model}: {exc}") from exc
    attacks = _make_attacks(args, recipe=None, device_taken=_takes_device(model))
    check_white_box(args, attacks, model)
    if groups is not None:
        check_person_attacks(attacks)
        check_public_persons(
            attacks,
            int(pd.unique(groups[sizes.public]).size),
            PERSON_NOUNS.get(args.dataset, "persons"),
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
    split, acc = result.splits[0], result.target_accuracy
    assert acc is not None  # the built-in game trains its targets
    # the first seed's target on its own training records
    result.structure = structure_findings(
        result.targets[0], take_rows(X, split.train), np.asarray(y)[split.train]
    )
    context = {
        "data": args.dataset,
        "target": args.model,
        "members": len(split.members),
        "non-members": len(split.nonmembers),
        "attacker public records": len(split.public),
        "seeds": args.seeds,
        "train accuracy": f"{acc['train_accuracy'].mean():.3f}",
        "held-out accuracy": f"{acc['test_accuracy'].mean():.3f}",
        **_cache_context(args, result),
        **({} if groups is None else {"persons": PERSON_NOUNS.get(args.dataset, "persons")}),
    }
    records = take_rows(X, split.train) if hasattr(X, "iloc") else None
    if records is not None:
        records = records.reset_index(drop=True)
        # riskiest_records reports dataset row indices: index the contents the same way
        records.index = split.train
        records = records.reindex(range(n_rows(X)))
    return result, context, records


def _own_model(
    args: argparse.Namespace, cluster: contextlib.ExitStack | None = None
) -> tuple[Any, dict[str, Any], Any]:
    import numpy as np
    import pandas as pd

    from tabmia.attacks import membership_tags
    from tabmia.audit import audit_model
    from tabmia.exceptions import DuplicateRecordsWarning, PlausibilityWarning
    from tabmia.metrics import MIN_AUDIT_RECORDS, check_audit_size
    from tabmia.plausibility import check_inputs, check_persons
    from tabmia.target import TargetModel

    read = {"encoding": args.encoding, "sep": args.sep}
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
    shared_note = check_shared(X_tr, y_tr, X_pop, y_pop)
    reconstruction = None  # --reconstruct's result (a model file only)
    source, classes = model_source(args), None  # --model-file or --model-uri
    if source is not None:
        if args.model_file is not None:
            model = load_model(args.model_file, args.trust_types)
        else:
            model, classes, source = uri_model(args, (y_tr, y_pop))
        # a slice column the model does not take (a sensitive attribute kept out of it)
        # labels the records only
        taken = getattr(model, "feature_names_in_", None)
        X_tr, X_pop = keep_person_column(args, taken, [X_tr, X_pop], [groups_tr, groups_pop])
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
    if groups_tr is not None:
        check_person_attacks(attacks)
    perturbing = [n for n, a in attacks.items() if membership_tags(a).queries_perturbed_records]
    if perturbing and source is None:
        given = "predicted labels" if args.train_pred is not None else "probabilities"
        raise UsageError(
            f"--attacks {','.join(perturbing)} query perturbed records: they need "
            f"--model-file, not precomputed {given}"
        )
    check_model_counts(args, attacks, n_public)
    if shared_note is not None:
        warnings.warn(shared_note, DuplicateRecordsWarning, stacklevel=1)
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
        result = audit_model(
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
            groups_train=groups_tr,
            groups_population=groups_pop,
            slices=slices,
        )
    # the verdict and the gate decide from every finding: the inputs' (checked above, so
    # the model is queried once for them) before the attacks' own
    # (audit_model checks the persons too: their finding is kept once)
    checked = {f.check for f in findings}
    result.findings = tuple(findings) + tuple(f for f in result.findings if f.check not in checked)
    result.structure = structure
    split = result.splits[0]
    given = "precomputed predicted labels" if args.train_pred else "precomputed probabilities"
    context = {
        "model": str(source or given),
        **({"outputs": f"labels only ({_label_reason(args, target)})"} if labels_only else {}),
        "training records": n_train,
        "members scored": len(split.members),
        "non-member candidates": len(split.nonmembers),
        "attacker public records": len(split.public),
        **_cache_context(args, result),
    }
    if reconstruction is not None:  # taken out again by run_audit, before the header
        context["reconstruction"] = reconstruction
    return result, context, records


def _model_flag(args: argparse.Namespace) -> str:
    return "--model-file" if args.model_file is not None else "--model-uri"


def _population_needed(public_size: float | int) -> int:
    """Fewest --population records that leave ``MIN_AUDIT_RECORDS`` non-member candidates
    and at least one public record, split as :func:`_public_fraction` and audit_model do."""
    from tabmia.metrics import MIN_AUDIT_RECORDS

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


def run_audit(args: argparse.Namespace) -> int:
    """Run ``tabmia audit`` with parsed arguments; returns the exit status."""
    from tabmia.exceptions import (
        AuditTooSmallError,
        DuplicateRecordsWarning,
        PlausibilityWarning,
        TargetOutputsError,
        UnresolvableFPRError,
    )
    from tabmia.report import markdown_table, results_table
    from tabmia.report.tables import summary_table
    from tabmia.report.verdict import shadow_recipe, verdict_lines, verdict_state

    check_mlflow_flags(args)
    _check_args(args)
    if not 0.0 <= args.delta < 1.0:
        raise UsageError(f"--delta must be in [0, 1), got {args.delta}")
    aim_at_gate_fpr(args)
    aim_at_gate_fdr(args)
    if any(lim.metric == "slice_tpr" for lim in getattr(args, "fail_above", ())) and not (
        slice_specs(args, args.dataset if args.train is None else None)
    ):
        raise UsageError(
            "--fail-above slice:tpr@... limits the worst slice, but the audit has no slices: "
            "add --slice-by COL"
        )
    t0 = time.perf_counter()
    try:
        with (
            fpr_fallback_notes() as fallbacks,
            recorded_warnings(PlausibilityWarning, DuplicateRecordsWarning) as warned,
            contextlib.ExitStack() as cluster,
        ):
            # --cluster is joined once the checks pass (_join_cluster), left at the end
            _resolve_device(args)
            if args.train is not None:
                result, context, records = _own_model(args, cluster)
            else:
                result, context, records = _built_in_game(args, cluster)
    except UnresolvableFPRError as exc:  # raised by an attack's fit before it trains
        what = f"{exc.attack}: {exc.reason}" if exc.attack and exc.reason else first_line(exc)
        raise UsageError(f"{what}; {more_records_hint(args)}") from exc
    except (AuditTooSmallError, TargetOutputsError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from exc
    elapsed = time.perf_counter() - t0
    reconstruction = context.pop("reconstruction", None)
    if args.train is not None and "data" not in context:
        context = {"data": str(args.train), **context}
    if PERSON in result.scores.columns and getattr(args, "group_column", None):
        # the header names the column; the verdict calls them "persons"
        context.setdefault("person ids", f"column {args.group_column!r}")
    if fallbacks:
        context["notes"] = list(fallbacks)
    found = {f.message for f in result.findings}  # shown in the verdict, as findings
    if any(w not in found for w in warned):
        context["warnings"] = [w for w in warned if w not in found]
    recipe = shadow_recipe(result)  # the class shadow models were trained as
    if recipe is not None:
        context["shadow recipe"] = (
            f"the target's own recipe ({args.model})"
            if args.train is None
            else f"--recipe {args.recipe}: {recipe}"
        )
        if context.get("shadow models trained", 1):  # not all of them from --cache-dir
            address = getattr(args, "cluster", None)
            context["models trained on"] = (
                "this machine" if address is None else f"the cluster at {address}"
            )
    records_result = result.with_delta(args.delta)
    # with persons the unit is the person: the verdict, the table and the gate read them
    result = to_persons(args, records_result, context).with_delta(args.delta)
    persons = result is not records_result and result.unit == "person"
    slice_report = slices_report(args, result)  # of persons, where the unit is the person
    table = results_table(result.metrics, fprs=args.fprs, gammas=args.gammas)
    header = "tabmia audit: " + "; ".join(f"{k}: {shown(v)}" for k, v in context.items()) + "\n"
    state = verdict_state(result, accept_warnings=args.accept_warnings)
    verdict = verdict_lines(
        result,
        context=context,
        gammas=args.gammas,
        epsilon=args.epsilon,
        delta=args.delta,
        state=state,
        records=records_result if persons else None,
    )
    if slice_report is not None:
        verdict += slice_report.lines()
    if reconstruction is not None:
        verdict.append(f"Reconstruction from the model file: {reconstruction.sentence()}")
    named = named_of(args, result, state)  # whom an attacker could name (tabmia.named)
    verdict += named.lines(context.get("persons") if persons else None)
    md = (
        header
        + "\n## Verdict\n\n"
        + f"**{state.state.capitalize()}**\n\n"
        + "".join(f"- {line}\n" for line in verdict)
        + "\n## Attacks\n\n"
        + markdown_table(table)
    )
    print(terminal_summary(header, state, verdict, summary_table(result.metrics)))
    gate = evaluate_cli_gate(
        args, result, slices=slice_report, structure=records_result.structure, named=named
    )
    write_outputs(
        args,
        result,
        md,
        context,
        records,
        elapsed,
        verdict,
        gate=gate,
        state=state,
        records_result=records_result if persons else None,
        slice_report=slice_report,
        reconstruction=reconstruction,
        structure=records_result.structure,
        named=named,
    )
    print(
        wrapped(
            f"wrote {args.out}/report.html, results.json, results.md, scores.csv.gz, "
            + ("persons.csv.gz, " if persons else "")
            + "named.csv.gz, "
            + f"roc.png ({elapsed:.1f} s)"
        )
    )
    run_id = log_to_mlflow(args)
    if run_id is not None:
        print(wrapped(f"logged to MLflow experiment {args.mlflow!r}: run {run_id}"))
    return report_gate(gate)
