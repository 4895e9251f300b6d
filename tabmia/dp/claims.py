"""Could this one-run audit refute the claim at all? Refuted, consistent or cannot tell.

A one-run audit refutes (epsilon, delta)-DP when its right guesses are too many for
such training (:func:`tabmia.dp.one_run_p_value`). Its strongest possible outcome is
every guess right; if even that would not refute the claim at the level the rule is
tested at (``1 - (1 - confidence) / n_rules`` under Bonferroni), the audit cannot
tell, whatever the model does, and says how many canaries (or guesses) would. The
same three states as the membership game's DP table (:mod:`tabmia.claims`).

All-right guesses: ``v`` right of ``v`` has p-value ``q^v`` plus the delta term
(``q = e^eps / (1 + e^eps)``), at least ``q^v`` and at most ``c + (1 - c) q^v`` with
``c = 2 m delta``. The searches start at the closed form ``v >= log(alpha) / log(q)``
and double, then bisect, on the exact p-value; they return a count that refutes where
one fewer does not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tabmia.claims import ClaimCheck, check_claimed_epsilon
from tabmia.dp._rules import guess_rules
from tabmia.dp.bounds import one_run_p_value

__all__ = ["canaries_to_refute", "guesses_to_refute", "one_run_claim_check"]

#: Counts past this are not searched: "no number up to it" is the answer.
SEARCH_LIMIT = 10**7


def _all_right_refutes(v: int, m: int, epsilon: float, delta: float, alpha: float) -> bool:
    return v >= 1 and one_run_p_value(v, v, m, epsilon, delta) < alpha


def _first(pred: Callable[[int], bool], start: int, limit: int) -> int | None:
    """A count ``n`` in ``[start, limit]`` with ``pred(n)`` and not ``pred(n - 1)`` (the
    smallest when ``pred`` is monotone), by doubling then bisection; None if ``pred``
    holds nowhere on the doubling grid up to ``limit``."""
    lo, hi = start - 1, max(start, 1)
    while not pred(hi):
        if hi >= limit:
            return None
        lo, hi = hi, min(2 * hi, limit)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _start(epsilon: float, alpha: float) -> int:
    """``ceil(log(alpha) / log(q))``: below it not even ``q^v`` is under ``alpha``."""
    log_q = -math.log1p(math.exp(-epsilon)) if epsilon < 700 else -math.exp(-epsilon)
    if log_q == 0.0:
        return SEARCH_LIMIT + 1
    return max(1, math.ceil(math.log(alpha) / log_q))


def guesses_to_refute(
    epsilon: float,
    delta: float = 0.0,
    *,
    n_canaries: int | None = None,
    confidence: float = 0.95,
    n_tests: int = 1,
) -> int | None:
    """Fewest guesses that, all right, refute (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon, delta : float
        The claim (``epsilon > 0``).
    n_canaries : int, default=None
        Canaries of the audit (they enter the delta term as ``2 m delta``); None: as
        many as the guesses.
    confidence : float, default=0.95
        Confidence of the test.
    n_tests : int, default=1
        Rules tested (Bonferroni): each at ``1 - (1 - confidence) / n_tests``.

    Returns
    -------
    int or None
        None when no count up to ``n_canaries`` (or :data:`SEARCH_LIMIT`) does.

    Examples
    --------
    Pure 1-DP at 95%: ``0.731^v < 0.05`` from ``v = 10`` on.

    >>> guesses_to_refute(1.0)
    10
    """
    epsilon = check_claimed_epsilon(epsilon)
    alpha = (1.0 - confidence) / n_tests
    limit = SEARCH_LIMIT if n_canaries is None else int(n_canaries)
    start = _start(epsilon, alpha)
    if start > limit:
        return None
    return _first(
        lambda v: _all_right_refutes(v, max(v, n_canaries or v), epsilon, delta, alpha),
        start,
        limit,
    )


def canaries_to_refute(
    epsilon: float,
    delta: float = 0.0,
    *,
    confidence: float = 0.95,
    guesses: str = "bonferroni",
    holdout_share: float = 0.5,
) -> int | None:
    """Fewest canaries with which a one-run audit could refute (epsilon, delta)-DP.

    That is, with every guess of its widest rule right: all ``m`` canaries under
    ``"bonferroni"`` (tested at ``1 - (1 - confidence) / len(guess_rules(m))``), all
    audited canaries (those not held out) under ``"holdout"``.

    Returns
    -------
    int or None
        None when no count up to :data:`SEARCH_LIMIT` does (a large delta: its term
        ``2 m delta`` grows with the canaries).

    Examples
    --------
    >>> canaries_to_refute(1.0, 1e-5)
    20
    """
    epsilon = check_claimed_epsilon(epsilon)
    alpha = 1.0 - confidence
    if guesses == "holdout":

        def pred(m: int) -> bool:
            audited = m - round(holdout_share * m)
            return _all_right_refutes(audited, audited, epsilon, delta, alpha)
    else:

        def pred(m: int) -> bool:
            return _all_right_refutes(m, m, epsilon, delta, alpha / len(guess_rules(m)))

    start = _start(epsilon, alpha)
    if start > SEARCH_LIMIT:
        return None
    return _first(pred, max(start, 2), SEARCH_LIMIT)


def one_run_claim_check(result: Any) -> ClaimCheck | None:
    """Refuted, consistent or cannot tell: a :class:`~tabmia.dp.OneRunAuditResult`
    against its ``claimed_epsilon`` (None without a claim).

    Refuted when ``epsilon_lower`` exceeds the claim. Otherwise "consistent" only if
    the audit's strongest outcome, every guess of one of its rules right (each rule at
    its Bonferroni level), would have refuted the claim; else "cannot tell", with
    ``needed`` the canaries (Bonferroni, holdout) or guesses (a given rule) that could.
    """
    if result.claimed_epsilon is None:
        return None
    eps = check_claimed_epsilon(result.claimed_epsilon, "claimed_epsilon")
    delta, conf, m = result.delta, result.confidence, result.n_canaries
    pct = f"{100 * conf:g} %"
    given = result.guesses == "given"
    unit = "guesses" if given else "canaries"
    if result.epsilon_lower > eps:
        return ClaimCheck(
            "refuted",
            eps,
            delta,
            conf,
            None,
            unit,
            f"{result.n_correct} of {result.n_guesses} guesses right is more than "
            f"({eps:g}, {delta:g})-DP training allows at {pct} confidence",
        )
    alpha = (1.0 - conf) / result.n_rules
    if result.guesses == "bonferroni":
        widths = sorted({k_plus + k_minus for k_plus, k_minus in guess_rules(m)})
    else:
        widths = [result.k_plus + result.k_minus]
    if any(_all_right_refutes(v, m, eps, delta, alpha) for v in widths):
        return ClaimCheck(
            "consistent",
            eps,
            delta,
            conf,
            None,
            unit,
            f"not refuted, although {max(widths)} right guesses of "
            f"{max(widths)} would have refuted it",
        )
    if given:
        needed = guesses_to_refute(eps, delta, n_canaries=m, confidence=conf)
        more = (
            f"a rule of at least {needed} guesses, all right, would be needed"
            if needed is not None
            else f"no rule on {m} canaries can: audit more canaries, or a smaller delta"
        )
    else:
        needed = canaries_to_refute(
            eps,
            delta,
            confidence=conf,
            guesses=result.guesses,
            holdout_share=_holdout_share(result),
        )
        more = (
            f"it takes at least {needed} canaries"
            if needed is not None
            else f"no number of canaries up to {SEARCH_LIMIT:,} can at delta = {delta:g} "
            "(the bound's delta term, 2 m delta, grows with the canaries): check a "
            "smaller delta"
        )
    what = f"the rule's {max(widths)} guesses on {m} canaries" if given else f"{m} canaries"
    return ClaimCheck(
        "cannot_tell",
        eps,
        delta,
        conf,
        needed,
        unit,
        f"even if every guess were right, {what} could not refute "
        f"({eps:g}, {delta:g})-DP at {pct} confidence; {more}",
    )


def _holdout_share(result: Any) -> float:
    total = result.n_canaries + result.n_holdout
    return result.n_holdout / total if total else 0.5
