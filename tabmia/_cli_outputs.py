"""``tabmia audit``'s output: the warnings it turns into notes and the files it writes.

Every file goes into a temporary folder inside ``--out`` first and moves in only
once all were written, so a failed run leaves nothing behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tabmia.exceptions import FPRFallbackWarning

__all__ = ["fpr_fallback_notes", "write_outputs"]


@contextlib.contextmanager
def fpr_fallback_notes() -> Iterator[list[str]]:
    """Collect the FPR fallbacks of the run inside as notes, printed once each on stderr.

    Yields the list the notes go into (filled when the block ends, also when it raises);
    every other warning raised inside is re-issued unchanged.
    """
    notes: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FPRFallbackWarning)
            yield notes
    finally:
        for w in caught:
            if not issubclass(w.category, FPRFallbackWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            elif str(w.message) not in notes:
                notes.append(str(w.message))
        for note in notes:
            print(f"tabmia: note: {note}", file=sys.stderr)


def write_outputs(args: argparse.Namespace, result: Any, md: str, context: dict[str, Any],
                   records: Any, elapsed: float, verdict: list[str] | None = None,
                   gate: Any = None) -> None:
    """Write every file into a temporary folder, then move them into --out together.

    ``gate`` (a :class:`tabmia.gate.GateResult`) goes into results.json (``gate``),
    results.md and report.html."""
    import datetime

    import tabmia
    from tabmia.report import plot_roc
    from tabmia.report.html import write_html_report

    # the process's command line, with the entry point (console script or cli.py) as `tabmia`
    command = getattr(args, "command_line", None) or "tabmia " + shlex.join(sys.argv[1:])
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if gate is not None:
        md += "\n## Privacy gate\n\n" + "".join(f"- {line}\n" for line in gate.lines())
    md += f"\ntabmia {tabmia.__version__}, {date}; command: `{command}`\n"
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
            "verdict": verdict,
            "gate": None if gate is None else gate.to_dict(),
            "target_accuracy": (result.target_accuracy.to_dict(orient="records")
                                if result.target_accuracy is not None else None),
            # what each attack flags at its own threshold, per seed (the attacker's result)
            "at_own_threshold": json.loads(result.at_own_threshold().to_json(orient="records")),
            "metrics": json.loads(result.metrics.to_json(orient="records")),
        }
        (tmp_path / "results.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
        (tmp_path / "results.md").write_text(md)
        result.scores.to_csv(tmp_path / "scores.csv.gz", index=False)
        plot_roc(result.scores, tmp_path / "roc.png",
                 title="ROC (log-log)" + (f", seed 0 of {args.seeds}" if args.seeds > 1 else ""))
        write_html_report(
            result, tmp_path / "report.html", context=context, epsilon=args.epsilon,
            delta=args.delta, fprs=args.fprs, gammas=args.gammas, top_k=args.top_k,
            records=records, show_records=args.show_records, command=command,
            version=tabmia.__version__, date=date,
            gate=None if gate is None else gate.lines(),
        )
        for f in tmp_path.iterdir():
            shutil.move(str(f), args.out / f.name)
