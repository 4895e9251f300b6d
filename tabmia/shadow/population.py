"""Populations of shadow / reference models and their scores on every record.

:class:`ShadowPopulation` is the helper that LiRA, RMIA and Watson-style calibrated
attacks share: it decides which pool records train which model (each record IN for
``pkeep`` of the models), trains the models through joblib (locally, or on a Dask /
Ray cluster through ``joblib.parallel_config``), and keeps the score of every model on
every pool record as one ``(n_models, n_records)`` float32 array.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from tabmia._array import ravel_column
from tabmia._estimators import clone_recipe, clone_unfitted
from tabmia._seeding import seed_estimator
from tabmia.scores import SCORE_NAMES, membership_score
from tabmia.target import TargetModel, n_rows, take_rows

__all__ = ["ShadowPopulation", "draw_in_masks"]

_FORMAT = "tabmia.ShadowPopulation/1"
#: Estimator parameters that change how a model is computed, not which model: they
#: are left out of the cache manifest's description of the estimator.
_EXECUTION_PARAMS = frozenset(
    {
        "verbose", "verbosity", "silent", "logging_level", "device", "n_jobs", "nthread",
        "thread_count", "task_type", "devices", "allow_writing_files", "train_dir",
        "gpu_ram_part", "used_ram_limit",
    }
)
_SEED_MASK = (1 << 31) - 1


# ----------------------------------------------------------------- seeds and masks
def _base_entropy(random_state: Any) -> int:
    """A non-negative integer all seeds and masks derive from."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    raise ValueError(
        f"random_state must be None, an int, a RandomState or a Generator, got {random_state!r}"
    )


def _model_seeds(entropy: int, n_models: int) -> np.ndarray:
    """Seed of model ``k``: depends on ``(entropy, k)`` only, so a longer list extends a shorter."""
    return np.array(
        [
            int(np.random.SeedSequence(entropy, spawn_key=(0, k)).generate_state(1, np.uint32)[0])
            & _SEED_MASK
            for k in range(n_models)
        ],
        dtype=np.int64,
    )


def _pkeep_block(pkeep: float) -> tuple[int, int]:
    """``(n_in, block)``: ``pkeep = n_in / block`` in lowest terms (block <= 64)."""
    frac = Fraction(float(pkeep)).limit_denominator(64)
    if not 0 < frac < 1 or abs(float(frac) - float(pkeep)) > 1e-9:
        raise ValueError(
            f"pkeep must be a fraction in (0, 1) with a denominator of at most 64 "
            f"(0.5, 0.25, 1/3, ...), got {pkeep!r}"
        )
    return frac.numerator, frac.denominator


def draw_in_masks(
    n_models: int, n_records: int, *, pkeep: float = 0.5, random_state: Any = None
) -> np.ndarray:
    """Membership matrix: which record trains which model.

    Models come in blocks of ``b`` (``pkeep = a / b`` in lowest terms; ``b = 2`` for
    ``pkeep=0.5``). Within a block, every record is IN for a uniformly random ``a``
    of the ``b`` models (Carlini et al.'s scheme, applied per block), independently
    across records and blocks. So every record is IN for exactly ``pkeep *
    n_models`` models whenever ``n_models`` is a multiple of ``b`` (for
    ``pkeep=0.5``: the two models of a pair have complementary halves of the pool),
    and drawing more models keeps the earlier rows: block ``j`` depends only on the
    seed and ``j``. With ``n_models`` not a multiple of ``b``, the last block is cut
    and a record is IN for ``floor`` or ``ceil`` of ``pkeep * n_models`` models.

    Parameters
    ----------
    n_models, n_records : int
        Matrix shape.
    pkeep : float, default=0.5
        Share of the models each record trains.
    random_state : int, RandomState, Generator or None
        Seed.

    Returns
    -------
    ndarray of bool of shape (n_models, n_records)
    """
    return _draw_masks(_base_entropy(random_state), n_models, n_records, pkeep)


def _draw_masks(entropy: int, n_models: int, n_records: int, pkeep: float) -> np.ndarray:
    n_in, block = _pkeep_block(pkeep)
    masks = np.empty((n_models, n_records), dtype=bool)
    for b in range(math.ceil(n_models / block)):  # a loop over blocks of models
        rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(1, b)))
        # each column of the argsort is a uniform random permutation of the block
        order = np.argsort(rng.random((block, n_records)), axis=0)
        lo, hi = b * block, min((b + 1) * block, n_models)
        masks[lo:hi] = (order < n_in)[: hi - lo]
    return masks


def _mask_hash(mask: np.ndarray) -> str:
    return hashlib.sha256(np.packbits(mask).tobytes() + str(mask.size).encode()).hexdigest()[:24]


# --------------------------------------------------------- estimators and labels
class _NoModel:
    """Stand-in model of a TargetModel used only for its label encoding."""

    def __call__(self, X: Any) -> np.ndarray:  # pragma: no cover - never queried
        raise RuntimeError("this TargetModel only encodes labels")


def _label_encoder(classes: np.ndarray) -> TargetModel:
    return TargetModel(_NoModel(), classes=classes)


def _describe(obj: Any) -> str:
    """A stable text description of an estimator's settings (no memory addresses)."""
    if hasattr(obj, "get_params") and not isinstance(obj, type):
        params = obj.get_params(deep=False)
        inner = ", ".join(
            f"{k}={_describe(v)}" for k, v in sorted(params.items()) if k not in _EXECUTION_PARAMS
        )
        return f"{type(obj).__module__}.{type(obj).__qualname__}({inner})"
    if isinstance(obj, (list, tuple)):
        inner = ", ".join(_describe(v) for v in obj)
        return f"[{inner}]" if isinstance(obj, list) else f"({inner})"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in sorted(obj.items())) + "}"
    if isinstance(obj, np.ndarray):
        return f"array({obj.tolist()!r})"
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"{getattr(obj, '__module__', '')}.{obj.__qualname__}"
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(obj))


def _fingerprint(X: Any, y: np.ndarray) -> str:
    """SHA-256 of the pool's records and labels."""
    h = hashlib.sha256()
    if isinstance(X, pd.DataFrame):
        h.update(repr([str(c) for c in X.columns]).encode())
        h.update(repr([str(t) for t in X.dtypes]).encode())
        h.update(pd.util.hash_pandas_object(X, index=False).to_numpy().tobytes())
    elif sp.issparse(X):
        csr = sp.csr_matrix(X, copy=True)
        csr.sum_duplicates()
        csr.sort_indices()
        h.update(f"sparse{csr.shape}{csr.dtype}".encode())
        for part in (csr.data, csr.indices, csr.indptr):
            h.update(np.ascontiguousarray(part).tobytes())
    else:
        arr = np.asarray(X)
        h.update(f"{arr.shape}{arr.dtype}".encode())
        if arr.dtype.kind == "O":
            frame = pd.DataFrame(arr.reshape(arr.shape[0], -1))
            h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
        else:
            h.update(np.ascontiguousarray(arr).tobytes())
    h.update(pd.util.hash_pandas_object(pd.Series(y), index=False).to_numpy().tobytes())
    return h.hexdigest()


# ------------------------------------------------------------- model -> statistics
def _chunk_rows(n_classes: int) -> int:
    return int(max(1024, min(65536, 2**23 // max(n_classes, 1))))


def _model_proba_chunks(model: Any, X: Any, classes: np.ndarray):
    """Yield ``(slice, proba (m, C) float64, logits or None)`` in ``classes`` order."""
    from tabmia._array import softmax
    from tabmia.shadow.torch_mlp import TorchMLPClassifier

    n = n_rows(X)
    step = _chunk_rows(classes.size)
    if isinstance(model, TorchMLPClassifier) and np.array_equal(model.classes_, classes):
        for start in range(0, n, step):
            sl = slice(start, min(start + step, n))
            logits = model.decision_function(take_rows(X, sl)).astype(np.float64)
            yield sl, softmax(logits), logits
        return
    target = TargetModel(model, batch_size=step)
    cols = _label_encoder(classes).encode_labels(target.classes_, name="the shadow's classes_")
    same = cols.size == classes.size and np.array_equal(cols, np.arange(classes.size))
    for start in range(0, n, step):
        sl = slice(start, min(start + step, n))
        p = target.predict_proba(take_rows(X, sl))
        if not same:  # classes missing from this model's training subset get probability 0
            full = np.zeros((p.shape[0], classes.size), dtype=np.float64)
            full[:, cols] = p
            p = full
        yield sl, p, None


def _statistic_row(
    model: Any, X: Any, y_idx: np.ndarray, classes: np.ndarray, statistic: str
) -> np.ndarray:
    out = np.empty(n_rows(X), dtype=np.float32)
    for sl, proba, logits in _model_proba_chunks(model, X, classes):
        out[sl] = membership_score(statistic, proba, y_idx[sl], logits=logits)
    return out


def _train_one(
    recipe: Any,
    k: int,
    seed: int,
    mask: np.ndarray,
    X: Any,
    y: np.ndarray,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    keep_model: bool,
) -> list[tuple[int, np.ndarray, Any]]:
    """One joblib task: fit a clone of ``recipe`` on the rows ``mask``, score the pool.

    BLAS runs on one thread here, in-process or in a worker: float results of BLAS
    calls depend on its thread count (seen: sklearn MLP shadows differing by 0.17 in
    the logit score between ``n_jobs=1`` with 2 BLAS threads and ``n_jobs=2``), and the
    scores must not depend on ``n_jobs``. Parallelism comes from the jobs.
    """
    model = clone_unfitted(recipe)
    seed_estimator(model, seed)
    rows = np.flatnonzero(mask)
    with threadpool_limits(limits=1, user_api="blas"):
        model.fit(take_rows(X, rows), y[rows])
        row = _statistic_row(model, X, y_idx, classes, statistic)
    return [(k, row, model if keep_model else None)]


def _train_mlp_group(
    params: dict,
    ks: np.ndarray,
    seeds: np.ndarray,
    masks: np.ndarray,
    X32: np.ndarray,
    y_idx: np.ndarray,
    classes: np.ndarray,
    statistic: str,
    device: Any,
    keep_model: bool,
    verbose: bool,
) -> list[tuple[int, np.ndarray, Any]]:
    """One joblib task: train the MLPs ``ks`` as a batched network, score the pool."""
    from tabmia.shadow.batched import fit_mlps_batched

    models = fit_mlps_batched(
        X32, y_idx, masks, seeds, params, device, classes=classes, verbose=verbose
    )
    return [
        (int(k), _statistic_row(m, X32, y_idx, classes, statistic), m if keep_model else None)
        for k, m in zip(ks, models)
    ]


# ------------------------------------------------------------------------- cache
class _Cache:
    """Per-model result files plus a manifest under ``cache_dir``."""

    def __init__(self, path: Any) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.manifest_path = self.path / "manifest.json"

    def read_manifest(self) -> dict | None:
        if not self.manifest_path.exists():
            return None
        try:
            manifest = json.loads(self.manifest_path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(
                f"cache_dir {str(self.path)!r}: manifest.json cannot be read ({exc}); "
                "empty the folder or use another cache_dir"
            ) from exc
        if manifest.get("format") != _FORMAT:
            raise ValueError(
                f"cache_dir {str(self.path)!r} holds no tabmia shadow population of this "
                f"format (format {manifest.get('format')!r}, expected {_FORMAT!r})"
            )
        return manifest

    def check(self, cached: dict, current: dict, *, adopt_seed: bool) -> None:
        keys = [k for k in current if k != "format"]
        if adopt_seed:
            keys.remove("seed_entropy")
        diff = [k for k in keys if cached.get(k) != current[k]]
        if diff:
            detail = "; ".join(_describe_difference(k, cached.get(k), current[k]) for k in diff)
            raise ValueError(
                f"cache_dir {str(self.path)!r} holds a shadow population of another setup "
                f"({detail}). Refusing to mix them: use another cache_dir, or empty this one"
            )

    def write_manifest(self, manifest: dict) -> None:
        text = json.dumps(manifest, indent=1).encode()
        self._atomic(self.manifest_path, lambda fh: fh.write(text))

    def files(self, k: int) -> tuple[Path, Path]:
        return self.path / f"model_{k:05d}.npz", self.path / f"model_{k:05d}.joblib"

    def load(
        self, k: int, seed: int, mask_hash: str, n: int, need_model: bool
    ) -> tuple[np.ndarray, Any] | None:
        npz, model_file = self.files(k)
        if not npz.exists() or (need_model and not model_file.exists()):
            return None
        try:
            with np.load(npz, allow_pickle=False) as data:
                row = np.asarray(data["statistics"], dtype=np.float32)
                cached_seed = int(data["seed"])
                cached_hash = str(data["in_mask_sha"])
        except Exception as exc:  # noqa: BLE001 - a truncated file: train again
            warnings.warn(f"{npz} is unreadable ({exc}); training model {k} again", stacklevel=3)
            return None
        if cached_seed != seed or cached_hash != mask_hash or row.shape != (n,):
            raise ValueError(
                f"{npz} was written for another population (seed {cached_seed} vs {seed}, "
                f"in_mask {cached_hash} vs {mask_hash}, {row.shape[0]} vs {n} records): "
                "refusing to mix; empty the cache_dir"
            )
        model = None
        if need_model:
            import joblib

            try:
                model = joblib.load(model_file)
            except Exception as exc:  # noqa: BLE001
                warnings.warn(
                    f"{model_file} is unreadable ({exc}); training model {k} again", stacklevel=3
                )
                return None
        return row, model

    def save(self, k: int, seed: int, mask_hash: str, row: np.ndarray, model: Any) -> None:
        npz, model_file = self.files(k)
        if model is not None:
            import joblib

            self._atomic(model_file, lambda fh: joblib.dump(model, fh))
        self._atomic(
            npz,
            lambda fh: np.savez(
                fh, statistics=row, seed=np.int64(seed), in_mask_sha=np.str_(mask_hash)
            ),
        )

    @staticmethod
    def _atomic(path: Path, write: Any) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            write(fh)
        os.replace(tmp, path)


def _describe_difference(key: str, cached: Any, now: Any) -> str:
    """``key: cached ..., now ...`` showing where two long values start to differ."""
    a, b = repr(cached), repr(now)
    if len(a) > 100 or len(b) > 100:
        start = next((i for i, (u, v) in enumerate(zip(a, b)) if u != v), min(len(a), len(b)))
        lo = max(0, start - 40)
        a = ("..." if lo else "") + a[lo : start + 50] + ("..." if len(a) > start + 50 else "")
        b = ("..." if lo else "") + b[lo : start + 50] + ("..." if len(b) > start + 50 else "")
    return f"{key}: cached {a}, now {b}"


# ---------------------------------------------------------------- the population
class ShadowPopulation(BaseEstimator):
    """Shadow (reference) models trained on random halves of a pool of records.

    ``fit(X, y)`` draws the membership matrix ``in_masks_`` (each record IN for
    ``pkeep`` of the models; see :func:`draw_in_masks`), trains model ``k`` on the
    records ``in_masks_[k]`` and stores the score ``statistic`` of every model on
    every pool record in ``statistics_``, a ``(n_models, n_records)`` float32 array
    (higher = the record looks more like a member of that model). LiRA compares a
    candidate's score under the target with the IN and OUT columns of
    ``statistics_``; RMIA and Watson's calibration use the OUT ones.

    Training goes through ``joblib.Parallel(n_jobs=n_jobs)``: processes on this
    machine by default, a Dask or Ray cluster inside ``with
    joblib.parallel_config(backend="dask"):``. Seeds are drawn before any parallel
    work, so ``n_jobs`` and the backend never change a result. A
    :class:`~tabmia.shadow.TorchMLPClassifier` estimator trains as batched networks
    of many models at once (:func:`~tabmia.shadow.fit_mlps_batched`), on the GPU when
    there is one.

    Parameters
    ----------
    estimator : estimator
        Unfitted recipe of a shadow model (any scikit-learn compatible classifier with
        ``predict_proba``, a ``Pipeline``, a boosting model, a
        ``TorchMLPClassifier``). Cloned per model, with every ``random_state`` (and
        CatBoost ``random_seed``) set to the model's seed. A ``FrozenEstimator`` or
        the target itself is refused (its clone would be the target).
    n_models : int, default=16
        Number of models. Even (a multiple of the block size of ``pkeep``) for exact
        balance.
    statistic : {"logit", "hinge", "loss", "confidence", "entropy", \
            "modified_entropy"}, default="logit"
        Score of a model on a labelled record (:func:`tabmia.scores.membership_score`,
        signed so that higher = member). MLP shadows use their logits for "logit" and
        "hinge".
    classes : array-like of shape (n_classes,), default=None
        Labels in the column order the scores use (e.g. the target's ``classes_``);
        ``np.unique(y)`` when None. A model whose training subset misses a class gets
        probability 0 for it.
    pkeep : float, default=0.5
        Share of the models each record trains (a fraction with denominator <= 64).
    n_jobs : int, default=None
        Parallel jobs of joblib (None: 1 unless a ``joblib.parallel_config`` says
        otherwise; -1: all cores or all cluster workers). Each model fits with one
        BLAS thread whatever ``n_jobs`` is, so that the scores do not depend on it:
        use jobs, not BLAS threads, for speed.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the membership matrix and every model. With ``cache_dir`` and
        ``random_state=None``, an existing cache's seed is re-used.
    cache_dir : str or path, default=None
        Folder where each finished model's scores (``model_{k:05d}.npz``) and, with
        ``keep_models``, the model itself (``model_{k:05d}.joblib``) are written,
        with a ``manifest.json`` describing the pool, the estimator and the seed. A
        later ``fit`` with the same setup loads them and trains only what is missing:
        an interrupted run resumes, a larger ``n_models`` tops up. A manifest that
        describes other data, another estimator, statistic, ``classes``, ``pkeep``
        or seed raises ``ValueError``. Execution settings (``device``, ``n_jobs``,
        verbosity, thread counts, CatBoost ``task_type``) are not compared.
    keep_models : bool, default=True
        Keep the fitted models in ``models_`` (needed by :meth:`statistics` and
        :meth:`proba`). False keeps only ``statistics_``.
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        Device of ``TorchMLPClassifier`` shadows; "auto" defers to the estimator's own
        ``device`` (whose "auto" means CUDA when the machine that trains them has it).
        Ignored for other estimators. With one GPU, keep ``n_jobs=1``: parallel jobs
        would share it.
    verbose : bool, default=False
        tqdm progress bar over the models.
    target : object, default=None
        The model under audit, when known: refused as ``estimator``. Kept by
        reference.

    Attributes
    ----------
    in_masks_ : ndarray of bool of shape (n_models, n_records)
        ``in_masks_[k, i]``: pool record ``i`` trained model ``k``.
    seeds_ : ndarray of int64 of shape (n_models,)
        Seed of each model (depends only on ``random_state`` and ``k``).
    statistics_ : ndarray of float32 of shape (n_models, n_records)
        Score of model ``k`` on pool record ``i``.
    models_ : list or None
        The fitted models (None when ``keep_models=False``).
    classes_ : ndarray of shape (n_classes,)
        Labels in score column order.
    estimator_ : estimator
        The validated, unfitted recipe.
    n_records_ : int
        Pool size.
    n_trained_ : int
        Models trained by the latest ``fit`` (the others came from ``cache_dir``).
    device_ : torch.device or None
        Resolved device of MLP shadows on this machine; None for other estimators.

    See Also
    --------
    tabmia.shadow.fit_mlps_batched : the batched MLP trainer.
    tabmia.shadow.catboost_classifier : CatBoost shadows with GPU when present.

    References
    ----------
    .. [1] Shokri, Stronati, Song, Shmatikov. Membership Inference Attacks Against
       Machine Learning Models. IEEE S&P 2017.
    .. [2] Carlini, Chien, Nasr, Song, Terzis, Tramer. Membership Inference Attacks
       From First Principles. IEEE S&P 2022.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from tabmia.shadow import ShadowPopulation
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> pop = ShadowPopulation(make_pipeline(StandardScaler(), LogisticRegression()),
    ...                        n_models=4, random_state=0).fit(X, y)
    >>> pop.statistics_.shape, pop.statistics_.dtype
    ((4, 569), dtype('float32'))
    >>> pop.in_masks_.sum(axis=0).min(), pop.in_masks_.sum(axis=0).max()
    (np.int64(2), np.int64(2))
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "n_models": [Interval(numbers.Integral, 1, None, closed="left")],
        "statistic": [StrOptions(set(SCORE_NAMES))],
        "classes": ["array-like", None],
        "pkeep": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state", np.random.Generator],
        "cache_dir": [str, os.PathLike, None],
        "keep_models": ["boolean"],
        "device": "no_validation",
        "verbose": ["verbose"],
        "target": "no_validation",
    }

    def __init__(
        self,
        estimator: Any = None,
        *,
        n_models: int = 16,
        statistic: str = "logit",
        classes: Any = None,
        pkeep: float = 0.5,
        n_jobs: int | None = None,
        random_state: Any = None,
        cache_dir: Any = None,
        keep_models: bool = True,
        device: Any = "auto",
        verbose: bool = False,
        target: Any = None,
    ) -> None:
        self.estimator = estimator
        self.n_models = n_models
        self.statistic = statistic
        self.classes = classes
        self.pkeep = pkeep
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.cache_dir = cache_dir
        self.keep_models = keep_models
        self.device = device
        self.verbose = verbose
        self.target = target

    def __sklearn_clone__(self) -> ShadowPopulation:
        """Clone the settings, keeping ``target`` by reference (not un-fitting it)."""
        params = self.get_params(deep=False)
        target = params.pop("target", None)
        return type(self)(
            target=target, **{k: clone_unfitted(v, safe=False) for k, v in params.items()}
        )

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any) -> ShadowPopulation:
        """Draw the membership matrix, train the models and score the pool.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_records, d)
            The pool of records, in the form the estimator takes.
        y : array-like of shape (n_records,)
            Their labels (raw labels, as the target was trained on).

        Returns
        -------
        self
        """
        from tabmia.shadow.torch_mlp import TorchMLPClassifier

        if self.estimator is None:
            raise ValueError("estimator is None: pass an unfitted shadow model recipe")
        self._validate_params()
        n = n_rows(X)
        y_arr = ravel_column(y)
        if y_arr.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y_arr.shape}")
        if y_arr.shape[0] != n:
            raise ValueError(f"X has {n} records but y has {y_arr.shape[0]} labels")
        if n < 2:
            raise ValueError(f"X has {n} records; a shadow population needs a pool")
        classes = np.unique(y_arr) if self.classes is None else np.asarray(self.classes)
        encoder = _label_encoder(classes)
        y_idx = encoder.encode_labels(y_arr, name="y")
        target = self.target.model if isinstance(self.target, TargetModel) else self.target
        recipe = clone_recipe(self.estimator, name="shadow_estimator", target=target)
        is_mlp = isinstance(recipe, TorchMLPClassifier)
        if not is_mlp and not hasattr(recipe, "predict_proba"):
            raise ValueError(
                f"estimator {type(recipe).__name__} has no predict_proba; shadow models "
                "must output class probabilities"
            )
        _pkeep_block(self.pkeep)
        K = int(self.n_models)

        cache = _Cache(self.cache_dir) if self.cache_dir is not None else None
        cached_manifest = cache.read_manifest() if cache is not None else None
        if cached_manifest is not None and self.random_state is None:
            entropy = int(cached_manifest["seed_entropy"])
        else:
            entropy = _base_entropy(self.random_state)
        seeds = _model_seeds(entropy, K)
        masks = _draw_masks(entropy, K, n, self.pkeep)
        hashes = [_mask_hash(m) for m in masks]
        if cache is not None:
            manifest = {
                "format": _FORMAT,
                "n_records": n,
                "data_sha256": _fingerprint(X, y_arr),
                "estimator": _describe(recipe),
                "statistic": self.statistic,
                "pkeep": float(self.pkeep),
                "classes": [str(c) for c in classes],
                "seed_entropy": str(entropy),
            }
            if cached_manifest is None:
                cache.write_manifest(manifest)
            else:
                cache.check(cached_manifest, manifest, adopt_seed=self.random_state is None)

        statistics = np.empty((K, n), dtype=np.float32)
        models: list[Any] = [None] * K
        done = np.zeros(K, dtype=bool)
        if cache is not None:
            for k in range(K):  # a loop over models
                hit = cache.load(k, int(seeds[k]), hashes[k], n, bool(self.keep_models))
                if hit is not None:
                    statistics[k], models[k] = hit
                    done[k] = True
        todo = np.flatnonzero(~done)

        self.device_ = None
        if is_mlp:
            from tabmia._device import resolve_device
            from tabmia.shadow._inputs import as_float32

            mlp_device = self.device if str(self.device) != "auto" else recipe.device
            self.device_ = resolve_device(mlp_device)
            X_train = as_float32(X)
            tasks = self._mlp_tasks(
                recipe, todo, seeds, masks, X_train, y_idx, classes, mlp_device
            )
        else:
            tasks = [
                _delayed(_train_one)(
                    recipe, int(k), int(seeds[k]), masks[k], X, y_arr, y_idx, classes,
                    self.statistic, bool(self.keep_models),
                )
                for k in todo
            ]

        def store(k: int, row: np.ndarray, model: Any) -> None:
            statistics[k] = row
            models[k] = model
            if cache is not None:
                cache.save(k, int(seeds[k]), hashes[k], row, model)

        self._run(tasks, todo.size, store)

        self.estimator_ = recipe
        self.classes_ = classes
        self.in_masks_ = masks
        self.seeds_ = seeds
        self.statistics_ = statistics
        self.models_ = models if self.keep_models else None
        self.n_records_ = n
        self.n_trained_ = int(todo.size)
        return self

    def _mlp_tasks(
        self,
        recipe: Any,
        todo: np.ndarray,
        seeds: np.ndarray,
        masks: np.ndarray,
        X32: np.ndarray,
        y_idx: np.ndarray,
        classes: np.ndarray,
        device: Any,
    ) -> list[Any]:
        """Groups of MLPs, each one batched network (one joblib task).

        Groups are as large as this machine's device memory allows, split further so
        that every joblib worker gets one.
        """
        import joblib

        from tabmia.shadow.batched import auto_group_size

        if todo.size == 0:
            return []
        params = {
            k: v for k, v in recipe.get_params(deep=False).items()
            if k not in ("random_state", "device")
        }
        group = auto_group_size(
            X32.shape[1], recipe._hidden(), classes.size, int(recipe.batch_size),
            self.device_, n_records=X32.shape[0],
        )
        n_jobs = max(1, int(joblib.effective_n_jobs(self.n_jobs)))
        n_tasks = min(todo.size, max(math.ceil(todo.size / group), n_jobs))
        inner_verbose = bool(self.verbose) and n_jobs == 1
        return [
            _delayed(_train_mlp_group)(
                params, ks, seeds[ks], masks[ks], X32, y_idx, classes, self.statistic,
                device, bool(self.keep_models), inner_verbose,
            )
            for ks in np.array_split(todo, n_tasks)
        ]

    def _run(self, tasks: list[Any], n_models: int, store: Any) -> None:
        if not tasks:
            return
        from joblib import Parallel
        from tqdm.auto import tqdm

        try:
            parallel = Parallel(n_jobs=self.n_jobs, return_as="generator_unordered")
        except ValueError:  # a backend that cannot stream results
            parallel = Parallel(n_jobs=self.n_jobs)
        from tabmia._progress import progress_desc

        desc = progress_desc("shadows") if self.verbose else "shadow models"
        with tqdm(total=n_models, desc=desc, disable=not self.verbose) as bar:
            for results in parallel(tasks):
                for k, row, model in results:
                    store(k, row, model)
                    bar.update(1)

    # ------------------------------------------------------------- scoring
    def _check_models(self) -> list[Any]:
        check_is_fitted(self, "statistics_")
        if self.models_ is None:
            raise ValueError(
                "this population was fit with keep_models=False: its models were not kept, "
                "only statistics_ on the pool. Refit with keep_models=True"
            )
        return self.models_

    def statistics(self, X: Any, y: Any) -> np.ndarray:
        """Score of every kept model on new labelled records.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n, d)
            Records.
        y : array-like of shape (n,)
            Their labels (in ``classes_``).

        Returns
        -------
        ndarray of float32 of shape (n_models, n)
        """
        models = self._check_models()
        n = n_rows(X)
        y_arr = ravel_column(y)
        if y_arr.shape != (n,):
            raise ValueError(f"X has {n} records but y has shape {y_arr.shape}")
        y_idx = _label_encoder(self.classes_).encode_labels(y_arr, name="y")
        out = np.empty((len(models), n), dtype=np.float32)
        for k, model in enumerate(models):  # a loop over models
            out[k] = _statistic_row(model, X, y_idx, self.classes_, self.statistic)
        return out

    def proba(self, X: Any) -> np.ndarray:
        """Class probabilities of every kept model, in ``classes_`` order.

        Returns
        -------
        ndarray of float32 of shape (n_models, n, n_classes)
        """
        models = self._check_models()
        n = n_rows(X)
        out = np.empty((len(models), n, self.classes_.size), dtype=np.float32)
        for k, model in enumerate(models):
            for sl, p, _logits in _model_proba_chunks(model, X, self.classes_):
                out[k, sl] = p
        return out


def _delayed(func: Any) -> Any:
    from joblib import delayed

    return delayed(func)
