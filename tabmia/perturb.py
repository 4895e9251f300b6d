"""Perturbations of tabular records: noise (Merlin, Morgan, noise robustness) and rays
(the label-only boundary distance).

:class:`TabularNoise` learns, from the attacker's public records, which columns are
numeric, binary (0/1 or bool) or categorical, and then makes ``T`` noisy copies of a
block of records in one vectorised pass, in the same form the records came in (numpy
array, scipy sparse matrix or pandas DataFrame), ready for one ``predict_proba`` call.

Noise per column kind
---------------------
numeric
    ``x + sigma * scale_j * N(0, 1)`` with ``scale_j = 1`` (``noise_scale="absolute"``,
    the paper's setting for features already scaled to [0, 1]) or the column's
    standard deviation on the public records (``noise_scale="std"``; a constant column
    gets no noise). Integer columns of a DataFrame become float.
binary
    Columns whose public values are all in {0, 1} (or bool): each cell flipped with
    probability ``binary_flip``. ``binary_flip=0`` treats them as numeric instead
    (Gaussian noise, as Jayaraman et al. did on Purchase-100 and Texas-100).
categorical
    DataFrame columns of category / object / string dtype: each cell replaced, with
    probability ``categorical_flip``, by a draw from the column's public marginal
    (which may redraw the same value). Values never seen in public data stay as given.

Sparse input (e.g. Texas-100, binary bag of attributes) stays sparse: numeric
non-zeros get Gaussian noise (zeros stay zero: perturbing them would densify the
matrix); binary columns are flipped exactly as in dense input (ones to zero and zeros
to one), which adds about ``binary_flip * n_binary_columns`` stored entries per copy.

Randomness: one bank of ``T`` perturbations for all records
-----------------------------------------------------------
:meth:`TabularNoise.draw` draws ``T`` perturbations once (float32 normals, one
generator call per kind); every record gets the same ``T`` perturbations. For each
record its ``T`` copies are still i.i.d. draws of the noise model, so its Merlin
ratio is exactly Algorithm 1's; only the draws are shared between records (common
random numbers). That makes a record's score a fixed function of the record,
whatever its position, batch or the other records scored with it (so calibration
scores and candidate scores are exchangeable), and makes the noise nearly free:
drawing a fresh ``n * T * d`` float32 normals costs more than one ``predict_proba``
of a small MLP on the ``n * T`` copies (measured in ``benchmarks/merlin_speed.py``).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from tabmia._array import as_float_matrix, is_categorical_dtype
from tabmia.target import n_rows

__all__ = ["TabularNoise", "TabularRays", "NOISE_CONSTRAINTS"]

_NOISE_SCALES = ("absolute", "std")

#: Parameter constraints of the attacks that draw a :class:`TabularNoise` bank of
#: ``n_noise`` copies (Merlin, Morgan, noise robustness).
NOISE_CONSTRAINTS = {
    "n_noise": [Interval(Integral, 1, None, closed="left")],
    # a finite upper end: the interval then refuses inf, which None would let through
    "sigma": [Interval(Real, 0, np.inf, closed="neither")],
    "noise_scale": [StrOptions(set(_NOISE_SCALES))],
    "categorical_flip": [Interval(Real, 0, 1, closed="both")],
    "binary_flip": [Interval(Real, 0, 1, closed="both")],
}


class TabularNoise:
    """Gaussian / flip / resample noise on tabular records, fitted on public records.

    Parameters
    ----------
    sigma : float, default=0.01
        Standard deviation of the Gaussian noise on numeric features (times the
        feature's public std when ``noise_scale="std"``).
    noise_scale : {"absolute", "std"}, default="absolute"
        Whether ``sigma`` is in the features' own units or in units of each
        feature's public standard deviation.
    categorical_flip : float, default=0.01
        Probability that a categorical cell is redrawn from the column's public marginal.
    binary_flip : float, default=0.01
        Probability that a binary (0/1, bool) cell is flipped; 0 gives binary columns
        Gaussian noise like numeric ones.

    Attributes
    ----------
    kind_ : {"numpy", "sparse", "frame"}
        Form of the records the model was fitted on.
    n_features_in_ : int
        Number of columns.
    roles_ : ndarray of str, shape (n_features,)
        ``"numeric"``, ``"binary"`` or ``"categorical"`` per column.
    scale_ : ndarray of shape (n_features,)
        Standard deviation of the Gaussian noise per column (0 for non-numeric ones).
    marginals_ : dict
        Column name -> (values, cumulative probabilities) of each categorical column.
    gauss_ : ndarray of shape (T, n_features), float32
        Gaussian perturbation of each copy (set by :meth:`draw`; 0 off numeric columns).
    flips_ : ndarray of shape (T, n_features), bool
        Binary cells flipped in each copy.
    redraws_ : dict
        Categorical column -> (mask (T,), replacement values (T,)).
    """

    def __init__(
        self,
        sigma: float = 0.01,
        noise_scale: str = "absolute",
        categorical_flip: float = 0.01,
        binary_flip: float = 0.01,
    ) -> None:
        self.sigma = sigma
        self.noise_scale = noise_scale
        self.categorical_flip = categorical_flip
        self.binary_flip = binary_flip

    # ----------------------------------------------------------------- fitting
    def _check_params(self) -> None:
        if not isinstance(self.sigma, Real) or not np.isfinite(self.sigma) or self.sigma <= 0:
            raise ValueError(f"sigma must be a finite float > 0, got {self.sigma!r}")
        if self.noise_scale not in _NOISE_SCALES:
            raise ValueError(
                f"noise_scale must be one of {_NOISE_SCALES}, got {self.noise_scale!r}"
            )
        for name in ("categorical_flip", "binary_flip"):
            p = getattr(self, name)
            if not isinstance(p, Real) or not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")

    def fit(self, X: Any) -> TabularNoise:
        """Learn column kinds, noise scales and categorical marginals from public records."""
        self._check_params()
        if n_rows(X) < 1:
            raise ValueError("X has no records")
        if isinstance(X, pd.DataFrame):
            self._fit_frame(X)
        elif sp.issparse(X):
            self._fit_sparse(X)
        else:
            self._fit_numpy(X)
        return self

    def _fit_numpy(self, X: Any) -> None:
        arr = _as_float_array(X)
        self.kind_ = "numpy"
        self.n_features_in_ = arr.shape[1]
        finite = np.where(np.isnan(arr), 0.5, arr)
        binary = np.all((finite == 0) | (finite == 1), axis=0)
        if self.binary_flip == 0:
            binary[:] = False
        self.roles_ = np.where(binary, "binary", "numeric").astype(object)
        self.scale_ = self._scales(np.nanstd(arr, axis=0), binary)
        self.marginals_: dict[Any, Any] = {}

    def _fit_sparse(self, X: Any) -> None:
        Xc = sp.csr_matrix(X, dtype=np.float64)
        self.kind_ = "sparse"
        d = Xc.shape[1]
        self.n_features_in_ = d
        nonbin = (Xc.data != 0) & (Xc.data != 1)
        binary = np.ones(d, dtype=bool)
        binary[np.unique(Xc.indices[nonbin])] = False
        if self.binary_flip == 0:
            binary[:] = False
        mean = np.asarray(Xc.mean(axis=0)).ravel()
        mean_sq = np.asarray(Xc.multiply(Xc).mean(axis=0)).ravel()
        std = np.sqrt(np.maximum(mean_sq - mean**2, 0.0))
        self.roles_ = np.where(binary, "binary", "numeric").astype(object)
        self.scale_ = self._scales(std, binary)
        self.marginals_ = {}

    def _fit_frame(self, X: pd.DataFrame) -> None:
        self.kind_ = "frame"
        self.columns_ = list(X.columns)
        self.n_features_in_ = len(self.columns_)
        roles, stds = [], []
        self.marginals_ = {}
        for c in self.columns_:
            col = X[c]
            if pd.api.types.is_bool_dtype(col.dtype):
                role = "binary" if self.binary_flip > 0 else "numeric"
                stds.append(float(np.nanstd(col.to_numpy(dtype=float))))
            elif is_categorical_dtype(col.dtype):
                role = "categorical"
                freq = col.value_counts(normalize=True, dropna=False, sort=False)
                freq = freq[freq > 0]
                values = np.asarray(freq.index.to_numpy(dtype=object), dtype=object)
                cdf = np.cumsum(freq.to_numpy(dtype=float))
                cdf /= cdf[-1]
                self.marginals_[c] = (values, cdf)
                stds.append(0.0)
            elif pd.api.types.is_numeric_dtype(col.dtype):
                v = col.to_numpy(dtype=float, na_value=np.nan)
                finite = v[~np.isnan(v)]
                is_bin = finite.size > 0 and bool(np.all((finite == 0) | (finite == 1)))
                role = "binary" if is_bin and self.binary_flip > 0 else "numeric"
                stds.append(float(np.nanstd(v)) if finite.size else 0.0)
            else:
                raise TypeError(
                    f"column {c!r} has dtype {col.dtype}, which the noise model cannot "
                    "perturb; use a numeric, bool, category or string column"
                )
            roles.append(role)
        self.roles_ = np.asarray(roles, dtype=object)
        self.scale_ = self._scales(np.asarray(stds, dtype=float), self.roles_ != "numeric")

    def _scales(self, std: np.ndarray, not_numeric: np.ndarray) -> np.ndarray:
        std = np.nan_to_num(np.asarray(std, dtype=np.float64), nan=0.0)
        if self.noise_scale == "std":
            scale = self.sigma * std
        else:
            scale = np.full(std.shape, float(self.sigma))
        scale[np.asarray(not_numeric, dtype=bool)] = 0.0
        return scale.astype(np.float32)

    # ----------------------------------------------------------------- bank
    def draw(self, n_copies: int, seed: int) -> TabularNoise:
        """Draw the ``n_copies`` perturbations every record will receive.

        Sets ``gauss_`` (T, d) float32 (``scale_`` times N(0, 1); zero outside numeric
        columns), ``flips_`` (T, d) bool (binary cells flipped in each copy) and
        ``redraws_`` (column -> (T,) object array of replacement values, None where the
        cell is kept). Float32 normals, one generator call per kind.
        """
        if not hasattr(self, "roles_"):
            raise RuntimeError("fit the noise model before drawing")
        T, d = int(n_copies), self.n_features_in_
        rng = np.random.default_rng(seed)
        self.gauss_ = rng.standard_normal((T, d), dtype=np.float32) * self.scale_
        binary = self.roles_ == "binary"
        self.flips_ = (rng.random((T, d), dtype=np.float32) < self.binary_flip) & binary
        self.redraws_ = {}
        for c, (values, cdf) in self.marginals_.items():
            u = rng.random((T, 2))
            out = np.full(T, None, dtype=object)
            redraw = u[:, 0] < self.categorical_flip
            idx = np.minimum(np.searchsorted(cdf, u[redraw, 1], side="right"), cdf.size - 1)
            out[redraw] = values[idx]
            self.redraws_[c] = (redraw, out)
        self.n_copies_ = T
        return self

    # ----------------------------------------------------------------- copies
    def noisy_batch(self, X: Any) -> Any:
        """Each record of ``X`` followed by its ``T`` noisy copies (the drawn perturbations).

        Parameters
        ----------
        X : array, sparse matrix or DataFrame of shape (m, d)
            Records in the fitted form.

        Returns
        -------
        array, sparse matrix or DataFrame of shape (m * (T + 1), d)
            Row ``i * (T + 1)`` is record ``i``; rows ``i * (T + 1) + t`` (t = 1..T)
            are record ``i`` with perturbation ``t``.
        """
        if not hasattr(self, "gauss_"):
            raise RuntimeError("draw the perturbations before making copies")
        if self.kind_ == "numpy":
            return self._numpy_batch(X)
        if self.kind_ == "sparse":
            return self._sparse_batch(X)
        return self._frame_batch(X)

    def _check_width(self, d: int) -> None:
        if d != self.n_features_in_:
            raise ValueError(
                f"X has {d} columns but the noise model was fitted on {self.n_features_in_}"
            )

    def _numpy_batch(self, X: Any) -> np.ndarray:
        arr = _as_float_array(X)
        m, d = arr.shape
        self._check_width(d)
        T = self.n_copies_
        buf = np.empty((m, T + 1, d), dtype=np.result_type(arr.dtype, np.float32))
        buf[:, 0, :] = arr
        np.add(arr[:, None, :], self.gauss_[None, :, :], out=buf[:, 1:, :])
        ts, js = np.nonzero(self.flips_)  # few (copy, column) pairs: T * d * binary_flip
        if ts.size:
            buf[:, ts + 1, js] = 1.0 - arr[:, js]
        return buf.reshape(m * (T + 1), d)

    def _frame_batch(self, X: pd.DataFrame) -> pd.DataFrame:
        missing = [c for c in self.columns_ if c not in X.columns]
        if missing:
            raise ValueError(f"X is missing columns the noise model was fitted on: {missing[:10]}")
        m = len(X)
        T = self.n_copies_
        out = X.iloc[np.repeat(np.arange(m), T + 1)].reset_index(drop=True)
        pos = {c: j for j, c in enumerate(self.columns_)}
        num = [c for c, r in zip(self.columns_, self.roles_) if r == "numeric"]
        if num:
            idx = [pos[c] for c in num]
            vals = np.array(out[num].to_numpy(dtype=np.float64, na_value=np.nan), copy=True)
            vals = vals.reshape(m, T + 1, len(num))
            vals[:, 1:, :] += self.gauss_[:, idx][None, :, :]
            out[num] = vals.reshape(m * (T + 1), len(num))
        for c, r in zip(self.columns_, self.roles_):
            if r == "binary":
                flip = np.tile(np.r_[False, self.flips_[:, pos[c]]], m)
                if not flip.any():
                    continue
                col = out[c].to_numpy()
                new = np.where(flip, ~col if col.dtype == bool else 1 - col, col)
                out[c] = pd.Series(new, dtype=X[c].dtype)
            elif r == "categorical":
                redraw, values = self.redraws_[c]
                if not redraw.any():
                    continue
                flip = np.tile(np.r_[False, redraw], m)
                repl = np.tile(np.r_[np.array([None], dtype=object), values], m)
                col = out[c]
                new = col.to_numpy(dtype=object).copy()
                new[flip] = repl[flip]
                if isinstance(col.dtype, pd.CategoricalDtype):
                    out[c] = pd.Categorical(new, dtype=col.dtype)
                else:
                    out[c] = pd.Series(new, dtype=col.dtype)
        return out

    def _sparse_batch(self, X: Any) -> sp.csr_matrix:
        Xc = sp.csr_matrix(X, dtype=np.float64)
        m, d = Xc.shape
        self._check_width(d)
        T = self.n_copies_
        rep = Xc[np.repeat(np.arange(m), T + 1)].tocsr()
        copy_of_row = np.arange(rep.shape[0]) % (T + 1)  # 0 = clean, t = copy t
        row_of = np.repeat(np.arange(rep.shape[0]), np.diff(rep.indptr))
        t = copy_of_row[row_of]
        noisy = t > 0
        rep.data[noisy] += self.gauss_[t[noisy] - 1, rep.indices[noisy]]
        if self.flips_.any():
            # flips of copy t (a 0/1 cell x becomes x + f - 2 x f: an exact XOR)
            f_rows = sp.csr_matrix(
                np.vstack([np.zeros((1, d), bool), self.flips_]), dtype=np.float64
            )
            F = f_rows[copy_of_row]
            rep = rep + F - 2.0 * rep.multiply(F)
        rep = sp.csr_matrix(rep)
        rep.eliminate_zeros()
        return rep.astype(X.dtype if np.issubdtype(X.dtype, np.floating) else np.float64)


class TabularRays:
    """Records moved along random directions of an encoded feature space.

    The boundary-distance attack looks for the smallest step along a direction that
    changes a model's label; this class owns the space those steps live in. It reads
    the columns the way :class:`TabularNoise` does (fitted on public records) and gives
    each an encoding in which a step is a real number:

    numeric
        One coordinate in units of the column's public standard deviation (a constant
        column does not move): a step ``t`` along ``d`` adds ``t * d_j * std_j``.
    binary (0/1, bool)
        One coordinate, the value itself, decoded by rounding at 0.5: the cell flips
        once the step moves it past one half.
    categorical
        One coordinate per category seen in the public records (one-hot), decoded by
        the largest coordinate: the record's category holds 1, so the value changes to
        category ``c`` once ``t * (d_c - d_current) > 1``. A value never seen in public
        data keeps a coordinate of 1 that no direction moves.

    Directions are standard normal in the encoded space, scaled to a root mean square
    of 1 per coordinate (length ``sqrt(n_coordinates_)``), so a step ``t`` moves a
    coordinate by about ``t`` whatever the number of columns and categories: ``t`` is
    the Euclidean distance in the encoded space divided by ``sqrt(n_coordinates_)``.
    All ``n_directions`` are drawn once (:meth:`draw`) and shared by every record, like
    the noise bank.

    Parameters
    ----------
    n_directions : int, default=16
        Directions drawn.

    Attributes
    ----------
    columns_ : TabularNoise
        The fitted column description (kinds, standard deviations, categories).
    n_coordinates_ : int
        Dimension of the encoded space.
    directions_ : ndarray of shape (n_directions, ``n_coordinates_``)
        Directions of root mean square 1 per coordinate (set by :meth:`draw`).
    """

    def __init__(self, n_directions: int = 16) -> None:
        self.n_directions = n_directions

    def fit(self, X: Any) -> TabularRays:
        """Learn column kinds, scales and categories from public records."""
        if sp.issparse(X):
            raise TypeError(
                "rays through sparse records are not supported: a step moves every "
                "coordinate, which would densify the matrix; pass a dense array or DataFrame"
            )
        # sigma 1 in std units: scale_ is the public std of each numeric column
        self.columns_ = TabularNoise(
            sigma=1.0, noise_scale="std", categorical_flip=0.5, binary_flip=0.5
        ).fit(X)
        cols = self.columns_
        names = cols.columns_ if cols.kind_ == "frame" else list(range(cols.n_features_in_))
        self._plain = [j for j, r in enumerate(cols.roles_) if r != "categorical"]
        self._blocks = {}  # categorical column -> (its slice of coordinates, categories)
        width = len(self._plain)
        for j, role in enumerate(cols.roles_):
            if role == "categorical":
                values = cols.marginals_[names[j]][0]
                self._blocks[names[j]] = (slice(width, width + values.size), values)
                width += values.size
        self.n_coordinates_ = width
        return self

    def draw(self, seed: int) -> TabularRays:
        """Draw the ``n_directions`` directions every record is moved along."""
        if not hasattr(self, "columns_"):
            raise RuntimeError("fit the rays before drawing directions")
        rng = np.random.default_rng(seed)
        d = rng.standard_normal((int(self.n_directions), self.n_coordinates_))
        rms = np.sqrt(np.mean(d * d, axis=1, keepdims=True))
        self.directions_ = d / rms
        return self

    def move(self, X: Any, rows: np.ndarray, directions: np.ndarray, steps: np.ndarray) -> Any:
        """Record ``rows[j]`` of ``X`` moved ``steps[j]`` along direction ``directions[j]``.

        Parameters
        ----------
        X : array or DataFrame of shape (n, d)
            Records in the fitted form.
        rows, directions : ndarray of int of shape (m,)
            Which record and which direction, per output row.
        steps : ndarray of shape (m,)
            Distances in the encoded space.

        Returns
        -------
        array or DataFrame of shape (m, d)
            In the form of ``X`` (integer columns of a DataFrame become float).
        """
        if not hasattr(self, "directions_"):
            raise RuntimeError("draw the directions before moving records")
        cols = self.columns_
        step = np.asarray(steps, dtype=np.float64)[:, None]
        shift = step * self.directions_[np.asarray(directions)]  # (m, n_coordinates)
        plain_shift = shift[:, : len(self._plain)]
        if cols.kind_ != "frame":
            arr = _as_float_array(X)
            if arr.shape[1] != cols.n_features_in_:
                raise ValueError(
                    f"X has {arr.shape[1]} columns but the rays were fitted on "
                    f"{cols.n_features_in_}"
                )
            out = arr[np.asarray(rows)].astype(np.float64)
            self._move_plain(out, plain_shift)
            return out
        missing = [c for c in cols.columns_ if c not in X.columns]
        if missing:
            raise ValueError(f"X is missing columns the rays were fitted on: {missing[:10]}")
        out = X.iloc[np.asarray(rows)].reset_index(drop=True)
        names = [cols.columns_[j] for j in self._plain]
        if names:
            vals = np.array(out[names].to_numpy(dtype=np.float64, na_value=np.nan), copy=True)
            self._move_plain(vals, plain_shift)
            for k, c in enumerate(names):
                binary = cols.roles_[self._plain[k]] == "binary"
                # a 0/1 or bool column keeps its dtype (unless it holds missing values)
                keep = binary and not np.isnan(vals[:, k]).any()
                out[c] = pd.Series(vals[:, k], dtype=X[c].dtype) if keep else vals[:, k]
        for c, (block, values) in self._blocks.items():
            out[c] = self._move_categorical(out[c], values, shift[:, block], X[c].dtype)
        return out

    def _move_plain(self, vals: np.ndarray, shift: np.ndarray) -> None:
        """Numeric and binary columns of ``vals`` (m, n_plain) moved in place."""
        roles = self.columns_.roles_[self._plain]
        numeric = roles == "numeric"
        scale = self.columns_.scale_[self._plain].astype(np.float64)
        vals[:, numeric] += shift[:, numeric] * scale[numeric]
        binary = ~numeric
        if binary.any():
            moved = vals[:, binary] + shift[:, binary]
            vals[:, binary] = np.where(np.isnan(moved), np.nan, (moved >= 0.5).astype(float))

    @staticmethod
    def _move_categorical(col: pd.Series, values: np.ndarray, shift: np.ndarray, dtype: Any) -> Any:
        """The category with the largest coordinate after the step, per row."""
        current = pd.Index(values).get_indexer(col.to_numpy(dtype=object))
        score = shift.copy()
        known = current >= 0
        score[np.flatnonzero(known), current[known]] += 1.0
        best = np.argmax(score, axis=1)
        # a value unseen in public data holds 1 on a coordinate no direction moves
        stay = ~known & (score.max(axis=1) <= 1.0)
        new = col.to_numpy(dtype=object).copy()
        new[~stay] = values[best[~stay]]
        if isinstance(dtype, pd.CategoricalDtype):
            return pd.Categorical(new, dtype=dtype)
        return pd.Series(new, dtype=dtype)


def _as_float_array(X: Any) -> np.ndarray:
    return as_float_matrix(
        X,
        hint="pass a pandas DataFrame with categorical (category / "
        "string) columns so they can be resampled",
    )
