"""Warnings and errors specific to tabmia."""

from __future__ import annotations

__all__ = ["DuplicateRecordsWarning", "FPRFallbackWarning", "PlausibilityWarning"]


class DuplicateRecordsWarning(UserWarning):
    """Records given as non-members repeat records the attack or audit already holds.

    Raised when training records reappear in the population data of an audit, or when
    candidates scored by an attack repeat the public records it was fitted on. Such a
    record is a member and a non-member at once, so the reported success is wrong.
    """


class FPRFallbackWarning(UserWarning):
    """An attack aims at a larger FPR than asked: its calibration records cannot promise it.

    Issued by :func:`tabmia.experiment.run_attacks` with ``fpr_fallback=True`` (the CLI's
    audits and benchmarks) when fewer than ``1 / fpr - 1`` non-member scores calibrate
    an attack's threshold; the attack then aims at the smallest FPR they can promise.
    """


class PlausibilityWarning(UserWarning):
    """An audit's inputs or results look like no honest audit's (:mod:`tabmia.plausibility`).

    Issued by :func:`tabmia.audit.audit_model` when the model fits its training records
    worse than the population's, the two label distributions differ beyond chance, the
    model's outputs are one-hot (label-only), or an attack's AUC is below 0.5 beyond
    chance. Each names its test and p-value.
    """
