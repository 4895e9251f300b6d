"""Weak evidence reads as weak (issue 24): a DP claim is refuted, consistent, or the
audit cannot tell, with the canaries (or records) that could refute it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import special
from sklearn.datasets import load_breast_cancer
from sklearn.neighbors import KNeighborsClassifier

from tabmia.claims import (
    check_claimed_epsilon,
    membership_claim_check,
    records_to_refute,
)
from tabmia.cli import main
from tabmia.dp import (
    OneRunAudit,
    audit_canary_scores,
    canaries_to_refute,
    guess_rules,
    guesses_to_refute,
    one_run_p_value,
)
from tabmia.metrics import dp_consistency


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_guesses_to_refute_is_the_closed_form_without_delta(epsilon):
    needed = guesses_to_refute(epsilon, 0.0, confidence=0.95)
    q = float(special.expit(epsilon))
    assert needed == math.ceil(math.log(0.05) / math.log(q))
    # with delta the p-value itself decides: this many refute, one fewer does not
    with_delta = guesses_to_refute(epsilon, 1e-3, n_canaries=1000)
    assert one_run_p_value(with_delta, with_delta, 1000, epsilon, 1e-3) < 0.05
    assert one_run_p_value(with_delta - 1, with_delta - 1, 1000, epsilon, 1e-3) >= 0.05


def test_canaries_to_refute_counts_the_bonferroni_rules():
    m = canaries_to_refute(2.0, 1e-5)
    alpha = 0.05 / len(guess_rules(m))
    assert one_run_p_value(m, m, m, 2.0, 1e-5) < alpha
    below = 0.05 / len(guess_rules(m - 1))
    assert one_run_p_value(m - 1, m - 1, m - 1, 2.0, 1e-5) >= below
    # the numbers docs/dp_audit.md quotes
    assert [canaries_to_refute(e, 1e-5) for e in (1.0, 2.0, 4.0)] == [20, 49, 374]
    assert guesses_to_refute(1.0) == 10
    # a delta term that outgrows the test's budget: no number of canaries refutes
    assert canaries_to_refute(8.0, 1e-5) is None and canaries_to_refute(8.0, 0.0) == 18_759


def test_too_few_canaries_cannot_tell_and_enough_are_not_called_consistent():
    m = canaries_to_refute(2.0, 1e-5)
    rng = np.random.RandomState(0)
    for n, state in ((m - 1, "cannot_tell"), (m, "consistent")):
        noise = rng.normal(size=n)  # scores that know nothing
        included = rng.uniform(size=n) < 0.5
        result = audit_canary_scores(noise, included, claimed_epsilon=2.0, random_state=0)
        check = result.claim_check
        assert check.state == state and result.violated is False
    assert "Cannot tell whether epsilon = 2" in audit_canary_scores(
        noise[: m - 1], included[: m - 1], claimed_epsilon=2.0).sentence()
    cannot = audit_canary_scores(noise[: m - 1], included[: m - 1], claimed_epsilon=2.0)
    assert cannot.claim_check.needed == m and f"at least {m} canaries" in cannot.sentence()
    assert cannot.to_dict()["claim"]["state"] == "cannot_tell"


def test_a_model_with_no_privacy_cannot_tell_on_few_canaries_and_refutes_on_enough():
    # 1-NN memorises every flipped canary it trains on; epsilon = 1 needs 20 canaries
    X, y = load_breast_cancer(return_X_y=True)
    few = OneRunAudit(KNeighborsClassifier(1), n_canaries=12, canaries="flipped",
                      claimed_epsilon=1.0, random_state=0).run(X, y)
    assert few.claim_check.state == "cannot_tell" and few.claim_check.needed == 20
    many = OneRunAudit(KNeighborsClassifier(1), n_canaries=200, canaries="flipped",
                       claimed_epsilon=1.0, random_state=0).run(X, y)
    assert many.claim_check.state == "refuted" and many.violated


@pytest.mark.parametrize("epsilon", [0, 0.0, -1.0, math.nan, math.inf])
def test_epsilon_zero_or_less_is_not_a_claim(epsilon):
    with pytest.raises(ValueError, match="> 0"):
        check_claimed_epsilon(epsilon)
    with pytest.raises(ValueError, match="claimed_epsilon"):
        audit_canary_scores(np.arange(10.0), np.arange(10) % 2, claimed_epsilon=epsilon)
    with pytest.raises(ValueError, match="claimed_epsilon"):
        OneRunAudit(KNeighborsClassifier(1), claimed_epsilon=epsilon).split_sizes(500)


def test_records_to_refute_is_exact_for_the_membership_games_test():
    for epsilon, delta in ((0.5, 0.0), (1.0, 1e-5), (3.0, 0.01)):
        n = records_to_refute(epsilon, delta)
        assert dp_consistency(n, n, 0, n, epsilon, delta)["verdict"] == "no"
        assert dp_consistency(n - 1, n - 1, 0, n - 1, epsilon, delta)["verdict"] != "no"


def test_membership_claim_check_three_states():
    assert membership_claim_check(300, 500, 5, 1000, 1.0, 1e-5).state == "refuted"
    assert membership_claim_check(10, 500, 10, 1000, 1.0).state == "consistent"
    # above the bound at FPR 0, but 250 non-members cannot exclude an FPR of 0.015
    unresolved = membership_claim_check(14, 500, 0, 250, 1.0, 1e-5)
    assert unresolved.state == "cannot_tell" and unresolved.needed is None
    # 20 and 20 records: not even a perfect attack refutes epsilon = 3
    small = membership_claim_check(5, 20, 1, 20, 3.0, 1e-5)
    assert small.state == "cannot_tell" and small.needed == records_to_refute(3.0, 1e-5) > 20
    with pytest.raises(ValueError, match="> 0"):
        membership_claim_check(5, 20, 1, 20, 0.0)


def test_dpaudit_command_says_cannot_tell_and_refuses_epsilon_zero(tmp_path, capsys):
    out = tmp_path / "few"
    assert main(["dpaudit", "--recipe", "random_forest", "--data", "breast_cancer",
                 "--epsilon", "2", "--canaries", "12", "--canary-type", "flipped",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Cannot tell whether epsilon = 2" in printed and "Consistent" not in printed
    claim = json.loads((out / "results.json").read_text())["result"]["claim"]
    assert claim["state"] == "cannot_tell" and claim["needed"] > 12
    for value in ("0", "-0.5"):
        bad = tmp_path / f"bad{value}"
        assert main(["dpaudit", "--recipe", "random_forest", "--data", "breast_cancer",
                     "--epsilon", value, "--out", str(bad)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("tabmia: error: --epsilon must be")
        assert not bad.exists()


def test_the_reports_dp_table_says_cannot_tell_for_a_game_too_small(tmp_path):
    import pandas as pd

    from tabmia import metrics as M
    from tabmia.experiment import ExperimentResult
    from tabmia.report.html import write_html_report

    rng = np.random.default_rng(0)
    member = np.r_[np.ones(100, bool), np.zeros(300, bool)]
    s = np.r_[rng.normal(3, 1, 100), rng.normal(0, 1, 300)]
    m = M.attack_metrics(member, s, threshold=2.5, fprs=(0.01,), gammas=(1.0,), random_state=0)
    result = ExperimentResult(
        scores=pd.DataFrame({"repeat": 0, "attack": "a", "record": np.arange(400),
                             "member": member, "score": s, "flagged": s >= 2.5}),
        metrics=pd.DataFrame([{"repeat": 0, "seed": 0, "attack": "a", **m, "fpr_target": 0.01,
                               "fit_seconds": 0.0, "score_seconds": 0.0}]))
    # 100 members and 300 non-members cannot refute epsilon = 5 whatever an attack does
    html = write_html_report(result, tmp_path / "r.html", epsilon=5.0, delta=1e-5).read_text()
    needed = records_to_refute(5.0, 1e-5)
    assert (f"<td class='unresolved'>cannot tell: a game this small cannot refute it "
            f"(needs ≥ {needed} members and as many non-members)</td>") in html
    assert "<td class='yes'>" not in html
    # a claim it could refute, and does
    html = write_html_report(result, tmp_path / "r1.html", epsilon=0.5, delta=1e-5).read_text()
    assert "<td class='no'>no: the claim cannot hold</td>" in html
    with pytest.raises(ValueError, match="> 0"):
        write_html_report(result, tmp_path / "r0.html", epsilon=0.0)
