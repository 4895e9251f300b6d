"""Tables, plots and report files of attack results, and the check that their sentences
agree with their numbers."""

from tabmia.report.consistency import Contradiction, check_statements
from tabmia.report.plots import (
    AttackRocDisplay,
    ScoreHistogramDisplay,
    plot_roc,
    plot_score_histograms,
)
from tabmia.report.tables import markdown_table, results_table

__all__ = [
    "results_table",
    "markdown_table",
    "plot_roc",
    "plot_score_histograms",
    "AttackRocDisplay",
    "ScoreHistogramDisplay",
    "check_statements",
    "Contradiction",
]
