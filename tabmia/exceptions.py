"""Warnings and errors specific to tabmia, every one defined here.

``UnresolvableFPRError`` and ``AuditTooSmallError`` are also importable from
:mod:`tabmia.metrics`, where they were first defined.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "UnresolvableFPRError",
    "AuditTooSmallError",
    "TargetOutputsError",
    "LabelOnlyTargetError",
    "DuplicateRecordsWarning",
    "RunNote",
    "FPRFallbackWarning",
    "ShadowSizeWarning",
    "MemoryBudgetWarning",
    "FlagsNobodyWarning",
    "PlausibilityWarning",
    "DegenerateRatioWarning",
    "DegenerateRegressorError",
    "DataNotFoundError",
]


class UnresolvableFPRError(ValueError):
    """An FPR below ``1 / n_nonmembers``: no threshold can show it.

    Raised by an attack's ``fit`` with ``reason`` set (what cannot be promised from
    which records, without advice) and ``attack`` (the name it runs under, set by
    :func:`tabmia.experiment.run_attacks`), so that a runner can phrase its own advice.
    """

    reason: str | None = None
    attack: str | None = None


class AuditTooSmallError(ValueError):
    """Too few members or non-members for any rate of the audit to mean anything."""


class TargetOutputsError(ValueError):
    """An attack needs more of the target than it gives (logits of a model that gives
    probabilities, probabilities of one that gives labels).

    Raised by :func:`tabmia.experiment.run_attacks` before any attack is fitted, from
    the attacks' ``target_outputs`` tags; the message names the attacks that can run.
    """


class LabelOnlyTargetError(TargetOutputsError):
    """The target answers with its predicted label only, and something asked for more.

    Raised by :meth:`tabmia.target.TargetModel.predict_proba` (and ``predict_logits``)
    on a label-only target, and by the ``fit`` of an attack that needs probabilities;
    the message names the attacks that work from labels. A :class:`TargetOutputsError`.
    """


class DuplicateRecordsWarning(UserWarning):
    """Records given as non-members repeat records the attack or audit already holds.

    Raised when training records reappear in the population data of an audit, or when
    candidates scored by an attack repeat the public records it was fitted on. Such a
    record is a member and a non-member at once, so the reported success is wrong.
    """


class RunNote(UserWarning):
    """Something an attack did differently from what it was asked, that the results
    still mean but the reader must know (the CLI prints these as ``tabmia: note:``)."""


class FPRFallbackWarning(RunNote):
    """An attack aims at a larger FPR than asked: its calibration records cannot promise it.

    Issued by an attack's ``fit`` with ``unresolved_fpr="smallest"`` (which
    :func:`tabmia.experiment.run_attacks` sets with ``fpr_fallback=True``, as the CLI's
    audits and benchmarks do for the default FPR) when fewer than ``1 / fpr - 1``
    non-member scores calibrate the threshold; the attack then aims at the smallest
    FPR they can promise (its ``fpr_``).
    """


class ShadowSizeWarning(RunNote):
    """Shadow / reference models train on fewer records than the target did.

    Issued by :func:`tabmia.experiment.run_attacks` when an attack's public records
    cannot give its models ``shadow_train_size`` records each (the attack's
    ``shadow_size_note_`` says why). Models trained on less data generalise better
    than the target, which makes the attack weaker: the results understate the leak.
    """


class MemoryBudgetWarning(RunNote):
    """Scoring held more memory at once than ``max_memory`` gives it.

    Issued while an attack scores records (:mod:`tabmia.shadow._scoring`, the reference
    attacks' and the quantile attack's chunks) when one chunk of records, which is never
    smaller than one batch of the models' own (up to 65,536 records), needs more than
    the budget: the message says how much it holds. A budget below 1 MiB is refused
    before any training (:func:`tabmia._memory.parse_memory`); what one batch needs
    depends on the models, the records' columns and the jobs, known only when they
    are scored. The scores do not depend on it.
    """


class FlagsNobodyWarning(UserWarning):
    """An attack's threshold flags no record whatever the candidates.

    Issued by an attack's ``fit`` when ``threshold_`` lies above the highest score the
    attack can give (a bounded score: the gap attack's 0 / 1, the share of noisy copies
    of noise robustness and Merlin, boundary distance's cap), which happens where more
    of the public records share that highest score than the FPR allows (an overfit
    model labels almost every record right). The attack's ``flags_nobody_`` is then
    True; its TPR at that FPR is 0 whatever the model, and says nothing about it.
    ``tabmia audit`` reports the same in its verdict ("flags nobody").
    """


class PlausibilityWarning(UserWarning):
    """An audit's inputs or results look like no honest audit's (:mod:`tabmia.plausibility`).

    Issued by :func:`tabmia.audit.audit_model` when the model fits its training records
    worse than the population's, the two label distributions differ beyond chance, the
    model's outputs are one-hot (label-only), or an attack's AUC is below 0.5 beyond
    chance. Each names its test and p-value.
    """


class DegenerateRatioWarning(UserWarning):
    """Most noisy copies left the target's loss unchanged: the Merlin ratio says little.

    Issued by :class:`~tabmia.attacks.MerlinAttack` / :class:`~tabmia.attacks.MorganAttack`
    ``fit`` (also importable from :mod:`tabmia.attacks.merlin`).
    """


class DegenerateRegressorError(ValueError):
    """A CatBoost regressor's training degenerated: its values are not all finite.

    Raised by :class:`~tabmia.attacks.QuantileAttack` ``fit`` when a regressor trained
    with the given settings holds non-finite values (CatBoost stops such a training with
    "degenerate solution"; a small ``l2_leaf_reg`` with ``posterior_sampling`` does it on
    some records). A tuning trial that degenerates counts as failed; tuned settings that
    degenerate on a calibration fold give way to the next best trial with a
    :class:`RunNote`; fixed ``params`` raise this error, naming them.
    """


class DataNotFoundError(FileNotFoundError):
    """A data file needed by a loader is not on disk and could not be fetched.

    The message names every absolute path that was looked for and says how to
    place the file there (and, when the loader can download, why the download
    did not happen or failed).  It subclasses :class:`FileNotFoundError`, so
    ``except FileNotFoundError`` keeps working. Also importable from
    :mod:`tabmia.datasets`.

    Attributes
    ----------
    paths : list of pathlib.Path
        The candidate paths that were looked for, in search order.
    """

    def __init__(self, message: str, paths: Iterable[Any] = ()) -> None:
        super().__init__(message)
        self.paths = list(paths)

    def __str__(self) -> str:
        """The message alone (``FileNotFoundError`` would print ``[Errno None] ...``)."""
        return str(self.args[0]) if self.args else ""
