"""The fixed grid of guess rules of the one-run audit, shared by the audit that makes the
guesses (:mod:`tabmia.dp.guesses`) and the check of how many guesses a claim needs
(:mod:`tabmia.dp.claims`)."""

from __future__ import annotations

__all__ = ["guess_rules"]

# shares of the canaries guessed on by the rules of the grid
_GRID_SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)


def guess_rules(n_canaries: int) -> list[tuple[int, int]]:
    """The fixed grid of ``(k_plus, k_minus)`` rules for ``n_canaries`` canaries.

    For each share of the canaries in ``0.01, 0.02, 0.05, ..., 1``: guess only "in"
    on the highest scores, only "out" on the lowest, or half each.

    Examples
    --------
    >>> guess_rules(4)
    [(1, 0), (0, 1), (2, 0), (0, 2), (1, 1), (3, 0), (0, 3), (2, 1), (4, 0), (0, 4), (2, 2)]
    """
    if n_canaries < 1:
        raise ValueError(f"n_canaries must be >= 1, got {n_canaries}")
    rules: list[tuple[int, int]] = []
    for share in _GRID_SHARES:
        k = max(1, round(share * n_canaries))
        for rule in ((k, 0), (0, k), ((k + 1) // 2, k // 2)):
            if rule not in rules and rule[0] + rule[1] >= 1:
                rules.append(rule)
    return rules
