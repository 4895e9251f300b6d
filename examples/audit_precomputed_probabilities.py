"""
Audit a model trained elsewhere, given only its probabilities
=============================================================

The model runs in another team's service; they sent the probabilities it gives to its
training records and to population records it never saw. tabmia attacks it through
those numbers alone (:class:`~tabmia.PrecomputedProbabilities`): score attacks and the
quantile attack work; attacks that must query new or perturbed records (Merlin) cannot.

The same audit from the command line::

    tabmia audit --train train.csv --population population.csv --label target \\
        --train-proba train_proba.csv --population-proba population_proba.csv

Run: ``python examples/audit_precomputed_probabilities.py`` (seconds)
"""

# %%
# The other team's numbers
# ------------------------
# A stand-in for the files another team sends: the records, and their model's
# probabilities for them. Their model is a forest of 50 extremely randomized trees
# (:class:`~sklearn.ensemble.ExtraTreesClassifier`) trained on 150 records of the
# breast-cancer data; the other 419 records are the population it never saw.

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import ExtraTreesClassifier

from tabmia import PrecomputedProbabilities, TargetModel
from tabmia.attacks import LossAttack, QuantileAttack, ScoreAttack
from tabmia.audit import audit_model
from tabmia.report import plot_roc, results_table

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
order = np.random.RandomState(1).permutation(len(X))
train, population = order[:150], order[150:]
their_model = ExtraTreesClassifier(n_estimators=50, random_state=0)
their_model.fit(X.iloc[train], y.iloc[train])
X_train, y_train = X.iloc[train], y.iloc[train]
X_pop, y_pop = X.iloc[population], y.iloc[population]
proba_train = their_model.predict_proba(X_train)
proba_pop = their_model.predict_proba(X_pop)

# %%
# The audit
# ---------
# :class:`~tabmia.PrecomputedProbabilities` holds the records and the numbers, and
# answers a query for any record it holds (looked up by content); wrapped in a
# :class:`~tabmia.TargetModel`, it is attacked like a fitted model. Half of the
# population goes to the attacker as public records, half are non-member candidates;
# every threshold promises 5% FPR.

records = pd.concat([X_train, X_pop])
probabilities = np.vstack([proba_train, proba_pop])
target = TargetModel(PrecomputedProbabilities(records, probabilities), classes=[0, 1])
attacks = {
    "loss": LossAttack(fpr=0.05),
    "entropy": ScoreAttack(statistic="entropy", fpr=0.05),
    "hinge": ScoreAttack(statistic="hinge", fpr=0.05),
    "quantile regression": QuantileAttack(fpr=0.05),
}
result = audit_model(target, X_train, y_train, X_pop, y_pop, attacks, fprs=(0.05, 0.01),
                     random_state=0)
# each attack counts its queries on its own copy of the target
queries = target.n_queries_ + sum(a.target_.n_queries_ for a in result.attacks)
print(f"Queries answered from the precomputed table: {queries}")

results_table(result.metrics, fprs=(0.01,), gammas=(10.0,)).set_index("attack")

# %%
# The score attacks rank training records above non-members (their AUC) but flag none
# at their own thresholds: the trees fit every training record exactly, so members get
# probability 1, and so do many non-members; no threshold between tied scores keeps 5%
# FPR. The quantile attack compares each record's score with what a regressor expects
# for a non-member like it, and flags about half of the training records at its promised
# FPR: the service's model leaks through its probabilities alone.

fig = plot_roc(result.scores, title="Precomputed probabilities: ROC of each attack")
