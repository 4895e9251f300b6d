"""The audit's verdict in plain language: what an attacker achieves at its own threshold.

Every count here is of records an attack flags at the threshold it chose itself
(``threshold_``, set without the candidates' membership), never of a ROC-curve point,
which needs the membership labels to pick its threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import (
    DEFAULT_DELTA,
    empirical_epsilon,
    ppv,
    ppv_interval,
    ppv_resolved,
)

# model_description, attack_recipes, RECIPE_SEPARATOR, shadow_recipe: their import path
# before tabmia.report._attacked
from tabmia.report._attacked import (  # noqa: F401
    RECIPE_SEPARATOR,
    _article,
    _target_description,
    attack_recipes,
    model_description,
    shadow_recipe,
)
from tabmia.report._persons import person_rule_line as _person_rule_line
from tabmia.report.dp_claim import claim_answer
from tabmia.report.state import (  # their import path before tabmia.report.state
    ALL_TIED,
    STRONGEST_RULE,
    VerdictState,
    own_threshold_summary,
    tie_reach,
    verdict_state,
)

__all__ = [
    "STRONGEST_RULE",
    "finding_line",
    "finding_role",
    "model_description",
    "own_threshold_summary",
    "shadow_recipe",
    "verdict_lines",
]


def _rate(v: float, lo: float, hi: float) -> str:
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def _pct(rate: float) -> str:
    return f"{100 * rate:.3g}%"


def verdict_lines(
    result: Any,
    *,
    context: dict[str, Any] | None = None,
    gammas: tuple[float, ...] = (1.0, 10.0, 100.0),
    epsilon: float | None = None,
    delta: float = DEFAULT_DELTA,
    confidence: float = 0.95,
    accept_warnings: Any = (),
    state: VerdictState | None = None,
    with_findings: bool = True,
    records: Any = None,
) -> list[str]:
    """Plain-language sentences an auditor reads first (plain text, no markup).

    The first states the audit's decision (:func:`tabmia.report.state.verdict_state`) and
    the attacker it models: "Cannot tell" where the inputs contradict themselves (with
    what to fix), else what an attacker holding the audit's public records (and, for a
    label-only audit, seeing only the model's decisions) achieves with the strongest
    attack (:data:`STRONGEST_RULE`) at its own threshold, with the 95% intervals of its
    TPR and FPR; where that does not beat guessing, an AUC whose interval lies above 0.5
    is named. Then attacks that flag nobody because their scores tie, the findings, how
    attacks were ranked, what was attacked (and the recipe shadow models copy), the
    model's accuracy gap, PPV, the ε lower bound and an optional DP claim.

    Parameters
    ----------
    result : ExperimentResult
    context : dict, default=None
        Shown facts; ``data`` names the data set, ``target`` / ``model`` the model,
        ``attacker public records`` the attacker's data, ``shadow recipe`` the recipe.
    gammas : tuple of float
        Priors for the PPV sentence (the largest is quoted).
    epsilon, delta : float
        A DP claim to check the strongest attack against.
    accept_warnings : iterable of str, default=()
        Findings the user overrides by name (:func:`tabmia.report.state.verdict_state`).
    state : VerdictState, default=None
        The decision, when the caller has it already.
    with_findings : bool, default=True
        Include one line per plausibility finding (the HTML report shows them apart).
    records : ExperimentResult, default=None
        For a person-level ``result``: the record-level audit it was made from. A DP
        claim is about records and is judged from its rates; the persons' reading of it
        (group privacy) stands beside that answer (:func:`tabmia.report.dp_claim.claim_answer`).
    """
    context = context or {}
    metrics = result.metrics
    state = state or verdict_state(result, accept_warnings=accept_warnings, confidence=confidence)
    summary = own_threshold_summary(metrics, confidence=confidence)
    best_name, best = summary.index[0], summary.iloc[0]
    n_seeds = int(best["n_seeds"])
    first = metrics[metrics["attack"] == best_name].iloc[0]
    n_mem, n_neg = int(first["n_members"]), int(first["n_nonmembers"])
    model, data, attacker = _model_data_attacker(result, context, state)
    measured = _risk_statement(
        state, best_name, best, n_mem, attacker, nothing_flagged=int(summary["tp"].sum()) == 0
    )
    if state.contradicted:
        names = ", ".join(state.blocking)
        lines = [
            f"Cannot tell: the inputs contradict themselves ({names}), so the attacks' "
            f"rates do not measure what {attacker} can learn. To fix: "
            + "; ".join(state.fixes())
            + ". Having checked, override a finding by name "
            "(tabmia audit --accept-warning NAME; accept_warnings=[NAME] in Python).",
            "What the attacks measured on these inputs (not evidence until they are "
            "fixed): " + measured[0].lower() + measured[1:],
        ]
    else:
        lines = [measured]
    auc_line = _significant_auc(metrics, summary)
    # "no threshold singles out records beyond chance" holds only where none does, the
    # strongest or not, whatever FPR it delivered (an attack that broke its FPR promise
    # and still flags members beyond chance is said in the risk statement)
    if auc_line and not bool((summary["tpr_low"] > summary["fpr_high"]).any()):
        lines.append(auc_line)
    lines += _silent_lines(state, summary, result.scores)
    if with_findings:
        lines += [finding_line(f, state) for f in state.findings]
    lines.append(_ranking_line(summary, n_mem))
    seeds = f", over {n_seeds} seeds (counts pooled)" if n_seeds > 1 else ""
    recipe = context.get("shadow recipe") or shadow_recipe(result)
    if state.not_raised:
        lines.append(
            f"Accepted by the user but not raised by this audit (nothing to accept): "
            f"{', '.join(state.not_raised)}."
        )
    lines.append(
        f"What was attacked: {_article(model)} trained on {data}; each attack scored "
        f"{n_mem} members (training records) and {n_neg} non-members it never saw{seeds}"
        + (f"; shadow / reference models were trained with {recipe}." if recipe else ".")
    )
    persons = getattr(result, "unit", "record") == "person"
    lines += _accuracy_ppv_epsilon_lines(
        result, best_name, best, max(gammas), delta, confidence, persons
    )
    claim = (
        None
        if epsilon is None
        else claim_answer(result, epsilon, delta, records=records, confidence=confidence)
    )
    lines.append(
        "TPR at a fixed FPR (the ROC curve) needs a threshold set with the membership "
        "labels: those columns are an oracle's reference, not what the attacker achieved."
    )
    noun = str(context.get("persons", "persons"))
    if persons:
        lines = [in_persons(line, noun) for line in lines]
        lines.insert(1 if not state.contradicted else 2, _person_rule_line(result, noun))
    if claim is not None:  # about records, whatever the unit: said after the persons' words
        lines[-1:-1] = claim.lines(noun)
    return lines


def _model_data_attacker(
    result: Any, context: dict[str, Any], state: VerdictState
) -> tuple[str, str, str]:
    """What was attacked (the model, the data) and who attacks it, as the verdict names
    them."""
    metrics = result.metrics
    named = context.get("target")
    model = (
        f"{named} model"
        if named
        else (
            _target_description(result.targets[0])
            if result.targets
            else context.get("model", "the model")
        )
    )
    data = context.get("data", "the given data")
    splits = getattr(result, "splits", None)
    n_public = len(splits[0].public) if splits else context.get("attacker public records")
    if getattr(result, "unit", "record") == "person" and "n_persons_public" in metrics:
        n_public = (
            f"{n_public} public records of {int(metrics['n_persons_public'].iloc[0])} "
            f"{context.get('persons', 'persons')}"
        )
    attacker = _attacker(state, n_public)
    return model, data, attacker


def _accuracy_ppv_epsilon_lines(
    result: Any,
    best_name: str,
    best: pd.Series,
    g: float,
    delta: float,
    confidence: float,
    persons: bool,
) -> list[str]:
    """The model's accuracy gap, the strongest attack's PPV at prior ``g`` and its ε
    lower bound."""
    lines = []
    n_seeds = int(best["n_seeds"])
    acc = getattr(result, "target_accuracy", None)
    if acc is not None and len(acc):
        tr, te = float(acc["train_accuracy"].mean()), float(acc["test_accuracy"].mean())
        lines.append(
            f"The model's accuracy is {tr:.3f} on the records it trained on and {te:.3f} "
            f"on held-out records (gap {tr - te:+.3f}); a large gap means memorisation, "
            "which is what these attacks exploit."
        )
    if int(best["tp"]) + int(best["fp"]) == 0:
        lines.append(
            "PPV (the share of flagged records that really are training records) is "
            "undefined: nothing was flagged."
        )
    else:
        lines.append(_ppv_line(best_name, best, g, confidence))
    eps = empirical_epsilon(
        int(best["tp"]),
        int(best["n_members"]),
        int(best["fp"]),
        int(best["n_nonmembers"]),
        delta=delta,
        confidence=confidence,
    )
    lines.append(
        f"The ε lower bound is the smallest ε for which (ε, δ = {delta:g})-differentially private "
        f"training could allow these rates (95% confidence); for {best_name} it is "
        f"{eps['epsilon_lower']:.2f}"
        + (" (counts pooled over seeds)" if n_seeds > 1 else "")
        + (" (of the persons' rates)" if persons else "")
        + "."
    )
    return lines


#: Record words and their person words, longest first: a person-level result
#: (:func:`tabmia.persons.person_result`) is read by the same sentences, its rows being
#: persons (one wording, one place).
_PERSON_WORDS = (
    ("members (training records)", "member {p} (whose records trained the model)"),
    ("flagged records", "flagged {p}"),
    ("a single training record", "a single member {s}"),
    ("a training record", "a member {s}"),
    ("training records", "member {p}"),
    ("non-members", "non-member {p}"),
)


def in_persons(line: str, noun: str = "persons") -> str:
    """A verdict sentence about records, said of persons (``noun``: "patients")."""
    single = noun[:-1] if noun.endswith("s") else noun
    for word, person in _PERSON_WORDS:
        line = line.replace(word, person.format(p=noun, s=single))
    return line


def finding_role(finding: Any, state: VerdictState) -> str:
    """What a plausibility finding does to the verdict, in words."""
    if finding.check in state.blocking:
        return "makes the verdict cannot-tell"
    if finding.check in state.accepted:
        return "accepted by the user, so it does not decide the verdict"
    return "a note on what the attacks can see"


def finding_line(finding: Any, state: VerdictState) -> str:
    """One plausibility finding as the verdict states it: its name, what it does to the
    verdict (:func:`finding_role`), and its message."""
    return f"Finding {finding.check} ({finding_role(finding, state)}): {finding.message}."


def _attacker(state: VerdictState, n_public: Any) -> str:
    """The attacker the audit models, in words."""
    if isinstance(n_public, str):  # already in words (a person-level audit's)
        holding = n_public
    else:
        holding = f"{n_public} public records" if n_public else "public records"
    if not state.labels_only:
        return f"an attacker holding {holding} of the same population"
    return (
        f"an attacker who sees only the model's decisions (its predicted labels) and "
        f"holds {holding} of the same population"
    )


def _not_covered(state: VerdictState) -> str:
    """What a label-only audit leaves out, as a sentence (empty when nothing)."""
    if state.hidden_scores:
        return (
            " The model also gives probabilities, which these attacks were not given: an "
            "attacker who sees them is not covered by this audit."
        )
    if state.labels_only and any(f.check == "label_only" for f in state.findings):
        return " (The model's probabilities are one-hot: they carry only its decisions.)"
    return ""


def _risk_statement(
    state: VerdictState,
    name: str,
    best: pd.Series,
    n_mem: int,
    attacker: str,
    *,
    nothing_flagged: bool,
) -> str:
    """The decision in a sentence or two: for which attacker, at which error rate, how sure."""
    aim = (
        f"aimed at {_pct(best['fpr_target'])} FPR"
        if best["promise"] != "none"
        else "with no FPR goal"
    )
    how = f"with {name} at its own threshold ({aim}, chosen without knowing who is a member)"
    tpr = _rate(best["tpr"], best["tpr_low"], best["tpr_high"])
    fpr = _rate(best["fpr"], best["fpr_low"], best["fpr_high"])
    n_pos, n_neg, seeds = int(best["n_members"]), int(best["n_nonmembers"]), int(best["n_seeds"])
    if seeds > 1:  # the seeds' members overlap: count per seed, pool the rates
        count = (
            f"{_whole(best['tp'] / seeds)} of {n_mem} training records per seed on average "
            f"(seeds: {', '.join(map(str, best['tp_per_seed']))}): pooled TPR {tpr}"
        )
        false = f"{int(best['fp'])} of {n_neg} non-members over all seeds: pooled FPR {fpr}"
    else:
        count = f"{int(best['tp'])} of {n_pos} training records: TPR {tpr}"
        false = f"{int(best['fp'])} of {n_neg} non-members: FPR {fpr}"
    sure = " (95% Clopper-Pearson intervals)"
    at = f" at {_pct(best['fpr_target'])} FPR" if best["promise"] != "none" else ""
    more = _not_covered(state)
    if state.cause == ALL_TIED:
        return (
            f"Cannot tell{at} for {attacker}: every attack's scores tie where its threshold "
            f"falls, so none could flag a single training record at the FPR it aimed at "
            f"(the ties are listed below); {_separating_advice(state)}.{more}"
        )
    if state.blind and set(state.blind) >= {name} and nothing_flagged:
        bound = max((state.tie_bounds or {}).values(), default=best["tpr_high"])
        return (
            f"Risk not shown{at} for {attacker} (ties accepted): every attack's scores tie "
            f"where its threshold falls, so none flags a training record there; broken at "
            f"random to reach the FPR, the ties would single out at most {bound:.3f} of the "
            f"{n_pos} training records (95% upper bound, the bound the gate reads).{more}"
        )
    if best["promise"] == "broken" and state.strongest is not None:
        beyond = (
            f" Its flags do single out training records beyond chance, but at the FPR it "
            f"delivered ({_pct(best['fpr'])}, at least {_pct(best['fpr_low'])}), not at the "
            f"{_pct(best['fpr_target'])} it aimed at, so the risk at that FPR is not measured."
            if best["tpr_low"] > best["fpr_high"]
            else ""
        )
        return (
            f"Cannot tell (risk not measured reliably){at} for {attacker}: every attack "
            f"flags more non-members than the "
            f"FPR it aimed at allows, so no threshold kept its promise (too few public "
            f"records, or public records unlike the candidates). The strongest by TPR − FPR, "
            f"{how}, singles out {count}, while wrongly flagging {false}{sure}.{beyond}{more}"
        )
    if state.strongest is None:
        if nothing_flagged:
            detail = (
                f"none flags a single training record at its own threshold ({aim}); with "
                f"{n_pos} training records scored, at most {best['tpr_high']:.3f} of them "
                f"could be singled out this way (95% upper bound), and {int(best['fp'])} "
                f"of {n_neg} non-members were flagged"
            )
        elif best["promise"] == "broken":
            detail = (
                f"none flags training records more often than non-members while keeping "
                f"the FPR it aimed at; {name}, {how}, singles out {count}, but wrongly "
                f"flags {false}{sure}, more than its FPR allows"
            )
        else:
            detail = (
                f"none flags training records more often than non-members at its own "
                f"threshold; the closest, {how}, flags {count} and {false}{sure}"
            )
        return (
            f"Risk not shown{at} for {attacker}: no attack did better than chance: {detail}.{more}"
        )
    if state.state == "risk shown" or (state.contradicted and best["tpr_low"] > best["fpr_high"]):
        return (
            f"Risk: {attacker}, {how}, singles out {count}, while wrongly flagging "
            f"{false}{sure}.{more}"
        )
    return (
        f"Risk not shown{at} for {attacker}: it flags training records no more often than "
        f"non-members beyond chance. The strongest attack, {how}, singles out {count}, "
        f"and wrongly flags {false}{sure}; the two intervals overlap, so these flags are "
        f"not shown to be better than guessing.{more}"
    )


def _separating_advice(state: VerdictState) -> str:
    """What can tell where every attack's scores tie: attacks that can run on what the
    attacker sees."""
    if state.labels_only:
        return (
            "an attack that separates the records from labels alone (noise_robustness, "
            "noise_robustness_calibrated or boundary_distance, which query noisy copies of "
            "the records), a larger FPR or more public records can tell"
        )
    return (
        "an attack whose scores separate the records (lira, lira_online, rmia), a larger "
        "FPR or more public records can tell"
    )


def _whole(value: float) -> int:
    """An average count as whole records (half up)."""
    return int(np.floor(value + 0.5))


def _silent_lines(state: VerdictState, summary: pd.DataFrame, scores: pd.DataFrame) -> list[str]:
    """Attacks that flag nobody because their scores tie, and seeds where one flagged nobody."""
    lines = []
    if state.blind:
        ties = tie_reach(scores, summary["fpr_target"])
        first = summary.loc[state.blind[0]]
        n_neg = int(first["n_nonmembers"]) // int(first["n_seeds"])
        aims = {_pct(summary.at[a, "fpr_target"]) for a in state.blind}
        same_aim = len(aims) == 1
        bounds = state.tie_bounds or {}
        parts = []
        for a in state.blind:
            r, t = summary.loc[a], ties.loc[a]
            aim = "" if same_aim else f"aimed at {_pct(r['fpr_target'])} FPR, "
            bound = f", TPR up to {bounds[a]:.3f}" if a in bounds else ""
            parts.append(
                f"{a} ({aim}{int(t['tied'])} tied; about "
                f"{_whole(t['extra_tp'] / int(r['n_seeds']))} training records per seed{bound})"
            )
        aim_all = f"aimed at {next(iter(aims))} FPR, " if same_aim else ""
        lines.append(
            f"Flags nobody because its scores tie ({aim_all}of {n_neg} non-members, how many "
            "share the highest unflagged score; broken at random to reach the FPR, how many "
            "training records the tie would flag, and the TPR's 95% upper bound then): "
            + "; ".join(parts)
            + ". More of those tied non-members than the FPR allows would be flagged with "
            "them, so no threshold of these attacks can flag anyone there: their zero says "
            "nothing about the model at that FPR."
        )
    for a, seeds in (state.silent_seeds or {}).items():
        if a in state.blind:
            continue
        n = int(summary.at[a, "n_seeds"])
        lines.append(
            f"{a} flagged no record at its own threshold in seed"
            f"{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))} of {n} "
            "(counted as flagging nobody there)."
        )
    return lines


def _ranking_line(summary: pd.DataFrame, n_mem: int) -> str:
    """What "strongest" means, and every attack's flags in that order."""
    seeds = int(summary["n_seeds"].max())
    order = "; ".join(
        f"{name} {int(r['tp'])}/{int(r['n_members'])} members, {int(r['fp'])}/"
        f"{int(r['n_nonmembers'])} non-members"
        + {
            "kept": "",
            "none": " (no FPR goal)",
            "broken": f" (more than its {_pct(r['fpr_target'])} FPR allows)",
        }[r["promise"]]
        for name, r in summary.iterrows()
    )
    rest = ""
    if (summary["promise"] == "none").any():
        rest += " Attacks without an FPR goal follow, by TPR − FPR."
    if (summary["promise"] == "broken").any():
        rest += " Attacks that flag more non-members than their FPR allows come last, by TPR − FPR."
    pooled = f" (counts over {seeds} seeds)" if seeds > 1 else ""
    return f"“Strongest” means {STRONGEST_RULE}.{rest} In that order{pooled}: {order}."


def _significant_auc(metrics: pd.DataFrame, summary: pd.DataFrame) -> str | None:
    """A sentence on the highest AUC whose 95% interval lies above 0.5, if any."""
    if not {"auc", "auc_low"} <= set(metrics.columns):
        return None
    lows = pd.to_numeric(metrics["auc_low"], errors="coerce").groupby(metrics["attack"]).min()
    aucs = pd.to_numeric(metrics["auc"], errors="coerce").groupby(metrics["attack"]).mean()
    above = aucs[lows > 0.5]
    if above.empty:
        return None
    name = above.idxmax()
    rows = metrics[metrics["attack"] == name]
    if len(rows) == 1:
        value = (
            f"{float(rows['auc'].iloc[0]):.3f} [{float(rows['auc_low'].iloc[0]):.3f}, "
            f"{float(rows['auc_high'].iloc[0]):.3f}] (95% bootstrap interval, above 0.5)"
        )
    else:
        value = (
            f"{aucs[name]:.3f} on average over {len(rows)} seeds, every seed's 95% "
            "bootstrap interval above 0.5"
        )
    return (
        f"Yet the scores do rank members above non-members more often than chance: "
        f"{name}'s AUC is {value}. Membership leaks on average even though no threshold "
        "chosen without the membership labels singles out records beyond chance at this "
        "FPR; an attacker accepting a higher FPR, or holding more public records, may."
    )


def _ppv_line(name: str, best: pd.Series, g: float, confidence: float) -> str:
    value = ppv(best["tpr"], best["fpr"], g)
    lo, hi = ppv_interval(
        int(best["tp"]),
        int(best["n_members"]),
        int(best["fp"]),
        int(best["n_nonmembers"]),
        g,
        confidence=confidence,
    )
    resolved = ppv_resolved(int(best["fp"]), lo, hi)
    return (
        f"PPV is the share of flagged records that really are training records when the attacker "
        f"searches a pool with γ non-members per member; for {name} at γ = {g:g} it is "
        f"{value:.3f} [{lo:.3f}, {hi:.3f}]"
        + (
            "."
            if resolved
            else f", not resolved by {int(best['n_nonmembers'])} non-members "
            f"({int(best['fp'])} flagged): only the interval is informative."
        )
    )
