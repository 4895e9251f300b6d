"""Renamed parameters of public functions, kept working one release (as scikit-learn
deprecates a renamed parameter): the old keyword's default is :data:`DEPRECATED`, and
:func:`renamed_parameter` returns the value to use, with a ``FutureWarning`` where the
caller gave the old name."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["DEPRECATED", "renamed_parameter"]

#: The default of a renamed parameter's old keyword: "not given".
DEPRECATED = "deprecated"


def renamed_parameter(
    old_value: Any, new_value: Any, *, old: str, new: str, new_default: Any, owner: str
) -> Any:
    """The value of parameter ``new`` of ``owner`` (formerly ``old``).

    ``old_value`` where the caller gave only the old keyword (with a ``FutureWarning``
    naming the new one), else ``new_value``; both given is a ``TypeError`` that picks
    neither. The old keyword is removed in the release after 0.2.
    """
    if isinstance(old_value, str) and old_value == DEPRECATED:
        return new_value
    if new_value is not new_default and new_value != new_default:
        raise TypeError(
            f"{owner}: got {new}={new_value!r} and the deprecated {old}; give {new} only"
        )
    warnings.warn(
        f"{owner}: the parameter '{old}' was renamed '{new}' in tabmia 0.2 and will be "
        f"removed in 0.3; pass {new}={old_value!r}",
        FutureWarning,
        stacklevel=3,
    )
    return old_value
