"""``tabmia._validation.validate_params``: public functions checked by declared constraints."""

from __future__ import annotations

import inspect

import pytest

from tabmia import metrics as M
from tabmia import thresholds as T
from tabmia._validation import RATE, InvalidParameterError, validate_params


@validate_params({"fpr": RATE})
def _promise(scores: list, fpr: float = 0.01) -> float:
    """Return ``fpr``."""
    return fpr


def test_a_bad_value_is_refused_naming_function_argument_range_and_value():
    with pytest.raises(InvalidParameterError) as info:
        _promise([], fpr=1.5)
    message = str(info.value)
    assert "'fpr' parameter of _promise" in message
    assert "range (0.0, 1.0)" in message and "Got 1.5" in message
    assert isinstance(info.value, ValueError)  # callers catching ValueError still do
    assert _promise([], 0.5) == 0.5 and _promise([]) == 0.01


def test_the_decorated_function_keeps_its_signature_and_docstring():
    assert list(inspect.signature(_promise).parameters) == ["scores", "fpr"]
    assert _promise.__doc__ == "Return ``fpr``."


def test_a_constraint_on_an_argument_the_function_lacks_fails_at_decoration():
    with pytest.raises(TypeError, match="no argument 'fpx'"):

        @validate_params({"fpx": RATE})
        def f(fpr: float) -> float:
            return fpr


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: T.threshold_at_fpr([0.1, 0.2], 0.0), ["'fpr'", "threshold_at_fpr", "Got 0.0"]),
        (lambda: T.conformal_fpr_band(100, 0.1, 50, level=1.0), ["'level'", "Got 1.0"]),
        (lambda: T.smallest_resolvable_fpr(0), ["'n_nonmembers'", "[1, inf)"]),
        (lambda: T.select_threshold([0.1], [0.2], goal="max_ppv", prior=0), ["'prior'"]),
        (lambda: M.make_membership_scorer("f1"), ["'metric'", "'tpr_at_fpr'", "Got 'f1'"]),
        (lambda: M.clopper_pearson(1, 10, confidence=95), ["'confidence'", "Got 95"]),
        (lambda: M.dp_tradeoff(0.1, epsilon=-1.0), ["'epsilon'", "[0.0, inf)"]),
        (lambda: M.dp_ppv_bound(0.1, 1.0, delta=1.0), ["'delta'", "[0.0, 1.0)"]),
        (lambda: M.gdp_tradeoff(0.1, mu=-0.5), ["'mu'", "Got -0.5"]),
    ],
)
def test_public_functions_refuse_values_outside_their_declared_ranges(call, words):
    with pytest.raises(ValueError) as info:
        call()
    assert all(w in str(info.value) for w in words), str(info.value)
