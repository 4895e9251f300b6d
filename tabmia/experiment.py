"""The membership game: split, train a target, attack it, score the attacks.

One data set is split (seeded) into the target's training set (the members), held-out
non-member candidates, and the attacker's public records. The target is trained on the
members; every attack is fitted on the public records (online attacks get the public
records plus the candidates, whose membership they do not know) and scores the
candidates; :func:`tabmia.metrics.attack_metrics` turns the scores and the ground truth
into a table. Repeating over seeds gives the mean and spread.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.utils import check_random_state

from tabmia.exceptions import FPRFallbackWarning, ShadowSizeWarning, UnresolvableFPRError
from tabmia.metrics import (
    attack_metrics,
    check_audit_size,
    empirical_epsilon,
)
from tabmia.target import concat_rows, n_rows, take_rows

__all__ = [
    "MembershipSplit", "split_membership", "ExperimentResult", "MembershipExperiment", "run_attacks",
]


@dataclass(frozen=True)
class MembershipSplit:
    """Row indices of one membership game.

    Attributes
    ----------
    train : ndarray
        Records the target trains on (all members).
    members : ndarray
        Members among the candidates (a subset of ``train``).
    nonmembers : ndarray
        Non-member candidates (never seen by the target, unknown to the attacker).
    public : ndarray
        The attacker's public records (never seen by the target).
    """

    train: np.ndarray
    members: np.ndarray
    nonmembers: np.ndarray
    public: np.ndarray


def _size(value: Any, total: int, name: str) -> int:
    if isinstance(value, (Integral, np.integer)) and not isinstance(value, bool):
        out = int(value)
    elif isinstance(value, (Real, np.floating)) and 0.0 < float(value) < 1.0:
        out = int(round(float(value) * total))
    else:
        raise ValueError(f"{name} must be an int >= 1 or a fraction in (0, 1), got {value!r}")
    if not 1 <= out <= total:
        raise ValueError(f"{name}={value!r} gives {out} records, outside [1, {total}]")
    return out


def split_membership(
    n_records: int,
    *,
    train_size: float | int = 0.5,
    public_size: float | int = 0.5,
    prior: float | None = None,
    random_state: Any = None,
) -> MembershipSplit:
    """Seeded split of ``n_records`` rows into target-train, candidates and public.

    Parameters
    ----------
    n_records : int
        Number of rows in the data set.
    train_size : float or int, default=0.5
        Target training set: a fraction of all rows, or a count.
    public_size : float or int, default=0.5
        Attacker's public records: a fraction of the rows left after training, or a
        count. The rest are the non-member candidates.
    prior : float, default=None
        Non-members per member among the candidates (``gamma``). ``None`` uses every
        training record as a candidate; otherwise members (or non-members) are
        subsampled to reach the ratio.
    random_state : int, RandomState instance or None
        Seed of the split.
    """
    rng = check_random_state(random_state)
    perm = rng.permutation(n_records)
    n_train = _size(train_size, n_records, "train_size")
    rest = perm[n_train:]
    if rest.size < 2:
        raise ValueError("train_size leaves fewer than 2 records for candidates and public data")
    n_public = _size(public_size, rest.size, "public_size")
    if n_public >= rest.size:
        raise ValueError("public_size leaves no non-member candidates")
    train, public, nonmembers = perm[:n_train], rest[:n_public], rest[n_public:]
    members = train
    if prior is not None:
        if prior <= 0:
            raise ValueError(f"prior must be > 0, got {prior}")
        want_members = int(round(nonmembers.size / prior))
        if want_members <= members.size:
            members = members[: max(want_members, 1)]
        else:
            nonmembers = nonmembers[: max(int(round(members.size * prior)), 1)]
    return MembershipSplit(np.sort(train), np.sort(members), np.sort(nonmembers), np.sort(public))


@dataclass
class ExperimentResult:
    """Scores and metrics of a membership game over one or more seeds.

    Attributes
    ----------
    scores : DataFrame
        One row per (repeat, attack, candidate): ``record`` (row index in the data
        set), ``member`` (ground truth), ``score``, ``flagged`` (``score >= threshold_``).
    metrics : DataFrame
        One row per (repeat, attack) with every metric of :func:`attack_metrics`,
        plus ``fit_seconds`` and ``score_seconds``. ``tp`` / ``fp`` count the members /
        non-members the attack flags at its own ``threshold_`` (chosen without the
        candidates' membership): what the attacker achieves. ``tpr@<fpr>`` are ROC-curve
        points, reached only by a threshold set with the membership labels (an oracle).
    targets : list
        Fitted target of each repeat.
    splits : list of MembershipSplit
        The split of each repeat.
    target_accuracy : DataFrame
        Train and held-out accuracy of the target per repeat.
    """

    scores: pd.DataFrame
    metrics: pd.DataFrame
    targets: list = field(default_factory=list)
    splits: list = field(default_factory=list)
    target_accuracy: pd.DataFrame | None = None
    attacks: list = field(default_factory=list)

    def summary(self) -> pd.DataFrame:
        """Mean and standard deviation over repeats of each numeric metric, per attack."""
        numeric = self.metrics.drop(columns=["repeat", "seed"], errors="ignore")
        numeric = numeric.apply(pd.to_numeric, errors="coerce").assign(
            attack=self.metrics["attack"]
        )
        grouped = numeric.groupby("attack", sort=False)
        mean = grouped.mean()
        std = grouped.std(ddof=1).fillna(0.0)
        return pd.concat({"mean": mean, "std": std}, axis=1)

    def at_own_threshold(self) -> pd.DataFrame:
        """Each attack's decisions at its own threshold, per repeat.

        Returns
        -------
        DataFrame
            ``repeat``, ``seed``, ``attack``, ``threshold``, ``tp``, ``n_members``,
            ``tpr`` (with ``tpr_low`` / ``tpr_high``), ``fp``, ``n_nonmembers``,
            ``fpr`` (with ``fpr_low`` / ``fpr_high``): 95% Clopper-Pearson intervals.
        """
        cols = ["repeat", "seed", "attack", "threshold", "tp", "n_members", "tpr", "tpr_low",
                "tpr_high", "fp", "n_nonmembers", "fpr", "fpr_low", "fpr_high"]
        return self.metrics[[c for c in cols if c in self.metrics]].reset_index(drop=True)

    def with_delta(self, delta: float, *, confidence: float = 0.95) -> ExperimentResult:
        """A copy whose empirical epsilon lower bounds are for (epsilon, ``delta``)-DP."""
        metrics = self.metrics.copy()
        eps = [empirical_epsilon(int(r.tp), int(r.n_members), int(r.fp), int(r.n_nonmembers),
                                 delta=delta, confidence=confidence)
               for r in metrics[["tp", "n_members", "fp", "n_nonmembers"]].itertuples()]
        metrics["epsilon"] = [e["epsilon"] for e in eps]
        metrics["epsilon_lower"] = [e["epsilon_lower"] for e in eps]
        metrics["delta"] = float(delta)
        return replace(self, metrics=metrics)


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
            if not hasattr(attack, "decision_function") or not hasattr(attack, "fit"):
                raise TypeError(f"attack {name!r} is not a membership attack")

    def run(self, X: Any, y: Any) -> ExperimentResult:
        """Play the game on ``(X, y)`` ``n_repeats`` times.

        Returns
        -------
        ExperimentResult
        """
        self._check()
        y = np.asarray(y)
        if n_rows(X) != y.shape[0]:
            raise ValueError(f"X has {n_rows(X)} records but y has {y.shape[0]} labels")
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.n_repeats)
        score_frames, metric_rows, targets, splits, acc_rows, fitted = [], [], [], [], [], []
        for repeat, seed in enumerate(seeds):
            split = split_membership(
                y.shape[0],
                train_size=self.train_size,
                public_size=self.public_size,
                prior=self.prior,
                random_state=int(seed),
            )
            check_audit_size(split.members.size, split.nonmembers.size)
            target = clone(self.estimator)
            _set_seed(target, int(seed))
            target.fit(take_rows(X, split.train), y[split.train])
            targets.append(target)
            splits.append(split)
            acc_rows.append(
                {
                    "repeat": repeat,
                    "train_accuracy": float(
                        np.mean(target.predict(take_rows(X, split.train)) == y[split.train])
                    ),
                    "test_accuracy": float(
                        np.mean(
                            target.predict(take_rows(X, split.nonmembers)) == y[split.nonmembers]
                        )
                    ),
                }
            )
            cand = np.r_[split.members, split.nonmembers]
            member = np.r_[np.ones(split.members.size, bool), np.zeros(split.nonmembers.size, bool)]
            X_cand, y_cand = take_rows(X, cand), y[cand]
            X_pub, y_pub = take_rows(X, split.public), y[split.public]
            frames, rows, attacks = run_attacks(
                target, self.attacks, X_pub, y_pub, X_cand, y_cand, member,
                seed=int(seed), fprs=self.fprs, gammas=self.gammas, verbose=self.verbose,
                extra_columns={"record": cand}, repeat=repeat, fpr_fallback=self.fpr_fallback,
                train_size=split.train.size,
            )
            for row in rows:
                row["repeat"] = repeat
            for frame in frames:
                frame.insert(0, "repeat", repeat)
            score_frames += frames
            metric_rows += rows
            fitted += attacks
        return ExperimentResult(
            scores=pd.concat(score_frames, ignore_index=True),
            metrics=pd.DataFrame(metric_rows),
            targets=targets,
            splits=splits,
            target_accuracy=pd.DataFrame(acc_rows),
            attacks=fitted,
        )


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
    fprs: tuple[float, ...],
    gammas: tuple[float, ...],
    verbose: bool = False,
    extra_columns: dict[str, Any] | None = None,
    repeat: int = 0,
    fpr_fallback: bool = False,
    train_size: int | None = None,
) -> tuple[list[pd.DataFrame], list[dict[str, Any]], list[Any]]:
    """Fit each attack against ``target`` and score the candidates.

    Online attacks (the ``fit_includes_candidates`` tag) are fitted on the public
    records plus the candidates, whose membership they are not told (only which pool
    records are the public ones, ``known_nonmembers``, the known non-members of the
    target).
    Progress bars of shadow training are labelled ``"seed <repeat>: <name>"``.

    With ``fpr_fallback=True``, an attack whose calibration records cannot promise its
    ``fpr`` aims at the smallest FPR they can promise instead of failing (its
    ``unresolved_fpr="smallest"``, which still refuses beyond
    :data:`~tabmia.attacks.base.MAX_FALLBACK_FPR`); the row's ``fpr_target`` is the FPR
    its threshold promises (the attack's ``fpr_``), ``fpr_requested`` the one asked
    for, and a :class:`~tabmia.exceptions.FPRFallbackWarning` names the change.

    ``train_size`` (the target's training-set size) is passed on as
    ``shadow_train_size`` to attacks that train shadow / reference models and were
    not given one: their models then train on as many records as the target, as far
    as their pool allows (the row's ``shadow_train_size`` and ``shadow_size_note``).

    Returns
    -------
    frames : list of DataFrame
        Per attack: ``attack``, extra columns, ``member``, ``score``, ``flagged``.
    rows : list of dict
        Per attack: ``seed``, ``attack``, every metric, ``fit_seconds``, ``score_seconds``.
    fitted : list
        The fitted attacks.
    """
    from tabmia._progress import progress_label

    frames, rows, fitted = [], [], []
    for name, proto in attacks.items():
        attack = clone(proto).set_params(target=target)
        params = attack.get_params()
        if "random_state" in params:
            attack.set_params(random_state=seed)
        if (train_size is not None and params.get("shadow_train_size", False) is None
                and params.get("pkeep", 0.5) == 0.5):
            # shadows learn what the target learned only from as many records (an
            # explicit pkeep or shadow_train_size is the user's choice)
            attack.set_params(shadow_train_size=int(train_size))
        if fpr_fallback and "unresolved_fpr" in params:
            attack.set_params(unresolved_fpr="smallest")
        t0 = time.perf_counter()
        caught: list = []
        try:
            with progress_label(f"seed {repeat}: {name}"), \
                    warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", FPRFallbackWarning)
                if getattr(attack, "fit_includes_candidates", False):
                    # the public records are the pool's known non-members (its calibration)
                    known = np.r_[np.ones(len(y_public), bool),
                                  np.zeros(len(y_candidates), bool)]
                    attack.fit(concat_rows([X_public, X_candidates]),
                               np.r_[y_public, y_candidates], known_nonmembers=known)
                else:
                    attack.fit(X_public, y_public)
        except UnresolvableFPRError as exc:
            exc.attack = name
            raise
        finally:
            _reissue(caught, name)
        t1 = time.perf_counter()
        s = attack.decision_function(X_candidates, y_candidates)
        t2 = time.perf_counter()
        threshold = attack.threshold_
        m = attack_metrics(member, s, threshold=threshold, fprs=fprs, gammas=gammas,
                           random_state=seed)
        aim = getattr(attack, "fpr_", None)
        row = {"seed": seed, "attack": name, **m, "fpr_target": aim,
               "fpr_requested": params.get("fpr") if aim is not None else None,
               "fit_seconds": t1 - t0, "score_seconds": t2 - t1}
        if getattr(attack, "shadow_train_size_", None) is not None:
            row["shadow_train_size"] = attack.shadow_train_size_
            row["shadow_size_note"] = attack.shadow_size_note_
            if attack.shadow_size_note_ and train_size is not None:
                warnings.warn(f"{name}: {attack.shadow_size_note_}", ShadowSizeWarning,
                              stacklevel=2)
        rows.append(row)
        frames.append(pd.DataFrame({"attack": name, **(extra_columns or {}), "member": member,
                                    "score": s, "flagged": s >= threshold}))
        fitted.append(attack)
        if verbose:
            print(f"  {name}: AUC {m['auc']:.3f} ({t2 - t0:.1f} s)", flush=True)
    return frames, rows, fitted


def _reissue(caught: list, name: str) -> None:
    """Warnings an attack's fit raised, again; an FPR fallback named by the run's name."""
    for w in caught:
        if issubclass(w.category, FPRFallbackWarning):
            text = str(w.message).split(": ", 1)[-1]
            warnings.warn(f"{name}: {text}", FPRFallbackWarning, stacklevel=3)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _set_seed(estimator: Any, seed: int) -> None:
    """Set every ``random_state`` parameter of ``estimator`` (nested ones too) to ``seed``."""
    from tabmia._seeding import seed_estimator

    seed_estimator(estimator, seed, catboost_seed=False)
