"""PersonRiskDisplay draws the shares person_risk tabulates (scikit-learn's Display pattern)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tabmia.persons import PersonRiskDisplay, person_risk


def _persons() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frames = []
    for attack, shift in (("loss", 3.0), ("gap", 1.0)):
        member = np.r_[np.ones(80, bool), np.zeros(120, bool)]
        # members' p-values pushed towards 0, non-members' uniform on the (n + 1) grid
        p = np.where(member, rng.uniform(size=200) ** shift, rng.uniform(size=200))
        p = np.ceil(p * 101) / 101
        frames.append(pd.DataFrame({"attack": attack, "member": member, "p_value": p}))
    return pd.concat(frames, ignore_index=True)


def test_curves_are_the_shares_person_risk_counts():
    import matplotlib.pyplot as plt

    persons = _persons()
    display = PersonRiskDisplay.from_persons(persons)
    assert list(display.line_) == ["loss", "gap"]
    risk = person_risk(persons, levels=(0.5, 0.9, 0.95))
    for name, (members, nonmembers) in display.line_.items():
        for line, is_member in ((members, True), (nonmembers, False)):
            x, y = line.get_xdata(), line.get_ydata()
            rows = risk[(risk["attack"] == name) & (risk["member"] == is_member)]
            for p_at_most, share in zip(rows["p_at_most"], rows["share"]):
                # the step curve's height at p: the share of persons with p-value <= p
                at = np.searchsorted(x, p_at_most + 1e-12, side="right") - 1
                assert (y[at] if at >= 0 else 0.0) == pytest.approx(share)
    assert display.ax_.get_xscale() == "log" and display.chance_line_ in display.ax_.lines
    plt.close("all")


def test_draws_on_the_callers_axes_and_reads_a_person_level_result():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    result = SimpleNamespace(unit="person", scores=_persons())
    display = PersonRiskDisplay.from_result(result, attacks=["gap"], ax=ax)
    assert display.ax_ is ax and display.figure_ is fig and list(display.line_) == ["gap"]
    with pytest.raises(ValueError, match="record-level audit"):
        PersonRiskDisplay.from_result(SimpleNamespace(unit="record", scores=_persons()))
    with pytest.raises(ValueError, match="no column 'p_value'"):
        PersonRiskDisplay.from_persons(_persons().drop(columns="p_value"))
    plt.close("all")
