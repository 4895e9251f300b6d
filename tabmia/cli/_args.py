"""Argument types and the flags that ``tabmia audit`` and ``tabmia benchmark`` share.

Both speak one FPR vocabulary: ``--fpr`` is the FPR each attack's threshold promises,
``--fprs`` the levels at which the tables report TPR (and precision). Both split a data
set with the same flags (``--train-size``, ``--public-size``, ``--prior``,
``--max-records``) and run on the machine with the same ones (``--n-jobs``,
``--device``, ``--random-state``).
"""

from __future__ import annotations

import argparse
from typing import Any

from tabmia._memory import parse_memory
from tabmia.cli._inputs import UsageError
from tabmia.gate import parse_limits
from tabmia.report.state import check_warning_names

__all__ = [
    "Accumulate",
    "DEFAULT_FPR",
    "add_command",
    "add_fpr_arguments",
    "add_run_arguments",
    "add_split_arguments",
    "floats",
    "fraction_or_count",
    "given_flags",
    "memory_size",
    "names",
    "risk_limits",
    "settle_fprs",
    "warning_names",
]

#: The FPR each attack's threshold promises unless ``--fpr`` says otherwise.
DEFAULT_FPR = 0.01


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


def memory_size(text: str) -> int:
    """``--max-memory``: bytes, a size with a unit (``8GB``) or a share of memory (``25%``)."""
    try:
        return parse_memory(text, name="")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def fdr_level(text: str) -> float:
    """``--fdr``: a false-discovery rate in (0, 1)."""
    try:
        q = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < q < 1.0:
        raise argparse.ArgumentTypeError(f"the FDR must be in (0, 1), got {text}")
    return q


def risk_limits(text: str) -> tuple[Any, ...]:
    """``METRIC=LIMIT[,METRIC=LIMIT...]`` for ``--fail-above`` (:mod:`tabmia.gate`)."""
    try:
        limits = parse_limits(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if not limits:  # an empty value would turn the gate off without a word
        raise argparse.ArgumentTypeError(
            f"{text!r} gives no limit: expected METRIC=LIMIT, e.g. "
            "tpr@0.01=0.05, auc=0.6 or epsilon=4"
        )
    return limits


def warning_names(text: str) -> tuple[str, ...]:
    """``NAME[,NAME...]`` for ``--accept-warning``: plausibility findings by name."""
    try:
        found = check_warning_names(names(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if not found:
        raise argparse.ArgumentTypeError("expected a finding's name, e.g. fit_gap")
    return found


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
    group.add_argument(
        "--train-size",
        type=fraction_or_count,
        default=0.5,
        help="target training set: fraction or count (default 0.5)",
    )
    group.add_argument(
        "--public-size",
        type=fraction_or_count,
        default=0.5,
        help="attacker's share of the records left (default 0.5)",
    )
    group.add_argument("--prior", type=float, default=None, help=prior_help)
    group.add_argument("--max-records", type=int, default=None, help=max_records_help)


def add_command(sub: Any, name: str, *, help: str, doc: str) -> argparse.ArgumentParser:
    """The ``tabmia NAME`` subparser, described by its module docstring ``doc`` (all but
    the first paragraph)."""
    return sub.add_parser(
        name,
        help=help,
        description=doc.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_fpr_arguments(
    group: Any, *, fprs_default: tuple[float, ...] | None, fprs_help: str
) -> None:
    """``--fpr`` (the FPR each attack's threshold promises) and ``--fprs`` (the levels of
    the tables' TPR); :func:`settle_fprs` reads them."""
    group.add_argument(
        "--fpr",
        type=floats,
        default=None,
        metavar="FPR",
        help=f"the FPR each attack's threshold promises on fresh non-members "
        f"(default {DEFAULT_FPR:g}, or the smallest an attack's calibration "
        "records can promise, said so)",
    )
    group.add_argument(
        "--fprs", type=floats, default=fprs_default, metavar="FPR[,FPR...]", help=fprs_help
    )


def settle_fprs(args: argparse.Namespace, *, several_fpr: bool = False) -> None:
    """``args.fpr`` as one FPR (:data:`DEFAULT_FPR` when not given; ``args.fpr_given``
    says which) and ``args.fprs`` as the tables' levels (``(args.fpr,)`` when not given).

    ``several_fpr``: ``--fpr A,B`` is read as ``--fpr A --fprs A,B`` (``tabmia benchmark``'s
    form before ``--fprs``); otherwise it is refused.
    """
    given = args.fpr
    args.fpr_given = given is not None
    fpr = (DEFAULT_FPR,) if given is None else tuple(given)
    if len(fpr) > 1:
        if not several_fpr:
            raise UsageError(
                f"--fpr takes one FPR, the one each attack's threshold promises, "
                f"got {','.join(f'{f:g}' for f in fpr)}: the table's levels are "
                "--fprs"
            )
        if args.fprs is None:
            args.fprs = fpr
    args.fpr = fpr[0]
    if args.fprs is None:
        args.fprs = (args.fpr,)


def add_run_arguments(group: Any, *, n_jobs_help: str = "parallel jobs for shadow models") -> None:
    """``--n-jobs``, ``--device``, ``--random-state``: how a run uses the machine, its seed."""
    group.add_argument("--n-jobs", type=int, default=None, help=n_jobs_help)
    group.add_argument(
        "--device", default="auto", help="auto, cpu, cuda or cuda:N (torch MLPs, CatBoost, XGBoost)"
    )
    group.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
