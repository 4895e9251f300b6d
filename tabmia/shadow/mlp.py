"""Former home of the torch MLP: re-exports its pieces, now one module per job.

- :mod:`tabmia.shadow.torch_mlp`: :class:`TorchMLPClassifier`.
- :mod:`tabmia.shadow.batched`: :func:`fit_mlps_batched`, :func:`auto_group_size`.
- :mod:`tabmia.shadow.gradients`: :func:`gradient_norms`.

Kept so that ``from tabmia.shadow.mlp import TorchMLPClassifier`` and models pickled
under this module's name still load.
"""

from tabmia.shadow.batched import auto_group_size, fit_mlps_batched
from tabmia.shadow.gradients import gradient_norms
from tabmia.shadow.torch_mlp import TorchMLPClassifier

__all__ = ["TorchMLPClassifier", "fit_mlps_batched", "gradient_norms", "auto_group_size"]
