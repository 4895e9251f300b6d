"""Where data files live, where derived caches go, and how files are found or fetched.

Three locations matter:

* the **data home** (:func:`get_data_home`): ``data_home=`` argument, else the
  ``TABMIA_DATA`` environment variable, else ``~/.cache/tabmia``.  Loaders read
  ``<data home>/<folder>/<file>``.  It may be read-only (a shared data
  directory); nothing here ever writes into a read-only data home.
* the **cache home** (:func:`get_cache_home`): where derived files (npz
  conversions, copies of an OpenML cache, downloads that cannot go into the
  data home) are written.  ``TABMIA_CACHE`` if set, else the data home when it
  is writable, else ``~/.cache/tabmia``; ``None`` when none of these is writable
  (derived caches are then simply not written).
* ``TABMIA_OFFLINE``: when set to a true value, no loader touches the network.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path

from tabmia.exceptions import DataNotFoundError

__all__ = [
    "ENV_CACHE",
    "ENV_DATA",
    "ENV_OFFLINE",
    "download_file",
    "download_or_raise",
    "find_data_file",
    "get_cache_home",
    "get_data_home",
    "get_download_home",
    "is_writable_dir",
    "missing_data_error",
    "offline_mode",
    "search_roots",
]

ENV_DATA = "TABMIA_DATA"
ENV_CACHE = "TABMIA_CACHE"
ENV_OFFLINE = "TABMIA_OFFLINE"
_DEFAULT_HOME = Path("~") / ".cache" / "tabmia"


def get_data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Return the directory the loaders read data files from.

    Parameters
    ----------
    data_home : str or path-like, optional
        Explicit directory.  When ``None``, the ``TABMIA_DATA`` environment
        variable is used, else ``~/.cache/tabmia``.

    Returns
    -------
    pathlib.Path
        Absolute path (``~`` expanded).  The directory is *not* created.
    """
    if data_home is None:
        data_home = os.environ.get(ENV_DATA) or _DEFAULT_HOME
    return Path(data_home).expanduser().absolute()


def is_writable_dir(path: str | os.PathLike) -> bool:
    """Whether files may be created in ``path`` (or in the directories that would hold it).

    For a path that does not exist yet, the nearest existing ancestor decides.
    A directory counts as read-only when the process lacks write access, when
    its file system is mounted read-only, or when its mode has no write bit at
    all.  The last rule matters when running as root: root may write anywhere,
    but a ``r-xr-xr-x`` data directory is meant to stay untouched.

    Parameters
    ----------
    path : str or path-like
        Directory to test.

    Returns
    -------
    bool
    """
    p = Path(path).expanduser().absolute()
    while not p.exists():
        if p.parent == p:
            return False
        p = p.parent
    if not p.is_dir():
        return False
    if not os.access(p, os.W_OK | os.X_OK):
        return False
    try:
        if os.statvfs(p).f_flag & getattr(os, "ST_RDONLY", 1):
            return False
    except (AttributeError, OSError):  # pragma: no cover - non-POSIX
        pass
    return bool(p.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def get_cache_home(data_home: str | os.PathLike | None = None) -> Path | None:
    """Return the writable directory for derived caches, or ``None`` if there is none.

    Order: ``TABMIA_CACHE`` (if set), the data home (if writable), then
    ``~/.cache/tabmia``.  Only a writable choice is returned; the directory is
    not created.

    Parameters
    ----------
    data_home : str or path-like, optional
        As for :func:`get_data_home`.

    Returns
    -------
    pathlib.Path or None
    """
    env = os.environ.get(ENV_CACHE)
    if env:
        candidates = [Path(env).expanduser().absolute()]
    else:
        candidates = [get_data_home(data_home), _DEFAULT_HOME.expanduser().absolute()]
    for cand in candidates:
        if is_writable_dir(cand):
            return cand
    return None


def get_download_home(data_home: str | os.PathLike | None = None) -> Path | None:
    """Return where downloads are written: the data home if writable, else the cache home.

    Parameters
    ----------
    data_home : str or path-like, optional
        As for :func:`get_data_home`.

    Returns
    -------
    pathlib.Path or None
        ``None`` if no writable location exists.
    """
    home = get_data_home(data_home)
    if is_writable_dir(home):
        return home
    return get_cache_home(data_home)


def search_roots(data_home: str | os.PathLike | None = None) -> list[Path]:
    """Directories searched for data files: the data home, then the download home if different."""
    home = get_data_home(data_home)
    roots = [home]
    dl = get_download_home(data_home)
    if dl is not None and dl != home:
        roots.append(dl)
    return roots


def offline_mode() -> bool:
    """Whether ``TABMIA_OFFLINE`` forbids network access (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(ENV_OFFLINE, "").strip().lower() in {"1", "true", "yes", "on"}


def _as_list(relpaths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(relpaths, (str, os.PathLike)):
        return [Path(relpaths)]
    return [Path(r) for r in relpaths]


def missing_data_error(
    paths: Sequence[Path],
    *,
    what: str,
    data_home: Path,
    hint: str = "",
    download_note: str = "",
) -> DataNotFoundError:
    """Build the :class:`DataNotFoundError` for files that are not on disk.

    Parameters
    ----------
    paths : sequence of pathlib.Path
        Absolute paths that were looked for, in search order.
    what : str
        Human name of the data ("UCI Adult", ...).
    data_home : pathlib.Path
        The data home that was searched.
    hint : str, optional
        Extra sentence on where the file comes from / its expected format.
    download_note : str, optional
        Why a download did not happen or how it failed.

    Returns
    -------
    DataNotFoundError
    """
    if not paths:
        first = f"{what}: data file not found."
    elif len(paths) == 1:
        first = f"{what}: data file not found at {paths[0]}"
    else:
        first = f"{what}: data file not found at {paths[0]} (nor at {len(paths) - 1} other paths)"
    lines = [first, "Looked for:"] + [f"  {p}" for p in paths]
    lines.append(
        f"Place the file at one of these paths (data home: {data_home}; choose another with "
        f"data_home=... or the {ENV_DATA} environment variable)."
    )
    if hint:
        lines.append(hint)
    if download_note:
        lines.append(download_note)
    return DataNotFoundError("\n".join(lines), paths)


def find_data_file(
    relpaths: str | os.PathLike | Iterable[str | os.PathLike],
    data_home: str | os.PathLike | None = None,
    *,
    what: str = "data set",
    hint: str = "",
    download_note: str = "",
    extra_roots: Iterable[Path] = (),
) -> Path:
    """Return the first existing file among candidate paths under the data home.

    Parameters
    ----------
    relpaths : str, path-like or iterable of them
        Candidate paths relative to the data home, in order of preference.
    data_home : str or path-like, optional
        As for :func:`get_data_home`.
    what, hint, download_note : str
        Used in the error message (see :func:`missing_data_error`).
    extra_roots : iterable of pathlib.Path
        Further directories searched after the data home (e.g. the cache home
        that received a download while the data home was read-only).

    Returns
    -------
    pathlib.Path
        Absolute path of the first candidate that is an existing file.

    Raises
    ------
    DataNotFoundError
        If none exists; the message lists every absolute path looked for.
    """
    home = get_data_home(data_home)
    roots = [home] + [Path(r) for r in extra_roots if Path(r) != home]
    looked: list[Path] = []
    for root in roots:
        for rel in _as_list(relpaths):
            cand = root / rel
            looked.append(cand)
            if cand.is_file():
                return cand
    raise missing_data_error(
        looked, what=what, data_home=home, hint=hint, download_note=download_note
    )


def download_file(
    url: str,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """Download ``url`` to ``dest`` atomically, optionally checking its SHA-256.

    The bytes are written to a temporary file in ``dest``'s directory and moved
    into place with :func:`os.replace` only once complete (and verified), so a
    failed or interrupted download never leaves a partial ``dest``.

    Parameters
    ----------
    url : str
        Source URL.
    dest : str or path-like
        Destination file.  Its directory must be writable (checked with
        :func:`is_writable_dir`); it is created if missing.
    sha256 : str, optional
        Expected hex digest; a mismatch raises :class:`ValueError` and nothing
        is written.
    timeout : float
        Socket timeout in seconds.

    Returns
    -------
    pathlib.Path
        ``dest``.

    Raises
    ------
    PermissionError
        If ``dest``'s directory is not writable.
    OSError, urllib.error.URLError, ValueError
        On network failure or checksum mismatch.
    """
    dest = Path(dest).expanduser().absolute()
    if not is_writable_dir(dest.parent):
        raise PermissionError(f"refusing to write into read-only directory {dest.parent}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            while True:
                chunk = resp.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
        if sha256 is not None and digest.hexdigest() != sha256.lower():
            raise ValueError(
                f"SHA-256 mismatch for {url}: expected {sha256.lower()}, got {digest.hexdigest()}"
            )
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest


def download_or_raise(
    url: str,
    dest: Path | None,
    *,
    sha256: str | None,
    looked: Sequence[Path],
    what: str,
    data_home: Path,
    hint: str = "",
) -> Path:
    """Download ``url`` to ``dest``; turn any failure into :class:`DataNotFoundError`.

    Parameters
    ----------
    url : str
        Source URL.
    dest : pathlib.Path or None
        Destination in a writable directory; ``None`` means no writable
        location exists, which is reported as such.
    sha256 : str or None
        Expected digest.
    looked : sequence of pathlib.Path
        Paths that were searched before downloading (named in the error).
    what, data_home, hint
        As for :func:`missing_data_error`.

    Returns
    -------
    pathlib.Path
        The downloaded file.
    """
    if offline_mode():
        note = f"Download from {url} not attempted: {ENV_OFFLINE} is set."
    elif dest is None:
        note = (
            f"Download from {url} not possible: neither the data home nor a cache directory "
            f"({ENV_CACHE} or ~/.cache/tabmia) is writable."
        )
    else:
        try:
            return download_file(url, dest, sha256=sha256)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            note = f"Download from {url} to {dest} failed: {exc}"
    raise missing_data_error(looked, what=what, data_home=data_home, hint=hint, download_note=note)
