"""``tabmia audit`` of persons: ``--group-column`` read and checked, a built-in data set's
own persons, and the record-level result turned into a person-level one
(:func:`tabmia.persons.person_result`) that the verdict, the report and the gate read.

A person column is no model input: it is taken out of the records before the model sees
them. Bad columns get one ``tabmia: error:`` line: a column that is missing, has missing
ids, or holds one record per person where the user said persons repeat.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pandas as pd

from tabmia._columns import PERSON
from tabmia.cli._inputs import UsageError
from tabmia.exceptions import RunNote, UnresolvableFPRError
from tabmia.persons import DEFAULT_RULE, person_result, public_persons_needed

__all__ = [
    "built_in_persons",
    "check_person_attacks",
    "check_public_persons",
    "keep_person_column",
    "person_columns",
    "to_persons",
]


def person_columns(
    args: argparse.Namespace, X_train: pd.DataFrame, X_population: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray | None, np.ndarray | None]:
    """The records without ``--group-column``, and the person ids of each file (None
    without the flag)."""
    column = getattr(args, "group_column", None)
    if column is None:
        _refuse_rule_without_persons(args)
        return X_train, X_population, None, None
    if column == getattr(args, "label", None):
        raise UsageError(_label_is_no_person(column, "--label"))
    ids = []
    for flag, X in (("--train", X_train), ("--population", X_population)):
        if column not in X.columns:
            raise UsageError(
                f"--group-column {column}: {flag} has no column {column!r} "
                f"(its columns: {', '.join(map(str, list(X.columns)[:8]))}"
                + (", ..." if X.shape[1] > 8 else "")
                + ")"
            )
        values = X[column].to_numpy()
        missing = int(pd.isna(values).sum())
        if missing:
            raise UsageError(
                f"--group-column {column}: {missing} of {len(values)} {flag} records have no "
                "person id (empty or NaN); every record needs its person"
            )
        ids.append(values)
    both = np.concatenate([ids[0].astype(object), ids[1].astype(object)])
    if pd.unique(both).size == both.size:
        raise UsageError(
            f"--group-column {column}: every one of the {both.size} records has its own "
            "person id, so no person has several records: check the column (an encounter "
            "or row id is no person id), or leave --group-column out for a record audit"
        )
    keep = [c for c in X_train.columns if c != column]
    return X_train[keep], X_population[keep], ids[0], ids[1]


def built_in_persons(args: argparse.Namespace, bunch: Any) -> np.ndarray | None:
    """The person ids of a built-in data set: its own ``groups`` (diabetes130: the
    patients) unless ``--group-column none``, or a column of its records when named."""
    column = getattr(args, "group_column", None)
    own = bunch.get("groups") if isinstance(bunch, dict) else getattr(bunch, "groups", None)
    if column is None:
        if own is None:
            _refuse_rule_without_persons(args)
        return None if own is None else np.asarray(own)
    if column.lower() == "none":
        _refuse_rule_without_persons(args)
        return None
    target = bunch.get("target") if isinstance(bunch, dict) else getattr(bunch, "target", None)
    if column == getattr(target, "name", None):
        raise UsageError(_label_is_no_person(column, f"data set {args.dataset}'s label"))
    data = bunch.data
    if isinstance(data, pd.DataFrame) and column in data.columns:
        return data[column].to_numpy()
    raise UsageError(
        f"--group-column {column}: data set {args.dataset} has no column {column!r}"
        + ("" if own is None else "; its own person ids are used without --group-column")
    )


def _refuse_rule_without_persons(args: argparse.Namespace) -> None:
    """``--person-rule`` combines a person's records: without persons it would do nothing."""
    if getattr(args, "person_rule", None) is not None:
        raise UsageError(
            f"--person-rule {args.person_rule} needs --group-column (the column of each "
            "record's person; a built-in data set's own persons where it has them): "
            "without persons the audit's unit is the record and no rule applies"
        )


def _label_is_no_person(column: str, what: str) -> str:
    return (
        f"--group-column {column}: {column!r} is the label ({what}), not a person id: "
        "name the column that holds each record's person"
    )


def keep_person_column(
    args: argparse.Namespace,
    taken: Any,
    frames: list[pd.DataFrame],
    ids: list[np.ndarray | None],
) -> list[pd.DataFrame]:
    """The records with ``--group-column`` put back where the model takes it as an input
    (a model trained on the person id): it stays the model's input and names persons, with
    one ``tabmia: note:``; ``frames`` unchanged otherwise."""
    column = getattr(args, "group_column", None)
    if column is None or taken is None or column not in {str(c) for c in taken}:
        return frames
    import warnings

    warnings.warn(
        f"--group-column {column}: the model takes {column!r} as an input, so it stays "
        "among the model's inputs as well as naming each record's person (a model that "
        "reads the person id can learn persons by their id)",
        RunNote,
        stacklevel=2,
    )
    return [frame.assign(**{column: v}) for frame, v in zip(frames, ids)]


def check_person_attacks(attacks: dict[str, Any]) -> None:
    """Refuse, before anything trains, attacks that promise no FPR to calibrate persons on
    (a proxy-chosen threshold: ``threshold_goal`` other than ``"fpr"``, Morgan's)."""
    refused = [name for name, a in attacks.items() if getattr(a, "threshold_goal", "fpr") != "fpr"]
    if refused:
        raise UsageError(
            f"--attacks {','.join(refused)}: a person-level audit calibrates each attack's "
            "persons on the public persons at its FPR, and these promise none; leave them "
            "out, or audit records (--group-column none on a built-in data set)"
        )


def check_public_persons(attacks: dict[str, Any], n_public: int, noun: str) -> None:
    """Refuse, before anything trains, an attack whose FPR the ``n_public`` public persons
    cannot promise at the person level (:func:`tabmia.persons.public_persons_needed`).

    An attack that holds calibration records out of its models calibrates on fewer
    persons still; the person-level result says so after the audit where that is short.
    """
    promised = {
        name: float(attack.fpr)
        for name, attack in attacks.items()
        if getattr(attack, "fpr", None) is not None
        and getattr(attack, "threshold_goal", "fpr") == "fpr"
    }
    if not promised:
        return
    name = min(promised, key=promised.__getitem__)
    fpr = promised[name]
    needed = public_persons_needed(fpr)
    if n_public < needed and 1.0 / (n_public + 1) >= 0.5:
        raise UsageError(
            f"attack {name!r}: the attacker's public data will hold {n_public} {noun}: too "
            f"few to calibrate any person-level threshold (a person-level FPR of {fpr:g} "
            f"needs at least {needed} public {noun}): give a population of more {noun} "
            "(--population, --public-size) or --group-column none (records)"
        )
    if n_public < needed:
        raise UsageError(
            f"attack {name!r}: the attacker's public data will hold {n_public} {noun}, and a "
            f"person-level FPR of {fpr:g} needs at least {needed} public {noun} (the smallest "
            f"p-value of n persons is 1/(n+1)): give more public {noun} (--population, "
            f"--public-size), a larger --fpr (at least {1.0 / (n_public + 1):.3g}) or "
            "--group-column none (records)"
        )


def to_persons(args: argparse.Namespace, result: Any, context: dict[str, Any]) -> Any:
    """The person-level result of a record-level audit with persons (``result`` itself
    without), and the context lines that say so."""
    if PERSON not in result.scores.columns:
        return result
    if any(f.check == "shared_persons" for f in result.findings):
        # no person is a member or not as a whole: the record-level audit says cannot tell
        context["unit"] = "the record (persons shared between the files: see the finding)"
        return result
    rule = getattr(args, "person_rule", None) or DEFAULT_RULE
    try:
        persons = person_result(result, rule=rule, fprs=args.fprs, gammas=args.gammas)
    except UnresolvableFPRError as exc:
        raise UsageError(
            f"{exc}; give more public persons (--population, --public-size) or a larger --fpr"
        ) from exc
    noun = context.get("persons", "persons")
    scores = persons.scores
    first = scores[(scores["repeat"] == scores["repeat"].iloc[0])] if "repeat" in scores else scores
    first = first[first["attack"] == first["attack"].iloc[0]]
    context["unit"] = f"the person ({noun}, {rule} rule)"
    context[f"member {noun}"] = int(first["member"].sum())
    context[f"non-member {noun}"] = int((~first["member"].astype(bool)).sum())
    if "n_persons_public" in persons.metrics:
        context[f"attacker public {noun}"] = int(persons.metrics["n_persons_public"].iloc[0])
    return persons
