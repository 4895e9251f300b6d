"""The pieces every report page is made of: the document head with its style sheet, a
table of strings and an embedded PNG (``tabmia audit``'s, ``tabmia benchmark``'s and
``tabmia whatif``'s ``report.html``; public through :mod:`tabmia.report.html`)."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import pandas as pd

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;
color:#1d232a;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin:1.2em 0 .3em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}th,td{border:1px solid #d0d7de;padding:3px 6px;
text-align:right}th{background:#f3f5f7;font-weight:600}td:first-child,th:first-child{text-align:left}
.note{color:#57606a;font-size:.9em}.figs{display:flex;flex-wrap:wrap;gap:1em}.figs img{max-width:100%;box-sizing:border-box;
border:1px solid #eee}.masked{color:#8c959f;letter-spacing:.1em}.key{display:inline-block;
background:#f3f5f7;border-radius:4px;padding:2px 8px;margin:2px 6px 2px 0}
.verdict{background:#f6f8fa;border-left:4px solid #0969da;padding:.2em 1em .6em;margin-top:1em}
.verdict h2{border:none;margin-top:.6em}.verdict li{margin:.3em 0}.risk{font-size:1.08em;font-weight:600}
.gate{border-left-color:#8250df}
.state{display:inline-block;font-weight:700;text-transform:uppercase;letter-spacing:.04em;
padding:2px 10px;border-radius:4px;margin:.6em 0 .2em;color:#fff;background:#1a7f37}
.state.shown{background:#cf222e}.state.cannot{background:#9a6700}
.verdict.cannot{border-left-color:#9a6700}.verdict.shown{border-left-color:#cf222e}
.finding{background:#fff8c5;border:1px solid #d4a72c;border-radius:4px;padding:.4em .8em;
margin:.5em 0}.finding.blocks{background:#ffebe9;border-color:#cf222e}
.finding.accepted{background:#f6f8fa;border-color:#8c959f}.finding b{font-family:monospace}
.fit th{font-size:.95em}
td.yes{background:#dafbe1;font-weight:600}td.no{background:#ffebe9;font-weight:600}
td.unresolved{background:#fff8c5;font-weight:600}
td.detail{text-align:left;color:#57606a;font-size:.9em;border-top:none}
.wide{overflow-x:auto}footer{margin-top:2em}code{font-size:.85em;word-break:break-all}
@page{size:A4;margin:12mm}
@media print{body{max-width:none;margin:0;padding:0;font-size:10pt}.wide{overflow:visible}
.wide th,.wide td{overflow-wrap:anywhere}.wide td:first-child{overflow-wrap:normal}
table{font-size:7pt;width:100%}th,td{padding:2px 3px}
.figs{display:block}.figs img{max-width:100%;break-inside:avoid}h2,h3{break-after:avoid}
tr,.verdict{break-inside:avoid}}
"""


def page_head(title: str) -> str:
    """The start of a report page: its head with the style sheet, and ``title`` as its
    first heading."""
    title = html.escape(title)
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}"
        f"</title><style>{_CSS}</style></head><body><h1>{title}</h1>"
    )


def png_img(png: bytes, alt: str) -> str:
    """An ``<img>`` holding the PNG image ``png`` (base64, so the page stands alone)."""
    data = base64.b64encode(png).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>"


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def table_html(
    df: pd.DataFrame,
    *,
    css_class: str = "",
    cell_class: dict[str, Any] | None = None,
    details: Any = None,
) -> str:
    """A table of strings; ``cell_class`` maps a column to a function giving each of its
    cells a CSS class (e.g. the DP verdict's colour); ``details`` (one string per row)
    follow their row as a full-width row, so long text widens no column."""
    cell_class = cell_class or {}
    details = [None] * len(df) if details is None else list(details)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for row, detail in zip(df.itertuples(index=False), details):
        cells = []
        for col, v in zip(df.columns, row):
            cls = cell_class[col](v) if col in cell_class else ""
            cells.append(f"<td class='{cls}'>" if cls else "<td>")
            cells.append(f"{html.escape(str(v))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
        if detail is not None:
            rows.append(
                f"<tr><td class='detail' colspan='{len(df.columns)}'>"
                f"{html.escape(str(detail))}</td></tr>"
            )
    table_class = f" class='{css_class}'" if css_class else ""
    return (
        f"<table{table_class}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
