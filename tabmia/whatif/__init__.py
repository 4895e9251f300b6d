"""What to change: candidate fixes of a model re-audited side by side (issue 41).

:func:`whatif` audits the original model and its variants — retrained with other
parameters (:func:`retrain`, :func:`grid`, the ``"regularise"`` preset), the same model
behind a hardened output (:func:`harden`, :class:`HardenedOutput`), DP training
(:func:`dp`), at most ``k`` records per person (:func:`cap`) — with the same attacks on the
same public records and candidates, measures each one's utility on held-out records, and
returns a :class:`WhatIfResult`: the change in risk and in utility against the original
with paired intervals, the FPR each threshold delivered, which variants pass a privacy
gate and the one that passes with the least utility lost, on a privacy-utility frontier.
Each DP variant's ε is checked by the one-run DP audit. :func:`reaudit` re-audits the
chosen variant on fresh non-members, since choosing among variants on the same data is
itself a selection. See ``docs/user_guide/whatif.md``.
"""

from tabmia.whatif._display import FrontierDisplay
from tabmia.whatif.hardening import HardenedOutput, harden_proba
from tabmia.whatif.result import VariantRun, WhatIfResult, combine
from tabmia.whatif.runner import UTILITY_METRICS, default_label_attacks, reaudit, whatif
from tabmia.whatif.variants import (
    PRESETS,
    Variant,
    cap,
    dp,
    grid,
    harden,
    resolve_variants,
    retrain,
)

__all__ = [
    "FrontierDisplay",
    "whatif",
    "reaudit",
    "combine",
    "WhatIfResult",
    "VariantRun",
    "Variant",
    "retrain",
    "grid",
    "harden",
    "dp",
    "cap",
    "PRESETS",
    "resolve_variants",
    "HardenedOutput",
    "harden_proba",
    "default_label_attacks",
    "UTILITY_METRICS",
]
