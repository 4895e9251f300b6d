"""
Choose an attack's hyperparameters honestly: on a simulated game, never on the audit
====================================================================================

The audited model's candidates are what the audit measures, so tuning an attack on
them overstates the leak. Instead the auditor plays a membership game of its own: it
trains a *shadow* model of the target's recipe on half of its public records (the
game's members; the other half are the game's non-members) and lets
:class:`~sklearn.model_selection.GridSearchCV` pick, by TPR at 5% FPR on that game,
which score and which thresholding the attack uses
(:func:`~tabmia.game.membership_game`, :func:`~tabmia.metrics.make_membership_scorer`).
The chosen attack then runs once on the real target.

The table lists every candidate setting: its game score (what chose it) next to what
it achieves on the real target (shown for comparison only; the choice never saw it).

Run: ``python examples/select_attack_hyperparameters.py`` (a few seconds)
"""

# %%
# The data and the target
# -----------------------
# 1000 training records of the target, 1000 non-member candidates, and 2000 public
# records the auditor holds. The target is a random forest.

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GridSearchCV

from tabmia.attacks import ScoreAttack
from tabmia.game import membership_game
from tabmia.metrics import auc, make_membership_scorer, tpr_at_fpr

FPR = 0.05


def recipe() -> RandomForestClassifier:
    """The target's training recipe (unfitted), which the auditor knows."""
    return RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=0)


X, y = make_classification(n_samples=4000, n_features=12, n_informative=6, n_classes=3,
                           flip_y=0.1, class_sep=0.8, random_state=0)
rng = np.random.RandomState(0)
train, nonmembers, public = np.split(rng.permutation(len(y)), [1000, 2000])

# the model under audit and its candidates (members and non-members, 1000 each)
target = recipe().fit(X[train], y[train])
candidates = np.r_[train, nonmembers]
member = np.r_[np.ones(train.size, bool), np.zeros(nonmembers.size, bool)]

# %%
# The auditor's game
# ------------------
# A shadow of the same recipe trained on half of the public records plays the target:
# its members and the other half of the public records are shuffled into one game,
# whose labels carry each record's class and membership. ``GridSearchCV`` splits the
# game like any data set: each fold's attack is fitted on its training part's
# non-members and scored on its test part, members against non-members.

shadow_in, shadow_out = public[: public.size // 2], public[public.size // 2:]
shadow = recipe().fit(X[shadow_in], y[shadow_in])
X_game, y_game = membership_game(X[shadow_in], y[shadow_in], X[shadow_out],
                                 y[shadow_out], random_state=0)

grid = {"statistic": ["loss", "confidence", "entropy", "hinge"],
        "class_based": [False, True]}
search = GridSearchCV(ScoreAttack(shadow, fpr=FPR), grid, cv=3,
                      scoring=make_membership_scorer("tpr_at_fpr", fpr=FPR))
search.fit(X_game, y_game)
print(f"Chosen on the shadow's game: {search.best_params_}")

# %%
# Every setting on the real target
# --------------------------------
# For comparison only, each setting is fitted on the public records (every one a known
# non-member of the real target) and run on the real candidates:

rows = []
for params, game_score in zip(search.cv_results_["params"],
                              search.cv_results_["mean_test_score"]):
    attack = clone(search.estimator).set_params(target=target, **params)
    attack.fit(X[public], y[public])
    s = attack.decision_function(X[candidates], y[candidates])
    rows.append({"statistic": params["statistic"], "class-based": params["class_based"],
                 "chosen": "yes" if params == search.best_params_ else "",
                 f"game TPR@{FPR:g}": game_score,
                 f"real TPR@{FPR:g}": tpr_at_fpr(member, s, fpr=FPR),
                 "real AUC": auc(member, s)})
table = pd.DataFrame(rows).set_index(["statistic", "class-based"])
table.round(3)

# %%
# The game ranks the settings as the real target does: class-based thresholds (one per
# class) beat one threshold for all records, whatever the score, and the setting chosen
# on the game is among the best on the real target, without the search ever seeing the
# target's candidates.

labels = [r["statistic"] + (", class-based" if r["class-based"] else "")
          + (" (chosen)" if r["chosen"] else "") for r in rows]
positions = np.arange(len(rows))
fig, ax = plt.subplots(figsize=(6.5, 4.5))
ax.barh(positions - 0.2, table[f"game TPR@{FPR:g}"], height=0.4,
        label="shadow's game (what chooses)")
ax.barh(positions + 0.2, table[f"real TPR@{FPR:g}"], height=0.4,
        label="real target (never seen)")
ax.set_yticks(positions, labels)
ax.invert_yaxis()
ax.set_xlabel(f"TPR at {FPR:.0%} FPR")
ax.set_title("The shadow's game ranks the settings as the target does", fontsize=10)
ax.legend(loc="upper center", bbox_to_anchor=(0.4, -0.13), ncol=2, fontsize=8)
fig.tight_layout()
