"""Parameter docstrings the attacks share, each written once.

Every attack class is decorated with :data:`shared_parameters`; a line ``{name}`` in
its docstring (``{threshold_params}``, ``{max_memory}``, ...) is replaced by the text
below (:class:`tabmia._docstrings.Substitution`), so that the rendered ``__doc__``,
which numpydoc and the API pages read, still lists every parameter.
"""

from __future__ import annotations

from tabmia._docstrings import Substitution

__all__ = ["PARAMETER_DOCS", "shared_parameters"]

_TARGET = """
target : object
    Fitted model under audit (anything :class:`tabmia.target.TargetModel` takes).
"""

_THRESHOLD_PARAMS = """
threshold_goal : {"fpr", "max_ppv", "max_advantage"}, default="fpr"
    Goal of ``threshold_`` (Procedure 5.1 of Jayaraman et al.).
fpr : float, default=0.01
    FPR promised on fresh non-members for ``threshold_goal="fpr"``.
unresolved_fpr : {"raise", "smallest"}, default="raise"
    When the calibration records cannot promise ``fpr``: raise, or aim at the
    smallest FPR they can promise (``fpr_``; see :class:`BaseMembershipAttack`).
prior : float, default=1.0
    Non-members per member (``gamma``), for ``threshold_goal="max_ppv"``.
proxy_estimator : estimator, default=None
    Unfitted proxy recipe for the max-PPV / max-advantage goals.
"""

_RANDOM_STATE_PROXY = """
random_state : int, RandomState instance or None, default=None
    Seed (used by the proxy split only).
"""

_RANDOM_STATE_NOISE = """
random_state : int, RandomState instance or None, default=None
    Seeds the noise (and the proxy split).
"""

_MAX_MEMORY = """
max_memory : int or str, default=None
    Memory that scoring candidates may hold at once: the records outside the pool
    are scored in chunks sized to it (bytes, ``"8GB"``, ``"512MB"`` or a share of
    this machine's memory such as ``"25%"``; None: 256 MiB per core, at
    least 2 GiB, at most half of this machine's memory).
    Results do not depend on it.
    At least 1 MiB (a smaller one is refused by ``fit``); a chunk is never
    smaller than one batch of the models' own (up to 65,536 records), so a budget
    that one batch needs more than is exceeded, with a
    :class:`~tabmia.exceptions.MemoryBudgetWarning` naming the memory held.
"""

#: The reference-model attacks' (RMIA, calibrated) population settings.
_REFERENCE_POPULATION = """
shadow_train_size : int, float or None, default=None
    Records each reference model trains on. A count (e.g. the target's
    training-set size, which the audit and the benchmark pass): the balanced share
    ``a / b`` of the public records closest to it that leaves every record OUT for
    at least two models (``shadow_size_note_`` says when the public records cannot
    reach the count). A float: that share of the public records. None: half.
calibration_share : float in [0, 1), default=0.0
    With ``threshold_goal="fpr"``: ``0`` calibrates ``threshold_`` on every
    public record, scored by the reference models that did not train on it, and
    scores every candidate by as many models drawn the same way (see
    :mod:`tabmia.attacks._reference`). A positive share is held out of every
    model instead and calibrates alone, scored by all models like every
    candidate (exactly split-conformal; the models then train on fewer records).
n_jobs : int, default=None
    Parallel jobs for training reference models (joblib).
"""

_REFERENCE_VERBOSE = """
verbose : bool, default=False
    Progress bar over the reference models.
"""

#: ``name -> text`` of every shared parameter docstring.
PARAMETER_DOCS: dict[str, str] = {
    "target": _TARGET,
    "threshold_params": _THRESHOLD_PARAMS,
    "random_state_proxy": _RANDOM_STATE_PROXY,
    "random_state_noise": _RANDOM_STATE_NOISE,
    "max_memory": _MAX_MEMORY,
    "reference_population": _REFERENCE_POPULATION,
    "reference_verbose": _REFERENCE_VERBOSE,
}

#: Class decorator filling an attack docstring's ``{name}`` lines from PARAMETER_DOCS.
shared_parameters = Substitution(**PARAMETER_DOCS)
