"""
Audit a model trained elsewhere, given only its probabilities
=============================================================

The model runs in another team's service; they sent the probabilities it gives to its
training records and to population records it never saw. tabmia attacks it through
those numbers alone (`PrecomputedProbabilities`): score attacks and the quantile
attack work; attacks that must query new or perturbed records (Merlin) cannot.

The same audit from the command line::

    tabmia audit --train train.csv --population population.csv --label target \\
        --train-proba train_proba.csv --population-proba population_proba.csv

Run: ``python examples/audit_precomputed_probabilities.py`` (seconds)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from tabmia import PrecomputedProbabilities, TargetModel
from tabmia.attacks import LossAttack, ScoreAttack
from tabmia.audit import audit_model
from tabmia.report import markdown_table, results_table
from tabmia.report.plots import plot_roc


def the_other_teams_numbers():
    """Stand-in for the files another team sends: records and their model's probabilities."""
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    order = np.random.RandomState(1).permutation(len(X))
    train, population = order[:300], order[300:]
    model = RandomForestClassifier(n_estimators=50, random_state=0).fit(X.iloc[train], y.iloc[train])
    return (X.iloc[train], y.iloc[train], model.predict_proba(X.iloc[train]),
            X.iloc[population], y.iloc[population], model.predict_proba(X.iloc[population]))


# %%
# The audit reads the probabilities by record content: ``PrecomputedProbabilities`` holds
# the records and the numbers, and answers a query for any record it holds.


def main() -> None:
    X_tr, y_tr, p_tr, X_pop, y_pop, p_pop = the_other_teams_numbers()
    target = TargetModel(
        PrecomputedProbabilities(pd.concat([X_tr, X_pop]), np.vstack([p_tr, p_pop])),
        classes=[0, 1],
    )
    attacks = {"loss": LossAttack(fpr=0.05), "entropy": ScoreAttack(statistic="entropy", fpr=0.05),
               "hinge": ScoreAttack(statistic="hinge", fpr=0.05)}
    result = audit_model(target, X_tr, y_tr, X_pop, y_pop, attacks, fprs=(0.05, 0.01),
                         random_state=0)
    print(markdown_table(results_table(result.metrics, fprs=(0.05, 0.01))))
    # each attack counts its queries on its own copy of the target
    queries = target.n_queries_ + sum(a.target_.n_queries_ for a in result.attacks)
    print(f"queries answered from the precomputed table: {queries}")
    plot_roc(result.scores, title="Precomputed probabilities: ROC of each attack")


if __name__ == "__main__":
    main()
