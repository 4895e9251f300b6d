"""Warnings and errors specific to tabmia."""

from __future__ import annotations

__all__ = ["DuplicateRecordsWarning"]


class DuplicateRecordsWarning(UserWarning):
    """Records given as non-members repeat records the attack or audit already holds.

    Raised when training records reappear in the population data of an audit, or when
    candidates scored by an attack repeat the public records it was fitted on. Such a
    record is a member and a non-member at once, so the reported success is wrong.
    """
