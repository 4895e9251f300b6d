"""Person-level results, risk and group privacy (see :mod:`tabmia.persons`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tabmia._columns import PERSON, promised_fprs
from tabmia._result import ExperimentResult
from tabmia.metrics import attack_metrics
from tabmia.persons._scores import (
    BANDS,
    DEFAULT_RULE,
    _alpha_for,
    _base_band,
    _with_repeat,
    person_scores,
)

__all__ = ["person_result", "person_risk", "most_exposed", "person_epsilon"]


def _dataclass_fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def person_result(
    result: ExperimentResult,
    *,
    rule: str = DEFAULT_RULE,
    fprs: tuple[float, ...] = (0.01, 0.001),
    gammas: tuple[float, ...] = (1.0, 10.0, 100.0),
    fpr: float | pd.Series | None = None,
) -> ExperimentResult:
    """The audit of ``result`` with persons as its unit.

    Parameters
    ----------
    result : ExperimentResult
        A record-level result whose ``scores`` have a ``person`` column and whose
        ``calibration`` holds the public records' scores with their ``person``.
    rule : str, default=DEFAULT_RULE
        The person rule (:data:`PERSON_RULES`).
    fprs, gammas : tuple of float
        As :func:`tabmia.metrics.attack_metrics`: ROC points and priors, over persons.
    fpr : float or Series, default=None
        The person-level FPR to promise; by default each (repeat, attack)'s
        ``fpr_target`` in ``result.metrics`` (the FPR its record threshold promises).

    Returns
    -------
    ExperimentResult
        ``unit == "person"``. ``scores``: the candidate persons of
        :func:`person_scores`. ``metrics``: one row per (repeat, attack) of
        :func:`~tabmia.metrics.attack_metrics` over persons (every interval resamples
        persons), at the threshold that flags exactly the persons with
        ``p_value <= fpr`` (``tp`` / ``fp`` count them), with ``repeat``, ``seed``,
        ``attack``, ``fpr_target`` (``fpr``), ``fpr_requested``, ``person_rule``,
        ``n_persons_public``, and where the persons were calibrated: ``bands``,
        ``merged_bands``, ``max_public_records`` and ``n_persons_beyond`` (candidates
        with more records than any public person). ``calibration``: the public persons.
        ``targets``, ``splits``, ``target_accuracy`` and ``findings`` are the record
        level's; ``attacks`` is empty.

    Raises
    ------
    ValueError
        When ``result`` has no calibration or no person ids, and as
        :func:`person_scores`.
    """
    calibration = getattr(result, "calibration", None)
    if calibration is None:
        raise ValueError(
            "the result has no calibration (the public records' null scores): a "
            "person-level audit calibrates on public persons; run the attacks with an FPR "
            "goal (threshold_goal='fpr') and person ids (groups=)"
        )
    if PERSON not in calibration.columns:
        raise ValueError(
            "the result's calibration has no person column: pass person ids (groups=) "
            "so that the public records' persons are known"
        )
    if PERSON not in result.scores.columns:
        raise ValueError("the result's scores have no person column: pass groups=")
    metrics = _with_repeat(result.metrics).set_index(["repeat", "attack"], drop=False)
    asked = fpr is not None  # an FPR asked of the persons, not the records' own
    if fpr is None:
        fpr = promised_fprs(result.metrics)
    persons, public = person_scores(result.scores, calibration, fpr=fpr, rule=rule)
    n_public = public.groupby(["repeat", "attack"], sort=False).size()
    public_of = dict(list(public.groupby(["repeat", "attack"], sort=False)))
    rows = []
    for (repeat, attack), part in persons.groupby(["repeat", "attack"], sort=False):
        record_row = metrics.loc[(repeat, attack)] if (repeat, attack) in metrics.index else {}
        seed = record_row.get("seed", repeat)
        seed = repeat if seed is None or pd.isna(seed) else int(seed)
        member = part["member"].to_numpy(bool)
        score = part["score"].to_numpy(float)
        flagged = part["flagged"].to_numpy(bool)
        # the threshold that flags exactly the flagged persons: score = -log p is
        # decreasing in p, so score >= the smallest flagged score <=> p <= alpha
        threshold = float(score[flagged].min()) if flagged.any() else math.inf
        if not np.array_equal(score >= threshold, flagged):  # pragma: no cover - guard
            raise AssertionError(f"{attack}: no threshold on -log p gives the flags")
        delta = record_row.get("delta", 0.0)
        m = attack_metrics(
            member,
            score,
            threshold=threshold,
            fprs=fprs,
            gammas=gammas,
            delta=0.0 if delta is None or pd.isna(delta) else float(delta),
            random_state=seed,
        )
        if (m["tp"], m["fp"]) != (int((flagged & member).sum()), int((flagged & ~member).sum())):
            raise AssertionError(f"{attack}: tp / fp differ from the flags")  # pragma: no cover
        alpha = _alpha_for(fpr, repeat, attack)
        requested = alpha if asked else record_row.get("fpr_requested", alpha)
        rows.append(
            {
                "repeat": repeat,
                "seed": seed,
                "attack": attack,
                **m,
                "fpr_target": alpha,
                "fpr_requested": alpha if requested is None or pd.isna(requested) else requested,
                "person_rule": rule,
                "n_persons_public": int(n_public.get((repeat, attack), 0)),
                **_band_summary(part, public_of.get((repeat, attack))),
                # what the attack cost and trained: the record-level run's, unchanged
                **{k: record_row[k] for k in _RUN_COLUMNS if k in getattr(record_row, "index", ())},
            }
        )
    fields = _dataclass_fields(ExperimentResult)
    extra = {k: v for k, v in (("calibration", public), ("unit", "person")) if k in fields}
    out = ExperimentResult(
        scores=persons,
        metrics=pd.DataFrame(rows),
        targets=list(result.targets),
        splits=list(result.splits),
        target_accuracy=result.target_accuracy,
        attacks=[],
        findings=tuple(result.findings),
        **extra,
    )
    for name, value in (("calibration", public), ("unit", "person")):
        if name not in fields:  # an ExperimentResult from before these fields
            setattr(out, name, value)
    return out


def _band_summary(persons: pd.DataFrame, public: pd.DataFrame | None) -> dict[str, Any]:
    """Where one (repeat, attack)'s persons were calibrated, for the verdict to say.

    ``bands``: the bands calibrated, in order ("1; 2-3; 4+"); ``merged_bands``: each
    merged one with the bands it holds ("4+ = 4-7 + 8-15 + 16+"; empty where none merged);
    ``max_public_records``: the most records any public person has; ``n_persons_beyond``:
    candidate persons with more records than that, whose band holds no public person as
    large (no public person says how a non-member with as many records scores).
    """
    if public is None or public.empty:
        return {}
    both = pd.concat([persons[["band", "n_records"]], public[["band", "n_records"]]])
    base = _base_band(both["n_records"].to_numpy())
    held = pd.Series(base).groupby(both["band"].to_numpy(), sort=False).unique()
    order = sorted(held.index, key=lambda label: int(min(held[label])))
    merged = [
        f"{label} = {' + '.join(BANDS[b] for b in sorted(held[label]))}"
        for label in order
        if len(held[label]) > 1
    ]
    most = int(public["n_records"].max())
    return {
        "bands": "; ".join(order),
        "merged_bands": "; ".join(merged),
        "max_public_records": most,
        "n_persons_beyond": int((persons["n_records"] > most).sum()),
    }


#: Columns of the record-level metrics that describe the attack's run, not its rates:
#: carried to the person-level rows as they are.
_RUN_COLUMNS = (
    "fit_seconds",
    "score_seconds",
    "n_queries",
    "model_recipe",
    "shadow_train_size",
    "shadow_size_note",
    "n_models",
    "n_models_trained",
)


def person_risk(persons: pd.DataFrame, levels: Sequence[float] = (0.5, 0.9, 0.99)) -> pd.DataFrame:
    """How many persons the audit finds evidence against, at each level of evidence.

    A person's membership evidence is ``1 - p_value`` (its person-level p-value). At a
    level ``l``, a non-member person reaches ``1 - p_value >= l`` with probability at
    most ``1 - l`` (the calibration's promise), so the share of member persons that reach
    it, beside the non-members', says how many persons the model exposes that strongly.

    Parameters
    ----------
    persons : DataFrame
        Candidate persons of :func:`person_scores` (``attack``, ``member``,
        ``p_value``), pooled over repeats.
    levels : sequence of float
        Levels of evidence in (0, 1).

    Returns
    -------
    DataFrame
        One row per (attack, member, level): ``attack``, ``member``, ``level``,
        ``p_at_most`` (``1 - level``), ``n_persons``, ``n_at_level`` (persons whose
        evidence is at least ``level``) and ``share``.
    """
    levels = [float(v) for v in levels]
    if any(not 0.0 < v < 1.0 for v in levels):
        raise ValueError(f"levels must be in (0, 1), got {levels}")
    keys = ["attack", "member"]
    p = persons["p_value"].to_numpy(float)
    parts = []
    for level in levels:
        # 1 - 0.99 = 0.01000...9: the tolerance counts p = 0.01 at level 0.99
        reached = pd.Series(p <= (1.0 - level) + 1e-12, index=persons.index)
        grouped = reached.groupby([persons[k] for k in keys], sort=False)
        part = pd.DataFrame({"n_persons": grouped.size(), "n_at_level": grouped.sum()})
        part = part.reset_index().assign(level=level, p_at_most=1.0 - level)
        parts.append(part)
    cols = ["attack", "member", "level", "p_at_most", "n_persons", "n_at_level"]
    out = pd.concat(parts, ignore_index=True)[cols]
    out["n_at_level"] = out["n_at_level"].astype(int)
    out["share"] = out["n_at_level"] / out["n_persons"]
    return out.sort_values(["attack", "member", "level"], kind="stable", ignore_index=True)


def most_exposed(persons: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The ``n`` persons with the highest score of each attack (over repeats).

    Parameters
    ----------
    persons : DataFrame
        Candidate persons of :func:`person_scores`.
    n : int, default=10
        Persons per attack.

    Returns
    -------
    DataFrame
        ``attack``, ``rank`` (1 = most exposed; persons whose scores tie share the best
        rank of their tie), ``tied`` (how many of the attack's persons share the score:
        the attack does not tell them apart), ``repeat``, ``person``, ``n_records``,
        ``member``, ``score``, ``p_value``, ``band``, ``flagged``; highest score first,
        ties in a fixed order (fewer records first, where one record carries the same
        evidence; then repeat and person id), never the input's.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    frame = persons.assign(_id=persons[PERSON].astype(str))
    ordered = frame.sort_values(
        ["attack", "score", "n_records", "repeat", "_id"],
        ascending=[True, False, True, True, True],
        kind="stable",
    ).reset_index(drop=True)
    by_attack = ordered.groupby("attack", sort=False)["score"]
    ordered["rank"] = by_attack.rank(method="min", ascending=False).astype(int)
    ordered["tied"] = ordered.groupby(["attack", "score"], sort=False)["score"].transform("size")
    top = ordered.groupby("attack", sort=False).head(n)
    cols = ["attack", "rank", "tied", "repeat", PERSON, "n_records", "member", "score"]
    cols += [c for c in ("p_value", "band", "flagged") if c in top.columns]
    first_seen = {a: i for i, a in enumerate(pd.unique(persons["attack"]))}
    top = top.assign(_order=top["attack"].map(first_seen))
    top = top.sort_values(["_order", "rank", "n_records", "repeat", "_id"], kind="stable")
    return top[[c for c in cols if c in top.columns]].reset_index(drop=True)


def person_epsilon(
    epsilon: float | np.ndarray, n_records: int | np.ndarray, delta: float = 0.0
) -> tuple[Any, Any]:
    """The (epsilon, delta) a person with ``k`` records has under record-level DP:
    :func:`tabmia.claims.group_privacy` (group privacy)."""
    from tabmia.claims import group_privacy

    return group_privacy(epsilon, n_records, delta)
