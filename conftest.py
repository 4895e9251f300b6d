"""Collection rules for the whole run (tests/ and the doctests of tabmia/)."""

import importlib.util

# tabmia.mlflow imports MLflow, an optional extra: without it its modules are not collected
# for doctests (tests/test_mlflow.py skips on its own)
collect_ignore_glob = [] if importlib.util.find_spec("mlflow") else ["tabmia/mlflow/*"]
