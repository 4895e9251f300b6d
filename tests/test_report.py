"""The HTML report is self-contained and renders in a real browser."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from tabmia.attacks import LossAttack, ScoreAttack
from tabmia.experiment import MembershipExperiment
from tabmia.report.html import riskiest_records, write_html_report


@pytest.fixture(scope="module")
def result():
    X, y = make_classification(n_samples=1200, n_features=8, flip_y=0.2, random_state=0)
    return MembershipExperiment(
        RandomForestClassifier(n_estimators=20, min_samples_leaf=3),  # few ties: attacks flag records
        {"loss": LossAttack(fpr=0.05), "entropy": ScoreAttack(statistic="entropy", fpr=0.05)},
        random_state=0,
    ).run(X, y)


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


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
    return exe


def test_report_renders_in_headless_chromium(result, tmp_path):
    exe = _chromium()
    page = write_html_report(result, tmp_path / "report.html", epsilon=2.0,
                             context={"data": "synthetic"}, command="tabmia audit --test")
    html = page.read_text()
    # the verdict opens the page and states what the attacker achieves, with intervals
    assert html.index("<h2>Verdict</h2>") < html.index("What each attack achieves")
    flagged = result.scores.query("repeat == 0 and member and flagged").groupby("attack").size()
    count = re.search(r"singles out (\d+) of (\d+) training records: TPR (\d\.\d{3}) "
                      r"\[(\d\.\d{3}), (\d\.\d{3})\]", html)
    assert count is not None and int(count[1]) in set(flagged)
    assert float(count[4]) <= int(count[1]) / int(count[2]) <= float(count[5])
    assert re.search(r"non-members: FPR \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", html)
    assert re.search(r"PPV is the share .* it is \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", html)
    assert re.search(r"<td>\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]( not resolved by \d+ "
                     r"non-members)?</td>", html)  # PPV cells carry intervals
    assert "oracle threshold" in html and "tabmia audit --test" in html
    shot = tmp_path / "shot.png"
    subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,3000",
         f"--screenshot={shot}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    import matplotlib.image as mpimg

    assert shot.stat().st_size > 50_000
    img = mpimg.imread(shot)
    assert img.shape[0] >= 3000 and img.shape[1] >= 1200
    gray = img[..., :3].mean(axis=2)
    # a rendered page: mostly white background with text, tables and two plots
    assert gray.mean() > 0.7 and gray.std() > 0.1
    assert (gray < 0.5).mean() > 0.01  # dark pixels: text and plot lines
    # the verdict box (light grey with a blue left border) is near the top of the page
    blue = (img[..., 2] > 0.7) & (img[..., 0] < 0.2) & (img[..., 1] < 0.5)
    assert blue[:800].sum() > 500
