"""Output files of :func:`tabmia.benchmark.run_benchmark`: JSON, markdown, ROC plots, HTML.

Tables have the data sets as rows and the attacks (by spec) as columns, one table per
metric; a cell is ``mean ± std`` over seeds, the best per row in bold, ``n/r`` where
the FPR is below ``1 / n_nonmembers`` (not resolvable with that many non-members) and
``n/a`` where the value is undefined (precision when nobody is flagged at that FPR).
Every table says how its numbers were reached: TPR and precision at an FPR are ROC-curve
points at an oracle threshold (set with the membership labels), the own-threshold tables
what each attack flags at the threshold it chose from its public records; precision is
read against its chance level (the members' share of the candidates), and a ``--quick``
run lists the settings it changed.
"""

from __future__ import annotations

import html as _html
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmia.exceptions import UnresolvableFPRError
from tabmia.metrics import auc, precision_at_fpr, tpr_at_fpr

__all__ = ["cell_metrics", "summarise", "markdown_report", "write_outputs"]


def cell_metrics(cell: dict[str, Any], fprs: tuple[float, ...], *, seed: int) -> dict[str, Any]:
    """AUC, TPR and precision at each FPR ("n/r" where not resolvable), TPR and FPR at the
    attack's own threshold, and seconds."""
    member = np.asarray(cell["member"], bool)
    s = np.asarray(cell["scores"], float)
    out: dict[str, Any] = {"auc": auc(member, s)}
    threshold = cell.get("threshold")
    flagged = s >= threshold if threshold is not None else None
    out["tpr_own"] = float(flagged[member].mean()) if flagged is not None else None
    out["fpr_own"] = float(flagged[~member].mean()) if flagged is not None else None
    for f in fprs:
        try:
            out[f"tpr@{f:g}"] = tpr_at_fpr(member, s, f)
            out[f"precision@{f:g}"] = precision_at_fpr(member, s, f)
        except UnresolvableFPRError:
            out[f"tpr@{f:g}"] = out[f"precision@{f:g}"] = "n/r"
    out["seconds"] = float(cell["fit_seconds"] + cell["score_seconds"])
    return out


def _stats(values: list[Any]) -> dict[str, Any]:
    """Mean, std and per-seed values; "n/r" (FPR not resolvable) and None (undefined,
    e.g. precision where nobody is flagged) are kept per seed and leave no mean."""
    values = [v if isinstance(v, str) or v is None or np.isfinite(v) else None for v in values]
    finite = [float(v) for v in values if v is not None and not isinstance(v, str)]
    if not finite or len(finite) < len(values):
        return {"mean": None, "std": None, "per_seed": values}
    arr = np.asarray(finite)
    return {
        "mean": float(arr.mean()),
        "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "per_seed": finite,
    }


def metric_names(fprs: tuple[float, ...]) -> list[tuple[str, str]]:
    """``(key, title)`` of each reported metric, in table order."""
    names = [("auc", "AUC")]
    for f in fprs:
        names += [
            (f"tpr@{f:g}", f"TPR at {f:g} FPR"),
            (f"precision@{f:g}", f"Precision at {f:g} FPR"),
        ]
    names += [
        ("tpr_own", "TPR at each attack's own threshold"),
        ("fpr_own", "FPR at each attack's own threshold"),
    ]
    return [*names, ("seconds", "Wall time per attack (s, fit + score)")]


def metric_note(key: str, payload: dict[str, Any]) -> str:
    """The sentence under a metric's table: how its numbers were reached."""
    aim = payload["settings"].get("threshold_fpr")
    if key.startswith("tpr@"):
        return (
            "Oracle threshold: the ROC curve's point at this FPR, its threshold chosen with "
            "the candidates' membership labels. An upper reference, not what an attacker "
            "achieves; see the own-threshold tables."
        )
    if key.startswith("precision@"):
        return (
            "Oracle threshold, as the TPR above. Chance level: an attacker flagging "
            f"candidates at random reaches the members' share of the candidates: "
            f"{_chance_text(payload)}."
        )
    if key == "tpr_own":
        return (
            "What each attack achieves: the share of members flagged at the threshold it "
            "chose from its public records, without the candidates' membership"
            + (f", aimed at FPR {aim:g}" if aim else "")
            + " (or the smallest FPR its calibration records can promise)."
        )
    if key == "fpr_own":
        return (
            "The share of non-member candidates flagged at each attack's own threshold: "
            "whether the threshold kept the FPR it aimed at. No cell is bold here."
        )
    return ""


def _chance_level(entry: dict[str, Any]) -> float:
    n_pos, n_neg = entry["n_members"][0], entry["n_nonmembers"][0]
    return n_pos / (n_pos + n_neg)


def _chance_text(payload: dict[str, Any]) -> str:
    return (
        ", ".join(
            f"{name} {_chance_level(entry):.3f}" for name, entry in payload["datasets"].items()
        )
        or "n/a"
    )


def quick_changes(attacks: list[str]) -> dict[str, dict[str, str]]:
    """Per attack spec, the parameters a ``quick`` run sets away from the spec's own."""
    from tabmia._attack_builder import build_attack

    out = {}
    for spec in attacks:
        full = build_attack(spec).get_params(deep=False)
        fast = build_attack(spec, fast=True).get_params(deep=False)
        changed = {k: repr(v) for k, v in fast.items() if repr(full.get(k)) != repr(v)}
        if changed:
            out[spec] = changed
    return out


def summarise(report: dict[str, Any], fprs: tuple[float, ...]) -> dict[str, Any]:
    """Per data set: target accuracy and, per attack, each metric's mean / std / per seed."""
    out = {}
    for name, entry in report["datasets"].items():
        seeds = entry["seeds"]
        attacks = list(dict.fromkeys(a for s in seeds for a in s["cells"]))
        accs = [next(iter(s["cells"].values()))["target_accuracy"] for s in seeds if s["cells"]]
        out[name] = {
            **{k: v for k, v in entry.items() if k != "seeds"},
            "n_members": [s["n_members"] for s in seeds],
            "n_nonmembers": [s["n_nonmembers"] for s in seeds],
            "game_seeds": [s["seed"] for s in seeds],
            "target_accuracy": {k: _stats([a[k] for a in accs]) for k in ("train", "test")},
            "attacks": {
                a: {
                    key: _stats([s["cells"][a]["metrics"][key] for s in seeds if a in s["cells"]])
                    for key, _ in metric_names(fprs)
                }
                for a in attacks
            },
            "cells": {a: [s["cells"][a]["key"] for s in seeds if a in s["cells"]] for a in attacks},
        }
    return out


def _fmt(stat: dict[str, Any], digits: int = 3) -> str:
    if stat["mean"] is None:
        return "n/r" if all(v == "n/r" for v in stat["per_seed"]) else "n/a"
    if len(stat["per_seed"]) == 1:
        return f"{stat['mean']:.{digits}f}"
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"


def metric_table(
    summary: dict[str, Any], key: str, attacks: list[str], *, bold: str = "**"
) -> pd.DataFrame:
    """One metric: data sets as rows, attacks as columns, the best mean per row in bold
    (highest; lowest for wall time)."""
    rows = []
    digits = 1 if key == "seconds" else 3
    for name, s in summary.items():
        stats = {a: s["attacks"][a][key] for a in attacks if a in s["attacks"]}
        means = {a: st["mean"] for a, st in stats.items() if st["mean"] is not None}
        best = None
        if means and key != "fpr_own":  # an FPR is neither better high nor low
            pick = min if key == "seconds" else max
            # compare at the shown precision, so equal-looking cells are all bold
            best = round(pick(means.values()), digits)
        row = {"data set": name}
        for a in attacks:
            if a not in stats:
                row[a] = "failed"
                continue
            text = _fmt(stats[a], digits)
            if (
                best is not None
                and a in means
                and round(means[a], digits) == best
                and len(means) > 1
            ):
                text = f"{bold}{text}{bold}"
            row[a] = text
        rows.append(row)
    return pd.DataFrame(rows, columns=["data set", *attacks])


def _md_table(df: pd.DataFrame) -> str:
    from tabmia.report import markdown_table

    return markdown_table(df.astype(str).apply(lambda c: c.str.replace("|", "\\|")))


def dataset_table(summary: dict[str, Any]) -> pd.DataFrame:
    """Source, sizes and the target's accuracy per data set."""
    rows = []
    for name, s in summary.items():
        n = s["n_records"]
        size = f"{n:,}" + (f" of {s['n_records_total']:,}" if s["n_records_total"] > n else "")
        rows.append(
            {
                "data set": name,
                "resolved": s["resolved"],
                "source": s["source"],
                "records": size,
                "members / non-members": f"{s['n_members'][0]:,} / {s['n_nonmembers'][0]:,}",
                "precision chance level": f"{_chance_level(s):.3f}",
                "target train acc.": _fmt(s["target_accuracy"]["train"]),
                "target held-out acc.": _fmt(s["target_accuracy"]["test"]),
            }
        )
    return pd.DataFrame(rows)


def _intro(payload: dict[str, Any]) -> list[str]:
    st = payload["settings"]
    return [
        f"Target: `{st['model']}`; seeds: {st['seeds']} (game seeds {st['game_seeds']}); "
        f"split: train_size {st['train_size']}, public_size {st['public_size']} of the rest; "
        f"attack thresholds at FPR {st['threshold_fpr']:g}"
        + (f"; at most {st['max_records']:,} records per data set" if st["max_records"] else "")
        + "."
        + _quick_text(payload),
        f"Wall time {payload['wall_seconds']:.0f} s; cells computed {payload['cells']['computed']}, "
        f"reused {payload['cells']['reused']}, failed {payload['cells']['failed']}; "
        f"{payload['machine']['cpu_count']} cores, load average (1 min) "
        + "/".join(
            f"{v[0]:.1f}"
            for v in (
                payload["machine"]["load_average_start"],
                payload["machine"]["load_average_end"],
            )
            if v
        )
        + " at start / end.",
        "Each cell: mean ± std over seeds (per-seed values in results.json); best per row in "
        "bold (lowest for wall time); n/r: the FPR is below 1 / (number of non-members), "
        "not resolvable; n/a: undefined (precision where the attack flags nobody at that FPR).",
    ]


def _quick_text(payload: dict[str, Any]) -> str:
    st = payload["settings"]
    if not st["quick"]:
        return ""
    changed = "; ".join(
        f"{spec}: " + ", ".join(f"{k}={v}" for k, v in params.items())
        for spec, params in payload.get("quick_changes", {}).items()
    )
    return (
        " **Quick smoke run** (`--quick`): 1 seed, at most "
        f"{st['max_records']:,} records per data set"
        + (f", and attack settings below their defaults: {changed}" if changed else "")
        + ". Its numbers do not show the attacks' full strength."
    )


def markdown_report(payload: dict[str, Any], fprs: tuple[float, ...]) -> str:
    """``results.md``: settings, one table per metric, data sets, skipped and failed."""
    summary, attacks = payload["datasets"], payload["settings"]["attacks"]
    lines = ["# tabmia benchmark", "", f"Command: `{payload['command']}`", ""]
    for line in _intro(payload):
        lines += [line, ""]
    if summary:
        for key, title in metric_names(fprs):
            note = metric_note(key, payload)
            lines += [f"## {title}", ""] + ([note, ""] if note else [])
            lines += [_md_table(metric_table(summary, key, attacks))]
        lines += ["## Data sets and targets", "", _md_table(dataset_table(summary))]
    if payload["skipped"]:
        lines += ["## Skipped data sets", ""]
        for name, msg in payload["skipped"].items():
            lines += [
                f"**{name}**: not available, skipped. Loader message:",
                "",
                "```",
                msg.strip(),
                "```",
                "",
            ]
    if payload["failed"]:
        lines += ["## Failed cells", ""]
        lines += [f"- {cell}: {msg}" for cell, msg in payload["failed"].items()] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "data"


def _roc_frame(entry: dict[str, Any]) -> pd.DataFrame:
    s = entry["seeds"][0]
    return pd.concat(
        [
            pd.DataFrame({"attack": a, "repeat": 0, "member": c["member"], "score": c["scores"]})
            for a, c in s["cells"].items()
        ],
        ignore_index=True,
    )


def _html_report(payload: dict[str, Any], fprs: tuple[float, ...], pngs: dict[str, Path]) -> str:
    from tabmia.report.html import page_head, png_img, table_html

    summary, attacks = payload["datasets"], payload["settings"]["attacks"]
    esc = _html.escape
    parts = [page_head("tabmia benchmark"), f"<p class='note'>{esc(payload['command'])}</p>"]
    parts += [f"<p>{esc(line).replace('**', '')}</p>" for line in _intro(payload)]

    def table(df: pd.DataFrame) -> str:
        # bold markers become <b> after escaping
        return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", table_html(df))

    for key, title in metric_names(fprs):
        note = metric_note(key, payload)
        parts.append(
            f"<h2>{esc(title)}</h2>"
            + (f"<p class='note'>{esc(note)}</p>" if note else "")
            + table(metric_table(summary, key, attacks))
        )
    if summary:
        parts.append("<h2>Data sets and targets</h2>" + table_html(dataset_table(summary)))
    if pngs:
        parts.append("<h2>ROC curves (log-log, first seed)</h2><div class='figs'>")
        for name, png in pngs.items():
            parts.append(png_img(png.read_bytes(), f"ROC {name}"))
        parts.append("</div>")
    if payload["skipped"]:
        parts.append(
            "<h2>Skipped data sets</h2>"
            + "".join(
                f"<p><b>{esc(n)}</b></p><pre>{esc(m.strip())}</pre>"
                for n, m in payload["skipped"].items()
            )
        )
    if payload["failed"]:
        parts.append(
            "<h2>Failed cells</h2><ul>"
            + "".join(f"<li>{esc(c)}: {esc(m)}</li>" for c, m in payload["failed"].items())
            + "</ul>"
        )
    return "".join(parts) + "</body></html>"


def machine(load_start: tuple[float, ...]) -> dict[str, Any]:
    """Platform, cores, package versions and the load average (other jobs inflate times)."""
    import importlib.metadata
    import os
    import platform

    versions: dict[str, str | None] = {}
    for dist in ("tabmia", "numpy", "scikit-learn", "catboost", "torch"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
        "load_average_start": list(load_start),
        "load_average_end": list(os.getloadavg()),
    }


def write_outputs(
    out: Path,
    report: dict[str, Any],
    settings: dict[str, Any],
    *,
    fprs: tuple[float, ...],
    html: bool,
    command: str | None,
    wall_seconds: float,
    cells: dict[str, int],
    load_start: tuple[float, ...] = (),
) -> tuple[dict[str, Any], list[Path]]:
    """Write results.json, results.md, roc_<data set>.png (and report.html) into ``out``.

    The files are made in a temporary folder and moved in together, so an interrupted
    write leaves the previous results whole.
    """
    import tabmia
    from tabmia.report import plot_roc

    payload = {
        "tabmia_version": tabmia.__version__,
        "command": command or "tabmia.benchmark.run_benchmark(...)",
        "settings": settings,
        "wall_seconds": wall_seconds,
        "cells": cells,
        "machine": machine(load_start),
        "datasets": summarise(report, fprs),
        "skipped": report["skipped"],
        "failed": report["failed"],
    }
    if settings.get("quick"):
        payload["quick_changes"] = quick_changes(settings["attacks"])
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(dir=out, prefix=".partial-") as tmp:
        tmp_path = Path(tmp)
        pngs: dict[str, Path] = {}
        for name, entry in report["datasets"].items():
            if not entry["seeds"] or not entry["seeds"][0]["cells"]:
                continue
            png = tmp_path / f"roc_{_slug(name)}.png"
            try:
                plot_roc(_roc_frame(entry), png, title=f"{name} (seed 0)")
            except Exception as exc:  # noqa: BLE001 - a plot must not lose the numbers
                print(f"tabmia: ROC plot of {name} failed: {exc}", file=sys.stderr)
                continue
            pngs[name] = png
            payload["datasets"][name]["roc_png"] = png.name
        (tmp_path / "results.json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
        (tmp_path / "results.md").write_text(markdown_report(payload, fprs))
        if html:
            (tmp_path / "report.html").write_text(
                _html_report(payload, fprs, pngs), encoding="utf-8"
            )
        for f in sorted(tmp_path.iterdir()):
            shutil.move(str(f), out / f.name)
            written.append(out / f.name)
    return payload, written
