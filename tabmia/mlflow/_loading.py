"""Models from MLflow: a registry URI, a run's model or a model folder, through MLflow's
own loaders.

A model logged with a native flavour tabmia reads (scikit-learn, XGBoost, LightGBM,
CatBoost, PyTorch) is loaded as that flavour, so the audit queries its probabilities
(a torch module's logits). A model with only the generic ``python_function`` flavour
is audited through it: with probabilities where it was logged to answer
``predict_proba`` (``pyfunc_predict_fn="predict_proba"``), else as a label-only model,
and the loaded model says so (:attr:`MLflowModel.note`), never silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["NATIVE_FLAVORS", "MLflowModel", "PyfuncClassifier", "load_mlflow_model"]

#: MLflow flavours loaded natively, in the order they are tried: (flavour, module).
NATIVE_FLAVORS = (
    ("sklearn", "mlflow.sklearn"),
    ("xgboost", "mlflow.xgboost"),
    ("lightgbm", "mlflow.lightgbm"),
    ("catboost", "mlflow.catboost"),
    ("pytorch", "mlflow.pytorch"),
)
#: How ``pyfunc_predict_fn`` names the probability method.
_PROBA_FN = "predict_proba"


@dataclass(frozen=True)
class MLflowModel:
    """A model loaded from MLflow, with how it is audited.

    Attributes
    ----------
    model : object
        What the audit queries: the native model (a scikit-learn estimator, an XGBoost
        / LightGBM / CatBoost model, a torch module) or a :class:`PyfuncClassifier`.
    uri : str
        The URI it was loaded from.
    flavor : str
        The MLflow flavour it was loaded as (``"sklearn"``, ..., ``"python_function"``).
    outputs : {"proba", "labels"}
        What the audit gets from it: probabilities (or logits) or labels only.
    note : str
        One sentence on how it is audited, for the report's context.
    """

    model: Any
    uri: str
    flavor: str
    outputs: str
    note: str


class PyfuncClassifier:
    """An MLflow pyfunc model as a classifier: ``predict`` always, ``predict_proba`` only
    where the model was logged to answer probabilities.

    Parameters
    ----------
    pyfunc : mlflow.pyfunc.PyFuncModel
        The loaded model.
    classes : array-like, default=None
        The label of each probability column (a probability pyfunc needs them: its raw
        model's ``classes_`` where MLflow exposes it).
    proba : bool, default=False
        Whether the pyfunc's ``predict`` returns probabilities (one column per class).
    """

    def __init__(self, pyfunc: Any, classes: Any = None, proba: bool = False) -> None:
        self.pyfunc = pyfunc
        if classes is not None:
            self.classes_ = np.asarray(classes)
        if proba:
            self.predict_proba = self._predict_proba

    def predict(self, X: Any) -> np.ndarray:
        """The model's label of each record (arg-max class of a probability pyfunc)."""
        out = self._query(X)
        if hasattr(self, "predict_proba"):
            return np.asarray(self.classes_)[np.argmax(out, axis=1)]
        if out.ndim == 2 and out.shape[1] > 1:
            raise ValueError(
                f"the MLflow pyfunc model's predict returns {out.shape[1]} columns per record; "
                "tabmia reads a pyfunc's output as one label per record, or as probabilities "
                "where the model was logged with pyfunc_predict_fn='predict_proba'"
            )
        return out.reshape(-1)

    def _predict_proba(self, X: Any) -> np.ndarray:
        out = np.asarray(self._query(X), dtype=np.float64)
        return out.reshape(-1, 1) if out.ndim == 1 else out

    def _query(self, X: Any) -> np.ndarray:
        return np.asarray(self.pyfunc.predict(X))


def load_mlflow_model(uri: str, *, flavor: str | None = None) -> MLflowModel:
    """Load the model at ``uri`` through MLflow for an audit.

    Parameters
    ----------
    uri : str
        ``models:/name@alias``, ``models:/name/3``, ``runs:/<run id>/<path>``, a local
        MLflow model folder, or any URI MLflow reads. A registry URI is resolved by the
        tracking server ``MLFLOW_TRACKING_URI`` names.
    flavor : str, default=None
        Load as this flavour (``"python_function"`` audits the generic interface even
        where a native flavour exists); by default the first native flavour the model
        has (:data:`NATIVE_FLAVORS`), else ``python_function``.

    Returns
    -------
    MLflowModel

    Raises
    ------
    ValueError
        Where MLflow cannot find or load the model, or it has neither a native flavour
        tabmia reads nor ``python_function``.
    """
    import importlib

    import mlflow

    try:
        info = mlflow.models.get_model_info(uri)
    except Exception as exc:  # MlflowException, OSError: whatever MLflow raises on a bad URI
        raise ValueError(f"{uri}: MLflow cannot find the model ({_first_line(exc)})") from exc
    flavors = dict(info.flavors)
    native = [(f, m) for f, m in NATIVE_FLAVORS if f in flavors]
    if flavor is not None and flavor != "python_function":
        native = [(f, m) for f, m in native if f == flavor]
        if not native:
            raise ValueError(
                f"{uri}: the model has no {flavor!r} flavour tabmia reads (it has "
                f"{', '.join(sorted(flavors))})"
            )
    if native and flavor != "python_function":
        name, module = native[0]
        try:
            model = importlib.import_module(module).load_model(uri)
        except Exception as exc:  # a missing library or a corrupt artifact
            raise ValueError(
                f"{uri}: MLflow cannot load its {name} flavour ({_first_line(exc)})"
            ) from exc
        if name == "pytorch":
            model = _switchable(model)
        what = "logits" if name == "pytorch" else "probabilities"
        return MLflowModel(
            model, uri, name, "proba", f"MLflow {name} flavour, audited with its {what}"
        )
    if "python_function" not in flavors:
        raise ValueError(
            f"{uri}: the model has no flavour tabmia reads ({', '.join(sorted(flavors))}; "
            f"it reads {', '.join(f for f, _ in NATIVE_FLAVORS)} and python_function)"
        )
    return _load_pyfunc(uri, flavors["python_function"])


def _load_pyfunc(uri: str, conf: dict[str, Any]) -> MLflowModel:
    import mlflow

    try:
        pyfunc = mlflow.pyfunc.load_model(uri)
    except Exception as exc:  # a missing library or a corrupt artifact
        raise ValueError(f"{uri}: MLflow cannot load it ({_first_line(exc)})") from exc
    proba = conf.get("predict_fn") == _PROBA_FN
    classes = _raw_classes(pyfunc)
    if proba and classes is None:
        raise ValueError(
            f"{uri}: a pyfunc model logged to answer predict_proba, but its class labels "
            "are unknown (its raw model has no classes_): tabmia cannot tell which column "
            "is which class"
        )
    if proba:
        note = (
            "MLflow pyfunc model logged with pyfunc_predict_fn='predict_proba': audited "
            "with its probabilities"
        )
    else:
        note = (
            "MLflow pyfunc model whose predict gives labels only (logged without "
            "pyfunc_predict_fn='predict_proba'): audited as a label-only model, an attacker "
            "who sees its decisions only"
        )
    return MLflowModel(
        PyfuncClassifier(pyfunc, classes=classes, proba=proba),
        uri,
        "python_function",
        "proba" if proba else "labels",
        note,
    )


def _switchable(module: Any) -> Any:
    """A torch module the audit can put in eval mode: a ``torch.export`` program (MLflow's
    default PyTorch format) refuses ``eval()``, its mode having been fixed when exported,
    so it is queried through a module that only forwards to it."""
    try:
        module.eval()
    except Exception:  # noqa: BLE001 - NotImplementedError / RuntimeError by torch version
        return _exported_module_class()(module)
    return module


def _exported_module_class() -> type:
    import torch  # only here: the pytorch flavour brings it

    class ExportedModule(torch.nn.Module):
        """Forwards to a ``torch.export`` program, whose mode is fixed (not a child, so
        ``eval()`` leaves it alone); its parameters are the program's."""

        program: Any

        def __init__(self, program: Any) -> None:
            super().__init__()
            object.__setattr__(self, "program", program)

        def forward(self, x: Any) -> Any:
            return self.program(x)

        def parameters(self, recurse: bool = True) -> Any:
            return self.program.parameters(recurse)

    return ExportedModule


def _raw_classes(pyfunc: Any) -> np.ndarray | None:
    """The class labels of a pyfunc's underlying model, where MLflow exposes it."""
    try:
        raw = pyfunc.get_raw_model()
    except Exception:  # noqa: BLE001 - NotImplementedError, or a flavour that fails
        return None
    classes = getattr(raw, "classes_", None)
    return None if classes is None else np.asarray(classes)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
