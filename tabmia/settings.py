"""What every layer of a run passes on, in one object: :class:`RunSettings`.

A runner (:func:`tabmia.audit.audit_model`, :func:`tabmia.whatif.whatif`) builds one
from its keywords at the top and hands it down: to the round that plays its attacks
(:meth:`tabmia.experiment.MembershipRound.play`, :func:`tabmia.experiment.run_attacks`)
and to each audit a what-if run makes. A new concern of every layer becomes one field
here, not one keyword at each level. The settings are frozen: a layer that needs other
values makes a changed copy (:meth:`RunSettings.replace`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["RunSettings", "ATTACK_SETTINGS"]

#: The fields given to each attack that takes a parameter of that name (among its
#: ``runner_settings`` tag), where they are not None.
ATTACK_SETTINGS: tuple[str, ...] = ("n_jobs", "device", "max_memory")


@dataclass(frozen=True)
class RunSettings:
    """The settings a run passes from layer to layer.

    Parameters
    ----------
    fprs, gammas : tuple of float, default=(0.01, 0.001) and (1.0, 10.0, 100.0)
        Reporting levels of every attack's metrics (:func:`tabmia.metrics.attack_metrics`):
        the TPR at each FPR in ``fprs``, the PPV at each prior odds in ``gammas``.
    random_state : int, RandomState instance or None, default=0
        The run's seed: its splits and the attacks' seeds.
    fpr_fallback : bool, default=False
        An attack whose calibration records cannot promise its ``fpr`` aims at the
        smallest FPR they can promise instead of raising
        (:func:`tabmia.experiment.run_attacks`).
    keep_attacks : bool, default=True
        Keep each fitted attack in the result; False lets each go once it has scored.
    verbose : bool, default=False
        Print each attack's AUC and time as it finishes.
    n_jobs : int, default=None
        Parallel jobs of the attacks that take ``n_jobs`` (shadow / reference model
        fits); None leaves each attack's own.
    device : {"auto", "cpu", "cuda", "cuda:N"}, default=None
        Device of the attacks that take ``device`` (:mod:`tabmia._device`); None leaves
        each attack's own.
    max_memory : int or str, default=None
        Memory budget of the attacks that take ``max_memory`` (``"8GB"``, ``"25%"``:
        :mod:`tabmia._memory`); None leaves each attack's own.
    n_bootstrap : int, default=1000
        Replicates of the bootstraps that compare runs (a what-if run's paired
        differences).
    confidence : float, default=0.95
        Level of those intervals.
    output_dir : str or path, default=None
        Folder of what a run keeps between calls (a what-if run's finished variants and
        shadow models); None keeps nothing.
    """

    fprs: tuple[float, ...] = (0.01, 0.001)
    gammas: tuple[float, ...] = (1.0, 10.0, 100.0)
    random_state: Any = 0
    fpr_fallback: bool = False
    keep_attacks: bool = True
    verbose: bool = False
    n_jobs: int | None = None
    device: str | None = None
    max_memory: Any = None
    n_bootstrap: int = 1000
    confidence: float = 0.95
    output_dir: Any = None

    def __post_init__(self) -> None:
        """Check the levels and counts; the levels become tuples."""
        # tuples, so that settings hash and compare alike however the levels were given
        object.__setattr__(self, "fprs", tuple(self.fprs))
        object.__setattr__(self, "gammas", tuple(self.gammas))
        bad = [f for f in self.fprs if not 0.0 < float(f) < 1.0]
        if bad:
            raise ValueError(f"fprs must each be in (0, 1), got {bad[0]}")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        if int(self.n_bootstrap) != self.n_bootstrap or self.n_bootstrap < 0:
            raise ValueError(f"n_bootstrap must be a whole number >= 0, got {self.n_bootstrap}")

    def replace(self, **changes: Any) -> RunSettings:
        """A copy with ``changes`` (field names) applied; an unknown name is a TypeError."""
        return dataclasses.replace(self, **changes)

    def attack_params(self, takes: Iterable[str]) -> dict[str, Any]:
        """The :data:`ATTACK_SETTINGS` to set on an attack that takes the parameters
        ``takes`` (its ``runner_settings`` tag): those it takes that are not None."""
        names = set(takes)
        return {
            name: getattr(self, name)
            for name in ATTACK_SETTINGS
            if name in names and getattr(self, name) is not None
        }
