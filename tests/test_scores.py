"""Numerical accuracy of the per-record scores on confident predictions."""

import numpy as np
from scipy.special import softmax

from tabmia.scores import logit_confidence, logit_confidence_from_logits


def test_logit_confidence_keeps_resolution_on_confident_multiclass_outputs():
    logits = np.array(
        [[40.0, 0.0, 0.0], [0.0, 35.0, 1.0], [-3.0, 2.0, 30.0], [25.0, 24.0, -5.0],
         [0.5, 0.1, -0.2], [33.0, 0.0, 33.0]]
    )
    proba = softmax(logits, axis=1)
    for y in (np.array([0, 1, 2, 0, 1, 2]), np.array([1, 2, 0, 1, 0, 0])):
        exact = logit_confidence_from_logits(logits, y)
        got = logit_confidence(proba, y)
        np.testing.assert_allclose(got, exact, rtol=1e-6, atol=1e-9)
    # the case of the issue: 1 - p_y rounds to 0 and the old code returned 690.8
    one = logit_confidence(softmax(np.array([[40.0, 0.0, 0.0]]), axis=1), np.array([0]))
    assert abs(one[0] - (40.0 - np.log(2.0))) < 1e-6


def test_scores_module_imports_nothing_from_tabmia():
    import ast
    from pathlib import Path

    import tabmia.scores

    tree = ast.parse(Path(tabmia.scores.__file__).read_text())
    imported = [
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
        for alias in node.names
    ] + [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert imported and not [m for m in imported if m.split(".")[0] == "tabmia"]
