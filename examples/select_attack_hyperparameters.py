"""
Choose an attack's hyperparameters honestly: on a simulated game, never on the audit
====================================================================================

The audited model's candidates are what the audit measures, so tuning an attack on
them overstates the leak. Instead the auditor plays a membership game of its own: it
trains a *shadow* model of the target's recipe on half of its public records (the
game's members; the other half are the game's non-members) and lets
``GridSearchCV`` pick, by TPR at 5% FPR on that game, which score and which
thresholding the attack uses. The chosen attack then runs once on the real target.

The table lists every candidate setting: its game score (what chose it) next to what
it achieves on the real target (shown for comparison only; the choice never saw it).

Run: ``python examples/select_attack_hyperparameters.py`` (a few seconds)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GridSearchCV

from tabmia.attacks import ScoreAttack
from tabmia.game import membership_game
from tabmia.metrics import auc, make_membership_scorer, tpr_at_fpr
from tabmia.report import markdown_table

FPR = 0.05


def recipe() -> RandomForestClassifier:
    return RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=0)


# %%
# The data: 1000 training records of the target, 1000 non-member candidates, and 2000
# public records the auditor holds. The auditor's game is played on a shadow of the
# target's recipe trained on half of the public records.


def main() -> None:
    X, y = make_classification(n_samples=4000, n_features=12, n_informative=6, n_classes=3,
                               flip_y=0.1, class_sep=0.8, random_state=0)
    rng = np.random.RandomState(0)
    train, nonmembers, public = np.split(rng.permutation(len(y)), [1000, 2000])

    # the model under audit and its candidates (members and non-members, 1000 each)
    target = recipe().fit(X[train], y[train])
    candidates = np.r_[train, nonmembers]
    member = np.r_[np.ones(train.size, bool), np.zeros(nonmembers.size, bool)]

    # the auditor's game: a shadow of the same recipe on half of the public records
    shadow_in, shadow_out = public[: public.size // 2], public[public.size // 2:]
    shadow = recipe().fit(X[shadow_in], y[shadow_in])
    X_game, y_game = membership_game(X[shadow_in], y[shadow_in], X[shadow_out],
                                     y[shadow_out], random_state=0)

    grid = {"statistic": ["loss", "confidence", "entropy", "hinge"],
            "class_based": [False, True]}
    search = GridSearchCV(ScoreAttack(shadow, fpr=FPR), grid, cv=3,
                          scoring=make_membership_scorer("tpr_at_fpr", fpr=FPR))
    search.fit(X_game, y_game)

    rows = []
    for params, game_score in zip(search.cv_results_["params"],
                                  search.cv_results_["mean_test_score"]):
        # every public record is a known non-member of the real target
        attack = clone(search.estimator).set_params(target=target, **params)
        attack.fit(X[public], y[public])
        s = attack.decision_function(X[candidates], y[candidates])
        rows.append({"attack": f"ScoreAttack({params['statistic']}, class_based="
                               f"{params['class_based']})",
                     "chosen": "yes" if params == search.best_params_ else "",
                     f"game TPR@{FPR:g}": f"{game_score:.3f}",
                     f"real TPR@{FPR:g}": f"{tpr_at_fpr(member, s, fpr=FPR):.3f}",
                     "real AUC": f"{auc(member, s):.3f}"})
    print(markdown_table(pd.DataFrame(rows)))
    print(f"chosen on the shadow's game: {search.best_params_}")


if __name__ == "__main__":
    main()
