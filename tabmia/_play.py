"""One round's attacks, fitted and scored: :func:`run_attacks`, which every runner's rounds
play through (:meth:`tabmia.experiment.MembershipRound.play`).

Besides each attack's candidate scores it keeps the scores the attack's own threshold was
calibrated on, with the public records' persons and slices beside them where the round
carries them (docs: records, persons and slices): what a person-level or per-slice
threshold is calibrated on, and the null of the named list (:mod:`tabmia.named`).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from tabmia._columns import PERSON
from tabmia._memory import release_freed_memory
from tabmia._progress import progress_label
from tabmia.attacks import membership_tags
from tabmia.exceptions import (
    FPRFallbackWarning,
    ShadowSizeWarning,
    TargetOutputsError,
    UnresolvableFPRError,
)
from tabmia.metrics import attack_metrics
from tabmia.report.verdict import RECIPE_SEPARATOR, attack_recipes
from tabmia.settings import RunSettings
from tabmia.target import as_target, concat_rows

__all__ = ["run_attacks"]

_DEFAULT_SETTINGS = RunSettings()


def run_attacks(
    target: Any,
    attacks: dict[str, Any],
    X_public: Any,
    y_public: np.ndarray,
    X_candidates: Any,
    y_candidates: np.ndarray,
    member: np.ndarray,
    *,
    seed: int,
    settings: RunSettings = _DEFAULT_SETTINGS,
    extra_columns: dict[str, Any] | None = None,
    repeat: int = 0,
    train_size: int | None = None,
    public_columns: dict[str, Any] | None = None,
    calibration: list[pd.DataFrame] | None = None,
) -> tuple[list[pd.DataFrame], list[dict[str, Any]], list[Any]]:
    """Fit each attack against ``target`` and score the candidates.

    What each attack needs is read from its :class:`~tabmia.attacks.MembershipTags`.
    Online attacks (``fit_includes_candidates``) are fitted on the public records plus
    the candidates, whose membership they are not told (only which pool records are
    the public ones, ``known_nonmembers``, the known non-members of the target).
    Progress bars of shadow training are labelled ``"seed <repeat>: <name>"``.

    ``settings`` (:class:`~tabmia.settings.RunSettings`) gives the metrics' levels
    (``fprs``, ``gammas``), ``fpr_fallback``, ``keep_attacks``, ``verbose``, and the
    ``n_jobs``, ``device`` and ``max_memory`` of the attacks that take them (its
    ``random_state`` is the runner's: each attack gets the round's ``seed``).

    With ``fpr_fallback=True``, an attack whose calibration records cannot promise its
    ``fpr`` aims at the smallest FPR they can promise instead of failing (the settings
    of its ``fpr_fallback`` tag: ``unresolved_fpr="smallest"``, which still refuses
    beyond :data:`~tabmia.attacks.base.MAX_FALLBACK_FPR`); the row's ``fpr_target`` is
    the FPR its threshold promises (the attack's ``fpr_``), ``fpr_requested`` the one
    asked for, and a :class:`~tabmia.exceptions.FPRFallbackWarning` names the change.

    ``train_size`` (the target's training-set size) goes to the parameter that an
    attack's ``train_size_param`` tag names (``shadow_train_size`` of the attacks that
    train shadow / reference models, where the user did not size them): their models
    then train on as many records as the target, as far as their pool allows (the
    row's ``shadow_train_size`` and ``shadow_size_note``, for the attacks that
    ``reports_model_size``). An attack with a shadow population also reports its
    ``n_models`` and how many of them it trained (``n_models_trained``; the rest came
    from its cache); one that trains models names their recipe (``model_recipe``, which
    the report reads once the attack is let go).

    Person ids ride in ``extra_columns["person"]`` (the candidates') and
    ``public_columns["person"]`` (the public records'): every attack's ``fit`` gets them
    as ``groups`` (an online attack's pool: the public records' then the candidates'), so
    that its shadow / reference models, held-out records and folds keep persons whole.
    Each attack that chose its threshold for an FPR appends to ``calibration`` (where
    given) a frame of the scores it calibrated on (``calibration_scores_``), with the
    ``public_columns`` of the records they belong to (``calibration_rows_``): the null of
    the named list (:mod:`tabmia.named`) in every audit, and what person-level and
    per-slice thresholds calibrate on. Where ``public_columns`` holds persons or slices,
    an attack whose calibration records are not the public records is left out.

    With ``keep_attacks=False`` each attack is let go once it has scored the candidates:
    a fitted shadow attack holds state per public record (LiRA: each shadow's score on
    each of them), which the attacks after it need not share memory with.

    Returns
    -------
    frames : list of DataFrame
        Per attack: ``attack``, extra columns, ``member``, ``score``, ``flagged``.
    rows : list of dict
        Per attack: ``seed``, ``attack``, every metric, ``fit_seconds``, ``score_seconds``,
        ``n_queries``.
    fitted : list
        The fitted attacks (empty with ``keep_attacks=False``).

    Raises
    ------
    TargetOutputsError
        Before any attack is fitted, when an attack needs more of the target than it
        gives (its ``target_outputs`` tag).
    UnresolvableFPRError
        From an attack's ``fit``, with ``attack`` set to its name.
    """
    _check_outputs(target, attacks)
    frames, rows, fitted = [], [], []
    public_columns = public_columns or {}
    extra_columns = extra_columns or {}
    candidate_persons = extra_columns.get(PERSON)
    # persons and slices need each calibration score's record; the named list
    # (tabmia.named) only the scores, which every audit keeps
    by_record = bool(set(public_columns) - {"record"})
    for name, proto in attacks.items():
        # what the split or the attack before freed, returned before this one trains
        release_freed_memory()
        attack = _prepared(proto, target, seed, train_size, settings)
        t0 = time.perf_counter()
        _fit(
            attack,
            name,
            f"seed {repeat}: {name}",
            (X_public, y_public, public_columns.get(PERSON)),
            (X_candidates, y_candidates, candidate_persons),
        )
        t1 = time.perf_counter()
        # a candidate person's records are scored alike, as a public person's are
        s = attack.decision_function(
            X_candidates,
            y_candidates,
            **({} if candidate_persons is None else {"groups": candidate_persons}),
        )
        t2 = time.perf_counter()
        row = _result_row(attack, name, member, s, seed, settings, (t1 - t0, t2 - t1))
        if row.get("shadow_size_note") and train_size is not None:
            warnings.warn(f"{name}: {row['shadow_size_note']}", ShadowSizeWarning, stacklevel=2)
        rows.append(row)
        if calibration is not None and attack.fpr_ is not None:
            kept = _calibration_frame(attack, name, public_columns, by_record)
            if kept is not None:
                calibration.append(kept)
        frames.append(
            pd.DataFrame(
                {
                    "attack": name,
                    **extra_columns,
                    "member": member,
                    "score": s,
                    "flagged": s >= attack.threshold_,
                }
            )
        )
        if settings.keep_attacks:
            fitted.append(attack)
        del attack  # not held while the next attack trains
        if settings.verbose:
            print(f"  {name}: AUC {row['auc']:.3f} ({t2 - t0:.1f} s)", flush=True)
    return frames, rows, fitted


def _prepared(
    proto: Any, target: Any, seed: int, train_size: int | None, settings: RunSettings
) -> Any:
    """A clone of ``proto`` aimed at ``target``, with the runner's settings it takes."""
    attack = clone(proto).set_params(target=target)
    tags = membership_tags(attack)
    params: dict[str, Any] = (
        {"random_state": seed} if "random_state" in tags.runner_settings else {}
    )
    if train_size is not None and tags.train_size_param is not None:
        # shadows learn what the target learned only from as many records
        params[tags.train_size_param] = int(train_size)
    params.update(settings.attack_params(tags.runner_settings))
    if settings.fpr_fallback:
        params.update(tags.fpr_fallback)
    return attack.set_params(**params)


def _fit(attack: Any, name: str, label: str, public: tuple, candidates: tuple) -> None:
    """Fit ``attack`` on the public records ``(X, y, persons)``, or on the public records
    and the ``candidates`` where its tags say it fits on both; its warnings are issued
    again, an FPR fallback named by ``name``."""
    X_public, y_public, public_persons = public
    X_candidates, y_candidates, candidate_persons = candidates
    caught: list = []
    try:
        with progress_label(label), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FPRFallbackWarning)
            if membership_tags(attack).fit_includes_candidates:
                # the public records are the pool's known non-members (its calibration)
                known = np.r_[np.ones(len(y_public), bool), np.zeros(len(y_candidates), bool)]
                pool_persons = (
                    None
                    if public_persons is None
                    else np.r_[np.asarray(public_persons), np.asarray(candidate_persons)]
                )
                attack.fit(
                    concat_rows([X_public, X_candidates]),
                    np.r_[y_public, y_candidates],
                    known_nonmembers=known,
                    **({} if pool_persons is None else {"groups": pool_persons}),
                )
            else:
                attack.fit(
                    X_public,
                    y_public,
                    **({} if public_persons is None else {"groups": public_persons}),
                )
    except UnresolvableFPRError as exc:
        exc.attack = name
        raise
    finally:
        _reissue(caught, name)


def _result_row(
    attack: Any,
    name: str,
    member: np.ndarray,
    s: np.ndarray,
    seed: int,
    settings: RunSettings,
    seconds: tuple[float, float],
) -> dict[str, Any]:
    """The metrics row of one fitted attack's scores ``s``: its metrics at its own
    threshold, what it aimed at, its times and queries, and what it trained."""
    m = attack_metrics(
        member,
        s,
        threshold=attack.threshold_,
        fprs=settings.fprs,
        gammas=settings.gammas,
        random_state=seed,
    )
    aim = attack.fpr_
    row = {
        "seed": seed,
        "attack": name,
        **m,
        "fpr_target": aim,
        "fpr_requested": attack.fpr if aim is not None else None,
        "fit_seconds": seconds[0],
        "score_seconds": seconds[1],
        "n_queries": int(attack.target_.n_queries_),
    }
    if membership_tags(attack).reports_model_size:
        row["shadow_train_size"] = attack.shadow_train_size_
        row["shadow_size_note"] = attack.shadow_size_note_
    recipes = attack_recipes(attack)
    if recipes:  # what the report names, once the attack is let go
        row["model_recipe"] = RECIPE_SEPARATOR.join(recipes)
    population: Any = getattr(attack, "population_", None)
    if hasattr(population, "n_trained_"):
        row["n_models"] = int(population.statistics_.shape[0])
        row["n_models_trained"] = int(population.n_trained_)
    return row


def _calibration_frame(
    attack: Any, name: str, public_columns: dict[str, Any], by_record: bool
) -> pd.DataFrame | None:
    """The scores an FPR threshold was chosen from, with their public records' columns
    where they are known (``calibration_rows_``); None where persons or slices need
    those columns and the attack's calibration records are not the public records (a
    proxy model's, MERLIN's)."""
    cal_rows = getattr(attack, "calibration_rows_", None)
    scores = getattr(attack, "calibration_scores_", None)
    if scores is None or (cal_rows is None and by_record):
        return None
    columns = (
        {} if cal_rows is None else {k: np.asarray(v)[cal_rows] for k, v in public_columns.items()}
    )
    return pd.DataFrame({"attack": name, **columns, "score": scores})


_OUTPUT_WORDS = {"labels": "predicted labels", "proba": "probabilities", "logits": "logits"}


def _check_outputs(target: Any, attacks: dict[str, Any]) -> None:
    """Refuse attacks that need more of the target than it gives (their
    ``target_outputs`` tag against :attr:`~tabmia.target.TargetModel.outputs`)."""
    outputs = as_target(target).outputs
    needs = {name: membership_tags(a).target_outputs for name, a in attacks.items()}
    refused = {
        name: need
        for name, need in needs.items()
        if not membership_tags(attacks[name]).works_with(outputs)
    }
    if refused:
        usable = [name for name in attacks if name not in refused]
        raise TargetOutputsError(
            f"the target gives {_OUTPUT_WORDS.get(outputs, outputs)} only: "
            + ", ".join(
                f"{name} (needs {_OUTPUT_WORDS.get(need, need)})" for name, need in refused.items()
            )
            + " cannot attack it"
            + (f"; {', '.join(usable)} can" if usable else "")
        )


def _reissue(caught: list, name: str) -> None:
    """Warnings an attack's fit raised, again; an FPR fallback named by the run's name."""
    for w in caught:
        if issubclass(w.category, FPRFallbackWarning):
            text = str(w.message).split(": ", 1)[-1]
            warnings.warn(f"{name}: {text}", FPRFallbackWarning, stacklevel=4)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
