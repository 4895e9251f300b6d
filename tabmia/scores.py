"""Per-record scores of a model's output on a labelled record.

Pure functions of ``(proba, y)`` or ``(logits, y)``, vectorised over records. ``y``
holds column indices into ``proba`` (use :meth:`tabmia.target.TargetModel.encode_labels`
to turn labels into indices). :class:`tabmia.target.ModelOutputs` computes them from one
query of a model, from its logits where it gives them.

Each score has a natural direction; :func:`membership_score` returns it signed so that
higher always means "more likely a member" (e.g. minus the loss).

References
----------
.. [1] Yeom, Giacomelli, Fredrikson, Jha. Privacy Risk in Machine Learning: Analyzing
   the Connection to Overfitting. CSF 2018. (loss)
.. [2] Song, Mittal. Systematic Evaluation of Privacy Risks of Machine Learning Models.
   USENIX Security 2021. (modified entropy)
.. [3] Carlini, Chien, Nasr, Song, Terzis, Tramer. Membership Inference Attacks From
   First Principles. IEEE S&P 2022. (stable logit-scaled confidence, hinge)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = [
    "loss",
    "confidence",
    "entropy",
    "modified_entropy",
    "logit_confidence",
    "logit_confidence_from_logits",
    "hinge",
    "hinge_from_logits",
    "membership_score",
    "SCORE_NAMES",
    "LOGIT_SCORE_NAMES",
]

#: Smallest probability used inside logarithms (float64 keeps ~1e-308).
_TINY = 1e-300


def _check(proba: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    proba = np.asarray(proba, dtype=np.float64)
    y = np.asarray(y)
    if proba.ndim != 2:
        raise ValueError(f"proba must be 2-D (n, n_classes), got shape {proba.shape}")
    if y.ndim != 1 or y.shape[0] != proba.shape[0]:
        raise ValueError(
            f"y must be 1-D with one label index per row of proba ({proba.shape[0]}), "
            f"got shape {y.shape}"
        )
    if y.dtype.kind not in "iu":
        raise ValueError("y must hold integer class indices (use TargetModel.encode_labels)")
    if y.size and (y.min() < 0 or y.max() >= proba.shape[1]):
        raise ValueError(f"y holds class indices outside [0, {proba.shape[1] - 1}]")
    return proba, y


def _true_class(values: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.take_along_axis(values, y[:, None], axis=1)[:, 0]


def loss(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Cross-entropy loss ``-log p_y`` (lower = more likely a member)."""
    proba, y = _check(proba, y)
    return -np.log(np.clip(_true_class(proba, y), _TINY, None))


def confidence(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Probability of the true class ``p_y`` (higher = more likely a member)."""
    proba, y = _check(proba, y)
    return _true_class(proba, y)


def entropy(proba: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """Shannon entropy of the prediction (lower = more likely a member); ``y`` unused."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2:
        raise ValueError(f"proba must be 2-D (n, n_classes), got shape {proba.shape}")
    logp = np.log(np.clip(proba, _TINY, None))
    return -(proba * logp).sum(axis=1)


def modified_entropy(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Song & Mittal's modified entropy (lower = more likely a member).

    ``Mentr = -(1 - p_y) log p_y - sum_{j != y} p_j log(1 - p_j)``.
    """
    proba, y = _check(proba, y)
    p = np.clip(proba, _TINY, 1.0 - 1e-16)
    log_p = np.log(p)
    log_1mp = np.log1p(-p)
    terms = -p * log_1mp  # terms for j != y
    p_y = _true_class(p, y)
    rows = np.arange(p.shape[0])
    terms[rows, y] = -(1.0 - p_y) * log_p[rows, y]
    return terms.sum(axis=1)


def logit_confidence_from_logits(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Numerically stable logit-scaled confidence from logits (LiRA, Sec. VI-A).

    ``phi = log p_y - log(sum_{y' != y} p_y') = z_y - logsumexp_{y' != y} z_y'``,
    computed without forming ``1 - p_y`` so it does not saturate for confident
    predictions.
    """
    logits, y = _check(logits, y)
    z_y = _true_class(logits, y)
    others = logits.copy()
    others[np.arange(others.shape[0]), y] = -np.inf
    m = others.max(axis=1)
    lse = m + np.log(np.exp(others - m[:, None]).sum(axis=1))
    return z_y - lse


def logit_confidence(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Logit-scaled confidence ``log p_y - log(sum_{y' != y} p_y')`` from probabilities.

    The other classes' mass is the sum of their columns (the true column masked out),
    never ``1 - p_y`` or ``sum(p) - p_y``, so confident predictions keep their
    resolution as long as the model's own probabilities do. Prefer :func:`logit_confidence_from_logits` when
    logits are available.
    """
    proba, y = _check(proba, y)
    p_y = _true_class(proba, y)
    # sum the other columns directly: ``proba.sum(axis=1) - p_y`` cancels like
    # ``1 - p_y`` and loses every digit of a confident prediction's small mass
    others = proba.copy()
    others[np.arange(others.shape[0]), y] = 0.0
    rest = others.sum(axis=1)
    return np.log(np.clip(p_y, _TINY, None)) - np.log(np.clip(rest, _TINY, None))


def hinge_from_logits(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Hinge score ``z_y - max_{y' != y} z_y'`` (LiRA, Sec. VI-A)."""
    logits, y = _check(logits, y)
    z_y = _true_class(logits, y)
    others = logits.copy()
    others[np.arange(others.shape[0]), y] = -np.inf
    return z_y - others.max(axis=1)


def hinge(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Hinge score from probabilities: ``log p_y - max_{y' != y} log p_y'``.

    Equal to the hinge on logits, since softmax is shift invariant.
    """
    proba, y = _check(proba, y)
    return hinge_from_logits(np.log(np.clip(proba, _TINY, None)), y)


# name -> (function of (proba, y), sign making higher = member)
_REGISTRY: dict[str, tuple[Callable[..., np.ndarray], float]] = {
    "loss": (loss, -1.0),
    "confidence": (confidence, 1.0),
    "entropy": (entropy, -1.0),
    "modified_entropy": (modified_entropy, -1.0),
    "logit": (logit_confidence, 1.0),
    "hinge": (hinge, 1.0),
}
_FROM_LOGITS: dict[str, Callable[..., np.ndarray]] = {
    "logit": logit_confidence_from_logits,
    "hinge": hinge_from_logits,
}

#: Names accepted by :func:`membership_score`.
SCORE_NAMES: tuple[str, ...] = tuple(_REGISTRY)
#: The scores :func:`membership_score` computes from logits, when it is given them.
LOGIT_SCORE_NAMES: tuple[str, ...] = tuple(_FROM_LOGITS)


def membership_score(
    name: str, proba: np.ndarray | None, y: np.ndarray, *, logits: np.ndarray | None = None
) -> np.ndarray:
    """Score ``name`` signed so that higher means more likely a member.

    Parameters
    ----------
    name : {"loss", "confidence", "entropy", "modified_entropy", "logit", "hinge"}
        Which score.
    proba : ndarray of shape (n, n_classes)
        Predicted probabilities.
    y : ndarray of shape (n,)
        True class indices.
    logits : ndarray of shape (n, n_classes), default=None
        Logits, used instead of ``proba`` for "logit" and "hinge" when given.

    Returns
    -------
    ndarray of shape (n,)
        Float64 scores, higher = more likely a member.
    """
    if name not in _REGISTRY:
        raise ValueError(f"score must be one of {SCORE_NAMES}, got {name!r}")
    func, sign = _REGISTRY[name]
    if logits is not None and name in _FROM_LOGITS:
        return sign * _FROM_LOGITS[name](logits, y)
    return sign * func(proba, y)
