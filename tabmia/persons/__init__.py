"""Person-level membership audits: scores, thresholds and rates whose unit is the person.

Health and credit data hold several records per person (diabetes130: 71,518 patients
with up to 40 encounters each). A record-level audit answers "is this *record* in the
training set?"; the question a person asks is "am *I* in it?" (user-level inference,
Kandpal et al. 2024 [1]_). The record-level threshold does not answer it: a person is
flagged as soon as one of their ``k`` records is, and with a threshold calibrated at a
false positive rate ``fpr`` per record, a non-member person with ``k`` records is
flagged with probability up to ``1 - (1 - fpr)^k``, close to ``k * fpr``. The
promise "at most ``fpr`` of the non-members are flagged" breaks exactly for the
persons with most records, often the most exposed ones.

This module turns a record-level audit (the ``scores`` and ``calibration`` frames of
:class:`tabmia.experiment.ExperimentResult`, docs: records, persons and slices) into a
person-level one in two steps.

**1. One statistic per person** (:data:`PERSON_RULES`; :data:`DEFAULT_RULE` says why
``"combined"`` is the default). Each record first gets its
conformal p-value under the null against the attack's public calibration records of the
same (repeat, attack): ``p_i = (1 + #{calibration scores >= s_i}) / (n_cal + 1)``,
uniform (up to ties) for a fresh non-member record whatever the score's scale [4]_
(:func:`tabmia.thresholds.conformal_pvalues`, the one definition; a public record's:
:func:`tabmia.thresholds.conformal_pvalues_left_out`).

- ``"max"``: the Šidák-adjusted minimum p-value [2]_,
  ``-log(1 - (1 - min_i p_i)^k)``. It asks "is the person's most exposed record more
  extreme than ``k`` independent null records would give?": it finds a person one of
  whose records is memorised (an outlier visit), and is exactly the record score's
  order for ``k = 1``.
- ``"stouffer"``: Stouffer's combination [3]_, ``sum_i z_i / sqrt(k)`` with
  ``z_i = Phi^{-1}(1 - p_i)``. It accumulates weak evidence spread over all of a
  person's records: the model saw every record of a member person, and each leaks a
  little.
- ``"mean"``: the mean of the record scores: for attacks whose score is a
  log-likelihood ratio (RMIA, LiRA online) the mean LLR is the user-inference statistic
  of Kandpal et al. [1]_, and needs no calibration records at the record level.
- ``"combined"`` (the default): the more extreme of ``"max"`` and ``"stouffer"``, each
  put on a normal scale and standardised by the public persons of the person's band.
  ``"max"`` pays Šidák's price for ``k`` records and passes a person all of whose records
  are memorised once ``k`` exceeds what the calibration records resolve; ``"stouffer"``
  dilutes one memorised record by the person's others; the combination finds both.

Neither the Šidák nor the Stouffer formula is trusted for its null distribution: the
records of one person are correlated (same person, similar features), so ``min p``
over ``k`` records is not Šidák-distributed and ``sum z / sqrt(k)`` not standard
normal. Step 2 calibrates each statistic on persons instead.

**2. A person-level threshold, per record-count band.** The attacker's public records
(``calibration``) belong to public *persons*, disjoint from the candidates and drawn
from the same population. Each public person gets the same statistic (its records'
p-values computed against the *other* public persons' records, so that a public
person's records and a candidate's are compared with records of other persons alike).
A candidate person's p-value is its conformal p-value against the public persons of
its own band of record counts ``k`` (same repeat and attack),
``p_person = (1 + #{public persons in band with statistic >= s}) / (n_band + 1)``, and
the person is flagged when ``p_person <= fpr``. The bands are powers of two,
:data:`BANDS`: ``1``, ``2-3``, ``4-7``, ``8-15``, ``16+``. A band with fewer public
persons than ``fpr`` needs (``ceil(1 / fpr) - 1``: the smallest p-value is
``1 / (n_band + 1)``) is merged into the band below it (towards ``k = 1``) until it has
enough; the ``band`` column says where each person was calibrated ("8+" where 8-15 and
16+ were merged), and :func:`person_result`'s metrics say which bands merged and how many
candidates have more records than any public person (nothing calibrates them in a band
of their own).

**The promise.** For a fresh non-member person exchangeable with the public persons of
its band (drawn from the same population, with a number of records in the same band),
``P(flagged) <= fpr``: in every band, so for persons with one record and persons with
forty alike, not only on average over all persons [4]_. It is a marginal promise (over
the draw of the public persons), and holds for any rule: the rules differ in power, not
in validity. In a merged band it holds on average over the band's persons, not for each
number of records within it. What it needs is what the record-level promise needs, public persons like
the candidates; it does not need the records of a person to be independent.

The person's score, for ROC curves and AUC, is ``-log(p_person)`` (higher = more
member-like); the flag is ``p_person <= fpr``, the same as ``score >= -log(fpr)``, so
that one threshold on the score gives the flags of every band. :func:`person_result` builds an
:class:`~tabmia.experiment.ExperimentResult` whose unit is the person, so that the
metrics (every interval resamples persons), the verdict, the gate and the report read it
as they read records. :func:`person_risk` and :func:`most_exposed` describe the
distribution of risk over persons; :func:`person_epsilon` translates a record-level
(epsilon, delta)-DP guarantee into the one a person with ``k`` records has.

References
----------
.. [1] Kandpal, Pillutla, Oprea, Kairouz, Choquette-Choo, Xu. User Inference Attacks on
   Large Language Models. EMNLP 2024.
.. [2] Šidák. Rectangular Confidence Regions for the Means of Multivariate Normal
   Distributions. JASA 62 (1967).
.. [3] Stouffer, Suchman, DeVinney, Star, Williams. The American Soldier, Vol. 1:
   Adjustment during Army Life. Princeton University Press, 1949.
.. [4] Bates, Candès, Lei, Romano, Sesia. Testing for Outliers with Conformal p-values.
   Annals of Statistics 51 (2023). (marginal validity of conformal p-values)
.. [5] Dwork, Roth. The Algorithmic Foundations of Differential Privacy. 2014.
   (group privacy)
"""

from tabmia.persons._display import PersonRiskDisplay
from tabmia.persons._result import most_exposed, person_epsilon, person_result, person_risk
from tabmia.persons._scores import (
    BANDS,
    DEFAULT_RULE,
    PERSON_RULES,
    person_scores,
    public_persons_needed,
)

__all__ = [
    "PERSON_RULES",
    "DEFAULT_RULE",
    "BANDS",
    "person_scores",
    "person_result",
    "person_risk",
    "most_exposed",
    "person_epsilon",
    "public_persons_needed",
    "PersonRiskDisplay",
]
