"""What was attacked, as the verdict names it: the audited model (an estimator, or saved
outputs of one) and the recipe the attacks' shadow / reference models copy."""

from __future__ import annotations

from typing import Any

import pandas as pd


def model_description(target: Any) -> str:
    """A short name of the audited model, by what the user gave: the estimator's class (a
    pipeline's last step), "predict-only" where it has no probabilities, or the saved
    probabilities or labels."""
    from tabmia.target import PrecomputedLabels, PrecomputedProbabilities

    model = getattr(target, "model", target)  # TargetModel wraps the user's model
    if isinstance(model, PrecomputedProbabilities):
        return "precomputed probabilities"
    if isinstance(model, PrecomputedLabels):
        return "saved predicted labels"
    steps = getattr(model, "steps", None)
    name = f"{type(steps[-1][1]).__name__} (in a Pipeline)" if steps else type(model).__name__
    kind = getattr(target, "_kind", None)
    return f"predict-only {name}" if kind == "predict" else name


def attack_recipes(attack: Any) -> list[str]:
    """What the shadow / reference models of ``attack`` are trained as, one name each.

    The recipe's class, or "the target's own recipe" where the attack clones it; empty for
    an attack that trains no models. Its membership tags name the parameters to read.
    """
    from sklearn.utils import get_tags

    params = get_tags(attack).membership_tags.model_recipe_params
    recipes = [getattr(attack, p) for p in params]
    return [
        "the target's own recipe (an unfitted clone)" if r is None else model_description(r)
        for r in recipes
    ]


#: Separates an attack's recipe names in its metrics row's ``model_recipe``.
RECIPE_SEPARATOR = "; "


def shadow_recipe(result: Any, label: str | None = None) -> str | None:
    """The training recipe the shadow / reference models of ``result``'s attacks copy.

    Read from the fitted attacks, or, where they were let go after scoring
    (``keep_attacks=False``), from the ``model_recipe`` column of ``result.metrics``.

    Parameters
    ----------
    result : ExperimentResult
    label : str, default=None
        What the caller calls the recipe (a preset name, a file); by default the
        recipe's class, or "the target's own recipe" where the attacks clone it.

    Returns
    -------
    str or None
        None when no attack trained shadow or reference models.
    """
    attacks = getattr(result, "attacks", None) or []
    names = {name for attack in attacks for name in attack_recipes(attack)}
    metrics = getattr(result, "metrics", None)
    if not attacks and isinstance(metrics, pd.DataFrame) and "model_recipe" in metrics:
        cells = metrics["model_recipe"].dropna()
        names = {name for cell in cells for name in str(cell).split(RECIPE_SEPARATOR) if name}
    if not names:
        return None
    if label is not None:
        return label
    return ", ".join(sorted(names))


def _target_description(target: Any) -> str:
    """The audited model as the verdict names it (a model, or saved outputs of one)."""
    from tabmia.target import as_target

    try:
        name = model_description(as_target(target))
    except (TypeError, ValueError):
        name = model_description(target)
    return name if name.startswith(("saved", "precomputed")) else f"{name} model"


def _article(name: str) -> str:
    """``name`` with its article: "a RandomForestClassifier model", "saved predicted
    labels of a model"."""
    if name.startswith(("saved", "precomputed")):
        return f"the {name} of a model"
    if name.startswith("the "):
        return name
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name
