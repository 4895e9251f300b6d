"""Build, audit and measure one variant of a what-if run (:func:`tabmia.whatif.whatif`).

A variant's target is the original model (``original``), a retrained clone of its recipe
(``retrain``, ``cap``: fewer records per person), the original behind a
:class:`~tabmia.whatif.HardenedOutput` (``harden``: nothing retrained) or a DP model
(``dp``, with the one-run DP audit of its ε). It is audited by
:func:`tabmia.audit.audit_model` with the run's attacks, records and seed; its shadow
models are cached under the run's shadow folder by recipe and training size, where a
hardened target finds the original's (:class:`~tabmia.shadow.ShadowPopulation` scores
them through the hardening).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
from sklearn.base import clone

from tabmia._estimators import clone_unfitted, recipe_of
from tabmia._groups import person_codes
from tabmia._rows import n_rows, take_rows
from tabmia._seeding import derived_seed, seed_estimator
from tabmia.attacks import membership_tags
from tabmia.audit import audit_model
from tabmia.dp import OneRunAudit
from tabmia.named import DEFAULT_Q, named_members
from tabmia.persons import person_result
from tabmia.settings import RunSettings
from tabmia.shadow._cache import _describe
from tabmia.target import as_target
from tabmia.whatif._dp import dp_recipe
from tabmia.whatif.hardening import HardenedOutput
from tabmia.whatif.result import VariantRun
from tabmia.whatif.variants import Variant, with_params

__all__: list[str] = []


def _own_shift(text: str, variant: Any) -> str:
    """A label-shift finding of a capped variant, said as the cap's own doing.

    Capping records per person drops records of the persons with many, whose labels often
    differ from the rest (a patient with many encounters is readmitted more often), so the
    members' label mix moves away from the population's: the data did not shift, the cap did.
    """
    if variant.kind != "cap" or not text.startswith("the labels of the training records"):
        return text
    head = text.split(": the population may come from", 1)[0]
    return (
        f"{head.replace('the training records', 'the records kept by the cap', 1)}: the cap "
        f"(at most {variant.params['max_records']} per person) changed the members' label mix, "
        "not the data; an attack can tell members by label alone, which overstates this "
        "variant's leak"
    )


def _person_metrics(audit: Any) -> pd.DataFrame | None:
    """The audit with persons as its unit, as ``tabmia audit`` reports it (None where the
    attacks chose no FPR threshold, so there is nothing to calibrate persons on)."""
    if getattr(audit, "calibration", None) is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the record-level notes already say what matters
        return person_result(audit).metrics


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
    out = {}
    for name, attack in attacks.items():
        copy = clone(attack)
        if folder is not None and "cache_dir" in membership_tags(copy).runner_settings:
            copy.set_params(cache_dir=str(folder))
        out[name] = copy
    return out


def _recipe_key(target: Any, n_train: int) -> str:
    """The shadow cache folder of a target: its recipe and training size (the shadows'
    size follows it). A hardened target's is its inner model's: its shadows are those."""
    model = target.estimator if isinstance(target, HardenedOutput) else target
    try:
        return str(joblib.hash((_describe(recipe_of(model, name="recipe")), int(n_train))))[:16]
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


@dataclass(frozen=True, eq=False)
class _RunInputs:
    """What every variant of one what-if run is built and audited from.

    ``original_target`` returns the original fitted model (trained on first use);
    ``X_pop``, ``y_pop``, ``g_pop`` are the audited population records (the utility
    hold-out removed), ``X_util`` the held-out ones, ``X_population`` all of them (a DP
    recipe reads their bounds); ``settings.random_state`` is the run's int seed.
    """

    original_target: Callable[[], Any]
    recipe: Any
    X_train: Any
    y_train: np.ndarray
    g_train: np.ndarray | None
    X_pop: Any
    y_pop: np.ndarray
    g_pop: np.ndarray | None
    X_population: Any
    X_util: Any
    classes: np.ndarray
    attacks: dict[str, Any]
    label_attacks: dict[str, Any]
    public_fraction: float
    dp_audit: dict[str, Any]
    shadow_root: Path
    shared: bool
    settings: RunSettings


@dataclass
class _VariantModel:
    """A variant's target and the training records it was trained on (``kept``: their
    rows in the run's training records)."""

    target: Any
    recipe: Any
    X_train: Any
    y_train: np.ndarray
    g_train: np.ndarray | None
    kept: np.ndarray
    notes: list[str]


def _variant_model(variant: Variant, run: _RunInputs) -> _VariantModel:
    """Build the variant's target: the original, retrained, hardened, DP or capped."""
    seed = int(run.settings.random_state)
    model = _VariantModel(
        None, None, run.X_train, run.y_train, run.g_train, np.arange(n_rows(run.X_train)), []
    )
    if variant.kind == "original":
        model.target = run.original_target()
    elif variant.kind == "retrain":
        model.recipe = clone_unfitted(run.recipe).set_params(
            **with_params(run.recipe, variant.params)
        )
        model.target = _train(model.recipe, run.X_train, run.y_train, seed)
    elif variant.kind == "harden":
        p = variant.params
        model.target = HardenedOutput(
            run.original_target(),
            round=p.get("round"),
            top_k=p.get("top_k"),
            labels_only=bool(p.get("labels_only")),
        )
    elif variant.kind == "dp":
        model.recipe = (
            variant.recipe
            if variant.recipe is not None
            else dp_recipe(
                str(variant.params["model"]),
                float(variant.epsilon or 1.0),
                float(variant.delta or 0.0),
                run.X_population,
                run.classes,
                {k: v for k, v in variant.params.items() if k != "model"},
            )
        )
        model.target = _train(model.recipe, run.X_train, run.y_train, seed)
    else:  # cap
        assert run.g_train is not None  # resolve_variants refuses a cap without groups
        model.kept = _cap_rows(run.g_train, int(variant.params["max_records"]), derived_seed(seed))
        model.X_train = take_rows(run.X_train, model.kept)
        model.y_train, model.g_train = run.y_train[model.kept], run.g_train[model.kept]
        model.target = _train(run.recipe, model.X_train, model.y_train, seed)
        model.notes.append(
            f"trained on {model.kept.size} of {n_rows(run.X_train)} training records (at most "
            f"{variant.params['max_records']} per person); the members scored are those kept"
        )
    return model


def _variant_attacks(run: _RunInputs, label_only: bool, notes: list[str]) -> dict[str, Any]:
    """The attacks the variant is audited with: the label attacks replace those that
    need probabilities where it answers with labels only (said in ``notes``)."""
    if not label_only:
        return run.attacks
    skipped = [n for n, a in run.attacks.items() if not membership_tags(a).works_with("labels")]
    protos = {**{n: a for n, a in run.attacks.items() if n not in skipped}, **run.label_attacks}
    if skipped:
        notes.append(
            f"answers with labels only: {', '.join(skipped)} cannot run on it (they need "
            f"probabilities); audited with {', '.join(protos)} instead"
        )
    return protos


def _run_variant(variant: Variant, run: _RunInputs) -> VariantRun:
    """Build, audit and measure one variant."""
    t0 = time.perf_counter()
    seed = int(run.settings.random_state)
    model = _variant_model(variant, run)
    target, notes = model.target, model.notes
    label_only = variant.labels_only or as_target(target).outputs == "labels"
    protos = _variant_attacks(run, label_only, notes)
    folder = run.shadow_root / _recipe_key(target, n_rows(model.X_train))
    if not run.shared:
        folder = folder / variant.name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # diffprivlib's solver passes options scipy deprecates: noise, not a finding
        warnings.filterwarnings("ignore", message=".*`disp` and `iprint`.*")
        audit = audit_model(
            target,
            model.X_train,
            model.y_train,
            run.X_pop,
            run.y_pop,
            _with_cache(protos, folder),
            public_fraction=run.public_fraction,
            groups_train=model.g_train,
            groups_population=run.g_pop,
            settings=run.settings.replace(keep_attacks=False),
        )
        dp_check = None
        if variant.kind == "dp":
            dp_check = _dp_check(
                model.recipe, variant, model.X_train, model.y_train, run.dp_audit, seed
            )
    _keep_notes(caught, variant, notes)
    used, trained = _model_counts(audit.metrics)
    if variant.kind == "harden" and used and trained < used:
        notes.append(
            f"{used - trained} of its {used} shadow models are the original's, "
            "scored through the hardening"
        )
    return VariantRun(
        variant=variant.name,
        repeat=0,
        random_state=seed,
        scores=_original_records(audit.scores, model.kept, n_rows(run.X_train)),
        metrics=audit.metrics,
        findings=tuple(audit.findings),
        utility_y=np.empty(0, dtype=np.intp),
        utility_output=_outputs(target, run.X_util, run.classes, label_only),
        # the model's own decision (a hardened output's argmax can tie where it did not)
        utility_pred=np.searchsorted(run.classes, np.asarray(target.predict(run.X_util)).ravel()),
        label_only=bool(label_only),
        attacks=list(protos),
        notes=notes,
        dp_check=dp_check,
        seconds=time.perf_counter() - t0,
        models_trained=trained,
        models_used=used,
        named=_named_counts(audit),
        target=target,
        person_metrics=_person_metrics(audit) if model.g_train is not None else None,
    )


def _keep_notes(caught: list, variant: Variant, notes: list[str]) -> None:
    """tabmia's own warnings (shadow sizes, FPR fallbacks, attacks that flag nobody,
    plausibility findings) become the variant's notes, once each; others pass on."""
    for w in caught:
        if w.category.__module__.split(".", 1)[0] == "tabmia":
            text = _own_shift(str(w.message), variant)
            if text not in notes:
                notes.append(text)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _original_records(scores: pd.DataFrame, kept: np.ndarray, n_train: int) -> pd.DataFrame:
    """``scores`` with each member's ``record`` its row in the run's training records
    (a capped variant's audit numbers the records it kept), to pair with the original."""
    if kept.size == n_train:
        return scores
    members = (scores["source"] == "train").to_numpy()
    record = scores["record"].to_numpy().copy()
    record[members] = kept[record[members]]
    return scores.assign(record=record)


def _model_counts(metrics: pd.DataFrame) -> tuple[int, int]:
    """(shadow / reference models the attacks used, those they trained)."""
    used = int(metrics["n_models"].fillna(0).sum()) if "n_models" in metrics else 0
    trained = (
        int(metrics["n_models_trained"].fillna(0).sum()) if "n_models_trained" in metrics else 0
    )
    return used, trained


def _named_counts(audit: Any) -> dict[str, Any] | None:
    """The variant's headline named list at the default FDR (:mod:`tabmia.named`): how
    many members an attacker with the public data could name, and how many wrongly."""
    row = named_members(audit, DEFAULT_Q, n_resamples=20).headline_row()
    if row is None:
        return None
    return {
        "q": DEFAULT_Q,
        "n_named": int(row["n_named"]),
        "n_wrong": int(row["n_wrong"]),
        "n_members": int(row["n_members"]),
        "status": str(row["status"]),
    }
