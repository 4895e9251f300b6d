"""The HTML report is self-contained and lays out in a real browser, on screen and in print."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from tabmia import metrics as M
from tabmia.attacks import LossAttack, ScoreAttack
from tabmia.experiment import ExperimentResult, MembershipExperiment
from tabmia.report.html import DP_VERDICT_COLUMN, riskiest_records, write_html_report
from tabmia.report.plots import (
    AttackRocDisplay,
    ScoreHistogramDisplay,
    histogram_scale,
    plot_roc,
    plot_score_histograms,
    visible_roc_points,
)
from tabmia.report.tables import format_scores
from tabmia.report.verdict import own_threshold_summary, verdict_lines
from tabmia.thresholds import conformal_pvalues
from tests._chromium import HeadlessChromium, find_chromium


@pytest.fixture(scope="module")
def result():
    X, y = make_classification(n_samples=1200, n_features=8, flip_y=0.2, random_state=0)
    return MembershipExperiment(
        RandomForestClassifier(n_estimators=20, min_samples_leaf=3),  # few ties: attacks flag records
        {"loss": LossAttack(fpr=0.05), "entropy": ScoreAttack(statistic="entropy", fpr=0.05)},
        random_state=0,
    ).run(X, y)


def _result(member: np.ndarray, scores: dict[str, np.ndarray], thresholds: dict[str, float],
            fpr_target: float | None = 0.01) -> ExperimentResult:
    """An ExperimentResult of one repeat from given scores and own thresholds."""
    frames, rows = [], []
    for name, s in scores.items():
        m = M.attack_metrics(member, s, threshold=thresholds[name], fprs=(0.01,),
                             gammas=(1.0,), random_state=0)
        rows.append({"repeat": 0, "seed": 7, "attack": name, **m, "fpr_target": fpr_target,
                     "fit_seconds": 0.0, "score_seconds": 0.0})
        frames.append(pd.DataFrame({"repeat": 0, "attack": name, "record": np.arange(member.size),
                                    "member": member, "score": s,
                                    "flagged": s >= thresholds[name]}))
    return ExperimentResult(scores=pd.concat(frames, ignore_index=True), metrics=pd.DataFrame(rows))


def test_riskiest_records_ranks_members_by_tail_probability(result):
    top = riskiest_records(result.scores, top_k=10)
    assert len(top) == 10 and top["tail_probability"].is_monotonic_increasing
    members = set(result.splits[0].members)
    assert set(top["record"]) <= members


def test_report_is_self_contained(result, tmp_path):
    path = write_html_report(result, tmp_path / "r.html", epsilon=2.0, context={"data": "synthetic"})
    html = path.read_text()
    assert html.count("data:image/png;base64,") == 2
    assert "src='http" not in html and "href='http" not in html  # nothing fetched
    assert "Against a differential privacy claim" in html


# ------------------------------------------------------------------ the verdict
def test_strongest_is_most_members_flagged_within_the_fpr_promise():
    # the case: "quantile" flags 179 of 500 at FPR 0, "lira" 180 at 2/500 (its
    # promise of 1% kept); the largest TPR - FPR would have called quantile strongest
    member = np.r_[np.ones(500, bool), np.zeros(500, bool)]
    lira = np.r_[np.r_[np.full(180, 5.0), np.zeros(320)], np.r_[np.full(2, 5.0), np.zeros(498)]]
    quantile = np.r_[np.r_[np.full(179, 5.0), np.zeros(321)], np.zeros(500)]
    # "loose" flags every member and 40% of non-members: far beyond its 1% promise
    loose = np.r_[np.full(500, 5.0), np.r_[np.full(200, 5.0), np.zeros(300)]]
    result = _result(member, {"quantile": quantile, "lira": lira, "loose": loose},
                     {"quantile": 1.0, "lira": 1.0, "loose": 1.0})
    summary = own_threshold_summary(result.metrics)
    assert list(summary.index) == ["lira", "quantile", "loose"]
    assert list(summary["promise"]) == ["kept", "kept", "broken"]
    lines = verdict_lines(result)
    assert lines[0].startswith("Risk: an attacker holding public records of the same population, "
                               "with lira at its own threshold (aimed at 1% FPR")
    assert re.search(r"singles out 180 of 500 training records: TPR 0\.360 \[0\.318, 0\.404\], "
                     r"while wrongly flagging 2 of 500 non-members: FPR 0\.004 \[0\.000, 0\.014\]",
                     lines[0])
    ranking = next(line for line in lines if line.startswith("“Strongest” means"))
    assert "consistent with the FPR it aimed at" in ranking
    assert ranking.index("lira 180/500") < ranking.index("quantile 179/500") < ranking.index("loose")
    assert "more than its 1% FPR allows" in ranking
    # alone, the promise-breaking attack gives no reliable measure, and says so
    alone = _result(member, {"loose": loose}, {"loose": 1.0})
    assert verdict_lines(alone)[0].startswith(
        "Cannot tell (risk not measured reliably) at 1% FPR for an attacker holding public "
        "records of the same population: every attack flags more non-members than the FPR it "
        "aimed at allows")


def test_verdict_names_a_significant_auc_when_no_threshold_beats_guessing():
    # scores that rank members higher on average, but a threshold so high it flags nobody
    rng = np.random.default_rng(1)
    member = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    s = np.r_[rng.normal(0.6, 1, 300), rng.normal(0, 1, 300)]
    result = _result(member, {"loss": s}, {"loss": 10.0})
    lo = result.metrics["auc_low"].iloc[0]
    assert lo > 0.5
    lines = verdict_lines(result)
    assert lines[0].startswith("Risk not shown at 1% FPR for an attacker holding public records "
                               "of the same population: no attack did better than chance: none "
                               "flags a single training record")
    assert re.search(r"loss's AUC is 0\.\d{3} \[0\.\d{3}, 0\.\d{3}\] \(95% bootstrap interval, "
                     r"above 0\.5\)", lines[1])
    # the same scores with a chance-level ranking: no AUC sentence
    flat = _result(member, {"loss": rng.normal(0, 1, 600)}, {"loss": 10.0})
    assert not any("AUC is" in line for line in verdict_lines(flat))


def test_verdict_names_the_shadow_recipe(result):
    from tabmia.attacks import LiRAAttack
    from tabmia.report.verdict import shadow_recipe

    assert shadow_recipe(result) is None  # score attacks train no shadow models
    with_lira = ExperimentResult(scores=result.scores, metrics=result.metrics,
                                 attacks=[LiRAAttack(), LiRAAttack(shadow_estimator=RandomForestClassifier())])
    assert shadow_recipe(with_lira) == ("RandomForestClassifier, the target's own recipe "
                                        "(an unfitted clone)")
    lines = verdict_lines(with_lira, context={"shadow recipe": "catboost (--recipe)"})
    assert any("shadow / reference models were trained with catboost (--recipe)" in line
               for line in lines)


# ------------------------------------------------------------- scores and digits
def test_printed_scores_never_contradict_flagged():
    # RMIA's case: threshold 1.0027, scores 1.0026 (not flagged) and 1.0034 (flagged) both
    # read 1.003 at four digits
    scores = np.array([1.0026, 1.0034, 0.5, 1.0027, 1.0027000000000001])
    shown, threshold = format_scores(scores, 1.0027)
    assert threshold == "1.0027" and list(shown) == ["1.0026", "1.003", "0.5", "1.003", "1.003"]
    assert np.array_equal(shown.astype(float) >= float(threshold), scores >= 1.0027)
    # a forest's 0.9 computed as 0.8999999999999999 is not flagged
    shown, threshold = format_scores([np.nextafter(0.9, 0), 0.9], 0.9)
    assert list(shown) == ["0.8999999999999999", "0.9"] and threshold == "0.9"
    # a threshold between two scores gets the digits that keep it between them
    shown, threshold = format_scores([0.99419, 0.99421], 0.9942000001)
    assert threshold == "0.9942" and list(shown) == ["0.99419", "0.9942"]
    assert list(format_scores([0.1, 0.9], np.nan)[0]) == ["0.1", "0.9"]


def test_riskiest_table_prints_scores_on_the_right_side_of_the_threshold(tmp_path):
    member = np.r_[np.ones(40, bool), np.zeros(40, bool)]
    s = np.r_[np.linspace(1.0020, 1.0034, 40), np.linspace(0.2, 1.0021, 40)]
    result = _result(member, {"rmia": s}, {"rmia": 1.0027})
    html = write_html_report(result, tmp_path / "r.html", top_k=40).read_text()
    assert "rmia (flagged ≥ 1.0027)" in html
    table = _html_table(html[html.index("Riskiest training records"):])
    col = "rmia (flagged ≥ 1.0027)"
    printed = table[col].astype(float)
    flagged_by = table["flagged by (own threshold)"] == "rmia"
    assert flagged_by.any() and (~flagged_by).any()
    assert ((printed >= 1.0027) == flagged_by).all()


def test_riskiest_table_headers_carry_rounded_thresholds(tmp_path):
    # thresholds a float's width above 1 (confidence) and above 0 (loss of an overfit
    # model): the headers read "> 1" and "> 0", and the cells agree with them
    member = np.r_[np.ones(40, bool), np.zeros(40, bool)]
    conf = np.r_[np.r_[np.full(10, 1.0), np.linspace(1.0 + 1e-15, 1.0 + 1e-14, 30)],
                 np.linspace(0.5, 1.0, 40)]
    loss = np.r_[np.r_[np.zeros(20), np.linspace(1e-300, 1e-290, 20)], -np.linspace(0, 1, 40)]
    result = _result(member, {"confidence": conf, "loss": loss},
                     {"confidence": np.nextafter(1.0, 2.0), "loss": np.nextafter(0.0, 1.0)})
    html = write_html_report(result, tmp_path / "r.html", top_k=40).read_text()
    table = _html_table(html[html.index("Riskiest training records"):])
    for name, cut in (("confidence", 1.0), ("loss", 0.0)):
        col = f"{name} (flagged &gt; {cut:g})"
        assert col in table.columns, list(table.columns)
        flagged = table["flagged by (own threshold)"].str.contains(name)
        assert flagged.any() and (~flagged).any()
        assert ((table[col].astype(float) > cut) == flagged).all()
    assert "record contents" not in table.columns and "attacks flagging it" not in table.columns


def _html_table(text: str) -> pd.DataFrame:
    """The first table in ``text`` as strings (the report's tables have no nested markup)."""
    body = text[text.index("<table"):text.index("</table>")]
    head = re.findall(r"<th>(.*?)</th>", body)
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", body)]
    return pd.DataFrame([r for r in rows if r], columns=head)


def test_histograms_show_where_heavy_tailed_scores_overlap():
    # German credit forest: LiRA's scores sit at 0.68-0.74 with a few near 130; the
    # quantile attack's run from 0 to a million. On a linear axis each is one bar.
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(500, bool), np.zeros(250, bool)]
    lira = np.r_[rng.normal(0.724, 0.015, 495), rng.uniform(129, 131, 5), rng.normal(0.70, 0.015, 250)]
    quantile = np.r_[rng.lognormal(1.2, 1.5, 500), rng.lognormal(0.0, 1.5, 250)]
    quantile[:3] = [2e5, 6e5, 1.3e6]
    result = _result(member, {"lira": lira, "quantile": quantile, "linear": np.r_[
        rng.normal(1, 1, 500), rng.normal(0, 1, 250)]}, {"lira": 130.0, "quantile": 50.0,
                                                        "linear": 2.0})
    chosen = {name: histogram_scale(g["score"].to_numpy(), g["member"].to_numpy()).name
              for name, g in result.scores.groupby("attack")}
    assert chosen == {"lira": "rank", "quantile": "asinh", "linear": "linear"}
    fig = plot_score_histograms(result.scores, thresholds={"lira": 130.0, "quantile": 50.0,
                                                           "linear": 2.0})
    for ax in fig.axes[:3]:
        bars = [np.array([p.get_height() for p in c]) for c in ax.containers]
        assert len(bars) == 2
        # both groups spread over several bins, and they share some: the overlap is visible
        assert (bars[0] > 0).sum() >= 8 and (bars[1] > 0).sum() >= 8
        assert ((bars[0] > 0) & (bars[1] > 0)).sum() >= 4
    labels = {ax.get_title(): ax.get_xlabel() for ax in fig.axes[:3]}
    assert labels["lira"].startswith("rank of the score among all candidates")
    assert labels["quantile"].startswith("attack score, asinh scale")
    assert fig.axes[1].get_xscale() == "asinh"
    assert any(t.startswith("own threshold 130") for t in fig.axes[0].get_legend_handles_labels()[1])


def test_roc_plot_draws_the_curve_to_a_thousandth_of_a_decade_not_every_record():
    rng = np.random.default_rng(0)
    n = 200_000
    member = np.r_[np.ones(n // 2, bool), np.zeros(n // 2, bool)]
    # continuous scores with ties and a block of equal ones: runs of every length
    score = np.round(rng.normal(size=n) + 0.3 * member, 5)
    score[:50] = 9.0
    fpr, tpr, _ = M.roc_curve(member, score)
    kept = visible_roc_points(fpr, tpr)
    assert kept[0] == 0 and kept[-1] == fpr.size - 1 and np.all(np.diff(kept) > 0)
    with np.errstate(divide="ignore"):
        cell = np.column_stack([np.floor(np.log10(fpr) * 1000), np.floor(np.log10(tpr) * 1000)])
    # every point of the full curve is kept, or lies in the cell of the kept points on
    # both sides of it: the drawn line leaves the curve only inside one cell
    at = np.arange(fpr.size)
    before = kept[np.searchsorted(kept, at, side="right") - 1]
    after = kept[np.searchsorted(kept, at, side="left")]
    inside = np.all(cell[before] == cell, axis=1) & np.all(cell[after] == cell, axis=1)
    assert np.all((before == at) | inside)
    # a rising curve crosses at most (decades of FPR + decades of TPR) x 1000 cells + 1
    decades = np.log10(fpr[fpr > 0].max() / fpr[fpr > 0].min()) + np.log10(
        tpr[tpr > 0].max() / tpr[tpr > 0].min())
    assert kept.size <= 2 * (1000 * decades + 3) < fpr.size / 4
    frame = pd.DataFrame({"attack": "a", "repeat": 0, "member": member, "score": score})
    line = plot_roc(frame).axes[0].lines[0]
    assert np.array_equal(line.get_xdata(), fpr[kept])
    assert f"AUC {M.auc(member, score):.3f}" in line.get_label()


def test_riskiest_records_tail_is_the_conformal_pvalue_even_with_infinite_scores():
    rng = np.random.default_rng(3)
    member = np.r_[np.ones(60, bool), np.zeros(40, bool)]
    score = np.round(rng.normal(size=100) + member, 1)  # ties between the two groups
    score[[0, 1, 70]] = np.inf  # -log p of a p-value of 0, a member and a non-member
    score[[2, 71]] = -np.inf
    frame = pd.DataFrame({"repeat": 0, "attack": "a", "record": np.arange(100),
                          "member": member, "score": score, "flagged": score >= 1.0})
    top = riskiest_records(frame, top_k=60).set_index("record")["tail_probability"]
    mem, neg = score[:60], score[60:]
    # (1 + #{non-members scoring at least as high}) / (n + 1), counted by comparison
    expected = (1 + (neg[None, :] >= mem[:, None]).sum(axis=1)) / (neg.size + 1)
    assert expected[2] == 1.0 and expected[0] == 2 / 41  # -inf: all above; +inf: one ties
    assert np.allclose(top.sort_index().to_numpy(), expected)
    # the finite scores' values are thresholds.conformal_pvalues' itself
    ok = np.isfinite(mem)
    assert np.array_equal(top.sort_index().to_numpy()[ok], conformal_pvalues(
        mem[ok], np.r_[neg[np.isfinite(neg)], np.inf, -np.inf].clip(-1e300, 1e300)))


def test_displays_draw_on_the_callers_axes_and_the_functions_keep_their_figures(result):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    roc = AttackRocDisplay.from_result(result, ax=ax, title="t")
    assert roc.ax_ is ax and roc.figure_ is fig
    assert list(roc.line_) == ["loss", "entropy"]
    assert set(roc.roc_auc) == {"loss", "entropy"} and roc.chance_line_ in ax.lines
    saved = plot_roc(result.scores)
    for line, name in zip(saved.axes[0].lines, roc.line_):
        assert np.array_equal(line.get_xdata(), roc.line_[name].get_xdata())
        assert line.get_label() == roc.line_[name].get_label()
    assert roc.plot(ax=plt.subplots()[1]).ax_ is not ax  # plot again elsewhere: same display
    fig2, axes = plt.subplots(1, 2)
    hist = ScoreHistogramDisplay.from_result(result, ax=axes)
    assert hist.figure_ is fig2 and list(hist.ax_) == list(axes)
    assert set(hist.scale_) == {"loss", "entropy"}
    with pytest.raises(ValueError, match="ax has 1 axes for 2 attacks"):
        ScoreHistogramDisplay.from_result(result, ax=[ax])
    own = plot_score_histograms(result.scores)
    assert [a.get_title() for a in own.axes[:2]] == ["loss", "entropy"]
    plt.close("all")


# --------------------------------------------------------------- in a browser
def _browser(tmp_path) -> HeadlessChromium:
    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
    return HeadlessChromium(exe, tmp_path / "profile")


# CSS pixels of an A4 page's content at the report's 12 mm margins: (210 - 24) mm at 96 dpi
_A4_CONTENT_PX = 703
_LAYOUT = """(() => {
  const box = e => { const r = e.getBoundingClientRect();
    return {left: r.left + scrollX, right: r.right + scrollX, top: r.top + scrollY,
            bottom: r.bottom + scrollY}; };
  const th = [...document.querySelectorAll('th')].find(h => h.textContent === COLUMN);
  const td = document.querySelector('td.yes, td.no, td.unresolved');
  return {width: document.documentElement.clientWidth,
          scrollWidth: document.documentElement.scrollWidth,
          print: matchMedia('print').matches,
          tables: [...document.querySelectorAll('table')].map(t => box(t).right),
          th: th ? box(th) : null, td: td ? box(td) : null, cls: td ? td.className : null,
          bg: td ? getComputedStyle(td).backgroundColor : null};
})()"""


def _report_page(result, tmp_path):
    X = pd.DataFrame(np.round(np.random.default_rng(0).normal(size=(1200, 8)), 3),
                     columns=[f"feature_{i}" for i in range(8)])
    return write_html_report(result, tmp_path / "report.html", epsilon=2.0,
                             context={"data": "synthetic"}, command="tabmia audit --test",
                             records=X, show_records=True)


def test_report_renders_in_headless_chromium(result, tmp_path):
    browser = _browser(tmp_path)
    page = _report_page(result, tmp_path)
    html = page.read_text()
    # the verdict opens the page with the risk statement, with intervals
    assert html.index("<h2>Verdict</h2>") < html.index("What each attack achieves")
    flagged = result.scores.query("repeat == 0 and member and flagged").groupby("attack").size()
    risk = re.search(r"<p class='risk'>Risk: an attacker holding (\d+) public records.*? singles "
                     r"out (\d+) of (\d+) training records: TPR (\d\.\d{3}) \[(\d\.\d{3}), "
                     r"(\d\.\d{3})\], while wrongly flagging \d+ of \d+ non-members: FPR \d\.\d{3} "
                     r"\[\d\.\d{3}, \d\.\d{3}\]", html)
    assert risk is not None and int(risk[1]) == len(result.splits[0].public)
    assert int(risk[2]) in set(flagged)
    assert float(risk[5]) <= int(risk[2]) / int(risk[3]) <= float(risk[6])
    assert re.search(r"PPV is the share .* it is \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", html)
    assert re.search(r"<td>\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]( not resolved by \d+ "
                     r"non-members)?</td>", html)  # PPV cells carry intervals
    assert "oracle threshold" in html and "tabmia audit --test" in html
    try:
        session = browser.open(page.as_uri(), width=1200)
        png = browser.screenshot(session)
    finally:
        browser.close()
    import matplotlib.image as mpimg

    img = mpimg.imread(io.BytesIO(png), format="png")
    assert img.shape[0] >= 2000 and img.shape[1] == 1200
    gray = img[..., :3].mean(axis=2)
    # a rendered page: mostly white background with text, tables and two plots
    assert gray.mean() > 0.7 and gray.std() > 0.1
    assert (gray < 0.5).mean() > 0.01  # dark pixels: text and plot lines
    # the verdict box (light grey, its left border and state badge coloured by the state:
    # red where risk is shown) is near the top of the page
    assert "<p class='state shown'>risk shown</p>" in html
    red = (img[..., 0] > 0.7) & (img[..., 1] < 0.25) & (img[..., 2] < 0.3)
    assert red[:800].sum() > 500


def test_dp_table_fits_screen_and_print(result, tmp_path):
    browser = _browser(tmp_path)
    page = _report_page(result, tmp_path)
    layout = _LAYOUT.replace("COLUMN", repr(DP_VERDICT_COLUMN))
    try:
        for width, media in ((1200, "screen"), (800, "screen"), (_A4_CONTENT_PX, "print")):
            session = browser.open(page.as_uri(), width=width, media=media)
            got = browser.evaluate(session, layout)
            assert got["print"] == (media == "print")
            # no sideways scroll: the page and every table fit, but on a narrow screen the
            # riskiest records (a score column per attack), which scroll in their own box
            assert got["scrollWidth"] <= got["width"], (width, media, got)
            assert len(got["tables"]) == 5, got["tables"]
            fits = got["tables"] if media == "print" or width > 1000 else got["tables"][:-1]
            assert max(fits) <= got["width"], (width, media, got["tables"])
            # the decisive column is the DP table's second and lies inside the page
            assert got["th"] is not None and got["th"]["right"] <= got["width"]
            assert got["td"]["right"] <= got["width"] and got["cls"] in ("yes", "no", "unresolved")
            if media == "print":
                shot = browser.screenshot(session)
                pdf = browser.print_pdf(session)
        assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 2
    finally:
        browser.close()
    # the printed layout's decisive cell shows, coloured by its verdict
    import matplotlib.image as mpimg

    img = mpimg.imread(io.BytesIO(shot), format="png")[..., :3]
    td = got["td"]
    cell = img[int(td["top"]) + 2:int(td["bottom"]) - 2, int(td["left"]) + 2:int(td["right"]) - 2]
    colour = {"yes": (0xDA, 0xFB, 0xE1), "no": (0xFF, 0xEB, 0xE9),
              "unresolved": (0xFF, 0xF8, 0xC5)}[got["cls"]]
    background = np.isclose(cell * 255, colour, atol=3).all(axis=2)
    assert background.mean() > 0.5


# ------------------------------------------------------------------ benchmark tables
def test_benchmark_tables_say_threshold_chance_level_and_quick_settings(tmp_path):
    from tabmia.benchmark import run_benchmark

    out = tmp_path / "bench"
    run = run_benchmark(["breast_cancer"], "logistic_regression", ["loss", "lira"], 1, (0.05,),
                        out, quick=True, prior=1.0, progress=False, html=True)
    md = (out / "results.md").read_text()
    sections = dict(s.split("\n", 1) for s in md.split("\n## ")[1:])
    assert sections["TPR at 0.05 FPR"].lstrip().startswith("Oracle threshold:")
    # --prior 1: as many members as non-members, so guessing reaches precision 0.5
    assert "reaches the members' share of the candidates: breast_cancer 0.500" in \
        sections["Precision at 0.05 FPR"]
    assert "| precision chance level |" in sections["Data sets and targets"]
    # what each attack flags at its own threshold, from the cell's stored scores and threshold
    own = run.results["datasets"]["breast_cancer"]["attacks"]["loss"]
    cell = json.loads(next((out / "cells").glob("*.json")).read_text())
    assert "threshold" in cell and 0.0 <= own["fpr_own"]["mean"] <= 1.0
    assert "aimed at FPR 0.05" in sections["TPR at each attack's own threshold"]
    assert "**" not in sections["FPR at each attack's own threshold"].split("|", 1)[1]
    # the quick run names what it changed
    assert "**Quick smoke run** (`--quick`): 1 seed, at most 500 records" in md
    assert "lira: n_shadow=4" in md and run.results["quick_changes"]["lira"] == {"n_shadow": "4"}
    html = (out / "report.html").read_text()
    assert "Oracle threshold:" in html and "Quick smoke run" in html


def test_cli_header_and_verdict_name_the_shadow_recipe(tmp_path, capsys):
    from tabmia.cli import main

    out = tmp_path / "rep"
    assert main(["audit", "--attacks", "loss,lira", "--n-shadow", "4", "--out", str(out),
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert max(len(line) for line in printed.splitlines()) <= 100  # a terminal's width
    stdout = " ".join(printed.split())  # the lines wrapped at 100 columns, joined
    header = stdout.split(" Verdict:")[0]
    assert "shadow recipe: the target's own recipe (random_forest)" in header
    assert "shadow / reference models were trained with the target's own recipe " \
           "(random_forest)." in stdout
    payload = json.loads((out / "results.json").read_text())
    assert payload["context"]["shadow recipe"] == "the target's own recipe (random_forest)"
    assert payload["verdict"][0].startswith("Risk")


def test_riskiest_records_with_six_attacks_fit_a_wide_screen(tmp_path):
    """The riskiest-records table of a six-attack audit (CLI names, masked contents)
    fits the page on a 1200-pixel screen and in print, without its sideways scroll."""
    browser = _browser(tmp_path)
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    names = ["loss", "entropy", "modified_entropy", "confidence", "lira", "rmia"]
    scores = {n: np.r_[rng.normal(0.5, 1, 300), rng.normal(0, 1, 300)] * (i + 1)
              for i, n in enumerate(names)}
    thresholds = {n: float(np.quantile(s[300:], 0.95)) + 1e-7 for n, s in scores.items()}
    records = pd.DataFrame(rng.normal(size=(600, 8)), columns=[f"f{i}" for i in range(8)])
    page = write_html_report(_result(member, scores, thresholds), tmp_path / "r.html",
                             records=records)
    script = """(() => ({width: document.body.getBoundingClientRect().right,
        tables: [...document.querySelectorAll('table')].map(t => t.getBoundingClientRect().right)}))()"""
    try:
        for width, media in ((1200, "screen"), (_A4_CONTENT_PX, "print")):
            got = browser.evaluate(browser.open(page.as_uri(), width=width, media=media), script)
            assert got["tables"][-1] <= got["width"] + 1, (width, media, got)
    finally:
        browser.close()
