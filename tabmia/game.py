"""Membership games: candidate records with their membership, for model selection.

An attack's hyperparameters are chosen honestly on a *simulated* game: the auditor
trains a shadow model on part of its own public records and lets it play the target.
The real candidates never take part, since their membership is what the audit
measures.

:func:`membership_game` shuffles the shadow's members and non-members into one
``(X, y)`` pair whose ``y`` is a structured array with two fields, ``label`` (the
class label) and ``member`` (bool). scikit-learn's cross-validation splits it like any
other labels, so ``GridSearchCV(attack, grid, scoring=make_membership_scorer(...))
.fit(X, y)`` plays one game per fold:

- ``attack.fit`` receives the training part and keeps only its non-members, the
  attacker's public records (the members are never shown to it);
- :func:`tabmia.metrics.make_membership_scorer` scores the test part, members
  against non-members, with the attack's ``decision_function``.

Examples
--------
>>> import numpy as np
>>> from tabmia.game import membership_game, split_game_labels
>>> X, y = membership_game(np.zeros((3, 2)), [0, 1, 1], np.ones((2, 2)), [1, 0],
...                        random_state=0)
>>> labels, member = split_game_labels(y)
>>> int(member.sum()), sorted(labels.tolist())
(3, [0, 0, 1, 1, 1])
>>> bool(np.all(X[member] == 0) and np.all(X[~member] == 1))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from tabmia._game_labels import GAME_FIELDS, _labels_1d, game_labels, split_game_labels
from tabmia._groups import check_groups
from tabmia.target import concat_rows, n_rows, take_rows

__all__ = ["GAME_FIELDS", "membership_game", "game_labels", "split_game_labels"]


def nonmember_rows(X: Any, labels: np.ndarray, member: np.ndarray) -> tuple[Any, np.ndarray]:
    """The non-member records of a game: what an attack may be fitted on."""
    keep = np.flatnonzero(~member)
    if keep.size == 0:
        raise ValueError(
            "the membership game's records given to fit are all members; an attack is "
            "fitted on known non-members (shuffle the game, e.g. membership_game does)"
        )
    return take_rows(X, keep), labels[keep]


def membership_game(
    X_members: Any,
    y_members: Any,
    X_nonmembers: Any,
    y_nonmembers: Any,
    *,
    groups_members: Any = None,
    groups_nonmembers: Any = None,
    random_state: Any = None,
) -> tuple[Any, ...]:
    """Shuffle a model's members and non-members into one cross-validatable game.

    Parameters
    ----------
    X_members, y_members : array-like, sparse matrix or DataFrame; array-like
        Records that trained the (shadow) model, and their labels.
    X_nonmembers, y_nonmembers : same types
        Records it never saw, and their labels.
    groups_members, groups_nonmembers : array-like, default=None
        The person of each member and of each non-member (scikit-learn's ``groups``, one
        per record), given together: they come back shuffled with the records, ready for a group-aware
        splitter (``GroupKFold``) and for an attack's ``fit(..., groups=)``.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffle (cross-validation folds are then mixed without
        ``shuffle=True``).

    Returns
    -------
    X : same type as ``X_members``
        All records, shuffled.
    y : ndarray of shape (n,)
        Structured labels (fields ``label`` and ``member``), see :func:`game_labels`.
    groups : ndarray of shape (n,)
        Only with ``groups_members`` and ``groups_nonmembers``: each record's person, in the
        order of ``X``.
    """
    n_in, n_out = n_rows(X_members), n_rows(X_nonmembers)
    y_in, y_out = _labels_1d(y_members, "y_members"), _labels_1d(y_nonmembers, "y_nonmembers")
    if (n_in, n_out) != (y_in.shape[0], y_out.shape[0]):
        raise ValueError(
            f"members: {n_in} records and {y_in.shape[0]} labels; non-members: {n_out} "
            f"records and {y_out.shape[0]} labels"
        )
    if n_in == 0 or n_out == 0:
        raise ValueError("a membership game needs both members and non-members")
    persons = _game_groups(groups_members, groups_nonmembers, n_in, n_out)
    X = concat_rows([X_members, X_nonmembers])
    member = np.r_[np.ones(n_in, bool), np.zeros(n_out, bool)]
    perm = check_random_state(random_state).permutation(n_in + n_out)
    game = take_rows(X, perm), game_labels(np.concatenate([y_in, y_out])[perm], member[perm])
    return game if persons is None else (*game, persons[perm])


def _game_groups(members: Any, nonmembers: Any, n_in: int, n_out: int) -> np.ndarray | None:
    """The person ids of the game's records in the order members, non-members (None
    without them), checked as every person id is (:func:`tabmia._groups.check_groups`)."""
    if members is None and nonmembers is None:
        return None
    if members is None or nonmembers is None:
        raise ValueError(
            "give both groups_members and groups_nonmembers (the person of every record), "
            "or neither"
        )
    return np.concatenate(
        [
            check_groups(members, n_in, name="groups_members"),
            check_groups(nonmembers, n_out, name="groups_nonmembers"),
        ]
    )
