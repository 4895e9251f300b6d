"""Plausibility checks: do an audit's inputs and results look like an honest audit's?

An audit can report "nothing leaks" because its inputs are wrong: the training and
population files swapped, wrong labels in the training file, a population from
another distribution. Each check here is a significance test of something an honest
audit does not produce; it raises a finding when the test rejects at level ``alpha``
(default :data:`ALPHA`). On honest inputs a check's false-alarm rate is at most
``alpha``, as stated per check:

``fit_gap`` (before any attack)
    The model fits its training records *worse* than the population's. One-sided
    Welch t-test of the mean per-record Brier score (the squared error of the
    probabilities; H0: its mean on the training records is not larger). A model's
    mean error on what it was trained on is at most that on records it never saw, so
    on honest inputs the rate is ``alpha`` at most (about ``alpha`` only for a model
    with no generalisation gap at all; the score is bounded, so the t-test's level
    holds for large samples). Swapped files or wrong training labels make it reject.
    The mean, not the ranks: a regularised model (logistic regression) can fit most
    training records a little less tightly than the typical held-out one while its
    mean error there is lower. Brier, not log-loss: one record a model gives
    probability 0 would dominate a mean log-loss.
``label_shift`` (before any attack)
    The training and population labels differ beyond chance. Test of homogeneity of
    the 2 x K label table: Fisher's exact test for two classes, the chi-square test
    otherwise, with a Monte Carlo p-value over tables with the same margins
    (:func:`scipy.stats.random_table`) where an expected count is below 5; and the two
    distributions at least :data:`MIN_LABEL_SHIFT` apart in total variation (the
    advantage a guess from the label alone gains), so that a large audit does not
    report a negligible drift. When the population is a random sample of the training
    records' distribution the rate is at most ``alpha``. A finding means a shifted
    population (another period or source, a stratified or filtered file), which lets
    attacks tell the sets apart by label alone, or a wrong label column.
``label_only`` (before any attack, no test)
    Every probability row is one-hot: the model (or the file of its outputs) gives
    nothing beyond the predicted label, and was not declared label-only
    (``TargetModel(..., labels_only=True)``; a declared one is not reported). Not an
    error; it says which attacks mean something.
``auc_below_chance`` (after the attacks)
    An attack scores members as *less* member-like than non-members. One-sided
    Mann-Whitney U test per attack and repeat (H0: AUC >= 0.5), Bonferroni-corrected
    over all of them, and an AUC of at most :data:`MAX_AUC` (a large audit of a model
    that leaks nothing may dip a hair below 0.5: regularised models fit most training
    records a little less tightly than the typical held-out one). The rate is at most
    ``alpha`` for the whole audit when no attack is worse than chance. It means swapped
    files, wrong labels or inverted scores: that attack's rates do not measure the
    leak.

:func:`check_inputs` runs the first three on a model and its data,
:func:`check_attack_scores` the last on an audit's scores;
:func:`tabmia.audit.audit_model` issues every finding as a
:class:`~tabmia.exceptions.PlausibilityWarning`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from tabmia.target import as_target, n_rows, plain

__all__ = [
    "ALPHA",
    "MAX_AUC",
    "MIN_LABEL_SHIFT",
    "Finding",
    "check_attack_scores",
    "check_inputs",
    "check_persons",
    "fit_gap_test",
    "is_one_hot",
    "label_shift_test",
]

#: Level of every check: on honest inputs each raises a false alarm at most this often.
ALPHA = 0.001
#: Total variation distance between the two label distributions below which a
#: significant difference is not reported (a guess from the label gains at most this).
MIN_LABEL_SHIFT = 0.02
#: AUC above which a significant dip below 0.5 is not reported.
MAX_AUC = 0.45
# Monte Carlo tables for the label test when expected counts are small
_N_TABLES = 9999


@dataclass(frozen=True)
class Finding:
    """One check that rejected.

    Attributes
    ----------
    check : str
        ``"fit_gap"``, ``"label_shift"``, ``"label_only"``, ``"auc_below_chance"`` or
        ``"shared_persons"``.
    message : str
        What was found, the test and its p-value, and what it means.
    p_value : float or None
        The test's p-value (``None`` for ``label_only``, which is no test).
    """

    check: str
    message: str
    p_value: float | None = None

    def __str__(self) -> str:
        """The finding's message."""
        return self.message


# ------------------------------------------------------------------- the tests
def fit_gap_test(loss_train: Any, loss_population: Any) -> tuple[float, float]:
    """One-sided test that a model fits its training records worse than the population's.

    Parameters
    ----------
    loss_train, loss_population : array-like of float
        Per-record losses (e.g. the Brier score) on the training and population records.

    Returns
    -------
    gap : float
        Mean training loss minus mean population loss; negative is the usual direction
        (training records fit better).
    p_value : float
        Welch's t-test of H0 "the training records' mean loss is not larger" (1 when
        neither sample varies).

    Examples
    --------
    >>> gap, p = fit_gap_test([0.9, 1.2, 1.5, 2.0], [0.1, 0.2, 0.3, 0.4])
    >>> round(gap, 2), p < 0.01
    (1.15, True)
    """
    a = np.asarray(loss_train, dtype=np.float64)
    b = np.asarray(loss_population, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
    return float(a.mean() - b.mean()), float(p) if np.isfinite(p) else 1.0


def label_shift_test(
    y_train: Any, y_population: Any, *, random_state: Any = 0
) -> tuple[float, str]:
    """Test that two samples of labels come from the same distribution.

    Parameters
    ----------
    y_train, y_population : array-like
        Labels of the training and of the population records.
    random_state : int, RandomState instance or None, default=0
        Seeds the Monte Carlo tables (used only when an expected count is below 5
        and there are more than two classes).

    Returns
    -------
    p_value : float
    method : str
        The test used: Fisher's exact test (two classes), the chi-square test, or the
        chi-square statistic with a Monte Carlo p-value (small expected counts).

    Examples
    --------
    >>> p, method = label_shift_test([0] * 50 + [1] * 50, [0] * 90 + [1] * 10)
    >>> p < 1e-6, method
    (True, "Fisher's exact test")
    """
    table = _label_table(y_train, y_population)
    if table.shape[1] < 2:
        return 1.0, "one class in both"
    if table.shape[1] == 2:
        return float(stats.fisher_exact(table).pvalue), "Fisher's exact test"
    chi2, p, _, expected = stats.chi2_contingency(table, correction=False)
    if expected.min() >= 5:
        return float(p), "chi-square test"
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    tables = stats.random_table(rows, cols, seed=random_state).rvs(_N_TABLES)
    simulated = (((tables - expected) ** 2) / expected).sum(axis=(1, 2))
    p = (1 + int(np.sum(simulated >= chi2 - 1e-9))) / (_N_TABLES + 1)
    return float(p), f"chi-square test, Monte Carlo p over {_N_TABLES} tables"


def is_one_hot(proba: Any) -> bool:
    """Whether every row of a probability matrix is one-hot (a label-only output).

    Examples
    --------
    >>> is_one_hot([[0.0, 1.0], [1.0, 0.0]]), is_one_hot([[0.2, 0.8], [1.0, 0.0]])
    (True, False)
    """
    p = np.asarray(proba, dtype=np.float64)
    binary = (np.abs(p) <= 1e-9) | (np.abs(p - 1.0) <= 1e-9)
    return bool(p.size) and bool(binary.all()) and bool(((p > 0.5).sum(axis=1) == 1).all())


def _label_table(y_train: Any, y_population: Any) -> np.ndarray:
    """The 2 x K table of label counts (columns: the labels seen in either sample)."""
    a, b = pd.Series(np.asarray(y_train)), pd.Series(np.asarray(y_population))
    labels = pd.unique(pd.concat([a, b], ignore_index=True))
    counts = [s.value_counts().reindex(labels, fill_value=0).to_numpy() for s in (a, b)]
    return np.vstack(counts).astype(np.int64)


# ------------------------------------------------------------------ the checks
def check_inputs(
    target: Any,
    X_train: Any,
    y_train: Any,
    X_population: Any,
    y_population: Any,
    *,
    alpha: float = ALPHA,
    random_state: Any = 0,
) -> list[Finding]:
    """The checks that run before any attack: ``fit_gap``, ``label_shift``, ``label_only``.

    Parameters
    ----------
    target : object
        The fitted model (anything :class:`tabmia.target.TargetModel` accepts); it is
        queried once on every training and population record.
    X_train, y_train : records and labels the model was trained on.
    X_population, y_population : records from the same population it did not train on.
    alpha : float, default=ALPHA
        Level of each test.
    random_state : int, RandomState instance or None, default=0
        Seeds the label test's Monte Carlo tables.

    Returns
    -------
    list of Finding
        Empty when nothing looks wrong.

    Raises
    ------
    ValueError
        When the model cannot score the records or the labels are not among its
        classes (what the attacks would raise).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    model = as_target(target)
    y_train, y_population = np.asarray(y_train), np.asarray(y_population)
    n_train = n_rows(X_train)
    if model.outputs == "labels":  # a declared label-only model: its labels, one-hot
        predicted = np.r_[model.predict_indices(X_train), model.predict_indices(X_population)]
        proba = np.eye(model.n_classes)[predicted]
    else:
        proba = np.vstack([model.predict_proba(X_train), model.predict_proba(X_population)])
    y_idx = np.r_[
        model.encode_labels(y_train, name="y_train"),
        model.encode_labels(y_population, name="y_population"),
    ]
    found = []
    brier = ((proba - np.eye(proba.shape[1])[y_idx]) ** 2).sum(axis=1)
    _, p = fit_gap_test(brier[:n_train], brier[n_train:])
    if p < alpha:
        correct = np.argmax(proba, axis=1) == y_idx
        found.append(
            Finding(
                "fit_gap",
                (
                    f"the model fits its training records worse than the population records: "
                    f"accuracy {correct[:n_train].mean():.3f} against {correct[n_train:].mean():.3f}, "
                    f"mean Brier score {brier[:n_train].mean():.3f} against "
                    f"{brier[n_train:].mean():.3f} (one-sided Welch t-test, p = {p:.2g}). A model fits "
                    "the records it was trained on at least as well as others: the training and "
                    "population records may be swapped, or the training labels wrong; the attacks' "
                    "rates would then understate the leak"
                ),
                p,
            )
        )
    p, method = label_shift_test(y_train, y_population, random_state=random_state)
    table = _label_table(y_train, y_population)
    shift = 0.5 * np.abs(table[0] / table[0].sum() - table[1] / table[1].sum()).sum()
    if p < alpha and shift >= MIN_LABEL_SHIFT:
        found.append(
            Finding(
                "label_shift",
                (
                    f"the labels of the training records ({_shares(y_train)}) and of the population "
                    f"records ({_shares(y_population)}) differ beyond chance ({method}, p = {p:.2g}; "
                    f"total variation {shift:.3f}): the population may come from another "
                    "distribution (another period or source, a filtered or stratified file), which "
                    "lets an attack tell the two apart by label alone and overstates the leak, or "
                    "a label column is wrong"
                ),
                p,
            )
        )
    if model.outputs != "labels" and is_one_hot(proba):
        found.append(
            Finding(
                "label_only",
                (
                    f"the model's probabilities are one-hot (0/1) on all {proba.shape[0]} records: "
                    "a label-only model, whose outputs carry nothing beyond the predicted label. "
                    "Score attacks (loss, confidence, entropy, ...) then only tell correctly from "
                    "wrongly predicted records, and LiRA, RMIA, Calibrated and the quantile attack "
                    "see the same 0/1 outputs. Declare it label-only (TargetModel(..., "
                    "labels_only=True); tabmia audit --label-only) to run the label-only attacks: "
                    "the gap attack, and noise robustness and boundary distance, which probe "
                    "beyond the label and need the model itself, not its saved outputs"
                ),
            )
        )
    return found


def check_persons(groups_train: Any, groups_population: Any) -> list[Finding]:
    """Persons with records among both the training and the population records.

    A person is a member or a non-member as a whole: a person whose other records trained
    the model is no non-member, so population records of such persons contaminate the
    non-members (and the attacker's public records) and the audit's FPR and TPR no
    longer mean what they say. Not a test: any shared person is a finding.

    Parameters
    ----------
    groups_train, groups_population : array-like
        Person id of each training / population record.

    Returns
    -------
    list of Finding
        ``shared_persons``, naming how many persons and records, or nothing.
    """
    train = pd.Index(pd.unique(np.asarray(groups_train)))
    pop = np.asarray(groups_population)
    shared_rows = train.get_indexer(pop) >= 0
    if not shared_rows.any():
        return []
    n_persons = int(pd.unique(pop[shared_rows]).size)
    message = (
        f"{n_persons} persons have records among both the training records and the "
        f"population records ({int(shared_rows.sum())} of {pop.size} population records "
        "belong to persons the model trained on): a person is a member or not as a whole, "
        "so these non-members are members' records and the audit's rates do not measure "
        "what an attacker learns about persons. Remove those persons' records from the "
        "population data, or check that the person ids of both files mean the same persons"
    )
    return [Finding("shared_persons", message)]


def check_attack_scores(scores: pd.DataFrame, *, alpha: float = ALPHA) -> list[Finding]:
    """The check after the attacks: an AUC significantly below 0.5 (``auc_below_chance``).

    Parameters
    ----------
    scores : DataFrame
        An audit's scores (:attr:`tabmia.experiment.ExperimentResult.scores`):
        ``attack``, ``member``, ``score`` and, with several repeats, ``repeat``.
    alpha : float, default=ALPHA
        Level of the whole family: each attack and repeat is tested at ``alpha``
        divided by their number (Bonferroni).

    Returns
    -------
    list of Finding
        Empty, or one finding naming every attack (and repeat) whose AUC is below 0.5
        beyond chance, with its AUC and corrected p-value (``p_value``: the smallest).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    keys = ["attack", "repeat"] if "repeat" in scores.columns else ["attack"]
    groups = list(scores.groupby(keys, sort=False))
    n_repeats = scores["repeat"].nunique() if "repeat" in scores.columns else 1
    below = []
    for key, frame in groups:
        member = frame["member"].to_numpy(bool)
        s = frame["score"].to_numpy(np.float64)
        if member.all() or not member.any():
            continue
        res = stats.mannwhitneyu(s[member], s[~member], alternative="less")
        p = min(float(res.pvalue) * len(groups), 1.0)
        auc = float(res.statistic) / (member.sum() * (~member).sum())
        if p < alpha and auc <= MAX_AUC:
            key = key if isinstance(key, tuple) else (key,)
            where = f" (repeat {key[1]})" if n_repeats > 1 else ""
            below.append((f"{key[0]}{where} {auc:.3f} (p = {p:.2g})", p))
    if not below:
        return []
    return [
        Finding(
            "auc_below_chance",
            (
                f"AUC below 0.5 beyond chance: {', '.join(text for text, _ in below)} (one-sided "
                f"Mann-Whitney tests, Bonferroni-corrected over {len(groups)}). "
                f"{'These attacks score' if len(below) > 1 else 'It scores'} the training records as "
                "less member-like than records the model never saw, which an honest audit does not "
                "produce: the training and population records may be swapped, the training labels "
                "wrong, or the scores inverted, and these rates do not measure the leak"
            ),
            min(p for _, p in below),
        )
    ]


def _shares(y: np.ndarray) -> str:
    counts = pd.Series(y).value_counts(normalize=True)
    with contextlib.suppress(TypeError):  # labels of mixed types keep the order of their counts
        counts = counts.sort_index()
    shown = ", ".join(f"{k!r}: {v:.1%}" for k, v in zip(plain(counts.index[:6]), counts))
    return shown + (", ..." if counts.size > 6 else "")
