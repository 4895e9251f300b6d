"""
A privacy gate in an ML pipeline: the build fails when the candidate model leaks
================================================================================

A team retrains a diagnosis model on every change. Before the model ships, this step
audits it against records it never saw and fails the build when the audit shows that an
attacker could single out more training records than the team accepts:

- at most 15% of training records flagged by any attack's own threshold aimed at 5% FPR
  (``tpr@0.05=0.15``, 95% Clopper-Pearson upper bound at or under it), and
- an AUC of at most 0.65 (95% bootstrap upper bound).

Three ways to run the same gate:

- a CI step: ``python examples/privacy_gate_ci.py``
  (exit status 0: every limit met; 1: the audit shows a limit exceeded; 3: it cannot
  tell, e.g. too few records)
- in a test suite: ``pytest examples/privacy_gate_ci.py``
  (:func:`tabmia.testing.assert_membership_risk` raises ``AssertionError`` with the
  numbers)
- from the command line, on a saved model::

      tabmia audit --model-file model.joblib --train train.csv \\
          --population holdout.csv --label diagnosis --attacks loss,confidence \\
          --fail-above tpr@0.05=0.15,auc=0.65

Run: ``python examples/privacy_gate_ci.py`` (a few seconds on 2 CPU cores)
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tabmia.attacks import LiRAAttack, LossAttack, ScoreAttack
from tabmia.audit import audit_model
from tabmia.datasets import load_breast_cancer
from tabmia.exceptions import RunNote
from tabmia.gate import evaluate_gate
from tabmia.report import plot_roc, results_table
from tabmia.report.tables import text_table
from tabmia.testing import assert_membership_risk

#: The risk the team accepts; the attacks' thresholds aim at the FPR of the TPR limit.
FPR = 0.05
LIMITS = {"tpr_at_fpr": {FPR: 0.15}, "auc": 0.65}


def candidate_model():
    """The pipeline's training recipe (unfitted)."""
    return make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=1000))


def audit():
    """Train the candidate on half the data and audit it against the other half."""
    data = load_breast_cancer()
    X, y = data.data, np.asarray(data.target)
    rng = np.random.RandomState(0)
    train = np.zeros(len(y), bool)
    train[rng.permutation(len(y))[: len(y) // 2]] = True
    model = candidate_model().fit(X[train], y[train])
    attacks = {
        "loss": LossAttack(fpr=FPR),
        "confidence": ScoreAttack(statistic="confidence", fpr=FPR),
        # shadow models copy the pipeline's own recipe
        "lira": LiRAAttack(shadow_estimator=candidate_model(), n_shadow=8, fpr=FPR),
    }
    return audit_model(model, X[train], y[train], X[~train], y[~train], attacks,
                       fprs=(FPR,), random_state=0)


def test_model_membership_risk():
    """The gate as a pytest test: fails with one line per limit and the attack."""
    assert_membership_risk(audit(), **LIMITS)


def main() -> int:
    """The pipeline step: audit, print the log, draw the ROC; return the status."""
    # A CI log reads one line per warning: "tabmia: note: ..." as `tabmia audit` prints
    # them, rather than Python's two-line format with a line of source code.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = audit()
    for warning in caught:
        kind = "note" if issubclass(warning.category, RunNote) else "warning"
        print(f"tabmia: {kind}: {warning.message}", file=sys.stderr)
    columns = ["attack", "AUC", "TPR (own threshold)", "FPR (own threshold)"]
    print(text_table(results_table(result.metrics, fprs=(FPR,))[columns]))
    gate = evaluate_gate(result, [f"tpr@{FPR:g}={LIMITS['tpr_at_fpr'][FPR]:g}",
                                  f"auc={LIMITS['auc']:g}"])
    for line in gate.lines():
        print(f"tabmia: gate: {line}")
    plot_roc(result.scores, title="Candidate model: ROC of each attack (log-log)")
    return gate.exit_status


# %%
# Run as a pipeline step, the step's log is what follows: a note for each thing an
# attack did differently from what it was asked (here: LiRA's shadow models train on
# fewer records than the candidate did), each attack's rates at its own threshold, one
# ``tabmia: gate:`` line per limit and the decision. This candidate, a regularised
# logistic regression, stays under both limits, so the step passes (exit status 0); a
# candidate that leaks fails it with status 1, and the line names the attack and the
# numbers. (The documentation build runs this file too: it exits only when a limit is
# not met.)

if __name__ == "__main__":
    status = main()
    if status:
        sys.exit(status)
