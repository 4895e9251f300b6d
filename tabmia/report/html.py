"""One self-contained HTML audit report (plots embedded as base64 PNG)."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import dp_ppv_bound, dp_tradeoff
from tabmia.report.plots import plot_roc, plot_score_histograms
from tabmia.report.tables import results_table

__all__ = ["riskiest_records", "write_html_report"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;
color:#1d232a;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}th,td{border:1px solid #d0d7de;padding:4px 8px;
text-align:right}th{background:#f3f5f7}td:first-child,th:first-child{text-align:left}
.note{color:#57606a;font-size:.9em}.figs{display:flex;flex-wrap:wrap;gap:1em}.figs img{max-width:100%;
border:1px solid #eee}.masked{color:#8c959f;letter-spacing:.1em}.key{display:inline-block;
background:#f3f5f7;border-radius:4px;padding:2px 8px;margin:2px 6px 2px 0}
"""


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _table_html(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def riskiest_records(scores: pd.DataFrame, *, top_k: int = 20, repeat: int = 0) -> pd.DataFrame:
    """Training records ranked by the strongest evidence of membership across attacks.

    For each attack, a member's score is turned into its empirical tail probability
    among that attack's non-member candidate scores (the fraction of non-members
    scoring at least as high; small = stands out). Records are ranked by their
    smallest tail probability over attacks.

    Returns
    -------
    DataFrame
        ``record``, ``tail_probability``, ``strongest_attack``, ``flagged_by`` and one
        score column per attack, ``top_k`` rows.
    """
    data = scores[scores["repeat"] == repeat]
    tails, flagged, score_cols = {}, {}, {}
    for name, g in data.groupby("attack", sort=False):
        neg = np.sort(g.loc[~g["member"], "score"].to_numpy(float))
        mem = g[g["member"]]
        s = mem["score"].to_numpy(float)
        tail = (neg.size - np.searchsorted(neg, s, side="left") + 1) / (neg.size + 1)
        tails[name] = pd.Series(tail, index=mem["record"].to_numpy())
        flagged[name] = pd.Series(mem["flagged"].to_numpy(bool), index=mem["record"].to_numpy())
        score_cols[name] = pd.Series(s, index=mem["record"].to_numpy())
    tail_df = pd.DataFrame(tails)
    flag_df = pd.DataFrame(flagged).fillna(False).astype(bool)
    out = pd.DataFrame({
        "record": tail_df.index,
        "tail_probability": tail_df.min(axis=1).to_numpy(),
        "strongest_attack": tail_df.idxmin(axis=1).to_numpy(),
        "flagged_by": [", ".join(c for c in flag_df.columns if flag_df.loc[i, c]) or "-"
                       for i in tail_df.index],
    })
    for name, col in score_cols.items():
        out[f"score: {name}"] = col.reindex(tail_df.index).to_numpy()
    return out.sort_values("tail_probability", kind="stable").head(top_k).reset_index(drop=True)


def _dp_section(metrics: pd.DataFrame, epsilon: float, delta: float, gammas: tuple[float, ...]) -> str:
    rows = []
    for _, r in metrics.iterrows():
        alpha = float(r["fpr"]) if pd.notna(r.get("fpr")) else None
        if alpha is None:
            continue
        tpr_bound = 1.0 - float(dp_tradeoff(alpha, epsilon, delta))
        row = {"attack": r["attack"], "FPR at threshold": f"{alpha:.4f}",
               "TPR measured": f"{r['tpr']:.4f}", f"TPR bound (ε={epsilon:g})": f"{tpr_bound:.4f}"}
        for g in gammas:
            key = f"ppv@gamma={g:g}"
            if key in r and pd.notna(r[key]):
                row[f"PPV γ={g:g} measured"] = f"{r[key]:.3f}"
                row[f"PPV γ={g:g} bound"] = f"{dp_ppv_bound(max(alpha, 1e-12), epsilon, delta, g):.3f}"
        row["ε lower bound (95%)"] = f"{r['epsilon_lower']:.2f}"
        row["consistent with ε?"] = "yes" if r["epsilon_lower"] <= epsilon else "NO"
        rows.append(row)
    if not rows:
        return ""
    return (
        f"<h2>Against a differential privacy claim (ε = {epsilon:g}, δ = {delta:g})</h2>"
        "<p class='note'>Bounds of Jayaraman et al. (PETS 2021), Thm 4.1/4.2, at each attack's own "
        "FPR. An empirical ε lower bound above the claimed ε means the claim cannot hold.</p>"
        + _table_html(pd.DataFrame(rows))
    )


def write_html_report(
    result: Any,
    path: str | Path,
    *,
    title: str = "Membership inference audit",
    context: dict[str, Any] | None = None,
    epsilon: float | None = None,
    delta: float = 1e-5,
    fprs: tuple[float, ...] = (0.01, 0.001),
    gammas: tuple[float, ...] = (1.0, 10.0, 100.0),
    top_k: int = 20,
    records: pd.DataFrame | None = None,
    show_records: bool = False,
) -> Path:
    """Write the audit as one HTML file with embedded plots.

    Parameters
    ----------
    result : ExperimentResult
        From :class:`tabmia.experiment.MembershipExperiment` or :func:`tabmia.audit.audit_model`.
    path : str or Path
        Output file.
    context : dict, default=None
        Key facts shown at the top (data, model, sizes).
    epsilon, delta : float
        A DP guarantee to compare the measured attacks against.
    top_k : int, default=20
        Number of riskiest training records listed.
    records : DataFrame, default=None
        The training records by row position; their contents are shown only with
        ``show_records=True`` (masked otherwise).
    """
    path = Path(path)
    metrics = result.metrics
    first = metrics[metrics["repeat"] == 0]
    table = results_table(metrics, fprs=fprs, gammas=gammas)
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    if context:
        parts.append("<p>" + "".join(
            f"<span class='key'><b>{html.escape(str(k))}</b>: {html.escape(str(v))}</span>"
            for k, v in context.items()) + "</p>")
    best = first.sort_values("auc", ascending=False).iloc[0]
    tpr_key = f"tpr@{fprs[0]:g}"
    headline = f"Strongest attack by AUC: <b>{html.escape(str(best['attack']))}</b> (AUC {best['auc']:.3f}"
    if best.get(tpr_key) is not None and pd.notna(best.get(tpr_key)):
        n_hit = int(round(best[tpr_key] * best["n_members"]))
        headline += (f"; at {fprs[0]:.1%} FPR it singles out {n_hit} of {int(best['n_members'])} "
                     f"training records")
    parts.append(f"<p>{headline}).</p>")
    parts.append("<h2>Attacks</h2>" + _table_html(table) + (
        "<p class='note'>One seed: value [95% interval] (bootstrap for AUC, Clopper-Pearson for rates); "
        "several seeds: mean ± std. TPR at an FPR below 1/(number of non-members) is n/a. "
        "PPV, advantage and ε are at each attack's own threshold, chosen on the attacker's "
        "public data.</p>"))
    parts.append("<h2>ROC curves (log-log) and score distributions</h2><div class='figs'>")
    parts.append(f"<img alt='ROC curves' src='data:image/png;base64,{_png(plot_roc(result.scores))}'>")
    parts.append("<img alt='Score histograms' src='data:image/png;base64,"
                 f"{_png(plot_score_histograms(result.scores))}'></div>")
    if epsilon is not None:
        parts.append(_dp_section(first, epsilon, delta, gammas))
    risky = riskiest_records(result.scores, top_k=top_k)
    shown = risky.copy()
    for c in shown.columns:
        if c.startswith("score: ") or c == "tail_probability":
            shown[c] = shown[c].map(lambda v: f"{v:.4g}")
    if records is not None:
        if show_records:
            contents = records.iloc[risky["record"].to_numpy()].reset_index(drop=True)
            shown = pd.concat([shown, contents.astype(str)], axis=1)
        else:
            shown["record contents"] = "••• masked (use --show-records)"
    parts.append(
        f"<h2>Riskiest training records (top {len(shown)})</h2><p class='note'>Row index in "
        "the training data; tail probability = share of non-member candidates an attack scores "
        "at least as high (small = the record stands out).</p>" + _table_html(shown)
    )
    parts.append("</body></html>")
    path.write_text("".join(parts), encoding="utf-8")
    return path
