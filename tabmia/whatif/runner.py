"""Re-audit candidate fixes of a model side by side: :func:`whatif` and :func:`reaudit`.

Every variant is audited by :func:`tabmia.audit.audit_model` with the same attacks, the
same population records and the same ``random_state``, so the public records, the
non-member candidates and the attacks' seeds are those of the original's audit; its
utility is measured on a part of the population carved out before any audit (the same
records for every variant, scored by no attack). What can be shared is: a hardened
variant is the original fitted model behind a wrapper (no retraining), and its shadow
models' inner fits are shared between hardenings through a fit store; shadows of every
recipe are cached by recipe in the output folder; each finished variant is one file
there, and a rerun skips it.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from tabmia._estimators import clone_unfitted, recipe_of
from tabmia._groups import check_groups, person_codes
from tabmia._rows import n_rows, take_rows
from tabmia._seeding import derived_seed, seed_estimator, seed_from
from tabmia.target import as_target
from tabmia.whatif.hardening import HardenedOutput
from tabmia.whatif.result import VariantRun, VariantStore, WhatIfResult
from tabmia.whatif.variants import Variant, resolve_variants, with_params

__all__ = ["whatif", "reaudit", "default_label_attacks", "UTILITY_METRICS"]

#: Utility measures of the held-out records; higher is better except ``log_loss``.
UTILITY_METRICS: tuple[str, ...] = ("roc_auc", "accuracy", "log_loss")


def default_label_attacks(fpr: float = 0.01) -> dict[str, Any]:
    """The attacks a label-only variant is audited with when none are given: the gap
    attack and noise robustness (30 noisy copies per record)."""
    from tabmia.attacks import GapAttack, NoiseRobustnessAttack

    return {
        "gap": GapAttack(fpr=fpr),
        "noise_robustness": NoiseRobustnessAttack(n_noise=30, fpr=fpr),
    }


def _is_fitted(estimator: Any) -> bool:
    try:
        check_is_fitted(estimator)
    except (NotFittedError, TypeError):
        return False
    return True


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


def _cap_rows(groups: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Sorted rows keeping at most ``k`` records of each person, drawn at random."""
    perm = np.random.RandomState(seed).permutation(groups.size)
    codes = person_codes(groups)[perm]
    rank = pd.Series(codes).groupby(codes).cumcount().to_numpy()
    return np.sort(perm[rank < k])


def _train(recipe: Any, X: Any, y: np.ndarray, seed: int) -> Any:
    """A clone of ``recipe`` trained on ``(X, y)``, every ``random_state`` set to ``seed``
    (as :meth:`tabmia.experiment.MembershipRound.train_target` trains a round's target)."""
    model = clone_unfitted(recipe)
    seed_estimator(model, seed, catboost_seed=False)
    model.fit(X, y)
    return model


def _with_cache(attacks: dict[str, Any], folder: Path | None) -> dict[str, Any]:
    """Clones of the attacks, those that take a ``cache_dir`` given ``folder``."""
    from sklearn.base import clone

    from tabmia.attacks import membership_tags

    out = {}
    for name, attack in attacks.items():
        copy = clone(attack)
        if folder is not None and "cache_dir" in membership_tags(copy).runner_settings:
            copy.set_params(cache_dir=str(folder))
        out[name] = copy
    return out


def _recipe_key(target: Any) -> str:
    """The folder name of a target's recipe in the shadow cache."""
    import joblib

    from tabmia.shadow._cache import _describe

    try:
        return joblib.hash(_describe(recipe_of(target, name="recipe")))[:16]
    except ValueError:  # no recipe (attacks that train no models): any folder will do
        return "no-recipe"


def _outputs(target: Any, X: Any, classes: np.ndarray, label_only: bool) -> np.ndarray:
    """The variant's output on ``X`` as ``(n, len(classes))`` rows in ``classes`` order."""
    model = as_target(target)
    cols = np.searchsorted(classes, model.classes_)
    out = np.zeros((n_rows(X), classes.size), dtype=np.float64)
    if label_only or model.outputs == "labels":
        out[np.arange(out.shape[0]), cols[model.predict_indices(X)]] = 1.0
    else:
        out[:, cols] = model.predict_proba(X)
    return out


def _dp_check(
    recipe: Any, variant: Variant, X: Any, y: np.ndarray, settings: dict[str, Any], seed: int
) -> dict[str, Any]:
    """The one-run DP audit of the variant's ε claim (on its training records)."""
    from tabmia.dp import OneRunAudit

    options = {"canaries": "outliers", "n_canaries": None, **settings}
    audit = OneRunAudit(
        recipe,
        claimed_epsilon=variant.epsilon,
        delta=float(variant.delta or 0.0),
        random_state=seed,
        **options,
    )
    n_canaries, _ = audit.split_sizes(n_rows(X))
    result = audit.run(X, y)
    check = result.claim_check
    return {
        "epsilon": variant.epsilon,
        "delta": variant.delta,
        "epsilon_lower": float(result.epsilon_lower),
        "state": str(getattr(check, "state", "")),
        "needed": getattr(check, "needed", None),
        "sentence": result.sentence(),
        "n_canaries": int(n_canaries),
        "canaries": options["canaries"],
    }


def _settings_key(parts: Any) -> str:
    import joblib

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
    share_fits: bool = True,
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
        Folder of finished variants (``variants/``, one file each: a rerun skips them),
        shadow models cached by recipe (``shadows/``) and shared inner fits (``fits/``).
    share_fits : bool, default=True
        Hardened variants' shadows share their inner fits (False trains them per variant).
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
    from tqdm.auto import tqdm

    from tabmia.gate import parse_limits

    t_start = time.perf_counter()
    # --- checks, before anything is trained --------------------------------------------
    if not isinstance(attacks, dict) or not attacks:
        raise ValueError("attacks must be a non-empty dict of name -> attack")
    parse_limits(limit)
    if utility_metric not in UTILITY_METRICS:
        raise ValueError(f"utility_metric must be one of {UTILITY_METRICS}, got {utility_metric!r}")
    if not 0.0 < utility_fraction < 1.0:
        raise ValueError(f"utility_fraction must be in (0, 1), got {utility_fraction}")
    y_train, y_population = np.asarray(y_train), np.asarray(y_population)
    for what, X, y in (("training", X_train, y_train), ("population", X_population, y_population)):
        if n_rows(X) != y.shape[0]:
            raise ValueError(f"the {what} data has {n_rows(X)} records but {y.shape[0]} labels")
    if (groups_train is None) != (groups_population is None):
        raise ValueError("give both groups_train and groups_population, or neither")
    has_groups = groups_train is not None
    g_train = (
        check_groups(groups_train, n_rows(X_train), name="groups_train") if has_groups else None
    )
    g_pop = (
        check_groups(groups_population, n_rows(X_population), name="groups_population")
        if has_groups
        else None
    )
    fitted = _is_fitted(estimator)
    recipe = clone_unfitted(estimator)
    classes = np.unique(np.r_[y_train, y_population])
    resolved = resolve_variants(
        variants,
        recipe,
        classes=classes,
        has_proba=hasattr(estimator, "predict_proba"),
        has_groups=has_groups,
    )
    seed = seed_from(random_state)  # one int: every audit_model call splits the same way
    fpr = float(getattr(next(iter(attacks.values())), "fpr", 0.01) or 0.01)
    label_protos = label_attacks if label_attacks is not None else default_label_attacks(fpr)

    # --- the utility hold-out, the same for every variant ------------------------------
    audit_rows, util_rows = _utility_split(
        n_rows(X_population), utility_fraction, derived_seed(seed), g_pop
    )
    X_pop, y_pop = take_rows(X_population, audit_rows), y_population[audit_rows]
    g_pop_audit = None if g_pop is None else g_pop[audit_rows]
    X_util, y_util = take_rows(X_population, util_rows), y_population[util_rows]
    y_util_idx = np.searchsorted(classes, y_util)

    # --- the folders --------------------------------------------------------------------
    scratch = None
    if output_dir is not None:
        root = Path(output_dir)
        store: VariantStore | None = VariantStore(root / "variants")
        shadow_root: Path | None = root / "shadows"
        fits = root / "fits"
    else:
        store, shadow_root = None, None
        scratch = tempfile.TemporaryDirectory(prefix="tabmia-whatif-")
        fits = Path(scratch.name) / "fits"
    from tabmia.shadow._cache import _describe

    base_key = _settings_key(
        (
            X_train,
            y_train,
            X_population,
            y_population,
            g_train,
            g_pop,
            _describe(recipe),
            fitted,
            {k: _describe(a) for k, a in attacks.items()},
            {k: _describe(a) for k, a in label_protos.items()},
            seed,
            public_fraction,
            utility_fraction,
            tuple(fprs),
            fpr_fallback,
            dp_audit,
        )
    )

    original: dict[str, Any] = {}

    def original_target() -> Any:
        if "model" not in original:
            original["model"] = estimator if fitted else _train(recipe, X_train, y_train, seed)
        return original["model"]

    runs: list[VariantRun] = []
    try:
        bar = tqdm(resolved, desc="whatif", unit="variant", disable=not progress)
        for variant in bar:
            bar.set_postfix_str(variant.name)
            key = _settings_key(
                (
                    base_key,
                    variant.kind,
                    variant.name,
                    dict(variant.params),
                    variant.epsilon,
                    variant.delta,
                    None if variant.recipe is None else _describe(variant.recipe),
                    share_fits,
                )
            )
            run = store.load(variant.name, key) if store is not None else None
            if run is None:
                run = _run_variant(
                    variant,
                    original_target=original_target,
                    recipe=recipe,
                    X_train=X_train,
                    y_train=y_train,
                    g_train=g_train,
                    X_pop=X_pop,
                    y_pop=y_pop,
                    g_pop=g_pop_audit,
                    X_population=X_population,
                    X_util=X_util,
                    classes=classes,
                    attacks=attacks,
                    label_attacks=label_protos,
                    seed=seed,
                    public_fraction=public_fraction,
                    fprs=tuple(fprs),
                    fpr_fallback=fpr_fallback,
                    dp_audit=dp_audit or {},
                    shadow_root=shadow_root,
                    fits=fits if share_fits else None,
                )
                run.utility_y = y_util_idx
                if store is not None:
                    store.save(key, run)
            runs.append(run)
    finally:
        if scratch is not None:
            scratch.cleanup()
    settings = {
        "limit": limit,
        "utility_metric": utility_metric,
        "confidence": confidence,
        "n_bootstrap": int(n_bootstrap),
        "fprs": tuple(fprs),
        "public_fraction": public_fraction,
        "utility_fraction": utility_fraction,
        "random_state": seed,
        "audit_rows": audit_rows,
        "utility_rows": util_rows,
        "fitted_target": fitted,
        "seconds": time.perf_counter() - t_start,
    }
    inputs = {
        "estimator": estimator,
        "X_train": X_train,
        "y_train": y_train,
        "attacks": attacks,
        "label_attacks": label_attacks,
        "groups_train": groups_train,
        "options": {
            "limit": limit,
            "utility_metric": utility_metric,
            "utility_fraction": utility_fraction,
            "public_fraction": public_fraction,
            "fprs": tuple(fprs),
            "fpr_fallback": fpr_fallback,
            "dp_audit": dp_audit,
            "n_bootstrap": n_bootstrap,
            "confidence": confidence,
            "share_fits": share_fits,
        },
    }
    return WhatIfResult(resolved, runs, classes, settings, inputs)


def _run_variant(
    variant: Variant,
    *,
    original_target: Any,
    recipe: Any,
    X_train: Any,
    y_train: np.ndarray,
    g_train: np.ndarray | None,
    X_pop: Any,
    y_pop: np.ndarray,
    g_pop: np.ndarray | None,
    X_population: Any,
    X_util: Any,
    classes: np.ndarray,
    attacks: dict[str, Any],
    label_attacks: dict[str, Any],
    seed: int,
    public_fraction: float,
    fprs: tuple[float, ...],
    fpr_fallback: bool,
    dp_audit: dict[str, Any],
    shadow_root: Path | None,
    fits: Path | None,
) -> VariantRun:
    """Build, audit and measure one variant."""
    from tabmia.audit import audit_model
    from tabmia.whatif._dp import dp_recipe

    t0 = time.perf_counter()
    notes: list[str] = []
    kept = np.arange(n_rows(X_train))
    X_tr, y_tr, g_tr = X_train, y_train, g_train
    variant_recipe: Any = None
    if variant.kind == "original":
        target = original_target()
    elif variant.kind == "retrain":
        variant_recipe = clone_unfitted(recipe).set_params(**with_params(recipe, variant.params))
        target = _train(variant_recipe, X_tr, y_tr, seed)
    elif variant.kind == "harden":
        p = variant.params
        target = HardenedOutput(
            original_target(),
            round=p.get("round"),
            top_k=p.get("top_k"),
            labels_only=bool(p.get("labels_only")),
            fit_cache=None if fits is None else str(fits),
        )
    elif variant.kind == "dp":
        variant_recipe = (
            variant.recipe
            if variant.recipe is not None
            else dp_recipe(
                str(variant.params["model"]),
                float(variant.epsilon or 1.0),
                float(variant.delta or 0.0),
                X_population,
                classes,
                {k: v for k, v in variant.params.items() if k != "model"},
            )
        )
        target = _train(variant_recipe, X_tr, y_tr, seed)
    else:  # cap
        assert g_train is not None  # resolve_variants refuses a cap without groups
        kept = _cap_rows(g_train, int(variant.params["max_records"]), derived_seed(seed))
        X_tr, y_tr, g_tr = take_rows(X_train, kept), y_train[kept], g_train[kept]
        target = _train(recipe, X_tr, y_tr, seed)
        notes.append(
            f"trained on {kept.size} of {n_rows(X_train)} training records (at most "
            f"{variant.params['max_records']} per person); the members scored are those kept"
        )
    label_only = variant.labels_only or as_target(target).outputs == "labels"
    protos = attacks
    if label_only:
        from tabmia.attacks import membership_tags

        skipped = [n for n, a in attacks.items() if not membership_tags(a).works_with("labels")]
        protos = {**{n: a for n, a in attacks.items() if n not in skipped}, **label_attacks}
        if skipped:
            notes.append(
                f"answers with labels only: {', '.join(skipped)} cannot run on it (they need "
                f"probabilities); audited with {', '.join(protos)} instead"
            )
    folder = None if shadow_root is None else shadow_root / _recipe_key(target)
    before = _count_files(fits) if variant.kind == "harden" and fits is not None else 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # diffprivlib's solver passes options scipy deprecates: noise, not a finding
        warnings.filterwarnings("ignore", message=".*`disp` and `iprint`.*")
        audit = audit_model(
            target,
            X_tr,
            y_tr,
            X_pop,
            y_pop,
            _with_cache(protos, folder),
            public_fraction=public_fraction,
            fprs=fprs,
            random_state=seed,
            fpr_fallback=fpr_fallback,
            keep_attacks=False,
            groups_train=g_tr,
            groups_population=g_pop,
        )
        dp_check = None
        if variant.kind == "dp":
            dp_check = _dp_check(variant_recipe, variant, X_tr, y_tr, dp_audit, seed)
    # tabmia's own warnings (shadow sizes, FPR fallbacks, attacks that flag nobody,
    # plausibility findings) become the variant's notes, once each; others pass on
    for w in caught:
        if w.category.__module__.split(".", 1)[0] == "tabmia":
            text = str(w.message)
            if text not in notes:
                notes.append(text)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    scores = audit.scores
    if kept.size != n_rows(X_train):
        # a member's record: its row in the original training data, to pair with the original
        members = (scores["source"] == "train").to_numpy()
        record = scores["record"].to_numpy().copy()
        record[members] = kept[record[members]]
        scores = scores.assign(record=record)
    metrics = audit.metrics
    used = int(metrics["n_models"].fillna(0).sum()) if "n_models" in metrics else 0
    trained = (
        int(metrics["n_models_trained"].fillna(0).sum()) if "n_models_trained" in metrics else 0
    )
    if variant.kind == "harden" and fits is not None:
        trained = _count_files(fits) - before  # inner fits loaded from the store are no training
        if used and trained < used:
            notes.append(
                f"{used - trained} of its {used} shadow models are inner fits shared with another hardening"
            )
    return VariantRun(
        variant=variant.name,
        repeat=0,
        random_state=seed,
        scores=scores,
        metrics=metrics,
        findings=tuple(audit.findings),
        utility_y=np.empty(0, dtype=np.intp),
        utility_output=_outputs(target, X_util, classes, label_only),
        # the model's own decision (a hardened output's argmax can tie where it did not)
        utility_pred=np.searchsorted(classes, np.asarray(target.predict(X_util)).ravel()),
        label_only=bool(label_only),
        attacks=list(protos),
        notes=notes,
        dp_check=dp_check,
        seconds=time.perf_counter() - t0,
        models_trained=trained,
        models_used=used,
        target=target,
    )


def _count_files(folder: Path) -> int:
    return sum(1 for _ in folder.glob("*.joblib")) if folder.is_dir() else 0


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
