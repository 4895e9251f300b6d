"""
Audit patients, not rows: a readmission model on diabetes130
============================================================

A hospital network trained a random forest that predicts readmission within 30 days on
the encounters of some of its patients. Health data hold several records per person:
diabetes130 has 101,766 encounters of 71,518 patients, up to 40 each. A patient asks
"am *I* in the training set?", not "is this encounter?", and the law judges each data
subject: the audit's unit should be the patient.

This example trains the forest on a third of the patients, audits it with person ids
(``groups_train=`` and ``groups_population=`` of :func:`~tabmia.audit.audit_model`:
patients are split whole, the shadow models keep them whole), and turns the encounter-level
result into a patient-level one with :func:`~tabmia.persons.person_result`. It then shows
what a split by rows would have mis-stated on the same data. See
:doc:`/user_guide/persons`.

Needs diabetes130 in the data home (``TABMIA_DATA``, e.g. ../shared/data).

Run: ``python examples/audit_persons_diabetes130.py`` (about half a minute on 2 CPU cores; with
``TABMIA_EXAMPLES_QUICK=1``, as in the documentation build, 4,000 encounters and 4
shadow models)
"""

# %%
# Whole patients, and the hospital's model
# ----------------------------------------
# :func:`~tabmia.experiment.subsample_persons` draws whole patients (all their
# encounters) up to a number of encounters. The hospital trains its forest on the
# encounters of a third of those patients; the others are the population the model never
# saw. The patient number (``groups``) is no model input: the loader keeps it apart from
# the features.

import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OrdinalEncoder

from tabmia.attacks import LiRAAttack, LossAttack
from tabmia.audit import audit_model
from tabmia.datasets import load_diabetes130
from tabmia.experiment import MembershipExperiment, subsample_persons
from tabmia.persons import most_exposed, person_result, person_risk

#: The documentation build's quick path: fewer encounters and shadow models.
QUICK = os.environ.get("TABMIA_EXAMPLES_QUICK") == "1"
N_RECORDS = 4_000 if QUICK else 10_000
N_SHADOW = 4 if QUICK else 8
FPR = 0.05
LIRA = f"LiRA offline ({N_SHADOW} shadows)"


def readmission_model() -> Pipeline:
    """The hospital's training recipe (unfitted): categories as ordinal codes, then a
    random forest grown in full."""
    codes = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1,
                           encoded_missing_value=-2)
    prepare = ColumnTransformer(
        [("categorical", codes, make_column_selector(dtype_include="category"))],
        remainder="passthrough",
    )
    forest = RandomForestClassifier(n_estimators=100, n_jobs=2, random_state=0)
    return Pipeline([("prepare", prepare), ("model", forest)])


def make_attacks() -> dict:
    """The loss attack and offline LiRA with shadow forests of the hospital's recipe,
    thresholds aimed at 5% FPR (unfitted)."""
    return {
        "loss": LossAttack(fpr=FPR),
        LIRA: LiRAAttack(shadow_estimator=readmission_model(), n_shadow=N_SHADOW, fpr=FPR),
    }


data = load_diabetes130(binary=True)  # readmitted within 30 days
X, y, patient = subsample_persons(data.data, np.asarray(data.target), data.groups,
                                  N_RECORDS, random_state=0)
patients = pd.unique(patient)
rng = np.random.RandomState(0)
trained_on = np.isin(patient, rng.choice(patients, len(patients) // 3, replace=False))
model = readmission_model().fit(X[trained_on], y[trained_on])
print(f"{len(y)} encounters of {len(patients)} patients; the model trains on "
      f"{trained_on.sum()} encounters of {pd.unique(patient[trained_on]).size} patients")

# %%
# The audit, with person ids
# --------------------------
# The population's patients are split whole: half to the attacker as public records,
# half as non-member candidates. Every threshold aims at 5% FPR. The loss attack needs
# no model of its own; offline LiRA trains shadow forests of the hospital's recipe on
# the public records, drawing one IN/OUT mask per *patient*, so that no shadow counts a
# patient OUT whose other encounters it trained on. What tabmia notes along the way is
# printed as ``tabmia: note:`` lines, as ``tabmia audit`` prints them.

with warnings.catch_warnings(record=True) as notes:
    warnings.simplefilter("always")
    records = audit_model(
        model, X[trained_on], y[trained_on], X[~trained_on], y[~trained_on], make_attacks(),
        public_fraction=0.5, fprs=(FPR, 0.01), random_state=0,
        groups_train=patient[trained_on], groups_population=patient[~trained_on],
    )
    persons = person_result(records, fprs=(FPR, 0.01))  # the "combined" rule (the default)
for note in notes:
    print(f"tabmia: note: {note.message}")

# %%
# Encounters and patients, side by side
# -------------------------------------
# For each attack, the first row is the encounter-level audit: each encounter scored and
# flagged at a threshold promising 5% FPR per encounter. The second is the patient-level
# audit: each patient's encounters combined (the more extreme of their most exposed
# encounter, adjusted for their number, and all of their evidence summed)
# and calibrated on the attacker's public patients, flagged at a threshold promising 5%
# FPR per *patient*, in every band of record counts. Intervals resample patients.

COLUMNS = {"n_members": "members", "n_nonmembers": "non-members", "auc": "AUC",
           "tpr": "TPR (own threshold)", "fpr": "FPR (own threshold)",
           "tpr@0.01": "TPR@1%FPR (oracle)"}


def side_by_side(result, unit):
    """A few columns of ``result.metrics``, one row per (attack, unit)."""
    table = result.metrics[["attack", *COLUMNS]].rename(columns=COLUMNS)
    return table.assign(unit=unit).set_index(["attack", "unit"])


table = pd.concat([side_by_side(records, "encounter"), side_by_side(persons, "patient")])
table.sort_index(level="attack", sort_remaining=False).round(3)

# %%
# The promise, band by band
# -------------------------
# A threshold set for 5% FPR per encounter flags a non-member patient as soon as one of
# their ``k`` encounters is flagged: up to ``1 - 0.95^k`` of them, 23% for ``k = 5``. The
# patient-level threshold is calibrated within bands of record counts (``band``), so
# that its 5% holds for patients with one encounter and with many alike. Per band: the
# share of member patients flagged, of non-member patients flagged by the patient-level
# threshold, and of non-member patients with at least one encounter flagged by the
# encounter-level threshold. (A band of a few dozen non-member patients scatters around
# 5%: the promise is about the chance of a flag, not about one audit's count.)

who = persons.scores[persons.scores["attack"] == LIRA]
any_record = (records.scores[records.scores["attack"] == LIRA]
              .groupby("person")["flagged"].any())
who = who.assign(any_record_flagged=who["person"].map(any_record).to_numpy(bool))
bands = (who.groupby(["band", "member"])
         .agg(patients=("person", "size"), flagged=("flagged", "mean"),
              any_record_flagged=("any_record_flagged", "mean"))
         .unstack("member"))
# bands in order of their record counts ("4-15": two bands merged, short of public patients)
bands = bands.sort_index(key=lambda band: band.str.extract(r"^(\d+)")[0].astype(int))

fig, ax = plt.subplots(figsize=(6.5, 4))
x = np.arange(len(bands))
ax.bar(x - 0.27, bands[("flagged", True)], 0.27, label="member patients (patient threshold)")
ax.bar(x, bands[("flagged", False)], 0.27, label="non-member patients (patient threshold)")
ax.bar(x + 0.27, bands[("any_record_flagged", False)], 0.27,
       label="non-member patients, any encounter flagged (encounter threshold)")
ax.axhline(FPR, color="black", linestyle="--", linewidth=1, label="promised FPR (5%)")
ax.set_xticks(x, [f"{b}\n({n} non-members)" for b, n in
                  zip(bands.index, bands[("patients", False)].astype(int))])
ax.set_xlabel("encounters per patient")
ax.set_ylabel("share of patients flagged")
ax.set_title(f"diabetes130, {LIRA}: patients flagged per band")
ax.legend(fontsize=7, loc="upper left")
fig.tight_layout()

# %%
# How many patients the model exposes
# -----------------------------------
# :func:`~tabmia.persons.person_risk` counts the patients whose evidence of membership
# (one minus their patient-level p-value) reaches each level. A non-member patient
# reaches level ``l`` with probability at most ``1 - l``: member patients above that
# share are the ones the model exposes.

risk = person_risk(persons.scores, levels=(0.9, 0.95, 0.99))
risk.pivot_table(index=["attack", "level"], columns="member", values="share").rename(
    columns={True: "member patients", False: "non-member patients"}).round(3)

# %%
# The most exposed patients
# -------------------------
# :func:`~tabmia.persons.most_exposed` ranks the patients by their patient-level score,
# ``-log(p_value)``. A band's smallest p-value is one over its public patients plus one,
# so the top of each band ties: the audit ranks patients as finely as its public patients
# resolve, no finer. The patients with several encounters among the most exposed (the
# patient number is the data set's de-identified ``patient_nbr``):

top = who["p_value"] == who["p_value"].min()
print(f"{LIRA}: {top.sum()} patients ({who.loc[top, 'member'].sum()} of them members) share "
      f"the smallest p-value, {who['p_value'].min():.4f}")
exposed = most_exposed(who[who["n_records"] > 1], n=8)
exposed.drop(columns=["attack", "repeat"]).set_index("rank").round(4)

# %%
# What a split by rows mis-states
# -------------------------------
# The same encounters, audited as an audit without person ids does it:
# :class:`~tabmia.experiment.MembershipExperiment` trains the same recipe on a third of
# the *encounters* and splits the rest, encounter by encounter, between the attacker's
# public records and the non-member candidates. Many "non-member" encounters then belong
# to patients whose other encounters trained the model: they are no fresh patients, yet
# their flags count as false positives, and a shadow model counts such a patient OUT
# while it trained on their other encounters.

with warnings.catch_warnings(record=True) as notes:
    warnings.simplefilter("always")
    by_rows = MembershipExperiment(readmission_model(), make_attacks(), train_size=1 / 3,
                                   public_size=0.5, fprs=(FPR,), random_state=0).run(X, y)
for note in notes:
    print(f"tabmia: note: {note.message}")
split = by_rows.splits[0]
member_patients = pd.unique(patient[split.members])
share = {what: np.isin(patient[rows], member_patients).mean()
         for what, rows in (("non-member candidates", split.nonmembers),
                            ("attacker's public records", split.public))}
print("encounters of member patients under the row split: "
      + ", ".join(f"{v:.1%} of the {k}" for k, v in share.items()))

# %%
# Each attack's false positive rate on the row split's "non-member" encounters, apart for
# the encounters of member patients and of patients the model never saw (with one
# encounter, or several). The row split's FPR mixes the three, each at its own rate:
# what it measures is a rate over encounters, and says nothing of the rate at which
# patients the model never saw are flagged.

nonmembers = by_rows.scores[~by_rows.scores["member"]]
n_encounters = pd.Series(patient).map(pd.Series(patient).value_counts()).to_numpy()
rows = nonmembers["record"].to_numpy()
nonmembers = nonmembers.assign(patient=np.select(
    [np.isin(patient[rows], member_patients), n_encounters[rows] > 1],
    ["member patient", "new patient, 2+ encounters"], "new patient, 1 encounter"))
(nonmembers.groupby(["attack", "patient"])["flagged"].agg(["size", "mean"])
 .rename(columns={"size": "encounters", "mean": "flagged (FPR)"})
 .unstack("patient").round(3))
