"""Arguments of public functions checked against declared constraints.

Estimators declare ``_parameter_constraints`` and scikit-learn checks them in ``fit``;
:func:`validate_params` gives a public *function* the same: its constraints are a
dict beside its signature, in scikit-learn's vocabulary (``Interval(Real, 0, 1,
closed="neither")``, ``StrOptions({...})``, ``"array-like"``, ``None``, a type...), and
every call is checked against them before the body runs. A bad value gets
scikit-learn's :class:`~sklearn.utils._param_validation.InvalidParameterError` (a
``ValueError`` and a ``TypeError``), which names the function, the argument, what it
must be and the value given::

    The 'fpr' parameter of threshold_at_fpr must be a float in the range (0.0, 1.0).
    Got 1.5 instead.

so that each range is written once, as data, instead of a hand-written ``raise`` in
each function.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, TypeVar

from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    make_constraint,
    validate_parameter_constraints,
)

__all__ = [
    "COUNT",
    "InvalidParameterError",
    "NON_NEGATIVE",
    "POSITIVE",
    "RATE",
    "UNIT_LEFT_CLOSED",
    "validate_params",
]

_F = TypeVar("_F", bound=Callable[..., Any])

#: The ranges many arguments share, each declared once.
#: A rate strictly between 0 and 1: an FPR, a confidence or test level.
RATE = [Interval(Real, 0, 1, closed="neither")]
#: A share in [0, 1): DP's delta, a held-out share.
UNIT_LEFT_CLOSED = [Interval(Real, 0, 1, closed="left")]
#: A number > 0: a prior (non-members per member), a threshold on a ratio.
POSITIVE = [Interval(Real, 0, None, closed="neither")]
#: A number >= 0: a privacy budget (epsilon, mu).
NON_NEGATIVE = [Interval(Real, 0, None, closed="left")]
#: A count of at least one (records, resamples).
COUNT = [Interval(Integral, 1, None, closed="left")]


def validate_params(constraints: dict[str, list[Any]]) -> Callable[[_F], _F]:
    """Decorator that checks a function's arguments against ``constraints``.

    Parameters
    ----------
    constraints : dict
        ``argument name -> list of constraints``, any of which the value must meet
        (scikit-learn's ``_parameter_constraints`` format). Arguments not named are not
        checked, and defaults are trusted: only the arguments a caller passes are.

    Returns
    -------
    callable
        The decorator. The decorated function keeps its name, signature and docstring.

    Raises
    ------
    TypeError
        At decoration, when ``constraints`` names an argument the function does not
        have (a misspelt name would otherwise check nothing).
    """

    def decorate(func: _F) -> _F:
        signature = inspect.signature(func)
        unknown = sorted(set(constraints) - set(signature.parameters))
        if unknown:
            raise TypeError(
                f"validate_params on {func.__qualname__}: it has no argument {unknown[0]!r}"
            )
        for options in constraints.values():  # a constraint that cannot be built fails now
            [make_constraint(option) for option in options]

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            arguments = signature.bind(*args, **kwargs).arguments
            validate_parameter_constraints(constraints, arguments, caller_name=func.__qualname__)
            return func(*args, **kwargs)

        checked.__signature__ = signature  # type: ignore[attr-defined]
        return checked  # type: ignore[return-value]

    return decorate
