"""``tabmia audit``'s set-up: the attacks from the flags, the device, the arguments' checks,
the cluster and the threads (what both run modes of :mod:`tabmia.cli.audit` share)."""

from __future__ import annotations

import argparse
import contextlib
import warnings
from pathlib import Path
from typing import Any

from tabmia import backends
from tabmia._attack_builder import build_attacks, unused_settings_note
from tabmia._device import resolve_device_name
from tabmia.attacks import membership_tags
from tabmia.backends import has_device, set_device, set_threads
from tabmia.claims import check_claimed_epsilon
from tabmia.cli._checks import (
    check_attack_flags,
    check_mode,
)
from tabmia.cli._cluster import check_cluster_address, cluster_backend
from tabmia.cli._inputs import (
    UsageError,
    check_count,
    check_out_folder,
    check_size,
)
from tabmia.cli._mlflow import model_source
from tabmia.cli._model_file import load_model
from tabmia.exceptions import RunNote
from tabmia.recipes import (
    AUDIT_ATTACKS,
    LABEL_AUDIT_ATTACKS,
    MODEL_NAMES,
    label_attack_names,
    make_attack,
    make_model,
)
from tabmia.target import n_rows

# the rest are private helpers of tabmia.cli.audit, imported by name
__all__ = ["DEFAULT_ATTACKS", "LABEL_ATTACKS", "SCORE_ATTACKS"]


def _attacks_without_models(names: tuple[str, ...]) -> tuple[str, ...]:
    """Those of the presets ``names`` that train no shadow / reference models."""
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
    requested = str(args.device)
    try:
        resolve_device_name(requested, n_gpus=lambda: 1, check_index=False)
    except ValueError as exc:
        raise UsageError(f"--device: {exc}") from exc
    args.device_given = requested != "auto"
    # backends.gpu_present is looked up when called: tests fake a GPU there
    if requested.startswith("cuda") and not backends.gpu_present():
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
        getattr(args, "model_uri", None),
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
        sources = (model_source(args) is not None) + any(probas) + any(preds)
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
    check_cluster_address(getattr(args, "cluster", None))


def _join_cluster(args: argparse.Namespace, stack: contextlib.ExitStack | None) -> None:
    """Connect to ``--cluster`` until ``stack`` closes, once every check has passed.

    The connection (and its time limit, :data:`tabmia.cli._cluster.CONNECT_TIMEOUT_S`)
    comes after the attacks are known: ``--cluster`` with attacks that train no models
    is refused (:func:`tabmia.cli._checks.check_attack_flags`) without a connection.
    """
    if getattr(args, "cluster", None) is not None and stack is not None:
        stack.enter_context(cluster_backend(args.cluster))


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
    set_threads(estimator, threads)
    return estimator


def _takes_device(model: Any) -> bool:
    """Whether ``model`` has a part that runs on a device (torch, CatBoost, XGBoost)."""
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


def _check_label_only(args: argparse.Namespace, attacks: dict[str, Any], target: Any) -> None:
    """Refuse attacks that need probabilities on a label-only model, naming those that work."""
    needs = [n for n, a in attacks.items() if not membership_tags(a).works_with("labels")]
    if not needs:
        return
    queried = model_source(args) is not None
    work = label_attack_names(queries_perturbed=queried)
    raise UsageError(
        f"--attacks {','.join(needs)} need the model's probabilities, but it answers with "
        f"labels only ({_label_reason(args, target)}); attacks that work from labels: "
        f"{', '.join(work)}"
        + ("" if queried else " (the others query perturbed records: they need --model-file)")
    )


def _label_reason(args: argparse.Namespace, target: Any) -> str:
    """Why the audited model is label-only, in the terms of the command line."""
    if args.train_pred is not None:
        return "--train-pred / --population-pred"
    return "--label-only" if args.label_only else target.labels_reason
