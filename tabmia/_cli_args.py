"""Argument types and the membership-game flags of ``tabmia audit`` and ``benchmark``."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["Accumulate", "add_split_arguments", "floats", "fraction_or_count", "given_flags",
           "names", "risk_limits"]


def floats(text: str) -> tuple[float, ...]:
    """Comma-separated numbers, at least one."""
    try:
        values = tuple(float(v) for v in str(text).split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return values


def names(text: str) -> tuple[str, ...]:
    """Comma-separated names, blanks dropped."""
    return tuple(v.strip() for v in str(text).split(",") if v.strip())


def fraction_or_count(text: str) -> float | int:
    """A fraction below 1, or a whole count."""
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a fraction or a count, got {text!r}") from exc
    return int(value) if value >= 1 and value.is_integer() else value


def given_flags(parser: argparse.ArgumentParser, argv: list[str] | None) -> set[str]:
    """Destinations of the flags ``argv`` sets (not their defaults), for its subcommand.

    ``parser`` is a fresh parser (its defaults are changed): it parses ``argv`` again
    with every default of the subcommands suppressed, so only given flags remain.
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                for inner in sub._actions:
                    if inner.dest != "help":
                        inner.default = argparse.SUPPRESS
    given = vars(parser.parse_args(argv))
    return set(given) - {"command"}


def risk_limits(text: str) -> tuple[Any, ...]:
    """``METRIC=LIMIT[,METRIC=LIMIT...]`` for ``--fail-above`` (:mod:`tabmia.gate`)."""
    from tabmia.gate import parse_limits

    try:
        return parse_limits(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


class Accumulate(argparse.Action):
    """A repeatable flag whose values (tuples) add up; the command line's replace the
    ones a ``--config`` file gave, as every other flag's do."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        current = getattr(namespace, self.dest, None)
        if current is self.default:  # the first on the command line: drop the config's
            current = ()
        setattr(namespace, self.dest, tuple(current or ()) + tuple(values))


def add_split_arguments(group: Any, *, prior_help: str, max_records_help: str) -> None:
    """``--train-size``, ``--public-size``, ``--prior``, ``--max-records`` (the game's split)."""
    group.add_argument("--train-size", type=fraction_or_count, default=0.5,
                       help="target training set: fraction or count (default 0.5)")
    group.add_argument("--public-size", type=fraction_or_count, default=0.5,
                       help="attacker's share of the records left (default 0.5)")
    group.add_argument("--prior", type=float, default=None, help=prior_help)
    group.add_argument("--max-records", type=int, default=None, help=max_records_help)
