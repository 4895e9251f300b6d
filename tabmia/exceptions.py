"""Warnings and errors specific to tabmia."""

from __future__ import annotations

__all__ = [
    "DuplicateRecordsWarning", "RunNote", "FPRFallbackWarning", "ShadowSizeWarning",
    "PlausibilityWarning", "LabelOnlyTargetError",
]


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


class PlausibilityWarning(UserWarning):
    """An audit's inputs or results look like no honest audit's (:mod:`tabmia.plausibility`).

    Issued by :func:`tabmia.audit.audit_model` when the model fits its training records
    worse than the population's, the two label distributions differ beyond chance, the
    model's outputs are one-hot (label-only), or an attack's AUC is below 0.5 beyond
    chance. Each names its test and p-value.
    """


class LabelOnlyTargetError(ValueError):
    """The target answers with its predicted label only, and something asked for more.

    Raised by :meth:`tabmia.target.TargetModel.predict_proba` (and ``predict_logits``)
    on a label-only target, and by the ``fit`` of an attack that needs probabilities;
    the message names the attacks that work from labels.
    """
