"""What a user hit in issue 24 (item 5): each mistake ends in one clear error."""

from __future__ import annotations

import pickle
import warnings

import pytest
from sklearn.base import clone

from tabmia.attacks import CalibratedAttack, QuantileAttack, ScoreAttack


@pytest.mark.parametrize("cls, default", [(ScoreAttack, "loss"), (CalibratedAttack, "loss"),
                                          (QuantileAttack, "hinge")])
def test_statistic_and_the_old_score_keyword_together_raise(cls, default):
    # the default's own name given explicitly is still "both given"
    with pytest.raises(TypeError, match="give statistic only"):
        cls(statistic=default, score="entropy")
    with pytest.raises(TypeError, match="give statistic only"):
        cls(statistic="entropy", score="entropy")
    # the old keyword alone still works, with its warning; a clone or a pickle of the
    # default still takes it
    with pytest.warns(FutureWarning, match="renamed 'statistic'"):
        assert cls(score="entropy").statistic == "entropy"
    for copy in (clone(cls()), pickle.loads(pickle.dumps(cls()))):
        assert copy.statistic == default
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert clone(cls()).get_params()["statistic"] == default
