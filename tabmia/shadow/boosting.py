"""CatBoost, XGBoost and LightGBM shadow models: GPU where present, CPU otherwise.

Each factory returns an unfitted scikit-learn-API classifier, ready to be a
:class:`~tabmia.shadow.ShadowPopulation` estimator or an attack's shadow recipe. The
libraries are imported when a factory is called, never by ``import tabmia``.
"""

from __future__ import annotations

import functools
import shutil
from typing import Any

import numpy as np
import pandas as pd

from tabmia._array import is_categorical_dtype
from tabmia._device import catboost_device_params, catboost_gpu_count, resolve_device_name

__all__ = [
    "gpu_available",
    "catboost_classifier",
    "xgboost_classifier",
    "lightgbm_classifier",
    "CatBoostAuto",  # noqa: F822 - built on first use by the module __getattr__
    "categorical_columns",
]


@functools.cache
def _cuda_device_present() -> bool:
    if catboost_gpu_count() > 0:
        return True
    try:
        import torch

        if torch.cuda.is_available():
            return True
    except ImportError:
        pass
    return shutil.which("nvidia-smi") is not None and _nvidia_smi_lists_gpu()


def _nvidia_smi_lists_gpu() -> bool:
    import subprocess

    try:
        out = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


@functools.cache
def _xgboost_cuda() -> bool:
    try:
        import xgboost
    except ImportError:
        return False
    try:
        built_with_cuda = bool(xgboost.build_info().get("USE_CUDA", False))
    except Exception:  # noqa: BLE001
        built_with_cuda = False
    return built_with_cuda and _cuda_device_present()


def gpu_available(library: str | None = None) -> bool:
    """Whether a GPU can be used, by ``library`` or by anything.

    Parameters
    ----------
    library : {"catboost", "xgboost", "torch", "lightgbm"} or None, default=None
        ``"catboost"``: CatBoost sees a CUDA device. ``"xgboost"``: XGBoost was built
        with CUDA (not the ``xgboost-cpu`` wheel) and a CUDA device is present.
        ``"torch"``: ``torch.cuda.is_available()``. ``"lightgbm"``: always False
        (LightGBM's GPU needs a custom build; tabmia never picks it). None: any
        CUDA device is visible.

    Returns
    -------
    bool
    """
    if library is None:
        return _cuda_device_present()
    if library == "catboost":
        return catboost_gpu_count() > 0
    if library == "xgboost":
        return _xgboost_cuda()
    if library == "torch":
        from tabmia._device import cuda_available

        return cuda_available()
    if library == "lightgbm":
        return False
    raise ValueError(
        f"library must be 'catboost', 'xgboost', 'torch', 'lightgbm' or None, got {library!r}"
    )


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

        def predict(self, data: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: D102
            return super().predict(self._prepare(data), *args, **kwargs)

        def predict_proba(self, X: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: D102
            return super().predict_proba(self._prepare(X), *args, **kwargs)

        def predict_log_proba(self, data: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: D102
            return super().predict_log_proba(self._prepare(data), *args, **kwargs)

        def staged_predict_proba(self, data: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: D102
            return super().staged_predict_proba(self._prepare(data), *args, **kwargs)

        def score(self, X: Any, y: Any = None) -> float:  # noqa: D102
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


def catboost_classifier(device: Any = "auto", **kwargs: Any) -> Any:
    """An unfitted CatBoost classifier on the GPU when CatBoost sees one.

    Defaults (each overridable by a keyword): ``task_type`` / ``devices`` from
    ``device``, ``verbose=0``, ``allow_writing_files=False``. ``thread_count`` and every other
    ``CatBoostClassifier`` parameter pass through. On a GPU, train shadows one at a
    time (``ShadowPopulation(..., n_jobs=1)``): parallel jobs would share the device.
    The model is a :class:`CatBoostAuto`: on a DataFrame it passes the category /
    object / string columns as ``cat_features`` by itself (e.g. the Adult data set as
    loaded).

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        ``"auto"``: the GPU when ``catboost.utils.get_gpu_device_count() > 0``, else
        the CPU; ``"cuda:N"``: GPU ``N`` (``devices="N"``). CUDA that CatBoost does
        not see warns and falls back to the CPU.
    **kwargs
        ``CatBoostClassifier`` parameters.

    Returns
    -------
    CatBoostAuto
        Unfitted.

    Examples
    --------
    >>> from tabmia.shadow import catboost_classifier
    >>> model = catboost_classifier(iterations=50, thread_count=2)
    >>> model.get_params()["task_type"] in ("CPU", "GPU")
    True
    """
    import tabmia.shadow.boosting as mod

    params: dict[str, Any] = {
        **catboost_device_params(device),
        "verbose": 0,
        "allow_writing_files": False,
    }
    params.update(kwargs)
    return mod.CatBoostAuto(**params)


def xgboost_classifier(device: Any = "auto", **kwargs: Any) -> Any:
    """An unfitted ``xgboost.XGBClassifier`` on CUDA when XGBoost can use it.

    Defaults (each overridable): ``tree_method="hist"``, ``enable_categorical=True``
    (DataFrame category columns are used natively).

    XGBoost needs labels ``0..C-1`` with every class present in each training set:
    encode string labels first, and use it as a shadow only when no class is so
    rare that a random half of the pool can miss it.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        ``"auto"``: CUDA when :func:`gpu_available` ("xgboost"), else the CPU. CUDA
        that XGBoost cannot use warns and falls back to the CPU.
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
        "device": resolve_device_name(
            device,
            n_gpus=lambda: int(_xgboost_cuda()),
            library="XGBoost",
            check_index=False,  # XGBoost does not say how many devices it sees
        ),
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
