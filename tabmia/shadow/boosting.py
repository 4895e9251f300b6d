"""CatBoost, XGBoost and LightGBM shadow models: on a GPU where that pays, else the CPU.

Each factory returns an unfitted scikit-learn-API classifier, ready to be a
:class:`~tabmia.shadow.ShadowPopulation` estimator or an attack's shadow recipe. What
each library needs to know about devices and threads is in :mod:`tabmia.backends`. The
libraries are imported when a factory is called, never by ``import tabmia``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia._array import is_categorical_dtype
from tabmia.backends import BACKENDS, gpu_present

__all__ = [
    "gpu_available",
    "catboost_classifier",
    "xgboost_classifier",
    "lightgbm_classifier",
    "CatBoostAuto",  # noqa: F822 - built on first use by the module __getattr__
    "categorical_columns",
]


def gpu_available(library: str | None = None) -> bool:
    """Whether a GPU can be used, by ``library`` or by anything.

    Parameters
    ----------
    library : {"catboost", "xgboost", "torch", "lightgbm"} or None, default=None
        ``"catboost"``: CatBoost sees a CUDA device. ``"xgboost"``: XGBoost was built
        with CUDA (not the ``xgboost-cpu`` wheel) and a CUDA device is present.
        ``"torch"``: ``torch.cuda.is_available()``. ``"lightgbm"``: always False
        (LightGBM's GPU needs a custom build; tabmia never picks it). None: any
        CUDA device is visible. (How each library sees a GPU: :mod:`tabmia.backends`.)

    Returns
    -------
    bool
    """
    if library is None:
        return gpu_present()
    if library not in ("catboost", "xgboost", "torch", "lightgbm"):
        raise ValueError(
            f"library must be 'catboost', 'xgboost', 'torch', 'lightgbm' or None, got {library!r}"
        )
    return BACKENDS[library].gpu_count() > 0


def categorical_columns(X: Any) -> list[Any]:
    """Columns of a DataFrame holding categories (category, object, string dtypes)."""
    if not isinstance(X, pd.DataFrame):
        return []
    return [c for c, dt in X.dtypes.items() if is_categorical_dtype(dt)]


def _stringify(X: Any, columns: list[Any]) -> Any:
    """Copy of ``X`` whose ``columns`` are strings (missing values become ``"nan"``)."""
    if not columns:
        return X
    X = X.copy()
    for c in columns:
        col = X[c]
        X[c] = col.astype(object).where(col.notna(), "nan").astype(str)
    return X


def _catboost_base() -> type:
    from catboost import CatBoostClassifier

    return CatBoostClassifier


def _make_catboost_auto() -> type:
    base = _catboost_base()

    class CatBoostAuto(base):  # type: ignore[misc, valid-type]
        """``CatBoostClassifier`` that finds the categorical columns of a DataFrame.

        ``fit`` passes ``cat_features`` itself when it is not given: the columns of
        category, object or string dtype. Their values are turned into strings
        (missing ones into ``"nan"``), which CatBoost requires, in ``fit`` and in
        every prediction method. Otherwise exactly ``CatBoostClassifier`` (same
        parameters, ``clone``, pickling).
        """

        def fit(self, X: Any, y: Any = None, cat_features: Any = None, **kwargs: Any) -> Any:
            in_init = self.get_params().get("cat_features")
            if cat_features is None and in_init is None and isinstance(X, pd.DataFrame):
                cat_features = categorical_columns(X) or None
            listed = cat_features if cat_features is not None else in_init
            if listed is not None and isinstance(X, pd.DataFrame):
                names = [X.columns[c] if isinstance(c, (int, np.integer)) else c for c in listed]
                X = _stringify(X, names)
            if cat_features is not None:
                kwargs["cat_features"] = cat_features
            return super().fit(X, y, **kwargs)

        def _prepare(self, X: Any) -> Any:
            if not isinstance(X, pd.DataFrame) or not self.is_fitted():
                return X
            idx = self.get_cat_feature_indices()
            return _stringify(X, [X.columns[i] for i in idx if i < X.shape[1]])

        def predict(self, data: Any, *args: Any, **kwargs: Any) -> Any:
            return super().predict(self._prepare(data), *args, **kwargs)

        def predict_proba(self, X: Any, *args: Any, **kwargs: Any) -> Any:
            return super().predict_proba(self._prepare(X), *args, **kwargs)

        def predict_log_proba(self, data: Any, *args: Any, **kwargs: Any) -> Any:
            return super().predict_log_proba(self._prepare(data), *args, **kwargs)

        def staged_predict_proba(self, data: Any, *args: Any, **kwargs: Any) -> Any:
            return super().staged_predict_proba(self._prepare(data), *args, **kwargs)

        def score(self, X: Any, y: Any = None) -> float:
            return super().score(self._prepare(X), y)

    CatBoostAuto.__module__ = __name__
    CatBoostAuto.__qualname__ = "CatBoostAuto"
    return CatBoostAuto


def __getattr__(name: str) -> Any:
    # CatBoostAuto subclasses catboost's classifier, so it is built on first use
    if name == "CatBoostAuto":
        cls = _make_catboost_auto()
        globals()["CatBoostAuto"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def catboost_classifier(device: Any = "auto", *, n_rows: int | None = None, **kwargs: Any) -> Any:
    """An unfitted CatBoost classifier, on the GPU where that pays.

    Defaults (each overridable by a keyword): ``task_type`` / ``devices`` from
    ``device``, ``verbose=0``, ``allow_writing_files=False``. ``thread_count`` and every
    other ``CatBoostClassifier`` parameter pass through; left unset, a
    :class:`~tabmia.shadow.ShadowPopulation` gives each parallel job its share of the
    cores, and a GPU holds one CatBoost fit at a time (a GPU fit reserves most of the
    device's memory). The model is a :class:`CatBoostAuto`: on a DataFrame it passes
    the category / object / string columns as ``cat_features`` by itself (e.g. the
    Adult data set as loaded).

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        ``"auto"``: the GPU when CatBoost sees one and the model trains on at least
        :data:`tabmia.backends.GPU_MIN_ROWS` rows (``n_rows``), else the CPU (see
        :mod:`tabmia.backends` for the rule); ``"cuda:N"``: GPU ``N``
        (``devices="N"``). CUDA that CatBoost does not see warns and falls back to the
        CPU.
    n_rows : int, default=None
        Rows the model will train on, for ``device="auto"`` (None: the CPU).
    **kwargs
        ``CatBoostClassifier`` parameters.

    Returns
    -------
    CatBoostAuto
        Unfitted.

    Examples
    --------
    >>> from tabmia.shadow import catboost_classifier
    >>> catboost_classifier(iterations=50).get_params()["task_type"]
    'CPU'
    """
    import tabmia.shadow.boosting as mod

    settings = BACKENDS["catboost"].device_settings(device, n_rows=n_rows)
    params: dict[str, Any] = {
        **{k: v for k, v in settings.items() if v is not None},
        "verbose": 0,
        "allow_writing_files": False,
    }
    params.update(kwargs)
    return mod.CatBoostAuto(**params)


def xgboost_classifier(device: Any = "auto", *, n_rows: int | None = None, **kwargs: Any) -> Any:
    """An unfitted ``xgboost.XGBClassifier``, on CUDA where that pays.

    Defaults (each overridable): ``tree_method="hist"``, ``enable_categorical=True``
    (DataFrame category columns are used natively).

    XGBoost needs labels ``0..C-1`` with every class present in each training set:
    encode string labels first, and use it as a shadow only when no class is so
    rare that a random half of the pool can miss it.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        ``"auto"``: CUDA when :func:`gpu_available` ("xgboost") and the model trains
        on at least :data:`tabmia.backends.GPU_MIN_ROWS` rows (``n_rows``), else the
        CPU. CUDA that XGBoost cannot use warns and falls back to the CPU.
    n_rows : int, default=None
        Rows the model will train on, for ``device="auto"`` (None: the CPU).
    **kwargs
        ``XGBClassifier`` parameters.

    Returns
    -------
    xgboost.XGBClassifier
        Unfitted.
    """
    from xgboost import XGBClassifier

    params = {
        "tree_method": "hist",
        **BACKENDS["xgboost"].device_settings(device, n_rows=n_rows),
        "enable_categorical": True,
    }
    params.update(kwargs)
    return XGBClassifier(**params)


def lightgbm_classifier(**kwargs: Any) -> Any:
    """An unfitted ``lightgbm.LGBMClassifier`` (CPU; ``verbose=-1`` by default).

    LightGBM's GPU needs a custom build, so the device is left to the caller
    (``device_type="gpu"`` or ``"cuda"`` for such a build). DataFrame category
    columns are used natively.

    Returns
    -------
    lightgbm.LGBMClassifier
        Unfitted.
    """
    from lightgbm import LGBMClassifier

    params: dict[str, Any] = {"verbose": -1}
    params.update(kwargs)
    return LGBMClassifier(**params)
