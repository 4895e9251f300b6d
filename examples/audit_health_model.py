"""
Audit a health model with LiRA and the quantile-regression attack
=================================================================

A hospital trained a gradient-boosting model on breast-cancer diagnoses (the data ships
with scikit-learn; pass ``--hepatitis`` for the UCI Hepatitis set from the data home).
Two strong attacks ask which patients' records were in its training set: LiRA with
shadow models of the same recipe (Carlini et al.), and a single quantile regressor of
non-member scores (Bertran et al.) that needs no shadow models at all.

Run: ``python examples/audit_health_model.py`` (about a minute on 2 CPU cores; with
``TABMIA_EXAMPLES_QUICK=1``, as in the documentation build, 4 shadow models and one seed)
"""

from __future__ import annotations

import os
import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

from tabmia.attacks import LiRAAttack, LossAttack, QuantileAttack
from tabmia.experiment import MembershipExperiment
from tabmia.report import markdown_table, results_table
from tabmia.report.plots import plot_roc

#: The documentation build's quick path: fewer shadow models and one seed of the game.
QUICK = os.environ.get("TABMIA_EXAMPLES_QUICK") == "1"


def load(hepatitis: bool):
    if hepatitis:
        from tabmia.datasets import load_hepatitis

        return load_hepatitis()
    from tabmia.datasets import load_breast_cancer

    return load_breast_cancer()


# %%
# The hospital's recipe, and the attacks: the loss baseline, LiRA with shadow models of
# the recipe, and the quantile attack. Every threshold promises 5% FPR. The membership
# game trains the target on half of the data and gives the attacker half of the rest.


def main(hepatitis: bool = False) -> None:
    data = load(hepatitis)
    X, y = data.data, np.asarray(data.target)
    recipe = HistGradientBoostingClassifier(max_iter=200, early_stopping=False,
                                            categorical_features="from_dtype")
    attacks = {
        "loss": LossAttack(fpr=0.05),
        f"LiRA offline ({4 if QUICK else 16} shadows)": LiRAAttack(shadow_estimator=recipe, n_shadow=4 if QUICK else 16,
                                                  fpr=0.05),
        "quantile regression": QuantileAttack(fpr=0.05),  # Gaussian, CatBoost defaults
    }
    result = MembershipExperiment(recipe, attacks, train_size=0.5, public_size=0.5,
                                  n_repeats=1 if QUICK else 2, fprs=(0.05, 0.01), random_state=0,
                                  verbose=True).run(X, y)
    print(markdown_table(results_table(result.metrics, fprs=(0.05, 0.01))))
    acc = result.target_accuracy
    print(f"target accuracy: train {acc['train_accuracy'].mean():.3f}, "
          f"held-out {acc['test_accuracy'].mean():.3f}")
    plot_roc(result.scores, title="Breast-cancer model: ROC of each attack (log-log)")


# %%
# The table gives each attack's TPR at the FPR levels with intervals; the log-log ROC
# shows where the attacks differ: at the lowest false-positive rates.


if __name__ == "__main__":
    main(hepatitis="--hepatitis" in sys.argv)
