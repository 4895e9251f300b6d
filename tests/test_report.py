"""The HTML report is self-contained and renders in a real browser."""

from __future__ import annotations

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
        RandomForestClassifier(n_estimators=20),
        {"loss": LossAttack(fpr=0.05), "entropy": ScoreAttack(score="entropy", fpr=0.05)},
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
    page = write_html_report(result, tmp_path / "report.html", epsilon=2.0)
    shot = tmp_path / "shot.png"
    subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600",
         f"--screenshot={shot}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    gray = img[..., :3].mean(axis=2)
    # a rendered page: mostly white background with text, tables and two plots
    assert gray.mean() > 0.7 and gray.std() > 0.1
    assert (gray < 0.5).mean() > 0.01  # dark pixels: text and plot lines
    shutil.copy(shot, tmp_path.parent / "tabmia_report_screenshot.png")
