"""Candidate fixes of a model: what each variant changes, the presets, and their checks.

Four kinds of variant, each a :class:`Variant`:

- ``"retrain"``: the recipe retrained with some of its parameters changed (tree depth,
  leaf size, number of trees, L2, early stopping); :func:`retrain` one point,
  :func:`grid` a grid. A Pipeline's parameters are those of its last step (``max_depth``
  means ``model__max_depth``); a name with ``__`` is taken as the recipe's own.
- ``"harden"``: the same fitted model behind a hardened output (:func:`harden`:
  rounded probabilities, top-k, the label only; :class:`~tabmia.whatif.HardenedOutput`).
- ``"dp"``: a differentially private model trained instead (:func:`dp`): diffprivlib's
  logistic regression, naive Bayes or forest, the DP-SGD MLP, or the user's own DP recipe
  with the ε it claims.
- ``"cap"``: the recipe retrained on at most ``k`` records per person (:func:`cap`),
  where the audit has person ids.

Named presets (:data:`PRESETS`) let a user ask for ``"regularise"``, ``"harden"``,
``"dp"`` or ``"cap"`` without knowing the grid: :func:`resolve_variants` maps each to a
small grid for the recipe's class (its library, or for scikit-learn the parameters it
takes). Every variant is checked there, before anything is trained: a parameter the
recipe does not take or a value it refuses (its own parameter validation, run on a clone),
an empty grid, a hardening the model cannot take, a DP model that
does not import here, each raises one ``ValueError`` line.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.model_selection import ParameterGrid

from tabmia.whatif._dp import DP_MODELS, dp_unavailable
from tabmia.whatif.hardening import check_hardening, hardening_name

__all__ = [
    "KINDS",
    "PRESETS",
    "Variant",
    "cap",
    "dp",
    "grid",
    "harden",
    "preset_variants",
    "recipe_parameters",
    "resolve_variants",
    "retrain",
    "with_params",
]

#: The kinds of variant, the original first.
KINDS: tuple[str, ...] = ("original", "retrain", "harden", "dp", "cap")


@dataclass(frozen=True)
class Variant:
    """One candidate fix.

    Attributes
    ----------
    kind : {"original", "retrain", "harden", "dp", "cap"}
    name : str
        Unique within a what-if run; names the variant in tables and files.
    params : dict
        ``retrain``: the parameters changed; ``harden``: ``round`` / ``top_k`` /
        ``labels_only``; ``dp``: ``model`` and the DP model's own parameters; ``cap``:
        ``max_records`` per person.
    epsilon, delta : float or None
        The DP variant's (ε, δ): the parameters it is trained at, and what it claims.
    recipe : estimator or None
        A DP variant's own unfitted recipe (the user's), trained as it is.
    """

    kind: str
    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    epsilon: float | None = None
    delta: float | None = None
    recipe: Any = None

    @property
    def labels_only(self) -> bool:
        """Whether the variant answers with labels only (only label-only attacks run)."""
        return self.kind == "harden" and bool(self.params.get("labels_only"))

    @property
    def retrains(self) -> bool:
        """Whether the variant trains a new model (all but the original and hardenings)."""
        return self.kind in ("retrain", "dp", "cap")

    def describe(self) -> str:
        """The variant in words, for tables."""
        if self.kind == "original":
            return "the model as it is"
        if self.kind == "retrain":
            return "retrained with " + ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        if self.kind == "harden":
            p = self.params
            if p.get("labels_only"):
                return "the same model answering with its label only"
            if p.get("round") is not None:
                return f"the same model, probabilities rounded to {p['round']} decimals"
            return f"the same model, only its top {p['top_k']} probabilities shown"
        if self.kind == "dp":
            what = self.params.get("model", "own DP recipe")
            delta = f", δ = {self.delta:g}" if self.delta else ""
            return f"DP {what} at ε = {self.epsilon:g}{delta}"
        return f"retrained on at most {self.params['max_records']} records per person"


# --------------------------------------------------------------------- builders
def _name_of(params: Mapping[str, Any]) -> str:
    return ",".join(f"{k.rsplit('__', 1)[-1]}={v}" for k, v in params.items())


def retrain(name: str | None = None, **params: Any) -> Variant:
    """The recipe retrained with ``params`` changed (e.g. ``retrain(max_depth=5)``).

    Returns
    -------
    Variant
    """
    if not params:
        raise ValueError("retrain() needs at least one parameter to change")
    return Variant("retrain", name or _name_of(params), dict(params))


def grid(param_grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]) -> list[Variant]:
    """One retrained variant per point of a grid (scikit-learn's ``ParameterGrid``), or of
    a list of parameter dicts (each one point).

    Raises
    ------
    ValueError
        For an empty grid, or one with an empty list of values.

    Returns
    -------
    list of Variant
    """
    if isinstance(param_grid, Mapping):
        if not param_grid or any(len(list(v)) == 0 for v in param_grid.values()):
            raise ValueError("the grid is empty: give each parameter at least one value")
        points = [dict(sorted(p.items())) for p in ParameterGrid(dict(param_grid))]
    else:
        points = [dict(p) for p in param_grid]
        if not points or any(not p for p in points):
            raise ValueError("the grid is empty: give at least one parameter setting")
    return [retrain(**p) for p in points]


def harden(
    *, round: int | None = None, top_k: int | None = None, labels_only: bool = False
) -> Variant:
    """The same fitted model behind a hardened output (no retraining).

    Returns
    -------
    Variant
    """
    check_hardening(round, top_k, labels_only)
    return Variant(
        "harden",
        hardening_name(round, top_k, labels_only),
        {"round": round, "top_k": top_k, "labels_only": bool(labels_only)},
    )


def dp(
    model: Any = "logistic_regression",
    *,
    epsilon: float,
    delta: float = 0.0,
    name: str | None = None,
    **params: Any,
) -> Variant:
    """A DP model trained instead of the recipe, with its (ε, δ).

    Parameters
    ----------
    model : str or estimator, default="logistic_regression"
        One of :data:`~tabmia.whatif._dp.DP_MODELS` (built on a public encoding,
        :func:`~tabmia.whatif._dp.dp_recipe`, and trained at ``epsilon``); or the user's
        own unfitted DP recipe, trained as it is, whose claim is ``epsilon``.
    epsilon, delta : float
        The privacy parameters (for a named model: what it is trained at; δ matters for
        the DP-SGD MLP, diffprivlib's models are pure ε-DP).
    name : str, default=None
        The variant's name (default ``dp_<model>_eps<ε>``).
    **params
        More parameters of a named DP model.

    Returns
    -------
    Variant
    """
    from tabmia.claims import check_claimed_epsilon

    check_claimed_epsilon(epsilon, "epsilon")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    if isinstance(model, str):
        if model not in DP_MODELS:
            raise ValueError(f"unknown DP model {model!r}; choose one of {', '.join(DP_MODELS)}")
        if model == "mlp" and delta == 0.0:
            delta = 1e-5  # DP-SGD gives (ε, δ)-DP with δ > 0
        return Variant(
            "dp",
            name or f"dp_{model}_eps{epsilon:g}",
            {"model": model, **params},
            epsilon=float(epsilon),
            delta=float(delta),
        )
    if not hasattr(model, "fit"):
        raise ValueError(f"model must be a DP model name or an unfitted estimator, got {model!r}")
    label = name or f"dp_{type(model).__name__}_eps{epsilon:g}"
    return Variant(
        "dp", label, dict(params), epsilon=float(epsilon), delta=float(delta), recipe=model
    )


def cap(max_records: int) -> Variant:
    """The recipe retrained on at most ``max_records`` records of each person.

    Returns
    -------
    Variant
    """
    if (
        isinstance(max_records, bool)
        or not isinstance(max_records, (int, np.integer))
        or max_records < 1
    ):
        raise ValueError(
            f"cap needs a whole number of records per person >= 1, got {max_records!r}"
        )
    return Variant("cap", f"cap{int(max_records)}", {"max_records": int(max_records)})


# --------------------------------------------------------------------- the recipe
def _final(recipe: Any) -> tuple[str, Any]:
    """``(parameter prefix, model)`` of a recipe: a Pipeline's last step, else itself."""
    steps = getattr(recipe, "steps", None)
    if isinstance(steps, list) and steps:
        name, last = steps[-1]
        inner_prefix, model = _final(last)
        return f"{name}__{inner_prefix}", model
    return "", recipe


def recipe_parameters(recipe: Any) -> set[str]:
    """Every parameter name the recipe takes: ``get_params(deep=True)``, and for its final
    model also the constructor's (CatBoost's ``get_params`` lists only those it was given)."""
    names = set(recipe.get_params(deep=True)) if hasattr(recipe, "get_params") else set()
    prefix, model = _final(recipe)
    try:
        signature = inspect.signature(type(model).__init__)
    except (TypeError, ValueError):
        return names
    for p in signature.parameters.values():
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            names.add(prefix + p.name)
    return names


def with_params(recipe: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as the recipe's own ``set_params`` names (a Pipeline's last step's).

    Raises
    ------
    ValueError
        Naming the first parameter the recipe does not take.
    """
    known = recipe_parameters(recipe)
    prefix, model = _final(recipe)
    out = {}
    for key, value in params.items():
        full = key if key in known and "__" in key else prefix + key
        if full not in known:
            options = sorted(
                k[len(prefix) :]
                for k in known
                if k.startswith(prefix) and "__" not in k[len(prefix) :]
            )
            raise ValueError(
                f"the grid names {key!r}, which {type(model).__name__} does not take "
                f"(it takes {', '.join(options[:12])}{' ...' if len(options) > 12 else ''})"
            )
        out[full] = value
    return out


# ------------------------------------------------------------------------ presets
#: Regularising grids by library (CatBoost, XGBoost, LightGBM, torch MLP).
_BOOSTING_GRIDS: dict[str, list[dict[str, Any]]] = {
    "catboost": [{"depth": 4}, {"l2_leaf_reg": 30.0}, {"depth": 4, "iterations": 100}],
    "xgboost": [{"max_depth": 3}, {"min_child_weight": 10}, {"reg_lambda": 30.0}],
    "lightgbm": [{"num_leaves": 8}, {"min_child_samples": 50}, {"reg_lambda": 30.0}],
    "torch": [{"weight_decay": 1e-3}, {"epochs": 20}, {"weight_decay": 1e-2}],
}
#: Regularising grids of scikit-learn models, by the parameters they take (first match).
_SKLEARN_GRIDS: list[tuple[frozenset[str], list[dict[str, Any]]]] = [
    (
        frozenset({"n_estimators", "max_depth", "min_samples_leaf"}),  # forests, boosting
        [{"max_depth": 6}, {"min_samples_leaf": 10}, {"max_depth": 10, "min_samples_leaf": 3}],
    ),
    (
        frozenset({"l2_regularization", "early_stopping", "max_depth"}),  # HistGradientBoosting
        [{"max_depth": 3}, {"l2_regularization": 10.0}, {"early_stopping": True}],
    ),
    (
        frozenset({"max_depth", "min_samples_leaf"}),  # a single tree
        [{"max_depth": 4}, {"min_samples_leaf": 10}, {"max_depth": 8}],
    ),
    (
        frozenset({"alpha", "early_stopping"}),  # MLPClassifier
        [{"alpha": 1e-2}, {"alpha": 1.0}, {"early_stopping": True}],
    ),
    (frozenset({"C"}), [{"C": 0.1}, {"C": 0.01}]),  # linear models
]


def _regularise(recipe: Any) -> list[Variant]:
    from tabmia.backends import backend_of

    _, model = _final(recipe)
    backend = backend_of(model).name
    if backend in _BOOSTING_GRIDS:
        return grid(_BOOSTING_GRIDS[backend])
    takes = {k.rsplit("__", 1)[-1] for k in recipe_parameters(model)}
    for needs, points in _SKLEARN_GRIDS:
        if needs <= takes:
            return grid(points)
    raise ValueError(
        f'no "regularise" preset for {type(model).__name__}: name its parameters with '
        "grid({...}) or retrain(...)"
    )


def _tree_like(recipe: Any) -> bool:
    from tabmia.backends import backend_of

    _, model = _final(recipe)
    if backend_of(model).name in ("catboost", "xgboost", "lightgbm"):
        return True
    takes = {k.rsplit("__", 1)[-1] for k in recipe_parameters(model)}
    return "max_depth" in takes or "depth" in takes


def _dp_preset(recipe: Any) -> list[Variant]:
    from tabmia.backends import backend_of

    _, model = _final(recipe)
    if backend_of(model).name == "torch":
        return [dp("mlp", epsilon=1.0, delta=1e-5), dp("mlp", epsilon=8.0, delta=1e-5)]
    second = "random_forest" if _tree_like(recipe) else "gaussian_nb"
    return [
        dp("logistic_regression", epsilon=1.0),
        dp("logistic_regression", epsilon=8.0),
        dp(second, epsilon=4.0),
    ]


def _harden_preset(n_classes: int) -> list[Variant]:
    middle = harden(top_k=1) if n_classes > 2 else harden(round=1)
    return [harden(round=2), middle, harden(labels_only=True)]


#: Named presets a user can ask for instead of a grid.
PRESETS: dict[str, str] = {
    "regularise": "a small regularising grid for the recipe's class (depth, leaf size, "
    "trees, L2, early stopping)",
    "harden": "round to 2 decimals, round to 1 (binary) or top-1 (3+ classes), label only",
    "dp": "DP logistic regression at ε = 1 and 8, and a DP forest (tree recipes) or naive "
    "Bayes at ε = 4 (diffprivlib); a torch MLP recipe: DP-SGD at ε = 1 and 8 (Opacus)",
    "cap": "at most 1 and 2 records per person (needs person ids)",
}


def preset_variants(name: str, recipe: Any, n_classes: int, has_groups: bool) -> list[Variant]:
    """The variants of preset ``name`` for ``recipe``.

    Raises
    ------
    ValueError
        For an unknown preset, ``"cap"`` without person ids, or a recipe no preset knows.

    Returns
    -------
    list of Variant
    """
    if name in ("regularise", "regularize"):
        return _regularise(recipe)
    if name == "harden":
        return _harden_preset(n_classes)
    if name == "dp":
        return _dp_preset(recipe)
    if name == "cap":
        if not has_groups:
            raise ValueError('the "cap" preset needs person ids (groups_train, groups_population)')
        return [cap(1), cap(2)]
    raise ValueError(f"unknown variant preset {name!r}; choose from {', '.join(PRESETS)}")


def resolve_variants(
    specs: str | Variant | Iterable[str | Variant],
    recipe: Any,
    *,
    classes: np.ndarray,
    has_proba: bool,
    has_groups: bool,
) -> list[Variant]:
    """The variants ``specs`` asks for, checked against the recipe, the original first.

    ``specs``: preset names (:data:`PRESETS`; ``"default"`` is regularise, harden and dp,
    and cap where there are person ids; ``"original"`` adds nothing), :class:`Variant`
    objects, or a list of both.

    Raises
    ------
    ValueError
        One line, before anything is trained: an empty list, an unknown preset, a
        parameter the recipe does not take, a hardening the model cannot take, a DP model
        that cannot be built here, a person cap without person ids, two variants of one
        name.

    Returns
    -------
    list of Variant
    """
    if isinstance(specs, (str, Variant)):
        specs = [specs]
    specs = list(specs)
    if not specs:
        raise ValueError("no variants: give preset names or variants (the grid is empty)")
    out = [Variant("original", "original")]
    for spec in specs:
        if spec == "original":  # the original alone (always audited)
            continue
        if isinstance(spec, str):
            names = (
                ["regularise", "harden", "dp", *(["cap"] if has_groups else [])]
                if spec == "default"
                else [spec]
            )
            for name in names:
                out.extend(preset_variants(name, recipe, len(classes), has_groups))
        elif isinstance(spec, Variant):
            out.append(spec)
        else:
            raise ValueError(f"a variant is a preset name or a Variant, got {spec!r}")
    seen: set[str] = set()
    for v in out:
        if v.name in seen:
            raise ValueError(f"two variants are named {v.name!r}: give one a name=")
        seen.add(v.name)
        _check(v, recipe, classes, has_proba, has_groups)
    return out


def _validate_values(v: Variant, recipe: Any) -> None:
    """Refuse a value the recipe's own parameter validation refuses, before training.

    scikit-learn checks parameter values only in ``fit``: the variant's parameters are set
    on a clone and every step that validates its parameters (``_validate_params``) does so
    now. Estimators without it (CatBoost, XGBoost, ...) check their values when they fit.
    """
    from tabmia._estimators import clone_unfitted

    trial = clone_unfitted(recipe)
    try:
        trial.set_params(**with_params(recipe, v.params))
        steps = [trial, *(step for _, step in getattr(trial, "steps", None) or [])]
        for est in steps:
            # BaseEstimator has _validate_params, but only a class that declares its
            # _parameter_constraints can run it
            if hasattr(est, "_parameter_constraints") and callable(
                getattr(est, "_validate_params", None)
            ):
                est._validate_params()
    except (ValueError, TypeError) as exc:  # InvalidParameterError is both
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"variant {v.name}: {text}") from exc


def _check(v: Variant, recipe: Any, classes: np.ndarray, has_proba: bool, has_groups: bool) -> None:
    if v.kind == "retrain":
        with_params(recipe, v.params)
        _validate_values(v, recipe)
    elif v.kind == "harden":
        _, model = _final(recipe)
        check_hardening(
            v.params.get("round"),
            v.params.get("top_k"),
            bool(v.params.get("labels_only")),
            n_classes=len(classes),
            has_proba=has_proba,
            model=type(model).__name__,
        )
    elif v.kind == "dp" and v.recipe is None:
        why = dp_unavailable(str(v.params["model"]))
        if why:
            raise ValueError(f"variant {v.name}: {why}; install tabmia[dp]")
    elif v.kind == "cap" and not has_groups:
        raise ValueError(
            f"variant {v.name} caps records per person: give the person ids "
            "(groups_train, groups_population)"
        )
    elif v.kind not in KINDS:
        raise ValueError(f"variant {v.name}: unknown kind {v.kind!r}")
