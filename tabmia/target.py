"""One adapter that turns any fitted classifier into ``predict_proba``.

Every attack talks to the model under audit through :class:`TargetModel`. It gives
``predict_proba(X) -> (n, C)`` with a fixed class order (``classes_``), logits where the
model exposes them (``outputs``), named per-record statistics computed from the logits
when there are some and else from the probabilities (``statistic``), query counting,
batching of large inputs, and clear errors for inputs the model cannot take.

Supported models
----------------
- scikit-learn classifiers and ``Pipeline`` objects (including a ``ColumnTransformer``
  over a pandas DataFrame with categorical columns);
- XGBoost / CatBoost / LightGBM models through their scikit-learn API;
- a torch ``nn.Module`` returning logits (``classes`` must be given);
- a model whose class declares more outputs in ``__tabmia_outputs__`` (tabmia's
  :class:`~tabmia.shadow.TorchMLPClassifier`: its logits and gradient norms);
- a plain callable ``f(X) -> proba`` (``classes`` must be given, or ``range(C)`` is used);
- precomputed probabilities for records scored elsewhere (:class:`PrecomputedProbabilities`).

Label-only targets
------------------
A model that answers only with its decision (approve / decline, a diagnosis code) is a
target too: a fitted classifier with ``predict`` but no ``predict_proba``, precomputed
predicted labels (:class:`PrecomputedLabels`), or any of the above wrapped with
``labels_only=True`` (a callable then returns labels; one-hot 0/1 "probabilities" are
read as the labels they encode). Such a target has ``outputs == "labels"``: it answers
:meth:`TargetModel.predict` and :meth:`TargetModel.predict_indices`, and refuses
``predict_proba`` with :class:`~tabmia.exceptions.LabelOnlyTargetError`. Every target
answers ``predict`` (the arg-max class of a probability model).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd

from tabmia._array import log_softmax, ravel_column, softmax
from tabmia._device import resolve_device
from tabmia._rows import _n_columns, concat_rows, n_rows, plain, take_rows  # their old home
from tabmia._torch import module_logits
from tabmia.exceptions import LabelOnlyTargetError
from tabmia.precomputed import PrecomputedLabels, PrecomputedProbabilities
from tabmia.scores import LOGIT_SCORE_NAMES, SCORE_NAMES, membership_score

__all__ = [
    "TargetModel",
    "ModelOutputs",
    "PrecomputedProbabilities",
    "PrecomputedLabels",
    "as_target",
    "declared_outputs",
    "encode_labels",
    "n_rows",
    "take_rows",
    "concat_rows",
    "plain",
]

#: Tolerance on ``sum(proba, axis=1) == 1``.
PROBA_SUM_ATOL = 1e-3
#: Kinds of model that answer with labels only.
_LABEL_KINDS = ("predict", "precomputed_labels")


def encode_labels(
    y: Any, classes: np.ndarray, *, name: str = "y", sorter: np.ndarray | None = None
) -> np.ndarray:
    """Map labels ``y`` to their indices in ``classes`` (a model's ``classes_``).

    Parameters
    ----------
    y : array-like of shape (n,) or (n, 1)
        Labels.
    classes : ndarray
        The label of each output column.
    name : str, default="y"
        Named in the errors.
    sorter : ndarray, default=None
        ``np.argsort(classes, kind="stable")`` when the caller keeps it.

    Returns
    -------
    ndarray of int
        Column indices.

    Raises
    ------
    ValueError
        If ``y`` holds labels not in ``classes``, or is not 1-D, or has NaN.

    Examples
    --------
    >>> encode_labels(["b", "a", "b"], np.array(["a", "b"])).tolist()
    [1, 0, 1]
    """
    if sorter is None:
        sorter = np.argsort(classes, kind="stable")
    y_arr = ravel_column(y)
    if y_arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {np.shape(y)}")
    if y_arr.dtype.kind in "fO" and pd.isna(y_arr).any():
        raise ValueError(f"{name} has {int(pd.isna(y_arr).sum())} missing (NaN) labels")
    try:
        sorted_classes = classes[sorter]
        pos = np.searchsorted(sorted_classes, y_arr)
        pos_clipped = np.clip(pos, 0, classes.size - 1)
        found = sorted_classes[pos_clipped] == y_arr
    except TypeError:  # mixed types, e.g. str labels vs int classes
        found = np.zeros(y_arr.shape, dtype=bool)
        pos_clipped = np.zeros(y_arr.shape, dtype=np.intp)
    if not np.all(found):
        unseen = pd.unique(pd.Series(y_arr[~np.asarray(found)]))[:10]
        raise ValueError(
            f"{name} contains labels the target never saw: {plain(unseen)}; "
            f"the target's classes are {plain(classes[:20])}"
            + (" ..." if classes.size > 20 else "")
        )
    return sorter[pos_clipped].astype(np.intp)


class ModelOutputs:
    """A model's outputs on some records: its logits where it gives them, else its
    probabilities.

    The probabilities of a model that gives logits are their softmax, computed when a
    score needs them.

    Parameters
    ----------
    proba : ndarray of shape (n, n_classes), default=None
        Probabilities, when the model gives no logits.
    logits : ndarray of shape (n, n_classes), default=None
        Logits.
    """

    def __init__(
        self, *, proba: np.ndarray | None = None, logits: np.ndarray | None = None
    ) -> None:
        if (proba is None) == (logits is None):
            raise ValueError("give either proba or logits")
        self.logits = logits
        self._proba = proba

    @property
    def proba(self) -> np.ndarray:
        """The probabilities (the softmax of the logits, where there are logits)."""
        if self._proba is None:
            self._proba = softmax(self.logits)
        return self._proba

    def statistic(self, name: str, y: np.ndarray) -> np.ndarray:
        """Score ``name`` (:data:`tabmia.scores.SCORE_NAMES`) of each record, higher =
        more likely a member: from the logits for the scores that have a logit form
        (``"logit"``, ``"hinge"``) where there are logits, else from the probabilities
        (:func:`tabmia.scores.membership_score`)."""
        from_logits = self.logits is not None and name in LOGIT_SCORE_NAMES
        return membership_score(name, None if from_logits else self.proba, y, logits=self.logits)

    def log_proba(self, floor: float = 1e-300) -> np.ndarray:
        """Log-probabilities: the log-softmax of the logits, else ``log(max(p, floor))``."""
        if self.logits is not None:
            return log_softmax(self.logits)
        return np.log(np.clip(self.proba, floor, None))


class TargetModel:
    """Query interface to a fitted classifier under audit.

    Parameters
    ----------
    model : object
        A fitted classifier with ``predict_proba`` (scikit-learn API), a torch
        ``nn.Module`` returning logits, a callable ``f(X) -> proba``, a
        :class:`PrecomputedProbabilities`; or, answering with labels only, a fitted
        classifier with ``predict`` but no ``predict_proba`` or a
        :class:`PrecomputedLabels`.
    classes : array-like of shape (n_classes,), default=None
        Class labels in the column order of the model's output. Taken from the
        model's ``classes_`` when it has one. Required for torch modules and
        callables whose labels are not ``0..C-1``.
    labels_only : bool, default=False
        Treat the model as answering with its predicted label only, whatever else it
        can return: ``predict_proba`` is refused, a callable is taken to return labels,
        and one-hot probabilities are read as the labels they encode. Models with
        ``predict`` but no ``predict_proba`` and :class:`PrecomputedLabels` are
        label-only without it.
    batch_size : int, default=65536
        Largest number of records sent to the model in one call.
    device : str, default="auto"
        Device for torch modules ("auto", "cpu", "cuda"); ignored otherwise.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Labels in output column order.
    n_queries_ : int
        Number of records sent to the model so far.
    outputs : {"logits", "proba", "labels"}
        What the target answers with: ``"logits"`` (a torch module, or a model that
        declares them), from which statistics are computed; ``"proba"``; or
        ``"labels"``, its predicted label only (attacks that need more refuse it).
    """

    def __init__(
        self,
        model: Any,
        *,
        classes: Any = None,
        labels_only: bool = False,
        batch_size: int = 65536,
        device: str = "auto",
    ) -> None:
        if isinstance(model, TargetModel):
            raise TypeError("model is already a TargetModel; use it directly")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.batch_size = int(batch_size)
        self.device = device
        self.n_queries_ = 0
        self._kind = self._detect_kind(model)
        self.classes_ = self._resolve_classes(model, classes)
        self._class_sorter = np.argsort(self.classes_, kind="stable")
        self.labels_only = bool(labels_only)
        declared = () if self.labels_only else declared_outputs(model)
        if self._kind in _LABEL_KINDS or self.labels_only:
            self.outputs = "labels"
        else:
            self.outputs = "logits" if "logits" in declared else "proba"
        self._gradients = "gradient_norm" in declared
        self._torch_device = None

    # ------------------------------------------------------------------ setup
    @staticmethod
    def _detect_kind(model: Any) -> str:
        if isinstance(model, PrecomputedProbabilities):
            return "precomputed"
        if isinstance(model, PrecomputedLabels):
            return "precomputed_labels"
        if _is_torch_module(model):
            return "torch"
        if hasattr(model, "predict_proba"):
            return "sklearn"
        if hasattr(model, "predict"):
            return "predict"
        if callable(model):
            return "callable"
        raise TypeError(
            f"target of type {type(model).__name__} has no predict_proba and no predict; "
            "pass a fitted classifier (predict_proba, or predict for a label-only model), "
            "a torch nn.Module, a callable returning probabilities, or "
            "tabmia.target.PrecomputedProbabilities / PrecomputedLabels"
        )

    def _resolve_classes(self, model: Any, classes: Any) -> np.ndarray:
        if classes is not None:
            out = np.asarray(classes)
        elif hasattr(model, "classes_"):
            out = np.asarray(model.classes_)
        elif self._kind == "precomputed":
            out = np.arange(model.proba.shape[1])
        elif self._kind == "sklearn":
            raise ValueError(
                f"target {type(model).__name__} has predict_proba but no classes_: is it "
                "fitted? Fit it first, or pass classes= in the column order of its output"
            )
        elif self._kind == "predict":
            raise ValueError(
                f"target {type(model).__name__} has predict but no predict_proba and no "
                "classes_: not a fitted classifier? Fit it first; a label-only classifier "
                "without classes_ needs classes= (the labels it predicts)"
            )
        else:
            raise ValueError(
                f"classes is required for a target of type {type(model).__name__} "
                "(labels in the column order of its output)"
            )
        if out.ndim != 1 or out.size < 2:
            raise ValueError(f"classes must be 1-D with at least 2 labels, got {out!r}")
        if len(np.unique(out)) != out.size:
            raise ValueError(f"classes must be unique, got {out!r}")
        return out

    @property
    def n_classes(self) -> int:
        """Number of output columns."""
        return int(self.classes_.size)

    @property
    def has_logits(self) -> bool:
        """Whether :meth:`predict_logits` returns the model's own logits."""
        return self.outputs == "logits"

    @property
    def statistic_names(self) -> tuple[str, ...]:
        """The statistics :meth:`statistic` computes for this model."""
        return SCORE_NAMES + (("gradient_norm",) if self._gradients else ())

    # -------------------------------------------------------------- labels
    def encode_labels(self, y: Any, *, name: str = "y") -> np.ndarray:
        """Map labels to output column indices.

        Raises
        ------
        ValueError
            If ``y`` holds labels the target never saw, or is not 1-D, or has NaN.
        """
        return encode_labels(y, self.classes_, name=name, sorter=self._class_sorter)

    # ------------------------------------------------------------- queries
    def _check_columns(self, X: Any) -> None:
        expected = getattr(self.model, "n_features_in_", None)
        names = getattr(self.model, "feature_names_in_", None)
        if isinstance(X, pd.DataFrame) and names is not None:
            missing = [c for c in names if c not in X.columns]
            if missing:
                raise ValueError(f"X is missing columns the target was trained on: {missing[:10]}")
            return
        n_cols = _n_columns(X)
        # 0 means unknown: CatBoost restores n_features_in_ = 0 when unpickled (joblib
        # workers, the shadow cache); the model itself still checks the columns.
        if expected and n_cols is not None and n_cols != int(expected):
            raise ValueError(
                f"X has {n_cols} columns but the target was trained on {int(expected)}"
            )

    def query(self, X: Any) -> ModelOutputs:
        """The model's outputs on ``X`` in one query: its logits where it gives them
        (``outputs``), else its probabilities."""
        if self.has_logits:
            return ModelOutputs(logits=self.predict_logits(X))
        return ModelOutputs(proba=self.predict_proba(X))

    def statistic(self, name: str, X: Any, y: np.ndarray) -> np.ndarray:
        """Statistic ``name`` of the model on the records ``(X, y)``, higher = more
        member-like.

        Parameters
        ----------
        name : str
            One of :attr:`statistic_names`: a score of the output
            (:data:`tabmia.scores.SCORE_NAMES`), computed from the logits where the
            model gives them and else from its probabilities
            (:meth:`tabmia.scores.ModelOutputs.statistic`); or ``"gradient_norm"``, minus
            the norm of the loss gradient with respect to a torch model's parameters.
        X : array-like, sparse matrix or DataFrame of shape (n, d)
            Records.
        y : ndarray of int of shape (n,)
            Their labels as column indices (:meth:`encode_labels`).

        Returns
        -------
        ndarray of shape (n,)
        """
        if name not in self.statistic_names:
            raise ValueError(
                f"statistic {name!r} is not one of {self.statistic_names} (the gradient "
                "norm needs a torch model: an nn.Module or a TorchMLPClassifier)"
            )
        if name == "gradient_norm":
            return -self._gradient_norms(X, y)
        return self.query(X).statistic(name, y)

    def _gradient_norms(self, X: Any, y: np.ndarray) -> np.ndarray:
        if self._kind != "torch":  # a model that declares them computes them
            return self.model.gradient_norms(X, y)
        from tabmia._torch import as_float32, module_gradient_norms

        return module_gradient_norms(self.model, as_float32(X), y)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, shape ``(n, n_classes)``, float64, in ``classes_`` order.

        Raises
        ------
        ValueError
            If ``X`` has the wrong columns or the model returns something that is
            not a probability matrix.
        LabelOnlyTargetError
            If the target answers with labels only (``outputs == "labels"``).
        """
        self._refuse_scores("predict_proba")
        return self._proba(X)

    def _proba(self, X: Any) -> np.ndarray:
        n = n_rows(X)
        if n == 0:
            raise ValueError("X has no records")
        self._check_columns(X)
        if self._kind == "torch":
            return softmax(self._logits(X))
        blocks = []
        for start in range(0, n, self.batch_size):
            part = take_rows(X, slice(start, min(start + self.batch_size, n)))
            blocks.append(self._raw_proba(part))
        proba = np.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]
        self.n_queries_ += n
        return self._validate_proba(proba, n)

    def _raw_proba(self, X: Any) -> np.ndarray:
        if self._kind == "sklearn":
            return np.asarray(self.model.predict_proba(X))
        if self._kind == "precomputed":
            return self.model.lookup(X)
        return np.asarray(self.model(X))

    def _validate_proba(self, proba: np.ndarray, n: int) -> np.ndarray:
        proba = np.asarray(proba, dtype=np.float64)
        if proba.ndim == 1 and self.n_classes == 2:  # P(class 1) only
            proba = np.column_stack([1.0 - proba, proba])
        self._check_output(proba, n, "the target returned probabilities")
        if proba.min() < -1e-9 or proba.max() > 1 + 1e-9:
            raise ValueError(
                "the target returned values outside [0, 1]: these are not probabilities "
                "(logits? wrap a torch module, or apply softmax first)"
            )
        sums = proba.sum(axis=1)
        if np.abs(sums - 1.0).max() > PROBA_SUM_ATOL:
            raise ValueError(
                "the target returned rows that do not sum to 1 (max deviation "
                f"{np.abs(sums - 1.0).max():.3g}): these are not probabilities"
            )
        return np.clip(proba, 0.0, 1.0)

    def predict_logits(self, X: Any) -> np.ndarray:
        """Logits of a torch target, shape ``(n, n_classes)``, float64.

        For other targets, ``log(predict_proba(X))`` (logits up to a per-row constant,
        which is all LiRA's hinge and logit-scaled scores need).

        Raises
        ------
        LabelOnlyTargetError
            If the target answers with labels only (``outputs == "labels"``).
        """
        self._refuse_scores("predict_logits")
        return self._logits(X)

    def _logits(self, X: Any) -> np.ndarray:
        if self._kind != "torch":
            if self.has_logits:  # a model that declares logits: its decision_function
                self._check_columns(X)
                n = n_rows(X)
                logits = np.concatenate(
                    [
                        np.asarray(
                            self.model.decision_function(
                                take_rows(X, slice(s, min(s + self.batch_size, n)))
                            ),
                            dtype=np.float64,
                        )
                        for s in range(0, n, self.batch_size)
                    ]
                )
                self.n_queries_ += n
                return logits
            return np.log(np.clip(self._proba(X), 1e-300, None))
        device = self._resolve_torch_device(self.model)
        n = n_rows(X)
        logits = module_logits(self.model, X, device, self.batch_size)
        self.n_queries_ += n
        self._check_output(logits, n, "the torch target returned logits")
        return logits

    def predict_indices(self, X: Any) -> np.ndarray:
        """The target's predicted label of each record, as an index into ``classes_``.

        Every target answers it: a label-only one with its own labels, the others with
        the arg-max of their probabilities (or logits). Counts ``n_queries_``.

        Returns
        -------
        ndarray of int of shape (n,)

        Raises
        ------
        ValueError
            If ``X`` has the wrong columns, or the model predicts a label that is not
            among ``classes_``.
        """
        if self._kind in ("torch", "precomputed") or (
            self.outputs != "labels" and self._kind != "predict"
        ):
            # probabilities or logits (one-hot ones, for a label-only declaration)
            scores = self._logits(X) if self._kind == "torch" else self._proba(X)
            return np.argmax(scores, axis=1).astype(np.intp)
        n = n_rows(X)
        if n == 0:
            raise ValueError("X has no records")
        self._check_columns(X)
        blocks = [
            self._raw_label_indices(take_rows(X, slice(s, min(s + self.batch_size, n))))
            for s in range(0, n, self.batch_size)
        ]
        self.n_queries_ += n
        return np.concatenate(blocks) if len(blocks) > 1 else blocks[0]

    def predict(self, X: Any) -> np.ndarray:
        """The target's predicted label of each record (values of ``classes_``)."""
        return self.classes_[self.predict_indices(X)]

    def _raw_label_indices(self, X: Any) -> np.ndarray:
        """Label indices of a label-only target's answers on one batch: precomputed
        labels, the model's ``predict`` (the decision it exposes), or a callable's labels."""
        if self._kind == "precomputed_labels":
            labels = self.model.lookup(X)
        elif hasattr(self.model, "predict"):
            labels = self.model.predict(X)
        else:
            labels = self.model(X)
        labels = ravel_column(np.asarray(labels))
        m = n_rows(X)
        if labels.shape != (m,):
            raise ValueError(
                f"the target returned labels of shape {np.shape(labels)}, expected ({m},)"
            )
        return self.encode_labels(labels, name="the target's predicted labels")

    def _refuse_scores(self, method: str) -> None:
        if self.outputs == "labels":
            raise LabelOnlyTargetError(
                f"{method}: the target answers with labels only ({self.labels_reason}); "
                "use predict / predict_indices, or an attack that works from labels"
            )

    @property
    def labels_reason(self) -> str:
        """Why the target is label-only, in words (empty when it is not)."""
        if self.outputs != "labels":
            return ""
        if self._kind == "precomputed_labels":
            return "precomputed predicted labels"
        if self._kind == "predict":
            return f"{type(self.model).__name__} has predict but no predict_proba"
        return "declared with labels_only=True"

    def _check_output(self, values: np.ndarray, n: int, what: str) -> None:
        """One row per record, one column per class, every value finite."""
        if values.shape != (n, self.n_classes):
            raise ValueError(f"{what} of shape {values.shape}, expected ({n}, {self.n_classes})")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{what} that are NaN or infinite")

    def _resolve_torch_device(self, module: Any) -> Any:
        if self._torch_device is None:
            try:
                param = next(module.parameters())
                current = param.device
            except StopIteration:  # no parameters
                current = None
            if self.device == "auto" and current is not None:
                self._torch_device = current
            else:
                self._torch_device = resolve_device(self.device)
                module.to(self._torch_device)
        return self._torch_device

    def __repr__(self) -> str:
        """The wrapped model's class and the number of classes."""
        return (
            f"TargetModel({type(self.model).__name__}, n_classes={self.n_classes}, "
            f"n_queries={self.n_queries_})"
        )


def declared_outputs(model: Any) -> tuple[str, ...]:
    """What ``model`` gives beyond ``predict_proba``: ``"logits"`` and
    ``"gradient_norm"`` for a torch module, else what its class declares in
    ``__tabmia_outputs__`` (a capability attribute: ``"logits"`` from
    ``decision_function``, ``"gradient_norm"`` from ``gradient_norms(X, y_idx)``)."""
    if _is_torch_module(model):
        return ("logits", "gradient_norm")
    return tuple(getattr(type(model), "__tabmia_outputs__", ()))


def _is_torch_module(model: Any) -> bool:
    # a torch module exists only once torch is imported: no import needed to ask
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def as_target(model: Any, **kwargs: Any) -> TargetModel:
    """Wrap ``model`` in a :class:`TargetModel` (returned as is if it already is one)."""
    if isinstance(model, TargetModel):
        return model
    if model is None:
        raise ValueError("target is None: pass the fitted model under audit as target=")
    return TargetModel(model, **kwargs)
