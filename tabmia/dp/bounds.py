"""Privacy lower bounds from the membership guesses of one training run.

The one-run game (Steinke, Nasr & Jagielski [1]_): each of ``m`` canaries is put
into the training set independently with probability 1/2, the model is trained
once, and an auditor guesses, from the trained model alone, "in" or "out" for
``n_guesses`` of the canaries (abstaining on the rest). If training is
(epsilon, delta)-DP, the number of right guesses cannot be much larger than that
of ``n_guesses`` coin flips that each come up right with probability
``e^eps / (1 + e^eps)``, the accuracy of randomised response. Seeing more right
guesses than that at a small probability refutes the claim.

Two families of claims are tested here:

- **(epsilon, delta)-DP** ([1]_, Theorem 5.2): if training is (epsilon, delta)-DP,

  ``P[right >= r] <= B(r) + 2 m delta max_{1 <= i <= r} (B(r - i) - B(r)) / i``,

  where ``B(j) = P[Binomial(n_guesses, e^eps / (1 + e^eps)) >= j]``.
  :func:`one_run_p_value` computes the right-hand side and
  :func:`epsilon_lower_bound_one_run` the largest epsilon it refutes at the
  confidence level.
- **mu-Gaussian DP** (Mahloujifar, Melis & Chaudhuri [2]_, the one-run test of an
  f-DP curve): a recursion over the number of right guesses that uses the whole
  trade-off curve of mu-GDP instead of its (epsilon, delta) envelope.
  :func:`gdp_lower_bound_one_run` gives the largest mu it refutes. An epsilon derived
  from it (:func:`gdp_epsilon`) is a lower bound on epsilon only for training whose
  trade-off curve is Gaussian (the Gaussian mechanism; DP-SGD approximately): a
  mechanism can be (epsilon, delta)-DP and still not be mu-GDP for the mu with the
  same (epsilon, delta), randomised response for one.

Soundness of the searches: each returns an epsilon (mu) at which the test itself
rejects, or 0. Any rejected value is a valid lower bound, whether or not the tests'
rejections are nested, since every claim at or above the true one is also true.

References
----------
.. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run.
   NeurIPS 2023.
.. [2] Mahloujifar, Melis, Chaudhuri. Auditing f-Differential Privacy in One Run.
   ICML 2025.
.. [3] Dong, Roth, Su. Gaussian Differential Privacy. JRSS-B 2022. (mu-GDP to
   (epsilon, delta), Corollary 2.13)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, special, stats

__all__ = [
    "one_run_p_value",
    "epsilon_lower_bound_one_run",
    "gdp_one_run_rejects",
    "gdp_lower_bound_one_run",
    "gdp_delta",
    "gdp_epsilon",
]

# bisection steps of the searches: the bracket shrinks by 2^-_STEPS of its width
_STEPS = 60


def _check_counts(n_correct: int, n_guesses: int, n_canaries: int) -> tuple[int, int, int]:
    values = []
    for name, value in (
        ("n_correct", n_correct),
        ("n_guesses", n_guesses),
        ("n_canaries", n_canaries),
    ):
        if isinstance(value, bool) or not float(value).is_integer():
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        values.append(int(value))
    r, v, m = values
    if not 0 <= r <= v <= m:
        raise ValueError(
            "need 0 <= n_correct <= n_guesses <= n_canaries, got "
            f"n_correct={r}, n_guesses={v}, n_canaries={m}"
        )
    if m < 1:
        raise ValueError("n_canaries must be at least 1")
    return r, v, m


def _check_level(confidence: float, delta: float = 0.0) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")


def one_run_p_value(
    n_correct: int, n_guesses: int, n_canaries: int, epsilon: float, delta: float = 0.0
) -> float:
    """Largest chance that (epsilon, delta)-DP training gives this many right guesses.

    Steinke et al., Theorem 5.2: the probability of ``n_correct`` or more right
    guesses out of ``n_guesses`` (the rest abstentions) about ``n_canaries`` canaries,
    each included independently with probability 1/2, under any (epsilon, delta)-DP
    training and any guessing rule that fixes the number of guesses in advance.

    Parameters
    ----------
    n_correct, n_guesses, n_canaries : int
        Right guesses ``r``, guesses ``v`` (not counting abstentions) and canaries
        ``m``, with ``0 <= r <= v <= m``.
    epsilon : float
        The epsilon of the claim tested, ``>= 0``.
    delta : float, default=0.0
        Its delta; enters as ``2 m delta`` times the largest average slope of the
        binomial tail below ``r``.

    Returns
    -------
    float
        The p-value of the claim, in ``[0, 1]``.

    Examples
    --------
    Ten guesses, all right, against pure 1-DP: ``(e / (1 + e))^10``.

    >>> round(one_run_p_value(10, 10, 100, 1.0), 5)
    0.0436
    """
    r, v, m = _check_counts(n_correct, n_guesses, n_canaries)
    if epsilon < 0 or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    if r == 0:
        return 1.0
    q = float(special.expit(epsilon))  # accuracy of epsilon-DP randomised response
    tail = float(stats.binom.sf(r - 1, v, q))  # P[Binomial(v, q) >= r]
    if delta == 0.0:
        return min(tail, 1.0)
    # P[r - i <= Binomial(v, q) < r] / i for i = 1..r. Each P is at most 1 - tail, so
    # the shifts past the first ``head`` (which cover the binomial's bulk below r) are
    # evaluated only when (1 - tail) / (head + 1) could beat the largest so far: the
    # same maximum, at O(sqrt(v)) instead of O(r) for the many-guess searches
    spread = 10.0 * math.sqrt(v * q * (1.0 - q))
    head = min(r, 64 + math.ceil(max(0.0, r - v * q) + spread))
    slope = _slope(r, v, q, tail, 1, head)
    if head < r and not (1.0 - tail) / (head + 1) < slope:
        slope = max(slope, _slope(r, v, q, tail, head + 1, r))
    return min(tail + 2.0 * m * delta * slope, 1.0)


def _slope(r: int, v: int, q: float, tail: float, first: int, last: int) -> float:
    """Largest ``P[r - i <= Binomial(v, q) < r] / i`` over ``first <= i <= last``."""
    shifts = np.arange(first, last + 1)
    below = stats.binom.sf(r - shifts - 1, v, q) - tail
    return float(np.max(below / shifts))


def _largest_rejected(rejects: Callable[[float], bool], start: float) -> float:
    """The largest parameter (>= 0) a test rejects, by bisection; 0 if it rejects none.

    Returns a value at which ``rejects`` is True (or 0), so the answer is itself a
    rejected claim even when the rejected set is not an interval.
    """
    if not rejects(0.0):
        # a test that cannot refute perfect privacy refutes nothing larger either
        # when its rejections are nested; when they are not, 0 is still sound
        return 0.0
    lo, hi = 0.0, start
    while rejects(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:  # every claim is refuted: all guesses right with certainty
            return math.inf
    for _ in range(_STEPS):
        mid = 0.5 * (lo + hi)
        if rejects(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-7 * max(1.0, hi):
            break
    return lo


def epsilon_lower_bound_one_run(
    n_correct: int,
    n_guesses: int,
    n_canaries: int,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> float:
    """Largest epsilon that ``n_correct`` right guesses of ``n_guesses`` refute.

    The training is not (epsilon, delta)-DP for any epsilon below the returned
    value, with confidence ``confidence``: the p-value of
    :func:`one_run_p_value` is below ``1 - confidence`` there. The guessing rule
    (how many guesses, on which canaries) must be fixed without looking at which
    canaries were included; several rules tried need a Bonferroni correction
    (``confidence = 1 - (1 - c) / n_rules``).

    Parameters
    ----------
    n_correct, n_guesses, n_canaries : int
        Right guesses, guesses and canaries (``0 <= r <= v <= m``).
    delta : float, default=0.0
        The delta of the claims tested.
    confidence : float, default=0.95
        Confidence of the bound.

    Returns
    -------
    float
        The lower bound, ``>= 0``; 0 when the guesses refute no claim.

    Examples
    --------
    Ten right guesses out of ten refute every epsilon below ``logit(0.05^0.1)``:

    >>> round(epsilon_lower_bound_one_run(10, 10, 100, confidence=0.95), 4)
    1.0519
    >>> epsilon_lower_bound_one_run(5, 10, 100)  # a coin does as well
    0.0
    """
    r, v, m = _check_counts(n_correct, n_guesses, n_canaries)
    _check_level(confidence, delta)
    alpha = 1.0 - confidence
    return _largest_rejected(lambda eps: one_run_p_value(r, v, m, eps, delta) < alpha, 1.0)


# ------------------------------------------------------------------ mu-GDP
def _gdp_inverse_blow_up(mu: float) -> Callable[[float], float]:
    """Least chance under one neighbour of an event with chance ``x`` under the
    other, for mu-GDP: ``Phi(Phi^-1(x) - mu)``."""
    if mu == 0.0:
        return lambda x: x
    return lambda x: float(special.ndtr(special.ndtri(x) - mu))


def gdp_one_run_rejects(
    mu: float, n_correct: int, n_guesses: int, n_canaries: int, confidence: float = 0.95
) -> bool:
    """Whether ``n_correct`` right guesses of ``n_guesses`` refute mu-GDP training.

    The one-run test of Mahloujifar et al. for the trade-off curve of mu-GDP with
    binary secrets (in / out): start from the mass ``tau r / m`` of right and
    ``tau (v - r) / m`` of wrong guesses (``tau = 1 - confidence``) and propagate it
    down over the number of right guesses with the curve's inverse blow-up
    ``x -> Phi(Phi^-1(x) - mu)``; the claim is refuted when the mass needed exceeds
    the ``v / m`` the guesses have.

    Parameters
    ----------
    mu : float
        The mu of the claim tested, ``>= 0``.
    n_correct, n_guesses, n_canaries : int
        Right guesses, guesses and canaries.
    confidence : float, default=0.95
        Confidence of the test.

    Returns
    -------
    bool
        True when mu-GDP is refuted at that confidence.
    """
    r, v, m = _check_counts(n_correct, n_guesses, n_canaries)
    _check_level(confidence)
    if mu < 0 or not math.isfinite(mu):
        raise ValueError(f"mu must be finite and >= 0, got {mu}")
    if r == 0:
        return False
    blow_down = _gdp_inverse_blow_up(float(mu))
    tau = 1.0 - confidence
    right, wrong = tau * r / m, tau * (v - r) / m
    for i in range(r - 1, -1, -1):  # sequential in the number of right guesses
        wrong_next = max(wrong, blow_down(right))
        if wrong_next == wrong:  # a fixed point: nothing changes below this i
            break
        right = min(right + i / (v - i) * (wrong_next - wrong), 1.0)
        wrong = wrong_next
    return right + wrong > v / m


def gdp_lower_bound_one_run(
    n_correct: int, n_guesses: int, n_canaries: int, confidence: float = 0.95
) -> float:
    """Largest mu for which the guesses refute mu-GDP training.

    The training is not mu-GDP for any mu below the returned value, with
    confidence ``confidence`` (Mahloujifar et al.'s one-run test,
    :func:`gdp_one_run_rejects`). The same rule on choosing the guesses as for
    :func:`epsilon_lower_bound_one_run` applies.

    Examples
    --------
    >>> gdp_lower_bound_one_run(5, 10, 100)
    0.0
    >>> 0.5 < gdp_lower_bound_one_run(90, 100, 1000) < 3.0
    True
    """
    r, v, m = _check_counts(n_correct, n_guesses, n_canaries)
    _check_level(confidence)
    return _largest_rejected(lambda mu: gdp_one_run_rejects(mu, r, v, m, confidence), 1.0)


def gdp_delta(mu: float, epsilon: float) -> float:
    """The delta of mu-GDP at ``epsilon`` (Dong, Roth & Su, Corollary 2.13).

    ``delta(eps) = Phi(-eps / mu + mu / 2) - e^eps Phi(-eps / mu - mu / 2)``.
    """
    if mu < 0 or epsilon < 0:
        raise ValueError(f"need mu >= 0 and epsilon >= 0, got {mu}, {epsilon}")
    if mu == 0.0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = stats.norm.logcdf(-epsilon / mu + mu / 2)
    b = epsilon + stats.norm.logcdf(-epsilon / mu - mu / 2)
    return float(np.exp(a) * -np.expm1(min(b - a, 0.0)))


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon with mu-GDP implying (epsilon, delta)-DP.

    Examples
    --------
    >>> gdp_epsilon(0.0, 1e-5)
    0.0
    >>> round(gdp_delta(1.0, gdp_epsilon(1.0, 1e-5)) / 1e-5, 6)
    1.0
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if mu < 0:
        raise ValueError(f"mu must be >= 0, got {mu}")
    if mu == 0.0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    if math.isinf(mu):
        return math.inf
    hi = max(1.0, mu * mu)
    while gdp_delta(mu, hi) > delta:
        hi *= 2.0
    return float(optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-10))
