"""The what-if run as one self-contained HTML page, made of the audit report's pieces
(:func:`tabmia.report.html.page_head`, :func:`~tabmia.report.html.table_html`,
:func:`~tabmia.report.html.png_img`): the findings in words, the frontier figure, the
table keyed by the figure's numbers, the FPRs delivered and the cost."""

from __future__ import annotations

import html
import io
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["html_report"]


def _num(x: Any, digits: int = 3) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return ""
    return "" if not np.isfinite(v) else f"{v:.{digits}f}"


def _interval(r: pd.Series, key: str) -> str:
    value = _num(r[key])
    return f"{value} [{_num(r[f'{key}_low'])}, {_num(r[f'{key}_high'])}]" if value else ""


def _frontier_rows(t: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The frontier table as strings, numbered as the figure's points are."""
    persons = bool((t["n_member_persons"] > 0).any())
    rows = []
    for i, r in t.reset_index(drop=True).iterrows():
        stated = _interval(r, "risk") + (
            f" ({r['risk_variant']}, FPR {_num(r['risk_fpr'])})"
            if r["risk_variant"] != r["variant"]
            else ""
        )
        row = {
            "#": str(int(i) + 1),
            "variant": str(r["variant"]),
            "kind": str(r["kind"]),
            "strongest attack": str(r["attack"]),
            "TPR, records": _interval(r, "tpr"),
            "FPR delivered (promised)": f"{_num(r['fpr'])} ({_num(r['fpr_target'])})",
            "risk stated": stated,
        }
        if persons:
            row["TPR, persons"] = _interval(r, "person_tpr")
            row["FPR, persons"] = _num(r["person_fpr"])
        row[metric] = _num(r["utility"])
        row[f"Δ{metric}"] = (
            f"{r['delta_utility']:+.3f} [{r['delta_utility_low']:+.3f}, "
            f"{r['delta_utility_high']:+.3f}]"
            if np.isfinite(float(r["delta_utility"]))
            else ""
        )
        row["gate"] = str(r["gate"])
        row["front"] = "yes" if r["on_front"] else ""
        rows.append(row)
    return pd.DataFrame(rows)


def _gate_class(value: Any) -> str:
    return {"below": "yes", "above": "no", "unresolved": "unresolved"}.get(str(value), "")


def html_report(result: Any, *, command: str | None = None) -> str:
    """The what-if run as one HTML page (figures embedded), like ``tabmia audit``'s.

    Parameters
    ----------
    result : WhatIfResult
    command : str, default=None
        The command line that made it, shown under the title.

    Returns
    -------
    str
    """
    from tabmia.report.html import page_head, png_img, table_html
    from tabmia.whatif.summary import summary_text

    esc = html.escape
    t = result.frontier()
    metric = result.settings["utility_metric"]
    parts = [page_head("tabmia whatif: candidate fixes re-audited")]
    if command:
        parts.append(f"<p class='note'><code>{esc(command)}</code></p>")
    lines = summary_text(result, t).split("\n")
    said = [ln for ln in lines if not ln.startswith("Note (")]
    notes = [ln for ln in lines if ln.startswith("Note (")]
    parts.append("<div class='verdict'><h2>What the run shows</h2><ul>")
    parts += [f"<li>{esc(line)}</li>" for line in said]
    parts.append("</ul></div>")
    buf = io.BytesIO()
    fig = result.plot()
    fig.savefig(buf, format="png", dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    parts += [
        "<h2>Privacy-utility frontier</h2>",
        "<div class='figs'>"
        + png_img(buf.getvalue(), "privacy-utility frontier, one numbered point per variant")
        + "</div>",
        "<p class='note'>Numbers as in the table below. Stated risk: the largest TPR over "
        "the attacks at their own thresholds; the original's is at least any of its "
        "hardenings' (an attacker can harden its outputs himself).</p>",
        "<h2>Variants</h2>",
        "<div class='wide'>"
        + table_html(
            _frontier_rows(t, metric),
            cell_class={"gate": _gate_class},
            details=["; ".join(n) if n else None for n in t["notes"]],
        )
        + "</div>",
    ]
    fpr = result.delivered_fpr()
    shown = pd.DataFrame(
        {
            "variant": fpr["variant"],
            "attack": fpr["attack"],
            "promised": [_num(v, 4) for v in fpr["fpr_target"]],
            "delivered [CI]": [
                f"{_num(a, 4)} [{_num(b, 4)}, {_num(c, 4)}]"
                for a, b, c in zip(fpr["fpr"], fpr["fpr_low"], fpr["fpr_high"])
            ],
            "flagged / non-member records": [
                f"{a} / {b}" for a, b in zip(fpr["fp"], fpr["n_nonmembers"])
            ],
        }
    )
    parts += [
        "<h2>FPR delivered on the non-member candidates</h2>",
        table_html(shown),
        "<h2>Cost</h2>",
        table_html(
            pd.DataFrame(
                {
                    "variant": t["variant"],
                    "seconds": [f"{s:.1f}" for s in t["seconds"]],
                    "shadow models trained / used": [
                        f"{a} / {b}" for a, b in zip(t["models_trained"], t["models_used"])
                    ],
                }
            )
        ),
    ]
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)
