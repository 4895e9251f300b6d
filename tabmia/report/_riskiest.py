"""The riskiest training records of report.html: ranked by their conformal p-value among
each attack's non-member candidates, with scores printed on the side of the threshold
they fall."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from tabmia.report._page import table_html
from tabmia.report.tables import format_scores
from tabmia.thresholds import conformal_pvalues


def riskiest_records(scores: pd.DataFrame, *, top_k: int = 20, repeat: int = 0) -> pd.DataFrame:
    """Training records ranked by the strongest evidence of membership across attacks.

    For each attack, a member's score is turned into its empirical tail probability
    among that attack's non-member candidate scores (the fraction of non-members
    scoring at least as high; small = stands out). Records are ranked by their
    smallest tail probability over attacks; ties (many records share the smallest
    possible tail, ``1 / (n_nonmembers + 1)``) by the number of attacks that flag the
    record at their own threshold (more first), then by the mean tail probability.

    Returns
    -------
    DataFrame
        ``record``, ``tail_probability`` (smallest over attacks), ``strongest_attack``
        (an attack reaching it, one that flags the record where there is one),
        ``n_flagged`` and ``flagged_by`` (the attacks whose own threshold flags the
        record, ``"none"`` if none does), ``mean_tail_probability`` and one score column
        per attack, ``top_k`` rows.
    """
    data = scores[scores["repeat"] == repeat]
    tails, flagged, score_cols = {}, {}, {}
    for name, g in data.groupby("attack", sort=False):
        neg = g.loc[~g["member"], "score"].to_numpy(float)
        mem = g[g["member"]]
        s = mem["score"].to_numpy(float)
        tail = _tail_probabilities(s, neg)
        tails[name] = pd.Series(tail, index=mem["record"].to_numpy())
        flagged[name] = pd.Series(mem["flagged"].to_numpy(bool), index=mem["record"].to_numpy())
        score_cols[name] = pd.Series(s, index=mem["record"].to_numpy())
    tail_df = pd.DataFrame(tails)
    flag_df = pd.DataFrame(flagged).reindex(tail_df.index).fillna(False).astype(bool)
    names = np.asarray(tail_df.columns, dtype=object)
    flags = flag_df.to_numpy()
    # tails differ by at least 1 / (n + 1): the nudge only breaks ties towards a flagging attack
    strongest = np.nanargmin(tail_df.to_numpy() - flags * 1e-9, axis=1)
    out = pd.DataFrame(
        {
            "record": tail_df.index,
            "tail_probability": tail_df.min(axis=1).to_numpy(),
            "strongest_attack": names[strongest],
            "n_flagged": flags.sum(axis=1),
            "flagged_by": [", ".join(names[row]) or "none" for row in flags],
            "mean_tail_probability": tail_df.mean(axis=1).to_numpy(),
        }
    )
    for name, col in score_cols.items():
        out[f"score: {name}"] = col.reindex(tail_df.index).to_numpy()
    out = out.sort_values(
        ["tail_probability", "n_flagged", "mean_tail_probability", "record"],
        ascending=[True, False, True, True],
        kind="stable",
    )
    return out.head(top_k).reset_index(drop=True)


def riskiest_records_html(
    scores: pd.DataFrame,
    thresholds: dict[str, float],
    *,
    top_k: int,
    records: pd.DataFrame | None,
    show_records: bool,
    fig_seed: str,
) -> str:
    """report.html's table of the riskiest training records (:func:`riskiest_records`):
    short headers, each attack's scores printed against its own threshold, record
    contents masked unless ``show_records`` (then a full-width row under each record)."""
    risky = riskiest_records(scores, top_k=top_k)
    # short headers and no count column (the list of flagging attacks shows it): one
    # column per attack must fit the page
    shown = risky.drop(columns="n_flagged").rename(
        columns={
            "tail_probability": "lowest tail p",
            "strongest_attack": "most unusual by",
            "flagged_by": "flagged by (own threshold)",
            "mean_tail_probability": "mean tail p",
        }
    )
    for c in shown.columns:
        if "tail p" in c:
            shown[c] = shown[c].map(lambda v: f"{v:.4g}")
    shown = shown.rename(columns=_format_scores(shown, thresholds))
    details = None
    if records is not None:
        if show_records:
            contents = records.iloc[risky["record"].to_numpy()].astype(str)
            # name=value pairs in a full-width row under each record: they wrap on any
            # page, where a column per feature (30 for breast cancer) cannot fit one
            details = (
                "record contents: "
                + contents.apply(lambda c: f"{c.name}=" + c).agg("; ".join, axis=1)
            ).to_numpy()
        else:
            shown["contents"] = "••• masked"
    return (
        f"<h2>Riskiest training records (top {len(shown)}{html.escape(fig_seed)})</h2>"
        "<p class='note'>Row "
        "index in the training data; tail p (tail probability) = share of non-member "
        "candidates an attack scores at least as high (small = the record stands out; it "
        "uses the candidates' membership, so it ranks records rather than measuring an "
        "attack). Ties are broken by the number of attacks whose own threshold flags the "
        "record, then by the mean tail probability. Each attack's column holds its score, "
        "its header the attack's own threshold. Record contents are masked unless the "
        "audit ran with --show-records. With many attacks the table scrolls sideways on a narrow "
        "screen; in print it fits the page.</p><div class='wide'>"
        + table_html(shown, css_class="fit", details=details)
        + "</div>"
    )


def _format_scores(shown: pd.DataFrame, thresholds: dict[str, float]) -> dict[str, str]:
    """Print each ``score: <attack>`` column of ``shown`` in place so that every printed
    score is on the same side of the printed threshold as the score itself
    (:func:`~tabmia.report.tables.format_scores`); returns new column names that carry
    the threshold, rounded.

    A threshold set just above a score (a float's width above 1 or 0:
    1.0000000000000002, 4.9e-324) reads as "flagged > 1" where no shown score lies
    between the rounded value and the threshold; others keep the digits that separate
    the shown scores (at least 4 significant)."""
    names = {}
    for col in [c for c in shown.columns if c.startswith("score: ")]:
        name = col[len("score: ") :]
        t = thresholds.get(name)
        t = float(t) if t is not None and np.isfinite(t) else np.nan
        values = shown[col].to_numpy(float)
        shown[col], printed = format_scores(values, t)
        if not np.isfinite(t):
            names[col] = f"{name} score"
            continue
        names[col] = f"{name} (flagged ≥ {printed})"
        digits = len(printed.lstrip("-").replace(".", "").split("e")[0].lstrip("0"))
        if digits <= 6 and (abs(t) >= 1e-12 or t == 0):
            continue  # short, and not a float's width off zero
        rounded = 0.0 if abs(t) < 1e-12 else float(f"{t:.4g}")
        if rounded < t and not ((values > rounded) & (values < t)).any():
            # flagged <=> score > rounded on every shown row: print against that rule
            shown[col] = format_scores(values, float(np.nextafter(rounded, np.inf)))[0]
            names[col] = f"{name} (flagged > {rounded:g})"
    return names


def _tail_probabilities(scores: np.ndarray, nonmember_scores: np.ndarray) -> np.ndarray:
    """Each score's conformal p-value among the non-member candidates'
    (:func:`~tabmia.thresholds.conformal_pvalues`, ties counted as at or above).

    An infinite score (a p-value of 0 turned into ``-log p``) is no error here: both sets
    are first replaced by their joint ranks, which keeps every comparison the p-value
    counts, so the value is the same."""
    if not (np.isfinite(scores).all() and np.isfinite(nonmember_scores).all()):
        ranks = np.unique(np.concatenate([scores, nonmember_scores]), return_inverse=True)[1]
        scores, nonmember_scores = ranks[: scores.size], ranks[scores.size :]
    return conformal_pvalues(scores, nonmember_scores)
