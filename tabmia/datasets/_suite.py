"""Task table of the Grinsztajn et al. (2022) tabular-benchmark classification suites.

OpenML study 337 ("clf_num", classification on numerical features) and study
334 ("clf_cat", classification on numerical and categorical features).  Each
OpenML task points at a benchmark-transformed data set whose Hugging Face copy
(``inria-soda/tabular-benchmark``) is ``<suite>/<name>.csv``.

How the ids were checked (no network access to openml.org was available):

* "verified": the task id -> name pairing appears in a third-party mapping
  found in public code (a task-id -> {name, n_samples, n_features, url with
  ``collections.id=337``} table for clf_num; a task-id -> name dict used to
  merge tabular-benchmark results for clf_cat) *and* its sizes agree with the
  HF dataset card.  For the clf_num ids the brief's list of known ids agrees as
  well (361055, 361060, 361062, 361063, 361065, 361066, 361070).
* "brief": given by the project brief / the data PROVENANCE.md, not
  independently confirmed.  These three tasks (wine, kdd_ipums_la_97-small,
  phoneme) were in the original study 337 but are no longer in the current
  suite or on the HF card.
* "unverified": the id is in a third-party copy of the current study-337 task
  list, but the name was assigned by elimination (the remaining HF-card
  data sets); treat the pairing as a guess.  Loading by id through OpenML is
  unaffected; only the HF file name would be wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SUITE_TASKS", "SuiteTask", "hf_relpaths"]


@dataclass(frozen=True)
class SuiteTask:
    """One task of the benchmark suites.

    Attributes
    ----------
    task_id : int
        OpenML task id.
    name : str
        Data set name as in the HF layout (``<suite>/<name>.csv``).
    suite : str
        ``"clf_num"`` or ``"clf_cat"``.
    dataset_id : int or None
        OpenML data set id of the benchmark version (HF card "new_link").
    n_samples, n_features : int or None
        Size per the HF card (features exclude the label).
    status : str
        ``"verified"``, ``"brief"`` or ``"unverified"`` (see module docstring).
    """

    task_id: int
    name: str
    suite: str
    dataset_id: int | None
    n_samples: int | None
    n_features: int | None
    status: str


_T = SuiteTask
SUITE_TASKS: dict[int, SuiteTask] = {
    t.task_id: t
    for t in [
        # ---- clf_num (OpenML study 337)
        _T(361055, "credit", "clf_num", 44089, 16714, 10, "verified"),
        _T(361057, "wine", "clf_num", 44091, 2554, 11, "brief"),  # PROVENANCE: medium confidence
        _T(361060, "electricity", "clf_num", 44120, 38474, 7, "verified"),
        _T(361061, "covertype", "clf_num", 44121, 566602, 10, "unverified"),
        _T(361062, "pol", "clf_num", 44122, 10082, 26, "verified"),
        _T(361063, "house_16H", "clf_num", 44123, 13488, 16, "verified"),
        _T(361064, "kdd_ipums_la_97-small", "clf_num", 44124, 5188, 20, "brief"),
        _T(361065, "MagicTelescope", "clf_num", 44125, 13376, 10, "verified"),
        _T(361066, "bank-marketing", "clf_num", 44126, 10578, 7, "verified"),
        _T(361067, "phoneme", "clf_num", 44127, 3172, 5, "brief"),
        _T(361068, "MiniBooNE", "clf_num", 44128, 72998, 50, "unverified"),
        _T(361069, "Higgs", "clf_num", 44129, 940160, 24, "unverified"),
        _T(361070, "eye_movements", "clf_num", 44130, 7608, 20, "verified"),
        _T(361273, "Diabetes130US", "clf_num", 45022, 71090, 7, "verified"),
        _T(361274, "jannis", "clf_num", 45021, 57580, 54, "unverified"),
        _T(361275, "default-of-credit-card-clients", "clf_num", 45020, 13272, 20, "verified"),
        _T(361276, "Bioresponse", "clf_num", 45019, 3434, 419, "unverified"),
        _T(361277, "california", "clf_num", 45028, 20634, 8, "verified"),
        _T(361278, "heloc", "clf_num", 45026, 10000, 22, "verified"),
        # ---- clf_cat (OpenML study 334)
        _T(361110, "electricity", "clf_cat", 44156, 38474, 8, "verified"),
        _T(361111, "eye_movements", "clf_cat", 44157, 7608, 23, "verified"),
        _T(361113, "covertype", "clf_cat", 44159, 423680, 54, "verified"),
        _T(361282, "albert", "clf_cat", 45035, 58252, 31, "verified"),
        _T(361283, "default-of-credit-card-clients", "clf_cat", 45036, 13272, 21, "verified"),
        _T(361285, "road-safety", "clf_cat", 45038, 111762, 32, "verified"),
        _T(361286, "compas-two-years", "clf_cat", 45039, 4966, 11, "verified"),
    ]
}


def hf_relpaths(task: SuiteTask) -> list[str]:
    """Relative paths (under the data home) of the task's HF-layout CSV, in search order.

    ``tabular-benchmark/<suite>/<name>.csv.gz`` first, then the plain ``.csv``,
    then the flat naming ``tabular-benchmark/<suite>_<name>.csv[.gz]``.
    """
    base = f"tabular-benchmark/{task.suite}/{task.name}.csv"
    flat = f"tabular-benchmark/{task.suite}_{task.name}.csv"
    return [base + ".gz", base, flat + ".gz", flat]
