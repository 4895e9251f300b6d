"""Each record's leaf in each tree of a fitted tree model, and the count each leaf stores.

:func:`read_trees` reads a fitted model (bare, the last step of a scikit-learn
``Pipeline`` whose earlier steps transform the records, or a
:class:`~tabmia.target.TargetModel` around either) into a :class:`TreeLeaves`: one flat
array of every tree's nodes, with the training count the model file stores for each
node. The readers of the families live beside this module, one per library.

What "count" means depends on the file (:attr:`TreeLeaves.count_kind`):

- scikit-learn trees and forests store ``n_node_samples`` (distinct training records;
  in a bootstrap forest the distinct records drawn into that tree) and, per class, the
  weighted count (bootstrap draws in a bagged forest);
- ``GradientBoostingClassifier`` stores ``n_node_samples`` of each regression tree (the
  stage's subsample where ``subsample < 1``);
- ``HistGradientBoostingClassifier`` stores ``count`` in each node (the training
  records after its own validation split);
- LightGBM stores ``leaf_count`` (records in the iteration's bag);
- CatBoost stores leaf weights (sums of the learn records' weights: counts for
  unweighted data);
- XGBoost stores ``cover``, the sum of the training records' hessians in the node. For
  log-loss that is ``sum p (1 - p)``, **not a count**: :class:`TreeLeaves` gives an
  estimate (cover divided by the record's own hessian at that round) and marks it
  ``exact=False``.
"""

from __future__ import annotations

from typing import Any

from tabmia.structure._tree_leaves import NotATreeModelError, TreeLeaves

__all__ = ["TreeLeaves", "read_trees", "is_tree_model", "NotATreeModelError"]


def is_tree_model(model: Any) -> bool:
    """Whether :func:`read_trees` can read ``model``."""
    try:
        _final_step(model)
    except NotATreeModelError:
        return False
    return True


def _final_step(model: Any) -> tuple[Any, Any, str]:
    """The tree estimator, the transform of the steps before it, and its reader's name."""
    from sklearn.pipeline import Pipeline

    from tabmia.target import TargetModel

    if isinstance(model, TargetModel):
        model = model.model
    # a wrapper that only post-processes the outputs of the fitted model it holds (it
    # names the attributes that may hold it, in order): the file still holds its trees
    for name in getattr(type(model), "__tabmia_output_wrapper__", ()):
        if getattr(model, name, None) is not None:
            model = getattr(model, name)
            break
    prepare = None
    if isinstance(model, Pipeline):
        prepare = model[:-1].transform if len(model.steps) > 1 else None
        model = model.steps[-1][1]
    reader = _reader_name(model)
    if reader is None:
        raise NotATreeModelError(
            f"{type(model).__name__} is not a tree model whose leaves tabmia reads "
            "(scikit-learn trees, forests, extra-trees, gradient and histogram boosting, "
            "XGBoost, LightGBM, CatBoost; bare or as a Pipeline's last step)"
        )
    return model, prepare, reader


def _reader_name(model: Any) -> str | None:
    names = {c.__name__ for c in type(model).__mro__}
    module = type(model).__module__
    if names & {"BaseForest", "BaseDecisionTree"}:
        return "sklearn_forest" if "BaseForest" in names else "sklearn_tree"
    if "BaseHistGradientBoosting" in names:
        return "sklearn_hist"
    if "BaseGradientBoosting" in names:
        return "sklearn_gb"
    if module.startswith("xgboost"):
        return "xgboost"
    if module.startswith("lightgbm"):
        return "lightgbm"
    if module.startswith("catboost"):
        return "catboost"
    return None


def read_trees(model: Any) -> TreeLeaves:
    """Read a fitted tree model's leaves and stored counts.

    Parameters
    ----------
    model : estimator, Pipeline or TargetModel
        A fitted scikit-learn ``DecisionTreeClassifier``, ``RandomForestClassifier``,
        ``ExtraTreesClassifier``, ``GradientBoostingClassifier``,
        ``HistGradientBoostingClassifier``, ``XGBClassifier``, ``LGBMClassifier`` or
        ``CatBoostClassifier`` (regressors too), bare or as the last step of a
        ``Pipeline`` (records are sent through the steps before it).

    Returns
    -------
    TreeLeaves

    Raises
    ------
    NotATreeModelError
        For any other model.
    """
    from sklearn.utils.validation import check_is_fitted

    estimator, prepare, reader = _final_step(model)
    if reader.startswith("sklearn"):
        check_is_fitted(estimator)
    if reader in ("sklearn_forest", "sklearn_tree", "sklearn_gb"):
        from tabmia.structure._sklearn_trees import read_sklearn

        leaves = read_sklearn(estimator)
    elif reader == "sklearn_hist":
        from tabmia.structure._sklearn_hist import read_hist

        leaves = read_hist(estimator)
    elif reader == "xgboost":
        from tabmia.structure._xgboost import read_xgboost

        leaves = read_xgboost(estimator)
    elif reader == "lightgbm":
        from tabmia.structure._lightgbm import read_lightgbm

        leaves = read_lightgbm(estimator)
    else:
        from tabmia.structure._catboost import read_catboost

        leaves = read_catboost(estimator)
    leaves._prepare = prepare
    return leaves
