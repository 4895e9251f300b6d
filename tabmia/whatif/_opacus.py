"""A DP-SGD MLP with a scikit-learn API, trained with Opacus (imported when used).

tabmia's own MLP (:class:`~tabmia.shadow.TorchMLPClassifier`) trains many models as one
batched network, which per-example gradient clipping and noise do not fit into; this
classifier is the same kind of network (ReLU hidden layers, softmax output) trained one
model at a time by Opacus' DP-SGD, with its privacy engine calibrating the noise to
``(epsilon, delta)`` over the given epochs (Poisson sampling, RDP accountant).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

__all__ = ["DPSGDClassifier", "opacus_available"]


def opacus_available() -> str | None:
    """None where Opacus imports, else why not (in words)."""
    try:
        import opacus  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return f"Opacus does not import here ({type(exc).__name__}: {exc})"
    return None


class DPSGDClassifier(ClassifierMixin, BaseEstimator):
    """An MLP trained with DP-SGD (Opacus) at a target ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Target ε of the (ε, δ)-DP guarantee Opacus' accountant calibrates the noise to.
    delta : float, default=1e-5
        Target δ.
    hidden_layer_sizes : sequence of int, default=(64,)
        ReLU hidden layers.
    epochs : int, default=20
        Passes over the data (in expectation: batches are Poisson-sampled).
    batch_size : int, default=64
        Expected batch size.
    lr : float, default=0.5
        SGD learning rate.
    max_grad_norm : float, default=1.0
        Per-example gradient clipping norm.
    random_state : int, default=None
        Seeds the weights, the batches and the noise (torch's generators, restored after).
    """

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        hidden_layer_sizes: Sequence[int] = (64,),
        epochs: int = 20,
        batch_size: int = 64,
        lr: float = 0.5,
        max_grad_norm: float = 1.0,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.hidden_layer_sizes = hidden_layer_sizes
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.max_grad_norm = max_grad_norm
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> DPSGDClassifier:
        """Train with DP-SGD.

        Returns
        -------
        self
        """
        import warnings

        import torch
        from opacus import PrivacyEngine
        from torch.utils.data import DataLoader, TensorDataset

        from tabmia._seeding import seed_from

        X = np.asarray(X, dtype=np.float32)
        self.classes_, y_idx = np.unique(np.asarray(y), return_inverse=True)
        self.n_features_in_ = X.shape[1]
        with torch.random.fork_rng():
            torch.manual_seed(seed_from(self.random_state))
            module = self._network(X.shape[1], self.classes_.size)
            data = TensorDataset(torch.from_numpy(X), torch.from_numpy(y_idx.astype(np.int64)))
            loader = DataLoader(data, batch_size=int(self.batch_size), shuffle=True)
            optimizer = torch.optim.SGD(module.parameters(), lr=float(self.lr))
            with warnings.catch_warnings():
                # Opacus' notes on secure RNG and on optimizer state: not about the result
                warnings.simplefilter("ignore")
                engine = PrivacyEngine(accountant="rdp")
                module, optimizer, loader = engine.make_private_with_epsilon(
                    module=module,
                    optimizer=optimizer,
                    data_loader=loader,
                    target_epsilon=float(self.epsilon),
                    target_delta=float(self.delta),
                    epochs=int(self.epochs),
                    max_grad_norm=float(self.max_grad_norm),
                )
                loss_fn = torch.nn.CrossEntropyLoss()
                module.train()
                for _ in range(int(self.epochs)):  # a loop over epochs, batches inside
                    for xb, yb in loader:
                        if len(yb) == 0:  # Poisson sampling can draw an empty batch
                            continue
                        optimizer.zero_grad()
                        loss_fn(module(xb), yb).backward()
                        optimizer.step()
                self.epsilon_spent_ = float(engine.get_epsilon(float(self.delta)))
        # the plain network, without Opacus' hooks, for prediction and pickling
        plain = self._network(X.shape[1], self.classes_.size)
        plain.load_state_dict(getattr(module, "_module", module).state_dict())
        plain.eval()
        self.network_ = plain
        return self

    def _network(self, n_in: int, n_out: int) -> Any:
        import torch

        layers: list[Any] = []
        width = n_in
        for h in np.atleast_1d(self.hidden_layer_sizes):
            layers += [torch.nn.Linear(width, int(h)), torch.nn.ReLU()]
            width = int(h)
        layers.append(torch.nn.Linear(width, n_out))
        return torch.nn.Sequential(*layers)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Softmax of the network's outputs.

        Returns
        -------
        ndarray of shape (n, n_classes)
        """
        import torch

        check_is_fitted(self, "network_")
        with torch.no_grad():
            logits = self.network_(torch.from_numpy(np.asarray(X, dtype=np.float32)))
            return torch.softmax(logits.double(), dim=1).numpy()

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class.

        Returns
        -------
        ndarray of shape (n,)
        """
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
