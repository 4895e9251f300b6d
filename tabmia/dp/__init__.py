"""Differential-privacy audits: does what one training run leaks about canary
records refute a claimed epsilon?

- :mod:`tabmia.dp.bounds`: lower bounds from counts of right membership guesses
  (Steinke et al. 2023 for (epsilon, delta)-DP; Mahloujifar et al. 2025 for mu-GDP);
- :mod:`tabmia.dp.guesses`: canary scores to guesses (abstaining in the middle) and
  to the bounds, with the guessing rule chosen without the inclusion bits;
- :mod:`tabmia.dp.canaries`: canary records (real, label-flipped or outliers);
- :mod:`tabmia.dp.one_run`: :class:`OneRunAudit`, the whole audit of a recipe;
- :mod:`tabmia.dp.result`: :class:`OneRunAuditResult` and its verdict;
- :mod:`tabmia.dp.claims`: refuted, consistent or cannot tell, and how many canaries
  could refute a claim (the rule of :mod:`tabmia.claims`, which the membership game's
  DP table uses: :func:`membership_claim_check`, re-exported here);
- :mod:`tabmia.dp.mechanisms`: classifiers of exactly known privacy to check an
  audit against.

See ``docs/dp_audit.md``.
"""

from tabmia.claims import CLAIM_STATES, ClaimCheck, membership_claim_check, records_to_refute
from tabmia.dp.bounds import (
    epsilon_lower_bound_one_run,
    gdp_epsilon,
    gdp_lower_bound_one_run,
    one_run_p_value,
)
from tabmia.dp.canaries import CANARY_KINDS, make_canaries
from tabmia.dp.claims import canaries_to_refute, guesses_to_refute, one_run_claim_check
from tabmia.dp.guesses import GUESS_STRATEGIES, audit_canary_scores, guess_rules
from tabmia.dp.mechanisms import GaussianMembershipClassifier, RandomizedResponseClassifier
from tabmia.dp.one_run import OneRunAudit
from tabmia.dp.result import OneRunAuditResult

__all__ = [
    "CANARY_KINDS",
    "CLAIM_STATES",
    "ClaimCheck",
    "GUESS_STRATEGIES",
    "GaussianMembershipClassifier",
    "OneRunAudit",
    "OneRunAuditResult",
    "RandomizedResponseClassifier",
    "audit_canary_scores",
    "canaries_to_refute",
    "epsilon_lower_bound_one_run",
    "gdp_epsilon",
    "gdp_lower_bound_one_run",
    "guess_rules",
    "guesses_to_refute",
    "make_canaries",
    "membership_claim_check",
    "one_run_claim_check",
    "one_run_p_value",
    "records_to_refute",
]
