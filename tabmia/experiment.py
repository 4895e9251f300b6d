"""The membership game: split, train a target, attack it, score the attacks.

One data set is split (seeded) into the target's training set (the members), held-out
non-member candidates, and the attacker's public records. The target is trained on the
members; every attack is fitted on the public records (online attacks get the public
records plus the candidates, whose membership they do not know) and scores the
candidates; :func:`tabmia.metrics.attack_metrics` turns the scores and the ground truth
into a table. Repeating over seeds gives the mean and spread.

One seed of the game is a :class:`MembershipRound`: every runner plays its seeds
through it (:class:`MembershipExperiment`, :func:`tabmia.audit.audit_model`,
:func:`tabmia.benchmark.run_benchmark` and ``tabmia audit``), so a seed is split, its
target trained and its attacks run the same way everywhere. :func:`game_seeds` and
:func:`subsample` are the seeds and the subsample they share.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from tabmia._columns import RECORD
from tabmia._play import run_attacks
from tabmia._result import ExperimentResult
from tabmia._seeding import seed_estimator
from tabmia.attacks import membership_tags
from tabmia.exceptions import (
    PlausibilityWarning,
)
from tabmia.metrics import check_audit_size
from tabmia.plausibility import check_attack_scores
from tabmia.settings import RunSettings
from tabmia.splits import (
    MembershipSplit,
    game_seeds,
    record_meta,
    slice_frame,
    split_membership,
    subsample,
    subsample_persons,
)
from tabmia.target import n_rows, take_rows

__all__ = [
    "MembershipSplit",
    "split_membership",
    "game_seeds",
    "subsample",
    "subsample_persons",
    "MembershipRound",
    "ExperimentResult",
    "MembershipExperiment",
    "run_attacks",
]


@dataclass
class MembershipRound:
    """One seed of the membership game: a target, the attacker's public records, and
    the candidates with the truth about them.

    :meth:`draw` splits one data set with the seed (the target is trained later, by
    :meth:`train_target`: a runner that finds its results cached trains none);
    :func:`tabmia.audit.audit_model` builds one around a model already trained.
    :meth:`play` fits attacks and scores the candidates.

    Attributes
    ----------
    seed : int
        Seeds the split, the target and the attacks.
    X_public, y_public
        The attacker's public records.
    X_candidates, y_candidates
        The records the attacks score.
    member : ndarray of bool
        Which candidates the target trained on.
    columns : dict
        Extra per-candidate columns of the scores (``record``: the row in the data).
    train_size : int
        Records the target trained on (shadow models train on as many).
    split : MembershipSplit or None
        The split of one data set (:meth:`draw`).
    target : estimator or None
        The fitted target.
    accuracy : dict or None
        ``train`` and ``test`` (held-out candidates) accuracy of a target trained by
        :meth:`train_target`, and the ``seconds`` that took.
    data : tuple or None
        ``(X, y)``, the data set the round was drawn from (:meth:`draw`): the target
        trains on its members.
    public_columns : dict
        Per-public-record columns (``record``; ``person`` and ``slice:<name>`` where
        given), beside ``columns``' of the candidates (docs: records, persons and
        slices). The attacks get the persons as ``groups``.
    calibration : list of DataFrame
        What :meth:`play` kept of each attack's calibration scores (every attack with an
        FPR threshold).
    """

    seed: int
    X_public: Any
    y_public: np.ndarray
    X_candidates: Any
    y_candidates: np.ndarray
    member: np.ndarray
    columns: dict[str, Any]
    train_size: int
    split: MembershipSplit | None = None
    target: Any = None
    accuracy: dict[str, float] | None = None
    data: tuple[Any, np.ndarray] | None = field(default=None, repr=False)
    public_columns: dict[str, Any] = field(default_factory=dict)
    calibration: list = field(default_factory=list, repr=False)

    @classmethod
    def draw(
        cls,
        X: Any,
        y: np.ndarray,
        seed: int,
        *,
        train_size: float | int = 0.5,
        public_size: float | int = 0.5,
        prior: float | None = None,
        groups: Any = None,
        slices: pd.DataFrame | None = None,
    ) -> MembershipRound:
        """The round of ``seed`` on ``(X, y)``: its split (:func:`split_membership`, by
        person with ``groups``), with the records' persons and ``slices`` (a frame of
        group labels aligned with the records) as columns of the candidates and the
        public records."""
        split = split_membership(
            y.shape[0],
            train_size=train_size,
            public_size=public_size,
            prior=prior,
            random_state=seed,
            groups=groups,
        )
        cand = np.r_[split.members, split.nonmembers]
        member = np.r_[np.ones(split.members.size, bool), np.zeros(split.nonmembers.size, bool)]
        return cls(
            seed=int(seed),
            X_public=take_rows(X, split.public),
            y_public=y[split.public],
            X_candidates=take_rows(X, cand),
            y_candidates=y[cand],
            member=member,
            columns={RECORD: cand, **record_meta(cand, groups, slices)},
            train_size=int(split.train.size),
            split=split,
            data=(X, y),
            public_columns={RECORD: split.public, **record_meta(split.public, groups, slices)},
        )

    def train_target(self, estimator: Any) -> Any:
        """Train a clone of ``estimator`` on the members, every ``random_state`` in it
        set to the seed; sets and returns :attr:`target` (and :attr:`accuracy`)."""
        if self.data is None:
            raise ValueError(
                "this round was built around a trained target: it holds no "
                "data set to train one on (use MembershipRound.draw)"
            )
        X, y = self.data
        assert self.split is not None  # a round with data was drawn, so it has its split
        train, held_out = self.split.train, self.split.nonmembers
        target = clone(estimator)
        seed_estimator(target, self.seed, catboost_seed=False)
        t0 = time.perf_counter()
        target.fit(take_rows(X, train), y[train])
        # CatBoost's predict answers one column per record: flattened before comparing
        self.accuracy = {
            "train": float(np.mean(np.ravel(target.predict(take_rows(X, train))) == y[train])),
            "test": float(np.mean(np.ravel(target.predict(take_rows(X, held_out))) == y[held_out])),
            "seconds": time.perf_counter() - t0,
        }
        self.target = target
        return target

    def play(
        self,
        attacks: dict[str, Any],
        *,
        settings: RunSettings | None = None,
        repeat: int = 0,
        **options: Any,
    ) -> tuple[list[pd.DataFrame], list[dict[str, Any]], list[Any]]:
        """Fit ``attacks`` against the target and score the candidates
        (:func:`run_attacks`); every row and frame is labelled ``repeat``.

        ``settings`` (:class:`~tabmia.settings.RunSettings`, its defaults where None)
        are the run's; ``options`` are fields of it to change for this round
        (``fprs=``, ``gammas=``, ``fpr_fallback=``, ``verbose=``, ``keep_attacks=``)."""
        frames, rows, fitted = run_attacks(
            self.target,
            attacks,
            self.X_public,
            self.y_public,
            self.X_candidates,
            self.y_candidates,
            self.member,
            seed=self.seed,
            settings=(settings or RunSettings()).replace(**options),
            extra_columns=self.columns,
            repeat=repeat,
            train_size=self.train_size,
            public_columns=self.public_columns,
            calibration=self.calibration,
        )
        for row in rows:
            row["repeat"] = repeat
        for frame in frames:
            frame.insert(0, "repeat", repeat)
        for frame in self.calibration:
            if "repeat" not in frame:
                frame.insert(0, "repeat", repeat)
        return frames, rows, fitted


class MembershipExperiment:
    """Run the membership game for a target recipe and a list of attacks.

    Parameters
    ----------
    estimator : estimator
        Unfitted target recipe (e.g. a Pipeline); cloned and trained on the members
        of each repeat.
    attacks : dict of str -> attack
        Unfitted attacks (``target`` left unset: it is set to each repeat's fitted
        target). Names label the results.
    train_size, public_size, prior
        See :func:`split_membership`.
    n_repeats : int, default=1
        Seeds to repeat the game over.
    fprs : tuple of float, default=(0.01, 0.001)
        FPR levels for TPR / precision.
    gammas : tuple of float, default=(1.0, 10.0)
        Priors for the PPV at each attack's own threshold.
    random_state : int, RandomState instance or None, default=0
        Seeds the splits, the targets (when they take ``random_state``) and attacks.
    verbose : bool, default=False
        Print progress.
    fpr_fallback : bool, default=False
        An attack whose calibration records cannot promise its ``fpr`` aims at the
        smallest FPR they can promise instead of raising (see :func:`run_attacks`).
    """

    def __init__(
        self,
        estimator: Any,
        attacks: dict[str, Any],
        *,
        train_size: float | int = 0.5,
        public_size: float | int = 0.5,
        prior: float | None = None,
        n_repeats: int = 1,
        fprs: tuple[float, ...] = (0.01, 0.001),
        gammas: tuple[float, ...] = (1.0, 10.0),
        random_state: Any = 0,
        verbose: bool = False,
        fpr_fallback: bool = False,
    ) -> None:
        self.estimator = estimator
        self.attacks = attacks
        self.train_size = train_size
        self.public_size = public_size
        self.prior = prior
        self.n_repeats = n_repeats
        self.fprs = fprs
        self.gammas = gammas
        self.random_state = random_state
        self.verbose = verbose
        self.fpr_fallback = fpr_fallback

    def _check(self) -> None:
        if not isinstance(self.attacks, dict) or not self.attacks:
            raise ValueError("attacks must be a non-empty dict of name -> attack")
        if not isinstance(self.n_repeats, (Integral, np.integer)) or self.n_repeats < 1:
            raise ValueError(f"n_repeats must be an int >= 1, got {self.n_repeats!r}")
        for name, attack in self.attacks.items():
            try:
                membership_tags(attack)
            except TypeError as exc:
                raise TypeError(f"attack {name!r}: {exc}") from exc

    def run(self, X: Any, y: Any, groups: Any = None, slices: Any = None) -> ExperimentResult:
        """Play the game on ``(X, y)`` ``n_repeats`` times.

        Parameters
        ----------
        X, y
            The data set.
        groups : array-like of shape (n,), default=None
            Person id of each record: the split keeps a person's records on one side
            and the attacks keep them whole (docs: records, persons and slices); the
            result then has a ``person`` column and a ``calibration`` frame, from which
            :func:`tabmia.persons.person_result` audits persons.
        slices : DataFrame or array-like, default=None
            Group labels of each record (one or more columns), carried as
            ``slice:<name>`` columns for :mod:`tabmia.slices`.

        Returns
        -------
        ExperimentResult
            ``findings`` holds an AUC below chance
            (:func:`tabmia.plausibility.check_attack_scores`), which makes the verdict and
            the gate "cannot tell".

        Warns
        -----
        PlausibilityWarning
            For each finding.
        """
        self._check()
        y = np.asarray(y)
        if n_rows(X) != y.shape[0]:
            raise ValueError(f"X has {n_rows(X)} records but y has {y.shape[0]} labels")
        if groups is not None:
            from tabmia._groups import check_groups

            groups = check_groups(groups, y.shape[0])
        slices = slice_frame(slices, y.shape[0])
        score_frames, metric_rows, targets, splits, acc_rows, fitted = [], [], [], [], [], []
        calibration: list[pd.DataFrame] = []
        for repeat, seed in enumerate(game_seeds(self.random_state, self.n_repeats)):
            game = MembershipRound.draw(
                X,
                y,
                seed,
                train_size=self.train_size,
                public_size=self.public_size,
                prior=self.prior,
                groups=groups,
                slices=slices,
            )
            assert game.split is not None  # a drawn round has its split
            check_audit_size(game.split.members.size, game.split.nonmembers.size)
            targets.append(game.train_target(self.estimator))
            assert game.accuracy is not None  # set by train_target
            splits.append(game.split)
            acc_rows.append(
                {
                    "repeat": repeat,
                    "train_accuracy": game.accuracy["train"],
                    "test_accuracy": game.accuracy["test"],
                }
            )
            frames, rows, attacks = game.play(
                self.attacks,
                fprs=self.fprs,
                gammas=self.gammas,
                repeat=repeat,
                verbose=self.verbose,
                fpr_fallback=self.fpr_fallback,
            )
            score_frames += frames
            metric_rows += rows
            fitted += attacks
            calibration += game.calibration
        scores = pd.concat(score_frames, ignore_index=True)
        # the game splits the data itself, so only the scores can contradict an honest audit
        findings = tuple(check_attack_scores(scores))
        for finding in findings:
            warnings.warn(str(finding), PlausibilityWarning, stacklevel=2)
        return ExperimentResult(
            scores=scores,
            metrics=pd.DataFrame(metric_rows),
            targets=targets,
            splits=splits,
            target_accuracy=pd.DataFrame(acc_rows),
            attacks=fitted,
            findings=findings,
            calibration=pd.concat(calibration, ignore_index=True) if calibration else None,
        )
