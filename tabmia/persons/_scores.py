"""Person statistics and their calibration per record-count band (see :mod:`tabmia.persons`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from tabmia._columns import PERSON, promised_fpr, slice_columns
from tabmia.exceptions import UnresolvableFPRError
from tabmia.thresholds import conformal_pvalues, conformal_pvalues_left_out

__all__ = ["PERSON_RULES", "DEFAULT_RULE", "BANDS", "person_scores"]

#: The rules combining a person's record scores into one statistic (higher = more
#: member-like), each with why it is there. See the module docstring.
PERSON_RULES: Mapping[str, str] = {
    "max": (
        "Šidák-adjusted minimum of the records' conformal p-values, "
        "-log(1 - (1 - min p)^k): finds a person one of whose records is memorised; "
        "for k = 1 it orders persons as the record scores order records."
    ),
    "stouffer": (
        "Stouffer's combination of the records' conformal p-values, sum z / sqrt(k) with "
        "z = Phi^-1(1 - p): accumulates weak evidence spread over all of a person's records."
    ),
    "mean": (
        "Mean of the record scores: the mean log-likelihood ratio of user inference "
        "(Kandpal et al. 2024) for attacks whose score is one (RMIA, LiRA online)."
    ),
    "combined": (
        "The more extreme of max and stouffer, -log min(p_Sidak, p_Stouffer): finds a "
        "person one of whose records is memorised and a person all of whose records leak "
        "(a memorised heavy person, whom max's Sidak correction for k records passes)."
    ),
}

#: The rule :func:`person_scores` and :func:`person_result` use unless told otherwise:
#: ``"combined"``, chosen by power at equal FPR (every rule is calibrated to the same FPR
#: per band, so their TPRs compare at equal FPR). Membership leaks in two ways, and each
#: single rule misses one: where one record of a person is memorised and the others are
#: not, averaging rules (stouffer, mean) dilute it by the person's other records; where
#: every record leaks (a forest memorises its whole training set), "max" pays Sidak's
#: price for the person's k records and can never flag a person with more records than
#: the calibration records can resolve (p_min is at least 1 / (n + 1), so
#: 1 - (1 - p_min)^k nears 1): one person owning every training record, all memorised,
#: passes "max". "combined" takes the more extreme of the two and is close to the better
#: one in each case; measured in tests/test_persons.py (simulation: one record leaking,
#: every record leaking, a memorised heavy person) and on diabetes130 by patient in
#: benchmarks/results/person_level_holdout.md. The FPR promise holds for every rule alike.
DEFAULT_RULE = "combined"

#: Labels of the bands of record counts persons are calibrated within (powers of two).
BANDS: tuple[str, ...] = ("1", "2-3", "4-7", "8-15", "16+")
_BAND_STARTS = np.array([1, 2, 4, 8, 16])

_NEEDED_COLUMNS = ("attack", PERSON, "member", "score")


def _band_label(lo: int, hi: int) -> str:
    """Label of the merged band of base bands ``lo..hi`` ("2-7", "8+", "1")."""
    first = int(_BAND_STARTS[lo])
    if hi == len(_BAND_STARTS) - 1:
        return f"{first}+"
    last = int(_BAND_STARTS[hi + 1]) - 1
    return str(first) if first == last else f"{first}-{last}"


def _base_band(k: np.ndarray) -> np.ndarray:
    """Index in :data:`BANDS` of each record count."""
    return np.searchsorted(_BAND_STARTS, k, side="right") - 1


def _needed(alpha: float) -> int:
    """Public persons a band needs so that its smallest p-value, 1/(n+1), is <= alpha."""
    # the tolerance keeps 1 / 0.01 = 100.000...01 from asking for 100 instead of 99
    return max(math.ceil(1.0 / alpha - 1e-9) - 1, 1)


def public_persons_needed(fpr: float) -> int:
    """Public persons that a person-level threshold needs to promise ``fpr`` at all.

    Person p-values are conformal ranks among the public persons (of a band, or of merged
    bands), and the smallest of ``n`` is ``1 / (n + 1)``: with fewer public persons than
    this no person can get a p-value at or below ``fpr``, and
    :func:`tabmia.persons.person_scores` raises
    :class:`~tabmia.exceptions.UnresolvableFPRError`. ``tabmia audit`` checks it before
    training.

    Parameters
    ----------
    fpr : float
        The person-level FPR an attack promises, in (0, 1).

    Returns
    -------
    int
        The smallest number of public persons that can promise it.

    Examples
    --------
    >>> from tabmia.persons import public_persons_needed
    >>> public_persons_needed(0.01), public_persons_needed(0.001)
    (99, 999)
    """
    return _needed(float(fpr))


def _merge_bands(counts: np.ndarray, needed: int) -> list[tuple[int, int]]:
    """Contiguous ranges ``(lo, hi)`` of base bands, each holding ``needed`` public persons.

    From the top band down, a band short of public persons takes the one below it (its
    persons are then compared with persons of fewer records, the nearest there are); the
    leftover at ``k = 1`` joins the lowest range formed. Empty when all public persons
    together are too few.
    """
    groups: list[tuple[int, int]] = []
    top, held = len(counts) - 1, 0
    for b in range(len(counts) - 1, -1, -1):
        held += int(counts[b])
        if held >= needed:
            groups.append((b, top))
            top, held = b - 1, 0
    if top >= 0 and groups:  # bands 0..top are short: they join the range above them
        _, hi = groups.pop()
        groups.append((0, hi))
    return groups[::-1]


def _alpha_for(fpr: Any, repeat: Any, attack: Any) -> float:
    """The FPR promised for ``(repeat, attack)`` (:func:`tabmia._columns.promised_fpr`),
    which a person-level threshold cannot do without."""
    alpha = promised_fpr(fpr, repeat, attack)
    if math.isnan(alpha):
        raise ValueError(
            f"no FPR for attack {attack!r} (repeat {repeat}): its threshold was not chosen "
            "for an FPR goal, or fpr names none for it, so there is no person-level FPR to "
            "calibrate"
        )
    return alpha


def _with_repeat(frame: pd.DataFrame) -> pd.DataFrame:
    return frame if "repeat" in frame.columns else frame.assign(repeat=0)


def _check_inputs(scores: pd.DataFrame, calibration: pd.DataFrame) -> None:
    """Refuse inputs that break the contract of docs/records_persons_slices.md."""
    missing = [c for c in _NEEDED_COLUMNS if c not in scores.columns]
    if missing:
        raise ValueError(f"scores lack the columns {missing} (docs: records, persons, slices)")
    missing = [c for c in ("attack", PERSON, "score") if c not in calibration.columns]
    if missing:
        raise ValueError(f"calibration lacks the columns {missing}")
    if scores.empty or calibration.empty:
        raise ValueError("scores and calibration must hold records")
    for name, frame in (("scores", scores), ("calibration", calibration)):
        n_nan = int(frame[PERSON].isna().sum())
        if n_nan:
            raise ValueError(f"{name} has {n_nan} records whose person id is missing (NaN)")
        n_nan = int(frame["score"].isna().sum())
        if n_nan:
            raise ValueError(f"{name} has {n_nan} records whose score is NaN")
    member = scores["member"]
    if member.dtype != bool and not member.isin([0, 1]).all():
        raise ValueError("scores' member column must be boolean or 0/1")
    # a person's records are all members or all non-members within a repeat (the split
    # keeps a person on one side; another repeat may put them on the other)
    sides = scores.groupby(["repeat", PERSON], sort=False)["member"].nunique()
    n_both = int((sides > 1).sum())
    if n_both:
        raise ValueError(
            f"{n_both} persons have records among both the members and the non-members "
            "(in one repeat): membership must be decided per person (split with groups=)"
        )
    # object keys: ids of different dtypes (str and int) are different persons, not an error
    cand = scores[["repeat", PERSON]].astype({PERSON: object}).drop_duplicates()
    public = calibration[["repeat", PERSON]].astype({PERSON: object}).drop_duplicates()
    n_shared = len(cand.merge(public, on=["repeat", PERSON]))
    if n_shared:
        raise ValueError(
            f"{n_shared} persons are both candidates and public (calibration) persons in "
            "one repeat: the public persons must be disjoint from the candidates"
        )


def _record_statistics(
    rule: str,
    codes: np.ndarray,
    k: np.ndarray,
    s: np.ndarray,
    p: tuple[np.ndarray, np.ndarray],
) -> np.ndarray:
    """Each person's statistic from their records.

    ``p`` holds each record's conformal p-value against the calibration records it is
    compared with, and its mid-p (:func:`tabmia.thresholds.conformal_pvalues`,
    ``own_count=0.5``).
    """
    n_persons = len(k)
    if rule == "mean":
        return np.bincount(codes, weights=s, minlength=n_persons) / k
    if rule == "max":
        p_min = np.full(n_persons, np.inf)
        np.minimum.at(p_min, codes, p[0])
        # -log(1 - (1 - p)^k) without cancelling: 1 - (1 - p)^k = -expm1(k log1p(-p));
        # p = 1 (below every calibration score) gives log1p(-1) = -inf and a statistic of 0
        with np.errstate(divide="ignore"):
            return -np.log(-np.expm1(k * np.log1p(-p_min)))
    # stouffer: the mid-p (half a count lower) keeps z finite where p = 1; the person-level
    # calibration makes the statistic valid whatever this monotone transform is
    z = stats.norm.isf(p[1])
    return np.bincount(codes, weights=z, minlength=n_persons) / np.sqrt(k)


def _statistics(
    rule: str,
    codes: np.ndarray,
    k: np.ndarray,
    s: np.ndarray,
    p: tuple[np.ndarray, np.ndarray],
) -> np.ndarray:
    """Each person's statistic, shape ``(n_persons,)``, or ``(2, n_persons)`` for the
    combined rule (its max and stouffer statistics, combined once each is calibrated:
    :func:`_band_pvalues`)."""
    if rule != "combined":
        return _record_statistics(rule, codes, k, s, p)
    return np.vstack([_record_statistics(r, codes, k, s, p) for r in ("max", "stouffer")])


def _first_per_code(codes: np.ndarray, n: int) -> np.ndarray:
    """Row of each code's first record (codes numbered from 0 in order of appearance)."""
    _, first = np.unique(codes, return_index=True)
    if len(first) != n:  # pragma: no cover - pd.factorize numbers every code it gives
        raise AssertionError("person codes are not contiguous")
    return first


def _constant_slices(frame: pd.DataFrame) -> list[str]:
    """The ``slice:*`` columns, each a person's slice: the label of the person's first
    record, also where their records carry several (an age band crossed between two
    encounters), so that slices of persons exist whenever slices of records do."""
    return slice_columns(frame)


def _person_frame(
    part: pd.DataFrame,
    codes: np.ndarray,
    uniques: Any,
    k: np.ndarray,
    slices: list[str],
    member: np.ndarray | bool,
) -> pd.DataFrame:
    first = _first_per_code(codes, len(k))
    out = pd.DataFrame(
        {
            "repeat": part["repeat"].iloc[0],
            "attack": part["attack"].iloc[0],
            PERSON: np.asarray(uniques),
            "member": member if isinstance(member, bool) else member[first],
            "n_records": k,
        }
    )
    for col in slices:
        out[col] = part[col].to_numpy()[first]
    return out


def _band_pvalues(
    stat_cand: np.ndarray,
    stat_pub: np.ndarray,
    in_cand: np.ndarray,
    in_pub: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Conformal p-values of the candidates and public persons of one band against the
    band's public persons; a public person's leaves itself out (exchangeable with a
    candidate's, whose count includes no candidate)."""
    ref = stat_pub[in_pub]
    p_cand = conformal_pvalues(stat_cand[in_cand], ref) if in_cand.any() else np.ones(0)
    return p_cand, conformal_pvalues_left_out(ref)


def _calibrate(
    cand: pd.DataFrame,
    public: pd.DataFrame,
    alpha: float,
    attack: Any,
    repeat: Any,
    stat_cand: np.ndarray,
    stat_pub: np.ndarray,
) -> None:
    """Fill ``band``, ``statistic``, ``p_value``, ``score``, ``flagged`` of candidate and
    public persons of one (repeat, attack), each calibrated on the public persons of its
    band. A 2-row statistic (the combined rule's) is calibrated row by row first, and the
    smaller of the two p-values, as ``-log p``, is the statistic calibrated."""
    base_pub = _base_band(public["n_records"].to_numpy())
    base_cand = _base_band(cand["n_records"].to_numpy())
    counts = np.bincount(base_pub, minlength=len(BANDS))
    needed = _needed(alpha)
    groups = _merge_bands(counts, needed)
    if not groups:
        exc = UnresolvableFPRError(
            f"attack {attack!r} (repeat {repeat}): the public data hold {len(public)} "
            f"persons; a person-level FPR of {alpha:g} needs at least {needed} public "
            f"persons (the smallest p-value of n persons is 1/(n+1)): "
            + _more_persons_advice(len(public), alpha)
        )
        exc.reason = f"{len(public)} public persons cannot promise a person-level FPR of {alpha:g}"
        exc.attack = str(attack)
        raise exc
    stat_pub = np.asarray(stat_pub, dtype=float)
    stat_cand = np.asarray(stat_cand, dtype=float)
    combined = stat_pub.ndim == 2
    final_pub = np.zeros(len(public)) if combined else stat_pub
    final_cand = np.zeros(len(cand)) if combined else stat_cand
    p_pub, p_cand = np.ones(len(public)), np.ones(len(cand))
    band_pub = np.empty(len(public), dtype=object)
    band_cand = np.empty(len(cand), dtype=object)
    present = np.union1d(base_pub, base_cand)
    for lo, hi in groups:
        # named by the record counts it holds: "1" where every person has one record,
        # not "1+" for the empty bands above that merged into it
        held = present[(present >= lo) & (present <= hi)]
        label = _band_label(int(held.min()), int(held.max()))
        in_pub = (base_pub >= lo) & (base_pub <= hi)
        in_cand = (base_cand >= lo) & (base_cand <= hi)
        if combined:
            final_cand[in_cand], final_pub[in_pub] = _combine(
                stat_cand[:, in_cand], stat_pub[:, in_pub]
            )
        p_cand[in_cand], p_pub[in_pub] = _band_pvalues(final_cand, final_pub, in_cand, in_pub)
        band_pub[in_pub], band_cand[in_cand] = label, label
    for frame, p, band, stat in (
        (cand, p_cand, band_cand, final_cand),
        (public, p_pub, band_pub, final_pub),
    ):
        frame["statistic"] = stat
        frame["band"] = band
        frame["score"] = -np.log(p)
        frame["p_value"] = p
        # p is a ratio of integers; the tolerance keeps 1/100 <= 0.01 whatever the rounding
        frame["flagged"] = p <= alpha * (1.0 + 1e-12)


def _combine(stat_cand: np.ndarray, stat_pub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The combined rule's statistic of one band's candidates and public persons from
    their max and stouffer statistics (rows): each on a normal scale (Sidak's p as a
    z-score), standardised by the band's public persons (the spread of a sum of correlated
    records' z grows with their number), and the larger of the two. Ranks would tie at the
    top (a person beyond every public one in either statistic gets the smallest p-value of
    both, and the minimum of two such ranks cannot be calibrated below 2 / (n + 1)); the
    standardised statistics keep how far beyond the public persons a person is."""
    # Sidak's statistic is -log p: p = exp(-stat); isf(p) without underflow via logs
    z_cand = np.vstack([stats.norm.isf(np.exp(-stat_cand[0])), stat_cand[1]])
    z_pub = np.vstack([stats.norm.isf(np.exp(-stat_pub[0])), stat_pub[1]])
    # large Sidak statistics (p below 1e-300) keep their order: isf would return inf
    z_cand[0] = np.where(np.isfinite(z_cand[0]), z_cand[0], np.sqrt(2.0 * stat_cand[0]))
    z_pub[0] = np.where(np.isfinite(z_pub[0]), z_pub[0], np.sqrt(2.0 * stat_pub[0]))
    centre = z_pub.mean(axis=1, keepdims=True)
    spread = z_pub.std(axis=1, keepdims=True)
    spread = np.where(spread > 0, spread, 1.0)
    return ((z_cand - centre) / spread).max(axis=0), ((z_pub - centre) / spread).max(axis=0)


def _more_persons_advice(n_public: int, alpha: float) -> str:
    """What to do when ``n_public`` public persons cannot promise ``alpha``: a larger FPR
    only where one below 1 would do, else more persons (a one-person population can
    promise nothing)."""
    smallest = 1.0 / (n_public + 1)
    if smallest >= 0.5:  # no useful FPR: the population is too small to calibrate on
        return (
            f"{n_public} public person{'s' if n_public != 1 else ''} are too few to "
            "calibrate any person-level threshold; give the attacker more public persons"
        )
    return f"use more public persons or a larger FPR (at least {smallest:.3g})"


def person_scores(
    scores: pd.DataFrame,
    calibration: pd.DataFrame,
    *,
    fpr: float | pd.Series,
    rule: str = DEFAULT_RULE,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Person-level statistics, p-values and flags, calibrated on public persons.

    Parameters
    ----------
    scores : DataFrame
        One row per (repeat, attack, candidate record): ``repeat`` (absent = 0),
        ``attack``, ``person``, ``member``, ``score`` (higher = more member-like), as
        :attr:`tabmia.experiment.ExperimentResult.scores`. Other columns are dropped,
        except ``slice:<name>`` columns constant within every person (their value is the
        person's); ``flagged`` (record-level) is ignored.
    calibration : DataFrame
        One row per (repeat, attack, calibration record): ``repeat``, ``attack``,
        ``person``, ``score``: the public records' scores under the null, as
        :attr:`tabmia.experiment.ExperimentResult.calibration`. Its persons are the
        public persons, disjoint from the candidates'.
    fpr : float or Series
        The FPR each attack promises (``alpha``): one for all, or a Series indexed by
        attack or by (repeat, attack), such as the metrics' ``fpr_target``.
    rule : {"max", "stouffer", "mean"}, default=DEFAULT_RULE
        How a person's record scores make one statistic (:data:`PERSON_RULES`).

    Returns
    -------
    candidates, public : DataFrame
        One row per (repeat, attack, person), candidates and public persons:
        ``repeat``, ``attack``, ``person``, ``member`` (False for public persons),
        ``n_records``, ``band`` (where the person was calibrated: "1", "2-3", "4-7",
        "8-15", "16+", or a merged range such as "8+"), ``statistic`` (the rule's),
        ``score`` (``-log(p_value)``), ``p_value`` (person-level conformal p-value
        against the public persons of the band; a public person's leaves itself out),
        ``flagged`` (``p_value <= alpha``), and the kept ``slice:<name>`` columns.

    Raises
    ------
    ValueError
        On missing columns, NaN person ids or scores, a person among both members and
        non-members, persons both candidates and public, an unknown rule, or an attack
        without an FPR.
    UnresolvableFPRError
        When all public persons of a (repeat, attack) together are fewer than
        ``ceil(1 / alpha) - 1``: no person-level threshold can promise ``alpha``.
    """
    if rule not in PERSON_RULES:
        raise ValueError(f"rule must be one of {sorted(PERSON_RULES)}, got {rule!r}")
    scores, calibration = _with_repeat(scores), _with_repeat(calibration)
    _check_inputs(scores, calibration)
    slices_cand = _constant_slices(scores)
    slices_pub = _constant_slices(calibration)
    cal_groups = dict(list(calibration.groupby(["repeat", "attack"], sort=False)))
    out_cand, out_pub = [], []
    # one pass per (repeat, attack): each has its own calibration records and threshold
    for (repeat, attack), part in scores.groupby(["repeat", "attack"], sort=False):
        cal = cal_groups.get((repeat, attack))
        if cal is None or cal.empty:
            raise ValueError(
                f"calibration has no records of attack {attack!r} in repeat {repeat}: "
                "its public persons' null scores are needed to calibrate persons"
            )
        alpha = _alpha_for(fpr, repeat, attack)
        c_codes, c_uniques = pd.factorize(part[PERSON])
        p_codes, p_uniques = pd.factorize(cal[PERSON])
        c_k, p_k = np.bincount(c_codes), np.bincount(p_codes)
        s_cand = part["score"].to_numpy(float)
        s_pub = cal["score"].to_numpy(float)
        # a public record is compared with the *other persons'* public records, as a
        # candidate's record is (the threshold would be too low otherwise)
        p_cand = (conformal_pvalues(s_cand, s_pub), conformal_pvalues(s_cand, s_pub, own_count=0.5))
        p_pub = (
            conformal_pvalues_left_out(s_pub, p_codes),
            conformal_pvalues_left_out(s_pub, p_codes, own_count=0.5),
        )
        stat_cand = _statistics(rule, c_codes, c_k, s_cand, p_cand)
        stat_pub = _statistics(rule, p_codes, p_k, s_pub, p_pub)
        for stat, what in ((stat_cand, "candidate"), (stat_pub, "public")):
            if np.isnan(stat).any():
                raise ValueError(
                    f"rule {rule!r} gives {int(np.isnan(stat).sum())} {what} persons of "
                    f"attack {attack!r} a NaN statistic (infinite record scores?)"
                )
        cand = _person_frame(
            part,
            c_codes,
            c_uniques,
            c_k,
            slices_cand,
            part["member"].to_numpy(bool),
        )
        public = _person_frame(cal, p_codes, p_uniques, p_k, slices_pub, False)
        _calibrate(cand, public, alpha, attack, repeat, stat_cand, stat_pub)
        out_cand.append(cand)
        out_pub.append(public)
    order = [
        "repeat",
        "attack",
        PERSON,
        "member",
        "n_records",
        "band",
        "statistic",
        "score",
        "p_value",
        "flagged",
    ]
    frames = []
    for parts, slices in ((out_cand, slices_cand), (out_pub, slices_pub)):
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=order)
        frames.append(frame[order + slices])
    return frames[0], frames[1]
