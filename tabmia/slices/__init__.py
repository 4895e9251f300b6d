"""Which groups leak more: a per-slice membership report with a disparity test that
does not cry wolf (issue 40).

A *slice* is a group of records named by a label (fairlearn's ``sensitive_features``):
sex, an age band, an intersection such as "age 25-37 & sex=Female". The labels travel
as ``slice:<name>`` columns of ``ExperimentResult.scores`` (one row per repeat, attack
and candidate) and ``ExperimentResult.calibration`` (one row per repeat, attack and
public calibration record; docs/records_persons_slices.md).

What is reported, per attack and slice, for the attack **as fitted** (its own threshold,
chosen on the public records; nothing is refitted on a slice's candidates):

- the TPR the attack's threshold gives the slice's members and the FPR it delivers to
  the slice's non-members (``flagged``), with Clopper-Pearson intervals and counts: one
  global threshold does not keep its FPR promise slice by slice;
- the TPR at a threshold calibrated on the slice's own public records (split-conformal,
  :func:`tabmia.thresholds.select_threshold` at the attack's FPR goal ``fpr``): what an
  attacker who knows the slice reaches at FPR ``fpr`` in it. "not resolvable" (NaN) where
  the slice has fewer public records than ``fpr`` needs (``1/fpr - 1``), or where the attack's
  scores tie at the top of the slice so that the threshold lies above the tie and flags
  none of its candidates (it delivers FPR 0, not ``fpr``: no equal-FPR comparison, no power);
- the slice's AUC with its bootstrap interval (:func:`tabmia.metrics.bootstrap_auc_interval`).

The grouping is fairlearn's :class:`~fairlearn.metrics.MetricFrame` (``y_true=member``,
``y_pred=flagged``); tabmia supplies the membership metrics and the statistics.

The disparity test
------------------
*What is compared.* Not the members' flag rate (TPR) alone: slices differ in base
difficulty (a model is surer of some groups' records whether or not it trained on
them), so a slice's members may be flagged more only because its records score higher,
members and non-members alike. A chi-square test of the members' flag rates across
slices, or a permutation of slice labels within the members, rejects on such
differences however little the model leaks (benchmarks/results/slices_null.md measures
it), and a test of the non-members' FPR measures the threshold, not leakage. What
isolates membership leakage in a slice is the gap between its members and its *own*
non-members at the same threshold, the membership advantage ``TPR_s - FPR_s`` (Yeom et
al.; Kulynych et al.'s "disparate vulnerability" compares it across groups). At which
threshold:

- at the attack's own (global) threshold the advantage is zero in every slice when the
  target leaks nothing, but under a leak that is the *same* in every slice it still
  differs from slice to slice, because one threshold cuts an easy slice's scores at a
  better point than a hard slice's: it measures where the threshold falls as much as
  how much leaks (benchmarks/results/slices_null.md, part c: 39% and 66% of runs name
  a slice at FPR 1% and 5% when the leak has the same ROC curve in all 8 slices);
- at a threshold calibrated on each slice's own public records to the attack's FPR ``fpr``,
  slices are compared at equal FPR, i.e. on their own ROC curves, blind to where their
  scores lie (the same runs: 6% and 4%). The calibrated TPR alone would not do: its
  threshold comes from the slice's few public records and so delivers a FPR scattered
  around ``fpr`` (a Beta law, :func:`tabmia.thresholds.conformal_fpr_band`), a scatter that
  passes for disparity; subtracting the FPR the very same threshold delivers to the
  slice's non-member candidates removes it.

So the test compares the **calibrated advantage** ``TPR_s(t_s) - FPR_s(t_s)`` of each
slice with that of the rest of the slices that resolve ``fpr``; where fewer than two slices
resolve it (few public records, or no calibration frame), it falls back to the advantage
at the attack's own threshold and says so. Both are reported (``tests``); one is tested.

*Equal calibration.* Every slice of a repeat calibrates on the same number of its public
records, drawn at random, a whole multiple of ``1 / fpr`` minus one: a threshold from
``n`` records delivers ``floor(fpr (n + 1)) / (n + 1)`` on average and scatters the more
the fewer they are, so slices calibrated on their own counts would be compared at
different FPRs and with different noise.

*Null and exactness.* The calibrated advantage is tested against the null that every
slice has the same ROC curve (:func:`~tabmia.slices._stats.roc_null_test`): each draw
gives every slice its conformal threshold's FPR, ``1 - U`` with ``U`` the ``j``-th order
statistic of ``m`` uniforms (whatever the slice's scores), the pooled ROC curve's TPR at
it, and binomial flags. A permutation of membership that held the thresholds fixed would
miss their scatter: under a leak equal in every slice it named a slice in 23 of 40 runs
(now 0 of 40, tests/test_slices.py). Where fewer than two slices calibrate, the
advantage at the attack's own threshold is tested by permutation: when the target leaks
nothing, a slice's members and non-members are exchangeable, whatever the slice's
difficulty, so membership is permuted within each (repeat, slice) stratum: the count of
flagged members in a stratum is then hypergeometric, and is drawn as such
``n_permutations`` times (thresholds come from the public records and stay fixed). Each slice's statistic is its advantage minus the rest's,
studentised by its exact permutation standard deviation (a z); the omnibus statistic of
an (attack, slicing) is the largest z over its slices (max-T), one-sided ("leaks
*more*"), and its permutation p-value is exact under that null at any size, FPR or slice
difficulty. Studentising keeps the test near its level under an equal leak too.

*Which slice.* Each slice's one-sided permutation p-value is adjusted across every
slice-vs-rest comparison of the report (all attacks and slicings) by Holm (or
Bonferroni, or Benjamini-Hochberg: ``correction``), and the omnibus p-values across the
(attack, slicing) pairs by Holm. A slice is named only when both its adjusted p-value
and its omnibus adjusted p-value are at most ``alpha``: when the target leaks nothing the
chance of any alarm in the report is at most ``alpha`` (the omnibus step alone ensures
it), and only when the slices were compared at equal FPR (the calibrated advantage; a
rejection at the attack's own threshold says the target leaks, not which slice more) and
the interval printed beside the name excludes 0. That interval (MOVER with Wilson
intervals: Newcombe's method extended to ``TPR_s - FPR_s - TPR_r + FPR_r``; the TPR
difference with Newcombe's) is simultaneous over the report's ``m`` comparisons, at
``1 - (1 - confidence) / m`` (Bonferroni, Holm's first step): the test's null spread
can be narrower than a small slice's own binomial spread, and a name beside an interval
holding 0 would state a size the data do not resolve (issue 46).
Where nothing is named the report says at what power: the smallest advantage difference
(a TPR difference at equal FPR) a slice would need for the test to find it with 80%
power, ``(z_{1-alpha/m} + z_{0.8}) x SE`` with ``SE`` the permutation standard deviation
at these counts and ``m`` the number of comparisons (normal approximation, Holm's first
step); stated only where the calibrated thresholds flag some candidates, for a difference
a slice can reach.

*Repeats* pool: counts add over repeats (a slice's rate is over its candidates of every
repeat), the permutation is stratified by repeat, a slice's calibrated threshold is
chosen per repeat (resolvable only if every repeat resolves it), and its AUC is that of
the stacked scores (one repeat: the audit's AUC).

References
----------
.. [1] Kulynych, Yaghini, Cherubin, Veale, Troncoso. Disparate Vulnerability to
   Membership Inference Attacks. PoPETs 2022.
.. [2] Westfall, Young. Resampling-Based Multiple Testing. Wiley 1993. (max-T)
.. [3] Holm. A simple sequentially rejective multiple test procedure. Scand. J. Stat. 1979.
.. [4] Newcombe. Interval estimation for the difference between independent proportions.
   Stat. Med. 1998; Zou, Donner. Construction of confidence limits about effect measures
   (MOVER). Stat. Med. 2008.
"""

from tabmia.slices._display import SliceRiskDisplay
from tabmia.slices._labels import SLICE_PREFIX, SliceLabels, slice_columns, slice_labels
from tabmia.slices._report import SliceReport, slice_report, slice_report_from_frames

__all__ = [
    "SLICE_PREFIX",
    "SliceLabels",
    "slice_labels",
    "slice_columns",
    "slice_report",
    "slice_report_from_frames",
    "SliceReport",
    "SliceRiskDisplay",
]
