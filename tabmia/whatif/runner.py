"""Re-audit candidate fixes of a model side by side: :func:`whatif` and :func:`reaudit`.

Every variant is audited by :func:`tabmia.audit.audit_model` with the same attacks, the
same population records and the same ``random_state``, so the public records, the
non-member candidates and the attacks' seeds are those of the original's audit; its
utility is measured on a part of the population carved out before any audit (the same
records for every variant, scored by no attack). What can be shared is: a hardened
variant is the original fitted model behind a wrapper (no retraining), and its shadow
models are the original audit's, loaded from the shadow cache and scored through the
hardening (:class:`tabmia.shadow.ShadowPopulation` re-scores a wrapper's inner models);
shadows of every recipe are cached by recipe and training size (in the output folder, or
a scratch folder for the run); each finished variant is one file there, and a rerun
skips it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from tqdm.auto import tqdm

from tabmia._estimators import clone_unfitted, is_fitted
from tabmia._groups import check_groups, person_codes
from tabmia._rows import n_rows, take_rows
from tabmia._seeding import derived_seed, seed_from
from tabmia.attacks import GapAttack, NoiseRobustnessAttack
from tabmia.gate import parse_limits
from tabmia.settings import RunSettings
from tabmia.shadow._cache import _describe
from tabmia.whatif._variant_audit import _run_variant, _RunInputs, _train
from tabmia.whatif.result import VariantRun, VariantStore, WhatIfResult
from tabmia.whatif.variants import Variant, resolve_variants

__all__ = ["whatif", "reaudit", "default_label_attacks", "UTILITY_METRICS"]

#: Utility measures of the held-out records; higher is better except ``log_loss``.
UTILITY_METRICS: tuple[str, ...] = ("roc_auc", "accuracy", "log_loss")


def default_label_attacks(fpr: float = 0.01) -> dict[str, Any]:
    """The attacks a label-only variant is audited with when none are given: the gap
    attack and noise robustness (30 noisy copies per record)."""
    return {
        "gap": GapAttack(fpr=fpr),
        "noise_robustness": NoiseRobustnessAttack(n_noise=30, fpr=fpr),
    }


def _utility_split(
    n: int, fraction: float, seed: int, groups: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (audited rows, held-out utility rows) of the population, by person."""
    codes = person_codes(groups) if groups is not None else np.arange(n)
    n_units = int(codes.max()) + 1 if codes.size else 0
    n_util = int(round(fraction * n_units))
    if n_util < 1 or n_util >= n_units:
        raise ValueError(
            f"utility_fraction={fraction:g} of {n_units} population "
            f"{'persons' if groups is not None else 'records'} leaves no utility or no audit records"
        )
    held = np.random.RandomState(seed).permutation(n_units)[:n_util]
    util = np.isin(codes, held)
    return np.flatnonzero(~util), np.flatnonzero(util)


#: The options of :func:`whatif` that change what a finished variant holds (its key).
_KEYED_OPTIONS = ("public_fraction", "utility_fraction", "fprs", "fpr_fallback", "dp_audit")


def _settings_key(parts: Any) -> str:
    return str(joblib.hash(parts))


def whatif(
    estimator: Any,
    X_train: Any,
    y_train: Any,
    X_population: Any,
    y_population: Any,
    attacks: dict[str, Any],
    *,
    variants: str | Variant | Iterable[str | Variant] = "default",
    label_attacks: dict[str, Any] | None = None,
    groups_train: Any = None,
    groups_population: Any = None,
    limit: str = "tpr@0.01=0.05",
    utility_metric: str = "roc_auc",
    utility_fraction: float = 0.3,
    public_fraction: float = 0.5,
    fprs: tuple[float, ...] = (0.01, 0.001),
    fpr_fallback: bool = False,
    dp_audit: dict[str, Any] | None = None,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    output_dir: Any = None,
    share_shadows: bool = True,
    progress: bool = False,
) -> WhatIfResult:
    """Audit candidate fixes of a model with the same attacks on the same records.

    Parameters
    ----------
    estimator : estimator
        The target: a fitted model (audited as it is; its recipe is ``clone(estimator)``)
        or an unfitted recipe (trained on ``X_train`` with every ``random_state`` set to
        the run's seed).
    X_train, y_train : records and labels the target trains on (the members).
    X_population, y_population : records of the same population it never saw. A share
        ``utility_fraction`` is held out to measure utility (scored by no attack); the
        rest is split into public records and non-member candidates as
        :func:`~tabmia.audit.audit_model` splits it, identically for every variant.
    attacks : dict of str -> attack
        Unfitted attacks, run on every variant that gives what they need.
    variants : preset name, Variant, or a list of them, default="default"
        The candidates (:func:`~tabmia.whatif.resolve_variants`): ``"regularise"``,
        ``"harden"``, ``"dp"``, ``"cap"``, ``"default"`` (all that apply), or variants
        built by :func:`~tabmia.whatif.retrain`, :func:`~tabmia.whatif.grid`,
        :func:`~tabmia.whatif.harden`, :func:`~tabmia.whatif.dp`, :func:`~tabmia.whatif.cap`.
        The original is always audited first.
    label_attacks : dict of str -> attack, default=None
        The attacks of a label-only variant (the probability attacks cannot run on it);
        :func:`default_label_attacks` when None.
    groups_train, groups_population : array-like, default=None
        Person ids (both or neither): the splits keep persons whole, and the person-cap
        variants become possible.
    limit : str, default="tpr@0.01=0.05"
        The privacy gate each variant must pass (:func:`tabmia.gate.evaluate_gate`).
    utility_metric : {"roc_auc", "accuracy", "log_loss"}, default="roc_auc"
        What "utility lost" means when choosing the best passing variant.
    utility_fraction : float, default=0.3
        Share of the population (persons, with groups) held out for utility.
    public_fraction, fprs, fpr_fallback
        As :func:`~tabmia.audit.audit_model`'s.
    dp_audit : dict, default=None
        Settings of the one-run DP audit of each DP variant (:class:`tabmia.dp.OneRunAudit`:
        ``n_canaries``, ``canaries``, ``guesses``, ...); outlier canaries by default.
    n_bootstrap : int, default=1000
        Replicates of the paired bootstraps.
    confidence : float, default=0.95
        Of every interval.
    random_state : int, default=0
        One seed for every audit (so the splits are the same), the utility hold-out, the
        targets' training and the DP audits. A RandomState is drawn from once.
    output_dir : str or path, default=None
        Folder of finished variants (``variants/``, one file each: a rerun skips them)
        and of the shadow models, cached by recipe and training size (``shadows/``).
        Without it the shadows are cached in a scratch folder for the run.
    share_shadows : bool, default=True
        Variants share their shadow models where they can: a hardened variant's are the
        original's, scored through the hardening; variants of one recipe and training
        size share theirs. False gives every variant shadows of its own (N separate
        audits, with the same scores).
    progress : bool, default=False
        A tqdm bar over the variants.

    Returns
    -------
    WhatIfResult

    Raises
    ------
    ValueError
        Before anything is trained: a bad variant (:func:`resolve_variants`), a bad limit,
        mismatched records and labels, groups on one side only.
    """
    t_start = time.perf_counter()
    y_train, y_population, g_train, g_pop = _checked_inputs(
        attacks,
        limit,
        utility_metric,
        utility_fraction,
        (X_train, y_train, X_population, y_population),
        groups_train,
        groups_population,
    )
    recipe = clone_unfitted(estimator)
    classes = np.unique(np.r_[y_train, y_population])
    resolved = resolve_variants(
        variants,
        recipe,
        classes=classes,
        has_proba=hasattr(estimator, "predict_proba"),
        has_groups=g_train is not None,
    )
    # one int seed: every audit_model call splits the same way
    settings = RunSettings(
        fprs=tuple(fprs),
        random_state=seed_from(random_state),
        fpr_fallback=fpr_fallback,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        output_dir=output_dir,
    )
    options = {
        "limit": limit,
        "utility_metric": utility_metric,
        "utility_fraction": utility_fraction,
        "public_fraction": public_fraction,
        "fprs": settings.fprs,
        "fpr_fallback": fpr_fallback,
        "dp_audit": dp_audit,
        "n_bootstrap": n_bootstrap,
        "confidence": confidence,
        "share_shadows": share_shadows,
    }
    fpr = float(getattr(next(iter(attacks.values())), "fpr", 0.01) or 0.01)
    protos = (attacks, label_attacks if label_attacks is not None else default_label_attacks(fpr))
    result = _audited_variants(
        (estimator, recipe, classes),
        (X_train, y_train, X_population, y_population),
        (g_train, g_pop),
        resolved,
        protos,
        settings,
        options,
        progress,
    )
    result.settings["seconds"] = time.perf_counter() - t_start
    result.inputs.update(label_attacks=label_attacks, groups_train=groups_train, options=options)
    return result


def _audited_variants(
    model: tuple[Any, Any, np.ndarray],
    data: tuple[Any, np.ndarray, Any, np.ndarray],
    groups: tuple[np.ndarray | None, np.ndarray | None],
    resolved: list[Variant],
    protos: tuple[dict[str, Any], dict[str, Any]],
    settings: RunSettings,
    options: dict[str, Any],
    progress: bool,
) -> WhatIfResult:
    """The what-if run of :func:`whatif` on checked inputs: ``model`` is (the estimator,
    its recipe, every class), ``protos`` (the attacks, the label-only variants' attacks).
    The result's ``settings`` lack ``seconds``, its ``inputs`` the caller's own."""
    estimator, recipe, classes = model
    X_train, y_train, X_population, y_population = data
    g_train, g_pop = groups
    fitted = is_fitted(estimator)
    seed = int(settings.random_state)
    # --- the utility hold-out, the same for every variant ------------------------------
    audit_rows, util_rows = _utility_split(
        n_rows(X_population), options["utility_fraction"], derived_seed(seed), g_pop
    )
    store, shadow_root, scratch = _folders(settings.output_dir)
    base_key = _settings_key(
        (
            *data,
            *groups,
            _describe(recipe),
            fitted,
            *({k: _describe(a) for k, a in attacks.items()} for attacks in protos),
            seed,
            *(options[k] for k in _KEYED_OPTIONS),
        )
    )
    run = _RunInputs(
        original_target=_lazy_original(estimator, fitted, recipe, X_train, y_train, seed),
        recipe=recipe,
        X_train=X_train,
        y_train=y_train,
        g_train=g_train,
        X_pop=take_rows(X_population, audit_rows),
        y_pop=y_population[audit_rows],
        g_pop=None if g_pop is None else g_pop[audit_rows],
        X_population=X_population,
        X_util=take_rows(X_population, util_rows),
        classes=classes,
        attacks=protos[0],
        label_attacks=protos[1],
        public_fraction=options["public_fraction"],
        dp_audit=options["dp_audit"] or {},
        shadow_root=shadow_root,
        shared=options["share_shadows"],
        settings=settings,
    )
    utility_y = np.searchsorted(classes, y_population[util_rows])
    try:
        runs = _variant_runs(resolved, run, store, base_key, utility_y, progress)
    finally:
        if scratch is not None:
            scratch.cleanup()
    result_settings = {
        **{k: options[k] for k in ("limit", "utility_metric", "confidence")},
        "n_bootstrap": int(settings.n_bootstrap),
        **{k: options[k] for k in ("fprs", "public_fraction", "utility_fraction")},
        "random_state": seed,
        "audit_rows": audit_rows,
        "utility_rows": util_rows,
        "fitted_target": fitted,
    }
    inputs = {
        "estimator": estimator,
        "X_train": X_train,
        "y_train": y_train,
        "attacks": protos[0],
    }
    return WhatIfResult(resolved, runs, classes, result_settings, inputs)


def _lazy_original(
    estimator: Any, fitted: bool, recipe: Any, X_train: Any, y_train: np.ndarray, seed: int
) -> Any:
    """The original target, given or trained on first use (a run whose variants are all
    retrained never trains it)."""
    original: dict[str, Any] = {}

    def original_target() -> Any:
        if "model" not in original:
            original["model"] = estimator if fitted else _train(recipe, X_train, y_train, seed)
        return original["model"]

    return original_target


def _variant_runs(
    resolved: list[Variant],
    run: _RunInputs,
    store: VariantStore | None,
    base_key: str,
    utility_y: np.ndarray,
    progress: bool,
) -> list[VariantRun]:
    """Each variant's run: loaded from ``store`` where it was finished before, else
    built, audited and saved there."""
    runs: list[VariantRun] = []
    bar = tqdm(resolved, desc="whatif", unit="variant", disable=not progress)
    for variant in bar:
        bar.set_postfix_str(variant.name)
        key = _variant_key(base_key, variant, run.shared)
        found = store.load(variant.name, key) if store is not None else None
        if found is None:
            found = _run_variant(variant, run)
            found.utility_y = utility_y
            if store is not None:
                store.save(key, found)
        runs.append(found)
    return runs


def _checked_inputs(
    attacks: Any,
    limit: str,
    utility_metric: str,
    utility_fraction: float,
    data: tuple[Any, Any, Any, Any],
    groups_train: Any,
    groups_population: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The labels as arrays and the checked person ids (or None), after every check
    that comes before anything is trained."""
    if not isinstance(attacks, dict) or not attacks:
        raise ValueError("attacks must be a non-empty dict of name -> attack")
    parse_limits(limit)
    if utility_metric not in UTILITY_METRICS:
        raise ValueError(f"utility_metric must be one of {UTILITY_METRICS}, got {utility_metric!r}")
    if not 0.0 < utility_fraction < 1.0:
        raise ValueError(f"utility_fraction must be in (0, 1), got {utility_fraction}")
    X_train, y_train, X_population, y_population = data
    y_train, y_population = np.asarray(y_train), np.asarray(y_population)
    for what, X, y in (("training", X_train, y_train), ("population", X_population, y_population)):
        if n_rows(X) != y.shape[0]:
            raise ValueError(f"the {what} data has {n_rows(X)} records but {y.shape[0]} labels")
    if (groups_train is None) != (groups_population is None):
        raise ValueError("give both groups_train and groups_population, or neither")
    if groups_train is None:
        return y_train, y_population, None, None
    return (
        y_train,
        y_population,
        check_groups(groups_train, n_rows(X_train), name="groups_train"),
        check_groups(groups_population, n_rows(X_population), name="groups_population"),
    )


def _folders(
    output_dir: Any,
) -> tuple[VariantStore | None, Path, tempfile.TemporaryDirectory | None]:
    """(store of finished variants, shadow cache folder, scratch folder to clean up):
    under ``output_dir``, or the shadows in a scratch folder for the run."""
    if output_dir is not None:
        root = Path(output_dir)
        return VariantStore(root / "variants"), root / "shadows", None
    scratch = tempfile.TemporaryDirectory(prefix="tabmia-whatif-")
    return None, Path(scratch.name) / "shadows", scratch


def _variant_key(base_key: str, variant: Variant, share_shadows: bool) -> str:
    """The key a finished variant is stored under: the run's inputs and the variant's."""
    return _settings_key(
        (
            base_key,
            variant.kind,
            variant.name,
            dict(variant.params),
            variant.epsilon,
            variant.delta,
            None if variant.recipe is None else _describe(variant.recipe),
            share_shadows,
        )
    )


def reaudit(
    result: WhatIfResult,
    X_fresh: Any,
    y_fresh: Any,
    *,
    variant: str | None = None,
    groups_fresh: Any = None,
    random_state: Any = None,
    output_dir: Any = None,
) -> WhatIfResult:
    """Re-audit the chosen variant (and the original) on fresh non-members.

    Choosing the best of several variants on the same audit is itself a selection: the
    chosen one's figures are optimistic (its TPR is the smallest of several noisy
    estimates). Records never used by the first run — neither as public records,
    candidates nor utility records — give figures free of that choice: they become the
    population of a new run with the original and the chosen variant only, a new seed
    drawing new public records, candidates, shadow models and utility records. The
    members cannot be fresh (they are the training records), so what the re-audit removes
    is the optimism of the non-member side, the thresholds and the utility.

    Parameters
    ----------
    result : WhatIfResult
        A run made in this process (its inputs are in memory).
    X_fresh, y_fresh : records of the population that the first run never saw.
    variant : str, default=None
        The variant to re-audit; the best passing one by default.
    groups_fresh : array-like, default=None
        Person ids of the fresh records (where the first run had groups).
    random_state : int, default=None
        The new seed (the first run's plus one by default).
    output_dir : str or path, default=None
        As :func:`whatif`'s.

    Returns
    -------
    WhatIfResult
        With the original and the chosen variant.

    Raises
    ------
    ValueError
        Where no variant passed and none is named, or the inputs are not in memory.
    """
    inputs = result.inputs
    if not inputs:
        raise ValueError("this result holds no inputs (loaded elsewhere?): run whatif again")
    name = variant if variant is not None else result.best()
    if name is None:
        raise ValueError("no variant passes the gate: name the variant to re-audit")
    chosen = result.variant(name)
    options = dict(inputs["options"])
    seed = (
        int(result.settings["random_state"]) + 1
        if random_state is None
        else seed_from(random_state)
    )
    return whatif(
        inputs["estimator"],
        inputs["X_train"],
        inputs["y_train"],
        X_fresh,
        y_fresh,
        inputs["attacks"],
        variants="original" if chosen.kind == "original" else [chosen],
        label_attacks=inputs["label_attacks"],
        groups_train=inputs["groups_train"],
        groups_population=groups_fresh,
        random_state=seed,
        output_dir=output_dir,
        **options,
    )
