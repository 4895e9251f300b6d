"""The contract every membership inference attack keeps.

An attack is a scikit-learn estimator. ``fit(X, y)`` takes the attacker's public
records (population records the target did not train on); ``decision_function(X, y)``
scores candidate records (higher = more likely a member); ``predict(X, y)`` flags
``decision_function(X, y) >= threshold_``. Subclasses write only ``_fit`` and
``_score`` (and ``_score_ceiling`` where their score has a highest value).

``score_samples(X, y)``, where an attack has one, is the attack's own test statistic
on its natural scale (LiRA's ``-log p`` or ``log Lambda``, the quantile attack's
``-log p``, RMIA's log likelihood ratio), oriented like ``decision_function``:
higher = more member-like, and a non-decreasing function of ``decision_function`` on
the same candidates, so the two rank candidates alike. This is scikit-learn's
convention for outlier detectors (``decision_function = score_samples - offset_``,
both higher for the positive, "normal" side), with members as the positive side.

An attack has no ``score(X, y)`` method: its quality is measured on records whose
membership is known, which ``fit``'s public records are not. Model selection
(``GridSearchCV``) takes ``scoring=tabmia.metrics.make_membership_scorer(...)`` on a
simulated membership game (:func:`tabmia.game.membership_game`); without it scikit-
learn refuses the search instead of scoring every candidate NaN.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import math
import warnings
from abc import ABCMeta, abstractmethod
from collections.abc import Iterator
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from tabmia._array import ravel_column
from tabmia._estimators import clone_unfitted
from tabmia._records import hashes_reused, record_hashes
from tabmia.attacks._base_threshold import (
    MAX_FALLBACK_FPR,
    check_flags_anybody,
    choose_threshold,
    resolve_fpr,
)
from tabmia.attacks._tags import MembershipTags, Tags, membership_tags
from tabmia.exceptions import DuplicateRecordsWarning, LabelOnlyTargetError
from tabmia.game import nonmember_rows, split_game_labels
from tabmia.target import TargetModel, as_target, n_rows
from tabmia.thresholds import GOALS

__all__ = ["BaseMembershipAttack", "MAX_FALLBACK_FPR", "label_only_attacks"]

_SEED_MAX = np.iinfo(np.int32).max


class BaseMembershipAttack(BaseEstimator, metaclass=ABCMeta):
    """Base class of membership inference attacks.

    The parameters below are common to all attacks: every attack takes them, beside its
    own.

    Parameters
    ----------
    target : object
        The fitted model under audit (anything :class:`tabmia.target.TargetModel`
        accepts, or a ``TargetModel``). Kept by reference: ``clone(attack)`` never
        copies or un-fits it.
    threshold_goal : {"fpr", "max_ppv", "max_advantage"}, default="fpr"
        What ``threshold_`` optimises (Jayaraman et al., Procedure 5.1). ``"fpr"``
        uses the public records as known non-members; the other goals also need
        simulated members, from a proxy model trained on half of the public records.
    fpr : float, default=0.01
        FPR that ``threshold_`` promises on fresh non-members when
        ``threshold_goal="fpr"``.
    unresolved_fpr : {"raise", "smallest"}, default="raise"
        What ``fit`` does when its calibration records cannot promise ``fpr`` (``n``
        non-member scores promise no FPR below ``1 / (n + 1)``): raise
        :class:`~tabmia.metrics.UnresolvableFPRError`, or aim at the smallest FPR they
        can promise (``fpr_``) with a :class:`~tabmia.exceptions.FPRFallbackWarning` --
        unless that is above :data:`MAX_FALLBACK_FPR`, where a verdict would no longer
        mean "singled out", which raises too. ``fit`` decides before it trains any model.
    prior : float, default=1.0
        Non-members per member among the candidates (``gamma``), for ``"max_ppv"``.
    proxy_estimator : estimator, default=None
        Unfitted recipe of the attacker's proxy model for the ``"max_ppv"`` /
        ``"max_advantage"`` goals; by default a clone of the target's recipe when the
        target is a scikit-learn estimator.
    random_state : int, RandomState instance or None, default=None
        Seeds every random choice the attack makes.

    Attributes
    ----------
    target_ : TargetModel
        The wrapped target. When ``target`` is a ``TargetModel``, a copy whose
        ``n_queries_`` counts this attack's queries only: ``fit`` never changes the
        object the user passed.
    n_features_in_ : int
        Number of columns of ``fit``'s ``X`` (when it has columns).
    feature_names_in_ : ndarray of str
        Column names of ``fit``'s ``X`` when it is a DataFrame with string names.
    threshold_ : float
        Decision threshold on ``decision_function``.
    fpr_ : float or None
        With ``threshold_goal="fpr"``, the FPR ``threshold_`` promises on fresh
        non-members: ``fpr``, or the smallest FPR the calibration records can promise
        (``unresolved_fpr="smallest"``). None for the other goals, which promise no
        FPR.
    n_calibration_ : int
        Number of non-member scores ``threshold_`` was chosen from (see
        ``calibration_scores_``).
    n_public_ : int
        Number of public records ``fit`` received.
    calibration_scores_ : ndarray
        Non-member scores ``threshold_`` was chosen from (the public records, or the
        proxy's non-members).
    calibration_rows_ : ndarray of int or None
        With ``threshold_goal="fpr"``, which of ``fit``'s records (positions) each of
        ``calibration_scores_`` belongs to: all of them in order, the held-out ones, or
        an online pool's known non-members. None for the other goals (the proxy's
        records). A person-level or per-slice threshold is calibrated on these records'
        scores (docs: records, persons and slices).
    flags_nobody_ : bool
        Whether ``threshold_`` lies above the highest score the attack can give, so that
        ``predict`` flags no record whatever the candidates (its TPR is 0 at any
        membership; ``fit`` then warns, :class:`~tabmia.exceptions.FlagsNobodyWarning`).
        It happens to attacks with a bounded score (gap, noise robustness, Merlin,
        boundary distance) where more public records than the FPR allows share that
        highest score: an overfit model labels almost every record right. False where
        the attack's score has no known highest value, even if a given set of
        candidates gets no flag.
    """

    _parameter_constraints: dict[str, Any] = {
        "target": "no_validation",
        "threshold_goal": [StrOptions(set(GOALS))],
        "fpr": [Interval(Real, 0, 1, closed="neither")],
        "unresolved_fpr": [StrOptions({"raise", "smallest"})],
        "prior": [Interval(Real, 0, None, closed="neither")],
        "proxy_estimator": [None, HasMethods(["fit"])],
        "random_state": ["random_state"],
    }

    @classmethod
    def _fast_params(cls) -> dict[str, Any]:
        """Settings that make the attack quick enough for the common contract tests."""
        return {}

    # -------------------------------------------------------------- sklearn hooks
    def __sklearn_clone__(self) -> BaseMembershipAttack:
        """Clone the attack's settings, keeping the fitted target by reference."""
        params = self.get_params(deep=False)
        target = params.pop("target", None)
        new_params = {k: clone_unfitted(v, safe=False) for k, v in params.items()}
        return type(self)(target=target, **new_params)

    def __sklearn_tags__(self) -> Tags:
        """scikit-learn's tags plus the attack's :class:`~tabmia.attacks.MembershipTags`.

        Subclasses change ``tags.membership_tags`` after calling this (see
        :mod:`tabmia.attacks._tags`).
        """
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.requires_fit = True
        tags.target_tags.required = True
        # records go to the target as given: sparse ones work wherever the target takes them
        tags.input_tags.sparse = True
        return Tags.extend(
            tags,
            MembershipTags(
                proxy_recipe_param="proxy_estimator",
                fpr_fallback={"unresolved_fpr": "smallest"},
                runner_settings=frozenset({"random_state", "fpr"}),
                run_params=frozenset({"target", "random_state"}),
            ),
        )

    @property
    def fit_includes_candidates(self) -> bool:
        """Whether ``fit`` expects a pool that contains the candidate records.

        False for offline attacks: ``fit`` takes public records only, known
        non-members of the target. True for online attacks (``LiRAAttack(online=True)``):
        ``fit`` takes the public records plus the candidates, whose membership it is not
        told, with ``known_nonmembers`` marking the public ones. The
        ``fit_includes_candidates`` field of the attack's membership tags, which
        :func:`tabmia.experiment.run_attacks` reads to choose what to pass.
        """
        return membership_tags(self).fit_includes_candidates

    @property
    def _fit_includes_candidates(self) -> bool:
        """The :attr:`fit_includes_candidates` tag, under its former private name."""
        return self.fit_includes_candidates

    # ---------------------------------------------------------------- public API
    def fit(self, X: Any, y: Any, groups: Any = None) -> BaseMembershipAttack:
        """Fit the attack on the attacker's public records and choose ``threshold_``.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n, d)
            Public records, in the form the target takes.
        y : array-like of shape (n,)
            Their labels; or the labels of a membership game
            (:func:`tabmia.game.membership_game`), whose members are then left out:
            only the game's non-members are public records. A game is played to rank
            attacks (hyperparameter search with a ranking scorer), so there an
            ``fpr`` the calibration records cannot promise is replaced by the smallest
            they can, whatever ``unresolved_fpr`` says.
        groups : array-like of shape (n,), default=None
            Person id of each record (scikit-learn's ``groups``): a person's records
            share one IN/OUT mask in the attack's shadow / reference models, are held
            out for calibration together and fall in one cross-fitting fold, so that the
            calibration scores stay exchangeable with a fresh non-member *person*'s.
            Routed by scikit-learn's metadata routing (``set_fit_request(groups=True)``)
            inside a ``GridSearchCV`` or ``Pipeline``.

        Returns
        -------
        self

        Raises
        ------
        UnresolvableFPRError
            With ``threshold_goal="fpr"``, when the calibration records cannot promise
            ``fpr`` (see ``unresolved_fpr``); raised before any model is trained.
        """
        labels, member = split_game_labels(y)
        if groups is not None:
            from tabmia._groups import check_groups

            groups = check_groups(groups, n_rows(X))
            if member is not None:
                groups = groups[~np.asarray(member, dtype=bool)]
        if member is not None:
            X, labels = nonmember_rows(X, labels, member)
        self._fit_groups = None if groups is None else _codes(groups)
        self._fit_scorer(X, labels, ranking_only=member is not None)
        self.threshold_ = self._choose_threshold(X, np.asarray(labels), self._y_public)
        del self._y_public
        check_flags_anybody(self)
        return self

    def decision_function(self, X: Any, y: Any = None, groups: Any = None) -> np.ndarray:
        """Membership score of each candidate record ``(X[i], y[i])``.

        ``y`` may be a membership game's labels; only their class labels are used.
        ``groups`` (person ids, as ``fit`` takes them) make a person's records scored
        alike where the attack draws which of its models score a record (the shadow /
        reference attacks: one OUT set per person, as a public person's records share
        one IN/OUT mask), so that a candidate person's scores are distributed like a
        public person's; other attacks ignore them.

        Returns
        -------
        ndarray of shape (n,)
            Float64, higher = more likely a member; comparable across attacks.

        Warns
        -----
        DuplicateRecordsWarning
            When candidates repeat public records given to ``fit``.
        """
        check_is_fitted(self, "threshold_")
        with _scoring_persons(self, groups, X), hashes_reused():
            # the scoring's record keys serve the duplicate check
            s = self._scores(X, split_game_labels(y)[0])
            self._warn_public_candidates(X, y)
        return s

    def predict(self, X: Any, y: Any = None, groups: Any = None) -> np.ndarray:
        """Flag members: ``decision_function(X, y, groups) >= threshold_``."""
        return self.decision_function(X, y, groups) >= self.threshold_

    # -------------------------------------------------------------- subclass API
    def _fit(self, X: Any, y: np.ndarray) -> None:
        """Learn whatever the attack needs from public records (labels as indices)."""

    @abstractmethod
    def _score(self, X: Any, y: np.ndarray) -> np.ndarray:
        """Membership scores of candidate records (labels as indices); higher = member."""

    def _score_ceiling(self) -> float:
        """The highest score ``_score`` can give (after ``fit``); ``inf`` where none is
        known. An attack whose score is bounded (a share of queries, a 0 / 1 flag, a
        capped distance) returns its bound, so that ``fit`` can tell a threshold that
        flags nobody (``flags_nobody_``)."""
        return math.inf

    def _nonmember_calibration_scores(self, X: Any, y: np.ndarray) -> np.ndarray:
        """Scores of known non-members for ``threshold_goal="fpr"``, exchangeable with
        a fresh non-member's score.

        By default the public records themselves. Attacks whose score was trained on
        those records override this (out-of-fold scores, held-out records, records
        scored only by the models they did not train).
        """
        return self._score(X, y)

    def _calibration_rows(self) -> np.ndarray:
        """Positions among ``fit``'s records of the calibration scores (by default all
        public records, in order); overridden with :meth:`_nonmember_calibration_scores`."""
        return np.arange(self.n_public_)

    def _calibration_count(self) -> tuple[int, str]:
        """How many calibration scores ``fit`` will have, and which records they are.

        Known before any model is trained (``n_public_`` is set), so that an FPR they
        cannot promise is refused up front. Overridden together with
        :meth:`_nonmember_calibration_scores`.
        """
        return self.n_public_, f"the {self.n_public_} public records given to fit"

    def _fit_public(self, X: Any, y: np.ndarray) -> None:
        """Fit on the public records; attacks that hold some out override this."""
        self._fit(X, y)

    # ------------------------------------------------------------------ internals
    def _fit_scorer(self, X: Any, y: Any, *, ranking_only: bool = False) -> None:
        self._validate_params()
        self.target_ = self._make_target()
        self._check_outputs()
        self._rng_ = check_random_state(self.random_state)
        y_idx = self._validate_records(X, y, "fit")
        validate_data(self, X, reset=True, skip_check_array=True)
        self.n_public_ = n_rows(X)
        # online attacks are fitted on the candidates on purpose
        self._public_keys = None if self.fit_includes_candidates else record_hashes(X, y_idx)
        self.fpr_ = resolve_fpr(self, ranking_only)
        self._fit_public(X, y_idx)
        self._y_public = y_idx

    def _make_target(self) -> TargetModel:
        if self.target is None:
            raise ValueError(
                f"{type(self).__name__}: target is None; pass the fitted model under audit "
                "as target="
            )
        if isinstance(self.target, TargetModel):
            # the attack counts its own queries on its own copy, not on the user's object
            target = copy.copy(self.target)
            target.n_queries_ = 0
            return target
        return as_target(self.target)

    def _check_outputs(self) -> None:
        """Refuse a label-only target when the attack needs more than labels (its
        ``target_outputs`` tag). An attack that needs logits says why in its own fit,
        where it knows which of its settings needs them."""
        if self.target_.outputs != "labels" or membership_tags(self).works_with("labels"):
            return
        raise LabelOnlyTargetError(
            f"{type(self).__name__} needs the target's probabilities, but the target "
            f"answers with labels only ({self.target_.labels_reason}); attacks that work "
            f"from labels: {', '.join(label_only_attacks())}"
        )

    def _draw_seed(self) -> int:
        """A fresh integer seed from the attack's random state (set in ``fit``)."""
        return int(self._rng_.randint(_SEED_MAX))

    def _validate_records(self, X: Any, y: Any, where: str) -> np.ndarray:
        if X is None:
            raise ValueError(f"{where}: X is None")
        if y is None:
            raise ValueError(
                f"{where}: y is required: a candidate record is a (features, label) pair "
                f"({type(self).__name__} requires y to be passed, but the target y is None)"
            )
        n = n_rows(X)
        y_arr = ravel_column(y)
        if y_arr.ndim != 1:
            raise ValueError(f"{where}: y must be 1-D, got shape {y_arr.shape}")
        if n != y_arr.shape[0]:
            raise ValueError(f"{where}: X has {n} records but y has {y_arr.shape[0]} labels")
        if n == 0:
            raise ValueError(f"{where}: X has no records")
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2 and shape[1] == 0:  # scikit-learn's wording
            raise ValueError(
                f"{where}: Found array with 0 feature(s) (shape={tuple(shape)}) "
                "while a minimum of 1 is required."
            )
        return self.target_.encode_labels(y_arr, name="y")

    def _scores(self, X: Any, y: Any) -> np.ndarray:
        y_idx = self._validate_records(X, y, "decision_function")
        try:
            validate_data(self, X, reset=False, skip_check_array=True)
        except ValueError as exc:
            raise ValueError(
                f"{exc} (candidates need the columns of the public records given to fit)"
            ) from exc
        s = np.asarray(self._score(X, y_idx), dtype=np.float64)
        if s.shape != (n_rows(X),):
            raise RuntimeError(
                f"{type(self).__name__}._score returned shape {s.shape}, expected ({n_rows(X)},)"
            )
        if not np.all(np.isfinite(s)):
            raise ValueError(
                f"{type(self).__name__} produced {int((~np.isfinite(s)).sum())} NaN or "
                "infinite scores (does the target return NaN probabilities?)"
            )
        return s

    def _warn_public_candidates(self, X: Any, y: Any) -> None:
        keys = getattr(self, "_public_keys", None)
        if keys is None:
            return
        hashes = record_hashes(X, self.target_.encode_labels(y, name="y"))
        shared = pd.Index(hashes).isin(keys)  # a hash table: 8x faster than np.isin's sort
        if shared.any():
            warnings.warn(
                f"{int(shared.sum())} of {shared.size} candidate records are among the "
                "public records this attack was fitted on (same features and label): the "
                "attacker holds them as known non-members, so their scores say nothing "
                "about membership",
                DuplicateRecordsWarning,
                stacklevel=3,
            )

    def _choose_threshold(self, X: Any, y_raw: np.ndarray, y_idx: np.ndarray) -> float:
        """``threshold_`` for ``threshold_goal`` (:func:`~tabmia.attacks._base_threshold.choose_threshold`);
        an attack that chooses its own (Morgan) overrides this."""
        return choose_threshold(self, X, y_raw, y_idx)


def label_only_attacks() -> list[str]:
    """Names of the attack classes that work from the target's predicted labels alone
    (their ``target_outputs`` tag)."""
    import tabmia.attacks as attacks

    classes = [getattr(attacks, name) for name in attacks.__all__]
    return sorted(
        c.__name__
        for c in classes
        if isinstance(c, type)
        and issubclass(c, BaseMembershipAttack)
        and not inspect.isabstract(c)
        and membership_tags(c()).works_with("labels")
    )


class DefaultStatistic(str):
    """The default of an attack's ``statistic``: equal to its name, but an object of its
    own, so that ``statistic_from_legacy`` tells a ``statistic`` left at its default from
    one given (even given as the same name). Copies are the object itself, which keeps
    that through ``clone``."""

    def __copy__(self) -> DefaultStatistic:
        return self

    def __deepcopy__(self, memo: dict) -> DefaultStatistic:
        return self


def statistic_from_legacy(owner: str, statistic: str, default: str, legacy: dict[str, Any]) -> str:
    """``statistic``, or the value of the deprecated ``score=`` keyword if it was given.

    ``score`` was renamed ``statistic`` because the attribute hid scikit-learn's
    ``score`` method (``GridSearchCV`` then scored every fold NaN). The old keyword is
    taken from ``**legacy`` rather than declared: a declared parameter must be stored
    under its own name, which would hide the method again. It will be removed in the
    release after 0.2.
    """
    unknown = sorted(set(legacy) - {"score"})
    if unknown:
        raise TypeError(f"{owner}.__init__() got an unexpected keyword argument {unknown[0]!r}")
    if "score" not in legacy:
        return statistic
    old = legacy["score"]
    if not isinstance(statistic, DefaultStatistic):  # both keywords given: say so, pick none
        raise TypeError(
            f"{owner}: got statistic={str(statistic)!r} and the deprecated score={old!r}; "
            "give statistic only"
        )
    warnings.warn(
        f"{owner}: the parameter 'score' was renamed 'statistic' in tabmia 0.2 and will "
        f"be removed in 0.3; pass statistic={old!r}",
        FutureWarning,
        stacklevel=3,
    )
    return old


@contextlib.contextmanager
def _scoring_persons(attack: Any, groups: Any, X: Any) -> Iterator[None]:
    """While the block scores ``X``, ``attack._score_groups`` holds the records' person
    codes (``groups``); nothing is set without them, and nothing stays after, so that
    scoring leaves the fitted attack as it was (scikit-learn's ``check_dict_unchanged``)."""
    if groups is None:
        yield
        return
    from tabmia._groups import check_groups, person_codes

    attack._score_groups = person_codes(check_groups(groups, n_rows(X)))
    try:
        yield
    finally:
        del attack._score_groups


def _codes(groups: np.ndarray) -> np.ndarray:
    """Person codes of checked ids (:func:`tabmia._groups.person_codes`)."""
    from tabmia._groups import person_codes

    return person_codes(groups)
