"""The audit's decision, made once: risk shown, risk not shown, or cannot tell.

The plain-language verdict (:mod:`tabmia.report.verdict`), the HTML report, the privacy
gate (:mod:`tabmia.gate`, so ``tabmia audit --fail-above``) and
:func:`tabmia.testing.assert_membership_risk` all read :func:`verdict_state`; none of
them decides on its own. It decides from:

- each attack's decisions at its own threshold (:func:`own_threshold_summary`);
- every plausibility finding of the audit (``result.findings``,
  :mod:`tabmia.plausibility`). A finding that the inputs contradict themselves
  (:data:`CONTRADICTIONS`: a model fitting its training records worse than the
  population's, labels that differ beyond chance, an AUC below chance) makes the state
  **cannot tell**, whatever the rates say: swapped files understate the leak, a shifted
  population overstates it. The user may override a finding by its name
  (``accept_warnings``), which is recorded;
- the target's outputs: a label-only audit models an attacker who sees only the model's
  decisions, and says when the model in fact has probabilities that attacker was not
  given;
- ties: an attack whose non-members tie at its highest unflagged score, more of them
  than its FPR allows, cannot flag anyone there at that FPR (:func:`tie_reach`); its
  "nobody flagged" is said with the bound a random tie-break reaching the FPR gives
  (:func:`tie_bound`), the same bound the gate reads.

Every cause of "cannot tell" has a name (:data:`CAUSES`), and so does the scope of a
label-only audit of a model that also gives probabilities (``label_only``): the gate
(:mod:`tabmia.gate`) decides nothing while one of them stands, until the user accepts it
by name (``accept_warnings``). Accepting a name the audit did not raise is recorded as
such (:attr:`VerdictState.not_raised`).

The states:

- ``"cannot tell"``: an unaccepted contradiction, or every attack flags more
  non-members than the FPR it aimed at allows (no threshold kept its promise:
  ``fpr_not_kept``), or every attack flags nobody because its scores tie where its
  threshold falls (it could not have flagged anyone at that FPR: ``ties``), each unless
  accepted by name;
- ``"risk shown"``: the strongest attack (:data:`STRONGEST_RULE`) flags training records
  more often than non-members beyond chance (its TPR's 95% lower bound above its FPR's
  upper bound);
- ``"risk not shown"``: otherwise, including when no attack flags members more often
  than non-members at all (then no attack is "strongest").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tabmia.metrics import clopper_pearson

__all__ = [
    "CANNOT_TELL",
    "CAUSES",
    "CONTRADICTIONS",
    "NOT_SHOWN",
    "SHOWN",
    "STRONGEST_RULE",
    "WARNING_NAMES",
    "VerdictState",
    "check_warning_names",
    "own_threshold_summary",
    "tie_bound",
    "tie_reach",
    "verdict_state",
]

SHOWN, NOT_SHOWN, CANNOT_TELL = "risk shown", "risk not shown", "cannot tell"
#: The cause of "cannot tell" when every attack is blind at its FPR (its scores tie there).
ALL_TIED = "every attack's scores tie where its threshold falls"

#: The plausibility findings that make an audit "cannot tell", and what to fix for each.
CONTRADICTIONS = {
    "fit_gap": "check that the training records are the ones the model was trained on and "
    "the population records ones it never saw (not swapped), with the labels it "
    "was trained with",
    "label_shift": "draw the population records from the training records' distribution "
    "(same source and period, not filtered or stratified), and check the "
    "label column",
    "auc_below_chance": "check that the training and population records are not swapped, the "
    "labels are right and the attack's scores are not inverted",
    "shared_persons": "remove from the population records every person who has training "
    "records (a person is a member or a non-member as a whole), or check that both files' "
    "person ids name the same persons",
}
#: The causes of "cannot tell" that are not about the inputs: name -> (what happened,
#: what to do). Accepting one lets the gate decide from the limits' own checks.
CAUSES = {
    "ties": (
        ALL_TIED + ", so none could flag a single training record at the FPR it aimed at",
        "run an attack whose scores separate the records at that FPR, aim at a larger FPR "
        "or give more public records; having checked, accepting it lets the gate read the "
        "bound a random tie-break reaching the FPR gives",
    ),
    "fpr_not_kept": (
        "no attack's threshold kept the FPR it aimed at",
        "give the attacks more public records, drawn like the candidates",
    ),
}
#: The scope of a label-only audit of a model that also gives probabilities: the gate
#: passes it only when the user accepts that scope by this name.
LABEL_ONLY = "label_only"
#: Every name ``accept_warnings`` takes: the plausibility findings
#: (:mod:`tabmia.plausibility`), the other causes of "cannot tell" and the label-only
#: scope. ``label_only`` is also the finding of one-hot outputs, which changes the
#: attacker the audit models and blocks nothing.
WARNING_NAMES = (*CONTRADICTIONS, LABEL_ONLY, *CAUSES)

#: How the verdict picks "the strongest attack", in the words the report prints.
STRONGEST_RULE = (
    "the attack that flags the most training records among those whose non-member flags "
    "stay consistent with the FPR it aimed at (its FPR's 95% lower bound not above that FPR); "
    "ties go to the one flagging fewer non-members. An attack whose flags single out members "
    "beyond chance (its TPR's 95% lower bound above its FPR's upper bound, its FPR kept or "
    "without an FPR goal) goes before any whose flags do not. An attack that flags members "
    "no more often than non-members (TPR not above FPR) is never the strongest"
)


def check_warning_names(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as a tuple, each a finding's name (:data:`WARNING_NAMES`), each once.

    Raises
    ------
    ValueError
        Naming an unknown name and the known ones.
    """
    out = tuple(
        dict.fromkeys(str(n).strip() for n in ([names] if isinstance(names, str) else names))
    )
    unknown = [n for n in out if n not in WARNING_NAMES]
    if unknown:
        raise ValueError(
            f"unknown warning {unknown[0]!r}: the findings an audit can accept are "
            f"{', '.join(WARNING_NAMES)}"
        )
    return out


def own_threshold_summary(metrics: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per attack, its decisions at its own threshold pooled over repeats, strongest first.

    The order is :data:`STRONGEST_RULE`: attacks that flag members more often than
    non-members (``beats_chance``, TPR above FPR) and kept the FPR they aimed at
    (``fpr_target``; ``promise == "kept"``) come first, by TPR (more members flagged),
    then fewer non-members flagged; but every attack whose TPR's interval lies above its
    FPR's (a kept promise first, then none) goes before those whose intervals overlap. Attacks whose threshold had no FPR goal
    (``promise == "none"``) follow by ``tpr - fpr``, then attacks that flagged more
    non-members than their goal allows (``promise == "broken"``), by ``tpr - fpr``, and
    last the attacks whose TPR is not above their FPR. A largest-``tpr - fpr`` order alone
    would call an attack flagging 179 of 500 members at FPR 0 stronger than one flagging
    180 at an FPR within its promise.

    Returns
    -------
    DataFrame
        Indexed by attack: ``tp``, ``n_members``, ``fp``, ``n_nonmembers`` (sums over
        repeats), ``tp_per_seed`` (list), ``tpr``/``fpr`` with Clopper-Pearson
        ``_low``/``_high``, ``advantage``, ``fpr_target`` (the FPR the threshold
        promises) and ``fpr_requested`` (the one asked for; largest over repeats, NaN
        without an FPR goal), ``promise``, ``beats_chance`` and ``n_seeds``.
    """
    need = ["attack", "tp", "n_members", "fp", "n_nonmembers"]
    if not set(need) <= set(metrics.columns):
        raise ValueError(
            "metrics lack the counts at each attack's own threshold (tp, fp); "
            "were the attacks run without a threshold?"
        )
    grouped = metrics[need].groupby("attack", sort=False)
    out = grouped.sum().astype(int)
    out["tp_per_seed"] = grouped["tp"].agg(lambda s: [int(v) for v in s])
    out["n_seeds"] = grouped.size()
    out["tpr"] = out["tp"] / out["n_members"]
    out["fpr"] = out["fp"] / out["n_nonmembers"]
    out["tpr_low"], out["tpr_high"] = clopper_pearson(
        out["tp"].to_numpy(), out["n_members"].to_numpy(), confidence
    )
    out["fpr_low"], out["fpr_high"] = clopper_pearson(
        out["fp"].to_numpy(), out["n_nonmembers"].to_numpy(), confidence
    )
    out["advantage"] = out["tpr"] - out["fpr"]
    for col in ("fpr_target", "fpr_requested"):
        values = (
            pd.to_numeric(metrics[col], errors="coerce")
            if col in metrics
            else pd.Series(np.nan, index=metrics.index)
        )
        out[col] = values.groupby(metrics["attack"], sort=False).max().reindex(out.index)
    aim = out["fpr_target"].to_numpy(float)
    kept = out["fpr_low"].to_numpy() <= aim * (1 + 1e-9)
    out["promise"] = np.where(np.isnan(aim), "none", np.where(kept, "kept", "broken"))
    out["beats_chance"] = out["tpr"] > out["fpr"]
    # an attack whose flags show a risk (kept promise or none) goes before those whose
    # flags do not (more members flagged, but within chance): the verdict's state and its
    # risk statement then name the same attack, never "not shown" beside another's evidence
    rank = out["promise"].map({"kept": 0, "none": 1, "broken": 4}).to_numpy(float)
    beyond = (out["tpr_low"] > out["fpr_high"]).to_numpy()
    honest = out["promise"].ne("broken").to_numpy()
    group = np.where(
        out["beats_chance"], np.where(honest, rank + 2 * ~beyond, rank - 0.5 * beyond), 5
    )
    by_tpr = out["promise"].eq("kept").to_numpy() & out["beats_chance"].to_numpy()
    first = np.where(by_tpr, out["tpr"], out["advantage"])
    second = np.where(by_tpr, -out["fpr"], out["tpr"])
    order = np.lexsort((-second, -first, group))
    return out.iloc[order]


def tie_reach(scores: pd.DataFrame, fpr: float | pd.Series) -> pd.DataFrame:
    """What ties at each attack's threshold hide, per attack (counts pooled over repeats).

    An attack's threshold stops above its highest unflagged non-member score. Where many
    non-members share that score, more of them than the FPR ``fpr`` still allows, no
    threshold can flag any record of that tie within ``fpr``: the attack is *blind* there
    (an overfit forest's loss of 0 on most records; the gap attack's 0/1 score at a 1%
    goal), and "none flagged" says nothing about the model at that FPR. Breaking the tie at
    random, flagging each tied record with the probability the FPR budget leaves, reaches
    the FPR and flags ``extra_tp`` more training records on average: what the attack's
    TPR at ``fpr`` may be.

    Parameters
    ----------
    scores : DataFrame
        ``attack``, ``member``, ``score``, ``flagged`` (and ``repeat``), as
        :attr:`tabmia.experiment.ExperimentResult.scores`.
    fpr : float or Series
        The FPR, one for all attacks or per attack (indexed by attack).

    Returns
    -------
    DataFrame
        Indexed by attack: ``tied`` (non-members sharing the highest unflagged
        non-member score, largest over repeats), ``tied_share`` (their share of the
        non-members), ``blind`` (in some repeat the tie holds at least two non-members and
        more than the FPR allows beyond those already flagged), ``extra_tp`` (training
        records a random tie-break reaching ``fpr`` adds, summed over repeats). Empty
        when ``scores`` lack these columns.
    """
    cols = {"attack", "member", "score", "flagged"}
    if not cols <= set(scores.columns) or scores.empty:
        return pd.DataFrame(columns=["tied", "tied_share", "blind", "extra_tp"], dtype=float)
    repeat = scores["repeat"] if "repeat" in scores else pd.Series(0, index=scores.index)
    keys = [repeat.rename("repeat"), scores["attack"]]
    member = scores["member"].to_numpy(bool)
    flagged = scores["flagged"].to_numpy(bool)
    score = scores["score"].to_numpy(float)
    open_nonmember = pd.Series(np.where(~member & ~flagged, score, np.nan), index=scores.index)
    top = open_nonmember.groupby(keys, sort=False).transform("max").to_numpy()
    at_top = ~flagged & (score == top)
    per = (
        pd.DataFrame(
            {
                "k": at_top & ~member,
                "m": at_top & member,
                "fp": flagged & ~member,
                "n_neg": ~member,
            },
            index=scores.index,
        )
        .groupby(keys, sort=False)
        .sum()
    )
    attacks = per.index.get_level_values("attack")
    alpha = (
        pd.Series(fpr, dtype=float).reindex(attacks).to_numpy()
        if isinstance(fpr, pd.Series)
        else np.full(len(per), float(fpr))
    )
    budget = np.nan_to_num(alpha * per["n_neg"].to_numpy() - per["fp"].to_numpy(), nan=0.0)
    k = per["k"].to_numpy(float)
    tie = k >= 2  # one record at the top is no tie: a threshold just under it flags it
    share = np.clip(np.divide(budget, k, out=np.zeros_like(k), where=k > 0), 0.0, 1.0)
    per["blind"] = tie & (k > budget) & np.isfinite(alpha)  # without an FPR goal: no budget
    per["extra_tp"] = np.where(tie, share * per["m"].to_numpy(), 0.0)
    per["tied_share"] = k / per["n_neg"].to_numpy()
    out = per.groupby(level="attack", sort=False).agg(
        tied=("k", "max"),
        tied_share=("tied_share", "max"),
        blind=("blind", "any"),
        extra_tp=("extra_tp", "sum"),
    )
    return out


def tie_bound(summary: pd.DataFrame, ties: pd.DataFrame, *, confidence: float = 0.95) -> pd.Series:
    """Per attack, the TPR's upper bound once its ties are broken at random to reach the FPR.

    The Clopper-Pearson upper bound of the training records flagged at the attack's own
    threshold plus those a random tie-break adds (``extra_tp`` of :func:`tie_reach`,
    rounded up), never below the bound without ties. The verdict states it for an
    attack that flags nobody because its scores tie; the gate reads it in place of the
    TPR's own upper bound, so both say the same number.

    Parameters
    ----------
    summary : DataFrame
        :func:`own_threshold_summary`.
    ties : DataFrame
        :func:`tie_reach` at the FPR in question.
    confidence : float, default=0.95

    Returns
    -------
    Series
        Indexed like ``summary``.
    """
    extra = ties["extra_tp"].reindex(summary.index).fillna(0.0).to_numpy(float)
    n_mem = summary["n_members"].to_numpy()
    reached = np.minimum(np.ceil(summary["tp"].to_numpy() + extra - 1e-9), n_mem).astype(int)
    _, high = clopper_pearson(reached, n_mem, confidence)
    return pd.Series(np.maximum(summary["tpr_high"].to_numpy(float), high), index=summary.index)


@dataclass(frozen=True)
class VerdictState:
    """The audit's decision (:func:`verdict_state`).

    Attributes
    ----------
    state : {"risk shown", "risk not shown", "cannot tell"}
    cause : str
        Why it cannot tell (empty otherwise): "the inputs contradict themselves", that
        no threshold kept its FPR promise, or that every attack's scores tie.
    findings : tuple of Finding
        Every plausibility finding of the audit.
    blocking : tuple of str
        The findings (names) that make it cannot tell: contradictions not accepted.
    accepted : tuple of str
        The names the user accepted (``accept_warnings``), each once.
    causes : tuple of str
        Every name (:data:`WARNING_NAMES`) that keeps the state "cannot tell", not
        accepted: ``blocking``, then ``fpr_not_kept`` or ``ties`` (:data:`CAUSES`).
    raised : tuple of str
        Every name the audit raised, accepted or not: the findings', ``ties``,
        ``fpr_not_kept``, and ``label_only`` for a label-only audit of a model with
        probabilities.
    strongest : str or None
        The strongest attack (:data:`STRONGEST_RULE`); None when no attack flags members
        more often than non-members.
    labels_only : bool
        Whether the attacks saw only the model's decisions (a label-only target, or
        one-hot probabilities).
    hidden_scores : bool
        Whether the model has probabilities the label-only attacks were not given.
    blind : tuple of str
        Attacks that flag nobody at their own threshold because their scores tie there
        (:func:`tie_reach`).
    silent_seeds : dict of str -> list of int
        Attacks that flagged no record in some repeats (not all), and which.
    tie_bounds : dict of str -> float
        For each attack in ``blind``, its TPR's upper bound with the ties broken at random
        to reach its FPR (:func:`tie_bound`).
    """

    state: str
    cause: str = ""
    findings: tuple = ()
    blocking: tuple[str, ...] = ()
    accepted: tuple[str, ...] = ()
    strongest: str | None = None
    labels_only: bool = False
    hidden_scores: bool = False
    blind: tuple[str, ...] = ()
    silent_seeds: dict | None = None
    causes: tuple[str, ...] = ()
    raised: tuple[str, ...] = ()
    tie_bounds: dict | None = None

    @property
    def contradicted(self) -> bool:
        """Whether an unaccepted finding makes the inputs contradict themselves."""
        return bool(self.blocking)

    @property
    def scope_open(self) -> bool:
        """Whether the audit modelled a decisions-only attacker of a model that gives
        probabilities, a scope the user has not accepted (``label_only``)."""
        return self.hidden_scores and LABEL_ONLY not in self.accepted

    @property
    def not_raised(self) -> tuple[str, ...]:
        """Names the user accepted that the audit did not raise: nothing to accept."""
        return tuple(n for n in self.accepted if n not in self.raised)

    @property
    def attacker_sees(self) -> str:
        """What the modelled attacker sees: ``"decisions only"`` or ``"probabilities"``."""
        return "decisions only" if self.labels_only else "probabilities"

    def fixes(self, names: Iterable[str] | None = None) -> list[str]:
        """What to do, one line per name (by default the blocking findings)."""
        out = []
        for name in self.blocking if names is None else names:
            if name in CONTRADICTIONS:
                out.append(f"{name}: {CONTRADICTIONS[name]}")
            elif name in CAUSES:
                out.append(f"{name}: {CAUSES[name][1]}")
            elif name == LABEL_ONLY:
                out.append(
                    f"{LABEL_ONLY}: audit the model's probabilities too (drop --label-only; "
                    "give the model or its probabilities), or, where only its decisions are "
                    "ever released, accept this scope"
                )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The state as results.json stores it."""
        return {
            "state": self.state,
            "cause": self.cause,
            "strongest": self.strongest,
            "labels_only": self.labels_only,
            "hidden_scores": self.hidden_scores,
            "attacker_sees": self.attacker_sees,
            "blind": list(self.blind),
            "tie_bounds": {k: float(v) for k, v in (self.tie_bounds or {}).items()},
            "silent_seeds": dict(self.silent_seeds or {}),
            "causes": list(self.causes),
            "accepted_warnings": list(self.accepted),
            "accepted_not_raised": list(self.not_raised),
            "findings": [
                {
                    "name": f.check,
                    "message": f.message,
                    "p_value": f.p_value,
                    "blocks": f.check in self.blocking,
                    "accepted": f.check in self.accepted,
                }
                for f in self.findings
            ],
        }


def verdict_state(
    result: Any, *, accept_warnings: Iterable[str] = (), confidence: float = 0.95
) -> VerdictState:
    """Decide the audit's state from its rates, findings, target outputs and ties.

    Parameters
    ----------
    result : ExperimentResult
    accept_warnings : iterable of str, default=()
        Names (:data:`WARNING_NAMES`) the user has checked and overrides: a contradiction,
        ``ties`` or ``fpr_not_kept`` accepted no longer makes the audit "cannot tell"
        (with ``ties`` accepted, an audit whose every attack is blind at its FPR reads
        "risk not shown" with the tie-break bound).
    confidence : float, default=0.95
        Of the intervals.

    Returns
    -------
    VerdictState

    Raises
    ------
    ValueError
        For an unknown name in ``accept_warnings``.
    """
    accepted = check_warning_names(accept_warnings)
    findings = tuple(getattr(result, "findings", ()) or ())
    blocking = tuple(
        dict.fromkeys(
            f.check for f in findings if f.check in CONTRADICTIONS and f.check not in accepted
        )
    )
    summary = own_threshold_summary(result.metrics, confidence=confidence)
    best = summary.iloc[0]
    all_broken = bool((summary["promise"] == "broken").all())
    # a broken promise disqualifies, unless every attack broke it (then: by TPR - FPR)
    strongest = (
        str(summary.index[0])
        if bool(best["beats_chance"]) and (best["promise"] != "broken" or all_broken)
        else None
    )
    labels_only, hidden = _outputs(result, findings)
    ties = tie_reach(result.scores, summary["fpr_target"])
    blind = tuple(
        a
        for a in summary.index
        if a in ties.index and bool(ties.at[a, "blind"]) and summary.at[a, "tp"] == 0
    )
    bounds = tie_bound(summary, ties, confidence=confidence) if len(ties) else None
    silent = {
        a: [i for i, tp in enumerate(r["tp_per_seed"]) if tp == 0]
        for a, r in summary.iterrows()
        if 0 < sum(tp == 0 for tp in r["tp_per_seed"]) < len(r["tp_per_seed"])
    }
    shown = (
        strongest is not None and best["promise"] != "broken" and best["tpr_low"] > best["fpr_high"]
    )
    all_tied = not shown and bool(blind) and set(blind) == set(summary.index)
    raised = tuple(
        dict.fromkeys(
            [f.check for f in findings]
            + (["fpr_not_kept"] if all_broken else [])
            + (["ties"] if all_tied else [])
            + ([LABEL_ONLY] if hidden else [])
        )
    )
    state, cause = (SHOWN, "") if shown else (NOT_SHOWN, "")
    causes: tuple[str, ...] = ()
    if all_tied and "ties" not in accepted:
        # no attack could flag anyone at its FPR: "not shown" would read as "no leak"
        state, cause, causes = CANNOT_TELL, ALL_TIED, ("ties",)
    if all_broken and "fpr_not_kept" not in accepted:
        state, cause, causes = CANNOT_TELL, CAUSES["fpr_not_kept"][0], ("fpr_not_kept",)
    if blocking:
        state, cause, causes = CANNOT_TELL, "the inputs contradict themselves", blocking
    return VerdictState(
        state,
        cause,
        findings=findings,
        blocking=blocking,
        accepted=accepted,
        strongest=strongest,
        labels_only=labels_only,
        hidden_scores=hidden,
        blind=blind,
        silent_seeds=silent,
        causes=causes,
        raised=raised,
        tie_bounds={a: float(bounds[a]) for a in blind} if bounds is not None else {},
    )


def _outputs(result: Any, findings: tuple) -> tuple[bool, bool]:
    """Whether the attacks saw only labels, and whether the model has probabilities they
    were not given (declared label-only, yet it has them)."""
    from tabmia.plausibility import is_one_hot
    from tabmia.target import PrecomputedProbabilities, as_target

    targets = getattr(result, "targets", None) or []
    one_hot = any(f.check == "label_only" for f in findings)
    if not targets:
        return one_hot, False
    target = as_target(targets[0])
    if target.outputs != "labels":
        return one_hot, False
    model = target.model
    if isinstance(model, PrecomputedProbabilities):
        hidden = not is_one_hot(model.proba)
    else:
        hidden = (
            hasattr(model, "predict_proba") or type(model).__module__.split(".", 1)[0] == "torch"
        )
    return True, bool(hidden)
