"""ART's label-only attacks on one fitted model, run in ART's own environment.

Run by ``benchmarks/label_only.py`` with the Python of a virtual environment that has
``adversarial-robustness-toolbox`` (never a tabmia dependency): it imports only numpy,
joblib, scikit-learn and ART. ``python _art_label_only.py IN.joblib OUT.json``: ``IN``
holds the fitted scikit-learn classifier, the attacked records already encoded as the
classifier's numeric input, their label indices, the clip values and HopSkipJump's
budget; ``OUT`` gets every record's score under ``LabelOnlyGapAttack`` and
``LabelOnlyDecisionBoundary``, the number of records each queried and the time.
"""

from __future__ import annotations

import json
import sys
import time

import joblib
import numpy as np


def _counting(classifier):
    """ART's classifier with a count of the records it is asked to predict."""
    counted = {"rows": 0}
    predict = classifier.predict

    def wrapped(x, *args, **kwargs):
        counted["rows"] += len(x)
        return predict(x, *args, **kwargs)

    classifier.predict = wrapped
    return classifier, counted


def main(path_in: str, path_out: str) -> None:
    import art
    from art.attacks.inference.membership_inference import (
        LabelOnlyDecisionBoundary,
        LabelOnlyGapAttack,
    )
    from art.estimators.classification.scikitlearn import SklearnClassifier

    job = joblib.load(path_in)
    x, y = job["x"].astype(np.float32), job["y"]
    n_classes = int(job["n_classes"])
    y_onehot = np.eye(n_classes)[y]
    out = {"art_version": art.__version__}

    classifier, counted = _counting(SklearnClassifier(job["model"], clip_values=job["clip"]))
    t0 = time.perf_counter()
    gap = LabelOnlyGapAttack(classifier).infer(x, y_onehot)
    out["gap"] = {"scores": np.asarray(gap, dtype=float).ravel().tolist(),
                  "queries": counted["rows"], "seconds": time.perf_counter() - t0}

    classifier, counted = _counting(SklearnClassifier(job["model"], clip_values=job["clip"]))
    rows = np.asarray(job["boundary_rows"])
    attack = LabelOnlyDecisionBoundary(classifier, distance_threshold_tau=10.0)
    t0 = time.perf_counter()
    # the membership probability is a sigmoid of (distance - tau): it ranks as the distance
    # (tau = 10 keeps it below 1.0 in float64 up to distances of about 46)
    proba = attack.infer(x[rows], y_onehot[rows], probabilities=True, verbose=False,
                         **job["hsj"])
    out["boundary"] = {"rows": rows.tolist(), "scores": np.asarray(proba)[:, 1].tolist(),
                       "queries": counted["rows"], "seconds": time.perf_counter() - t0}
    with open(path_out, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
