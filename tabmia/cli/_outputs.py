"""``tabmia audit``'s output: its warnings as one-line messages, and the files it writes.

Every file goes into a temporary folder inside ``--out`` first and moves in only
once all were written, so a failed run leaves nothing behind.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shlex
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tabmia
from tabmia._columns import slicing_name
from tabmia.cli._named import named_table, write_named
from tabmia.cli._structure import structure_section
from tabmia.exceptions import FlagsNobodyWarning, RunNote
from tabmia.persons import most_exposed, person_risk
from tabmia.report import check_statements, plot_roc
from tabmia.report.dp_claim import claim_answer
from tabmia.report.html import write_html_report
from tabmia.report.tables import text_table
from tabmia.schema import write_results
from tabmia.slices import SliceRiskDisplay

__all__ = [
    "fpr_fallback_notes",
    "one_line_warnings",
    "recorded_warnings",
    "shown",
    "terminal_summary",
    "wrapped",
    "write_outputs",
]

#: Columns of the terminal's summary (results.md and report.html keep the full table).
TERMINAL_WIDTH = 100


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Show every warning raised inside as one ``tabmia: warning: ...`` line, once.

    tabmia's own warnings (its categories, or raised from its code) read as such; a
    run note (an FPR fallback, shadows smaller than the target) is a ``tabmia: note:``;
    another library's warning names its category
    and package. Never Python's format with a line of source code. An attack's
    :class:`~tabmia.exceptions.FlagsNobodyWarning` is not shown: the verdict says which
    attacks flag nobody, and why, once for the audit.
    """
    shown: set[str] = set()

    def show(
        message: Any,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: Any = None,
    ) -> None:
        text = " ".join(str(message).split())
        if not _is_own(category, filename):
            text = f"{category.__name__} from {_package_of(filename)}: {text}"
        kind = "note" if issubclass(category, RunNote) else "warning"
        if text not in shown:
            shown.add(text)
            print(f"tabmia: {kind}: {text}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        warnings.simplefilter("ignore", FlagsNobodyWarning)  # a line per attack and seed
        yield


@contextlib.contextmanager
def recorded_warnings(*categories: type[Warning]) -> Iterator[list[str]]:
    """Messages of the warnings of ``categories`` raised inside, each once, in order.

    Each is shown at once through the ``warnings.showwarning`` in force outside (under
    :func:`one_line_warnings`: a ``tabmia:`` line), repeats are dropped: a warning that
    every attack raises is reported once per audit.
    """
    messages: list[str] = []
    outer = warnings.showwarning

    def show(
        message: Any,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: Any = None,
    ) -> None:
        if issubclass(category, categories):
            text = str(message)
            if text in messages:
                return
            messages.append(text)
        outer(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        for category in categories:
            warnings.simplefilter("always", category)  # the repeats are dropped here
        warnings.showwarning = show
        yield messages


def fpr_fallback_notes() -> contextlib.AbstractContextManager[list[str]]:
    """The run notes inside (FPR fallbacks, shadows smaller than the target), shown once
    each as they happen."""
    return recorded_warnings(RunNote)


def shown(value: Any) -> Any:
    """A context value as the header and the HTML report show it (lists joined)."""
    return "; ".join(map(str, value)) if isinstance(value, list) else value


def wrapped(text: str, first: str = "", rest: str = "  ") -> str:
    """``text`` in lines of at most :data:`TERMINAL_WIDTH` columns (a word longer than
    that, such as a long path, stays whole)."""
    import textwrap

    return textwrap.fill(
        text,
        TERMINAL_WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    )


def terminal_summary(header: str, state: Any, verdict: list[str], table: Any) -> str:
    """What ``tabmia audit`` prints: the header, the verdict's state and sentences and a
    short table (:func:`tabmia.report.tables.summary_table`), each line at most
    :data:`TERMINAL_WIDTH` columns (an attack name longer than the room left excepted)."""
    parts = [wrapped(header.strip()), "", wrapped(f"Verdict: {state.state}.")]
    parts += [wrapped(line, "- ") for line in verdict]
    parts += ["", text_table(table), "(full table: results.md and report.html)"]
    return "\n".join(parts)


def _is_own(category: type[Warning], filename: str) -> bool:
    if category.__module__.split(".")[0] == "tabmia":
        return True
    package = Path(__file__).resolve().parent
    try:
        return Path(filename).resolve().is_relative_to(package)
    except (OSError, ValueError):
        return False


def _package_of(filename: str) -> str:
    """The top-level package a source file belongs to (its name, else the file's stem)."""
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return Path(parts[parts.index(marker) + 1]).stem
    return Path(filename).stem


def write_outputs(
    args: argparse.Namespace,
    result: Any,
    md: str,
    context: dict[str, Any],
    records: Any,
    elapsed: float,
    verdict: list[str] | None = None,
    gate: Any = None,
    state: Any = None,
    records_result: Any = None,
    slice_report: Any = None,
    reconstruction: Any = None,
    structure: Any = None,
    named: Any = None,
) -> None:
    """Write every file into a temporary folder, then move them into --out together.

    ``structure`` (a tree model's :class:`tabmia.structure.StructureFindings`) goes into
    results.json (``structure``), results.md and report.html's Structure section.

    ``slice_report`` (:func:`tabmia.slices.slice_report`) goes into results.json
    (``slices``), results.md and report.html (its table, test and figure).

    With ``records_result`` (the record-level audit behind a person-level ``result``),
    scores.csv.gz holds the records' scores with their person, persons.csv.gz the
    persons', results.json the record-level metrics beside the person-level ones, the
    distribution of person risk and the most exposed persons, which report.html shows.

    ``gate`` (a :class:`tabmia.gate.GateResult`) goes into results.json (``gate``),
    results.md and report.html; ``state`` (a :class:`tabmia.report.state.VerdictState`:
    the decision, its findings and the warnings accepted) into results.json (``state``)
    and report.html's verdict; ``reconstruction`` (a
    :class:`tabmia.reconstruction.ReconstructionResult`, ``--reconstruct``) into
    results.json (``reconstruction``) and report.html's Reconstruction section.

    ``named`` (a :class:`tabmia.named.NamedResult`) goes into results.json (``named``),
    ``named.csv.gz`` and report.html, in place of the riskiest records."""
    # the process's command line, with the entry point (console script or cli.py) as `tabmia`
    command = getattr(args, "command_line", None) or "tabmia " + shlex.join(sys.argv[1:])
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = _markdown(md, gate, slice_report, structure, command, date)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out, prefix=".partial-") as tmp:
        tmp_path = Path(tmp)
        payload = {
            "tabmia_version": tabmia.__version__,
            "command": command,
            "date": date,
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "context": context,
            "seconds": elapsed,
            "state": None if state is None else state.to_dict(),
            "verdict": verdict,
            "gate": None if gate is None else gate.to_dict(),
            "target_accuracy": (
                result.target_accuracy.to_dict(orient="records")
                if result.target_accuracy is not None
                else None
            ),
            # what each attack flags at its own threshold, per seed (the attacker's result)
            "at_own_threshold": json.loads(result.at_own_threshold().to_json(orient="records")),
            "metrics": json.loads(result.metrics.to_json(orient="records")),
        }
        if args.epsilon is not None:  # the DP claim's one answer, about records
            payload["claim"] = claim_answer(
                result, args.epsilon, args.delta, records=records_result
            ).to_dict()
        if slice_report is not None:
            payload["slices"] = slice_report.to_dict()
        if reconstruction is not None:
            payload["reconstruction"] = reconstruction.to_dict()
        payload["structure"] = None if structure is None else structure.to_dict()
        if named is not None:
            payload["named"] = named.to_dict()
            write_named(named, tmp_path)
        person_tables = _person_tables(args, result, records_result, payload)
        # with its evidence sections, as the published schema (tabmia.schema) says
        written = write_results(tmp_path / "results.json", payload)
        _check_own_statements(json.dumps(written, default=str))
        (tmp_path / "results.md").write_text(md)
        _write_scores(args, result, records_result, tmp_path)
        write_html_report(
            result,
            tmp_path / "report.html",
            context={k: shown(v) for k, v in context.items()},
            epsilon=args.epsilon,
            delta=args.delta,
            fprs=args.fprs,
            gammas=args.gammas,
            top_k=args.top_k,
            records=records,
            show_records=args.show_records,
            command=command,
            version=tabmia.__version__,
            date=date,
            gate=None if gate is None else gate.lines(),
            accept_warnings=getattr(args, "accept_warnings", ()),
            person_tables=person_tables,
            slice_section=None if slice_report is None else _slice_section(slice_report),
            records_result=records_result,
            reconstruction=None if reconstruction is None else reconstruction.to_dict(),
            structure_section=None if structure is None else structure_section(structure),
            named_section=None if named is None else _named_section(named, args.top_k, context),
        )
        for f in tmp_path.iterdir():
            shutil.move(str(f), args.out / f.name)


def _markdown(
    md: str, gate: Any, slice_report: Any, structure: Any, command: str, date: str
) -> str:
    """results.md: the verdict and table, then the gate, slices and structure sections
    present, and the line of version, date and command."""
    if gate is not None:
        md += "\n## Privacy gate\n\n" + "".join(f"- {line}\n" for line in gate.lines())
    if slice_report is not None:
        md += "\n## Slices\n\n" + "".join(f"- {line}\n" for line in slice_report.lines())
    if structure is not None:
        md += "\n## Structure\n\n" + "".join(f"- {line}\n" for line in structure.lines())
    return md + f"\ntabmia {tabmia.__version__}, {date}; command: `{command}`\n"


def _person_tables(
    args: argparse.Namespace, result: Any, records_result: Any, payload: dict[str, Any]
) -> tuple[Any, Any] | None:
    """With persons: their risk distribution and the most exposed (report.html's tables),
    put into ``payload`` beside the record-level metrics; None for a record audit."""
    if records_result is None:
        return None
    person_tables = (person_risk(result.scores), most_exposed(result.scores, n=args.top_k))
    payload["unit"] = "person"
    payload["record_metrics"] = json.loads(records_result.metrics.to_json(orient="records"))
    payload["person_risk"] = json.loads(person_tables[0].to_json(orient="records"))
    payload["most_exposed"] = json.loads(person_tables[1].to_json(orient="records"))
    return person_tables


def _write_scores(args: argparse.Namespace, result: Any, records_result: Any, folder: Path) -> None:
    """scores.csv.gz (the records'), persons.csv.gz (with persons) and roc.png."""
    # gzip's usual level 6: pandas' level 9 took twice its CPU time for a file 2%
    # smaller (150,000 scores: 0.93 s against 0.45 s)
    gzip6 = {"method": "gzip", "compresslevel": 6}
    (records_result or result).scores.to_csv(
        folder / "scores.csv.gz", index=False, compression=gzip6
    )
    if records_result is not None:
        result.scores.to_csv(folder / "persons.csv.gz", index=False, compression=gzip6)
    plot_roc(
        result.scores,
        folder / "roc.png",
        title="ROC (log-log)" + (f", seed 0 of {args.seeds}" if args.seeds > 1 else ""),
    )


#: Set (to anything but "" or "0") by the test suite: ``tabmia audit`` then checks its own
#: results.json with the sentence checker and fails loudly on a contradiction, a bug of
#: tabmia that users never see raised.
CHECK_STATEMENTS_VARIABLE = "TABMIA_CHECK_STATEMENTS"


def _check_own_statements(text: str) -> None:
    """Under :data:`CHECK_STATEMENTS_VARIABLE`: raise ``AssertionError`` where a statement
    of the results.json ``text`` contradicts its numbers
    (:func:`tabmia.report.check_statements`)."""

    if os.environ.get(CHECK_STATEMENTS_VARIABLE, "") in ("", "0"):
        return
    found = check_statements(json.loads(text))
    if found:
        raise AssertionError(
            "results.json contradicts itself:\n" + "\n".join(f"- {c}" for c in found)
        )


def _named_section(named: Any, top_k: int, context: dict[str, Any]) -> tuple[Any, ...]:
    """What report.html shows of the named list: its sentences, one row per list and the
    headline list's first names."""
    noun = context.get("persons") if named.unit == "person" else None
    return (named.lines(noun), *named_table(named, top_k))


def _slice_section(report: Any) -> tuple[list[str], Any, Any]:
    """What report.html shows of the slices: the test's sentences, the per-slice table
    (rates with intervals and counts) and the figure of each attack's slices."""
    import matplotlib.pyplot as plt
    import pandas as pd

    table = report.table
    shown = pd.DataFrame(
        {
            "attack": table["attack"],
            "slicing": table["slicing"].map(slicing_name),
            "slice": table["slice"],
            "members flagged: TPR [95%]": [
                f"{int(t)}/{int(n)}: {v:.3f} [{lo:.3f}, {hi:.3f}]"
                for t, n, v, lo, hi in zip(
                    table["tp"],
                    table["n_members"],
                    table["tpr"],
                    table["tpr_low"],
                    table["tpr_high"],
                )
            ],
            "non-members flagged: FPR [95%]": [
                f"{int(f)}/{int(n)}: {v:.3f} [{lo:.3f}, {hi:.3f}]"
                for f, n, v, lo, hi in zip(
                    table["fp"],
                    table["n_nonmembers"],
                    table["fpr"],
                    table["fpr_low"],
                    table["fpr_high"],
                )
            ],
            "TPR at the slice's own FPR threshold [95%]": [
                f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
                if c == "resolvable"
                else (f"{c} ({why})" if isinstance(why, str) and why else str(c))
                for v, lo, hi, c, why in zip(
                    table["tpr_cal"],
                    table["tpr_cal_low"],
                    table["tpr_cal_high"],
                    table["calibration"],
                    table.get("unresolvable_reason", [""] * len(table)),
                )
            ],
            "AUC [95%]": [
                f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
                for v, lo, hi in zip(table["auc"], table["auc_low"], table["auc_high"])
            ],
        }
    )
    display = SliceRiskDisplay.from_report(report)
    figure = display.figure_
    plt.close(figure)
    return report.lines(), shown, figure
