"""``tabmia audit``'s checks that every flag acts: mode, attack flags, model counts, FPR.

A flag that the chosen mode or attacks ignore is an error naming why; counts of shadow
/ reference models far beyond the data ask for ``--force``; an ``--fpr`` the attacks'
calibration records cannot promise is refused before anything trains; a preset
``--recipe`` that preprocesses categories unlike the model is refused. Each check
raises :class:`~tabmia.cli._inputs.UsageError` (one ``tabmia: error:`` line, status 2).
"""

from __future__ import annotations

import argparse
from typing import Any

from tabmia._attack_builder import settings_not_taken
from tabmia.attacks import membership_tags
from tabmia.cli._inputs import UsageError, model_categories
from tabmia.recipes import MODEL_NAMES

__all__ = [
    "MAX_MODELS",
    "check_attack_flags",
    "check_mode",
    "check_model_counts",
    "check_recipe_matches",
    "more_records_hint",
]

#: Shadow / reference models per attack above which ``--force`` is needed (a typo such
#: as ``--n-shadow 100000`` for 100 would otherwise start training them).
MAX_MODELS = 1024

# flags of the built-in game only, of your own model only, of a model file only
_GAME_ONLY = ("dataset", "model", "seeds", "train_size", "prior", "max_records")
_OWN_ONLY = (
    "trust_types",
    "reconstruct",
    "reconstruct_time",
    "label",
    "recipe",
    "max_members",
    "encoding",
    "sep",
    "categorical",
    "label_only",
)
_MODEL_FILE_ONLY = ("trust_types", "categorical", "reconstruct", "reconstruct_time")
# flags that set a runner setting of the attacks: (setting, what it sets, an attack that
# takes it); an attack takes the settings of its tags' runner_settings
_ATTACK_FLAGS = {
    "n_shadow": ("n_shadow", "LiRA's shadow models", "lira"),
    "n_references": ("n_reference", "RMIA's / Calibrated's reference models", "rmia"),
    "cache_dir": ("cache_dir", "where shadow / reference models are kept", "lira"),
    "n_jobs": ("n_jobs", "parallel shadow / reference model fits", "lira"),
    "max_memory": ("max_memory", "the memory that scoring candidates may hold", "lira"),
    # the attacks whose models the shadow engine trains through joblib (those that keep
    # them in a cache): what a cluster runs; refused here, before any connection
    "cluster": ("cache_dir", "where shadow / reference models train", "lira"),
}
# what the model-count settings count, in messages
_COUNTED = {"n_shadow": "shadow models", "n_reference": "reference models"}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _own_mode(args: argparse.Namespace) -> str | None:
    """How the user's own model is given, or None for the built-in game."""
    if args.model_file is not None:
        return "--model-file"
    if getattr(args, "model_uri", None) is not None:
        return "--model-uri"
    if args.train_proba is not None or args.population_proba is not None:
        return "--train-proba / --population-proba"
    if args.train_pred is not None or args.population_pred is not None:
        return "--train-pred / --population-pred"
    if args.train is not None or args.population is not None:
        return "--train / --population"
    return None


def check_mode(args: argparse.Namespace) -> None:
    """Refuse a flag given (command line or config) that the chosen mode ignores."""
    given: set[str] = getattr(args, "given", set())
    if "unresolved" in given and not getattr(args, "fail_above", ()):
        raise UsageError(
            "--unresolved says what the gate does when the audit cannot tell, but no "
            "--fail-above limit sets a gate: remove it, or add --fail-above"
        )
    mode = _own_mode(args)
    if mode is not None:
        stray = [d for d in _GAME_ONLY if d in given]
        if stray:
            raise UsageError(
                f"{_flag(stray[0])} applies to the built-in game (--dataset, --model); an "
                f"audit of your own model ({mode}) does not use it: remove it"
            )
        stray = [d for d in _MODEL_FILE_ONLY if d in given]
        if getattr(args, "model_uri", None) is not None and "trust_types" in stray:
            raise UsageError(
                "--trust-types applies to a .skops --model-file; --model-uri loads the model "
                "through MLflow: remove it"
            )
        if args.model_file is None and getattr(args, "model_uri", None) is None and stray:
            raise UsageError(
                f"{_flag(stray[0])} applies to a --model-file; an audit of precomputed "
                f"outputs ({mode}) does not use it: remove it"
            )
        return
    stray = [d for d in _OWN_ONLY if d in given]
    if stray:
        raise UsageError(
            f"{_flag(stray[0])} applies to an audit of your own model (--model-file, "
            "--train-proba / --population-proba or --train-pred / --population-pred, with "
            "--train, --population and --label); "
            f"the built-in game (--dataset {args.dataset}) does not use it: remove it, or "
            "give your model and data"
        )


def check_attack_flags(args: argparse.Namespace, attacks: dict[str, Any]) -> None:
    """Refuse an attack flag (``--n-shadow``, ...) that none of the attacks takes."""
    given: set[str] = getattr(args, "given", set())
    # whether an interrupted run can keep models in --cache-dir (tabmia.cli says so)
    args.trains_models = not settings_not_taken(attacks, ["cache_dir"])
    for dest, (setting, what, example) in _ATTACK_FLAGS.items():
        if dest in given and settings_not_taken(attacks, [setting]):
            raise UsageError(
                f"{_flag(dest)} sets {what}, but none of the attacks ({', '.join(attacks)}) "
                f"has any: remove it, or add an attack that does (e.g. {example})"
            )
    if "recipe" in given and not any(membership_tags(a).trains_models for a in attacks.values()):
        raise UsageError(
            f"--recipe sets the recipe of shadow / reference models, but none of the attacks "
            f"({', '.join(attacks)}) trains any: remove it, or add an attack that does "
            "(e.g. lira)"
        )


def check_model_counts(args: argparse.Namespace, attacks: dict[str, Any], n_public: int) -> None:
    """Refuse shadow / reference counts above :data:`MAX_MODELS` or the public records,
    unless ``--force``."""
    if getattr(args, "force", False):
        return
    flags = {setting: _flag(dest) for dest, (setting, _, _) in _ATTACK_FLAGS.items()}
    for name, attack in attacks.items():
        for param in membership_tags(attack).model_count_params:
            n = getattr(attack, param)
            over = [f"the ceiling of {MAX_MODELS}"] if n > MAX_MODELS else []
            if n > n_public:
                over.append(f"the {n_public} public records they train on")
            if over:
                raise UsageError(
                    f"{name}: {n} {_COUNTED.get(param, 'models')} "
                    f"({flags.get(param, param)} or the attack spec) is more than "
                    f"{' and '.join(over)}: a typo? Pass --force to train them"
                )


def more_records_hint(args: argparse.Namespace) -> str:
    """What gives an attack more calibration records, in the run's mode."""
    if _own_mode(args) is not None:
        return "raise --fpr, or give more --population records (or a larger --public-size)"
    return "raise --fpr or --public-size, or use a larger --dataset (or --max-records)"


def check_recipe_matches(model: Any, recipe: str | None, model_file: Any, force: bool) -> None:
    """Refuse a preset ``--recipe`` (one-hot categories) for a model that takes its
    categories natively (CatBoost ``cat_features``, XGBoost / LightGBM categories)."""
    if recipe not in MODEL_NAMES or force:
        return
    native = _native_categorical(model)
    if native is None:
        return
    kind, columns = native
    raise UsageError(
        f"--recipe {recipe} is a preset that one-hot encodes categorical columns, but "
        f"{model_file} is a {kind} that takes categorical features natively "
        f"({', '.join(map(str, columns[:5]))}{' ...' if len(columns) > 5 else ''}): shadow "
        "models trained another way than the target understate its leak. Give the model's "
        "own recipe: joblib.dump the unfitted estimator it was built from (for CatBoost, "
        "type(model)(**model.get_params())) and pass --recipe FILE.joblib (--force uses "
        "the preset anyway)"
    )


def _native_categorical(model: Any) -> tuple[str, list[Any]] | None:
    """``(class name, categorical columns)`` of a model that handles categories itself."""
    steps = getattr(model, "steps", None)
    final = steps[-1][1] if steps else model
    indices = getattr(final, "get_cat_feature_indices", None)
    if callable(indices):
        try:
            found = list(indices())
        except Exception:  # noqa: BLE001 - unfitted or not a CatBoost model after all
            found = []
        if found:
            names = getattr(final, "feature_names_", None)
            return type(final).__name__, [names[i] for i in found] if names else found
    stored = model_categories(final)
    if stored:
        return type(final).__name__, list(stored)
    return None
