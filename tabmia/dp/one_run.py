"""The one-run DP audit of a training recipe (Steinke, Nasr & Jagielski, NeurIPS 2023).

:class:`OneRunAudit` draws ``n_canaries`` canary records from the data set, puts
each into the training set independently with probability 1/2, trains the recipe
once on the other records plus the included canaries, scores every canary with
the trained model, and turns the scores into membership guesses and lower bounds
on epsilon (:func:`tabmia.dp.audit_canary_scores`).
"""

from __future__ import annotations

import numbers
import time
from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from tabmia._estimators import clone_unfitted
from tabmia._seeding import seed_estimator
from tabmia.claims import check_claimed_epsilon
from tabmia.dp.canaries import CANARY_KINDS, make_canaries
from tabmia.dp.guesses import GUESS_STRATEGIES, audit_canary_scores
from tabmia.dp.result import OneRunAuditResult
from tabmia.scores import SCORE_NAMES, membership_score
from tabmia.target import concat_rows, encode_labels, n_rows, take_rows

__all__ = ["OneRunAudit"]

#: Canaries drawn when ``n_canaries`` is None: this many, or half the records if fewer.
DEFAULT_CANARIES = 1000


def _count(value: float | int, total: int, name: str) -> int:
    """A fraction of ``total`` or a whole count, checked."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        count = int(value)
    elif isinstance(value, numbers.Real) and 0.0 < value < 1.0:
        count = int(round(value * total))
    else:
        raise ValueError(f"{name} must be a fraction in (0, 1) or a whole count, got {value!r}")
    if count < 0:
        raise ValueError(f"{name} must be >= 0, got {count}")
    return count


class OneRunAudit:
    """Lower-bound the epsilon of a training recipe from one training run.

    Parameters
    ----------
    recipe : estimator
        The unfitted training recipe under audit (a scikit-learn classifier or
        Pipeline with ``predict_proba``; a DP one such as diffprivlib's), cloned and
        trained once.
    n_canaries : int or float, default=None
        Canaries (a count, or a fraction of the records); None: 1000, or half the
        records if that is fewer.
    canaries : {"outliers", "flipped", "records"}, default="outliers"
        What the canaries are (see :mod:`tabmia.dp.canaries`); outliers need a
        numeric feature.
    score : str or attack, default="loss"
        The membership score of a canary: a statistic of the model's output, one of
        :data:`tabmia.scores.SCORE_NAMES` (``"loss"``: minus the cross-entropy), or
        an unfitted tabmia attack (e.g. ``LiRAAttack(None, ...)``): its ``target``
        is set to the trained model, it is fitted on ``public_size`` records kept out
        of training, and its ``decision_function`` scores the canaries.
    guesses : {"bonferroni", "holdout"} or (int, int), default="bonferroni"
        How many canaries to guess in / out (see :mod:`tabmia.dp.guesses`).
    delta : float, default=1e-5
        The delta of the (epsilon, delta) claims tested.
    confidence : float, default=0.95
        Confidence of the bounds.
    claimed_epsilon : float, default=None
        The epsilon the recipe claims; the result says whether it is refuted.
    public_size : int or float, default=0
        Records kept out of training and out of the canaries for an attack's
        ``fit`` (a count or a fraction of the records); needed when ``score`` is an
        attack.
    holdout_share : float, default=0.5
        Share of the canaries that choose the guessing rule with ``"holdout"``.
    random_state : int, RandomState instance or None, default=None
        Seeds the canaries, their inclusion, the recipe's own ``random_state``
        parameters, the attack and the tie-break.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> audit = OneRunAudit(KNeighborsClassifier(1), n_canaries=200, canaries="flipped",
    ...                     claimed_epsilon=1.0, random_state=0)
    >>> result = audit.run(X, y)
    >>> result.violated      # 1-NN memorises every flipped canary it trains on
    True
    """

    def __init__(
        self,
        recipe: Any,
        *,
        n_canaries: int | float | None = None,
        canaries: str = "outliers",
        score: Any = "loss",
        guesses: str | tuple[int, int] = "bonferroni",
        delta: float = 1e-5,
        confidence: float = 0.95,
        claimed_epsilon: float | None = None,
        public_size: int | float = 0,
        holdout_share: float = 0.5,
        random_state: Any = None,
    ) -> None:
        self.recipe = recipe
        self.n_canaries = n_canaries
        self.canaries = canaries
        self.score = score
        self.guesses = guesses
        self.delta = delta
        self.confidence = confidence
        self.claimed_epsilon = claimed_epsilon
        self.public_size = public_size
        self.holdout_share = holdout_share
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def split_sizes(self, n_records: int) -> tuple[int, int]:
        """``(canaries, public records)`` a run on ``n_records`` records uses.

        Checks every setting first: raises ``ValueError`` naming a bad one, before
        anything is trained.
        """
        n = int(n_records)
        if not hasattr(self.recipe, "fit"):
            raise ValueError(f"recipe must be an unfitted estimator with fit, got {self.recipe!r}")
        if self.canaries not in CANARY_KINDS:
            raise ValueError(f"canaries must be one of {CANARY_KINDS}, got {self.canaries!r}")
        is_attack = not isinstance(self.score, str)
        if is_attack and not (
            hasattr(self.score, "fit") and hasattr(self.score, "decision_function")
        ):
            raise ValueError(
                f"score must be one of {SCORE_NAMES} or an unfitted attack, got {self.score!r}"
            )
        if not is_attack and self.score not in SCORE_NAMES:
            raise ValueError(f"score must be one of {SCORE_NAMES} or an attack, got {self.score!r}")
        if self.claimed_epsilon is not None:
            check_claimed_epsilon(self.claimed_epsilon, "claimed_epsilon")
        if isinstance(self.guesses, str) and self.guesses not in GUESS_STRATEGIES:
            raise ValueError(
                f"guesses must be one of {GUESS_STRATEGIES} or (k_plus, k_minus), got {self.guesses!r}"
            )
        m = (
            min(DEFAULT_CANARIES, n // 2)
            if self.n_canaries is None
            else _count(self.n_canaries, n, "n_canaries")
        )
        n_public = _count(self.public_size, n, "public_size")
        if is_attack and n_public == 0:
            raise ValueError("an attack as score needs public_size > 0 records to fit on")
        if m < 2:
            raise ValueError(f"n_canaries must be at least 2, got {m}")
        if m + n_public >= n:
            raise ValueError(
                f"{m} canaries and {n_public} public records leave no training records "
                f"of the {n} given"
            )
        return m, n_public

    # --------------------------------------------------------------------- run
    def run(self, X: Any, y: Any) -> OneRunAuditResult:
        """Train the recipe once with random canaries and bound its epsilon.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n, d)
            The data set; every record that is not a canary (nor a public record
            for an attack) trains the model.
        y : array-like of shape (n,)
            Labels.

        Returns
        -------
        OneRunAuditResult
        """
        y = np.asarray(y)
        n = n_rows(X)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-D with one label per record ({n}), got shape {y.shape}")
        m, n_public = self.split_sizes(n)
        rng = check_random_state(self.random_state)
        perm = rng.permutation(n)
        canary_rows, public_rows = perm[:m], perm[m : m + n_public]
        base_rows = perm[m + n_public :]
        X_can, y_can = make_canaries(X, y, canary_rows, self.canaries, random_state=rng)
        # the one coin per canary that the bound rests on
        included = rng.uniform(size=m) < 0.5
        train_X = concat_rows([take_rows(X, base_rows), take_rows(X_can, np.flatnonzero(included))])
        train_y = np.concatenate([y[base_rows], y_can[included]])
        shuffle = rng.permutation(train_y.size)  # canaries not all at the end
        model = clone_unfitted(self.recipe)
        seed_estimator(model, int(rng.randint(2**31 - 1)))
        start = time.perf_counter()
        model.fit(take_rows(train_X, shuffle), train_y[shuffle])
        fit_seconds = time.perf_counter() - start
        scores = self._scores(model, X_can, y_can, take_rows(X, public_rows), y[public_rows], rng)
        context = {
            "recipe": " ".join(repr(self.recipe).split()),
            "canaries": self.canaries,
            "score": self.score if isinstance(self.score, str) else type(self.score).__name__,
            "records": n,
            "training records besides canaries": int(base_rows.size),
            "public records": int(n_public),
            "fit seconds": round(fit_seconds, 3),
            "train accuracy": float(
                np.mean(model.predict(take_rows(X, base_rows)) == y[base_rows])
            ),
        }
        return audit_canary_scores(
            scores,
            included,
            guesses=self.guesses,
            delta=self.delta,
            confidence=self.confidence,
            claimed_epsilon=self.claimed_epsilon,
            holdout_share=self.holdout_share,
            random_state=rng,
            context=context,
        )

    def _scores(
        self,
        model: Any,
        X_can: Any,
        y_can: np.ndarray,
        X_pub: Any,
        y_pub: np.ndarray,
        rng: np.random.RandomState,
    ) -> np.ndarray:
        """Membership score of each canary from the trained model alone."""
        if isinstance(self.score, str):
            if not hasattr(model, "predict_proba"):
                raise ValueError(f"the trained recipe {type(model).__name__} has no predict_proba")
            proba = np.asarray(model.predict_proba(X_can), dtype=np.float64)
            classes = np.asarray(model.classes_)
            # a label the model never saw (a rare class, a flipped label) has probability 0
            known = np.isin(y_can, classes)
            index = np.zeros(y_can.size, dtype=np.intp)
            index[known] = encode_labels(y_can[known], classes, name="canary labels")
            scores = membership_score(self.score, proba, index)
            scores[~known] = -np.inf
            return np.nan_to_num(scores, nan=-np.inf)
        attack = clone_unfitted(self.score)
        attack.set_params(target=model, random_state=int(rng.randint(2**31 - 1)))
        attack.fit(X_pub, y_pub)
        return np.asarray(attack.decision_function(X_can, y_can), dtype=np.float64)
