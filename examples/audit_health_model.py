"""Audit a health model with LiRA and the quantile-regression attack.

A hospital trained a gradient-boosting model on breast-cancer diagnoses (the data ships
with scikit-learn; pass --hepatitis for the UCI Hepatitis set from the data home).
Two strong attacks ask which patients' records were in its training set: LiRA with
shadow models of the same recipe (Carlini et al.), and a single quantile regressor of
non-member scores (Bertran et al.) that needs no shadow models at all.

Run: python examples/audit_health_model.py  (about a minute on 2 CPU cores)
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

from tabmia.attacks import LiRAAttack, LossAttack, QuantileAttack
from tabmia.experiment import MembershipExperiment
from tabmia.report import markdown_table, results_table


def load(hepatitis: bool):
    if hepatitis:
        from tabmia.datasets import load_hepatitis

        return load_hepatitis()
    from tabmia.datasets import load_breast_cancer

    return load_breast_cancer()


def main(hepatitis: bool = False) -> None:
    data = load(hepatitis)
    X, y = data.data, np.asarray(data.target)
    recipe = HistGradientBoostingClassifier(max_iter=200, early_stopping=False,
                                            categorical_features="from_dtype")
    attacks = {
        "loss": LossAttack(fpr=0.05),
        "LiRA offline (16 shadows)": LiRAAttack(shadow_estimator=recipe, n_shadow=16, fpr=0.05),
        "quantile regression": QuantileAttack(fpr=0.05),  # Gaussian, CatBoost defaults
    }
    result = MembershipExperiment(recipe, attacks, train_size=0.5, public_size=0.5,
                                  n_repeats=2, fprs=(0.05, 0.01), random_state=0,
                                  verbose=True).run(X, y)
    print(markdown_table(results_table(result.metrics, fprs=(0.05, 0.01))))
    acc = result.target_accuracy
    print(f"target accuracy: train {acc['train_accuracy'].mean():.3f}, "
          f"held-out {acc['test_accuracy'].mean():.3f}")


if __name__ == "__main__":
    main(hepatitis="--hepatitis" in sys.argv)
