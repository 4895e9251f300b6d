"""The membership game over many data sets and attacks, resumable cell by cell.

:func:`run_benchmark` plays :mod:`tabmia.experiment`'s game (same seeds, split and
target training as ``tabmia audit``) for every data set x seed, and runs every attack
against each target. One (data set, seed, attack) result is a *cell*: its candidate
scores and timings are stored under ``<out>/cells/`` as ``<key>.npz`` + ``<key>.json``,
where ``key`` hashes every setting that changes the scores. A re-run with the same
settings reads the stored cells instead of computing them, so an interrupted benchmark
resumes where it stopped and adding an attack or a seed computes only the new cells.
Metrics (AUC, TPR and precision at each FPR) are computed from the stored scores, so
asking for other FPRs recomputes nothing. Shadow-based attacks get a ``cache_dir`` under
``<out>/shadows/``: LiRA with 16, 32 and 64 shadows trains 64 models, not 112.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tabmia import backends
from tabmia._attack_builder import build_attacks, parse_attack_spec, unused_settings_note
from tabmia._benchmark_report import cell_metrics, write_outputs
from tabmia._device import resolve_device_name
from tabmia.attacks import membership_tags
from tabmia.backends import has_device
from tabmia.datasets import DataNotFoundError, load_dataset, resolve_dataset_name
from tabmia.exceptions import RunNote
from tabmia.experiment import MembershipRound, game_seeds, subsample, subsample_persons
from tabmia.recipes import BENCHMARK_ATTACKS, MODEL_NAMES, make_model
from tabmia.target import n_rows

__all__ = ["BenchmarkResult", "run_benchmark", "QUICK_MAX_RECORDS", "DEFAULT_ATTACKS"]

#: Attacks run when none are named (:data:`tabmia.recipes.BENCHMARK_ATTACKS`).
DEFAULT_ATTACKS = BENCHMARK_ATTACKS
#: Records a ``quick`` run subsamples each data set to.
QUICK_MAX_RECORDS = 500
# bump when a cell's content or meaning changes, so old cells are not mistaken for new
_CELL_FORMAT = 2


@dataclass
class BenchmarkResult:
    """What :func:`run_benchmark` found and wrote.

    Attributes
    ----------
    results : dict
        The content of ``results.json``.
    computed : int
        Cells computed by this run.
    reused : int
        Cells read from ``<out>/cells`` (computed by an earlier run).
    failed : dict
        ``"<data set> seed <i> <attack>"`` -> error message, for cells whose attack raised.
    files : list of Path
        Files written into the output folder.
    """

    results: dict[str, Any]
    computed: int = 0
    reused: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _attack_settings(attack: Any, *, leave_out: tuple[str, ...] = ()) -> dict[str, str]:
    """The parameters that identify an attack's results (not its ``run_params`` tag), and
    not ``leave_out``."""
    skip = membership_tags(attack).run_params | set(leave_out)
    return {k: repr(v) for k, v in sorted(attack.get_params(deep=False).items()) if k not in skip}


class _CellStore:
    """``<key>.npz`` (member flags, scores) + ``<key>.json`` (the rest) per cell.

    The json is written last (atomically), so a cell is complete iff its json exists.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def load(self, key: str) -> dict[str, Any] | None:
        meta_path, npz_path = self.folder / f"{key}.json", self.folder / f"{key}.npz"
        if not (meta_path.is_file() and npz_path.is_file()):
            return None
        try:
            meta = json.loads(meta_path.read_text())
            with np.load(npz_path) as data:
                meta["member"], meta["scores"] = data["member"], data["scores"]
        except (OSError, ValueError, KeyError):
            return None  # a damaged cell is recomputed
        return meta

    def save(self, key: str, meta: dict[str, Any], member: np.ndarray, scores: np.ndarray) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(self.folder / f"{key}.npz", member=member, scores=scores)
        tmp = self.folder / f".{key}.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1, default=str) + "\n")
        os.replace(tmp, self.folder / f"{key}.json")


def _load(name: str, resolved: str, max_records: int | None, random_state: int) -> dict[str, Any]:
    bunch = load_dataset(resolved)
    X, y = bunch.data, np.asarray(bunch.target)
    n_total = n_rows(X)
    groups = bunch.get("groups") if isinstance(bunch, dict) else None
    if groups is None:
        X, y = subsample(X, y, max_records, random_state)  # as tabmia audit --max-records
    else:  # whole persons, as tabmia audit subsamples a data set that carries them
        X, y, groups = subsample_persons(X, y, np.asarray(groups), max_records, random_state)
    descr = str(getattr(bunch, "DESCR", "") or "").strip().splitlines()
    return {
        "X": X,
        "y": y,
        "groups": groups,
        "n_total": n_total,
        "source": descr[0] if descr else resolved,
        "status": next((d for d in descr if d.startswith("Status:")), ""),
    }


def run_benchmark(
    datasets: Sequence[str],
    model: str = "catboost",
    attacks: Sequence[str] | str = DEFAULT_ATTACKS,
    seeds: int = 3,
    fprs: Sequence[float] = (0.01,),
    out_dir: str | os.PathLike = "tabmia-benchmark",
    *,
    threshold_fpr: float | None = None,
    train_size: float | int = 0.5,
    public_size: float | int = 0.5,
    prior: float | None = None,
    max_records: int | None = None,
    quick: bool = False,
    n_jobs: int | None = None,
    device: str = "auto",
    random_state: int = 0,
    progress: bool = True,
    html: bool = True,
    command: str | None = None,
) -> BenchmarkResult:
    """Run every attack against a target per data set and seed; write the tables.

    Parameters
    ----------
    datasets : sequence of str
        Names for :func:`tabmia.datasets.load_dataset`: ``openml:361070``, ``361070``,
        ``eye_movements``, ``acs:ACSIncome:NY``, ``adult``, ... A data set missing from
        the data home is skipped and recorded with the loader's message.
    model : str, default="catboost"
        Target recipe (:data:`tabmia.recipes.MODEL_NAMES`); shadow and reference models
        copy it.
    attacks : sequence of str or str
        Attack specs ``name[:param=value ...]`` (see :mod:`tabmia._attack_builder`),
        e.g. ``["quantile", "lira:n_shadow=64"]``; each names its column.
    seeds : int, default=3
        Repeats of the game (new split and target each).
    fprs : sequence of float, default=(0.01,)
        FPR levels for TPR and precision; a level below ``1 / n_nonmembers`` is "n/r".
    out_dir : path, default="tabmia-benchmark"
        Output folder: ``results.json``, ``results.md``, ``roc_<data set>.png``,
        ``report.html``, plus ``cells/`` and ``shadows/`` (the resumable state).
    threshold_fpr : float, default=None
        The FPR each attack's own threshold promises (default ``fprs[0]``).
    train_size, public_size : float or int
        See :func:`tabmia.experiment.split_membership`.
    prior : float, default=None
        Non-member candidates per member (``1.0``: balanced, as the quantile paper's
        precision); ``None`` keeps every training record as a candidate.
    max_records : int, default=None
        Subsample each data set to this many records first.
    quick : bool, default=False
        Smoke run: one seed, at most :data:`QUICK_MAX_RECORDS` records, each attack's
        quick settings (few shadow models) under the spec's own parameters.
    n_jobs : int, default=None
        Parallel shadow / reference model training.
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        Where the target, its shadow / reference / proxy models (copies of its recipe)
        and the attacks that take a device train (:mod:`tabmia.backends`). CUDA on a
        machine without a GPU is the CPU (said once on stderr), as is a device that
        neither the model nor an attack uses.
    random_state : int, default=0
        Seeds the subsample, the games and the attacks.
    progress : bool, default=True
        A tqdm progress bar over the cells on stderr.
    html : bool, default=True
        Also write ``report.html``.
    command : str, default=None
        The command line, recorded in the outputs.

    Returns
    -------
    BenchmarkResult

    Raises
    ------
    ValueError
        For an unknown data set, model or attack name, or a bad setting (before
        anything is computed or written).
    DataNotFoundError
        When none of the data sets could be loaded (nothing is written).
    """
    from tqdm.auto import tqdm

    # ---- validate everything before computing anything
    names, resolved = _checked_names(datasets)
    fprs, threshold_fpr = _checked_settings(model, seeds, fprs, threshold_fpr, max_records)
    if quick:
        seeds = 1
        max_records = min(max_records or QUICK_MAX_RECORDS, QUICK_MAX_RECORDS)
    requested, device = device, _runner_device(device)
    protos = build_attacks(
        list(attacks) if not isinstance(attacks, str) else attacks,
        fast=quick,
        fpr=threshold_fpr,
        n_jobs=n_jobs,
        device=device,
    )
    # a CUDA request already answered by the no-GPU note is not reported again
    _note_settings_not_used(
        protos, model, n_jobs=n_jobs, device=device if device == requested else "auto"
    )
    specs = {t: parse_attack_spec(t) for t in protos}
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} exists and is not a folder")

    t_start, load_start = time.perf_counter(), os.getloadavg()
    seed_list = game_seeds(random_state, seeds)
    split = {"train_size": train_size, "public_size": public_size, "prior": prior}
    settings = {
        "datasets": names,
        "resolved": resolved,
        "model": model,
        "attacks": list(protos),
        "seeds": seeds,
        "game_seeds": seed_list,
        "fprs": list(fprs),
        "threshold_fpr": threshold_fpr,
        **split,
        "max_records": max_records,
        "quick": quick,
        "n_jobs": n_jobs,
        "device": device,
        "random_state": random_state,
        "attack_params": {t: _attack_settings(a) for t, a in protos.items()},
    }
    bar = tqdm(
        total=len(names) * seeds * len(protos),
        desc="tabmia benchmark",
        unit="cell",
        file=sys.stderr,
        disable=not progress,
        dynamic_ncols=True,
    )
    run = _Run(
        protos={t: (a, specs[t]) for t, a in protos.items()},
        store=_CellStore(out / "cells"),
        out=out,
        model=model,
        device=device,
        bar=bar,
        write=tqdm.write,
    )
    try:
        for name in names:
            run.play_dataset(name, resolved[name], seed_list, split, max_records, random_state)
    finally:
        bar.close()
    return _finish(
        run, settings, t_start, fprs=fprs, html=html, command=command, load_start=load_start
    )


def _finish(run: _Run, settings: dict[str, Any], t_start: float, **outputs: Any) -> BenchmarkResult:
    """The cells' metrics at the FPR levels, and the files written (``outputs``: the
    keywords of :func:`tabmia._benchmark_report.write_outputs`; the wall time counted
    from ``t_start``)."""
    report = run.report
    if not report["datasets"]:
        # nothing ran: an error, not an empty table (a CI job would read it as a result)
        reasons = "; ".join(
            f"{name}: {why.splitlines()[0]}" for name, why in report["skipped"].items()
        )
        raise DataNotFoundError(f"no data set could be loaded, nothing was written ({reasons})")
    run.say_skipped()  # skipped after the last
    for entry in report["datasets"].values():
        for s in entry["seeds"]:
            for c in s["cells"].values():
                c["metrics"] = cell_metrics(c, outputs["fprs"], seed=s["seed"])
    result = run.result
    result.failed = report["failed"]
    result.results, result.files = write_outputs(
        run.out,
        report,
        settings,
        wall_seconds=time.perf_counter() - t_start,
        cells={
            "computed": result.computed,
            "reused": result.reused,
            "failed": len(report["failed"]),
        },
        **outputs,
    )
    return result


def _checked_names(datasets: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The data set names given, and each one's canonical name; none twice."""
    names = [str(d).strip() for d in datasets if str(d).strip()]
    if not names:
        raise ValueError("no data set given")
    resolved = {n: resolve_dataset_name(n) for n in names}
    dup = [n for n in names if list(resolved.values()).count(resolved[n]) > 1]
    if dup:
        raise ValueError(f"data set {dup[0]!r} given twice ({resolved[dup[0]]})")
    return names, resolved


def _checked_settings(
    model: str,
    seeds: int,
    fprs: Sequence[float],
    threshold_fpr: float | None,
    max_records: int | None,
) -> tuple[tuple[float, ...], float]:
    """Refuse a bad model, seed count, FPR or record count; the FPR levels and the FPR
    the thresholds promise."""
    if model not in MODEL_NAMES:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODEL_NAMES)}")
    if not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise ValueError(f"seeds must be an int >= 1, got {seeds!r}")
    fprs = tuple(float(f) for f in fprs)
    if not fprs or any(not 0.0 < f < 1.0 for f in fprs):
        raise ValueError(f"FPR levels must be in (0, 1), got {list(fprs)}")
    threshold_fpr = fprs[0] if threshold_fpr is None else float(threshold_fpr)
    if not 0.0 < threshold_fpr < 1.0:
        raise ValueError(f"threshold FPR must be in (0, 1), got {threshold_fpr}")
    if max_records is not None and max_records < 20:
        raise ValueError("max_records must be at least 20")
    return fprs, threshold_fpr


@dataclass
class _Run:
    """One benchmark run's cells: computed, or read back from the store."""

    protos: dict[str, tuple[Any, Any]]  # spec text -> (unfitted attack, parsed spec)
    store: _CellStore
    out: Path
    model: str
    device: str
    bar: Any  # tqdm progress bar over the cells
    write: Any  # prints a line above the bar
    result: BenchmarkResult = field(default_factory=lambda: BenchmarkResult(results={}))
    report: dict[str, Any] = field(
        default_factory=lambda: {"datasets": {}, "skipped": {}, "failed": {}}
    )
    said: set[str] = field(default_factory=set)  # skipped data sets already said

    def say_skipped(self) -> None:
        """One line per skipped data set not said yet."""
        for skipped in [n for n in self.report["skipped"] if n not in self.said]:
            self.write(
                f"{skipped}: not available, skipped: "
                f"{self.report['skipped'][skipped].splitlines()[0]}",
                file=sys.stderr,
            )
            self.said.add(skipped)

    def play_dataset(
        self,
        name: str,
        resolved: str,
        seed_list: list[int],
        split: dict[str, Any],
        max_records: int | None,
        random_state: int,
    ) -> None:
        """Every seed's cells of one data set, into the report (or the data set skipped)."""
        try:
            data = _load(name, resolved, max_records, random_state)
        except (DataNotFoundError, ImportError) as exc:
            self.report["skipped"][name] = str(exc)
            self.bar.update(len(seed_list) * len(self.protos))
            return
        # said once a data set loads; if none does, the one error below says it all
        self.say_skipped()
        X, y, groups = data["X"], data["y"], data["groups"]
        if groups is not None:
            self.write(
                f"{name}: split by person ({np.unique(groups).size} persons with "
                f"{len(groups)} records): a person's records are all members or all "
                "non-members, all public or all candidates",
                file=sys.stderr,
            )
        entry: dict[str, Any] = {
            "resolved": resolved,
            "source": data["source"],
            "status": data["status"],
            "n_records": int(y.shape[0]),
            "n_records_total": int(data["n_total"]),
            "n_features": int(X.shape[1]),
            "split_by_person": groups is not None,
            "seeds": [],
        }
        for i, seed in enumerate(seed_list):
            game = {
                "format": _CELL_FORMAT,
                "dataset": resolved,
                "n_records": int(y.shape[0]),
                "n_features": int(X.shape[1]),
                "max_records": max_records,
                "subsample_seed": random_state,
                **split,
                "model": self.model,
                "seed": seed,
                # a person split is another game; record-split cells keep their keys
                **({"split_by_person": True} if groups is not None else {}),
            }
            game_round = MembershipRound.draw(X, y, seed, **split, groups=groups)
            cells = self._play_seed(game_round, game, f"{name} seed {i}", X)
            assert game_round.split is not None  # a drawn round has its split
            entry["seeds"].append(
                {
                    "seed": seed,
                    "n_members": int(game_round.split.members.size),
                    "n_nonmembers": int(game_round.split.nonmembers.size),
                    "cells": cells,
                }
            )
        self.report["datasets"][name] = entry

    def _play_seed(
        self, game_round: Any, game: dict[str, Any], where: str, X: Any
    ) -> dict[str, Any]:
        """Every attack's cell of one game (the target trained at the first one computed)."""
        cells = {}
        for text, (proto, spec) in self.protos.items():
            self.bar.set_postfix_str(f"{where} {text}", refresh=False)
            identity = {**game, "attack": spec.name, "params": _attack_settings(proto)}
            key = _digest(identity)
            cell = self.store.load(key)
            if cell is not None:
                self.result.reused += 1
            else:
                if game_round.target is None:
                    game_round.train_target(make_model(self.model, X, device=self.device))
                cell = _compute_cell(
                    game_round,
                    text,
                    proto,
                    spec,
                    shadow_dir=self.out / "shadows" / _digest(game),
                )
                if "error" in cell:
                    self.report["failed"][f"{where} {text}"] = cell["error"]
                    self.write(f"{where} {text}: failed: {cell['error']}", file=sys.stderr)
                    self.bar.update(1)
                    continue
                cell["target_accuracy"] = game_round.accuracy
                cell["key"], cell["settings"] = key, identity
                self.store.save(
                    key,
                    {k: v for k, v in cell.items() if k not in ("member", "scores")},
                    cell["member"],
                    cell["scores"],
                )
                self.result.computed += 1
            cells[text] = cell
            self.bar.update(1)
        return cells


def _runner_device(device: str) -> str:
    """``device`` checked; CUDA without a GPU on this machine becomes the CPU, said once
    (a ``RunNote``: the CLI prints it as a ``tabmia: note:`` line)."""
    resolve_device_name(device, n_gpus=lambda: 1, check_index=False)  # the vocabulary
    # backends.gpu_present is looked up when called: tests fake a GPU there
    if str(device).startswith("cuda") and not backends.gpu_present():
        warnings.warn(
            f"device {device}: no GPU is present; training and scoring run on the CPU",
            RunNote,
            stacklevel=3,
        )
        return "cpu"
    return device


def _note_settings_not_used(
    attacks: dict[str, Any], model: str, *, n_jobs: int | None, device: str
) -> None:
    """A note (``RunNote``) naming runner settings that no attack (nor the model) uses."""
    given = {
        k: text
        for k, on, text in (
            ("n_jobs", n_jobs is not None, f"n_jobs={n_jobs}"),
            ("device", device != "auto", f"device={device}"),
        )
        if on
    }
    note = unused_settings_note(attacks, given, model_takes_device=has_device(make_model(model)))
    if note is not None:
        warnings.warn(note, RunNote, stacklevel=3)


def _compute_cell(
    game: Any, text: str, proto: Any, spec: Any, *, shadow_dir: Path
) -> dict[str, Any]:
    """Fit one attack in one game round; its scores, threshold and timings."""
    from sklearn.base import clone

    attack = proto
    tags = membership_tags(proto)
    if "cache_dir" in tags.runner_settings:
        # one cache per (game, attack settings other than the model count): more
        # shadows top up fewer, other settings never mix with them
        rest = _attack_settings(proto, leave_out=tags.model_count_params)
        attack = clone(proto).set_params(
            cache_dir=str(shadow_dir / f"{spec.name}-{_digest(rest)[:10]}")
        )
    try:
        with warnings.catch_warnings():
            # the cell records the FPR its threshold aims at and the shadows' size
            warnings.simplefilter("ignore", RunNote)
            frames, rows, fitted = game.play({text: attack}, fprs=(), gammas=(), fpr_fallback=True)
    except Exception as exc:  # noqa: BLE001 - one attack failing must not lose the others
        first = str(exc).splitlines()[0] if str(exc) else ""
        return {"error": f"{type(exc).__name__}: {first}"}
    return {
        "attack": text,
        "member": game.member,
        "scores": frames[0]["score"].to_numpy(dtype=np.float64),
        "threshold": float(fitted[0].threshold_),
        "fit_seconds": rows[0]["fit_seconds"],
        "score_seconds": rows[0]["score_seconds"],
        "fpr_target": rows[0]["fpr_target"],
        "n_calibration": fitted[0].n_calibration_,
        **{k: rows[0][k] for k in ("shadow_train_size", "shadow_size_note") if k in rows[0]},
    }
