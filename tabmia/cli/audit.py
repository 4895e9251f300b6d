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
from pathlib import Path
from typing import Any

from tabmia.cli._checks import (
    check_attack_flags,
    check_mode,
    check_model_counts,
    check_recipe_matches,
    more_records_hint,
)
from tabmia.cli._gate import aim_at_gate_fpr, evaluate_cli_gate, report_gate
from tabmia.cli._inputs import (
    UsageError,
    apply_categories,
    check_count,
    check_out_folder,
    check_shared,
    check_size,
    first_line,
    load_model,
    missing_data_line,
    read_predictions,
    read_probabilities,
    read_table,
    split_label,
)
from tabmia.cli._outputs import (
    fpr_fallback_notes,
    recorded_warnings,
    shown,
    terminal_summary,
    wrapped,
    write_outputs,
)
from tabmia.recipes import AUDIT_ATTACKS, LABEL_AUDIT_ATTACKS

__all__ = ["DEFAULT_ATTACKS", "LABEL_ATTACKS", "SCORE_ATTACKS", "run_audit"]


def _attacks_without_models(names: tuple[str, ...]) -> tuple[str, ...]:
    """Those of the presets ``names`` that train no shadow / reference models."""
    from tabmia.attacks import membership_tags
    from tabmia.recipes import make_attack

    return tuple(n for n in names if not membership_tags(make_attack(n)).trains_models)


#: Default where shadow / reference models can be trained (the built-in game, or
#: ``--recipe``): :data:`tabmia.recipes.AUDIT_ATTACKS`.
DEFAULT_ATTACKS = ",".join(AUDIT_ATTACKS)
#: Default with precomputed probabilities, or a model file given without ``--recipe``:
#: those of :data:`tabmia.recipes.AUDIT_ATTACKS` that need only the target's outputs.
SCORE_ATTACKS = ",".join(_attacks_without_models(AUDIT_ATTACKS))
#: Default for a label-only model given as a file: :data:`tabmia.recipes.LABEL_AUDIT_ATTACKS`
#: (plus noise_robustness_calibrated with --recipe). Saved labels (--*-pred) run the gap
#: attack only: the others query perturbed records.
LABEL_ATTACKS = ",".join(LABEL_AUDIT_ATTACKS)


# -------------------------------------------------------------------- inputs
def _recipe(args: argparse.Namespace, X: Any) -> Any:
    from tabmia.backends import set_device
    from tabmia.recipes import MODEL_NAMES, make_model
    from tabmia.target import n_rows

    if args.recipe is None:
        return None
    device = getattr(args, "device", "auto")  # tabmia dpaudit has no --device
    if args.recipe in MODEL_NAMES:
        try:
            return _set_threads(make_model(args.recipe, X, device=device), args.threads)
        except ValueError as exc:  # e.g. the mlp recipe without torch
            raise UsageError(f"--recipe {args.recipe}: {exc}") from exc
    path = Path(args.recipe)
    if not path.is_file():
        raise UsageError(
            f"--recipe {args.recipe}: neither a recipe name ({', '.join(MODEL_NAMES)}) nor a file"
        )
    recipe = load_model(path, args.trust_types, flag="--recipe")
    if not hasattr(recipe, "fit"):
        raise UsageError(f"--recipe {path}: the object has no fit method")
    if device != "auto":  # "auto" keeps the file's own device settings
        set_device(recipe, device, n_rows=n_rows(X))
    return _set_threads(recipe, args.threads)


def _resolve_device(args: argparse.Namespace) -> None:
    """Check ``--device``; CUDA on a machine without a GPU becomes the CPU, said once.

    Sets ``args.device`` (what every model and attack gets) and ``args.device_given``
    (a device request still in force, for :func:`_note_device_not_used`). The note is a
    :class:`~tabmia.exceptions.RunNote`: one ``tabmia: note:`` line, kept in
    ``results.json``.
    """
    from tabmia._device import resolve_device_name
    from tabmia.backends import gpu_present
    from tabmia.exceptions import RunNote

    requested = str(args.device)
    try:
        resolve_device_name(requested, n_gpus=lambda: 1, check_index=False)
    except ValueError as exc:
        raise UsageError(f"--device: {exc}") from exc
    args.device_given = requested != "auto"
    if requested.startswith("cuda") and not gpu_present():
        warnings.warn(
            f"--device {requested}: no GPU is present (none seen by torch, CatBoost "
            "or nvidia-smi); training and scoring run on the CPU",
            RunNote,
            stacklevel=2,
        )
        args.device, args.device_given = "cpu", False


def _note_device_not_used(
    args: argparse.Namespace, attacks: dict[str, Any], device_taken: bool
) -> None:
    """A ``tabmia: note:`` when ``--device`` reaches nothing: neither the model (nor so its
    shadow / reference models: ``device_taken``) nor an attack. (An attack flag no attack
    takes is refused instead: :func:`tabmia.cli._checks.check_attack_flags`.)"""
    from tabmia._attack_builder import unused_settings_note
    from tabmia.exceptions import RunNote

    if not getattr(args, "device_given", False):
        return
    note = unused_settings_note(
        attacks, {"device": f"--device {args.device}"}, model_takes_device=device_taken
    )
    if note is not None:
        warnings.warn(note, RunNote, stacklevel=2)


def _make_attacks(
    args: argparse.Namespace,
    recipe: Any = None,
    *,
    can_train: bool = True,
    device_taken: bool = False,
    default: str | None = None,
    label_only_target: Any = None,
) -> dict[str, Any]:
    """The attacks named by ``--attacks``; by default ``default``, else the score attacks,
    plus LiRA and RMIA when shadow models can be trained (``can_train``). Attacks that need
    probabilities are refused for a ``label_only_target``. Runner settings that no attack
    takes (nor the model, for ``--device``: ``device_taken``) get one note."""
    from tabmia._attack_builder import build_attacks
    from tabmia.attacks import membership_tags

    chosen = args.attacks
    if chosen is None:
        chosen = default or (DEFAULT_ATTACKS if can_train else SCORE_ATTACKS)
    names = [a.strip() for a in str(chosen).split(",") if a.strip()]
    if not names:
        raise UsageError("--attacks is empty")
    settings: dict[str, Any] = {
        "fpr": args.fpr,
        "n_jobs": args.n_jobs,
        "device": args.device,
        "n_shadow": args.n_shadow,
        "n_reference": args.n_references,
        "verbose": not args.quiet,
        "max_memory": getattr(args, "max_memory", None),
        "cache_dir": None if args.cache_dir is None else str(args.cache_dir),
        "recipe": recipe,
    }
    try:  # specs may carry parameters, e.g. lira:n_shadow=64
        out = build_attacks(names, **settings)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if label_only_target is not None:
        _check_label_only(args, out, label_only_target)
    needs = [n for n, a in out.items() if membership_tags(a).trains_models]
    if needs and recipe is None and not can_train:
        raise UsageError(
            f"--attacks {','.join(needs)} train shadow / reference models: give the model's "
            "training recipe with --recipe (a preset name or a joblib file of the unfitted "
            "estimator)"
        )
    check_attack_flags(args, out)
    _note_device_not_used(args, out, device_taken)
    return out


def _check_args(args: argparse.Namespace) -> None:
    if args.seeds < 1:
        raise UsageError("--seeds must be >= 1")
    if not 0.0 < args.fpr < 1.0:
        raise UsageError(f"--fpr must be in (0, 1), got {args.fpr}")
    if any(not 0.0 < f < 1.0 for f in args.fprs):
        raise UsageError("--fprs values must be in (0, 1)")
    if any(g <= 0 for g in args.gammas):
        raise UsageError("--gammas values must be > 0")
    if args.prior is not None and args.prior <= 0:
        raise UsageError("--prior must be > 0")
    if args.epsilon is not None:
        from tabmia.claims import check_claimed_epsilon

        try:
            check_claimed_epsilon(args.epsilon, "--epsilon")
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    if args.top_k < 1:
        raise UsageError("--top-k must be >= 1")
    check_size(args.train_size, "--train-size")
    check_size(args.public_size, "--public-size")
    check_count(args.max_members, "--max-members")
    check_count(args.n_shadow, "--n-shadow", 4)  # two OUT shadows per record
    check_count(args.n_references, "--n-references", 2)  # an OUT reference per record
    check_count(args.threads, "--threads")
    if args.n_jobs == 0:
        raise UsageError("--n-jobs must not be 0 (-1: all cores, N >= 1: N jobs)")
    if args.cache_dir is not None and args.cache_dir.exists() and not args.cache_dir.is_dir():
        raise UsageError(f"--cache-dir {args.cache_dir} exists and is not a folder")
    check_out_folder(args.out)
    own = [
        args.model_file,
        args.train,
        args.population,
        args.train_proba,
        args.population_proba,
        args.train_pred,
        args.population_pred,
    ]
    if any(v is not None for v in own):
        if args.train is None or args.population is None or args.label is None:
            raise UsageError("auditing your own model needs --train, --population and --label")
        probas = (args.train_proba is not None, args.population_proba is not None)
        preds = (args.train_pred is not None, args.population_pred is not None)
        sources = (args.model_file is not None) + any(probas) + any(preds)
        if sources > 1:
            raise UsageError(
                "give one of --model-file, the --*-proba files or the --*-pred files, not several"
            )
        if any(probas) and not all(probas):
            raise UsageError("--train-proba and --population-proba go together")
        if any(preds) and not all(preds):
            raise UsageError("--train-pred and --population-pred go together")
        if sources == 0:
            raise UsageError(
                "give --model-file, both --train-proba and --population-proba, or "
                "both --train-pred and --population-pred (predicted labels)"
            )
    check_mode(args)
    from tabmia.cli._cluster import check_cluster_address

    check_cluster_address(getattr(args, "cluster", None))


def _join_cluster(args: argparse.Namespace, stack: contextlib.ExitStack | None) -> None:
    """Connect to ``--cluster`` until ``stack`` closes, once every check has passed.

    The connection (and its time limit, :data:`tabmia.cli._cluster.CONNECT_TIMEOUT_S`)
    comes after the attacks are known: ``--cluster`` with attacks that train no models
    is refused (:func:`tabmia.cli._checks.check_attack_flags`) without a connection.
    """
    from tabmia.cli._cluster import cluster_backend

    if getattr(args, "cluster", None) is not None and stack is not None:
        stack.enter_context(cluster_backend(args.cluster))


# ---------------------------------------------------------------------- runs
def _built_in_game(
    args: argparse.Namespace, cluster: contextlib.ExitStack | None = None
) -> tuple[Any, dict[str, Any], Any]:
    import numpy as np

    from tabmia.datasets import DataNotFoundError, load_dataset
    from tabmia.experiment import MembershipExperiment, split_membership, subsample
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
    X, y = subsample(bunch.data, np.asarray(bunch.target), args.max_records, args.random_state)
    try:  # the sizes against this data set, before anything trains
        sizes = split_membership(
            n_rows(X),
            train_size=args.train_size,
            public_size=args.public_size,
            prior=args.prior,
            random_state=0,
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
        result = experiment.run(X, y)
    split, acc = result.splits[0], result.target_accuracy
    assert acc is not None  # the built-in game trains its targets
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
    from tabmia.attacks import membership_tags
    from tabmia.audit import audit_model
    from tabmia.exceptions import DuplicateRecordsWarning, PlausibilityWarning
    from tabmia.metrics import MIN_AUDIT_RECORDS, check_audit_size
    from tabmia.plausibility import check_inputs
    from tabmia.target import TargetModel

    read = {"encoding": args.encoding, "sep": args.sep}
    X_tr, y_tr = split_label(read_table(args.train, "--train", **read), args.label, "--train")
    X_pop, y_pop = split_label(
        read_table(args.population, "--population", **read), args.label, "--population"
    )
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
    if args.model_file is not None:
        model = load_model(args.model_file, args.trust_types)
        check_recipe_matches(model, args.recipe, args.model_file, args.force)
        X_tr, X_pop = apply_categories(
            model, [X_tr, X_pop], list(args.categorical), ["--train", "--population"]
        )
        try:
            target = TargetModel(model, device=args.device, labels_only=args.label_only)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--model-file {args.model_file}: {exc}") from exc
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
        where = args.model_file or args.train_pred or "--train-proba"
        raise UsageError(
            f"{where}: cannot score --train records: {first_line(exc)}" + _categorical_hint(exc)
        ) from exc
    recipe = _recipe(args, X_tr)
    labels_only = target.outputs == "labels"
    default = None
    if labels_only:
        default = LABEL_ATTACKS if args.model_file is not None else "gap"
        if args.model_file is not None and recipe is not None:
            default += ",noise_robustness_calibrated"
    attacks = _make_attacks(
        args,
        recipe=recipe,
        can_train=args.recipe is not None,
        device_taken=_takes_device(recipe) or _takes_device(target.model),
        default=default,
        label_only_target=target if labels_only else None,
    )
    perturbing = [n for n, a in attacks.items() if membership_tags(a).queries_perturbed_records]
    if perturbing and args.model_file is None:
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
        where = args.model_file or "--train-proba / --population-proba"
        raise UsageError(
            f"{where}: cannot score the --train and --population records: "
            f"{first_line(exc)}" + _categorical_hint(exc)
        ) from exc
    for finding in findings:
        warnings.warn(str(finding), PlausibilityWarning, stacklevel=1)
    n_train = len(X_tr)
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
        )
    # the verdict and the gate decide from every finding: the inputs' (checked above, so
    # the model is queried once for them) before the attacks' own
    result.findings = tuple(findings) + tuple(result.findings)
    split = result.splits[0]
    given = "precomputed predicted labels" if args.train_pred else "precomputed probabilities"
    context = {
        "model": str(args.model_file or given),
        **({"outputs": f"labels only ({_label_reason(args, target)})"} if labels_only else {}),
        "training records": n_train,
        "members scored": len(split.members),
        "non-member candidates": len(split.nonmembers),
        "attacker public records": len(split.public),
        **_cache_context(args, result),
    }
    return result, context, records


def _check_label_only(args: argparse.Namespace, attacks: dict[str, Any], target: Any) -> None:
    """Refuse attacks that need probabilities on a label-only model, naming those that work."""
    from tabmia.attacks import membership_tags
    from tabmia.recipes import label_attack_names

    needs = [n for n, a in attacks.items() if not membership_tags(a).works_with("labels")]
    if not needs:
        return
    work = label_attack_names(queries_perturbed=args.model_file is not None)
    raise UsageError(
        f"--attacks {','.join(needs)} need the model's probabilities, but it answers with "
        f"labels only ({_label_reason(args, target)}); attacks that work from labels: "
        f"{', '.join(work)}"
        + (
            ""
            if args.model_file is not None
            else " (the others query perturbed records: they need --model-file)"
        )
    )


def _label_reason(args: argparse.Namespace, target: Any) -> str:
    """Why the audited model is label-only, in the terms of the command line."""
    if args.train_pred is not None:
        return "--train-pred / --population-pred"
    return "--label-only" if args.label_only else target.labels_reason


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


def _thread_limits(args: argparse.Namespace) -> Any:
    """BLAS / OpenMP thread limit of this process for ``--threads``."""
    from contextlib import nullcontext

    if args.threads is None:
        return nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=args.threads)


def _set_threads(estimator: Any, threads: int | None) -> Any:
    """The thread parameter of every model in ``estimator`` (nested too) set to
    ``--threads`` (CatBoost's ``thread_count``, XGBoost's / LightGBM's / a forest's
    ``n_jobs``: :mod:`tabmia.backends`)."""
    from tabmia.backends import set_threads

    set_threads(estimator, threads)
    return estimator


def _takes_device(model: Any) -> bool:
    """Whether ``model`` has a part that runs on a device (torch, CatBoost, XGBoost)."""
    from tabmia.backends import has_device

    if model is None:
        return False
    # a torch module as target is queried on the device
    return type(model).__module__.split(".", 1)[0] == "torch" or has_device(model)


def _cache_context(args: argparse.Namespace, result: Any) -> dict[str, Any]:
    """How many shadow / reference models this run trained and how many the cache gave."""
    metrics = result.metrics
    if args.cache_dir is None or "n_models" not in metrics:
        return {}
    counted = metrics.dropna(subset=["n_models"])
    trained, total = int(counted["n_models_trained"].sum()), int(counted["n_models"].sum())
    return {"shadow models trained": trained, "shadow models from --cache-dir": total - trained}


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

    _check_args(args)
    if not 0.0 <= args.delta < 1.0:
        raise UsageError(f"--delta must be in [0, 1), got {args.delta}")
    aim_at_gate_fpr(args)
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
    if args.train is not None and "data" not in context:
        context = {"data": str(args.train), **context}
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
    result = result.with_delta(args.delta)
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
    )
    md = (
        header
        + "\n## Verdict\n\n"
        + f"**{state.state.capitalize()}**\n\n"
        + "".join(f"- {line}\n" for line in verdict)
        + "\n## Attacks\n\n"
        + markdown_table(table)
    )
    print(terminal_summary(header, state, verdict, summary_table(result.metrics)))
    gate = evaluate_cli_gate(args, result)
    write_outputs(args, result, md, context, records, elapsed, verdict, gate=gate, state=state)
    print(
        wrapped(
            f"wrote {args.out}/report.html, results.json, results.md, scores.csv.gz, "
            f"roc.png ({elapsed:.1f} s)"
        )
    )
    return report_gate(gate)
